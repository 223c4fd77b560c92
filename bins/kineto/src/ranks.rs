//! `kineto ranks`: each step across the ranks of a run (span, idle, buckets: min, median, max; the
//! slowest rank).

use crate::args::Listing;
use crate::each::exit_code;
use crate::out;
use crate::render::{self, Ctx, Format};
use crate::views;
use kineto_trace::Session;
use kineto_trace::analysis::{RankStep, RankSteps, StepAcrossRanks, compare_ranks};
use std::process::ExitCode;

/// A rank's steps and the parse facts the rank rule reads (its file, rank and world size).
type RankOf = (RankSteps, kineto_trace::Parsed);

/// Runs `kineto ranks`.
pub fn run(l: &Listing) -> kineto_trace::Result<ExitCode> {
    let (session, paths) = l.open(None)?;
    let format = l.format();
    // A file of several processes or GPUs gives one rank each ([`Session::open_ranks`]).
    let work = |path: &std::path::Path| -> kineto_trace::Result<Vec<RankOf>> {
        session.open_ranks(path)?.into_iter().map(rank_of).collect()
    };
    let mut failed = false;
    let mut all = Vec::new();
    let mut files = Vec::new();
    session.each(&paths, work, |r| match r {
        Ok(ranks) => {
            for (r, parsed) in ranks {
                all.push(r);
                files.push(parsed);
            }
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            failed = true;
        }
    });
    // Two traces of one rank are never lined up as two ranks: refused, naming both (the rank rule).
    match Session::check_ranks(&files) {
        Ok(warnings) => {
            for w in warnings {
                out::note(&format!("kineto: note: {w}"));
            }
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            return Ok(exit_code(true));
        }
    }
    let steps = compare_ranks(&all);
    let mut w = out::stdout(format);
    if let Err(e) = write(&mut w, format, all.len(), &steps) {
        out::write_failed(e);
    }
    out::finish(&mut w);
    Ok(exit_code(failed))
}

/// One rank's steps (its notes said on stderr), and its parse facts with the trace's events dropped (on the
/// worker: only the header is kept).
fn rank_of(a: kineto_trace::AnalysedTrace) -> kineto_trace::Result<RankOf> {
    for n in a.notes() {
        out::note(&format!("kineto: note: {n}"));
    }
    let steps = RankSteps {
        rank: a
            .trace()
            .header
            .rank
            .map_or_else(|| a.file(), |r| r.to_string()),
        steps: a
            .analysis
            .steps
            .steps
            .iter()
            .zip(a.budgets())
            .map(|(s, b)| RankStep::of(s.name.clone(), s.number, b))
            .collect(),
    };
    // Only the header is kept: the trace's events are dropped here, on the worker.
    let mut parsed = a.parsed;
    let mut header_only = kineto_trace::Trace::default();
    header_only.header = parsed.trace.header.clone();
    parsed.trace = header_only;
    Ok((steps, parsed))
}

/// The steps across ranks: in the text form one line per step naming its slowest rank, then its rows.
fn write(
    w: &mut out::Stdout,
    format: Format,
    ranks: usize,
    steps: &[StepAcrossRanks],
) -> std::io::Result<()> {
    use std::io::Write;
    let listing = render::Listing::new(kineto_tables::rank_columns(), views::RANKS);
    let ctx = Ctx::default();
    if format == Format::Csv {
        listing.csv_header(w)?;
    }
    if format == Format::Table {
        writeln!(w, "{ranks} ranks")?;
    }
    for s in steps {
        if format == Format::Table {
            let sp = &s.span;
            let over = sp.max_over_median_ns();
            let pct = if sp.median_ns > 0.0 {
                format!(" ({:.1} %)", 100.0 * over / sp.median_ns)
            } else {
                String::new()
            };
            writeln!(
                w,
                "step {} `{}` on {} ranks: slowest rank {} at {} µs, {:.3} µs{pct} over the median",
                s.index,
                out::escape(&s.name),
                s.ranks,
                out::escape(&sp.max_rank),
                kineto_trace::ns_to_us_string(sp.max_ns),
                over / 1000.0,
            )?;
            listing.table_header(w)?;
        }
        for row in kineto_tables::rank_rows(s) {
            listing.row(w, format, &row, &ctx)?;
        }
    }
    Ok(())
}
