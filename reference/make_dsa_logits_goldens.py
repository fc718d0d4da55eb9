"""End-to-end DSA logits goldens (DeepSeek-V3.2, GLM-5): tests/goldens/dsa/logits/<case>/ (exact
profile) and tests/goldens/dsa/logits/fast/<case>/ (fast profile, --numerics fast).

    /usr/bin/python3 -m reference.make_dsa_logits_goldens --strata build/release/strata [--case NAME ...]
    /usr/bin/python3 -m reference.make_dsa_logits_goldens --strata build/release/strata --numerics fast
    /usr/bin/python3 -m reference.make_dsa_logits_goldens --model DIR --case NAME [...]
    /usr/bin/python3 -m reference.make_dsa_logits_goldens --tiny [--case NAME ...]

Checkpoint per case: `strata make-model --preset P --seed S` (--strata), a given directory (--model,
every selected case runs on it), or reference.dsa_tiny_checkpoint with preset P and seed S (--tiny).
Then reference.logits' contract (prefill ids[0..K), one teacher-forced decode step per remaining id)
and the same compact record as the DeepSeek-V4 / Qwen3.5 goldens (reference/make_logits_goldens.py):
meta.json with the per-row 64-bit hash of the exact float32 logits bytes (`row_hash`), subset.npy
(logits at vocab indices i * (vocab // 512), i < 512), top_ids.npy / top_vals.npy (top-10, ties ->
lower id). meta.json's `source` says which checkpoint made the case; the committed goldens come from
--strata (the presets deepseek-v3.2-tiny and glm5-tiny).

Cases: 150 tokens (past index_topk = 64, so the indexer selects in prefill and decode) with the
prefill K = 1 (every token decoded), K = 75 and K = n (one row: the prefill path alone), and one
300-token case per variant; each variant gets each K once.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import torch

from . import dsa
from . import numerics as N
from .dsa_tiny_checkpoint import make_tiny
from .make_logits_goldens import TOPK, _ids, row_hash

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "goldens", "dsa", "logits")
SUBSET = 512

# name: (preset, model seed, ids seed, n ids, prefill)
CASES = {
    "dsv32_tiny_s1_n150_k1": ("deepseek-v3.2-tiny", 1, 111, 150, 1),
    "dsv32_tiny_s2_n150_k75": ("deepseek-v3.2-tiny", 2, 222, 150, 75),
    "glm5_tiny_s3_n150_k150": ("glm5-tiny", 3, 333, 150, 150),
    "glm5_tiny_s4_n150_k1": ("glm5-tiny", 4, 444, 150, 1),
    # 300 tokens: the prefill alone selects (150 > 64), then 150 decode steps up to 300 cached keys
    "dsv32_tiny_s1_n300_k150": ("deepseek-v3.2-tiny", 1, 555, 300, 150),
    # 300 tokens, prefill 75 then 225 decode steps: GLM-5's shared layers in decode
    "glm5_tiny_s3_n300_k75": ("glm5-tiny", 3, 666, 300, 75),
}


def checkpoint(name, a, tmp):
    """(directory, source description) of the case's checkpoint."""
    preset, seed = CASES[name][:2]
    if a.model:
        return a.model, f"given checkpoint {os.path.basename(os.path.normpath(a.model))}"
    mdir = os.path.join(tmp, name)
    if a.strata:
        subprocess.run([a.strata, "make-model", "--preset", preset, "--seed", str(seed), "--out", mdir],
                       check=True, stdout=subprocess.DEVNULL)
        return mdir, f"strata make-model --preset {preset} --seed {seed}"
    make_tiny(mdir, seed, preset)
    return mdir, f"reference.dsa_tiny_checkpoint --preset {preset} --seed {seed}"


def case_model(name, a, tmp):
    """(the case's checkpoint loaded in the reference, source description)."""
    mdir, source = checkpoint(name, a, tmp)
    torch.set_grad_enabled(False)
    return dsa.Model(mdir, load_mtp=False), source


def case_logits(name, model, rows=None):
    """(ids, logits [rows, vocab]) of the case in the current numerics profile; rows: only the first
    rows (row r depends on ids[0..K+r) alone)."""
    preset, seed, ids_seed, n, k = CASES[name]
    ids = _ids(ids_seed, n, model.cfg.vocab_size)
    m = n if rows is None else min(n, k - 1 + rows)
    return ids, dsa.run_teacher_forcing(model, ids[:m], k).numpy().astype(np.float32)


def make_case(name, a, tmp, numerics="exact"):
    preset, seed, ids_seed, n, k = CASES[name]
    model, source = case_model(name, a, tmp)
    vocab = model.cfg.vocab_size
    with N.profile(numerics):
        ids, logits = case_logits(name, model)
    rows = logits.shape[0]
    assert rows == 1 + n - k
    stride = max(vocab // SUBSET, 1)
    sub_idx = np.arange(min(SUBSET, vocab), dtype=np.int64) * stride
    order = np.argsort(-logits, axis=1, kind="stable")[:, :TOPK]
    out = os.path.join(ROOT, name) if numerics == "exact" else os.path.join(ROOT, numerics, name)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "subset.npy"), np.ascontiguousarray(logits[:, sub_idx]))
    np.save(os.path.join(out, "top_ids.npy"), order.astype(np.int64))
    np.save(os.path.join(out, "top_vals.npy"), np.take_along_axis(logits, order, 1).astype(np.float32))
    meta = {
        "what": "reference.logits (prefill ids[0..prefill), then one teacher-forced decode step per id) on the "
                "checkpoint named by `source`; row r = logits after position prefill-1+r (fp32)",
        "preset": preset, "seed": seed, "source": source, "model_type": model.cfg.model_type,
        "ids": ids, "prefill": k, "rows": rows, "vocab": vocab,
        "subset_stride": stride, "subset_count": len(sub_idx), "topk": TOPK,
        "hash": "row_hash: sum_i w_i*P^(i+1) mod 2^64 over the fp32 bit patterns, P=0x100000001b3; ^= n; splitmix64",
        "row_hashes": [f"{row_hash(logits[r]):016x}" for r in range(rows)],
        "max_abs_logit": float(np.abs(logits).max()),
    }
    if numerics != "exact":
        meta["numerics"] = numerics
        meta["what"] += ("; numerics profile '%s': the weight products accumulate as src/kernels/fast_linear.h "
                         "defines (reference/numerics.py linear_mm)" % numerics)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{name} ({numerics}): {rows} rows, max|logit| {meta['max_abs_logit']:.3f} ({source})", flush=True)
    return logits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--strata", help="path of the strata binary (make-model --preset P --seed S)")
    src.add_argument("--model", help="a checkpoint directory: every selected case runs on it")
    src.add_argument("--tiny", action="store_true", help="reference.dsa_tiny_checkpoint with the case's preset and seed")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    ap.add_argument("--keep", help="also save the full logits as <keep>/<case>.npy")
    ap.add_argument("--numerics", choices=N.PROFILES, default="exact",
                    help="exact: <case>/ (default); fast: fast/<case>/")
    a = ap.parse_args(argv)
    if a.strata:
        a.strata = os.path.abspath(a.strata)
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.case or list(CASES):
            logits = make_case(name, a, tmp, a.numerics)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                np.save(os.path.join(a.keep, name + ".npy"), logits)
            if not a.model:
                shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


if __name__ == "__main__":
    main()
