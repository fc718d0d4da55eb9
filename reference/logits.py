"""strata's numerical contract for logits (DeepSeek-V4, Qwen3.5, the DSA family DeepSeek-V3.2 / GLM-5,
Gemma 4; chosen by config.json's model_type).

    python3 -m reference.logits --model DIR --ids 1,2,3,... --prefill K --out FILE.npy [--numerics exact|fast]

Prefills ids[0..K) from position 0, then runs one decode step per remaining id (teacher forcing),
using the carried state (DeepSeek-V4: 128-slot window ring, compressor / indexer partial states,
compressed entries; Qwen3.5: conv tails, delta-rule states, K/V caches; DSA: FP8 latent and index-key
caches; Gemma 4: per-layer K/V caches). Writes float32 logits
[1 + n - K, vocab]: the last-position logits after the prefill, then the logits after each decode
step (Qwen3.5's and Gemma 4's are bf16 values, as their official lm_head / softcap return them).
--numerics fast: the weight products in the fast profile's order (src/kernels/fast_linear.h;
README §Fast profile).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from . import deepseek_v4 as D
from . import dsa as DSA
from . import gemma4 as GM
from . import numerics as N
from . import qwen3_5 as Q


def model_module(directory):
    """The reference module for a checkpoint directory, by its config.json model_type."""
    with open(os.path.join(directory, "config.json")) as f:
        mt = json.load(f).get("model_type")
    if mt in DSA.MODEL_TYPES:
        return DSA
    if mt in GM.WRAPPER_TYPES + GM.TEXT_TYPES:
        return GM
    return Q if mt in Q.WRAPPER_TYPES + Q.TEXT_TYPES else D


def main(argv=None):
    ap = argparse.ArgumentParser(description="reference logits (prefill + teacher-forced decode)")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--prefill", type=int, required=True, help="number of ids in the prefill (>= 1)")
    ap.add_argument("--out", required=True, help="output .npy (float32 [1 + n - K, vocab])")
    ap.add_argument("--attn-chunk", type=int, default=0,
                    help="DeepSeek-V4 only. 0 (default): one-pass softmax; 64: emulate the official kernel's online-softmax blocks")
    ap.add_argument("--numerics", choices=N.PROFILES, default="exact",
                    help="exact (default): products rounded once; fast: the engine's fast profile")
    a = ap.parse_args(argv)
    ids = [int(t) for t in a.ids.split(",") if t.strip()]
    if not 1 <= a.prefill <= len(ids):
        sys.exit("--prefill must be in [1, number of ids]")
    M = model_module(a.model)
    if M is D:
        D.ATTN_CHUNK = a.attn_chunk or None
    elif a.attn_chunk:
        sys.exit("--attn-chunk applies to DeepSeek-V4 only")
    torch.set_grad_enabled(False)
    model = M.Model(a.model, load_mtp=False)
    if any(not 0 <= t < model.cfg.vocab_size for t in ids):
        sys.exit("token id out of range")
    with N.profile(a.numerics):
        logits = M.run_teacher_forcing(model, ids, a.prefill)
    np.save(a.out, logits.numpy().astype(np.float32))
    print(f"wrote {a.out} {tuple(logits.shape)}")


if __name__ == "__main__":
    main()
