//! Command-line parsing under the stdout policy (feature `clap`).
//!
//! clap prints `--help` and `--version` itself and ignores a failed write, so `tool --help > /dev/full`
//! exited 0 with nothing said. [`parse`] sends that text through [`crate::stdout`] instead: a closed pipe
//! is quiet success, any other failure one message and exit 1. Usage errors go to stderr as clap writes
//! them, with clap's exit status (2).

use std::io::IsTerminal;
use std::process::ExitCode;

/// Parses the process's arguments into `P`; `Err` carries the exit code when the program should end now
/// (after `--help`, `--version`, or a usage error).
///
/// ```no_run
/// # #[derive(clap::Parser)] struct Cli {}
/// fn main() -> std::process::ExitCode {
///     let cli: Cli = match tool_io::cli::parse("my-tool") {
///         Ok(c) => c,
///         Err(code) => return code,
///     };
///     std::process::ExitCode::SUCCESS
/// }
/// ```
pub fn parse<P: clap::Parser>(program: &str) -> Result<P, ExitCode> {
    parse_from(program, std::env::args_os())
}

/// [`parse`] over given arguments (the first is the program's name).
pub fn parse_from<P, I, T>(program: &str, args: I) -> Result<P, ExitCode>
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let e = match P::try_parse_from(args) {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    if e.use_stderr() {
        // A usage error: clap's own message on stderr (nothing to do if stderr fails too).
        let _ = e.print();
        return Err(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)));
    }
    // `--help` or `--version`: data for stdout, coloured only for a terminal, as clap would.
    let rendered = e.render();
    let text = if std::io::stdout().is_terminal() {
        rendered.ansi().to_string()
    } else {
        rendered.to_string()
    };
    match crate::stdout::write(|out| out.write_all(text.as_bytes())) {
        Ok(()) => Err(ExitCode::SUCCESS),
        Err(w) => Err(w.exit(program)),
    }
}
