//! [`Rows`]: a table of the model's rows kept encoded (varints, each field less the row before's
//! where fields grow together), in blocks of [`Row::BLOCK`] rows, decoded as they are read. Every
//! table of GPU ops, calls and spans is kept so (an XPlane host op is 27 bytes of file and was a
//! 32-byte row, a GPU op 48): a span takes ~6–10 bytes, an op or call ~9–11 (`docs/parse-costs.md`,
//! issue 46; the encodings: `encodings.rs`).
//!
//! What it is not: an index. Reading row `i` decodes its block up to `i` (at most a block's rows less
//! one before it); whole passes (`iter`) and places read in increasing order ([`Rows::reader`])
//! decode each row once. Rows come back by value, never by reference.

use crate::read::detect::{put_varint, unzigzag, varint, zigzag};
use std::fmt;

/// Rows a block holds: reading row `i` decodes up to `BLOCK − 1` rows before it, and a block's start
/// takes 8 bytes and its first row is encoded against zero. 16 rows: ~0.5 byte a row more than 64 (8.6
/// bytes an XPlane host op against 8.0), and a quarter of the decoding for a row read by its place (a
/// launch's CPU op, for every kernel of `kineto kernels`).
pub const BLOCK: usize = 16;

/// Rows a sort's run holds decoded ([`Rows::sort_stable_by_key`]), each with its place: 320 KiB of
/// spans, 448 KiB of ops or calls (a run of 65,536 calls held 3.7 MB decoded).
const RUN: usize = 1 << 13;

/// A row [`Rows`] keeps encoded.
pub trait Row: Copy {
    /// The row a block's first row is encoded against.
    const FIRST: Self;
    /// Rows a block of these holds ([`BLOCK`] unless a kind of row is read mostly in passes and
    /// forward, where longer blocks cost less room and no more decoding).
    const BLOCK: usize = BLOCK;
    /// Appends `self` encoded against `before`, the row before it in its block.
    fn encode(&self, before: &Self, out: &mut Vec<u8>);
    /// The row [`Row::encode`] wrote at the start of `bytes`, advancing `bytes` past it.
    fn decode(before: &Self, bytes: &mut &[u8]) -> Self;
}

/// The next varint of `bytes`, advancing past it: the encoding is this module's own, so a short read
/// cannot happen; 0 if it did. Every pass over the spans runs this five times a row, and most values
/// take one to three bytes: those are read without a loop.
#[inline(always)]
pub(crate) fn next_varint(bytes: &mut &[u8]) -> u64 {
    let b = *bytes;
    if let [b0, b1, b2, ..] = *b {
        if b0 < 0x80 {
            *bytes = &b[1..];
            return u64::from(b0);
        }
        let low = u64::from(b0 & 0x7F);
        if b1 < 0x80 {
            *bytes = &b[2..];
            return low | u64::from(b1) << 7;
        }
        if b2 < 0x80 {
            *bytes = &b[3..];
            return low | u64::from(b1 & 0x7F) << 7 | u64::from(b2) << 14;
        }
    }
    match varint(b) {
        Some((v, rest)) => {
            *bytes = rest;
            v
        }
        None => {
            *bytes = &[];
            0
        }
    }
}

/// A name's or track's number.
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    put_varint(out, u64::from(v));
}

/// `v` less `before`, as a short varint when they are near.
#[inline]
pub(crate) fn put_step(out: &mut Vec<u8>, v: i64, before: i64) {
    put_varint(out, zigzag(v.wrapping_sub(before)));
}

/// The value [`put_step`] wrote against `before`.
#[inline]
pub(crate) fn next_step(bytes: &mut &[u8], before: i64) -> i64 {
    before.wrapping_add(unzigzag(next_varint(bytes)))
}

/// Bytes a segment of encoded blocks holds at most: a sort frees its input a segment at a time
/// ([`Rows::sort_stable_by_key`]), so this is what each run may hold beyond its rows then.
const SEGMENT: usize = 64 << 10;

/// Rows kept encoded, in the order added (or sorted, [`Rows::sort_stable_by_key`]).
#[derive(Clone)]
pub struct Rows<T: Row> {
    /// The whole blocks, one after another, in segments of at most [`SEGMENT`] bytes (a block is
    /// never split between two).
    segments: Vec<Vec<u8>>,
    /// Where each whole block begins: its segment (high 32 bits) and its offset there.
    blocks: Vec<u64>,
    /// The rows after the last whole block (fewer than [`BLOCK`]), not yet encoded.
    tail: Vec<T>,
}

impl<T: Row> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            segments: Vec::new(),
            blocks: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<T: Row> Rows<T> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.blocks.len() * T::BLOCK + self.tail.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.tail.is_empty()
    }

    /// Adds a row at the end.
    pub fn push(&mut self, row: T) {
        self.tail.push(row);
        if self.tail.len() == T::BLOCK {
            self.seal_tail();
        }
    }

    /// Encodes the tail, a whole block, at the end of the last segment (of a new one when it would
    /// pass [`SEGMENT`] bytes).
    fn seal_tail(&mut self) {
        if self.segments.is_empty() {
            self.segments.push(Vec::new());
        }
        let mut seg = self.segments.len() - 1;
        let start = self.segments[seg].len();
        let mut before = T::FIRST;
        for r in &self.tail {
            r.encode(&before, &mut self.segments[seg]);
            before = *r;
        }
        let mut at = start;
        if self.segments[seg].len() > SEGMENT && start > 0 {
            let block = self.segments[seg].split_off(start);
            // The segment may have doubled its room for the block that left it.
            self.segments[seg].shrink_to_fit();
            self.segments.push(block);
            seg += 1;
            at = 0;
        }
        self.blocks.push((seg as u64) << 32 | at as u64);
        self.tail.clear();
    }

    /// Row `i`, if there is one: its block decoded up to it.
    pub fn get(&self, i: usize) -> Option<T> {
        self.reader().get(i)
    }

    /// Row `i` of a place known to hold one (a place the model's own lists give, or one below
    /// [`Rows::len`]).
    ///
    /// # Panics
    /// When there is no row `i`, as a slice's index does.
    #[track_caller]
    pub fn row(&self, i: usize) -> T {
        match self.get(i) {
            Some(r) => r,
            None => panic!("row {i} of {}", self.len()),
        }
    }

    /// A reader of rows by their places that decodes forward from the last row it read when the
    /// next is later in the same block: places read in increasing order (a step's kernels, a list
    /// of matches) cost a decode a row, as a pass does, not one a row and the rows before it in its
    /// block.
    pub fn reader(&self) -> Reader<'_, T> {
        Reader {
            rows: self,
            at: Position::start(),
        }
    }

    /// The first row.
    pub fn first(&self) -> Option<T> {
        self.get(0)
    }

    /// Every row in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            rows: self,
            at: Position::start(),
        }
    }

    /// The bytes the rows take as kept (their room included): what the model holds for them.
    pub fn held_bytes(&self) -> usize {
        self.segments.iter().map(Vec::capacity).sum::<usize>()
            + self.segments.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.blocks.capacity() * std::mem::size_of::<u64>()
            + self.tail.capacity() * std::mem::size_of::<T>()
    }

    /// The bytes the rows take, their room aside: the encoded blocks, where each begins, and the rows
    /// not yet encoded (fewer than a block) whole.
    pub fn encoded_bytes(&self) -> usize {
        self.segments.iter().map(Vec::len).sum::<usize>()
            + self.blocks.len() * std::mem::size_of::<u64>()
            + self.tail.len() * std::mem::size_of::<T>()
    }

    /// Sorts the rows by `key`, rows of equal keys in the order they were in (a stable sort). Rows
    /// already in order are left as they are; others are sorted 8,192 rows at a time, each run kept
    /// encoded, then the runs merged. Each step frees what it has read a segment at a time, so the
    /// sort holds about the encoded rows once (and a segment per run, and one run decoded), never
    /// the rows decoded nor their encoding twice.
    pub fn sort_stable_by_key<K: Ord>(&mut self, key: impl Fn(&T) -> K) {
        self.sort_in_runs(RUN, key, false);
    }

    /// [`Rows::sort_stable_by_key`], returning for each place of the sorted rows the place its row
    /// was at (4 bytes a row; empty when the rows were in order already): for a list kept beside
    /// the rows, to follow them.
    pub fn sort_stable_by_key_order<K: Ord>(&mut self, key: impl Fn(&T) -> K) -> Vec<u32> {
        self.sort_in_runs(RUN, key, true)
    }

    /// [`Rows::sort_stable_by_key`] with runs of `run_rows` rows (the tests' runs are short), the
    /// order returned when `order` is asked for.
    fn sort_in_runs<K: Ord>(
        &mut self,
        run_rows: usize,
        key: impl Fn(&T) -> K,
        order: bool,
    ) -> Vec<u32> {
        if self.iter().map(|r| key(&r)).is_sorted() {
            return Vec::new();
        }
        let run_rows = run_rows.max(1);
        // Each run's rows, and (when the order is asked for) the place each came from.
        let mut runs: Vec<(Rows<T>, Vec<u32>)> = Vec::new();
        let mut run: Vec<(T, u32)> = Vec::with_capacity(run_rows.min(self.len()));
        let mut seal = |run: &mut Vec<(T, u32)>| {
            run.sort_by_key(|a| key(&a.0));
            let places = if order {
                run.iter().map(|r| r.1).collect()
            } else {
                Vec::new()
            };
            runs.push((run.drain(..).map(|r| r.0).collect(), places));
        };
        for (i, row) in std::mem::take(self).drain().enumerate() {
            run.push((row, i as u32));
            if run.len() == run_rows {
                seal(&mut run);
            }
        }
        seal(&mut run);
        let mut sorted = Vec::new();
        // One head per run; equal keys go to the earlier run, whose rows came first.
        let mut drains: Vec<(Drain<T>, std::vec::IntoIter<u32>)> = runs
            .into_iter()
            .map(|(rows, places)| (rows.drain(), places.into_iter()))
            .collect();
        let mut heads: Vec<Option<T>> = drains.iter_mut().map(|d| d.0.next()).collect();
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(K, usize)>> = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|r| std::cmp::Reverse((key(r), i))))
            .collect();
        while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
            if let Some(row) = heads[i].take() {
                self.push(row);
                if let Some(place) = drains[i].1.next() {
                    sorted.push(place);
                }
            }
            heads[i] = drains[i].0.next();
            if let Some(r) = &heads[i] {
                heap.push(std::cmp::Reverse((key(r), i)));
            }
        }
        sorted
    }

    /// Every row in order, each segment freed once its rows are read.
    fn drain(self) -> Drain<T> {
        Drain {
            rows: self,
            at: Position::start(),
            freed: 0,
        }
    }
}

/// A block's segment and offset.
fn place(start: u64) -> (usize, usize) {
    ((start >> 32) as usize, (start & 0xFFFF_FFFF) as usize)
}

/// Where a pass over a [`Rows`] stands: the next row's place, and where it is encoded.
#[derive(Clone)]
struct Position<T> {
    /// The place of the next row.
    next: usize,
    /// The segment of the current block, and the offset of the next row in it.
    segment: usize,
    at: usize,
    /// The row before in the current block.
    before: T,
}

impl<T: Row> Position<T> {
    fn start() -> Self {
        Position {
            next: 0,
            segment: 0,
            at: 0,
            before: T::FIRST,
        }
    }

    /// The next row of `rows`, the position moved past it.
    #[inline(always)]
    fn step(&mut self, rows: &Rows<T>) -> Option<T> {
        let i = self.next;
        let block = i / T::BLOCK;
        let row = if block < rows.blocks.len() {
            if i.is_multiple_of(T::BLOCK) {
                (self.segment, self.at) = place(rows.blocks[block]);
                self.before = T::FIRST;
            }
            let segment = &rows.segments[self.segment];
            let mut cursor = &segment[self.at..];
            let row = T::decode(&self.before, &mut cursor);
            self.at = segment.len() - cursor.len();
            self.before = row;
            row
        } else {
            *rows.tail.get(i - rows.blocks.len() * T::BLOCK)?
        };
        self.next += 1;
        Some(row)
    }
}

/// The rows of a [`Rows`], decoded one at a time.
#[derive(Clone)]
pub struct Iter<'a, T: Row> {
    rows: &'a Rows<T>,
    at: Position<T>,
}

impl<T: Row> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.at.step(self.rows)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rows.len() - self.at.next;
        (n, Some(n))
    }
}

impl<T: Row> ExactSizeIterator for Iter<'_, T> {}

/// Rows read by their places ([`Rows::reader`]).
pub struct Reader<'a, T: Row> {
    rows: &'a Rows<T>,
    /// Just past the row read last (or at the start).
    at: Position<T>,
}

impl<T: Row> Reader<'_, T> {
    /// Row `i`, if there is one.
    #[inline]
    pub fn get(&mut self, i: usize) -> Option<T> {
        let next = self.at.next;
        // Forward in the current block, or from the start of `i`'s.
        if i < next || i / T::BLOCK != next / T::BLOCK {
            self.at.next = i - i % T::BLOCK;
        }
        while self.at.next < i {
            self.at.step(self.rows)?;
        }
        self.at.step(self.rows)
    }

    /// Row `i` of a place known to hold one, as [`Rows::row`].
    ///
    /// # Panics
    /// When there is no row `i`, as a slice's index does.
    #[inline]
    #[track_caller]
    pub fn row(&mut self, i: usize) -> T {
        match self.get(i) {
            Some(r) => r,
            None => panic!("row {i} of {}", self.rows.len()),
        }
    }
}

/// The rows of a [`Rows`] it owns, decoded one at a time, each segment freed once read.
struct Drain<T: Row> {
    rows: Rows<T>,
    at: Position<T>,
    /// The segments before this one are freed.
    freed: usize,
}

impl<T: Row> Iterator for Drain<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let row = self.at.step(&self.rows)?;
        // Every segment before the current block's has been read; past the blocks, every one.
        let read = if self.at.next > self.rows.blocks.len() * T::BLOCK {
            self.rows.segments.len()
        } else {
            self.at.segment
        };
        for done in self.freed..read {
            self.rows.segments[done] = Vec::new();
        }
        self.freed = self.freed.max(read);
        Some(row)
    }
}

impl<'a, T: Row> IntoIterator for &'a Rows<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T: Row> Extend<T> for Rows<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, rows: I) {
        for r in rows {
            self.push(r);
        }
    }
}

impl<T: Row> FromIterator<T> for Rows<T> {
    fn from_iter<I: IntoIterator<Item = T>>(rows: I) -> Self {
        let mut out = Rows::default();
        out.extend(rows);
        out
    }
}

impl<T: Row> From<Vec<T>> for Rows<T> {
    fn from(rows: Vec<T>) -> Self {
        rows.into_iter().collect()
    }
}

impl<T: Row + PartialEq> PartialEq for Rows<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// As the list of rows, as a `Vec` of them shows.
impl<T: Row + fmt::Debug> fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Span, Sym, Track};
    use std::num::NonZeroU64;

    fn span(ts_ns: i64, dur_ns: i64, name: u32, track: u32, id: u64) -> Span {
        Span {
            name: Sym(name),
            ts_ns,
            dur_ns,
            track: Track(track),
            external_id: NonZeroU64::new(id),
        }
    }

    /// Spans with every field at its extremes and in between, across whole blocks and a tail.
    fn mixed(n: usize) -> Vec<Span> {
        let edges = [i64::MIN, -1, 0, 1, i64::MAX];
        (0..n)
            .map(|i| {
                let e = edges[i % edges.len()];
                span(
                    e.wrapping_mul(i as i64 | 1),
                    edges[(i / 5) % edges.len()],
                    if i % 7 == 0 { u32::MAX } else { i as u32 },
                    (i % 3) as u32,
                    match i % 4 {
                        0 => u64::MAX,
                        1 => 0, // no external id
                        _ => i as u64,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn rows_come_back_whole_by_place_and_in_order() {
        let want = mixed(2 * BLOCK + 5);
        let rows: Rows<Span> = want.clone().into();
        assert_eq!(rows.len(), want.len());
        assert_eq!(rows.iter().collect::<Vec<_>>(), want);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(rows.get(i).as_ref(), Some(w), "row {i}");
        }
        assert_eq!(rows.get(want.len()), None);
        assert_eq!(rows.first(), want.first().copied());
        assert_eq!(rows.get(want.len() - 1), want.last().copied());
        // Two whole blocks encoded, the 5 rows after them held whole.
        assert_eq!(rows.blocks.len(), 2);
        assert_eq!(rows.tail.len(), 5);
        assert_eq!(format!("{rows:?}"), format!("{want:?}"));
    }

    /// GPU ops and calls (the other rows kept encoded) come back whole at their fields' extremes:
    /// each takes a span's fields of [`mixed`] and its own (correlation, detail; API, callback id).
    #[test]
    fn gpu_ops_and_calls_come_back_whole() {
        use crate::model::{Api, Detail, GpuOp, Launch};
        let spans = mixed(3 * BLOCK + 7);
        let ops: Vec<GpuOp> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| GpuOp {
                name: s.name,
                ts_ns: s.ts_ns,
                dur_ns: s.dur_ns,
                track: s.track,
                // Another id's extremes than the external id's, in another order.
                correlation: NonZeroU64::new([0, 1, u64::MAX, i as u64][i % 4]),
                external_id: s.external_id,
                detail: Detail([0, u32::MAX, i as u32][i % 3]),
            })
            .collect();
        let calls: Vec<Launch> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| Launch {
                name: s.name,
                api: if i % 2 == 0 {
                    Api::Runtime
                } else {
                    Api::Driver
                },
                ts_ns: s.ts_ns,
                dur_ns: s.dur_ns,
                track: s.track,
                correlation: NonZeroU64::new([u64::MAX, 0, 7][i % 3]),
                external_id: s.external_id,
                cbid: [None, Some(0), Some(u16::MAX), Some(211)][i % 4],
            })
            .collect();
        let kept: Rows<GpuOp> = ops.clone().into();
        assert_eq!(kept.iter().collect::<Vec<_>>(), ops);
        let kept: Rows<Launch> = calls.clone().into();
        assert_eq!(kept.iter().collect::<Vec<_>>(), calls);
    }

    /// A reader gives each place's row whatever the order the places come in: forward within a
    /// block and across blocks, back, repeated, and into the rows held whole after the blocks.
    #[test]
    fn a_reader_reads_any_place_as_get_does() {
        let want = mixed(3 * BLOCK + 5);
        let rows: Rows<Span> = want.clone().into();
        let n = want.len();
        let places: Vec<usize> = (0..n)
            .chain((0..n).rev())
            .chain([3, 3, 2, 17, 16, 15, 47, 48, 52, 0, 52, 31, 33, 5])
            .chain((0..n).step_by(3))
            .collect();
        let mut reader = rows.reader();
        for &i in &places {
            assert_eq!(reader.get(i), Some(want[i]), "row {i}");
        }
        assert_eq!(reader.get(n), None);
        assert_eq!(reader.row(4), want[4]);
        // GPU ops, in blocks of 32: the same places, across their blocks and tail.
        use crate::model::{Detail, GpuOp};
        let ops: Vec<GpuOp> = want
            .iter()
            .map(|s| GpuOp {
                name: s.name,
                ts_ns: s.ts_ns,
                dur_ns: s.dur_ns,
                track: s.track,
                correlation: s.external_id,
                external_id: s.external_id,
                detail: Detail(s.name.0),
            })
            .collect();
        let kept: Rows<GpuOp> = ops.clone().into();
        assert_eq!(kept.blocks.len(), n / GpuOp::BLOCK);
        let mut reader = kept.reader();
        for &i in &places {
            assert_eq!(reader.get(i), Some(ops[i]), "op {i}");
            assert_eq!(kept.get(i), Some(ops[i]), "op {i}");
        }
    }

    #[test]
    #[should_panic(expected = "row 5 of 5")]
    fn a_row_past_the_end_panics_as_an_index_does() {
        let rows: Rows<Span> = mixed(5).into();
        rows.row(5);
    }

    #[test]
    fn a_thread_of_spans_takes_a_few_bytes_each() {
        // One block of spans 1 µs apart on one thread, each 300 ns long, names 0..4, external ids
        // counting up from 1000. After the first row, against the row before:
        //   start step 1 000 ns: zigzag 2 000, 2 bytes (< 2^14); duration 300: zigzag 600, 2 bytes;
        //   name < 128: 1 byte; track 0: 1 byte; id step 1: zigzag 2, 1 byte. 7 bytes a row.
        // The first row against zero: start 5 000 000 → zigzag 10 000 000 (4 bytes: < 2^28),
        //   duration 2 bytes, name 1, track 1, id 1000 → 2000 (2 bytes): 10 bytes.
        let rows: Rows<Span> = (0..BLOCK as i64)
            .map(|i| {
                span(
                    5_000_000 + 1_000 * i,
                    300,
                    (i % 4) as u32,
                    0,
                    1000 + i as u64,
                )
            })
            .collect();
        let block_start = std::mem::size_of::<u64>();
        assert_eq!(rows.encoded_bytes(), 10 + 7 * (BLOCK - 1) + block_start);
        // 32 bytes a row held whole.
        assert_eq!(std::mem::size_of::<Span>(), 32);
    }

    #[test]
    fn segments_hold_whole_blocks_and_a_drain_frees_each_once_read() {
        let want = mixed(20_003);
        let rows: Rows<Span> = want.clone().into();
        assert!(rows.segments.len() > 3, "{} segments", rows.segments.len());
        // A block that would take a segment past SEGMENT bytes starts the next one, and a full segment
        // holds its room exactly.
        for seg in &rows.segments[..rows.segments.len() - 1] {
            assert!(seg.len() <= SEGMENT, "{}", seg.len());
            assert_eq!(seg.capacity(), seg.len());
        }
        let mut drain = rows.drain();
        let half: Vec<Span> = drain.by_ref().take(want.len() / 2).collect();
        assert_eq!(half, want[..want.len() / 2]);
        let freed = drain
            .rows
            .segments
            .iter()
            .take_while(|s| s.capacity() == 0)
            .count();
        assert!(
            freed >= 1 && freed < drain.rows.segments.len(),
            "{freed} freed"
        );
        let rest: Vec<Span> = drain.by_ref().collect();
        assert_eq!(rest, want[want.len() / 2..]);
        assert!(drain.rows.segments.iter().all(|s| s.capacity() == 0));
    }

    proptest::proptest! {
        /// Sorting kept rows, in runs merged, gives the order a stable sort of the rows gives: equal
        /// keys in the order added, whatever the run length.
        #[test]
        fn a_sort_in_runs_is_the_stable_sort(
            rows in proptest::collection::vec((-20i64..20, 0i64..4, 0u32..1000), 0..300),
            run_rows in 1usize..80,
        ) {
            let want: Vec<Span> = rows
                .iter()
                .enumerate()
                .map(|(i, &(ts, dur, name))| span(ts, dur, name, 0, i as u64 + 1))
                .collect();
            let key = |s: &Span| (s.ts_ns, std::cmp::Reverse(s.dur_ns));
            let mut sorted = want.clone();
            sorted.sort_by_key(key);
            let mut kept: Rows<Span> = want.clone().into();
            let order = kept.sort_in_runs(run_rows, key, true);
            proptest::prop_assert_eq!(kept.iter().collect::<Vec<_>>(), sorted.clone());
            // The order names, for each sorted place, the row's place before: none when in order.
            if want == sorted {
                proptest::prop_assert!(order.is_empty());
            } else {
                let moved: Vec<Span> = order.iter().map(|&i| want[i as usize]).collect();
                proptest::prop_assert_eq!(moved, sorted);
            }
        }
    }
}
