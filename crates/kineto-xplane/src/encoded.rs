//! A plane's events as the file encodes them, held from its lines until its metadata (written after
//! them, naming the events and their stats) is read, then decoded one at a time into the model and
//! freed a chunk at a time as they are: the peak is the model, not the model and the encoded plane.
//!
//! What it is not: the walk of the wire (`crate::stream`), nor the mapping (`crate::space`).

use crate::proto::XEvent;
use kineto_trace::native::detect::varint_at;
use prost::Message;
use std::collections::VecDeque;

/// Bytes of encoded events a chunk holds (but for one event longer than that, alone in its own): the
/// most held beyond the model at the peak, the last chunk of the plane read last.
const CHUNK: usize = 4 << 20;

/// What a chunk past [`GROWN`] asks of the allocator at once, so that it is a mapping of its own:
/// glibc's `malloc` maps a request of 32 MiB or more apart whatever its dynamic threshold (which rises
/// to the size of any mapped block freed: an outgrown hash table, a chunk), while a smaller request
/// may come from the heap, where a block freed below blocks still held stays resident. A full chunk
/// is shrunk to what it holds (the mapping shrinks in place); freed, it goes back to the system at
/// once, and the model's rows, growing as it is read, take its place. Pages never written are never
/// resident.
const RESERVED: usize = 32 << 20;

/// A chunk grows as its events come up to this size (a heap block, as a small plane needs), then
/// takes [`RESERVED`] at once.
const GROWN: usize = 64 << 10;

/// A line's events: counted, their bytes in its plane's [`EncodedEvents`] (taken in the order of
/// the lines), or decoded already (a space decoded whole).
pub enum Events {
    Encoded(usize),
    Decoded(Vec<XEvent>),
}

impl Events {
    pub fn is_empty(&self) -> bool {
        match self {
            Events::Encoded(count) => *count == 0,
            Events::Decoded(events) => events.is_empty(),
        }
    }

    /// Each event with its index in the line, in order (an encoded one taken from `plane`, the
    /// source of the plane's events); the first that does not decode stops it.
    pub fn each(
        self,
        plane: &mut dyn EventSource,
        mut f: impl FnMut(usize, &XEvent),
    ) -> Result<(), (usize, prost::DecodeError)> {
        match self {
            Events::Decoded(events) => events.iter().enumerate().for_each(|(i, e)| f(i, e)),
            Events::Encoded(count) => {
                for i in 0..count {
                    match plane.next() {
                        Some(event) => f(i, &event.map_err(|e| (i, e))?),
                        None => break,
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where a plane's events come from, in file order: held encoded ([`EncodedEvents`]), or read from
/// the file as they are mapped (`crate::stream`'s plain read, the plane's metadata read first).
pub trait EventSource {
    /// The next event decoded; `None` when none is left.
    fn next(&mut self) -> Option<Result<XEvent, prost::DecodeError>>;
}

impl<T: EventSource + ?Sized> EventSource for &mut T {
    fn next(&mut self) -> Option<Result<XEvent, prost::DecodeError>> {
        (**self).next()
    }
}

/// A plane's events (each `events = 4` field of its lines, tag and length included: the most
/// compact form they have, varint ids and times, stats by metadata id), in file order, in chunks of
/// at most [`CHUNK`] bytes; each chunk is freed as soon as its last event is decoded.
pub struct EncodedEvents {
    chunks: VecDeque<Vec<u8>>,
    /// Offset of the next event to decode in the first chunk.
    at: usize,
    chunk_bytes: usize,
}

impl Default for EncodedEvents {
    fn default() -> Self {
        EncodedEvents::in_chunks_of(CHUNK)
    }
}

impl EncodedEvents {
    /// None yet, held in chunks of `chunk_bytes`.
    fn in_chunks_of(chunk_bytes: usize) -> Self {
        EncodedEvents {
            chunks: VecDeque::new(),
            at: 0,
            chunk_bytes,
        }
    }

    /// One more event, `field` its `events = 4` field as the file encodes it.
    pub fn push(&mut self, field: &[u8]) {
        let fits = |c: &Vec<u8>| c.len() + field.len() <= self.chunk_bytes || c.is_empty();
        match self.chunks.back_mut() {
            Some(full) if !fits(full) => {
                full.shrink_to_fit();
                self.chunks.push_back(Vec::new());
            }
            Some(_) => {}
            None => self.chunks.push_back(Vec::new()),
        }
        let Some(chunk) = self.chunks.back_mut() else {
            return;
        };
        let wanted = chunk.len() + field.len();
        if wanted > chunk.capacity() && wanted > GROWN.min(self.chunk_bytes) {
            chunk.reserve_exact(RESERVED.max(wanted) - chunk.len());
        }
        chunk.extend_from_slice(field);
    }
}

impl EventSource for EncodedEvents {
    /// The next event decoded, its chunk freed when it was the chunk's last; `None` when none is left.
    fn next(&mut self) -> Option<Result<XEvent, prost::DecodeError>> {
        let chunk = self.chunks.front()?;
        // The framing was checked as the line was read: tag, then length.
        let (_, next) = varint_at(chunk, self.at).unwrap_or((0, chunk.len()));
        let (len, start) = varint_at(chunk, next).unwrap_or((0, chunk.len()));
        let end = start.saturating_add(usize::try_from(len).unwrap_or(0));
        let event = XEvent::decode(chunk.get(start..end).unwrap_or_default());
        self.at = end;
        if self.at >= chunk.len() {
            self.chunks.pop_front();
            self.at = 0;
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::EventData;

    /// Event `id` encoded as an `events = 4` field: tag 0x22, its length, then its body
    /// (`metadata_id` `id`, `offset_ps` 1,000·`id`).
    fn field(id: i64) -> Vec<u8> {
        let body = XEvent {
            metadata_id: id,
            data: Some(EventData::OffsetPs(1_000 * id)),
            ..Default::default()
        }
        .encode_to_vec();
        let mut f = vec![0x22, body.len() as u8];
        f.extend_from_slice(&body);
        f
    }

    #[test]
    fn events_span_chunks_in_order_and_each_chunk_goes_once_read() {
        // Each field: tag and length (2 bytes), metadata_id (08 id: 2 bytes), offset_ps (10 and a
        // 2-byte varint, 128 ≤ 1,000·id < 16,384: 3 bytes) = 7 bytes. Chunks of 16 bytes hold two.
        assert_eq!(field(1).len(), 7);
        let mut plane = EncodedEvents::in_chunks_of(16);
        for id in 1..=5 {
            plane.push(&field(id));
        }
        let sizes: Vec<usize> = plane.chunks.iter().map(Vec::len).collect();
        assert_eq!(sizes, [14, 14, 7]);
        // Two lines of 3 and 2 events take the plane's events in order.
        let mut seen = Vec::new();
        Events::Encoded(3)
            .each(&mut plane, |i, e| seen.push((i, e.metadata_id)))
            .unwrap();
        // The first chunk is read whole, and gone; the second half read.
        assert_eq!((plane.chunks.len(), plane.at), (2, 7));
        Events::Encoded(2)
            .each(&mut plane, |i, e| seen.push((i, e.metadata_id)))
            .unwrap();
        assert_eq!(seen, [(0, 1), (1, 2), (2, 3), (0, 4), (1, 5)]);
        assert!(plane.chunks.is_empty());
    }

    #[test]
    fn an_event_longer_than_a_chunk_is_a_chunk_alone() {
        let mut plane = EncodedEvents::in_chunks_of(4);
        plane.push(&field(1));
        plane.push(&field(2));
        let sizes: Vec<usize> = plane.chunks.iter().map(Vec::len).collect();
        assert_eq!(sizes, [7, 7]);
    }

    #[test]
    fn an_event_that_does_not_decode_names_its_index_in_the_line() {
        let mut plane = EncodedEvents::in_chunks_of(16);
        plane.push(&field(1));
        // Field 1 with wire type 7: no such wire type.
        plane.push(&[0x22, 1, 0x0f]);
        let mut seen = 0;
        let err = Events::Encoded(2)
            .each(&mut plane, |_, _| seen += 1)
            .unwrap_err();
        assert_eq!((err.0, seen), (1, 1));
    }

    #[test]
    fn a_chunk_past_its_growing_size_is_reserved_whole_then_shrunk_to_what_it_holds() {
        let mut plane = EncodedEvents::in_chunks_of(GROWN * 4);
        plane.push(&field(1));
        assert!(plane.chunks[0].capacity() < GROWN);
        plane.push(&vec![0u8; GROWN + 1]);
        assert_eq!(plane.chunks[0].capacity(), RESERVED);
        // 7 + (GROWN + 1) + 3·GROWN bytes are more than 4·GROWN: a second chunk, the first shrunk.
        plane.push(&vec![0u8; GROWN * 3]);
        assert_eq!(plane.chunks.len(), 2);
        assert_eq!(plane.chunks[0].capacity(), 7 + GROWN + 1);
    }
}
