//! A step's phase where no marker states it, inferred from what the serving engines do and what the
//! trace shows, and how it was found (`Step::phase_from`, beside `tokens_from`).
//!
//! The servers read (docs/doctor.md §Phases names the code): vLLM V1 replays a full CUDA graph only
//! for uniform decode batches (`CUDAGraphMode.FULL_AND_PIECEWISE`, the default since v0.11; mixed and
//! prefill batches run piecewise, with attention eager between the pieces, or eagerly beyond the
//! largest captured size); SGLang's `CudaGraphRunner.can_run` takes only `DECODE`, `TARGET_VERIFY` and
//! `IDLE` batches; TensorRT-LLM's PyTorch backend captures generation-only batches. So a step whose
//! model ran from graph replays with no attention kernel launched eagerly is a decode step. Attention
//! kernels that exist only for decode (paged attention v1/v2, FlashInfer's `BatchDecode…`, SGLang's
//! Triton decode stages, TensorRT-LLM's masked MHA) or only for prefill (FlashInfer's ragged-KV
//! prefill) say the phase where they are the step's only attention. One query token per request is
//! decode. Anything else — an eager step of unknown tokens, a decode-only attention kernel beside a
//! general one — stays unknown: a wrong phase would compare a prefill with decodes.

use super::Step;
use crate::correlate::{Links, is_graph_launch};
use crate::model::Trace;
use serde::Serialize;

/// How a step's phase was found (the `phase_from` the listings print).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PhaseSource {
    /// The step marker states it (its `phase` group, or its per-phase request counts).
    Marker {
        /// The profile whose marker it is.
        profile: String,
    },
    /// The step's model ran from graph replays, with no attention kernel launched eagerly: the
    /// servers capture full graphs for decode batches only.
    GraphReplay {
        /// The step's kernels launched by a graph launch.
        graph_kernels: u64,
        /// The step's kernels launched eagerly (a sampler, a copy kernel).
        eager_kernels: u64,
    },
    /// The step's attention kernels are all of kernels that exist for one phase only.
    AttentionKernels {
        /// The first such kernel's name fragment (`paged_attention_v2_kernel`, …).
        kernel: String,
        /// How many of the step's kernels it names.
        count: u64,
    },
    /// The step's query tokens equal its requests: one new token per request.
    OneTokenPerRequest {
        /// Query tokens = requests.
        tokens: u64,
    },
}

impl std::fmt::Display for PhaseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PhaseSource::Marker { profile } => write!(f, "marker `{profile}`"),
            PhaseSource::GraphReplay {
                graph_kernels,
                eager_kernels,
            } => write!(
                f,
                "graph replay ({graph_kernels} kernels from graphs, {eager_kernels} eager, no eager attention)"
            ),
            PhaseSource::AttentionKernels { kernel, count } => {
                write!(f, "attention kernel `{kernel}` ×{count}")
            }
            PhaseSource::OneTokenPerRequest { tokens } => {
                write!(f, "one query token per request ({tokens})")
            }
        }
    }
}

/// Name fragments of attention kernels that run for decode only: vLLM's paged attention (V0 and the
/// ROCm backends run prefill through FlashAttention), FlashInfer's decode kernel, SGLang's Triton
/// decode stages, TensorRT-LLM's masked multi-head attention for generation.
const DECODE_ATTENTION: [&str; 7] = [
    "paged_attention_v1_kernel",
    "paged_attention_v2_kernel",
    "paged_attention_ll4mi",
    "BatchDecodeWithPagedKVCache",
    "_fwd_grouped_kernel_stage1",
    "_fwd_kernel_stage1",
    "masked_multihead_attention_kernel",
];

/// Name fragments of attention kernels that run for prefill only: FlashInfer's prefill over the new
/// tokens' own keys and values (ragged, not yet in the paged cache).
const PREFILL_ATTENTION: [&str; 1] = ["BatchPrefillWithRaggedKVCache"];

/// Whether a kernel name is an attention kernel of any kind: named so (`attn`, `attention`, `fmha`,
/// `flash_fwd`, `mha_`, any case), or in the built-in kernel rules' `attention`
/// bucket (rules/default.toml: FlashAttention, FlashInfer prefill and decode, vLLM's Triton prefix
/// prefill `_fwd_kernel` and unified attention, TensorRT-LLM's XQA and FMHA, …: one home for what a
/// kernel is), or a phase-specific kernel below. A prefill kernel the rules know and these lists do not
/// makes its step's attention general, so the step is never read as decode from its decode kernels
/// alone (vLLM's ROCm backend runs `_fwd_kernel` for the prefills and `paged_attention_ll4mi` for all).
/// The built-in rules, not a user's: a phase is what the kernel does, not how a user buckets it.
fn is_attention(name: &str) -> bool {
    let rules = crate::family::Rules::builtin();
    ["attn", "attention", "fmha", "flash_fwd", "mha_"]
        .iter()
        .any(|w| contains_ignoring_case(name, w))
        || rules
            .classify(name)
            .is_some_and(|f| rules.family(f).bucket == "attention")
        || DECODE_ATTENTION
            .iter()
            .chain(&PREFILL_ATTENTION)
            .any(|w| name.contains(w))
}

/// The step profiles that find a serving engine's steps: the only ones whose steps have a phase. A
/// `ProfilerStep`, a user's pattern or the whole window may be a training iteration (forward and
/// backward, graphs replayed too), where prefill and decode mean nothing.
pub const SERVING_PROFILES: [&str; 10] = [
    "kl1",
    "tracelens",
    "vllm",
    "sglang",
    "trtllm",
    "vllm-python",
    "sglang-python",
    "trtllm-python",
    "model_forward",
    "graph_replays",
];

/// Whether the trace runs a backward pass (autograd's ops, backward kernels): training, not serving.
fn trains(trace: &Trace) -> bool {
    trace.cpu_ops.iter().any(|o| {
        let n = trace.name(o.name);
        n.starts_with("autograd::") || n.contains("Backward")
    }) || trace
        .kernels
        .iter()
        .any(|k| contains_ignoring_case(trace.name(k.name), "backward"))
}

/// Whether `name` contains `word` (lowercase ASCII) in any ASCII case: as
/// `name.to_ascii_lowercase().contains(word)`, without a copy of every kernel's name.
fn contains_ignoring_case(name: &str, word: &str) -> bool {
    name.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// Fills the phase of every step whose marker does not state it (a phase inferred before is
/// inferred again: the tokens a graph capture gives may decide it now), with `phase_from` — in a
/// serving trace only (`profile` one of [`SERVING_PROFILES`], and no backward pass in the trace).
pub fn infer_phases(trace: &Trace, links: &Links, steps: &mut [Step], profile: Option<&str>) {
    let serving = profile.is_some_and(|p| SERVING_PROFILES.contains(&p)) && !trains(trace);
    if !serving {
        return;
    }
    let mut attention = vec![None; trace.distinct_names()];
    for st in steps {
        if matches!(st.phase_from, Some(PhaseSource::Marker { .. })) {
            continue;
        }
        // A marker may state a phase without the profile naming it (kept as the marker's).
        if st.phase.is_some() && st.phase_from.is_none() {
            continue;
        }
        let (phase, from) = match infer(trace, links, st, &mut attention) {
            Some((p, f)) => (Some(p.to_string()), Some(f)),
            None => (None, None),
        };
        st.phase = phase;
        st.phase_from = from;
    }
}

/// The phase of one step from its evidence, strongest first; `None` where none decides.
fn infer(
    trace: &Trace,
    links: &Links,
    st: &Step,
    attention: &mut [Option<bool>],
) -> Option<(&'static str, PhaseSource)> {
    let (mut graph, mut eager, mut eager_attention) = (0u64, 0u64, 0u64);
    let (mut decode, mut prefill, mut general) = (Vec::new(), 0u64, 0u64);
    let (mut kernels, mut calls) = (trace.kernels.reader(), trace.launches.reader());
    for &k in &st.kernels {
        let sym = kernels.row(k as usize).name;
        let name = trace.name(sym);
        let from_graph = links.kernel_launch[k as usize]
            .is_some_and(|l| is_graph_launch(trace.name(calls.row(l as usize).name)));
        if from_graph {
            graph += 1;
        } else {
            eager += 1;
        }
        // Classified once per distinct name (the rules' regexes are the cost).
        if !*attention[sym.0 as usize].get_or_insert_with(|| is_attention(name)) {
            continue;
        }
        if !from_graph {
            eager_attention += 1;
        }
        if let Some(d) = DECODE_ATTENTION.iter().find(|w| name.contains(*w)) {
            decode.push(*d);
        } else if PREFILL_ATTENTION.iter().any(|w| name.contains(w)) {
            prefill += 1;
        } else {
            general += 1;
        }
    }
    if graph > 0 && eager_attention == 0 {
        return Some((
            "decode",
            PhaseSource::GraphReplay {
                graph_kernels: graph,
                eager_kernels: eager,
            },
        ));
    }
    if general == 0 && !decode.is_empty() && prefill > 0 {
        let kernel = format!("{} + {}", decode[0], PREFILL_ATTENTION[0]);
        let count = decode.len() as u64 + prefill;
        return Some(("mixed", PhaseSource::AttentionKernels { kernel, count }));
    }
    if general == 0 && !decode.is_empty() {
        let count = decode.len() as u64;
        let kernel = decode[0].to_string();
        return Some(("decode", PhaseSource::AttentionKernels { kernel, count }));
    }
    if general == 0 && prefill > 0 {
        let kernel = PREFILL_ATTENTION[0].to_string();
        return Some((
            "prefill",
            PhaseSource::AttentionKernels {
                kernel,
                count: prefill,
            },
        ));
    }
    let tokens = st.tokens.and_then(|t| t.query_tokens());
    match (tokens, st.requests) {
        (Some(t), Some(r)) if t == r && t > 0 => {
            Some(("decode", PhaseSource::OneTokenPerRequest { tokens: t }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::contains_ignoring_case;

    /// The case-blind search finds what lowercasing the name then searching finds, and nothing else.
    #[test]
    fn case_blind_search_agrees_with_lowercasing() {
        for (name, word) in [
            (
                "void at::native::elementwise_kernel_Backward<4>",
                "backward",
            ),
            ("FlashAttnFwd", "attn"),
            ("fmha_cutlassF", "fmha"),
            ("Flash_FWD_splitkv", "flash_fwd"),
            ("µs_ATTENTION", "attention"),
            ("sm90_xmma_gemm", "attn"),
            ("mha", "mha_"),
            ("", "attn"),
        ] {
            assert_eq!(
                contains_ignoring_case(name, word),
                name.to_ascii_lowercase().contains(word),
                "{name} / {word}"
            );
        }
        assert!(contains_ignoring_case("FlashAttnFwd", "attn"));
        assert!(!contains_ignoring_case("mha", "mha_"));
    }
}
