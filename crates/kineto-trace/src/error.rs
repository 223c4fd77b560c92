//! The crate's one error type: every variant names the file, and where it can, the byte offset.

use std::path::PathBuf;

/// Why a trace could not be read.
///
/// Offsets count bytes of the JSON text: for a gzip file, of the decompressed stream.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A small input (a rule file) was refused or unreadable: not a regular file, over its size cap, not
    /// UTF-8 (tool-io's rules; the message names the file).
    #[error(transparent)]
    Input(#[from] tool_io::Error),
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The gzip stream is corrupt (not merely cut short).
    #[error("{file}: corrupt gzip data after {offset} bytes of JSON: {message}")]
    Gzip {
        /// The file.
        file: PathBuf,
        /// Decompressed bytes delivered before the fault.
        offset: u64,
        /// The decoder's message.
        message: String,
    },
    /// The bytes are not JSON, or not the shape of a Kineto trace.
    #[error("{file}: byte {offset}: {message}")]
    Syntax {
        /// The file.
        file: PathBuf,
        /// Byte offset of the fault.
        offset: u64,
        /// What was expected and found.
        message: String,
    },
    /// An event is valid JSON but not a usable trace event (missing `ts`, negative `dur`, …).
    #[error("{file}: byte {offset}: event {index} (0-based): {message}")]
    Event {
        /// The file.
        file: PathBuf,
        /// Byte offset where the event starts.
        offset: u64,
        /// Index of the event in `traceEvents`.
        index: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The input ends mid-value: typically the profiler was killed while writing. Parse with
    /// `salvage` to keep the complete events before the cut.
    #[error(
        "{file}: truncated at byte {offset} ({events} complete events before the cut); \
         the trace was cut short — pass --salvage to keep the complete events"
    )]
    Truncated {
        /// The file.
        file: PathBuf,
        /// Byte offset of the start of the value that was cut.
        offset: u64,
        /// Complete events read before it.
        events: u64,
    },
    /// The file is not a format this build reads (none of them, or an SQLite database in a build
    /// without the SQLite reader).
    #[error("{file}: {message}")]
    Format {
        /// The file.
        file: PathBuf,
        /// What it is, and what was looked for.
        message: String,
    },
    /// A file of a native profiler format (Nsight Systems, rocprofv3, rocpd, RPD, a Chrome-trace
    /// array) holds something its format does not allow: `at` names the place (byte offset, table
    /// and row, file and line).
    #[error("{file}: {at}: {message}")]
    Native {
        /// The file.
        file: PathBuf,
        /// Where in it.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// Reading the file would take more than its bound: gzip content that inflates past its cap, or
    /// the file's own SQL (an SQLite view) running past its budget. Refused rather than left to run
    /// without end; the message names the bound and what to do.
    #[error("{file}: {message}")]
    Limit {
        /// The file.
        file: PathBuf,
        /// Which bound, and what to do.
        message: String,
    },
    /// A directory given as ranks holds files of more than one format.
    #[error(
        "{dir}: files of different formats ({first}: {first_format}; {other}: {other_format}); a directory of ranks holds one format — pass the files of one"
    )]
    MixedFormats {
        /// The directory.
        dir: PathBuf,
        /// A file of the first format.
        first: PathBuf,
        /// Its format.
        first_format: String,
        /// A file of another format.
        other: PathBuf,
        /// Its format.
        other_format: String,
    },
    /// A path given as a directory of traces holds none.
    #[error(
        "{dir}: no trace files (*.json, *.sqlite, *.db, *.rpd, rocprofv3's *kernel_trace.csv, \
         *_api_trace.csv, *memory_copy_trace.csv, *.xplane.pb, *.pftrace, *.perfetto-trace, each optionally \
         .gz) in this directory"
    )]
    EmptyDir {
        /// The directory.
        dir: PathBuf,
    },
    /// A directory entry named like a trace (`*.json[.gz]`) that cannot be read as one: a dangling or
    /// looping symbolic link, a directory, a FIFO. Never skipped: a rank would vanish without a word.
    #[error("{file}: {message}")]
    NotAFile {
        /// The entry.
        file: PathBuf,
        /// What it is instead.
        message: String,
    },
    /// A kernel rule file (families and buckets) is not valid. `rule` is 1-based, in file order.
    #[error("{}", rules_message(file, *line, *rule, message))]
    Rules {
        /// The rule file (`<built-in>` for the default table).
        file: PathBuf,
        /// Line in the file, when known.
        line: Option<usize>,
        /// The rule concerned (1-based), when the fault is in one.
        rule: Option<usize>,
        /// What is wrong, naming the family, pattern or example concerned.
        message: String,
    },
    /// Two traces put side by side claim the same rank (`distributedInfo.rank`): their steps would be
    /// pooled, or one rank counted twice (`ranks::check_ranks`).
    #[error(
        "{second}: claims rank {rank}, as {first} does: two traces of one rank cannot be put side by \
         side (are they from two runs? give each run apart)"
    )]
    SameRank {
        /// The rank.
        rank: u64,
        /// The trace that claimed it first.
        first: PathBuf,
        /// The trace that claims it again.
        second: PathBuf,
    },
    /// One trace was asked of a file that holds several ranks (processes or GPUs): taking their union
    /// would sum two GPUs' work into one rank's budget, picking one would drop the others.
    #[error(
        "{}: holds {} ranks ({}); read it as ranks (`read_ranks`, or a command that lists every rank)",
        path.display(), ranks.len(), ranks.join(", ")
    )]
    SeveralRanks {
        /// The file.
        path: PathBuf,
        /// The ranks' names, as their rows give them.
        ranks: Vec<String>,
    },
    /// A graph-capture directory's `execution_details.json` is not the list it should be.
    #[error("{file}: {message}")]
    Captures {
        /// The file.
        file: PathBuf,
        /// What is wrong, naming the entry.
        message: String,
    },
    /// A step pattern (a regex matched against annotation names) is not valid.
    #[error("step pattern `{pattern}`: {message}")]
    StepPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
}

fn rules_message(
    file: &std::path::Path,
    line: Option<usize>,
    rule: Option<usize>,
    message: &str,
) -> String {
    let mut s = file.display().to_string();
    if let Some(l) = line {
        s.push_str(&format!(":{l}"));
    }
    if let Some(r) = rule {
        s.push_str(&format!(": rule {r}"));
    }
    format!("{s}: {message}")
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
