//! How the kl1 tools touch the file system and stdout, in one place.
//!
//! **What it is.** Three small policies every binary of the workspace follows, so they cannot drift apart:
//!
//! - **Result files** ([`Claim`]): the name is reserved *before* the work (two concurrent runs cannot both
//!   proceed to the end and have one result thrown away), anything but a regular file (or a symlink to one)
//!   at the path is refused even with `overwrite` (`/dev/null`, a FIFO, a socket), an existing file is
//!   refused without `overwrite`, and the bytes go to a temporary file in the same directory that is fsynced
//!   and renamed into place (a reader or a crash sees the old file or the whole new one), with the mode
//!   of an ordinary new file (the umask's) or the mode of the file it replaces, and the directory fsynced.
//!   JSON results are checked finite first ([`check_finite`]): serde_json would write NaN as `null`.
//!   Long sample files stream through [`Claim::stream`] and are renamed into place when finished.
//! - **Small inputs** ([`read_input`], [`read_input_string`], [`open_input`], [`open_stream`]): regular files (or symlinks to
//!   one) only, opened so that a FIFO cannot block, and capped per kind of input ([`caps`]) so that
//!   `/dev/zero` or a runaway file cannot grow memory. Every error names the input's role and path.
//! - **Stdout** ([`stdout`]): data goes to a locked, buffered stdout through `io::Result`, never `println!`;
//!   a closed pipe (`| head`) ends the program quietly with success, any other write error (`> /dev/full`)
//!   prints one message naming stdout and fails, and nothing panics.
//!
//! - **Text from inputs** ([`terminal`], [`csv`]): one rule for what may reach a terminal raw, and the CSV
//!   cell built on it (escaped, formula-guarded, quoted).
//!
//! **What it is not.** Not a format library: it does not know the tools' JSON shapes, CSV columns or
//! renderers (those live in the bin crates). Not for large inputs such as traces, which their parsers
//! stream ([`open_input`] only checks the file type for them). No locking beyond the claim of a result name.
//!
//! The rules, caps and their reasons are in `docs/result-files.md`.

mod claim;
#[cfg(feature = "clap")]
pub mod cli;
pub mod csv;
mod error;
mod finite;
mod identity;
mod input;
pub mod stdout;
pub mod terminal;

pub use claim::{Claim, Stream, Written};
pub use error::Error;
pub use finite::{NonFinite, check_finite};
pub use input::{caps, open_input, open_stream, read_input, read_input_string};

use std::fs::FileType;

/// The article-and-noun for a file type, for messages ("a FIFO").
pub(crate) fn kind_name(t: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}
