//! What to fix first in a trace: findings ranked by the time at stake, and trust warnings apart.
//!
//! What it is: the rules of `kineto doctor` ([`RULES`], their thresholds in [`Thresholds`]), run over
//! traces already parsed and analysed by `kineto-trace` (and, for [`FindingId::BelowRoofline`], the
//! roofline of each step from the `roofline` crate). Each [`Finding`] carries its time at stake — the
//! time the pattern occupies, an upper bound on what fixing it can recover, MEASURED from the trace
//! (ESTIMATED for the roofline rule, which sets measured time against a model's bytes and FLOPs) — its
//! share of the analysed GPU span, the steps and rank it occurs in, the evidence (numbers and the top
//! contributing kernels, gaps or calls) and what to look at next ([`Next`]). [`TrustWarning`]s say why
//! a number may be wrong and are never ranked with the findings. [`marks`] gives the time ranges a
//! reported finding occupies in one step (for a timeline), from the same classification as its total.
//! `docs/doctor.md` states every rule.
//!
//! What it is not: a parser, a renderer or a command line. It reads no file, prints nothing and names
//! no option: the `kineto` binary renders the `doctor` table (`kineto-tables`) and turns [`Next`] into
//! a command.
#![deny(missing_docs)]

mod artefacts;
mod fixes;
mod gaps;
mod host;
mod marks;
mod ranks;
mod roof;
mod rules;
mod trust;
mod work;

pub use fixes::{
    DataParallel, FIXES, Facts, Fix, NO_FIX, Server, TensorCores, When, facts, select,
};
pub use rules::{RULES, Rule, Thresholds, is_simt_gemm, rule};

use kineto_trace::Trace;
use kineto_trace::analysis::{Analysis, middle_pair};
use kineto_trace::budget::StepBudget;
use kineto_trace::family::Rules;
use roofline::StepRoofline;

/// Where a finding's time at stake comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Read from the trace: times of GPU ops, gaps and calls.
    Measured,
    /// Measured time set against a model's ESTIMATED bytes and FLOPs and the GPU's claimed peaks.
    Estimated,
}

impl Origin {
    /// `MEASURED` or `ESTIMATED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Measured => "MEASURED",
            Origin::Estimated => "ESTIMATED",
        }
    }
}

/// The stable id of a finding (the `finding` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingId {
    /// Idle inside a step whose next GPU op was launched only after the GPU went idle.
    LaunchBoundIdle,
    /// Idle inside a step while a blocking call (synchronize, blocking copy) ran on the CPU.
    SyncBlockedIdle,
    /// GPU idle between one step's work and the next's.
    BetweenSteps,
    /// Communication kernels with no compute kernel beside them.
    ExposedComm,
    /// A rank whose steps take longer than the median rank's.
    Straggler,
    /// Eagerly launched kernels shorter than the launch cost.
    ShortKernels,
    /// Steps run without a graph launch in a trace where graph launches appear.
    EagerSteps,
    /// Host↔device copies inside steps with no kernel running beside them.
    CopiesInStep,
    /// Steps far below the GPU's roof for the model's bytes and FLOPs.
    BelowRoofline,
    /// Steps whose span is an outlier among the steps of their phase.
    UnsteadySteps,
    /// fp32 GEMMs on the SIMT cores, which cannot use the tensor cores.
    SimtGemm,
    /// Collectives far longer than their kind's median: waiting for other ranks, not transferring.
    CollectiveWait,
}

impl FindingId {
    /// Every finding, in the order `docs/doctor.md` documents them.
    pub const ALL: [FindingId; 12] = [
        FindingId::LaunchBoundIdle,
        FindingId::SyncBlockedIdle,
        FindingId::BetweenSteps,
        FindingId::ExposedComm,
        FindingId::Straggler,
        FindingId::ShortKernels,
        FindingId::EagerSteps,
        FindingId::CopiesInStep,
        FindingId::BelowRoofline,
        FindingId::UnsteadySteps,
        FindingId::SimtGemm,
        FindingId::CollectiveWait,
    ];

    /// The id as written in every output.
    pub fn as_str(self) -> &'static str {
        rule(self).id
    }

    /// Whether the finding's [`marks`] are the very time it counts — Σ of its marks over all steps is its
    /// time at stake, exactly — rather than the windows of the steps it judges as a whole (stragglers,
    /// eager, unsteady and below-the-roofline steps).
    pub fn marks_are_its_time(self) -> bool {
        match self {
            FindingId::LaunchBoundIdle
            | FindingId::SyncBlockedIdle
            | FindingId::BetweenSteps
            | FindingId::ExposedComm
            | FindingId::ShortKernels
            | FindingId::CopiesInStep
            | FindingId::SimtGemm
            | FindingId::CollectiveWait => true,
            FindingId::Straggler
            | FindingId::EagerSteps
            | FindingId::BelowRoofline
            | FindingId::UnsteadySteps => false,
        }
    }
}

/// What to look at next: the listing that shows the finding's rows. The binary turns it into a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Next {
    /// Per-step buckets and idle (`budget`).
    Budget,
    /// The steps, their bounds and periods (`steps`).
    Steps,
    /// Every kernel with its launch time (`kernels`).
    Kernels,
    /// Kernels grouped by name, per step (`top`).
    TopPerStep,
    /// Steps across ranks (`ranks`, over every trace given).
    Ranks,
    /// The roofline of each step (`roofline` with the model).
    Roofline,
    /// Counts, copies by kind, links and warnings (`summary`).
    Summary,
}

/// One finding in one trace (for [`FindingId::Straggler`]: one straggling rank).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// What was found.
    pub id: FindingId,
    /// The trace file as given.
    pub file: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// MEASURED, or ESTIMATED for the roofline rule.
    pub origin: Origin,
    /// The time the pattern occupies, ns: an upper bound on what fixing it can recover.
    pub time_at_stake_ns: i64,
    /// The time at stake over the trace's analysed GPU span ([`TraceDiagnosis::analysed_span_ns`]), %.
    pub share_pct: f64,
    /// The steps it occurs in (indices into the trace's steps).
    pub steps: Vec<usize>,
    /// The numbers behind it and the top contributing kernels, gaps or calls, in one line.
    pub evidence: String,
    /// What to look at next.
    pub next: Next,
    /// The change to make, from the fix catalogue ([`FIXES`]); `None`: no catalogued fix.
    pub fix: Option<&'static Fix>,
}

/// The kind of a trust warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrustId {
    /// Kernels on one stream that overlap in time (a profiler or clock artefact on NVIDIA).
    SameStreamOverlap,
    /// AMD dispatches that end after their successor on the queue started.
    QueueOverruns,
    /// GPU ops with no launch call linked: the launch rules cannot see them.
    UnlinkedOps,
    /// Launch calls that no GPU op links to.
    LaunchesWithoutOp,
    /// The file was cut and only the events before the cut were kept.
    Salvaged,
    /// CUDA graphs recorded as whole replays: the kernels inside them are not in the trace.
    GraphReplaysWithoutKernels,
    /// Problems the parser worked around.
    ParseWarnings,
    /// Kernels outside every step: not in any step's numbers.
    KernelsOutsideSteps,
    /// No step marker was found: the whole trace is one step.
    NoStepMarkers,
    /// The first step waits on work queued before the profiler started (left out of the findings).
    WindowOpensOnWait,
    /// Setup code inside the window: the model's weights copied to the device, the context created, in
    /// the first step (left out of the findings).
    SetupInWindow,
    /// The first step is cold: lazy init, first library calls (left out of the findings).
    ColdFirstStep,
    /// The window closed inside the last step (left out of the findings).
    CutLastStep,
}

impl TrustId {
    /// The id as written in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustId::SameStreamOverlap => "same_stream_overlap",
            TrustId::QueueOverruns => "queue_overruns",
            TrustId::UnlinkedOps => "unlinked_ops",
            TrustId::LaunchesWithoutOp => "launches_without_op",
            TrustId::Salvaged => "salvaged",
            TrustId::GraphReplaysWithoutKernels => "graph_replays_without_kernels",
            TrustId::ParseWarnings => "parse_warnings",
            TrustId::KernelsOutsideSteps => "kernels_outside_steps",
            TrustId::NoStepMarkers => "no_step_markers",
            TrustId::WindowOpensOnWait => "window_opens_on_wait",
            TrustId::SetupInWindow => "setup_in_window",
            TrustId::ColdFirstStep => "cold_first_step",
            TrustId::CutLastStep => "cut_last_step",
        }
    }

    /// What the check is, in one line (the `rule` column).
    pub fn what(self) -> &'static str {
        match self {
            TrustId::SameStreamOverlap => {
                "kernels on one stream overlapping in time (steps' same_stream_overlaps)"
            }
            TrustId::QueueOverruns => "AMD same-queue overruns the reader counted",
            TrustId::UnlinkedOps => "GPU ops whose correlation id matches no launch call",
            TrustId::LaunchesWithoutOp => "launch calls no GPU op links to",
            TrustId::Salvaged => "a cut file read up to the cut",
            TrustId::GraphReplaysWithoutKernels => {
                "graph-mode capture: whole-graph replays without their kernels"
            }
            TrustId::ParseWarnings => "problems the parser worked around",
            TrustId::KernelsOutsideSteps => "kernels launched outside every step",
            TrustId::NoStepMarkers => "no step marker: the whole trace is one step",
            TrustId::WindowOpensOnWait => {
                "a first step idling over half its span under a blocking call begun before any GPU op: left out of the findings"
            }
            TrustId::SetupInWindow => {
                "a first step copying over 10 × the later steps' median host→device time, or creating the device context (setup code): left out of the findings"
            }
            TrustId::ColdFirstStep => {
                "a first step idling over 10 × the later steps' median idle (cold start): left out of the findings"
            }
            TrustId::CutLastStep => {
                "a last step with under 10 % of the others' median kernel count (cut by the window): left out of the findings"
            }
        }
    }
}

/// Why some number of a trace may be wrong; listed apart from the findings, never ranked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustWarning {
    /// What it is.
    pub id: TrustId,
    /// The trace file as given.
    pub file: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// Steps concerned (empty: the whole trace).
    pub steps: Vec<usize>,
    /// The numbers, in one line.
    pub evidence: String,
    /// What to look at next.
    pub next: Next,
}

/// One trace as the doctor takes it: parsed, analysed, its budgets, and optionally its roofline.
#[derive(Clone, Copy)]
pub struct TraceInput<'a> {
    /// The trace file as given.
    pub file: &'a str,
    /// The model.
    pub trace: &'a Trace,
    /// Links, steps, families.
    pub analysis: &'a Analysis,
    /// Every step's budget, in step order.
    pub budgets: &'a [StepBudget],
    /// The rule table the families came from.
    pub rules: &'a Rules,
    /// The roofline of each step, when a model was given.
    pub roofline: Option<Roofs<'a>>,
}

/// The rooflines of a trace's steps (`roofline::TraceRoofline`'s), as the roofline rule reads them.
#[derive(Clone, Copy)]
pub struct Roofs<'a> {
    /// The GPU whose roofs they are.
    pub gpu: &'a str,
    /// Each step's roofline.
    pub steps: &'a [StepRoofline],
}

impl TraceInput<'_> {
    /// The span the shares are of: first start to last end of the GPU work of every step, ns (the
    /// time between steps included). 0 for a trace without GPU work in a step.
    pub fn analysed_span_ns(&self) -> i64 {
        let lo = self
            .budgets
            .iter()
            .filter_map(|b| b.window)
            .map(|w| w.0)
            .min();
        let hi = self
            .budgets
            .iter()
            .filter_map(|b| b.window)
            .map(|w| w.1)
            .max();
        match (lo, hi) {
            (Some(lo), Some(hi)) => hi.saturating_sub(lo),
            _ => 0,
        }
    }

    /// The rank label `kineto ranks` uses: `distributedInfo.rank`, else the file.
    pub fn rank_label(&self) -> String {
        self.trace
            .header
            .rank
            .map_or_else(|| self.file.to_string(), |r| r.to_string())
    }
}

/// One trace's result.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceDiagnosis {
    /// The trace file as given.
    pub file: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The span shares are of ([`TraceInput::analysed_span_ns`]).
    pub analysed_span_ns: i64,
    /// Steps analysed.
    pub steps: usize,
}

/// The doctor's answer over every trace given.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    /// Findings, most time at stake first (then finding id, file).
    pub findings: Vec<Finding>,
    /// Trust warnings, in trace order.
    pub warnings: Vec<TrustWarning>,
    /// Each trace, in the order given.
    pub traces: Vec<TraceDiagnosis>,
}

impl Diagnosis {
    /// Whether no rule found anything (trust warnings aside).
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// A time range a reported finding occupies in one step, on the trace's clock (MEASURED: from the same
/// classification of gaps, kernels and copies as the finding's time at stake).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The finding.
    pub id: FindingId,
    /// Start, ns.
    pub lo_ns: i64,
    /// End, ns.
    pub hi_ns: i64,
}

impl Mark {
    /// `hi − lo`, ns.
    pub fn dur_ns(&self) -> i64 {
        self.hi_ns.saturating_sub(self.lo_ns)
    }
}

/// The time ranges the reported `findings` (a [`diagnose`]'s, run with `th`) of trace `t` occupy in its
/// step `step`, by finding then start; only findings of `t`'s file whose steps hold `step`:
///
/// - `launch_bound_idle`: the launch-bound part of each such idle gap (the gap less the blocking calls);
/// - `sync_blocked_idle`: each gap ∩ the blocking calls;
/// - `short_kernels`: each short eagerly launched kernel, `[start, end)`;
/// - `fp32_simt_gemm`: each fp32 SIMT GEMM kernel, `[start, end)`;
/// - `collective_wait`: each waiting collective's start up to its transfer (`[start, end − median)`);
/// - `exposed_comm`: the comm-kernel time with no compute kernel beside it
///   (`kineto_trace::budget::exposed_comm`, the budget's own computation);
/// - `copies_in_step`: the host↔device copy time with no kernel beside it;
/// - `between_steps`: the idle from the previous step's GPU end to this step's first GPU start;
/// - `eager_steps`, `unsteady_steps`, `below_roofline`, `straggler`: the step's window, one band.
///
/// Empty marks (a zero-length kernel) are left out. For every finding whose
/// [`FindingId::marks_are_its_time`], Σ over all its steps of its marks' durations is its
/// `time_at_stake_ns`, exactly: both come from one classification per rule. A step the trace lacks has
/// no marks.
pub fn marks(t: &TraceInput<'_>, step: usize, findings: &[Finding], th: &Thresholds) -> Vec<Mark> {
    let cleaned = artefacts::clean(t, &artefacts::find(t, th));
    marks::of_step(&cleaned_input(t, cleaned.as_ref()), step, findings, th)
}

/// `t` as the rules read it: with its artefact steps emptied (`artefacts::clean`), where it has any.
fn cleaned_input<'a>(
    t: &TraceInput<'a>,
    cleaned: Option<&'a (Analysis, Vec<StepBudget>)>,
) -> TraceInput<'a> {
    match cleaned {
        Some((analysis, budgets)) => TraceInput {
            analysis,
            budgets,
            ..*t
        },
        None => *t,
    }
}

/// The share of `span_ns` that `ns` is, %; 0 for an empty span.
pub(crate) fn share(ns: i64, span_ns: i64) -> f64 {
    if span_ns > 0 {
        100.0 * ns as f64 / span_ns as f64
    } else {
        0.0
    }
}

/// Twice the median of `v`, sorting it: exact in integers (the two middle values' sum for an even
/// count); 0 when empty. `ranks` keeps it doubled so a span's excess over it is halved once. The
/// median's forms of the rules — this, [`median_ns`] and `kineto_trace::analysis::median_f64` (the
/// unsteady-steps rule's) — all read `kineto_trace::analysis::middle_pair`, the one home of the rule.
pub(crate) fn twice_median(v: &mut [i64]) -> i128 {
    middle_pair(v).map_or(0, |(a, b)| i128::from(a) + i128::from(b))
}

/// The median of `v` in integer ns, sorting it: the middle value for an odd count, the mean of the two
/// middle values for an even count (numpy's and Python's `statistics.median`) rounded down,
/// ⌊(a + b) / 2⌋; 0 when empty. The median of `collective_wait` (each comm name's duration) and of the
/// artefact rules (docs/doctor.md).
pub(crate) fn median_ns(v: &mut [i64]) -> i64 {
    middle_pair(v).map_or(0, |(a, b)| floor_mean(a, b))
}

/// ⌊(a + b) / 2⌋ without forming a + b (which can overflow i64): an arithmetic shift is ⌊x / 2⌋, and the
/// two halves' lost bits add one exactly when both are odd. Each half lies in [−2^62, 2^62 − 1], so the
/// total cannot overflow.
fn floor_mean(a: i64, b: i64) -> i64 {
    (a >> 1) + (b >> 1) + (a & b & 1)
}

/// `ns` as µs text with three decimals, exact.
pub(crate) fn us(ns: i64) -> String {
    kineto_trace::ns_to_us_string(ns)
}

/// Runs every rule over the traces (stragglers across all of them) and ranks the findings. A finding
/// whose share of its trace's analysed span is below [`Thresholds::min_share_pct`], or with no time at
/// stake, is not reported.
pub fn diagnose(inputs: &[TraceInput<'_>], th: &Thresholds) -> Diagnosis {
    let mut findings = Vec::new();
    let mut warnings = Vec::new();
    let mut traces = Vec::new();
    let found: Vec<Vec<artefacts::Artefact>> =
        inputs.iter().map(|t| artefacts::find(t, th)).collect();
    let cleaned: Vec<Option<(Analysis, Vec<StepBudget>)>> = inputs
        .iter()
        .zip(&found)
        .map(|(t, a)| artefacts::clean(t, a))
        .collect();
    let inputs: Vec<TraceInput<'_>> = inputs
        .iter()
        .zip(&cleaned)
        .map(|(t, c)| cleaned_input(t, c.as_ref()))
        .collect();
    for (t, arts) in inputs.iter().zip(&found) {
        let span = t.analysed_span_ns();
        let mut f = Vec::new();
        gaps::find(t, th, &mut f);
        work::find(t, th, &mut f);
        if let Some(r) = t.roofline {
            roof::find(t, r, th, &mut f);
        }
        for x in &mut f {
            x.share_pct = share(x.time_at_stake_ns, span);
        }
        fixes::set(t, &mut f);
        findings.extend(f);
        warnings.extend(trust::find(t));
        warnings.extend(arts.iter().map(|a| TrustWarning {
            id: a.id,
            file: t.file.to_string(),
            rank: t.trace.header.rank,
            steps: vec![a.step],
            evidence: a.evidence.clone(),
            next: artefacts::NEXT,
        }));
        traces.push(TraceDiagnosis {
            file: t.file.to_string(),
            rank: t.trace.header.rank,
            analysed_span_ns: span,
            steps: t.analysis.steps.steps.len(),
        });
    }
    let mut across = ranks::find(&inputs);
    for t in &inputs {
        fixes::set(t, &mut across);
    }
    findings.extend(across);
    findings.retain(|f| f.time_at_stake_ns > 0 && f.share_pct >= th.min_share_pct);
    findings.sort_by(|a, b| {
        b.time_at_stake_ns
            .cmp(&a.time_at_stake_ns)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.file.cmp(&b.file))
    });
    Diagnosis {
        findings,
        warnings,
        traces,
    }
}

#[cfg(test)]
mod tests {
    use super::{median_ns, twice_median};

    #[test]
    fn median_of_an_odd_count_is_the_middle_value() {
        // 7, 1, 30, 4, 12 sorted: 1, 4, 7, 12, 30 → the third, 7.
        assert_eq!(median_ns(&mut [7, 1, 30, 4, 12]), 7);
        assert_eq!(twice_median(&mut [7, 1, 30, 4, 12]), 14);
        assert_eq!(median_ns(&mut [5]), 5);
    }

    #[test]
    fn median_of_an_even_count_is_the_floor_of_the_middle_two_means() {
        // 40, 10, 30, 20 sorted: 10, 20, 30, 40 → (20 + 30) / 2 = 25 (the upper middle would be 30).
        assert_eq!(median_ns(&mut [40, 10, 30, 20]), 25);
        // 1, 2, 4, 100 → (2 + 4) / 2 = 3.
        assert_eq!(median_ns(&mut [100, 4, 2, 1]), 3);
        // 10_000, 20_001 → 30_001 / 2 = 15_000.5, rounded down: 15_000; twice the median stays exact.
        assert_eq!(median_ns(&mut [20_001, 10_000]), 15_000);
        assert_eq!(twice_median(&mut [20_001, 10_000]), 30_001);
        // Rounded down, not toward zero: (−3 + −2) / 2 = −2.5 → −3.
        assert_eq!(median_ns(&mut [-2, -3]), -3);
        assert_eq!(median_ns(&mut []), 0);
    }

    #[test]
    fn median_of_the_largest_values_does_not_overflow() {
        // (2^63 − 1) + (2^63 − 2) = 2^64 − 3 overflows i64; its half, 2^63 − 1.5, rounds down to 2^63 − 2.
        assert_eq!(median_ns(&mut [i64::MAX, i64::MAX - 1]), i64::MAX - 1);
        assert_eq!(median_ns(&mut [i64::MAX, i64::MAX]), i64::MAX);
        // −2^63 + −2^63 = −2^64; half is −2^63 exactly. −2^63 + (2^63 − 1) = −1 → −0.5 → −1.
        assert_eq!(median_ns(&mut [i64::MIN, i64::MIN]), i64::MIN);
        assert_eq!(median_ns(&mut [i64::MIN, i64::MAX]), -1);
    }
}
