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

/// Index of the first `"` or `\\` in `s`. Eight bytes at a time for the first 64 (most strings in a
/// trace are keys and short names, where memchr's setup cost dominates), memchr beyond.
#[inline(always)]
pub(crate) fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
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
        let mut i = start;
        while i < buf.len() && buf[i].is_ascii_digit() {
            i += 1;
        }
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
                            self.key()?;
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
                            self.key()?;
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
    fn key(&mut self) -> Scan<()> {
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

    #[test]
    fn integers_parse_exactly_or_not_at_all() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"1.5"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
    }
}
