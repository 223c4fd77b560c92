//! From a parsed trace to the steps the analysis reads: `kineto-trace` links each kernel to its launch
//! (`correlate`, CUDA-graph replays included) and each launch to the step marker around it (`step`); this
//! module classifies the kernels with the KL1 rules and keeps what the sections need.
//!
//! The bounds are kineto-trace's (docs/steps-and-budgets.md): a kernel belongs to a step when its launch
//! starts inside the step's annotation, on any thread of the annotation's process; `lo`/`hi` are the first
//! start and last end of the step's kernels; `period` is the next step's `lo` − this `lo` (none for the last
//! step, which is therefore not analysed). Markers without kernels are counted and dropped here; a step whose next marker
//! in its process is one of them has no period either ([`DropReason`] says which case a step is).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kineto_trace::correlate::Links;
use kineto_trace::step::find_steps;
use kineto_trace::{Sym, Trace};
use kl1_shapes::Bits;

use crate::rules::{BucketId, Kl1FamilyId, Kl1Rules, template_k};

/// One kernel of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Demangled name, as the trace wrote it (shared with the other kernels of that name).
    pub name: Arc<str>,
    /// Its family.
    pub family: Kl1FamilyId,
    /// Its family's bucket.
    pub bucket: BucketId,
    /// Start, ns on the trace clock.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Launch grid `[x, y, z]`.
    pub grid: [u32; 3],
    /// K read from the template argument its family names ([`crate::rules::K_ARG`]), if the name yields it.
    pub k: Option<Bits>,
}

impl Kernel {
    /// Duration, ns.
    pub fn dur(&self) -> i64 {
        self.end.saturating_sub(self.start)
    }
}

/// Why a step marker of the capture's kind is not analysed, as counted in `steps_dropped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// No period: no marker of the step's process follows it.
    LastStep,
    /// No period: the next marker of the step's process has no kernels, so it has no first kernel start to
    /// measure to.
    NextMarkerEmpty,
    /// The marker itself has no kernels (nothing was launched inside it).
    NoKernels,
}

impl DropReason {
    /// The reason as written in the output (`steps_dropped`) and the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::LastStep => "last step of the trace",
            DropReason::NextMarkerEmpty => "next marker has no kernels",
            DropReason::NoKernels => "marker has no kernels",
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step with at least one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Kl1Step {
    /// The annotation's `step` group (`kl1.step#N`), else the step's position among the trace's markers.
    pub index: u64,
    /// The annotation's `phase` group (`decode`, `prefill`); empty without one.
    pub phase: String,
    /// Live rows (tokens), from the annotation's `rows` group.
    pub rows: Option<u64>,
    /// Requests, from the annotation's `requests` group.
    pub requests: Option<u64>,
    /// Number groups the annotation has that give no number: (group, why), from kineto-trace's `Step`.
    pub unreadable: Vec<(String, String)>,
    /// First kernel start, ns.
    pub lo: i64,
    /// Last kernel end, ns.
    pub hi: i64,
    /// Next step's `lo` − `lo`, ns; `None` for the last step, or when the next marker has no kernels.
    pub period: Option<i64>,
    /// Why `period` is `None` (`None` when there is a period).
    pub no_period: Option<DropReason>,
    /// Kernels that started before an earlier kernel on their stream ended (PDL), in this step.
    pub same_stream_overlaps: u64,
    /// Kernels in (start, end) order.
    pub kernels: Vec<Kernel>,
}

/// A trace's steps, and what could not be placed in one.
#[derive(Debug, Clone, Default)]
pub struct Kl1Steps {
    /// Steps with at least one kernel, in marker order.
    pub steps: Vec<Kl1Step>,
    /// Step markers matched by the pattern (including those with no kernel).
    pub markers: u64,
    /// Markers with no kernel, by their `phase` group (empty without one): not steps, but counted so that
    /// a capture's dropped markers are never silent.
    pub empty_markers: BTreeMap<String, u64>,
    /// Kernels not in any step: no launch, or a launch outside every step marker.
    pub kernels_outside: u64,
    /// Their total duration, ns.
    pub kernels_outside_ns: i64,
    /// kineto-trace's warnings about markers (a `rows` that is not an integer, …).
    pub warnings: Vec<String>,
}

/// Splits a trace into steps with classified kernels.
pub fn steps(trace: &Trace, rules: &Kl1Rules) -> Kl1Steps {
    let links = Links::build(trace);
    let found = find_steps(trace, &links, rules.step_pattern());
    let classes = rules.table().classify_kernels(trace);
    // Family, bucket, K and name of each distinct kernel name, computed once.
    let mut by_name: HashMap<Sym, (Arc<str>, Kl1FamilyId, Option<Bits>)> = HashMap::new();
    let mut in_step = vec![false; trace.kernels.len()];
    let mut out = Kl1Steps {
        markers: found.steps.len() as u64,
        warnings: found.warnings.clone(),
        ..Kl1Steps::default()
    };
    // For each marker, whether a later marker of its process exists and has kernels (kineto-trace measures
    // the period to the next marker of the same process, by position).
    let mut next_has_kernels: Vec<Option<bool>> = vec![None; found.steps.len()];
    let mut later: HashMap<&kineto_trace::IdValue, bool> = HashMap::new();
    for (i, s) in found.steps.iter().enumerate().rev() {
        let pid = &trace.track(s.track).pid;
        next_has_kernels[i] = later.get(pid).copied();
        later.insert(pid, s.lo_ns.is_some());
    }
    for (s, next) in found.steps.iter().zip(&next_has_kernels) {
        let (Some(lo), Some(hi)) = (s.lo_ns, s.hi_ns) else {
            *out.empty_markers
                .entry(s.phase.clone().unwrap_or_default())
                .or_default() += 1;
            continue;
        };
        let mut rows = trace.kernels.reader();
        let kernels = s
            .kernels
            .iter()
            .map(|&i| {
                let i = i as usize;
                in_step[i] = true;
                let k = rows.row(i);
                let (name, family, bits) = by_name
                    .entry(k.name)
                    .or_insert_with(|| {
                        let text = trace.name(k.name);
                        let family = classes
                            .of(i)
                            .and_then(|id| rules.family_id(&rules.table().family(id).name))
                            .unwrap_or(rules.unmatched());
                        let bits = rules
                            .family(family)
                            .k_arg
                            .and_then(|pos| template_k(text, pos));
                        (Arc::from(text), family, bits)
                    })
                    .clone();
                Kernel {
                    name,
                    family,
                    bucket: rules.family(family).bucket,
                    start: k.ts_ns,
                    end: k.end_ns(),
                    grid: trace.detail(&k).grid,
                    k: bits,
                }
            })
            .collect();
        out.steps.push(Kl1Step {
            index: s.number.unwrap_or(s.index as u64),
            phase: s.phase.clone().unwrap_or_default(),
            rows: s.rows,
            requests: s.requests,
            unreadable: s.unreadable.clone(),
            lo,
            hi,
            period: s.period_ns,
            no_period: match (s.period_ns, next) {
                (Some(_), _) => None,
                (None, Some(false)) => Some(DropReason::NextMarkerEmpty),
                // No later marker (a later one with kernels always gives a period).
                (None, _) => Some(DropReason::LastStep),
            },
            same_stream_overlaps: s.same_stream_overlaps,
            kernels,
        });
    }
    for (k, inside) in trace.kernels.iter().zip(&in_step) {
        if !inside {
            out.kernels_outside += 1;
            out.kernels_outside_ns = out.kernels_outside_ns.saturating_add(k.dur_ns);
        }
    }
    out
}
