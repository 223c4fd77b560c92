//! The events of the file held from their packet until every track descriptor is known
//! (`crate::pairing` logs them in file order, `crate::events` maps them onto the model at the end),
//! kept as bytes: each entry a tag and its fields as varints, a time or offset as its difference from
//! the one before (zigzag), a track uuid by its number in the order first logged. A slice is ~15 bytes
//! where the [`Logged`] it is read back as takes ~112, so the log of a file is a fraction of the model
//! it becomes. It is held in chunks, each freed once read back, so that the log and the model are not
//! both held whole.
//!
//! What it is not: what an event means (`crate::pairing`, `crate::events`).

use crate::pairing::{Annotated, At, LaunchShape, Logged, Open, Stage, Tally};
use kineto_trace::GpuKind;
use kineto_trace::native::detect::{unzigzag, zigzag};
use prost::encoding::{decode_varint, encode_varint};
use rustc_hash::FxHashMap;

/// Bytes a chunk is started with: an entry never straddles two chunks (one longer than this, a long
/// skip message, has a chunk of its own size).
const CHUNK: usize = 1 << 20;

/// An entry's first byte.
const SLICE: u8 = 0;
const STAGE: u8 = 1;
const INSTANT: u8 = 2;
const COUNTER_VALUE: u8 = 3;
const SKIPPED: u8 = 4;

/// A slice's optional fields present. The annotated values ([`Annotated`]) take the flag byte's
/// free bits, so a slice without them costs no byte more than before they were read.
const CORRELATION: u8 = 1;
const SUBMITTED: u8 = 2;
const THREAD: u8 = 4;
const ANNOTATED_BYTES: u8 = 8;
const ANNOTATED_GRID: u8 = 16;
const ANNOTATED_BLOCK: u8 = 32;
const ANNOTATED_REGISTERS: u8 = 64;
const ANNOTATED_SHARED: u8 = 128;

/// A render stage's optional fields present.
const AFTER_EVENT: u8 = 1;
const EVENT_ID: u8 = 2;
const LAUNCH: u8 = 4;
const REGISTERS: u8 = 8;
const SHARED: u8 = 16;
const PROCESS: u8 = 32;

/// The times and offsets the next entry's are told from, the same when written and read back.
#[derive(Default)]
struct Previous {
    ts: i64,
    offset: u64,
}

/// The events logged, in file order.
#[derive(Default)]
pub struct Log {
    chunks: Vec<Vec<u8>>,
    /// Entries logged.
    entries: usize,
    previous: Previous,
    /// Track uuids in the order first logged, and each one's number.
    uuids: Vec<u64>,
    uuid_numbers: FxHashMap<u64, u32>,
    /// The entry being written.
    entry: Vec<u8>,
}

impl Log {
    /// Entries logged so far.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Bytes logged so far.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    pub fn push(&mut self, logged: &Logged) {
        let mut entry = std::mem::take(&mut self.entry);
        entry.clear();
        self.encode(logged, &mut entry);
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() + entry.len() <= chunk.capacity() => {
                chunk.extend_from_slice(&entry);
            }
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK.max(entry.len()));
                chunk.extend_from_slice(&entry);
                self.chunks.push(chunk);
            }
        }
        self.entry = entry;
        self.entries += 1;
    }

    fn encode(&mut self, logged: &Logged, out: &mut Vec<u8>) {
        match logged {
            Logged::Slice {
                uuid,
                open,
                end,
                thread,
                at,
            } => {
                out.push(SLICE);
                self.at(at, out);
                encode_varint(u64::from(self.uuid_number(*uuid)), out);
                self.slice(open, *end, *thread, out);
            }
            Logged::Stage {
                stage,
                at,
                after_event,
            } => {
                out.push(STAGE);
                self.at(at, out);
                self.stage(stage, *after_event, out);
            }
            Logged::Counted { what, ts, at } => {
                out.push(match what {
                    Tally::Instant => INSTANT,
                    Tally::CounterValue => COUNTER_VALUE,
                });
                self.at(at, out);
                self.ts(*ts, out);
            }
            Logged::Skipped { message, at } => {
                out.push(SKIPPED);
                self.at(at, out);
                encode_varint(message.len() as u64, out);
                out.extend_from_slice(message.as_bytes());
            }
        }
    }

    fn at(&mut self, at: &At, out: &mut Vec<u8>) {
        let step = at.offset.wrapping_sub(self.previous.offset);
        encode_varint(zigzag(step as i64), out);
        self.previous.offset = at.offset;
        encode_varint(u64::from(at.sequence), out);
    }

    fn ts(&mut self, ts: i64, out: &mut Vec<u8>) {
        encode_varint(zigzag(ts.wrapping_sub(self.previous.ts)), out);
        self.previous.ts = ts;
    }

    fn uuid_number(&mut self, uuid: u64) -> u32 {
        *self.uuid_numbers.entry(uuid).or_insert_with(|| {
            self.uuids.push(uuid);
            // More distinct tracks than u32 numbers would take more memory than any machine has.
            u32::try_from(self.uuids.len() - 1).unwrap_or(u32::MAX)
        })
    }

    fn slice(&mut self, open: &Open, end: i64, thread: Option<(i64, i64)>, out: &mut Vec<u8>) {
        encode_varint(u64::from(open.name), out);
        encode_varint(u64::from(open.category), out);
        self.ts(open.ts, out);
        encode_varint(zigzag(end.wrapping_sub(open.ts)), out);
        let a = &open.annotated;
        let flags = flag(open.correlation.is_some(), CORRELATION)
            | flag(open.submitted.is_some(), SUBMITTED)
            | flag(thread.is_some(), THREAD)
            | flag(a.bytes.is_some(), ANNOTATED_BYTES)
            | flag(a.grid.is_some(), ANNOTATED_GRID)
            | flag(a.block.is_some(), ANNOTATED_BLOCK)
            | flag(a.registers.is_some(), ANNOTATED_REGISTERS)
            | flag(a.shared.is_some(), ANNOTATED_SHARED);
        out.push(flags);
        for v in [open.correlation, open.submitted].into_iter().flatten() {
            encode_varint(v, out);
        }
        if let Some((pid, tid)) = thread {
            encode_varint(zigzag(pid), out);
            encode_varint(zigzag(tid), out);
        }
        let sizes = [a.grid, a.block, a.registers, a.shared];
        for v in a
            .bytes
            .into_iter()
            .chain(sizes.into_iter().flatten().map(u64::from))
        {
            encode_varint(v, out);
        }
    }

    fn stage(&mut self, s: &Stage, after_event: bool, out: &mut Vec<u8>) {
        let (registers, shared) = s.launch.map_or((None, None), |l| (l.2, l.3));
        let flags = flag(after_event, AFTER_EVENT)
            | flag(s.event_id.is_some(), EVENT_ID)
            | flag(s.launch.is_some(), LAUNCH)
            | flag(registers.is_some(), REGISTERS)
            | flag(shared.is_some(), SHARED)
            | flag(s.process.is_some(), PROCESS);
        out.push(flags);
        encode_varint(u64::from(s.name), out);
        out.push(match s.kind {
            GpuKind::Kernel => 0,
            GpuKind::Memcpy => 1,
            GpuKind::Memset => 2,
        });
        encode_varint(zigzag(s.device), out);
        encode_varint(zigzag(s.queue), out);
        self.ts(s.ts, out);
        encode_varint(zigzag(s.dur), out);
        if let Some(id) = s.event_id {
            encode_varint(id, out);
        }
        if let Some((grid, block, _, _)) = s.launch {
            for d in grid.into_iter().chain(block) {
                encode_varint(u64::from(d), out);
            }
        }
        for v in [registers, shared].into_iter().flatten() {
            encode_varint(u64::from(v), out);
        }
        if let Some(pid) = s.process {
            encode_varint(zigzag(pid), out);
        }
    }
}

fn flag(set: bool, bit: u8) -> u8 {
    if set { bit } else { 0 }
}

impl IntoIterator for Log {
    type Item = Logged;
    type IntoIter = Entries;

    /// The entries in the order logged; each chunk is freed once read.
    fn into_iter(self) -> Entries {
        Entries {
            chunks: self.chunks.into_iter(),
            chunk: Vec::new(),
            at: 0,
            decoder: Decoder {
                previous: Previous::default(),
                uuids: self.uuids,
            },
        }
    }
}

/// The log read back, a chunk at a time.
pub struct Entries {
    chunks: std::vec::IntoIter<Vec<u8>>,
    chunk: Vec<u8>,
    /// Bytes of `chunk` read.
    at: usize,
    decoder: Decoder,
}

/// What an entry is read back with: the entry before it, the uuids by number.
struct Decoder {
    previous: Previous,
    uuids: Vec<u64>,
}

/// The log's own bytes did not read back (a fault of this module, not of the file).
struct Unreadable;

impl From<prost::DecodeError> for Unreadable {
    fn from(_: prost::DecodeError) -> Unreadable {
        Unreadable
    }
}

impl Iterator for Entries {
    type Item = Logged;

    fn next(&mut self) -> Option<Logged> {
        while self.at == self.chunk.len() {
            // The chunk read is freed here.
            self.chunk = self.chunks.next()?;
            self.at = 0;
        }
        let mut bytes = &self.chunk[self.at..];
        let before = bytes.len();
        let logged = self.decoder.decode(&mut bytes);
        self.at += before - bytes.len();
        match logged {
            Ok(logged) => Some(logged),
            Err(Unreadable) => {
                // Nothing after a fault can be told apart: the rest is not read, and said so.
                self.at = self.chunk.len();
                self.chunks = Vec::new().into_iter();
                let at = At {
                    offset: self.decoder.previous.offset,
                    sequence: 0,
                };
                let message = "the reader's log of the events after it does not read back (a bug \
                               of this reader): those events not read"
                    .to_string();
                Some(Logged::Skipped { message, at })
            }
        }
    }
}

impl Decoder {
    fn decode(&mut self, bytes: &mut &[u8]) -> Result<Logged, Unreadable> {
        let (&tag, rest) = bytes.split_first().ok_or(Unreadable)?;
        *bytes = rest;
        let at = self.at(bytes)?;
        Ok(match tag {
            SLICE => {
                let number = usize::try_from(decode_varint(bytes)?).map_err(|_| Unreadable)?;
                let uuid = *self.uuids.get(number).ok_or(Unreadable)?;
                let (open, end, thread) = self.slice(bytes)?;
                Logged::Slice {
                    uuid,
                    open,
                    end,
                    thread,
                    at,
                }
            }
            STAGE => {
                let (stage, after_event) = self.stage(bytes)?;
                Logged::Stage {
                    stage,
                    at,
                    after_event,
                }
            }
            INSTANT | COUNTER_VALUE => Logged::Counted {
                what: if tag == INSTANT {
                    Tally::Instant
                } else {
                    Tally::CounterValue
                },
                ts: self.ts(bytes)?,
                at,
            },
            SKIPPED => {
                let len = usize::try_from(decode_varint(bytes)?).map_err(|_| Unreadable)?;
                let text = bytes.get(..len).ok_or(Unreadable)?;
                *bytes = &bytes[len..];
                let message = String::from_utf8(text.to_vec()).map_err(|_| Unreadable)?;
                Logged::Skipped { message, at }
            }
            _ => return Err(Unreadable),
        })
    }

    fn at(&mut self, bytes: &mut &[u8]) -> Result<At, Unreadable> {
        let step = unzigzag(decode_varint(bytes)?) as u64;
        self.previous.offset = self.previous.offset.wrapping_add(step);
        let sequence = u32::try_from(decode_varint(bytes)?).map_err(|_| Unreadable)?;
        Ok(At {
            offset: self.previous.offset,
            sequence,
        })
    }

    fn ts(&mut self, bytes: &mut &[u8]) -> Result<i64, Unreadable> {
        self.previous.ts = self
            .previous
            .ts
            .wrapping_add(unzigzag(decode_varint(bytes)?));
        Ok(self.previous.ts)
    }

    #[allow(clippy::type_complexity)]
    fn slice(&mut self, bytes: &mut &[u8]) -> Result<(Open, i64, Option<(i64, i64)>), Unreadable> {
        let name = small(decode_varint(bytes)?)?;
        let category = small(decode_varint(bytes)?)?;
        let ts = self.ts(bytes)?;
        let end = ts.wrapping_add(unzigzag(decode_varint(bytes)?));
        let flags = byte(bytes)?;
        let correlation = present(flags, CORRELATION, bytes)?;
        let submitted = present(flags, SUBMITTED, bytes)?;
        let thread = match present(flags, THREAD, bytes)? {
            Some(pid) => Some((unzigzag(pid), unzigzag(decode_varint(bytes)?))),
            None => None,
        };
        let copied = present(flags, ANNOTATED_BYTES, bytes)?;
        let mut size = |bit| present(flags, bit, bytes)?.map(small).transpose();
        let annotated = Annotated {
            bytes: copied,
            grid: size(ANNOTATED_GRID)?,
            block: size(ANNOTATED_BLOCK)?,
            registers: size(ANNOTATED_REGISTERS)?,
            shared: size(ANNOTATED_SHARED)?,
        };
        let open = Open {
            name,
            category,
            ts,
            correlation,
            submitted,
            annotated,
        };
        Ok((open, end, thread))
    }

    fn stage(&mut self, bytes: &mut &[u8]) -> Result<(Stage, bool), Unreadable> {
        let flags = byte(bytes)?;
        let name = small(decode_varint(bytes)?)?;
        let kind = match byte(bytes)? {
            0 => GpuKind::Kernel,
            1 => GpuKind::Memcpy,
            2 => GpuKind::Memset,
            _ => return Err(Unreadable),
        };
        let device = unzigzag(decode_varint(bytes)?);
        let queue = unzigzag(decode_varint(bytes)?);
        let ts = self.ts(bytes)?;
        let dur = unzigzag(decode_varint(bytes)?);
        let event_id = if flags & EVENT_ID != 0 {
            Some(decode_varint(bytes)?)
        } else {
            None
        };
        let dims = if flags & LAUNCH != 0 {
            let mut d = [0u32; 6];
            for v in &mut d {
                *v = small(decode_varint(bytes)?)?;
            }
            Some(d)
        } else {
            None
        };
        let mut optional_u32 = |bit| -> Result<Option<u32>, Unreadable> {
            Ok(if flags & bit != 0 {
                Some(small(decode_varint(bytes)?)?)
            } else {
                None
            })
        };
        let registers = optional_u32(REGISTERS)?;
        let shared = optional_u32(SHARED)?;
        let launch: Option<LaunchShape> =
            dims.map(|d| ([d[0], d[1], d[2]], [d[3], d[4], d[5]], registers, shared));
        let process = if flags & PROCESS != 0 {
            Some(unzigzag(decode_varint(bytes)?))
        } else {
            None
        };
        let stage = Stage {
            name,
            kind,
            device,
            queue,
            ts,
            dur,
            event_id,
            launch,
            process,
        };
        Ok((stage, flags & AFTER_EVENT != 0))
    }
}

/// The varint that follows when `flags` has `bit`.
fn present(flags: u8, bit: u8, bytes: &mut &[u8]) -> Result<Option<u64>, Unreadable> {
    Ok(if flags & bit != 0 {
        Some(decode_varint(bytes)?)
    } else {
        None
    })
}

fn byte(bytes: &mut &[u8]) -> Result<u8, Unreadable> {
    let (&b, rest) = bytes.split_first().ok_or(Unreadable)?;
    *bytes = rest;
    Ok(b)
}

fn small(v: u64) -> Result<u32, Unreadable> {
    u32::try_from(v).map_err(|_| Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64, sequence: u32) -> At {
        At { offset, sequence }
    }

    fn slice(uuid: u64, ts: i64, end: i64, correlation: Option<u64>, offset: u64) -> Logged {
        Logged::Slice {
            uuid,
            open: Open {
                name: 3,
                category: 1,
                ts,
                correlation,
                submitted: None,
                annotated: Annotated::default(),
            },
            end,
            thread: None,
            at: at(offset, 1),
        }
    }

    fn annotated_slice(
        annotated: Annotated,
        correlation: Option<u64>,
        thread: Option<(i64, i64)>,
    ) -> Logged {
        Logged::Slice {
            uuid: 2,
            open: Open {
                name: 1,
                category: 2,
                ts: 40,
                correlation,
                submitted: correlation,
                annotated,
            },
            end: 50,
            thread,
            at: at(80, 1),
        }
    }

    #[test]
    fn every_kind_of_entry_reads_back_as_logged() {
        let stage = |launch, process, after_event| Logged::Stage {
            stage: Stage {
                name: 7,
                kind: GpuKind::Memset,
                device: -1,
                queue: 1 << 40,
                ts: i64::MIN,
                dur: i64::MAX,
                event_id: Some(u64::MAX),
                launch,
                process,
            },
            at: at(u64::MAX, u32::MAX),
            after_event,
        };
        let entries = vec![
            slice(u64::MAX, 1_000, 1_500, Some(100_000_001), 70),
            // Times and offsets going back, and ends before begins, read back as given.
            slice(5, -7, i64::MIN, None, 3),
            Logged::Slice {
                uuid: u64::MAX,
                open: Open {
                    name: u32::MAX,
                    category: 0,
                    ts: i64::MAX,
                    correlation: Some(0),
                    submitted: Some(u64::MAX),
                    annotated: Annotated::default(),
                },
                end: i64::MIN,
                thread: Some((i64::MIN, -1)),
                at: at(0, 0),
            },
            // Every annotated value, at its extremes, with and without the other optional fields.
            annotated_slice(
                Annotated {
                    bytes: Some(u64::MAX),
                    grid: Some(u32::MAX),
                    block: Some(0),
                    registers: Some(1),
                    shared: Some(65_536),
                },
                Some(7),
                Some((1, 2)),
            ),
            annotated_slice(
                Annotated {
                    bytes: Some(0),
                    ..Annotated::default()
                },
                None,
                None,
            ),
            annotated_slice(
                Annotated {
                    grid: Some(4_096),
                    block: Some(256),
                    ..Annotated::default()
                },
                None,
                Some((3, 4)),
            ),
            annotated_slice(
                Annotated {
                    registers: Some(128),
                    shared: Some(0),
                    ..Annotated::default()
                },
                Some(0),
                None,
            ),
            stage(
                Some(([1, 2, 3], [u32::MAX, 0, 9], Some(64), None)),
                Some(-3),
                true,
            ),
            stage(Some(([0; 3], [0; 3], None, Some(u32::MAX))), None, false),
            stage(None, Some(i64::MAX), false),
            Logged::Counted {
                what: Tally::Instant,
                ts: 12,
                at: at(9, 2),
            },
            Logged::Counted {
                what: Tally::CounterValue,
                ts: -12,
                at: at(9, 2),
            },
            Logged::Skipped {
                message: "no timestamp – ü".into(),
                at: at(1 << 50, 3),
            },
        ];
        let mut log = Log::default();
        for e in &entries {
            log.push(e);
        }
        assert_eq!(log.len(), entries.len());
        assert_eq!(log.into_iter().collect::<Vec<_>>(), entries);
    }

    #[test]
    fn a_slice_is_a_few_bytes_and_chunks_hold_whole_entries() {
        let mut log = Log::default();
        log.push(&slice(9, 0, 0, None, 0));
        let first = log.bytes();
        // tag 1, offset step 0: 1, sequence 1, uuid number 0: 1, name and category 1 + 1, ts step
        // 0: 1, duration 0: 1, flags 1 = 9 bytes.
        assert_eq!(first, 9);
        // 70 bytes on, 1,000 ns later, 500 ns long, correlation 100,000,001: offset step zigzag
        // 140 (2 bytes), ts step zigzag 2,000 (2), duration zigzag 1,000 (2), correlation
        // 100,000,001 < 2^28 (4): 9 - 3 + 6 + 4 = 16 bytes.
        log.push(&slice(9, 1_000, 1_500, Some(100_000_001), 70));
        assert_eq!(log.bytes() - first, 16);
        // The same slice with a copy's size (copy_bytes 1 MiB = 2^20 < 2^21: 3 bytes) costs those
        // bytes and no more: the flag byte already there says they are present.
        let mut annotated = Log::default();
        let copy = |bytes| Logged::Slice {
            uuid: 9,
            open: Open {
                name: 3,
                category: 1,
                ts: 0,
                correlation: None,
                submitted: None,
                annotated: Annotated {
                    bytes,
                    ..Annotated::default()
                },
            },
            end: 0,
            thread: None,
            at: at(0, 1),
        };
        annotated.push(&copy(Some(1 << 20)));
        assert_eq!(annotated.bytes(), first + 3);
        annotated.push(&copy(None));
        assert_eq!(annotated.bytes(), 2 * first + 3);
        // A million more such slices fill chunks of CHUNK bytes or less, and a message longer than a
        // chunk has its own; all read back in order.
        let mut want = vec![
            slice(9, 0, 0, None, 0),
            slice(9, 1_000, 1_500, Some(100_000_001), 70),
        ];
        for k in 2..1_000_000 {
            let e = slice(
                k % 3,
                k as i64 * 1_000,
                k as i64 * 1_000 + 500,
                Some(k),
                70 * k,
            );
            log.push(&e);
            want.push(e);
        }
        let long = Logged::Skipped {
            message: "x".repeat(CHUNK + 1),
            at: at(1 << 40, 1),
        };
        log.push(&long);
        want.push(long);
        log.push(&slice(1, 0, 1, None, 1 << 41));
        want.push(slice(1, 0, 1, None, 1 << 41));
        assert!(log.chunks.len() > 2);
        assert_eq!(log.chunks.iter().filter(|c| c.len() > CHUNK).count(), 1);
        assert_eq!(log.into_iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_log_that_does_not_read_back_ends_in_a_skip_that_says_so() {
        let mut log = Log::default();
        log.push(&slice(9, 0, 0, None, 40));
        log.push(&slice(9, 0, 0, None, 50));
        // The second entry's tag (after the first's 9 bytes) made unknown; its offset reads back.
        log.chunks[0][9] = 0xFF;
        let read: Vec<_> = log.into_iter().collect();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0], slice(9, 0, 0, None, 40));
        assert!(
            matches!(&read[1], Logged::Skipped { message, at } if message.contains("a bug") && at.offset == 50)
        );
    }
}
