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
use crate::model::{GpuOp, IdValue, Span, Sym, Trace, Track};
use crate::profiles::{PyFunction, PyRole};
use crate::tokens::TokenSource;
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};

/// The default step marker: `ProfilerStep#N`, N captured as `step`.
pub const PROFILER_STEP: &str = r"ProfilerStep#(?P<step>\d+)";

/// The KL1 marker: `kl1.step#N phase=decode|prefill rows=R [requests=Q]` (`requests` may be left
/// out, as on prefill markers). `rows` are the step's query tokens.
pub const KL1_STEP: &str = r"kl1\.step#(?P<step>\d+) phase=(?P<phase>decode|prefill) rows=(?P<tokens>(?P<rows>\d+))(?: requests=(?P<requests>\d+))?";

/// TraceLens-style serving markers, which vLLM itself writes with its profiler's
/// `detailed_trace_annotation` (and TraceLens's patched vLLM/SGLang servers always):
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

/// vLLM's own step annotation (`Worker.annotate_profile` around the model runner's `execute_model`,
/// written whenever its torch profiler runs): `execute_context_<R>(<T>)_generation_<R>(<T>)`, requests
/// and scheduled (query) tokens of the context (prefill, chunked prefill included) and generation
/// (decode) requests.
pub const VLLM_STEP: &str = concat!(
    r"execute_context_(?P<prefill_requests>\d+)\((?P<prefill_query_tokens>\d+)\)",
    r"_generation_(?P<decode_requests>\d+)\((?P<decode_query_tokens>\d+)\)",
);

/// SGLang's per-forward span (`ModelRunner.forward`, `build_step_span_name`): `step[DECODE bs=N]`,
/// `step[EXTEND bs=N toks=T]` and the other forward modes, with the detailed annotations' `key=value`
/// counts after them (`c=`, `g=` requests, `c_sq`, `c_sk`, `c_sqsq`, `c_sqsk` and the same with `g_`).
/// `bs` is the requests (and `rows`), `toks` the extend tokens. A draft model's forward
/// (`draft step[…]`) is not a step of the served model.
pub const SGLANG_STEP: &str = r"step\[(?P<phase>[A-Z][A-Z0-9_]*) bs=(?P<requests>(?P<rows>\d+))(?: toks=(?P<tokens>\d+))?(?P<detail>(?: [a-z][a-z_]*=\d+)*)\]";

/// TensorRT-LLM's executor step (an NVTX range of `PyExecutor._forward_step`, in native captures):
/// `[Executor] _forward_step N: C ctx reqs, G gen reqs` (older releases without `[Executor] ` or N).
pub const TRTLLM_STEP: &str = r"(?:\[Executor\] )?_forward_step(?: (?P<step>\d+))?: (?P<prefill_requests>\d+) ctx reqs, (?P<decode_requests>\d+) gen reqs";

/// How a built-in profile finds its markers.
#[derive(Debug, Clone, Copy)]
pub enum Builtin {
    /// `user_annotation` and `cpu_op` names (NVTX/roctx ranges of native captures too) matched whole
    /// by a regex whose groups set the step's fields.
    Names(&'static str),
    /// A server's step functions among the `python_function` events ([`crate::profiles`]).
    Python(&'static [PyFunction]),
    /// Each forward of a whole model (`nn.Module: …ForCausalLM`), and each CUDA/HIP-graph replay
    /// outside them (a graph replay does not call the module).
    ModelForward,
    /// With no marker at all: each CUDA/HIP-graph replay (`cudaGraphLaunch`, `hipGraphLaunch`).
    GraphReplays,
}

/// The built-in step profiles, in the order they are tried: the first that finds a marker in a
/// trace is the one used. Serving markers with token counts come first, then the servers' Python
/// step functions, then `ProfilerStep#N` (which in a serving trace wraps whole profiler iterations
/// rather than engine steps), then model forwards and graph replays.
pub const PROFILES: &[(&str, Builtin)] = &[
    ("kl1", Builtin::Names(KL1_STEP)),
    ("tracelens", Builtin::Names(TRACELENS_STEP)),
    ("vllm", Builtin::Names(VLLM_STEP)),
    ("sglang", Builtin::Names(SGLANG_STEP)),
    ("trtllm", Builtin::Names(TRTLLM_STEP)),
    (
        "vllm-python",
        Builtin::Python(crate::profiles::VLLM_FUNCTIONS),
    ),
    (
        "sglang-python",
        Builtin::Python(crate::profiles::SGLANG_FUNCTIONS),
    ),
    (
        "trtllm-python",
        Builtin::Python(crate::profiles::TRTLLM_FUNCTIONS),
    ),
    ("profiler_step", Builtin::Names(PROFILER_STEP)),
    ("model_forward", Builtin::ModelForward),
    ("graph_replays", Builtin::GraphReplays),
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

/// A group only built-in profiles use: SGLang's `key=value` counts, read by [`detail_tokens`].
const DETAIL: &str = "detail";

/// How one profile finds markers.
#[derive(Debug, Clone)]
enum Finder {
    Names(Regex),
    Python(&'static [PyFunction]),
    ModelForward,
    GraphReplays,
}

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
    /// (profile name, finder), tried in order.
    profiles: Vec<(String, Finder)>,
    /// With no marker at all, the whole GPU window is one step.
    whole_window: bool,
}

impl Default for StepPattern {
    fn default() -> Self {
        StepPattern::profiler_step()
    }
}

fn compile(pattern: &str, allowed: &[&str]) -> Result<Regex> {
    let fail = |message: String| Error::StepPattern {
        pattern: pattern.to_string(),
        message,
    };
    let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| fail(e.to_string()))?;
    for name in regex.capture_names().flatten() {
        if !GROUPS.contains(&name) && !allowed.contains(&name) {
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
            .filter_map(|(name, b)| {
                let f = match *b {
                    Builtin::Names(p) => Finder::Names(compile(p, &[DETAIL]).ok()?),
                    Builtin::Python(f) => Finder::Python(f),
                    Builtin::ModelForward => Finder::ModelForward,
                    Builtin::GraphReplays => Finder::GraphReplays,
                };
                Some((name.to_string(), f))
            })
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
            profiles: vec![("pattern".to_string(), Finder::Names(compile(pattern, &[])?))],
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

    /// Whether a name is a step marker of any of the pattern's profiles: an annotation a regex
    /// profile matches, a Python step function or a model forward of a built-in profile.
    pub fn is_match(&self, name: &str) -> bool {
        self.profiles.iter().any(|(_, f)| match f {
            Finder::Names(r) => r.is_match(name),
            Finder::Python(fs) => {
                crate::profiles::python_function(name).is_some_and(|(_, f)| fs.contains(f))
            }
            Finder::ModelForward => crate::profiles::is_model_forward(name),
            Finder::GraphReplays => false,
        })
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
            .then(|| named.iter().map(|p| p.query_tokens).sum::<Option<u64>>())
            .flatten();
        sum.or(self.unphased.and_then(|p| p.query_tokens))
    }
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
    } else if ["decode", "generation", "verify"]
        .iter()
        .any(|w| t.contains(w))
    {
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

/// One step's marker before it is a step: its CPU range on a thread, or one launch.
struct Marker {
    name: Sym,
    ts_ns: i64,
    end_ns: i64,
    track: Track,
    /// A graph replay: the step is exactly this launch's GPU work, whatever else ran meanwhile.
    launch: Option<u32>,
}

impl Marker {
    fn of(s: &Span) -> Marker {
        Marker {
            name: s.name,
            ts_ns: s.ts_ns,
            end_ns: s.end_ns(),
            track: s.track,
            launch: None,
        }
    }
}

/// The fields a marker's name gives.
#[derive(Default)]
struct Fields {
    number: Option<u64>,
    phase: Option<String>,
    rows: Option<u64>,
    requests: Option<u64>,
    tokens: Option<StepTokens>,
    unreadable: Vec<(String, String)>,
}

/// Process of each track, interned, so a launch and a marker are compared by pid only.
struct Pids<'t> {
    trace: &'t Trace,
    ids: FxHashMap<&'t IdValue, u64>,
}

impl<'t> Pids<'t> {
    fn new(trace: &'t Trace) -> Self {
        Pids {
            trace,
            ids: FxHashMap::default(),
        }
    }
    fn of(&mut self, t: Track) -> u64 {
        let n = self.ids.len() as u64;
        *self.ids.entry(&self.trace.track(t).pid).or_insert(n)
    }
}

/// Finds the steps of a trace. O(n log n) in events.
pub fn find_steps(trace: &Trace, links: &Links, pattern: &StepPattern) -> Steps {
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let mut pids = Pids::new(trace);
    // The first profile that finds a marker.
    let found = pattern.profiles.iter().find_map(|(n, f)| {
        let m = find_markers(trace, links, f, &mut pids);
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

    let mut steps: Vec<Step> = Vec::with_capacity(markers.len());
    let mut step_pid: Vec<u64> = Vec::with_capacity(markers.len());
    for (index, m) in markers.iter().enumerate() {
        let name = trace.name(m.name);
        let f = match finder {
            Finder::Names(regex) => fields(regex, name, index, &mut warnings),
            _ => Fields::default(),
        };
        let tokens_from = if f.tokens.is_some() {
            vec![TokenSource::Marker {
                profile: profile.to_string(),
            }]
        } else {
            Vec::new()
        };
        steps.push(Step {
            index,
            name: name.to_string(),
            number: f.number,
            phase: f.phase,
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

    let overlaps = same_stream_overlaps(trace);
    let mut out = Steps {
        profile: Some(profile.to_string()),
        same_stream_overlaps: overlaps.iter().filter(|&&o| o).count() as u64,
        ..Steps::default()
    };
    let step_of = |launch: Option<u32>| launch.and_then(|l| launch_step[l as usize]);
    let mut outside_names: FxHashMap<Sym, u64> = FxHashMap::default();
    let mut outside_launches: FxHashSet<u32> = FxHashSet::default();
    for (k, &l) in links.kernel_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (None, _) => out.kernels_unlinked += 1,
            (Some(l), None) => {
                out.kernels_outside += 1;
                out.outside.count += 1;
                out.outside.sum_ns = out.outside.sum_ns.saturating_add(trace.kernels[k].dur_ns);
                *outside_names.entry(trace.kernels[k].name).or_default() += 1;
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

    // Query tokens the markers do not state: the rows of each step's GEMMs (`record_shapes`).
    if !trace.gemm_rows.is_empty() {
        let points: Vec<(u64, i64)> = trace
            .gemm_rows
            .iter()
            .map(|g| {
                let op = &trace.cpu_ops[g.cpu_op as usize];
                (pids.of(op.track), op.ts_ns)
            })
            .collect();
        let (_, op_step) = crate::correlate::stab(&spans, &points);
        crate::tokens::from_gemm_rows(trace, links, &mut steps, &op_step);
    }

    out.steps = steps;
    out.warnings = warnings;
    out.notes = notes;
    out
}

/// The note naming the profile that found the steps.
fn found_note(profile: &str, finder: &Finder, markers: &[Marker], trace: &Trace) -> String {
    let n = markers.len();
    match finder {
        Finder::Names(_) => format!("steps from the built-in `{profile}` markers ({n} found)"),
        Finder::Python(_) => {
            let mut names: Vec<&str> = markers
                .iter()
                .filter_map(|m| {
                    crate::profiles::python_function(trace.name(m.name)).map(|(_, f)| f.path)
                })
                .collect();
            names.sort_unstable();
            names.dedup();
            format!(
                "steps from the built-in `{profile}` profile: {n} calls of the server's step function ({}) in the trace's python_function events",
                names.join(", ")
            )
        }
        Finder::ModelForward => {
            let replays = markers.iter().filter(|m| m.launch.is_some()).count();
            format!(
                "no serving step marker: steps from the built-in `{profile}` profile, {} forwards of the whole model (`nn.Module: …ForCausalLM`) and {replays} CUDA/HIP-graph replays outside them",
                n - replays
            )
        }
        Finder::GraphReplays => format!(
            "no step marker: each of the {n} CUDA/HIP-graph replays is one step (built-in `{profile}` profile; in full-graph decode one replay is one engine step, under piecewise graphs a step is several replays); GPU work outside the replays is outside every step"
        ),
    }
}

/// The markers one profile finds.
fn find_markers(trace: &Trace, links: &Links, finder: &Finder, pids: &mut Pids<'_>) -> Vec<Marker> {
    match finder {
        Finder::Names(regex) => name_markers(trace, regex)
            .into_iter()
            .map(Marker::of)
            .collect(),
        Finder::Python(functions) => python_markers(trace, functions),
        Finder::ModelForward => {
            let forwards = outermost(
                trace
                    .user_annotations
                    .iter()
                    .chain(&trace.cpu_ops)
                    .chain(&trace.python_functions)
                    .filter(|s| crate::profiles::is_model_forward(trace.name(s.name))),
            );
            if forwards.is_empty() {
                return Vec::new();
            }
            let spans: Vec<(u64, i64, i64)> = forwards
                .iter()
                .map(|s| (pids.of(s.track), s.ts_ns, s.end_ns()))
                .collect();
            let replays = graph_replays(trace, links);
            let points: Vec<(u64, i64)> = replays
                .iter()
                .map(|m| (pids.of(m.track), m.ts_ns))
                .collect();
            let (_, inside) = crate::correlate::stab(&spans, &points);
            forwards
                .into_iter()
                .map(Marker::of)
                .chain(
                    replays
                        .into_iter()
                        .zip(inside)
                        .filter(|(_, s)| s.is_none())
                        .map(|(m, _)| m),
                )
                .collect()
        }
        Finder::GraphReplays => graph_replays(trace, links),
    }
}

/// Every CUDA/HIP-graph launch that produced GPU work, as a one-launch marker.
fn graph_replays(trace: &Trace, links: &Links) -> Vec<Marker> {
    trace
        .launches
        .iter()
        .enumerate()
        .filter(|&(i, l)| links.launch_gpu_ops[i] > 0 && is_graph_launch(trace.name(l.name)))
        .map(|(i, l)| Marker {
            name: l.name,
            ts_ns: l.ts_ns,
            end_ns: l.ts_ns.saturating_add(l.dur_ns),
            track: l.track,
            launch: Some(i as u32),
        })
        .collect()
}

/// Spans on each thread that no other span of the set contains (the first of equal ones), by start.
fn outermost<'t>(spans: impl Iterator<Item = &'t Span>) -> Vec<&'t Span> {
    let mut v: Vec<&Span> = spans.collect();
    v.sort_by_key(|s| (s.track, s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    let mut out: Vec<&Span> = Vec::new();
    let mut open: Option<(Track, i64)> = None;
    for s in v {
        if let Some((t, end)) = open
            && t == s.track
            && s.ts_ns < end
        {
            continue;
        }
        open = Some((s.track, s.end_ns()));
        out.push(s);
    }
    out
}

/// One step per outermost call of a step function on its thread; a tail (`sample_tokens`) that
/// follows extends the step before it on the same thread.
fn python_markers(trace: &Trace, functions: &[PyFunction]) -> Vec<Marker> {
    let role_of = |s: &Span| -> Option<PyRole> {
        crate::profiles::python_function(trace.name(s.name))
            .filter(|(_, f)| functions.contains(f))
            .map(|(_, f)| f.role)
    };
    let calls = outermost(
        trace
            .python_functions
            .iter()
            .filter(|s| role_of(s).is_some()),
    );
    let mut out: Vec<Marker> = Vec::new();
    // Per thread, the marker a tail extends.
    let mut last: FxHashMap<Track, usize> = FxHashMap::default();
    for s in calls {
        match role_of(s) {
            Some(PyRole::Step) => {
                last.insert(s.track, out.len());
                out.push(Marker::of(s));
            }
            Some(PyRole::Tail) => {
                if let Some(&i) = last.get(&s.track) {
                    out[i].end_ns = out[i].end_ns.max(s.end_ns());
                }
            }
            None => {}
        }
    }
    out
}

/// The fields a regex marker's groups give.
fn fields(regex: &Regex, name: &str, index: usize, warnings: &mut Vec<String>) -> Fields {
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
    let (mut prefill, mut decode) = (phase_tokens("prefill"), phase_tokens("decode"));
    let phase_text = text("phase");
    if let Some(d) = text(DETAIL) {
        detail_tokens(d, phase_text, requests, &mut prefill, &mut decode);
    }
    let mut phase = phase_text.map(str::to_string);
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
        Some(StepTokens {
            prefill,
            decode,
            unphased: None,
        })
    } else {
        // `requests` and `tokens` belong to the phase the `phase` group names.
        let mut t = PhaseTokens {
            requests,
            query_tokens: int("tokens"),
            ..PhaseTokens::default()
        };
        // SGLang's DECODE forward runs one token per request (speculative verification is its own
        // mode, TARGET_VERIFY, and a draft model's decode is a `draft step[…]`).
        if phase_text == Some("DECODE") && text(DETAIL).is_some() && t.query_tokens.is_none() {
            t.query_tokens = requests;
        }
        match phase.as_deref().and_then(phase_kind) {
            Some(_) if t == PhaseTokens::default() => None,
            Some(true) => Some(StepTokens {
                prefill: Some(t),
                ..StepTokens::default()
            }),
            Some(false) => Some(StepTokens {
                decode: Some(t),
                ..StepTokens::default()
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
    Fields {
        number,
        phase,
        rows,
        requests,
        tokens,
        unreadable,
    }
}

/// SGLang's detailed counts after `bs=`: `c=`/`g=` requests of a MIXED batch and `c_`/`g_` (context,
/// generation) `sq`, `sk`, `sqsq`, `sqsk`. A phase the mode names gets the batch's requests; the
/// extend tokens of `toks=` stay with the base label.
fn detail_tokens(
    detail: &str,
    mode: Option<&str>,
    bs: Option<u64>,
    prefill: &mut Option<PhaseTokens>,
    decode: &mut Option<PhaseTokens>,
) {
    let mut c = PhaseTokens::default();
    let mut g = PhaseTokens::default();
    for kv in detail.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        let (p, key) = match k.split_once('_') {
            Some(("c", key)) => (&mut c, key),
            Some(("g", key)) => (&mut g, key),
            _ => match k {
                "c" => (&mut c, "requests"),
                "g" => (&mut g, "requests"),
                _ => continue,
            },
        };
        match key {
            "requests" => p.requests = Some(v),
            "sq" => p.query_tokens = Some(v),
            "sk" => p.context_tokens = Some(v),
            "sqsq" => p.query_sq_sum = Some(v),
            "sqsk" => p.query_context_sum = Some(v),
            _ => {}
        }
    }
    let kind = mode.and_then(phase_kind);
    for (p, is_prefill, slot) in [(c, true, prefill), (g, false, decode)] {
        if p == PhaseTokens::default() {
            continue;
        }
        let mut p = p;
        if p.requests.is_none() && kind == Some(is_prefill) {
            p.requests = bs;
        }
        *slot = Some(p);
    }
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
        let mut names: FxHashMap<Sym, u64> = FxHashMap::default();
        let mut launches: FxHashSet<u32> = FxHashSet::default();
        for (k, l) in links.kernel_launch.iter().enumerate() {
            if let Some(l) = l {
                out.outside.count += 1;
                out.outside.sum_ns = out.outside.sum_ns.saturating_add(trace.kernels[k].dur_ns);
                *names.entry(trace.kernels[k].name).or_default() += 1;
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
        tokens_from: Vec::new(),
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
fn name_markers<'t>(trace: &'t Trace, regex: &Regex) -> Vec<&'t Span> {
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
