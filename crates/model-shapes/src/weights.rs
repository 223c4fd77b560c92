//! A general weights table: every tensor group of a transformer, with its shape, how many there are per
//! layer and in how many layers, its storage format, how it is divided among ranks, and which tokens of
//! a step read it.
//!
//! The table is built from a Hugging Face `config.json` by [`crate::hf`]; this module only describes it
//! and counts. Byte formulas per format are in `docs/formulas.md` §16.

use std::fmt;

/// How one weight matrix is stored. Bytes of a matrix of `k` input × `n` output features are given by
/// [`WeightFormat::bytes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WeightFormat {
    /// Unquantised elements of `bytes` bytes each (bf16/fp16: 2, fp32: 4; DeepSeek-V4's int64 router
    /// tables: 8).
    Float {
        /// Bytes per element.
        bytes: u64,
        /// `bf16`, `fp16` or `fp32`.
        name: &'static str,
    },
    /// fp8 (E4M3) with one fp32 scale per tensor.
    Fp8PerTensor,
    /// fp8 (E4M3) with one fp32 scale per output feature.
    Fp8PerChannel,
    /// fp8 (E4M3) with one scale per `block_out` × `block_in` block (DeepSeek-V3: 128 × 128, fp32 scales;
    /// DeepSeek-V4: E8M0 scales of one byte, `scale_fmt: ue8m0`).
    Fp8Block {
        /// Block height along the output features.
        block_out: u64,
        /// Block width along the input features.
        block_in: u64,
        /// Bytes per scale: 4 (fp32) or 1 (E8M0).
        scale_bytes: u64,
    },
    /// Integer weights of `bits` bits in groups of `group` input features, one fp16 scale per group and
    /// output feature, and (AWQ, GPTQ) a `bits`-bit zero point per group and output feature.
    IntGroup {
        /// Bits per weight (4 for AWQ/GPTQ int4).
        bits: u64,
        /// Input features per group.
        group: u64,
        /// Whether a packed zero point is stored per group.
        zero_points: bool,
    },
    /// OCP MX fp4 (E2M1) with one E8M0 (1-byte) scale per 32 input features.
    Mxfp4,
    /// NVIDIA nvfp4 (E2M1) with one E4M3 (1-byte) scale per 16 input features and one fp32 scale per tensor.
    Nvfp4,
    /// EXL3 at `bits` bits per weight (possibly fractional for a mixed model): k·n·bits/8 + 2k + 2n.
    Exl3 {
        /// Bits per weight.
        bits: f64,
    },
}

impl WeightFormat {
    /// bf16.
    pub const BF16: WeightFormat = WeightFormat::Float {
        bytes: 2,
        name: "bf16",
    };
    /// fp16.
    pub const FP16: WeightFormat = WeightFormat::Float {
        bytes: 2,
        name: "fp16",
    };
    /// fp32.
    pub const FP32: WeightFormat = WeightFormat::Float {
        bytes: 4,
        name: "fp32",
    };

    /// Bytes of one `k` (input) × `n` (output) matrix in this format, scales included, bias excluded.
    ///
    /// Products of dimensions are taken exactly (in u128) and rounded to f64 once, so no size wraps; a
    /// block or group of 0 (which no reader accepts) counts as 1.
    pub fn bytes(&self, k: u64, n: u64) -> f64 {
        let kn = exact(k, n);
        let (k_f, n_f) = (k as f64, n as f64);
        match *self {
            WeightFormat::Float { bytes, .. } => kn * bytes as f64,
            WeightFormat::Fp8PerTensor => kn + 4.0,
            WeightFormat::Fp8PerChannel => kn + 4.0 * n_f,
            WeightFormat::Fp8Block {
                block_out,
                block_in,
                scale_bytes,
            } => {
                kn + scale_bytes as f64
                    * exact(k.div_ceil(block_in.max(1)), n.div_ceil(block_out.max(1)))
            }
            WeightFormat::IntGroup {
                bits,
                group,
                zero_points,
            } => {
                let groups = exact(k.div_ceil(group.max(1)), n);
                let zeros = if zero_points {
                    groups * bits as f64 / 8.0
                } else {
                    0.0
                };
                kn * bits as f64 / 8.0 + 2.0 * groups + zeros
            }
            WeightFormat::Mxfp4 => kn / 2.0 + exact(k.div_ceil(32), n),
            WeightFormat::Nvfp4 => kn / 2.0 + exact(k.div_ceil(16), n) + 4.0,
            WeightFormat::Exl3 { bits } => kn * bits / 8.0 + 2.0 * (k_f + n_f),
        }
    }

    /// Whether this is a quantised format (not plain floats).
    pub fn is_quantized(&self) -> bool {
        !matches!(self, WeightFormat::Float { .. })
    }
}

/// a·b, exact, rounded to f64 once: what `(a * b) as f64` gives whenever that does not wrap.
fn exact(a: u64, b: u64) -> f64 {
    (u128::from(a) * u128::from(b)) as f64
}

impl fmt::Display for WeightFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightFormat::Float { name, .. } => f.write_str(name),
            WeightFormat::Fp8PerTensor => f.write_str("fp8"),
            WeightFormat::Fp8PerChannel => f.write_str("fp8-channel"),
            WeightFormat::Fp8Block {
                block_out,
                block_in,
                scale_bytes,
            } => write!(
                f,
                "fp8-block{block_out}x{block_in}{}",
                if *scale_bytes == 1 { "-e8m0" } else { "" }
            ),
            WeightFormat::IntGroup {
                bits,
                group,
                zero_points,
            } => write!(
                f,
                "int{bits}-g{group}{}",
                if *zero_points { "-zp" } else { "" }
            ),
            WeightFormat::Mxfp4 => f.write_str("mxfp4"),
            WeightFormat::Nvfp4 => f.write_str("nvfp4"),
            WeightFormat::Exl3 { bits } => write!(f, "exl3-{bits}bpw"),
        }
    }
}

/// Which tokens of a step read a tensor group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reads {
    /// Read once per step whatever the number of tokens (attention projections, dense MLPs, shared
    /// experts, norms, routers).
    EveryStep,
    /// Routed experts: a step reads the distinct experts its tokens pick.
    RoutedExperts,
    /// The LM head: read once per step if any row makes logits.
    LogitRows,
    /// The token embedding: a gather of one row per token.
    TokenRows,
}

impl Reads {
    /// A short name: `step`, `routed`, `logits`, `tokens`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reads::EveryStep => "step",
            Reads::RoutedExperts => "routed",
            Reads::LogitRows => "logits",
            Reads::TokenRows => "tokens",
        }
    }
}

/// How a tensor group is divided among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankSplit {
    /// Output features divided among the tensor-parallel ranks.
    Column,
    /// Input features divided among the tensor-parallel ranks.
    Row,
    /// Every rank holds all of it.
    Replicated,
}

/// One group of identical tensors: e.g. `mlp.experts.gate_up_proj` of 24 layers × 32 experts.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorGroup {
    /// The group's name, after the Hugging Face module (`self_attn.q_proj`, `mlp.experts.down_proj`).
    pub name: String,
    /// Input features of one tensor (a vector such as a norm has 1).
    pub in_features: u64,
    /// Output features of one tensor.
    pub out_features: u64,
    /// Whether each tensor has a bias of `out_features` (stored in the activation dtype).
    pub bias: bool,
    /// Tensors per layer (routed experts: the number of experts).
    pub per_layer: u64,
    /// Layers holding the group (1 for the embedding, LM head and final norm).
    pub layers: u64,
    /// Storage format.
    pub format: WeightFormat,
    /// Bytes per bias element.
    pub bias_bytes: u64,
    /// Which tokens read it.
    pub reads: Reads,
    /// How it is divided among tensor-parallel ranks.
    pub split: RankSplit,
    /// Input features of one tensor on one rank.
    pub rank_in: u64,
    /// Output features of one tensor on one rank.
    pub rank_out: u64,
    /// Tensors per layer on one rank (routed experts under expert parallelism: experts / ep).
    pub rank_per_layer: u64,
}

impl TensorGroup {
    /// Parameters of the whole group on all ranks: per_layer · layers · (in·out + out if bias).
    ///
    /// Taken with checked arithmetic; `None` past u64. A table from [`crate::model_from_config`] or
    /// `kl1-shapes`' spec never is (they refuse a model past 2^53 parameters): [`Self::params`] is this,
    /// for them.
    pub fn checked_params(&self) -> Option<u64> {
        let bias = if self.bias { self.out_features } else { 0 };
        let tensors = self.per_layer.checked_mul(self.layers)?;
        self.in_features
            .checked_mul(self.out_features)?
            .checked_add(bias)?
            .checked_mul(tensors)
    }

    /// [`Self::checked_params`], saturating at u64::MAX (only a hand-built table past 2^64 gets there).
    pub fn params(&self) -> u64 {
        self.checked_params().unwrap_or(u64::MAX)
    }

    /// Parameters of the group's matrices alone (no biases): per_layer · layers · in·out, saturating at
    /// u64::MAX as [`Self::params`].
    pub fn matrix_params(&self) -> u64 {
        self.per_layer
            .checked_mul(self.layers)
            .and_then(|t| t.checked_mul(self.in_features))
            .and_then(|t| t.checked_mul(self.out_features))
            .unwrap_or(u64::MAX)
    }

    /// Bytes of one tensor as one rank holds it: format bytes of rank_in × rank_out, plus the bias.
    pub fn rank_tensor_bytes(&self) -> f64 {
        let bias = if self.bias {
            exact(self.rank_out, self.bias_bytes)
        } else {
            0.0
        };
        self.format.bytes(self.rank_in, self.rank_out) + bias
    }

    /// Bytes one rank holds of the group: rank_per_layer · layers · [`Self::rank_tensor_bytes`].
    pub fn rank_bytes(&self) -> f64 {
        exact(self.rank_per_layer, self.layers) * self.rank_tensor_bytes()
    }
}

/// Attention as the KV cache and the attention FLOPs see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Attention {
    /// Multi-head, grouped-query or multi-query attention.
    Gqa {
        /// Query heads.
        heads: u64,
        /// Key/value heads (= heads: MHA; 1: MQA).
        kv_heads: u64,
        /// Width of one query/key head.
        head_dim: u64,
        /// Width of one value head.
        v_head_dim: u64,
    },
    /// DeepSeek multi-head latent attention: the cache holds one compressed latent of `kv_lora_rank` plus
    /// the shared rotary key of `qk_rope_head_dim` per token and layer.
    Mla {
        /// Query heads.
        heads: u64,
        /// Latent width of the KV compression.
        kv_lora_rank: u64,
        /// Non-rotary part of a query/key head.
        qk_nope_head_dim: u64,
        /// Rotary part of a query/key head.
        qk_rope_head_dim: u64,
        /// Width of one value head.
        v_head_dim: u64,
        /// DeepSeek-V3.2's lightning indexer, when each query attends only to the keys it picks.
        indexer: Option<Indexer>,
    },
    /// DeepSeek-V4 hybrid attention: one key/value head of `head_dim` shared by keys and values (the cache
    /// holds one vector per token), attended over a sliding window in every layer; a layer with a
    /// compression ratio r ([`LayerKind::compress_ratio`]) also keeps one compressed entry per r tokens:
    /// r = 4 (compressed sparse attention) picks `indexer.topk` entries per query with the lightning indexer
    /// (one index key per 4 tokens); any other r (heavily compressed) reads all.
    Hybrid {
        /// Query heads.
        heads: u64,
        /// Width of the shared key/value vector.
        head_dim: u64,
        /// The lightning indexer of the sparse layers.
        indexer: Indexer,
    },
}

/// DeepSeek's lightning indexer (V3.2 over MLA's keys, V4 over the compressed entries): it keeps one key of
/// `dim` per entry, scores every (query, entry) pair with `heads` heads, and each query attends to the
/// `topk` entries it scores highest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexer {
    /// Indexer query heads.
    pub heads: u64,
    /// Width of one indexer key.
    pub dim: u64,
    /// Entries a query attends to at most.
    pub topk: u64,
}

impl Attention {
    /// Query heads.
    pub fn heads(&self) -> u64 {
        match *self {
            Attention::Gqa { heads, .. }
            | Attention::Mla { heads, .. }
            | Attention::Hybrid { heads, .. } => heads,
        }
    }
}

/// The compression ratio of DeepSeek-V4's compressed sparse attention: its layers select entries with the
/// indexer; layers with other ratios read every compressed entry.
pub const SPARSE_COMPRESS_RATIO: u64 = 4;

/// The routed-expert part of a mixture-of-experts model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub experts: u64,
    /// Experts each token picks.
    pub top_k: u64,
    /// Shared experts (always read), each `shared_intermediate` wide in total.
    pub shared_experts: u64,
    /// One routed expert's intermediate width.
    pub expert_intermediate: u64,
    /// MoE layers.
    pub moe_layers: u64,
}

/// One decoder layer's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerKind {
    /// The sliding window (keys a query attends to at most), if the layer uses one.
    pub sliding_window: Option<u64>,
    /// DeepSeek-V4: the layer also keeps one compressed KV entry per this many tokens (with
    /// [`Attention::Hybrid`] only).
    pub compress_ratio: Option<u64>,
    /// Whether the layer's MLP is a mixture of experts.
    pub moe: bool,
}

/// A model as the estimates need it: dimensions, attention, experts, layer kinds, and the weights table,
/// per rank for the given tensor- and expert-parallel sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelShape {
    /// `model_type` from the config.
    pub model_type: String,
    /// Hidden width.
    pub hidden: u64,
    /// Vocabulary.
    pub vocab: u64,
    /// Attention.
    pub attention: Attention,
    /// Each decoder layer's kind, in order (stored as repeated blocks: see [`Layers`]).
    pub layers: Layers,
    /// Routed experts, if any.
    pub moe: Option<Moe>,
    /// Bytes per activation element (`torch_dtype`).
    pub activation_bytes: u64,
    /// The activation dtype's name (`bf16`, `fp16`, `fp32`): the dtype of the compute.
    pub activation_dtype: &'static str,
    /// Whether the quantised weights are multiplied in fp8 (fp8 formats) rather than the activation dtype.
    pub fp8_compute: bool,
    /// Whether the LM head is the embedding (`tie_word_embeddings`): its parameters are counted once.
    pub tied_embeddings: bool,
    /// Tensor-parallel ranks.
    pub tp: u64,
    /// Expert-parallel ranks (1: experts are divided like dense MLPs among the tensor-parallel ranks).
    pub ep: u64,
    /// The weights table.
    pub groups: Vec<TensorGroup>,
    /// Fields understood but deliberately left out of the estimate, with the reason (one line each).
    pub notes: Vec<String>,
}

impl ModelShape {
    /// Total parameters (all ranks); a tied LM head's matrix is counted once, as the embedding (a bias of
    /// its own, Phi-3's `lm_head_bias`, is not tied and counted). Sums saturate at u64::MAX, which only a
    /// hand-built table reaches: [`crate::model_from_config`] refuses a model past 2^53 parameters.
    pub fn total_params(&self) -> u64 {
        let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
        let all = sum(&mut self.groups.iter().map(TensorGroup::params));
        if self.tied_embeddings {
            let head = sum(&mut self
                .groups
                .iter()
                .filter(|g| g.reads == Reads::LogitRows)
                .map(TensorGroup::matrix_params));
            all.saturating_sub(head)
        } else {
            all
        }
    }

    /// Parameters one token multiplies with: every group read every step, the LM head, and top_k / experts
    /// of the routed experts. The embedding (a gather) is not counted, as model cards count "active".
    pub fn active_params(&self) -> f64 {
        let mut total = 0.0;
        for g in &self.groups {
            match g.reads {
                Reads::EveryStep | Reads::LogitRows => total += g.params() as f64,
                Reads::RoutedExperts => {
                    if let Some(m) = self.moe {
                        total += g.params() as f64 * m.top_k as f64 / m.experts as f64;
                    }
                }
                Reads::TokenRows => {}
            }
        }
        total
    }

    /// Parameters one token multiplies with in the decoder layers (active minus the LM head): the part of
    /// the FLOPs that scales with every token, while the LM head's scales with the rows that make logits.
    pub fn active_layer_params(&self) -> f64 {
        self.active_params() - self.params_of(Reads::LogitRows) as f64
    }

    /// Parameters of the groups read as `reads` (saturating as [`Self::total_params`]).
    pub fn params_of(&self, reads: Reads) -> u64 {
        self.groups
            .iter()
            .filter(|g| g.reads == reads)
            .map(TensorGroup::params)
            .fold(0, u64::saturating_add)
    }

    /// Bytes one rank holds of the groups read as `reads`.
    pub fn rank_bytes_of(&self, reads: Reads) -> f64 {
        self.groups
            .iter()
            .filter(|g| g.reads == reads)
            .map(TensorGroup::rank_bytes)
            .sum()
    }

    /// Bytes one rank holds of one routed expert in one layer (all its tensors), 0 without experts.
    pub fn rank_expert_bytes(&self) -> f64 {
        self.groups
            .iter()
            .filter(|g| g.reads == Reads::RoutedExperts)
            .map(|g| g.rank_tensor_bytes() * g.layers as f64)
            .sum::<f64>()
            / self.moe.map_or(1, |m| m.moe_layers.max(1)) as f64
    }

    /// Routed experts one rank holds per MoE layer: experts / ep.
    pub fn rank_experts(&self) -> u64 {
        self.moe.map_or(0, |m| m.experts / self.ep)
    }

    /// KV-cache bytes one token adds in one layer on one rank, at `kv_bytes` per element:
    /// GQA 2·max(1, kv_heads/tp)·head_dim (keys and values, v_head_dim for values); MLA
    /// (kv_lora_rank + qk_rope_head_dim), held whole on every rank (DeepSeek-V3.2's indexer key, `dim` more,
    /// is counted by the caller); DeepSeek-V4 head_dim (the window's entry; its compressed entries are per
    /// r tokens, counted by the caller per layer kind). Saturates at u64::MAX, which no table from a
    /// config reaches (its widths are bounded).
    pub fn kv_bytes_per_token_layer(&self, kv_bytes: u64) -> u64 {
        match self.attention {
            Attention::Gqa {
                kv_heads,
                head_dim,
                v_head_dim,
                ..
            } => {
                let rank_heads = (kv_heads / self.tp.max(1)).max(1);
                rank_heads
                    .saturating_mul(head_dim.saturating_add(v_head_dim))
                    .saturating_mul(kv_bytes)
            }
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => kv_lora_rank
                .saturating_add(qk_rope_head_dim)
                .saturating_mul(kv_bytes),
            Attention::Hybrid { head_dim, .. } => head_dim.saturating_mul(kv_bytes),
        }
    }
}

/// The decoder layers' kinds in order, held as runs of one kind and blocks of runs repeated: a model of a
/// million alike layers, or of sliding and full layers alternating, takes the memory of one block whatever
/// its layer count. [`Layers::iter`] gives every layer in order.
///
/// [`Layers::push`] finds the repeats as layers arrive. A layer of the last layer's kind lengthens its run.
/// A finished run continues the repetition under way, or joins the runs not yet repeated; when those end in
/// the same block of up to [`Layers::MAX_BLOCK`] runs twice, that block becomes the repetition under way. A
/// repetition that breaks after fewer than 2 × `MAX_BLOCK` runs was no period of the sequence (in a stretch
/// with a period of `MAX_BLOCK` runs or fewer, a repetition that long never breaks: Fine and Wilf) and goes
/// back among the runs not repeated; a longer one is kept. So any sequence is kept exactly, and one that
/// repeats a block of up to `MAX_BLOCK` runs, after any prefix, takes the memory of the prefix and a few
/// blocks however long it goes on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// What is settled, in order.
    blocks: Vec<Block>,
    /// Finished runs after the blocks, not repeated (yet).
    tail: Vec<(LayerKind, u64)>,
    /// The repetition under way, after the tail.
    repeating: Option<Block>,
    /// The run under way, last.
    open: Option<(LayerKind, u64)>,
    len: u64,
}

/// Runs of layer kinds, `repeats` times, then the first `partial` runs of them once more.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    runs: Vec<(LayerKind, u64)>,
    repeats: u64,
    partial: usize,
}

impl Block {
    fn once(runs: Vec<(LayerKind, u64)>) -> Block {
        Block {
            runs,
            repeats: 1,
            partial: 0,
        }
    }

    /// Its runs in order.
    fn each(&self) -> impl Iterator<Item = &(LayerKind, u64)> + '_ {
        (0..self.repeats)
            .flat_map(move |_| self.runs.iter())
            .chain(&self.runs[..self.partial])
    }

    /// Runs it holds, repeats counted: `repeats · runs + partial`, saturating.
    fn span(&self) -> u64 {
        (self.runs.len() as u64)
            .saturating_mul(self.repeats)
            .saturating_add(self.partial as u64)
    }
}

impl Layers {
    /// The longest block of runs whose repetition is looked for.
    pub const MAX_BLOCK: usize = 16;

    /// No layers.
    pub fn new() -> Layers {
        Layers::default()
    }

    /// `count` layers of one kind.
    pub fn repeat(kind: LayerKind, count: u64) -> Layers {
        Layers {
            open: (count > 0).then_some((kind, count)),
            len: count,
            ..Layers::default()
        }
    }

    /// Appends one layer.
    pub fn push(&mut self, kind: LayerKind) {
        self.len += 1;
        match &mut self.open {
            Some((k, n)) if *k == kind => *n += 1,
            _ => {
                if let Some(run) = self.open.replace((kind, 1)) {
                    self.finish(run);
                }
            }
        }
    }

    /// A run that is over: the next of the repetition under way, or one more of the tail.
    fn finish(&mut self, run: (LayerKind, u64)) {
        if let Some(r) = &mut self.repeating {
            if r.runs[r.partial] == run {
                r.partial += 1;
                if r.partial == r.runs.len() {
                    r.repeats += 1;
                    r.partial = 0;
                }
                return;
            }
            if let Some(r) = self.repeating.take() {
                if r.span() < 2 * Self::MAX_BLOCK as u64 {
                    self.tail.extend(r.each().copied());
                } else {
                    if !self.tail.is_empty() {
                        self.blocks
                            .push(Block::once(std::mem::take(&mut self.tail)));
                    }
                    self.blocks.push(r);
                }
            }
        }
        self.tail.push(run);
        let n = self.tail.len();
        for width in 1..=Self::MAX_BLOCK.min(n / 2) {
            if self.tail[n - 2 * width..n - width] == self.tail[n - width..] {
                let runs = self.tail.split_off(n - width);
                self.tail.truncate(n - 2 * width);
                self.repeating = Some(Block {
                    runs,
                    repeats: 2,
                    partial: 0,
                });
                return;
            }
        }
        // Runs that repeat nothing near the end are settled.
        if n > 4 * Self::MAX_BLOCK {
            let keep = self.tail.split_off(n - 2 * Self::MAX_BLOCK);
            self.blocks
                .push(Block::once(std::mem::replace(&mut self.tail, keep)));
        }
    }

    /// Decoder layers.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every layer's kind, in order.
    pub fn iter(&self) -> impl Iterator<Item = &LayerKind> + '_ {
        self.blocks
            .iter()
            .flat_map(Block::each)
            .chain(&self.tail)
            .chain(self.repeating.iter().flat_map(Block::each))
            .chain(&self.open)
            .flat_map(|(k, n)| std::iter::repeat_n(k, usize::try_from(*n).unwrap_or(usize::MAX)))
    }

    /// How many runs the layers are stored as (the memory they take).
    pub fn stored_runs(&self) -> usize {
        self.blocks.iter().map(|b| b.runs.len()).sum::<usize>()
            + self.tail.len()
            + self.repeating.as_ref().map_or(0, |r| r.runs.len())
            + usize::from(self.open.is_some())
    }
}

impl FromIterator<LayerKind> for Layers {
    fn from_iter<I: IntoIterator<Item = LayerKind>>(iter: I) -> Layers {
        let mut l = Layers::new();
        for k in iter {
            l.push(k);
        }
        l
    }
}

impl<'a> IntoIterator for &'a Layers {
    type Item = &'a LayerKind;
    type IntoIter = Box<dyn Iterator<Item = &'a LayerKind> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kind(k: u8) -> LayerKind {
        LayerKind {
            sliding_window: (k & 1 == 1).then_some(4096),
            compress_ratio: (k & 2 == 2).then_some(4),
            moe: k & 4 == 4,
        }
    }

    proptest! {
        /// Any sequence of layers comes back exactly, whatever blocks it is held as.
        #[test]
        fn layers_come_back_in_order(seq in prop::collection::vec(0u8..5, 0..200)) {
            let kinds: Vec<LayerKind> = seq.iter().map(|&k| kind(k)).collect();
            let layers: Layers = kinds.iter().copied().collect();
            prop_assert_eq!(layers.len(), kinds.len() as u64);
            let back: Vec<LayerKind> = layers.iter().copied().collect();
            prop_assert_eq!(back, kinds);
        }

        /// A block repeated after a prefix is held in the memory of the prefix and a few blocks, however
        /// many times it repeats.
        #[test]
        fn a_repeated_block_costs_its_runs_not_its_repeats(
            prefix in prop::collection::vec(0u8..5, 0..8),
            block in prop::collection::vec(0u8..5, 1..=16),
            repeats in 1usize..300,
        ) {
            let mut seq: Vec<u8> = prefix.clone();
            for _ in 0..repeats {
                seq.extend(&block);
            }
            let layers: Layers = seq.iter().map(|&k| kind(k)).collect();
            let back: Vec<LayerKind> = layers.iter().copied().collect();
            prop_assert_eq!(back, seq.iter().map(|&k| kind(k)).collect::<Vec<_>>());
            // The prefix's runs, a block twice while it is found, the run under way; and the runs it
            // may settle before the block repeats (at most 2 × MAX_BLOCK at a time).
            let bound = prefix.len() + 3 * block.len() + 1 + 2 * Layers::MAX_BLOCK;
            prop_assert!(
                layers.stored_runs() <= bound,
                "{} runs for {:?} then {:?} × {}", layers.stored_runs(), prefix, block, repeats
            );
        }
    }

    #[test]
    fn repeat_is_one_run() {
        let l = Layers::repeat(kind(4), 1 << 40);
        assert_eq!((l.len(), l.stored_runs()), (1 << 40, 1));
        assert!(Layers::repeat(kind(4), 0).is_empty());
        let pushed: Layers = std::iter::repeat_n(kind(4), 100).collect();
        assert_eq!(pushed, Layers::repeat(kind(4), 100));
    }
}
