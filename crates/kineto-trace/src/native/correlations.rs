//! Correlation ids made unique in a trace: each distinct (scope, raw id) numbered 1, 2, … in the order
//! first seen. nsys and rocprof number correlations per process, so two processes of one file reuse ids.
//!
//! Raw ids are counters (CUPTI's and rocprofiler's number from 1 up), so a scope's ids are kept in a
//! list indexed by the raw id — 4 bytes an id, no hashing — while they stay dense; a scope whose ids
//! jump far past what it holds moves to a map. A map of every correlated row was a third of the
//! SQLite readers' CPU and ~30 bytes a dispatch of a rocprofv3 file's memory (`docs/parse-costs.md`).

use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// A dense scope's list may reach this many slots whatever it holds (4 MiB of `u32`).
const DENSE_FLOOR: u64 = 1 << 20;

/// The correlation ids of a trace being read.
#[derive(Debug, Default)]
pub(crate) struct Correlations {
    /// Each scope and its ids, in the order first seen (a file has a few processes).
    scopes: Vec<(u64, Ids)>,
    /// The scope looked up last (rows of one process come together).
    last: usize,
    /// Ids handed out so far.
    count: u64,
}

#[derive(Debug)]
enum Ids {
    /// Slot `raw` holds the id of raw id `raw` (0: none yet); `held` ids are set.
    Dense { slots: Vec<u32>, held: u64 },
    /// Raw id → id.
    Sparse(FxHashMap<u64, NonZeroU64>),
}

impl Correlations {
    /// The id of raw id `raw` of `scope`, handed out now if new; `raw` 0 means none.
    pub(crate) fn id(&mut self, scope: u64, raw: u64) -> Option<NonZeroU64> {
        if raw == 0 {
            return None;
        }
        let next = NonZeroU64::new(self.count + 1)?;
        let i = self.scope(scope);
        let ids = &mut self.scopes[i].1;
        let id = match ids {
            Ids::Dense { slots, held } => {
                if let Some(&s) = slots.get(raw as usize)
                    && s != 0
                {
                    return NonZeroU64::new(u64::from(s));
                }
                let fits = raw < DENSE_FLOOR.max(held.saturating_mul(4));
                match u32::try_from(next.get()) {
                    Ok(n) if fits => {
                        if slots.len() <= raw as usize {
                            slots.resize(raw as usize + 1, 0);
                        }
                        slots[raw as usize] = n;
                        *held += 1;
                        next
                    }
                    _ => {
                        let mut map = sparse(slots);
                        map.insert(raw, next);
                        *ids = Ids::Sparse(map);
                        next
                    }
                }
            }
            Ids::Sparse(map) => *map.entry(raw).or_insert(next),
        };
        if id == next {
            self.count += 1;
        }
        Some(id)
    }

    /// The index of `scope` in `scopes`, added if new.
    fn scope(&mut self, scope: u64) -> usize {
        if self.scopes.get(self.last).is_some_and(|s| s.0 == scope) {
            return self.last;
        }
        self.last = match self.scopes.iter().position(|s| s.0 == scope) {
            Some(i) => i,
            None => {
                let dense = Ids::Dense {
                    slots: Vec::new(),
                    held: 0,
                };
                self.scopes.push((scope, dense));
                self.scopes.len() - 1
            }
        };
        self.last
    }
}

/// A dense scope's ids as a map.
fn sparse(slots: &[u32]) -> FxHashMap<u64, NonZeroU64> {
    slots
        .iter()
        .enumerate()
        .filter_map(|(raw, &s)| Some((raw as u64, NonZeroU64::new(u64::from(s))?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: a map of (scope, raw) → the number of distinct pairs seen when it was first seen.
    fn by_map(rows: &[(u64, u64)]) -> Vec<Option<u64>> {
        let mut m: FxHashMap<(u64, u64), u64> = FxHashMap::default();
        rows.iter()
            .map(|&(s, r)| {
                (r != 0).then(|| {
                    let n = m.len() as u64 + 1;
                    *m.entry((s, r)).or_insert(n)
                })
            })
            .collect()
    }

    fn by_lists(rows: &[(u64, u64)]) -> Vec<Option<u64>> {
        let mut c = Correlations::default();
        rows.iter()
            .map(|&(s, r)| c.id(s, r).map(NonZeroU64::get))
            .collect()
    }

    #[test]
    fn ids_are_per_scope_first_seen_first_and_far_ids_move_a_scope_to_a_map() {
        // Scope 7: raw 1, 2, 1 → ids 1, 2, 1; scope 8 reuses raw 1 → id 3; raw 0 is none; a raw id
        // past the dense floor (2^20 + 5, with 2 held) moves scope 7 to a map: id 4, then raw 2 is
        // still id 2 and raw 3 new, id 5.
        let far = DENSE_FLOOR + 5;
        let rows = [
            (7, 1),
            (7, 2),
            (7, 1),
            (8, 1),
            (7, 0),
            (7, far),
            (7, 2),
            (7, 3),
        ];
        let want = [
            Some(1),
            Some(2),
            Some(1),
            Some(3),
            None,
            Some(4),
            Some(2),
            Some(5),
        ];
        assert_eq!(by_lists(&rows), want);
        assert_eq!(by_map(&rows), want);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Whatever the ids — dense counters, repeats, far jumps, several scopes — the lists number
        /// them as the map of every pair does.
        #[test]
        fn the_lists_number_ids_as_a_map_of_every_pair(
            rows in proptest::collection::vec(
                (0u64..3, prop_oneof![8 => 0u64..50, 1 => 0u64..3 * DENSE_FLOOR, 1 => Just(u64::MAX)]),
                0..400,
            )
        ) {
            prop_assert_eq!(by_lists(&rows), by_map(&rows));
        }
    }
}
