//! Per-step time budgets: where a step's GPU time went, by bucket and family.
//!
//! For a step with kernels, the window is its GPU bounds `[lo, hi)`. [`crate::interval::sweep`] over
//! the step's kernels, each labelled with its family's bucket (or `unmatched`), gives every bucket's
//! exclusive time (each instant split equally among the buckets running then), its inclusive time
//! (union) and the idle gaps; Σ exclusive + idle = hi − lo exactly, in ns. Per family: count, Σ dur
//! and union. Unmatched kernels are a bucket of their own, so the identity holds, and are also
//! reported apart with their count and time.

use crate::family::{Classes, Rules, UNMATCHED};
use crate::interval::{sweep, union};
use crate::model::Trace;
use crate::step::Step;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// `hi − lo`, ns (0 for a step without kernels).
    pub span_ns: i64,
    /// Time in `[lo, hi)` with no kernel of the step running, ns.
    pub idle_ns: i64,
    /// The idle gaps.
    pub gaps: Vec<(i64, i64)>,
    /// Per bucket: every bucket with a kernel in the step (zeros when all its kernels have zero
    /// duration), including `unmatched` when there are unmatched kernels.
    pub buckets: BTreeMap<String, BucketTime>,
    /// Per family (matched kernels only).
    pub families: BTreeMap<String, FamilyTime>,
    /// Kernels no rule matched.
    pub unmatched: FamilyTime,
    /// Same-stream overlaps among the step's kernels.
    pub same_stream_overlaps: u64,
}

/// Computes a step's budget. O(k log k) in the step's kernels.
pub fn budget(trace: &Trace, step: &Step, classes: &Classes, rules: &Rules) -> StepBudget {
    let ks = &trace.kernels;
    let mut b = StepBudget {
        index: step.index,
        same_stream_overlaps: step.same_stream_overlaps,
        ..StepBudget::default()
    };
    let (Some(lo), Some(hi)) = (step.lo_ns, step.hi_ns) else {
        return b;
    };
    b.span_ns = hi.saturating_sub(lo);
    let bucket_of = |i: u32| -> &str {
        classes
            .of(i as usize)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str())
    };
    let s = sweep(
        step.kernels.iter().map(|&i| {
            let k = &ks[i as usize];
            (k.ts_ns, k.end_ns(), bucket_of(i))
        }),
        lo,
        hi,
    );
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
    // A bucket whose kernels all have zero duration takes no time in the sweep and so has no entry
    // there; it still ran in the step (its families are listed), so it gets an entry of zeros.
    for &i in &step.kernels {
        let name = bucket_of(i);
        if !b.buckets.contains_key(name) {
            b.buckets.insert(name.to_string(), BucketTime::default());
        }
    }

    let mut by_family: BTreeMap<Option<crate::family::FamilyId>, Vec<u32>> = BTreeMap::new();
    for &i in &step.kernels {
        by_family.entry(classes.of(i as usize)).or_default().push(i);
    }
    for (fam, idx) in by_family {
        let t = FamilyTime {
            count: idx.len() as u64,
            sum_ns: idx
                .iter()
                .fold(0i64, |acc, &i| acc.saturating_add(ks[i as usize].dur_ns)),
            union_ns: union(
                idx.iter()
                    .map(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns())),
            ),
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
