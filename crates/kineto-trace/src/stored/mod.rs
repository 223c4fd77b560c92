//! A trace's bytes as stored, handled once for every reader: gzip told by its magic bytes (never by the
//! file's name) and inflated, the sha256 of the stored bytes (the compressed ones for gzip, hashed to the
//! end of what is stored even when the gzip stream is cut), and where a stream stops early.
//!
//! - this file: the primitives ([`split_magic`], [`HashingReader`], [`Content`], [`fill`], [`hex`]);
//! - [`feed`]: the stored stream handed to the Kineto parser in chunks, from a helper thread
//!   ([`Feed::Threaded`]) or inline;
//! - [`whole`]: a stored file read whole, for the vendor readers (the content in memory, an SQLite
//!   database as a file);
//! - [`streamed`]: a stored file's content read as a stream by a vendor reader that keeps only its
//!   model (rocprofv3 JSON, a rocprofv3 CSV set's files).
//!
//! **A gzip file read whole is bounded** ([`inflate_limit`]): its content may be at most
//! [`INFLATE_RATIO`] times its stored size, and always [`INFLATE_FLOOR`] bytes, so that a small file
//! that inflates without end (deflate reaches ~1000:1) is refused naming the file instead of filling
//! the memory or the temporary directory. Real traces inflate 5–30× (the corpus's most: 29×). The
//! Kineto parser's stream ([`feed`]) is not capped: it holds the events it parsed, not the text.
//!
//! What it is not: anything that looks at the content (JSON, CSV or SQLite): which format a file is, is
//! `read/detect.rs`'s; what a cut means for the trace (an error or a salvage) is its reader's.

pub(crate) mod feed;
pub(crate) mod streamed;
pub(crate) mod whole;

pub use feed::Feed;

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Buffer of the inflater's input.
const INFLATE_BUFFER: usize = 1 << 20;

/// The most times its stored size a gzip file read whole may inflate to (see the module's text).
pub(crate) const INFLATE_RATIO: u64 = 100;

/// Content a gzip file read whole may always inflate to, however small it is stored.
pub(crate) const INFLATE_FLOOR: u64 = 256 << 20;

/// The most content a gzip stream of `stored` bytes may inflate to.
pub(crate) fn inflate_limit(stored: u64) -> u64 {
    INFLATE_FLOOR.max(stored.saturating_mul(INFLATE_RATIO))
}

/// A reader that counts the bytes it passes on, into a count another reader watches.
pub(crate) struct Counted<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// The error a [`Capped`] inflater stops with: the limit passed.
#[derive(Debug)]
pub(crate) struct OverInflateLimit {
    /// The limit passed, in bytes of content.
    pub(crate) limit: u64,
    /// Stored bytes it was reckoned from.
    pub(crate) stored: u64,
}

impl std::fmt::Display for OverInflateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the gzip content passes {} bytes, the most {} stored bytes may inflate to ({INFLATE_RATIO}× \
             the stored size, at least {INFLATE_FLOOR}); refused as a likely decompression bomb (if it is \
             a real trace, gunzip it and read the plain file)",
            self.limit, self.stored
        )
    }
}

impl std::error::Error for OverInflateLimit {}

/// The [`OverInflateLimit`] inside an I/O error, if that is what stopped a [`Capped`] inflater.
pub(crate) fn over_inflate_limit(e: &io::Error) -> Option<&OverInflateLimit> {
    e.get_ref()?.downcast_ref::<OverInflateLimit>()
}

/// A gzip stream inflated, stopped with [`OverInflateLimit`] once its content passes
/// [`inflate_limit`] of the stored bytes: those the stream holds when `stored_len` is known, else those
/// read so far (which only grows the limit as the stream is read).
pub(crate) struct Capped<R: Read> {
    inflater: MultiGzDecoder<Counted<R>>,
    stored_read: Rc<Cell<u64>>,
    stored_len: u64,
    content: u64,
}

impl<R: Read> Capped<R> {
    pub(crate) fn new(raw: R, stored_len: Option<u64>) -> Capped<R> {
        let stored_read = Rc::new(Cell::new(0));
        let counted = Counted {
            inner: raw,
            count: stored_read.clone(),
        };
        Capped {
            inflater: MultiGzDecoder::new(counted),
            stored_read,
            stored_len: stored_len.unwrap_or(0),
            content: 0,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inflater.read(buf)?;
        self.content += n as u64;
        let stored = self.stored_len.max(self.stored_read.get());
        let limit = inflate_limit(stored);
        if self.content > limit {
            return Err(io::Error::other(OverInflateLimit { limit, stored }));
        }
        Ok(n)
    }
}

/// True when `stored` begins as gzip does.
pub(crate) fn is_gzip(stored: &[u8]) -> bool {
    stored.starts_with(&GZIP_MAGIC)
}

/// A stream whose first bytes were read, with them put back in front.
pub(crate) type Rejoined<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

/// Reads the first two bytes of `raw`: whether it is gzip, and the whole stream again.
pub(crate) fn split_magic<R: Read>(mut raw: R) -> io::Result<(bool, Rejoined<R>)> {
    let mut magic = [0u8; 2];
    let n = read_full(&mut raw, &mut magic)?;
    let gzip = n == 2 && magic == GZIP_MAGIC;
    Ok((gzip, io::Cursor::new(magic[..n].to_vec()).chain(raw)))
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    match fill(r, buf) {
        (n, None) => Ok(n),
        (_, Some(e)) => Err(e),
    }
}

/// A sha256 shared between the reader that feeds it and whoever takes the digest at the end.
pub(crate) type Hasher = Arc<Mutex<Sha256>>;

/// A new hasher when `hash` asks for one.
pub(crate) fn hasher(hash: bool) -> Option<Hasher> {
    hash.then(|| Arc::new(Mutex::new(Sha256::new())))
}

/// A reader that hashes the bytes it passes on.
pub(crate) struct HashingReader<R> {
    pub(crate) inner: R,
    pub(crate) hasher: Option<Hasher>,
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

/// The digest, once every other handle on the hasher is dropped.
pub(crate) fn digest(hasher: Option<Hasher>) -> Option<[u8; 32]> {
    let h = Arc::try_unwrap(hasher?).ok()?.into_inner().ok()?;
    Some(h.finalize().into())
}

/// The content of a stored stream (inflated when gzip) as it is read, the stored bytes hashed on the
/// way; after a decoder error the stored bytes stay reachable, to be hashed to the end.
pub(crate) struct Content<R: Read> {
    decoded: Decoded<HashingReader<R>>,
    hasher: Option<Hasher>,
}

impl<R: Read> Content<R> {
    /// `raw` from its first byte; `gzip` as [`split_magic`] told.
    pub(crate) fn new(raw: R, gzip: bool, hash: bool) -> Content<R> {
        let hasher = hasher(hash);
        let hashing = HashingReader {
            inner: raw,
            hasher: hasher.clone(),
        };
        let decoded = if gzip {
            Decoded::Gzip(Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
                INFLATE_BUFFER,
                hashing,
            ))))
        } else {
            Decoded::Plain(hashing)
        };
        Content { decoded, hasher }
    }

    /// Another handle on the hasher, for a digest taken once this reader is dropped.
    pub(crate) fn hasher(&self) -> Option<Hasher> {
        self.hasher.clone()
    }

    /// The digest of what was read (all of it, once the content was read to its end).
    pub(crate) fn digest(self) -> Option<[u8; 32]> {
        drop(self.decoded);
        digest(self.hasher)
    }

    /// After the inflater stopped early (a cut gzip stream): the rest of the stored bytes hashed (nothing
    /// more, for a cut one), so that the digest is of the bytes as stored, not of what inflated.
    pub(crate) fn digest_to_end(self) -> io::Result<Option<[u8; 32]>> {
        let mut raw = match self.decoded {
            Decoded::Plain(r) => r,
            Decoded::Gzip(d) => d.into_inner().into_inner(),
        };
        io::copy(&mut raw, &mut io::sink())?;
        drop(raw);
        Ok(digest(self.hasher))
    }
}

impl<R: Read> Read for Content<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.decoded.read(buf)
    }
}

/// The stored bytes as they are, or inflated.
enum Decoded<R: Read> {
    Plain(R),
    Gzip(Box<MultiGzDecoder<io::BufReader<R>>>),
}

impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoded::Plain(r) => r.read(buf),
            Decoded::Gzip(d) => d.read(buf),
        }
    }
}

/// Whether an error of the inflater means the gzip stream was cut (it ended early) rather than corrupt.
pub(crate) fn is_cut(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::UnexpectedEof
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

/// Lowercase hex of a digest.
pub fn hex(d: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `content` as one gzip member (the tests of the whole and the streamed reads).
    pub(crate) fn gzip(content: &[u8]) -> Vec<u8> {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(content).unwrap_or_default();
        e.finish().unwrap_or_default()
    }

    /// The sha256 of stored bytes, as hex.
    pub(crate) fn sha256_hex(stored: &[u8]) -> String {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(stored))
    }

    #[test]
    fn the_magic_is_told_and_put_back() {
        for (stored, gzip) in [
            (&b"\x1f\x8b\x08rest"[..], true),
            (b"{\"a\":1}", false),
            (b"\x1f", false),
            (b"", false),
        ] {
            let (is, mut again) = split_magic(stored).unwrap_or_else(|e| panic!("{e}"));
            let mut all = Vec::new();
            again.read_to_end(&mut all).unwrap_or_default();
            assert_eq!((is, all.as_slice()), (gzip, stored));
        }
    }
}
