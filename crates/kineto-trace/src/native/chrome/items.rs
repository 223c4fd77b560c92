//! The [`Item`]s of a Chrome-trace array (its `X` events and ended `B` ones), kept from the read until
//! their roles are settled and their flows linked, in chunks of a fixed number: the model is built a
//! chunk at a time and each chunk freed once built ([`Items::into_chunks`]), so that the items and the
//! rows they become are never both held whole.
//!
//! What it is not: what an item holds or becomes (`super`), or the flow links (`super::flows`).

use super::Item;
use std::ops::{Index, IndexMut};

/// Items a chunk holds: 16 Ki × 72 bytes, about a MiB, so that each chunk is mapped apart and unmapped
/// when it is freed (glibc's allocator maps blocks above its threshold, which starts at 128 KiB).
const CHUNK: usize = 16 * 1024;

/// The items in file order, numbered from 0 (an item's index, which stays its own until
/// [`Items::retain`]).
#[derive(Default)]
pub(super) struct Items {
    chunks: Vec<Vec<Item>>,
    /// The index of each chunk's first item.
    firsts: Vec<usize>,
    len: usize,
}

impl Items {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `it`: its index.
    pub(super) fn push(&mut self, it: Item) -> usize {
        if self.chunks.last().is_none_or(|c| c.len() == c.capacity()) {
            self.chunks.push(Vec::with_capacity(CHUNK));
            self.firsts.push(self.len);
        }
        if let Some(c) = self.chunks.last_mut() {
            c.push(it);
        }
        self.len += 1;
        self.len - 1
    }

    /// The chunk of the item at `i`, and its place there.
    fn place(&self, i: usize) -> (usize, usize) {
        let c = self.firsts.partition_point(|&f| f <= i).saturating_sub(1);
        (c, i - self.firsts.get(c).copied().unwrap_or(0))
    }

    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Item> {
        let (c, at) = self.place(i);
        self.chunks.get_mut(c)?.get_mut(at)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Item> {
        self.chunks.iter().flatten()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.chunks.iter_mut().flatten()
    }

    /// Keeps the items `keep` says; the rest are gone, and the items after them renumbered.
    pub(super) fn retain(&mut self, keep: impl Fn(&Item) -> bool) {
        for c in &mut self.chunks {
            c.retain(&keep);
        }
        self.chunks.retain(|c| !c.is_empty());
        self.firsts.clear();
        self.len = 0;
        for c in &self.chunks {
            self.firsts.push(self.len);
            self.len += c.len();
        }
    }

    /// The chunks in file order, to be built into the model one at a time (each freed once done).
    pub(super) fn into_chunks(self) -> Vec<Vec<Item>> {
        self.chunks
    }
}

impl Index<usize> for Items {
    type Output = Item;
    fn index(&self, i: usize) -> &Item {
        let (c, at) = self.place(i);
        &self.chunks[c][at]
    }
}

impl IndexMut<usize> for Items {
    fn index_mut(&mut self, i: usize) -> &mut Item {
        let (c, at) = self.place(i);
        &mut self.chunks[c][at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Sym, Track};

    fn item(ts: i64) -> Item {
        Item {
            role: super::super::Role::Other,
            decided: true,
            api_like: false,
            on_device: false,
            open: false,
            name: Sym(0),
            track: Track(0),
            ts,
            flow_ts: ts,
            flow_end: ts,
            dur: 0,
            correlation: None,
            offset: 0,
            more: None,
        }
    }

    /// Items across three chunks keep their indices; after some are dropped (a whole chunk among them)
    /// the rest are numbered in file order again.
    #[test]
    fn indices_across_chunks_and_after_retain() {
        let mut items = Items::default();
        let n = 2 * CHUNK + 5;
        for ts in 0..n as i64 {
            assert_eq!(items.push(item(ts)), ts as usize);
        }
        assert_eq!(items.len(), n);
        assert_eq!(items[CHUNK].ts, CHUNK as i64);
        items[CHUNK + 1].dur = 7;
        assert_eq!(items.get_mut(CHUNK + 1).map(|i| i.dur), Some(7));
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
        assert_eq!(items.into_chunks().len(), 2);
    }
}
