//! Correlation ids from flow pairs, for the GPU ops of a Chrome-trace array that carry none
//! (rpd2tracing's `api_op` pairs, the legacy rocprof's `DataFlow` `s` → `t`).
//!
//! What it is not: the reading of the flows (`super`), or links by correlation id (`crate::correlate`).

use super::Role;
use super::items::{Held, Items};
use crate::model::{Flow, FlowPhase, IdValue, Trace, Track, TrackIds};
use rustc_hash::FxHashMap;
use std::cell::OnceCell;
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
/// `taken`: the largest correlation id of the ops already in the model; the ids given are above it
/// and every item's.
pub(super) fn link_by_flows(items: &mut Items, trace: &Trace, taken: u64) -> Result<(), String> {
    let flows = &trace.flows;
    if flows.is_empty() || !items.iter().any(is_open_op) {
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
        let tids = numbered(trace, |t| &t.tid);
        let calls = Calls::of(items, &tids);
        pairs.retain(|p| {
            let f = &flows[p.start as usize];
            calls
                .launch(items, f.track, f.ts_ns)
                .map(|l| p.start = l)
                .is_some()
        });
    }
    let pids = numbered(trace, |t| &t.pid);
    let mut linked = Marks::new(items.len());
    let at = Ops::of(items, &pids);
    let mut next_id = items
        .iter()
        .filter_map(|i| i.correlation().map(NonZeroU64::get))
        .max()
        .unwrap_or(0)
        .max(taken);
    for Pair { start: l, finish } in pairs.iter() {
        let f = &flows[finish as usize];
        let Some(op) = at.op(items, f.track, f.ts_ns, &linked) else {
            continue;
        };
        let l = l as usize;
        let c = match items.get(l).correlation() {
            Some(c) => c,
            None => {
                next_id += 1;
                let Some(c) = NonZeroU64::new(next_id) else {
                    continue;
                };
                if let Some(mut call) = items.edit(l) {
                    call.set_correlation(Some(c));
                }
                c
            }
        };
        linked.set(op);
        if let Some(mut op) = items.edit(op) {
            op.set_correlation(Some(c));
        }
    }
    Ok(())
}

/// A flow pair: its start (or, once found, the call it leaves) and its finish, as indices.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pair {
    start: u32,
    finish: u32,
}

/// Flow pairs, two indices each, in the list of flow indices they were found in: the pairs are
/// held through the whole linking beside every item, and a list of their own beside the sorted
/// indices raised bench-native's legacy rocprof peak by 2 MB (the sorted list, and the pair list
/// grown by doubling).
struct Pairs {
    /// `start, finish` of each pair, in turn.
    flat: Vec<u32>,
}

impl Pairs {
    fn iter(&self) -> impl Iterator<Item = Pair> + '_ {
        self.flat.chunks_exact(2).map(|p| Pair {
            start: p[0],
            finish: p[1],
        })
    }

    /// Keeps the pairs `keep` keeps (and as it changes them), in order.
    fn retain(&mut self, mut keep: impl FnMut(&mut Pair) -> bool) {
        let mut kept = 0;
        for i in (0..self.flat.len()).step_by(2) {
            let mut p = Pair {
                start: self.flat[i],
                finish: self.flat[i + 1],
            };
            if keep(&mut p) {
                self.flat[kept] = p.start;
                self.flat[kept + 1] = p.finish;
                kept += 2;
            }
        }
        self.flat.truncate(kept);
    }
}

/// The flows that pair up, by id, in the order of their ids: the last start and the last finish of
/// each id that has both (a later end of an id replaces an earlier one), as indices into `flows`.
fn flow_pairs(flows: &[Flow]) -> Pairs {
    let mut flat: Vec<u32> = (0..flows.len()).map(index).collect();
    let key = |&i: &u32| {
        let f = &flows[i as usize];
        (f.id, f.phase == FlowPhase::Finish, i)
    };
    flat.sort_unstable_by_key(key);
    // Each pair is written over the entries of its id, two or more of them: never past the id read.
    let (mut read, mut kept) = (0, 0);
    while read < flat.len() {
        let id = flows[flat[read] as usize].id;
        let n = flat[read..]
            .iter()
            .position(|&i| flows[i as usize].id != id)
            .unwrap_or(flat.len() - read);
        let same_id = &flat[read..read + n];
        let last = |phase| {
            same_id
                .iter()
                .rev()
                .find(|&&i| flows[i as usize].phase == phase)
                .copied()
        };
        if let (Some(s), Some(f)) = (last(FlowPhase::Start), last(FlowPhase::Finish)) {
            flat[kept] = s;
            flat[kept + 1] = f;
            kept += 2;
        }
        read += n;
    }
    flat.truncate(kept);
    Pairs { flat }
}

/// One bit an item: the ops linked so far.
struct Marks {
    bits: Vec<u64>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            bits: vec![0; n.div_ceil(64)],
        }
    }

    fn get(&self, i: usize) -> bool {
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
    }
}

/// An index into the items or the flows as the lists here hold it (32 bits: half a word a row;
/// [`link_by_flows`] refuses more).
fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The number of each track's pid or tid (`side` picks which), equal ids equal numbers, by track: a
/// group key read without a map lookup.
fn numbered(trace: &Trace, side: impl Fn(&TrackIds) -> &IdValue) -> Vec<u32> {
    let mut ids: FxHashMap<&IdValue, u32> = FxHashMap::default();
    (0..trace.track_count())
        .map(|t| {
            let n = ids.len() as u32;
            *ids.entry(side(trace.track(Track(index(t))))).or_insert(n)
        })
        .collect()
}

/// The group of an item whose track has no number: in no list.
const NO_GROUP: u32 = u32::MAX;

/// A group of items: their track, the number of their track's tid or pid ([`numbered`]), or one
/// group for all.
#[derive(Clone, Copy)]
enum Group<'n> {
    Track,
    Number(&'n [u32]),
    All,
}

impl Group<'_> {
    fn of(self, track: Track) -> u32 {
        match self {
            Group::Track => track.0,
            // Every track of the trace is numbered ([`numbered`]); one that were not is in no group.
            Group::Number(n) => n.get(track.0 as usize).copied().unwrap_or(NO_GROUP),
            Group::All => 0,
        }
    }
}

/// Items (their indices) sorted by group, then time on the flow clock, then file order. 4 bytes an
/// entry, the key read from the items when sorted and searched: the lists are held for every call
/// and op of the file, beside the items (a list of keys would be 16 bytes an entry).
struct Sorted<'n> {
    group: Group<'n>,
    list: Vec<u32>,
    /// Where each group's entries start in `list`, and its end last.
    starts: Vec<u32>,
}

impl<'n> Sorted<'n> {
    fn of(items: &Items, take: impl Fn(Held<'_>) -> bool, group: Group<'n>) -> Sorted<'n> {
        // By group first, counted (stable: file order within each group), then each group by time
        // where the file did not write it in time order already (most write each thread's calls and
        // each stream's ops so). A version that sorted the whole list, and searched it for a group,
        // by keys read from the items read bench-native's Chrome file 0.3 s slower (1.57 → 1.86 s)
        // and its legacy rocprof file 1.0 s slower; keeping the keys beside the indices would hold
        // 16 bytes an entry.
        let taken = || {
            items
                .iter()
                .enumerate()
                .filter(|&(_, it)| take(it) && group.of(it.track) != NO_GROUP)
                .map(|(i, it)| (index(i), group.of(it.track) as usize))
        };
        let mut starts: Vec<usize> = Vec::new();
        for (_, g) in taken() {
            if starts.len() <= g {
                starts.resize(g + 1, 0);
            }
            starts[g] += 1;
        }
        let mut at = 0;
        for n in &mut starts {
            (*n, at) = (at, at + *n);
        }
        let mut list = vec![0u32; at];
        let mut next = starts.clone();
        for (i, g) in taken() {
            list[next[g]] = i;
            next[g] += 1;
        }
        starts.push(at);
        let ts = |e: u32| items.get(e as usize).flow_ts();
        for w in starts.windows(2) {
            let same = &mut list[w[0]..w[1]];
            if !same.is_sorted_by_key(|&e| ts(e)) {
                same.sort_unstable_by_key(|&e| (ts(e), e));
            }
        }
        let starts = starts.into_iter().map(index).collect();
        Sorted {
            group,
            list,
            starts,
        }
    }

    /// The entries of group `g`, in time order.
    fn group(&self, g: u32) -> &[u32] {
        let g = g as usize;
        match (self.starts.get(g), self.starts.get(g + 1)) {
            (Some(&lo), Some(&hi)) => &self.list[lo as usize..hi as usize],
            _ => &[],
        }
    }

    /// The entries of group `g` at time `ts`, in file order.
    fn at(&self, items: &Items, g: u32, ts: i64) -> &[u32] {
        let same = self.group(g);
        let lo = same.partition_point(|&e| items.get(e as usize).flow_ts() < ts);
        let n = same[lo..].partition_point(|&e| items.get(e as usize).flow_ts() <= ts);
        &same[lo..lo + n]
    }
}

/// The calls a flow's start may leave: by track, and by tid (built when a flow first needs it: most
/// writers start a flow on its call's own track).
struct Calls<'n> {
    by_track: Sorted<'n>,
    by_tid: OnceCell<Sorted<'n>>,
    tids: &'n [u32],
}

fn is_call(it: Held<'_>) -> bool {
    matches!(it.role, Role::Launch(_))
}

impl<'n> Calls<'n> {
    fn of(items: &Items, tids: &'n [u32]) -> Calls<'n> {
        Calls {
            by_track: Sorted::of(items, is_call, Group::Track),
            by_tid: OnceCell::new(),
            tids,
        }
    }

    /// The call a flow starting at `ts` on `track` leaves: the latest-starting call of the track (else
    /// of its tid) that begins no later than FLOW_BEFORE_NS after the flow start and ends no earlier
    /// than FLOW_AFTER_NS before it.
    fn launch(&self, items: &Items, track: Track, ts: i64) -> Option<u32> {
        let holds = |cands: &[u32]| {
            let upto =
                cands.partition_point(|&e| items.get(e as usize).flow_ts() <= ts + FLOW_BEFORE_NS);
            cands[..upto]
                .iter()
                .rev()
                .find(|&&e| items.get(e as usize).flow_end() >= ts - FLOW_AFTER_NS)
                .copied()
        };
        let by = |s: &Sorted<'_>| holds(s.group(s.group.of(track)));
        by(&self.by_track).or_else(|| {
            by(self
                .by_tid
                .get_or_init(|| Sorted::of(items, is_call, Group::Number(self.tids))))
        })
    }
}

/// The GPU ops without a correlation when linking began, which a flow's finish may land on: one list
/// by time, filtered by track, then pid, at a flow's time. A finish reads every op at its time (linked
/// ones too), so the cost is the flows times the ops that share a time: a few where times are
/// per-event (every writer seen), all of them in a file whose ops all start at one time. The lists by
/// track, by pid and by time this replaces held 4 bytes an op each (the legacy rocprof built all three).
struct Ops<'n> {
    by_ts: Sorted<'n>,
    pids: &'n [u32],
}

/// A GPU op without a correlation: one a flow's finish may give one.
fn is_open_op(it: Held<'_>) -> bool {
    matches!(it.role, Role::Gpu(_)) && it.correlation().is_none()
}

impl<'n> Ops<'n> {
    /// Built before any op is linked: the ops without a correlation then.
    fn of(items: &Items, pids: &'n [u32]) -> Ops<'n> {
        Ops {
            by_ts: Sorted::of(items, is_open_op, Group::All),
            pids,
        }
    }

    /// The op a flow finishing at `ts` on `track` lands on: the first (in file order) not yet linked
    /// there, else of the same pid at that time, else the one op anywhere at that time.
    fn op(&self, items: &Items, track: Track, ts: i64, linked: &Marks) -> Option<usize> {
        let at = self.by_ts.at(items, 0, ts);
        let open = || at.iter().map(|&e| e as usize).filter(|&e| !linked.get(e));
        let pid = Group::Number(self.pids);
        let g = pid.of(track);
        open()
            .find(|&e| items[e].track == track)
            .or_else(|| open().find(|&e| g != NO_GROUP && pid.of(items[e].track) == g))
            .or_else(|| {
                let mut anywhere = open();
                match (anywhere.next(), anywhere.next()) {
                    (Some(e), None) => Some(e),
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
        assert_eq!(flow_pairs(&flows).flat, vec![3, 6, 4, 2]);
    }

    /// A finish lands on the first op (in file order) not yet linked at its time on its own track,
    /// else on its pid, else on the one op anywhere at its time: one list by time, filtered, picks as
    /// the three lists by track, by pid and by time did.
    #[test]
    fn a_finish_lands_on_its_track_then_its_pid_then_the_one_op_at_its_time() {
        use super::super::items::Fresh;
        use crate::model::{GpuKind, Sym};
        let mut items = Items::default();
        // (track, ts): tracks 0, 1 and 3 are pid 0's, track 2 pid 1's, track 4 pid 2's.
        for (i, (track, ts)) in [(0, 100), (1, 100), (2, 100), (2, 200)]
            .into_iter()
            .enumerate()
        {
            let op = Fresh::new(Role::Gpu(GpuKind::Kernel), Sym(0), Track(track), ts, 1);
            items.push(op, 10 * i as u64);
        }
        let pids = [0, 0, 1, 0, 2];
        let ops = Ops::of(&items, &pids);
        let mut linked = Marks::new(items.len());
        let land = |track, ts, linked: &Marks| ops.op(&items, Track(track), ts, linked);
        // Its own track, though an op of its pid at that time comes first in the file.
        assert_eq!(land(1, 100, &linked), Some(1));
        // Track 3 has no op: the first of pid 0 at 100 (track 0), then the next once that is linked.
        assert_eq!(land(3, 100, &linked), Some(0));
        linked.set(0);
        assert_eq!(land(3, 100, &linked), Some(1));
        // Pid 2 has no op: the one op anywhere at 200; at 100 there are two left, so none.
        assert_eq!(land(4, 200, &linked), Some(3));
        assert_eq!(land(4, 100, &linked), None);
        linked.set(1);
        assert_eq!(land(4, 100, &linked), Some(2));
        // Nothing at a time no op starts.
        assert_eq!(land(2, 150, &linked), None);
    }

    /// Ops written out of time order are found by their time, in file order among equal times; a
    /// flow on a track without a pid number falls through to the one op at its time.
    #[test]
    fn ops_out_of_time_order_and_a_track_without_a_pid() {
        use super::super::items::Fresh;
        use crate::model::{GpuKind, Sym};
        let mut items = Items::default();
        // (track, ts) in file order: times not sorted; tracks 0 and 1 are pid 0's.
        for (i, (track, ts)) in [(0, 300), (1, 100), (0, 100), (1, 300), (0, 200)]
            .into_iter()
            .enumerate()
        {
            let op = Fresh::new(Role::Gpu(GpuKind::Kernel), Sym(0), Track(track), ts, 1);
            items.push(op, 10 * i as u64);
        }
        let pids = [0, 0];
        let ops = Ops::of(&items, &pids);
        let linked = Marks::new(items.len());
        let land = |track, ts| ops.op(&items, Track(track), ts, &linked);
        assert_eq!(land(0, 100), Some(2));
        assert_eq!(land(1, 300), Some(3));
        assert_eq!(land(0, 200), Some(4));
        // Track 7 has no pid number: not pid 0's ops at 300 (two of them), and none is the only one.
        assert_eq!(land(7, 300), None);
        assert_eq!(land(7, 200), Some(4));
    }
}
