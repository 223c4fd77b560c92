//! Opening a trace file: plain or gzip (detected by magic bytes, not by name), hashed as it is read.
//!
//! Decompression and hashing run on a second thread that hands 1 MiB chunks to the parser through a
//! bounded channel, so on two cores the parse overlaps the inflate instead of following it
//! (`parse-speed.md`: zlib-rs inflates at ~1.2 GB/s, about the parser's own speed). Chunk buffers travel
//! back for reuse, so memory stays at a few MiB whatever the file size.

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
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
    Inline(std::sync::Arc<std::sync::Mutex<Sha256>>),
    Thread(Option<JoinHandle<Option<[u8; 32]>>>),
}

impl Input {
    /// Reads the bytes of a trace as stored (plain or gzip, told by the magic bytes) from `raw`.
    pub(crate) fn from_raw(
        mut raw: impl Read + Send + 'static,
        hash: bool,
        feed: Feed,
    ) -> io::Result<Input> {
        let mut magic = [0u8; 2];
        let n = read_full(&mut raw, &mut magic)?;
        let gzip = n == 2 && magic == [0x1f, 0x8b];
        let head = magic[..n].to_vec();
        let raw = io::Cursor::new(head).chain(raw);
        match feed {
            Feed::Inline => {
                let (raw, digest): (Box<dyn Read + Send>, DigestSlot) = if hash {
                    let h = std::sync::Arc::new(std::sync::Mutex::new(Sha256::new()));
                    (
                        Box::new(HashingReader {
                            inner: raw,
                            hasher: Some(h.clone()),
                        }),
                        DigestSlot::Inline(h),
                    )
                } else {
                    (Box::new(raw), DigestSlot::None)
                };
                let reader: Box<dyn Read + Send> = if gzip {
                    Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
                        CHUNK, raw,
                    )))
                } else {
                    raw
                };
                Ok(Input {
                    reader,
                    digest,
                    gzip,
                })
            }
            Feed::Threaded => {
                let (tx, rx) = sync_channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
                let (back_tx, back_rx) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
                let handle = std::thread::Builder::new()
                    .name("kineto-feed".into())
                    .spawn(move || feeder(raw, gzip, hash, tx, back_rx))?;
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
            DigestSlot::Inline(h) => {
                let h = std::sync::Arc::try_unwrap(h).ok()?.into_inner().ok()?;
                Some(h.finalize().into())
            }
            DigestSlot::Thread(mut handle) => handle.take()?.join().ok().flatten(),
        }
    }
}

pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

pub(crate) struct HashingReader<R> {
    pub(crate) inner: R,
    pub(crate) hasher: Option<std::sync::Arc<std::sync::Mutex<Sha256>>>,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &self.hasher
            && let Ok(mut h) = h.lock()
        {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// The helper thread: raw bytes → (hash) → (inflate) → chunks. Returns the digest when the whole file
/// was read, `None` if the parser hung up early.
fn feeder(
    raw: impl Read + Send,
    gzip: bool,
    hash: bool,
    tx: SyncSender<io::Result<Vec<u8>>>,
    back: Receiver<Vec<u8>>,
) -> Option<[u8; 32]> {
    let hasher = hash.then(|| std::sync::Arc::new(std::sync::Mutex::new(Sha256::new())));
    let hashing = HashingReader {
        inner: raw,
        hasher: hasher.clone(),
    };
    let mut reader = if gzip {
        Decoded::Gzip(Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
            CHUNK, hashing,
        ))))
    } else {
        Decoded::Plain(hashing)
    };
    loop {
        let mut chunk = back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        chunk.resize(CHUNK, 0);
        // Fill the chunk; on an error, deliver what was read before it, then the error, so that a cut
        // gzip stream still yields every byte that decompressed.
        let (n, failure) = fill(&mut reader, &mut chunk);
        if n > 0 {
            chunk.truncate(n);
            if tx.send(Ok(chunk)).is_err() {
                return None;
            }
        }
        if let Some(e) = failure {
            // A cut gzip file can still be salvaged, and its sha256 is of the bytes as stored, not of
            // what inflated: hash the rest of the file (nothing, for a cut one) before the digest.
            let cut = e.kind() == io::ErrorKind::UnexpectedEof;
            let _ = tx.send(Err(e));
            if !cut {
                return None;
            }
            let mut raw = reader.into_raw();
            io::copy(&mut raw, &mut io::sink()).ok()?;
            drop(raw);
            return digest(hasher);
        }
        if n < CHUNK {
            break;
        }
    }
    drop(reader);
    digest(hasher)
}

/// The digest, once every other handle on the hasher is dropped.
pub(crate) fn digest(hasher: Option<std::sync::Arc<std::sync::Mutex<Sha256>>>) -> Option<[u8; 32]> {
    let h = std::sync::Arc::try_unwrap(hasher?)
        .ok()?
        .into_inner()
        .ok()?;
    Some(h.finalize().into())
}

/// The feeder's reader: the raw bytes as they are, or inflated; either way the raw bytes stay
/// reachable, to be hashed to the end after a decoder error.
pub(crate) enum Decoded<R: Read> {
    Plain(R),
    Gzip(Box<MultiGzDecoder<io::BufReader<R>>>),
}

impl<R: Read> Decoded<R> {
    pub(crate) fn into_raw(self) -> R {
        match self {
            Decoded::Plain(r) => r,
            Decoded::Gzip(d) => d.into_inner().into_inner(),
        }
    }
}

impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoded::Plain(r) => r.read(buf),
            Decoded::Gzip(d) => d.read(buf),
        }
    }
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

/// Lowercase hex of a digest.
pub fn hex(d: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Reads into `buf` until it is full or the input ends: the bytes read, and the error that stopped it
/// early if one did (the bytes before an error still count: a cut gzip stream yields what inflated).
pub(crate) fn fill(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}
