//! The crate's one error type. Every error about a trace names the window, the capture label and the rank,
//! and, when it is about one step, the step.

use std::path::PathBuf;

/// Everything that can stop an analysis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    ///
    /// The message includes the operating system's; it is not also given as [`std::error::Error::source`],
    /// so a printed cause chain says it once.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The rule file is not valid.
    #[error("rules {origin}: {reason}")]
    Rules {
        /// Where the rules came from.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The model spec is not valid (its message included, not also given as the source).
    #[error("spec: {0}")]
    Spec(kl1_shapes::Error),
    /// A window's `traces-manifest.json` is missing, not JSON, or a row is malformed or breaks a rule (a
    /// duplicate (label, rank), a path leaving the window, a sha256 that differs).
    #[error("window {window}: {reason}")]
    Manifest {
        /// The window (directory name).
        window: String,
        /// What is wrong, naming the row.
        reason: String,
    },
    /// Two windows have the same directory name, which keys the output.
    #[error(
        "two windows are both named `{name}` ({first} and {second}); the output is keyed by name"
    )]
    DuplicateWindow {
        /// The shared name.
        name: String,
        /// The first directory.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// A trace could not be parsed, and its sha256 is the manifest's (a file that differs from the manifest
    /// is a [`Error::Manifest`] error, whether or not it parses).
    #[error("window {window}: {label} rank {rank}: {}", parse_text(error))]
    Trace {
        /// The window.
        window: String,
        /// `cell:capture`.
        label: String,
        /// The rank.
        rank: u64,
        /// The parser's error (it names the file and the byte); boxed, it is large. Its message is part of
        /// this one, not also given as the source.
        error: Box<kineto_trace::Error>,
    },
    /// A rank's trace as a whole does not fit the analysis (no complete step of the capture's kind, a rank
    /// that differs from the manifest's, a sha256 that differs).
    #[error("window {window}: {label} rank {rank}: {reason}")]
    Rank {
        /// The window.
        window: String,
        /// `cell:capture`.
        label: String,
        /// The rank.
        rank: u64,
        /// What is wrong.
        reason: String,
    },
    /// One step does not fit the KL1 contract (docs/kl1-window.md).
    #[error("window {window}: {label} rank {rank}: step {step}: {reason}")]
    Step {
        /// The window.
        window: String,
        /// `cell:capture`.
        label: String,
        /// The rank.
        rank: u64,
        /// The step's index.
        step: u64,
        /// What is wrong.
        reason: String,
    },
    /// A number computed for a step is NaN or infinite; it is never written.
    #[error(
        "window {window}: {label} rank {rank}: step {step}: `{field}` is {value}, not a finite number"
    )]
    NonFinite {
        /// The window.
        window: String,
        /// `cell:capture`.
        label: String,
        /// The rank.
        rank: u64,
        /// The step's index.
        step: u64,
        /// The output key.
        field: String,
        /// The value.
        value: f64,
    },
    /// A result file could not be claimed or written, or a small input (manifest, rule file) could not be
    /// read: refused as not a regular file, over its size cap, already there, … (tool-io's message, which
    /// names the file).
    #[error(transparent)]
    File(#[from] tool_io::Error),
    /// The output could not be serialised or contains a non-finite number at this path.
    #[error("output: {reason}")]
    Output {
        /// What is wrong.
        reason: String,
    },
}

impl From<kl1_shapes::Error> for Error {
    fn from(e: kl1_shapes::Error) -> Error {
        Error::Spec(e)
    }
}

/// The parser's message, without its advice to pass `--salvage`: this command has no such option (a cut
/// trace is refused; the window has to be captured again).
fn parse_text(e: &kineto_trace::Error) -> String {
    match e {
        kineto_trace::Error::Truncated {
            file,
            offset,
            events,
        } => format!(
            "{}: truncated at byte {offset} ({events} complete events before the cut); the trace was cut \
             short (its sha256 is the manifest's, so it was listed cut)",
            file.display()
        ),
        other => other.to_string(),
    }
}
