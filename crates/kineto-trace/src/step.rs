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

use crate::correlate::Links;
use crate::error::{Error, Result};
use crate::interval::union;
use crate::model::{GpuOp, IdValue, Span, Sym, Trace, Track};
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};

/// The default step marker: `ProfilerStep#N`, N captured as `step`.
pub const PROFILER_STEP: &str = r"ProfilerStep#(?P<step>\d+)";

/// The KL1 marker: `kl1.step#N phase=decode|prefill rows=R [requests=Q]` (`requests` may be left
/// out, as on prefill markers). `rows` are the step's query tokens.
pub const KL1_STEP: &str = r"kl1\.step#(?P<step>\d+) phase=(?P<phase>decode|prefill) rows=(?P<tokens>(?P<rows>\d+))(?: requests=(?P<requests>\d+))?";

/// TraceLens-style serving markers of patched vLLM/SGLang servers:
/// `execute_<N>_context_<R>(sq<Σq>sk<Σkv>sqsq<Σq²>sqsk<Σq·kv>)_generation_<R>(…)`, N the step's
/// scheduled tokens, then per phase (context = prefill, generation = decode) the requests, Σ query
/// tokens, Σ KV (context) tokens, Σ query² and Σ query·KV over the phase's requests.
pub const TRACELENS_STEP: &str = concat!(
    r"execute_(?P<rows>\d+)",
    r"_context_(?P<prefill_requests>\d+)\(sq(?P<prefill_query_tokens>\d+)sk(?P<prefill_context_tokens>\d+)",
    r"sqsq(?P<prefill_query_sq_sum>\d+)sqsk(?P<prefill_query_context_sum>\d+)\)",
    r"_generation_(?P<decode_requests>\d+)\(sq(?P<decode_query_tokens>\d+)sk(?P<decode_context_tokens>\d+)",
    r"sqsq(?P<decode_query_sq_sum>\d+)sqsk(?P<decode_query_context_sum>\d+)\)",
);

/// SGLang's scheduler markers: `step[DECODE bs=N]`, `step[EXTEND bs=N toks=T]` (and other
/// forward modes): `bs` requests (also the step's `rows`), `toks` query tokens.
pub const SGLANG_STEP: &str =
    r"step\[(?P<phase>[A-Z_]+) bs=(?P<requests>(?P<rows>\d+))(?: toks=(?P<tokens>\d+))?\]";

/// The built-in step profiles, in the order they are tried: the first that finds a marker in a
/// trace is the one used. Serving markers come before `ProfilerStep#N`, which in a serving trace
/// wraps whole profiler iterations rather than engine steps.
pub const PROFILES: &[(&str, &str)] = &[
    ("kl1", KL1_STEP),
    ("tracelens", TRACELENS_STEP),
    ("sglang", SGLANG_STEP),
    ("profiler_step", PROFILER_STEP),
];

/// Named groups a step pattern may use. Integers except `phase`.
const GROUPS: &[&str] = &[
    "phase",
    "rows",
    "requests",
    "step",
    "tokens",
    "prefill_requests",
    "prefill_query_tokens",
    "prefill_context_tokens",
    "prefill_query_sq_sum",
    "prefill_query_context_sum",
    "decode_requests",
    "decode_query_tokens",
    "decode_context_tokens",
    "decode_query_sq_sum",
    "decode_query_context_sum",
];

/// Which annotation names mark steps: one regex (or, for the built-in profiles, a list tried in
/// order) matched against the *whole* name, whose named groups give the step's fields — `phase`
/// (text); `rows`, `requests`, `step`, `tokens` and the per-phase token groups (integers; see
/// [`StepTokens`]).
///
/// ```
/// use kineto_trace::step::StepPattern;
/// // SGLang-style markers.
/// let p = StepPattern::new(r"step\[(?P<phase>[A-Z]+) bs=(?P<rows>\d+)\]").unwrap();
/// assert!(p.is_match("step[DECODE bs=32]") && !p.is_match("xstep[DECODE bs=32]"));
/// ```
#[derive(Debug, Clone)]
pub struct StepPattern {
    source: String,
    /// (profile name, regex), tried in order.
    profiles: Vec<(String, Regex)>,
    /// With no marker at all, the whole GPU window is one step.
    whole_window: bool,
}

impl Default for StepPattern {
    fn default() -> Self {
        StepPattern::profiler_step()
    }
}

fn compile(pattern: &str) -> Result<Regex> {
    let fail = |message: String| Error::StepPattern {
        pattern: pattern.to_string(),
        message,
    };
    let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| fail(e.to_string()))?;
    for name in regex.capture_names().flatten() {
        if !GROUPS.contains(&name) {
            return Err(fail(format!(
                "unknown group `{name}`: the groups that set step fields are {}",
                GROUPS.join(", ")
            )));
        }
    }
    Ok(regex)
}

impl StepPattern {
    /// `ProfilerStep#N`.
    pub fn profiler_step() -> StepPattern {
        // A constant pattern, tested below; failing here would be a build defect.
        #[allow(clippy::expect_used)]
        StepPattern::new(PROFILER_STEP).expect("the ProfilerStep pattern compiles")
    }

    /// The built-in profiles ([`PROFILES`]), the first that finds a marker wins; with no marker at
    /// all the whole GPU window is one step.
    pub fn builtin() -> StepPattern {
        let profiles = PROFILES
            .iter()
            .filter_map(|(name, p)| compile(p).ok().map(|r| (name.to_string(), r)))
            .collect();
        StepPattern {
            source: PROFILES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join("|"),
            profiles,
            whole_window: true,
        }
    }

    /// A pattern from a regex. It must match the whole annotation name (it is anchored here), and
    /// its named groups must be among the step fields (all integers but `phase`).
    pub fn new(pattern: &str) -> Result<StepPattern> {
        Ok(StepPattern {
            source: pattern.to_string(),
            profiles: vec![("pattern".to_string(), compile(pattern)?)],
            whole_window: false,
        })
    }

    /// The pattern the listings' options ask for: `whole_trace` ignores markers; a given regex finds
    /// steps and falls back to the whole window where it finds none; neither is [`StepPattern::builtin`].
    pub fn from_options(pattern: Option<&str>, whole_trace: bool) -> Result<StepPattern> {
        Ok(match pattern {
            _ if whole_trace => StepPattern::whole_trace(),
            Some(p) => StepPattern::new(p)?.or_whole_window(),
            None => StepPattern::builtin(),
        })
    }

    /// No markers at all: every trace is one step over its whole GPU window.
    pub fn whole_trace() -> StepPattern {
        StepPattern {
            source: String::new(),
            profiles: Vec::new(),
            whole_window: true,
        }
    }

    /// The same pattern, but a trace where it finds no marker becomes one step over its whole GPU
    /// window (with a note) instead of none.
    pub fn or_whole_window(mut self) -> StepPattern {
        self.whole_window = true;
        self
    }

    /// The pattern as given (the built-in profiles' names, joined by `|`).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether a name is a step marker of any of the pattern's profiles.
    pub fn is_match(&self, name: &str) -> bool {
        self.profiles.iter().any(|(_, r)| r.is_match(name))
    }
}

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

/// Per-phase token counts of a step (see [`PhaseTokens`]); a phase the marker does not mention is
/// `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepTokens {
    /// The prefill (context, extend) phase.
    pub prefill: Option<PhaseTokens>,
    /// The decode (generation) phase.
    pub decode: Option<PhaseTokens>,
}

/// Which phase a `phase` group's text names: prefill (`prefill`, `extend`, `context`), decode
/// (`decode`, `generation`), or neither (`mixed`, `idle`, …).
fn phase_kind(text: &str) -> Option<bool> {
    let t = text.to_ascii_lowercase();
    if ["prefill", "extend", "context"]
        .iter()
        .any(|w| t.contains(w))
    {
        Some(true)
    } else if ["decode", "generation"].iter().any(|w| t.contains(w)) {
        Some(false)
    } else {
        None
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
    /// The `phase` group, as written (`DECODE`, `prefill`, …).
    pub phase: Option<String>,
    /// The `rows` group (batch rows / tokens).
    pub rows: Option<u64>,
    /// The `requests` group, else the sum of the per-phase requests.
    pub requests: Option<u64>,
    /// Per-phase token counts, when the marker states any.
    pub tokens: Option<StepTokens>,
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
    /// Kernels with a launch that is in no step (before the first, between steps, another process).
    pub kernels_outside: u64,
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
    // The first profile that finds a marker.
    let (profile, regex, markers) = pattern
        .profiles
        .iter()
        .map(|(n, r)| (n.as_str(), Some(r), markers(trace, r)))
        .find(|(_, _, m)| !m.is_empty())
        .unwrap_or(("", None, Vec::new()));
    let Some(regex) = regex else {
        return no_markers(trace, links, pattern);
    };
    if pattern.profiles.len() > 1 {
        notes.push(format!(
            "steps from the built-in `{profile}` markers ({} found)",
            markers.len()
        ));
    }

    // Process of each track, interned, so a launch and a marker are compared by pid only.
    let mut pids: FxHashMap<&IdValue, u64> = FxHashMap::default();
    let mut pid_of = |t: Track| -> u64 {
        let n = pids.len() as u64;
        *pids.entry(&trace.track(t).pid).or_insert(n)
    };

    let mut steps: Vec<Step> = Vec::with_capacity(markers.len());
    let mut step_pid: Vec<u64> = Vec::with_capacity(markers.len());
    for (index, m) in markers.iter().enumerate() {
        let name = trace.name(m.name);
        let caps = regex.captures(name);
        let text = |g: &str| caps.as_ref().and_then(|c| c.name(g)).map(|m| m.as_str());
        let mut unreadable: Vec<(String, String)> = Vec::new();
        let mut int = |g: &str| -> Option<u64> {
            let t = text(g)?;
            let v = t.parse().ok();
            if v.is_none() {
                // All digits, yet no u64: an integer out of range, not a missing one.
                let why = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                    "is out of range (more than 18446744073709551615)"
                } else {
                    "is not an integer"
                };
                if warnings.len() < 20 {
                    warnings.push(format!("step {index} `{name}`: group `{g}` = `{t}` {why}"));
                }
                unreadable.push((g.to_owned(), format!("`{t}` {why}")));
            }
            v
        };
        let (number, rows, requests) = (int("step"), int("rows"), int("requests"));
        let mut phase_tokens = |ph: &str| -> Option<PhaseTokens> {
            let t = PhaseTokens {
                requests: int(&format!("{ph}_requests")),
                query_tokens: int(&format!("{ph}_query_tokens")),
                context_tokens: int(&format!("{ph}_context_tokens")),
                query_sq_sum: int(&format!("{ph}_query_sq_sum")),
                query_context_sum: int(&format!("{ph}_query_context_sum")),
            };
            (t != PhaseTokens::default()).then_some(t)
        };
        let (prefill, decode) = (phase_tokens("prefill"), phase_tokens("decode"));
        let mut phase = text("phase").map(str::to_string);
        let tokens = if prefill.is_some() || decode.is_some() {
            // Explicit per-phase groups; the phase is what has requests.
            if phase.is_none() {
                let has = |p: Option<PhaseTokens>| p.and_then(|p| p.requests).unwrap_or(0) > 0;
                phase = match (has(prefill), has(decode)) {
                    (true, true) => Some("mixed".to_string()),
                    (true, false) => Some("prefill".to_string()),
                    (false, true) => Some("decode".to_string()),
                    (false, false) => None,
                };
            }
            Some(StepTokens { prefill, decode })
        } else {
            // `requests` and `tokens` belong to the phase the `phase` group names.
            let t = PhaseTokens {
                requests,
                query_tokens: int("tokens"),
                ..PhaseTokens::default()
            };
            match phase.as_deref().and_then(phase_kind) {
                Some(_) if t == PhaseTokens::default() => None,
                Some(true) => Some(StepTokens {
                    prefill: Some(t),
                    decode: None,
                }),
                Some(false) => Some(StepTokens {
                    prefill: None,
                    decode: Some(t),
                }),
                None => None,
            }
        };
        let requests = requests.or_else(|| {
            let r = |p: Option<PhaseTokens>| p.and_then(|p| p.requests);
            match (r(prefill), r(decode)) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            }
        });
        steps.push(Step {
            index,
            name: name.to_string(),
            number,
            phase,
            rows,
            requests,
            tokens,
            unreadable,
            track: m.track,
            cpu_lo_ns: m.ts_ns,
            cpu_hi_ns: m.end_ns(),
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
        step_pid.push(pid_of(m.track));
    }

    // The step of each launch: the innermost marker of the launch's process containing its start.
    let spans: Vec<(u64, i64, i64)> = steps
        .iter()
        .zip(&step_pid)
        .map(|(s, &p)| (p, s.cpu_lo_ns, s.cpu_hi_ns))
        .collect();
    let points: Vec<(u64, i64)> = trace
        .launches
        .iter()
        .map(|l| (pid_of(l.track), l.ts_ns))
        .collect();
    let (_, launch_step) = crate::correlate::stab(&spans, &points);

    let overlaps = same_stream_overlaps(trace);
    let mut out = Steps {
        same_stream_overlaps: overlaps.iter().filter(|&&o| o).count() as u64,
        ..Steps::default()
    };
    let step_of = |launch: Option<u32>| launch.and_then(|l| launch_step[l as usize]);
    for (k, &l) in links.kernel_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (None, _) => out.kernels_unlinked += 1,
            (Some(_), None) => out.kernels_outside += 1,
            (Some(_), Some(s)) => {
                let st = &mut steps[s as usize];
                st.kernels.push(k as u32);
                st.same_stream_overlaps += u64::from(overlaps[k]);
            }
        }
    }
    for (m, &l) in links.memcpy_launch.iter().enumerate() {
        if let Some(s) = step_of(l) {
            steps[s as usize].memcpys.push(m as u32);
        }
    }
    for (m, &l) in links.memset_launch.iter().enumerate() {
        if let Some(s) = step_of(l) {
            steps[s as usize].memsets.push(m as u32);
        }
    }

    for st in &mut steps {
        let ks = &trace.kernels;
        st.kernels
            .sort_unstable_by_key(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns(), i));
        st.memcpys
            .sort_unstable_by_key(|&i| (trace.memcpys[i as usize].ts_ns, i));
        st.memsets
            .sort_unstable_by_key(|&i| (trace.memsets[i as usize].ts_ns, i));
        st.lo_ns = st.kernels.iter().map(|&i| ks[i as usize].ts_ns).min();
        st.hi_ns = st.kernels.iter().map(|&i| ks[i as usize].end_ns()).max();
        st.kernel_sum_ns = st
            .kernels
            .iter()
            .fold(0i64, |acc, &i| acc.saturating_add(ks[i as usize].dur_ns));
        st.kernel_union_ns = union(
            st.kernels
                .iter()
                .map(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns())),
        );
    }
    // Period: to the next step of the same process.
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
    out.steps = steps;
    out.warnings = warnings;
    out.notes = notes;
    out
}

/// The annotation names a pattern could have matched, most frequent first (for the note that says
/// a pattern found nothing).
fn frequent_annotations(trace: &Trace, n: usize) -> Vec<(String, u64)> {
    let mut by: FxHashMap<Sym, u64> = FxHashMap::default();
    for s in &trace.user_annotations {
        *by.entry(s.name).or_default() += 1;
    }
    let mut v: Vec<(String, u64)> = by
        .into_iter()
        .map(|(s, c)| (trace.name(s).to_string(), c))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
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
    let mut kernels: Vec<u32> = (0..ks.len() as u32).collect();
    kernels.sort_unstable_by_key(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns(), i));
    let mut memcpys: Vec<u32> = (0..trace.memcpys.len() as u32).collect();
    memcpys.sort_unstable_by_key(|&i| (trace.memcpys[i as usize].ts_ns, i));
    let mut memsets: Vec<u32> = (0..trace.memsets.len() as u32).collect();
    memsets.sort_unstable_by_key(|&i| (trace.memsets[i as usize].ts_ns, i));
    out.steps.push(Step {
        index: 0,
        name: WHOLE_WINDOW.to_string(),
        number: None,
        phase: None,
        rows: None,
        requests: None,
        tokens: None,
        unreadable: Vec::new(),
        track: trace.launches.first().map_or(Track(0), |l| l.track),
        cpu_lo_ns: cpu_lo,
        cpu_hi_ns: cpu_hi,
        lo_ns: ks.iter().map(|k| k.ts_ns).min(),
        hi_ns: ks.iter().map(GpuOp::end_ns).max(),
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

/// The marker spans, deduplicated, in order of (start, longer first, file order).
fn markers<'t>(trace: &'t Trace, regex: &Regex) -> Vec<&'t Span> {
    let mut matches: FxHashMap<Sym, bool> = FxHashMap::default();
    let mut seen: FxHashSet<(Sym, Track, i64, i64)> = FxHashSet::default();
    let mut out: Vec<&Span> = Vec::new();
    for s in trace.user_annotations.iter().chain(&trace.cpu_ops) {
        let is = *matches
            .entry(s.name)
            .or_insert_with(|| regex.is_match(trace.name(s.name)));
        if is && seen.insert((s.name, s.track, s.ts_ns, s.dur_ns)) {
            out.push(s);
        }
    }
    // Stable: equal starts and durations keep file order.
    out.sort_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    out
}

/// Per kernel: whether it started before an earlier-starting kernel on its (device, stream) — or
/// its track, when the trace gives no device and stream — had ended. Compared with the latest end
/// so far on the stream, not only the previous kernel's, so one kernel with an overlong duration
/// counts every kernel it covers.
pub fn same_stream_overlaps(trace: &Trace) -> Vec<bool> {
    #[derive(PartialEq, Eq, Hash, PartialOrd, Ord, Clone, Copy)]
    enum Stream {
        Ids(i64, i64),
        Track(Track),
    }
    let ks = &trace.kernels;
    let stream = |i: usize| match (ks[i].device, ks[i].stream) {
        (Some(d), Some(s)) => Stream::Ids(d, s),
        _ => Stream::Track(ks[i].track),
    };
    let mut order: Vec<usize> = (0..ks.len()).collect();
    order.sort_unstable_by_key(|&i| (stream(i), ks[i].ts_ns, ks[i].end_ns(), i));
    let mut out = vec![false; ks.len()];
    let mut prev: Option<(Stream, i64)> = None;
    for i in order {
        let s = stream(i);
        match prev {
            Some((ps, end)) if ps == s => {
                out[i] = ks[i].ts_ns < end;
                prev = Some((s, end.max(ks[i].end_ns())));
            }
            _ => prev = Some((s, ks[i].end_ns())),
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
            assert!(compile(p).is_ok(), "{name}");
        }
        let b = StepPattern::builtin();
        assert_eq!(b.profiles.len(), PROFILES.len());
        for marker in [
            "kl1.step#3 phase=prefill rows=512",
            "kl1.step#4 phase=decode rows=8 requests=8",
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            "step[DECODE bs=16]",
            "step[EXTEND bs=2 toks=300]",
            "ProfilerStep#7",
        ] {
            assert!(b.is_match(marker), "{marker}");
        }
        assert!(!b.is_match("step[DECODE bs=16] x"));
    }

    #[test]
    fn bad_patterns_name_themselves() {
        let e = StepPattern::new("step[").unwrap_err().to_string();
        assert!(e.starts_with("step pattern `step[`:"), "{e}");
        let e = StepPattern::new("(?P<batch>\\d+)").unwrap_err().to_string();
        assert!(e.contains("unknown group `batch`"), "{e}");
    }
}
