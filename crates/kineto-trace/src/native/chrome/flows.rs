//! Correlation ids from flow pairs, for the GPU ops of a Chrome-trace array that carry none
//! (rpd2tracing's `api_op` pairs, the legacy rocprof's `DataFlow` `s` → `t`).
//!
//! What it is not: the reading of the flows (`super`), or links by correlation id (`crate::correlate`).

use super::{Item, Role};
use crate::model::{FlowPhase, IdValue, Trace, Track};
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
pub(super) fn link_by_flows(items: &mut [Item], trace: &Trace) {
    let flows = &trace.flows;
    if flows.is_empty()
        || !items
            .iter()
            .any(|i| matches!(i.role, Role::Gpu(_)) && i.correlation.is_none())
    {
        return;
    }
    let mut starts: FxHashMap<u64, (i64, Track)> = FxHashMap::default();
    let mut finishes: FxHashMap<u64, (i64, Track)> = FxHashMap::default();
    for f in flows {
        match f.phase {
            FlowPhase::Start => starts.insert(f.id, (f.ts_ns, f.track)),
            FlowPhase::Finish => finishes.insert(f.id, (f.ts_ns, f.track)),
        };
    }
    let at = Candidates::of(items, trace);
    let mut linked = vec![false; items.len()];
    let mut next_id = items
        .iter()
        .filter_map(|i| i.correlation.map(NonZeroU64::get))
        .max()
        .unwrap_or(0);
    let mut ids: Vec<u64> = starts.keys().copied().collect();
    ids.sort_unstable();
    for flow in ids {
        let (Some(&(ts_s, tr_s)), Some(&(ts_f, tr_f))) = (starts.get(&flow), finishes.get(&flow))
        else {
            continue;
        };
        let Some(op) = at.op(trace, tr_f, ts_f, &linked) else {
            continue;
        };
        let Some(l) = at.launch(items, trace, tr_s, ts_s) else {
            continue;
        };
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
}

/// The items a flow's ends may land on, each list sorted by its key, then time, then file order (flat
/// lists rather than maps of lists: a file has hundreds of thousands of them): launches by track and by
/// tid; GPU ops without a correlation by track, by pid and by time alone. Pids and tids are numbered.
struct Candidates<'t> {
    pids: FxHashMap<&'t IdValue, u32>,
    tids: FxHashMap<&'t IdValue, u32>,
    launches: Vec<(u32, i64, usize)>,
    launches_by_tid: Vec<(u32, i64, usize)>,
    ops: Vec<(u32, i64, usize)>,
    ops_by_pid: Vec<(u32, i64, usize)>,
    ops_by_ts: Vec<(i64, usize)>,
}

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

impl<'t> Candidates<'t> {
    fn of(items: &[Item], trace: &'t Trace) -> Candidates<'t> {
        let mut c = Candidates {
            pids: FxHashMap::default(),
            tids: FxHashMap::default(),
            launches: Vec::new(),
            launches_by_tid: Vec::new(),
            ops: Vec::new(),
            ops_by_pid: Vec::new(),
            ops_by_ts: Vec::new(),
        };
        for (i, it) in items.iter().enumerate() {
            let ids = trace.track(it.track);
            match it.role {
                Role::Launch(_) => {
                    c.launches.push((it.track.0, it.flow_ts, i));
                    let tid = number(&mut c.tids, &ids.tid);
                    c.launches_by_tid.push((tid, it.flow_ts, i));
                }
                Role::Gpu(_) if it.correlation.is_none() => {
                    c.ops.push((it.track.0, it.flow_ts, i));
                    let pid = number(&mut c.pids, &ids.pid);
                    c.ops_by_pid.push((pid, it.flow_ts, i));
                    c.ops_by_ts.push((it.flow_ts, i));
                }
                _ => {}
            }
        }
        for v in [
            &mut c.launches,
            &mut c.launches_by_tid,
            &mut c.ops,
            &mut c.ops_by_pid,
        ] {
            v.sort_unstable();
        }
        c.ops_by_ts.sort_unstable();
        c
    }

    /// The op a flow finishing at `ts` on `track` lands on: the first not yet linked there, else of
    /// the same pid at that time, else the one op anywhere at that time.
    fn op(&self, trace: &Trace, track: Track, ts: i64, linked: &[bool]) -> Option<usize> {
        let free =
            |mut v: std::slice::Iter<'_, (u32, i64, usize)>| v.find(|e| !linked[e.2]).map(|e| e.2);
        let pid = self.pids.get(&trace.track(track).pid);
        free(keyed(&self.ops, (track.0, ts), |e| (e.0, e.1)).iter())
            .or_else(|| {
                let pid = *pid?;
                free(keyed(&self.ops_by_pid, (pid, ts), |e| (e.0, e.1)).iter())
            })
            .or_else(|| {
                let mut at = keyed(&self.ops_by_ts, ts, |e| e.0)
                    .iter()
                    .filter(|e| !linked[e.1]);
                match (at.next(), at.next()) {
                    (Some(e), None) => Some(e.1),
                    _ => None,
                }
            })
    }

    /// The call a flow starting at `ts` on `track` leaves: the latest-starting call of the track (else
    /// of its tid) that begins no later than FLOW_BEFORE_NS after the flow start and ends no earlier
    /// than FLOW_AFTER_NS before it.
    fn launch(&self, items: &[Item], trace: &Trace, track: Track, ts: i64) -> Option<usize> {
        let holds = |cands: &[(u32, i64, usize)]| {
            let upto = cands.partition_point(|e| e.1 <= ts + FLOW_BEFORE_NS);
            cands[..upto]
                .iter()
                .rev()
                .find(|e| items[e.2].flow_end >= ts - FLOW_AFTER_NS)
                .map(|e| e.2)
        };
        holds(keyed(&self.launches, track.0, |e| e.0)).or_else(|| {
            let tid = *self.tids.get(&trace.track(track).tid)?;
            holds(keyed(&self.launches_by_tid, tid, |e| e.0))
        })
    }
}
