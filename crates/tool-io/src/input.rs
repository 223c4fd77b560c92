//! Small input files: regular files only, capped, errors naming the file.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::{Error, kind_name};

/// Size caps per kind of small input, in bytes. Each is far above any real file of its kind and far below
/// what would strain memory; `docs/result-files.md` lists them with their reasons.
pub mod caps {
    /// Hand-written TOML: rule files, model specs, GPU tables (real ones are 2–40 KB).
    pub const CONFIG: u64 = 4 << 20;
    /// A window's `traces-manifest.json`: about 200 bytes per trace, so ~300 000 traces.
    pub const MANIFEST: u64 = 64 << 20;
    /// A provenance record (JSON: host, GPUs, monitor summary, command; real ones are 5–200 KB).
    pub const RECORD: u64 = 64 << 20;
    /// A gpu-monitor recording read back whole (CSV, ~150 bytes a row: an hour at 100 ms on 8 GPUs is 43 MB).
    pub const RECORDING: u64 = 1 << 30;
}

/// Opens an input for reading, refusing anything but a regular file (or a symlink to one).
///
/// The file is opened without blocking, so a FIFO (which would wait for a writer) is refused at once, and
/// the type is checked on the opened descriptor, so the file cannot be swapped between check and read.
/// The file is noted as an input of this run: a result claimed on it (by any name) is refused, and it is
/// refused here if a live claim of this process would replace it ([`Error::InputIsResult`]).
/// `what` names the input's role in errors ("manifest", "rule file"). For large inputs (traces) that are
/// streamed; small ones use [`read_input`].
pub fn open_input(path: &Path, what: &str) -> Result<File, Error> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // No effect on a regular file; makes opening a FIFO return at once instead of waiting for a writer.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let io = |error| Error::Input {
        what: what.to_owned(),
        path: path.to_owned(),
        error,
    };
    let f = opts.open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::InputNotRegular {
            what: what.to_owned(),
            path: path.to_owned(),
            kind: kind_name(meta.file_type()),
        });
    }
    crate::identity::opened_input(&f, path, what)?;
    Ok(f)
}

/// Opens an input that may also be a pipe (`<(cmd)`, `/dev/stdin`): a regular file is opened and noted
/// exactly as [`open_input`] does (so no result of this run replaces it); a FIFO or socket is opened
/// as a stream (blocking until its writer writes, as a pipe should). Directories and devices are refused.
pub fn open_stream(path: &Path, what: &str) -> Result<File, Error> {
    let io = |error| Error::Input {
        what: what.to_owned(),
        path: path.to_owned(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() || t.is_socket() {
            return File::open(path).map_err(io);
        }
    }
    if !meta.is_file() {
        return Err(Error::InputNotRegular {
            what: what.to_owned(),
            path: path.to_owned(),
            kind: kind_name(meta.file_type()),
        });
    }
    open_input(path, what)
}

/// Reads a small input whole: a regular file (or a symlink to one, see [`open_input`]) of at most `cap`
/// bytes ([`caps`]). A larger file is refused before reading ([`Error::TooLarge`]), and reading stops at
/// `cap` + 1 bytes in case it grows meanwhile.
pub fn read_input(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>, Error> {
    let f = open_input(path, what)?;
    let io = |error| Error::Input {
        what: what.to_owned(),
        path: path.to_owned(),
        error,
    };
    let size = f.metadata().map_err(io)?.len();
    let too_large = |size| Error::TooLarge {
        what: what.to_owned(),
        path: path.to_owned(),
        size,
        cap,
    };
    if size > cap {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    f.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_input`] for text: also refuses bytes that are not UTF-8, naming the first bad byte.
pub fn read_input_string(path: &Path, what: &str, cap: u64) -> Result<String, Error> {
    let bytes = read_input(path, what, cap)?;
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        what: what.to_owned(),
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })
}
