"""Parameters of GLM-4.5-architecture models (transformers `glm4_moe`), counted from the checkpoint's
tensor names independently of model-shapes.

Names and shapes are the checkpoint's as transformers' `Glm4MoeForCausalLM` writes them
(`model.layers.{i}.self_attn.q_proj.{weight,bias}`, `...mlp.experts.{e}.gate_proj.weight`,
`...mlp.gate.e_score_correction_bias`, ...): q, k, v with biases, o without; q_norm/k_norm of head_dim when
`use_qk_norm`; the first `first_k_dense_replace` layers dense, the rest MoE with `n_shared_experts` shared
experts of moe_intermediate_size. The MTP layer (`model.layers.{n}`: eh_proj, enorm, hnorm, a decoder layer
and shared_head) is not counted, as model-shapes leaves it out.

GLM-4.5-Air's shapes are checked against a checkpoint: GLM-4.5V (`glm4v_moe`) is GLM-4.5-Air's language
model beside a vision encoder, and a public model-inventory report lists its checkpoint's tensors (no MTP
layer) with their total, 107,710,933,120 parameters. `air` below is glm-4.7.json with Air's dimensions (the
report's text_config: hidden 4096, 46 layers, 1 dense, 128 experts of 1408, dense 10944, no qk-norm);
`glm_4_5v_total` adds the vision tower's tensors as the report lists them, and must equal that total.

Run: python3 testdata/reference/glm4_moe_params.py testdata/models/glm-4.7.json
Output: testdata/reference/glm4_moe_params.json (kept beside this script).
"""

import json
import sys

AIR = {
    "hidden_size": 4096,
    "num_hidden_layers": 46,
    "first_k_dense_replace": 1,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "n_routed_experts": 128,
    "use_qk_norm": False,
}

# GLM-4.5V's vision tower and merger, as the inventory lists them (24 blocks).
GLM_4_5V_VISION = [
    ("model.visual.blocks.{b}.attn.proj.weight", (1536, 1536), 24),
    ("model.visual.blocks.{b}.attn.qkv.weight", (4608, 1536), 24),
    ("model.visual.blocks.{b}.mlp.down_proj.weight", (1536, 4096), 24),
    ("model.visual.blocks.{b}.mlp.gate_proj.weight", (4096, 1536), 24),
    ("model.visual.blocks.{b}.mlp.up_proj.weight", (4096, 1536), 24),
    ("model.visual.blocks.{b}.norm1.weight", (1536,), 24),
    ("model.visual.blocks.{b}.norm2.weight", (1536,), 24),
    ("model.visual.downsample.bias", (4096,), 1),
    ("model.visual.downsample.weight", (4096, 1536, 2, 2), 1),
    ("model.visual.embeddings.position_embedding.weight", (576, 1536), 1),
    ("model.visual.merger.down_proj.weight", (4096, 10944), 1),
    ("model.visual.merger.gate_proj.weight", (10944, 4096), 1),
    ("model.visual.merger.post_projection_norm.bias", (4096,), 1),
    ("model.visual.merger.post_projection_norm.weight", (4096,), 1),
    ("model.visual.merger.proj.weight", (4096, 4096), 1),
    ("model.visual.merger.up_proj.weight", (10944, 4096), 1),
    ("model.visual.patch_embed.proj.bias", (1536,), 1),
    ("model.visual.patch_embed.proj.weight", (1536, 3, 2, 14, 14), 1),
    ("model.visual.post_conv_layernorm.weight", (1536,), 1),
    ("model.visual.post_layernorm.weight", (1536,), 1),
]


def numel(s):
    n = 1
    for x in s:
        n *= x
    return n


def tensors(c):
    d, V = c["hidden_size"], c["vocab_size"]
    H, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    E, I, S = c["n_routed_experts"], c["moe_intermediate_size"], c["n_shared_experts"]
    out = [
        ("model.embed_tokens.weight", (V, d), "embedding"),
        ("lm_head.weight", (V, d), "head"),
        ("model.norm.weight", (d,), "dense"),
    ]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t = [
            ("input_layernorm.weight", (d,)),
            ("post_attention_layernorm.weight", (d,)),
            ("self_attn.q_proj.weight", (H * hd, d)),
            ("self_attn.q_proj.bias", (H * hd,)),
            ("self_attn.k_proj.weight", (kv * hd, d)),
            ("self_attn.k_proj.bias", (kv * hd,)),
            ("self_attn.v_proj.weight", (kv * hd, d)),
            ("self_attn.v_proj.bias", (kv * hd,)),
            ("self_attn.o_proj.weight", (d, H * hd)),
        ]
        if c["use_qk_norm"]:
            t += [("self_attn.q_norm.weight", (hd,)), ("self_attn.k_norm.weight", (hd,))]
        if i < c["first_k_dense_replace"]:
            n = c["intermediate_size"]
            t += [(f"mlp.{w}.weight", s) for w, s in (("gate_proj", (n, d)), ("up_proj", (n, d)), ("down_proj", (d, n)))]
        else:
            t += [("mlp.gate.weight", (E, d)), ("mlp.gate.e_score_correction_bias", (E,))]
            t += [
                (f"mlp.shared_experts.{w}.weight", s)
                for w, s in (("gate_proj", (S * I, d)), ("up_proj", (S * I, d)), ("down_proj", (d, S * I)))
            ]
        out += [(p + n, s, "dense") for n, s in t]
        if i >= c["first_k_dense_replace"]:
            for e in range(E):
                for w, s in (("gate_proj", (I, d)), ("up_proj", (I, d)), ("down_proj", (d, I))):
                    out.append((f"{p}mlp.experts.{e}.{w}.weight", s, "routed"))
    return out


def counts(c):
    by = {}
    for _, s, kind in tensors(c):
        by[kind] = by.get(kind, 0) + numel(s)
    k, E = c["num_experts_per_tok"], c["n_routed_experts"]
    return {
        "total_params": sum(by.values()),
        "active_params_without_embedding": by["dense"] + by["head"] + by["routed"] * k // E,
        "lm_head_params": by["head"],
    }


def main():
    c = json.load(open(sys.argv[1]))
    air = dict(c, **AIR)
    vision = sum(numel(s) * n for _, s, n in GLM_4_5V_VISION)
    res = {"glm_4_7": counts(c), "air": counts(air)}
    res["glm_4_5v_total"] = res["air"]["total_params"] + vision
    json.dump(res, sys.stdout, indent=2)
    print()


main()
