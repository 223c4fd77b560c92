//! Steps: the iterations of a training loop or a serving engine, found from their CPU-side markers,
//! with the GPU work launched inside each.
//!
//! How each bound is derived (docs/steps-and-budgets.md says the same, with the reasons):
//! * **markers**: `user_annotation` and `cpu_op` spans whose whole name matches the [`StepPattern`]
//!   (by default `ProfilerStep#N`, which traces before 2022 record as a `cpu_op`). The
//!   `gpu_user_annotation` mirror of a step, on a GPU stream, is never a marker, so a mirrored step
//!   counts once; a span recorded as both annotation and op with the same name, thread, start and
//!   duration also counts once.
//! * **cpu_lo, cpu_hi**: the marker's start and end.
//! * **inside**: a GPU op belongs to the step when its launch (linked by correlation, see
//!   [`crate::correlate`]) was called on *any thread of the marker's process* at a time `t` with
//!   `cpu_lo <= t < cpu_hi`. Any thread, because PyTorch runs the backward pass on autograd threads
//!   and NCCL work on others, while the step marker is on the Python thread; the same process,
//!   because another process's clock interval says nothing about this one's work. When markers of a
//!   process nest or overlap, the launch goes to the innermost (latest-starting) one. CUDA-graph
//!   replays follow their one `cudaGraphLaunch`.
//! * **lo, hi**: the first start and the last end of the step's kernels (copies and fills are listed
//!   but do not set the bounds); `None` for a step without kernels.
//! * **period**: the next step's `lo` (next in start order among the same process's steps) minus this
//!   `lo`; `None` for the last step or when either has no kernels.
//! * **same-stream overlaps**: kernels of the step that start before an earlier-starting kernel on
//!   their (device, stream) has ended (PDL, ROCm duration overflow), counted over the whole trace.

use crate::correlate::{Links, Unlinked, is_graph_launch};
use crate::error::{Error, Result};
use crate::interval::union;
use crate::model::{GpuOp, IdValue, Rows, Span, Sym, Trace, Track};
use crate::profiles::{PyFunction, PyRole};
use crate::tokens::TokenSource;
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};

mod fields;
mod markers;
mod pattern;
mod phase;

pub use fields::phase_kind;
use fields::*;
use markers::*;
pub use pattern::*;
pub use phase::{PhaseSource, SERVING_PROFILES, infer_phases};

/// Token counts of one phase of a serving step, as its marker states them (MEASURED by the server
/// that wrote the marker; `None` where the marker does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseTokens {
    /// Requests in this phase.
    pub requests: Option<u64>,
    /// Σ query (new) tokens over the phase's requests.
    pub query_tokens: Option<u64>,
    /// Σ KV-cache (context) tokens attended to over the phase's requests.
    pub context_tokens: Option<u64>,
    /// Σ query² over the requests (TraceLens `sqsq`): attention FLOPs of prefill scale with it.
    pub query_sq_sum: Option<u64>,
    /// Σ query·context over the requests (TraceLens `sqsk`).
    pub query_context_sum: Option<u64>,
}

/// Per-phase token counts of a step (see [`PhaseTokens`]); a phase no source mentions is `None`.
/// `unphased` holds counts of the whole step from a source that does not split them by phase (the
/// rows of its GEMMs, the size a CUDA graph was captured at): `Step::tokens_from` names the source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepTokens {
    /// The prefill (context, extend) phase.
    pub prefill: Option<PhaseTokens>,
    /// The decode (generation) phase.
    pub decode: Option<PhaseTokens>,
    /// The whole step, phases not told apart.
    pub unphased: Option<PhaseTokens>,
}

impl StepTokens {
    /// Σ query tokens of the step: the phases' sum when every phase named gives them, else the
    /// unphased count.
    pub fn query_tokens(&self) -> Option<u64> {
        let phases = [self.prefill, self.decode];
        let named: Vec<PhaseTokens> = phases.into_iter().flatten().collect();
        let sum = (!named.is_empty())
            .then(|| {
                // Saturating: a marker's counts may be anything up to u64::MAX each.
                named
                    .iter()
                    .map(|p| p.query_tokens)
                    .try_fold(0u64, |acc, v| v.map(|v| acc.saturating_add(v)))
            })
            .flatten();
        sum.or(self.unphased.and_then(|p| p.query_tokens))
    }
}

/// One step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 0-based position among the trace's steps, in order of CPU start.
    pub index: usize,
    /// The marker's name.
    pub name: String,
    /// The `step` group (N of `ProfilerStep#N`).
    pub number: Option<u64>,
    /// The step's phase: the marker's `phase` group as written (`DECODE`, `prefill`, …), else the
    /// phase inferred from the trace's evidence (`prefill`, `decode`, `mixed`); `None`: unknown.
    pub phase: Option<String>,
    /// How the phase was found: the marker, or the evidence it was inferred from (`None` with no phase).
    pub phase_from: Option<PhaseSource>,
    /// The `rows` group (batch rows / tokens).
    pub rows: Option<u64>,
    /// The `requests` group, else the sum of the per-phase requests.
    pub requests: Option<u64>,
    /// Token counts, when any source gives them.
    pub tokens: Option<StepTokens>,
    /// Where the token counts come from, in the order they were taken (a marker's requests, then its
    /// GEMMs' rows for the query tokens it does not state).
    pub tokens_from: Vec<TokenSource>,
    /// Number groups the marker has but that give no number: (group, why), e.g. (`rows`, "`99…9` is
    /// out of range (more than 18446744073709551615)"). Their fields are `None`.
    pub unreadable: Vec<(String, String)>,
    /// The marker's thread.
    pub track: Track,
    /// Marker start, ns.
    pub cpu_lo_ns: i64,
    /// Marker end, ns.
    pub cpu_hi_ns: i64,
    /// First start of the step's kernels, ns.
    pub lo_ns: Option<i64>,
    /// Last end of the step's kernels, ns.
    pub hi_ns: Option<i64>,
    /// Next step's `lo` minus this one's, ns.
    pub period_ns: Option<i64>,
    /// The step's kernels: indices into `Trace::kernels`, by start (then end, then index).
    pub kernels: Vec<u32>,
    /// The step's copies: indices into `Trace::memcpys`, by start.
    pub memcpys: Vec<u32>,
    /// The step's fills: indices into `Trace::memsets`, by start.
    pub memsets: Vec<u32>,
    /// Σ kernel dur, ns.
    pub kernel_sum_ns: i64,
    /// Time covered by at least one of the step's kernels, ns.
    pub kernel_union_ns: i64,
    /// Kernels of this step that started before an earlier kernel on their stream had ended.
    pub same_stream_overlaps: u64,
}

/// The steps of a trace and what fell outside them.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// The steps, by index.
    pub steps: Vec<Step>,
    /// The profile that found them (`pattern` for a user's regex); `None` for the whole-window step.
    pub profile: Option<String>,
    /// Kernels with a launch that is in no step (before the first, between steps, another process).
    pub kernels_outside: u64,
    /// Those kernels: how many, Σ dur and their most frequent names — GPU work no step owns, named
    /// rather than dropped.
    pub outside: Unlinked,
    /// Launch calls whose kernels, copies or fills are in no step.
    pub launches_outside: u64,
    /// Kernels with no launch at all (see [`crate::correlate::LinkReport`]): in no step.
    pub kernels_unlinked: u64,
    /// Same-stream overlaps over the whole trace.
    pub same_stream_overlaps: u64,
    /// Markers whose `rows`, `requests` or `step` group did not read as an integer (the field is then
    /// `None`), one line each (first 20).
    pub warnings: Vec<String>,
    /// How the steps were found, when that is not the plain reading of the pattern (no marker, so
    /// the whole GPU window is one step; a pattern that matched nothing), one line each.
    pub notes: Vec<String>,
}

/// Finds the steps of a trace. O(n log n) in events.
pub fn find_steps(trace: &Trace, links: &Links, pattern: &StepPattern) -> Steps {
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let mut pids = Pids::new(trace);
    let names = markers::SpanNames::default();
    // The first profile that finds a marker.
    let found = pattern.profiles.iter().find_map(|(n, f)| {
        let m = find_markers(trace, links, f, &mut pids, &names);
        (!m.is_empty()).then_some((n.as_str(), f, m))
    });
    let Some((profile, finder, mut markers)) = found else {
        return no_markers(trace, links, pattern);
    };
    // Stable: equal starts and durations keep the order found.
    markers.sort_by_key(|m| (m.ts_ns, std::cmp::Reverse(m.end_ns - m.ts_ns)));
    if pattern.profiles.len() > 1 {
        notes.push(found_note(profile, finder, &markers, trace));
    }
    let (mut steps, step_pid) =
        marker_steps(trace, &markers, (profile, finder), &mut pids, &mut warnings);
    // The step of each launch: the innermost range marker of the launch's process containing its
    // start; a graph replay's launch is its own step.
    let spans: Vec<(u64, i64, i64)> = markers
        .iter()
        .zip(&step_pid)
        .map(|(m, &p)| {
            if m.launch.is_some() {
                // An empty range contains nothing.
                (p, m.ts_ns, m.ts_ns)
            } else {
                (p, m.ts_ns, m.end_ns)
            }
        })
        .collect();
    let points: Vec<(u64, i64)> = trace
        .launches
        .iter()
        .map(|l| (pids.of(l.track), l.ts_ns))
        .collect();
    let (_, mut launch_step) = crate::correlate::stab(&spans, &points);
    for (i, m) in markers.iter().enumerate() {
        if let Some(l) = m.launch {
            launch_step[l as usize] = Some(i as u32);
        }
    }
    let mut out = Steps {
        profile: Some(profile.to_string()),
        ..Steps::default()
    };
    assign_gpu_work(trace, links, &launch_step, &mut steps, &mut out);
    set_kernel_bounds(trace, &mut steps);
    set_periods(&mut steps, &step_pid);
    // Query tokens the markers do not state: the rows of each step's GEMMs (`record_shapes`).
    if !trace.gemm_rows.is_empty() {
        let gemms = trace.gemm_ops();
        let points: Vec<(u64, i64)> = gemms
            .iter()
            .map(|(op, _)| (pids.of(op.track), op.ts_ns))
            .collect();
        let (_, op_step) = crate::correlate::stab(&spans, &points);
        crate::tokens::from_gemm_rows(trace, links, &mut steps, &gemms, &op_step);
    }
    infer_phases(trace, links, &mut steps, Some(profile));
    out.steps = steps;
    out.warnings = warnings;
    out.notes = notes;
    out
}

/// A step for each marker (sorted), its fields read from the marker's name where `profile`'s finder
/// names them, with no GPU work yet; and each step's process.
fn marker_steps(
    trace: &Trace,
    markers: &[Marker],
    (profile, finder): (&str, &Finder),
    pids: &mut Pids<'_>,
    warnings: &mut Vec<String>,
) -> (Vec<Step>, Vec<u64>) {
    let mut steps: Vec<Step> = Vec::with_capacity(markers.len());
    let mut step_pid: Vec<u64> = Vec::with_capacity(markers.len());
    for (index, m) in markers.iter().enumerate() {
        let name = trace.name(m.name);
        let f = match finder {
            Finder::Names(regex) => fields(regex, name, index, warnings),
            _ => Fields::default(),
        };
        let tokens_from = if f.tokens.is_some() {
            vec![TokenSource::Marker {
                profile: profile.to_string(),
            }]
        } else {
            Vec::new()
        };
        let phase_from = f.phase.is_some().then(|| PhaseSource::Marker {
            profile: profile.to_string(),
        });
        steps.push(Step {
            index,
            name: name.to_string(),
            number: f.number,
            phase: f.phase,
            phase_from,
            rows: f.rows,
            requests: f.requests,
            tokens: f.tokens,
            tokens_from,
            unreadable: f.unreadable,
            track: m.track,
            cpu_lo_ns: m.ts_ns,
            cpu_hi_ns: m.end_ns,
            lo_ns: None,
            hi_ns: None,
            period_ns: None,
            kernels: Vec::new(),
            memcpys: Vec::new(),
            memsets: Vec::new(),
            kernel_sum_ns: 0,
            kernel_union_ns: 0,
            same_stream_overlaps: 0,
        });
        step_pid.push(pids.of(m.track));
    }
    (steps, step_pid)
}

/// Gives each kernel, copy and fill to the step of its launch (`launch_step`), counting in `out` what
/// falls outside every step (and the kernels with no launch) and the same-stream overlaps.
fn assign_gpu_work(
    trace: &Trace,
    links: &Links,
    launch_step: &[Option<u32>],
    steps: &mut [Step],
    out: &mut Steps,
) {
    let overlaps = same_stream_overlaps(trace);
    out.same_stream_overlaps = overlaps.iter().filter(|&&o| o).count() as u64;
    let step_of = |launch: Option<u32>| launch.and_then(|l| launch_step[l as usize]);
    let mut outside_names: FxHashMap<Sym, u64> = FxHashMap::default();
    let mut outside_launches: FxHashSet<u32> = FxHashSet::default();
    let mut kernels = trace.kernels.reader();
    for (k, &l) in links.kernel_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (None, _) => out.kernels_unlinked += 1,
            (Some(l), None) => {
                let op = kernels.row(k);
                out.kernels_outside += 1;
                out.outside.count += 1;
                out.outside.sum_ns = out.outside.sum_ns.saturating_add(op.dur_ns);
                *outside_names.entry(op.name).or_default() += 1;
                outside_launches.insert(l);
            }
            (Some(_), Some(s)) => {
                let st = &mut steps[s as usize];
                st.kernels.push(k as u32);
                st.same_stream_overlaps += u64::from(overlaps[k]);
            }
        }
    }
    out.outside.examples = crate::correlate::top_names(trace, outside_names);
    for (m, &l) in links.memcpy_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (Some(_), Some(s)) => steps[s as usize].memcpys.push(m as u32),
            (Some(l), None) => {
                outside_launches.insert(l);
            }
            _ => {}
        }
    }
    for (m, &l) in links.memset_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (Some(_), Some(s)) => steps[s as usize].memsets.push(m as u32),
            (Some(l), None) => {
                outside_launches.insert(l);
            }
            _ => {}
        }
    }
    out.launches_outside = outside_launches.len() as u64;
}

/// Sorts each step's work by start and sets its kernels' bounds, sum and union.
fn set_kernel_bounds(trace: &Trace, steps: &mut [Step]) {
    for st in steps {
        let kernels = by_start(&trace.kernels, &st.kernels, true);
        st.kernels = kernels.iter().map(|k| k.2).collect();
        st.memcpys = places(by_start(&trace.memcpys, &st.memcpys, false));
        st.memsets = places(by_start(&trace.memsets, &st.memsets, false));
        st.lo_ns = kernels.iter().map(|k| k.0).min();
        st.hi_ns = kernels.iter().map(|k| k.1).max();
        st.kernel_sum_ns = kernels.iter().fold(0i64, |acc, k| acc.saturating_add(k.3));
        st.kernel_union_ns = union(kernels.iter().map(|k| (k.0, k.1)));
    }
}

/// The ops at places `idx` of `ops` as (start, end, place, duration), sorted by start, then (when
/// `by_end`) end, then place: a step's kernels are ordered so, its copies and fills by start and
/// place (their end is then 0 here). Each op is decoded once, not once a comparison
/// ([`crate::Rows`]).
fn by_start(ops: &Rows<GpuOp>, idx: &[u32], by_end: bool) -> Vec<(i64, i64, u32, i64)> {
    let mut rows = ops.reader();
    let mut keyed: Vec<(i64, i64, u32, i64)> = idx
        .iter()
        .map(|&i| {
            let op = rows.row(i as usize);
            (op.ts_ns, if by_end { op.end_ns() } else { 0 }, i, op.dur_ns)
        })
        .collect();
    keyed.sort_unstable();
    keyed
}

/// The places of [`by_start`]'s ops, in its order.
fn places(keyed: Vec<(i64, i64, u32, i64)>) -> Vec<u32> {
    keyed.into_iter().map(|k| k.2).collect()
}

/// Each step's period: to the next step of the same process (`step_pid`).
fn set_periods(steps: &mut [Step], step_pid: &[u64]) {
    let mut next_of_pid: FxHashMap<u64, usize> = FxHashMap::default();
    for i in (0..steps.len()).rev() {
        let p = step_pid[i];
        if let Some(&n) = next_of_pid.get(&p) {
            steps[i].period_ns = match (steps[i].lo_ns, steps[n].lo_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
        }
        next_of_pid.insert(p, i);
    }
}

/// No marker: a note saying so, and — when the pattern asks for it — one step over the whole GPU
/// window holding every kernel, copy and fill of the trace (linked to a launch or not).
fn no_markers(trace: &Trace, links: &Links, pattern: &StepPattern) -> Steps {
    let mut notes = Vec::new();
    let frequent = if pattern.profiles.is_empty() {
        Vec::new()
    } else {
        frequent_annotations(trace, 5)
    };
    let listed = if frequent.is_empty() {
        "the trace has no user annotations".to_string()
    } else {
        let v: Vec<String> = frequent
            .iter()
            .map(|(n, c)| format!("`{n}` ×{c}"))
            .collect();
        format!("most frequent annotations: {}", v.join(", "))
    };
    if pattern.profiles.is_empty() {
        // The whole trace was asked for: nothing to explain.
    } else if pattern.profiles.len() > 1 {
        notes.push(format!(
            "no step markers of the built-in profiles ({}); {listed}",
            pattern.as_str().replace('|', ", ")
        ));
    } else {
        notes.push(format!(
            "step pattern `{}` matched no annotation; {listed}",
            pattern.as_str()
        ));
    }
    let overlaps = same_stream_overlaps(trace);
    let mut out = Steps {
        same_stream_overlaps: overlaps.iter().filter(|&&o| o).count() as u64,
        kernels_unlinked: links.kernel_launch.iter().filter(|l| l.is_none()).count() as u64,
        ..Steps::default()
    };
    if !pattern.whole_window {
        out.kernels_outside = trace.kernels.len() as u64 - out.kernels_unlinked;
        let mut names: FxHashMap<Sym, u64> = FxHashMap::default();
        let mut launches: FxHashSet<u32> = FxHashSet::default();
        let mut rows = trace.kernels.reader();
        for (k, l) in links.kernel_launch.iter().enumerate() {
            if let Some(l) = l {
                let op = rows.row(k);
                out.outside.count += 1;
                out.outside.sum_ns = out.outside.sum_ns.saturating_add(op.dur_ns);
                *names.entry(op.name).or_default() += 1;
                launches.insert(*l);
            }
        }
        launches.extend(
            links
                .memcpy_launch
                .iter()
                .chain(&links.memset_launch)
                .flatten(),
        );
        out.outside.examples = crate::correlate::top_names(trace, names);
        out.launches_outside = launches.len() as u64;
        out.notes = notes;
        return out;
    }
    if trace.kernels.is_empty() && trace.memcpys.is_empty() && trace.memsets.is_empty() {
        notes.push("no GPU work in the trace: no step".to_string());
        out.notes = notes;
        return out;
    }
    notes.push(
        "the whole GPU window is analysed as one step (every kernel, copy and fill, with or without a launch)"
            .to_string(),
    );
    let (cpu_lo, cpu_hi) = trace.time_bounds.unwrap_or((0, 0));
    let ks = &trace.kernels;
    let all = |ops: &Rows<GpuOp>| (0..ops.len() as u32).collect::<Vec<u32>>();
    let kernels = places(by_start(ks, &all(ks), true));
    let memcpys = places(by_start(&trace.memcpys, &all(&trace.memcpys), false));
    let memsets = places(by_start(&trace.memsets, &all(&trace.memsets), false));
    out.steps.push(Step {
        index: 0,
        name: WHOLE_WINDOW.to_string(),
        number: None,
        phase: None,
        phase_from: None,
        rows: None,
        requests: None,
        tokens: None,
        tokens_from: Vec::new(),
        unreadable: Vec::new(),
        track: trace.launches.first().map_or(Track(0), |l| l.track),
        cpu_lo_ns: cpu_lo,
        cpu_hi_ns: cpu_hi,
        lo_ns: ks.iter().map(|k| k.ts_ns).min(),
        hi_ns: ks.iter().map(|k| k.end_ns()).max(),
        period_ns: None,
        kernel_sum_ns: ks.iter().fold(0i64, |a, k| a.saturating_add(k.dur_ns)),
        kernel_union_ns: union(ks.iter().map(|k| (k.ts_ns, k.end_ns()))),
        same_stream_overlaps: out.same_stream_overlaps,
        kernels,
        memcpys,
        memsets,
    });
    out.notes = notes;
    out
}

/// The name of the one step a trace without markers is analysed as.
pub const WHOLE_WINDOW: &str = "(whole trace)";

/// Per kernel: whether it started before an earlier-starting kernel on its (device, stream) — or
/// its track, when the trace gives no device and stream — had ended. Compared with the latest end
/// so far on the stream, not only the previous kernel's, so one kernel with an overlong duration
/// counts every kernel it covers.
pub fn same_stream_overlaps(trace: &Trace) -> Vec<bool> {
    #[derive(PartialEq, Eq, Hash, Clone, Copy)]
    enum Stream {
        Ids(i64, i64),
        Track(Track),
    }
    // Each kernel's stream (numbered as first seen: only equal streams need be adjacent), start, end
    // and place, decoded once.
    let mut numbers: FxHashMap<Stream, u32> = FxHashMap::default();
    let mut order: Vec<(u32, i64, i64, u32)> = trace
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let d = trace.detail(&k);
            let stream = match (d.device, d.stream) {
                (Some(d), Some(s)) => Stream::Ids(d, s),
                _ => Stream::Track(k.track),
            };
            let next = numbers.len() as u32;
            let n = *numbers.entry(stream).or_insert(next);
            (n, k.ts_ns, k.end_ns(), i as u32)
        })
        .collect();
    order.sort_unstable();
    let mut out = vec![false; order.len()];
    let mut prev: Option<(u32, i64)> = None;
    for (s, ts, end, i) in order {
        match prev {
            Some((ps, latest)) if ps == s => {
                out[i as usize] = ts < latest;
                prev = Some((s, latest.max(end)));
            }
            _ => prev = Some((s, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_step_pattern() {
        let p = StepPattern::profiler_step();
        assert!(p.is_match("ProfilerStep#12"));
        assert!(!p.is_match("ProfilerStep#"));
        assert!(!p.is_match("ProfilerStep#12 x"));
        assert!(!p.is_match("## ProfilerStep#12"));
    }

    #[test]
    fn every_built_in_profile_compiles_and_matches_its_marker() {
        for (name, p) in PROFILES {
            if let Builtin::Names(p) = p {
                assert!(compile(p, &[DETAIL]).is_ok(), "{name}");
            }
        }
        let b = StepPattern::builtin();
        assert_eq!(b.profiles.len(), PROFILES.len());
        for marker in [
            "kl1.step#3 phase=prefill rows=512",
            "kl1.step#4 phase=decode rows=8 requests=8",
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            "execute_context_1(512)_generation_31(31)",
            "step[DECODE bs=16]",
            "step[EXTEND bs=2 toks=300]",
            "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]",
            "step[TARGET_VERIFY bs=2 g_sq=6 g_sqsq=18 g_sqsk=90 g_sk=30]",
            "[Executor] _forward_step 12: 2 ctx reqs, 30 gen reqs",
            "_forward_step: 0 ctx reqs, 8 gen reqs",
            "vllm/v1/worker/gpu_model_runner.py(3380): execute_model",
            "sglang/srt/model_executor/model_runner.py(1505): forward",
            "nn.Module: LlamaForCausalLM_0",
            "ProfilerStep#7",
        ] {
            assert!(b.is_match(marker), "{marker}");
        }
        for not in [
            "step[DECODE bs=16] x",
            "draft step[DECODE bs=32]",
            "execute_context_1(512)_generation_31",
            "vllm/v1/worker/gpu_model_runner.py(3380): _dummy_run",
        ] {
            assert!(!b.is_match(not), "{not}");
        }
    }

    #[test]
    fn bad_patterns_name_themselves() {
        let e = StepPattern::new("step[").unwrap_err().to_string();
        assert!(e.starts_with("step pattern `step[`:"), "{e}");
        let e = StepPattern::new("(?P<batch>\\d+)").unwrap_err().to_string();
        assert!(e.contains("unknown group `batch`"), "{e}");
    }
}
