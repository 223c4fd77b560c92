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

use crate::structural::{find_quote_or_backslash_16, quote_or_backslash_16, whitespace_16};
use crate::words::{
    HIGH, KeyWords, POW10, bytes_eq, digits_value, first_bytes, leading_digits, pack_key,
    short_point_three, sixteen_point_three, word_at,
};

/// An object key as read: packed when it has at most 16 bytes (after decoding), else its text.
pub(crate) enum Key<'a> {
    Short(KeyWords),
    Long(Str<'a>),
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
        // Kineto's indentation (a newline and up to a dozen spaces) ends within sixteen bytes: found
        // here, inline, it costs a third of the call to `ws_run`.
        if let Some(ws) = whitespace_16(self.buf, self.pos) {
            let other = !ws & 0xFFFF;
            if other != 0 {
                self.pos += other.trailing_zeros() as usize;
                return Ok(self.buf[self.pos]);
            }
        }
        self.ws_run()
    }

    /// [`Cursor::ws_peek`] past a run of whitespace longer than one space (Kineto indents with a
    /// newline and spaces): sixteen bytes at a time, then eight, then byte by byte near the end of
    /// the window.
    #[inline]
    fn ws_run(&mut self) -> Scan<u8> {
        while let Some(ws) = whitespace_16(self.buf, self.pos) {
            let other = !ws & 0xFFFF;
            if other != 0 {
                self.pos += other.trailing_zeros() as usize;
                return Ok(self.buf[self.pos]);
            }
            self.pos += 16;
        }
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
        let buf = self.buf;
        match find_quote_or_backslash_16(&buf[body..]).map(|i| body + i) {
            None => Err(Stop::NeedMore),
            Some(i) if buf[i] == b'"' => {
                self.pos = i + 1;
                Ok(Cow::Borrowed(&buf[body..i]))
            }
            Some(i) => {
                let mut out = buf[body..i].to_vec();
                self.pos = i;
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
            && let Some(found) = quote_or_backslash_16(self.buf, at + 1)
        {
            let k = found.trailing_zeros() as usize;
            if k < 16 && self.buf[at + 1 + k] == b'"' {
                self.pos = at + k + 2;
                return Ok(Key::Short(if k < 8 {
                    (k, first_bytes(w0, k), 0)
                } else {
                    (k, w0, first_bytes(w1, k - 8))
                }));
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
                    let end = self.pos
                        + find_quote_or_backslash_16(&self.buf[self.pos..])
                            .ok_or(Stop::NeedMore)?;
                    out.extend_from_slice(&self.buf[self.pos..end]);
                    self.pos = end;
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
        // Kineto's `dur` and `ts`, the most frequent forms, checked whole first.
        if let Some((int, decimals, len)) = short_point_three(w0) {
            self.pos = start + len;
            return Ok(Some((int * 1000 + decimals) as i64));
        }
        if let Some((int, decimals)) = sixteen_point_three(w0, word(start + 8), word(start + 16)) {
            self.pos = start + 20;
            // Below 10^16 µs; 10^19 ns would not fit an i64.
            return Ok((int as i64)
                .checked_mul(1000)
                .and_then(|x| x.checked_add(decimals as i64)));
        }
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

    /// Skips a number and returns its text (a short plain integer in one word, [`short_int_end`]; any
    /// other by [`Cursor::number`]); anything else goes through [`Cursor::skip_value`].
    #[inline(always)]
    pub(crate) fn token(&mut self) -> Scan<&'a [u8]> {
        let start = self.pos;
        let buf = self.buf;
        if let Some(end) = short_int_end(buf, start) {
            self.pos = end;
            return Ok(&buf[start..end]);
        }
        match buf.get(start) {
            None => Err(Stop::NeedMore),
            Some(b) if b.is_ascii_digit() || *b == b'-' => self.number(),
            Some(_) => {
                let s = self.skip_value()?;
                Ok(&buf[s..self.pos])
            }
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

mod skip;

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;

/// The index past the short plain integer at `start`, read in one word (pids, tids, ids, a skipped
/// value's small numbers): 1 to 7 digits, no leading zero, then a byte that continues no number;
/// `None` for anything else (a longer, signed or fractional number, or too near the end of `buf` for a
/// word), which [`Cursor::number`] reads.
#[inline(always)]
pub(crate) fn short_int_end(buf: &[u8], start: usize) -> Option<usize> {
    let k = leading_digits(word_at(buf, start)?);
    let plain = k > 0
        && k < 8
        && !matches!(buf[start + k], b'.' | b'e' | b'E')
        && (k == 1 || buf[start] != b'0');
    plain.then_some(start + k)
}
