//! What the rows do not show: the per-trace header block of the tables, and the same facts as
//! `note:` lines on stderr for `--json` and `--csv`.

use kineto_trace::Parsed;
use kineto_trace::analysis::Analysis;
use kineto_trace::notes::notes;
use kineto_trace::ns_to_us_string as us;
use std::io::{self, Write};
use tool_io::terminal::escape;

/// The block a table starts with, per trace: file, rank, counts, notes.
pub fn table_header(w: &mut impl Write, p: &Parsed, a: &Analysis, what: &str) -> io::Result<()> {
    let t = &p.trace;
    let r = &a.links.report;
    writeln!(
        w,
        "{}  {}  rank {}  {} steps{}",
        escape(&p.path.display().to_string()),
        t.header.format.title(),
        t.header.rank.map_or("-".to_string(), |r| r.to_string()),
        a.steps.steps.len(),
        what
    )?;
    writeln!(
        w,
        "  kernels {} ({} without launch, {} outside steps)  copies {} ({} without launch)  fills {} ({} without launch)  graph launches {} → {} kernels  same-stream overlaps {}",
        t.kernels.len(),
        r.kernels_without_launch.count,
        a.steps.kernels_outside,
        t.memcpys.len(),
        r.memcpys_without_launch.count,
        t.memsets.len(),
        r.memsets_without_launch.count,
        r.graph_launches,
        r.graph_kernels,
        a.steps.same_stream_overlaps,
    )?;
    if let Some((t0, _)) = t.time_bounds {
        writeln!(
            w,
            "  times in µs from the trace's first event (at {} µs on the trace clock)",
            us(t0)
        )?;
    }
    let prefix = format!("{}: ", p.path.display());
    for n in notes(p, a) {
        writeln!(w, "  note: {}", escape(n.trim_start_matches(&prefix)))?;
    }
    Ok(())
}
