//! The human summary of a `kl1-bandwidth` result: per window, capture and rank, the rows, the period, and
//! the dense, sparse-MoE and prefill GB/s with their share of the GPU's specified bandwidth.

use std::io::{self, Write};

use kl1_bandwidth::{CaptureKind, Report};

/// Writes the summary of `report` to `out`; `spec_gbps` and `gpu` are the spec's GPU and its specified
/// bandwidth (a CLAIM).
pub fn summary(out: &mut dyn Write, report: &Report, spec_gbps: f64, gpu: &str) -> io::Result<()> {
    let pct = |g: f64| 100.0 * g / spec_gbps;
    writeln!(
        out,
        "GB/s = ESTIMATED bytes / MEASURED kernel time (per-step means); % of {gpu}'s specified \
         {spec_gbps} GB/s (a CLAIM)"
    )?;
    for w in &report.windows {
        writeln!(out, "window {}", w.name)?;
        for c in &w.captures {
            writeln!(out, "  {} ({})", c.label, c.kind)?;
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
                        .map(|(why, n)| format!("{n} {why}"))
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
                w.skipped.join(", ")
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
