"""The spread between valid implementations of the fast profile: where its whole-model tolerances
come from (reference/README.md §Fast profile).

    /usr/bin/python3 -m reference.fast_spread --strata build/release/strata [--arch dsv4|qwen3_5|dsa|gemma4 ...]
        [--case NAME ...] [--order NAME ...] [--rows N] [--base DIR] [--json FILE]

The fast profile fixes every rounding point of the exact one (bf16 activations and outputs, FP8
activation quantization, the weight formats) and accumulates the weight products in fp32 in one
order (src/kernels/fast_linear.h). Any other fp32 order of the same products is an equally valid
implementation of those rounding points; the logits of the defined order and of such an order
differ by what the fp32 accumulation is allowed to move them, amplified by the model (a changed
bf16 rounding or FP8 code downstream). This script runs the logits goldens' cases (the same
checkpoints, ids, prefill) in the defined order and in other orders (numerics.FAST_ORDER) and
reports per case the max |Δlogit| over all rows and vocab entries, the same relative to the
row's max |logit|, and how many rows keep their argmax:

  lanes8       8 lanes instead of 16 (bf16: lane i takes the pair (2i, 2i+1) of every 16 columns)
  fold_blocks  16 lanes, the lanes' block sums folded at every 128-column block end, one total
  sequential   one fp32 accumulator through all columns (bf16: pair steps in column order)
  index_exact  the defined order, but the DSA indexer's q·k dots summed exactly and rounded once
               (the fast profile's dot rounds at each of its 128 steps)
  exact        the exact profile (for scale: the fast profile's own distance from it)

--base DIR takes the defined order's logits from DIR/<case>.npy (a goldens run with --keep) instead
of computing them again. --rows N checks only the first N rows of each case (row r depends on
ids[0..K+r) alone, so a prefix of the rows is a valid sample).
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np

from . import numerics as N

ORDERS = {
    "lanes8": {"lanes": 8},
    "fold_blocks": {"fold_each_block": True},
    "sequential": {"lanes": 1, "block": None},
    "index_exact": {"index_dot": "exact"},
    "exact": None,
}


def arch_module(arch):
    if arch == "dsv4":
        from . import make_logits_goldens as M
    elif arch == "dsa":
        from . import make_dsa_logits_goldens as M
    elif arch == "gemma4":
        from . import make_gemma4_logits_goldens as M
    else:
        from . import make_qwen3_5_logits_goldens as M
    return M


def load(arch, M, name, strata, tmp):
    if arch == "dsv4":
        return M.case_model(name, strata, tmp)

    class A:
        pass
    a = A()
    a.strata, a.model, a.tiny = strata, None, False
    return M.case_model(name, a, tmp)[0]


def logits_in(M, name, model, order, rows):
    if order is None:
        with N.profile("exact"):
            return M.case_logits(name, model, rows)[1]
    N.set_fast_order(**order)
    try:
        with N.profile("fast"):
            return M.case_logits(name, model, rows)[1]
    finally:
        N.set_fast_order()


def spread(base, other):
    d = np.abs(other.astype(np.float64) - base.astype(np.float64))
    row_max = np.abs(base).max(1)
    return {"max_abs": float(d.max()), "max_rel": float((d.max(1) / row_max).max()),
            "mean_row_max_abs": float(d.max(1).mean()),
            "argmax_kept": int((base.argmax(1) == other.argmax(1)).sum()), "rows": int(base.shape[0]),
            "max_abs_logit": float(np.abs(base).max()),
            "first_row_over_1e-3": int(np.argmax(d.max(1) > 1e-3)) if (d.max(1) > 1e-3).any() else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", required=True, help="the strata binary (make-model)")
    ap.add_argument("--arch", action="append", choices=["dsv4", "qwen3_5", "dsa", "gemma4"])
    ap.add_argument("--case", action="append")
    ap.add_argument("--order", action="append", choices=sorted(ORDERS))
    ap.add_argument("--rows", type=int)
    ap.add_argument("--base", help="dir with the defined order's logits, <case>.npy (per arch: DIR/<arch>/)")
    ap.add_argument("--json", help="append the results here (one JSON object per line)")
    a = ap.parse_args(argv)
    strata = os.path.abspath(a.strata)
    N.set_fast_order()
    for arch in a.arch or ["dsv4", "qwen3_5"]:
        M = arch_module(arch)
        for name in a.case or list(M.CASES):
            if name not in M.CASES:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                model = load(arch, M, name, strata, tmp)
                t = time.time()
                bpath = os.path.join(a.base, arch, name + ".npy") if a.base else None
                if bpath and os.path.exists(bpath):
                    base = np.load(bpath)
                    if a.rows:
                        base = base[:a.rows]
                else:
                    base = logits_in(M, name, model, ORDERS.get("defined", {}), a.rows)
                for oname in a.order or list(ORDERS):
                    t = time.time()
                    other = logits_in(M, name, model, ORDERS[oname], a.rows)
                    r = spread(base, other)
                    r.update(arch=arch, case=name, order=oname, seconds=round(time.time() - t, 1))
                    print(f"{arch} {name:26s} {oname:12s} max|d| {r['max_abs']:.4g} (rel {r['max_rel']:.3g}), "
                          f"mean row max {r['mean_row_max_abs']:.3g}, argmax kept {r['argmax_kept']}/{r['rows']}, "
                          f"max|logit| {r['max_abs_logit']:.3g}, first row > 1e-3: {r['first_row_over_1e-3']} "
                          f"({r['seconds']} s)", flush=True)
                    if a.json:
                        with open(a.json, "a") as f:
                            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
