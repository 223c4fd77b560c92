//! `kineto annotations`: one row per user annotation name (what `--step-pattern` can match).

use crate::args::Plain;
use crate::each::{csv_header_if, each_trace};
use crate::out;
use crate::render::{self, Ctx, Format};
use crate::views;
use kineto_trace::Parsed;
use kineto_trace::analysis::{AnnotationStats, annotation_stats};
use std::process::ExitCode;

/// Runs `kineto annotations`.
pub fn run(l: &Plain) -> kineto_trace::Result<ExitCode> {
    let session = l.session()?;
    let paths = session.expand(&l.traces)?;
    let format = l.format();
    let work = |path: &std::path::Path| {
        session.read_ranks(path).map(|ranks| {
            ranks
                .into_iter()
                .map(|p| {
                    let stats = annotation_stats(&p.trace);
                    (p, stats)
                })
                .collect()
        })
    };
    let print = |w: &mut out::Stdout, (p, stats): (Parsed, Vec<AnnotationStats>)| {
        write_trace(w, format, &p, &stats)
    };
    let header = csv_header_if(format, kineto_tables::annotation_stats_columns());
    Ok(each_trace(&session, &paths, format, header, work, print))
}

/// One trace's rows, after its header line in the text form.
fn write_trace(
    w: &mut out::Stdout,
    format: Format,
    p: &Parsed,
    stats: &[AnnotationStats],
) -> std::io::Result<()> {
    let file = p.path.display().to_string();
    let listing = render::Listing::new(
        kineto_tables::annotation_stats_columns(),
        views::ANNOTATIONS,
    );
    if format == Format::Table {
        use std::io::Write;
        writeln!(
            w,
            "{}  rank {}  {} annotation names",
            out::escape(&file),
            p.trace
                .header
                .rank
                .map_or("-".to_string(), |r| r.to_string()),
            stats.len()
        )?;
        listing.table_header(w)?;
    }
    for s in stats {
        let row = kineto_tables::AnnotationStatsRow {
            file: &file,
            rank: p.trace.header.rank,
            stats: s,
        };
        listing.row(w, format, &row, &Ctx::default())?;
    }
    Ok(())
}
