"""Write a small random DSA checkpoint (DeepSeek-V3.2 or GLM-5) in the published Hugging Face layout
(config.json + model.safetensors), for the reference's self-test and goldens.

    python3 -m reference.dsa_tiny_checkpoint --out DIR [--preset deepseek-v3.2-tiny|glm5-tiny] [--seed 0]

Presets (the configs below, the same as strata's `make-model` presets of those names):
* deepseek-v3.2-tiny (`deepseek_v32`): vocab 129280, hidden 256, 3 layers (layer 0 dense) + 1 MTP
  layer, 4 heads, q_lora 128, kv_lora 128, nope 64, rope 64, v 64, 16 experts top-4 in 4 groups
  (top-2 groups), 1 shared expert, indexer 4 heads x 128 top-64, YaRN as the official config. FP8
  linears: e4m3 `X.weight` + float32 power-of-two `X.weight_scale_inv` per 128x128 block (real
  ue8m0 block quantization); norms, embeddings, lm_head, gate, weights_proj and eh_proj BF16; the
  indexer's k_norm weight/bias and the correction bias F32 (k_norm values not bf16-representable).
  The MTP layer carries its own `embed_tokens` and `shared_head.head` (random, unlike the published
  copies of the main ones, so that using them is observable).
* glm5-tiny (`glm_moe_dsa`): vocab 154880, hidden 256, 4 layers (layer 0 dense; indexers full at
  layers 0 and 2, shared at 1 and 3) + 1 MTP layer, nope 96, rope 64, v 128, 16 experts top-4,
  n_group 1, plain RoPE (theta 10000); no quantization_config: every tensor BF16 except the F32
  correction bias; the MTP layer uses the main embedding and lm_head.

Random values: linears std fan_in^-0.5 (activations O(1) through the layers), norms 1 +- 0.1,
embedding std 1, gate std fan_in^-0.5 with a bias of std 0.05 (the router and the group limit
both decide), k_norm 1 +- 0.1 with a bias of std 0.1.
"""
import argparse
import copy
import json
import os

import torch

from .formats import bf16_bits, e8m0_decode, quant_fp8_weight
from .safetensors_io import write_safetensors

QUANT = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "scale_fmt": "ue8m0",
         "weight_block_size": [128, 128]}

PRESETS = {
    "deepseek-v3.2-tiny": {
        "architectures": ["DeepseekV32ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 1, "hidden_act": "silu",
        "hidden_size": 256, "index_head_dim": 128, "index_n_heads": 4, "index_topk": 64,
        "initializer_range": 0.02, "intermediate_size": 512, "kv_lora_rank": 128,
        "max_position_embeddings": 163840, "model_type": "deepseek_v32", "moe_intermediate_size": 128,
        "moe_layer_freq": 1, "n_group": 4, "n_routed_experts": 16, "n_shared_experts": 1,
        "norm_topk_prob": True, "num_attention_heads": 4, "num_experts_per_tok": 4, "num_hidden_layers": 3,
        "num_key_value_heads": 4, "num_nextn_predict_layers": 1, "q_lora_rank": 128, "qk_nope_head_dim": 64,
        "qk_rope_head_dim": 64, "quantization_config": QUANT, "rms_norm_eps": 1e-06,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "original_max_position_embeddings": 4096, "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": False,
        "topk_group": 2, "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.44.2",
        "use_cache": True, "v_head_dim": 64, "vocab_size": 129280,
    },
    "glm5-tiny": {
        "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "attention_bias": False,
        "attention_dropout": 0.0, "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 256,
        "index_head_dim": 128, "index_n_heads": 4, "index_topk": 64, "index_topk_freq": 2,
        "index_skip_topk_offset": 1, "initializer_range": 0.02, "intermediate_size": 512, "kv_lora_rank": 128,
        "max_position_embeddings": 202752, "moe_intermediate_size": 128, "moe_layer_freq": 1, "n_group": 1,
        "n_routed_experts": 16, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 4,
        "num_experts_per_tok": 4, "num_hidden_layers": 4, "num_key_value_heads": 4, "num_nextn_predict_layers": 1,
        "q_lora_rank": 128, "qk_nope_head_dim": 96, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "routed_scaling_factor": 2.5,
        "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc",
        "dtype": "bfloat16", "use_cache": True, "v_head_dim": 128, "vocab_size": 154880,
    },
}


def config(preset):
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[preset])


def glm_full_layers(c):
    """GLM-5 indexer schedule of the preset (index_topk_freq / index_skip_topk_offset)."""
    f, o = c.get("index_topk_freq", 1), c.get("index_skip_topk_offset", 2)
    return [max(i - o + 1, 0) % f == 0 for i in range(c["num_hidden_layers"])]


class Builder:
    def __init__(self, seed, fp8):
        self.g = torch.Generator().manual_seed(seed)
        self.fp8 = fp8
        self.t = {}

    def randn(self, *shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=self.g) * std + mean

    def bf16(self, name, x):
        self.t[name] = ("BF16", bf16_bits(x))

    def f32(self, name, x):
        self.t[name] = ("F32", x.float().numpy())

    def linear(self, name, out, inn, quantized=True):
        """`name.weight` [out, in], std fan_in^-0.5: FP8 + weight_scale_inv when the preset is FP8."""
        w = self.randn(out, inn, std=inn ** -0.5)
        if self.fp8 and quantized:
            codes, scale = quant_fp8_weight(w)
            self.t[name + ".weight"] = ("F8_E4M3", codes)
            self.f32(name + ".weight_scale_inv", e8m0_decode(scale))
        else:
            self.bf16(name + ".weight", w)

    def norm(self, name, n):
        self.bf16(name, self.randn(n, std=0.1, mean=1.0))


def layer(b, i, c, full_indexer):
    p = f"model.layers.{i}"
    d, H = c["hidden_size"], c["num_attention_heads"]
    ql, kvl, nope, rope, v = c["q_lora_rank"], c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    b.norm(p + ".input_layernorm.weight", d)
    b.norm(p + ".post_attention_layernorm.weight", d)
    a = p + ".self_attn"
    b.linear(a + ".q_a_proj", ql, d)
    b.norm(a + ".q_a_layernorm.weight", ql)
    b.linear(a + ".q_b_proj", H * (nope + rope), ql)
    b.linear(a + ".kv_a_proj_with_mqa", kvl + rope, d)
    b.norm(a + ".kv_a_layernorm.weight", kvl)
    b.linear(a + ".kv_b_proj", H * (nope + v), kvl)
    b.linear(a + ".o_proj", d, H * v)
    if full_indexer:
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        x = a + ".indexer"
        b.linear(x + ".wq_b", ih * idim, ql)
        b.linear(x + ".wk", idim, d)
        kw, kb = b.randn(idim, std=0.1, mean=1.0), b.randn(idim, std=0.1)
        if b.fp8:   # DeepSeek keeps the indexer LayerNorm in fp32: values that bf16 cannot hold
            b.f32(x + ".k_norm.weight", kw)
            b.f32(x + ".k_norm.bias", kb)
        else:
            b.bf16(x + ".k_norm.weight", kw)
            b.bf16(x + ".k_norm.bias", kb)
        b.bf16(x + ".weights_proj.weight", b.randn(ih, d, std=d ** -0.5))
    m = p + ".mlp"
    if i < c["first_k_dense_replace"]:
        f = c["intermediate_size"]
        b.linear(m + ".gate_proj", f, d)
        b.linear(m + ".up_proj", f, d)
        b.linear(m + ".down_proj", d, f)
        return
    E, mi, ns = c["n_routed_experts"], c["moe_intermediate_size"], c["n_shared_experts"]
    b.bf16(m + ".gate.weight", b.randn(E, d, std=d ** -0.5))
    b.f32(m + ".gate.e_score_correction_bias", b.randn(E, std=0.05))
    for e in range(E):
        b.linear(f"{m}.experts.{e}.gate_proj", mi, d)
        b.linear(f"{m}.experts.{e}.up_proj", mi, d)
        b.linear(f"{m}.experts.{e}.down_proj", d, mi)
    if ns:
        b.linear(m + ".shared_experts.gate_proj", ns * mi, d)
        b.linear(m + ".shared_experts.up_proj", ns * mi, d)
        b.linear(m + ".shared_experts.down_proj", d, ns * mi)


def make_tiny(out_dir, seed=0, preset="deepseek-v3.2-tiny"):
    c = config(preset)
    fp8 = "quantization_config" in c
    b = Builder(seed, fp8)
    d, V, n = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    b.bf16("model.embed_tokens.weight", b.randn(V, d))
    full = glm_full_layers(c) if c["model_type"] == "glm_moe_dsa" else [True] * n
    for i in range(n):
        layer(b, i, c, full[i])
    b.norm("model.norm.weight", d)
    b.linear("lm_head", V, d, quantized=False)
    for j in range(c.get("num_nextn_predict_layers", 0)):
        L = n + j
        p = f"model.layers.{L}"
        layer(b, L, c, True)
        b.norm(p + ".enorm.weight", d)
        b.norm(p + ".hnorm.weight", d)
        b.linear(p + ".eh_proj", d, 2 * d, quantized=False)
        b.norm(p + ".shared_head.norm.weight", d)
        if fp8:   # DeepSeek's layout carries the MTP layer's own embedding and head
            b.bf16(p + ".embed_tokens.weight", b.randn(V, d))
            b.linear(p + ".shared_head.head", V, d, quantized=False)
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), b.t, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="deepseek-v3.2-tiny", choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    make_tiny(a.out, a.seed, a.preset)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
