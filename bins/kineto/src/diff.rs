//! `kineto diff`: did it get faster, and can the two runs be compared? Verdict rows first (step time, then
//! idle and buckets, then kernels, per phase: `run_compare::verdict_rows`), then each phase's per-bucket
//! means and spreads as before, what is in one run only, and the gate. Comparability comes from each run's
//! provenance record (`provenance.json` beside the run, or `--provenance OLD NEW`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use kineto_trace::Session;
use run_compare::verdict::{METHOD, Method};
use run_compare::verdict_rows::{
    Comparability, GATE_RULE, GateOptions, Gated, KernelLaunch, VerdictRow, budget_verdicts,
    kernel_verdicts,
};
use serde_json::{Value, json};

use crate::doctor::Analysed;
use crate::out::{self, note};
use crate::render::Format;
use crate::report::{Rows, check_ranks, claim, rows_of, rows_of_trace};

/// `kineto diff`'s options.
#[derive(Args)]
pub struct DiffArgs {
    /// The older run: `kineto budget --json` output (JSON lines or an array), or a trace or a
    /// directory of per-rank traces to analyse; a listing is told from a trace by its content, so a pipe
    /// (`<(kineto budget --json T)`) serves too.
    old: PathBuf,
    /// The newer run, in the same forms.
    new: PathBuf,
    /// Fail (exit 1) when a row is significantly slower by more than PCT % (a finite number ≥ 0; a row
    /// without an interval fails when its Δ % is above PCT), when the runs are not comparable, when a rank
    /// is in one run only, or when nothing was compared (docs/verdict.md).
    #[arg(long, value_name = "PCT")]
    fail_above: Option<step_stats::Threshold>,
    /// With --fail-above: a rank in one run only does not fail the gate (it is still listed).
    #[arg(long, requires = "fail_above")]
    allow_missing: bool,
    /// With --fail-above: runs judged not comparable from their provenance do not fail the gate (the
    /// reasons are still printed on every row).
    #[arg(long, requires = "fail_above")]
    allow_incomparable: bool,
    /// The two runs' provenance records (`provenance run -o`, the harness's record, or a result file
    /// holding one); default: `provenance.json` in each run's directory, when there is one.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    provenance: Option<Vec<PathBuf>>,
    /// The equivalence margin, %: an interval inside ±PCT is `unchanged`.
    #[arg(long, value_name = "PCT", default_value_t = run_compare::verdict::MARGIN_PCT)]
    margin: f64,
    /// One JSON object per line: the verdict rows, then the per-bucket rows, what is in one run only
    /// and the gate.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV with a header line, the same rows as --json.
    #[arg(long)]
    csv: bool,
    /// Also write a self-contained HTML page of the comparison.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace the HTML file if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Kernel rule table (TOML) for traces; default: the built-in table.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Step markers for traces (see `kineto budget --help`).
    #[arg(long, value_name = "RE")]
    step_pattern: Option<String>,
}

/// The file name of a run's provenance record in its directory (as `provenance run -o` and the harness
/// write it).
const RECORD_NAME: &str = "provenance.json";

/// How much of a diff input is read to tell a listing from a trace.
const HEAD: usize = 64 << 10;

/// One side of a diff: its budget rows, and its kernel launches when it is a trace (a listing holds none).
struct Side {
    budget: Vec<Value>,
    kernels: Option<Vec<KernelLaunch>>,
}

/// One side of a diff: a directory of per-rank traces, or one input told by its content — a `kineto
/// budget --json` listing or a trace (plain or gzip) — whether it is a file or a pipe.
fn side(path: &Path, d: &DiffArgs) -> Result<Side, String> {
    let setup = || -> Result<Session, String> {
        Session::new(kineto_trace::SessionConfig {
            rules: d.rules.clone(),
            step_pattern: d.step_pattern.clone(),
            parse: kineto_trace::Options {
                sha256: false,
                ..kineto_trace::Options::default()
            },
            ..kineto_trace::SessionConfig::default()
        })
        .map_err(|e| e.to_string())
    };
    if path.is_dir() {
        let session = setup()?;
        // The run's provenance record beside its traces is read as its record (`record_of`), not a trace.
        let listing_paths: Vec<PathBuf> = session
            .expand(&[path.to_path_buf()])
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|p| p.file_name() != Some(std::ffi::OsStr::new(RECORD_NAME)))
            .collect();
        let (rows, _) = rows_of(&session, &listing_paths, 0, None, true, false, |_| {})?;
        return Ok(Side {
            budget: rows.budget,
            kernels: rows.kernels,
        });
    }
    let named = |e: std::io::Error| format!("{}: {e}", path.display());
    // A file is noted as an input of this run (no result replaces it); a pipe is read as a stream.
    let mut input = tool_io::open_stream(path, "diff input").map_err(|e| e.to_string())?;
    let mut head = Vec::with_capacity(HEAD);
    (&mut input)
        .take(HEAD as u64)
        .read_to_end(&mut head)
        .map_err(named)?;
    if budget_listing_head(&head) {
        return listing(path, head, input).map(|budget| Side {
            budget,
            kernels: None,
        });
    }
    // A trace: the bytes already read, then the rest of the stream.
    let session = setup()?;
    // A side of a diff is one rank: a file of several is refused, naming them (pick one with a file of
    // its own, or diff the ranks with `kineto ranks`).
    let parsed = session
        .read_stored_one(path, std::io::Cursor::new(head).chain(input))
        .map_err(|e| match e {
            kineto_trace::Error::SeveralRanks { .. } => {
                format!("{e}; a diff compares one rank with one rank")
            }
            e => e.to_string(),
        })?;
    check_ranks(&[(
        path.to_path_buf(),
        parsed.trace.header.rank,
        parsed.trace.header.world_size,
    )])?;
    let mut rows = Rows {
        budget: Vec::new(),
        top: Vec::new(),
        kernels: Some(Vec::new()),
        timeline: None,
    };
    let a = Analysed::of(&session, parsed).map_err(|e| e.to_string())?;
    rows_of_trace(&mut rows, &a, session.rules(), 0)?;
    Ok(Side {
        budget: rows.budget,
        kernels: rows.kernels,
    })
}

/// The rows of a budget listing: `head`, then the rest of `input`, capped.
fn listing(path: &Path, head: Vec<u8>, mut input: impl Read) -> Result<Vec<Value>, String> {
    let named = |e: std::io::Error| format!("{}: {e}", path.display());
    let cap = tool_io::caps::RECORD;
    let mut bytes = head;
    (&mut input)
        .take(cap.saturating_add(1).saturating_sub(bytes.len() as u64))
        .read_to_end(&mut bytes)
        .map_err(named)?;
    if bytes.len() as u64 > cap {
        return Err(format!(
            "{}: a budget listing larger than {} MiB",
            path.display(),
            cap >> 20
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{}: not UTF-8 at byte {}",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        note(&format!(
            "kineto diff: note: {}: an empty budget listing (no steps)",
            path.display()
        ));
        return Ok(Vec::new());
    }
    html_report::parse_json_or_lines(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A `kineto budget --json` listing is JSON lines (or an array) of step objects carrying `buckets` and
/// `span_ns` (one of them within the first few KiB, whatever the key order); a Kineto trace is one object
/// with the trace's keys (`traceEvents`, `schemaVersion`, …).
/// Empty (or all-whitespace) input is an empty listing: `kineto budget --json` of a trace without steps.
fn budget_listing_head(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    if t.is_empty() {
        return true;
    }
    let trace_keys = [
        "\"traceEvents\"",
        "\"schemaVersion\"",
        "\"deviceProperties\"",
    ];
    (t.starts_with('[') || t.starts_with('{'))
        && (t.contains("\"buckets\"") || t.contains("\"span_ns\""))
        && !trace_keys.iter().any(|k| t.contains(k))
}

/// A run's provenance record: the one given, else `provenance.json` in the run's directory (the input
/// itself when it is a directory); `None` when there is none. An error names a record that cannot be read.
fn record_of(run: &Path, given: Option<&Path>) -> Result<Option<(PathBuf, Value)>, String> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => {
            let dir = if run.is_dir() {
                Some(run)
            } else {
                run.parent()
            };
            match dir.map(|d| d.join(RECORD_NAME)) {
                Some(p) if p.is_file() => p,
                _ => return Ok(None),
            }
        }
    };
    let record = provenance::record_json::read_record(&path).map_err(|e| e.to_string())?;
    Ok(Some((path, record)))
}

/// Whether the runs can be compared: from both records ([`provenance::diff::comparable`]); with a record
/// missing, comparable with a note saying comparability was not checked.
fn comparability(d: &DiffArgs) -> Result<(Comparability, [Option<PathBuf>; 2]), String> {
    let given = d.provenance.as_deref().unwrap_or_default();
    let old = record_of(&d.old, given.first().map(PathBuf::as_path))?;
    let new = record_of(&d.new, given.get(1).map(PathBuf::as_path))?;
    let paths = [
        old.as_ref().map(|(p, _)| p.clone()),
        new.as_ref().map(|(p, _)| p.clone()),
    ];
    let mut c =
        Comparability::of_provenance(old.as_ref().map(|(_, r)| r), new.as_ref().map(|(_, r)| r));
    if paths.iter().any(Option::is_none) {
        c.reasons.push(
            "a run's record is provenance.json beside it, or --provenance OLD NEW".to_owned(),
        );
    }
    Ok((c, paths))
}

/// Everything `kineto diff` prints.
struct Diffed {
    rows: Vec<VerdictRow>,
    phases: Vec<(String, run_compare::Comparison)>,
    only_in_old: Vec<String>,
    only_in_new: Vec<String>,
    /// Kernel names in the old run only, and in the new run only (listed, not gated).
    kernels_only: (Vec<String>, Vec<String>),
    comparability: Comparability,
    records: [Option<PathBuf>; 2],
    gated: Option<Gated>,
}

/// Reads both sides, judges them and gates.
fn diffed(d: &DiffArgs) -> Result<(Diffed, Vec<Value>, Vec<Value>), String> {
    if !(d.margin.is_finite() && d.margin >= 0.0) {
        return Err(format!(
            "--margin {}: give a finite percentage ≥ 0",
            d.margin
        ));
    }
    let method = Method {
        margin_pct: d.margin,
        ..Method::default()
    };
    let (old, new) = (side(&d.old, d)?, side(&d.new, d)?);
    let typed = |rows: &[Value], path: &Path| {
        run_compare::budget::BudgetStep::listing(rows)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let (old_steps, new_steps) = (typed(&old.budget, &d.old)?, typed(&new.budget, &d.new)?);
    let phased = budget_verdicts(&old_steps, &new_steps, method)?;
    let mut rows = phased.rows;
    let (only_in_old, only_in_new) = (phased.only_in_old, phased.only_in_new);
    // Kernel names in one run only are listed, never gated: a library picks other kernels from run to run,
    // and their time is in the buckets and the step time, which are.
    let mut kernels_only = (Vec::new(), Vec::new());
    match (&old.kernels, &new.kernels) {
        (Some(o), Some(n)) => {
            let (k, ko, kn) = kernel_verdicts(o, n, method);
            rows.extend(k);
            kernels_only = (ko, kn);
        }
        _ => note(
            "kineto diff: note: a budget listing holds no kernel durations: no kernel verdicts \
             (give both runs as traces for them)",
        ),
    }
    let (comparability, records) = comparability(d)?;
    comparability.apply(&mut rows);
    let gated = d.fail_above.map(|fail_above| {
        let gate = GateOptions {
            fail_above,
            allow_missing: d.allow_missing,
            allow_incomparable: d.allow_incomparable,
        };
        Gated::judge(gate, &rows, &only_in_old, &only_in_new, &comparability)
    });
    Ok((
        Diffed {
            rows,
            phases: phased.phases,
            only_in_old,
            only_in_new,
            kernels_only,
            comparability,
            records,
            gated,
        },
        old.budget,
        new.budget,
    ))
}

/// Runs `kineto diff`: exit 0 = pass, 1 = the gate failed, 2 = error.
pub fn diff(d: &DiffArgs) -> ExitCode {
    let fail = |e: String| {
        note(&format!("kineto diff: {e}"));
        ExitCode::from(2)
    };
    let page = match d.html.as_deref().map(|p| claim(p, d.overwrite)).transpose() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let (r, old, new) = match diffed(d) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    if let Some(page) = page {
        let verdicts = html_report::Verdicts {
            rows: &r.rows,
            comparability: &r.comparability,
            gate_line: r.gated.as_ref().map(|g| (g.passed(), g.line())),
            margin_pct: d.margin,
        };
        let only = (&r.only_in_old[..], &r.only_in_new[..]);
        let html = html_report::kineto_verdict_page(&old, &new, &r.phases, only, &verdicts);
        match page.write_bytes(html.as_bytes()) {
            Ok(w) => out::written("kineto diff", &w),
            Err(e) => return fail(e.to_string()),
        }
    }
    let format = crate::args::format_of(d.json, d.csv);
    let mut w = out::stdout(format);
    let written = match format {
        Format::Json => json_out(&mut w, &r),
        Format::Csv => csv_out(&mut w, &r),
        Format::Table => text_out(&mut w, &r, d),
    };
    if let Err(e) = written {
        out::write_failed(e);
    }
    out::finish(&mut w);
    match &r.gated {
        Some(g) if !g.passed() => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// What is in one run only, by kind: ranks and numbers (gated), kernel names (listed only).
fn one_side_lists(r: &Diffed) -> [(&'static str, &Vec<String>); 4] {
    [
        ("only_in_old", &r.only_in_old),
        ("only_in_new", &r.only_in_new),
        ("kernel_only_in_old", &r.kernels_only.0),
        ("kernel_only_in_new", &r.kernels_only.1),
    ]
}

/// The interval of a bucket row of one phase: its verdict row's (`None` without an interval).
fn interval_of(r: &Diffed, phase: &str, row: &run_compare::Row) -> (Option<f64>, Option<f64>) {
    r.rows
        .iter()
        .find(|v| v.judges(phase, row))
        .map_or((None, None), |v| {
            (v.judged.ci_low_pct, v.judged.ci_high_pct)
        })
}

/// A bucket row of one phase as JSON: the means, Δ %, its interval and the spread test
/// (`run_compare::Change`).
fn change_json(r: &Diffed, phase: &str, row: &run_compare::Row) -> Value {
    let c = &row.change;
    let (lo, hi) = interval_of(r, phase, row);
    json!({
        "kind": "bucket",
        "phase": phase,
        "place": row.place,
        "metric": row.key,
        "old": c.old,
        "new": c.new,
        "delta_pct": c.delta_pct,
        "ci_low_pct": lo,
        "ci_high_pct": hi,
        "old_range": c.old_spread.as_ref().map(step_stats::Spread::range),
        "new_range": c.new_spread.as_ref().map(step_stats::Spread::range),
        "exceeds_spread": c.exceeds_spread,
    })
}

fn json_out(w: &mut impl Write, r: &Diffed) -> std::io::Result<()> {
    let line = |w: &mut dyn Write, v: &Value| writeln!(w, "{v}");
    for row in &r.rows {
        line(w, &json!(row))?;
    }
    for (phase, c) in &r.phases {
        for row in &c.rows {
            line(w, &change_json(r, phase, row))?;
        }
    }
    for (kind, list) in one_side_lists(r) {
        for what in list {
            line(w, &json!({"kind": kind, "what": what}))?;
        }
    }
    if let Some(g) = &r.gated {
        line(w, &json!(g.row()))?;
    }
    Ok(())
}

/// The CSV columns: one header for every kind of row (a cell that does not apply is empty). Every record
/// names its cells by these ([`csv_record`]): the list is written here only.
const CSV_COLUMNS: [&str; 18] = [
    "kind",
    "metric",
    "name",
    "place",
    "phase",
    "verdict",
    "delta_pct",
    "ci_low_pct",
    "ci_high_pct",
    "n_old",
    "n_new",
    "more_samples",
    "comparable",
    "gated",
    "reasons",
    "old",
    "new",
    "exceeds_spread",
];

/// One CSV record: each cell given by its column's name ([`CSV_COLUMNS`]), the others empty; every cell
/// through the workspace's one CSV cell rule (`tool_io::csv`).
fn csv_record(w: &mut dyn Write, named: &[(&str, String)]) -> std::io::Result<()> {
    let mut cells = vec![String::new(); CSV_COLUMNS.len()];
    for (col, cell) in named {
        let i = CSV_COLUMNS
            .iter()
            .position(|c| c == col)
            .unwrap_or_else(|| unreachable!("`{col}` is not one of CSV_COLUMNS"));
        cells[i] = tool_io::csv::text_cell(cell).into_owned();
    }
    writeln!(w, "{}", cells.join(","))
}

fn csv_out(w: &mut impl Write, r: &Diffed) -> std::io::Result<()> {
    writeln!(w, "{}", CSV_COLUMNS.join(","))?;
    let num = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.3}"));
    for row in &r.rows {
        let j = &row.judged;
        csv_record(
            w,
            &[
                ("kind", row.kind.into()),
                ("metric", row.metric.into()),
                ("name", row.name.clone().unwrap_or_default()),
                ("place", row.place.clone()),
                ("phase", row.phase.clone()),
                ("verdict", j.verdict.as_str().into()),
                ("delta_pct", num(j.delta_pct)),
                ("ci_low_pct", num(j.ci_low_pct)),
                ("ci_high_pct", num(j.ci_high_pct)),
                ("n_old", j.n_old.to_string()),
                ("n_new", j.n_new.to_string()),
                (
                    "more_samples",
                    j.more_samples.map_or(String::new(), |m| m.to_string()),
                ),
                ("comparable", row.comparable.to_string()),
                ("gated", row.gated.to_string()),
                ("reasons", j.reasons.join("; ")),
            ],
        )?;
    }
    for (phase, c) in &r.phases {
        for row in &c.rows {
            let ch = &row.change;
            let (lo, hi) = interval_of(r, phase, row);
            csv_record(
                w,
                &[
                    ("kind", "bucket".into()),
                    ("metric", row.key.clone()),
                    ("place", row.place.clone()),
                    ("phase", phase.clone()),
                    ("delta_pct", num(ch.delta_pct)),
                    ("ci_low_pct", num(lo)),
                    ("ci_high_pct", num(hi)),
                    ("old", num(Some(ch.old))),
                    ("new", num(Some(ch.new))),
                    (
                        "exceeds_spread",
                        ch.exceeds_spread.map_or(String::new(), |b| b.to_string()),
                    ),
                ],
            )?;
        }
    }
    for (kind, list) in one_side_lists(r) {
        for what in list {
            csv_record(w, &[("kind", kind.into()), ("name", what.clone())])?;
        }
    }
    if let Some(g) = &r.gated {
        let verdict = if g.passed() { "pass" } else { "fail" };
        csv_record(
            w,
            &[
                ("kind", "gate".into()),
                ("verdict", verdict.into()),
                ("reasons", g.reasons().join("; ")),
            ],
        )?;
    }
    Ok(())
}

fn text_out(w: &mut impl Write, r: &Diffed, d: &DiffArgs) -> std::io::Result<()> {
    let record = |p: &Option<PathBuf>| {
        p.as_ref().map_or_else(
            || "no provenance record".to_owned(),
            |p| format!("record {}", p.display()),
        )
    };
    writeln!(
        w,
        "OLD: {} ({})",
        out::escape(&d.old.display().to_string()),
        out::escape(&record(&r.records[0]))
    )?;
    writeln!(
        w,
        "NEW: {} ({})",
        out::escape(&d.new.display().to_string()),
        out::escape(&record(&r.records[1]))
    )?;
    let c = &r.comparability;
    writeln!(w, "comparable: {}", if c.comparable { "yes" } else { "NO" })?;
    for reason in &c.reasons {
        writeln!(w, "  {}", out::escape(reason))?;
    }
    writeln!(
        w,
        "{:<10} {:<9} {:<16} {:<12} {:>9} {:>21} {:>6} {:>6}  name; why",
        "metric", "phase", "where", "verdict", "Δ %", "interval %", "n old", "n new"
    )?;
    for row in &r.rows {
        let j = &row.judged;
        let mut why: Vec<String> = row.name.iter().cloned().collect();
        // The comparability reasons are said once above, not on every row; that the runs are not
        // comparable is said on each, so no row reads "faster" alone.
        if !row.comparable {
            why.push("NOT COMPARABLE (why: above)".to_owned());
        }
        why.extend(j.reasons.iter().filter(|x| !c.reasons.contains(x)).cloned());
        if let Some(m) = j.more_samples {
            why.push(format!("about {m} more sample(s) a side would decide"));
        }
        let [delta, interval] = html_report::judged_cells(j);
        writeln!(
            w,
            "{:<10} {:<9} {:<16} {:<12} {delta:>9} {interval:>21} {:>6} {:>6}  {}",
            row.metric,
            out::escape(&row.phase),
            out::escape(&row.place),
            j.verdict.as_str(),
            j.n_old,
            j.n_new,
            out::escape(&why.join("; "))
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:<9} {:<8} {:<16} {:>12} {:>12} {:>9} {:>23} exceeds",
        "phase", "rank", "bucket", "old µs", "new µs", "Δ %", "range old / new"
    )?;
    for (phase, cmp) in &r.phases {
        for row in &cmp.rows {
            let [o, n, pct, range, exceeds] = html_report::change_cells(&row.change);
            writeln!(
                w,
                "{:<9} {:<8} {:<16} {o:>12} {n:>12} {pct:>9} {range:>23} {exceeds}",
                out::escape(phase),
                out::escape(&row.place),
                out::escape(&row.key)
            )?;
        }
    }
    for (kind, list) in one_side_lists(r) {
        let side = match kind {
            "only_in_old" => "only in OLD",
            "only_in_new" => "only in NEW",
            "kernel_only_in_old" => "only in OLD (not gated)",
            _ => "only in NEW (not gated)",
        };
        for what in list {
            writeln!(w, "{side}: {}", out::escape(what))?;
        }
    }
    writeln!(w, "{METHOD}. {}. {GATE_RULE}.", step_stats::EXCEEDS_RULE)?;
    if let Some(g) = &r.gated {
        writeln!(w, "{}", out::escape(&g.line()))?;
        if !g.passed() {
            writeln!(
                w,
                "(--allow-incomparable: runs judged not comparable pass; --allow-missing: what one run \
                 lacks passes)"
            )?;
        }
    }
    Ok(())
}
