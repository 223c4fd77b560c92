//! `kineto top`: kernels grouped by name, family or bucket, most time first.

use crate::args::{By, Top};
use crate::each::{csv_header_if, each_trace, notes_unless_table};
use crate::out;
use crate::render::{self, Ctx, Format};
use crate::{render_notes, views};
use kineto_trace::AnalysedTrace;
use kineto_trace::analysis::{GroupBy, TopTables, top_tables};
use std::process::ExitCode;

/// Runs `kineto top`.
pub fn run(t: &Top) -> kineto_trace::Result<ExitCode> {
    let l = &t.listing;
    let (session, paths) = l.open(None)?;
    let by = match t.by {
        By::Name => GroupBy::Name,
        By::Family => GroupBy::Family,
        By::Bucket => GroupBy::Bucket,
    };
    let format = l.format();
    let work = |path: &std::path::Path| -> kineto_trace::Result<_> {
        let ranks = session.open_ranks(path)?;
        Ok(ranks
            .into_iter()
            .map(|a| {
                let tables = top_tables(a.trace(), &a.analysis, session.rules(), by, t.per_step);
                (a, tables)
            })
            .collect::<Vec<_>>())
    };
    let n = if t.n == 0 { usize::MAX } else { t.n };
    let print = |w: &mut out::Stdout, (a, tables): (AnalysedTrace, TopTables)| {
        notes_unless_table(format, &a);
        write_trace(w, format, &a, &tables, n)
    };
    let header = csv_header_if(format, kineto_tables::top_columns());
    Ok(each_trace(&session, &paths, format, header, work, print))
}

/// One trace's tables (one, or one per step), each cut to its first `n` groups.
fn write_trace(
    w: &mut out::Stdout,
    format: Format,
    a: &AnalysedTrace,
    tables: &TopTables,
    n: usize,
) -> std::io::Result<()> {
    use std::io::Write;
    let (p, analysis) = (&a.parsed, &a.analysis);
    let file = a.file();
    let listing = render::Listing::new(kineto_tables::top_columns(), views::TOP);
    let ctx = Ctx::default();
    if format == Format::Table {
        render_notes::table_header(w, p, analysis, "")?;
    }
    for (step, groups) in tables {
        if format == Format::Table {
            match step {
                Some(s) => writeln!(
                    w,
                    "  step {s} `{}`: {} groups",
                    out::escape(&analysis.steps.steps[*s].name),
                    groups.len()
                )?,
                None => writeln!(w, "  all kernels: {} groups", groups.len())?,
            }
            listing.table_header(w)?;
        }
        for g in groups.iter().take(n) {
            let row = kineto_tables::TopRow {
                file: &file,
                rank: p.trace.header.rank,
                step: step.map(|s| s as u32),
                group: g,
            };
            listing.row(w, format, &row, &ctx)?;
        }
    }
    Ok(())
}
