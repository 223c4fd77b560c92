//! `provenance diff` of two benchmark result files (pytest-benchmark JSON with our plugin's records): per
//! benchmark, the verdict row of `kineto diff` (`run_compare::bench`), each marked comparable or not from
//! the two runs' embedded records (`provenance::diff::comparable`). docs/verdict.md.

use std::path::Path;
use std::process::ExitCode;

use run_compare::bench::{Benchmark, bench_verdicts, benchmarks};
use run_compare::verdict::{METHOD, Method};
use run_compare::verdict_rows::{Comparability, GATE_RULE, GateOptions, Gated};
use serde_json::{Value, json};

/// The gate's options of `provenance diff` on result files.
pub struct BenchGate {
    /// `--fail-above PCT`: none, no gate (exit 0 whatever the rows say).
    pub fail_above: Option<step_stats::Threshold>,
    /// `--allow-missing`.
    pub allow_missing: bool,
    /// `--allow-incomparable`.
    pub allow_incomparable: bool,
}

/// Whether the runs behind two benchmarks can be compared, from their records.
fn comparability(old: Option<&Value>, new: Option<&Value>) -> Comparability {
    Comparability::of_records(old, new, |o, n| {
        let c = provenance::diff::comparable(o, n);
        Comparability {
            comparable: c.comparable,
            reasons: c.reasons,
        }
    })
}

/// Compares result files `a` and `b` (already read as JSON); exit 0, 1 when the gate fails, 2 on an error.
pub fn diff(a: (&Path, &Value), b: (&Path, &Value), json_out: bool, gate: &BenchGate) -> ExitCode {
    let read = |(p, v): (&Path, &Value)| -> Result<Vec<Benchmark>, String> {
        benchmarks(v).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (old, new) = match (read(a), read(b)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            tool_io::terminal::note(&format!("provenance diff: {e}"));
            return ExitCode::from(2);
        }
    };
    let (rows, only_old, only_new) = bench_verdicts(&old, &new, Method::default(), comparability);
    let gated = gate.fail_above.map(|fail_above| {
        let options = GateOptions {
            fail_above,
            allow_missing: gate.allow_missing,
            allow_incomparable: gate.allow_incomparable,
        };
        // Comparability is per benchmark here: the gate reads it from the rows.
        let incomparable = Comparability {
            comparable: rows.iter().all(|r| r.comparable),
            reasons: rows
                .iter()
                .filter(|r| !r.comparable)
                .map(|r| {
                    format!(
                        "{}: {}",
                        r.name.as_deref().unwrap_or(""),
                        r.judged.reasons.join("; ")
                    )
                })
                .collect(),
        };
        Gated::judge(options, &rows, &only_old, &only_new, &incomparable)
    });
    let written = tool_io::stdout::write(|out| {
        if json_out {
            for r in &rows {
                writeln!(out, "{}", json!(r))?;
            }
            for (kind, list) in [("only_in_old", &only_old), ("only_in_new", &only_new)] {
                for what in list {
                    writeln!(out, "{}", json!({"kind": kind, "what": what}))?;
                }
            }
            if let Some(g) = &gated {
                writeln!(
                    out,
                    "{}",
                    json!({"kind": "gate", "passed": g.passed(), "line": g.line()})
                )?;
            }
            return Ok(());
        }
        let esc = |s: &str| tool_io::terminal::escape(s).into_owned();
        writeln!(out, "OLD: {}", esc(&a.0.display().to_string()))?;
        writeln!(out, "NEW: {}", esc(&b.0.display().to_string()))?;
        for r in &rows {
            let j = &r.judged;
            let interval = match (j.ci_low_pct, j.ci_high_pct) {
                (Some(lo), Some(hi)) => format!("[{lo:+.2}, {hi:+.2}]"),
                _ => "–".to_owned(),
            };
            writeln!(
                out,
                "{:<12} {:>9} {:>21} {:>6} {:>6}  {}{}",
                j.verdict.as_str(),
                j.delta_pct
                    .map_or_else(|| "–".to_owned(), |d| format!("{d:+.2}")),
                interval,
                j.n_old,
                j.n_new,
                esc(r.name.as_deref().unwrap_or("")),
                if r.comparable {
                    ""
                } else {
                    " (NOT COMPARABLE)"
                }
            )?;
            for reason in &j.reasons {
                writeln!(out, "    {}", esc(reason))?;
            }
        }
        for o in &only_old {
            writeln!(out, "only in OLD: {}", esc(o))?;
        }
        for n in &only_new {
            writeln!(out, "only in NEW: {}", esc(n))?;
        }
        writeln!(out, "{METHOD}. {GATE_RULE}.")?;
        if let Some(g) = &gated {
            writeln!(out, "{}", esc(&g.line()))?;
        }
        Ok(())
    });
    if let Err(e) = written {
        if e.is_closed_pipe() {
            return ExitCode::SUCCESS;
        }
        e.exit("provenance diff");
        return ExitCode::from(2);
    }
    match &gated {
        Some(g) if !g.passed() => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}
