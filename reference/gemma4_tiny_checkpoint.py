"""Write a small random Gemma 4 checkpoint in the published layout (the `gemma4` wrapper config with
a `text_config`, `model.language_model.*`, tied embeddings, one ignored `model.vision_tower.*`
tensor), for the reference's self-test and goldens.

    python3 -m reference.gemma4_tiny_checkpoint --out DIR [--preset gemma4-tiny] [--seed 0]

The configs are exactly those of `strata make-model --preset P` (the C++ writer's random values
differ). Common: hidden 128, 6 layers [sliding, sliding, full, sliding, sliding, full], window 32,
4 heads, 2 KV heads, head_dim 32 (sliding) / 64 (full, proportional RoPE 0.25 -> 8 of 32 angles),
intermediate 256, vocab 512, softcap 30, no PLE.
  gemma4-tiny       as common
  gemma4-kv-tiny    K = V on the full layers (attention_k_eq_v, 1 global KV head, no v_proj)
  gemma4-e-tiny     PLE 16 per layer, the last 2 layers KV-shared (4 <- 3, 5 <- 2), double-wide MLP there
  gemma4-moe-tiny   K = V as kv-tiny, MoE block (8 experts top-2, moe_intermediate 32) beside a 64-wide MLP

Random values (uniform, so tails stay bounded): linears U(-a, a) with std fan_in^-0.5, norm
weights 1 + 0.1 u (plain weights, around 1), layer_scalar in [0.5, 1], embeddings 1.7 u,
router.scale 1 + 0.1 u, per_expert_scale in [0.5, 1.5]; u ~ U(-1, 1). All BF16, one file.
"""
import argparse
import copy
import json
import os

import torch

from .formats import bf16_bits
from .gemma4 import Config
from .safetensors_io import write_safetensors

SLIDING, FULL = "sliding_attention", "full_attention"
TEXT = {
    "model_type": "gemma4_text", "hidden_size": 128, "num_hidden_layers": 6,
    "layer_types": [SLIDING, SLIDING, FULL, SLIDING, SLIDING, FULL], "sliding_window": 32,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 64,
    "intermediate_size": 256, "vocab_size": 512, "rms_norm_eps": 1e-6,
    "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0, "tie_word_embeddings": True,
    "max_position_embeddings": 4096,
    "rope_parameters": {SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
                        FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}},
    "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 512, "num_kv_shared_layers": 0,
    "use_double_wide_mlp": False, "enable_moe_block": False, "attention_k_eq_v": False,
    "num_global_key_value_heads": None, "attention_bias": False,
    "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
}
PRESETS = {
    "gemma4-tiny": {},
    "gemma4-kv-tiny": {"attention_k_eq_v": True, "num_global_key_value_heads": 1},
    "gemma4-e-tiny": {"hidden_size_per_layer_input": 16, "num_kv_shared_layers": 2, "use_double_wide_mlp": True},
    "gemma4-moe-tiny": {"attention_k_eq_v": True, "num_global_key_value_heads": 1, "enable_moe_block": True,
                        "num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 32, "intermediate_size": 64},
}


def config(preset):
    t = copy.deepcopy(TEXT)
    t.update(PRESETS[preset])
    return {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "text_config": t,
            "tie_word_embeddings": True}


class Builder:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.t = {}

    def u(self, *shape):
        return torch.rand(*shape, generator=self.g) * 2 - 1

    def put(self, name, x):
        self.t[name] = ("BF16", bf16_bits(x))

    def linear(self, name, *shape):       # [..., out, in]: U(-a, a), std = fan_in^-0.5
        self.put(name, self.u(*shape) * (3.0 / shape[-1]) ** 0.5)

    def norm(self, name, n):              # plain weight around 1
        self.put(name, 1 + 0.1 * self.u(n))


def layer(b, p, cfg, i):
    """Layer i's tensors; which exist and their shapes follow the reference's reading of the config."""
    H, Hq = cfg.hidden_size, cfg.n_heads
    D, KV, k_eq_v, _ = cfg.attn_dims(i)
    for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
        b.norm(f"{p}.{n}.weight", H)
    b.put(p + ".layer_scalar", 0.75 + 0.25 * b.u(1))
    a = p + ".self_attn"
    b.linear(a + ".q_proj.weight", Hq * D, H)
    b.norm(a + ".q_norm.weight", D)
    b.linear(a + ".o_proj.weight", H, Hq * D)
    if cfg.kv_source(i) is None:          # KV-shared layers have no k/v projections or norms
        b.linear(a + ".k_proj.weight", KV * D, H)
        b.norm(a + ".k_norm.weight", D)
        if not k_eq_v:
            b.linear(a + ".v_proj.weight", KV * D, H)
    I = cfg.mlp_inter(i)
    b.linear(p + ".mlp.gate_proj.weight", I, H)
    b.linear(p + ".mlp.up_proj.weight", I, H)
    b.linear(p + ".mlp.down_proj.weight", H, I)
    if cfg.moe:
        E, Im = cfg.n_experts, cfg.moe_inter
        b.linear(p + ".router.proj.weight", E, H)
        b.put(p + ".router.scale", 1 + 0.1 * b.u(H))
        b.put(p + ".router.per_expert_scale", 1 + 0.5 * b.u(E))
        b.linear(p + ".experts.gate_up_proj", E, 2 * Im, H)
        b.linear(p + ".experts.down_proj", E, H, Im)
        for n in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
            b.norm(f"{p}.{n}.weight", H)
    if cfg.ple_dim:
        b.linear(p + ".per_layer_input_gate.weight", cfg.ple_dim, H)
        b.linear(p + ".per_layer_projection.weight", H, cfg.ple_dim)
        b.norm(p + ".post_per_layer_input_norm.weight", H)


def make_tiny(out_dir, seed=0, preset="gemma4-tiny"):
    cfg = config(preset)
    c = cfg["text_config"]
    b = Builder(seed)
    H, V, L, P = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"], c["hidden_size_per_layer_input"]
    lm = "model.language_model"
    b.put(lm + ".embed_tokens.weight", 1.7 * b.u(V, H))
    g = Config(cfg)
    for i in range(L):
        layer(b, f"{lm}.layers.{i}", g, i)
    b.norm(lm + ".norm.weight", H)
    if P:
        b.put(lm + ".embed_tokens_per_layer.weight", 1.7 * b.u(c["vocab_size_per_layer_input"], L * P))
        b.linear(lm + ".per_layer_model_projection.weight", L * P, H)
        b.norm(lm + ".per_layer_projection_norm.weight", P)
    b.put("model.vision_tower.patch_embedder.input_proj.weight", b.u(8, 8))   # present in real checkpoints, ignored
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), b.t, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="gemma4-tiny")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    make_tiny(a.out, a.seed, a.preset)
    print("wrote", a.out, a.preset)


if __name__ == "__main__":
    main()
