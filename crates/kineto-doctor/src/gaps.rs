//! The GPU waiting on the CPU: idle gaps inside steps split into the part a blocking call spans
//! (`sync_blocked_idle`) and, when the next GPU op was launched only after the GPU went idle, the rest
//! (`launch_bound_idle`); and the idle between steps (`between_steps`). [`classify`] and [`boundaries`]
//! are each rule's one classification: the findings' totals and their marks (`crate::marks`) both read
//! them.

use crate::rules::is_blocking_call;
use crate::{Finding, FindingId, Thresholds, TraceInput, rule, us};
use kineto_trace::GpuKind;
use kineto_trace::budget::StepBudget;
use kineto_trace::interval::{length, merge, subtract};
use std::collections::BTreeMap;

/// Intervals sorted by start with the running maximum of their ends, for "which of them overlap
/// `[a, b)`" in O(log n + answers).
pub(crate) struct Calls {
    /// (start, end, index into `Trace::launches`), by start.
    iv: Vec<(i64, i64, usize)>,
    /// `max_end[i]`: the largest end among `iv[..=i]`.
    max_end: Vec<i64>,
}

impl Calls {
    pub(crate) fn blocking(t: &TraceInput<'_>) -> Calls {
        let tr = t.trace;
        let mut iv: Vec<(i64, i64, usize)> = tr
            .launches
            .iter()
            .enumerate()
            .filter(|(_, l)| is_blocking_call(tr.name(l.name)))
            .map(|(i, l)| (l.ts_ns, l.end_ns(), i))
            .collect();
        iv.sort_unstable();
        let mut m = i64::MIN;
        let max_end = iv
            .iter()
            .map(|c| {
                m = m.max(c.1);
                m
            })
            .collect();
        Calls { iv, max_end }
    }

    /// The calls overlapping `[a, b)`.
    pub(crate) fn overlapping(&self, a: i64, b: i64) -> impl Iterator<Item = &(i64, i64, usize)> {
        let end = self.iv.partition_point(|c| c.0 < b);
        let mut i = end;
        while i > 0 && self.max_end[i - 1] > a {
            i -= 1;
        }
        self.iv[i..end].iter().filter(move |c| c.1 > a)
    }
}

/// The step's GPU ops by start: (start, kind, index in its kind's vector).
fn step_ops(t: &TraceInput<'_>, step: usize) -> Vec<(i64, GpuKind, usize)> {
    let s = &t.analysis.steps.steps[step];
    let tr = t.trace;
    let mut v: Vec<(i64, GpuKind, usize)> = Vec::new();
    for (kind, idx) in [
        (GpuKind::Kernel, &s.kernels),
        (GpuKind::Memcpy, &s.memcpys),
        (GpuKind::Memset, &s.memsets),
    ] {
        let mut ops = tr.gpu_ops(kind).reader();
        v.extend(
            idx.iter()
                .map(|&i| (ops.row(i as usize).ts_ns, kind, i as usize)),
        );
    }
    v.sort_unstable_by_key(|o| o.0);
    v
}

/// Largest contributors by total, then name; at most `n`, as `name (µs)` joined.
pub(crate) fn top_named(by: &BTreeMap<String, (u64, i64)>, n: usize) -> String {
    let mut v: Vec<(&String, &(u64, i64))> = by.iter().collect();
    v.sort_by(|a, b| b.1.1.cmp(&a.1.1).then_with(|| a.0.cmp(b.0)));
    v.iter()
        .take(n)
        .map(|(name, (c, ns))| format!("`{name}` ×{c} {} µs", us(*ns)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One idle gap of a step, classified: the part blocking calls span (`sync_blocked_idle`), and the rest
/// when the GPU resumed only with ops launched after the gap began (`launch_bound_idle`). The one home
/// of both rules: their totals and their marks are this classification's intervals.
pub(crate) struct Gap {
    /// The gap ∩ the blocking calls: sorted, disjoint.
    pub synced: Vec<(i64, i64)>,
    /// The gap less the blocking calls, when the gap is launch-bound (else empty): sorted, disjoint.
    pub launch_bound: Vec<(i64, i64)>,
    /// The blocking calls overlapping the gap, clipped to it: (start, end, index into `Trace::launches`).
    pub calls: Vec<(i64, i64, usize)>,
    /// The first op the GPU resumed with, when the gap is launch-bound.
    pub resumed: Option<(GpuKind, usize)>,
    /// Whether the host was blocked when the GPU went idle and launched only after: the whole gap
    /// is then in `synced`.
    pub sync_then_launch: bool,
}

/// Classifies every idle gap of the step whose budget is `b`.
pub(crate) fn classify(t: &TraceInput<'_>, calls: &Calls, b: &StepBudget) -> Vec<Gap> {
    if b.gaps.is_empty() {
        return Vec::new();
    }
    let tr = t.trace;
    let ops = step_ops(t, b.index);
    let mut out = Vec::with_capacity(b.gaps.len());
    // Gaps come in time order, and so, nearly, the calls that launched what ends them.
    let mut launches = tr.launches.reader();
    for &(a, z) in &b.gaps {
        let over: Vec<(i64, i64, usize)> = calls
            .overlapping(a, z)
            .map(|c| (c.0.max(a), c.1.min(z), c.2))
            .collect();
        let synced = merge(over.iter().map(|c| (c.0, c.1)));
        // The ops that start where the gap ends: the GPU resumed with them. The gap is launch-bound
        // when every one of them was launched after the GPU went idle.
        let first = ops.partition_point(|o| o.0 < z);
        let resumed: Vec<&(i64, GpuKind, usize)> =
            ops[first..].iter().take_while(|o| o.0 == z).collect();
        let launched: Vec<i64> = resumed
            .iter()
            .filter_map(|o| t.analysis.links.launch_of(o.1, o.2))
            .map(|l| launches.row(l).ts_ns)
            .collect();
        let late = !launched.is_empty()
            && launched.len() == resumed.len()
            && launched.iter().all(|&ts| ts > a);
        // Sync-then-launch: the host was blocked in a call when the GPU went idle and launched the
        // next op only after that call returned. The launch waited on the sync, so the whole gap is
        // the sync's: removing the sync lets the host queue ahead.
        let blocked_at_idle = over.iter().any(|c| c.0 <= a);
        let sync_then_launch = late && blocked_at_idle;
        let synced = if sync_then_launch {
            vec![(a, z)]
        } else {
            synced
        };
        let launch_bound = if late && !sync_then_launch {
            subtract(&[(a, z)], &synced)
        } else {
            Vec::new()
        };
        out.push(Gap {
            resumed: (!launch_bound.is_empty()).then(|| (resumed[0].1, resumed[0].2)),
            synced,
            launch_bound,
            calls: over,
            sync_then_launch,
        });
    }
    out
}

pub(crate) fn find(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let tr = t.trace;
    let calls = Calls::blocking(t);
    let (mut launch_ns, mut sync_ns) = (0i64, 0i64);
    let (mut launch_gaps, mut sync_gaps) = (0u64, 0u64);
    let (mut launch_steps, mut sync_steps) = (Vec::new(), Vec::new());
    let mut next_ops: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let mut sync_calls: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let mut largest: Option<(i64, usize, String)> = None;
    let mut then_launch = 0u64;
    let host = crate::host::HostSpans::of(t);
    let mut host_by: BTreeMap<kineto_trace::Sym, i64> = BTreeMap::new();
    for b in t.budgets {
        let (mut in_launch, mut in_sync) = (false, false);
        let mut launches = tr.launches.reader();
        for g in classify(t, &calls, b) {
            let synced = length(&g.synced);
            then_launch += u64::from(g.sync_then_launch);
            if synced > 0 {
                sync_ns = sync_ns.saturating_add(synced);
                sync_gaps += 1;
                in_sync = true;
                for c in &g.calls {
                    let name = tr.name(launches.row(c.2).name).to_string();
                    let e = sync_calls.entry(name).or_default();
                    e.0 += 1;
                    e.1 = e.1.saturating_add(c.1 - c.0);
                }
            }
            let rest = length(&g.launch_bound);
            if let (Some(o), true) = (g.resumed, rest > 0) {
                launch_ns = launch_ns.saturating_add(rest);
                launch_gaps += 1;
                in_launch = true;
                if let Some(l) = t.analysis.links.launch_of(o.0, o.1) {
                    let track = launches.row(l).track;
                    for &(x, y) in &g.launch_bound {
                        host.attribute(track, x, y, &mut host_by);
                    }
                }
                let name = tr.name(tr.gpu_ops(o.0).row(o.1).name).to_string();
                let e = next_ops.entry(name.clone()).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(rest);
                if largest.as_ref().is_none_or(|l| rest > l.0) {
                    largest = Some((rest, b.index, name));
                }
            }
        }
        if in_launch {
            launch_steps.push(b.index);
        }
        if in_sync {
            sync_steps.push(b.index);
        }
    }
    if launch_ns > 0 {
        let (l_ns, l_step, l_name) = largest.unwrap_or_default();
        out.push(finding(
            t,
            FindingId::LaunchBoundIdle,
            launch_ns,
            launch_steps,
            format!(
                "{launch_gaps} gaps, {} µs idle; largest {} µs in step {l_step} before `{l_name}`; \
                 GPU resumed with: {}{}",
                us(launch_ns),
                us(l_ns),
                top_named(&next_ops, th.top),
                crate::host::describe(t, &host_by, launch_ns, th.top)
            ),
        ));
    }
    if sync_ns > 0 {
        out.push(finding(
            t,
            FindingId::SyncBlockedIdle,
            sync_ns,
            sync_steps,
            format!(
                "{sync_gaps} gaps, {} µs idle under blocking calls or waiting on them ({then_launch} gaps \
                 where the host launched only after a blocking call returned: the whole gap); the calls: {}",
                us(sync_ns),
                top_named(&sync_calls, th.top)
            ),
        ));
    }
    between_steps(t, out);
}

/// A finding of `t` with its rule's origin and next command; the share is filled in by `diagnose`.
pub(crate) fn finding(
    t: &TraceInput<'_>,
    id: FindingId,
    ns: i64,
    steps: Vec<usize>,
    evidence: String,
) -> Finding {
    let r = rule(id);
    Finding {
        id,
        file: t.file.to_string(),
        rank: t.trace.header.rank,
        origin: r.origin,
        time_at_stake_ns: ns,
        share_pct: 0.0,
        steps,
        evidence,
        next: r.next,
        fix: None,
    }
}

/// The GPU's busy time as sorted, disjoint intervals (every kernel, copy and fill of the trace).
fn busy(t: &TraceInput<'_>) -> Vec<(i64, i64)> {
    let tr = t.trace;
    merge(
        GpuKind::ALL
            .into_iter()
            .flat_map(|k| tr.gpu_ops(k).iter().map(|o| (o.ts_ns, o.end_ns()))),
    )
}

/// The parts of `[a, b)` that `merged` (sorted, disjoint) does not cover: sorted, disjoint.
fn idle_within(merged: &[(i64, i64)], a: i64, b: i64) -> Vec<(i64, i64)> {
    let first = merged.partition_point(|iv| iv.1 <= a);
    let end = first + merged[first..].partition_point(|iv| iv.0 < b);
    subtract(&[(a, b)], &merged[first..end])
}

/// One step boundary with GPU idle across it: the step before (the one whose work ended last), the
/// step after, and the idle between them (no GPU op of any step, or of none, running).
pub(crate) struct Boundary {
    pub before: usize,
    pub after: usize,
    pub idle: Vec<(i64, i64)>,
}

/// The idle between consecutive steps' GPU work, in window order. The one home of `between_steps`:
/// its total and its marks are these intervals.
pub(crate) fn boundaries(t: &TraceInput<'_>) -> Vec<Boundary> {
    let mut windows: Vec<(i64, i64, usize)> = t
        .budgets
        .iter()
        .filter_map(|b| b.window.map(|w| (w.0, w.1, b.index)))
        .collect();
    if windows.len() < 2 {
        return Vec::new();
    }
    windows.sort_unstable();
    let merged = busy(t);
    let mut out = Vec::new();
    let mut hi = windows[0].1;
    let mut prev = windows[0].2;
    for &(lo, end, idx) in &windows[1..] {
        if lo > hi {
            let idle = idle_within(&merged, hi, lo);
            if !idle.is_empty() {
                out.push(Boundary {
                    before: prev,
                    after: idx,
                    idle,
                });
            }
        }
        if end > hi {
            hi = end;
            prev = idx;
        }
    }
    out
}

fn between_steps(t: &TraceInput<'_>, out: &mut Vec<Finding>) {
    let found = boundaries(t);
    let windows = t.budgets.iter().filter(|b| b.window.is_some()).count();
    let steps = &t.analysis.steps.steps;
    let (mut total, mut count) = (0i64, 0u64);
    let mut at = Vec::new();
    let mut largest: Option<(i64, usize, usize)> = None;
    for b in &found {
        let idle = length(&b.idle);
        total = total.saturating_add(idle);
        count += 1;
        at.push(b.after);
        if largest.is_none_or(|l| idle > l.0) {
            largest = Some((idle, b.before, b.after));
        }
    }
    if let Some((l, from, to)) = largest {
        let evidence = format!(
            "{count} of {} step boundaries, {} µs idle, mean {} µs; largest {} µs between step {from} `{}` and step {to} `{}`",
            windows.saturating_sub(1),
            us(total),
            us(total / count.max(1) as i64),
            us(l),
            steps[from].name,
            steps[to].name,
        );
        out.push(finding(t, FindingId::BetweenSteps, total, at, evidence));
    }
}
