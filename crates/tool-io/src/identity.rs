//! Which files this run reads and which it writes, by identity: a result never replaces an input.
//!
//! `--overwrite` means "replace an earlier result", never "replace what this run reads". Names cannot tell:
//! `T`, `./T`, a symlink to `T` and a hard link to `T` are one file. So every input opened through
//! [`crate::open_input`] and every live [`crate::Claim`] is noted here by its identity — device, inode and,
//! where the file system keeps one, birth time (so that an inode number reused by a later file in a long
//! process is not taken for the old one) — and the two sets are checked against each other whichever comes
//! first:
//!
//! - a claim on a file this process has read is refused ([`Error::ResultIsInput`]);
//! - opening an input that is a live claim's target is refused ([`Error::InputIsResult`]), before a byte of
//!   it is read, so the run stops before it could replace it;
//! - a second claim on the file a live claim of this process already holds is refused as what it is
//!   ([`Error::ClaimedTwice`]), not as another run's.
//!
//! The inputs are remembered for the life of the process (one entry per distinct file), so that the order of
//! reading and claiming does not matter.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::Error;

/// A file's identity: the same for every name of the file, different for a later file given its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    /// Birth time in ns since the epoch, where the file system records it.
    born: Option<i128>,
}

impl FileId {
    #[cfg(unix)]
    pub(crate) fn of(meta: &Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        let born = meta
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i128);
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            born,
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_: &Metadata) -> FileId {
        FileId {
            dev: 0,
            ino: 0,
            born: None,
        }
    }

    /// The identity of what `path` names, through symlinks; `None` when nothing is there.
    pub(crate) fn at(path: &Path) -> Option<FileId> {
        std::fs::metadata(path).ok().map(|m| FileId::of(&m))
    }

    /// The identity of an open file.
    pub(crate) fn of_file(f: &File) -> Option<FileId> {
        f.metadata().ok().map(|m| FileId::of(&m))
    }

    /// Whether identity can be told apart on this platform (else every check is skipped).
    fn known(&self) -> bool {
        cfg!(unix)
    }
}

/// An input seen by this process.
struct Input {
    what: String,
    path: PathBuf,
}

/// A live claim of this process.
struct Held {
    serial: u64,
    /// The path as claimed.
    path: PathBuf,
    /// The file it would replace, when one was there at claim time.
    target: Option<FileId>,
    /// The claim file it locks.
    lock: Option<FileId>,
}

#[derive(Default)]
struct Registry {
    inputs: HashMap<FileId, Input>,
    held: Vec<Held>,
    next: u64,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut g = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(Registry::default))
}

/// Notes an opened input; refuses it when it is a live claim's target.
pub(crate) fn opened_input(file: &File, path: &Path, what: &str) -> Result<(), Error> {
    let Some(id) = FileId::of_file(file).filter(FileId::known) else {
        return Ok(());
    };
    with(|r| {
        // Noted even when refused: the run meant to read it, so no later write may replace it either.
        r.inputs.entry(id).or_insert_with(|| Input {
            what: what.to_owned(),
            path: path.to_owned(),
        });
        match r.held.iter().find(|h| h.target == Some(id)) {
            Some(h) => Err(Error::InputIsResult {
                what: what.to_owned(),
                path: path.to_owned(),
                result: h.path.clone(),
            }),
            None => Ok(()),
        }
    })
}

/// What [`try_lock`] found.
pub(crate) enum Locked {
    /// The claim file is locked; the claim is registered under this serial (see [`confirm`], [`released`]).
    Held(u64),
    /// Another claim of this process holds it (the claimed path given).
    Twice(PathBuf),
    /// Another process holds it.
    Busy,
}

/// Tries the claim file's lock for a claim on `path`, registering the claim in the same step (under the
/// registry's mutex, so that a thread of this process meeting the lock held always finds the holder).
pub(crate) fn try_lock(f: &File, path: &Path) -> std::io::Result<Locked> {
    let lock = FileId::of_file(f).filter(FileId::known);
    with(|r| match f.try_lock() {
        Ok(()) => {
            r.next += 1;
            let serial = r.next;
            r.held.push(Held {
                serial,
                path: path.to_owned(),
                target: None,
                lock,
            });
            Ok(Locked::Held(serial))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(
            match r.held.iter().find(|h| lock.is_some() && h.lock == lock) {
                Some(h) => Locked::Twice(h.path.clone()),
                None => Locked::Busy,
            },
        ),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    })
}

/// Completes the registration of claim `serial` on `path`, whose existing file (if any) is `target`: refused
/// when that file is an input of this process, or the target of another of its live claims.
pub(crate) fn confirm(serial: u64, path: &Path, target: Option<FileId>) -> Result<(), Error> {
    with(|r| {
        if let Some(id) = target.filter(FileId::known) {
            if let Some(i) = r.inputs.get(&id) {
                return Err(Error::ResultIsInput {
                    path: path.to_owned(),
                    what: i.what.clone(),
                    input: i.path.clone(),
                });
            }
            if let Some(h) = r
                .held
                .iter()
                .find(|h| h.serial != serial && h.target == Some(id))
            {
                return Err(Error::ClaimedTwice {
                    path: path.to_owned(),
                    first: h.path.clone(),
                });
            }
        }
        if let Some(h) = r.held.iter_mut().find(|h| h.serial == serial) {
            h.target = target;
        }
        Ok(())
    })
}

/// Checks the file about to be replaced by a rename: never an input of this run.
pub(crate) fn replacing(path: &Path, target: Option<FileId>) -> Result<(), Error> {
    let Some(id) = target.filter(FileId::known) else {
        return Ok(());
    };
    with(|r| match r.inputs.get(&id) {
        Some(i) => Err(Error::ResultIsInput {
            path: path.to_owned(),
            what: i.what.clone(),
            input: i.path.clone(),
        }),
        None => Ok(()),
    })
}

/// Forgets a dropped claim.
pub(crate) fn released(serial: u64) {
    with(|r| r.held.retain(|h| h.serial != serial));
}
