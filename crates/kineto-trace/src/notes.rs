//! What the rows of a trace's tables do not show, as lines that name the file: the format it was read
//! as, the readers' notes, GPU work with no launch, launch calls with no GPU work, kernels outside every
//! step, how steps were found. The CLI prints them in a table's header block (or as `note:` lines on
//! stderr beside `--json` and `--csv`); every front end takes them from here, so they say the same.

use crate::Parsed;
use crate::analysis::Analysis;
use crate::ns_to_us_string as us;

/// A name cut to `width` characters, an ellipsis marking the cut.
pub fn fit(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let s: String = name.chars().take(width.saturating_sub(1)).collect();
        format!("{s}…")
    }
}

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
        .is_some_and(|s| s.name == crate::step::WHOLE_WINDOW);
    let so = if whole {
        "counted in the whole-trace step"
    } else {
        "so no step"
    };
    let h = &p.trace.header;
    if h.format != crate::TraceFormat::Kineto {
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
