//! The items' own tests: indices across chunks, fields inline or apart, sets encoded or taken.

use super::*;

fn item(ts: i64) -> Fresh {
    Fresh::new(Role::Other, Sym(0), Track(0), ts, 0)
}

/// The item's `ts` (a field of a packed struct, copied out).
fn ts(it: &Item) -> i64 {
    it.ts
}

/// A set's fields are asked alike of an item whose set is still encoded and of one whose set was
/// taken from its chunk: a set without odd fields or a foreign category says so either way.
#[test]
fn encoded_and_taken_sets_answer_alike() {
    use super::super::args::Odd;
    let sets = [
        More {
            external_id: NonZeroU64::new(4),
            ..More::default()
        },
        More {
            odd: Odd::GRID,
            ..More::default()
        },
        More {
            foreign_cat: Some("cuda".into()),
            ..More::default()
        },
    ];
    for more in sets {
        let mut fresh = item(0);
        fresh.edit().keep(more, 0, 0);
        let encoded = (fresh.held().has_odd(), fresh.held().foreign_cat());
        let (it, more) = fresh.into_item();
        let taken = Held::of_taken(&it, &more);
        assert_eq!((taken.has_odd(), taken.foreign_cat()), encoded, "{more:?}");
    }
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
    assert_eq!(ts(&items[CHUNK]), CHUNK as i64);
    if let Some(mut it) = items.edit(CHUNK + 1) {
        it.set_dur(7);
    }
    assert_eq!(items.get(CHUNK + 1).dur(), 7);
    assert!(items.edit(n).is_none());
    // Drop the first chunk whole and every odd ts after it.
    items.retain(|i| ts(i) >= CHUNK as i64 && ts(i) % 2 == 0);
    // Kept: CHUNK, CHUNK + 2, …, 2·CHUNK + 4: (CHUNK + 4) / 2 + 1 of them.
    assert_eq!(items.len(), CHUNK / 2 + 3);
    assert_eq!(ts(&items[0]), CHUNK as i64);
    assert_eq!(ts(&items[CHUNK / 2]), 2 * CHUNK as i64);
    assert_eq!(ts(&items[CHUNK / 2 + 2]), 2 * CHUNK as i64 + 4);
    let all: Vec<i64> = items.iter().map(|i| ts(&i)).collect();
    assert_eq!(all.len(), items.len());
    assert!(all.windows(2).all(|w| w[1] == w[0] + 2));
    let chunks = items.into_chunks();
    assert_eq!(chunks.len(), 2);
    // Each item's offset is still its own (100 × its ts, as pushed).
    for (offset, it, _) in chunks.into_iter().flat_map(Chunk::into_items) {
        assert_eq!(offset, 100 * ts(&it) as u64);
    }
}

/// Each item keeps its own rare fields through everything that is done to items: kept apart at
/// the push, across a chunk's edge, after some items are dropped, when an edit adds a set to an
/// item that had none, and when the chunks are built into the model.
#[test]
fn each_item_keeps_its_own_fields_apart() {
    let mut items = Items::default();
    let n = CHUNK + 10;
    // Every third item has a device too large for the item: its own set, named by the item.
    let device = |ts: i64| (ts % 3 == 0).then_some((1 << 40) + ts);
    for ts in 0..n as i64 {
        let mut fresh = item(ts);
        let more = More {
            device: device(ts),
            ..More::default()
        };
        fresh.edit().keep(more, ts, ts);
        items.push(fresh, ts as u64);
    }
    assert_eq!(items.chunks[0].apart.sets(), CHUNK.div_ceil(3));
    // Drop every item whose ts is 1 mod 3, so sets and items no longer line up by place.
    items.retain(|i| ts(i) % 3 != 1);
    let kept: Vec<i64> = (0..n as i64).filter(|t| t % 3 != 1).collect();
    assert_eq!(items.len(), kept.len());
    for (i, &t) in kept.iter().enumerate() {
        assert_eq!(
            (ts(&items[i]), items.get(i).device()),
            (t, device(t)),
            "{i}"
        );
    }
    // An item with no set gets one (a duration past 32 bits); the others' stay theirs.
    let plain = kept.iter().position(|t| t % 3 == 2).unwrap_or(0);
    let big = i64::from(u32::MAX) + 7;
    if let Some(mut it) = items.edit(plain) {
        it.set_dur(big);
    }
    assert_eq!(items.get(plain).dur(), big);
    let built: Vec<(i64, Option<i64>, Option<i64>)> = items
        .into_chunks()
        .into_iter()
        .flat_map(Chunk::into_items)
        .map(|(_, it, more)| (ts(&it), more.device, more.dur))
        .collect();
    for (i, (&t, got)) in kept.iter().zip(&built).enumerate() {
        let dur = (i == plain).then_some(big);
        assert_eq!(*got, (t, device(t), dur), "{i}");
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
    assert_eq!(ts(&items[3]), 3);
    assert_eq!(ts(&items[5]), 5);
    let got: Vec<u64> = items
        .into_chunks()
        .into_iter()
        .flat_map(|c| c.into_items().map(|(o, _, _)| o))
        .collect();
    assert_eq!(got, offsets);
}

/// A duration or correlation id past 32 bits is kept apart and comes back whole; set small again,
/// it is back in the item.
#[test]
fn durations_and_correlations_past_32_bits() {
    let big = i64::from(u32::MAX) + 1;
    let mut fresh = Fresh::new(Role::Other, Sym(0), Track(0), 0, big);
    let mut it = fresh.edit();
    assert_eq!(it.held().dur(), big);
    assert!(it.has_more());
    // Keeping the rare fields (none here) keeps the duration.
    it.keep(More::default(), 0, big);
    assert_eq!((it.held().dur(), it.held().flow_end()), (big, big));
    it.set_dur(i64::from(u32::MAX));
    assert_eq!(it.held().dur(), i64::from(u32::MAX));
    for c in [1, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX] {
        let c = NonZeroU64::new(c);
        it.set_correlation(c);
        assert_eq!(it.held().correlation(), c);
    }
    it.set_correlation(None);
    assert_eq!(it.held().correlation(), None);
    // In the items, set past 32 bits again: kept apart in the chunk's list, and back whole.
    it.set_correlation(NonZeroU64::new(u64::MAX));
    let mut items = Items::default();
    items.push(item(1), 0);
    let i = items.push(fresh, 10);
    assert_eq!(items.chunks[0].apart.sets(), 1);
    assert_eq!(items.get(0).dur(), 0);
    assert_eq!(items.get(i).dur(), i64::from(u32::MAX));
    assert_eq!(items.get(i).correlation(), NonZeroU64::new(u64::MAX));
    if let Some(mut first) = items.edit(0) {
        first.set_dur(big);
    }
    assert_eq!(
        (items.get(0).dur(), items.get(i).dur()),
        (big, i64::from(u32::MAX))
    );
    let mut plain = Fresh::new(Role::Other, Sym(0), Track(0), 0, 5);
    let mut p = plain.edit();
    p.set_correlation(NonZeroU64::new(7));
    assert!(!p.has_more());
    assert_eq!(
        (p.held().dur(), p.held().correlation()),
        (5, NonZeroU64::new(7))
    );
}

/// What an item holds comes back as given, whether it fits the item's small fields or is kept
/// apart; nothing is kept apart for an event with no rare field and times that fit.
#[test]
fn fields_come_back_inline_or_apart() {
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
        let mut fresh = Fresh::new(Role::Other, Sym(0), Track(0), ts, dur);
        let mut it = fresh.edit();
        let more = More {
            device: Some(v),
            stream: Some(-v),
            ..More::default()
        };
        // The flow clock 999 ns before `ts`, and its span 1 µs longer than `dur`.
        it.keep(more, ts - 999, ts - 999 + dur + 1_000);
        let h = it.held();
        assert_eq!((h.device(), h.stream()), (Some(v), Some(-v)));
        assert_eq!((h.flow_ts(), h.flow_end()), (ts - 999, ts + dur + 1));
        // −32 768 is the empty field's mark, and ±32 768 and ±2⁴⁰ do not fit in 16 bits.
        let apart = !(-32_767..=32_767).contains(&v);
        assert_eq!(it.has_more(), apart, "{v}");
    }
    let mut plain = Fresh::new(Role::Other, Sym(0), Track(0), ts, dur);
    let mut plain = plain.edit();
    plain.keep(More::default(), ts, ts + dur);
    assert!(!plain.has_more());
    assert_eq!((plain.held().device(), plain.held().stream()), (None, None));
    // A flow clock 10¹² ns away is kept apart; an `E` then sets the duration on both clocks.
    let far = ts + 1_000_000_000_000;
    let mut b = Fresh::new(Role::Other, Sym(0), Track(0), ts, 0);
    let mut b = b.edit();
    b.keep(More::default(), far, far);
    assert_eq!((b.held().flow_ts(), b.held().flow_end()), (far, far));
    b.end_after(2_500);
    assert_eq!((b.held().dur(), b.held().flow_end()), (2_500, far + 2_500));
    plain.end_after(7);
    assert_eq!(
        (plain.held().flow_ts(), plain.held().flow_end()),
        (ts, ts + 7)
    );
}
