//! The crate's one error type: every variant names the file (or stdout) it is about.

use std::path::PathBuf;

/// What can go wrong claiming, writing or reading a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A result file exists and the caller did not ask to replace it. The message names no option: the binary
    /// adds how to ask (`--overwrite` in every kl1 tool).
    #[error("{path} exists")]
    Exists {
        /// The result path.
        path: PathBuf,
    },
    /// Something other than a regular file is at the result path (a device such as `/dev/null`, a FIFO, a
    /// socket, a directory): replacing it is never ours to do, `--overwrite` or not.
    #[error("{path} is {kind}, not a regular file; refusing to replace it")]
    NotRegular {
        /// The result path.
        path: PathBuf,
        /// What is there ("a FIFO", "a character device", …).
        kind: &'static str,
    },
    /// A symbolic link to nothing (or a loop) is at the result path: writing through it could create a file
    /// anywhere, so it is refused, `--overwrite` or not.
    #[error(
        "{path} is a symbolic link to {}, which does not exist (or loops); refusing to write through it",
        points_to.display()
    )]
    DanglingLink {
        /// The result path.
        path: PathBuf,
        /// What the link says.
        points_to: PathBuf,
    },
    /// The result path is a file this run reads (by identity: any name, symlink or hard link of it).
    #[error(
        "{path} is this run's {what} {input}; a result never replaces what the run reads, even when told to overwrite"
    )]
    ResultIsInput {
        /// The result path.
        path: PathBuf,
        /// The input's role ("trace", "manifest", …).
        what: String,
        /// The input as it was named.
        input: PathBuf,
    },
    /// An input is the file a result of this run is claimed to replace (by identity).
    #[error(
        "{what} {path}: is also this run's result file {result}; a result never replaces what the run reads, \
         even when told to overwrite"
    )]
    InputIsResult {
        /// The input's role.
        what: String,
        /// The input.
        path: PathBuf,
        /// The result path that names the same file.
        result: PathBuf,
    },
    /// Two results of one run name the same file (`--output F --html F`).
    #[error(
        "{path} is already claimed by this run for another result ({first}); give each result its own file"
    )]
    ClaimedTwice {
        /// The second result path.
        path: PathBuf,
        /// The first one.
        first: PathBuf,
    },
    /// The result path names a directory or has no file name.
    #[error("{path} is a directory; name a file")]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// Another run holds the claim on this result path (see [`crate::Claim`]).
    #[error(
        "{path} is being written by another run (its claim {lock} is held); wait for it or choose another name"
    )]
    Busy {
        /// The result path.
        path: PathBuf,
        /// The claim file that is locked.
        lock: PathBuf,
    },
    /// A value to be written holds NaN or infinity; nothing was written.
    #[error("{path}: `{json_path}` is {value}, not a finite number; nothing was written")]
    NonFinite {
        /// The result file (or `-` for none).
        path: PathBuf,
        /// Where in the JSON value (`a.b[2]`; `$` for the value itself).
        json_path: String,
        /// The number.
        value: f64,
    },
    /// A value could not be serialised to JSON.
    #[error("{path}: cannot serialise to JSON: {message}")]
    Serialize {
        /// The result file.
        path: PathBuf,
        /// serde's message.
        message: String,
    },
    /// An input is not a regular file (a FIFO, a device such as `/dev/zero`, a directory, a socket).
    #[error("{what} {path}: is {kind}, not a regular file")]
    InputNotRegular {
        /// What the input is for ("manifest", "rule file", …).
        what: String,
        /// The path.
        path: PathBuf,
        /// What is there.
        kind: &'static str,
    },
    /// An input is larger than the cap for its kind.
    #[error("{what} {path}: {size} bytes or more, over the {cap}-byte limit for a {what}")]
    TooLarge {
        /// What the input is for.
        what: String,
        /// The path.
        path: PathBuf,
        /// Its size (or the bytes read before giving up).
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// An input is not UTF-8.
    #[error("{what} {path}: not UTF-8 text (byte {offset})")]
    NotUtf8 {
        /// What the input is for.
        what: String,
        /// The path.
        path: PathBuf,
        /// The first byte that is not part of valid UTF-8.
        offset: usize,
    },
    /// An input could not be opened or read (the operating system's message included, not also a source).
    #[error("{what} {path}: {error}")]
    Input {
        /// What the input is for.
        what: String,
        /// The path.
        path: std::path::PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The operating system refused an operation on a path (its message included, not also a source).
    #[error("{path}: {op}: {error}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done ("create", "rename", "read", …).
        op: &'static str,
        /// What the operating system said.
        error: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |error| Error::Io { path, op, error }
    }
}
