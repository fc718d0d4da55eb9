"""The reference's exact-rounding rules, shared by every model (reference/README.md §Conventions).

All tensors are torch.float32; a value "in bf16" is an fp32 tensor holding a bf16-representable
number. Each function below stands for one fp32 operation of the official code and fixes its
result exactly, so that a C++ implementation can reproduce it bit for bit:

* mm / einsum: fp64 products and sums, rounded once to fp32 (kernels accumulate in fp32 in an
  implementation-defined order; the exactly rounded result makes every row independent of batch
  size and chunking).
* transcendental functions of fp32 values: evaluated in fp64, rounded once to fp32 (C++:
  compute in double, cast to float).
* mean_sq (RMS statistics): squares and sum in fp64, the sum rounded once to fp32, then an fp32
  division by n.
"""
import weakref

import torch
import torch.nn.functional as F


def mm(a, b):
    """Matrix product of fp32 operands: products and sums in fp64, rounded once to fp32."""
    return (a.double() @ b.double()).float()


def einsum(eq, *ops):
    return torch.einsum(eq, *[o.double() for o in ops]).float()


def exp(x):
    return torch.exp(x.double()).float()


def rsqrt(x):
    return torch.rsqrt(x.double()).float()


def sigmoid(x):
    return torch.sigmoid(x.double()).float()


def silu(x):
    return F.silu(x.double()).float()


def softplus(x):
    """torch.nn.functional.softplus with its default threshold: x for x > 20, else log1p(exp(x))."""
    xd = x.double()
    return torch.where(xd > 20, xd, torch.log1p(torch.exp(xd))).float()


def softmax(x, dim):
    """fp32 softmax: exp(x - max) / sum, fp64 inside, one rounding."""
    xd = x.double()
    e = torch.exp(xd - xd.amax(dim, keepdim=True))
    return (e / e.sum(dim, keepdim=True)).float()


def sum_exact(v, dim=-1, keepdim=True):
    """Sum of fp32 (or exact fp64) values: fp64 sum rounded once to fp32."""
    return v.double().sum(dim, keepdim=keepdim).float()


def mean_exact(v):
    """mean over the last dim of fp32 (or exact fp64) values: fp64 sum rounded once to fp32, / n in fp32."""
    return v.double().sum(-1, keepdim=True).float() / float(v.shape[-1])


def mean_sq(x):
    """mean(x^2) over the last dim: squares and sum in fp64 (exact products), the sum rounded once
    to fp32, then divided by n in fp32. torch's fp32 `.square().mean()` sums in an order set by its
    CPU kernels (vector width, tail handling) and differs by 1-2 fp32 ulps on some rows."""
    return mean_exact(x.double().square())


def sum_sq(x):
    """sum(x^2) over the last dim: fp64 squares and sum, rounded once to fp32."""
    return sum_exact(x.double().square())


# ================================================================ numerics profiles
# "exact": the rules above. "fast": the weight products (the engine's kernels::linear) accumulate
# in fp32 in a fixed order, as src/kernels/fast_linear.h defines bit for bit (vdpbf16ps lanes on
# the bf16 route, fp32 FMA on the f32 route); every other rounding point stays as in "exact".
# Only linear_mm depends on the profile: the other products (attention scores and values, the
# indexer's scores, the delta rule's state products) stay exact in both.
PROFILES = ("exact", "fast")
_profile = "exact"


def set_profile(name):
    """Selects the numerics profile, "exact" (default) or "fast"; returns the previous one."""
    global _profile
    if name not in PROFILES:
        raise ValueError(f"numerics profile {name!r}: choose one of {', '.join(PROFILES)}")
    prev, _profile = _profile, name
    return prev


def get_profile():
    return _profile


class profile:
    """with numerics.profile("fast"): ... — the profile for a block, the previous one restored."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.prev = set_profile(self.name)
        return self

    def __exit__(self, *exc):
        set_profile(self.prev)
        return False


def linear_mm(x, w, weight_bf16=True):
    """A weight product y = x · wᵀ, as the engine's kernels::linear computes it (the callers round
    to bf16 where the engine asks for bf16 outputs).

    x: [..., in] fp32 activation (for FP8/FP4 weights already act-quantized: the dequantized
    values); w: [out, in] fp32 weight values (dequantized, scales applied). weight_bf16: the
    weight's format is bf16, fp8 or fp4 (its values are bf16 values); False for an f32 weight
    (the mHC's fn), which always takes the fast profile's f32 route.

    exact: mm(x, wᵀ). fast: fast_linear (kernels/fast_linear.h)."""
    if _profile == "exact":
        return mm(x, w.t())
    return fast_linear(x, w, weight_bf16)


# ---------------------------------------------------------------- the fast linear, bit for bit
# The definition (kernels/fast_linear.h): per activation row a route, bf16 (weight not f32 and
# every x[k] a bf16 value) or f32; 16 fp32 lanes; columns in blocks of 128, each lane's block sum
# starting at +0 and added (fp32) into the lane's total (starting at +0) at the block's end, a
# short last block padded with zeros; bf16: lane i takes the column pairs (2i, 2i+1) of every 32
# columns, each pair one vdpbf16ps lane step (kernels/dpbf16.h: the odd column's product first,
# then the even one, each added exactly and rounded once to fp32, denormal operands read as zero,
# results below 2^-126 flushed); f32: lane k mod 16, acc = fma(x[k], w[k], acc) (one rounding,
# IEEE, denormals kept). Output: t[i] += t[i+h] for h = 8, 4, 2, 1, then t[0].
#
# FAST_ORDER holds the order's parameters. Only the defaults are the definition; the others are
# equally valid orders of the same rounding points, used to measure the spread that the
# whole-model tolerances come from (reference/README.md §Fast profile):
#   lanes            fp32 lanes (bf16: lane i takes the pair (2i, 2i+1) of every 2·lanes columns)
#   block            columns per block (a multiple of 2·lanes), or None: one block of all columns
#   fold_each_block  fold the lanes' block sums at each block end and add that to one total
FAST_ORDER = {"lanes": 16, "block": 128, "fold_each_block": False, "index_dot": "pairs"}
_FAST_DEFAULT = dict(FAST_ORDER)

_TINY = 2.0 ** -126                      # fp32's smallest normal
_TINY_UP = 2.0 ** -126 - 2.0 ** -151     # [_TINY_UP, _TINY) rounds up to 2^-126 (tininess after rounding)
_F32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103  # the tie between FLT_MAX and 2^128: from here on, inf


def set_fast_order(**kw):
    """Changes FAST_ORDER (spread measurements only); set_fast_order() restores the definition."""
    FAST_ORDER.clear()
    FAST_ORDER.update(_FAST_DEFAULT)
    for k, v in kw.items():
        if k not in FAST_ORDER:
            raise ValueError(f"unknown fast order parameter {k}")
        FAST_ORDER[k] = v


def is_bf16_value(x):
    """Elementwise: x (fp32) is a bf16 value (its low 16 bits are zero)."""
    return (x.float().contiguous().view(torch.int32) & 0xFFFF) == 0


def flush_tiny(v):
    """Magnitudes below 2^-126 become a zero of their sign (a bf16 operand of vdpbf16ps: DAZ;
    decode_weight_bf16's rule for weights)."""
    return torch.where(v.abs() < _TINY, v * 0.0, v)


def _to_f32(s):
    """fp64 -> fp32, round to nearest even (torch's conversion: denormals kept, >= the overflow
    tie -> inf), kept as fp64."""
    return s.float().double()


def _dp_step(acc, a, b, bufs):
    """One vdpbf16ps step, in place on acc (fp64 holding fp32 values, no denormals): acc + a·b
    rounded once to fp32, then the FTZ rule. a, b: bf16 operands already read (denormals zero).
    a·b is exact in fp64 and the fp64 sum is no fp32 midpoint unless exact (kernels/dpbf16.h), so
    rounding it to fp32 is the one rounding. NaN (inf·0, inf - inf) stays NaN (payloads are not
    modelled). bufs: scratch of acc's shape (fp64, fp32, 2 × bool), reused: a fresh tensor per
    operation cost more (page faults) than the operation."""
    mag, buf32, tiny, nz = bufs
    acc.addcmul_(a, b)   # acc + a·b: a·b is exact, so fused or not, one fp64 rounding
    torch.abs(acc, out=mag)
    torch.lt(mag, _TINY, out=tiny)
    torch.gt(mag, 0, out=nz)
    tiny &= nz
    if bool(tiny.any()):
        acc.copy_(torch.where(tiny, torch.where(mag >= _TINY_UP, torch.sign(acc) * _TINY, acc * 0.0), acc))
    buf32.copy_(acc)     # round to fp32 (nearest even; >= the overflow tie -> inf)
    acc.copy_(buf32)


def pair_step_dot(a, b):
    """a [..., K] · b [..., K] (broadcast against each other; K even; bf16 values) as one vdpbf16ps
    lane fed the column pairs in order: acc = +0, then for p = 0 .. K/2 - 1 the odd column's product
    and then the even one's, each added with one fp32 rounding (_dp_step). The DSA indexer's fast
    dot (models/dsa/index_scan.h). Returns fp32 [...]."""
    a, b = flush_tiny(a.double()), flush_tiny(b.double())
    shape = torch.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    acc = torch.zeros(shape, dtype=torch.float64)
    bufs = (torch.empty(shape, dtype=torch.float64), torch.empty(shape, dtype=torch.float32),
            torch.empty(shape, dtype=torch.bool), torch.empty(shape, dtype=torch.bool))
    for p in range(a.shape[-1] // 2):
        for i in (2 * p + 1, 2 * p):
            _dp_step(acc, a[..., i], b[..., i], bufs)
    return acc.float()


def _fma_f32(c, a, b):
    """fp32 fma(a, b, c) with one rounding, on fp64 tensors holding fp32 values. p = a·b is exact in
    fp64; s = RN64(p + c) with its exact error e (TwoSum); rounding s to odd at 53 bits when e != 0
    and then to fp32 (53 >= 24 + 2) gives the correctly rounded fp32 of p + c, denormals and
    overflow included."""
    p = a * b
    s = p + c
    bp = s - p
    ap = s - bp
    e = (p - ap) + (c - bp)
    odd = (s.view(torch.int64) & 1) != 0
    fix = (e != 0) & ~odd & torch.isfinite(s)
    toward = torch.where(e > 0, torch.full_like(s, float("inf")), torch.full_like(s, float("-inf")))
    s = torch.where(fix, torch.nextafter(s, toward), s)
    return _to_f32(s)


def _fold(t):
    """Lane totals [..., L] (fp32) -> [...]: t[i] += t[i + h] for h = L/2, ..., 1, then t[0]."""
    h = t.shape[-1] // 2
    while h >= 1:
        t = t[..., :h] + t[..., h:2 * h]
        h //= 2
    return t[..., 0]


_prepared = {}   # id(weight) -> (weakref, key, the weight as _fast_route reads it)


def _weight_steps(w, bf16_route, Kp, step, L):
    """The weight as the route reads it: fp64, zero-padded to Kp columns, bf16 operands flushed
    (DAZ), laid out [Kp/step, (2,) out, L] (step, (pair member,) row, lane). Kept per weight tensor while it lives (the model's
    weights are used once per token; the head's preparation cost more than its product)."""
    key = (bf16_route, Kp, step, L)
    hit = _prepared.get(id(w))
    if hit is not None and hit[0]() is w and hit[1] == key:
        return hit[2]
    wd = torch.nn.functional.pad(w.double(), (0, Kp - w.shape[1]))
    if bf16_route:
        assert bool(is_bf16_value(flush_tiny(w)).all()), "a bf16/fp8/fp4 weight must hold bf16 values"
        wd = flush_tiny(wd).view(w.shape[0], Kp // step, L, 2).permute(1, 3, 0, 2).contiguous()
    else:
        wd = wd.view(w.shape[0], Kp // step, L).permute(1, 0, 2).contiguous()
    try:
        _prepared[id(w)] = (weakref.ref(w), key, wd)
    except TypeError:
        pass
    for k in [k for k, v in _prepared.items() if v[0]() is None]:
        del _prepared[k]
    return wd


def _fast_route(x, w, bf16_route):
    """[R, K] x [O, K] -> [R, O] fp32 in FAST_ORDER (x, w fp32 tensors, zero-padded inside)."""
    L, B, fold_each = FAST_ORDER["lanes"], FAST_ORDER["block"], FAST_ORDER["fold_each_block"]
    R, K = x.shape
    O = w.shape[0]
    step = 2 * L if bf16_route else L
    B = B or -(-K // step) * step
    assert B % step == 0 and L & (L - 1) == 0
    Kp = -(-K // B) * B
    xd = torch.nn.functional.pad(x.double(), (0, Kp - K))
    ws = _weight_steps(w, bf16_route, Kp, step, L)
    if bf16_route:   # the operands as the bf16 unit reads them; [K/(2L), 2, rows, 1, L]: step, (even, odd), row, lane
        xs = flush_tiny(xd).view(R, Kp // step, L, 2).permute(1, 3, 0, 2).unsqueeze(3).contiguous()
    else:
        xs = xd.view(R, Kp // step, L).permute(1, 0, 2).unsqueeze(2).contiguous()
    total = torch.zeros(R, O, 1 if fold_each else L, dtype=torch.float32)
    per_block = B // step
    bufs = (torch.empty(R, O, L, dtype=torch.float64), torch.empty(R, O, L, dtype=torch.float32),
            torch.empty(R, O, L, dtype=torch.bool), torch.empty(R, O, L, dtype=torch.bool))
    for b0 in range(0, Kp // step, per_block):
        acc = torch.zeros(R, O, L, dtype=torch.float64)   # each lane's block sum starts at +0
        for s in range(b0, b0 + per_block):
            if bf16_route:
                _dp_step(acc, xs[s, 1], ws[s, 1], bufs)   # odd column first
                _dp_step(acc, xs[s, 0], ws[s, 0], bufs)
            else:
                acc = _fma_f32(acc, xs[s], ws[s])
        blk = acc.float()
        total = total + (_fold(blk).unsqueeze(-1) if fold_each else blk)
    return total[..., 0] if fold_each else _fold(total)


def fast_linear(x, w, weight_bf16=True):
    """The fast profile's y = x · wᵀ (kernels/fast_linear.h), fp32 [..., out]; see linear_mm.
    weight_bf16: the weight is bf16 / fp8 / fp4 (its values are read as decode_weight_bf16 reads
    them: magnitudes below 2^-126 -> signed zero); False: an f32 weight (f32 route for every row)."""
    shape = x.shape
    x = x.reshape(-1, shape[-1]).float()
    assert w.dtype == torch.float32
    R = x.shape[0]
    y = torch.empty(R, w.shape[0], dtype=torch.float32)
    if weight_bf16:
        bf_rows = is_bf16_value(x).all(-1)
    else:
        bf_rows = torch.zeros(R, dtype=torch.bool)
    for route, rows in ((True, bf_rows), (False, ~bf_rows)):
        idx = rows.nonzero().flatten()
        if idx.numel():
            y[idx] = _fast_route(x[idx], w, route)
    return y.reshape(*shape[:-1], w.shape[0])
