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
