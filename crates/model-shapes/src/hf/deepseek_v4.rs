//! DeepSeek-V4 (`deepseek_v4`): its hybrid attention's widths and per-layer layout (which layers compress,
//! which route by a token table) from the config, and the tensors a layer adds for them: the hybrid
//! attention with its compressors and indexer, and mHC.

use super::attention::read_indexer;
use super::fields::Fields;
use super::tensor::{Tensor, lin};
use crate::Error;
use crate::weights::{Attention, Indexer, RankSplit, SPARSE_COMPRESS_RATIO, WeightFormat};

/// 64-bit integers: DeepSeek-V4's hash-router tables.
pub(super) const INT64: WeightFormat = WeightFormat::Float {
    bytes: 8,
    name: "int64",
};

/// DeepSeek-V4's attention and mHC widths beyond [`Attention::Hybrid`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct V4Dims {
    pub(super) q_lora: u64,
    pub(super) o_lora: u64,
    pub(super) o_groups: u64,
    pub(super) hc_mult: u64,
}

/// DeepSeek-V4's attention: one shared key/value head (`num_key_value_heads` must be 1), queries through a
/// low rank, grouped output projection, the lightning indexer's widths, and mHC's stream count.
pub(super) fn read_v4_attention(
    f: &mut Fields<'_>,
    heads: u64,
    kv_heads: u64,
    tp: u64,
) -> Result<(Attention, V4Dims), Error> {
    if kv_heads != 1 {
        return Err(f.invalid(
            "num_key_value_heads",
            format!("{kv_heads}: DeepSeek-V4 attention has one key/value head shared by all"),
        ));
    }
    let head_dim = f.positive("head_dim")?;
    // The rotary part of head_dim sets no weight's shape.
    let _ = f.u64_opt("qk_rope_head_dim")?;
    let dims = V4Dims {
        q_lora: f.positive("q_lora_rank")?,
        o_lora: f.positive("o_lora_rank")?,
        o_groups: f.positive("o_groups")?,
        hc_mult: f.positive("hc_mult")?,
    };
    if !(heads * head_dim).is_multiple_of(dims.o_groups) {
        return Err(f.invalid(
            "o_groups",
            format!(
                "{} groups do not divide {heads} heads × {head_dim}",
                dims.o_groups
            ),
        ));
    }
    if !dims.o_groups.is_multiple_of(tp) {
        return Err(f.invalid(
            "o_groups",
            format!(
                "{} output groups do not divide among {tp} tensor-parallel ranks",
                dims.o_groups
            ),
        ));
    }
    // Sinkhorn iterations, its epsilon and the compressed layers' rotary base set no shape.
    for key in ["hc_sinkhorn_iters", "hc_eps", "compress_rope_theta"] {
        let _ = f.opt(key);
    }
    let attention = Attention::Hybrid {
        heads,
        head_dim,
        indexer: read_indexer(f)?,
    };
    Ok((attention, dims))
}

/// DeepSeek-V4's per-layer layout.
pub(super) struct V4Layers {
    /// The compression ratio of each decoder layer (None: the window alone), as the config lists them.
    pub(super) compress: Vec<Option<u64>>,
    /// Which layers route by a token → experts table.
    pub(super) hash_routed: HashRouted,
}

/// Which layers route by a token → experts table.
pub(super) enum HashRouted {
    /// The first n (`num_hash_layers`).
    First(u64),
    /// As `mlp_layer_types` lists them.
    List(Vec<bool>),
}

impl HashRouted {
    pub(super) fn routed(&self, i: u64) -> bool {
        match self {
            HashRouted::First(n) => i < *n,
            HashRouted::List(l) => usize::try_from(i)
                .ok()
                .and_then(|i| l.get(i))
                .copied()
                .unwrap_or(false),
        }
    }
}

/// DeepSeek-V4's layer kinds, from `compress_ratios` (one ratio per layer: 0 the window alone, 4 compressed
/// sparse attention, 128 heavily compressed; entries past the decoder layers belong to the MTP layers) or
/// from `layer_types` with `compress_rates` (the newer form), and the hash-routed layers from
/// `num_hash_layers` (the first n) or `mlp_layer_types`.
pub(super) fn read_v4_layers(
    f: &mut Fields<'_>,
    n_layers: u64,
    notes: &mut Vec<String>,
) -> Result<V4Layers, Error> {
    let n = usize::try_from(n_layers).unwrap_or(usize::MAX);
    let ratios = f.u64s_opt("compress_ratios")?;
    let types = f.strings_opt("layer_types")?;
    let rates = match f.object_opt("compress_rates")? {
        Some(mut r) => {
            let csa = r.u64_opt("compressed_sparse_attention")?;
            let hca = r.u64_opt("heavily_compressed_attention")?;
            r.finish(&[])?;
            (csa, hca)
        }
        None => (None, None),
    };
    let compress = match (ratios, types) {
        (Some(_), Some(_)) => {
            return Err(f.invalid("layer_types", "given with compress_ratios: one layout only"));
        }
        (Some(r), None) => {
            if r.len() < n {
                return Err(f.invalid(
                    "compress_ratios",
                    format!("{} entries for {n_layers} layers", r.len()),
                ));
            }
            if r.len() > n {
                notes.push(format!(
                    "compress_ratios has {} entries past the {n_layers} decoder layers: the MTP / speculative layers', not counted",
                    r.len() - n
                ));
            }
            r[..n]
                .iter()
                .map(|&x| match x {
                    0 => Ok(None),
                    SPARSE_COMPRESS_RATIO | 128 => Ok(Some(x)),
                    other => Err(f.invalid(
                        "compress_ratios",
                        format!("ratio {other} is not understood (0, 4, 128)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, Some(t)) => {
            if t.len() != n {
                return Err(f.invalid(
                    "layer_types",
                    format!("{} entries for {n_layers} layers", t.len()),
                ));
            }
            let csa = rates.0.unwrap_or(SPARSE_COMPRESS_RATIO);
            if csa != SPARSE_COMPRESS_RATIO {
                return Err(f.invalid(
                    "compress_rates.compressed_sparse_attention",
                    format!("{csa}: the indexer's ratio is 4"),
                ));
            }
            let hca = rates.1.unwrap_or(128);
            if hca == 0 {
                return Err(f.invalid(
                    "compress_rates.heavily_compressed_attention",
                    "a ratio is positive",
                ));
            }
            t.iter()
                .map(|k| match k.as_str() {
                    "sliding_attention" => Ok(None),
                    "compressed_sparse_attention" => Ok(Some(csa)),
                    "heavily_compressed_attention" => Ok(Some(hca)),
                    other => Err(f.invalid(
                        "layer_types",
                        format!("`{other}` is not understood (sliding_attention, compressed_sparse_attention, heavily_compressed_attention)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, None) => {
            return Err(f.invalid(
                "compress_ratios",
                "missing (and no layer_types): each layer's compression",
            ));
        }
    };
    let hash_layers = f.u64_opt("num_hash_layers")?;
    let mlp_types = f.strings_opt("mlp_layer_types")?;
    let hash_routed = match (hash_layers, mlp_types) {
        (Some(_), Some(_)) => {
            return Err(f.invalid(
                "mlp_layer_types",
                "given with num_hash_layers: one layout only",
            ));
        }
        (Some(h), None) => HashRouted::First(h),
        (None, Some(t)) => {
            if t.len() != n {
                return Err(f.invalid(
                    "mlp_layer_types",
                    format!("{} entries for {n_layers} layers", t.len()),
                ));
            }
            HashRouted::List(
                t.iter()
                    .map(|k| match k.as_str() {
                        "hash_moe" => Ok(true),
                        "moe" => Ok(false),
                        other => Err(f.invalid(
                            "mlp_layer_types",
                            format!("`{other}` is not understood (hash_moe, moe)"),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
        (None, None) => {
            return Err(f.invalid(
                "num_hash_layers",
                "missing (and no mlp_layer_types): which layers route by token",
            ));
        }
    };
    // DSpark: a speculative drafter over some layers' hidden states, in its own (mtp.*) layers.
    // The four keys DeepSeek-V4-Flash's config carries; another `dspark_` key is not known to stay out of
    // the main layers, so it is left for the unknown-key error.
    let dspark: Vec<&str> = [
        "dspark_block_size",
        "dspark_markov_rank",
        "dspark_noise_token_id",
        "dspark_target_layer_ids",
    ]
    .into_iter()
    .filter(|k| f.opt(k).is_some())
    .collect();
    if !dspark.is_empty() {
        notes.push(format!(
            "{}: the DSpark speculative-decoding stages are not counted (they run only when drafting)",
            dspark.join(", ")
        ));
    }
    Ok(V4Layers {
        compress,
        hash_routed,
    })
}

/// One layer's attention tensors: queries through the low rank, the one key/value vector, fp32 sinks, the
/// grouped output projection, and on a compressed layer (ratio `compress`) its compressor, with the
/// lightning indexer at the sparse ratio. Empty for another kind of attention.
pub(super) fn hybrid_tensors(
    hidden: u64,
    attention: Attention,
    d: V4Dims,
    compress: Option<u64>,
) -> Vec<Tensor> {
    let Attention::Hybrid {
        heads,
        head_dim,
        indexer:
            Indexer {
                heads: index_heads,
                dim: index_dim,
                ..
            },
    } = attention
    else {
        return Vec::new();
    };
    let vector = |name: &'static str, width: u64, split: RankSplit| {
        lin(name, name, 1, width, false, split).kept()
    };
    let mut t = vec![
        lin(
            "attn.wq_a",
            "attn.wq_a",
            hidden,
            d.q_lora,
            false,
            RankSplit::Replicated,
        ),
        vector("attn.q_norm", d.q_lora, RankSplit::Replicated),
        lin(
            "attn.wq_b",
            "attn.wq_b",
            d.q_lora,
            heads * head_dim,
            false,
            RankSplit::Column,
        ),
        lin(
            "attn.wkv",
            "attn.wkv",
            hidden,
            head_dim,
            false,
            RankSplit::Replicated,
        ),
        vector("attn.kv_norm", head_dim, RankSplit::Replicated),
        vector("attn.attn_sink", heads, RankSplit::Column).stored_as(WeightFormat::FP32),
        // The o_groups grouped projections each map their heads' slice of the attention output
        // (heads·head_dim / G) to o_lora: written as one (heads·head_dim / G) × (G·o_lora) tensor,
        // the same parameters and bytes, and a column split hands each rank G / tp whole groups.
        lin(
            "attn.wo_a",
            "attn.wo_a",
            heads * head_dim / d.o_groups,
            d.o_groups * d.o_lora,
            false,
            RankSplit::Column,
        ),
        lin(
            "attn.wo_b",
            "attn.wo_b",
            d.o_groups * d.o_lora,
            hidden,
            false,
            RankSplit::Row,
        ),
    ];
    if let Some(ratio) = compress {
        t.extend(compressor(
            hidden,
            ratio,
            head_dim,
            "attn.compressor",
            [
                "attn.compressor.wkv+wgate",
                "attn.compressor.ape",
                "attn.compressor.norm",
            ],
        ));
        if ratio == SPARSE_COMPRESS_RATIO {
            t.push(lin(
                "attn.indexer.wq_b",
                "attn.indexer.wq_b",
                d.q_lora,
                index_heads * index_dim,
                false,
                RankSplit::Replicated,
            ));
            t.push(
                lin(
                    "attn.indexer.weights_proj",
                    "attn.indexer.weights_proj",
                    hidden,
                    index_heads,
                    false,
                    RankSplit::Replicated,
                )
                .kept(),
            );
            t.extend(compressor(
                hidden,
                SPARSE_COMPRESS_RATIO,
                index_dim,
                "attn.indexer.compressor",
                [
                    "attn.indexer.compressor.wkv+wgate",
                    "attn.indexer.compressor.ape",
                    "attn.indexer.compressor.norm",
                ],
            ));
        }
    }
    t
}

/// A compressor (the reference `Compressor`) pooling `ratio` tokens into one entry of `dim`: wkv and wgate
/// (hidden → c·dim, unquantised; c = 2 at the sparse ratio, whose windows overlap, else 1), the fp32
/// position bias `ape` (ratio × c·dim) and a norm of `dim`; `names` are the three groups' names.
fn compressor(
    hidden: u64,
    ratio: u64,
    dim: u64,
    module: &str,
    names: [&'static str; 3],
) -> [Tensor; 3] {
    let coff = if ratio == SPARSE_COMPRESS_RATIO { 2 } else { 1 };
    let [kv_gate, ape, norm] = names;
    [
        lin(
            kv_gate,
            module,
            hidden,
            coff * dim,
            false,
            RankSplit::Replicated,
        )
        .times(2)
        .kept(),
        lin(
            ape,
            format!("{module}.ape"),
            1,
            ratio * coff * dim,
            false,
            RankSplit::Replicated,
        )
        .stored_as(WeightFormat::FP32),
        lin(
            norm,
            format!("{module}.norm"),
            1,
            dim,
            false,
            RankSplit::Replicated,
        )
        .kept(),
    ]
}

/// One layer's mHC tensors: per site (attention, FFN) the mixing weight `fn` of (2 + h)·h rows over
/// h·hidden, and its (2 + h)·h base and 3 scales, all fp32.
pub(super) fn mhc_tensors(hidden: u64, d: V4Dims) -> Vec<Tensor> {
    let mix = (2 + d.hc_mult) * d.hc_mult;
    vec![
        lin(
            "hc_attn_fn+hc_ffn_fn",
            "hc_attn_fn",
            d.hc_mult * hidden,
            mix,
            false,
            RankSplit::Replicated,
        )
        .times(2)
        .stored_as(WeightFormat::FP32),
        lin(
            "hc_*_base+hc_*_scale",
            "hc_attn_base",
            1,
            mix + 3,
            false,
            RankSplit::Replicated,
        )
        .times(2)
        .stored_as(WeightFormat::FP32),
    ]
}
