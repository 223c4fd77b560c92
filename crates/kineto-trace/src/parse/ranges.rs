//! One file on every core: `traceEvents` parsed in ranges on worker threads, proved and folded in by
//! the serial parser.
//!
//! The input is cut into fixed-size blocks ([`super::blocks`]). For each block a worker *guesses* an
//! event start inside it (a `{` after `},` — or after `: [` — followed by a key or `}`) and parses
//! events from there, each with the serial parser's own code, for as long as they lie whole in the
//! block and each is followed by a comma; its result is a [`Range`]: a builder holding those events,
//! and where the serial parse resumes (just after the last comma).
//!
//! Nothing a worker computes is trusted until proved. The serial parser ([`super::driver`]) runs over
//! the whole stream as it always does; when it is about to read an event at exactly the offset where
//! a block's range began, it is in the state the worker assumed (an element of `traceEvents` expected
//! after `[` or `,`) at the byte the worker started from, so the worker read exactly what it would
//! have read: the range is folded in ([`super::builder::Builder::absorb`]) and the window jumps to the
//! range's end. A guess the serial parser passes without landing on it (a `},{` inside a string, an
//! array of objects in a header value) is dropped, and that block is read serially. Errors, warnings
//! at odd bytes, truncation and salvage are therefore the serial parser's own: a worker never reports
//! anything; it stops before whatever it cannot read as a plain event followed by a comma, and the
//! serial parser reads that event itself.
//!
//! What it is not: a second parser: what a range found counts only once the serial parser proves it.

use super::blocks::{self, Block, BlockReader, Outlets, Pool};
use super::builder::{Builder, Spare};
use super::event::{RawEvent, event};
use super::window::Window;
use crate::error::{Error, Result};
use crate::scan::{Cursor, Stop};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

/// Bytes per block (and so per range) by default: small enough that every core gets work early, that
/// the blocks in flight (`InFlight`: threads + 3) cost little memory (5 MiB on 2 threads,
/// against 12 MiB at 2 MiB blocks and twice as many in flight, which put the threaded parse above a
/// quarter of the file) and that a block is still in cache when the hasher and a worker read it; large enough
/// that the seams (the event a block boundary cuts, read serially) and the merge (a few hundred
/// names per block) stay a small part of the work.
pub const RANGE_BYTES: usize = 1 << 20;

/// Bytes of blocks alive at once, whatever the worker count: what 2 workers hold at [`RANGE_BYTES`]
/// (5 × 1 MiB). Past 2 workers the blocks shrink so that the total stays here: on 16 workers 1 MiB
/// blocks held 19 MiB, and a 310 MB trace's parse peaked at 0.32 of the file (MEASURED, `--threads 16
/// --no-sha256`, with glibc's default arenas); the bound the parse is held to is a quarter.
const IN_FLIGHT_BYTES: usize = 5 * RANGE_BYTES;

/// A plain file's blocks in flight may hold this share of it (a 32nd) where that is more than
/// [`IN_FLIGHT_BYTES`], up to [`MAX_IN_FLIGHT_BYTES`]. With the hash on 2 cores the hasher falls
/// behind the workers by the blocks in flight and the reader then waits for a buffer while a core
/// idles; on the 310.2 MB bench trace, 8–13 blocks of 1 MiB instead of 5 kept 1.86–1.89 cores busy
/// instead of 1.76–1.82 (medians of 12–15 runs, `docs/parse-costs.md`). A 32nd of the file is 0.031 of it in RSS, under
/// the quarter the parse is held to, whatever the file's size; below 160 MiB it adds nothing.
const PLAIN_SHARE: u64 = 32;

/// The most bytes a file's share gives the blocks in flight.
const MAX_IN_FLIGHT_BYTES: usize = 16 * RANGE_BYTES;

/// The smallest block the budget shrinks to: each block costs a seam (one event read serially) and a
/// fold of its range (its distinct names re-interned), so on very many workers the budget gives way.
const MIN_BLOCK_BYTES: usize = 256 << 10;

/// The blocks alive at once and their size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InFlight {
    blocks: usize,
    block: usize,
}

impl InFlight {
    /// On `threads` workers, blocks of `range_bytes` (the default or a test's smaller one), for an
    /// input of `plain_bytes` as stored when it is a plain file of known size. Blocks: one per worker,
    /// the one the reader fills, the one the serial parser reads from, one of slack so that the reader
    /// runs ahead of a worker that finishes early, and one more per [`RANGE_BYTES`] a large file's
    /// share adds to the budget. Nothing waits on a block that needs a buffer to exist (the serial
    /// parser waits only for ranges of blocks it has been handed), so any count ≥ 2 is free of
    /// deadlock. The block size is held to the budget, never below [`MIN_BLOCK_BYTES`] on that
    /// account.
    fn of(threads: usize, range_bytes: usize, plain_bytes: Option<u64>) -> InFlight {
        let share = plain_bytes.map_or(0, |n| {
            usize::try_from(n / PLAIN_SHARE).unwrap_or(usize::MAX)
        });
        let budget = share.clamp(IN_FLIGHT_BYTES, MAX_IN_FLIGHT_BYTES);
        let blocks = threads + 3 + (budget - IN_FLIGHT_BYTES) / RANGE_BYTES;
        let budgeted = (budget / blocks).max(MIN_BLOCK_BYTES);
        InFlight {
            blocks,
            block: range_bytes.min(budgeted).max(1),
        }
    }
}

/// Event-start guesses a worker tries in one block before leaving the block to the serial parser.
const GUESSES: usize = 64;

/// Events a worker read, proved when the serial parser reaches `start`.
pub(super) struct Range {
    pub(super) builder: Builder,
    /// Stream offset just after the last comma read: where the serial parse resumes.
    pub(super) resume: u64,
    /// Stream offset of that comma.
    pub(super) comma: u64,
}

/// A block's outcome: where its range starts, and the range; `None` when no guess held.
type Outcome = Option<(u64, Box<Range>)>;

/// The ranges as workers finish them, looked up by the serial parser in block order.
pub(super) struct Ranges {
    rx: Receiver<(usize, Outcome)>,
    got: BTreeMap<usize, Outcome>,
    /// The first block whose range is neither used nor dropped.
    next: usize,
    block: u64,
    /// Ranges folded in.
    used: usize,
    /// Folded ranges' row vectors, for the workers' next builders.
    spares: Arc<Spares>,
}

/// Folded ranges' row vectors waiting for a worker's next builder ([`Spare`]), none once the events
/// have ended. At most one per block in flight, each of at most a block's bytes, so together no more
/// than the blocks in flight themselves ([`IN_FLIGHT_BYTES`] on up to 17 workers, more for a large
/// plain file, [`InFlight::of`]; [`MIN_BLOCK_BYTES`] a block past that): a spare's vectors keep the room of every kind of row the ranges it passed
/// through held, and a trace whose blocks are each of one kind would otherwise have it hold a block's
/// worth of rows of every kind.
struct Spares {
    pool: Mutex<Vec<Spare>>,
    cap: usize,
    max_bytes: usize,
    /// Builders made on a spare.
    reused: AtomicUsize,
}

impl Spares {
    fn new(cap: usize, max_bytes: usize) -> Spares {
        Spares {
            pool: Mutex::new(Vec::new()),
            cap,
            max_bytes,
            reused: AtomicUsize::new(0),
        }
    }

    /// A spare for a worker's next builder; an empty one when none waits.
    fn take(&self) -> Spare {
        match self.pool.lock().ok().and_then(|mut p| p.pop()) {
            Some(spare) => {
                self.reused.fetch_add(1, Ordering::Relaxed);
                spare
            }
            None => Spare::default(),
        }
    }

    /// Keeps a folded range's vectors for a worker, unless they are over the bytes a spare may hold or
    /// the pool is full (then they are freed).
    fn give(&self, spare: Spare) {
        if spare.bytes() > self.max_bytes {
            return;
        }
        if let Ok(mut p) = self.pool.lock()
            && p.len() < self.cap
        {
            p.push(spare);
        }
    }

    /// Frees every waiting spare.
    fn release(&self) {
        if let Ok(mut p) = self.pool.lock() {
            *p = Vec::new();
        }
    }
}

impl Ranges {
    /// Hands a folded range's emptied row vectors on to the workers.
    pub(super) fn recycle(&self, spare: Spare) {
        self.spares.give(spare);
    }

    /// The events have ended: no range will be folded, so the spares waiting are freed now, before
    /// the model is finished, not when the parse returns.
    pub(super) fn events_ended(&self) {
        self.spares.release();
    }

    /// The range that starts at stream offset `at`, if the serial parser (about to read an event
    /// there) can use one. Ranges that start before `at` were passed without being landed on:
    /// dropped. Only blocks that start at or before `at` are waited for, and those have been
    /// delivered, so their ranges are under way.
    pub(super) fn starting_at(&mut self, at: u64) -> Option<Box<Range>> {
        loop {
            let k = self.next;
            if at < (k as u64).saturating_mul(self.block) {
                return None;
            }
            let outcome = self.wait(k)?;
            match outcome {
                Some((start, range)) if start == at => {
                    self.next += 1;
                    self.used += 1;
                    return Some(range);
                }
                Some((start, range)) if start > at => {
                    self.got.insert(k, Some((start, range)));
                    return None;
                }
                _ => self.next += 1,
            }
        }
    }

    fn wait(&mut self, k: usize) -> Option<Outcome> {
        loop {
            if let Some(o) = self.got.remove(&k) {
                return Some(o);
            }
            match self.rx.recv() {
                Ok((i, o)) => {
                    self.got.insert(i, o);
                }
                Err(_) => {
                    // Every worker is gone: no range will come (the reader stopped early).
                    self.next = usize::MAX;
                    return None;
                }
            }
        }
    }
}

/// A worker's parse of one block (`python_frames`: [`crate::Options::python_frames`]).
fn parse_block(block: &Block, python_frames: bool, spares: &Spares) -> Outcome {
    let buf = &block.bytes[..];
    let mut from = 0;
    for _ in 0..GUESSES {
        let g = guess(buf, from)?;
        // A guess that does not hold (rare: a `},{` in a string) frees its builder, spare and all.
        match parse_from(buf, g, block.offset, python_frames, spares.take()) {
            Attempt::Range(r) => return Some((block.offset + g as u64, r)),
            Attempt::Wrong => from = g + 1,
            Attempt::RanOut => return None,
        }
    }
    None
}

enum Attempt {
    Range(Box<Range>),
    /// The first event did not read as an event followed by a comma: not an event start, or a fault
    /// the serial parser will report.
    Wrong,
    /// The block ended inside the first event.
    RanOut,
}

/// Events from `g` (a `{`) while each is whole in `buf`, valid, and followed by a comma.
fn parse_from(buf: &[u8], g: usize, base: u64, python_frames: bool, spare: Spare) -> Attempt {
    let mut b = Builder::reusing(python_frames, spare);
    b.base = base;
    let mut start = g;
    let mut last_comma = None;
    loop {
        let mut c = Cursor::new(buf, start);
        let mut ev = RawEvent::default();
        let read = event(&mut c, &mut ev).and_then(|()| c.ws_peek());
        let stop = match read {
            Ok(b',') => None,
            Err(Stop::NeedMore) => Some(Attempt::RanOut),
            _ => Some(Attempt::Wrong),
        };
        // An event is applied only once its comma is seen, so a range never ends inside the
        // serial parser's separator step. (A failed `apply` may leave counts touched; the serial
        // parser then fails on the same event, so the trace is never returned.)
        let stop = stop.or_else(|| b.apply(&ev, start).err().map(|_| Attempt::Wrong));
        if let Some(why) = stop {
            return match last_comma {
                None => why,
                Some(comma) => Attempt::Range(Box::new(Range {
                    builder: b,
                    resume: base + comma as u64 + 1,
                    comma: base + comma as u64,
                })),
            };
        }
        let comma = c.pos;
        last_comma = Some(comma);
        c.pos += 1;
        match c.ws_peek() {
            Ok(b'{') => start = c.pos,
            _ => {
                return Attempt::Range(Box::new(Range {
                    builder: b,
                    resume: base + comma as u64 + 1,
                    comma: base + comma as u64,
                }));
            }
        }
    }
}

/// The next plausible event start at or after `from`: a `{` whose previous non-whitespace byte is a
/// `,` after a `}` (or a `[` after a `:`), and whose next one opens a key or closes the object.
fn guess(buf: &[u8], from: usize) -> Option<usize> {
    let ws = |b: u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
    let before = |i: usize| buf[..i].iter().rposition(|&b| !ws(b));
    let mut at = from;
    while at < buf.len() {
        let i = at + memchr::memchr(b'{', &buf[at..])?;
        at = i + 1;
        let opens = buf[i + 1..]
            .iter()
            .find(|&&b| !ws(b))
            .is_some_and(|&b| b == b'"' || b == b'}');
        if !opens {
            continue;
        }
        let Some(p) = before(i) else { continue };
        let want = match buf[p] {
            b',' => b'}',
            b'[' => b':',
            _ => continue,
        };
        if before(p).is_some_and(|q| buf[q] == want) {
            return Some(i);
        }
    }
    None
}

/// Parses the stored bytes in `raw` on `threads` range workers, with the reader, the hasher (plain
/// input with a hash) and the serial parser on threads of their own. `stored_bytes`: the size of the
/// file `raw` reads, when known (a large plain file gets more blocks in flight, [`InFlight::of`]).
/// Returns the trace, the JSON bytes read, whether the input was gzip, and the sha256 when asked for.
pub(super) fn parse(
    name: &Path,
    raw: impl Read + Send,
    rules: (bool, bool),
    sha256: bool,
    threads: usize,
    range_bytes: usize,
    stored_bytes: Option<u64>,
) -> Result<crate::read::Parsed> {
    parse_counted(name, raw, rules, sha256, threads, range_bytes, stored_bytes).0
}

/// [`parse`], how many ranges were folded in (the rest of the input was read serially) and how many
/// range builders were made on a folded range's vectors. `(salvage, python_frames)`:
/// [`crate::Options`]'s.
fn parse_counted(
    name: &Path,
    raw: impl Read + Send,
    (salvage, python_frames): (bool, bool),
    sha256: bool,
    threads: usize,
    range_bytes: usize,
    stored_bytes: Option<u64>,
) -> (Result<crate::read::Parsed>, usize, usize) {
    let (gzip, raw) = match crate::stored::split_magic(raw) {
        Ok(split) => split,
        Err(source) => {
            let file = name.to_path_buf();
            return (Err(Error::Io { file, source }), 0, 0);
        }
    };
    let InFlight { blocks, block } =
        InFlight::of(threads, range_bytes, stored_bytes.filter(|_| !gzip));
    let pool = Pool::new(blocks, block);
    let (jobs_tx, jobs_rx) = channel::<Arc<Block>>();
    let jobs_rx = Mutex::new(jobs_rx);
    let (serial_tx, serial_rx) = channel();
    let (hash_tx, hash_rx) = if sha256 && !gzip {
        let (tx, rx) = channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let (parts_tx, parts_rx) = channel();
    let spares = Arc::new(Spares::new(blocks, block));
    std::thread::scope(|s| {
        let pool = &pool;
        let outlets = Outlets {
            jobs: jobs_tx,
            serial: serial_tx,
            hash: hash_tx,
        };
        let reader = match std::thread::Builder::new()
            .name("kineto-read".into())
            .spawn_scoped(s, move || blocks::reader(raw, gzip, sha256, pool, outlets))
        {
            Ok(h) => h,
            Err(source) => {
                let file = name.to_path_buf();
                return (Err(Error::Io { file, source }), 0, 0);
            }
        };
        let hasher = hash_rx.map(|rx| {
            std::thread::Builder::new()
                .name("kineto-sha256".into())
                .spawn_scoped(s, move || blocks::hasher(rx))
        });
        for _ in 0..threads {
            let tx = parts_tx.clone();
            let jobs = &jobs_rx;
            let spares = &spares;
            let _ = std::thread::Builder::new()
                .name("kineto-range".into())
                .spawn_scoped(s, move || {
                    loop {
                        let job = match jobs.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => break,
                        };
                        let Ok(block) = job else { break };
                        let outcome = if pool.is_closed() {
                            None
                        } else {
                            parse_block(&block, python_frames, spares)
                        };
                        let index = block.index;
                        drop(block);
                        if tx.send((index, outcome)).is_err() {
                            break;
                        }
                    }
                });
        }
        drop(parts_tx);
        let mut ranges = Ranges {
            rx: parts_rx,
            got: BTreeMap::new(),
            next: 0,
            block: block as u64,
            used: 0,
            spares: spares.clone(),
        };
        let mut src = BlockReader::new(serial_rx);
        let parsed = super::driver::parse_in(
            name,
            Window::new(&mut src),
            (salvage, python_frames),
            gzip,
            Some(&mut ranges),
        );
        // Stop the other threads: the reader at its next block, the workers at their next job.
        pool.close();
        drop(src);
        let used = ranges.used;
        drop(ranges);
        let read = reader.join().ok().flatten();
        let plain_digest = hasher.and_then(|h| h.ok()?.join().ok());
        let digest = match read {
            Some(d) if gzip => d,
            Some(_) => plain_digest,
            None => None,
        };
        let parsed = parsed.map(|(trace, json_bytes)| crate::read::Parsed {
            path: name.to_path_buf(),
            sha256: digest.map(|d| crate::stored::hex(&d)),
            gzip,
            json_bytes,
            trace,
        });
        (parsed, used, spares.reused.load(Ordering::Relaxed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges are used, not only proved safe by falling back: in a trace of Kineto-formatted events
    /// (`},\n  {` between events, nested `args`), every block but those the header and the end of
    /// the array occupy is folded in, plain and gzip, and the trace is the serial one.
    #[test]
    fn most_blocks_are_folded_in() {
        let ev = |i: usize| {
            format!(
                "{{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"pid\": 0, \"tid\": 7,\n    \
                 \"ts\": {}.500, \"dur\": 2.250,\n    \"args\": {{\n      \"correlation\": {i}\n    }}\n  }}",
                i % 13,
                i * 10
            )
        };
        let events: Vec<String> = (0..20_000).map(ev).collect();
        let text = format!(
            "{{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n  {}\n]}}",
            events.join(",\n  ")
        );
        let range = 64 << 10;
        let blocks = text.len().div_ceil(range);
        let serial =
            super::super::parse_reader(Path::new("r.json"), &mut text.as_bytes(), false, false)
                .expect("serial");
        let plain = text.clone().into_bytes();
        let packed = {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&plain).expect("gzip");
            e.finish().expect("gzip")
        };
        for (what, stored) in [("plain", plain), ("gzip", packed)] {
            let (parsed, used, reused) = parse_counted(
                Path::new("r.json"),
                &stored[..],
                (false, false),
                true,
                3,
                range,
                None,
            );
            let parsed = parsed.expect("parallel");
            assert!(
                used + 2 >= blocks,
                "{what}: {used} of {blocks} blocks folded in"
            );
            // Folded ranges hand their vectors on: later ranges' builders are made on them (a
            // spare comes only from a fold, so at most one per range folded).
            assert!(
                reused > 0 && reused <= used,
                "{what}: {reused} builders made on a spare, {used} ranges folded"
            );
            assert_eq!(
                format!("{:?}", parsed.trace),
                format!("{:?}", serial.0),
                "{what}"
            );
            assert_eq!(parsed.json_bytes, text.len() as u64);
            use sha2::Digest;
            let want = crate::stored::hex(&sha2::Sha256::digest(&stored));
            assert_eq!(parsed.sha256.as_deref(), Some(want.as_str()), "{what}");
        }
    }

    /// The blocks in flight hold at most 5 MiB up to the worker count where blocks reach their floor:
    /// 1 MiB each on 2 workers (5 × 1 MiB), 5 MiB / 19 on 16, 256 KiB from 18 workers on (5 MiB / 21
    /// is below it); a test's smaller range is kept.
    #[test]
    fn blocks_in_flight_stay_within_the_budget() {
        let mib = 1usize << 20;
        let block = |threads, range| InFlight::of(threads, range, None).block;
        assert_eq!(block(2, RANGE_BYTES), mib);
        assert_eq!(block(1, RANGE_BYTES), mib);
        assert_eq!(block(16, RANGE_BYTES), 5 * mib / 19);
        assert_eq!(block(18, RANGE_BYTES), 256 << 10);
        assert_eq!(block(64, RANGE_BYTES), 256 << 10);
        assert_eq!(block(16, 1000), 1000);
        assert_eq!(block(3, 0), 1);
        for threads in 1..=17 {
            let f = InFlight::of(threads, RANGE_BYTES, None);
            assert_eq!(f.blocks, threads + 3);
            assert!(f.blocks * f.block <= 5 * mib, "{threads} workers: {f:?}");
        }
    }

    /// A plain file's blocks in flight hold a 32nd of it where that is more than 5 MiB, up to 16
    /// MiB: on 2 workers, a 310.2 MB file (9.24 MiB) gets 5 + 4 blocks of 1 MiB; 100 MB (2.98 MiB)
    /// and an unknown size get the 5 of old; 1 GB (29.8 MiB) gets the cap, 5 + 11 blocks. On 16
    /// workers the 310.2 MB file's 9.24 MiB are 23 blocks of 9.24 MiB / 23 = 421 KiB.
    #[test]
    fn a_large_plain_file_gets_a_share_of_it_in_flight() {
        let mib = 1usize << 20;
        let of = |threads, bytes| InFlight::of(threads, RANGE_BYTES, bytes);
        assert_eq!(
            of(2, Some(310_184_929)),
            InFlight {
                blocks: 9,
                block: mib
            }
        );
        assert_eq!(of(2, Some(100_000_000)), of(2, None));
        assert_eq!(of(2, None).blocks, 5);
        assert_eq!(
            of(2, Some(1_000_000_000)),
            InFlight {
                blocks: 16,
                block: mib
            }
        );
        let wide = of(16, Some(310_184_929));
        assert_eq!(wide.blocks, 23);
        assert_eq!(wide.block, (310_184_929 / 32) as usize / 23);
        for threads in 1..=17 {
            for bytes in [1u64 << 20, 200_000_000, 310_184_929, 600_000_000, u64::MAX] {
                let f = of(threads, Some(bytes));
                let budget = ((bytes / 32) as usize).clamp(5 * mib, 16 * mib);
                assert!(
                    f.blocks * f.block <= budget || f.block == MIN_BLOCK_BYTES,
                    "{threads} workers, {bytes} bytes: {f:?}"
                );
            }
        }
    }

    /// A spare whose kernels vector has room for `kernels` rows.
    fn spare_of(kernels: usize) -> Spare {
        let mut b = Builder::new(false);
        let mut range = super::super::builder::RangeRows::default();
        range.ops[0].reserve_exact(kernels);
        b.range = Some(range);
        Spare::take(&mut b)
    }

    /// The pool keeps a spare for the next builder only while it is under a block's bytes and fewer
    /// than its count wait, counts the builders made on one, and frees all once the events end.
    #[test]
    fn the_spares_kept_stay_within_their_count_and_bytes() {
        let kernel = std::mem::size_of::<crate::model::GpuOp>();
        let spares = Spares::new(2, 100 * kernel);
        spares.give(spare_of(101));
        assert_eq!(spares.take().bytes(), 0, "over the bytes: freed, not kept");
        spares.give(spare_of(100));
        spares.give(spare_of(100));
        spares.give(spare_of(100));
        assert_eq!(spares.pool.lock().map(|p| p.len()).ok(), Some(2));
        assert_eq!(spares.take().bytes(), 100 * kernel);
        assert_eq!(spares.reused.load(Ordering::Relaxed), 1);
        spares.release();
        assert_eq!(spares.take().bytes(), 0, "released");
        assert_eq!(spares.reused.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn guesses_land_on_event_starts_and_skip_lookalikes() {
        let text = br#"{"a": [{"x": 1}], "traceEvents": [{"ph": "X"}, {"ph": "i"},{}]}"#;
        let first = guess(text, 0).expect("a guess");
        // `[{"x"` follows `"a": ` — a `:` before the `[`, so it is taken, and proved wrong later.
        assert_eq!(&text[first - 1..first + 3], b"[{\"x");
        let second = guess(text, first + 1).expect("a guess");
        assert_eq!(&text[second - 3..second + 4], b": [{\"ph");
        let third = guess(text, second + 1).expect("a guess");
        assert_eq!(&text[third - 3..third + 5], b"}, {\"ph\"");
        let fourth = guess(text, third + 1).expect("a guess");
        assert_eq!(&text[fourth - 2..fourth + 2], b"},{}");
        assert_eq!(guess(text, fourth + 1), None);
        // Inside a string, `{` followed by a key-like quote is still a guess when `},` precedes it:
        // the serial parser never lands on it, so it is never used.
        let s = br#"{"name": "a},{"}"#;
        assert_eq!(guess(s, 0), Some(13));
    }
}
