//! A stored file's content read as a stream by a vendor reader that keeps only what its model keeps
//! (rocprofv3 JSON and CSV, XPlane, Perfetto): [`Streamed`], one stream, hashed and inflated as it is read; [`SetFiles`],
//! the files of a rocprofv3 CSV set, each read through once for the set's hash and its header, then
//! opened again ([`reopen_content`]) for its rows. Memory is the reader's window, not the content.
//!
//! The facts and errors are [`super::whole`]'s, byte for byte: the same hash, content size and cap on a
//! gzip's inflation; an inflater or read error wins over whatever the reader made of the content before
//! it (so the rest of a stream is read to its end after its reader stopped, as a whole read would); a
//! cut gzip stream reads to where it was cut, then ends, and [`Finished::cut`] says so.
//!
//! What it is not: a reader of the content (JSON, CSV), nor the judge of a cut stream.

use super::whole::{StoredFacts, inflate_error};
use super::{Capped, HashingReader, Rejoined, digest, hasher, hex, is_cut, split_magic};
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The stored bytes, as they are or inflated (capped), hashed on the way.
enum Source<R: Read> {
    Plain(HashingReader<Rejoined<R>>),
    Gzip(Box<Capped<HashingReader<Rejoined<R>>>>),
}

/// A stored stream's content as it is read (see the module's text).
pub(crate) struct Streamed<R: Read> {
    name: PathBuf,
    gzip: bool,
    source: Source<R>,
    hasher: Option<super::Hasher>,
    content_bytes: u64,
    cut: bool,
    /// The read or inflater error that stopped the stream, reported by [`Streamed::finish`].
    failed: Option<Error>,
}

/// What a streamed read ended with, once its content was read to the end.
pub(crate) struct Finished {
    /// The gzip stream ended early: the content ended where it was cut.
    pub(crate) cut: bool,
    pub(crate) facts: StoredFacts,
}

impl<R: Read> Streamed<R> {
    /// `raw` from its first byte; `stored_len`, the file's size when known, sets the gzip cap.
    pub(crate) fn open(
        name: &Path,
        raw: R,
        hash: bool,
        stored_len: Option<u64>,
    ) -> Result<Streamed<R>> {
        let (gzip, raw) = split_magic(raw).map_err(|source| Error::Io {
            file: name.to_path_buf(),
            source,
        })?;
        let hasher = hasher(hash);
        let hashing = HashingReader {
            inner: raw,
            hasher: hasher.clone(),
        };
        let source = if gzip {
            Source::Gzip(Box::new(Capped::new(hashing, stored_len)))
        } else {
            Source::Plain(hashing)
        };
        Ok(Streamed {
            name: name.to_path_buf(),
            gzip,
            source,
            hasher,
            content_bytes: 0,
            cut: false,
            failed: None,
        })
    }

    /// Whether the stored bytes are gzip (the content is their inflation).
    pub(crate) fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// The error a failed read becomes, as a whole read names it: a plain stream's read error, or the
    /// inflater's (corrupt data, its cap passed, the read under it) with the content before it.
    fn stream_error(&self, e: io::Error) -> Error {
        if self.gzip {
            inflate_error(&self.name, self.content_bytes, &e)
        } else {
            Error::Io {
                file: self.name.clone(),
                source: e,
            }
        }
    }

    /// Reads the rest of the content (and of a cut gzip's stored bytes, for the hash): the facts, or the
    /// error that stopped the stream, which wins over whatever its reader made of the content.
    pub(crate) fn finish(mut self) -> Result<Finished> {
        io::copy(&mut self, &mut io::sink()).ok();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let raw: &mut dyn Read = match &mut self.source {
            Source::Plain(r) => r,
            Source::Gzip(d) => &mut d.inflater.get_mut().inner,
        };
        io::copy(raw, &mut io::sink()).map_err(|source| Error::Io {
            file: self.name.clone(),
            source,
        })?;
        drop(self.source);
        Ok(Finished {
            cut: self.cut,
            facts: StoredFacts {
                sha256: digest(self.hasher).map(|d| hex(&d)),
                gzip: self.gzip,
                content_bytes: self.content_bytes,
            },
        })
    }
}

impl<R: Read> Read for Streamed<R> {
    /// The content; after a cut, its end; after an error, the error again (kept for [`Streamed::finish`]).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Err(io::Error::other("the stored stream failed"));
        }
        if self.cut {
            return Ok(0);
        }
        let read = match &mut self.source {
            Source::Plain(r) => r.read(buf),
            Source::Gzip(d) => d.read(buf),
        };
        match read {
            Ok(n) => {
                self.content_bytes += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) if self.gzip && is_cut(&e) => {
                self.cut = true;
                Ok(0)
            }
            Err(e) => {
                self.failed = Some(self.stream_error(e));
                Err(io::Error::other("the stored stream failed"))
            }
        }
    }
}

/// The stored files of one set (a rocprofv3 CSV set), each read through once in turn: hashed together
/// in the order read, each inflated when gzip (a cut or corrupt gzip file is an error).
pub(crate) struct SetFiles {
    hasher: Option<Sha256>,
    gzip: bool,
    content_bytes: u64,
}

/// A reader that hashes what it passes on into a set's hasher.
struct SetHashing<'a, R> {
    inner: R,
    hasher: Option<&'a mut Sha256>,
}

impl<R: Read> Read for SetHashing<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Counts the content read through it, and keeps the error that stopped it.
struct Counting<R> {
    inner: R,
    count: u64,
    failed: Option<io::Error>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Err(io::Error::other("the stored file failed"));
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.count += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.failed = Some(e);
                Err(io::Error::other("the stored file failed"))
            }
        }
    }
}

impl SetFiles {
    pub(crate) fn new(hash: bool) -> SetFiles {
        SetFiles {
            hasher: hash.then(Sha256::new),
            gzip: false,
            content_bytes: 0,
        }
    }

    /// Reads `file` through: `look` reads what it needs of the content first (a header), the rest is
    /// read here; `look`'s answer once the whole file read without error.
    pub(crate) fn read_through<T>(
        &mut self,
        file: &Path,
        look: impl FnOnce(&mut dyn Read) -> T,
    ) -> Result<T> {
        let io_err = |source| Error::Io {
            file: file.to_path_buf(),
            source,
        };
        let f = std::fs::File::open(file).map_err(io_err)?;
        let stored_len = f.metadata().map_err(io_err)?.len();
        let hashing = SetHashing {
            inner: f,
            hasher: self.hasher.as_mut(),
        };
        let (gzip, raw) = split_magic(hashing).map_err(io_err)?;
        let content: Box<dyn Read + '_> = if gzip {
            Box::new(Capped::new(raw, Some(stored_len)))
        } else {
            Box::new(raw)
        };
        let mut counting = Counting {
            inner: content,
            count: 0,
            failed: None,
        };
        let seen = look(&mut counting);
        io::copy(&mut counting, &mut io::sink()).ok();
        if let Some(e) = counting.failed {
            return Err(match gzip {
                true => inflate_error(file, counting.count, &e),
                false => io_err(e),
            });
        }
        self.gzip |= gzip;
        self.content_bytes += counting.count;
        Ok(seen)
    }

    /// What was read: the hash of every file's stored bytes in turn, gzip if any was.
    pub(crate) fn finish(self) -> StoredFacts {
        StoredFacts {
            sha256: self.hasher.map(|h| hex(&h.finalize())),
            gzip: self.gzip,
            content_bytes: self.content_bytes,
        }
    }
}

/// The content of a stored file read before by [`SetFiles::read_through`], opened again from its
/// first byte (inflated when gzip, capped), for a reader that goes through it once more.
pub(crate) fn reopen_content(file: &Path) -> Result<Box<dyn Read>> {
    let io_err = |source| Error::Io {
        file: file.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(file).map_err(io_err)?;
    let stored_len = f.metadata().map_err(io_err)?.len();
    let (gzip, raw) = split_magic(f).map_err(io_err)?;
    Ok(if gzip {
        Box::new(Capped::new(raw, Some(stored_len)))
    } else {
        Box::new(raw)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::tests::{gzip, sha256_hex};
    use crate::stored::{INFLATE_FLOOR, inflate_limit};
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    /// 4000 distinct lines: their gzip is long enough to cut inside the deflate data.
    fn lines() -> Vec<u8> {
        (0..4000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn a_stream_read_in_part_is_read_to_its_end_for_its_facts() {
        let text = lines();
        let mut s = Streamed::open(Path::new("a.json"), &text[..], true, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut first = [0u8; 10];
        s.read_exact(&mut first).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&first, b"0\n1\n2\n3\n4\n");
        let end = s.finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(!end.cut && !end.facts.gzip);
        assert_eq!(end.facts.content_bytes, text.len() as u64);
        assert_eq!(end.facts.sha256, Some(sha256_hex(&text)));
    }

    #[test]
    fn a_cut_gzip_ends_where_it_was_cut_and_hashes_every_stored_byte() {
        let text = lines();
        let z = gzip(&text);
        let cut = &z[..z.len() - 40];
        let mut s = Streamed::open(Path::new("c.json.gz"), cut, true, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.starts_with(&got) && got.len() < text.len());
        let end = s.finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(end.cut && end.facts.gzip);
        assert_eq!(end.facts.content_bytes, got.len() as u64);
        assert_eq!(end.facts.sha256, Some(sha256_hex(cut)));
    }

    #[test]
    fn a_corrupt_gzip_past_where_its_reader_stopped_is_the_error() {
        let text = lines();
        let mut z = gzip(&text);
        // The CRC of the trailer: every byte of content inflates, then the check fails.
        let crc = z.len() - 8;
        z[crc] ^= 0xff;
        let mut s = Streamed::open(Path::new("b.json.gz"), &z[..], false, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut first = [0u8; 4];
        s.read_exact(&mut first).unwrap_or_else(|e| panic!("{e}"));
        match s.finish() {
            Err(Error::Gzip { offset, .. }) => assert_eq!(offset, text.len() as u64),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a corrupt gzip was read"),
        }
    }

    #[test]
    fn a_set_is_hashed_as_its_files_one_after_another() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv.gz"));
        let b_text = b"x,y\n3,4\n";
        let b_stored = gzip(b_text);
        std::fs::write(&a, b"x,y\n1,2\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&b, &b_stored).unwrap_or_else(|e| panic!("{e}"));
        let mut set = SetFiles::new(true);
        // Each file's reader reads what it needs (here 3 bytes); the rest is read for the hash.
        let head = |r: &mut dyn Read| {
            let mut h = [0u8; 3];
            r.read_exact(&mut h).map(|()| h).ok()
        };
        assert_eq!(set.read_through(&a, head).ok(), Some(Some(*b"x,y")));
        assert_eq!(set.read_through(&b, head).ok(), Some(Some(*b"x,y")));
        let facts = set.finish();
        let mut both = b"x,y\n1,2\n".to_vec();
        both.extend_from_slice(&b_stored);
        assert_eq!(facts.sha256, Some(sha256_hex(&both)));
        // 8 + 8 bytes of content; one of the files was gzip.
        assert_eq!(facts.content_bytes, 16);
        assert!(facts.gzip);
        let mut again = String::new();
        let reopened = reopen_content(&b).and_then(|mut r| {
            r.read_to_string(&mut again).map_err(|source| Error::Io {
                file: b.clone(),
                source,
            })
        });
        assert!(reopened.is_ok());
        assert_eq!(again.as_bytes(), b_text);
    }

    #[test]
    fn a_set_file_that_inflates_past_its_cap_is_refused() {
        // 1 MiB of zeros past the floor, stored ~1000:1: the floor is the cap, and the content passes it.
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        let block = vec![0u8; 1 << 20];
        for _ in 0..(INFLATE_FLOOR >> 20) + 1 {
            e.write_all(&block).unwrap_or_default();
        }
        let bomb = e.finish().unwrap_or_default();
        assert!(inflate_limit(bomb.len() as u64) == INFLATE_FLOOR);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let csv = dir.path().join("x_kernel_trace.csv.gz");
        std::fs::write(&csv, &bomb).unwrap_or_else(|e| panic!("{e}"));
        let mut set = SetFiles::new(false);
        let r = set.read_through(&csv, |_| ());
        assert!(matches!(r, Err(Error::Limit { file, .. }) if file == csv));
        let mut s = Streamed::open(Path::new("b.json.gz"), &bomb[..], false, None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.read_to_end(&mut Vec::new()).is_err());
        assert!(matches!(s.finish(), Err(Error::Limit { .. })));
    }
}
