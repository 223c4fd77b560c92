//! Profiler-window artefacts: steps whose time is the capture's, not the workload's — a first step
//! opened by a wait on work queued before the profiler started, setup code inside the window (weights
//! copied to the device, the CUDA context created), a cold first step (lazy init, the first cuBLAS
//! call), a last step the window cut short. Each is a trust warning saying what to re-capture,
//! and its step is taken out of every rule and of the analysed span (the shares' denominator): a
//! finding never ranks an artefact, nor is diluted by one. Only the first and the last step can be
//! artefacts, so no between-step boundary crosses one.

use crate::gaps::Calls;
use crate::{Next, Thresholds, TraceInput, TrustId, us};
use kineto_trace::analysis::Analysis;
use kineto_trace::budget::StepBudget;
use kineto_trace::interval::length;
use kineto_trace::summary::copy_kind;

/// A step found to be an artefact of the profiler's window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Artefact {
    /// Which kind.
    pub id: TrustId,
    /// The step.
    pub step: usize,
    /// The numbers and what to re-capture, in one line.
    pub evidence: String,
}

fn median(mut v: Vec<i64>) -> i64 {
    crate::median_ns(&mut v)
}

/// The artefact steps of a trace, first step's then last step's.
pub(crate) fn find(t: &TraceInput<'_>, th: &Thresholds) -> Vec<Artefact> {
    let mut with_work: Vec<&StepBudget> = t.budgets.iter().filter(|b| b.window.is_some()).collect();
    with_work.sort_by_key(|b| b.window.map(|w| w.0));
    let mut out = Vec::new();
    let Some(first) = with_work.first() else {
        return out;
    };
    if let Some(a) = opening_wait(t, th, first) {
        out.push(a);
    } else if let Some(a) = setup_in_window(t, th, &with_work) {
        out.push(a);
    } else if let Some(a) = cold_first(th, &with_work) {
        out.push(a);
    }
    if let Some(a) = cut_last(t, th, &with_work)
        && out.iter().all(|o| o.step != a.step)
    {
        out.push(a);
    }
    out
}

/// The first step's idle under blocking calls that began before any GPU op of the trace: they wait
/// for work queued before the profiler started. An artefact when it is over half the step's span.
fn opening_wait(t: &TraceInput<'_>, th: &Thresholds, first: &StepBudget) -> Option<Artefact> {
    let tr = t.trace;
    let first_op = [&tr.kernels, &tr.memcpys, &tr.memsets]
        .iter()
        .flat_map(|v| v.iter().map(|o| o.ts_ns))
        .min()?;
    let calls = Calls::blocking(t);
    let mut waited = Vec::new();
    let mut names = Vec::new();
    let mut launches = tr.launches.reader();
    for &(a, z) in &first.gaps {
        for c in calls.overlapping(a, z).filter(|c| c.0 < first_op) {
            waited.push((c.0.max(a), c.1.min(z)));
            let n = tr.name(launches.row(c.2).name);
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let waited = length(&kineto_trace::interval::merge(waited));
    if waited < th.artefact_min_ns || 2 * waited <= first.span_ns {
        return None;
    }
    Some(Artefact {
        id: TrustId::WindowOpensOnWait,
        step: first.index,
        evidence: format!(
            "step {} idles {} µs of its {} µs under `{}` begun before the first GPU op of the trace: a wait \
             on work queued before the profiler started; left out of the findings — re-capture with the \
             profiler started after a synchronize (a `schedule` with wait/warmup steps)",
            first.index,
            us(waited),
            us(first.span_ns),
            names.join("`, `")
        ),
    })
}

/// Runtime and driver calls that create the device context: the first CUDA/HIP use of the process.
const CONTEXT_CREATION: [&str; 6] = [
    "cuInit",
    "cuCtxCreate",
    "cuDevicePrimaryCtxRetain",
    "hipInit",
    "hipCtxCreate",
    "hipDevicePrimaryCtxRetain",
];

/// A step's host→device copies: (count, Σ duration ns, Σ bytes).
fn htod(t: &TraceInput<'_>, b: &StepBudget) -> (u64, i64, u64) {
    let tr = t.trace;
    let step = &t.analysis.steps.steps[b.index];
    let mut rows = tr.memcpys.reader();
    step.memcpys
        .iter()
        .map(|&m| rows.row(m as usize))
        .filter(|m| copy_kind(tr.name(m.name)) == "HtoD")
        .fold((0, 0, 0), |(n, d, by), m| {
            (n + 1, d + m.dur_ns, by + tr.detail(&m).bytes.unwrap_or(0))
        })
}

/// Setup code inside the window, in the first step: a burst of host→device copies over
/// `cold_idle_ratio` × the later steps' median (at least two of them) by at least `artefact_min_ns` —
/// `model.to(device)`, `.cuda()`, weights loaded onto the device — or context creation calls totalling at
/// least `artefact_min_ns`. A step repeats its batch's copies; it does not repeat the model's.
fn setup_in_window(t: &TraceInput<'_>, th: &Thresholds, steps: &[&StepBudget]) -> Option<Artefact> {
    let (first, rest) = steps.split_first()?;
    if rest.len() < 2 {
        return None;
    }
    let (n, copied, bytes) = htod(t, first);
    let m = median(rest.iter().map(|b| htod(t, b).1).collect());
    let burst = copied.saturating_sub(m) >= th.artefact_min_ns
        && copied as f64 > th.cold_idle_ratio * m as f64;
    let tr = t.trace;
    let step = &t.analysis.steps.steps[first.index];
    let mut context = (Vec::new(), 0i64);
    for l in &tr.launches {
        let name = tr.name(l.name);
        let inside = l.ts_ns >= step.cpu_lo_ns && l.ts_ns < step.cpu_hi_ns;
        if inside && CONTEXT_CREATION.iter().any(|c| name.starts_with(c)) {
            if !context.0.contains(&name) {
                context.0.push(name);
            }
            context.1 += l.dur_ns;
        }
    }
    let created = context.1 >= th.artefact_min_ns;
    let what = match (burst, created) {
        (false, false) => return None,
        (true, _) => format!(
            "copies {n} host→device ({bytes} B) over {} µs where the later steps' median is {} µs",
            us(copied),
            us(m)
        ),
        (false, true) => format!(
            "creates the device context (`{}`, {} µs)",
            context.0.join("`, `"),
            us(context.1)
        ),
    };
    Some(Artefact {
        id: TrustId::SetupInWindow,
        step: first.index,
        evidence: format!(
            "step {} {what}: setup code inside the window (`model.to`, `.cuda()`, weight loading, the CUDA \
             context); left out of the findings — re-capture with the profiler started after the model is \
             on the device and a warm-up step has run",
            first.index
        ),
    })
}

/// The first step idling over `cold_idle_ratio` × the median idle of the later steps (at least two)
/// and by more than `artefact_min_ns`: lazy initialisation, the first cuBLAS/cuDNN call, allocator
/// growth — what a warm-up step would have absorbed.
fn cold_first(th: &Thresholds, steps: &[&StepBudget]) -> Option<Artefact> {
    let (first, rest) = steps.split_first()?;
    if rest.len() < 2 {
        return None;
    }
    let m = median(rest.iter().map(|b| b.idle_ns).collect());
    let over = first.idle_ns.saturating_sub(m);
    if over < th.artefact_min_ns || (first.idle_ns as f64) <= th.cold_idle_ratio * m as f64 {
        return None;
    }
    Some(Artefact {
        id: TrustId::ColdFirstStep,
        step: first.index,
        evidence: format!(
            "step {} idles {} µs where the later steps' median idle is {} µs: a cold first step (lazy init, \
             first library call); left out of the findings — re-capture after warm-up steps \
             (`schedule(wait=1, warmup=1, …)`)",
            first.index,
            us(first.idle_ns),
            us(m)
        ),
    })
}

/// The last step with under `cut_step_kernel_pct` % of the median kernel count of the others (at least
/// two): the window closed inside it.
fn cut_last(t: &TraceInput<'_>, th: &Thresholds, steps: &[&StepBudget]) -> Option<Artefact> {
    let (last, rest) = steps.split_last()?;
    if rest.len() < 2 {
        return None;
    }
    let count = |b: &StepBudget| t.analysis.steps.steps[b.index].kernels.len() as i64;
    let m = median(rest.iter().map(|b| count(b)).collect());
    let n = count(last);
    if (n as f64) >= th.cut_step_kernel_pct / 100.0 * m as f64 {
        return None;
    }
    Some(Artefact {
        id: TrustId::CutLastStep,
        step: last.index,
        evidence: format!(
            "the last step {} has {n} kernels where the others' median is {m}: the profiler's window closed \
             inside it; left out of the findings — re-capture with the window ending on a step boundary",
            last.index
        ),
    })
}

/// The trace's analysis and budgets with the artefact steps emptied (no GPU work, an empty budget), so
/// that no rule and no span reads them; `None` when there is no artefact.
pub(crate) fn clean(
    t: &TraceInput<'_>,
    artefacts: &[Artefact],
) -> Option<(Analysis, Vec<StepBudget>)> {
    if artefacts.is_empty() {
        return None;
    }
    let mut analysis = t.analysis.clone();
    let mut budgets = t.budgets.to_vec();
    for a in artefacts {
        if let Some(s) = analysis.steps.steps.get_mut(a.step) {
            s.kernels.clear();
            s.memcpys.clear();
            s.memsets.clear();
            s.lo_ns = None;
            s.hi_ns = None;
            s.kernel_sum_ns = 0;
            s.kernel_union_ns = 0;
        }
        if let Some(b) = budgets.get_mut(a.step) {
            *b = StepBudget {
                index: a.step,
                ..StepBudget::default()
            };
        }
    }
    Some((analysis, budgets))
}

/// What to look at next for an artefact.
pub(crate) const NEXT: Next = Next::Steps;
