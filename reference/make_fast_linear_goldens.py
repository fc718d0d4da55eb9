"""Goldens of the fast profile's linear layer (src/kernels/fast_linear.h): tests/goldens/fast_linear/.

    /usr/bin/python3 -m reference.make_fast_linear_goldens [--out tests/goldens/fast_linear]

One directory per case, meta.json + .npy (as the component goldens, reference/make_component_goldens.py):

  w.weight   the weight in its checkpoint encoding: u1 e4m3 codes [out, in] (fp8), u1 packed e2m1
             pairs [out, in/2] (fp4, low nibble = even column), u2 bf16 bits [out, in], f4 [out, in]
  w.scale    u1 e8m0 codes: fp8 [ceil(out/128), ceil(in/128)], fp4 [out, in/32]
  x          f4 [rows, in]: the activation given to kernels::linear
  x_quant    f4 [rows, in] (only where meta `act_quant` is true): the activation fast_linear takes,
             act_quant_sim(x, 128) (FP8, blocks of 128); without act_quant fast_linear takes x
  route      u1 [rows]: 1 = the bf16 route (fast_row_is_bf16), 0 = the f32 route
  y          f4 [rows, out]: fast_linear(w, x_quant, round_bf16 = false), bit for bit
  y_bf16     f4 [rows, out]: the same rounded to bf16 (round_bf16 = true)
  y_exact    f4 [rows, out]: the exact profile's product of the same operands (diagnostics)

Every output element is defined by its row and weight row alone: any subset of the rows (one at a
time included) gives the same bits.
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch

from . import formats as Fm
from . import numerics as N
from .fast_selftest import f32_tie_case, special_case

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "goldens", "fast_linear")


def rng(seed):
    return torch.Generator().manual_seed(seed)


class Case:
    def __init__(self, root, name, description):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.meta = {"case": name, "description": description, "files": {}}

    def save(self, role, a):
        a = np.ascontiguousarray(a)
        np.save(os.path.join(self.dir, role + ".npy"), a)
        self.meta["files"][role] = {"dtype": a.dtype.str.lstrip("<|"), "shape": list(a.shape)}

    def weight(self, fmt, w, scale_override=None):
        """Encodes w ([out, in] fp32) in `fmt`, saves it, returns its values (fp32, exact)."""
        self.meta["format"] = fmt
        self.meta["out"], self.meta["in"] = int(w.shape[0]), int(w.shape[1])
        if fmt == "fp8":
            c, s = Fm.quant_fp8_weight(w)
            if scale_override:
                for (i, j), v in scale_override.items():
                    s[i, j] = v
            self.save("w.weight", c)
            self.save("w.scale", s)
            v = Fm.dequant_fp8_weight(c, s)
        elif fmt == "fp4":
            p, s = Fm.quant_fp4_weight(w)
            self.save("w.weight", p.view(np.uint8))
            self.save("w.scale", s)
            v = Fm.dequant_fp4_weight(p, s)
        elif fmt == "bf16":
            self.save("w.weight", Fm.bf16_bits(w))
            v = Fm.bf16(w)
        else:
            assert fmt == "f32"
            v = w.float().clone()
            self.save("w.weight", v.numpy())
        return v

    def run(self, w, x, act_quant, note=None):
        fmt = self.meta["format"]
        xq = Fm.act_quant_sim(x, 128) if act_quant else x
        wbf = fmt != "f32"
        route = N.is_bf16_value(xq).all(-1) & wbf
        y = N.fast_linear(xq, w, wbf)
        self.save("x", x.float().numpy())
        if act_quant:
            self.save("x_quant", xq.float().numpy())
        self.save("route", route.numpy().astype(np.uint8))
        self.save("y", y.numpy())
        self.save("y_bf16", Fm.bf16(y).numpy())
        self.save("y_exact", N.mm(xq, w.t()).numpy())
        self.meta.update(rows=int(x.shape[0]), act_quant=bool(act_quant),
                         routes={"bf16": int(route.sum()), "f32": int((~route).sum())})
        if note:
            self.meta["note"] = note
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(self.meta, f, indent=1)
            f.write("\n")
        d = (y - N.mm(xq, w.t())).abs()
        fin = torch.isfinite(d)
        print(f"{self.meta['case']:24s} {fmt:4s} rows {x.shape[0]:2d} out {w.shape[0]:3d} in {w.shape[1]:4d} "
              f"routes bf16 {int(route.sum()):2d} f32 {int((~route).sum()):2d}; "
              f"max|fast - exact| {float(d[fin].max()) if fin.any() else 0:.3g}")


def scaled_rows(rows, inn, seed, lo=-2, hi=2):
    """Rows of normal values, row r scaled by 10^(lo + (hi - lo) r / (rows - 1))."""
    x = torch.randn(rows, inn, generator=rng(seed))
    return x * torch.logspace(lo, hi, rows).unsqueeze(1) if rows > 1 else x


def col_scales(inn, group, seed):
    """Per group of columns a power of two in 2^-6 .. 2^6 (blocks whose scales differ)."""
    e = torch.randint(-6, 7, (inn // group,), generator=rng(100 + seed)).float()
    return torch.pow(2.0, e).repeat_interleave(group)


def make_all(root):
    # FP8 weight, activation FP8-quantized (blocks of 128); out = 160: a partial 128-row scale
    # band, whose blocks get a tiny scale (2^-122): its small e4m3 values decode below 2^-126 and
    # read as zero on the bf16 unit, its products and sums lie near 2^-126 (FTZ). Rows: fp32
    # values (the quantization makes them bf16), blocks of 128 scaled apart.
    c = Case(root, "fp8_act_quant", "FP8 e4m3 weight x e8m0 per 128x128 block, activation act_quant_sim(x, 128)")
    w = torch.randn(160, 256, generator=rng(1)) * 256 ** -0.5 * col_scales(256, 128, 1)
    w = c.weight("fp8", w, scale_override={(1, 0): 5, (1, 1): 5})
    c.run(w, scaled_rows(5, 256, 2, -3, 1) * col_scales(256, 128, 2), True,
          note="the scale band of rows 128..159 is 2^-122: some of its values are below 2^-126 (read as "
          "zeros), its outputs are near 2^-126")

    # FP4 weight (e2m1 pairs, e8m0 per 1x32, scales spread over 2^-6..2^6 so that the sums round),
    # activation FP8-quantized, 33 rows (past the FP8 GEMV's 32-row limit).
    c = Case(root, "fp4_act_quant", "FP4 e2m1 weight (pairs per byte, low nibble = even column) x e8m0 per 1x32, "
             "activation act_quant_sim(x, 128)")
    w = c.weight("fp4", torch.randn(40, 256, generator=rng(3)) * 256 ** -0.5 * col_scales(256, 32, 3))
    c.run(w, scaled_rows(33, 256, 4) * col_scales(256, 128, 4), True)

    c = Case(root, "bf16_bf16x", "bf16 weight, bf16 activation: the bf16 route")
    w = c.weight("bf16", torch.randn(70, 256, generator=rng(5)) * 0.06)
    c.run(w, Fm.bf16(scaled_rows(4, 256, 6)), False)

    c = Case(root, "bf16_f32x", "bf16 weight, fp32 activation (no row is all bf16 values): the f32 route")
    w = c.weight("bf16", torch.randn(40, 256, generator=rng(7)) * 0.06)
    c.run(w, scaled_rows(4, 256, 8), False)

    c = Case(root, "f32_weight", "f32 weight (24 rows, as the mHC's fn) with bf16 activations: the f32 route "
             "for every row")
    w = c.weight("f32", torch.randn(24, 512, generator=rng(9)) * 512 ** -0.5)
    c.run(w, Fm.bf16(scaled_rows(6, 512, 10)), False)

    c = Case(root, "mixed_batch", "bf16 weight, 37 rows: even rows bf16 values (bf16 route), odd rows fp32 (f32 "
             "route)")
    w = c.weight("bf16", torch.randn(24, 256, generator=rng(11)) * 0.06)
    x = scaled_rows(37, 256, 12)
    x[0::2] = Fm.bf16(x[0::2])
    c.run(w, x, False)

    c = Case(root, "in200_bf16", "bf16 weight, in = 200 (the second block of 128 is short: zeros), rows of both "
             "routes")
    w = c.weight("bf16", torch.randn(40, 200, generator=rng(13)) * 0.07)
    x = scaled_rows(4, 200, 14)
    x[:2] = Fm.bf16(x[:2])
    c.run(w, x, False)

    c = Case(root, "in200_f32", "f32 weight, in = 200")
    w = c.weight("f32", torch.randn(40, 200, generator=rng(15)) * 0.07)
    c.run(w, scaled_rows(3, 200, 16), False)

    c = Case(root, "fp8_in320_noquant", "FP8 weight used with the activation as given (act_quant false, as wo_a), "
             "in = 320: a partial 128-column scale block; rows 0-1 bf16, row 2 fp32 (f32 route with FP8 weight "
             "values, none below 2^-126)")
    w = c.weight("fp8", torch.randn(64, 320, generator=rng(17)) * 320 ** -0.5)
    x = scaled_rows(3, 320, 18)
    x[:2] = Fm.bf16(x[:2])
    c.run(w, x, False)

    c = Case(root, "fp4_in224_noquant", "FP4 weight, activation as given (bf16), in = 224 (7 scale groups of 32)")
    w = c.weight("fp4", torch.randn(48, 224, generator=rng(19)) * 224 ** -0.5 * col_scales(224, 32, 19))
    c.run(w, Fm.bf16(scaled_rows(2, 224, 20) * col_scales(224, 32, 20)), False)

    x, w = special_case(256)
    x = torch.cat([x, Fm.bf16(torch.randn(2, 256, generator=rng(21)) * 2.0 ** -64)])
    w = torch.cat([w, Fm.bf16(torch.randn(3, 256, generator=rng(22)) * 2.0 ** -62)])
    c = Case(root, "special_values", "bf16 weight, crafted rows (fast_selftest.special_case): output (0,0) the "
             "FTZ band [2^-126 - 2^-151, 2^-126) rounding up, a bf16 denormal activation read as 0, flushed "
             "tiny results; (1,1) f32 route: an FMA whose fp64-rounded sum would be an fp32 tie, a denormal "
             "result kept; (2,2) 2^120 - 2^120 cancelling in a lane, 2^100 sums; (3,3) 2^64 x 2^64 -> +inf; "
             "rows 4-5 and weight rows 4-6: products around 2^-126 (FTZ at random)")
    w = c.weight("bf16", w)
    c.run(w, x, False)

    x, w = f32_tie_case()
    c = Case(root, "special_f32_weight", "f32 weight, crafted: (0,0) an FMA landing just below an fp32 midpoint "
             "(1 + 2^-23 + 2^-24 - 2^-70: 1 + 2^-23, where rounding the sum to fp64 first gives 1 + 2^-22), a "
             "denormal product kept")
    w = c.weight("f32", w)
    c.run(w, x, False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=ROOT)
    a = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    N.set_fast_order()
    shutil.rmtree(a.out, ignore_errors=True)
    make_all(a.out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print(f"wrote {a.out}: {total / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
