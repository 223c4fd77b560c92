//! Per-step time budgets: where a step's GPU time went, by bucket and family.
//!
//! The window is the step's GPU work: from the first start to the last end of its kernels, copies and
//! fills. [`crate::interval::sweep`] over that work — each kernel labelled with its family's bucket
//! (or `unmatched`), copies with [`MEMCPY`], fills with [`MEMSET`] — gives every bucket's exclusive
//! time (each instant split equally among the buckets running then), its inclusive time (union) and
//! the idle gaps (no kernel, copy or fill running); Σ exclusive + idle = span exactly, in ns. Per
//! family: count, Σ dur and union. Unmatched kernels are a bucket of their own, so the identity
//! holds, and are also reported apart with their count and time.

use crate::family::{Classes, Rules, UNMATCHED};
use crate::interval::{intersect, length, merge, subtract, sweep, union};
use crate::model::{GpuOp, Trace};
use crate::step::Step;
use serde::Serialize;
use std::collections::BTreeMap;

/// The bucket of GPU copies (`gpu_memcpy`) in budgets.
pub const MEMCPY: &str = "memcpy";
/// The bucket of GPU fills (`gpu_memset`) in budgets.
pub const MEMSET: &str = "memset";
/// The bucket whose kernels are communication (collectives, expert-parallel dispatch/combine): the
/// rule tables file every communication family under this bucket name.
pub const COMM: &str = "comm";

/// Communication against computation in a step, HTA's `get_comm_comp_overlap` definition: comm is
/// the union of the step's kernels in bucket [`COMM`], compute the union of its other kernels
/// (copies and fills are neither).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommOverlap {
    /// Time with a communication kernel running, ns.
    pub comm_ns: i64,
    /// Of that, time with a compute kernel running too, ns.
    pub overlapped_ns: i64,
    /// Of that, time with no compute kernel running: `comm − overlapped`, ns.
    pub exposed_ns: i64,
}

impl CommOverlap {
    /// `overlapped / comm` in percent (HTA's number); `None` without communication.
    pub fn pct(&self) -> Option<f64> {
        (self.comm_ns > 0).then(|| 100.0 * self.overlapped_ns as f64 / self.comm_ns as f64)
    }
}

/// A step's communication against its computation: the overlap's numbers and the exposed time as
/// intervals (comm less compute: sorted, disjoint), whose lengths sum to `exposed_ns`. The one home of
/// the definition: [`budget`] and [`exposed_comm`] both read it.
fn comm_overlap(
    trace: &Trace,
    step: &Step,
    classes: &Classes,
    rules: &Rules,
) -> (CommOverlap, Vec<(i64, i64)>) {
    let (mut comm, mut compute) = (Vec::new(), Vec::new());
    let mut kernels = trace.kernels.reader();
    for &i in &step.kernels {
        let k = kernels.row(i as usize);
        let bucket = classes
            .of(i as usize)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str());
        if bucket == COMM {
            comm.push((k.ts_ns, k.end_ns()));
        } else {
            compute.push((k.ts_ns, k.end_ns()));
        }
    }
    let (comm, compute) = (merge(comm), merge(compute));
    let exposed = subtract(&comm, &compute);
    let overlap = CommOverlap {
        comm_ns: length(&comm),
        overlapped_ns: length(&intersect(&comm, &compute)),
        exposed_ns: length(&exposed),
    };
    (overlap, exposed)
}

/// Where a step's communication ran with no compute kernel beside it: sorted, disjoint intervals whose
/// lengths sum to the step's [`CommOverlap::exposed_ns`] exactly (the same computation).
pub fn exposed_comm(
    trace: &Trace,
    step: &Step,
    classes: &Classes,
    rules: &Rules,
) -> Vec<(i64, i64)> {
    comm_overlap(trace, step, classes, rules).1
}

/// A bucket's time in a step, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BucketTime {
    /// Share of the window, the instant-by-instant equal split.
    pub exclusive_ns: i64,
    /// Union of the bucket's kernels.
    pub inclusive_ns: i64,
}

/// A family's kernels in a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FamilyTime {
    /// Number of kernels.
    pub count: u64,
    /// Σ dur, ns.
    pub sum_ns: i64,
    /// Union, ns.
    pub union_ns: i64,
}

/// The budget of one step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepBudget {
    /// The step's index.
    pub index: usize,
    /// The window: first start and last end of the step's kernels, copies and fills (`None` for a
    /// step without GPU work).
    pub window: Option<(i64, i64)>,
    /// The window's length, ns (0 for a step without GPU work).
    pub span_ns: i64,
    /// Time in the window with no kernel, copy or fill of the step running, ns.
    pub idle_ns: i64,
    /// The idle gaps.
    pub gaps: Vec<(i64, i64)>,
    /// Per bucket: every bucket with a kernel, copy or fill in the step (zeros when all of them have
    /// zero duration), including `unmatched` when there are unmatched kernels.
    pub buckets: BTreeMap<String, BucketTime>,
    /// Per family (matched kernels only).
    pub families: BTreeMap<String, FamilyTime>,
    /// Kernels no rule matched.
    pub unmatched: FamilyTime,
    /// Same-stream overlaps among the step's kernels.
    pub same_stream_overlaps: u64,
    /// Communication against computation.
    pub comm: CommOverlap,
}

/// Computes a step's budget. O(k log k) in the step's kernels.
pub fn budget(trace: &Trace, step: &Step, classes: &Classes, rules: &Rules) -> StepBudget {
    let ks = &trace.kernels;
    let mut b = StepBudget {
        index: step.index,
        same_stream_overlaps: step.same_stream_overlaps,
        ..StepBudget::default()
    };
    let bucket_of = |i: u32| -> &str {
        classes
            .of(i as usize)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str())
    };
    // The step's work decoded once (each pass over encoded rows decodes them all): 32 bytes an op
    // of the step.
    let work: Vec<(i64, i64, &str)> = {
        let mut rows = ks.reader();
        let kernels = step.kernels.iter().map(move |&i| {
            let k = rows.row(i as usize);
            (k.ts_ns, k.end_ns(), bucket_of(i))
        });
        let mut rows = trace.memcpys.reader();
        let copies = step.memcpys.iter().map(move |&i| {
            let c = rows.row(i as usize);
            (c.ts_ns, c.end_ns(), MEMCPY)
        });
        let mut rows = trace.memsets.reader();
        let fills = step.memsets.iter().map(move |&i| {
            let f = rows.row(i as usize);
            (f.ts_ns, f.end_ns(), MEMSET)
        });
        kernels.chain(copies).chain(fills).collect()
    };
    let work = || work.iter().copied();
    let Some(lo) = work().map(|w| w.0).min() else {
        return b;
    };
    let hi = work().map(|w| w.1).max().unwrap_or(lo);
    b.window = Some((lo, hi));
    b.span_ns = hi.saturating_sub(lo);
    let s = sweep(work(), lo, hi);
    b.idle_ns = s.idle();
    for (name, exclusive_ns) in &s.exclusive {
        b.buckets.insert(
            (*name).to_string(),
            BucketTime {
                exclusive_ns: *exclusive_ns,
                inclusive_ns: s.inclusive.get(name).copied().unwrap_or(0),
            },
        );
    }
    b.gaps = s.gaps;
    // A bucket whose work all has zero duration takes no time in the sweep and so has no entry
    // there; it still ran in the step (its families are listed), so it gets an entry of zeros.
    for (_, _, name) in work() {
        if !b.buckets.contains_key(name) {
            b.buckets.insert(name.to_string(), BucketTime::default());
        }
    }

    b.comm = comm_overlap(trace, step, classes, rules).0;

    let mut by_family: BTreeMap<Option<crate::family::FamilyId>, Vec<u32>> = BTreeMap::new();
    for &i in &step.kernels {
        by_family.entry(classes.of(i as usize)).or_default().push(i);
    }
    let mut rows = ks.reader();
    for (fam, idx) in by_family {
        let ops: Vec<GpuOp> = idx.iter().map(|&i| rows.row(i as usize)).collect();
        let t = FamilyTime {
            count: idx.len() as u64,
            sum_ns: ops.iter().fold(0i64, |acc, k| acc.saturating_add(k.dur_ns)),
            union_ns: union(ops.iter().map(|k| (k.ts_ns, k.end_ns()))),
        };
        match fam {
            Some(f) => {
                b.families.insert(rules.family(f).name.clone(), t);
            }
            None => b.unmatched = t,
        }
    }
    b
}
