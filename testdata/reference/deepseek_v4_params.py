"""Parameters and checkpoint bytes of DeepSeek-V4-Flash, counted from its checkpoint's tensor list,
independently of model-shapes.

Tensor names are the checkpoint's (`layers.{i}.attn.wq_a.weight`, `layers.{i}.ffn.experts.{e}.w1.weight`,
... as public checkpoint-inventory code lists them: 69,187 names of which 1,575 are the MTP layer's); each
shape is written from the reference model code (DeepSeek-V4 `Compressor`: ape (ratio, coff*d), wkv/wgate
d_model -> coff*d with coff = 2 when ratio == 4; the indexer on ratio-4 layers; mHC `hc_*_fn`
((2+h)*h, h*d_model)). Storage: fp8 E4M3 with one E8M0 byte per 128x128 block for the attention projections,
the indexer's wq_b, the shared expert and the MTP e/h projections; routed experts fp4 (two per byte) with one
E8M0 byte per 32 inputs; mHC tensors, compressor `ape`, attention sinks and router biases fp32; hash-router
`tid2eid` int64; everything else bf16.

With the MTP layer the bytes come to `checkpoint_bytes_with_mtp`, which equals the `total_size`
(159,609,485,896) of the checkpoint's model.safetensors.index.json as a public inventory test quotes it: a
check of every format above to the byte. The main model (`*_main`, no MTP / DSpark layers: the
compress_ratios entries past num_hidden_layers are theirs) is what DeepSeek's published 284 B / 13 B count
and what model-shapes' table holds.

Run: python3 testdata/reference/deepseek_v4_params.py testdata/models/deepseek-v4-flash.json
Output: testdata/reference/deepseek_v4_params.json (kept beside this script).
"""

import json
import sys


def layer(c, p, ratio, hash_router):
    d, V = c["hidden_size"], c["vocab_size"]
    H, hd = c["num_attention_heads"], c["head_dim"]
    ql, ol, og = c["q_lora_rank"], c["o_lora_rank"], c["o_groups"]
    E, I, S = c["n_routed_experts"], c["moe_intermediate_size"], c["n_shared_experts"]
    k, h = c["num_experts_per_tok"], c["hc_mult"]
    ih, idim = c["index_n_heads"], c["index_head_dim"]
    mix = (2 + h) * h
    t = [
        ("attn_norm.weight", (d,), "bf16"),
        ("ffn_norm.weight", (d,), "bf16"),
        ("attn.wq_a.weight", (ql, d), "fp8"),
        ("attn.q_norm.weight", (ql,), "bf16"),
        ("attn.wq_b.weight", (H * hd, ql), "fp8"),
        ("attn.wkv.weight", (hd, d), "fp8"),
        ("attn.kv_norm.weight", (hd,), "bf16"),
        ("attn.attn_sink", (H,), "fp32"),
        ("attn.wo_a.weight", (og * ol, H * hd // og), "fp8"),
        ("attn.wo_b.weight", (d, og * ol), "fp8"),
        ("ffn.gate.weight", (E, d), "bf16"),
        ("ffn.shared_experts.w1.weight", (S * I, d), "fp8"),
        ("ffn.shared_experts.w3.weight", (S * I, d), "fp8"),
        ("ffn.shared_experts.w2.weight", (d, S * I), "fp8"),
    ]
    for site in ("attn", "ffn"):
        t += [
            (f"hc_{site}_fn", (mix, h * d), "fp32"),
            (f"hc_{site}_base", (mix,), "fp32"),
            (f"hc_{site}_scale", (3,), "fp32"),
        ]
    t.append(("ffn.gate.tid2eid", (V, k), "int64") if hash_router else ("ffn.gate.bias", (E,), "fp32"))
    if ratio > 0:
        coff = 2 if ratio == 4 else 1
        t += [
            ("attn.compressor.wkv.weight", (coff * hd, d), "bf16"),
            ("attn.compressor.wgate.weight", (coff * hd, d), "bf16"),
            ("attn.compressor.ape", (ratio, coff * hd), "fp32"),
            ("attn.compressor.norm.weight", (hd,), "bf16"),
        ]
    if ratio == 4:
        t += [
            ("attn.indexer.wq_b.weight", (ih * idim, ql), "fp8"),
            ("attn.indexer.weights_proj.weight", (ih, d), "bf16"),
            ("attn.indexer.compressor.wkv.weight", (2 * idim, d), "bf16"),
            ("attn.indexer.compressor.wgate.weight", (2 * idim, d), "bf16"),
            ("attn.indexer.compressor.ape", (4, 2 * idim), "fp32"),
            ("attn.indexer.compressor.norm.weight", (idim,), "bf16"),
        ]
    out = [(p + n, s, f, "dense") for n, s, f in t]
    for e in range(E):
        for w, s in (("w1", (I, d)), ("w3", (I, d)), ("w2", (d, I))):
            out.append((f"{p}ffn.experts.{e}.{w}.weight", s, "fp4", "routed"))
    return out


def main_model(c):
    d, V, h = c["hidden_size"], c["vocab_size"], c["hc_mult"]
    out = [
        ("embed.weight", (V, d), "bf16", "embedding"),
        ("head.weight", (V, d), "bf16", "head"),
        ("norm.weight", (d,), "bf16", "dense"),
        ("hc_head_fn", (h, h * d), "fp32", "dense"),
        ("hc_head_base", (h,), "fp32", "dense"),
        ("hc_head_scale", (1,), "fp32", "dense"),
    ]
    for i in range(c["num_hidden_layers"]):
        out += layer(c, f"layers.{i}.", c["compress_ratios"][i], i < c["num_hash_layers"])
    return out


def mtp(c):
    d, h = c["hidden_size"], c["hc_mult"]
    out = layer(c, "mtp.0.", 0, False)
    out += [
        ("mtp.0.e_proj.weight", (d, d), "fp8", "mtp"),
        ("mtp.0.h_proj.weight", (d, d), "fp8", "mtp"),
        ("mtp.0.enorm.weight", (d,), "bf16", "mtp"),
        ("mtp.0.hnorm.weight", (d,), "bf16", "mtp"),
        ("mtp.0.norm.weight", (d,), "bf16", "mtp"),
        ("mtp.0.hc_head_fn", (h, h * d), "fp32", "mtp"),
        ("mtp.0.hc_head_base", (h,), "fp32", "mtp"),
        ("mtp.0.hc_head_scale", (1,), "fp32", "mtp"),
    ]
    return out


def numel(s):
    n = 1
    for x in s:
        n *= x
    return n


def stored_bytes(shape, fmt):
    if fmt == "fp8":  # one E8M0 scale byte per 128x128 block
        n, k = shape
        return n * k + -(-n // 128) * -(-k // 128)
    if fmt == "fp4":  # two values per byte, one E8M0 scale byte per 32 inputs
        n, k = shape
        return n * k // 2 + n * -(-k // 32)
    return numel(shape) * {"bf16": 2, "fp32": 4, "int64": 8}[fmt]


def scales(ts):
    return sum(1 for _, _, f, _ in ts if f in ("fp8", "fp4"))


def main():
    c = json.load(open(sys.argv[1]))
    ts = main_model(c)
    by = {}
    for _, s, _, kind in ts:
        by[kind] = by.get(kind, 0) + numel(s)
    k, E = c["num_experts_per_tok"], c["n_routed_experts"]
    # Active: what one token multiplies with; the embedding (a row gather) and the hash layers' tid2eid
    # tables (a lookup) are not multiplied; the routed experts count k of E.
    tid2eid = sum(numel(s) for n, s, _, _ in ts if n.endswith("tid2eid"))
    active = by["dense"] - tid2eid + by["head"] + by["routed"] * k // E
    m = mtp(c)
    res = {
        "weight_tensors_main": len(ts),
        "scale_tensors_main": scales(ts),
        "names_with_mtp": len(ts) + scales(ts) + len(m) + scales(m),
        "total_params_main": sum(by.values()),
        "active_params_without_embedding": active,
        "embedding_params": by["embedding"],
        "routed_expert_params": by["routed"],
        "tid2eid_params": tid2eid,
        "checkpoint_bytes_main": sum(stored_bytes(s, f) for _, s, f, _ in ts),
        "checkpoint_bytes_with_mtp": sum(stored_bytes(s, f) for _, s, f, _ in ts + m),
    }
    json.dump(res, sys.stdout, indent=2)
    print()


main()
