//! The crate's one error type. Every error about a trace names the window, the capture label and the rank,
//! and, when it is about one step, the step.

use std::path::PathBuf;

/// Everything that can stop an analysis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The rule file is not valid.
    #[error("rules {origin}: {reason}")]
    Rules {
        /// Where the rules came from.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The model spec is not valid.
    #[error("spec: {0}")]
    Spec(#[from] kl1_shapes::Error),
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
    /// A trace could not be parsed.
    #[error("window {window}: {label} rank {rank}: {source}")]
    Trace {
        /// The window.
        window: String,
        /// `cell:capture`.
        label: String,
        /// The rank.
        rank: u64,
        /// The parser's error (it names the file and the byte); boxed, it is large.
        #[source]
        source: Box<kineto_trace::Error>,
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
    /// The output file exists and `--overwrite` was not given.
    #[error("{path} exists; pass --overwrite to replace it")]
    OutputExists {
        /// The file.
        path: PathBuf,
    },
    /// The output could not be serialised or contains a non-finite number at this path.
    #[error("output: {reason}")]
    Output {
        /// What is wrong.
        reason: String,
    },
    /// The window generator was given a plan it cannot write.
    #[error("gen-window: {reason}")]
    Generate {
        /// What is wrong.
        reason: String,
    },
}
