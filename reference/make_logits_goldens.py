"""End-to-end logits goldens: tests/goldens/deepseek_v4/logits/<case>/ (exact profile) and
tests/goldens/deepseek_v4/logits/fast/<case>/ (fast profile, --numerics fast).

    /usr/bin/python3 -m reference.make_logits_goldens --strata build/release/strata [--case NAME ...]
    /usr/bin/python3 -m reference.make_logits_goldens --strata build/release/strata --numerics fast

For each case: `strata make-model --preset P --seed S` into a temp dir (deterministic), the
reference logits for fixed ids with prefill K then teacher-forced decode (reference.logits'
contract), and a compact record instead of the [1 + n - K, 129280] rows:

* meta.json: preset, seed, ids, prefill, rows, vocab, per row the 64-bit hash (hex) of the exact
  float32 logits bytes (`row_hash` below; tests/models/dsv4_logits_golden_test.cpp implements
  the same), the fixed vocabulary indices of the subset;
* subset.npy  f4 [rows, 512]: logits at vocab indices i * (vocab // 512), i < 512 (diagnostics);
* top_ids.npy i8 [rows, 10], top_vals.npy f4 [rows, 10]: top-10 (descending, ties -> lower id).

The fast profile's goldens (reference/numerics.py `profile("fast")`: the weight products in the
order of src/kernels/fast_linear.h) use the same cases and record; meta.json adds `numerics`.
Their tolerance comes from reference/fast_spread.py (reference/README.md §Fast profile).

row_hash(row): the row's float32 bit patterns as uint32 words w_0..w_{n-1};
  h = sum_i w_i * P^(i+1) mod 2^64, P = 0x100000001b3 (odd, so every single-word change changes h);
  h ^= n; then the splitmix64 finalizer.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from . import deepseek_v4 as D
from . import numerics as N

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "tests", "goldens", "deepseek_v4", "logits")
P = np.uint64(0x100000001B3)
M64 = (1 << 64) - 1
SUBSET = 512
TOPK = 10


def _ids(seed, n, vocab=129280):
    """Deterministic ids in [2, vocab) (no bos/eos), from numpy's PCG64."""
    return [int(v) for v in np.random.Generator(np.random.PCG64(seed)).integers(2, vocab, n)]


# name: (preset, model seed, ids seed, n ids, prefill)
CASES = {
    # 131-token prefill (window wrap at 128, first HCA entry, 32 CSA entries), then decode to 164:
    # the top-k threshold is crossed in the prefill's last tokens (33 entries at 132) and every
    # decode step crosses/continues 4-token blocks with 33..41 CSA entries, top-32 selected.
    "flash_tiny_s1_n164_k131": ("flash-tiny", 1, 101, 164, 131),
    # prefill 120 then decode 121..150: the window ring wraps, the first HCA entry (token 127) and
    # the CSA entry count passes index_topk = 32 (token 131) all during decode.
    "pro_tiny_s2_n150_k120": ("pro-tiny", 2, 202, 150, 120),
    # prefill 1, every token decoded from position 1: 4-token blocks emitted by the decode state
    # machine from the start (short: the reference decodes slowly).
    "flash_tiny_s3_n40_k1": ("flash-tiny", 3, 303, 40, 1),
    # ~300 tokens: prefill 131, then 169 decode steps past the second HCA entry (token 255) and
    # the second window wrap, CSA top-32 of 33..75 entries.
    "flash_tiny_s4_n300_k131": ("flash-tiny", 4, 404, 300, 131),
    # ~300 tokens, all decoded from position 1 on pro-tiny (HCA from layer 0).
    "pro_tiny_s5_n300_k1": ("pro-tiny", 5, 505, 300, 1),
}


def splitmix64(h):
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9 & M64
    h = (h ^ (h >> 27)) * 0x94D049BB133111EB & M64
    return h ^ (h >> 31)


def row_hash(row):
    w = np.ascontiguousarray(row, dtype=np.float32).view(np.uint32).astype(np.uint64)
    n = w.shape[0]
    with np.errstate(over="ignore"):
        pw = np.cumprod(np.full(n, P, dtype=np.uint64), dtype=np.uint64)
        h = int(np.sum(w * pw, dtype=np.uint64))
    return splitmix64(h ^ n)


def case_model(name, strata, tmp):
    """The case's checkpoint (strata make-model, deterministic) loaded in the reference."""
    preset, seed = CASES[name][:2]
    mdir = os.path.join(tmp, name)
    subprocess.run([strata, "make-model", "--preset", preset, "--seed", str(seed), "--out", mdir],
                   check=True, stdout=subprocess.DEVNULL)
    torch.set_grad_enabled(False)
    return D.Model(mdir, load_mtp=False)


def case_logits(name, model, rows=None):
    """(ids, logits [rows, vocab]) of the case in the current numerics profile; rows: only the first
    rows (row r depends on ids[0..K+r) alone)."""
    preset, seed, ids_seed, n, k = CASES[name]
    ids = _ids(ids_seed, n, model.cfg.vocab_size)
    m = n if rows is None else min(n, k - 1 + rows)
    return ids, D.run_teacher_forcing(model, ids[:m], k).numpy().astype(np.float32)


def make_case(name, strata, tmp, numerics="exact"):
    preset, seed, ids_seed, n, k = CASES[name]
    model = case_model(name, strata, tmp)
    vocab = model.cfg.vocab_size
    with N.profile(numerics):
        ids, logits = case_logits(name, model)
    rows = logits.shape[0]
    assert rows == 1 + n - k
    stride = vocab // SUBSET
    sub_idx = np.arange(SUBSET, dtype=np.int64) * stride
    order = np.argsort(-logits, axis=1, kind="stable")[:, :TOPK]
    out = os.path.join(ROOT, name) if numerics == "exact" else os.path.join(ROOT, numerics, name)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "subset.npy"), np.ascontiguousarray(logits[:, sub_idx]))
    np.save(os.path.join(out, "top_ids.npy"), order.astype(np.int64))
    np.save(os.path.join(out, "top_vals.npy"), np.take_along_axis(logits, order, 1).astype(np.float32))
    meta = {
        "what": "reference.logits (prefill ids[0..prefill), then one teacher-forced decode step per id) on "
                "`strata make-model --preset P --seed S`; row r = logits after position prefill-1+r",
        "preset": preset, "seed": seed, "ids": ids, "prefill": k, "rows": rows, "vocab": vocab,
        "subset_stride": stride, "subset_count": SUBSET, "topk": TOPK,
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
    print(f"{name} ({numerics}): {rows} rows, max|logit| {meta['max_abs_logit']:.3f}", flush=True)
    return logits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", required=True, help="path of the strata binary (for make-model)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    ap.add_argument("--keep", help="also save the full logits as <keep>/<case>.npy")
    ap.add_argument("--numerics", choices=N.PROFILES, default="exact",
                    help="exact: <case>/ (default); fast: fast/<case>/")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.case or list(CASES):
            logits = make_case(name, os.path.abspath(a.strata), tmp, a.numerics)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                np.save(os.path.join(a.keep, name + ".npy"), logits)
            shutil_rm(os.path.join(tmp, name))


def shutil_rm(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
