//! Where a protobuf that `prost` refused goes wrong: the byte offset and what is there. `prost`'s error
//! names the message and field but no offset, and every bad input must name its byte; this walks the
//! wire format along the XPlane schema ([`crate::proto`]) to the first fault. It runs only after a
//! decode failed.
//!
//! What it is not: a decoder (no value is kept), nor a check of values (a stat of any number is fine).

use kineto_trace::native::detect::varint_at;

/// The messages of the schema, for the walk.
#[derive(Debug, Clone, Copy)]
enum Msg {
    Space,
    Plane,
    Line,
    Event,
    Stat,
    EventMetaEntry,
    StatMetaEntry,
    EventMeta,
    StatMeta,
}

/// What a field of a message holds, as far as the wire format shows.
enum Field {
    /// A message of this kind (length-delimited).
    Message(Msg),
    /// A value of these wire types (a repeated number may come packed, wire type 2).
    Value(&'static [u8]),
    /// Not in the schema: any well-formed value is skipped, as a decoder skips it.
    Unknown,
}

const VARINT: &[u8] = &[0];
const LEN: &[u8] = &[2];
const DOUBLE: &[u8] = &[1];
const PACKABLE: &[u8] = &[0, 2];

impl Msg {
    fn name(self) -> &'static str {
        match self {
            Msg::Space => "XSpace",
            Msg::Plane => "XPlane",
            Msg::Line => "XLine",
            Msg::Event => "XEvent",
            Msg::Stat => "XStat",
            Msg::EventMetaEntry => "XPlane.event_metadata entry",
            Msg::StatMetaEntry => "XPlane.stat_metadata entry",
            Msg::EventMeta => "XEventMetadata",
            Msg::StatMeta => "XStatMetadata",
        }
    }

    /// Field `number` of this message, by `xplane.proto`.
    fn field(self, number: u64) -> Field {
        use Field::{Message, Unknown, Value};
        match (self, number) {
            (Msg::Space, 1) => Message(Msg::Plane),
            (Msg::Space, 2..=4) => Value(LEN),
            (Msg::Plane, 1) => Value(VARINT),
            (Msg::Plane, 2) => Value(LEN),
            (Msg::Plane, 3) => Message(Msg::Line),
            (Msg::Plane, 4) => Message(Msg::EventMetaEntry),
            (Msg::Plane, 5) => Message(Msg::StatMetaEntry),
            (Msg::Plane, 6) => Message(Msg::Stat),
            (Msg::Line, 1 | 3 | 9 | 10) => Value(VARINT),
            (Msg::Line, 2 | 11) => Value(LEN),
            (Msg::Line, 4) => Message(Msg::Event),
            (Msg::Event, 1 | 2 | 3 | 5) => Value(VARINT),
            (Msg::Event, 4) => Message(Msg::Stat),
            (Msg::Stat, 1 | 3 | 4 | 7) => Value(VARINT),
            (Msg::Stat, 2) => Value(DOUBLE),
            (Msg::Stat, 5 | 6) => Value(LEN),
            (Msg::EventMetaEntry | Msg::StatMetaEntry, 1) => Value(VARINT),
            (Msg::EventMetaEntry, 2) => Message(Msg::EventMeta),
            (Msg::StatMetaEntry, 2) => Message(Msg::StatMeta),
            (Msg::EventMeta | Msg::StatMeta, 1) => Value(VARINT),
            (Msg::EventMeta, 2..=4) | (Msg::StatMeta, 2 | 3) => Value(LEN),
            (Msg::EventMeta, 5) => Message(Msg::Stat),
            (Msg::EventMeta, 6) => Value(PACKABLE),
            _ => Unknown,
        }
    }
}

/// The first fault of an `XSpace` in `bytes`: its byte offset and what is wrong there; `None` when
/// the wire format holds (then the fault is one this walk does not see, and the caller says so).
pub fn locate(bytes: &[u8]) -> Option<(u64, String)> {
    walk(bytes, 0, Msg::Space).err()
}

/// Walks the message `msg` held by `bytes`, which start at offset `base` of the file.
fn walk(bytes: &[u8], base: u64, msg: Msg) -> Result<(), (u64, String)> {
    let mut at = 0usize;
    while at < bytes.len() {
        let field_at = base + at as u64;
        let (tag, next) = varint_at(bytes, at).ok_or_else(|| {
            (
                field_at,
                format!(
                    "{}: a field's tag is cut or longer than 10 bytes",
                    msg.name()
                ),
            )
        })?;
        let (number, wire) = (tag >> 3, (tag & 7) as u8);
        if number == 0 {
            return Err((field_at, format!("{}: field number 0", msg.name())));
        }
        let field = msg.field(number);
        if let Field::Value(wires) = field
            && !wires.contains(&wire)
        {
            return Err((
                field_at,
                format!(
                    "{} field {number}: wire type {wire}, not the schema's",
                    msg.name()
                ),
            ));
        }
        if matches!(field, Field::Message(_)) && wire != 2 {
            return Err((
                field_at,
                format!(
                    "{} field {number}: wire type {wire} for a message",
                    msg.name()
                ),
            ));
        }
        let cut = || {
            (
                field_at,
                format!(
                    "{} field {number}: its value runs past the end of the {}",
                    msg.name(),
                    if base == 0 && matches!(msg, Msg::Space) {
                        "file"
                    } else {
                        "enclosing message"
                    }
                ),
            )
        };
        at = match wire {
            0 => varint_at(bytes, next).ok_or_else(cut)?.1,
            1 => next
                .checked_add(8)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(cut)?,
            5 => next
                .checked_add(4)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(cut)?,
            2 => {
                let (len, start) = varint_at(bytes, next).ok_or_else(cut)?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|l| start.checked_add(l))
                    .filter(|&e| e <= bytes.len());
                match (field, end) {
                    (Field::Message(inner), Some(end)) => {
                        walk(&bytes[start..end], base + start as u64, inner)?;
                        end
                    }
                    (_, Some(end)) => end,
                    // A cut message: the innermost field the cut falls in, when it is inside one.
                    (Field::Message(inner), None) => {
                        walk(&bytes[start..], base + start as u64, inner)?;
                        return Err(cut());
                    }
                    (_, None) => return Err(cut()),
                }
            }
            _ => {
                return Err((
                    field_at,
                    format!(
                        "{} field {number}: wire type {wire} (groups are not protobuf 3)",
                        msg.name()
                    ),
                ));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_plane_is_placed_at_its_field() {
        // XSpace.planes (0x0A) of length 5, but only 3 bytes follow, all whole: the fault is the
        // plane's field at byte 0.
        let (at, what) = locate(b"\x0A\x05\x12\x01a").unwrap_or_default();
        assert_eq!(at, 0);
        assert!(
            what.contains("XSpace field 1: its value runs past the end"),
            "{what}"
        );
        // The same plane cut inside its name (length 3, 1 byte there): the name's field, at byte 2.
        let (at, what) = locate(b"\x0A\x05\x12\x03a").unwrap_or_default();
        assert_eq!(at, 2);
        assert!(what.starts_with("XPlane field 2"), "{what}");
        // A plane whose line (0x1A, length 2) holds an event (0x22) cut inside: the event field, at
        // byte 2 (plane) + 2 (line header) = 4.
        let (at, what) = locate(b"\x0A\x04\x1A\x02\x22\x05").unwrap_or_default();
        assert_eq!(at, 4);
        assert!(what.starts_with("XLine field 4"), "{what}");
    }

    #[test]
    fn a_wrong_wire_type_is_named() {
        // XPlane.name (field 2) sent as a varint: tag (2 << 3) | 0 = 0x10, at byte 2.
        let (at, what) = locate(b"\x0A\x02\x10\x01").unwrap_or_default();
        assert_eq!(at, 2);
        assert!(what.contains("XPlane field 2: wire type 0"), "{what}");
        // A well-formed space: no fault.
        assert_eq!(locate(b"\x0A\x03\x12\x01a\x22\x01h"), None);
    }
}
