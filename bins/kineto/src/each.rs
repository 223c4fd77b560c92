//! What every listing does around its rows: traces worked on in parallel and printed in order, a failed
//! trace named on stderr (the others still print), the exit status that says so.

use crate::out;
use crate::render::{self, Format};
use kineto_trace::{AnalysedTrace, Session};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Works on every trace in parallel and prints each result on stdout in the order of `paths` as soon
/// as it and the earlier ones are done: `header` first, then `print` per trace — per rank of a file that
/// holds several (`work` reads a file into its ranks: [`Session::read_ranks`]). A trace that fails
/// is reported on stderr (the others still print) and makes the status 1; a write error ends the
/// program by the stdout policy ([`out::write_failed`]).
pub fn each_trace<T: Send>(
    session: &Session,
    paths: &[PathBuf],
    format: Format,
    header: impl FnOnce(&mut out::Stdout) -> std::io::Result<()>,
    work: impl Fn(&Path) -> kineto_trace::Result<Vec<T>> + Sync,
    mut print: impl FnMut(&mut out::Stdout, T) -> std::io::Result<()>,
) -> ExitCode {
    let mut w = out::stdout(format);
    if let Err(e) = header(&mut w) {
        out::write_failed(e);
    }
    let mut failed = false;
    session.each(paths, work, |r| match r {
        Ok(ranks) => {
            for v in ranks {
                if let Err(e) = print(&mut w, v) {
                    out::write_failed(e);
                }
            }
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            failed = true;
        }
    });
    out::finish(&mut w);
    exit_code(failed)
}

/// The CSV header of a column list when the format is CSV.
pub fn csv_header_if<R>(
    format: Format,
    cols: &[kineto_tables::Col<R>],
) -> impl FnOnce(&mut out::Stdout) -> std::io::Result<()> {
    move |w| {
        if format == Format::Csv {
            render::csv_header(w, cols)
        } else {
            Ok(())
        }
    }
}

/// Notes on stderr for the machine-readable formats (tables print them in their header).
pub fn notes_unless_table(format: Format, t: &AnalysedTrace) {
    if format != Format::Table {
        for n in t.notes() {
            out::note(&format!("kineto: note: {n}"));
        }
    }
}

/// 1 when any trace failed (the others were still printed), else 0.
pub fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// A command that could not start (bad options, rule file, pattern or path): said on stderr, status 2.
pub fn refused(e: impl std::fmt::Display) -> ExitCode {
    out::note(&format!("kineto: {e}"));
    ExitCode::from(2)
}
