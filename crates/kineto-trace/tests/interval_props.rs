//! Properties of the interval arithmetic: `union`, `union_within`, `union_by_start`,
//! `StartOrderCover` and `sweep`, against brute force over every nanosecond of small windows and
//! against each other on large values.

use kineto_trace::interval::{StartOrderCover, sweep, union, union_by_start, union_within};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// What [`StartOrderCover`] says of `v` pushed one by one.
fn pushed(v: &[(i64, i64)]) -> Option<i64> {
    let mut cover = StartOrderCover::default();
    for &(s, e) in v {
        cover.push(s, e);
    }
    cover.covered()
}

/// Spans on a small grid, some inverted or empty, some reaching outside the window.
fn small_spans() -> impl Strategy<Value = Vec<(i64, i64, u8)>> {
    prop::collection::vec((-20i64..220, -5i64..60, 0u8..4), 0..25)
        .prop_map(|v| v.into_iter().map(|(s, d, b)| (s, s + d, b)).collect())
}

/// Spans with large, realistic ns values (absolute epoch times).
fn big_spans() -> impl Strategy<Value = Vec<(i64, i64, u8)>> {
    let base = 1_700_000_000_000_000_000i64;
    prop::collection::vec((0i64..10_000_000_000, 0i64..50_000_000, 0u8..6), 0..200).prop_map(
        move |v| {
            v.into_iter()
                .map(|(s, d, b)| (base + s, base + s + d, b))
                .collect()
        },
    )
}

/// Per nanosecond of [lo, hi): which buckets are active.
fn brute(spans: &[(i64, i64, u8)], lo: i64, hi: i64) -> Vec<Vec<u8>> {
    (lo..hi.max(lo))
        .map(|t| {
            let mut v: Vec<u8> = spans
                .iter()
                .filter(|&&(s, e, _)| s <= t && t < e)
                .map(|&(_, _, b)| b)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The union in start order, without a copy, is the union: spans sorted by start (ties in any
    /// order), and unsorted ones (the fallback), empty and inverted ones included.
    #[test]
    fn the_union_in_start_order_is_the_union(spans in small_spans(), big in big_spans()) {
        for spans in [spans, big] {
            let mut v: Vec<(i64, i64)> = spans.iter().map(|&(s, e, _)| (s, e)).collect();
            prop_assert_eq!(union_by_start(v.iter().copied()), union(v.iter().copied()));
            let in_order = v.is_sorted_by_key(|&(s, _)| s);
            prop_assert_eq!(pushed(&v), in_order.then(|| union(v.iter().copied())));
            v.sort_by_key(|&(s, _)| s);
            prop_assert_eq!(union_by_start(v.iter().copied()), union(v.iter().copied()));
            prop_assert_eq!(pushed(&v), Some(union(v.iter().copied())));
        }
    }

    /// Σ exclusive + Σ gaps = hi − lo, exactly, whatever the spans.
    #[test]
    fn sweep_accounts_for_every_nanosecond(spans in small_spans(), lo in -10i64..150, len in -5i64..200) {
        let hi = lo + len;
        let s = sweep(spans.iter().copied(), lo, hi);
        let excl: i64 = s.exclusive.values().sum();
        prop_assert_eq!(excl + s.idle(), (hi - lo).max(0));
    }

    #[test]
    fn sweep_accounts_for_every_nanosecond_at_scale(spans in big_spans()) {
        let lo = spans.iter().map(|s| s.0).min().unwrap_or(0);
        let hi = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let s = sweep(spans.iter().copied(), lo, hi);
        let excl: i64 = s.exclusive.values().sum();
        prop_assert_eq!(excl + s.idle(), hi - lo);
        // Idle is what no span covers.
        prop_assert_eq!(s.idle(), (hi - lo) - union(spans.iter().map(|&(a, b, _)| (a, b))));
    }

    /// Against brute force: inclusive is each bucket's covered ns, gaps are exactly the uncovered ns,
    /// and exclusive is within the rounding bound of the exact share Σ_t 1/n_t.
    #[test]
    fn sweep_matches_brute_force(spans in small_spans(), lo in -10i64..150, len in 0i64..200) {
        let hi = lo + len;
        let s = sweep(spans.iter().copied(), lo, hi);
        let active = brute(&spans, lo, hi);
        let mut incl: BTreeMap<u8, i64> = BTreeMap::new();
        // Exact share times lcm(1..=4) = 12, to stay in integers.
        let mut share12: BTreeMap<u8, i64> = BTreeMap::new();
        let mut idle = Vec::new();
        for (i, a) in active.iter().enumerate() {
            let t = lo + i as i64;
            if a.is_empty() {
                idle.push(t);
            }
            for &b in a {
                *incl.entry(b).or_default() += 1;
                *share12.entry(b).or_default() += 12 / a.len() as i64;
            }
        }
        prop_assert_eq!(&s.inclusive, &incl);
        let gap_ns: Vec<i64> = s.gaps.iter().flat_map(|&(a, b)| a..b).collect();
        prop_assert_eq!(gap_ns, idle);
        // Gaps are maximal: sorted, separated.
        for w in s.gaps.windows(2) {
            prop_assert!(w[0].1 < w[1].0);
        }
        // The sweep cuts at every span end; each cut segment shared by n > 1 buckets may round a
        // bucket by < 1 ns. Bound: the number of span ends in the window, plus one.
        let cuts = spans.iter().flat_map(|&(a, b, _)| [a, b]).filter(|&x| lo < x && x < hi).count() as i64 + 1;
        for (b, &e) in &s.exclusive {
            prop_assert!(e >= 0 && e <= incl[b], "bucket {b}: exclusive {e} > inclusive {}", incl[b]);
            let exact12 = share12[b];
            prop_assert!((e * 12 - exact12).abs() <= cuts * 12, "bucket {b}: {e} vs {exact12}/12");
        }
    }

    /// The rounding turn: buckets sharing identical spans end within 1 ns of each other.
    #[test]
    fn sweep_rounding_is_fair(n in 1u8..7, lens in prop::collection::vec(1i64..50, 1..30)) {
        let mut spans = Vec::new();
        let mut t = 0;
        for l in &lens {
            for b in 0..n {
                spans.push((t, t + l, b));
            }
            t += l;
        }
        let s = sweep(spans, 0, t);
        let min = s.exclusive.values().min().copied().unwrap_or(0);
        let max = s.exclusive.values().max().copied().unwrap_or(0);
        prop_assert!(max - min <= 1, "{:?}", s.exclusive);
        prop_assert_eq!(s.exclusive.values().sum::<i64>(), t);
    }

    /// The rounding turn carries over single-bucket segments: buckets that share identical spans,
    /// with segments where only one bucket (of theirs or another) runs in between, still end within
    /// 1 ns of each other once each one's time alone is taken out.
    #[test]
    fn sweep_rounding_turn_survives_single_bucket_segments(
        n in 2u8..7,
        parts in prop::collection::vec((1i64..50, prop::option::of((0u8..8, 1i64..20))), 1..30),
    ) {
        let mut spans = Vec::new();
        let mut alone: BTreeMap<u8, i64> = BTreeMap::new();
        let mut t = 0;
        for (l, solo) in &parts {
            for b in 0..n {
                spans.push((t, t + l, b));
            }
            t += l;
            if let Some((b, d)) = solo {
                spans.push((t, t + d, *b));
                *alone.entry(*b).or_default() += d;
                t += d;
            }
        }
        let s = sweep(spans, 0, t);
        let shared: Vec<i64> = (0..n)
            .map(|b| s.exclusive[&b] - alone.get(&b).copied().unwrap_or(0))
            .collect();
        let (min, max) = (shared.iter().min().copied().unwrap_or(0), shared.iter().max().copied().unwrap_or(0));
        prop_assert!(max - min <= 1, "{:?} (alone {:?})", shared, alone);
        prop_assert_eq!(s.exclusive.values().sum::<i64>(), t);
    }

    /// The input order does not matter.
    #[test]
    fn sweep_ignores_input_order(spans in small_spans(), seed in any::<u64>()) {
        let mut shuffled = spans.clone();
        // A deterministic shuffle from the seed.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(sweep(spans, 0, 200), sweep(shuffled, 0, 200));
    }

    /// One bucket: exclusive = inclusive = union.
    #[test]
    fn one_bucket_is_its_union(spans in small_spans()) {
        let one: Vec<(i64, i64, u8)> = spans.iter().map(|&(a, b, _)| (a, b, 0)).collect();
        let s = sweep(one.iter().copied(), 0, 200);
        let u = union_within(one.iter().map(|&(a, b, _)| (a, b)), 0, 200);
        prop_assert_eq!(s.exclusive.get(&0).copied().unwrap_or(0), u);
        prop_assert_eq!(s.inclusive.get(&0).copied().unwrap_or(0), u);
    }

    /// Union: bounded by the sum of lengths and by the window, order-free, translation-free,
    /// subadditive.
    #[test]
    fn union_properties(a in small_spans(), b in small_spans(), shift in -1_000_000i64..1_000_000) {
        let iv = |v: &[(i64, i64, u8)]| v.iter().map(|&(s, e, _)| (s, e)).collect::<Vec<_>>();
        let (ia, ib) = (iv(&a), iv(&b));
        let ua = union(ia.iter().copied());
        let sum: i64 = ia.iter().map(|&(s, e)| (e - s).max(0)).sum();
        prop_assert!(0 <= ua && ua <= sum);
        prop_assert!(union_within(ia.iter().copied(), 0, 100) <= 100);
        let mut rev = ia.clone();
        rev.reverse();
        prop_assert_eq!(union(rev), ua);
        prop_assert_eq!(union(ia.iter().map(|&(s, e)| (s + shift, e + shift))), ua);
        let ub = union(ib.iter().copied());
        let both = union(ia.iter().chain(&ib).copied());
        prop_assert!(ua.max(ub) <= both && both <= ua + ub);
    }
}
