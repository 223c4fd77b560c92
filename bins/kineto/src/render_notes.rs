//! What the rows do not show: the per-trace header block of the tables, and the same facts as
//! `note:` lines on stderr for `--json` and `--csv`.

use crate::out::escape;
use crate::render::fit;
use kineto_trace::Parsed;
use kineto_trace::analysis::Analysis;
use kineto_trace::ns_to_us_string as us;
use std::io::{self, Write};

/// Lines worth telling the user that the rows do not show: GPU work with no launch, launch calls with
/// no GPU work, kernels outside every step, marker groups that did not read, how steps were found.
/// Each names the file.
pub fn notes(p: &Parsed, a: &Analysis) -> Vec<String> {
    let f = p.path.display();
    let r = &a.links.report;
    let mut out = Vec::new();
    let whole = a
        .steps
        .steps
        .first()
        .is_some_and(|s| s.name == kineto_trace::step::WHOLE_WINDOW);
    let so = if whole {
        "counted in the whole-trace step"
    } else {
        "so no step"
    };
    let h = &p.trace.header;
    if h.format != kineto_trace::TraceFormat::Kineto {
        out.push(format!(
            "{f}: read as {}{}",
            h.format.title(),
            h.format_version
                .as_deref()
                .map_or(String::new(), |v| format!(" {v}"))
        ));
    }
    for n in &p.trace.capture.notes {
        out.push(format!("{f}: {n}"));
    }
    if let Some(o) = &p.trace.capture.queue_overruns
        && o.count > 0
    {
        out.push(format!(
            "{f}: {} dispatches started before the previous one on their GPU queue had ended (max {} µs, Σ {} µs): the AMD runtime's overlap, counted once in busy time",
            o.count,
            us(o.max_ns),
            us(o.sum_ns)
        ));
    }
    for n in &a.steps.notes {
        out.push(format!("{f}: {n}"));
    }
    for (what, u) in [
        ("kernels", &r.kernels_without_launch),
        ("copies", &r.memcpys_without_launch),
        ("fills", &r.memsets_without_launch),
    ] {
        if u.count > 0 {
            let ex: Vec<String> = u
                .examples
                .iter()
                .map(|(n, c)| format!("{c}× {}", fit(n, 120)))
                .collect();
            out.push(format!(
                "{f}: {} {what} ({} µs) have no launch (no runtime/driver call with their correlation id), {so}: {}",
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
        let o = &a.steps.outside;
        let ex: Vec<String> = o
            .examples
            .iter()
            .map(|(n, c)| format!("{c}× {}", fit(n, 120)))
            .collect();
        out.push(format!(
            "{f}: {} kernels ({} µs) from {} launch calls were launched outside every step, so no step: {}",
            a.steps.kernels_outside,
            us(o.sum_ns),
            a.steps.launches_outside,
            ex.join("; ")
        ));
    }
    for w in &a.steps.warnings {
        out.push(format!("{f}: {w}"));
    }
    out
}

/// The block a table starts with, per trace: file, rank, counts, notes.
pub fn table_header(w: &mut impl Write, p: &Parsed, a: &Analysis, what: &str) -> io::Result<()> {
    let t = &p.trace;
    let r = &a.links.report;
    writeln!(
        w,
        "{}  {}  rank {}  {} steps{}",
        escape(&p.path.display().to_string()),
        t.header.format.title(),
        t.header.rank.map_or("-".to_string(), |r| r.to_string()),
        a.steps.steps.len(),
        what
    )?;
    writeln!(
        w,
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
    )?;
    if let Some((t0, _)) = t.time_bounds {
        writeln!(
            w,
            "  times in µs from the trace's first event (at {} µs on the trace clock)",
            us(t0)
        )?;
    }
    let prefix = format!("{}: ", p.path.display());
    for n in notes(p, a) {
        writeln!(w, "  note: {}", escape(n.trim_start_matches(&prefix)))?;
    }
    Ok(())
}
