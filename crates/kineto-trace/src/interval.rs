//! Interval arithmetic on integer nanoseconds.
//!
//! Union is computed by sorting starts and sweeping once: O(n log n), exact, no floating point.

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

fn union_sorted(v: &mut [(i64, i64)]) -> i64 {
    v.sort_unstable();
    let mut total: i64 = 0;
    let mut cur: Option<(i64, i64)> = None;
    for &(s, e) in v.iter() {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
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

    proptest! {
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
