//! Where `kineto`'s output goes and what happens when it cannot go there.
//!
//! Data goes to a buffered, locked stdout through `io::Write` (never `println!`, which panics on a
//! closed pipe). The policy is `tool_io::stdout`'s, shared by every binary: a reader that went away
//! (`kineto … | head`) ends the program quietly with status 0; any other error (`> /dev/full`) is
//! one message naming stdout and status 1. `kineto` streams rows from a callback that cannot return
//! the error, so [`write_failed`] applies the policy on the spot and ends the process. Notes for the
//! user go to stderr through [`note`], which never panics either.

use std::io::{self, BufWriter, StdoutLock, Write};

/// The program's stdout, buffered.
pub type Stdout = BufWriter<StdoutLock<'static>>;

/// Locks and buffers stdout.
pub fn stdout() -> Stdout {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
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

/// One line on stderr, control characters escaped; a failure to write it is ignored (there is
/// nowhere left to report it).
pub fn note(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", escape(line));
}

/// A name made safe for a terminal: control characters (C0, DEL, C1) become `\u{…}` escapes, so a
/// kernel or annotation name cannot move the cursor, clear the screen or change the colours.
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(escape("gemm<1, 2>"), "gemm<1, 2>");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\ny\u{7f}\u{9b}"), "x\\u{a}y\\u{7f}\\u{9b}");
        assert_eq!(escape("µs → ok"), "µs → ok");
    }
}
