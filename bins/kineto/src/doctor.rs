//! `kineto doctor`: what to fix first, with the time at stake. Reads every trace (and, with `--model`,
//! each step's roofline), runs `kineto-doctor`'s rules, prints the `doctor` table of `kineto-tables`
//! (findings ranked by time at stake, then the trust warnings) and names the command to drill down with.

use crate::args::Listing;
use crate::each::refused;
use crate::out::{self, note};
use crate::render::{self, Ctx, Format};
use crate::views;
use clap::Args;
use kineto_doctor::{Diagnosis, NO_FIX, Next, Thresholds, TraceInput, diagnose};
use kineto_tables::{DoctorEntry, DoctorRow, doctor_columns, evidence_display};
use kineto_trace::family::Rules;
use kineto_trace::{AnalysedTrace, Parsed, Session};
use roofline::StepRoofline;
use serde_json::Value;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `kineto doctor`'s options.
#[derive(Args)]
pub struct DoctorArgs {
    /// A Hugging Face config.json: adds the below-the-roofline rule (ESTIMATED), each step's roofline
    /// computed as `kineto roofline` does.
    #[arg(long, value_name = "CONFIG.json")]
    model: Option<PathBuf>,
    #[command(flatten)]
    model_opts: crate::roofline::ModelOptions,
    /// Also write a self-contained HTML page of the findings (it embeds the rows `--json` prints).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace the HTML file if it exists.
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    listing: Listing,
}

/// One trace, parsed and analysed once by the session, with its roofline: what the doctor's rules read
/// (`kineto doctor`'s and `kineto report`'s, which also draws its budget rows and timeline from it).
pub struct Analysed {
    /// The trace, read and analysed.
    pub t: AnalysedTrace,
    /// The GPU and each step's roofline, with `--model`.
    pub roofline: Option<(String, Vec<StepRoofline>)>,
}

impl std::ops::Deref for Analysed {
    type Target = AnalysedTrace;
    fn deref(&self) -> &AnalysedTrace {
        &self.t
    }
}

impl Analysed {
    /// Reads and analyses one trace file: one per rank it holds ([`Session::read_ranks`]).
    pub fn read_ranks(session: &Session, path: &Path) -> kineto_trace::Result<Vec<Analysed>> {
        session
            .read_ranks(path)?
            .into_iter()
            .map(|p| Analysed::of(session, p))
            .collect()
    }

    /// Analyses a trace already read.
    pub fn of(session: &Session, parsed: Parsed) -> kineto_trace::Result<Analysed> {
        Ok(Analysed {
            t: session.analyse(parsed)?,
            roofline: None,
        })
    }
}

/// The doctor's inputs over analysed traces; `files[i]` is `done[i]`'s file.
pub fn inputs<'a>(
    done: &'a [Analysed],
    files: &'a [String],
    rules: &'a Rules,
) -> Vec<TraceInput<'a>> {
    done.iter()
        .zip(files)
        .map(|(d, file)| TraceInput {
            file,
            trace: d.trace(),
            analysis: &d.analysis,
            budgets: d.budgets(),
            rules,
            roofline: d
                .roofline
                .as_ref()
                .map(|(gpu, steps)| kineto_doctor::Roofs { gpu, steps }),
        })
        .collect()
}

/// A shell word: as it is when it needs no quoting, else in single quotes.
fn word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that shows the rows behind a finding of `file`.
fn next_command(next: Next, file: &str, l: &Listing, model: Option<&Path>) -> String {
    let mut opts = String::new();
    if let Some(r) = &l.rules {
        opts.push_str(&format!(" --rules {}", word(&r.display().to_string())));
    }
    if let Some(p) = &l.step_pattern {
        opts.push_str(&format!(" --step-pattern {}", word(p)));
    }
    if l.whole_trace {
        opts.push_str(" --whole-trace");
    }
    let all = || {
        l.traces
            .iter()
            .map(|t| word(&t.display().to_string()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let file = word(file);
    match next {
        Next::Budget => format!("kineto budget{opts} {file}"),
        Next::Steps => format!("kineto steps{opts} {file}"),
        Next::Kernels => format!("kineto kernels{opts} --csv {file}"),
        Next::TopPerStep => format!("kineto top --per-step{opts} {file}"),
        Next::Ranks => format!("kineto ranks{opts} {}", all()),
        Next::Summary => format!("kineto summary {file}"),
        Next::Roofline => {
            let model = model.map_or_else(
                || "CONFIG.json".to_string(),
                |m| word(&m.display().to_string()),
            );
            format!("kineto roofline --model {model}{opts} {file}")
        }
    }
}

fn rows<'d>(d: &'d Diagnosis, l: &Listing, model: Option<&Path>) -> Vec<DoctorRow<'d>> {
    let findings = d.findings.iter().map(|f| DoctorRow {
        entry: DoctorEntry::Finding(f),
        next: next_command(f.next, &f.file, l, model),
    });
    let warnings = d.warnings.iter().map(|w| DoctorRow {
        entry: DoctorEntry::Trust(w),
        next: next_command(w.next, &w.file, l, model),
    });
    findings.chain(warnings).collect()
}

/// Width of the share bar in the text form, characters: one per 2.5 % of the analysed span.
const SHARE_BAR: usize = 40;

/// One finding in the page's order (`html-report`'s finding card): a headline — what, where, how much
/// (µs, the one time unit of the text form) — a bar of its share, the fix, the evidence with kernel names'
/// signatures shortened (`kineto_tables::evidence_display`, as the page; the full text is in `--json`), and the
/// command to run next; every line wrapped to the 120-column terminal.
fn write_finding(
    w: &mut impl Write,
    n: usize,
    f: &kineto_doctor::Finding,
    next: &str,
) -> io::Result<()> {
    let place = f.rank.map_or_else(
        || out::escape(&f.file).into_owned(),
        |r| format!("rank {r}"),
    );
    let steps = kineto_tables::step_runs(&f.steps);
    let filled = ((f.share_pct / 100.0 * SHARE_BAR as f64).round() as usize).min(SHARE_BAR);
    let fix = f.fix.map_or(NO_FIX.to_string(), |x| {
        format!("{} ({})", x.change, x.source)
    });
    let lines = [
        format!(
            "{n}. {}: {} µs at stake, {:.1} % of the analysed span ({}) — {place}, steps {steps}",
            f.id.as_str(),
            kineto_trace::ns_to_us_string(f.time_at_stake_ns),
            f.share_pct,
            f.origin.as_str()
        ),
        format!(
            "   [{}{}] {:.1} %",
            "#".repeat(filled),
            ".".repeat(SHARE_BAR - filled),
            f.share_pct
        ),
        format!("   fix: {}", out::escape(&fix)),
        format!(
            "   evidence: {}",
            out::escape(&evidence_display(&f.evidence))
        ),
        format!("   → {}", out::escape(next)),
    ];
    for line in lines {
        for l in tool_io::terminal::wrap(&line, tool_io::terminal::WIDTH) {
            writeln!(w, "{l}")?;
        }
    }
    Ok(())
}

fn write_text(w: &mut impl Write, d: &Diagnosis, rows: &[DoctorRow<'_>]) -> io::Result<()> {
    let steps: usize = d.traces.iter().map(|t| t.steps).sum();
    writeln!(
        w,
        "kineto doctor: {} traces, {steps} steps; {} findings, {} trust warnings",
        d.traces.len(),
        d.findings.len(),
        d.warnings.len()
    )?;
    for t in &d.traces {
        if !d.findings.iter().any(|f| f.file == t.file) {
            writeln!(
                w,
                "{} (rank {}): no finding above the rules' thresholds (docs/doctor.md)",
                out::escape(&t.file),
                t.rank.map_or("-".to_string(), |r| r.to_string())
            )?;
        }
    }
    let (findings, trust): (Vec<&DoctorRow<'_>>, Vec<&DoctorRow<'_>>) = rows
        .iter()
        .partition(|r| matches!(r.entry, DoctorEntry::Finding(_)));
    if !findings.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "findings, most time at stake first (an upper bound each on what fixing it recovers; they may overlap):"
        )?;
        for (i, r) in findings.iter().enumerate() {
            if let DoctorEntry::Finding(f) = r.entry {
                writeln!(w)?;
                write_finding(w, i + 1, f, &r.next)?;
            }
        }
    }
    if !trust.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "trust warnings (not ranked: how far to trust the numbers):"
        )?;
        for r in trust {
            if let DoctorEntry::Trust(t) = r.entry {
                let line = format!(
                    "  {} {}: {}",
                    t.id.as_str(),
                    out::escape(&t.file),
                    out::escape(&evidence_display(&t.evidence))
                );
                for l in tool_io::terminal::wrap(&line, tool_io::terminal::WIDTH) {
                    writeln!(w, "{l}")?;
                }
            }
        }
    }
    Ok(())
}

/// The rows as `--json` prints them, as values (what the HTML page embeds).
fn json_values(rows: &[DoctorRow<'_>]) -> Result<Vec<Value>, String> {
    let mut buf = Vec::new();
    for r in rows {
        render::json_row(&mut buf, doctor_columns(), r, &Ctx::default())
            .map_err(|e| e.to_string())?;
    }
    let text = String::from_utf8(buf).map_err(|e| e.to_string())?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("a doctor row is not JSON: {e}")))
        .collect()
}

/// Each step's phase columns (`html_report::view::PHASES`, with `file` and `rank`), from the `steps`
/// table's JSON rows: what the page shows beside the findings.
fn phase_rows(done: &[Analysed], files: &[String]) -> Result<Vec<Value>, String> {
    let keep = |mut row: Value| {
        if let Some(o) = row.as_object_mut() {
            o.retain(|k, _| {
                k == "file" || k == "rank" || html_report::view::PHASES.iter().any(|p| p.name == k)
            });
        }
        row
    };
    let mut out = Vec::new();
    for (d, file) in done.iter().zip(files) {
        let a = kineto_tables::Analysed::of(file, &d.t);
        out.extend(
            crate::report::json_lines(|w| {
                kineto_tables::step_rows(&a).try_for_each(|r| {
                    render::json_row(w, kineto_tables::step_columns(), &r, &Ctx::default())
                })
            })?
            .into_iter()
            .map(keep),
        );
    }
    Ok(out)
}

/// Reads `paths` and runs the doctor's rules on them (with `model`, the roofline rule too): the diagnosis,
/// with `phases` each step's phase rows ([`phase_rows`], else none), and whether a trace failed (named
/// on stderr under `who`; with `notes`, each trace's notes too).
fn diagnose_paths(
    session: &Session,
    paths: &[PathBuf],
    model: Option<&roofline::Setup>,
    phases: bool,
) -> Result<(Diagnosis, Vec<Value>, bool), ExitCode> {
    let who = "kineto doctor";
    let work = |path: &Path| Analysed::read_ranks(session, path);
    let mut failed = false;
    let mut done: Vec<Analysed> = Vec::new();
    session.each(paths, work, |r| match r {
        Ok(ranks) => done.extend(ranks),
        Err(e) => {
            note(&format!("{who}: {e}"));
            failed = true;
        }
    });
    for d in &mut done {
        for n in d.notes() {
            note(&format!("{who}: note: {n}"));
        }
        if let Some(setup) = model {
            let t = roofline::analyse_trace(&d.t, setup);
            failed |= crate::roofline::judge(t, who, |t| {
                d.roofline = Some((t.gpu.clone(), t.steps.clone()))
            });
        }
    }
    // Two traces of one rank are never compared as two ranks: refused, naming both (the rank rule).
    let checked = Session::check_ranks(done.iter().map(|d| &d.parsed));
    match checked {
        Ok(warnings) => {
            for w in warnings {
                note(&format!("{who}: note: {w}"));
            }
        }
        Err(e) => {
            note(&format!("{who}: {e}"));
            return Err(ExitCode::from(1));
        }
    }
    let files: Vec<String> = done.iter().map(|d| d.file()).collect();
    let steps = match phases {
        false => Vec::new(),
        true => phase_rows(&done, &files).map_err(|e| {
            note(&format!("{who}: {e}"));
            ExitCode::from(1)
        })?,
    };
    Ok((
        diagnose(
            &inputs(&done, &files, session.rules()),
            &Thresholds::DEFAULT,
        ),
        steps,
        failed,
    ))
}

/// The findings section of the report page, from the doctor's rows as `--json` prints them.
pub fn findings_section(
    d: &Diagnosis,
    listing: &Listing,
    model: Option<&Path>,
) -> Result<html_report::Section, String> {
    let values = json_values(&rows(d, listing, model))?;
    let mut section = html_report::Section::new(Value::Array(values.clone()));
    html_report::doctor_section(&mut section, &values);
    Ok(section)
}

/// Runs `kineto doctor`.
pub fn run(a: &DoctorArgs) -> ExitCode {
    let page = match &a.html {
        None => None,
        Some(p) => match tool_io::Claim::new(p, a.overwrite) {
            Ok(c) => Some(c),
            Err(e @ tool_io::Error::Exists { .. }) => {
                note(&format!(
                    "kineto doctor: {e}; pass --overwrite to replace it"
                ));
                return ExitCode::from(2);
            }
            Err(e) => {
                note(&format!("kineto doctor: {e}"));
                return ExitCode::from(2);
            }
        },
    };
    let (session, paths) = match a.listing.open(a.model_opts.graph_captures.clone()) {
        Ok(v) => v,
        Err(e) => return refused(e),
    };
    let model = match crate::roofline::optional_model(
        "doctor",
        a.model.as_deref(),
        &a.model_opts,
        session.pattern(),
        session.rules(),
    ) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let format = a.listing.format();
    let (diagnosis, steps, failed) =
        match diagnose_paths(&session, &paths, model.as_ref(), page.is_some()) {
            Ok(v) => v,
            Err(code) => return code,
        };
    let rows = rows(&diagnosis, &a.listing, a.model.as_deref());
    if diagnosis.is_clean() && format != Format::Table {
        note(&format!(
            "kineto doctor: no finding in {} traces above the rules' thresholds (docs/doctor.md)",
            diagnosis.traces.len()
        ));
    }
    if let Some(page) = page {
        let html = match json_values(&rows) {
            Ok(v) => html_report::doctor_html(&v, &steps),
            Err(e) => {
                note(&format!("kineto doctor: {e}"));
                return ExitCode::from(1);
            }
        };
        match page.write_bytes(html.as_bytes()) {
            Ok(w) => out::written("kineto doctor", &w),
            Err(e) => {
                note(&format!("kineto doctor: {e}"));
                return ExitCode::from(1);
            }
        }
    }
    let mut w = out::stdout(format);
    let r = (|| -> io::Result<()> {
        let listing = render::Listing::new(doctor_columns(), views::DOCTOR);
        match format {
            Format::Table => write_text(&mut w, &diagnosis, &rows),
            Format::Csv => {
                listing.csv_header(&mut w)?;
                rows.iter()
                    .try_for_each(|r| listing.row(&mut w, format, r, &Ctx::default()))
            }
            Format::Json => rows
                .iter()
                .try_for_each(|r| listing.row(&mut w, format, r, &Ctx::default())),
        }
    })();
    if let Err(e) = r {
        out::write_failed(e);
    }
    out::finish(&mut w);
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
