//! Skipping the values the model does not keep: one value of any kind, validated as it is passed
//! (strings for their end and escapes only), with no allocation. A flat object (a Python function's
//! `args`) and a shallow array (`record_shapes`'s inputs) by one loop each, anything else by a byte
//! skipper with an explicit stack, which also answers wherever the loops give up
//! (`docs/parse-costs.md`, "Skipping what the model does not keep").
//!
//! What it is not: reading values (the rest of [`super::Cursor`]).

use super::{Cursor, Scan, Stop, bad, show_byte};
use crate::structural::find_quote_or_backslash_16;

/// Nesting deeper than this is rejected rather than followed: no real trace comes near it, and a bound
/// keeps a hostile file from costing unbounded work per byte.
const MAX_DEPTH: usize = 256;

impl<'a> Cursor<'a> {
    /// Skips one value of any kind, validating its grammar (strings are checked for termination and
    /// escapes only). Returns the index where the value started.
    pub(crate) fn skip_value(&mut self) -> Scan<usize> {
        let start = self.ws_peek()?;
        let begin = self.pos;
        match start {
            b'"' => {
                self.skip_string()?;
            }
            b'{' => match self.flat_object_end() {
                Some(end) => self.pos = end,
                None => self.skip_container()?,
            },
            b'[' => match self.shallow_array_end() {
                Some(end) => self.pos = end,
                None => self.skip_container()?,
            },
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
    pub(super) fn skip_string(&mut self) -> Scan<()> {
        // pos is at the opening quote.
        let mut i = self.pos + 1;
        loop {
            i += find_quote_or_backslash_16(&self.buf[i..]).ok_or(Stop::NeedMore)?;
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

    /// The end of the object at the cursor (the index past its `}`) when every value in it is a
    /// number, a literal or a string, and no string has a backslash: a Python function's `args`
    /// (`{"Python parent id": 1, "Python id": 2, "Ev Idx": 3}`), most of a `with_stack` trace's
    /// skipped text. One loop with no stack, where [`Cursor::skip_container`] pays a call and its
    /// checks per key. The same grammar, the same number and literal rules; `None` for anything
    /// else (a nested value, a backslash, a fault, the window's end), which that then reads from
    /// the object's start, so its errors and ends are the answer wherever this one gives none.
    #[inline]
    pub(super) fn flat_object_end(&self) -> Option<usize> {
        let buf = self.buf;
        list_end(buf, self.pos, b'}', |i| {
            if buf[i] != b'"' {
                return None;
            }
            let colon = skip_ws(buf, plain_string_end(buf, i)?)?;
            if buf[colon] != b':' {
                return None;
            }
            scalar_end(buf, skip_ws(buf, colon + 1)?)
        })
    }

    /// The end of the array at the cursor (the index past its `]`) when every element is a number,
    /// a literal, a string without a backslash, or an array of those: `record_shapes`'s `Input
    /// type` (`["long", "long", "Scalar"]`), `Input Dims` and `Input Strides` (`[[8192], [], []]`),
    /// `Concrete Inputs`. As [`Cursor::flat_object_end`]: `None` for anything else, which
    /// [`Cursor::skip_container`] then reads from the array's start.
    #[inline]
    pub(super) fn shallow_array_end(&self) -> Option<usize> {
        let buf = self.buf;
        list_end(buf, self.pos, b']', |i| {
            if buf[i] == b'[' {
                list_end(buf, i, b']', |j| scalar_end(buf, j))
            } else {
                scalar_end(buf, i)
            }
        })
    }

    /// Skips an object or array with an explicit stack, checking that every value, comma, colon and
    /// bracket is where JSON puts it.
    pub(super) fn skip_container(&mut self) -> Scan<()> {
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

/// Where `read`, run by a cursor at `i`, leaves it: the fast paths read tokens with the cursor's own
/// functions, so their rules are those of the byte skipper; `None` for a fault or at the end of `buf`.
#[inline(always)]
fn end_of<'a, T>(
    buf: &'a [u8],
    i: usize,
    read: impl FnOnce(&mut Cursor<'a>) -> Scan<T>,
) -> Option<usize> {
    let mut c = Cursor::new(buf, i);
    read(&mut c).ok()?;
    Some(c.pos)
}

/// The first byte from `i` on that is not JSON whitespace ([`Cursor::ws_peek`]).
#[inline(always)]
fn skip_ws(buf: &[u8], i: usize) -> Option<usize> {
    end_of(buf, i, Cursor::ws_peek)
}

/// The index past the object or array whose opening bracket is at `open` and whose closing one is
/// `close`: its elements (an object's are its key, colon and value) read by `element`, from the
/// element's first byte to the index past it, with whitespace, commas and the closer checked here as
/// [`Cursor::skip_container`] checks them. `None` when `element` gives none, for any other byte where
/// a comma or the closer goes, or at the end of `buf`.
#[inline(always)]
fn list_end(
    buf: &[u8],
    open: usize,
    close: u8,
    element: impl Fn(usize) -> Option<usize>,
) -> Option<usize> {
    let mut i = skip_ws(buf, open + 1)?;
    if buf[i] == close {
        return Some(i + 1);
    }
    loop {
        i = skip_ws(buf, element(i)?)?;
        match buf[i] {
            b',' => i = skip_ws(buf, i + 1)?,
            b if b == close => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The index past the number, literal or string without a backslash at `i`, read as
/// [`Cursor::token`] (a short plain integer in one word, any other number by [`Cursor::number`]),
/// [`Cursor::literal`] and [`Cursor::skip_string`] read them; `None` for anything else, a fault, or
/// the end of `buf`.
#[inline(always)]
fn scalar_end(buf: &[u8], i: usize) -> Option<usize> {
    match buf[i] {
        b'"' => plain_string_end(buf, i),
        b'n' => end_of(buf, i, |c| c.literal(b"null")),
        b't' => end_of(buf, i, |c| c.literal(b"true")),
        b'f' => end_of(buf, i, |c| c.literal(b"false")),
        b'-' | b'0'..=b'9' => number_end(buf, i),
        _ => None,
    }
}

/// The index past the string whose opening quote is at `i`, when it has no backslash (its end is
/// then its first quote); `None` otherwise or at the end of `buf`.
#[inline(always)]
fn plain_string_end(buf: &[u8], i: usize) -> Option<usize> {
    let q = i + 1 + find_quote_or_backslash_16(buf.get(i + 1..)?)?;
    (buf[q] == b'"').then_some(q + 1)
}

/// The index past the number at `i`: a short plain integer in one word ([`super::short_int_end`], as
/// [`Cursor::token`] reads it), any other by [`Cursor::number`]. Not by `token` itself, whose fallback
/// to [`Cursor::skip_value`] would make these loops recursive and keep them from being inlined (371.1 M
/// instructions on the vLLM trace of `docs/parse-costs.md` against 351.7 M, callgrind); `None` for a
/// fault or at the end of `buf`.
#[inline(always)]
fn number_end(buf: &[u8], i: usize) -> Option<usize> {
    if let Some(end) = super::short_int_end(buf, i) {
        return Some(end);
    }
    let mut c = Cursor::new(buf, i);
    c.number().ok()?;
    Some(c.pos)
}
