"""End-to-end logits goldens of a model the reference runs in bf16 (Qwen3.5, Gemma 4), one
implementation; make_qwen3_5_logits_goldens / make_gemma4_logits_goldens name the model, its cases
and its tiny checkpoint writer.

Checkpoint per case: `strata make-model --preset P --seed S` (--strata), a given directory (--model,
every selected case runs on it), or the model's tiny checkpoint writer with seed S (--tiny). Then
reference.logits' contract (prefill ids[0..K), one teacher-forced decode step per remaining id) and
the compact record of reference/make_logits_goldens.py: meta.json with the per-row 64-bit hash of the
exact float32 logits bytes (`row_hash`), subset.npy (logits at vocab indices i * (vocab // 128),
i < 128), top_ids.npy / top_vals.npy (top-10, ties -> lower id). meta.json's `source` says which
checkpoint made the case. The fast profile's goldens (--numerics fast, under fast/) use the same
cases and record, meta.json with `numerics`.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import torch

from . import numerics as N
from .make_logits_goldens import TOPK, _ids, row_hash

SUBSET = 128
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Goldens:
    """arch: the goldens' folder (tests/goldens/<arch>/logits); module: the reference model
    (Model, run_teacher_forcing); cases: name -> (preset, model seed, ids seed, n ids, prefill);
    tiny(mdir, seed, preset) -> source description: writes the reference's own tiny checkpoint;
    what: appended to meta.json's `what`."""

    def __init__(self, arch, module, cases, tiny, what=""):
        self.arch, self.module, self.cases, self.tiny, self.what = arch, module, cases, tiny, what
        self.root = os.path.join(REPO, "tests", "goldens", arch, "logits")

    def checkpoint(self, name, a, tmp):
        """(directory, source description) of the case's checkpoint."""
        preset, seed = self.cases[name][:2]
        if a.model:
            return a.model, f"given checkpoint {os.path.basename(os.path.normpath(a.model))}"
        mdir = os.path.join(tmp, name)
        if a.strata:
            subprocess.run([a.strata, "make-model", "--preset", preset, "--seed", str(seed), "--out", mdir],
                           check=True, stdout=subprocess.DEVNULL)
            return mdir, f"strata make-model --preset {preset} --seed {seed}"
        return mdir, self.tiny(mdir, seed, preset)

    def case_model(self, name, a, tmp):
        """(the case's checkpoint loaded in the reference, source description)."""
        mdir, source = self.checkpoint(name, a, tmp)
        torch.set_grad_enabled(False)
        return self.module.Model(mdir, load_mtp=False), source

    def case_logits(self, name, model, rows=None):
        """(ids, logits [rows, vocab]) of the case in the current numerics profile; rows: only the
        first rows (row r depends on ids[0..K+r) alone)."""
        preset, seed, ids_seed, n, k = self.cases[name]
        ids = _ids(ids_seed, n, model.cfg.vocab_size)
        m = n if rows is None else min(n, k - 1 + rows)
        return ids, self.module.run_teacher_forcing(model, ids[:m], k).numpy().astype(np.float32)

    def make_case(self, name, a, tmp, numerics="exact", root=None):
        root = root or self.root
        preset, seed, ids_seed, n, k = self.cases[name]
        model, source = self.case_model(name, a, tmp)
        vocab = model.cfg.vocab_size
        with N.profile(numerics):
            ids, logits = self.case_logits(name, model)
        rows = logits.shape[0]
        assert rows == 1 + n - k
        stride = max(vocab // SUBSET, 1)
        sub_idx = np.arange(min(SUBSET, vocab), dtype=np.int64) * stride
        order = np.argsort(-logits, axis=1, kind="stable")[:, :TOPK]
        out = os.path.join(root, name) if numerics == "exact" else os.path.join(root, numerics, name)
        os.makedirs(out, exist_ok=True)
        np.save(os.path.join(out, "subset.npy"), np.ascontiguousarray(logits[:, sub_idx]))
        np.save(os.path.join(out, "top_ids.npy"), order.astype(np.int64))
        np.save(os.path.join(out, "top_vals.npy"), np.take_along_axis(logits, order, 1).astype(np.float32))
        meta = {
            "what": "reference.logits (prefill ids[0..prefill), then one teacher-forced decode step per id) on the "
                    "checkpoint named by `source`; row r = logits after position prefill-1+r (bf16 values" +
                    self.what + ")",
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

    def main(self, argv=None, description=""):
        ap = argparse.ArgumentParser(description=description)
        src = ap.add_mutually_exclusive_group(required=True)
        src.add_argument("--strata", help="path of the strata binary (make-model --preset P --seed S)")
        src.add_argument("--model", help="a checkpoint directory: every selected case runs on it")
        src.add_argument("--tiny", action="store_true", help="the reference's tiny checkpoint with the case's seed")
        ap.add_argument("--case", action="append", choices=sorted(self.cases), help="default: all")
        ap.add_argument("--keep", help="also save the full logits as <keep>/<case>.npy")
        ap.add_argument("--numerics", choices=N.PROFILES, default="exact",
                        help="exact: <case>/ (default); fast: fast/<case>/")
        ap.add_argument("--root", default=self.root, help=f"output root (default: {os.path.relpath(self.root, REPO)})")
        a = ap.parse_args(argv)
        if a.strata:
            a.strata = os.path.abspath(a.strata)
        with tempfile.TemporaryDirectory() as tmp:
            for name in a.case or list(self.cases):
                logits = self.make_case(name, a, tmp, a.numerics, a.root)
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    np.save(os.path.join(a.keep, name + ".npy"), logits)
                if not a.model:
                    shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
