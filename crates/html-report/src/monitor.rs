//! The `gpu-monitor` and `provenance show` reports: clocks, power, utilisation and temperature over time per
//! GPU with the active throttle reasons shaded and the command's start and end marked; the summary; for a
//! provenance record, the verdict and its evidence.

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

use crate::chart::{self, Shade};
use crate::page::{Cell, Page, Table};

/// What a gpu-monitor report is made of.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonitorInputs<'a> {
    /// The samples in gpu-monitor's JSONL form, one object per reading.
    pub samples: &'a [Value],
    /// gpu-monitor's JSON summary, if any.
    pub summary: Option<&'a Value>,
    /// The command's start and end on the samples' clock (`t_s`, seconds since the monitor started), when a
    /// command ran. `None`: the monitor's own start and end are marked instead.
    pub command: Option<(f64, f64)>,
}

impl MonitorInputs<'_> {
    /// The value embedded as the page's tool JSON: `{"samples": [...], "summary": …}`.
    pub fn embedded(&self) -> Value {
        json!({ "samples": self.samples, "summary": self.summary })
    }
}

const METRICS: [(&str, &str, &[&str]); 4] = [
    ("clocks", "MHz", &["clocks.sm", "clocks.mem"]),
    ("power", "W", &["power.draw", "power.limit"]),
    ("utilisation", "%", &["utilization.gpu"]),
    ("temperature", "°C", &["temperature.gpu"]),
];

fn mask(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let t = s.trim();
            u64::from_str_radix(
                t.strip_prefix("0x")
                    .or_else(|| t.strip_prefix("0X"))
                    .unwrap_or(t),
                16,
            )
            .ok()
        }
        _ => None,
    }
}

/// The four timeline charts of `samples`, with `markers` (t, label). Linear in the readings: they are grouped
/// by GPU once, and each throttle reason's shade kind is found by name in a map (6 000 one-reading GPUs took
/// 15 s when every GPU filtered every reading).
fn timeline(page: &mut Page, samples: &[&Value], markers: &[(f64, String)]) {
    let mut by_gpu: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for s in samples {
        crate::visit();
        if let Some(g) = s.get("index").and_then(Value::as_u64) {
            by_gpu.entry(g).or_default().push(s);
        }
    }
    let several = by_gpu.len() > 1;
    // Throttle reasons: each reading's mask holds from its time to the same GPU's next reading.
    let mut kinds: Vec<String> = Vec::new();
    let mut kind_of: HashMap<String, usize> = HashMap::new();
    let mut shades = Vec::new();
    for (g, mine) in &by_gpu {
        for (i, s) in mine.iter().enumerate() {
            crate::visit();
            let (Some(t0), Some(m)) = (
                s.get("t_s").and_then(Value::as_f64),
                mask(s.get("clocks_throttle_reasons.active")),
            ) else {
                continue;
            };
            let t1 = mine
                .get(i + 1)
                .and_then(|n| n.get("t_s")?.as_f64())
                .unwrap_or(t0);
            for name in gpu_monitor::decode_throttle(m) {
                let label = if several {
                    format!("{name} (GPU {g})")
                } else {
                    name
                };
                let k = *kind_of.entry(label).or_insert_with_key(|l| {
                    kinds.push(l.clone());
                    kinds.len() - 1
                });
                shades.push(Shade { t0, t1, kind: k });
            }
        }
    }
    page.raw("<div class=\"row\">");
    for (title, unit, fields) in METRICS {
        let mut series = Vec::new();
        for (g, mine) in &by_gpu {
            for f in fields {
                let pts: Vec<(f64, f64)> = mine
                    .iter()
                    .filter_map(|s| {
                        crate::visit();
                        Some((s.get("t_s")?.as_f64()?, s.get(*f)?.as_f64()?))
                    })
                    .collect();
                if !pts.is_empty() {
                    series.push((format!("GPU {g} {f}"), pts));
                }
            }
        }
        if series.is_empty() {
            page.absent(&format!("{title} ({})", fields.join(", ")));
            continue;
        }
        page.chart(chart::time_series(
            title, unit, &series, &kinds, &shades, markers,
        ));
    }
    page.raw("</div>");
}

fn stats_table(page: &mut Page, gpus: &[Value]) {
    let fields = [
        "clocks.sm",
        "clocks.sm_busy",
        "clocks.mem",
        "power.draw",
        "utilization.gpu",
        "temperature.gpu",
        "memory.used",
    ];
    let mut t = Table::new(&["GPU", "field", "min", "median", "max"], true);
    let mut throttle = Table::new(&["GPU", "throttle reasons seen"], false);
    for g in gpus {
        let name = format!(
            "{} {}",
            g.get("index").map(Value::to_string).unwrap_or_default(),
            g.get("uuid").and_then(Value::as_str).unwrap_or("")
        );
        for f in fields {
            let Some(s) = g.get(f).filter(|s| s.is_object()) else {
                continue;
            };
            t.rows.push(vec![
                Cell::text(name.clone()),
                Cell::text(f),
                Cell::tool(s.get("min")),
                Cell::tool(s.get("median")),
                Cell::tool(s.get("max")),
            ]);
        }
        if let Some(reasons) = g.get("throttle_reasons_seen").and_then(Value::as_array) {
            let list: Vec<String> = reasons
                .iter()
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
                .collect();
            throttle
                .rows
                .push(vec![Cell::text(name.clone()), Cell::text(list.join(", "))]);
        }
    }
    if t.rows.is_empty() {
        page.absent("per-GPU statistics");
    } else {
        page.table(&t);
    }
    if !throttle.rows.is_empty() {
        page.table(&throttle);
    }
}

/// Markers at the first and last reading, for a run whose command times are not known.
fn first_last(samples: &[&Value]) -> Vec<(f64, String)> {
    let ts = samples.iter().filter_map(|s| s.get("t_s")?.as_f64());
    let lo = ts.clone().fold(f64::INFINITY, f64::min);
    let hi = ts.fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        vec![
            (lo, "first reading".to_owned()),
            (hi, "last reading".to_owned()),
        ]
    } else {
        Vec::new()
    }
}

/// The page for a gpu-monitor run.
pub fn render_monitor(inputs: &MonitorInputs<'_>) -> String {
    let mut page = Page::new(
        "gpu-monitor: clocks, power, utilisation, temperature",
        inputs.embedded(),
    );
    page.p("All readings MEASURED (NVML or nvidia-smi); t is the host's monotonic clock since the monitor started.");
    page.h2("Over time");
    let samples: Vec<&Value> = inputs.samples.iter().collect();
    let markers = match inputs.command {
        Some((a, b)) => vec![
            (a, "command start".to_owned()),
            (b, "command end".to_owned()),
        ],
        None => first_last(&samples),
    };
    if samples.is_empty() {
        page.absent("samples");
    } else {
        timeline(&mut page, &samples, &markers);
    }
    page.h2("Summary");
    match inputs.summary {
        None => page.absent("the summary"),
        Some(s) => {
            summary_lines(&mut page, s);
            stats_table(
                &mut page,
                s.get("gpus")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice),
            );
        }
    }
    page.finish()
}

fn summary_lines(page: &mut Page, s: &Value) {
    let mut t = Table::new(&["field", "value"], false);
    for k in [
        "backend",
        "requested_backend",
        "n_samples",
        "duration_s",
        "timestamps",
    ] {
        match s.get(k) {
            Some(Value::Number(_)) => t.rows.push(vec![Cell::text(k), Cell::tool(s.get(k))]),
            Some(Value::String(v)) => t.rows.push(vec![Cell::text(k), Cell::text(v.clone())]),
            _ => {}
        }
    }
    if let Some(how) = s.pointer("/end/how").and_then(Value::as_str) {
        t.rows.push(vec![Cell::text("end"), Cell::text(how)]);
    }
    for k in ["warnings", "unavailable_fields", "rejected"] {
        if let Some(a) = s.get(k).and_then(Value::as_array).filter(|a| !a.is_empty()) {
            let list: Vec<String> = a
                .iter()
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
                .collect();
            t.rows
                .push(vec![Cell::text(k), Cell::text(list.join("; "))]);
        }
    }
    page.table(&t);
}

/// Arrays of sample-like objects (with `t_s` and `index`) anywhere in a record.
fn find_samples<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a)
            if !a.is_empty()
                && a.iter()
                    .all(|x| x.get("t_s").is_some() && x.get("index").is_some()) =>
        {
            out.extend(a.iter());
        }
        Value::Array(a) => a.iter().for_each(|x| find_samples(x, out)),
        Value::Object(m) => m.values().for_each(|x| find_samples(x, out)),
        _ => {}
    }
}

fn str_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    }
}

/// The page for a provenance record (the JSON `provenance run` writes).
pub fn render_provenance(record: &Value) -> String {
    let mut page = Page::new("provenance: where this number came from", record.clone());
    verdict_section(&mut page, record);
    command_section(&mut page, record);
    timeline_section(&mut page, record);
    summary_section(&mut page, record);
    before_after_section(&mut page, record);
    unavailable_section(&mut page, record);
    page.derived(Value::Object(Map::new()));
    page.finish()
}

/// The verdict: clean or not, every check made or not, the flags with their evidence, the checks not made.
fn verdict_section(page: &mut Page, record: &Value) {
    page.h2("Verdict");
    match record.get("verdict") {
        None => page.absent("the verdict"),
        Some(v) => {
            let clean = v.get("clean").and_then(Value::as_bool);
            let complete = v.get("complete").and_then(Value::as_bool);
            let word = |b: Option<bool>, yes: &str, no: &str| match b {
                Some(true) => format!("<span class=\"ok\">{yes}</span>"),
                Some(false) => format!("<span class=\"flag\">{no}</span>"),
                None => "unknown".to_owned(),
            };
            page.raw(&format!(
                "<p>{} · {}</p>",
                word(clean, "clean run", "not a clean run"),
                word(complete, "every check ran", "some checks could not run")
            ));
            let mut t = Table::new(&["flag", "evidence"], false);
            for f in v
                .get("flags")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                t.rows.push(vec![
                    Cell::text(str_of(f.get("flag"))),
                    Cell::text(str_of(f.get("evidence"))),
                ]);
            }
            if t.rows.is_empty() {
                page.p("No flags.");
            } else {
                page.table(&t);
            }
            let mut u = Table::new(&["check not made", "why"], false);
            for f in v
                .get("unchecked")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                u.rows.push(vec![
                    Cell::text(str_of(f.get("check"))),
                    Cell::text(str_of(f.get("reason"))),
                ]);
            }
            if !u.rows.is_empty() {
                page.table(&u);
            }
        }
    }
}

/// The command, when it ran, how it ended, and the code and GPU it ran on.
fn command_section(page: &mut Page, record: &Value) {
    page.h2("The command");
    let mut t = Table::new(&["field", "value"], false);
    let argv: Vec<String> = record
        .pointer("/command/argv")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| str_of(Some(a)))
        .collect();
    t.rows
        .push(vec![Cell::text("argv"), Cell::text(argv.join(" "))]);
    for (label, ptr) in [
        ("started (UTC)", "/time_utc"),
        ("finished (UTC)", "/finished_utc"),
    ] {
        t.rows.push(vec![
            Cell::text(label),
            Cell::text(str_of(record.pointer(ptr))),
        ]);
    }
    for (label, ptr) in [
        ("exit code", "/command/exit_code"),
        ("monitored, s", "/monitored_s"),
    ] {
        t.rows
            .push(vec![Cell::text(label), Cell::tool(record.pointer(ptr))]);
    }
    for (label, ptr) in [
        ("git commit", "/git/commit"),
        ("dirty", "/git/dirty"),
        ("GPU", "/gpu_name"),
        ("driver", "/driver"),
    ] {
        t.rows.push(vec![
            Cell::text(label),
            Cell::text(str_of(record.pointer(ptr))),
        ]);
    }
    page.table(&t);
}

/// The readings kept in the record, over time, with the command's start and end marked.
fn timeline_section(page: &mut Page, record: &Value) {
    page.h2("GPUs over time");
    // The before/after snapshots are single readings, not a timeline: only the kept readings count.
    let mut samples = Vec::new();
    if let Some(v) = record.pointer("/during/timeline/samples") {
        find_samples(v, &mut samples);
    }
    if samples.is_empty() {
        page.absent("per-sample readings (a record from before `during.timeline`, or a run without a GPU; the monitor's summary is below)");
    } else {
        let end = record.get("monitored_s").and_then(Value::as_f64);
        let mut markers = vec![(0.0, "command start".to_owned())];
        if let Some(e) = end {
            markers.push((e, "command end".to_owned()));
        }
        timeline(page, &samples, &markers);
        let every = record
            .pointer("/during/timeline/every")
            .and_then(Value::as_u64);
        if let Some(e) = every
            && e > 1
        {
            page.p(&format!(
                "One reading of each GPU in every {e} the monitor took is drawn ({} readings: a long run's monitor keeps fewer than it takes, and a record at most 1,024).",
                samples.len()
            ));
        }
    }
}

/// The monitor's summary per GPU, and each backend it tried and did not use, with why: a record states those
/// reasons only there (`during.rejected`), and its other fields point to it.
fn summary_section(page: &mut Page, record: &Value) {
    page.h2("GPUs during the command (monitor summary)");
    match record.pointer("/during/gpus").and_then(Value::as_array) {
        Some(g) => stats_table(page, g),
        None => page.absent("the monitor summary"),
    }
    let mut t = Table::new(&["GPU backend not used", "why"], false);
    for r in record
        .pointer("/during/rejected")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        t.rows.push(vec![
            Cell::text(str_of(r.get("backend"))),
            Cell::text(str_of(r.get("reason"))),
        ]);
    }
    if !t.rows.is_empty() {
        page.table(&t);
    }
}

/// The single readings just before and just after the command: the GPU and the host load.
fn before_after_section(page: &mut Page, record: &Value) {
    page.h2("Before and after");
    let mut t = Table::new(&["reading", "before", "after"], false);
    for f in [
        "clocks.sm",
        "clocks.mem",
        "power.draw",
        "utilization.gpu",
        "temperature.gpu",
        "memory.used",
    ] {
        let b = record.pointer("/before/gpu").and_then(|g| g.get(f));
        let a = record.pointer("/after/gpu").and_then(|g| g.get(f));
        if b.is_some() || a.is_some() {
            t.rows.push(vec![
                Cell::text(format!("GPU {f}")),
                Cell::tool(b),
                Cell::tool(a),
            ]);
        }
    }
    for f in ["1m", "5m", "15m", "runnable_now"] {
        let b = record.pointer(&format!("/before/loadavg/{f}"));
        let a = record.pointer(&format!("/after/loadavg/{f}"));
        if b.is_some() || a.is_some() {
            t.rows.push(vec![
                Cell::text(format!("host load {f}")),
                Cell::tool(b),
                Cell::tool(a),
            ]);
        }
    }
    if t.rows.is_empty() {
        page.absent("before and after readings");
    } else {
        page.table(&t);
    }
}

/// The record's `unavailable`: each field not recorded, and why.
fn unavailable_section(page: &mut Page, record: &Value) {
    if let Some(Value::Object(u)) = record.get("unavailable") {
        page.h2("Not recorded, and why");
        let mut t = Table::new(&["field", "why"], false);
        for (k, v) in u {
            t.rows
                .push(vec![Cell::text(k.clone()), Cell::text(str_of(Some(v)))]);
        }
        page.table(&t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings visited to render `samples` (an operation count: `crate::VISITS`).
    fn visits(samples: &[Value]) -> u64 {
        crate::VISITS.with(|v| v.set(0));
        let page = render_monitor(&MonitorInputs {
            samples,
            summary: None,
            command: None,
        });
        assert!(page.contains("<svg"));
        crate::VISITS.with(|v| v.get())
    }

    fn reading(index: usize, t: f64) -> Value {
        // Power-capped, so every GPU has its own shade kind too.
        json!({"t_s": t, "index": index, "clocks.sm": 1980.0, "power.draw": 300.0,
               "clocks_throttle_reasons.active": 4})
    }

    #[test]
    fn the_page_is_linear_in_gpus_and_in_readings() {
        // 1 500 one-reading GPUs: every GPU filtering every reading (and every shade kind filtering every
        // shade) would visit millions of times; grouped once, a few per reading.
        let many_gpus: Vec<Value> = (0..1500).map(|g| reading(g, 0.5)).collect();
        let n = visits(&many_gpus);
        assert!(n <= 16 * 1500, "{n} visits for 1 500 readings: quadratic");
        // And one GPU with as many readings.
        let many_readings: Vec<Value> = (0..1500).map(|i| reading(0, i as f64 * 0.1)).collect();
        let n = visits(&many_readings);
        assert!(n <= 16 * 1500, "{n} visits for 1 500 readings");
    }

    #[test]
    fn the_provenance_page_says_why_each_gpu_backend_was_not_used() {
        // A record without a GPU states each backend's reason once, under during.rejected; its other fields
        // point there, so the page must show it.
        let record = json!({
            "time_utc": "2026-12-06T00:00:00+00:00",
            "during": {"gpus": [], "rejected": [
                {"backend": "nvml", "reason": "NVML could not be initialised: no libnvidia-ml"},
                {"backend": "nvidia-smi", "reason": "nvidia-smi not found: PATH=/usr/bin"}
            ]},
            "unavailable": {"gpus": "no GPU backend (each backend's reason: during.rejected)"}
        });
        let page = render_provenance(&record);
        let start = page
            .find("GPU backend not used")
            .expect("the table of backends not used");
        let end = start + page[start..].find("<h2").expect("a section after it");
        let section = &page[start..end];
        assert!(
            section.contains("NVML could not be initialised: no libnvidia-ml"),
            "{section}"
        );
        assert!(
            section.contains("nvidia-smi not found: PATH=/usr/bin"),
            "{section}"
        );
        // A record whose backend was the first tried has no such table.
        let quiet = json!({"time_utc": "t", "during": {"gpus": [], "rejected": []}});
        assert!(!render_provenance(&quiet).contains("GPU backend not used"));
    }
}
