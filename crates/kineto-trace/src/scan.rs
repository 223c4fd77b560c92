//! A byte-level JSON scanner over a window of the input.
//!
//! Why not serde_json: its streaming visitor tops out near 600 MB/s from a slice and halves that from a
//! reader (see `docs/parse-costs.md`). Kineto events are small, flat objects with a handful of
//! keys we want; everything else is skipped with a validating skipper that never allocates. The scanner
//! works on a window (`&[u8]`) that may end mid-value: running off its end yields [`Stop::NeedMore`],
//! and the caller refills the window and re-parses the event from its start. One event is re-parsed per
//! refill, so the cost of that design is negligible against a window of a few MiB.

use std::borrow::Cow;

/// Why a scan stopped short of a value.
///
/// Kept to one pointer and a tag: every byte read returns a `Scan<_>`, and a wide error type made the
/// hot path measurably slower.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    /// The window ended inside the value: refill and retry (or, at end of input, the file is truncated).
    NeedMore,
    /// The bytes are not what JSON (or a Kineto trace) allows here.
    Bad(Box<Fault>),
}

/// A fault found while scanning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    /// Index into the window.
    pub(crate) at: usize,
    /// What was expected and found.
    pub(crate) msg: Cow<'static, str>,
    /// True when the JSON is fine but the event is not a usable trace event (no `ts`, negative `dur`).
    pub(crate) event: bool,
}

pub(crate) type Scan<T> = Result<T, Stop>;

#[cold]
pub(crate) fn bad<T>(at: usize, msg: impl Into<Cow<'static, str>>) -> Scan<T> {
    Err(Stop::Bad(Box::new(Fault {
        at,
        msg: msg.into(),
        event: false,
    })))
}

#[cold]
pub(crate) fn event_bad<T>(at: usize, msg: impl Into<Cow<'static, str>>) -> Scan<T> {
    Err(Stop::Bad(Box::new(Fault {
        at,
        msg: msg.into(),
        event: true,
    })))
}

/// Nesting deeper than this is rejected rather than followed: no real trace comes near it, and a bound
/// keeps a hostile file from costing unbounded work per byte.
const MAX_DEPTH: usize = 256;

// Word-at-a-time (SWAR) helpers: eight bytes of the window as one little-endian `u64`, the byte at
// the lowest index in the lowest bits. Every mask below is exact per byte (no carry or borrow runs
// from one byte into the next), so the lowest flagged byte — all the callers use — is the right one.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The eight bytes at `i`, or `None` when fewer than eight remain.
#[inline(always)]
fn word_at(buf: &[u8], i: usize) -> Option<u64> {
    let b: [u8; 8] = buf.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The high bit of every byte of `x` that is zero.
#[inline(always)]
const fn zero_bytes(x: u64) -> u64 {
    // (b & 0x7F) + 0x7F sets the high bit for any b with a low bit set, `| x` for b ≥ 0x80; the sum
    // never exceeds 0xFE, so nothing carries into the next byte.
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The high bit of every byte of `w` equal to `c`.
#[inline(always)]
const fn bytes_eq(w: u64, c: u8) -> u64 {
    zero_bytes(w ^ (ONES * c as u64))
}

/// The high bit of every byte of `w` that is not an ASCII digit.
#[inline(always)]
const fn non_digits(w: u64) -> u64 {
    // b ≥ '0' ⇔ high bit of ((b & 0x7F) + 0x50) | b;  b > '9' ⇔ high bit of ((b & 0x7F) + 0x46) | b.
    let ge0 = ((w & LOW7) + ONES * 0x50) | w;
    let gt9 = ((w & LOW7) + ONES * 0x46) | w;
    (!ge0 | gt9) & HIGH
}

/// How many of the word's bytes, from the first, are ASCII digits (0 to 8).
#[inline(always)]
const fn leading_digits(w: u64) -> usize {
    (non_digits(w).trailing_zeros() / 8) as usize
}

/// The decimal value of the first `k` bytes of `w` (1 ≤ `k` ≤ 8, all ASCII digits).
#[inline(always)]
const fn digits_value(w: u64, k: usize) -> u64 {
    // Shifting the k digits to the top leaves zero bytes below them: leading zeros of the number.
    let v = w << (8 * (8 - k));
    // Pairs, then quads, then the eight digits (the well-known three-multiply reduction).
    let v = ((v & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561)) >> 8;
    let v = ((v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601)) >> 16;
    ((v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001)) >> 32
}

const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The first `k` bytes of `w` (0 ≤ `k` < 8), the rest zeroed.
#[inline(always)]
const fn first_bytes(w: u64, k: usize) -> u64 {
    w & ((1u64 << (8 * k)) - 1)
}

/// An object key of at most 16 bytes as (length, bytes 0–7, bytes 8–15), zero-padded: compared as
/// three integers instead of as text.
pub(crate) type KeyWords = (usize, u64, u64);

/// `key` packed as [`KeyWords`], or `None` when it is longer than 16 bytes.
pub(crate) const fn pack_key(key: &[u8]) -> Option<KeyWords> {
    if key.len() > 16 {
        return None;
    }
    let mut w = [0u64; 2];
    let mut i = 0;
    while i < key.len() {
        w[i / 8] |= (key[i] as u64) << (8 * (i % 8));
        i += 1;
    }
    Some((key.len(), w[0], w[1]))
}

/// An object key as read: packed when it has at most 16 bytes (after decoding), else its text.
pub(crate) enum Key<'a> {
    Short(KeyWords),
    Long(Str<'a>),
}

/// Index of the first `"` or `\\` in `s`. Eight bytes at a time for the first 64 (most strings in a
/// trace are keys and short names, where memchr's setup cost dominates), memchr beyond.
#[inline(always)]
pub(crate) fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const QUOTE: u64 = ONES * b'"' as u64;
    const BACKSLASH: u64 = ONES * b'\\' as u64;
    let mut i = 0;
    let swar_end = s.len().min(64);
    while i + 8 <= swar_end {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let v = u64::from_le_bytes(w);
        let q = v ^ QUOTE;
        let b = v ^ BACKSLASH;
        // A zero byte in q or b marks a match; the lowest flagged byte is exact (borrows only
        // propagate upwards).
        let m = (q.wrapping_sub(ONES) & !q | b.wrapping_sub(ONES) & !b) & HIGH;
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if s.len() - i < 8 {
        return s[i..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .map(|p| p + i);
    }
    memchr::memchr2(b'"', b'\\', &s[i..]).map(|p| p + i)
}

/// A position in the window.
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

/// A JSON string as found: borrowed when it has no escapes, decoded otherwise.
pub(crate) type Str<'a> = Cow<'a, [u8]>;

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Cursor { buf, pos }
    }

    #[inline(always)]
    pub(crate) fn peek(&self) -> Scan<u8> {
        match self.buf.get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(Stop::NeedMore),
        }
    }

    /// Skips JSON whitespace and returns the next byte without consuming it.
    #[inline(always)]
    pub(crate) fn ws_peek(&mut self) -> Scan<u8> {
        // Kineto separates with exactly one space after ',' and ':' — test that case first.
        if let Some(&b) = self.buf.get(self.pos) {
            if b > b' ' {
                return Ok(b);
            }
            if b == b' '
                && let Some(&c) = self.buf.get(self.pos + 1)
                && c > b' '
            {
                self.pos += 1;
                return Ok(c);
            }
        }
        self.ws_run()
    }

    /// [`Cursor::ws_peek`] past a run of whitespace longer than one space (Kineto indents with a
    /// newline and spaces): eight bytes at a time, then byte by byte near the end of the window.
    #[inline]
    fn ws_run(&mut self) -> Scan<u8> {
        while let Some(w) = word_at(self.buf, self.pos) {
            let ws =
                bytes_eq(w, b' ') | bytes_eq(w, b'\n') | bytes_eq(w, b'\r') | bytes_eq(w, b'\t');
            let other = !ws & HIGH;
            if other != 0 {
                self.pos += (other.trailing_zeros() / 8) as usize;
                return Ok(self.buf[self.pos]);
            }
            self.pos += 8;
        }
        loop {
            let b = self.peek()?;
            match b {
                b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                _ => return Ok(b),
            }
        }
    }

    #[inline(always)]
    pub(crate) fn expect(&mut self, want: u8, what: &'static str) -> Scan<()> {
        if self.buf.get(self.pos) == Some(&want) {
            self.pos += 1;
            return Ok(());
        }
        let b = self.ws_peek()?;
        if b == want {
            self.pos += 1;
            Ok(())
        } else {
            bad(self.pos, format!("expected {what}, found {}", show_byte(b)))
        }
    }

    /// Reads a string starting at the opening quote. Raw control characters are accepted (Kineto has
    /// written them in kernel names); escapes are decoded, with lone surrogates replaced by U+FFFD.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Scan<Str<'a>> {
        let open = self.pos;
        if self.peek()? != b'"' {
            return bad(
                self.pos,
                format!("expected a string, found {}", show_byte(self.peek()?)),
            );
        }
        let body = open + 1;
        let rest = &self.buf[body..];
        match find_quote_or_backslash(rest) {
            None => Err(Stop::NeedMore),
            Some(i) if rest[i] == b'"' => {
                self.pos = body + i + 1;
                Ok(Cow::Borrowed(&rest[..i]))
            }
            Some(i) => {
                let mut out = rest[..i].to_vec();
                self.pos = body + i;
                self.decode_escapes(&mut out)?;
                Ok(Cow::Owned(out))
            }
        }
    }

    /// Reads an object key (the cursor at its opening quote), as [`Cursor::string`] reads it; a key of
    /// at most 16 bytes comes back packed. One without escapes whose closing quote lies within the
    /// window is packed straight from the window, without a scan.
    #[inline(always)]
    pub(crate) fn key(&mut self) -> Scan<Key<'a>> {
        let at = self.pos;
        if self.buf.get(at) == Some(&b'"')
            && let (Some(w0), Some(w1)) = (word_at(self.buf, at + 1), word_at(self.buf, at + 9))
        {
            let m0 = bytes_eq(w0, b'"') | bytes_eq(w0, b'\\');
            if m0 != 0 {
                let k = (m0.trailing_zeros() / 8) as usize;
                if self.buf[at + 1 + k] == b'"' {
                    self.pos = at + k + 2;
                    return Ok(Key::Short((k, first_bytes(w0, k), 0)));
                }
            } else {
                let m1 = bytes_eq(w1, b'"') | bytes_eq(w1, b'\\');
                if m1 != 0 {
                    let k = (m1.trailing_zeros() / 8) as usize;
                    if self.buf[at + 9 + k] == b'"' {
                        self.pos = at + k + 10;
                        return Ok(Key::Short((8 + k, w0, first_bytes(w1, k))));
                    }
                }
            }
        }
        let s = self.string()?;
        Ok(match pack_key(&s) {
            Some(p) => Key::Short(p),
            None => Key::Long(s),
        })
    }

    /// Continues a string at a backslash, appending decoded bytes to `out` up to the closing quote.
    fn decode_escapes(&mut self, out: &mut Vec<u8>) -> Scan<()> {
        loop {
            let b = self.peek()?;
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => {
                    let at = self.pos;
                    let e = *self.buf.get(at + 1).ok_or(Stop::NeedMore)?;
                    self.pos += 2;
                    let c = match e {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let cp = self.unicode_escape(at)?;
                            let mut tmp = [0u8; 4];
                            out.extend_from_slice(cp.encode_utf8(&mut tmp).as_bytes());
                            continue;
                        }
                        other => return bad(at, format!("invalid escape \\{}", show_byte(other))),
                    };
                    out.push(c);
                }
                _ => {
                    let rest = &self.buf[self.pos..];
                    let n = find_quote_or_backslash(rest).ok_or(Stop::NeedMore)?;
                    out.extend_from_slice(&rest[..n]);
                    self.pos += n;
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Scan<u32> {
        let digits = self.buf.get(at..at + 4).ok_or(Stop::NeedMore)?;
        let mut v = 0u32;
        for &d in digits {
            let x = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return bad(at, "invalid \\u escape"),
            };
            v = v * 16 + u32::from(x);
        }
        Ok(v)
    }

    /// Decodes `\uXXXX` (pos is past the `u`), joining surrogate pairs.
    fn unicode_escape(&mut self, at: usize) -> Scan<char> {
        let hi = self.hex4(self.pos)?;
        self.pos += 4;
        if (0xD800..0xDC00).contains(&hi) {
            if self.buf.get(self.pos..self.pos + 2).ok_or(Stop::NeedMore)? == b"\\u" {
                let lo = self.hex4(self.pos + 2)?;
                if (0xDC00..0xE000).contains(&lo) {
                    self.pos += 6;
                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return Ok(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                }
            }
            let _ = at;
            return Ok('\u{FFFD}');
        }
        Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }

    /// Reads a number token and returns its text; validates the JSON number grammar. `NaN`, `Infinity`
    /// and `-Infinity` (which Python's json writes) are rejected with a message naming them.
    #[inline(always)]
    pub(crate) fn number(&mut self) -> Scan<&'a [u8]> {
        let start = self.pos;
        let buf = self.buf;
        let n = buf.len();
        let digits_from = |mut i: usize| {
            while i < n && buf[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let mut i = start;
        if i < n && buf[i] == b'-' {
            i += 1;
        }
        let int_start = i;
        if i < n && buf[i] == b'0' {
            i += 1;
            if i < n && buf[i].is_ascii_digit() {
                return bad(start, "number with a leading zero");
            }
        } else {
            i = digits_from(i);
        }
        if i == n {
            return Err(Stop::NeedMore);
        }
        if i == int_start {
            return self.not_a_number(start);
        }
        if buf[i] == b'.' {
            let f = i + 1;
            i = digits_from(f);
            if i == n {
                return Err(Stop::NeedMore);
            }
            if i == f {
                return bad(start, "number with no digits after '.'");
            }
        }
        if buf[i] == b'e' || buf[i] == b'E' {
            i += 1;
            if i < n && (buf[i] == b'+' || buf[i] == b'-') {
                i += 1;
            }
            let e = i;
            i = digits_from(e);
            if i == n {
                return Err(Stop::NeedMore);
            }
            if i == e {
                return bad(start, "number with an empty exponent");
            }
        }
        self.pos = i;
        Ok(&buf[start..i])
    }

    /// Reads a number of microseconds as nanoseconds in one pass. Plain forms (`123`, `123.456`) are
    /// read directly; anything else (sign, exponent, more than three decimals, a fault) goes through
    /// [`Cursor::number`] and [`crate::time::us_to_ns`], which give the same value or the error.
    /// `Ok(None)`: a valid number out of range.
    #[inline(always)]
    pub(crate) fn micros_as_ns(&mut self) -> Scan<Option<i64>> {
        let start = self.pos;
        let buf = self.buf;
        let n = buf.len();
        if n - start >= 32 {
            return self.micros_words(start);
        }
        let mut i = start;
        let mut v: i64 = 0;
        while i < n {
            let d = buf[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if i - start == 18 {
                return self.micros_slow(start);
            }
            v = v * 10 + i64::from(d);
            i += 1;
        }
        if i == n {
            return Err(Stop::NeedMore);
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && buf[start] == b'0') {
            return self.micros_slow(start);
        }
        let mut frac: i64 = 0;
        if buf[i] == b'.' {
            i += 1;
            let f = i;
            while i < n {
                let d = buf[i].wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                if i - f == 3 {
                    return self.micros_slow(start);
                }
                frac = frac * 10 + i64::from(d);
                i += 1;
            }
            if i == n {
                return Err(Stop::NeedMore);
            }
            match i - f {
                0 => return self.micros_slow(start),
                1 => frac *= 100,
                2 => frac *= 10,
                _ => {}
            }
        }
        if buf[i] == b'e' || buf[i] == b'E' {
            return self.micros_slow(start);
        }
        self.pos = i;
        Ok(v.checked_mul(1000).and_then(|x| x.checked_add(frac)))
    }

    /// [`Cursor::micros_as_ns`] with 32 bytes or more left in the window: the digits eight at a
    /// time. Every form it reads fits in 31 bytes (18 digits, a point, 3 decimals, the byte after),
    /// so the window cannot end inside one; every other form goes the general way, as there.
    #[inline(always)]
    fn micros_words(&mut self, start: usize) -> Scan<Option<i64>> {
        let buf = self.buf;
        let word = |i: usize| word_at(buf, i).unwrap_or(u64::MAX);
        let w0 = word(start);
        let k0 = leading_digits(w0);
        let (digits, v) = if k0 < 8 {
            (k0, if k0 == 0 { 0 } else { digits_value(w0, k0) })
        } else {
            let w1 = word(start + 8);
            let k1 = leading_digits(w1);
            let high = digits_value(w0, 8);
            if k1 < 8 {
                let v = if k1 == 0 {
                    high
                } else {
                    high * POW10[k1] + digits_value(w1, k1)
                };
                (8 + k1, v)
            } else {
                let w2 = word(start + 16);
                let k2 = leading_digits(w2);
                if k2 > 2 {
                    return self.micros_slow(start);
                }
                let v = high * 100_000_000 + digits_value(w1, 8);
                let v = if k2 == 0 {
                    v
                } else {
                    v * POW10[k2] + digits_value(w2, k2)
                };
                (16 + k2, v)
            }
        };
        if digits == 0 || (digits > 1 && buf[start] == b'0') {
            return self.micros_slow(start);
        }
        // At most 18 digits: below 10^18, so it fits an i64.
        let v = v as i64;
        let mut i = start + digits;
        let mut frac: i64 = 0;
        if buf[i] == b'.' {
            let wf = word(i + 1);
            let kf = leading_digits(wf);
            if kf == 0 || kf > 3 {
                return self.micros_slow(start);
            }
            frac = digits_value(wf, kf) as i64 * [0, 100, 10, 1][kf];
            i += 1 + kf;
        }
        if buf[i] == b'e' || buf[i] == b'E' {
            return self.micros_slow(start);
        }
        self.pos = i;
        Ok(v.checked_mul(1000).and_then(|x| x.checked_add(frac)))
    }

    #[cold]
    fn micros_slow(&mut self, start: usize) -> Scan<Option<i64>> {
        self.pos = start;
        let tok = self.number()?;
        Ok(crate::time::us_to_ns(tok))
    }

    /// Skips a plain non-negative integer and returns its text; anything else goes through
    /// [`Cursor::skip_value`].
    #[inline(always)]
    pub(crate) fn token(&mut self) -> Scan<&'a [u8]> {
        let start = self.pos;
        let buf = self.buf;
        let i = match word_at(buf, start) {
            // Up to 7 digits and the byte after them in one word (pids, tids, ids).
            Some(w) if leading_digits(w) < 8 => start + leading_digits(w),
            _ => {
                let mut i = start;
                while i < buf.len() && buf[i].is_ascii_digit() {
                    i += 1;
                }
                i
            }
        };
        if i == buf.len() {
            return Err(Stop::NeedMore);
        }
        if i > start
            && !matches!(buf[i], b'.' | b'e' | b'E')
            && (i - start == 1 || buf[start] != b'0')
        {
            self.pos = i;
            return Ok(&buf[start..i]);
        }
        self.pos = start;
        if i > start || buf[start] == b'-' {
            self.number()
        } else {
            let s = self.skip_value()?;
            Ok(&buf[s..self.pos])
        }
    }

    /// Reads a non-negative integer in one pass; `Ok(None)` for a valid number that is not one
    /// (fraction, exponent, sign, above u64).
    #[inline(always)]
    pub(crate) fn uint(&mut self) -> Scan<Option<u64>> {
        let start = self.pos;
        let buf = self.buf;
        let n = buf.len();
        let (i, v) = match word_at(buf, start) {
            // Up to 7 digits and the byte after them in one word (ids, counts, dims).
            Some(w) if leading_digits(w) < 8 => {
                let k = leading_digits(w);
                (start + k, if k == 0 { 0 } else { digits_value(w, k) })
            }
            _ => {
                let mut i = start;
                let mut v: u64 = 0;
                while i < n {
                    let d = buf[i].wrapping_sub(b'0');
                    if d > 9 {
                        break;
                    }
                    v = v.wrapping_mul(10).wrapping_add(u64::from(d));
                    i += 1;
                }
                (i, v)
            }
        };
        if i == n {
            return Err(Stop::NeedMore);
        }
        let digits = i - start;
        if digits == 0
            || digits > 19
            || (digits > 1 && buf[start] == b'0')
            || matches!(buf[i], b'.' | b'e' | b'E')
        {
            self.pos = start;
            let tok = self.number()?;
            return Ok(parse_u64(tok));
        }
        self.pos = i;
        Ok(Some(v))
    }

    fn not_a_number<T>(&self, start: usize) -> Scan<T> {
        let rest = &self.buf[start..];
        for word in [&b"NaN"[..], b"Infinity", b"-Infinity"] {
            let n = word.len().min(rest.len());
            if rest[..n] == word[..n] {
                if n < word.len() {
                    return Err(Stop::NeedMore);
                }
                return bad(
                    start,
                    format!("{} is not a JSON number", String::from_utf8_lossy(word)),
                );
            }
        }
        match rest.first() {
            None => Err(Stop::NeedMore),
            Some(&b) => bad(start, format!("expected a value, found {}", show_byte(b))),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Scan<()> {
        let rest = &self.buf[self.pos..];
        let n = word.len().min(rest.len());
        if rest[..n] != word[..n] {
            return self.not_a_number(self.pos);
        }
        if n < word.len() {
            return Err(Stop::NeedMore);
        }
        self.pos += word.len();
        Ok(())
    }

    /// Skips one value of any kind, validating its grammar (strings are checked for termination and
    /// escapes only). Returns the index where the value started.
    pub(crate) fn skip_value(&mut self) -> Scan<usize> {
        let start = self.ws_peek()?;
        let begin = self.pos;
        match start {
            b'"' => {
                self.skip_string()?;
            }
            b'{' | b'[' => self.skip_container()?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => {
                self.number()?;
            }
        }
        Ok(begin)
    }

    #[inline(always)]
    fn skip_string(&mut self) -> Scan<()> {
        // pos is at the opening quote.
        let mut i = self.pos + 1;
        loop {
            let rest = &self.buf[i..];
            let n = find_quote_or_backslash(rest).ok_or(Stop::NeedMore)?;
            i += n;
            if self.buf[i] == b'"' {
                self.pos = i + 1;
                return Ok(());
            }
            let e = *self.buf.get(i + 1).ok_or(Stop::NeedMore)?;
            match e {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    self.hex4(i + 2)?;
                    i += 6;
                }
                other => return bad(i, format!("invalid escape \\{}", show_byte(other))),
            }
        }
    }

    /// Skips an object or array with an explicit stack, checking that every value, comma, colon and
    /// bracket is where JSON puts it.
    fn skip_container(&mut self) -> Scan<()> {
        // Each stack entry: true for an object, false for an array.
        let mut stack: [bool; MAX_DEPTH] = [false; MAX_DEPTH];
        let mut depth = 0usize;
        loop {
            // At the start of a value (or a closing bracket of an empty container).
            let b = self.ws_peek()?;
            match b {
                b'{' | b'[' => {
                    if depth == MAX_DEPTH {
                        return bad(self.pos, "nesting deeper than 256 levels");
                    }
                    stack[depth] = b == b'{';
                    depth += 1;
                    self.pos += 1;
                    let c = self.ws_peek()?;
                    if (c == b'}' && b == b'{') || (c == b']' && b == b'[') {
                        self.pos += 1;
                        depth -= 1;
                    } else {
                        if b == b'{' {
                            self.skip_key()?;
                        }
                        continue;
                    }
                }
                b'"' => self.skip_string()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => {
                    self.number()?;
                }
            }
            // After a value: a comma, or the end of one or more containers.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let c = self.ws_peek()?;
                let obj = stack[depth - 1];
                match c {
                    b',' => {
                        self.pos += 1;
                        if obj {
                            self.skip_key()?;
                        }
                        break;
                    }
                    b'}' if obj => {
                        self.pos += 1;
                        depth -= 1;
                    }
                    b']' if !obj => {
                        self.pos += 1;
                        depth -= 1;
                    }
                    _ => {
                        let want = if obj { "',' or '}'" } else { "',' or ']'" };
                        return bad(self.pos, format!("expected {want}, found {}", show_byte(c)));
                    }
                }
            }
        }
    }

    /// Skips an object key and its colon.
    fn skip_key(&mut self) -> Scan<()> {
        let b = self.ws_peek()?;
        if b != b'"' {
            return bad(
                self.pos,
                format!("expected a key string, found {}", show_byte(b)),
            );
        }
        self.skip_string()?;
        self.expect(b':', "':'")
    }
}

/// A byte for an error message.
pub(crate) fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Parses an unsigned decimal integer token exactly. `None` for a fraction, exponent, sign or overflow:
/// callers treat such a field as absent and count a warning, since ids never take those forms.
#[inline]
pub(crate) fn parse_u64(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in tok {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(v)
}

/// Parses a signed decimal integer token exactly (no fraction or exponent).
pub(crate) fn parse_i64(tok: &[u8]) -> Option<i64> {
    match tok.split_first() {
        Some((b'-', rest)) => {
            let v = parse_u64(rest)?;
            if v <= i64::MAX as u64 + 1 {
                Some((v as i128).wrapping_neg() as i64)
            } else {
                None
            }
        }
        _ => parse_u64(tok).and_then(|v| i64::try_from(v).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(s: &str) -> Scan<usize> {
        let mut c = Cursor::new(s.as_bytes(), 0);
        c.skip_value()?;
        Ok(c.pos)
    }

    #[test]
    fn skips_valid_values_to_their_end() {
        for (s, end) in [
            (r#"{"a": [1, 2.5e3, {"b": null}], "c": "x\"y"} tail"#, 43),
            ("[]x", 2),
            ("{ }x", 3),
            ("-0.5,", 4),
            ("true]", 4),
            (r#""\u00e9""#, 8),
        ] {
            assert_eq!(skip(s), Ok(end), "{s}");
        }
    }

    #[test]
    fn rejects_invalid_values() {
        for s in [
            r#"{"a" 1}"#,
            "[1 2]",
            "[1,]",
            "{,}",
            "01",
            "1.,",
            "1e,",
            "NaN",
            "-Infinity",
            "[tru]",
            r#""\x""#,
            "{\"a\":1]",
        ] {
            assert!(matches!(skip(s), Err(Stop::Bad(_))), "{s} -> {:?}", skip(s));
        }
    }

    #[test]
    fn asks_for_more_when_the_window_ends_inside_a_value() {
        for s in [
            r#"{"a": [1, 2"#,
            r#""abc"#,
            "12",
            "tr",
            "Na",
            r#"{"a":"\u00"#,
        ] {
            assert_eq!(skip(s), Err(Stop::NeedMore), "{s}");
        }
    }

    #[test]
    fn decodes_escapes_and_keeps_control_characters() {
        let mut c = Cursor::new(b"\"a\\n\\u00e9\\ud83d\\ude00\x01b\"", 0);
        let s = c.string().unwrap_or_default();
        assert_eq!(
            std::str::from_utf8(&s).ok(),
            Some("a\n\u{e9}\u{1F600}\u{1}b")
        );
    }

    #[test]
    fn finds_the_first_quote_or_backslash_at_every_position() {
        for len in 0..140 {
            for at in 0..len {
                for c in [b'"', b'\\'] {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    if at + 1 < len {
                        v[at + 1] = b'"';
                    }
                    assert_eq!(find_quote_or_backslash(&v), Some(at), "len {len} at {at}");
                }
            }
            // Bytes that differ from the targets by one bit or a borrow must not match.
            let v: Vec<u8> = (0..len)
                .map(|i| [b'#', b'!', b']', b'[', 0x00, 0xA2][i % 6])
                .collect();
            assert_eq!(find_quote_or_backslash(&v), None, "len {len}");
        }
    }

    #[test]
    fn rejects_nesting_past_the_bound() {
        let deep = "[".repeat(300) + &"]".repeat(300);
        assert!(matches!(skip(&deep), Err(Stop::Bad(_))));
        let ok = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(skip(&ok), Ok(400));
    }

    #[test]
    fn one_pass_numbers_agree_with_the_general_path() {
        let toks = [
            "0",
            "7",
            "63.813",
            "63.8",
            "63.81",
            "1712195495519695.812",
            "4.0005",
            "1e3",
            "-2.5",
            "1610366662254362",
            "12345678901234567890",
            "0.5",
            "99999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "3.",
            "01",
        ];
        for t in toks {
            let text = format!("{t},");
            let mut a = Cursor::new(text.as_bytes(), 0);
            let mut b = Cursor::new(text.as_bytes(), 0);
            let fast = a.micros_as_ns();
            let slow = b.number().map(crate::time::us_to_ns);
            assert_eq!(fast, slow, "micros {t}");
            let mut a = Cursor::new(text.as_bytes(), 0);
            let mut b = Cursor::new(text.as_bytes(), 0);
            assert_eq!(a.uint(), b.number().map(parse_u64), "uint {t}");
        }
    }

    /// Reference readers, byte by byte, for the word-at-a-time ones: the first non-whitespace byte,
    /// a key as `string` reads it, a number of µs via `number` and `us_to_ns`, an unsigned integer.
    fn ws_reference(buf: &[u8], pos: usize) -> Scan<(u8, usize)> {
        let mut i = pos;
        loop {
            match buf.get(i) {
                None => return Err(Stop::NeedMore),
                Some(b' ' | b'\n' | b'\r' | b'\t') => i += 1,
                Some(&b) => return Ok((b, i)),
            }
        }
    }

    fn key_reference(buf: &[u8]) -> Scan<(Option<KeyWords>, Vec<u8>, usize)> {
        let mut c = Cursor::new(buf, 0);
        let s = c.string()?;
        Ok((pack_key(&s), s.into_owned(), c.pos))
    }

    /// Every token, followed by each of a few bytes and then by nothing or by enough padding that the
    /// word-at-a-time paths run, reads as the general path reads it: value, end, or the same stop.
    #[test]
    fn word_at_a_time_readers_agree_with_byte_by_byte_ones() {
        let mut toks: Vec<String> = [
            "0",
            "7",
            "00",
            "01",
            "0.5",
            "63.813",
            "63.8",
            "63.81",
            "63.8130",
            "1.",
            "1e3",
            "1E3",
            "-2.5",
            "12345678",
            "123456789",
            "1234567890123456",
            "12345678901234567",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "99999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "1712195495519695.812",
            "1712195495519695.8125",
            "9223372036854775.807",
            "9223372036854775.808",
            "999999999999999999.999",
            "4.0005",
            "",
            "x",
            "\"1\"",
            "12.e5",
            "1.5e",
            "7.",
            "-",
            "NaN",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every length of digit run around the word boundaries, with and without decimals.
        for n in 1..=20 {
            let d: String = (0..n).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
            for f in ["", ".", ".1", ".12", ".123", ".1234"] {
                toks.push(format!("{d}{f}"));
            }
        }
        for t in &toks {
            for after in [",", "}", " ", "]", "e", "x", "\u{7f}", "\u{ff}"] {
                for pad in [0, 40] {
                    let text = format!("{t}{after}{}", " ".repeat(pad));
                    let b = text.as_bytes();
                    let mut fast = Cursor::new(b, 0);
                    let mut slow = Cursor::new(b, 0);
                    let got = fast.micros_as_ns().map(|v| (v, fast.pos));
                    let want = slow
                        .number()
                        .map(crate::time::us_to_ns)
                        .map(|v| (v, slow.pos));
                    // The general path ends where a valid number ends; on a fault only the stop matters.
                    match (&got, &want) {
                        (Ok(g), Ok(w)) => assert_eq!(g, w, "micros {text:?}"),
                        (Err(g), Err(w)) => assert_eq!(g, w, "micros {text:?}"),
                        _ => panic!("micros {text:?}: {got:?} vs {want:?}"),
                    }
                    let mut fast = Cursor::new(b, 0);
                    let mut slow = Cursor::new(b, 0);
                    let got = fast.uint().map(|v| (v, fast.pos));
                    let want = slow.number().map(parse_u64).map(|v| (v, slow.pos));
                    match (&got, &want) {
                        (Ok(g), Ok(w)) => assert_eq!(g, w, "uint {text:?}"),
                        (Err(g), Err(w)) => assert_eq!(g, w, "uint {text:?}"),
                        _ => panic!("uint {text:?}: {got:?} vs {want:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn whitespace_runs_and_keys_read_as_byte_by_byte() {
        let ws = [b' ', b'\n', b'\r', b'\t'];
        let others = [b'"', b'{', b',', b'a', 0x0b, 0x00, 0x21, 0x2a, 0xff, 0x80];
        for run in 0..20usize {
            for (j, &o) in others.iter().enumerate() {
                for pad in [0, 1, 9, 24] {
                    let mut v: Vec<u8> = (0..run).map(|i| ws[(i * 7 + j) % 4]).collect();
                    v.push(o);
                    v.extend(std::iter::repeat_n(b'z', pad));
                    let mut c = Cursor::new(&v, 0);
                    let got = c.ws_peek().map(|b| (b, c.pos));
                    assert_eq!(got, ws_reference(&v, 0), "{v:?}");
                }
                // Whitespace to the end of the window.
                let v: Vec<u8> = (0..run).map(|i| ws[(i + j) % 4]).collect();
                assert_eq!(Cursor::new(&v, 0).ws_peek(), Err(Stop::NeedMore), "{v:?}");
            }
        }
        // Keys of every length around the two words, plain, with an escape at each place, or cut.
        for len in 0..22usize {
            let body: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut bodies = vec![body.clone()];
            for at in 0..=len {
                for esc in [&b"\\\""[..], b"\\n", b"\\u0041"] {
                    let mut e = body.clone();
                    e.splice(at..at, esc.iter().copied());
                    bodies.push(e);
                }
            }
            for b in bodies {
                for pad in [0, 3, 20] {
                    let mut v = vec![b'"'];
                    v.extend_from_slice(&b);
                    v.push(b'"');
                    v.extend(std::iter::repeat_n(b':', pad));
                    let mut c = Cursor::new(&v, 0);
                    let got = c.key().map(|k| {
                        let pos = c.pos;
                        match k {
                            Key::Short(p) => (Some(p), pos),
                            Key::Long(s) => {
                                assert_eq!(pack_key(&s), None);
                                (None, pos)
                            }
                        }
                    });
                    let want = key_reference(&v).map(|(p, _, pos)| (p, pos));
                    assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&v));
                    // Cut before the closing quote: the window must be refilled.
                    let cut = &v[..b.len() + 1];
                    assert_eq!(Cursor::new(cut, 0).key().err(), Some(Stop::NeedMore));
                }
            }
        }
        assert_eq!(pack_key(b"ph"), Some((2, 0x6870, 0)));
        assert_eq!(pack_key(b"0123456789abcdef").map(|k| k.0), Some(16));
        assert_eq!(pack_key(b"registers per thread"), None);
    }

    #[test]
    fn integers_parse_exactly_or_not_at_all() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"1.5"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
    }
}
