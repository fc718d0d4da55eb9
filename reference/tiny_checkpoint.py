"""Write a small random DeepSeek-V4 checkpoint in the official layout (names, dtypes, shapes of
docs/deepseek-v4-checkpoint.md) for development until `strata make-model` exists.

    python3 -m reference.tiny_checkpoint --out DIR [--seed 0] [--layers 5]

FP8 linears: real 128x128 block quantization with UE8M0 scales; routed experts: real MXFP4
(per-32 UE8M0 scales, low nibble = even column). Weights are scaled (std 1/sqrt(fan_in)) so
activations stay O(1). Written as two shards + model.safetensors.index.json.
"""
import argparse
import json
import os

import numpy as np
import torch

from .formats import bf16_bits, quant_fp4_weight, quant_fp8_weight
from .safetensors_io import write_safetensors

TINY = {
    "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
    "hidden_size": 256, "num_attention_heads": 4, "head_dim": 512, "qk_rope_head_dim": 64,
    "num_key_value_heads": 1, "q_lora_rank": 128, "o_groups": 2, "o_lora_rank": 128,
    "num_hidden_layers": 5, "num_nextn_predict_layers": 1,
    "compress_ratios": [0, 0, 4, 128, 4, 0], "compress_rope_theta": 160000, "rope_theta": 10000,
    "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                     "beta_fast": 32, "beta_slow": 1},
    "index_n_heads": 4, "index_head_dim": 128, "index_topk": 8,
    "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
    "routed_scaling_factor": 1.5, "scoring_func": "sqrtsoftplus", "norm_topk_prob": True,
    "num_hash_layers": 3, "hc_mult": 4, "hc_sinkhorn_iters": 20, "hc_eps": 1e-6, "rms_norm_eps": 1e-6,
    "swiglu_limit": 10.0, "sliding_window": 128, "vocab_size": 512, "max_position_embeddings": 1048576,
    "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": "bfloat16", "expert_dtype": "fp4",
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "scale_fmt": "ue8m0", "weight_block_size": [128, 128]},
}


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

    def fp8(self, name, out, inn):
        codes, scale = quant_fp8_weight(self.randn(out, inn, std=inn ** -0.5))
        self.t[name + ".weight"] = ("F8_E4M3", codes)
        self.t[name + ".scale"] = ("F8_E8M0", scale)

    def fp4(self, name, out, inn):
        packed, scale = quant_fp4_weight(self.randn(out, inn, std=inn ** -0.5))
        self.t[name + ".weight"] = ("I8", packed)
        self.t[name + ".scale"] = ("F8_E8M0", scale)

    def norm(self, name, n):
        self.bf16(name, self.randn(n, std=0.1, mean=1.0))


def hc_params(b, p, hc, d, kind):
    mix = (2 + hc) * hc
    b.f32(f"{p}.hc_{kind}_fn", b.randn(mix, hc * d, std=(hc * d) ** -0.5))
    base = b.randn(mix, std=0.3)
    base[2 * hc:] += (2.0 * torch.eye(hc)).flatten()       # comb prefers keeping streams
    b.f32(f"{p}.hc_{kind}_base", base)
    b.f32(f"{p}.hc_{kind}_scale", b.randn(3, std=0.2, mean=0.5))


def block(b, p, c, layer_id):
    d, H, hd = c["hidden_size"], c["num_attention_heads"], c["head_dim"]
    ql, G, ol = c["q_lora_rank"], c["o_groups"], c["o_lora_rank"]
    hc, E, mi = c["hc_mult"], c["n_routed_experts"], c["moe_intermediate_size"]
    ratio = c["compress_ratios"][layer_id]
    for kind in ("attn", "ffn"):
        hc_params(b, p, hc, d, kind)
    b.norm(f"{p}.attn_norm.weight", d)
    b.norm(f"{p}.ffn_norm.weight", d)
    a = p + ".attn"
    b.f32(a + ".attn_sink", b.randn(H))
    b.fp8(a + ".wq_a", ql, d)
    b.norm(a + ".q_norm.weight", ql)
    b.fp8(a + ".wq_b", H * hd, ql)
    b.fp8(a + ".wkv", hd, d)
    b.norm(a + ".kv_norm.weight", hd)
    b.fp8(a + ".wo_a", G * ol, H * hd // G)
    b.fp8(a + ".wo_b", d, G * ol)
    comps = []
    if ratio:
        comps.append((a + ".compressor", ratio, hd))
    if ratio == 4:
        ih, idim = c["index_n_heads"], c["index_head_dim"]
        b.fp8(a + ".indexer.wq_b", ih * idim, ql)
        b.bf16(a + ".indexer.weights_proj.weight", b.randn(ih, d, std=d ** -0.5))
        comps.append((a + ".indexer.compressor", 4, idim))
    for cp, r, cd in comps:
        coff = 2 if r == 4 else 1
        b.bf16(cp + ".wkv.weight", b.randn(coff * cd, d, std=d ** -0.5))
        b.bf16(cp + ".wgate.weight", b.randn(coff * cd, d, std=d ** -0.5))
        b.f32(cp + ".ape", b.randn(r, coff * cd, std=0.5))
        b.norm(cp + ".norm.weight", cd)
    f = p + ".ffn"
    b.bf16(f + ".gate.weight", b.randn(E, d, std=d ** -0.5))
    if layer_id < c["num_hash_layers"]:
        ranks = torch.rand(c["vocab_size"], E, generator=b.g).argsort(-1)
        b.t[f + ".gate.tid2eid"] = ("I64", ranks[:, :c["num_experts_per_tok"]].numpy().astype(np.int64))
    else:
        b.f32(f + ".gate.bias", b.randn(E, std=0.1))
    for e in range(E):
        b.fp4(f"{f}.experts.{e}.w1", mi, d)
        b.fp4(f"{f}.experts.{e}.w3", mi, d)
        b.fp4(f"{f}.experts.{e}.w2", d, mi)
    b.fp8(f + ".shared_experts.w1", mi, d)
    b.fp8(f + ".shared_experts.w3", mi, d)
    b.fp8(f + ".shared_experts.w2", d, mi)


def make_tiny(out_dir, seed=0, **overrides):
    c = dict(TINY)
    c.update(overrides)
    b = Builder(seed)
    d, hc, V = c["hidden_size"], c["hc_mult"], c["vocab_size"]
    b.bf16("embed.weight", b.randn(V, d))
    b.bf16("head.weight", b.randn(V, d, std=d ** -0.5))
    b.norm("norm.weight", d)
    b.f32("hc_head_fn", b.randn(hc, hc * d, std=(hc * d) ** -0.5))
    b.f32("hc_head_base", b.randn(hc, std=0.3))
    b.f32("hc_head_scale", b.randn(1, std=0.2, mean=0.5))
    n = c["num_hidden_layers"]
    for i in range(n):
        block(b, f"layers.{i}", c, i)
    for j in range(c["num_nextn_predict_layers"]):
        p = f"mtp.{j}"
        block(b, p, c, n + j)
        b.fp8(p + ".e_proj", d, d)
        b.fp8(p + ".h_proj", d, d)
        for nm in ("enorm", "hnorm", "norm"):
            b.norm(f"{p}.{nm}.weight", d)
        b.f32(p + ".hc_head_fn", b.randn(hc, hc * d, std=(hc * d) ** -0.5))
        b.f32(p + ".hc_head_base", b.randn(hc, std=0.3))
        b.f32(p + ".hc_head_scale", b.randn(1, std=0.2, mean=0.5))
    os.makedirs(out_dir, exist_ok=True)
    names = sorted(b.t)
    shards = {"model-00001-of-00002.safetensors": [k for k in names if not k.startswith("layers.")],
              "model-00002-of-00002.safetensors": [k for k in names if k.startswith("layers.")]}
    wm = {}
    for fname, keys in shards.items():
        write_safetensors(os.path.join(out_dir, fname), {k: b.t[k] for k in keys}, {"format": "pt"})
        wm.update({k: fname for k in keys})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f, indent=1)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=None, help="num_hidden_layers (compress_ratios cycles 4,128 after 2)")
    a = ap.parse_args()
    over = {}
    if a.layers is not None:
        r = [0, 0] + [4 if i % 2 == 0 else 128 for i in range(max(a.layers - 2, 0))]
        over = {"num_hidden_layers": a.layers, "compress_ratios": r[:a.layers] + [0]}
    make_tiny(a.out, a.seed, **over)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
