//! What `kineto steps`, `kineto kernels` and `kineto budget` print: JSON lines, CSV or a readable
//! table, per trace. Kept here, not in the binary, so that the binary only parses arguments.
//!
//! JSON numbers are µs as `f64` from exact ns (exact below 2^53 ns), with the exact integer ns of
//! times alongside (`lo_ns`/`hi_ns` in `steps`, `ts_ns`/`dur_ns` in `kernels`); CSV and tables print
//! µs with three decimals from the integer ns, so they are exact and carry no ns columns. No output contains NaN or infinity: every value is
//! an integer conversion or absent (`null` / empty cell).

use crate::analysis::Analysis;
use crate::budget::{BudgetRow, StepBudget};
use crate::family::{Rules, UNMATCHED};
use crate::model::Trace;
use crate::parse::Parsed;
use crate::step::StepRow;
use crate::time::{ns_to_us, ns_to_us_string};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Output form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Readable table.
    Table,
    /// One JSON object per line.
    Json,
    /// CSV; the header line is [`csv_header`], printed once before the first trace.
    Csv,
}

/// Which listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `kineto steps`: one row per step.
    Steps,
    /// `kineto kernels`: one row per kernel.
    Kernels,
    /// `kineto budget`: one row per step, with buckets and families.
    Budget,
}

/// The CSV header line of a listing (without the newline).
pub fn csv_header(command: Command) -> &'static str {
    match command {
        Command::Steps => {
            "file,rank,index,name,number,phase,rows,requests,cpu_lo_us,cpu_hi_us,lo_us,hi_us,period_us,kernels,kernel_sum_us,kernel_union_us,memcpys,memsets,same_stream_overlaps"
        }
        Command::Kernels => {
            "file,rank,kernel,step,name,family,bucket,ts_us,dur_us,device,stream,correlation,launch,launch_tid,annotation,cpu_op,grid,block,same_stream_overlap"
        }
        Command::Budget => {
            "file,rank,index,name,phase,rows,requests,span_us,idle_us,same_stream_overlaps,kind,key,count,sum_us,union_us,exclusive_us,inclusive_us"
        }
    }
}

/// One trace's output: the text for stdout, and notes for stderr (empty for tables, which print
/// them in their header).
#[derive(Debug, Clone)]
pub struct Rendered {
    /// For stdout.
    pub text: String,
    /// For stderr, one line each, each naming the file.
    pub notes: Vec<String>,
}

/// Parses, analyses and renders several traces (the ranks of a run) in parallel, handing each result
/// to `emit` in the order of `paths` as soon as it and every earlier one are done
/// ([`crate::each_in_order`]).
pub fn render_paths_each(
    paths: &[std::path::PathBuf],
    options: &crate::Options,
    pattern: &crate::step::StepPattern,
    rules: &Rules,
    command: Command,
    format: Format,
    emit: impl FnMut(crate::Result<Rendered>),
) {
    let render = |path: &std::path::Path| -> crate::Result<Rendered> {
        let p = crate::parse_file(path, options)?;
        let a = Analysis::new(&p.trace, pattern, rules);
        let text = match command {
            Command::Steps => steps(&p, &a, format),
            Command::Kernels => kernels(&p, &a, rules, format),
            Command::Budget => budget(&p, &a, rules, format),
        };
        let notes = if format == Format::Table {
            Vec::new()
        } else {
            notes(&p, &a)
        };
        Ok(Rendered { text, notes })
    };
    crate::each_in_order(paths, render, emit);
}

/// Quotes a CSV cell when it needs it (RFC 4180).
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn us(ns: i64) -> String {
    ns_to_us_string(ns)
}

fn json_line<T: Serialize>(out: &mut String, v: &T) {
    // Serialising these plain structs cannot fail (string keys, finite numbers).
    match serde_json::to_string(v) {
        Ok(s) => {
            out.push_str(&s);
            out.push('\n');
        }
        Err(e) => {
            let _ = writeln!(out, "{{\"error\":{:?}}}", e.to_string());
        }
    }
}

/// Lines worth telling the user that the rows do not show: GPU work with no launch, launch calls with
/// no GPU work, kernels outside every step, marker groups that did not read. For stderr in the
/// machine-readable formats; the table prints them in its header.
pub fn notes(p: &Parsed, a: &Analysis) -> Vec<String> {
    let f = p.path.display();
    let r = &a.links.report;
    let mut out = Vec::new();
    for (what, u) in [
        ("kernels", &r.kernels_without_launch),
        ("copies", &r.memcpys_without_launch),
        ("fills", &r.memsets_without_launch),
    ] {
        if u.count > 0 {
            let ex: Vec<String> = u
                .examples
                .iter()
                .map(|(n, c)| format!("{c}× {}", short(n)))
                .collect();
            out.push(format!(
                "{f}: {} {what} ({} µs) have no launch (no runtime/driver call with their correlation id), so no step: {}",
                u.count,
                us(u.sum_ns),
                ex.join("; ")
            ));
        }
    }
    if !r.launches_without_gpu_op.is_empty() {
        let v: Vec<String> = r
            .launches_without_gpu_op
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        out.push(format!(
            "{f}: launch calls with no GPU activity: {}",
            v.join(", ")
        ));
    }
    if r.duplicate_correlations > 0 {
        out.push(format!(
            "{f}: {} correlation ids carried by more than one launch; the first is linked",
            r.duplicate_correlations
        ));
    }
    if a.steps.kernels_outside > 0 {
        out.push(format!(
            "{f}: {} kernels were launched outside every step",
            a.steps.kernels_outside
        ));
    }
    for w in &a.steps.warnings {
        out.push(format!("{f}: {w}"));
    }
    out
}

fn short(name: &str) -> String {
    const MAX: usize = 120;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let s: String = name.chars().take(MAX).collect();
        format!("{s}…")
    }
}

/// A name cut to `width` characters for a table column.
fn fit(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let s: String = name.chars().take(width.saturating_sub(1)).collect();
        format!("{s}…")
    }
}

fn table_header(out: &mut String, p: &Parsed, a: &Analysis, what: &str) {
    let t = &p.trace;
    let r = &a.links.report;
    let _ = writeln!(
        out,
        "{}  rank {}  {} steps{}",
        p.path.display(),
        t.header.rank.map_or("-".to_string(), |r| r.to_string()),
        a.steps.steps.len(),
        what
    );
    let _ = writeln!(
        out,
        "  kernels {} ({} without launch, {} outside steps)  copies {} ({} without launch)  fills {} ({} without launch)  graph launches {} → {} kernels  same-stream overlaps {}",
        t.kernels.len(),
        r.kernels_without_launch.count,
        a.steps.kernels_outside,
        t.memcpys.len(),
        r.memcpys_without_launch.count,
        t.memsets.len(),
        r.memsets_without_launch.count,
        r.graph_launches,
        r.graph_kernels,
        a.steps.same_stream_overlaps,
    );
    for n in notes(p, a) {
        let _ = writeln!(
            out,
            "  note: {}",
            n.trim_start_matches(&format!("{}: ", p.path.display()))
        );
    }
}

/// `kineto steps`.
pub fn steps(p: &Parsed, a: &Analysis, format: Format) -> String {
    let file = p.path.display().to_string();
    let rows: Vec<StepRow> = a
        .steps
        .steps
        .iter()
        .map(|s| StepRow::of(&file, &p.trace, s))
        .collect();
    let mut out = String::new();
    match format {
        Format::Json => rows.iter().for_each(|r| json_line(&mut out, r)),
        Format::Csv => {
            for s in &a.steps.steps {
                let cells = [
                    csv_cell(&file),
                    opt(p.trace.header.rank),
                    s.index.to_string(),
                    csv_cell(&s.name),
                    opt(s.number),
                    csv_cell(s.phase.as_deref().unwrap_or("")),
                    opt(s.rows),
                    opt(s.requests),
                    us(s.cpu_lo_ns),
                    us(s.cpu_hi_ns),
                    opt(s.lo_ns.map(us)),
                    opt(s.hi_ns.map(us)),
                    opt(s.period_ns.map(us)),
                    s.kernels.len().to_string(),
                    us(s.kernel_sum_ns),
                    us(s.kernel_union_ns),
                    s.memcpys.len().to_string(),
                    s.memsets.len().to_string(),
                    s.same_stream_overlaps.to_string(),
                ];
                out.push_str(&cells.join(","));
                out.push('\n');
            }
        }
        Format::Table => {
            table_header(&mut out, p, a, "");
            let _ = writeln!(
                out,
                "  {:>5}  {:<30} {:<8} {:>6} {:>5} {:>18} {:>18} {:>12} {:>7} {:>12} {:>12} {:>5}",
                "step",
                "name",
                "phase",
                "rows",
                "reqs",
                "lo µs",
                "hi µs",
                "period µs",
                "kernels",
                "sum µs",
                "union µs",
                "ovl"
            );
            for s in &a.steps.steps {
                let _ = writeln!(
                    out,
                    "  {:>5}  {:<30} {:<8} {:>6} {:>5} {:>18} {:>18} {:>12} {:>7} {:>12} {:>12} {:>5}",
                    s.index,
                    fit(&s.name, 30),
                    s.phase.as_deref().unwrap_or("-"),
                    s.rows.map_or("-".into(), |v| v.to_string()),
                    s.requests.map_or("-".into(), |v| v.to_string()),
                    s.lo_ns.map_or("-".into(), us),
                    s.hi_ns.map_or("-".into(), us),
                    s.period_ns.map_or("-".into(), us),
                    s.kernels.len(),
                    us(s.kernel_sum_ns),
                    us(s.kernel_union_ns),
                    s.same_stream_overlaps
                );
            }
        }
    }
    out
}

/// One kernel as `kineto kernels` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    /// The trace file.
    pub file: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// Index in the trace's kernels (file order).
    pub kernel: usize,
    /// Index of the step it was launched in.
    pub step: Option<u32>,
    /// Demangled name.
    pub name: String,
    /// Family (`None`: unmatched).
    pub family: Option<String>,
    /// Bucket (`unmatched` when no rule matched).
    pub bucket: String,
    /// Start, µs on the trace clock.
    pub ts_us: f64,
    /// Duration, µs.
    pub dur_us: f64,
    /// Start in exact integer ns on the trace clock (`ts_us` of a large absolute time is rounded by
    /// f64, to about 0.25 µs for mid-2020s epoch times).
    pub ts_ns: i64,
    /// Duration in exact ns.
    pub dur_ns: i64,
    /// Device.
    pub device: Option<i64>,
    /// Stream.
    pub stream: Option<i64>,
    /// CUPTI correlation id.
    pub correlation: Option<u64>,
    /// The launching API call (`cudaLaunchKernel`, `cudaGraphLaunch`, …).
    pub launch: Option<String>,
    /// The launching thread (tid as written).
    pub launch_tid: Option<String>,
    /// Innermost `user_annotation` around the launch on its thread.
    pub annotation: Option<String>,
    /// Innermost `cpu_op` around the launch on its thread.
    pub cpu_op: Option<String>,
    /// Grid.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// Started before an earlier kernel on its stream had ended.
    pub same_stream_overlap: bool,
}

/// `kineto kernels`: one row per kernel, in file order.
pub fn kernels(p: &Parsed, a: &Analysis, rules: &Rules, format: Format) -> String {
    let t: &Trace = &p.trace;
    let file = p.path.display().to_string();
    let steps = a.kernel_steps(t);
    let overlaps = crate::step::same_stream_overlaps(t);
    let mut out = String::new();
    if format == Format::Table {
        table_header(
            &mut out,
            p,
            a,
            &format!(", rules {}", rules.origin().display()),
        );
        let _ = writeln!(
            out,
            "  {:>6} {:>5} {:>20} {:>12} {:>8} {:<24} name",
            "kernel", "step", "ts µs", "dur µs", "stream", "family"
        );
    }
    for (i, k) in t.kernels.iter().enumerate() {
        let fam = a.classes.of(i).map(|f| rules.family(f));
        let launch = a.links.launch_of(crate::model::GpuKind::Kernel, i);
        let annotation = launch.and_then(|l| {
            a.links
                .annotations(t, l)
                .next()
                .map(|s| t.name(s.name).to_string())
        });
        let cpu_op = launch.and_then(|l| {
            a.links
                .cpu_ops(t, l)
                .next()
                .map(|s| t.name(s.name).to_string())
        });
        let row = KernelRow {
            file: file.clone(),
            rank: t.header.rank,
            kernel: i,
            step: steps[i],
            name: t.name(k.name).to_string(),
            family: fam.map(|f| f.name.clone()),
            bucket: fam.map_or(UNMATCHED.to_string(), |f| f.bucket.clone()),
            ts_us: ns_to_us(k.ts_ns),
            dur_us: ns_to_us(k.dur_ns),
            ts_ns: k.ts_ns,
            dur_ns: k.dur_ns,
            device: k.device,
            stream: k.stream,
            correlation: k.correlation.map(|c| c.get()),
            launch: launch.map(|l| t.name(t.launches[l].name).to_string()),
            launch_tid: launch.map(|l| t.track(t.launches[l].track).tid.to_string()),
            annotation,
            cpu_op,
            grid: k.grid,
            block: k.block,
            same_stream_overlap: overlaps[i],
        };
        match format {
            Format::Json => json_line(&mut out, &row),
            Format::Csv => {
                let dims = |d: [u32; 3]| format!("{}x{}x{}", d[0], d[1], d[2]);
                let cells = [
                    csv_cell(&row.file),
                    opt(row.rank),
                    row.kernel.to_string(),
                    opt(row.step),
                    csv_cell(&row.name),
                    csv_cell(row.family.as_deref().unwrap_or("")),
                    csv_cell(&row.bucket),
                    us(k.ts_ns),
                    us(k.dur_ns),
                    opt(row.device),
                    opt(row.stream),
                    opt(row.correlation),
                    csv_cell(row.launch.as_deref().unwrap_or("")),
                    csv_cell(row.launch_tid.as_deref().unwrap_or("")),
                    csv_cell(row.annotation.as_deref().unwrap_or("")),
                    csv_cell(row.cpu_op.as_deref().unwrap_or("")),
                    dims(row.grid),
                    dims(row.block),
                    row.same_stream_overlap.to_string(),
                ];
                out.push_str(&cells.join(","));
                out.push('\n');
            }
            Format::Table => {
                let _ = writeln!(
                    out,
                    "  {:>6} {:>5} {:>20} {:>12} {:>8} {:<24} {}",
                    i,
                    row.step.map_or("-".into(), |s| s.to_string()),
                    us(k.ts_ns),
                    us(k.dur_ns),
                    row.stream.map_or("-".into(), |s| s.to_string()),
                    row.family.as_deref().unwrap_or("(unmatched)"),
                    short(&row.name)
                );
            }
        }
    }
    out
}

/// `kineto budget`.
pub fn budget(p: &Parsed, a: &Analysis, rules: &Rules, format: Format) -> String {
    let t = &p.trace;
    let file = p.path.display().to_string();
    let budgets: Vec<StepBudget> = a.budgets(t, rules);
    let mut out = String::new();
    match format {
        Format::Json => {
            for (s, b) in a.steps.steps.iter().zip(&budgets) {
                json_line(&mut out, &BudgetRow::of(&file, t, s, b));
            }
        }
        Format::Csv => {
            for (s, b) in a.steps.steps.iter().zip(&budgets) {
                let step = [
                    csv_cell(&file),
                    opt(t.header.rank),
                    s.index.to_string(),
                    csv_cell(&s.name),
                    csv_cell(s.phase.as_deref().unwrap_or("")),
                    opt(s.rows),
                    opt(s.requests),
                    us(b.span_ns),
                    us(b.idle_ns),
                    b.same_stream_overlaps.to_string(),
                ]
                .join(",");
                let _ = writeln!(out, "{step},step,,,,,,");
                for (k, v) in &b.buckets {
                    let _ = writeln!(
                        out,
                        "{step},bucket,{},,,,{},{}",
                        csv_cell(k),
                        us(v.exclusive_ns),
                        us(v.inclusive_ns)
                    );
                }
                for (k, v) in &b.families {
                    let _ = writeln!(
                        out,
                        "{step},family,{},{},{},{},,",
                        csv_cell(k),
                        v.count,
                        us(v.sum_ns),
                        us(v.union_ns)
                    );
                }
                if b.unmatched.count > 0 {
                    let _ = writeln!(
                        out,
                        "{step},unmatched,,{},{},{},,",
                        b.unmatched.count,
                        us(b.unmatched.sum_ns),
                        us(b.unmatched.union_ns)
                    );
                }
            }
        }
        Format::Table => budget_table(&mut out, p, a, rules, &budgets),
    }
    out
}

fn budget_table(out: &mut String, p: &Parsed, a: &Analysis, rules: &Rules, budgets: &[StepBudget]) {
    let t = &p.trace;
    table_header(
        out,
        p,
        a,
        &format!(
            ", rules {} ({} rules, {} families)",
            rules.origin().display(),
            rules.rules().len(),
            rules.families().len()
        ),
    );
    let buckets: Vec<&String> = {
        let mut set: BTreeMap<&String, i64> = BTreeMap::new();
        for b in budgets {
            for (k, v) in &b.buckets {
                let e = set.entry(k).or_default();
                *e = e.saturating_add(v.exclusive_ns);
            }
        }
        let mut v: Vec<(&String, i64)> = set.into_iter().collect();
        v.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        v.into_iter().map(|(k, _)| k).collect()
    };
    let _ = writeln!(
        out,
        "  exclusive time per bucket, µs (each instant split equally among the buckets running):"
    );
    let mut head = format!(
        "  {:>5}  {:<30} {:>14} {:>14}",
        "step", "name", "span", "idle"
    );
    for b in &buckets {
        let _ = write!(head, " {:>13}", fit(b, 13));
    }
    let _ = writeln!(out, "{head} {:>5}", "ovl");
    for (s, b) in a.steps.steps.iter().zip(budgets) {
        let mut line = format!(
            "  {:>5}  {:<30} {:>14} {:>14}",
            s.index,
            fit(&s.name, 30),
            us(b.span_ns),
            us(b.idle_ns)
        );
        for k in &buckets {
            let v = b.buckets.get(*k).map_or("-".into(), |v| us(v.exclusive_ns));
            let _ = write!(line, " {v:>13}");
        }
        let _ = writeln!(out, "{line} {:>5}", b.same_stream_overlaps);
    }
    // Families over all steps: per-step unions added (steps' windows may overlap on the GPU).
    let mut fams: BTreeMap<&str, (u64, i64, i64)> = BTreeMap::new();
    for b in budgets {
        for (k, v) in &b.families {
            let e = fams.entry(k.as_str()).or_default();
            e.0 += v.count;
            e.1 = e.1.saturating_add(v.sum_ns);
            e.2 = e.2.saturating_add(v.union_ns);
        }
        if b.unmatched.count > 0 {
            let e = fams.entry(UNMATCHED).or_default();
            e.0 += b.unmatched.count;
            e.1 = e.1.saturating_add(b.unmatched.sum_ns);
            e.2 = e.2.saturating_add(b.unmatched.union_ns);
        }
    }
    let mut fv: Vec<(&str, (u64, i64, i64))> = fams.into_iter().collect();
    fv.sort_by(|x, y| y.1.1.cmp(&x.1.1).then_with(|| x.0.cmp(y.0)));
    let _ = writeln!(
        out,
        "  families, all steps (per-step JSON/CSV: --json, --csv):"
    );
    let _ = writeln!(
        out,
        "  {:<26} {:<12} {:>8} {:>14} {:>14}",
        "family", "bucket", "count", "sum µs", "union µs"
    );
    for (name, (c, sum, un)) in fv {
        let bucket = rules
            .find_family(name)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str());
        let _ = writeln!(
            out,
            "  {name:<26} {bucket:<12} {c:>8} {:>14} {:>14}",
            us(sum),
            us(un)
        );
    }
    let unmatched = a.unmatched_names(t);
    if !unmatched.is_empty() {
        let _ = writeln!(
            out,
            "  unmatched kernel names in the trace ({}), most time first:",
            unmatched.len()
        );
        for u in unmatched.iter().take(10) {
            let _ = writeln!(
                out,
                "    {:>8}× {:>14} µs  {}",
                u.count,
                us(u.sum_ns),
                short(&u.name)
            );
        }
    }
}
