//! `provenance diff` of two benchmark results: pytest-benchmark JSON files (with our plugin's records), or
//! two criterion harness's output directories (each benchmark's `new/sample.json` beside the
//! `provenance.json` that `provenance::bench::record_benchmark` writes there). Per benchmark, the verdict
//! row of `kineto diff` (`run_compare::bench`), each marked comparable or not from the two runs' records
//! (`Comparability::of_provenance`). docs/verdict.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use provenance::bench::RECORD_FILE;
use run_compare::bench::{Benchmark, bench_verdicts, benchmarks, criterion_benchmark};
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

/// How deep below the directory given a benchmark's directory is looked for: criterion nests a benchmark
/// id's parts (`group/function/param`), and its output directory may be given from a level or two above.
const CRITERION_DEPTH: usize = 8;

/// A JSON file of a harness's results, capped as a record is; an error names the file.
fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = tool_io::read_input(path, "benchmark result", tool_io::caps::RECORD)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The directories under `dir` (itself included) holding a criterion benchmark's `new/benchmark.json`,
/// sorted; and how many hold a provenance record without one (divan's: it keeps no files of its own).
fn criterion_dirs(dir: &Path) -> Result<(Vec<PathBuf>, usize), String> {
    let (mut found, mut records_only) = (Vec::new(), 0);
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if d.join("new").join("benchmark.json").is_file() {
            found.push(d.clone());
        } else if d.join(RECORD_FILE).is_file() {
            records_only += 1;
        }
        if depth == CRITERION_DEPTH {
            continue;
        }
        let named = |e: std::io::Error| format!("{}: {e}", d.display());
        for entry in std::fs::read_dir(&d).map_err(named)? {
            let entry = entry.map_err(named)?;
            // Not through a symbolic link: a link back up would walk the same results twice.
            if entry.file_type().map_err(named)?.is_dir() {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    Ok((found, records_only))
}

/// The criterion benchmarks of a harness's output directory (`target/criterion`, `$CRITERION_HOME`, or one
/// benchmark's directory), each with the record beside it when there is one. An error names the file and
/// field that cannot be read, or says the directory holds no criterion results.
pub fn criterion_results(dir: &Path) -> Result<Vec<Benchmark>, String> {
    let (dirs, records_only) = criterion_dirs(dir)?;
    if dirs.is_empty() {
        let divan = if records_only > 0 {
            format!(
                " ({records_only} provenance record(s) without results: divan keeps no result files; \
                 compare two of its records with `provenance diff A/{RECORD_FILE} B/{RECORD_FILE}`)"
            )
        } else {
            String::new()
        };
        return Err(format!(
            "{}: no criterion results under it (a benchmark's new/benchmark.json and new/sample.json, as \
             criterion writes them in target/criterion or $CRITERION_HOME){divan}",
            dir.display()
        ));
    }
    dirs.iter()
        .map(|d| {
            let record_path = d.join(RECORD_FILE);
            let record = if record_path.is_file() {
                Some(
                    provenance::record_json::read_record(&record_path)
                        .map_err(|e| e.to_string())?,
                )
            } else {
                None
            };
            let id = read_json(&d.join("new").join("benchmark.json"))?;
            let sample = read_json(&d.join("new").join("sample.json"))?;
            criterion_benchmark(&id, &sample, record).map_err(|e| format!("{}: {e}", d.display()))
        })
        .collect()
}

/// The benchmarks of a pytest-benchmark result (already read as JSON); an error names the file and field.
pub fn pytest_results(path: &Path, v: &Value) -> Result<Vec<Benchmark>, String> {
    benchmarks(v).map_err(|e| format!("{}: {e}", path.display()))
}

/// A benchmark named twice in one run's results (two criterion output directories under the one given):
/// refused, since pairing by name would judge one and drop the other.
fn named_twice(path: &Path, list: &[Benchmark]) -> Result<(), String> {
    for (i, b) in list.iter().enumerate() {
        if list[..i].iter().any(|o| o.name == b.name) {
            return Err(format!(
                "{}: the benchmark {} appears twice: give one run's results",
                path.display(),
                b.name
            ));
        }
    }
    Ok(())
}

/// The benchmarks of one run, as read from `path` (a result file or a harness's directory).
pub type Results = Result<Vec<Benchmark>, String>;

/// Compares the results of runs `a` and `b` (`old` and `new`, as read from them); exit 0, 1 when the gate
/// fails, 2 on an error.
pub fn diff(
    (a, b): (&Path, &Path),
    (old, new): (Results, Results),
    json_out: bool,
    gate: &BenchGate,
) -> ExitCode {
    let checked = |p: &Path, r: Results| r.and_then(|r| named_twice(p, &r).map(|()| r));
    let (old, new) = match (checked(a, old), checked(b, new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            tool_io::terminal::note(&format!("provenance diff: {e}"));
            return ExitCode::from(2);
        }
    };
    let (rows, only_old, only_new) =
        bench_verdicts(&old, &new, Method::default(), Comparability::of_provenance);
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
        // One list of reasons for the text's line and the JSON's row.
        Gated::judge(options, &rows, &only_old, &only_new, &incomparable).row()
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
                writeln!(out, "{}", json!(g))?;
            }
            return Ok(());
        }
        let esc = |s: &str| tool_io::terminal::escape(s).into_owned();
        writeln!(out, "OLD: {}", esc(&a.display().to_string()))?;
        writeln!(out, "NEW: {}", esc(&b.display().to_string()))?;
        for r in &rows {
            let j = &r.judged;
            let [delta, interval] = html_report::judged_cells(j);
            writeln!(
                out,
                "{:<12} {delta:>9} {interval:>21} {:>6} {:>6}  {}{}",
                j.verdict.as_str(),
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
            if let Some(m) = j.more_samples {
                writeln!(out, "    about {m} more round(s) a side would decide")?;
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
            writeln!(out, "{}", esc(&g.line))?;
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
        Some(g) if !g.passed => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}
