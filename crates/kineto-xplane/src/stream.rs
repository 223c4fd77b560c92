//! An `XSpace` read from a stream a plane at a time: the wire format walked down to the events
//! (planes → lines → events, [`FieldStream`]), every other field decoded by `prost`. A plane's
//! metadata (`event_metadata = 4`, `stat_metadata = 5`), which names its events and their stats, is
//! written after its lines, so a plane's events are kept as the file encodes them (the most compact
//! form they have: varint ids and times, stats by metadata id; [`EncodedEvents`]) until the plane
//! ends, then decoded one at a time into the model, each chunk of them freed once decoded; no more
//! than one plane's events are held, and less of them as the model grows. A plain file is read twice
//! instead ([`read_plain`]): every plane's own fields and lines first, the events skipped by their
//! length, then the events decoded straight into the model as the file is read again; none is held.
//!
//! What it is not: the mapping onto the model (`crate::space`), nor the naming of a fault as the
//! decoder of the whole space names it (`crate::fault`, on the whole file).

use crate::encoded::{EncodedEvents, EventSource, Events};
use crate::proto::XEvent;
use crate::proto::{XLine, XPlane, XSpace};
use crate::space::{LineRead, PlaneRead, SpaceReader};
use kineto_trace::Trace;
use kineto_trace::native::detect::put_varint;
use kineto_trace::native::protowire::{FieldStream, Header, MAX_HELD, NO_LIMIT, Short};
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
    let mut reader = SpaceReader::default();
    let space = walk_space(content, |fields, _, end| {
        let mut events = EncodedEvents::default();
        let (plane, lines) = read_plane(fields, end, Some(&mut events))?;
        let plane = PlaneRead {
            plane,
            lines,
            events: Box::new(events),
        };
        reader.plane(plane).map_err(bad_event)
    })?;
    Ok(reader.finish(&space))
}

/// The `XSpace` of `content` walked: each plane to `plane` (the stream at its body, the offset of its
/// field and of its end), the space's own fields (errors, warnings, hostnames) decoded.
fn walk_space(
    content: &mut dyn Read,
    mut plane: impl FnMut(&mut FieldStream, u64, u64) -> Result<(), Fault>,
) -> Result<XSpace, Fault> {
    let mut fields = FieldStream::new(content);
    // The space's own fields, re-encoded for `prost`.
    let mut own = Vec::new();
    while let Some(h) = next(&mut fields, NO_LIMIT, "XSpace")? {
        if h.number == PLANES && h.wire == 2 {
            let end = end_of(&fields, h, NO_LIMIT, "XSpace")?;
            plane(&mut fields, h.at, end)?;
        } else {
            keep(&mut fields, h, NO_LIMIT, &mut own, "XSpace")?;
        }
    }
    XSpace::decode(&own[..]).map_err(|e| (0, format!("the space does not decode: {e}")))
}

/// An event that does not decode, as a fault of its line.
fn bad_event((line, i, e): crate::space::BadEvent) -> Fault {
    (line, format!("XLine: its event {i} does not decode: {e}"))
}

/// A plain file's planes, each with its own fields, its lines and the number of its events (counted
/// and skipped): what the read of the file again needs before its events ([`read_known`]).
type FirstLook = Vec<(XPlane, Vec<LineRead>, usize)>;

/// Reads the `XSpace` of `content`, a plain file's content, after a first look at the same file
/// (`first_look`): its planes' own fields and lines read first, then each event decoded straight into
/// the model as `content` is read (a plane's metadata is written after its lines, and a stream holds
/// the plane's events until it comes). A first look that meets a fault (or an I/O error, a stop)
/// leaves the content to the stream's read ([`read`]), whose fault is the one named.
pub fn read_plain(first_look: &mut dyn Read, content: &mut dyn Read) -> Result<Trace, Fault> {
    match look_first(first_look) {
        Ok(look) => read_known(content, look),
        Err(_) => read(content),
    }
}

/// [`FirstLook`] of `content`; a fault as [`read`] would meet it.
fn look_first(content: &mut dyn Read) -> Result<FirstLook, Fault> {
    let mut planes = Vec::new();
    walk_space(content, |fields, _, end| {
        let (plane, lines) = read_plane(fields, end, None)?;
        let events = lines
            .iter()
            .map(|l| match l.events {
                Events::Encoded(n) => n,
                Events::Decoded(_) => 0,
            })
            .sum();
        planes.push((plane, lines, events));
        Ok(())
    })?;
    Ok(planes)
}

/// The space of `content` read again after its first look: each plane's events decoded into the
/// model as they are read ([`LiveEvents`]), with the plane's own fields and lines from `look`.
fn read_known(content: &mut dyn Read, look: FirstLook) -> Result<Trace, Fault> {
    let mut reader = SpaceReader::default();
    let mut planes = look.into_iter();
    let mut at_end = 0;
    let space = walk_space(content, |fields, at, end| {
        let Some((plane, lines, events)) = planes.next() else {
            return Err(changed(at));
        };
        let mut live = LiveEvents {
            fields,
            plane_end: end,
            line_end: None,
            given: 0,
        };
        let read = reader.plane(PlaneRead {
            plane,
            lines,
            events: Box::new(&mut live),
        });
        read.map_err(bad_event)?;
        // The events the mapping did not take (an idle GPU's plane takes none).
        while live.next().is_some() {}
        if live.given != events || live.fields.offset() != end {
            return Err(changed(at));
        }
        at_end = end;
        Ok(())
    })?;
    // Every plane the first look met is read (a file cut since has fewer).
    if planes.next().is_some() {
        return Err(changed(at_end));
    }
    Ok(reader.finish(&space))
}

/// The file read again is not the one its first look read.
fn changed(at: u64) -> Fault {
    (
        at,
        "the file changed while it was read (its first look found other planes or events)".into(),
    )
}

/// A plane's events read from the file as they are mapped: the lines walked from where the plane's
/// body begins, every field but the events skipped (the first look read them).
struct LiveEvents<'f, 'r> {
    fields: &'f mut FieldStream<'r>,
    plane_end: u64,
    /// The end of the line being read.
    line_end: Option<u64>,
    /// Events given so far.
    given: usize,
}

impl EventSource for LiveEvents<'_, '_> {
    fn next(&mut self) -> Option<Result<XEvent, prost::DecodeError>> {
        loop {
            let (limit, what) = match self.line_end {
                Some(end) => (end, "XLine"),
                None => (self.plane_end, "XPlane"),
            };
            let Ok(Some(h)) = next(self.fields, limit, what) else {
                if self.line_end.take().is_some() {
                    continue;
                }
                return None;
            };
            let len = if h.wire == 2 { h.value } else { 0 };
            match (self.line_end, h.number) {
                (None, LINES) if h.wire == 2 => {
                    self.line_end = Some(self.fields.offset().saturating_add(h.value));
                }
                (Some(end), EVENTS) if h.wire == 2 => {
                    self.given += 1;
                    let body = self.fields.body(h.value, end).ok()?;
                    return Some(XEvent::decode(body));
                }
                _ => self.fields.skip(len, limit).ok()?,
            }
        }
    }
}

/// A plane ending at offset `end`: its lines walked, its other fields decoded; each event kept
/// encoded in `events`, or (none given: a first look) counted and skipped.
fn read_plane(
    fields: &mut FieldStream,
    end: u64,
    mut events: Option<&mut EncodedEvents>,
) -> Result<(XPlane, Vec<LineRead>), Fault> {
    let start = fields.offset();
    let mut own = Vec::new();
    let mut lines = Vec::new();
    while let Some(h) = next(fields, end, "XPlane")? {
        if h.number == LINES && h.wire == 2 {
            let line_end = end_of(fields, h, end, "XPlane")?;
            lines.push(read_line(fields, h.at, line_end, events.as_deref_mut())?);
        } else {
            keep(fields, h, end, &mut own, "XPlane")?;
        }
    }
    whole(fields, end, "XPlane")?;
    let plane =
        XPlane::decode(&own[..]).map_err(|e| (start, format!("the plane does not decode: {e}")))?;
    Ok((plane, lines))
}

/// A line ending at offset `end`: its events kept encoded in its plane's `events` (or counted and
/// skipped), its other fields decoded.
fn read_line(
    fields: &mut FieldStream,
    at: u64,
    end: u64,
    mut events: Option<&mut EncodedEvents>,
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
            match events.as_deref_mut() {
                Some(events) => {
                    keep(fields, h, end, &mut field, "XLine")?;
                    events.push(&field);
                }
                None => skip(fields, h, end, "XLine")?,
            }
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

/// Passes over length-delimited field `h` of message `what` (ending at `limit`), as [`keep`] would
/// read it, holding none of it.
fn skip(fields: &mut FieldStream, h: Header, limit: u64, what: &str) -> Result<(), Fault> {
    let skipped = fields.skip(h.value, limit);
    // A value `keep` could not hold is its fault too.
    let skipped = match skipped {
        Ok(()) if h.value > MAX_HELD => Err(Short::TooLarge),
        other => other,
    };
    skipped.map_err(|s| match s {
        Short::Io(e) => (h.at, e.to_string()),
        _ => past_end(h, what),
    })
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
