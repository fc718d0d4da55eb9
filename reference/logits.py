"""strata's numerical contract for DeepSeek-V4 logits.

    python3 -m reference.logits --model DIR --ids 1,2,3,... --prefill K --out FILE.npy

Prefills ids[0..K) from position 0, then runs one decode step per remaining id (teacher forcing),
using the carried caches (128-slot window ring, compressor / indexer partial states, compressed
entries). Writes float32 logits [1 + n - K, vocab]: the last-position logits after the prefill,
then the logits after each decode step.
"""
import argparse
import sys

import numpy as np
import torch

from . import deepseek_v4 as D


def main(argv=None):
    ap = argparse.ArgumentParser(description="DeepSeek-V4 reference logits (prefill + teacher-forced decode)")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--prefill", type=int, required=True, help="number of ids in the prefill (>= 1)")
    ap.add_argument("--out", required=True, help="output .npy (float32 [1 + n - K, vocab])")
    ap.add_argument("--attn-chunk", type=int, default=0,
                    help="0 (default): one-pass softmax; 64: emulate the official kernel's online-softmax blocks")
    a = ap.parse_args(argv)
    ids = [int(t) for t in a.ids.split(",") if t.strip()]
    if not 1 <= a.prefill <= len(ids):
        sys.exit("--prefill must be in [1, number of ids]")
    D.ATTN_CHUNK = a.attn_chunk or None
    torch.set_grad_enabled(False)
    model = D.Model(a.model, load_mtp=False)
    if any(not 0 <= t < model.cfg.vocab_size for t in ids):
        sys.exit("token id out of range")
    logits = D.run_teacher_forcing(model, ids, a.prefill)
    np.save(a.out, logits.numpy().astype(np.float32))
    print(f"wrote {a.out} {tuple(logits.shape)}")


if __name__ == "__main__":
    main()
