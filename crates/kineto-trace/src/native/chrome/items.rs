//! The [`Item`]s of a Chrome-trace array (its `X` events and ended `B` ones), kept from the read until
//! their roles are settled and their flows linked: each in 64 bytes (the fields most events have none
//! of, or too large for the item's small fields, boxed apart in [`More`]), in chunks of a fixed number;
//! the model is built a chunk at a time and each chunk freed once built ([`Items::into_chunks`]), so
//! that the items and the rows they become are never both held whole.
//!
//! What it is not: what an item becomes (`super`), or the flow links (`super::flows`).

use super::Role;
use super::args::Odd;
use crate::model::{Sym, Track};
use std::num::NonZeroU64;
use std::ops::{Index, IndexMut};

/// One `X` event (or an ended `B` one) until it is built into the model.
pub(super) struct Item {
    pub(super) ts: i64,
    /// The duration where it fits 32 bits ([`Item::dur`]; in [`More`] where it does not).
    dur: u32,
    /// The correlation id where it fits 32 bits, 0 for none ([`Item::correlation`]; in [`More`]
    /// where it does not).
    correlation: u32,
    pub(super) name: Sym,
    /// The thread (its pid is the event's).
    pub(super) track: Track,
    /// Where the event starts, from its chunk's first offset ([`Items::chunks`]).
    offset: u32,
    /// `args.device` (or the legacy rocprof's `dev-id`/`gpu-id`) and `args.stream` where they fit
    /// here; in [`More`] where they do not.
    device: Small,
    stream: Small,
    /// [`Item::flow_ts`] − `ts` and [`Item::flow_end`] − ([`Item::flow_ts`] + `dur`): 0 but where the
    /// exact times replace `ts` and `dur` (the legacy rocprof's `BeginNs`, within a µs of its `ts`);
    /// in [`More`] where they do not fit here.
    flow_shift: i16,
    flow_stretch: i16,
    pub(super) role: Role,
    /// [`Flag`]s.
    flags: u8,
    /// The fields most events have none of (`None`: all absent).
    pub(super) more: Option<Box<More>>,
}

/// An item is held, for every `X` event of the file, until the end: 48 bytes (the fields most events
/// have none of or too large for the small ones apart), not 64 or more.
const _: () = assert!(std::mem::size_of::<Item>() == 48);

/// What an item says of its event in one bit each.
#[derive(Clone, Copy)]
pub(super) enum Flag {
    /// `args.desc` named an RPD op type, or `cat` was a Kineto category: the role is final.
    Decided = 1,
    /// Its name is an API call's ([`super::api_like`]).
    ApiLike = 2,
    /// The legacy rocprof wrote a device (`dev-id`/`gpu-id`): a row of its op or kernel table.
    OnDevice = 4,
    /// A `B` event no `E` has ended yet.
    Open = 8,
}

/// The fields of an [`Item`] most events have none of, kept apart so that an item stays small.
#[derive(Default, PartialEq)]
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
    /// [`Item::flow_ts`] and [`Item::flow_end`] when they do not fit in the item.
    pub(super) flow: Option<(i64, i64)>,
    /// The duration and the correlation id when they do not fit in the item ([`Item::set_dur`],
    /// [`Item::set_correlation`]).
    pub(super) dur: Option<i64>,
    pub(super) correlation: Option<NonZeroU64>,
}

/// `v` as the item keeps it where it fits 32 bits (0 for none), and as kept apart where it does not.
fn narrow<W: Copy>(v: Option<W>) -> (u32, Option<W>)
where
    u32: TryFrom<W>,
{
    match v.map(|w| (w, u32::try_from(w))) {
        None => (0, None),
        Some((_, Ok(n))) => (n, None),
        Some((w, Err(_))) => (0, Some(w)),
    }
}

/// A small integer kept in an item: `i16::MIN` for none.
#[derive(Clone, Copy)]
struct Small(i16);

impl Small {
    const NONE: Small = Small(i16::MIN);

    /// `v` as kept in the item, and as kept apart where it does not fit.
    fn split(v: Option<i64>) -> (Small, Option<i64>) {
        match v.map(i16::try_from) {
            None => (Small::NONE, None),
            Some(Ok(n)) if n != i16::MIN => (Small(n), None),
            Some(_) => (Small::NONE, v),
        }
    }

    fn get(self) -> Option<i64> {
        (self.0 != i16::MIN).then_some(i64::from(self.0))
    }
}

impl Item {
    /// An item of `role`, none of its other fields yet ([`Item::keep`]).
    pub(super) fn new(role: Role, name: Sym, track: Track, ts: i64, dur: i64) -> Item {
        let mut it = Item {
            ts,
            dur: 0,
            correlation: 0,
            name,
            track,
            offset: 0,
            device: Small::NONE,
            stream: Small::NONE,
            flow_shift: 0,
            flow_stretch: 0,
            role,
            flags: 0,
            more: None,
        };
        it.set_dur(dur);
        it
    }

    pub(super) fn is(&self, f: Flag) -> bool {
        self.flags & f as u8 != 0
    }

    pub(super) fn set(&mut self, f: Flag, on: bool) {
        if on {
            self.flags |= f as u8;
        } else {
            self.flags &= !(f as u8);
        }
    }

    pub(super) fn dur(&self) -> i64 {
        match self.more.as_ref().and_then(|m| m.dur) {
            Some(d) => d,
            None => i64::from(self.dur),
        }
    }

    /// Sets the duration: in the item where it fits 32 bits (a duration of over 4.29 s is rare),
    /// else in [`More`].
    pub(super) fn set_dur(&mut self, dur: i64) {
        let apart;
        (self.dur, apart) = narrow(Some(dur));
        self.set_apart(apart, |m| &mut m.dur);
    }

    pub(super) fn correlation(&self) -> Option<NonZeroU64> {
        NonZeroU64::new(u64::from(self.correlation))
            .or_else(|| self.more.as_ref().and_then(|m| m.correlation))
    }

    /// Sets the correlation id: in the item where it fits 32 bits (0 there: none), else in [`More`].
    pub(super) fn set_correlation(&mut self, c: Option<NonZeroU64>) {
        let apart;
        (self.correlation, apart) = narrow(c.map(NonZeroU64::get));
        self.set_apart(apart.and_then(NonZeroU64::new), |m| &mut m.correlation);
    }

    /// Sets a field of [`More`] (boxing one only for a value to keep).
    fn set_apart<T>(&mut self, v: Option<T>, field: fn(&mut More) -> &mut Option<T>) {
        match (v, self.more.as_mut()) {
            (None, None) => {}
            (v, Some(m)) => *field(m) = v,
            (v, None) => *field(self.more.insert(Box::default())) = v,
        }
    }

    /// Keeps `more` and the event's own times on the flow clock: what fits in the item there, the rest
    /// boxed apart (nothing boxed when nothing is left).
    pub(super) fn keep(&mut self, mut more: More, flow_ts: i64, flow_end: i64) {
        let dur = self.dur();
        if let Some(m) = self.more.take() {
            (more.dur, more.correlation) = (m.dur, m.correlation);
        }
        (self.device, more.device) = Small::split(more.device);
        (self.stream, more.stream) = Small::split(more.stream);
        let shift = flow_ts.checked_sub(self.ts);
        let stretch = flow_end
            .checked_sub(flow_ts)
            .and_then(|d| d.checked_sub(dur));
        match (
            shift.and_then(|d| i16::try_from(d).ok()),
            stretch.and_then(|d| i16::try_from(d).ok()),
        ) {
            (Some(shift), Some(stretch)) => (self.flow_shift, self.flow_stretch) = (shift, stretch),
            _ => more.flow = Some((flow_ts, flow_end)),
        }
        self.more = (more != More::default()).then(|| Box::new(more));
    }

    fn flow(&self) -> Option<(i64, i64)> {
        self.more.as_ref().and_then(|m| m.flow)
    }

    /// The event's own `ts`, ns: where a flow's finish lands (`ts` is `args.BeginNs` when given).
    pub(super) fn flow_ts(&self) -> i64 {
        match self.flow() {
            Some((t, _)) => t,
            None => self.ts + i64::from(self.flow_shift),
        }
    }

    /// The event's own `ts + dur`, ns: flows are written on the `ts` clock, which a writer may have
    /// rebased while `BeginNs` stays absolute.
    pub(super) fn flow_end(&self) -> i64 {
        match self.flow() {
            Some((_, e)) => e,
            None => self.flow_ts() + self.dur() + i64::from(self.flow_stretch),
        }
    }

    /// A `B` event's duration, once its `E` is read: on both clocks.
    pub(super) fn end_after(&mut self, dur: i64) {
        self.set_dur(dur);
        match self.more.as_mut().and_then(|m| m.flow.as_mut()) {
            Some((t, e)) => *e = t.saturating_add(dur),
            None => self.flow_stretch = 0,
        }
    }

    pub(super) fn device(&self) -> Option<i64> {
        self.device
            .get()
            .or_else(|| self.more.as_ref().and_then(|m| m.device))
    }

    pub(super) fn stream(&self) -> Option<i64> {
        self.stream
            .get()
            .or_else(|| self.more.as_ref().and_then(|m| m.stream))
    }
}

/// Items a chunk holds: 16 Ki × 48 bytes, 768 KiB, so that each chunk is mapped apart and unmapped
/// when it is freed (glibc's allocator maps blocks above its threshold, which starts at 128 KiB).
const CHUNK: usize = 16 * 1024;

/// The items in file order, numbered from 0 (an item's index, which stays its own until
/// [`Items::retain`]).
pub(super) struct Items {
    chunks: Vec<Chunk>,
    /// The index of each chunk's first item.
    firsts: Vec<usize>,
    len: usize,
    /// Every chunk but the last holds [`CHUNK`] items (none was dropped, no chunk was begun early):
    /// an item's place is its index divided by the chunk size (the lists of `super::flows` look items
    /// up by index).
    full_chunks: bool,
}

/// Items, and the offset their own offsets count from (an item keeps 32 bits of it: a chunk spans
/// less than 4 GiB of text, a new one begun where it would not).
pub(super) struct Chunk {
    base: u64,
    items: Vec<Item>,
}

impl Chunk {
    /// The items with where each starts in the text, in file order.
    pub(super) fn into_items(self) -> impl Iterator<Item = (u64, Item)> {
        let base = self.base;
        self.items
            .into_iter()
            .map(move |it| (base + u64::from(it.offset), it))
    }
}

impl Default for Items {
    fn default() -> Items {
        Items {
            chunks: Vec::new(),
            firsts: Vec::new(),
            len: 0,
            full_chunks: true,
        }
    }
}

impl Items {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `it`, its event at `offset` in the text (offsets never decrease): its index.
    pub(super) fn push(&mut self, mut it: Item, offset: u64) -> usize {
        let delta = self
            .chunks
            .last()
            .filter(|c| c.items.len() < CHUNK)
            .and_then(|c| u32::try_from(offset.checked_sub(c.base)?).ok());
        it.offset = match delta {
            Some(d) => d,
            None => {
                if self.chunks.last().is_some_and(|c| c.items.len() < CHUNK) {
                    self.full_chunks = false;
                }
                self.chunks.push(Chunk {
                    base: offset,
                    items: Vec::with_capacity(CHUNK),
                });
                self.firsts.push(self.len);
                0
            }
        };
        if let Some(c) = self.chunks.last_mut() {
            c.items.push(it);
        }
        self.len += 1;
        self.len - 1
    }

    /// The chunk of the item at `i`, and its place there.
    #[inline]
    fn place(&self, i: usize) -> (usize, usize) {
        if self.full_chunks {
            return (i / CHUNK, i % CHUNK);
        }
        let c = self.firsts.partition_point(|&f| f <= i).saturating_sub(1);
        (c, i - self.firsts.get(c).copied().unwrap_or(0))
    }

    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Item> {
        let (c, at) = self.place(i);
        self.chunks.get_mut(c)?.items.get_mut(at)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Item> {
        self.chunks.iter().flat_map(|c| &c.items)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.chunks.iter_mut().flat_map(|c| &mut c.items)
    }

    /// Keeps the items `keep` says; the rest are gone, and the items after them renumbered.
    pub(super) fn retain(&mut self, keep: impl Fn(&Item) -> bool) {
        for c in &mut self.chunks {
            c.items.retain(&keep);
        }
        self.chunks.retain(|c| !c.items.is_empty());
        let n = self.chunks.len();
        self.full_chunks = self.chunks[..n.saturating_sub(1)]
            .iter()
            .all(|c| c.items.len() == CHUNK);
        self.firsts.clear();
        self.len = 0;
        for c in &self.chunks {
            self.firsts.push(self.len);
            self.len += c.items.len();
        }
    }

    /// The chunks in file order, to be built into the model one at a time (each freed once done).
    pub(super) fn into_chunks(self) -> Vec<Chunk> {
        self.chunks
    }
}

impl Index<usize> for Items {
    type Output = Item;
    fn index(&self, i: usize) -> &Item {
        let (c, at) = self.place(i);
        &self.chunks[c].items[at]
    }
}

impl IndexMut<usize> for Items {
    fn index_mut(&mut self, i: usize) -> &mut Item {
        let (c, at) = self.place(i);
        &mut self.chunks[c].items[at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(ts: i64) -> Item {
        Item::new(Role::Other, Sym(0), Track(0), ts, 0)
    }

    /// Items across three chunks keep their indices; after some are dropped (a whole chunk among them)
    /// the rest are numbered in file order again.
    #[test]
    fn indices_across_chunks_and_after_retain() {
        let mut items = Items::default();
        let n = 2 * CHUNK + 5;
        for ts in 0..n as i64 {
            assert_eq!(items.push(item(ts), 100 * ts as u64), ts as usize);
        }
        assert_eq!(items.len(), n);
        assert_eq!(items[CHUNK].ts, CHUNK as i64);
        items[CHUNK + 1].set_dur(7);
        assert_eq!(items.get_mut(CHUNK + 1).map(|i| i.dur()), Some(7));
        assert!(items.get_mut(n).is_none());
        // Drop the first chunk whole and every odd ts after it.
        items.retain(|i| i.ts >= CHUNK as i64 && i.ts % 2 == 0);
        // Kept: CHUNK, CHUNK + 2, …, 2·CHUNK + 4: (CHUNK + 4) / 2 + 1 of them.
        assert_eq!(items.len(), CHUNK / 2 + 3);
        assert_eq!(items[0].ts, CHUNK as i64);
        assert_eq!(items[CHUNK / 2].ts, 2 * CHUNK as i64);
        assert_eq!(items[CHUNK / 2 + 2].ts, 2 * CHUNK as i64 + 4);
        let all: Vec<i64> = items.iter().map(|i| i.ts).collect();
        assert_eq!(all.len(), items.len());
        assert!(all.windows(2).all(|w| w[1] == w[0] + 2));
        let chunks = items.into_chunks();
        assert_eq!(chunks.len(), 2);
        // Each item's offset is still its own (100 × its ts, as pushed).
        for (offset, it) in chunks.into_iter().flat_map(Chunk::into_items) {
            assert_eq!(offset, 100 * it.ts as u64);
        }
    }

    /// An event 4 GiB or more past its chunk's first begins a new chunk (an item keeps 32 bits of its
    /// offset); indices and offsets stay right across it, and across the partly filled chunk before.
    #[test]
    fn offsets_past_32_bits_begin_a_chunk() {
        let mut items = Items::default();
        let offsets = [
            0,
            10,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            1 << 40,
            (1 << 40) + 5,
        ];
        for (i, &o) in offsets.iter().enumerate() {
            assert_eq!(items.push(item(i as i64), o), i);
        }
        // [0, 10, 2^32 - 1] fit one chunk; 2^32 is 2^32 past its first, and 2^40 far past that.
        assert_eq!(items.chunks.len(), 3);
        assert!(!items.full_chunks);
        assert_eq!(items[3].ts, 3);
        assert_eq!(items[5].ts, 5);
        let got: Vec<u64> = items
            .into_chunks()
            .into_iter()
            .flat_map(|c| c.into_items().map(|(o, _)| o))
            .collect();
        assert_eq!(got, offsets);
    }

    /// A duration or correlation id past 32 bits is kept apart and comes back whole; set small again,
    /// it is back in the item.
    #[test]
    fn durations_and_correlations_past_32_bits() {
        let big = i64::from(u32::MAX) + 1;
        let mut it = Item::new(Role::Other, Sym(0), Track(0), 0, big);
        assert_eq!(it.dur(), big);
        assert!(it.more.is_some());
        // Keeping the rare fields (none here) keeps the duration.
        it.keep(More::default(), 0, big);
        assert_eq!((it.dur(), it.flow_end()), (big, big));
        it.set_dur(i64::from(u32::MAX));
        assert_eq!(it.dur(), i64::from(u32::MAX));
        for c in [1, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX] {
            let c = NonZeroU64::new(c);
            it.set_correlation(c);
            assert_eq!(it.correlation(), c);
        }
        it.set_correlation(None);
        assert_eq!(it.correlation(), None);
        let mut plain = Item::new(Role::Other, Sym(0), Track(0), 0, 5);
        plain.set_correlation(NonZeroU64::new(7));
        assert!(plain.more.is_none());
        assert_eq!((plain.dur(), plain.correlation()), (5, NonZeroU64::new(7)));
    }

    /// What an item holds comes back as given, whether it fits the item's small fields or is boxed
    /// apart; nothing is boxed for an event with no rare field and times that fit.
    #[test]
    fn fields_come_back_inline_or_boxed() {
        let (ts, dur) = (1_000_000, 5_000);
        for v in [
            0,
            1,
            -1,
            32_767,
            -32_767,
            -32_768,
            32_768,
            1 << 40,
            -(1 << 40),
        ] {
            let mut it = Item::new(Role::Other, Sym(0), Track(0), ts, dur);
            let more = More {
                device: Some(v),
                stream: Some(-v),
                ..More::default()
            };
            // The flow clock 999 ns before `ts`, and its span 1 µs longer than `dur`.
            it.keep(more, ts - 999, ts - 999 + dur + 1_000);
            assert_eq!((it.device(), it.stream()), (Some(v), Some(-v)));
            assert_eq!((it.flow_ts(), it.flow_end()), (ts - 999, ts + dur + 1));
            // −32 768 is the empty field's mark, and ±32 768 and ±2⁴⁰ do not fit in 16 bits.
            let boxed = !(-32_767..=32_767).contains(&v);
            assert_eq!(it.more.is_some(), boxed, "{v}");
        }
        let mut plain = Item::new(Role::Other, Sym(0), Track(0), ts, dur);
        plain.keep(More::default(), ts, ts + dur);
        assert!(plain.more.is_none());
        assert_eq!((plain.device(), plain.stream()), (None, None));
        // A flow clock 10¹² ns away is boxed; an `E` then sets the duration on both clocks.
        let far = ts + 1_000_000_000_000;
        let mut b = Item::new(Role::Other, Sym(0), Track(0), ts, 0);
        b.keep(More::default(), far, far);
        assert_eq!((b.flow_ts(), b.flow_end()), (far, far));
        b.end_after(2_500);
        assert_eq!((b.dur(), b.flow_end()), (2_500, far + 2_500));
        plain.end_after(7);
        assert_eq!((plain.flow_ts(), plain.flow_end()), (ts, ts + 7));
    }
}
