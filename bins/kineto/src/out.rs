//! Where `kineto`'s output goes and what happens when it cannot go there.
//!
//! Data goes to a buffered, locked stdout through `io::Write` (never `println!`, which panics on a
//! closed pipe). The policy is `tool_io::stdout`'s, shared by every binary: a reader that went away
//! (`kineto … | head`) ends the program quietly with status 0; any other error (`> /dev/full`) is
//! one message naming stdout and status 1. `kineto` streams rows from a callback that cannot return
//! the error, so [`write_failed`] applies the policy on the spot and ends the process. Notes for the
//! user go to stderr through [`note`], which never panics either.

use crate::render::Format;
use std::io::{self, BufWriter, IsTerminal, StdoutLock, Write};
use tool_io::terminal::Wrapping;

/// The program's stdout, buffered; the text form's lines wrapped to the terminal's width.
pub type Stdout = BufWriter<Wrapping<StdoutLock<'static>>>;

/// Locks and buffers stdout for output in `format`: the text form's lines are wrapped at 120 columns on a
/// terminal (`tool_io::terminal::text_width`); JSON and CSV lines are never touched.
pub fn stdout(format: Format) -> Stdout {
    let out = io::stdout();
    let width = match format {
        Format::Table => tool_io::terminal::text_width(out.is_terminal()),
        Format::Json | Format::Csv => None,
    };
    BufWriter::with_capacity(1 << 16, Wrapping::new(out.lock(), width))
}

/// Ends the program after a failed write to stdout: quietly with status 0 when the reader went away,
/// else with a message and status 1.
pub fn write_failed(e: io::Error) -> ! {
    let e = tool_io::stdout::StdoutError(e);
    match e.message("kineto") {
        None => std::process::exit(0),
        Some(m) => {
            note(&m);
            std::process::exit(1)
        }
    }
}

/// Flushes stdout, judging a failure by [`write_failed`].
pub fn finish(out: &mut Stdout) {
    if let Err(e) = out.flush() {
        write_failed(e);
    }
}

/// One line on stderr, control characters escaped (`tool_io::terminal::note`, the one escaping rule every
/// kl1 tool uses); a failure to write it is ignored (there is nowhere left to report it).
pub use tool_io::terminal::note;

/// A name made safe for a terminal: control characters (C0, DEL, C1) become `\u{…}` escapes, so a
/// kernel or annotation name cannot move the cursor, clear the screen or change the colours
/// (`tool_io::terminal::escape`).
pub use tool_io::terminal::escape;

/// Says on stderr when a result went beside its name because a file appeared there during the run.
pub fn written(program: &str, w: &tool_io::Written) {
    if let Some(n) = w.notice() {
        note(&format!("{program}: {n}"));
    }
}
