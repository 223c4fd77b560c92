//! A stored stream's content for a vendor reader that reads it a window at a time instead of whole: the
//! rules of a whole read ([`super::whole::read_whole`]) — gzip inflated and capped
//! ([`super::inflate_limit`]), the stored bytes hashed as read and to their end, a cut gzip stream noted
//! rather than failed — and the error a whole read would have stopped with, kept so that the reader
//! reports it in place of any error of its own (a whole read fails before any parse).
//!
//! What it is not: the Kineto parser's feed ([`super::feed`], chunks from a helper thread, uncapped), or
//! a reader of the content.

use super::whole::{StoredFacts, inflate_error};
use super::{Capped, HashingReader, Rejoined, digest, hasher, hex, is_cut, split_magic};
use crate::error::{Error, Result};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The stored bytes, as they are or inflated (capped).
enum Source<R: Read> {
    Plain(HashingReader<Rejoined<R>>),
    Gzip(Box<Capped<HashingReader<Rejoined<R>>>>),
}

/// The content of a stored stream, read as a [`Read`]: a cut gzip stream reads as its end
/// ([`ContentStream::cut_gzip`] says so), and any other failure is an I/O error whose [`Error`] (what
/// a whole read reports) is kept for [`ContentStream::failure_or`].
pub(crate) struct ContentStream<R: Read> {
    name: PathBuf,
    source: Source<R>,
    hasher: Option<super::Hasher>,
    gzip: bool,
    /// Bytes of content delivered.
    content: u64,
    cut_gzip: bool,
    failure: Option<Error>,
}

impl<R: Read> ContentStream<R> {
    /// `raw` from its first byte; `stored_len`, the file's size when known, bounds the inflated size
    /// ([`super::inflate_limit`]).
    pub(crate) fn open(
        name: &Path,
        raw: R,
        hash: bool,
        stored_len: Option<u64>,
    ) -> Result<ContentStream<R>> {
        let (gzip, raw) = split_magic(raw).map_err(|source| Error::Io {
            file: name.to_path_buf(),
            source,
        })?;
        let hasher = hasher(hash);
        let reader = HashingReader {
            inner: raw,
            hasher: hasher.clone(),
        };
        let source = if gzip {
            Source::Gzip(Box::new(Capped::new(reader, stored_len)))
        } else {
            Source::Plain(reader)
        };
        Ok(ContentStream {
            name: name.to_path_buf(),
            source,
            hasher,
            gzip,
            content: 0,
            cut_gzip: false,
            failure: None,
        })
    }

    /// The gzip stream ended early: what was read is what inflated before the cut.
    pub(crate) fn cut_gzip(&self) -> bool {
        self.cut_gzip
    }

    /// Bytes of content read so far (all of it, once read to its end).
    pub(crate) fn content_bytes(&self) -> u64 {
        self.content
    }

    /// The error to report for a reader that stopped with `own`: the stream's failure, met already or
    /// met reading on to the end (a whole read would have failed before any parse), else `own`.
    pub(crate) fn failure_or(&mut self, own: Error) -> Error {
        if self.failure.is_none() {
            let _ = io::copy(self, &mut io::sink());
        }
        self.failure.take().unwrap_or(own)
    }

    /// After the content's end: the rest of the stored bytes hashed (those after a cut gzip stream too),
    /// and what was read.
    pub(crate) fn finish(self) -> Result<StoredFacts> {
        let mut raw = match self.source {
            Source::Plain(r) => r,
            Source::Gzip(d) => d.inflater.into_inner().inner,
        };
        io::copy(&mut raw, &mut io::sink()).map_err(|source| Error::Io {
            file: self.name.clone(),
            source,
        })?;
        drop(raw);
        Ok(StoredFacts {
            sha256: digest(self.hasher).map(|d| hex(&d)),
            gzip: self.gzip,
            content_bytes: self.content,
        })
    }
}

impl<R: Read> Read for ContentStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cut_gzip {
            return Ok(0);
        }
        if self.failure.is_some() {
            return Err(io::Error::other("the stored stream failed"));
        }
        let read = match &mut self.source {
            Source::Plain(r) => r.read(buf),
            Source::Gzip(d) => d.read(buf),
        };
        match read {
            Ok(n) => {
                self.content += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) if self.gzip && is_cut(&e) => {
                self.cut_gzip = true;
                Ok(0)
            }
            Err(e) => {
                let message = e.to_string();
                self.failure = Some(if self.gzip {
                    inflate_error(&self.name, self.content, &e)
                } else {
                    Error::Io {
                        file: self.name.clone(),
                        source: e,
                    }
                });
                Err(io::Error::other(message))
            }
        }
    }
}
