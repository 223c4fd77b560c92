//! Step patterns: the built-in profiles (one regex or finder each, tried in order) and the user's
//! `--step-pattern` regex, with the named groups that set a step's fields.

use super::*;
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

/// An XLA step annotation: a host event carrying a `step_num` stat (JAX's
/// `jax.profiler.StepTraceAnnotation(name, step_num=N)`, TensorFlow's `tf.profiler.experimental.Trace(name,
/// step_num=N)`), which the XPlane reader names `NAME step_num=N`.
pub const XLA_STEP: &str = r".+ step_num=(?P<step>\d+)";

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
    ("xla_step", Builtin::Names(XLA_STEP)),
    ("model_forward", Builtin::ModelForward),
    ("graph_replays", Builtin::GraphReplays),
];

/// Named groups a step pattern may use. Integers except `phase`.
pub(super) const GROUPS: &[&str] = &[
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
pub(super) const DETAIL: &str = "detail";

/// How one profile finds markers.
#[derive(Debug, Clone)]
pub(super) enum Finder {
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
    pub(super) source: String,
    /// (profile name, finder), tried in order.
    pub(super) profiles: Vec<(String, Finder)>,
    /// With no marker at all, the whole GPU window is one step.
    pub(super) whole_window: bool,
}

impl Default for StepPattern {
    fn default() -> Self {
        StepPattern::profiler_step()
    }
}

pub(super) fn compile(pattern: &str, allowed: &[&str]) -> Result<Regex> {
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
    /// steps and falls back to the whole window where it finds none; neither is `None`, the built-in
    /// profiles ([`StepPattern::builtin`]), which cannot fail and which a caller compiles when it
    /// first needs them.
    pub fn from_options(pattern: Option<&str>, whole_trace: bool) -> Result<Option<StepPattern>> {
        Ok(match pattern {
            _ if whole_trace => Some(StepPattern::whole_trace()),
            Some(p) => Some(StepPattern::new(p)?.or_whole_window()),
            None => None,
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
