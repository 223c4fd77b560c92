//! `kineto steps`, `kineto kernels` and `kineto budget`: one trace's rows at a time, in the order given.

use crate::args::Listing;
use crate::each::{each_trace, notes_unless_table};
use crate::out;
use crate::render::{self, Ctx, Format};
use crate::{render_budget, render_notes, views};
use kineto_trace::AnalysedTrace;
use kineto_trace::family::Rules;
use std::process::ExitCode;

/// Which listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `kineto steps`.
    Steps,
    /// `kineto kernels`.
    Kernels,
    /// `kineto budget`.
    Budget,
}

/// Runs one of the three listings.
pub fn run(command: Command, l: &Listing) -> kineto_trace::Result<ExitCode> {
    let (session, paths) = l.open(None)?;
    let format = l.format();
    let header = |w: &mut out::Stdout| match (format, command) {
        (Format::Csv, Command::Steps) => render::csv_header(w, kineto_tables::step_columns()),
        (Format::Csv, Command::Kernels) => render::csv_header(w, kineto_tables::gpu_op_columns()),
        (Format::Csv, Command::Budget) => render_budget::csv_header(w),
        _ => Ok(()),
    };
    let work = |path: &std::path::Path| -> kineto_trace::Result<Vec<AnalysedTrace>> {
        let ranks = session.open_ranks(path)?;
        // `steps` and `budget` print the `steps` table, which carries each step's budget totals: computed
        // here, on the worker thread.
        if command != Command::Kernels {
            for t in &ranks {
                t.budgets();
            }
        }
        Ok(ranks)
    };
    let print = |w: &mut out::Stdout, t: AnalysedTrace| {
        notes_unless_table(format, &t);
        write_trace(w, command, format, &t, session.rules())
    };
    Ok(each_trace(&session, &paths, format, header, work, print))
}

/// Writes one trace's rows, one at a time.
fn write_trace(
    w: &mut out::Stdout,
    command: Command,
    format: Format,
    d: &AnalysedTrace,
    rules: &Rules,
) -> std::io::Result<()> {
    let (p, a) = (&d.parsed, &d.analysis);
    let t = &p.trace;
    let file = d.file();
    let ctx = Ctx {
        t0_ns: t.time_bounds.map_or(0, |b| b.0),
    };
    let rows = || {
        a.steps
            .steps
            .iter()
            .zip(d.budgets())
            .map(|(s, b)| kineto_tables::StepRow {
                file: &file,
                rank: t.header.rank,
                step: s,
                budget: b,
            })
    };
    match command {
        Command::Steps => {
            let listing = render::Listing::new(kineto_tables::step_columns(), views::STEPS);
            if format == Format::Table {
                render_notes::table_header(w, p, a, "")?;
                listing.table_header(w)?;
            }
            for row in rows() {
                listing.row(w, format, &row, &ctx)?;
            }
        }
        Command::Kernels => {
            let listing = render::Listing::new(kineto_tables::gpu_op_columns(), views::KERNELS);
            if format == Format::Table {
                let what = format!(", rules {}", rules.origin().display());
                render_notes::table_header(w, p, a, &what)?;
                listing.table_header(w)?;
            }
            let ops = kineto_tables::GpuOps::new(&file, t, a, rules);
            for row in ops.rows(kineto_trace::GpuKind::Kernel) {
                listing.row(w, format, &row, &ctx)?;
            }
        }
        Command::Budget => budget(w, format, d, rules, &ctx, rows)?,
    }
    Ok(())
}

/// `kineto budget`'s rows: JSON and CSV row by row, the text form as one table per trace.
fn budget<'a, I: Iterator<Item = kineto_tables::StepRow<'a>>>(
    w: &mut out::Stdout,
    format: Format,
    d: &AnalysedTrace,
    rules: &Rules,
    ctx: &Ctx,
    rows: impl Fn() -> I,
) -> std::io::Result<()> {
    match format {
        Format::Json => {
            for r in rows() {
                render_budget::json_row(w, &r, rules, ctx)?;
            }
        }
        Format::Csv => {
            for r in rows() {
                render_budget::csv_rows(w, &r, rules, ctx)?;
            }
        }
        Format::Table => {
            let what = format!(
                ", rules {} ({} rules, {} families)",
                rules.origin().display(),
                rules.rules().len(),
                rules.families().len()
            );
            render_notes::table_header(w, &d.parsed, &d.analysis, &what)?;
            render_budget::table(w, &d.parsed, &d.analysis, d.budgets(), rules, ctx)?;
        }
    }
    Ok(())
}
