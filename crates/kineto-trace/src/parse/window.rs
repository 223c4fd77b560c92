//! The input window: a buffer over the reader that keeps the value being read and refills behind it.
//!
//! An event is re-parsed from its start when the window ends inside it, so the window must hold one
//! whole top-level value; it grows (doubling) up to [`MAX_VALUE`] for the rare value larger than it.
//!
//! What it is not: a reader of the stored bytes (it reads content from a feed or the blocks). The
//! Chrome-array reader (`native::chrome`) reads its content through the same window, and so does the
//! protobuf wire reader (`native::protowire`, by [`Window::need`]).

use std::io::{self, Read};

/// What the window reads from: any reader, or one that can also skip ahead (the parallel parse's
/// blocks, [`super::blocks::BlockReader`], skip the bytes a range's parse already read).
pub(crate) trait Source: Read {
    /// Makes the next read start at stream offset `offset` (never before the last byte read).
    fn skip_to(&mut self, offset: u64);

    /// Whether a refill reads once rather than until the window is full: a source that skips reads
    /// little at a time, since most of what lies ahead will be skipped, not copied.
    fn read_once(&self) -> bool {
        false
    }
}

/// A borrowed source is a source: the window owns what it reads from, a borrowed one or its own
/// [`Plain`].
impl<S: Source + ?Sized> Source for &mut S {
    fn skip_to(&mut self, offset: u64) {
        (**self).skip_to(offset);
    }

    fn read_once(&self) -> bool {
        (**self).read_once()
    }
}

/// A plain reader as a [`Source`]; it never skips: the serial parse reads every byte.
pub(crate) struct Plain<'r>(pub(crate) &'r mut dyn Read);

impl Read for Plain<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Source for Plain<'_> {
    fn skip_to(&mut self, _offset: u64) {
        unreachable_skip();
    }
}

/// The serial parse never jumps; reaching this is a bug, reported without panicking in release.
#[cold]
fn unreachable_skip() {
    debug_assert!(false, "the serial parse never skips");
}

pub(super) const WINDOW: usize = 4 << 20;
/// A single top-level value (one event, or a metadata value) larger than this is refused: it would
/// mean holding an unbounded value in memory, and no real trace has one. The protobuf readers hold
/// no larger message (`native::protowire::MAX_HELD`).
pub(crate) const MAX_VALUE: usize = 1 << 30;

pub(crate) struct Window<'r> {
    /// Owned, so that a reader given only a `Read` can own its [`Plain`] with the window.
    r: Box<dyn Source + 'r>,
    pub(crate) buf: Vec<u8>,
    pub(crate) pos: usize,
    pub(crate) end: usize,
    /// Offset of `buf[0]` in the stream.
    pub(crate) base: u64,
    pub(super) eof: bool,
    /// The decoder said the stream ends early (a gzip member cut before its end, its 8-byte trailer
    /// included) after delivering bytes in the same refill: reported by the next refill, never
    /// forgotten, so a stream that stops before its trailer is never read as complete (its CRC was
    /// never checked).
    cut: Option<String>,
    /// A read error met after bytes arrived in the same refill: reported by the next refill, so every
    /// byte before the failure is parsed first (a syntax error there wins, wherever refills fall).
    failed: Option<io::Error>,
    /// The most the window may grow to ([`MAX_VALUE`]; smaller in tests).
    max: usize,
}

pub(crate) enum Refill {
    More,
    Eof,
    /// The decoder reported the stream ends mid-member: a cut gzip file.
    CutGzip(String),
}

impl<'r> Window<'r> {
    pub(crate) fn new(r: &'r mut dyn Source) -> Self {
        Self::with_sizes(r, WINDOW, MAX_VALUE)
    }

    /// A window of `initial` bytes over a plain reader, that may grow to [`MAX_VALUE`].
    pub(crate) fn over_reader(r: &'r mut dyn Read, initial: usize) -> Self {
        Self::build(Box::new(Plain(r)), initial, MAX_VALUE)
    }

    /// A window of `initial` bytes that may grow to `max`.
    pub(super) fn with_sizes(r: &'r mut dyn Source, initial: usize, max: usize) -> Self {
        Self::build(Box::new(r), initial, max)
    }

    fn build(r: Box<dyn Source + 'r>, initial: usize, max: usize) -> Self {
        Window {
            max,
            r,
            buf: vec![0; initial.max(1)],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            cut: None,
            failed: None,
        }
    }

    pub(crate) fn offset(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// Moves `pos` past the JSON whitespace (space, tab, CR, LF) at it.
    pub(super) fn skip_whitespace(&mut self) {
        let rest = &self.buf[self.pos..self.end];
        self.pos += rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
            .unwrap_or(rest.len());
    }

    /// Moves to stream offset `to` (at or after the window position): within the window, or past it,
    /// when the source skips the bytes between.
    pub(super) fn jump(&mut self, to: u64) {
        let end = self.base + self.end as u64;
        if to <= end {
            self.pos = (to - self.base) as usize;
        } else {
            self.pos = 0;
            self.end = 0;
            self.base = to;
            self.r.skip_to(to);
        }
    }

    /// Refills until `n` bytes are past `pos` or the data ends: the bytes there (fewer than `n` only
    /// at the end). The window grows only as far as `n` needs, doubling as data arrives, so a length
    /// the data never shows costs no memory. A stream cut short ([`Refill::CutGzip`]) is an error of
    /// kind `UnexpectedEof` in the decoder's words; an error is given only when the bytes read before
    /// it are fewer than `n`.
    pub(crate) fn need(&mut self, n: usize) -> io::Result<usize> {
        while self.end - self.pos < n {
            match self.refill_up_to(n)? {
                Refill::More => {}
                Refill::Eof => break,
                Refill::CutGzip(msg) => {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, msg));
                }
            }
        }
        Ok(self.end - self.pos)
    }

    /// Keeps `buf[pos..end]`, moves it to the front and reads more behind it.
    pub(crate) fn refill(&mut self) -> io::Result<Refill> {
        self.refill_up_to(self.max)
    }

    /// [`Self::refill`], the window grown (when full) to no more than `cap` bytes.
    fn refill_up_to(&mut self, cap: usize) -> io::Result<Refill> {
        if let Some(e) = self.failed.take() {
            self.eof = true;
            return Err(e);
        }
        if self.eof {
            return Ok(match self.cut.take() {
                Some(msg) => Refill::CutGzip(msg),
                None => Refill::Eof,
            });
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= self.max {
                return Err(io::Error::other(format!(
                    "a single value is larger than {}; refusing to hold it in memory",
                    size(self.max)
                )));
            }
            let len = (self.buf.len() * 2).min(cap).min(self.max);
            self.buf.resize(len, 0);
        }
        let mut got = 0;
        while self.end < self.buf.len() {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.end += n;
                    got += n;
                    if self.r.read_once() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.eof = true;
                    if got == 0 {
                        return Ok(Refill::CutGzip(e.to_string()));
                    }
                    self.cut = Some(e.to_string());
                    break;
                }
                Err(e) if got == 0 => return Err(e),
                Err(e) => {
                    self.failed = Some(e);
                    break;
                }
            }
        }
        Ok(if got > 0 { Refill::More } else { Refill::Eof })
    }
}

/// A size in the largest binary unit that divides it.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives its bytes `step` at a time, then the end of the data, or an error of `end`'s kind.
    struct Steps {
        data: Vec<u8>,
        at: usize,
        step: usize,
        end: Option<io::ErrorKind>,
    }

    impl Steps {
        fn new(len: usize, step: usize, end: Option<io::ErrorKind>) -> Steps {
            // Byte i is i mod 256, so a byte tells its offset.
            let data = (0..len).map(|i| (i % 256) as u8).collect();
            Steps {
                data,
                at: 0,
                step,
                end,
            }
        }
    }

    impl Read for Steps {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            if n == 0 {
                return match self.end {
                    Some(kind) => Err(io::Error::new(kind, "stops here")),
                    None => Ok(0),
                };
            }
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn need_grows_the_window_only_as_far_as_asked() {
        // 10,000 bytes, 100 a read, into a window of 1,024.
        let mut r = Steps::new(10_000, 100, None);
        let mut w = Window::over_reader(&mut r, 1024);
        // A refill fills the window: 1,024 bytes for 10 asked.
        assert_eq!(w.need(10).ok(), Some(1024));
        w.pos = 1000;
        // 5,000 from offset 1,000: the window doubles 1,024 → 2,048 → 4,096, then takes 5,000, not
        // 8,192.
        assert_eq!(w.need(5000).ok(), Some(5000));
        assert_eq!(w.buf.len(), 5000);
        assert_eq!(w.offset(w.pos), 1000);
        assert_eq!(w.buf[w.pos], (1000 % 256) as u8);
        // All used; 8,000 asked of the 10,000 − 6,000 = 4,000 left: what is there, in the same window.
        w.pos = w.end;
        assert_eq!(w.need(8000).ok(), Some(4000));
        assert_eq!(w.buf.len(), 5000);
        assert_eq!(w.buf[w.pos], (6000 % 256) as u8);
    }

    #[test]
    fn a_stream_that_stops_fails_a_need_the_bytes_before_cannot_meet() {
        for kind in [io::ErrorKind::UnexpectedEof, io::ErrorKind::InvalidData] {
            // 50 bytes, then the fault: 20 are there, 60 are not.
            let mut r = Steps::new(50, 100, Some(kind));
            let mut w = Window::over_reader(&mut r, 1024);
            assert_eq!(w.need(20).ok(), Some(50));
            w.pos = 40;
            let e = w.need(20).err();
            assert_eq!(e.as_ref().map(|e| e.kind()), Some(kind));
            assert_eq!(e.map(|e| e.to_string()).as_deref(), Some("stops here"));
        }
        // A fault before any byte: the first need fails.
        let mut r = Steps::new(0, 100, Some(io::ErrorKind::UnexpectedEof));
        let mut w = Window::over_reader(&mut r, 1024);
        assert!(w.need(1).is_err());
    }
}
