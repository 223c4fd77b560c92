//! Interval arithmetic on integer nanoseconds.
//!
//! Union is computed by sorting starts and sweeping once: O(n log n), exact, no floating point.
//! [`sweep`] splits a window's time among the buckets active at each instant, also exactly: see its
//! documentation for how a nanosecond that cannot be split evenly is handed out.

use std::collections::BTreeMap;

/// Time covered by at least one of `intervals` (`(start, end)` pairs, ns), clipped to `[lo, hi)`.
/// Empty or inverted intervals cover nothing.
pub fn union_within(intervals: impl IntoIterator<Item = (i64, i64)>, lo: i64, hi: i64) -> i64 {
    let mut v: Vec<(i64, i64)> = intervals
        .into_iter()
        .map(|(s, e)| (s.max(lo), e.min(hi)))
        .filter(|(s, e)| s < e)
        .collect();
    union_sorted(&mut v)
}

/// Time covered by at least one of `intervals`, ns.
pub fn union(intervals: impl IntoIterator<Item = (i64, i64)>) -> i64 {
    union_within(intervals, i64::MIN, i64::MAX)
}

/// [`union`] of `intervals` without a copy when they come in order of start (a built trace's rows do:
/// `TraceBuilder::finish` sorts them), else as [`union`]: the summary of a large trace then holds no
/// second list of its kernels. In order, the intervals are read once ([`StartOrderCover`]).
pub fn union_by_start<I>(intervals: I) -> i64
where
    I: IntoIterator<Item = (i64, i64)>,
    I::IntoIter: Clone,
{
    let it = intervals.into_iter();
    let mut cover = StartOrderCover::default();
    for (s, e) in it.clone() {
        cover.push(s, e);
    }
    cover.covered().unwrap_or_else(|| union(it))
}

fn union_sorted(v: &mut [(i64, i64)]) -> i64 {
    v.sort_unstable();
    let mut cover = StartOrderCover::default();
    for &(s, e) in v.iter() {
        cover.add(s, e);
    }
    cover.total()
}

/// [`union_by_start`] one interval at a time, for a pass that reads the intervals for other sums
/// too (the summary's over the kernels): it sweeps while they come in order of start, and says when
/// one did not (the caller then asks [`union`] of them all).
///
/// The sum runs in `i128` (a single interval may be longer than `i64::MAX` when its ends have
/// opposite signs); the result saturates at `i64::MAX`, which no trace reaches: the parser keeps
/// every time within ±[`crate::MAX_ABS_NS`], so a union of a trace's intervals is below 2^63 ns.
#[derive(Debug, Default, Clone)]
pub struct StartOrderCover {
    total: i128,
    /// The run of overlapping intervals being swept.
    cur: Option<(i64, i64)>,
    last_start: Option<i64>,
    out_of_order: bool,
}

impl StartOrderCover {
    /// Adds `[s, e)` (empty or inverted: covers nothing, but its start must still be in order).
    pub fn push(&mut self, s: i64, e: i64) {
        if self.out_of_order {
            return;
        }
        if self.last_start.is_some_and(|l| s < l) {
            self.out_of_order = true;
            return;
        }
        self.last_start = Some(s);
        if s < e {
            self.add(s, e);
        }
    }

    /// The time covered, or `None` when an interval came before the one pushed before it.
    pub fn covered(&self) -> Option<i64> {
        (!self.out_of_order).then(|| self.total())
    }

    /// Sweeps a non-empty interval that starts no earlier than the ones before it.
    fn add(&mut self, s: i64, e: i64) {
        match self.cur {
            Some((cs, ce)) if s <= ce => self.cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                self.total += i128::from(ce) - i128::from(cs);
                self.cur = Some((s, e));
            }
            None => self.cur = Some((s, e)),
        }
    }

    fn total(&self) -> i64 {
        let open = self
            .cur
            .map_or(0, |(cs, ce)| i128::from(ce) - i128::from(cs));
        i64::try_from(self.total + open).unwrap_or(i64::MAX)
    }
}

/// The time `intervals` cover, as sorted, disjoint, non-empty intervals (touching ones joined): the
/// intervals whose lengths sum to [`union`] of the same input. Empty or inverted intervals cover nothing.
pub fn merge(intervals: impl IntoIterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut iv: Vec<(i64, i64)> = intervals.into_iter().filter(|(a, b)| b > a).collect();
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(iv.len());
    for (a, b) in iv {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Σ of the lengths of `iv`, ns, saturating at `i64::MAX` (the length of [`merge`]'s output is the
/// [`union`] of its input).
pub fn length(iv: &[(i64, i64)]) -> i64 {
    iv.iter()
        .fold(0i64, |acc, (a, b)| acc.saturating_add(b.saturating_sub(*a)))
}

/// The time covered by both `x` and `y`, each sorted and disjoint as [`merge`] returns them: sorted,
/// disjoint, non-empty intervals. O(|x| + |y|).
pub fn intersect(x: &[(i64, i64)], y: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < x.len() && j < y.len() {
        let lo = x[i].0.max(y[j].0);
        let hi = x[i].1.min(y[j].1);
        if hi > lo {
            out.push((lo, hi));
        }
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The time covered by `x` and not by `y`, each sorted and disjoint as [`merge`] returns them: sorted,
/// disjoint, non-empty intervals, so that `length(subtract(x, y)) + length(intersect(x, y)) =
/// length(x)` exactly. O(|x| + |y|).
pub fn subtract(x: &[(i64, i64)], y: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(a, b) in x {
        let mut cur = a;
        // Skip the parts of `y` that end before this interval starts.
        while j < y.len() && y[j].1 <= a {
            j += 1;
        }
        let mut k = j;
        while k < y.len() && y[k].0 < b {
            if y[k].0 > cur {
                out.push((cur, y[k].0));
            }
            cur = cur.max(y[k].1);
            k += 1;
        }
        if cur < b {
            out.push((cur, b));
        }
    }
    out
}

/// What [`sweep`] found in a window `[lo, hi)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep<B: Ord> {
    /// Per bucket: its share of the time, where each instant is split equally among the buckets
    /// active then, ns. Σ exclusive + Σ gaps = hi − lo exactly.
    pub exclusive: BTreeMap<B, i64>,
    /// Per bucket: time covered by at least one of its spans (the union), ns.
    pub inclusive: BTreeMap<B, i64>,
    /// The maximal sub-intervals of `[lo, hi)` where no span is active, in time order.
    pub gaps: Vec<(i64, i64)>,
}

impl<B: Ord> Sweep<B> {
    /// Σ of the gaps, ns.
    pub fn idle(&self) -> i64 {
        self.gaps
            .iter()
            .fold(0i64, |acc, (a, b)| acc.saturating_add(b.saturating_sub(*a)))
    }
}

/// Splits the window `[lo, hi)` among buckets: each `(start, end, bucket)` span is clipped to the
/// window (empty or inverted spans count for nothing), the window is cut into elementary segments at
/// every span end, and each segment's length L is split equally among the n distinct buckets active in
/// it: each gets ⌊L / n⌋ ns, and the L mod n nanoseconds left over go one each to the next L mod n
/// active buckets (in bucket order, wrapping round) from a turn that carries over from segment to
/// segment — through segments with a single bucket or none, which have nothing to hand out — so that
/// no bucket is favoured by the rounding. A bucket therefore ends within 1 ns per shared segment of its
/// exact rational share, and the invariant Σ exclusive + Σ idle = hi − lo holds exactly.
///
/// Several spans of one bucket overlapping count that bucket once (it is "active"), so inclusive time
/// is the bucket's union. Segments with nothing active are the gaps. A window with `hi <= lo` is
/// empty: everything is zero. Sums saturate rather than overflow, so the invariant is exact for
/// windows shorter than 2^63 ns (292 years). O(n log n) in the number of spans.
pub fn sweep<B: Ord + Clone>(
    spans: impl IntoIterator<Item = (i64, i64, B)>,
    lo: i64,
    hi: i64,
) -> Sweep<B> {
    // Dense ids in bucket order: the fixed order the rounding turn walks.
    let clipped: Vec<(i64, i64, B)> = spans
        .into_iter()
        .map(|(s, e, b)| (s.max(lo), e.min(hi), b))
        .filter(|(s, e, _)| s < e)
        .collect();
    let mut ids: BTreeMap<B, usize> = BTreeMap::new();
    for (_, _, b) in &clipped {
        ids.entry(b.clone()).or_insert(0);
    }
    let names: Vec<B> = ids.keys().cloned().collect();
    for (i, v) in ids.values_mut().enumerate() {
        *v = i;
    }
    let mut events: Vec<(i64, bool, usize)> = Vec::with_capacity(clipped.len() * 2);
    for (s, e, b) in &clipped {
        let id = ids.get(b).copied().unwrap_or(0);
        events.push((*s, true, id));
        events.push((*e, false, id));
    }
    events.sort_unstable_by_key(|&(t, _, _)| t);

    let n = names.len();
    let mut depth = vec![0u32; n];
    let mut opened = vec![0i64; n];
    let mut exclusive = vec![0i64; n];
    let mut inclusive = vec![0i64; n];
    let mut active: Vec<usize> = Vec::with_capacity(n);
    let mut gaps: Vec<(i64, i64)> = Vec::new();
    // The id of the bucket next in line for a spare nanosecond.
    let mut turn: usize = 0;
    let mut cur = lo;

    let mut segment = |a: i64, b: i64, active: &[usize], turn: &mut usize| {
        if b <= a {
            return;
        }
        // abs_diff: no overflow even for a window spanning the whole i64 range.
        let len = b.abs_diff(a);
        if active.is_empty() {
            match gaps.last_mut() {
                Some(g) if g.1 == a => g.1 = b,
                _ => gaps.push((a, b)),
            }
            return;
        }
        let k = active.len() as u64;
        let (q, r) = (len / k, len % k);
        let q = i64::try_from(q).unwrap_or(i64::MAX);
        for &id in active {
            exclusive[id] = exclusive[id].saturating_add(q);
        }
        if r == 0 {
            // Nothing to hand out (always so when one bucket is active): the turn stays where it is.
            return;
        }
        // The turn is a bucket id: the spare ns go to the first r active buckets from it on, wrapping
        // round, and it moves past the last one served.
        let from = active.partition_point(|&id| id < *turn);
        let mut last = 0;
        for j in 0..r as usize {
            last = active[(from + j) % active.len()];
            exclusive[last] = exclusive[last].saturating_add(1);
        }
        *turn = last + 1;
    };

    let mut i = 0;
    while i < events.len() {
        let t = events[i].0;
        segment(cur, t, &active, &mut turn);
        while i < events.len() && events[i].0 == t {
            let (_, start, id) = events[i];
            if start {
                if depth[id] == 0 {
                    opened[id] = t;
                    let at = active.partition_point(|&a| a < id);
                    active.insert(at, id);
                }
                depth[id] += 1;
            } else {
                depth[id] -= 1;
                if depth[id] == 0 {
                    inclusive[id] = inclusive[id].saturating_add(t.saturating_sub(opened[id]));
                    if let Ok(at) = active.binary_search(&id) {
                        active.remove(at);
                    }
                }
            }
            i += 1;
        }
        cur = t;
    }
    segment(cur, hi, &active, &mut turn);

    Sweep {
        exclusive: names.iter().cloned().zip(exclusive).collect(),
        inclusive: names.into_iter().zip(inclusive).collect(),
        gaps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn union_by_hand() {
        // [0,10) ∪ [5,15) ∪ [20,25) = 15 + 5.
        assert_eq!(union([(0, 10), (5, 15), (20, 25)]), 20);
        // Touching intervals merge without double counting.
        assert_eq!(union([(0, 10), (10, 20)]), 20);
        assert_eq!(union([(3, 3), (5, 4)]), 0);
        assert_eq!(union_within([(0, 10), (5, 15)], 2, 12), 10);
    }

    #[test]
    fn union_of_intervals_longer_than_i64_max_saturates_instead_of_overflowing() {
        // One interval of 2^64 − 1 ns: past i64::MAX (its i64 difference would wrap to −1).
        assert_eq!(union([(i64::MIN, i64::MAX)]), i64::MAX);
        // Two of 2^62 − 1 + 2^62 − 1 ns, apart: the sum is exact below i64::MAX.
        let m = crate::MAX_ABS_NS;
        assert_eq!(union([(-m, 0), (1, m)]), 2 * m - 1);
        assert_eq!(union([(-m, m), (-m, m)]), 2 * m);
    }

    #[test]
    fn sweep_by_hand() {
        // gemm [0,10), comm [5,15), gap [15,20), gemm [20,23); window [0,25): gap [23,25) too.
        let s = sweep([(0, 10, "gemm"), (5, 15, "comm"), (20, 23, "gemm")], 0, 25);
        // [0,5) gemm 5; [5,10) shared; [10,15) comm 5; [20,23) gemm 3.
        assert_eq!(s.exclusive["comm"] + s.exclusive["gemm"], 5 + 5 + 5 + 3);
        // [5,10) splits 2 + 2 and the spare ns goes to "comm", which sorts first.
        assert_eq!(s.exclusive["comm"], 3 + 5);
        assert_eq!(s.exclusive["gemm"], 5 + 2 + 3);
        assert_eq!(s.inclusive["gemm"], 13);
        assert_eq!(s.inclusive["comm"], 10);
        assert_eq!(s.gaps, vec![(15, 20), (23, 25)]);
        assert_eq!(s.idle(), 7);
    }

    #[test]
    fn sweep_rounding_takes_turns() {
        // Three 1-ns segments shared by a and b: the spare ns goes a, b, a, not a, a, a.
        let s = sweep(
            [
                (0, 1, 'a'),
                (0, 1, 'b'),
                (1, 2, 'a'),
                (1, 2, 'b'),
                (2, 3, 'a'),
                (2, 3, 'b'),
            ],
            0,
            3,
        );
        assert_eq!((s.exclusive[&'a'], s.exclusive[&'b']), (2, 1));
        assert!(s.gaps.is_empty());
    }

    #[test]
    fn sweep_of_an_empty_or_inverted_window_is_zero() {
        let s = sweep([(0, 10, 1u8)], 5, 5);
        assert!(s.exclusive.is_empty() && s.gaps.is_empty());
        let s = sweep([(0, 10, 1u8)], 9, 3);
        assert!(s.exclusive.is_empty() && s.gaps.is_empty());
        let s = sweep(std::iter::empty::<(i64, i64, u8)>(), 0, 4);
        assert_eq!(s.gaps, vec![(0, 4)]);
    }

    #[test]
    fn sweep_of_the_whole_clock_does_not_overflow() {
        let s = sweep([(-5, 5, 0u8), (0, i64::MAX, 1)], i64::MIN, i64::MAX);
        assert_eq!(s.gaps, vec![(i64::MIN, -5)]);
        assert_eq!(s.idle(), i64::MAX - 4);
        // [-5, 0) bucket 0; [0, 5) shared, 3 + 2; [5, MAX) bucket 1.
        assert_eq!(s.exclusive[&0], 8);
        assert_eq!(s.exclusive[&1], i64::MAX - 3);
        assert_eq!(s.inclusive[&0], 10);
    }

    #[test]
    fn merge_intersect_subtract_by_hand() {
        // [0,10) ∪ [5,15) ∪ [15,18) ∪ [20,25): touching [15,18) joins; the empty [30,30) covers nothing.
        let x = merge([(20, 25), (0, 10), (5, 15), (15, 18), (30, 30)]);
        assert_eq!(x, vec![(0, 18), (20, 25)]);
        assert_eq!(length(&x), 18 + 5);
        let y = merge([(3, 4), (10, 22), (24, 40)]);
        assert_eq!(
            intersect(&x, &y),
            vec![(3, 4), (10, 18), (20, 22), (24, 25)]
        );
        // x less y: [0,3), [4,10), [22,24).
        assert_eq!(subtract(&x, &y), vec![(0, 3), (4, 10), (22, 24)]);
        assert_eq!(subtract(&y, &x), vec![(18, 20), (25, 40)]);
        assert_eq!(subtract(&x, &[]), x);
        assert!(subtract(&[], &x).is_empty());
    }

    proptest! {
        /// merge, intersect and subtract against a brute-force walk of the nanoseconds of a small grid:
        /// each output is sorted and disjoint, and covers exactly the nanoseconds its definition says.
        #[test]
        fn set_operations_match_brute_force(
            a in prop::collection::vec((0i64..200, 0i64..40), 0..20),
            b in prop::collection::vec((0i64..200, 0i64..40), 0..20),
        ) {
            let a: Vec<(i64, i64)> = a.iter().map(|&(s, d)| (s, s + d)).collect();
            let b: Vec<(i64, i64)> = b.iter().map(|&(s, d)| (s, s + d)).collect();
            let (x, y) = (merge(a.iter().copied()), merge(b.iter().copied()));
            let covers = |iv: &[(i64, i64)], t: i64| iv.iter().any(|&(s, e)| s <= t && t < e);
            let disjoint = |iv: &[(i64, i64)]| iv.windows(2).all(|w| w[0].1 < w[1].0) && iv.iter().all(|v| v.0 < v.1);
            let (i, d) = (intersect(&x, &y), subtract(&x, &y));
            prop_assert!(disjoint(&x) && disjoint(&i) && disjoint(&d));
            for t in 0..240 {
                prop_assert_eq!(covers(&x, t), covers(&a, t));
                prop_assert_eq!(covers(&i, t), covers(&a, t) && covers(&b, t));
                prop_assert_eq!(covers(&d, t), covers(&a, t) && !covers(&b, t));
            }
            prop_assert_eq!(length(&x), union(a.iter().copied()));
            prop_assert_eq!(length(&d) + length(&i), length(&x));
        }

        /// Against a brute-force count of covered nanoseconds on a small grid.
        #[test]
        fn union_matches_brute_force(v in prop::collection::vec((0i64..200, 0i64..50), 0..30),
                                     lo in 0i64..100, len in 0i64..200) {
            let iv: Vec<(i64, i64)> = v.iter().map(|&(s, d)| (s, s + d)).collect();
            let hi = lo + len;
            let brute = (lo..hi).filter(|&t| iv.iter().any(|&(s, e)| s <= t && t < e)).count() as i64;
            prop_assert_eq!(union_within(iv.iter().copied(), lo, hi), brute);
        }
    }
}
