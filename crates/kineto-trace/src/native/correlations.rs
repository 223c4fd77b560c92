//! Correlation ids made unique in a trace: each distinct (scope, raw id) numbered 1, 2, … in the order
//! first seen. nsys and rocprof number correlations per process, so two processes of one file reuse ids.
//!
//! Raw ids are counters (CUPTI's and rocprofiler's number from 1 up; a tool that restarts or offsets
//! its counter jumps to a new run of them), so a scope's ids are kept in a few dense runs, lists indexed
//! by the raw id from the run's first — 4 bytes an id, no hashing; a scope whose ids scatter past
//! [`MAX_RUNS`] runs moves to a map. A map of every correlated row was a third of the SQLite readers'
//! CPU and ~30 bytes a dispatch of a rocprofv3 file's memory (`docs/parse-costs.md`).

use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// A run may grow to this many slots whatever it holds (256 KiB of `u32`), else to 4 × what it holds.
const RUN_FLOOR: u64 = 1 << 16;
/// A scope of more runs than this is kept in a map.
const MAX_RUNS: usize = 64;

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
    /// Runs of raw ids, by first raw id.
    Dense(Vec<Run>),
    /// Raw id → id.
    Sparse(FxHashMap<u64, NonZeroU64>),
}

/// Raw ids `first ..` of a scope: slot `i` holds the id of raw id `first + i` (0: none yet).
#[derive(Debug)]
struct Run {
    first: u64,
    slots: Vec<u32>,
    /// Slots set.
    held: u64,
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
            Ids::Dense(runs) => match dense(runs, raw, next) {
                Some(id) => id,
                None => {
                    let mut map = sparse(runs);
                    map.insert(raw, next);
                    *ids = Ids::Sparse(map);
                    next
                }
            },
            Ids::Sparse(map) => *map.entry(raw).or_insert(next),
        };
        if id == next {
            self.count += 1;
        }
        Some(id)
    }

    /// The id of raw id `raw` of `scope` if one was handed out; none is handed out here.
    pub(crate) fn get(&self, scope: u64, raw: u64) -> Option<NonZeroU64> {
        let (_, ids) = self.scopes.iter().find(|s| s.0 == scope)?;
        match ids {
            Ids::Dense(runs) => {
                let run = &runs[runs.partition_point(|r| r.first <= raw).checked_sub(1)?];
                let slot = *run.slots.get(usize::try_from(raw - run.first).ok()?)?;
                NonZeroU64::new(u64::from(slot))
            }
            Ids::Sparse(map) => map.get(&raw).copied(),
        }
    }

    /// The index of `scope` in `scopes`, added if new.
    fn scope(&mut self, scope: u64) -> usize {
        if self.scopes.get(self.last).is_some_and(|s| s.0 == scope) {
            return self.last;
        }
        self.last = match self.scopes.iter().position(|s| s.0 == scope) {
            Some(i) => i,
            None => {
                self.scopes.push((scope, Ids::Dense(Vec::new())));
                self.scopes.len() - 1
            }
        };
        self.last
    }
}

/// The id of `raw` in `runs`, `next` set for it if new; `None` when it would take more runs than
/// [`MAX_RUNS`] or an id past `u32` (the scope then moves to a map).
fn dense(runs: &mut Vec<Run>, raw: u64, next: NonZeroU64) -> Option<NonZeroU64> {
    // The run `raw` falls in or after: the last whose first is ≤ raw.
    let at = runs.partition_point(|r| r.first <= raw);
    if let Some(run) = at.checked_sub(1).map(|i| &mut runs[i]) {
        let off = raw - run.first;
        if let Some(&s) = run.slots.get(off as usize)
            && s != 0
        {
            return NonZeroU64::new(u64::from(s));
        }
        // Growing it to `raw` never reaches the next run: that run's first is past `raw`.
        if off < RUN_FLOOR.max(run.held.saturating_mul(4)) {
            let n = u32::try_from(next.get()).ok()?;
            if run.slots.len() <= off as usize {
                run.slots.resize(off as usize + 1, 0);
            }
            run.slots[off as usize] = n;
            run.held += 1;
            return Some(next);
        }
    }
    if runs.len() >= MAX_RUNS {
        return None;
    }
    let n = u32::try_from(next.get()).ok()?;
    runs.insert(
        at,
        Run {
            first: raw,
            slots: vec![n],
            held: 1,
        },
    );
    Some(next)
}

/// A dense scope's ids as a map.
fn sparse(runs: &[Run]) -> FxHashMap<u64, NonZeroU64> {
    runs.iter()
        .flat_map(|r| {
            r.slots
                .iter()
                .enumerate()
                .filter_map(|(i, &s)| Some((r.first + i as u64, NonZeroU64::new(u64::from(s))?)))
        })
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
    fn ids_are_per_scope_first_seen_first_in_runs_or_a_map() {
        // Scope 7: raw 1, 2, 1 → ids 1, 2, 1; scope 8 reuses raw 1 → id 3; raw 0 is none; a raw id far
        // past scope 7's run (2^16 + 5, with 2 held) opens a second run: id 4; raw 2 is still id 2 and
        // raw 3, in the first run, new: id 5.
        let far = RUN_FLOOR + 5;
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
        // 100 raw ids 10^6 apart need more than MAX_RUNS runs: the scope moves to a map, ids kept.
        let mut rows: Vec<(u64, u64)> = (1..=100).map(|k| (1, k * 1_000_000)).collect();
        rows.extend((1..=100).rev().map(|k| (1, k * 1_000_000)));
        assert_eq!(by_lists(&rows), by_map(&rows));
        let mut c = Correlations::default();
        for &(s, r) in &rows {
            c.id(s, r);
        }
        assert!(matches!(c.scopes[0].1, Ids::Sparse(_)));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Whatever the ids — dense counters, repeats, far jumps, several scopes — the lists number
        /// them as the map of every pair does.
        #[test]
        fn the_lists_number_ids_as_a_map_of_every_pair(
            rows in proptest::collection::vec(
                (0u64..3, prop_oneof![8 => 0u64..50, 1 => 0u64..3 * RUN_FLOOR, 1 => (1u64..80).prop_map(|k| k * 1_000_000), 1 => Just(u64::MAX)]),
                0..400,
            )
        ) {
            prop_assert_eq!(by_lists(&rows), by_map(&rows));
        }

        /// `get` finds the id that `id` handed out for every (scope, raw id) seen, and none for one
        /// unseen (scope 3 and raw id 3 × RUN_FLOOR are never drawn) or for raw id 0; it hands none out.
        #[test]
        fn get_finds_what_was_handed_out_and_nothing_else(
            rows in proptest::collection::vec(
                (0u64..3, prop_oneof![8 => 0u64..50, 1 => 0u64..3 * RUN_FLOOR, 1 => (1u64..80).prop_map(|k| k * 1_000_000)]),
                0..400,
            )
        ) {
            let mut c = Correlations::default();
            let ids: Vec<Option<NonZeroU64>> = rows.iter().map(|&(s, r)| c.id(s, r)).collect();
            let count = c.count;
            for (&(s, r), id) in rows.iter().zip(&ids) {
                prop_assert_eq!(c.get(s, r), *id);
            }
            prop_assert_eq!(c.get(3, 1), None);
            for s in 0..3 {
                prop_assert_eq!(c.get(s, 3 * RUN_FLOOR), None);
                prop_assert_eq!(c.get(s, 0), None);
            }
            prop_assert_eq!(c.count, count);
        }
    }
}
