//! Correlation ids from flow pairs, for the GPU ops of a Chrome-trace array that carry none
//! (rpd2tracing's `api_op` pairs, the legacy rocprof's `DataFlow` `s` → `t`).
//!
//! What it is not: the reading of the flows (`super`), or links by correlation id (`crate::correlate`).

use super::Role;
use super::items::{Item, Items};
use crate::model::{Flow, FlowPhase, IdValue, Trace, Track};
use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// How far before a flow's start the API call it leaves may begin (`rpd2tracing` puts the start
/// 2 µs before the call's end, which is before the start of a call shorter than that), and how far
/// after the call's end (whole-µs rounding), ns.
const FLOW_BEFORE_NS: i64 = 2_000;
const FLOW_AFTER_NS: i64 = 1_000;

/// Correlation ids from flow pairs, for GPU ops that carry none: the finish is at the op's start on
/// its track, the start within the launching call on the caller's thread. Both ends are compared on
/// the events' own `ts` clock, the one flows are written on. Where a writer put a flow's end on
/// another track than its event (the legacy rocprof: a finish on tid 0 or on the stream's index, a
/// start on its API section rather than the OS process), the finish falls back to an op of the same
/// pid at that time, then to the one op anywhere at that time, and the start to a call of the same
/// tid.
///
/// In two stages, each with only its own lists: the call each pair leaves (which depends on nothing
/// linked before it), then, in the order of the flow ids, the op each lands on (the first not yet
/// linked) and the correlation both get.
pub(super) fn link_by_flows(items: &mut Items, trace: &Trace) -> Result<(), String> {
    let flows = &trace.flows;
    if flows.is_empty()
        || !items
            .iter()
            .any(|i| matches!(i.role, Role::Gpu(_)) && i.correlation.is_none())
    {
        return Ok(());
    }
    if u32::try_from(items.len().max(flows.len())).is_err() {
        return Err(format!(
            "{} complete events and {} flow ends: more than the 2^32 - 1 of each that flows are linked among",
            items.len(),
            flows.len()
        ));
    }
    // (start, finish) flows, then (call, finish) for the pairs whose call is found.
    let mut pairs = flow_pairs(flows);
    {
        let calls = Calls::of(items, trace);
        pairs.retain_mut(|(start, _)| {
            let f = &flows[*start as usize];
            calls
                .launch(items, trace, f.track, f.ts_ns)
                .map(|l| *start = l)
                .is_some()
        });
    }
    let at = Ops::of(items, trace);
    let mut linked = vec![false; items.len()];
    let mut next_id = items
        .iter()
        .filter_map(|i| i.correlation.map(NonZeroU64::get))
        .max()
        .unwrap_or(0);
    for (l, finish) in pairs {
        let f = &flows[finish as usize];
        let Some(op) = at.op(trace, f.track, f.ts_ns, &linked) else {
            continue;
        };
        let l = l as usize;
        let c = match items[l].correlation {
            Some(c) => c,
            None => {
                next_id += 1;
                let Some(c) = NonZeroU64::new(next_id) else {
                    continue;
                };
                items[l].correlation = Some(c);
                c
            }
        };
        linked[op] = true;
        items[op].correlation = Some(c);
    }
    Ok(())
}

/// The flows that pair up, by id, in the order of their ids: the last start and the last finish of
/// each id that has both (a later end of an id replaces an earlier one), as indices into `flows`.
fn flow_pairs(flows: &[Flow]) -> Vec<(u32, u32)> {
    let mut order: Vec<u32> = (0..flows.len()).map(index).collect();
    let key = |&i: &u32| {
        let f = &flows[i as usize];
        (f.id, f.phase == FlowPhase::Finish, i)
    };
    order.sort_unstable_by_key(key);
    let mut pairs = Vec::new();
    for same_id in order.chunk_by(|a, b| flows[*a as usize].id == flows[*b as usize].id) {
        let last = |phase| {
            same_id
                .iter()
                .rev()
                .find(|&&i| flows[i as usize].phase == phase)
        };
        if let (Some(&s), Some(&f)) = (last(FlowPhase::Start), last(FlowPhase::Finish)) {
            pairs.push((s, f));
        }
    }
    pairs
}

/// An index into the items or the flows as the lists here hold it (32 bits: half a word a row;
/// [`link_by_flows`] refuses more).
fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// A candidate: its key (a track, a numbered pid or tid), its time on the flow clock, its item.
type Keyed = (u32, i64, u32);

/// Four words to a candidate would be 24 bytes; the fields reordered, 16.
const _: () = assert!(std::mem::size_of::<Keyed>() == 16);

/// The number of `v` in `ids`, numbering it if new.
fn number<'t>(ids: &mut FxHashMap<&'t IdValue, u32>, v: &'t IdValue) -> u32 {
    let n = ids.len() as u32;
    *ids.entry(v).or_insert(n)
}

/// The entries of a sorted list whose key is `key`.
fn keyed<T, K: Ord>(list: &[T], key: K, of: impl Fn(&T) -> K) -> &[T] {
    let lo = list.partition_point(|e| of(e) < key);
    let hi = list.partition_point(|e| of(e) <= key);
    &list[lo..hi]
}

/// The calls a flow's start may leave, each list sorted by its key, then time, then file order (flat
/// lists rather than maps of lists: a file has hundreds of thousands of them): by track and by tid
/// (tids numbered).
struct Calls<'t> {
    tids: FxHashMap<&'t IdValue, u32>,
    by_track: Vec<Keyed>,
    by_tid: Vec<Keyed>,
}

impl<'t> Calls<'t> {
    fn of(items: &Items, trace: &'t Trace) -> Calls<'t> {
        let n = items
            .iter()
            .filter(|i| matches!(i.role, Role::Launch(_)))
            .count();
        let mut c = Calls {
            tids: FxHashMap::default(),
            by_track: Vec::with_capacity(n),
            by_tid: Vec::with_capacity(n),
        };
        for (i, it) in items.iter().enumerate() {
            if let Role::Launch(_) = it.role {
                let tid = number(&mut c.tids, &trace.track(it.track).tid);
                c.by_track.push((it.track.0, it.flow_ts(), index(i)));
                c.by_tid.push((tid, it.flow_ts(), index(i)));
            }
        }
        c.by_track.sort_unstable();
        c.by_tid.sort_unstable();
        c
    }

    /// The call a flow starting at `ts` on `track` leaves: the latest-starting call of the track (else
    /// of its tid) that begins no later than FLOW_BEFORE_NS after the flow start and ends no earlier
    /// than FLOW_AFTER_NS before it.
    fn launch(&self, items: &Items, trace: &Trace, track: Track, ts: i64) -> Option<u32> {
        let holds = |cands: &[Keyed]| {
            let upto = cands.partition_point(|e| e.1 <= ts + FLOW_BEFORE_NS);
            cands[..upto]
                .iter()
                .rev()
                .find(|e| items[e.2 as usize].flow_end() >= ts - FLOW_AFTER_NS)
                .map(|e| e.2)
        };
        holds(keyed(&self.by_track, track.0, |e| e.0)).or_else(|| {
            let tid = *self.tids.get(&trace.track(track).tid)?;
            holds(keyed(&self.by_tid, tid, |e| e.0))
        })
    }
}

/// The GPU ops without a correlation a flow's finish may land on, each list sorted by its key, then
/// time, then file order: by track, by pid (pids numbered) and by time alone.
struct Ops<'t> {
    pids: FxHashMap<&'t IdValue, u32>,
    by_track: Vec<Keyed>,
    by_pid: Vec<Keyed>,
    by_ts: Vec<(i64, u32)>,
}

impl<'t> Ops<'t> {
    fn of(items: &Items, trace: &'t Trace) -> Ops<'t> {
        let open = |it: &Item| matches!(it.role, Role::Gpu(_)) && it.correlation.is_none();
        let n = items.iter().filter(|it| open(it)).count();
        let mut c = Ops {
            pids: FxHashMap::default(),
            by_track: Vec::with_capacity(n),
            by_pid: Vec::with_capacity(n),
            by_ts: Vec::with_capacity(n),
        };
        for (i, it) in items.iter().enumerate().filter(|(_, it)| open(it)) {
            let pid = number(&mut c.pids, &trace.track(it.track).pid);
            c.by_track.push((it.track.0, it.flow_ts(), index(i)));
            c.by_pid.push((pid, it.flow_ts(), index(i)));
            c.by_ts.push((it.flow_ts(), index(i)));
        }
        c.by_track.sort_unstable();
        c.by_pid.sort_unstable();
        c.by_ts.sort_unstable();
        c
    }

    /// The op a flow finishing at `ts` on `track` lands on: the first not yet linked there, else of
    /// the same pid at that time, else the one op anywhere at that time.
    fn op(&self, trace: &Trace, track: Track, ts: i64, linked: &[bool]) -> Option<usize> {
        let free = |mut v: std::slice::Iter<'_, Keyed>| {
            v.find(|e| !linked[e.2 as usize]).map(|e| e.2 as usize)
        };
        let pid = self.pids.get(&trace.track(track).pid);
        free(keyed(&self.by_track, (track.0, ts), |e| (e.0, e.1)).iter())
            .or_else(|| {
                let pid = *pid?;
                free(keyed(&self.by_pid, (pid, ts), |e| (e.0, e.1)).iter())
            })
            .or_else(|| {
                let mut at = keyed(&self.by_ts, ts, |e| e.0)
                    .iter()
                    .filter(|e| !linked[e.1 as usize]);
                match (at.next(), at.next()) {
                    (Some(e), None) => Some(e.1 as usize),
                    _ => None,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairs come in id order, each of an id's last start and last finish (as a map by id, a later
    /// end replacing an earlier one, would keep them); an id without a finish pairs with nothing.
    #[test]
    fn pairs_by_id_last_end_wins() {
        let flow = |id, phase| Flow {
            id,
            phase,
            ts_ns: 0,
            track: Track(0),
        };
        let (s, f) = (FlowPhase::Start, FlowPhase::Finish);
        let flows = [
            flow(5, s), // 0
            flow(3, f), // 1
            flow(5, f), // 2
            flow(3, s), // 3
            flow(5, s), // 4: replaces 0
            flow(7, s), // 5: no finish
            flow(3, f), // 6: replaces 1
        ];
        assert_eq!(flow_pairs(&flows), vec![(3, 6), (4, 2)]);
    }
}
