//! model-shapes: what a model's kernels read and compute, from its Hugging Face `config.json`; and the GPUs'
//! claimed peaks to compare with.
//!
//! * **Any served model** from its `config.json` ([`model_from_config`], module [`hf`]): dense (Llama,
//!   Mistral, Qwen2/3, Gemma, Phi-3), MoE (Mixtral, Qwen-MoE, DeepSeek-V2/V3/V3.2/V4 with MLA, the lightning
//!   indexer and shared experts, gpt-oss, GLM-4.5, MiniMax-M2), multimodal wrappers (their language model),
//!   GQA/MQA, tied embeddings, sliding-window and dense-first layers; weights in bf16/fp16, fp8 (per tensor
//!   or per block), int4 AWQ/GPTQ, mxfp4, nvfp4 or EXL3; per rank under tensor and expert parallelism. The
//!   result, a [`ModelShape`], holds the general weights table ([`TensorGroup`]s: shape, count per layer,
//!   format, which tokens read them, how ranks divide them), the layer kinds, the KV cache per token and the
//!   parameter counts. A config key it does not understand is an error naming it, and so is a value no model
//!   has (past its plausibility bound, [`hf::bounds`], or a zero width); the table's counts are checked where
//!   they are formed, and reading a config takes memory that does not grow with its layer count where
//!   layers repeat ([`Layers`]).
//! * **The GPU table** ([`GpuTable`], `specs/gpus.toml`): specified bandwidth, measured and claimed read
//!   bandwidths, dense peak TFLOP/s per dtype, SM count and memory to name a GPU from a trace's
//!   `deviceProperties`, every figure cited ([`Citation`], in the cited-TOML format of [`citation`] and
//!   [`toml_doc`], which other tables built on this crate share).
//! * The expected number of distinct experts a batch of rows reads under uniform routing
//!   ([`uniform_distinct_experts`]).
//!
//! What it is not: it knows nothing of traces, kernel names or timing (that is `kineto-trace`; `roofline`
//! composes the two), nothing of one deployment (the KL1 EXL3 spec and its per-kernel bytes are
//! `kl1-shapes`, built on this crate), and nothing of sampling GPUs (`gpu-monitor`). Its numbers are
//! ESTIMATES from shapes, not measurements; the GPU table's figures are labelled as the vendor's
//! specification, a measurement someone published, or a claim. `docs/formulas.md` §16 states each formula.
//!
//! ```
//! use model_shapes::{Reads, RunOptions, model_from_config};
//!
//! let config = r#"{
//!     "model_type": "llama", "torch_dtype": "bfloat16", "hidden_size": 4096,
//!     "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
//!     "num_key_value_heads": 8, "vocab_size": 128256
//! }"#;
//! let model = model_from_config(config, "config.json", &RunOptions::default())?;
//! // Per layer q, o 4096², k, v 4096·1024, gate|up 2·4096·14336, down 14336·4096, two norms of 4096;
//! // then the final norm, embedding and LM head (4096·128256 each).
//! let layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096;
//! assert_eq!(model.total_params(), 32 * layer + 4096 + 2 * 4096 * 128256);
//! // One bf16 LM head: 2 bytes a parameter.
//! assert_eq!(model.rank_bytes_of(Reads::LogitRows), (2 * 4096 * 128256) as f64);
//! # Ok::<(), model_shapes::Error>(())
//! ```
#![deny(missing_docs)]

pub mod citation;
mod error;
mod format;
pub mod gpu;
pub mod hf;
mod layers;
mod routing;
pub mod toml_doc;
pub mod weights;

pub use citation::Citation;
pub use error::Error;
pub use gpu::{BUILTIN_GPUS_TOML, BandwidthLabel, Gpu, GpuTable, PeakFlops, ReadBandwidth};
pub use hf::{QuantOverride, RunOptions, model_from_config};
pub use routing::uniform_distinct_experts;
pub use weights::{
    Attention, Indexer, LayerKind, Layers, ModelShape, Moe, RankSplit, Reads,
    SPARSE_COMPRESS_RATIO, TensorGroup, WeightFormat,
};
