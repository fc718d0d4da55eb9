"""Write a small random Qwen3.5 checkpoint in the published layout (VLM wrapper config with a
`text_config`, `model.language_model.*`, `lm_head.weight` when untied, `mtp.*`, one `model.visual.*`
tensor that the text model ignores), for the reference's self-test and goldens.

    python3 -m reference.qwen3_5_tiny_checkpoint --out DIR [--moe] [--seed 0]

Dense (`qwen3_5`): 4 layers [linear, linear, linear, full], hidden 128, GDN 2 key heads x 4 value
heads x 64 (the key-head repeat), conv 4; attention 4 heads / 2 KV heads x 64, partial rotary 0.25
(16 dims), theta 1e7; SwiGLU 256; vocab 512; tied embeddings; 1 MTP layer.
MoE (`qwen3_5_moe`): the same with 8 experts top-2 (moe_intermediate 64, shared expert 128), an
untied lm_head; routed experts fused (`experts.gate_up_proj` [E, 2I, H], `experts.down_proj`
[E, H, I]) in the main layers and per expert (`experts.{e}.{gate,up,down}_proj.weight`) in the MTP
layer, as a public inventory of Qwen3.5-35B-A3B lists them (unverified against the Hub files).

Every tensor is BF16 except A_log and dt_bias, written as F32 with values that are not
bf16-representable (a third-party fixture lists them as F32; unverified): the bf16 execution
rounds them on load, which the files exercise. Norm weights: zero-centred (the model adds 1),
except the GDN `norm` (plain, around 1). Weights std fan_in^-0.5 so activations stay O(1).
"""
import argparse
import json
import os

import numpy as np
import torch

from .formats import bf16_bits
from .safetensors_io import write_safetensors

TEXT = {
    "model_type": "qwen3_5_text", "hidden_size": 128, "num_hidden_layers": 4, "vocab_size": 512,
    "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "attn_output_gate": True, "attention_bias": False, "hidden_act": "silu", "rms_norm_eps": 1e-6,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 64,
    "linear_value_head_dim": 64, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [3, 3, 2], "mrope_interleaved": True},
    "max_position_embeddings": 4096, "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False,
    "mamba_ssm_dtype": "float32", "tie_word_embeddings": True, "dtype": "bfloat16",
    "bos_token_id": 0, "eos_token_id": 1,
}
MOE = {"model_type": "qwen3_5_moe_text", "num_experts": 8, "num_experts_per_tok": 2,
       "moe_intermediate_size": 64, "shared_expert_intermediate_size": 128, "tie_word_embeddings": False}


def config(moe=False):
    t = dict(TEXT)
    if moe:
        del t["intermediate_size"]
        t.update(MOE)
    return {"architectures": ["Qwen3_5MoeForConditionalGeneration" if moe else "Qwen3_5ForConditionalGeneration"],
            "model_type": "qwen3_5_moe" if moe else "qwen3_5", "text_config": t,
            "tie_word_embeddings": t["tie_word_embeddings"],
            "vision_config": {"model_type": "qwen3_5_moe_vision" if moe else "qwen3_5", "depth": 0},
            "image_token_id": 500, "video_token_id": 501, "vision_start_token_id": 502, "vision_end_token_id": 503}


class Builder:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.t = {}

    def randn(self, *shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=self.g) * std + mean

    def bf16(self, name, x):
        self.t[name] = ("BF16", bf16_bits(x))

    def f32(self, name, x):
        self.t[name] = ("F32", x.float().numpy())

    def linear(self, name, out, inn):
        self.bf16(name, self.randn(out, inn, std=inn ** -0.5))

    def norm(self, name, n):          # zero-centred: the model uses 1 + w
        self.bf16(name, self.randn(n, std=0.1))


def attention(b, p, c):
    H, Hk, D, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["hidden_size"]
    b.linear(p + ".q_proj.weight", H * D * 2, d)
    b.linear(p + ".k_proj.weight", Hk * D, d)
    b.linear(p + ".v_proj.weight", Hk * D, d)
    b.linear(p + ".o_proj.weight", d, H * D)
    b.norm(p + ".q_norm.weight", D)
    b.norm(p + ".k_norm.weight", D)


def gated_deltanet(b, p, c):
    d, Hk, Hv = c["hidden_size"], c["linear_num_key_heads"], c["linear_num_value_heads"]
    Dk, Dv, K = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
    conv_dim = 2 * Hk * Dk + Hv * Dv
    b.linear(p + ".in_proj_qkv.weight", conv_dim, d)
    b.linear(p + ".in_proj_z.weight", Hv * Dv, d)
    b.linear(p + ".in_proj_b.weight", Hv, d)
    b.linear(p + ".in_proj_a.weight", Hv, d)
    b.bf16(p + ".conv1d.weight", b.randn(conv_dim, 1, K, std=K ** -0.5))
    # A = exp(A_log) in [1, 16) (the official init draws U(0, 16)); dt_bias around 1
    b.f32(p + ".A_log", torch.log(1 + 15 * torch.rand(Hv, generator=b.g)))
    b.f32(p + ".dt_bias", b.randn(Hv, std=0.5, mean=1.0))
    b.bf16(p + ".norm.weight", b.randn(Dv, std=0.1, mean=1.0))
    b.linear(p + ".out_proj.weight", d, Hv * Dv)


def mlp(b, p, c, fused_experts=True):
    d = c["hidden_size"]
    if "num_experts" not in c:
        f = c["intermediate_size"]
        b.linear(p + ".gate_proj.weight", f, d)
        b.linear(p + ".up_proj.weight", f, d)
        b.linear(p + ".down_proj.weight", d, f)
        return
    E, I, Is = c["num_experts"], c["moe_intermediate_size"], c["shared_expert_intermediate_size"]
    b.linear(p + ".gate.weight", E, d)
    if fused_experts:
        b.bf16(p + ".experts.gate_up_proj", b.randn(E, 2 * I, d, std=d ** -0.5))
        b.bf16(p + ".experts.down_proj", b.randn(E, d, I, std=I ** -0.5))
    else:
        for e in range(E):
            b.linear(f"{p}.experts.{e}.gate_proj.weight", I, d)
            b.linear(f"{p}.experts.{e}.up_proj.weight", I, d)
            b.linear(f"{p}.experts.{e}.down_proj.weight", d, I)
    b.linear(p + ".shared_expert.gate_proj.weight", Is, d)
    b.linear(p + ".shared_expert.up_proj.weight", Is, d)
    b.linear(p + ".shared_expert.down_proj.weight", d, Is)
    b.linear(p + ".shared_expert_gate.weight", 1, d)


def layer(b, p, c, kind, fused_experts=True):
    b.norm(p + ".input_layernorm.weight", c["hidden_size"])
    b.norm(p + ".post_attention_layernorm.weight", c["hidden_size"])
    if kind == "full_attention":
        attention(b, p + ".self_attn", c)
    else:
        gated_deltanet(b, p + ".linear_attn", c)
    mlp(b, p + ".mlp", c, fused_experts)


def make_tiny(out_dir, seed=0, moe=False):
    cfg = config(moe)
    c = cfg["text_config"]
    b = Builder(seed)
    d, V = c["hidden_size"], c["vocab_size"]
    lm = "model.language_model"
    b.bf16(lm + ".embed_tokens.weight", b.randn(V, d, std=0.25))   # tied: logits O(3)
    for i, kind in enumerate(c["layer_types"]):
        layer(b, f"{lm}.layers.{i}", c, kind)
    b.norm(lm + ".norm.weight", d)
    if not c["tie_word_embeddings"]:
        b.linear("lm_head.weight", V, d)
    for j in range(c["mtp_num_hidden_layers"]):
        layer(b, f"mtp.layers.{j}", c, "full_attention", fused_experts=False)
    b.linear("mtp.fc.weight", d, 2 * d)
    for n in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        b.norm(f"mtp.{n}.weight", d)
    b.bf16("model.visual.patch_embed.proj.weight", b.randn(8, 3))      # present in real checkpoints, ignored
    os.makedirs(out_dir, exist_ok=True)
    names = sorted(b.t)
    shards = {"model-00001-of-00002.safetensors": [k for k in names if k.startswith(lm + ".layers.")],
              "model-00002-of-00002.safetensors": [k for k in names if not k.startswith(lm + ".layers.")]}
    wm = {}
    for fname, keys in shards.items():
        write_safetensors(os.path.join(out_dir, fname), {k: b.t[k] for k in keys}, {"format": "pt"})
        wm.update({k: fname for k in keys})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f, indent=1)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--moe", action="store_true", help="qwen3_5_moe (8 experts top-2, untied head)")
    a = ap.parse_args()
    make_tiny(a.out, a.seed, a.moe)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
