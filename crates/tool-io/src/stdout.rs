//! The stdout write policy: data is written through `io::Result`, never `println!`.
//!
//! - A closed pipe (`tool | head`: `EPIPE`, since Rust ignores `SIGPIPE`) means the reader has what it
//!   wanted: the program ends quietly with exit 0.
//! - Any other write error (`tool > /dev/full`: `ENOSPC`) is a lost result: one message naming stdout on
//!   stderr, exit 1.
//! - Nothing panics (`println!` panics on both).
//!
//! ```no_run
//! use std::io::Write;
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     match tool_io::stdout::write(|out| writeln!(out, "a row")) {
//!         Ok(()) => ExitCode::SUCCESS,
//!         Err(e) => e.exit("my-tool"),
//!     }
//! }
//! ```

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

/// A failed write to stdout.
#[derive(Debug, thiserror::Error)]
#[error("writing to stdout: {0}")]
pub struct StdoutError(#[source] pub io::Error);

impl StdoutError {
    /// Whether the reader closed the pipe (not an error for the user).
    pub fn is_closed_pipe(&self) -> bool {
        is_closed_pipe(&self.0)
    }

    /// The message to print, `None` for a closed pipe.
    pub fn message(&self, program: &str) -> Option<String> {
        (!self.is_closed_pipe()).then(|| format!("{program}: {self}"))
    }

    /// Prints the message (if any) on stderr and gives the exit code: success for a closed pipe, failure
    /// otherwise.
    pub fn exit(&self, program: &str) -> ExitCode {
        match self.message(program) {
            None => ExitCode::SUCCESS,
            Some(m) => {
                // stderr failing too leaves nothing to tell anyone with; the exit code still says it.
                let _ = writeln!(io::stderr().lock(), "{m}");
                ExitCode::FAILURE
            }
        }
    }
}

impl From<io::Error> for StdoutError {
    fn from(e: io::Error) -> Self {
        StdoutError(e)
    }
}

/// Whether `e` is a write to a pipe whose reader has gone.
pub fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Runs `f` on a locked, buffered stdout and flushes it, so that an error surfacing only at the flush
/// (`/dev/full`) is reported too. Call [`StdoutError::exit`] on the error.
pub fn write<F>(f: F) -> Result<(), StdoutError>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    write_to(io::stdout().lock(), f)
}

/// [`write()`] to any writer (tests give it failing ones).
pub fn write_to<W: Write, F>(w: W, f: F) -> Result<(), StdoutError>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let mut w = BufWriter::new(w);
    f(&mut w)?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails every write with `kind`.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(self.0))
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_success() {
        let e = write_to(Failing(io::ErrorKind::BrokenPipe), |o| writeln!(o, "x")).unwrap_err();
        assert!(e.is_closed_pipe());
        assert_eq!(e.message("t"), None);
    }

    #[test]
    fn a_full_disk_is_reported_naming_stdout_even_when_it_shows_only_at_the_flush() {
        // Small writes sit in the buffer: the error only comes from the flush, which must not be skipped.
        let e = write_to(Failing(io::ErrorKind::StorageFull), |o| write!(o, "x")).unwrap_err();
        assert!(!e.is_closed_pipe());
        let m = e.message("kl1-bandwidth").unwrap();
        assert!(m.starts_with("kl1-bandwidth: writing to stdout: "), "{m}");
    }

    #[test]
    fn a_good_writer_gets_everything() {
        let mut buf = Vec::new();
        write_to(&mut buf, |o| {
            writeln!(o, "a")?;
            writeln!(o, "b")
        })
        .unwrap();
        assert_eq!(buf, b"a\nb\n");
    }
}
