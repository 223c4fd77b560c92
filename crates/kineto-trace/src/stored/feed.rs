//! The stored stream handed to the Kineto parser as content (inflated when gzip), hashed as it is read.
//!
//! Decompression and hashing run on a second thread that hands 1 MiB chunks to the parser through a
//! bounded channel, so on two cores the parse overlaps the inflate instead of following it
//! (`parse-speed.md`: zlib-rs inflates at ~1.2 GB/s, about the parser's own speed). Chunk buffers travel
//! back for reuse, so memory stays at a few MiB whatever the file size. [`Feed::Inline`] does the same on
//! the calling thread.
//!
//! What it is not: the parallel parse's input (`parse/blocks.rs`, which cuts the same content into
//! blocks for its workers).

use super::{Content, Hasher, fill, is_cut, split_magic};
use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

const CHUNK: usize = 1 << 20;
const IN_FLIGHT: usize = 4;

/// How the input bytes reach the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// Read (and inflate, and hash) on a helper thread: the default.
    Threaded,
    /// Everything on the calling thread: for benchmarks of the parser alone, and for callers that
    /// already parallelise across files.
    Inline,
}

/// Reads a file, inflating gzip, optionally hashing the raw bytes.
pub(crate) struct Input {
    reader: Box<dyn Read + Send>,
    digest: DigestSlot,
    /// True when the input is gzip.
    pub(crate) gzip: bool,
}

enum DigestSlot {
    None,
    Inline(Hasher),
    Thread(Option<JoinHandle<Option<[u8; 32]>>>),
}

impl Input {
    /// Reads the bytes of a trace as stored (plain or gzip, told by the magic bytes) from `raw`.
    pub(crate) fn from_raw(
        raw: impl Read + Send + 'static,
        hash: bool,
        feed: Feed,
    ) -> io::Result<Input> {
        let (gzip, raw) = split_magic(raw)?;
        match feed {
            Feed::Inline => {
                let content = Content::new(raw, gzip, hash);
                let digest = match content.hasher() {
                    Some(h) => DigestSlot::Inline(h),
                    None => DigestSlot::None,
                };
                Ok(Input {
                    reader: Box::new(content),
                    digest,
                    gzip,
                })
            }
            Feed::Threaded => {
                let (tx, rx) = sync_channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
                let (back_tx, back_rx) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
                let handle = std::thread::Builder::new()
                    .name("kineto-feed".into())
                    .spawn(move || feeder(Content::new(raw, gzip, hash), tx, back_rx))?;
                Ok(Input {
                    reader: Box::new(ChunkReader {
                        rx,
                        back: back_tx,
                        cur: Vec::new(),
                        at: 0,
                        done: false,
                    }),
                    digest: DigestSlot::Thread(Some(handle)),
                    gzip,
                })
            }
        }
    }

    pub(crate) fn reader(&mut self) -> &mut (dyn Read + Send) {
        &mut *self.reader
    }

    /// The sha256 of the raw file, once it has been read to the end.
    pub(crate) fn finish(mut self) -> Option<[u8; 32]> {
        // Dropping the reader first lets a feeder blocked on a full channel see the hang-up and stop.
        let digest = std::mem::replace(&mut self.digest, DigestSlot::None);
        drop(self.reader);
        match digest {
            DigestSlot::None => None,
            DigestSlot::Inline(h) => super::digest(Some(h)),
            DigestSlot::Thread(mut handle) => handle.take()?.join().ok().flatten(),
        }
    }
}

/// The helper thread: content → chunks. Returns the digest of the stored bytes when the whole file
/// was read, `None` if the parser hung up early.
fn feeder<R: Read>(
    mut content: Content<R>,
    tx: SyncSender<io::Result<Vec<u8>>>,
    back: Receiver<Vec<u8>>,
) -> Option<[u8; 32]> {
    loop {
        let mut chunk = back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        chunk.resize(CHUNK, 0);
        // Fill the chunk; on an error, deliver what was read before it, then the error, so that a cut
        // gzip stream still yields every byte that decompressed.
        let (n, failure) = fill(&mut content, &mut chunk);
        if n > 0 {
            chunk.truncate(n);
            if tx.send(Ok(chunk)).is_err() {
                return None;
            }
        }
        if let Some(e) = failure {
            // A cut gzip file can still be salvaged, and its sha256 is of the bytes as stored.
            let cut = is_cut(&e);
            let _ = tx.send(Err(e));
            if !cut {
                return None;
            }
            return content.digest_to_end().ok()?;
        }
        if n < CHUNK {
            break;
        }
    }
    content.digest()
}

struct ChunkReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    back: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    at: usize,
    done: bool,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    let old = std::mem::replace(&mut self.cur, chunk);
                    let _ = self.back.try_send(old);
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = buf.len().min(self.cur.len() - self.at);
        buf[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
