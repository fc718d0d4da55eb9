"""The fast profile's linear (numerics.fast_linear) against a plain transcription of its definition.

    /usr/bin/python3 -m reference.fast_selftest [--cases N]

The transcription below follows src/kernels/fast_linear.h and src/kernels/dpbf16.h line by line,
one output element at a time, in Python floats (IEEE fp64, as the C++ `double`s) with NumPy fp32
conversions; the f32 route's FMA is computed exactly with fractions and rounded once. The
vectorized reference must give the same bits on random rows of every kind (bf16 activations,
fp32 activations, mixed batches, `in` not a multiple of 128, values whose products underflow
fp32's normal range or overflow it). Its vdpbf16ps step is also run on the lanes measured on the
instruction (tests/kernels/dpbf16_emulation_test.cpp).
"""
import argparse
import math
import os
import re
import struct
from fractions import Fraction

import numpy as np
import torch

from . import numerics as N
from .formats import bf16

TINY = 2.0 ** -126


def f32(v):
    """fp64 -> fp32 round to nearest even (NumPy's cast; beyond the range -> inf)."""
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bf16_operand(v):
    """A bf16 operand as vdpbf16ps reads it: a denormal is a zero of its sign."""
    return math.copysign(0.0, v) if abs(v) < TINY else v


def fused_step(c, a, b):
    """dpbf16.h fused_step, transcribed."""
    p = a * b
    r = p + c
    if math.isnan(r):
        return float("nan")
    mag = abs(r)
    if mag < TINY:
        return math.copysign(TINY if mag >= TINY - 2.0 ** -151 else 0.0, r)
    if mag >= 2.0 ** 128 - 2.0 ** 103:
        return math.copysign(float("inf"), r)
    return f32(r)


def dpbf16_lane(acc, a0, a1, b0, b1):
    """dpbf16.h dpbf16_lane (no NaN operands in these tests)."""
    if acc != 0 and abs(acc) < TINY:
        acc = math.copysign(0.0, acc)
    t = fused_step(acc, bf16_operand(a1), bf16_operand(b1))
    if math.isnan(t):
        return t
    return fused_step(t, bf16_operand(a0), bf16_operand(b0))


def round_f32_exact(v, sign_of_zero):
    """A rational (Fraction) rounded once to fp32, nearest even, denormals and overflow included."""
    if v == 0:
        return math.copysign(0.0, sign_of_zero)
    s = -1.0 if v < 0 else 1.0
    a = abs(v)
    e = math.floor(math.log2(a.numerator) - math.log2(a.denominator))
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = max(e, -126) - 23                      # the ulp's exponent (denormals: 2^-149)
    m = a / Fraction(2) ** q                   # a = m · 2^q, round m to an integer, ties to even
    n = math.floor(m)
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n * Fraction(2) ** q >= 2 ** 128:
        return s * float("inf")
    return s * float(n * Fraction(2) ** q)


def fma_f32(a, b, c):
    """fp32 fma(a, b, c): the exact a·b + c rounded once (IEEE: an exact zero is -0 only when both
    addends are -0)."""
    if math.isinf(a) or math.isinf(b) or math.isinf(c):
        return f32(a * b + c)
    v = Fraction(a) * Fraction(b) + Fraction(c)
    p = a * b                                  # exact in fp64: its sign
    zsign = -1.0 if (math.copysign(1, p) < 0 and math.copysign(1, c) < 0) else 1.0
    return round_f32_exact(v, zsign)


def dot_definition(x, w, weight_bf16):
    """fast_linear.h, one output element: x, w lists of fp32 values (Python floats)."""
    K = len(x)
    bf = weight_bf16 and all(f32_bits(v) & 0xFFFF == 0 for v in x)
    if weight_bf16:   # decode_weight_bf16: magnitudes below 2^-126 -> signed zero
        w = [math.copysign(0.0, v) if abs(v) < TINY else v for v in w]
    Kp = -(-K // 128) * 128
    x = x + [0.0] * (Kp - K)
    w = w + [0.0] * (Kp - K)
    t = [0.0] * 16
    for b0 in range(0, Kp, 128):
        s = [0.0] * 16
        if bf:
            for k0 in range(b0, b0 + 128, 32):
                for i in range(16):
                    k = k0 + 2 * i
                    s[i] = dpbf16_lane(s[i], x[k], x[k + 1], w[k], w[k + 1])
        else:
            for k in range(b0, b0 + 128):
                s[k % 16] = fma_f32(x[k], w[k], s[k % 16])
        for i in range(16):
            t[i] = f32(t[i] + s[i])
    for h in (8, 4, 2, 1):
        for i in range(h):
            t[i] = f32(t[i] + t[i + h])
    return t[0]


def check(x, w, weight_bf16, what):
    got = N.fast_linear(x, w, weight_bf16)
    want = torch.tensor([[dot_definition(x[r].tolist(), w[o].tolist(), weight_bf16) for o in range(w.shape[0])]
                         for r in range(x.shape[0])], dtype=torch.float32)
    gb, wb = got.view(torch.int32), want.view(torch.int32)
    bad = (gb != wb) & ~(torch.isnan(got) & torch.isnan(want))
    assert not bad.any(), f"{what}: {int(bad.sum())} of {bad.numel()} outputs differ, e.g. " \
        f"{got[bad][:4].tolist()} vs {want[bad][:4].tolist()}"
    return int(bad.numel())


def random_case(g, rows, out, inn, kind):
    """kind: 'bf16' (bf16 activation), 'f32' (fp32 activation), 'mixed', 'tiny', 'huge'."""
    w = bf16(torch.randn(out, inn, generator=g) * 0.05)
    x = torch.randn(rows, inn, generator=g)
    if kind in ("bf16", "tiny", "huge"):
        x = bf16(x)
    if kind == "mixed":
        x[::2] = bf16(x[::2])
    if kind == "tiny":   # products near and below 2^-126
        x = bf16(x * 2.0 ** -60)
        w = bf16(w * 2.0 ** -62)
    if kind == "huge":   # products near fp32's top
        x = bf16(x * 2.0 ** 60)
        w = bf16(w * 2.0 ** 66)
    return x, w


def special_case(inn=256):
    """Rows and weight rows (bf16 weight values) built so that output (r, r), r < 4, hits one rule
    of the definition in a known lane (the other outputs are checked as well):

    0  bf16 route, FTZ / DAZ: lane 0: 2^-126 then -2^-151 -> [2^-126 - 2^-151, 2^-126) rounds up
       to 2^-126; lane 1: a bf16 denormal activation (2^-127) times 2^20 reads as 0; lane 2: 2^-126
       then -2^-150 -> below the band, flushed to +0; lane 3: a product 2^-130 flushed, 2^-125 kept;
       the same again in the second block (columns 128 + ...).
    1  f32 route (fp32 activation, bf16 weight), the FMA's single rounding: lane 0 holds 1 + 2^-23,
       then 4948119·2^-46 × 217·2^-8 = 2^-24 - 2^-54 lands just below the fp32 midpoint (a rounding
       of the sum to fp64 first would make it a tie and round to 1 + 2^-22); lane 1: 2^-70 × 2^-60
       = 2^-130 kept (denormal, no FTZ on this route).
    2  bf16 route, large values: 2^120 - 2^120 cancels within a lane (then + 1), 2^100 sums.
    3  bf16 route, overflow: 2^64 × 2^64 = 2^128 -> +inf (an inf output).
    """
    x = torch.zeros(4, inn)
    w = torch.zeros(4, inn)
    for base in (0, 128):
        if base + 8 > inn:
            break
        # row 0
        x[0, base + 1], w[0, base + 1] = 2.0 ** -63, 2.0 ** -63
        x[0, base + 0], w[0, base + 0] = -(2.0 ** -75), 2.0 ** -76
        x[0, base + 3], w[0, base + 3] = 2.0 ** -127, 2.0 ** 20
        x[0, base + 2], w[0, base + 2] = 2.0 ** -107, 1.0
        x[0, base + 5], w[0, base + 5] = 2.0 ** -63, 2.0 ** -63
        x[0, base + 4], w[0, base + 4] = -(2.0 ** -74), 2.0 ** -76
        x[0, base + 7], w[0, base + 7] = 2.0 ** -70, 2.0 ** -60
        x[0, base + 6], w[0, base + 6] = 2.0 ** -65, 2.0 ** -60
    # row 1 (fp32 values: 1 + 2^-23 is no bf16 value)
    x[1, 0], w[1, 0] = 1.0 + 2.0 ** -23, 1.0
    x[1, 16], w[1, 16] = 4948119 * 2.0 ** -46, 217 * 2.0 ** -8
    x[1, 1], w[1, 1] = 2.0 ** -70, 2.0 ** -60
    # row 2
    x[2, 9], w[2, 9] = 2.0 ** 60, 2.0 ** 60
    x[2, 8], w[2, 8] = -(2.0 ** 60), 2.0 ** 60
    x[2, 40], w[2, 40] = 1.0, 1.0
    x[2, 10], w[2, 10] = 2.0 ** 50, 2.0 ** 50
    x[2, 27], w[2, 27] = 2.0 ** 50, 2.0 ** 50
    # row 3
    x[3, 9], w[3, 9] = 2.0 ** 64, 2.0 ** 64
    x[3, 8], w[3, 8] = 1.0, 1.0
    assert bool(N.is_bf16_value(w).all()) and bool(N.is_bf16_value(x[[0, 2, 3]]).all())
    assert not bool(N.is_bf16_value(x[1]).all())
    return x, w


def f32_tie_case():
    """An f32 weight: lane 0 holds 1 + 2^-23, then (2^-24(1 + 2^-23)) × (1 - 2^-23) = 2^-24 - 2^-70
    lands just below the midpoint (fp64 first: a tie, rounded to 1 + 2^-22); lane 1: a denormal
    product kept; lane 2: a product whose fp64 sum with its lane is exact."""
    x = torch.zeros(2, 128)
    w = torch.zeros(2, 128)
    x[0, 0], w[0, 0] = 1.0 + 2.0 ** -23, 1.0
    x[0, 16], w[0, 16] = 2.0 ** -24 * (1.0 + 2.0 ** -23), 1.0 - 2.0 ** -23
    x[0, 1], w[0, 1] = 2.0 ** -75, 2.0 ** -70
    x[0, 2], w[0, 2] = 3.0, 1.0 + 2.0 ** -23
    x[1] = bf16(torch.linspace(-1, 1, 128))
    w[1] = torch.linspace(1, -1, 128) * (1 + 2.0 ** -20)
    return x, w


def check_measured_lanes():
    """The lanes measured on Zen 5 (tests/kernels/dpbf16_emulation_test.cpp, kGolden) through the
    vectorized step: every lane without a NaN (payloads are not modelled here) must match."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "kernels", "dpbf16_emulation_test.cpp")
    rows = re.findall(r'\{"([^"]*)", \{0x([0-9A-F]+)u, 0x([0-9A-F]+), 0x([0-9A-F]+), 0x([0-9A-F]+), 0x([0-9A-F]+)\}, '
                      r'0x([0-9A-F]+)u\}', open(path).read())
    f = lambda b: struct.unpack("<f", struct.pack("<I", b))[0]   # noqa: E731
    n = 0
    for what, *h in rows:
        acc, a0, a1, b0, b1, want = (int(v, 16) for v in h)
        ops = [f(acc), f(a0 << 16), f(a1 << 16), f(b0 << 16), f(b1 << 16), f(want)]
        if any(math.isnan(v) for v in ops):
            continue
        t = lambda v: N.flush_tiny(torch.tensor([v], dtype=torch.float64))   # noqa: E731
        acc_t = t(ops[0])
        bufs = (torch.empty(1, dtype=torch.float64), torch.empty(1), torch.empty(1, dtype=torch.bool),
                torch.empty(1, dtype=torch.bool))
        N._dp_step(acc_t, t(ops[2]), t(ops[4]), bufs)   # odd pair first
        N._dp_step(acc_t, t(ops[1]), t(ops[3]), bufs)
        got = f32_bits(float(acc_t))
        assert got == want, f"measured lane '{what}': {got:08X} != {want:08X}"
        n += 1
    assert n >= 20, f"only {n} measured lanes found in {path}"
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=3)
    a = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    g = torch.Generator().manual_seed(2026)
    n = 0
    for c in range(a.cases):
        for kind in ("bf16", "f32", "mixed", "tiny", "huge"):
            for inn in (64, 128, 200, 288):
                rows, out = 3, 4
                x, w = random_case(g, rows, out, inn, kind)
                n += check(x, w, True, f"{kind} in={inn}")
                if kind in ("f32", "tiny", "huge"):
                    n += check(x, w, False, f"{kind} f32 weight in={inn}")
    for inn in (256, 200):
        x, w = special_case(inn)
        n += check(x, w, True, f"special in={inn}")
    y = N.fast_linear(*special_case(), True)
    want = [2.0 ** -126 + 2.0 ** -107 + 2.0 ** -125, 1.0 + 2.0 ** -23 + 2.0 ** -130, 1.0 + 2.0 ** 101, float("inf")]
    for r in range(4):   # the first block's lanes (the second block doubles row 0's)
        got = float(y[r, r]) / (2 if r == 0 else 1)
        assert got == f32(want[r]), f"special row {r}: {got!r} != {f32(want[r])!r}"
    x, w = f32_tie_case()
    n += check(x, w, False, "f32 weight ties")
    assert float(N.fast_linear(x, w, False)[0, 0]) == f32(1.0 + 2.0 ** -23 + 2.0 ** -145 + 3.0 * (1 + 2.0 ** -23))
    m = check_measured_lanes()
    print(f"fast_linear == its definition on {n} outputs (bf16, f32 and mixed rows; FTZ band; overflow); "
          f"its vdpbf16ps step == the {m} lanes measured on Zen 5 without NaNs")


if __name__ == "__main__":
    main()
