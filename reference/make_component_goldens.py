"""Per-component golden files for the C++ DeepSeek-V4 tests.

    python3 -m reference.make_component_goldens [--out tests/goldens/deepseek_v4/components]

One directory per mechanism, NumPy .npy files named by role plus meta.json (shapes, params,
file dtypes). Storage conventions (see reference/README.md):
  f32  : activations / outputs (bf16-valued where the reference rounds to bf16) and F32 weights
  u16  : BF16 weights as raw bf16 bit patterns (checkpoint storage form)
  u8   : F8_E4M3 codes, F8_E8M0 scale codes, packed FP4 bytes (low nibble = even element),
         e2m1 codes (0..15, bit 3 = sign)
  i64  : indices (-1 = none)
Fixed seeds: the files are reproducible bit for bit.
"""
import argparse
import json
import os
import shutil
from types import SimpleNamespace

import numpy as np
import torch

from . import deepseek_v4 as D
from . import formats as Fm

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "goldens", "deepseek_v4", "components")
YARN = dict(theta=160000.0, factor=16.0, original_seq_len=65536, beta_fast=32, beta_slow=1)


class Golden:
    def __init__(self, root, name, description):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.meta = {"component": name, "description": description, "files": {}, "params": {}}

    def f32(self, role, t):
        self._save(role, np.asarray(t.float().numpy() if torch.is_tensor(t) else t, dtype=np.float32))

    def i64(self, role, t):
        self._save(role, np.asarray(t.numpy() if torch.is_tensor(t) else t, dtype=np.int64))

    def u8(self, role, a):
        a = np.asarray(a.numpy() if torch.is_tensor(a) else a)
        self._save(role, a.view(np.uint8) if a.dtype == np.int8 else a.astype(np.uint8))

    def bf16w(self, role, t):
        """bf16 weight as raw bits (u16); returns the fp32 tensor of its values."""
        self._save(role, Fm.bf16_bits(t))
        return Fm.bf16(t)

    def fp8w(self, role, w):
        """FP8 block-quantized weight: role.weight (u8 e4m3) + role.scale (u8 e8m0); returns dequantized."""
        c, s = Fm.quant_fp8_weight(w)
        self._save(role + ".weight", c)
        self._save(role + ".scale", s)
        return Fm.dequant_fp8_weight(c, s)

    def fp4w(self, role, w):
        """MXFP4 weight: role.weight (u8 packed [out, in/2]) + role.scale (u8 e8m0 [out, in/32])."""
        p, s = Fm.quant_fp4_weight(w)
        self._save(role + ".weight", p.view(np.uint8))
        self._save(role + ".scale", s)
        return Fm.dequant_fp4_weight(p, s)

    def _save(self, role, a):
        np.save(os.path.join(self.dir, role + ".npy"), a)
        self.meta["files"][role] = {"dtype": a.dtype.str.lstrip("<|"), "shape": list(a.shape)}

    def done(self, **params):
        self.meta["params"].update(params)
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(self.meta, f, indent=1)


def rng(seed):
    return torch.Generator().manual_seed(seed)


def bfr(*shape, seed, std=1.0):
    return Fm.bf16(torch.randn(*shape, generator=rng(seed)) * std)


def cfg_ns(**kw):
    base = dict(eps=1e-6, rope_dim=64, hc_mult=4, hc_iters=20, hc_eps=1e-6, index_n_heads=4,
                index_head_dim=128, index_topk=4)
    base.update(kw)
    return SimpleNamespace(**base)


# ------------------------------------------------------------------ components
def g_rmsnorm(root):
    g = Golden(root, "rmsnorm", "RMSNorm: fp32 compute, bf16(w * (x * rsqrt(mean(x^2) + eps)))")
    x = bfr(8, 256, seed=1) * torch.logspace(-3, 2, 8).unsqueeze(1)
    x = Fm.bf16(x)
    x[7] = 0.0                                   # all-zero row: output 0
    w = g.bf16w("weight", 1 + 0.2 * torch.randn(256, generator=rng(2)))
    g.f32("x", x)
    g.f32("out", D.rms_norm(x, w, 1e-6))
    g.done(eps=1e-6)


def g_rope(root):
    g = Golden(root, "rope", "RoPE tables (YaRN for compressed layers, plain for window-only) and apply "
               "(forward and inverse) on the last 64 dims; pairs (2k, 2k+1) are complex numbers")
    fy = D.rope_freqs(64, YARN["original_seq_len"], YARN["theta"], YARN["factor"], YARN["beta_fast"], YARN["beta_slow"])
    fp = D.rope_freqs(64, 0, 10000.0, 16.0, 32, 1)
    pos = [0, 1, 2, 3, 4, 5, 127, 128, 129, 1000, 4096, 65535, 65536, 100003, 1048575]
    g.f32("freqs_yarn", fy)
    g.f32("freqs_plain", fp)
    g.i64("positions", torch.tensor(pos))
    cy, sy = D.rope_table(fy, pos)
    cp, sp = D.rope_table(fp, pos)
    g.f32("cos_yarn", cy)
    g.f32("sin_yarn", sy)
    g.f32("cos_plain", cp)
    g.f32("sin_plain", sp)
    x = bfr(len(pos), 3, 128, seed=3)             # [positions, heads, 128]; rope on dims 64..127
    g.f32("x", x)
    g.f32("out_fwd_yarn", D.apply_rope(x, cy, sy))
    g.f32("out_inv_yarn", D.apply_rope(x, cy, sy, inverse=True))
    g.f32("out_fwd_plain", D.apply_rope(x, cp, sp))
    g.f32("out_inv_plain", D.apply_rope(x, cp, sp, inverse=True))
    g.done(rope_dim=64, yarn=YARN, plain=dict(theta=10000.0), applied_to="last 64 dims of each 128-dim row")


def act_input(seed, rows, n):
    x = bfr(rows, n, seed=seed) * torch.logspace(-6, 3, rows).unsqueeze(1)
    x = Fm.bf16(x)
    x[0, :64] = 0.0                               # amax clamp to 1e-4
    x[1, :] = torch.tensor([448.0, -448.0, 1.0625, 1.1875] * (n // 4))  # amax exactly 448 / e4m3 ties
    return x


def g_act_quant(root):
    g = Golden(root, "act_quant_fp8", "FP8 e4m3 activation quantization with power-of-two (ue8m0) scales "
               "per block: amax=max(|x|,1e-4); s=2^ceil(log2(fp32(amax*fp32(1/448)))); q=e4m3_rne(clamp(x/s,+-448))")
    x = act_input(4, 8, 512)
    g.f32("x", x)
    for b in (64, 128):
        q, s = Fm.act_quant(x, b)
        g.u8(f"q_codes_b{b}", Fm.e4m3_encode(q.flatten(-2)))
        g.f32(f"q_b{b}", q.flatten(-2))
        g.f32(f"scale_b{b}", s.squeeze(-1))
        g.f32(f"sim_b{b}", (q * s).flatten(-2))
    g.done(blocks=[64, 128])


def g_fp4_quant(root):
    g = Golden(root, "fp4_quant", "FP4 e2m1 activation quantization, blocks of 32, power-of-two scales: "
               "amax=max(|x|,6*2^-126); s=2^ceil(log2(fp32(amax*fp32(1/6)))); q=e2m1_rne(clamp(x/s,+-6))")
    x = act_input(5, 8, 256)
    x[1, :] = Fm.bf16(torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0] * 32))
    g.f32("x", x)
    q, s = Fm.fp4_act_quant(x, 32)
    g.u8("q_codes", Fm.e2m1_encode(q.flatten(-2)).numpy().astype(np.uint8))
    g.f32("q", q.flatten(-2))
    g.f32("scale", s.squeeze(-1))
    g.f32("sim", (q * s).flatten(-2))
    g.done(block=32)


def g_hadamard(root):
    g = Golden(root, "hadamard", "Walsh-Hadamard rotation (Sylvester order) scaled by n^-0.5, fp32 compute, bf16 output")
    x = bfr(6, 128, seed=6)
    g.f32("x", x)
    g.f32("out", Fm.hadamard(x))
    g.f32("out_then_fp4", Fm.fp4_act_quant_sim(Fm.hadamard(x), 32))
    g.done(n=128, scale=128 ** -0.5)


def g_fp8_linear(root):
    g = Golden(root, "fp8_linear", "y = bf16(act_quant_sim(x, 128) @ dequant(W)^T), fp32 accumulation; "
               "W: e4m3 [out,in] x e8m0 per 128x128 block (out=320 has a partial block)")
    x = bfr(5, 256, seed=7)
    w = g.fp8w("w", torch.randn(320, 256, generator=rng(8)) * 256 ** -0.5 * torch.logspace(-1, 1, 320).unsqueeze(1))
    g.f32("x", x)
    g.f32("x_sim", Fm.act_quant_sim(x, 128))
    g.f32("out", D.qlinear(x, w))
    g.done(act_block=128, weight_block=[128, 128])


def g_fp4_linear(root):
    g = Golden(root, "fp4_linear", "y = bf16(act_quant_sim(x, 128) @ dequant(W)^T); W: I8 [out,in/2] two e2m1 "
               "per byte (low nibble = even column) x e8m0 [out,in/32]")
    x = bfr(5, 256, seed=9)
    w = g.fp4w("w", torch.randn(128, 256, generator=rng(10)) * 256 ** -0.5)
    g.f32("x", x)
    g.f32("w_dequant", w)
    g.f32("out", D.qlinear(x, w))
    g.done(act_block=128, weight_block=32)


def g_sparse_attn(root):
    g = Golden(root, "sparse_attn", "one softmax over gathered kv rows (idx, -1 = skip) with a per-head sink in "
               "the denominator only; scale 512^-0.5; bf16(P) for P.V")
    S, H, Dm, N = 6, 4, 512, 100
    q = D.head_rms_rescale(bfr(S, H, Dm, seed=11), 1e-6)
    kv = bfr(N, Dm, seed=12)
    kv = torch.cat([Fm.act_quant_sim(kv[:, :448], 64), kv[:, 448:]], -1)
    sink = torch.randn(H, generator=rng(13))
    gen = rng(14)
    idx = torch.randint(0, N, (S, 140), generator=gen)
    idx[torch.rand(S, 140, generator=gen) < 0.3] = -1
    idx[:, 0] = torch.arange(S)                   # every row has a valid entry in its first block
    idx[2, 64:128] = -1                           # a fully masked block of 64
    g.f32("q", q)
    g.f32("kv", kv)
    g.f32("sink", sink)
    g.i64("idx", idx)
    g.f32("out", D.sparse_attn(q, kv, sink, idx, Dm ** -0.5, chunk=0))
    g.f32("out_kernel_chunk64", D.sparse_attn(q, kv, sink, idx, Dm ** -0.5, chunk=64))
    g.done(scale=Dm ** -0.5, note="out: global max (the contract); out_kernel_chunk64: emulation of the kernel's "
           "64-wide online softmax (bf16(P) relative to the running max)")


def make_compressor(g, ratio, hd, rotate, dim, seed):
    coff = 2 if ratio == 4 else 1
    t = {"c.wkv.weight": g.bf16w("wkv", torch.randn(coff * hd, dim, generator=rng(seed)) * dim ** -0.5),
         "c.wgate.weight": g.bf16w("wgate", torch.randn(coff * hd, dim, generator=rng(seed + 1)) * dim ** -0.5),
         "c.ape": torch.randn(ratio, coff * hd, generator=rng(seed + 2)) * 0.5,
         "c.norm.weight": g.bf16w("norm", 1 + 0.1 * torch.randn(hd, generator=rng(seed + 3)))}
    g.f32("ape", t["c.ape"])
    freqs = D.rope_freqs(64, YARN["original_seq_len"], YARN["theta"], YARN["factor"], YARN["beta_fast"], YARN["beta_slow"])
    return D.Compressor(D.DictWeights(t), "c", cfg_ns(), ratio, hd, rotate, freqs)


def g_compressor(root, name, ratio, hd, rotate, S, K):
    g = Golden(root, name, f"compressor ratio {ratio}, head_dim {hd}, rotate={rotate}: fp32 projections, "
               "ape slot bias, per-channel softmax over the block's slots, bf16, RMSNorm, RoPE at the block's first "
               "position (YaRN table), then " + ("Hadamard + FP4 sim (blocks of 32)" if rotate else
                                                 "FP8 sim of dims [0, hd-64) in blocks of 64"))
    dim = 128
    comp = make_compressor(g, ratio, hd, rotate, dim, seed=20 + ratio + hd)
    x = bfr(S, dim, seed=30 + ratio)
    g.f32("x", x)
    st = comp.new_state()
    comp.forward(x, 0, st)
    g.f32("entries_prefill", st["cache"])
    st2 = comp.new_state()
    for p in range(S):
        comp.forward(x[p:p + 1], p, st2)
    g.f32("entries_decode", st2["cache"])
    st3 = comp.new_state()
    comp.forward(x[:K], 0, st3)
    for p in range(K, S):
        comp.forward(x[p:p + 1], p, st3)
    g.f32("entries_prefill_then_decode", st3["cache"])
    g.done(ratio=ratio, head_dim=hd, rotate=rotate, overlap=ratio == 4, dim=dim, seq=S, split_prefill=K,
           rope=YARN, entry_positions=f"entry i is rotated at position i*{ratio}",
           note="all three entry files are identical; entries exist for i < floor(seq/ratio)")


def g_indexer(root):
    g = Golden(root, "indexer", "lightning indexer (ratio 4): index scores and top-k (ties -> lowest index)")
    dim, ql, S = 128, 128, 40
    c = cfg_ns()
    wq_b = g.fp8w("wq_b", torch.randn(c.index_n_heads * c.index_head_dim, ql, generator=rng(40)) * ql ** -0.5)
    wp = g.bf16w("weights_proj", torch.randn(c.index_n_heads, dim, generator=rng(41)) * dim ** -0.5)
    comp = make_compressor(g, 4, c.index_head_dim, True, dim, seed=42)
    t = {"i.wq_b.weight": wq_b, "i.weights_proj.weight": wp}
    for k in ("wkv.weight", "wgate.weight", "ape", "norm.weight"):
        t["i.compressor." + k] = comp.wkv if k == "wkv.weight" else comp.wgate if k == "wgate.weight" else \
            comp.ape if k == "ape" else comp.norm
    idx_mod = D.Indexer(D.DictWeights(t, {"i.wq_b": "fp8"}), "i", c, comp.freqs)
    x = bfr(S, dim, seed=43)
    qr = bfr(S, ql, seed=44)
    g.f32("x", x)
    g.f32("qr", qr)
    st = idx_mod.compressor.new_state()
    scores = idx_mod.scores(x, qr, 0, st)
    g.f32("keys", st["cache"])
    g.f32("scores", scores)
    st = idx_mod.compressor.new_state()
    g.i64("topk", idx_mod.forward(x, qr, 0, 0, st))
    st = idx_mod.compressor.new_state()
    idx_mod.forward(x[:S - 1], qr[:S - 1], 0, 0, st)
    g.i64("topk_decode_last", idx_mod.forward(x[S - 1:], qr[S - 1:], S - 1, 0, st))
    g.done(index_n_heads=c.index_n_heads, index_head_dim=c.index_head_dim, index_topk=c.index_topk,
           weights_scale=f"bf16(bf16(x @ weights_proj^T) * fp32({c.index_head_dim}^-0.5 * {c.index_n_heads}^-0.5))",
           rope=YARN, offset=0, seq=S, compressor="wkv/wgate/ape/norm are the indexer compressor's (head_dim 128, rotate)",
           note="scores[t][i] = -inf for i >= (t+1)//4; topk rows list min(index_topk, S//4) entries in descending "
                "score order (ties: lower index first), invisible ones replaced by -1; topk_decode_last = the row of "
                "position S-1 computed by prefill(S-1) + one decode step (no -1 there)")


def g_hc(root):
    g = Golden(root, "hc_pre_post", "mHC: mixes, hc_split_sinkhorn (pre/post/comb), hc_pre blend, hc_post write-back")
    S, hc, d = 5, 4, 256
    c = cfg_ns()
    X = bfr(S, hc, d, seed=50) * 2
    X = Fm.bf16(X)
    fn = torch.randn((2 + hc) * hc, hc * d, generator=rng(51)) * (hc * d) ** -0.5
    base = torch.randn((2 + hc) * hc, generator=rng(52)) * 0.5
    scale = torch.tensor([0.7, 0.4, 1.3])
    y = bfr(S, d, seed=53)
    mixes = D.hc_mixes(X, fn, c.eps)
    pre, post, comb = D.hc_split_sinkhorn(mixes, scale, base, hc, c.hc_iters, c.hc_eps)
    xin, _, _ = D.hc_pre(X, fn, scale, base, c)
    for k, v in dict(X=X, fn=fn, base=base, scale=scale, mixes=mixes, pre=pre, post=post, comb=comb,
                     x_pre=xin, y=y, out_post=D.hc_post(y, X, post, comb)).items():
        g.f32(k, v)
    g.done(hc_mult=hc, sinkhorn_iters=c.hc_iters, hc_eps=c.hc_eps, rms_norm_eps=c.eps,
           comb_layout="comb[s][j][k] = mixes[8 + 4j + k]...; out_post[s][k] = post[k]*y + sum_j comb[j][k]*X[j]")


def g_hc_head(root):
    g = Golden(root, "hc_head", "final stream collapse: pre = sigmoid(mixes*scale + base) + eps, bf16(sum pre_j X_j); "
               "then RMSNorm and the fp32 head")
    S, hc, d, V = 3, 4, 256, 64
    c = cfg_ns()
    X = Fm.bf16(bfr(S, hc, d, seed=60) * 2)
    fn = torch.randn(hc, hc * d, generator=rng(61)) * (hc * d) ** -0.5
    base = torch.randn(hc, generator=rng(62)) * 0.5
    scale = torch.tensor([0.6])
    norm = g.bf16w("norm", 1 + 0.1 * torch.randn(d, generator=rng(63)))
    head = g.bf16w("head", torch.randn(V, d, generator=rng(64)) * d ** -0.5)
    mixes = D.hc_mixes(X, fn, c.eps)
    y = D.hc_head(X, fn, scale, base, c)
    xn = D.rms_norm(y, norm, c.eps)
    for k, v in dict(X=X, fn=fn, base=base, scale=scale, mixes=mixes, pre=D.sigmoid(mixes * scale + base) + c.hc_eps,
                     out=y, normed=xn, logits=D.mm(xn, head.t())).items():
        g.f32(k, v)
    g.done(hc_mult=hc, hc_eps=c.hc_eps, rms_norm_eps=c.eps)


def g_gate(root):
    g = Golden(root, "gate", "MoE gate: scores = sqrt(softplus(x @ W^T)) fp32; biased top-k (bias selects only) "
               "or hash (tid2eid[id]); weights = scores / sum * route_scale")
    E, k, d, V, T = 16, 3, 256, 32, 6
    x = bfr(T, d, seed=70)
    wt = torch.randn(E, d, generator=rng(71)) * d ** -0.5
    wt[5] = wt[9]                                  # experts 5 and 9 tie exactly
    wt[0] = x[0] * 0.5                             # a large logit (> 20: softplus is the identity)
    w = g.bf16w("weight", wt)
    bias = torch.randn(E, generator=rng(72)) * 0.1
    bias[5] = bias[9] = 0.0
    tid2eid = torch.rand(V, E, generator=rng(73)).argsort(-1)[:, :k]
    ids = torch.tensor([3, 17, 3, 0, 31, 8])
    g.f32("x", x)
    g.f32("bias", bias)
    g.i64("tid2eid", tid2eid)
    g.i64("ids", ids)
    g.f32("scores", D.sqrt_softplus(D.mm(x, w.t())))
    wb, ib = D.gate(x, w, bias, None, ids, k, 1.5)
    wh, ih = D.gate(x, w, None, tid2eid, ids, k, 1.5)
    g.f32("weights_biased", wb)
    g.i64("indices_biased", ib)
    g.f32("weights_hash", wh)
    g.i64("indices_hash", ih)
    g.done(n_experts=E, topk=k, route_scale=1.5, softplus_threshold=20,
           tie_break="equal (score + bias) -> lower expert index first; experts 5 and 9 tie by construction",
           indices_order="descending score+bias (biased), table order (hash)")


def g_expert(root):
    g = Golden(root, "expert_swiglu", "SwiGLU expert with clamp (swiglu_limit 10): up clamped to [-10, 10], gate "
               "clamped max=10, h = silu(gate)*up (fp32) * routing weight; out = w2(bf16(h))")
    d, mi, T = 256, 128, 5
    x = bfr(T, d, seed=80) * 4
    x = Fm.bf16(x)
    gen = rng(81)
    w1 = g.fp4w("routed_w1", torch.randn(mi, d, generator=gen) * d ** -0.5 * 3)
    w3 = g.fp4w("routed_w3", torch.randn(mi, d, generator=gen) * d ** -0.5 * 3)
    w2 = g.fp4w("routed_w2", torch.randn(d, mi, generator=gen) * mi ** -0.5)
    s1 = g.fp8w("shared_w1", torch.randn(mi, d, generator=gen) * d ** -0.5 * 3)
    s3 = g.fp8w("shared_w3", torch.randn(mi, d, generator=gen) * d ** -0.5 * 3)
    s2 = g.fp8w("shared_w2", torch.randn(d, mi, generator=gen) * mi ** -0.5)
    rw = torch.rand(T, 1, generator=gen) * 1.5
    g.f32("x", x)
    g.f32("route_weight", rw)
    k = lambda w, kind: (w, kind)
    gate_pre = D.qlinear(x, w1)
    up_pre = D.qlinear(x, w3)
    g.f32("routed_gate", gate_pre)
    g.f32("routed_up", up_pre)
    g.f32("routed_out", D.expert(x, k(w1, "fp4"), k(w2, "fp4"), k(w3, "fp4"), 10.0, rw))
    g.f32("routed_out_noclamp", D.expert(x, k(w1, "fp4"), k(w2, "fp4"), k(w3, "fp4"), 0.0, rw))
    g.f32("shared_out", D.expert(x, k(s1, "fp8"), k(s2, "fp8"), k(s3, "fp8"), 10.0))
    g.done(swiglu_limit=10.0, frac_up_clamped=float((up_pre.abs() > 10).float().mean()),
           frac_gate_clamped=float((gate_pre > 10).float().mean()))


def g_moe(root):
    g = Golden(root, "moe", "MoE layer: biased gate top-2 of 8 FP4 experts + FP8 shared expert (clamped); "
               "y = fp32 sum over chosen experts in ascending expert id, + shared; bf16(y)")
    d, mi, E, k, T = 256, 128, 8, 2, 6
    gen = rng(90)
    x = bfr(T, d, seed=91)
    t, kinds = {}, {}
    t["f.gate.weight"] = g.bf16w("gate_weight", torch.randn(E, d, generator=gen) * d ** -0.5)
    t["f.gate.bias"] = torch.randn(E, generator=gen) * 0.1
    g.f32("gate_bias", t["f.gate.bias"])
    for e in range(E):
        for n, (o, i) in (("w1", (mi, d)), ("w3", (mi, d)), ("w2", (d, mi))):
            t[f"f.experts.{e}.{n}.weight"] = g.fp4w(f"experts.{e}.{n}", torch.randn(o, i, generator=gen) * i ** -0.5)
            kinds[f"f.experts.{e}.{n}"] = "fp4"
    for n, (o, i) in (("w1", (mi, d)), ("w3", (mi, d)), ("w2", (d, mi))):
        t[f"f.shared_experts.{n}.weight"] = g.fp8w(f"shared_experts.{n}", torch.randn(o, i, generator=gen) * i ** -0.5)
        kinds[f"f.shared_experts.{n}"] = "fp8"
    W = D.DictWeights(t, kinds)
    cfg = SimpleNamespace(num_hash_layers=0, n_act=k, route_scale=1.5, swiglu_limit=10.0)
    moe = D.MoE.__new__(D.MoE)
    moe.cfg, moe.W, moe.p = cfg, W, "f"
    moe.gate_w, moe.hash, moe.tid2eid, moe.bias = t["f.gate.weight"], False, None, t["f.gate.bias"]
    moe.shared = [W.linear(f"f.shared_experts.{n}") for n in ("w1", "w2", "w3")]
    wts, idx = D.gate(x, moe.gate_w, moe.bias, None, None, k, 1.5)
    g.f32("x", x)
    g.f32("route_weights", wts)
    g.i64("route_indices", idx)
    g.f32("out", moe.forward(x, torch.zeros(T, dtype=torch.int64)))
    g.done(n_experts=E, topk=k, route_scale=1.5, swiglu_limit=10.0, moe_intermediate_size=mi)


def g_attention(root):
    g = Golden(root, "attention_csa", "one whole ratio-4 attention layer (window + compressor + indexer top-k + "
               "sink softmax + inverse RoPE + grouped output): prefill of 14 tokens then 4 decode steps")
    dim, H, hd, ql, G, ol, S, n = 128, 2, 512, 128, 2, 128, 14, 18
    cfg = cfg_ns(index_n_heads=2, index_topk=2, compress_ratios=[4], original_seq_len=YARN["original_seq_len"],
                 compress_rope_theta=YARN["theta"], rope_factor=YARN["factor"], beta_fast=YARN["beta_fast"],
                 beta_slow=YARN["beta_slow"], rope_theta=10000.0, head_dim=hd, window=128,
                 num_attention_heads=H, o_groups=G, o_lora_rank=ol)
    gen = rng(100)
    t, kinds = {}, {}

    def fp8(name, o, i):
        t[f"a.attn.{name}.weight"] = g.fp8w(name, torch.randn(o, i, generator=gen) * i ** -0.5)
        kinds[f"a.attn.{name}"] = "fp8"

    def bfw(name, shape, std, mean=0.0):
        t[f"a.attn.{name}"] = g.bf16w(name, torch.randn(*shape, generator=gen) * std + mean)

    t["a.attn.attn_sink"] = torch.randn(H, generator=gen)
    g.f32("attn_sink", t["a.attn.attn_sink"])
    fp8("wq_a", ql, dim)
    bfw("q_norm.weight", (ql,), 0.1, 1.0)
    fp8("wq_b", H * hd, ql)
    fp8("wkv", hd, dim)
    bfw("kv_norm.weight", (hd,), 0.1, 1.0)
    fp8("wo_a", G * ol, H * hd // G)
    fp8("wo_b", dim, G * ol)
    for c, D_ in (("compressor", hd), ("indexer.compressor", 128)):
        bfw(c + ".wkv.weight", (2 * D_, dim), dim ** -0.5)
        bfw(c + ".wgate.weight", (2 * D_, dim), dim ** -0.5)
        t[f"a.attn.{c}.ape"] = torch.randn(4, 2 * D_, generator=gen) * 0.5
        g.f32(c + ".ape", t[f"a.attn.{c}.ape"])
        bfw(c + ".norm.weight", (D_,), 0.1, 1.0)
    fp8("indexer.wq_b", cfg.index_n_heads * 128, ql)
    bfw("indexer.weights_proj.weight", (cfg.index_n_heads, dim), dim ** -0.5)
    att = D.Attention(D.DictWeights(t, kinds), "a", cfg, 0)
    x = bfr(n, dim, seed=101)
    g.f32("x", x)
    st = att.new_state()
    pre = att.forward(x[:S], 0, st)
    dec = [att.forward(x[p:p + 1], p, st) for p in range(S, n)]
    g.f32("out_prefill", pre)
    g.f32("out_decode", torch.cat(dec, 0))
    full = att.forward(x, 0, att.new_state())
    assert torch.equal(full[S:], torch.cat(dec, 0))
    g.done(dim=dim, heads=H, head_dim=hd, q_lora_rank=ql, o_groups=G, o_lora_rank=ol, compress_ratio=4,
           index_n_heads=cfg.index_n_heads, index_head_dim=128, index_topk=cfg.index_topk, window=128,
           rms_norm_eps=cfg.eps, rope=YARN, prefill=S, seq=n,
           note="weights named as under layers.L.attn. in the checkpoint (FP8 as .weight/.scale, BF16 as u2); "
                "out_prefill = outputs of positions 0..13 (prefill from 0), out_decode = positions 14..17 "
                "(one decode step each, carried state); a 18-token prefill gives the same rows")


def main():
    ap = argparse.ArgumentParser(description="write DeepSeek-V4 component goldens")
    ap.add_argument("--out", default=ROOT)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    g_rmsnorm(a.out)
    g_rope(a.out)
    g_act_quant(a.out)
    g_fp4_quant(a.out)
    g_hadamard(a.out)
    g_fp8_linear(a.out)
    g_fp4_linear(a.out)
    g_sparse_attn(a.out)
    g_compressor(a.out, "compressor_r4", 4, 512, False, S=18, K=6)
    g_compressor(a.out, "compressor_r4_indexer", 4, 128, True, S=18, K=5)
    g_compressor(a.out, "compressor_r128", 128, 512, False, S=260, K=130)
    g_indexer(a.out)
    g_attention(a.out)
    g_hc(a.out)
    g_hc_head(a.out)
    g_gate(a.out)
    g_expert(a.out)
    g_moe(a.out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print(f"wrote {a.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
