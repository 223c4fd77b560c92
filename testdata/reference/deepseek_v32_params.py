"""Parameters and checkpoint bytes of DeepSeek-V3.2, counted from its checkpoint's tensor list,
independently of model-shapes.

Tensor names and storage are the checkpoint's, as a public model-inventory report lists them beside the
config (`model.layers.{i}.self_attn.indexer.wq_b.weight` [8192, 1536] float8_e4m3fn with a
`weight_scale_inv` [64, 12] float32, ...): 92,425 tensors holding 685,396,921,376 elements (scale tensors
included) in 642.12 GiB, the MTP layer (`model.layers.61`, with its own embedding and head copies) among
them. Shapes follow the reference model code (DeepSeek-V3.2 `inference/model.py`: MLA as V3; the `Indexer`
with wq_b q_lora -> n_I*d_I, wk dim -> d_I, a LayerNorm k_norm (weight and bias) and weights_proj
dim -> n_I in bf16). Storage: fp8 E4M3 with one fp32 scale per 128x128 block (`scale_fmt: ue8m0` makes the
scales powers of two; the checkpoint still stores them as fp32) for every linear except the router and the
indexer's weights_proj (bf16), the embedding and head (bf16); norms, the indexer's k_norm and the routers'
e_score_correction_bias fp32.

The main model (`*_main`, no MTP layer) is what model-shapes' table holds; `elements_with_mtp_and_scales`,
`tensors_with_mtp` and `checkpoint_gib_with_mtp` are the inventory's three totals.

Run: python3 testdata/reference/deepseek_v32_params.py testdata/models/deepseek-v3.2.json
Output: testdata/reference/deepseek_v32_params.json (kept beside this script).
"""

import json
import sys


def layer(c, p, moe):
    d = c["hidden_size"]
    H, ql, kvl = c["num_attention_heads"], c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, vd = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    ih, idim = c["index_n_heads"], c["index_head_dim"]
    E, I, S = c["n_routed_experts"], c["moe_intermediate_size"], c["n_shared_experts"]
    t = [
        ("input_layernorm.weight", (d,), "fp32"),
        ("post_attention_layernorm.weight", (d,), "fp32"),
        ("self_attn.q_a_proj.weight", (ql, d), "fp8"),
        ("self_attn.q_a_layernorm.weight", (ql,), "fp32"),
        ("self_attn.q_b_proj.weight", (H * (nope + rope), ql), "fp8"),
        ("self_attn.kv_a_proj_with_mqa.weight", (kvl + rope, d), "fp8"),
        ("self_attn.kv_a_layernorm.weight", (kvl,), "fp32"),
        ("self_attn.kv_b_proj.weight", (H * (nope + vd), kvl), "fp8"),
        ("self_attn.o_proj.weight", (d, H * vd), "fp8"),
        ("self_attn.indexer.wq_b.weight", (ih * idim, ql), "fp8"),
        ("self_attn.indexer.wk.weight", (idim, d), "fp8"),
        ("self_attn.indexer.k_norm.weight", (idim,), "fp32"),
        ("self_attn.indexer.k_norm.bias", (idim,), "fp32"),
        ("self_attn.indexer.weights_proj.weight", (ih, d), "bf16"),
    ]
    out = [(p + n, s, f, "dense") for n, s, f in t]
    if not moe:
        inter = c["intermediate_size"]
        for w, s in (("gate_proj", (inter, d)), ("up_proj", (inter, d)), ("down_proj", (d, inter))):
            out.append((f"{p}mlp.{w}.weight", s, "fp8", "dense"))
        return out
    out += [
        (p + "mlp.gate.weight", (E, d), "bf16", "dense"),
        (p + "mlp.gate.e_score_correction_bias", (E,), "fp32", "dense"),
    ]
    for w, s in (("gate_proj", (S * I, d)), ("up_proj", (S * I, d)), ("down_proj", (d, S * I))):
        out.append((f"{p}mlp.shared_experts.{w}.weight", s, "fp8", "dense"))
    for e in range(E):
        for w, s in (("gate_proj", (I, d)), ("up_proj", (I, d)), ("down_proj", (d, I))):
            out.append((f"{p}mlp.experts.{e}.{w}.weight", s, "fp8", "routed"))
    return out


def main_model(c):
    d, V = c["hidden_size"], c["vocab_size"]
    out = [
        ("model.embed_tokens.weight", (V, d), "bf16", "embedding"),
        ("lm_head.weight", (V, d), "bf16", "head"),
        ("model.norm.weight", (d,), "fp32", "dense"),
    ]
    for i in range(c["num_hidden_layers"]):
        out += layer(c, f"model.layers.{i}.", i >= c["first_k_dense_replace"])
    return out


def mtp(c):
    d, V, n = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    p = f"model.layers.{n}."
    out = layer(c, p, True)
    out += [
        (p + "eh_proj.weight", (d, 2 * d), "bf16", "mtp"),
        (p + "enorm.weight", (d,), "fp32", "mtp"),
        (p + "hnorm.weight", (d,), "fp32", "mtp"),
        (p + "embed_tokens.weight", (V, d), "bf16", "mtp"),
        (p + "shared_head.head.weight", (V, d), "bf16", "mtp"),
        (p + "shared_head.norm.weight", (d,), "fp32", "mtp"),
    ]
    return out


def numel(s):
    n = 1
    for x in s:
        n *= x
    return n


def scale_elements(shape):
    n, k = shape
    return -(-n // 128) * -(-k // 128)


def stored_bytes(shape, fmt):
    if fmt == "fp8":  # one fp32 scale per 128x128 block
        return numel(shape) + 4 * scale_elements(shape)
    return numel(shape) * {"bf16": 2, "fp32": 4}[fmt]


def main():
    c = json.load(open(sys.argv[1]))
    ts = main_model(c)
    m = mtp(c)
    by = {}
    for _, s, _, kind in ts:
        by[kind] = by.get(kind, 0) + numel(s)
    k, E = c["num_experts_per_tok"], c["n_routed_experts"]
    fp8 = [s for _, s, f, _ in ts + m if f == "fp8"]
    res = {
        "tensors_with_mtp": len(ts) + len(m) + len(fp8),
        "elements_with_mtp_and_scales": sum(numel(s) for _, s, _, _ in ts + m)
        + sum(scale_elements(s) for s in fp8),
        "checkpoint_gib_with_mtp": round(sum(stored_bytes(s, f) for _, s, f, _ in ts + m) / 2**30, 2),
        "total_params_main": sum(by.values()),
        "active_params_without_embedding": by["dense"] + by["head"] + by["routed"] * k // E,
        "indexer_params_main": sum(numel(s) for n, s, _, _ in ts if ".indexer." in n),
        "checkpoint_bytes_main": sum(stored_bytes(s, f) for _, s, f, _ in ts),
    }
    json.dump(res, sys.stdout, indent=2)
    print()


main()
