//! An `XSpace` read from a stream a plane at a time: the wire format walked down to the events
//! (planes → lines → events, [`FieldStream`]), every other field decoded by `prost`. A plane's
//! metadata (`event_metadata = 4`, `stat_metadata = 5`), which names its events and their stats, is
//! written after its lines, so a plane's events are kept as the file encodes them (the most compact
//! form they have: varint ids and times, stats by metadata id; [`EncodedEvents`]) until the plane
//! ends, then decoded one at a time into the model, each chunk of them freed once decoded; no more
//! than one plane's events are held, and less of them as the model grows.
//!
//! What it is not: the mapping onto the model (`crate::space`), nor the naming of a fault as the
//! decoder of the whole space names it (`crate::fault`, on the whole file).

use crate::encoded::{EncodedEvents, Events};
use crate::proto::{XLine, XPlane, XSpace};
use crate::space::{LineRead, PlaneRead, SpaceReader};
use kineto_trace::Trace;
use kineto_trace::native::detect::put_varint;
use kineto_trace::native::protowire::{FieldStream, Header, NO_LIMIT, Short};
use prost::Message;
use std::io::Read;

/// A fault: its byte offset and what is wrong there.
pub type Fault = (u64, String);

/// The field numbers walked: `XSpace.planes`, `XPlane.lines`, `XLine.events`.
const PLANES: u64 = 1;
const LINES: u64 = 3;
const EVENTS: u64 = 4;

/// Reads the `XSpace` of `content` into a trace.
pub fn read(content: &mut dyn Read) -> Result<Trace, Fault> {
    let mut fields = FieldStream::new(content);
    let mut reader = SpaceReader::default();
    // The space's own fields (errors, warnings, hostnames), re-encoded for `prost`.
    let mut own = Vec::new();
    while let Some(h) = next(&mut fields, NO_LIMIT, "XSpace")? {
        if h.number == PLANES && h.wire == 2 {
            let end = end_of(&fields, h, NO_LIMIT, "XSpace")?;
            let plane = read_plane(&mut fields, end)?;
            reader.plane(plane).map_err(|(line, i, e)| {
                (line, format!("XLine: its event {i} does not decode: {e}"))
            })?;
        } else {
            keep(&mut fields, h, NO_LIMIT, &mut own, "XSpace")?;
        }
    }
    let space =
        XSpace::decode(&own[..]).map_err(|e| (0, format!("the space does not decode: {e}")))?;
    Ok(reader.finish(&space))
}

/// A plane ending at offset `end`: its lines walked, its other fields decoded.
fn read_plane(fields: &mut FieldStream, end: u64) -> Result<PlaneRead, Fault> {
    let start = fields.offset();
    let mut own = Vec::new();
    let mut lines = Vec::new();
    let mut events = EncodedEvents::default();
    while let Some(h) = next(fields, end, "XPlane")? {
        if h.number == LINES && h.wire == 2 {
            let line_end = end_of(fields, h, end, "XPlane")?;
            lines.push(read_line(fields, h.at, line_end, &mut events)?);
        } else {
            keep(fields, h, end, &mut own, "XPlane")?;
        }
    }
    whole(fields, end, "XPlane")?;
    let plane =
        XPlane::decode(&own[..]).map_err(|e| (start, format!("the plane does not decode: {e}")))?;
    Ok(PlaneRead {
        plane,
        lines,
        events,
    })
}

/// A line ending at offset `end`: its events kept encoded in its plane's `events`, its other fields
/// decoded.
fn read_line(
    fields: &mut FieldStream,
    at: u64,
    end: u64,
    events: &mut EncodedEvents,
) -> Result<LineRead, Fault> {
    let start = fields.offset();
    let mut own = Vec::new();
    let mut count = 0;
    // One event's field at a time, as the file encodes it, on its way into `events`.
    let mut field = Vec::new();
    while let Some(h) = next(fields, end, "XLine")? {
        if h.number != EVENTS {
            keep(fields, h, end, &mut own, "XLine")?;
        } else if h.wire == 2 {
            field.clear();
            keep(fields, h, end, &mut field, "XLine")?;
            events.push(&field);
            count += 1;
        } else {
            let why = format!("XLine field {EVENTS}: wire type {} for a message", h.wire);
            return Err((h.at, why));
        }
    }
    whole(fields, end, "XLine")?;
    let line =
        XLine::decode(&own[..]).map_err(|e| (start, format!("the line does not decode: {e}")))?;
    Ok(LineRead {
        at,
        line,
        events: Events::Encoded(count),
    })
}

/// The next field of a message `what` ending at `limit`.
fn next(fields: &mut FieldStream, limit: u64, what: &str) -> Result<Option<Header>, Fault> {
    fields
        .header(limit)
        .map_err(|(at, f)| (at, format!("{what}: {}", f.describe(what))))
}

/// The end offset of the message that `h` opens, which must end by `limit`.
fn end_of(fields: &FieldStream, h: Header, limit: u64, what: &str) -> Result<u64, Fault> {
    fields
        .offset()
        .checked_add(h.value)
        .filter(|&e| e <= limit)
        .ok_or_else(|| past_end(h, what))
}

/// A message walked field by field must end where its length said: not with the data.
fn whole(fields: &FieldStream, end: u64, what: &str) -> Result<(), Fault> {
    if fields.offset() == end {
        return Ok(());
    }
    Err((
        fields.offset(),
        format!("{what}: the data ends before the message does (at byte {end})"),
    ))
}

fn past_end(h: Header, what: &str) -> Fault {
    (
        h.at,
        format!(
            "{what} field {}: its value runs past the end of the enclosing message or the data",
            h.number
        ),
    )
}

/// Field `h` of message `what` (ending at `limit`) appended to `out` as the file encodes it.
fn keep(
    fields: &mut FieldStream,
    h: Header,
    limit: u64,
    out: &mut Vec<u8>,
    what: &str,
) -> Result<(), Fault> {
    put_varint(out, h.number << 3 | u64::from(h.wire));
    match h.wire {
        0 => put_varint(out, h.value),
        1 => out.extend_from_slice(&h.value.to_le_bytes()),
        5 => out.extend_from_slice(&h.value.to_le_bytes()[..4]),
        _ => {
            put_varint(out, h.value);
            let body = fields.body(h.value, limit).map_err(|s| match s {
                Short::Io(e) => (h.at, e.to_string()),
                _ => past_end(h, what),
            })?;
            out.extend_from_slice(body);
        }
    }
    Ok(())
}
