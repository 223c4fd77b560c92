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
    // Launches by track and by tid, by start; ops by (track, start), (pid, start) and start.
    let mut launches: FxHashMap<Track, Vec<usize>> = FxHashMap::default();
    let mut launches_by_tid: FxHashMap<IdValue, Vec<usize>> = FxHashMap::default();
    let mut ops: FxHashMap<(Track, i64), Vec<usize>> = FxHashMap::default();
    let mut ops_by_pid: FxHashMap<(IdValue, i64), Vec<usize>> = FxHashMap::default();
    let mut ops_by_ts: FxHashMap<i64, Vec<usize>> = FxHashMap::default();
    for (i, it) in items.iter().enumerate() {
        match it.role {
            Role::Launch(_) => {
                launches.entry(it.track).or_default().push(i);
                let tid = trace.track(it.track).tid.clone();
                launches_by_tid.entry(tid).or_default().push(i);
            }
            Role::Gpu(_) if it.correlation.is_none() => {
                ops.entry((it.track, it.flow_ts)).or_default().push(i);
                ops_by_pid
                    .entry((trace.track(it.track).pid.clone(), it.flow_ts))
                    .or_default()
                    .push(i);
                ops_by_ts.entry(it.flow_ts).or_default().push(i);
            }
            _ => {}
        }
    }
    for v in launches.values_mut().chain(launches_by_tid.values_mut()) {
        v.sort_by_key(|&i| (items[i].flow_ts, i));
    }
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
        let free = |v: Option<&Vec<usize>>| v.and_then(|v| v.iter().copied().find(|&i| !linked[i]));
        let finish_pid = &trace.track(tr_f).pid;
        let op = free(ops.get(&(tr_f, ts_f)))
            .or_else(|| free(ops_by_pid.get(&(finish_pid.clone(), ts_f))))
            .or_else(|| {
                let mut at = ops_by_ts
                    .get(&ts_f)
                    .into_iter()
                    .flatten()
                    .filter(|&&i| !linked[i]);
                match (at.next(), at.next()) {
                    (Some(&i), None) => Some(i),
                    _ => None,
                }
            });
        let Some(op) = op else { continue };
        // The latest-starting call that begins no later than FLOW_BEFORE_NS after the flow start
        // and ends no earlier than FLOW_AFTER_NS before it.
        let holds = |cands: &Vec<usize>| {
            let upto = cands.partition_point(|&i| items[i].flow_ts <= ts_s + FLOW_BEFORE_NS);
            cands[..upto]
                .iter()
                .rev()
                .find(|&&i| items[i].flow_end >= ts_s - FLOW_AFTER_NS)
                .copied()
        };
        let launch = launches
            .get(&tr_s)
            .and_then(holds)
            .or_else(|| launches_by_tid.get(&trace.track(tr_s).tid).and_then(holds));
        let Some(l) = launch else { continue };
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
