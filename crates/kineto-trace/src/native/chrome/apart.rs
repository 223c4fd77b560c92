//! The fields of a Chrome-array [`Item`](super::items::Item) that most events have none of
//! ([`More`]), kept apart from it and encoded ([`Apart`]): each set as a mask of the fields it has,
//! then each of them as a varint (a signed one zigzagged), text as its length and bytes. A set with an
//! `External id` takes 4 bytes where the struct takes over 200: a Kineto-category array's CPU ops, and its
//! kernels' grid and block, each have one, and nsys2json's GPU ops their category.
//!
//! What it is not: the item (`super::items`) or what the fields mean (`super`).

use super::args::Odd;
use crate::model::rows::{next_step, next_varint, put_step};
use crate::read::detect::put_varint;
use std::num::NonZeroU64;

/// The fields of an item most events have none of, kept apart so that an item stays small.
#[derive(Debug, Default, PartialEq)]
pub(super) struct More {
    pub(super) external_id: Option<NonZeroU64>,
    /// The device and stream when they do not fit in the item.
    pub(super) device: Option<i64>,
    pub(super) stream: Option<i64>,
    pub(super) bytes: Option<u64>,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    /// The `args` fields of an unusable form (warned of where the role reads them).
    pub(super) odd: Odd,
    /// A key written twice in `args`, or `args` not an object.
    pub(super) odd_args: Option<String>,
    /// The category of another producer's GPU work (`trace_events::foreign_gpu_category`): a GPU op
    /// if its pid is a device (`trace_events::DevicePids`, known once every event is read), else
    /// counted under it.
    pub(super) foreign_cat: Option<Box<str>>,
    /// Kineto's kernel facts (`registers per thread`, `shared memory`, `graph id`, `graph node id`).
    pub(super) registers: Option<u32>,
    pub(super) shared_memory: Option<u32>,
    pub(super) graph_id: Option<u64>,
    pub(super) graph_node_id: Option<u64>,
    /// The event's own `ts` and `ts + dur` ([`super::items::Held::flow_ts`], `flow_end`) when they
    /// do not fit in the item.
    pub(super) flow: Option<(i64, i64)>,
    /// The duration and the correlation id when they do not fit in the item.
    pub(super) dur: Option<i64>,
    pub(super) correlation: Option<NonZeroU64>,
}

/// A field's bit in a set's mask (the fields follow it in the order [`More::encode`] writes them).
pub(super) mod bit {
    // The common ones first, in the mask's first byte: a CPU op's `External id`, a kernel's grid and
    // block, another producer's GPU category, a copy's bytes.
    pub(in super::super) const EXTERNAL_ID: u64 = 1;
    pub(in super::super) const GRID: u64 = 1 << 1;
    pub(in super::super) const BLOCK: u64 = 1 << 2;
    pub(in super::super) const FOREIGN_CAT: u64 = 1 << 3;
    pub(in super::super) const BYTES: u64 = 1 << 4;
    pub(in super::super) const DEVICE: u64 = 1 << 5;
    pub(in super::super) const STREAM: u64 = 1 << 6;
    pub(in super::super) const ODD: u64 = 1 << 7;
    pub(in super::super) const ODD_ARGS: u64 = 1 << 8;
    pub(in super::super) const FLOW: u64 = 1 << 9;
    pub(in super::super) const DUR: u64 = 1 << 10;
    pub(in super::super) const CORRELATION: u64 = 1 << 11;
    pub(in super::super) const REGISTERS: u64 = 1 << 12;
    pub(in super::super) const SHARED_MEMORY: u64 = 1 << 13;
    pub(in super::super) const GRAPH_ID: u64 = 1 << 14;
    pub(in super::super) const GRAPH_NODE_ID: u64 = 1 << 15;

    /// Kineto's kernel facts: plain varints after the texts, before the numbers every reader asks.
    pub(super) const KERNEL_FACTS: [u64; 4] = [REGISTERS, SHARED_MEMORY, GRAPH_ID, GRAPH_NODE_ID];
}

/// The numbers of a set, read without its text: what an item's readers ask of it while the file is
/// read and the flows linked.
#[derive(Clone, Copy, Default)]
pub(super) struct Nums {
    pub(super) device: Option<i64>,
    pub(super) stream: Option<i64>,
    pub(super) flow: Option<(i64, i64)>,
    pub(super) dur: Option<i64>,
    pub(super) correlation: Option<NonZeroU64>,
    pub(super) foreign_cat: bool,
}

/// Encoded sets, one after another: a chunk's list, or a fresh item's own. A set is named by its
/// place + 1 (0: none); a set changed is written again at the end, and the old one left unnamed.
#[derive(Default)]
pub(super) struct Apart {
    bytes: Vec<u8>,
    /// Sets written (named or not), for the tests.
    #[cfg(test)]
    sets: usize,
}

impl Apart {
    /// A chunk's list: room for 16 bytes an item of a full chunk, reserved, not written, so that the
    /// list is mapped apart (above glibc's mmap threshold, held at 128 KiB) and costs only the pages
    /// its sets fill; grown by doubling from nothing, its buffers stayed on the heap, which kept the
    /// freed ones. On the 110 MB nsys2json-style array of `docs/parse-costs.md` (every GPU op has a
    /// set) the peak was 33,832–34,232 KiB without the reservation and 32,668–32,992 KiB with it; on
    /// bench-native's Chrome array (few sets) the same either way (4 runs each, fresh copies of both
    /// binaries, MEASURED 2026-12-08).
    pub(super) fn for_chunk() -> Apart {
        let mut apart = Apart::default();
        apart.bytes.reserve_exact(16 * super::items::CHUNK);
        apart
    }

    /// Writes `more` at the end: its name.
    pub(super) fn push(&mut self, more: &More) -> u32 {
        let at = self.bytes.len();
        more.encode(&mut self.bytes);
        #[cfg(test)]
        {
            self.sets += 1;
        }
        // An item's offset is 32 bits, and a chunk begins anew before its text passes 4 GiB; its sets
        // are a few bytes an item.
        u32::try_from(at + 1).unwrap_or(u32::MAX)
    }

    /// Writes the last set of `from` (a fresh item's list, whose set is always its last: a set
    /// changed is written again at the end) at the end, as it is encoded: its name here, or 0 where
    /// `n`, its name there, is none.
    pub(super) fn push_last_of(&mut self, from: &Apart, n: u32) -> u32 {
        let Some(set) = from.at(n) else { return 0 };
        let at = self.bytes.len();
        self.bytes.extend_from_slice(set);
        #[cfg(test)]
        {
            self.sets += 1;
        }
        u32::try_from(at + 1).unwrap_or(u32::MAX)
    }

    /// The set named `n`, whole.
    pub(super) fn get(&self, n: u32) -> Option<More> {
        Some(More::decode(self.at(n)?))
    }

    /// The numbers of the set named `n` when it has one of the fields `bits` names ([`bit`]): its
    /// mask is read first, and the rest only then (the flow links sort the items by their times,
    /// asking each one's many times).
    #[inline]
    pub(super) fn nums_having(&self, n: u32, bits: u64) -> Option<Nums> {
        let set = self.at(n)?;
        let mut mask = set;
        if next_varint(&mut mask) & bits == 0 {
            return None;
        }
        Some(Nums::decode(set))
    }

    #[inline]
    fn at(&self, n: u32) -> Option<&[u8]> {
        self.bytes.get((n as usize).checked_sub(1)?..)
    }

    #[cfg(test)]
    pub(super) fn sets(&self) -> usize {
        self.sets
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

impl More {
    fn mask(&self) -> u64 {
        let mut m = 0;
        let mut on = |b: u64, set: bool| {
            if set {
                m |= b;
            }
        };
        on(bit::EXTERNAL_ID, self.external_id.is_some());
        on(bit::DEVICE, self.device.is_some());
        on(bit::STREAM, self.stream.is_some());
        on(bit::BYTES, self.bytes.is_some());
        on(bit::GRID, self.grid != [0; 3]);
        on(bit::BLOCK, self.block != [0; 3]);
        on(bit::ODD, self.odd != Odd::default());
        on(bit::ODD_ARGS, self.odd_args.is_some());
        on(bit::FOREIGN_CAT, self.foreign_cat.is_some());
        on(bit::FLOW, self.flow.is_some());
        on(bit::DUR, self.dur.is_some());
        on(bit::CORRELATION, self.correlation.is_some());
        for (b, v) in bit::KERNEL_FACTS.into_iter().zip(self.kernel_facts()) {
            on(b, v.is_some());
        }
        m
    }

    /// [`bit::KERNEL_FACTS`]' fields, in their order.
    fn kernel_facts(&self) -> [Option<u64>; 4] {
        [
            self.registers.map(u64::from),
            self.shared_memory.map(u64::from),
            self.graph_id,
            self.graph_node_id,
        ]
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.mask());
        let id = |v: Option<NonZeroU64>| v.map_or(0, NonZeroU64::get);
        if self.external_id.is_some() {
            put_varint(out, id(self.external_id));
        }
        for v in [self.device, self.stream].into_iter().flatten() {
            put_step(out, v, 0);
        }
        if let Some(b) = self.bytes {
            put_varint(out, b);
        }
        for dims in [self.grid, self.block] {
            if dims != [0; 3] {
                dims.iter().for_each(|&d| put_varint(out, u64::from(d)));
            }
        }
        if self.odd != Odd::default() {
            put_varint(out, u64::from(self.odd.bits()));
        }
        for text in [self.odd_args.as_deref(), self.foreign_cat.as_deref()]
            .into_iter()
            .flatten()
        {
            put_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        for v in self.kernel_facts().into_iter().flatten() {
            put_varint(out, v);
        }
        if let Some((t, e)) = self.flow {
            put_step(out, t, 0);
            put_step(out, e, t);
        }
        if let Some(d) = self.dur {
            put_step(out, d, 0);
        }
        if self.correlation.is_some() {
            put_varint(out, id(self.correlation));
        }
    }

    fn decode(mut b: &[u8]) -> More {
        let mask = next_varint(&mut b);
        let has = |f: u64| mask & f != 0;
        let mut m = More::default();
        let b = &mut b;
        if has(bit::EXTERNAL_ID) {
            m.external_id = NonZeroU64::new(next_varint(b));
        }
        if has(bit::DEVICE) {
            m.device = Some(next_step(b, 0));
        }
        if has(bit::STREAM) {
            m.stream = Some(next_step(b, 0));
        }
        if has(bit::BYTES) {
            m.bytes = Some(next_varint(b));
        }
        for (f, dims) in [(bit::GRID, &mut m.grid), (bit::BLOCK, &mut m.block)] {
            if has(f) {
                dims.iter_mut().for_each(|d| *d = next_varint(b) as u32);
            }
        }
        if has(bit::ODD) {
            m.odd = Odd::of_bits(next_varint(b) as u16);
        }
        if has(bit::ODD_ARGS) {
            m.odd_args = Some(next_text(b).to_string());
        }
        if has(bit::FOREIGN_CAT) {
            m.foreign_cat = Some(next_text(b).into());
        }
        let [r, s, g, n] = bit::KERNEL_FACTS.map(|f| has(f).then(|| next_varint(b)));
        // Written from a u32 (`More::kernel_facts`).
        (m.registers, m.shared_memory) = (r.map(|v| v as u32), s.map(|v| v as u32));
        (m.graph_id, m.graph_node_id) = (g, n);
        let (flow, dur, correlation) = next_nums(mask, b);
        (m.flow, m.dur, m.correlation) = (flow, dur, correlation);
        m
    }
}

impl Nums {
    /// The numbers of a set taken whole, when it has one of the fields `bits` names ([`bit`]), as
    /// [`Apart::nums_having`] reads an encoded one.
    pub(super) fn of_having(m: &More, bits: u64) -> Option<Nums> {
        (m.mask() & bits != 0).then(|| Nums::of(m))
    }

    /// The numbers of a set taken whole.
    fn of(m: &More) -> Nums {
        Nums {
            device: m.device,
            stream: m.stream,
            flow: m.flow,
            dur: m.dur,
            correlation: m.correlation,
            foreign_cat: m.foreign_cat.is_some(),
        }
    }

    fn decode(mut b: &[u8]) -> Nums {
        let mask = next_varint(&mut b);
        let has = |f: u64| mask & f != 0;
        let b = &mut b;
        if has(bit::EXTERNAL_ID) {
            next_varint(b);
        }
        let device = has(bit::DEVICE).then(|| next_step(b, 0));
        let stream = has(bit::STREAM).then(|| next_step(b, 0));
        let skip = [
            (bit::BYTES, 1),
            (bit::GRID, 3),
            (bit::BLOCK, 3),
            (bit::ODD, 1),
        ];
        for (f, n) in skip {
            if has(f) {
                (0..n).for_each(|_| {
                    next_varint(b);
                });
            }
        }
        for f in [bit::ODD_ARGS, bit::FOREIGN_CAT] {
            if has(f) {
                next_bytes(b);
            }
        }
        for f in bit::KERNEL_FACTS {
            if has(f) {
                next_varint(b);
            }
        }
        let (flow, dur, correlation) = next_nums(mask, b);
        Nums {
            device,
            stream,
            flow,
            dur,
            correlation,
            foreign_cat: has(bit::FOREIGN_CAT),
        }
    }
}

/// The flow times, duration and correlation id that close a set of `mask`.
fn next_nums(mask: u64, b: &mut &[u8]) -> (Option<(i64, i64)>, Option<i64>, Option<NonZeroU64>) {
    let has = |f: u64| mask & f != 0;
    let flow = has(bit::FLOW).then(|| {
        let t = next_step(b, 0);
        (t, next_step(b, t))
    });
    let dur = has(bit::DUR).then(|| next_step(b, 0));
    let correlation = if has(bit::CORRELATION) {
        NonZeroU64::new(next_varint(b))
    } else {
        None
    };
    (flow, dur, correlation)
}

/// A text [`More::encode`] wrote: its length, then its bytes (valid UTF-8, as written).
fn next_text<'a>(b: &mut &'a [u8]) -> &'a str {
    std::str::from_utf8(next_bytes(b)).unwrap_or_default()
}

/// The bytes of a text [`More::encode`] wrote, not checked (the numbers read past them).
fn next_bytes<'a>(b: &mut &'a [u8]) -> &'a [u8] {
    let len = (next_varint(b) as usize).min(b.len());
    let (text, rest) = b.split_at(len);
    *b = rest;
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field, alone and all together, at the edges of its range, comes back as written, after
    /// another set in the same list; the numbers read without the text agree.
    #[test]
    fn each_set_comes_back_as_written() {
        let big = NonZeroU64::new(u64::MAX);
        let all = More {
            external_id: big,
            device: Some(i64::MIN),
            stream: Some(-1),
            bytes: Some(u64::MAX),
            grid: [u32::MAX, 0, 1],
            block: [0, 0, 7],
            odd: Odd::of_bits(0x7FF),
            odd_args: Some("\"x\" twice, é".into()),
            foreign_cat: Some("cuda".into()),
            registers: Some(u32::MAX),
            shared_memory: Some(0),
            graph_id: Some(u64::MAX),
            graph_node_id: Some(1),
            flow: Some((i64::MAX, i64::MIN)),
            dur: Some(i64::MIN),
            correlation: big,
        };
        let sets = [
            More::default(),
            More {
                external_id: NonZeroU64::new(1),
                ..More::default()
            },
            More {
                block: [64, 1, 1],
                dur: Some(1 << 40),
                ..More::default()
            },
            More {
                foreign_cat: Some(String::new().into()),
                correlation: NonZeroU64::new(5),
                ..More::default()
            },
            // The kernel facts lie between the texts and the numbers every reader asks.
            More {
                registers: Some(128),
                graph_node_id: Some(9),
                flow: Some((-3, 4)),
                correlation: NonZeroU64::new(6),
                ..More::default()
            },
            all,
        ];
        let mut apart = Apart::default();
        apart.push(&More {
            device: Some(3),
            ..More::default()
        });
        for m in sets {
            let n = apart.push(&m);
            let nums = apart.nums_having(n, u64::MAX).unwrap_or_default();
            assert_eq!(
                (
                    nums.device,
                    nums.stream,
                    nums.flow,
                    nums.dur,
                    nums.correlation
                ),
                (m.device, m.stream, m.flow, m.dur, m.correlation)
            );
            assert_eq!(nums.foreign_cat, m.foreign_cat.is_some());
            assert_eq!(apart.get(n), Some(m));
        }
        assert_eq!(apart.sets(), 7);
        assert_eq!(apart.get(0), None);
    }

    /// What the encoding saves: an `External id` below 2^21 (a CPU op's) is 1 byte of mask and 3 of
    /// id; a kernel's id, grid and block 1 + 3 + 3 + 4 (the struct is over 200 bytes on a 64-bit target).
    #[test]
    fn a_common_set_takes_a_few_bytes() {
        let mut apart = Apart::default();
        apart.push(&More {
            external_id: NonZeroU64::new(1_234_567),
            ..More::default()
        });
        assert_eq!(apart.bytes.len(), 1 + 3);
        apart.push(&More {
            external_id: NonZeroU64::new(1_234_567),
            grid: [108, 1, 1],
            block: [128, 1, 1],
            ..More::default()
        });
        // 128 takes 2 bytes as a varint: 1 + 3 + (1 + 1 + 1) + (2 + 1 + 1).
        assert_eq!(apart.bytes.len(), 4 + 1 + 3 + 3 + 4);
    }
}
