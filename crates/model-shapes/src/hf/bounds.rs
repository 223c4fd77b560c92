//! Plausibility bounds: the largest value each integer key of a config may hold. Far above any published
//! model (the widest hidden size is ~2^14, the largest vocabulary ~2^18, the deepest model ~2^7 layers, the
//! most experts 2^9), low enough that every width the weights table forms from two keys fits in u64 with
//! room, that a layer count cannot ask for time or memory no model needs, and that a token length times a
//! trace's token counts stays exact. A value past its bound is refused, naming the key; products of several
//! keys (a tensor's parameters, the model's) are checked where they are formed (`build`).

/// The largest value a key may hold, and what kind of quantity it is (for the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The largest value accepted.
    pub max: u64,
    /// What the key counts, as the error says it.
    pub what: &'static str,
}

/// Features of a tensor: hidden, intermediate and head widths, low ranks, quantisation groups and blocks.
pub const WIDTH: Bound = Bound {
    max: 1 << 20,
    what: "a width in features",
};
/// Tokens of the vocabulary.
pub const VOCABULARY: Bound = Bound {
    max: 1 << 24,
    what: "a vocabulary",
};
/// Heads, experts, experts per token, output groups, residual streams.
pub const COUNT: Bound = Bound {
    max: 1 << 16,
    what: "a count of heads, experts or groups",
};
/// Layers, and layer numbers and periods.
pub const LAYERS: Bound = Bound {
    max: 1 << 16,
    what: "a count or number of layers",
};
/// A length in tokens: a sliding window, the keys an indexer keeps per query.
pub const TOKENS: Bound = Bound {
    max: 1 << 32,
    what: "a length in tokens",
};

/// Every integer key the reader takes, with its bound. A key not listed gets [`COUNT`]; the test below
/// checks that every key the readers take is listed.
pub const KEYS: &[(&str, Bound)] = &[
    ("hidden_size", WIDTH),
    ("intermediate_size", WIDTH),
    ("moe_intermediate_size", WIDTH),
    ("shared_expert_intermediate_size", WIDTH),
    ("shared_intermediate_size", WIDTH),
    ("head_dim", WIDTH),
    ("kv_lora_rank", WIDTH),
    ("q_lora_rank", WIDTH),
    ("o_lora_rank", WIDTH),
    ("qk_nope_head_dim", WIDTH),
    ("qk_rope_head_dim", WIDTH),
    ("v_head_dim", WIDTH),
    ("index_head_dim", WIDTH),
    ("rotary_dim", WIDTH),
    ("group_size", WIDTH),
    ("weight_block_size", WIDTH),
    ("bits", COUNT),
    ("vocab_size", VOCABULARY),
    ("num_attention_heads", COUNT),
    ("num_key_value_heads", COUNT),
    ("num_local_experts", COUNT),
    ("num_experts", COUNT),
    ("n_routed_experts", COUNT),
    ("num_experts_per_tok", COUNT),
    ("experts_per_token", COUNT),
    ("n_shared_experts", COUNT),
    ("o_groups", COUNT),
    ("hc_mult", COUNT),
    ("index_n_heads", COUNT),
    ("num_hidden_layers", LAYERS),
    ("first_k_dense_replace", LAYERS),
    ("moe_layer_freq", LAYERS),
    ("decoder_sparse_step", LAYERS),
    ("max_window_layers", LAYERS),
    ("mlp_only_layers", LAYERS),
    ("num_hash_layers", LAYERS),
    ("num_nextn_predict_layers", LAYERS),
    ("sliding_window_pattern", LAYERS),
    ("_sliding_window_pattern", LAYERS),
    ("full_attn_mod", LAYERS),
    ("attn_type_list", LAYERS),
    ("compress_ratios", LAYERS),
    ("compressed_sparse_attention", LAYERS),
    ("heavily_compressed_attention", LAYERS),
    ("sliding_window", TOKENS),
    ("index_topk", TOKENS),
];

// The widest tensor dimension a config can form is a count times a width (heads × head_dim, with room for a
// sum of two widths); a matrix of two such is checked in `build`, but no dimension comes near u64. A trace's
// token count times a token length stays exact in u128.
const _: () = assert!(COUNT.max * (2 * WIDTH.max + 1) < 1 << 40);
const _: () = assert!(TOKENS.max < 1 << 53);

/// The bound of `key` (its last component).
pub fn bound_of(key: &str) -> Bound {
    KEYS.iter()
        .find(|(k, _)| *k == key)
        .map_or(COUNT, |(_, b)| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The readers' sources: every string literal a reader of integers takes as a key must be listed.
    const SOURCES: &[&str] = &[
        include_str!("mod.rs"),
        include_str!("build.rs"),
        include_str!("layout.rs"),
        include_str!("experts.rs"),
        include_str!("attention.rs"),
        include_str!("deepseek_v4.rs"),
        include_str!("minimax.rs"),
        include_str!("quant.rs"),
        include_str!("family.rs"),
    ];

    #[test]
    fn every_integer_key_read_has_its_bound() {
        let mut seen = 0;
        for src in SOURCES {
            for call in [
                ".u64_opt(\"",
                ".u64(\"",
                ".positive(\"",
                ".positive_opt(\"",
                ".u64s_opt(\"",
            ] {
                for (at, _) in src.match_indices(call) {
                    let rest = &src[at + call.len()..];
                    let key = &rest[..rest.find('"').unwrap_or(0)];
                    assert!(
                        KEYS.iter().any(|(k, _)| *k == key),
                        "`{key}` is read as an integer but has no bound in KEYS"
                    );
                    seen += 1;
                }
            }
        }
        assert!(
            seen > 40,
            "{seen} reads found: has the reader's API changed?"
        );
    }
}
