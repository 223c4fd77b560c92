//! The rules over the GPU work of each step: exposed communication, short eager kernels, steps run
//! without graphs, host↔device copies, unsteady steps, fp32 GEMMs off the tensor cores.

use crate::gaps::{finding, top_named};
use crate::{Finding, FindingId, Thresholds, TraceInput, us};
use kineto_trace::analysis::median_f64;
use kineto_trace::budget::COMM;
use kineto_trace::correlate::is_graph_launch;
use kineto_trace::family::UNMATCHED;
use kineto_trace::interval::{length, merge, subtract};
use kineto_trace::step::Step;
use kineto_trace::summary::copy_kind;
use kineto_trace::{GpuOp, Launch, Reader};
use std::collections::BTreeMap;

pub(crate) fn find(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    exposed_comm(t, th, out);
    short_kernels(t, th, out);
    eager_steps(t, out);
    copies_in_step(t, th, out);
    unsteady_steps(t, th, out);
    simt_gemm(t, th, out);
    collective_wait(t, th, out);
}

fn bucket_of<'r>(t: &TraceInput<'r>, kernel: u32) -> &'r str {
    t.analysis
        .classes
        .of(kernel as usize)
        .map_or(UNMATCHED, |f| t.rules.family(f).bucket.as_str())
}

fn add(by: &mut BTreeMap<String, (u64, i64)>, name: &str, ns: i64) {
    let e = by.entry(name.to_string()).or_default();
    e.0 += 1;
    e.1 = e.1.saturating_add(ns);
}

fn exposed_comm(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let exposed: i64 = t.budgets.iter().map(|b| b.comm.exposed_ns).sum();
    if exposed <= 0 {
        return;
    }
    let comm: i64 = t.budgets.iter().map(|b| b.comm.comm_ns).sum();
    let steps = t
        .budgets
        .iter()
        .filter(|b| b.comm.exposed_ns > 0)
        .map(|b| b.index)
        .collect();
    let mut kernels = BTreeMap::new();
    let mut rows = t.trace.kernels.reader();
    for s in &t.analysis.steps.steps {
        for &k in &s.kernels {
            if bucket_of(t, k) == COMM {
                let op = rows.row(k as usize);
                add(&mut kernels, t.trace.name(op.name), op.dur_ns);
            }
        }
    }
    let evidence = format!(
        "comm {} µs, of it exposed {} µs ({:.1} %); comm kernels: {}",
        us(comm),
        us(exposed),
        crate::share(exposed, comm),
        top_named(&kernels, th.top)
    );
    out.push(finding(t, FindingId::ExposedComm, exposed, steps, evidence));
}

/// Whether kernel `k` was launched by a graph launch (`calls`: the trace's calls).
fn from_graph(t: &TraceInput<'_>, calls: &mut Reader<'_, Launch>, k: usize) -> Option<bool> {
    let l = t.analysis.links.kernel_launch.get(k).copied().flatten()?;
    Some(is_graph_launch(t.trace.name(calls.row(l as usize).name)))
}

/// A step's eagerly launched kernels (launched by a call that is not a graph launch): how many, and
/// those shorter than the launch-cost threshold. The one home of `short_kernels`: its total and its
/// marks are these kernels.
pub(crate) fn short_eager(t: &TraceInput<'_>, th: &Thresholds, s: &Step) -> (u64, Vec<u32>) {
    let mut eager = 0u64;
    let mut short = Vec::new();
    let (mut kernels, mut calls) = (t.trace.kernels.reader(), t.trace.launches.reader());
    for &k in &s.kernels {
        if from_graph(t, &mut calls, k as usize) != Some(false) {
            continue;
        }
        eager += 1;
        if kernels.row(k as usize).dur_ns < th.short_kernel_ns {
            short.push(k);
        }
    }
    (eager, short)
}

fn short_kernels(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let (mut count, mut total, mut eager) = (0u64, 0i64, 0u64);
    let mut steps = Vec::new();
    let mut names = BTreeMap::new();
    for s in &t.analysis.steps.steps {
        let (e, short) = short_eager(t, th, s);
        eager += e;
        let mut rows = t.trace.kernels.reader();
        for &k in &short {
            let op = rows.row(k as usize);
            count += 1;
            total = total.saturating_add(op.dur_ns);
            add(&mut names, t.trace.name(op.name), op.dur_ns);
        }
        if !short.is_empty() {
            steps.push(s.index);
        }
    }
    if count == 0 {
        return;
    }
    let evidence = format!(
        "{count} of {eager} eagerly launched kernels in steps run under {} µs, Σ {} µs (mean {} µs); most: {}",
        us(th.short_kernel_ns),
        us(total),
        us(total / count as i64),
        top_named(&names, th.top)
    );
    out.push(finding(t, FindingId::ShortKernels, total, steps, evidence));
}

/// A step's phase as the doctor compares steps: like with like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Prefill,
    Decode,
    Mixed,
    Unknown,
}

/// The phase of a step, marker's or inferred (`Step::phase`); `idle` and other modes are unknown.
pub(crate) fn phase(s: &Step) -> Phase {
    let Some(p) = s.phase.as_deref() else {
        return Phase::Unknown;
    };
    match kineto_trace::step::phase_kind(p) {
        Some(true) => Phase::Prefill,
        Some(false) => Phase::Decode,
        None if p.eq_ignore_ascii_case("mixed") => Phase::Mixed,
        None => Phase::Unknown,
    }
}

fn query_tokens(s: &Step) -> Option<u64> {
    s.tokens.and_then(|t| t.query_tokens())
}

fn eager_steps(t: &TraceInput<'_>, out: &mut Vec<Finding>) {
    let steps = &t.analysis.steps.steps;
    let graphed = |s: &Step| {
        let mut calls = t.trace.launches.reader();
        s.kernels
            .iter()
            .any(|&k| from_graph(t, &mut calls, k as usize) == Some(true))
    };
    let with_graph: Vec<usize> = steps
        .iter()
        .filter(|s| graphed(s))
        .map(|s| s.index)
        .collect();
    if with_graph.is_empty() {
        return;
    }
    // The most tokens a graph replay of this trace ran: a step of unknown phase with no more tokens
    // than that is a batch the captured graphs could have held.
    let graph_tokens = with_graph
        .iter()
        .filter_map(|&i| query_tokens(&steps[i]))
        .max();
    let (mut eager, mut unknown_left_out) = (Vec::new(), 0u64);
    for s in steps {
        let mut calls = t.trace.launches.reader();
        let eagerly = !s.kernels.is_empty()
            && !graphed(s)
            && s.kernels
                .iter()
                .any(|&k| from_graph(t, &mut calls, k as usize) == Some(false));
        if !eagerly {
            continue;
        }
        match phase(s) {
            Phase::Decode => eager.push(s.index),
            Phase::Unknown => match (query_tokens(s), graph_tokens) {
                (Some(q), Some(g)) if q <= g => eager.push(s.index),
                _ => unknown_left_out += 1,
            },
            // Servers run prefill and mixed batches eagerly or piecewise by design.
            Phase::Prefill | Phase::Mixed => {}
        }
    }
    if eager.is_empty() {
        return;
    }
    let idle: i64 = eager.iter().map(|&i| t.budgets[i].idle_ns).sum();
    let mean_span = |v: &[usize]| {
        let s: i64 = v.iter().map(|&i| t.budgets[i].span_ns).sum();
        s / v.len().max(1) as i64
    };
    let left_out = if unknown_left_out > 0 {
        format!(
            "; {unknown_left_out} eager steps of unknown phase and tokens left out (they may be prefills)"
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "{} decode steps launch kernels one by one while {} steps run graphs; their idle Σ {} µs; \
         mean span {} µs eager vs {} µs with graphs{left_out}",
        eager.len(),
        with_graph.len(),
        us(idle),
        us(mean_span(&eager)),
        us(mean_span(&with_graph)),
    );
    out.push(finding(t, FindingId::EagerSteps, idle, eager, evidence));
}

/// A step's host↔device copies, and the time they run with no kernel of the step beside it: the
/// copies' union less the kernels' (sorted, disjoint). The one home of `copies_in_step`: its total and
/// its marks are these intervals.
pub(crate) fn lone_copies(t: &TraceInput<'_>, s: &Step) -> (Vec<GpuOp>, Vec<(i64, i64)>) {
    let tr = t.trace;
    let mut rows = tr.memcpys.reader();
    let copies: Vec<GpuOp> = s
        .memcpys
        .iter()
        .map(|&i| rows.row(i as usize))
        .filter(|c| matches!(copy_kind(tr.name(c.name)), "HtoD" | "DtoH"))
        .collect();
    if copies.is_empty() {
        return (copies, Vec::new());
    }
    let mut rows = tr.kernels.reader();
    let kernels = merge(s.kernels.iter().map(|&k| {
        let op = rows.row(k as usize);
        (op.ts_ns, op.end_ns())
    }));
    let alone = subtract(
        &merge(copies.iter().map(|c| (c.ts_ns, c.end_ns()))),
        &kernels,
    );
    (copies, alone)
}

fn copies_in_step(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let tr = t.trace;
    let (mut exposed, mut total, mut count, mut bytes) = (0i64, 0i64, 0u64, 0u64);
    let mut steps = Vec::new();
    let mut names = BTreeMap::new();
    let mut pageable = BTreeMap::new();
    for s in &t.analysis.steps.steps {
        let (copies, alone) = lone_copies(t, s);
        let alone = length(&alone);
        exposed = exposed.saturating_add(alone);
        if alone > 0 {
            steps.push(s.index);
        }
        for c in copies {
            let name = tr.name(c.name);
            count += 1;
            total = total.saturating_add(c.dur_ns);
            bytes = bytes.saturating_add(tr.detail(&c).bytes.unwrap_or(0));
            add(&mut names, name, c.dur_ns);
            if name.contains("Pageable") {
                add(&mut pageable, name, c.dur_ns);
            }
        }
    }
    if count == 0 {
        return;
    }
    let pageable_count: u64 = pageable.values().map(|v| v.0).sum();
    let pageable_text = if pageable_count == 0 {
        "none pageable".to_string()
    } else {
        format!(
            "{pageable_count} pageable (not pinned): {}",
            top_named(&pageable, th.top)
        )
    };
    let evidence = format!(
        "{count} host↔device copies in steps, Σ {} µs, {bytes} B; {} µs with no kernel beside them; {pageable_text}; by name: {}",
        us(total),
        us(exposed),
        top_named(&names, th.top)
    );
    out.push(finding(
        t,
        FindingId::CopiesInStep,
        exposed,
        steps,
        evidence,
    ));
}

/// The steps a step is compared with by the outlier rule: decode steps with decode steps; steps of
/// unknown phase with those of the same token octave (2^k ≤ tokens < 2^(k+1)) when their tokens are
/// known, else with every step of unknown phase and tokens. Prefill and mixed steps are not compared:
/// their span follows their prompts' lengths, not the server's steadiness (`None`).
fn like_group(s: &Step) -> Option<String> {
    match phase(s) {
        Phase::Decode => Some("decode".to_string()),
        Phase::Prefill | Phase::Mixed => None,
        Phase::Unknown => Some(match query_tokens(s) {
            Some(q) if q > 0 => {
                let k = 63 - q.leading_zeros();
                format!(
                    "phase unknown, {}-{} tokens",
                    1u64 << k,
                    (1u128 << (k + 1)) - 1
                )
            }
            _ => "phase unknown".to_string(),
        }),
    }
}

fn unsteady_steps(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let steps = &t.analysis.steps.steps;
    let mut phases: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for b in t.budgets.iter().filter(|b| b.window.is_some()) {
        if let Some(group) = like_group(&steps[b.index]) {
            phases.entry(group).or_default().push(b.index);
        }
    }
    let (mut total, mut at, mut parts) = (0i64, Vec::new(), Vec::new());
    for (phase, idx) in &phases {
        if idx.len() < th.unsteady_min_steps {
            continue;
        }
        let values: Vec<(String, f64)> = idx
            .iter()
            .map(|&i| (i.to_string(), t.budgets[i].span_ns as f64))
            .collect();
        let Some(sp) = step_stats::spread(&values) else {
            continue;
        };
        // Each quantity's median over the phase's steps: idle and every bucket (absent counts 0).
        let mut names: Vec<&str> = idx
            .iter()
            .flat_map(|&i| t.budgets[i].buckets.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        let value = |i: usize, q: &str| -> i64 {
            let b = &t.budgets[i];
            if q == "idle" {
                b.idle_ns
            } else {
                b.buckets.get(q).map_or(0, |x| x.exclusive_ns)
            }
        };
        let quantities: Vec<(&str, f64)> = std::iter::once("idle")
            .chain(names.iter().copied())
            .map(|q| {
                let mut v: Vec<i64> = idx.iter().map(|&i| value(i, q)).collect();
                (q, median_f64(&mut v))
            })
            .collect();
        for o in sp.outliers.iter().filter(|o| o.value > sp.p50) {
            let Ok(i) = o.step.parse::<usize>() else {
                continue;
            };
            let excess = (o.value - sp.p50).round() as i64;
            total = total.saturating_add(excess);
            at.push(i);
            let moved = quantities
                .iter()
                .map(|(q, m)| (*q, value(i, q) as f64 - m))
                .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(a.0)));
            let moved = moved.map_or(String::new(), |(q, d)| {
                format!(", `{q}` +{} µs", us(d.round() as i64))
            });
            parts.push((
                excess,
                format!(
                    "step {i} ({phase}) {} µs vs median {} µs{moved}",
                    us(o.value as i64),
                    us(sp.p50.round() as i64)
                ),
            ));
        }
    }
    if total <= 0 {
        return;
    }
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let n = parts.len();
    let shown: Vec<String> = parts.into_iter().take(th.top).map(|p| p.1).collect();
    at.sort_unstable();
    let evidence = format!(
        "{n} outlier steps over the median (3 × MAD of span per phase): {}",
        shown.join("; ")
    );
    out.push(finding(t, FindingId::UnsteadySteps, total, at, evidence));
}

/// A step's fp32 SIMT GEMM kernels (`rules::is_simt_gemm`). The one home of `fp32_simt_gemm`: its
/// total and its marks are these kernels.
pub(crate) fn simt_gemms(t: &TraceInput<'_>, s: &Step) -> Vec<u32> {
    let mut rows = t.trace.kernels.reader();
    s.kernels
        .iter()
        .copied()
        .filter(|&k| crate::is_simt_gemm(t.trace.name(rows.row(k as usize).name)))
        .collect()
}

fn simt_gemm(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let (mut count, mut total, mut kernel_ns) = (0u64, 0i64, 0i64);
    let mut steps = Vec::new();
    let mut names = BTreeMap::new();
    for s in &t.analysis.steps.steps {
        kernel_ns = kernel_ns.saturating_add(s.kernel_sum_ns);
        let simt = simt_gemms(t, s);
        let mut rows = t.trace.kernels.reader();
        for &k in &simt {
            let op = rows.row(k as usize);
            count += 1;
            total = total.saturating_add(op.dur_ns);
            add(&mut names, t.trace.name(op.name), op.dur_ns);
        }
        if !simt.is_empty() {
            steps.push(s.index);
        }
    }
    if count == 0 {
        return;
    }
    let evidence = format!(
        "{count} fp32 GEMMs on the SIMT cores, Σ {} µs = {:.1} % of the steps' kernel time; by name: {}",
        us(total),
        crate::share(total, kernel_ns),
        top_named(&names, th.top)
    );
    out.push(finding(t, FindingId::SimtGemm, total, steps, evidence));
}

/// The median duration of each comm kernel name over the trace's steps ([`crate::median_ns`]: for an
/// even count the two middle durations' mean, rounded down to the ns), for names with at least three
/// kernels (fewer give no median to call an outlier against).
pub(crate) fn comm_medians(t: &TraceInput<'_>) -> BTreeMap<kineto_trace::Sym, i64> {
    let mut by: BTreeMap<kineto_trace::Sym, Vec<i64>> = BTreeMap::new();
    let mut rows = t.trace.kernels.reader();
    for s in &t.analysis.steps.steps {
        for &k in &s.kernels {
            if bucket_of(t, k) == COMM {
                let op = rows.row(k as usize);
                by.entry(op.name).or_default().push(op.dur_ns);
            }
        }
    }
    by.into_iter()
        .filter(|(_, v)| v.len() >= 3)
        .map(|(n, mut v)| (n, crate::median_ns(&mut v)))
        .collect()
}

/// A step's collectives waiting for peers: those running over `peer_wait_ratio` × their name's
/// median, as the part before their transfer, `[start, end − median)`. A collective starts when its
/// rank arrives and transfers once every rank has: a median-length run is the transfer, the excess
/// the wait. The one home of `collective_wait`: its total and its marks are these intervals, each with
/// its kernel.
pub(crate) fn peer_waits(
    t: &TraceInput<'_>,
    th: &Thresholds,
    s: &Step,
    medians: &BTreeMap<kineto_trace::Sym, i64>,
) -> Vec<(u32, i64, i64)> {
    let mut out = Vec::new();
    let mut rows = t.trace.kernels.reader();
    for &k in &s.kernels {
        let op = rows.row(k as usize);
        let Some(&m) = medians.get(&op.name) else {
            continue;
        };
        if (op.dur_ns as f64) > th.peer_wait_ratio * m as f64 && bucket_of(t, k) == COMM {
            out.push((k, op.ts_ns, op.end_ns() - m));
        }
    }
    out
}

fn collective_wait(t: &TraceInput<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let medians = comm_medians(t);
    if medians.is_empty() {
        return;
    }
    let (mut total, mut steps, mut names) = (0i64, Vec::new(), BTreeMap::new());
    let mut largest: Option<(i64, usize)> = None;
    for s in &t.analysis.steps.steps {
        let waits = peer_waits(t, th, s, &medians);
        let mut kernels = t.trace.kernels.reader();
        for &(k, a, z) in &waits {
            total = total.saturating_add(z - a);
            if largest.is_none_or(|l| z - a > l.0) {
                largest = Some((z - a, s.index));
            }
            add(
                &mut names,
                t.trace.name(kernels.row(k as usize).name),
                z - a,
            );
        }
        if !waits.is_empty() {
            steps.push(s.index);
        }
    }
    let Some((l_ns, l_step)) = largest else {
        return;
    };
    let evidence = format!(
        "{} collectives ran over {} × their median: Σ {} µs waiting for other ranks (largest {} µs in step \
         {l_step}), the rest transfer; in exposed_comm this is not transfer to overlap but a late peer; \
         by name: {}",
        names.values().map(|v: &(u64, i64)| v.0).sum::<u64>(),
        th.peer_wait_ratio,
        us(total),
        us(l_ns),
        top_named(&names, th.top)
    );
    out.push(finding(
        t,
        FindingId::CollectiveWait,
        total,
        steps,
        evidence,
    ));
}
