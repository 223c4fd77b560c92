//! html-report: one self-contained HTML file per tool run, rendered from the tool's own JSON output, and the
//! pages of `run_compare`'s comparisons.
//!
//! What it is: renderers that take the JSON a tool already writes (`serde_json::Value`) and return a whole
//! HTML document as a `String`: inline SVG charts drawn with plotters' SVG backend, tables whose numeric cells
//! carry the exact value they show (`data-v`), a few lines of inline script that sort tables, and the input
//! JSON embedded verbatim in `<script type="application/json" id="tool-json">`, so every number on the page
//! can be traced to the tool's JSON by construction. Numbers this crate computes (per-step spreads, Δ) are
//! embedded in `#derived-json`. No network, no CDN: the file opens from disk.
//!
//! What it is not: a place for the tools' analysis (that stays in their libraries; the spreads come from
//! `step-stats`), nor a writer of files or reader of command lines: the binaries write the returned string
//! through the shared result-file rules.
//!
//! Renderers are tolerant: each section renders what its input has and says "not in this output" where it
//! has nothing; none panics on a missing or mistyped field.
#![deny(missing_docs)]

pub mod chart;
pub mod diff;
pub mod doctor;
pub mod kineto;
pub mod kl1;
pub mod monitor;
pub mod page;
pub mod timeline;
pub mod timeline_cap;
pub mod view;

use serde_json::Value;

// Counts the readings and shades the renderers visit, in tests: what the linear-time tests measure (an
// operation count, not a time). Nothing in a build that is not a test.
#[cfg(test)]
thread_local! {
    pub(crate) static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One visit of a reading or a shade (see `VISITS`).
#[inline]
pub(crate) fn visit() {
    #[cfg(test)]
    VISITS.with(|v| v.set(v.get() + 1));
}

pub use diff::{
    Verdicts, change_cells, judged_cells, kineto_diff_page, kineto_verdict_page, kl1_diff_page,
};
pub use doctor::{doctor_html, doctor_section};
pub use kineto::KinetoInputs;
pub use monitor::MonitorInputs;
pub use page::Section;
pub use timeline::Mark;

/// The `kl1-bandwidth` report page, from the JSON report (result file) `kl1-bandwidth` writes.
pub fn kl1_bandwidth_html(report: &Value) -> String {
    kl1::render(report)
}

/// The kineto page, from the budget listing's JSON rows and, when given, `top` and roofline JSON.
pub fn kineto_html(inputs: &KinetoInputs<'_>) -> String {
    kineto::render(inputs)
}

/// The gpu-monitor page, from its JSONL samples and its JSON summary.
pub fn gpu_monitor_html(inputs: &MonitorInputs<'_>) -> String {
    monitor::render_monitor(inputs)
}

/// The `provenance show` page, from a provenance record.
pub fn provenance_html(record: &Value) -> String {
    monitor::render_provenance(record)
}

/// Reads JSON text that is either one value (an array's elements are returned) or JSON lines (one value
/// per non-blank line, as kineto's JSON listings and gpu-monitor's JSONL samples are written). A line that is not
/// JSON is an error naming the line.
pub fn parse_json_or_lines(text: &str) -> Result<Vec<Value>, String> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Ok(match v {
            Value::Array(a) => a,
            other => vec![other],
        });
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}
