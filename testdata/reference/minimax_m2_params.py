"""Parameters and checkpoint bytes of MiniMax-M2-architecture models (MiniMax-M2, M2.1, M2.5, M2.7),
counted from the checkpoint's tensor names independently of model-shapes.

Names, shapes and dtypes are the checkpoint's as a public loader records them from MiniMax-M2.7's
`model.safetensors.index.json` and shard headers: embed_tokens, norm and lm_head bf16;
`model.layers.{i}.` input/post-attention norms and `self_attn.q_norm` / `k_norm` bf16 (per layer, over
all heads: [heads*head_dim], [kv_heads*head_dim]); `self_attn.{q,k,v,o}_proj` fp8 with a
`weight_scale_inv` per 128x128 block; `block_sparse_moe.gate.weight` and `e_score_correction_bias` fp32;
`block_sparse_moe.experts.{e}.{w1,w2,w3}` fp8 with their scales. The scales are counted as fp32 (the
block-fp8 convention DeepSeek's checkpoints use; this script's bytes are the table's, not a checkpoint
index's). The MTP modules (`num_mtp_modules`) are not counted.

Run: python3 testdata/reference/minimax_m2_params.py testdata/models/minimax-m2.7.json
Output: testdata/reference/minimax_m2_params.json (kept beside this script).
"""

import json
import sys


def tensors(c):
    d, V = c["hidden_size"], c["vocab_size"]
    H, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    E, I = c["num_local_experts"], c["intermediate_size"]
    out = [
        ("model.embed_tokens.weight", (V, d), "bf16", "embedding"),
        ("lm_head.weight", (V, d), "bf16", "head"),
        ("model.norm.weight", (d,), "bf16", "dense"),
    ]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t = [
            ("input_layernorm.weight", (d,), "bf16"),
            ("post_attention_layernorm.weight", (d,), "bf16"),
            ("self_attn.q_proj.weight", (H * hd, d), "fp8"),
            ("self_attn.k_proj.weight", (kv * hd, d), "fp8"),
            ("self_attn.v_proj.weight", (kv * hd, d), "fp8"),
            ("self_attn.o_proj.weight", (d, H * hd), "fp8"),
            ("self_attn.q_norm.weight", (H * hd,), "bf16"),
            ("self_attn.k_norm.weight", (kv * hd,), "bf16"),
            ("block_sparse_moe.gate.weight", (E, d), "fp32"),
            ("block_sparse_moe.e_score_correction_bias", (E,), "fp32"),
        ]
        out += [(p + n, s, f, "dense") for n, s, f in t]
        for e in range(E):
            for w, s in (("w1", (I, d)), ("w3", (I, d)), ("w2", (d, I))):
                out.append((f"{p}block_sparse_moe.experts.{e}.{w}.weight", s, "fp8", "routed"))
    return out


def numel(s):
    n = 1
    for x in s:
        n *= x
    return n


def stored_bytes(shape, fmt):
    if fmt == "fp8":  # one fp32 scale per 128x128 block
        n, k = shape
        return n * k + 4 * -(-n // 128) * -(-k // 128)
    return numel(shape) * {"bf16": 2, "fp32": 4}[fmt]


def main():
    c = json.load(open(sys.argv[1]))
    ts = tensors(c)
    by = {}
    for _, s, _, kind in ts:
        by[kind] = by.get(kind, 0) + numel(s)
    k, E = c["num_experts_per_tok"], c["num_local_experts"]
    res = {
        "total_params": sum(by.values()),
        "active_params_without_embedding": by["dense"] + by["head"] + by["routed"] * k // E,
        "bytes": sum(stored_bytes(s, f) for _, s, f, _ in ts),
    }
    json.dump(res, sys.stdout, indent=2)
    print()


main()
