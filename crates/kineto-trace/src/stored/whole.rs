//! A stored file read whole, for the vendor readers, which need all of a file's content at once: the
//! content in memory ([`read_whole`]) and an SQLite database as a file SQLite can open
//! ([`database_file`]). Each says what it read in [`StoredFacts`] (as does [`super::streamed`], the
//! content read as a stream).
//!
//! What it is not: a reader of the content, nor the judge of a cut stream: [`Whole::cut_gzip`] says the
//! gzip stream ended early and the format's reader decides whether that is an error or a salvage.

use super::{
    Capped, Hasher, HashingReader, Rejoined, digest, hasher, hex, is_cut, over_inflate_limit,
    split_magic,
};
use crate::error::{Error, Result};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// What was read of a stored file, beside its content.
pub(crate) struct StoredFacts {
    /// Lowercase hex sha256 of the stored bytes, when asked for.
    pub(crate) sha256: Option<String>,
    /// Whether the stored bytes were gzip.
    pub(crate) gzip: bool,
    /// Bytes of content (inflated size for gzip).
    pub(crate) content_bytes: u64,
}

/// A stored stream opened for reading whole: gzip or not, hashed as it is read.
struct Hashed<R> {
    gzip: bool,
    reader: HashingReader<Rejoined<R>>,
    /// Another handle on the reader's hasher, for the digest once the reader is dropped.
    hasher: Option<Hasher>,
}

impl<R: Read> Hashed<R> {
    fn open(raw: R, hash: bool) -> io::Result<Hashed<R>> {
        let (gzip, raw) = split_magic(raw)?;
        let hasher = hasher(hash);
        let reader = HashingReader {
            inner: raw,
            hasher: hasher.clone(),
        };
        Ok(Hashed {
            gzip,
            reader,
            hasher,
        })
    }

    /// The sha256 of the stored bytes read, as hex.
    fn sha256(self) -> Option<String> {
        drop(self.reader);
        digest(self.hasher).map(|d| hex(&d))
    }
}

/// A stored stream's content, read whole.
pub(crate) struct Whole {
    /// The content (inflated when gzip).
    pub(crate) bytes: Vec<u8>,
    /// The gzip stream ended early: `bytes` is what inflated before the cut.
    // Read by the tests only since every reader streams (the protobuf readers' whole-file fallback
    // reads the bytes alone).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) cut_gzip: bool,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) facts: StoredFacts,
}

/// Reads a whole stored stream (hashing it as stored, inflating gzip). `stored_len`, the file's size when
/// known, sizes the buffer of a plain file once (growing it by doubling held up to 1.5× the text, and
/// both buffers while it moved).
pub(crate) fn read_whole(
    name: &Path,
    raw: impl Read,
    hash: bool,
    stored_len: Option<u64>,
) -> Result<Whole> {
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let mut stored = Hashed::open(raw, hash).map_err(io_err)?;
    let (gzip, r) = (stored.gzip, &mut stored.reader);
    let mut bytes = Vec::new();
    let mut cut_gzip = false;
    if gzip {
        let mut d = Capped::new(&mut *r, stored_len);
        match d.read_to_end(&mut bytes) {
            Ok(_) => {}
            Err(e) if is_cut(&e) => cut_gzip = true,
            Err(e) => return Err(inflate_error(name, bytes.len() as u64, &e)),
        }
    } else {
        if let Some(n) = stored_len.and_then(|n| usize::try_from(n).ok()) {
            // One byte more, so that read_to_end sees the end without growing the buffer.
            bytes.reserve_exact(n + 1);
        }
        r.read_to_end(&mut bytes).map_err(io_err)?;
    }
    // A cut gzip is hashed to the end of what is stored, like the Kineto path.
    io::copy(r, &mut io::sink()).map_err(io_err)?;
    let content_bytes = bytes.len() as u64;
    Ok(Whole {
        bytes,
        cut_gzip,
        facts: StoredFacts {
            sha256: stored.sha256(),
            gzip,
            content_bytes,
        },
    })
}

/// The error of an inflater that stopped `offset` bytes of content into `name`: its cap passed, or
/// the gzip data corrupt.
pub(super) fn inflate_error(name: &Path, offset: u64, e: &io::Error) -> Error {
    match over_inflate_limit(e) {
        Some(over) => Error::Limit {
            file: name.to_path_buf(),
            message: over.to_string(),
        },
        None => Error::Gzip {
            file: name.to_path_buf(),
            offset,
            message: e.to_string(),
        },
    }
}

/// The files SQLite reads beside a database to know its committed state, in the order they are
/// hashed after it: the write-ahead log (commits not yet in the main file) and the rollback journal
/// (when hot, the pages an unfinished transaction overwrote). The `-shm` index is rebuilt from the log,
/// so it is neither read nor hashed.
const SQLITE_SIDE_FILES: [&str; 2] = ["-wal", "-journal"];

/// An SQLite database as a file SQLite can open, for as long as this lives.
pub(crate) struct DatabaseFile {
    /// Where the database is: the stored file itself, or a private copy.
    pub(crate) path: PathBuf,
    /// `path` is a copy in a private directory (with the log or journal that was beside the stored
    /// file), which SQLite may write to bring it to its committed state; otherwise it is the stored
    /// file, with nothing beside it for SQLite to read, to be opened immutable.
    pub(crate) private_copy: bool,
    /// The private directory, removed with all it holds when this is dropped.
    _dir: Option<tempfile::TempDir>,
    pub(crate) facts: StoredFacts,
}

/// The database stored in `raw`, to be read in the state SQLite would commit without writing beside
/// the stored file: a plain file on disk (`file_on_disk`) with no log or journal beside it is opened
/// where it is (its bytes read only for the hash); one with a log or journal is copied with them into
/// a private temporary directory (its size again, removed after the read), where SQLite applies them
/// as it would on the spot, whatever the permissions of the file's directory; a gzip file or a stream
/// is inflated there (capped, [`super::inflate_limit`]). The sha256 is of the stored bytes, then of the
/// log and the journal that were read. A cut gzip is an error: an SQLite database cannot be read from
/// part of one.
pub(crate) fn database_file(
    name: &Path,
    raw: impl Read,
    hash: bool,
    file_on_disk: Option<&Path>,
) -> Result<DatabaseFile> {
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let mut stored = Hashed::open(raw, hash).map_err(io_err)?;
    let gzip = stored.gzip;
    let side_files = match file_on_disk {
        Some(p) if !gzip => side_files(p)?,
        _ => Vec::new(),
    };
    let (path, size, dir) = match file_on_disk {
        Some(p) if !gzip && side_files.is_empty() => {
            let size = io::copy(&mut stored.reader, &mut io::sink()).map_err(io_err)?;
            (p.to_path_buf(), size, None)
        }
        _ => {
            let stored_len = file_on_disk
                .and_then(|p| std::fs::metadata(p).ok())
                .map(|m| m.len());
            let (dir, path, size) = private_copy(name, &mut stored, stored_len, &side_files)?;
            (path, size, Some(dir))
        }
    };
    Ok(DatabaseFile {
        path,
        private_copy: dir.is_some(),
        _dir: dir,
        facts: StoredFacts {
            sha256: stored.sha256(),
            gzip,
            content_bytes: size,
        },
    })
}

/// The log and journal beside `main` (see [`SQLITE_SIDE_FILES`]) that exist, with their suffixes.
fn side_files(main: &Path) -> Result<Vec<(PathBuf, &'static str)>> {
    let mut found = Vec::new();
    for suffix in SQLITE_SIDE_FILES {
        let mut side = main.as_os_str().to_owned();
        side.push(suffix);
        let side = PathBuf::from(side);
        match std::fs::symlink_metadata(&side) {
            Ok(_) => found.push((side, suffix)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Io { file: side, source }),
        }
    }
    Ok(found)
}

/// Copies the stored database (inflated when gzip, capped) and `side_files` into a new private
/// directory, hashing each as read: the directory, the database's path in it and its size.
fn private_copy<R: Read>(
    name: &Path,
    stored: &mut Hashed<R>,
    stored_len: Option<u64>,
    side_files: &[(PathBuf, &'static str)],
) -> Result<(tempfile::TempDir, PathBuf, u64)> {
    let io_err = |file: &Path, source| Error::Io {
        file: file.to_path_buf(),
        source,
    };
    let dir = tempfile::Builder::new()
        .prefix("kineto-sqlite-")
        .tempdir()
        .map_err(|e| io_err(name, e))?;
    let path = dir.path().join("trace.sqlite");
    let mut copy = std::fs::File::create(&path).map_err(|e| io_err(&path, e))?;
    let raw = &mut stored.reader;
    let size = if stored.gzip {
        let mut d = Capped::new(&mut *raw, stored_len);
        io::copy(&mut d, &mut copy).map_err(|e| match is_cut(&e) {
            true => Error::Gzip {
                file: name.to_path_buf(),
                offset: 0,
                message: format!("{e} (an SQLite database cannot be read from a cut gzip)"),
            },
            false => inflate_error(name, 0, &e),
        })?
    } else {
        io::copy(raw, &mut copy).map_err(|e| io_err(name, e))?
    };
    io::copy(raw, &mut io::sink()).map_err(|e| io_err(name, e))?;
    copy.flush().map_err(|e| io_err(&path, e))?;
    for (side, suffix) in side_files {
        let file = std::fs::File::open(side).map_err(|e| io_err(side, e))?;
        let mut hashing = HashingReader {
            inner: file,
            hasher: stored.hasher.clone(),
        };
        let mut to = path.as_os_str().to_owned();
        to.push(suffix);
        let mut out = std::fs::File::create(&to).map_err(|e| io_err(Path::new(&to), e))?;
        io::copy(&mut hashing, &mut out).map_err(|e| io_err(side, e))?;
    }
    Ok((dir, path, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::tests::{gzip, sha256_hex};
    use flate2::{Compression, write::GzEncoder};

    #[test]
    fn a_plain_stream_is_its_own_content_and_hashed_as_stored() {
        let text = b"[{\"ph\":\"X\"}]".to_vec();
        let w = read_whole(
            Path::new("a.json"),
            &text[..],
            true,
            Some(text.len() as u64),
        );
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w.bytes, text);
        assert!(!w.cut_gzip && !w.facts.gzip);
        assert_eq!(w.facts.content_bytes, 12);
        assert_eq!(w.facts.sha256, Some(sha256_hex(&text)));
    }

    #[test]
    fn a_cut_gzip_gives_what_inflated_and_the_hash_of_every_stored_byte() {
        // 4000 distinct lines compress to more than 64 bytes, so cutting the stream 40 bytes from its end
        // leaves part of the deflate data (and no trailer).
        let text: Vec<u8> = (0..4000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let z = gzip(&text);
        let cut = &z[..z.len() - 40];
        let w = read_whole(Path::new("c.json.gz"), cut, true, None);
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        assert!(w.cut_gzip && w.facts.gzip);
        assert!(text.starts_with(&w.bytes) && w.bytes.len() < text.len());
        assert_eq!(w.facts.content_bytes, w.bytes.len() as u64);
        assert_eq!(w.facts.sha256, Some(sha256_hex(cut)));
    }

    /// A gzip stream of `n` zero bytes (deflate stores them ~1000:1).
    fn zeros_gzip(n: usize) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        let block = vec![0u8; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(block.len());
            e.write_all(&block[..k]).unwrap_or_default();
            left -= k;
        }
        e.finish().unwrap_or_default()
    }

    fn is_limit(r: Result<impl Sized>, file: &str) -> bool {
        matches!(r, Err(Error::Limit { file: f, .. }) if f == Path::new(file))
    }

    #[test]
    fn a_gzip_that_inflates_past_its_cap_is_refused_by_every_whole_read() {
        // 1 MiB past the floor: its stored size (~260 KB) × 100 is far below the floor, so the floor
        // is the cap, and the content passes it.
        let bomb = zeros_gzip((super::super::INFLATE_FLOOR + (1 << 20)) as usize);
        assert!(super::super::inflate_limit(bomb.len() as u64) == super::super::INFLATE_FLOOR);
        let len = Some(bomb.len() as u64);
        assert!(is_limit(
            read_whole(Path::new("b.json.gz"), &bomb[..], true, len),
            "b.json.gz"
        ));
        // Unknown stored size (a stream): the cap grows with the bytes read, and is still passed.
        assert!(is_limit(
            read_whole(Path::new("s.json.gz"), &bomb[..], true, None),
            "s.json.gz"
        ));
        let db = database_file(Path::new("b.sqlite.gz"), &bomb[..], true, None);
        assert!(is_limit(db, "b.sqlite.gz"));
        // At the cap exactly, content is read.
        let at_cap = zeros_gzip(super::super::INFLATE_FLOOR as usize);
        let w = read_whole(Path::new("c.json.gz"), &at_cap[..], false, None);
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w.facts.content_bytes, super::super::INFLATE_FLOOR);
    }
}
