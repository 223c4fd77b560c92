//! The [`Item`]s of a Chrome-trace array (its `X` events and ended `B` ones whose role or links the rest
//! of the file may change, `super::ArrayReader::settled_now`), kept from the read until their roles are
//! settled and their flows linked: each in 44 bytes (the fields most events have none
//! of, or too large for the item's small fields, kept apart and encoded in its chunk's list of
//! [`More`], `super::apart`), in chunks
//! of a fixed number;
//! the model is built a chunk at a time and each chunk freed once built ([`Items::into_chunks`]), so
//! that the items and the rows they become are never both held whole.
//!
//! What it is not: what an item becomes (`super`), or the flow links (`super::flows`).

use super::Role;
pub(super) use super::apart::More;
use super::apart::{Apart, Nums, bit};
use crate::model::{Sym, Track};
use std::num::NonZeroU64;
use std::ops::{Deref, DerefMut, Index};

/// One `X` event (or an ended `B` one) until it is built into the model. Packed to 4-byte alignment:
/// `ts` is the one 8-byte field, and at 8 the item would take 48 bytes.
#[repr(Rust, packed(4))]
pub(super) struct Item {
    pub(super) ts: i64,
    /// The duration where it fits 32 bits ([`Held::dur`]; in [`More`] where it does not).
    dur: u32,
    /// The correlation id where it fits 32 bits, 0 for none ([`Held::correlation`]; in [`More`]
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
    /// [`Held::flow_ts`] − `ts` and [`Held::flow_end`] − ([`Held::flow_ts`] + `dur`): 0 but where the
    /// exact times replace `ts` and `dur` (the legacy rocprof's `BeginNs`, within a µs of its `ts`);
    /// in [`More`] where they do not fit here.
    flow_shift: i16,
    flow_stretch: i16,
    pub(super) role: Role,
    /// [`Flag`]s.
    flags: u8,
    /// The fields most events have none of: 0 when all are absent, else the name of their set in the
    /// chunk's list ([`Chunk::apart`], [`Apart`]; a boxed [`More`] here took 8 bytes an item).
    more: u32,
}

/// An item is held, for every `X` event of the file, until the end: 44 bytes (the fields most events
/// have none of or too large for the small ones apart), not 48 or more.
const _: () = assert!(std::mem::size_of::<Item>() == 44);

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

impl Fresh {
    /// An item of `role`, none of its other fields yet ([`Edit::keep`]).
    pub(super) fn new(role: Role, name: Sym, track: Track, ts: i64, dur: i64) -> Fresh {
        let mut fresh = Fresh {
            item: Item {
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
                more: 0,
            },
            apart: Apart::default(),
        };
        fresh.edit().set_dur(dur);
        fresh
    }
}

impl Item {
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
}

/// An item with the fields it keeps apart, to read.
#[derive(Clone, Copy)]
pub(super) struct Held<'a> {
    it: &'a Item,
    more: Set<'a>,
}

/// Where an item's fields apart are: read from the set only when it has one (most have none).
#[derive(Clone, Copy)]
enum Set<'a> {
    None,
    /// Its set in its chunk's list ([`Apart`]), read when asked.
    Encoded(&'a Apart),
    /// Its set taken from its chunk ([`Chunk::into_items`]).
    Taken(&'a More),
}

impl<'a> Held<'a> {
    /// `it`, whose fields apart (if any) are in `apart`, its chunk's list.
    #[inline]
    fn of(it: &'a Item, apart: &'a Apart) -> Held<'a> {
        let more = if it.more == 0 {
            Set::None
        } else {
            Set::Encoded(apart)
        };
        Held { it, more }
    }

    /// `it` with `more`, its fields apart taken from its chunk ([`Chunk::into_items`]).
    pub(super) fn of_taken(it: &'a Item, more: &'a More) -> Held<'a> {
        let more = if it.more == 0 {
            Set::None
        } else {
            Set::Taken(more)
        };
        Held { it, more }
    }

    /// The numbers of its set, if it has one with a field of `bits` ([`bit`]).
    #[inline(always)]
    fn nums(&self, bits: u64) -> Option<Nums> {
        match self.more {
            Set::None => None,
            _ => self.nums_apart(bits),
        }
    }

    /// [`Held::nums`] of an item with a set: read apart, so that the readers of the many items
    /// without one stay small.
    #[inline(never)]
    fn nums_apart(&self, bits: u64) -> Option<Nums> {
        match self.more {
            Set::None => None,
            Set::Encoded(apart) => apart.nums_having(self.it.more, bits),
            Set::Taken(m) => Nums::of_having(m, bits),
        }
    }

    /// Whether an `args` field it reads was odd, or `args` itself ([`More::odd`], [`More::odd_args`]).
    pub(super) fn has_odd(&self) -> bool {
        self.nums(bit::ODD | bit::ODD_ARGS).is_some()
    }

    /// Whether it is of another producer's GPU category ([`More::foreign_cat`]).
    pub(super) fn foreign_cat(&self) -> bool {
        self.nums(bit::FOREIGN_CAT).is_some_and(|m| m.foreign_cat)
    }

    pub(super) fn dur(&self) -> i64 {
        match self.nums(bit::DUR).and_then(|m| m.dur) {
            Some(d) => d,
            None => i64::from(self.it.dur),
        }
    }

    pub(super) fn correlation(&self) -> Option<NonZeroU64> {
        NonZeroU64::new(u64::from(self.it.correlation))
            .or_else(|| self.nums(bit::CORRELATION)?.correlation)
    }

    fn flow(&self) -> Option<(i64, i64)> {
        self.nums(bit::FLOW)?.flow
    }

    /// The event's own `ts`, ns: where a flow's finish lands (`ts` is `args.BeginNs` when given).
    pub(super) fn flow_ts(&self) -> i64 {
        match self.flow() {
            Some((t, _)) => t,
            None => self.it.ts + i64::from(self.it.flow_shift),
        }
    }

    /// The event's own `ts + dur`, ns: flows are written on the `ts` clock, which a writer may have
    /// rebased while `BeginNs` stays absolute.
    pub(super) fn flow_end(&self) -> i64 {
        match self.flow() {
            Some((_, e)) => e,
            None => self.flow_ts() + self.dur() + i64::from(self.it.flow_stretch),
        }
    }

    pub(super) fn device(&self) -> Option<i64> {
        let d = self.it.device;
        d.get().or_else(|| self.nums(bit::DEVICE)?.device)
    }

    pub(super) fn stream(&self) -> Option<i64> {
        let s = self.it.stream;
        s.get().or_else(|| self.nums(bit::STREAM)?.stream)
    }
}

impl Deref for Held<'_> {
    type Target = Item;
    fn deref(&self) -> &Item {
        self.it
    }
}

/// An item with the list its fields apart are kept in, to change.
pub(super) struct Edit<'a> {
    it: &'a mut Item,
    apart: &'a mut Apart,
}

impl Edit<'_> {
    pub(super) fn held(&self) -> Held<'_> {
        Held::of(self.it, self.apart)
    }

    /// Whether it has fields apart.
    pub(super) fn has_more(&self) -> bool {
        self.it.more != 0
    }

    /// Changes its fields apart as `f` does (a set begun where it has none): the set is written
    /// again at the end of the list (an item's set is changed rarely: a `B` event's end, a device its
    /// process names, a value past 32 bits), none kept when `f` leaves it empty.
    pub(super) fn change_more(&mut self, f: impl FnOnce(&mut More)) {
        let mut more = self.apart.get(self.it.more).unwrap_or_default();
        f(&mut more);
        self.it.more = if more == More::default() {
            0
        } else {
            self.apart.push(&more)
        };
    }

    /// Sets the duration: in the item where it fits 32 bits (a duration of over 4.29 s is rare),
    /// else apart.
    pub(super) fn set_dur(&mut self, dur: i64) {
        let (inline, apart) = narrow(Some(dur));
        self.it.dur = inline;
        self.set_apart(apart, |m| &mut m.dur);
    }

    /// Sets the correlation id: in the item where it fits 32 bits (0 there: none), else apart.
    pub(super) fn set_correlation(&mut self, c: Option<NonZeroU64>) {
        let (inline, apart) = narrow(c.map(NonZeroU64::get));
        self.it.correlation = inline;
        self.set_apart(apart.and_then(NonZeroU64::new), |m| &mut m.correlation);
    }

    /// Sets a field apart (adding a set only for a value to keep).
    fn set_apart<T>(&mut self, v: Option<T>, field: fn(&mut More) -> &mut Option<T>) {
        if v.is_some() || self.has_more() {
            self.change_more(|m| *field(m) = v);
        }
    }

    /// Keeps `more` and the event's own times on the flow clock: what fits in the item there, the rest
    /// apart (nothing kept apart when nothing is left).
    pub(super) fn keep(&mut self, mut more: More, flow_ts: i64, flow_end: i64) {
        let held = self.held();
        let dur = held.dur();
        if let Some(m) = held.nums(bit::DUR | bit::CORRELATION) {
            (more.dur, more.correlation) = (m.dur, m.correlation);
        }
        (self.it.device, more.device) = Small::split(more.device);
        (self.it.stream, more.stream) = Small::split(more.stream);
        let ts = self.it.ts;
        let shift = flow_ts.checked_sub(ts);
        let stretch = flow_end
            .checked_sub(flow_ts)
            .and_then(|d| d.checked_sub(dur));
        match (
            shift.and_then(|d| i16::try_from(d).ok()),
            stretch.and_then(|d| i16::try_from(d).ok()),
        ) {
            (Some(shift), Some(stretch)) => {
                (self.it.flow_shift, self.it.flow_stretch) = (shift, stretch)
            }
            _ => more.flow = Some((flow_ts, flow_end)),
        }
        // A set it had stays in the list, unnamed (only a fresh item's own list has one here).
        self.change_more(|m| *m = more);
    }

    /// A `B` event's duration, once its `E` is read: on both clocks.
    pub(super) fn end_after(&mut self, dur: i64) {
        self.set_dur(dur);
        match self.held().nums(bit::FLOW).and_then(|m| m.flow) {
            Some((t, _)) => self.change_more(|m| m.flow = Some((t, t.saturating_add(dur)))),
            None => self.it.flow_stretch = 0,
        }
    }
}

impl Deref for Edit<'_> {
    type Target = Item;
    fn deref(&self) -> &Item {
        self.it
    }
}

impl DerefMut for Edit<'_> {
    fn deref_mut(&mut self) -> &mut Item {
        self.it
    }
}

/// An item not yet in [`Items`], with its own list for its fields apart: the set its `more` names is
/// its own (a set [`Edit::keep`] emptied stays in the list, unnamed).
pub(super) struct Fresh {
    item: Item,
    apart: Apart,
}

impl Fresh {
    pub(super) fn edit(&mut self) -> Edit<'_> {
        Edit {
            it: &mut self.item,
            apart: &mut self.apart,
        }
    }

    pub(super) fn held(&self) -> Held<'_> {
        Held::of(&self.item, &self.apart)
    }

    /// The item read, and its fields apart: for one built into the model at once, never held.
    pub(super) fn into_item(self) -> (Item, More) {
        let more = self.apart.get(self.item.more).unwrap_or_default();
        (self.item, more)
    }
}

/// Items a chunk holds: 16 Ki × 44 bytes, 704 KiB, so that each chunk is mapped apart and unmapped
/// when it is freed (glibc's allocator maps blocks above its threshold, which starts at 128 KiB).
pub(super) const CHUNK: usize = 16 * 1024;

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
    /// The fields its items keep apart ([`Item::more`]).
    apart: Apart,
}

impl Chunk {
    /// The items with where each starts in the text and the fields each keeps apart, in file order.
    pub(super) fn into_items(self) -> impl Iterator<Item = (u64, Item, More)> {
        let (base, apart) = (self.base, self.apart);
        self.items.into_iter().map(move |it| {
            let more = apart.get(it.more).unwrap_or_default();
            (base + u64::from(it.offset), it, more)
        })
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
    pub(super) fn push(&mut self, fresh: Fresh, offset: u64) -> usize {
        let Fresh {
            item: mut it,
            apart,
        } = fresh;
        let delta = self
            .chunks
            .last()
            .filter(|c| c.items.len() < CHUNK)
            .and_then(|c| u32::try_from(offset.checked_sub(c.base)?).ok());
        it.offset = match delta {
            Some(d) => d,
            None => {
                if let Some(last) = self.chunks.last_mut() {
                    if last.items.len() < CHUNK {
                        self.full_chunks = false;
                    }
                    // Its list grew by doubling; no item of it is added to now.
                    last.apart.shrink_to_fit();
                }
                self.chunks.push(Chunk {
                    base: offset,
                    items: Vec::with_capacity(CHUNK),
                    apart: Apart::for_chunk(),
                });
                self.firsts.push(self.len);
                0
            }
        };
        if let Some(c) = self.chunks.last_mut() {
            // An item names a set of its chunk's list only: its own set is written there.
            it.more = c.apart.push_last_of(&apart, it.more);
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

    /// The item at `i`, with its fields apart.
    pub(super) fn get(&self, i: usize) -> Held<'_> {
        let (c, at) = self.place(i);
        let c = &self.chunks[c];
        Held::of(&c.items[at], &c.apart)
    }

    /// The item at `i`, to change.
    pub(super) fn edit(&mut self, i: usize) -> Option<Edit<'_>> {
        let (c, at) = self.place(i);
        let Chunk { items, apart, .. } = self.chunks.get_mut(c)?;
        Some(Edit {
            it: items.get_mut(at)?,
            apart,
        })
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = Held<'_>> {
        self.chunks
            .iter()
            .flat_map(|c| c.items.iter().map(|it| Held::of(it, &c.apart)))
    }

    /// The items' own fields, to change (not those apart: [`Items::edit_each`]). An item stays where it
    /// is (its `more` names a set of its own chunk's list): fields are changed, items never moved.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.chunks.iter_mut().flat_map(|c| &mut c.items)
    }

    /// Changes each item, in file order, as `f` does.
    pub(super) fn edit_each(&mut self, mut f: impl FnMut(Edit<'_>)) {
        for Chunk { items, apart, .. } in &mut self.chunks {
            for it in items {
                f(Edit { it, apart });
            }
        }
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

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;
