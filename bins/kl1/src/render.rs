//! The human summary of a `kl1-bandwidth` result: per window, capture and rank, the rows, the period, and
//! the dense, sparse-MoE and prefill GB/s with their share of the GPU's specified bandwidth.

use std::io::{self, Write};

use kl1_bandwidth::{CaptureKind, Report};
// Names from a window (its directory, the manifest's cells and captures), a spec or a result go through
// `esc`: a control character in one must not reach the terminal.
use tool_io::terminal::escape as esc;

/// Writes the summary of `report` to `out`; `spec_gbps` and `gpu` are the spec's GPU and its specified
/// bandwidth (a CLAIM).
pub fn summary(out: &mut dyn Write, report: &Report, spec_gbps: f64, gpu: &str) -> io::Result<()> {
    let pct = |g: f64| 100.0 * g / spec_gbps;
    writeln!(
        out,
        "GB/s = ESTIMATED bytes / MEASURED kernel time (per-step means); % of {}'s specified \
         {spec_gbps} GB/s (a CLAIM)",
        esc(gpu)
    )?;
    for w in &report.windows {
        writeln!(out, "window {}", esc(&w.name))?;
        for c in &w.captures {
            writeln!(out, "  {} ({})", esc(&c.label), c.kind)?;
            for r in &c.ranks {
                let get = |k: &str| r.mean.get(k).copied();
                let mut line = format!(
                    "    rank {}: {} step{}, rows {}, period {:.3} ms",
                    r.rank,
                    r.steps,
                    if r.steps == 1 { "" } else { "s" },
                    rows_text(&r.rows_hist),
                    get("period_ms").unwrap_or(0.0)
                );
                let mut part = |name: &str, key: &str| {
                    if let Some(g) = get(key) {
                        line.push_str(&format!(" | {name} {g:.1} GB/s ({:.1} %)", pct(g)));
                        // A mean over fewer steps than the rank's says so.
                        if let Some(n) = r.mean_steps.get(key) {
                            line.push_str(&format!(" [{n} of {} steps]", r.steps));
                        }
                    }
                };
                match c.kind {
                    CaptureKind::Decode => {
                        part("dense", "dense.all.gbps");
                        part("LM head", "dense.lm_head.gbps");
                        part("sMoE if uniform", "smoe.gbps_if_uniform");
                    }
                    CaptureKind::Prefill => {
                        part("prefill gate|up", "tf.full.gu_gbps_if_uniform");
                        part("down", "tf.full.down_gbps_if_uniform");
                        part("reconstruct", "reconstruct.all.gbps");
                    }
                }
                let dropped: u64 = r.steps_dropped.values().sum();
                if dropped > 0 {
                    let why = r
                        .steps_dropped
                        .iter()
                        .map(|(why, n)| format!("{n} {}", esc(why)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    line.push_str(&format!(" | {dropped} dropped ({why})"));
                }
                writeln!(out, "{line}")?;
            }
        }
        if !w.skipped.is_empty() {
            writeln!(
                out,
                "  skipped (not a known capture): {}",
                w.skipped
                    .iter()
                    .map(|n| esc(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    Ok(())
}

/// `1,2` for one step of each; `2×2` for two steps of 2 rows.
fn rows_text(hist: &[(u64, u64)]) -> String {
    hist.iter()
        .map(|(r, n)| {
            if *n == 1 {
                r.to_string()
            } else {
                format!("{r}×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `kl1-bandwidth diff`: one line per compared number (old, new, Δ %, the per-step ranges, whether Δ
/// exceeds them), the numbers present on one side only, and the verdict when `fail_above` is given.
pub fn diff(
    out: &mut dyn Write,
    d: &kl1_bandwidth::diff::Diff,
    verdict: Option<&kl1_bandwidth::diff::Verdict>,
) -> io::Result<()> {
    writeln!(
        out,
        "{:<44} {:<34} {:>12} {:>12} {:>9} {:>23} exceeds",
        "capture/rank", "number", "old", "new", "Δ %", "range old / new"
    )?;
    for r in &d.rows {
        let [old, new, pct, range, exceeds] = html_report::change_cells(&r.change);
        writeln!(
            out,
            "{:<44} {:<34} {old:>12} {new:>12} {pct:>9} {range:>23} {exceeds}",
            esc(&r.place),
            esc(&r.key)
        )?;
    }
    for o in &d.only_in_old {
        writeln!(out, "only in OLD: {}", esc(o))?;
    }
    for n in &d.only_in_new {
        writeln!(out, "only in NEW: {}", esc(n))?;
    }
    writeln!(
        out,
        "{}. {}. {}.",
        kl1_bandwidth::diff::EXCEEDS_RULE,
        kl1_bandwidth::diff::FAIL_RULE,
        kl1_bandwidth::diff::MISSING_RULE
    )?;
    if let Some(v) = verdict {
        writeln!(out, "{}", v.line())?;
    }
    Ok(())
}

/// A progress bar on stderr (indicatif), drawn only once the work has taken more than a second and only
/// on a terminal (the caller passes no callback otherwise).
pub struct Progress {
    what: &'static str,
    start: std::time::Instant,
    bar: std::sync::OnceLock<indicatif::ProgressBar>,
}

impl Progress {
    /// A bar counting `what` (e.g. "traces"), not yet drawn.
    pub fn new(what: &'static str) -> Self {
        Progress {
            what,
            start: std::time::Instant::now(),
            bar: std::sync::OnceLock::new(),
        }
    }

    /// `done` of `total` finished.
    pub fn set(&self, done: usize, total: usize) {
        if self.bar.get().is_none() && self.start.elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        let bar = self.bar.get_or_init(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
                "{{bar:30}} {{pos}}/{{len}} {} ({{elapsed}})",
                self.what
            )) {
                b.set_style(style);
            }
            b
        });
        bar.set_position(done as u64);
    }

    /// Removes the bar, if it was drawn.
    pub fn finish(&self) {
        if let Some(b) = self.bar.get() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kl1_bandwidth::{CaptureReport, RankReport, WindowReport};

    use super::*;

    #[test]
    fn a_rank_line_says_what_was_dropped_and_which_means_are_partial() {
        let rank = RankReport {
            rank: 1,
            file: "t.json".into(),
            file_sha256: "0".repeat(64),
            steps: 2,
            rows_hist: vec![(1, 1), (2, 1)],
            // LM head in one step of two: 218.4 GB/s is that step's, 80.0 % of 273.
            mean: BTreeMap::from([
                ("period_ms".into(), 25.0),
                ("dense.all.gbps".into(), 190.0),
                ("dense.lm_head.gbps".into(), 218.4),
            ]),
            mean_steps: BTreeMap::from([("dense.lm_head.gbps".into(), 1)]),
            per_step: Vec::new(),
            step_index: vec![7, 8],
            kernels_outside_steps: 0,
            kernels_outside_steps_ms: 0.0,
            same_stream_overlaps: 0,
            steps_dropped: BTreeMap::from([
                ("last step of the trace".into(), 1),
                ("marker has no kernels".into(), 2),
            ]),
        };
        let report = Report {
            constants: serde_json::Value::Null,
            windows: vec![WindowReport {
                name: "w".into(),
                captures: vec![CaptureReport {
                    label: "prof-short-b1:decode".into(),
                    kind: CaptureKind::Decode,
                    ranks: vec![rank],
                }],
                skipped: vec!["x:y".into()],
            }],
        };
        let mut out = Vec::new();
        summary(&mut out, &report, 273.0, "GB10").unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().nth(3).unwrap();
        assert_eq!(
            line,
            "    rank 1: 2 steps, rows 1,2, period 25.000 ms | dense 190.0 GB/s (69.6 %) \
             | LM head 218.4 GB/s (80.0 %) [1 of 2 steps] | 3 dropped (1 last step of the trace, \
             2 marker has no kernels)"
        );
        assert!(
            text.ends_with("  skipped (not a known capture): x:y\n"),
            "{text}"
        );
    }
}
