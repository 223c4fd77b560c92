//! `kineto summary`: one summary per trace (counts, kernel time, steps, warnings).

use crate::args::SummaryArgs;
use crate::each::each_trace;
use crate::render_summary;
use kineto_trace::summary::Summary;
use std::process::ExitCode;

/// Runs `kineto summary`.
pub fn run(a: &SummaryArgs) -> kineto_trace::Result<ExitCode> {
    let session = a.session()?;
    let paths = session.expand(&a.traces)?;
    let work = |p: &std::path::Path| {
        session
            .read_ranks(p)
            .map(|ranks| ranks.iter().map(Summary::of).collect())
    };
    let print = |w: &mut crate::out::Stdout, s: Summary| render_summary::write(w, &s, a.json);
    let format = if a.json {
        crate::render::Format::Json
    } else {
        crate::render::Format::Table
    };
    Ok(each_trace(
        &session,
        &paths,
        format,
        |_| Ok(()),
        work,
        print,
    ))
}
