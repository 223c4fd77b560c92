//! `provenance show`: a readable summary of one record, the lines a person checks before trusting a number.
//!
//! Works on the JSON (see `provenance::record_json` for why), so it also shows older records and the Python
//! tool's.

use serde_json::Value;
use std::fmt::Write as _;

use provenance::record_json::{at, during_gpus, flags, identity_gpus, num, text, user_fields};

fn opt(v: Option<&Value>) -> Option<String> {
    v.map(|x| text(Some(x)))
}

fn stat(g: &Value, key: &str, unit: &str) -> Option<String> {
    let s = g.get(key)?;
    let (min, med, max) = (num(s, &["min"])?, num(s, &["median"])?, num(s, &["max"])?);
    Some(format!("{key} {min}/{med}/{max}{unit}"))
}

/// The labelled lines being written. Every line goes through [`Lines::line`], so every value from the record
/// (argv, names, paths, reasons) is escaped here: a control character in one must not reach the terminal, a
/// newline must not forge a line.
struct Lines(String);

impl Lines {
    fn line(&mut self, label: &str, body: String) {
        let _ = writeln!(
            self.0,
            "{:<11}{}",
            tool_io::terminal::escape(label),
            tool_io::terminal::escape(&body)
        );
    }
}

/// The record as a few labelled lines.
pub fn render(r: &Value) -> String {
    let mut out = Lines(String::new());
    // First, what makes the rest less than it looks: a monitor that did not watch the run.
    coverage_warning(r, &mut out);
    time_lines(r, &mut out);
    code_line(r, &mut out);
    build_line(r, &mut out);
    command_line(r, &mut out);
    host_line(r, &mut out);
    gpu_lines(r, &mut out);
    for when in ["before", "after"] {
        snapshot_line(r, when, &mut out);
    }
    during_host_line(r, &mut out);
    during_gpu_lines(r, &mut out);
    verdict_lines(r, &mut out);
    fields_and_missing_lines(r, &mut out);
    out.0
}

fn coverage_warning(r: &Value, out: &mut Lines) {
    if at(r, &["during", "region_coverage", "sufficient"]) == Some(&Value::Bool(false)) {
        out.line(
            "WARNING",
            format!(
                "GPU monitor coverage too low, throttling/clocks/power not checked: {}",
                text(at(r, &["during", "region_coverage", "reason"]))
            ),
        );
    }
}

fn time_lines(r: &Value, out: &mut Lines) {
    let mut when = text(at(r, &["time_utc"]));
    if let Some(end) = opt(at(r, &["finished_utc"])) {
        when.push_str(&format!(" → {end}"));
    }
    if let Some(m) = num(r, &["monitored_s"]) {
        when.push_str(&format!(", timed region {m} s"));
    }
    if at(r, &["interrupted"]) == Some(&Value::Bool(true)) {
        when.push_str(", INTERRUPTED");
    }
    out.line("time", when);
    if let Some(v) = num(r, &["schema_version"]) {
        out.line("schema", format!("{v}"));
    }
}

fn code_line(r: &Value, out: &mut Lines) {
    let mut code = match opt(at(r, &["git", "commit"])) {
        Some(c) => c.chars().take(12).collect::<String>(),
        None => format!("no commit ({})", reason(r, "git.commit")),
    };
    if let Some(b) = opt(at(r, &["git", "branch"])) {
        code.push_str(&format!(" on {b}"));
    }
    match at(r, &["git", "dirty"]) {
        Some(Value::Bool(true)) => {
            let n = match at(r, &["git", "modified"]) {
                Some(Value::Array(m)) => format!("{} modified", m.len()),
                _ => "modified".to_owned(),
            };
            let h = opt(at(r, &["git", "diff_sha256"]))
                .map(|h| format!(", diff {}", h.chars().take(12).collect::<String>()))
                .unwrap_or_default();
            code.push_str(&format!(", DIRTY ({n}{h})"));
        }
        Some(Value::Bool(false)) => code.push_str(", clean"),
        _ => {}
    }
    out.line("code", code);
}

fn build_line(r: &Value, out: &mut Lines) {
    let mut build = Vec::new();
    if let Some(p) = at(r, &["build", "program"]) {
        let profile = if at(p, &["debug_assertions"]) == Some(&Value::Bool(true)) {
            "debug"
        } else {
            "release"
        };
        build.push(format!(
            "{} {} ({profile})",
            text(at(p, &["name"])),
            text(at(p, &["version"]))
        ));
    }
    if let Some(rc) = opt(at(r, &["build", "rustc"])) {
        build.push(rc);
    }
    for (k, label) in [
        ("toolkit", "CUDA toolkit"),
        ("runtime", "CUDA runtime"),
        ("cudnn", "cuDNN"),
    ] {
        if let Some(v) = opt(at(r, &["build", "cuda", k, "version"])) {
            build.push(format!("{label} {v}"));
        }
    }
    for k in ["python", "torch", "cuda", "cudnn"] {
        if let Some(v) = opt(at(r, &[k])) {
            build.push(format!("{k} {v}"));
        }
    }
    if !build.is_empty() {
        out.line("build", build.join(", "));
    }
}

fn command_line(r: &Value, out: &mut Lines) {
    if let Some(argv) = at(r, &["command", "argv"]).and_then(Value::as_array) {
        let cmd: Vec<String> = argv.iter().map(|a| text(Some(a))).collect();
        let end = match (
            num(r, &["command", "exit_code"]),
            opt(at(r, &["command", "signal"])),
        ) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("killed by {sig}"),
            _ => "unknown end".to_owned(),
        };
        out.line("command", format!("{} → {end}", cmd.join(" ")));
    }
}

fn host_line(r: &Value, out: &mut Lines) {
    let host: Vec<String> = [
        opt(at(r, &["host", "hostname"])),
        opt(at(r, &["host", "cpu_model"])).map(|m| match num(r, &["cpu_count"]) {
            Some(n) => format!("{m} ({n} CPUs)"),
            None => m,
        }),
        opt(at(r, &["host", "os"])),
        opt(at(r, &["host", "kernel"])).map(|k| format!("kernel {k}")),
        opt(at(r, &["environment", "class"])).map(|c| {
            let also: Vec<String> = match at(r, &["environment", "indicated"]) {
                Some(Value::Array(i)) => i
                    .iter()
                    .map(|x| text(Some(x)))
                    .filter(|x| *x != c)
                    .collect(),
                _ => Vec::new(),
            };
            if also.is_empty() {
                c
            } else {
                format!("{c} (also {})", also.join(", "))
            }
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !host.is_empty() {
        out.line("host", host.join(", "));
    }
}

/// The GPUs in use, as identified before the run.
fn gpu_lines(r: &Value, out: &mut Lines) {
    let ids = identity_gpus(r);
    if ids.is_empty() {
        match opt(at(r, &["gpu_name"])) {
            Some(n) => out.line("gpu", format!("{n}, driver {}", text(at(r, &["driver"])))),
            None => out.line("gpu", format!("none ({})", reason(r, "gpus"))),
        }
    }
    for (i, g) in &ids {
        let mut parts = vec![text(at(g, &["name"]))];
        if let Some(u) = opt(at(g, &["uuid"])) {
            parts.push(u);
        }
        if let Some(d) = opt(at(g, &["driver_version"])) {
            parts.push(format!("driver {d}"));
        }
        if let Some(c) = opt(at(g, &["cuda_driver_version"])) {
            parts.push(format!("CUDA {c}"));
        }
        if let Some(p) = num(g, &["power_limit_w"]) {
            parts.push(format!("power limit {p} W"));
        }
        if let Some(Value::Bool(p)) = at(g, &["persistence_mode"]) {
            parts.push(format!("persistence {}", if *p { "on" } else { "off" }));
        }
        out.line(&format!("gpu {i}"), parts.join(", "));
    }
}

/// The `before` or `after` snapshot: host load, CPU clock, and each GPU's reading.
fn snapshot_line(r: &Value, when: &str, out: &mut Lines) {
    let Some(snap) = at(r, &[when]) else { return };
    let mut parts = Vec::new();
    if let Some(l) = num(snap, &["loadavg", "1m"]).or_else(|| num(snap, &["wsl_loadavg_1m"])) {
        parts.push(format!("load {l}"));
    }
    if let Some(f) = num(snap, &["cpu_freq", "mean_mhz"]) {
        parts.push(format!("CPU {f} MHz"));
    }
    if let Some(w) = num(snap, &["windows_cpu_percent"]) {
        parts.push(format!("Windows CPU {w} %"));
    }
    let gpus: Vec<&Value> = match at(snap, &["gpus"]) {
        Some(Value::Array(g)) => g.iter().collect(),
        _ => at(snap, &["gpu"]).into_iter().collect(),
    };
    for g in gpus {
        let idx = opt(at(g, &["index"])).unwrap_or_else(|| "0".to_owned());
        let mut gp = Vec::new();
        if let Some(u) = num(g, &["utilization.gpu"]) {
            gp.push(format!("{u} % busy"));
        }
        if let Some(c) = num(g, &["clocks.sm"]) {
            gp.push(format!("SM {c} MHz"));
        }
        if let Some(t) = num(g, &["temperature.gpu"]) {
            gp.push(format!("{t} °C"));
        }
        if let Some(p) = num(g, &["power.draw"]) {
            gp.push(format!("{p} W"));
        }
        parts.push(format!(
            "GPU {idx}: {}",
            if gp.is_empty() {
                "no readings".to_owned()
            } else {
                gp.join(" ")
            }
        ));
    }
    if !parts.is_empty() {
        out.line(when, parts.join(", "));
    }
}

fn during_host_line(r: &Value, out: &mut Lines) {
    let mut host = Vec::new();
    if let Some(l) = at(r, &["during", "host", "loadavg_1m"]) {
        host.push(format!(
            "load {}–{}",
            text(l.get("min")),
            text(l.get("max"))
        ));
    } else if let Some(l) = at(r, &["during", "wsl_loadavg_1m"]) {
        host.push(format!(
            "load {}–{}",
            text(l.get("min")),
            text(l.get("max"))
        ));
    }
    if let Some(b) = at(r, &["during", "host", "cpu_busy_percent"]) {
        host.push(format!(
            "CPU busy {}/{}/{} % (min/median/max)",
            text(b.get("min")),
            text(b.get("median")),
            text(b.get("max"))
        ));
    }
    if !host.is_empty() {
        out.line("during", format!("host {}", host.join(", ")));
    }
}

fn during_gpu_lines(r: &Value, out: &mut Lines) {
    let during = during_gpus(r);
    if during.is_empty() {
        let why = match at(r, &["during", "rejected"]) {
            Some(Value::Array(rs)) if !rs.is_empty() => rs
                .iter()
                .map(|x| format!("{}: {}", text(x.get("backend")), text(x.get("reason"))))
                .collect::<Vec<_>>()
                .join("; "),
            _ => "no GPU samples".to_owned(),
        };
        out.line("during", format!("not monitored ({why})"));
    }
    for (i, g) in &during {
        let mut parts = vec![format!("{} samples", text(at(g, &["n_samples"])))];
        if let Some(Value::Array(cov)) = at(r, &["during", "region_coverage", "gpus"])
            && let Some(f) = cov
                .iter()
                .find(|c| c.get("index").map(|x| text(Some(x))).as_deref() == Some(i.as_str()))
                .and_then(|c| num(c, &["fraction"]))
        {
            parts.push(format!("covering {:.0} % of the region", f * 100.0));
        }
        if let Some(b) = at(g, &["clocks.sm_busy"]) {
            parts.push(format!(
                "SM busy median {} MHz (n {})",
                text(b.get("median")),
                text(b.get("n"))
            ));
        }
        parts.extend(stat(g, "power.draw", " W"));
        parts.extend(stat(g, "temperature.gpu", " °C"));
        match at(g, &["throttle_reasons_seen"]) {
            Some(Value::Array(rs)) if !rs.is_empty() => {
                parts.push(format!(
                    "reasons {}",
                    rs.iter()
                        .map(|x| text(Some(x)))
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            _ => {}
        }
        out.line(&format!("during {i}"), parts.join(", "));
    }
}

fn verdict_lines(r: &Value, out: &mut Lines) {
    let fl = flags(r);
    let unchecked: Vec<String> = match at(r, &["verdict", "unchecked"]) {
        Some(Value::Array(u)) => u.iter().map(|x| text(x.get("check"))).collect(),
        _ => Vec::new(),
    };
    let verdict = match at(r, &["verdict", "clean"]) {
        // "Clean" only when every check was made: no flag from a check that could not be made is no finding.
        Some(Value::Bool(true)) if unchecked.is_empty() => "CLEAN".to_owned(),
        Some(Value::Bool(true)) => format!(
            "NO FLAGS, INCOMPLETE ({} of the checks not made)",
            unchecked.len()
        ),
        Some(Value::Bool(false)) => format!(
            "FLAGGED ({})",
            fl.iter()
                .map(|(f, _)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "none recorded".to_owned(),
    };
    out.line("verdict", verdict);
    for (f, e) in &fl {
        out.line("", format!("{f}: {e}"));
    }
    if !unchecked.is_empty() {
        out.line("unchecked", unchecked.join(", "));
    }
}

fn fields_and_missing_lines(r: &Value, out: &mut Lines) {
    let fields: Vec<String> = user_fields(r)
        .into_iter()
        .map(|k| format!("{k}={}", text(r.get(&k))))
        .collect();
    if !fields.is_empty() {
        out.line("fields", fields.join(", "));
    }
    if let Some(Value::Object(u)) = at(r, &["unavailable"])
        && !u.is_empty()
    {
        out.line(
            "missing",
            format!(
                "{} probes unavailable (see the record's `unavailable`)",
                u.len()
            ),
        );
    }
}

fn reason(r: &Value, key: &str) -> String {
    opt(at(r, &["unavailable", key])).unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dirty_flagged_record_says_so() {
        let r = json!({
            "time_utc": "2026-01-01T00:00:00+00:00", "monitored_s": 1.5, "interrupted": true,
            "git": {
                "commit": "0123456789abcdef", "branch": "main", "dirty": true,
                "modified": ["a.rs"], "diff_sha256": "ffff"
            },
            "verdict": {
                "clean": false,
                "flags": [{"flag": "dirty_tree", "evidence": "a.rs"}],
                "unchecked": [{"check": "throttled", "reason": "no GPU"}]
            },
            "during": {"gpus": [], "rejected": [{"backend": "nvml", "reason": "no driver"}]},
            "weights": "bf16"
        });
        let s = render(&r);
        assert!(s.contains("INTERRUPTED"), "{s}");
        assert!(
            s.contains("0123456789ab on main, DIRTY (1 modified, diff ffff)"),
            "{s}"
        );
        assert!(s.contains("FLAGGED (dirty_tree)"), "{s}");
        assert!(s.contains("not monitored (nvml: no driver)"), "{s}");
        assert!(s.contains("weights=bf16"), "{s}");
        assert!(s.contains("unchecked  throttled"), "{s}");
    }
}
