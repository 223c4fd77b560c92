//! `kineto report` (a self-contained HTML page of the budgets, the timeline of one step and the top
//! kernels), and the rows it and `kineto diff` (`diff.rs`) read: the very JSON rows `kineto budget --json`,
//! `kineto top --json` and `kineto kernels --json` print, so the page's and the diff's numbers are the
//! listings' numbers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use kineto_trace::Session;
use kineto_trace::analysis::{Analysis, GroupBy, kernel_groups};
use kineto_trace::family::Rules;
use serde_json::Value;

use crate::args::Listing;
use crate::doctor::Analysed;
use crate::each::refused;
use crate::out::{self, note};
use crate::render::{self, Ctx, Format};
use crate::render_budget;
use kineto_doctor::Thresholds;

/// `kineto report`'s options.
#[derive(Args)]
pub struct ReportArgs {
    /// The HTML file to write (refused if it exists, unless --overwrite).
    #[arg(long, value_name = "FILE")]
    html: PathBuf,
    /// Replace the HTML file if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Kernel names in the top table of each trace (0: all).
    #[arg(short = 'n', long = "limit", default_value_t = 30)]
    n: usize,
    /// The step (its index, the `step` column of `kineto steps`) whose timeline the page draws, for every
    /// trace; default: the first trace's median-span step (of its steps with GPU work, the one whose span
    /// is the median: the shorter of the middle two for an even count, the earlier step on a tie).
    #[arg(long, value_name = "N")]
    timeline_step: Option<usize>,
    /// A Hugging Face config.json: adds the roofline chart (achieved GB/s and TFLOP/s per step against the
    /// GPU's roofs), computed as `kineto roofline` does with the same steps and kernel families.
    #[arg(long, value_name = "CONFIG.json")]
    model: Option<PathBuf>,
    #[command(flatten)]
    model_opts: crate::roofline::ModelOptions,
    #[command(flatten)]
    listing: Listing,
}

/// The budget and top rows of every trace, as `--json` writes them, and each trace's timeline of one
/// step when asked for.
pub(crate) struct Rows {
    pub(crate) budget: Vec<Value>,
    pub(crate) top: Vec<Value>,
    /// Every kernel launch in a step, with the step's phase (what `kineto diff` judges kernels by); `None`:
    /// not wanted (`kineto report`).
    pub(crate) kernels: Option<Vec<run_compare::verdict_rows::KernelLaunch>>,
    /// `None`: no timeline wanted (`kineto diff`).
    pub(crate) timeline: Option<Timeline>,
}

/// The timelines of one step, one per trace.
pub(crate) struct Timeline {
    /// The step: given (`--timeline-step`), or chosen on the first trace.
    step: Option<usize>,
    /// Why this step (the page says it).
    chosen: String,
    traces: Vec<Value>,
}

/// Of the steps with GPU work, the one whose span is the median: with an even count the shorter of
/// the middle two, so the step drawn is one that ran; the earlier step on a tie. (index, how many
/// steps had GPU work, its span in ns).
fn median_span_step(
    steps: &[kineto_trace::step::Step],
    budgets: &[kineto_trace::budget::StepBudget],
) -> Option<(usize, usize, i64)> {
    let mut spans: Vec<(i64, usize)> = steps
        .iter()
        .zip(budgets)
        .filter(|(_, b)| b.window.is_some())
        .map(|(s, b)| (b.span_ns, s.index))
        .collect();
    spans.sort_unstable();
    let n = spans.len();
    let (span, index) = *spans.get(n.checked_sub(1)? / 2)?;
    Some((index, n, span))
}

/// Renders rows through a column list's JSON form and reads them back: the same text `--json` prints.
pub(crate) fn json_lines(
    write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> Result<Vec<Value>, String> {
    let mut buf = Vec::new();
    write(&mut buf).map_err(|e| e.to_string())?;
    let text = String::from_utf8(buf).map_err(|e| e.to_string())?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("a listing row is not JSON: {e}")))
        .collect()
}

/// Reads and analyses each trace once: budget rows, and the `n` kernel names with the most time (0: all);
/// `also` sees each trace as analysed, for what else reads the same trace (the roofline). With `launches`,
/// each kernel launch of a step is kept too (`Rows::kernels`, for `kineto diff`). With `keep`, the
/// analysed traces are returned for the doctor (else each is dropped once its rows are made). Two traces
/// claiming one rank are refused, ranks that look like other runs noted (`kineto_trace::ranks`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn rows_of(
    session: &Session,
    paths: &[PathBuf],
    n: usize,
    timeline: Option<Timeline>,
    launches: bool,
    keep: bool,
    mut also: impl FnMut(&mut Analysed),
) -> Result<(Rows, Vec<Analysed>), String> {
    let mut rows = Rows {
        budget: Vec::new(),
        top: Vec::new(),
        kernels: launches.then(Vec::new),
        timeline,
    };
    let mut claims = Vec::new();
    let mut kept = Vec::new();
    for path in paths {
        for mut a in Analysed::read_ranks(session, path).map_err(|e| e.to_string())? {
            also(&mut a);
            let header = &a.parsed.trace.header;
            claims.push((a.parsed.path.clone(), header.rank, header.world_size));
            rows_of_trace(&mut rows, &a, session.rules(), n)?;
            if keep {
                kept.push(a);
            }
        }
    }
    check_ranks(&claims)?;
    Ok((rows, kept))
}

/// The rank rule over traces put side by side: an error for two of one rank, notes for other runs.
pub(crate) fn check_ranks(claims: &[(PathBuf, Option<u64>, Option<u64>)]) -> Result<(), String> {
    let warnings =
        kineto_trace::ranks::check_ranks(claims.iter().map(|(file, rank, world_size)| {
            kineto_trace::ranks::RankClaim {
                file,
                rank: *rank,
                world_size: *world_size,
            }
        }))
        .map_err(|e| e.to_string())?;
    for w in warnings {
        note(&format!("kineto: note: {w}"));
    }
    Ok(())
}

/// One analysed trace's budget rows and its `n` kernel names with the most time (0: all).
pub(crate) fn rows_of_trace(
    rows: &mut Rows,
    done: &Analysed,
    rules: &Rules,
    n: usize,
) -> Result<(), String> {
    let (parsed, a, budgets) = (&done.parsed, &done.analysis, done.budgets());
    let t = &parsed.trace;
    let file = parsed.path.display().to_string();
    let ctx = Ctx {
        t0_ns: t.time_bounds.map_or(0, |b| b.0),
    };
    rows.budget.extend(json_lines(|w| {
        for (s, b) in a.steps.steps.iter().zip(budgets) {
            let row = kineto_tables::StepRow {
                file: &file,
                rank: t.header.rank,
                step: s,
                budget: b,
            };
            render_budget::json_row(w, &row, rules, &ctx)?;
        }
        Ok(())
    })?);
    if let Some(launches) = rows.kernels.as_mut() {
        for s in &a.steps.steps {
            let mut kernels = t.kernels.reader();
            launches.extend(s.kernels.iter().filter_map(|&k| {
                let op = kernels.get(k as usize)?;
                Some(run_compare::verdict_rows::KernelLaunch {
                    phase: s.phase.clone(),
                    name: t.name(op.name).to_owned(),
                    dur_us: op.dur_ns as f64 / 1000.0,
                })
            }));
        }
    }
    let groups = kernel_groups(
        t,
        &a.classes,
        rules,
        0..t.kernels.len() as u32,
        GroupBy::Name,
    );
    let take = if n == 0 { usize::MAX } else { n };
    rows.top.extend(json_lines(|w| {
        for g in groups.iter().take(take) {
            let row = kineto_tables::TopRow {
                file: &file,
                rank: t.header.rank,
                step: None,
                group: g,
            };
            render::json_row(w, kineto_tables::top_columns(), &row, &Ctx::default())?;
        }
        Ok(())
    })?);
    if let Some(tl) = rows.timeline.as_mut() {
        let entry = timeline_of(tl, parsed, a, budgets, rules, &file, &ctx)?;
        tl.traces.push(entry);
    }
    Ok(())
}

/// One trace's timeline entry (`html_report::KinetoInputs::timeline`): the step's window, the budget's
/// idle gaps and the step's ops as `gpu_ops` rows, through the page's view of that table.
fn timeline_of(
    tl: &mut Timeline,
    parsed: &kineto_trace::Parsed,
    a: &Analysis,
    budgets: &[kineto_trace::budget::StepBudget],
    rules: &Rules,
    file: &str,
    ctx: &Ctx,
) -> Result<Value, String> {
    let t = &parsed.trace;
    let head = serde_json::json!({"file": file, "rank": t.header.rank});
    let with = |mut v: Value, more: Value| {
        if let (Some(o), Value::Object(m)) = (v.as_object_mut(), more) {
            o.extend(m);
        }
        v
    };
    let step = match tl.step {
        Some(s) => s,
        None => match median_span_step(&a.steps.steps, budgets) {
            Some((index, n, span)) => {
                tl.step = Some(index);
                let of = match n {
                    1 => "the only step with GPU work".to_owned(),
                    n => format!("the median span of the {n} steps with GPU work"),
                };
                tl.chosen = format!(
                    "chosen on {} as {of} there, {} µs; every trace draws this step; \
                     --timeline-step N draws another",
                    file.rsplit('/').next().unwrap_or(file),
                    html_report::page::fmt_num(span as f64 / 1000.0)
                );
                index
            }
            None => {
                return Ok(with(
                    head,
                    serde_json::json!({"absent": "no step with GPU work"}),
                ));
            }
        },
    };
    let Some((s, b)) = a
        .steps
        .steps
        .iter()
        .zip(budgets)
        .find(|(s, _)| s.index == step)
    else {
        return Ok(with(
            head,
            serde_json::json!({"step": step, "absent": format!("no step {step} in this trace, which has {}", a.steps.steps.len())}),
        ));
    };
    let Some((lo, hi)) = b.window else {
        return Ok(with(
            head,
            serde_json::json!({"step": step, "name": s.name, "absent": format!("step {step} has no GPU work")}),
        ));
    };
    let step_u32 = u32::try_from(step).ok();
    let ops = kineto_tables::GpuOps::new(file, t, a, rules);
    let keys: Vec<String> = html_report::view::TIMELINE_OPS
        .iter()
        .filter_map(|p| {
            kineto_tables::Table::GpuOps
                .columns()
                .into_iter()
                .find(|c| c.name == p.name)
        })
        .map(|c| c.name.to_owned())
        .collect();
    // A page holds at most OPS_CAP ops, the longest: chosen from their durations first, so that only the
    // rows held are ever built (a step of 500 000 kernels made a 172 MB page from 3.1 GB of rows).
    let dur = kineto_tables::gpu_op_columns()
        .iter()
        .find(|c| c.name == "dur_ns")
        .ok_or("the gpu_ops table has no dur_ns column")?;
    let durations: Vec<i64> = ops
        .all()
        .filter(|r| r.step() == step_u32)
        .map(|r| match (dur.get)(&r) {
            kineto_tables::Val::I64(Some(ns)) => ns,
            _ => 0,
        })
        .collect();
    let (keep, cut) =
        html_report::timeline_cap::ops_to_draw(&durations, html_report::timeline_cap::OPS_CAP);
    let rows = json_lines(|w| {
        let step_ops = ops.all().filter(|r| r.step() == step_u32);
        for (row, _) in step_ops.zip(&keep).filter(|(_, k)| **k) {
            render::json_row(w, kineto_tables::gpu_op_columns(), &row, ctx)?;
        }
        Ok(())
    })?;
    // The gaps likewise: the widest OPS_CAP (a step of tiny ops has as many gaps as ops).
    let widths: Vec<i64> = b.gaps.iter().map(|(a, z)| z - a).collect();
    let (keep_gap, gaps_cut) =
        html_report::timeline_cap::ops_to_draw(&widths, html_report::timeline_cap::OPS_CAP);
    let gaps: Vec<(i64, i64)> = b
        .gaps
        .iter()
        .zip(keep_gap)
        .filter_map(|(g, k)| k.then_some(*g))
        .collect();
    let ops: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            Value::Object(
                keys.iter()
                    .filter_map(|k| Some((k.clone(), r.get(k)?.clone())))
                    .collect(),
            )
        })
        .collect();
    Ok(with(
        head,
        serde_json::json!({
            "step": step,
            "name": s.name,
            "chosen": tl.chosen,
            "window_lo_ns": lo,
            "window_hi_ns": hi,
            "idle_gaps_ns": gaps,
            "idle_gaps_cut": gaps_cut.map(|c| c.json()),
            "ops": ops,
            "ops_cut": cut.map(|c| c.json()),
        }),
    ))
}

pub(crate) fn claim(path: &Path, overwrite: bool) -> Result<tool_io::Claim, String> {
    tool_io::Claim::new(path, overwrite).map_err(|e| match e {
        tool_io::Error::Exists { .. } => format!("{e}; pass --overwrite to replace it"),
        _ => e.to_string(),
    })
}

/// Runs `kineto report`.
pub fn report(r: &ReportArgs) -> ExitCode {
    let page = match claim(&r.html, r.overwrite) {
        Ok(c) => c,
        Err(e) => {
            note(&format!("kineto report: {e}"));
            return ExitCode::from(2);
        }
    };
    let (session, paths) = match r.listing.open(r.model_opts.graph_captures.clone()) {
        Ok(v) => v,
        Err(e) => return refused(e),
    };
    // The model is read before any trace, so a bad config is named at once.
    let setup = match crate::roofline::optional_model(
        "report",
        r.model.as_deref(),
        &r.model_opts,
        session.pattern(),
        session.rules(),
    ) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let mut failed = false;
    let mut steps = Vec::new();
    // Each trace is read once: the budget rows, the timeline, the roofline (salvaged alike; a step the
    // physics gate refused is left out of the chart and fails the run) and the doctor's findings all come
    // from that one reading.
    let (rows, done) = match rows_of(
        &session,
        &paths,
        r.n,
        Some(Timeline {
            step: r.timeline_step,
            chosen: "chosen with --timeline-step".to_owned(),
            traces: Vec::new(),
        }),
        false,
        true,
        |a| {
            if let Some(setup) = &setup {
                let t = roofline::analyse_trace(&a.t, setup);
                failed |= crate::roofline::judge(t, "kineto report", |t| {
                    steps.extend(crate::roofline::json_rows(t));
                    a.roofline = Some((t.gpu.clone(), t.steps.clone()));
                });
            }
        },
    ) {
        Ok(v) => v,
        Err(e) => {
            note(&format!("kineto report: {e}"));
            return ExitCode::from(1);
        }
    };
    let roofline = setup.is_some().then_some(Value::Array(steps));
    let top = Value::Array(rows.top);
    // The page opens with what to fix first: the doctor's findings on the same traces, and their marks
    // on the timeline's step.
    let files: Vec<String> = done.iter().map(|d| d.file()).collect();
    let inputs = crate::doctor::inputs(&done, &files, session.rules());
    let th = Thresholds::DEFAULT;
    let diagnosis = kineto_doctor::diagnose(&inputs, &th);
    let marks: Vec<html_report::Mark> = match rows.timeline.as_ref().and_then(|t| t.step) {
        None => Vec::new(),
        Some(step) => inputs
            .iter()
            .flat_map(|t| {
                kineto_doctor::marks(t, step, &diagnosis.findings, &th)
                    .into_iter()
                    .map(|m| html_report::Mark {
                        file: t.file.to_string(),
                        finding: m.id.as_str().to_owned(),
                        lo_ns: m.lo_ns,
                        hi_ns: m.hi_ns,
                        label: format!(
                            "{} {} µs",
                            m.id.as_str(),
                            html_report::page::fmt_num(m.dur_ns() as f64 / 1000.0)
                        ),
                    })
            })
            .collect(),
    };
    let timeline = rows.timeline.map(|t| Value::Array(t.traces));
    let findings = match crate::doctor::findings_section(&diagnosis, &r.listing, r.model.as_deref())
    {
        Ok(s) => s,
        Err(e) => {
            note(&format!("kineto report: {e}"));
            return ExitCode::from(1);
        }
    };
    let html = html_report::kineto_html(&html_report::KinetoInputs {
        findings: Some(&findings),
        budget: &rows.budget,
        top: Some(&top),
        roofline: roofline.as_ref(),
        timeline: timeline.as_ref(),
        marks: &marks,
    });
    let written = match page.write_bytes(html.as_bytes()) {
        Ok(w) => w,
        Err(e) => {
            note(&format!("kineto report: {e}"));
            return ExitCode::from(1);
        }
    };
    out::written("kineto report", &written);
    let mut w = out::stdout(Format::Table);
    if let Err(e) = writeln!(
        w,
        "wrote {}",
        out::escape(&written.path().display().to_string())
    ) {
        out::write_failed(e);
    }
    out::finish(&mut w);
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
