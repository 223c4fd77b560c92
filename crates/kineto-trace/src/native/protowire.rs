//! The protobuf wire format (protobuf.dev/programming-guides/encoding) read field by field from a
//! stream: the one walk of a top-level message too large to hold whole (a Perfetto `Trace`, an
//! XPlane `XSpace`), for the protobuf readers' crates. Each field comes with its absolute byte offset
//! in the stream; a length-delimited value is either held ([`FieldStream::body`], in the project's
//! input window, `parse::window`, grown only as far as the largest value held), skipped, or entered
//! (its fields then read in turn, up to its end), so that memory stays bounded by the largest message
//! a reader decodes, not the file.
//!
//! What it is not: a decoder of messages (`prost` decodes the values held), nor a judge of a schema
//! (the caller says which fields it expects, and words the faults), nor a buffer of its own (the
//! window refills, keeps the offsets and reports the stream's faults).

use crate::parse::window::{MAX_VALUE, Window};
use crate::read::detect::varint_at;
use std::io::{self, Read};

/// The window's first size: smaller than the Kineto parser's, since a protobuf reader holds one
/// packet or metadata entry at a time (and a Perfetto reader a second window for the packets
/// inflated from one), never a run of JSON events.
const WINDOW: usize = 1 << 18;

/// The largest value held whole: a message longer than this is refused (it would mean holding an
/// unbounded value; no real packet, event or metadata entry is near it). The window's own bound.
pub const MAX_HELD: u64 = MAX_VALUE as u64;

/// No enclosing message: fields run to the end of the stream.
pub const NO_LIMIT: u64 = u64::MAX;

/// A field's key and, for the fixed-size wire types, its value.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    /// Byte offset of the field (of its tag) in the stream.
    pub at: u64,
    /// The field number.
    pub number: u64,
    /// 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit.
    pub wire: u8,
    /// The varint (wire 0), the length of the value that follows (wire 2), or the fixed bytes as a
    /// little-endian number (wires 1 and 5).
    pub value: u64,
}

/// What is wrong at a field.
#[derive(Debug)]
pub enum Fault {
    /// The stream could not be read.
    Io(io::Error),
    /// The tag is cut or longer than 10 bytes.
    Tag,
    /// Field number 0.
    NumberZero,
    /// The value (a varint, fixed bytes, or a length) runs past the end of the data or of the
    /// enclosing message.
    Cut {
        /// The field number.
        number: u64,
    },
    /// The value's varint (a number or a length) is longer than 10 bytes: corrupt, not cut.
    Overlong {
        /// The field number.
        number: u64,
    },
    /// A wire type that is not 0, 1, 2 or 5 (groups, 6, 7).
    WireType {
        /// The field number.
        number: u64,
        /// The wire type.
        wire: u8,
    },
}

impl Fault {
    /// What is wrong, said of a field of the message `what` (`Trace`, `XPlane`, …) being walked: the
    /// protobuf readers' one wording of a wire fault.
    pub fn describe(&self, what: &str) -> String {
        match self {
            Fault::Io(e) => e.to_string(),
            Fault::Tag => "a field's tag is cut or longer than 10 bytes".into(),
            Fault::NumberZero => "field number 0".into(),
            Fault::Cut { number } => {
                format!("{what} field {number}: its value runs past the end of the data")
            }
            Fault::Overlong { number } => {
                format!("{what} field {number}: a varint longer than 10 bytes")
            }
            Fault::WireType { number, wire } => format!("{what} field {number}: wire type {wire}"),
        }
    }
}

/// Why a length-delimited value was not held or skipped.
#[derive(Debug)]
pub enum Short {
    /// The stream could not be read.
    Io(io::Error),
    /// It runs past the end of the enclosing message.
    Limit,
    /// It runs past the end of the data, which holds `there` bytes after its length.
    Data {
        /// Bytes of data after the value's length.
        there: u64,
    },
    /// It is longer than [`MAX_HELD`].
    TooLarge,
}

/// A stream read field by field.
pub struct FieldStream<'r> {
    w: Window<'r>,
}

impl<'r> FieldStream<'r> {
    /// Fields of `r`, from its first byte (offset 0).
    pub fn new(r: &'r mut dyn Read) -> FieldStream<'r> {
        FieldStream {
            w: Window::over_reader(r, WINDOW),
        }
    }

    /// Offset of the next byte in the stream.
    pub fn offset(&self) -> u64 {
        self.w.offset(self.w.pos)
    }

    /// The next field's header, its value read when it is not length-delimited; `None` at `limit`
    /// (the enclosing message's end, or [`NO_LIMIT`]) or at the end of the data (the caller compares
    /// [`Self::offset`] with the end it expects). A fault is given with its field's offset.
    pub fn header(&mut self, limit: u64) -> Result<Option<Header>, (u64, Fault)> {
        let at = self.offset();
        let fault = |f| (at, f);
        if at >= limit {
            return Ok(None);
        }
        // A key and a varint or fixed value take at most 20 bytes.
        let avail = self.w.need(20).map_err(|e| fault(Fault::Io(e)))?;
        if avail == 0 {
            return Ok(None);
        }
        // A field may not run past the enclosing message.
        let room = usize::try_from(limit - at).unwrap_or(usize::MAX).min(avail);
        let view = &self.w.buf[self.w.pos..self.w.pos + room];
        let (tag, next) = varint_at(view, 0).ok_or(fault(Fault::Tag))?;
        let (number, wire) = (tag >> 3, (tag & 7) as u8);
        if number == 0 {
            return Err(fault(Fault::NumberZero));
        }
        let cut = || fault(Fault::Cut { number });
        let (value, after) = match wire {
            // Ten bytes there and still no end: longer than any varint, not cut by the data's end.
            0 | 2 => varint_at(view, next).ok_or_else(|| match view.len() >= next + 10 {
                true => fault(Fault::Overlong { number }),
                false => cut(),
            })?,
            1 | 5 => {
                let width = if wire == 1 { 8 } else { 4 };
                let bytes = view.get(next..next + width).ok_or_else(cut)?;
                let mut le = [0u8; 8];
                le[..width].copy_from_slice(bytes);
                (u64::from_le_bytes(le), next + width)
            }
            _ => return Err(fault(Fault::WireType { number, wire })),
        };
        self.w.pos += after;
        Ok(Some(Header {
            at,
            number,
            wire,
            value,
        }))
    }

    /// The `len` bytes of the length-delimited value whose header was just read, held until the next
    /// read.
    pub fn body(&mut self, len: u64, limit: u64) -> Result<&[u8], Short> {
        self.room(len, limit)?;
        if len > MAX_HELD {
            // Whether the data holds it decides the fault, as for a value held.
            return Err(self.skip(len, limit).err().unwrap_or(Short::TooLarge));
        }
        let n = usize::try_from(len).map_err(|_| Short::TooLarge)?;
        let avail = self.w.need(n).map_err(Short::Io)?;
        if avail < n {
            return Err(self.short_of_data(avail));
        }
        let start = self.w.pos;
        self.w.pos += n;
        Ok(&self.w.buf[start..start + n])
    }

    /// Passes over the `len` bytes of the value whose header was just read, holding none of them.
    pub fn skip(&mut self, len: u64, limit: u64) -> Result<(), Short> {
        self.room(len, limit)?;
        let mut left = len;
        loop {
            let step = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(self.w.end - self.w.pos);
            self.w.pos += step;
            left -= step as u64;
            if left == 0 {
                return Ok(());
            }
            if self.w.need(1).map_err(Short::Io)? == 0 {
                return Err(Short::Data { there: len - left });
            }
        }
    }

    /// Whether a value of `len` bytes from here fits in the enclosing message (with none, one that
    /// could not fit in any stream is past the data).
    fn room(&mut self, len: u64, limit: u64) -> Result<(), Short> {
        if len <= limit.saturating_sub(self.offset()) {
            return Ok(());
        }
        if limit != NO_LIMIT {
            return Err(Short::Limit);
        }
        let avail = self.w.end - self.w.pos;
        Err(self.short_of_data(avail))
    }

    /// A value longer than the data: how many bytes the data holds after its length, all read (none
    /// held beyond the window).
    fn short_of_data(&mut self, avail: usize) -> Short {
        let mut there = avail as u64;
        self.w.pos = self.w.end;
        loop {
            match self.w.need(1) {
                Ok(0) => return Short::Data { there },
                Ok(n) => {
                    there += n as u64;
                    self.w.pos = self.w.end;
                }
                Err(e) => return Short::Io(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that gives one byte per read, so that every value crosses a refill.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(out)) => {
                    *out = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn fields_come_with_their_offsets_and_values() {
        // Field 1 varint 300 (0x08 0xAC 0x02), field 2 bytes "ab" (0x12 0x02 a b), field 3 fixed32
        // 7 (0x1D 07 00 00 00): offsets 0, 3, 7.
        let data = b"\x08\xAC\x02\x12\x02ab\x1D\x07\x00\x00\x00";
        let mut t = Trickle(data);
        let mut s = FieldStream::new(&mut t);
        let h = s.header(NO_LIMIT).ok().flatten();
        assert_eq!(
            h.map(|h| (h.at, h.number, h.wire, h.value)),
            Some((0, 1, 0, 300))
        );
        let h = s.header(NO_LIMIT).ok().flatten();
        assert_eq!(h.map(|h| (h.at, h.number, h.value)), Some((3, 2, 2)));
        assert_eq!(s.body(2, NO_LIMIT).ok(), Some(&b"ab"[..]));
        let h = s.header(NO_LIMIT).ok().flatten();
        assert_eq!(h.map(|h| (h.at, h.number, h.value)), Some((7, 3, 7)));
        assert!(matches!(s.header(NO_LIMIT), Ok(None)));
        assert_eq!(s.offset(), 12);
    }

    #[test]
    fn a_value_past_the_data_says_how_much_is_there() {
        // Field 1, length 5, 2 bytes there.
        let data = b"\x0A\x05xy";
        let mut t = Trickle(data);
        let mut s = FieldStream::new(&mut t);
        let h = s.header(NO_LIMIT).ok().flatten();
        assert_eq!(h.map(|h| h.value), Some(5));
        assert!(matches!(s.body(5, NO_LIMIT), Err(Short::Data { there: 2 })));
        let mut t = Trickle(data);
        let mut s = FieldStream::new(&mut t);
        let _ = s.header(NO_LIMIT);
        assert!(matches!(s.skip(5, NO_LIMIT), Err(Short::Data { there: 2 })));
        // Inside an enclosing message that ends at byte 4, the same value passes its end.
        let mut t = Trickle(data);
        let mut s = FieldStream::new(&mut t);
        let _ = s.header(4);
        assert!(matches!(s.body(5, 4), Err(Short::Limit)));
    }

    #[test]
    fn bad_keys_are_faults_at_their_field() {
        let mut data: &[u8] = b"\x08\x01\x00";
        let mut s = FieldStream::new(&mut data);
        let _ = s.header(NO_LIMIT);
        assert!(matches!(s.header(NO_LIMIT), Err((2, Fault::NumberZero))));
        // Field 1 as a group (wire 3), at byte 0.
        let mut data: &[u8] = b"\x0B";
        let mut s = FieldStream::new(&mut data);
        assert!(matches!(
            s.header(NO_LIMIT),
            Err((0, Fault::WireType { number: 1, wire: 3 }))
        ));
        // A varint cut at the end of the data.
        let mut data: &[u8] = b"\x08\x80";
        let mut s = FieldStream::new(&mut data);
        assert!(matches!(
            s.header(NO_LIMIT),
            Err((0, Fault::Cut { number: 1 }))
        ));
        // A length of eleven continuation bytes, with more data after it: corrupt, not cut.
        let mut data: &[u8] = &[
            0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00,
            0x00,
        ];
        let mut s = FieldStream::new(&mut data);
        assert!(matches!(
            s.header(NO_LIMIT),
            Err((0, Fault::Overlong { number: 1 }))
        ));
        // A tag of eleven continuation bytes.
        let mut data: &[u8] = &[0x80; 11];
        let mut s = FieldStream::new(&mut data);
        assert!(matches!(s.header(NO_LIMIT), Err((0, Fault::Tag))));
    }
}
