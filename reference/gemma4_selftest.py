"""Self-test of the Gemma 4 reference (needs torch; run by hand, not in CI):

    python3 -m reference.gemma4_selftest [--n 150] [--preset P ...]

Checks, on a tiny random checkpoint of every preset (reference.gemma4_tiny_checkpoint, seed 0):
* prefill all at once == prefill K + token-by-token decode == chunked prefill (chunks of 7, 32, 50
  and a mixed split), bit for bit, over 150 tokens (the 32-token window is crossed many times);
* the attention core against a plain dense masked formulation in float64 (full causal mask on full
  layers, 0 <= q - k < W on sliding ones) on the model's own q / k / v: the bf16 roundings are the
  only difference (max |diff| printed), and the window matters (sliding != full mask);
* RoPE: the proportional inverse frequencies equal the formula (transcribed in numpy fp32), the
  sliding ones the default formula, and the non-rotated pairs pass through unchanged;
* K = V: no v_proj on the full layers, the cached V is v_norm(k_proj x) (unweighted, no RoPE);
* KV sharing (e-tiny): the shared layers hold no cache and read layers 3 and 2; double-wide MLP;
* a bf16 eager transcription of the official decoder layer (torch bf16 tensors: nn.Linear, eager
  attention with an additive mask, the router and experts, the PLE block) fed the same bf16 input:
  agreement of the layer outputs (summation order only may move an element by one bf16 ulp);
* the fast profile keeps prefill == decode (every preset, 150 tokens).
"""
import argparse
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

from . import gemma4 as G
from . import numerics as N
from .formats import bf16
from .gemma4_tiny_checkpoint import PRESETS, make_tiny

FAILS = []
BF = torch.bfloat16


def check(name, ok, detail=""):
    print(f"[{'ok' if ok else 'FAIL'}] {name} {detail}", flush=True)
    if not ok:
        FAILS.append(name)


def maxdiff(a, b):
    return float((a.double() - b.double()).abs().max())


# ------------------------------------------------------------------ prefill == decode == chunked
def test_consistency(m, name, ids):
    n = len(ids)
    st_all = m.new_state()
    h_all = m.hidden(ids, st_all)
    ref = m.logits(h_all)
    check(f"{name}: |logits| <= softcap", float(ref.abs().max()) <= m.cfg.softcap, f"(max {float(ref.abs().max()):.3g})")
    for K in (1, 75, n):
        d = maxdiff(G.run_teacher_forcing(m, ids, K), ref[K - 1:])
        check(f"{name}: prefill {K} + decode == prefill all (positions {K - 1}..{n - 1})", d == 0.0, f"(max |diff| {d:.3g})")
    for split in (7, 32, 50, (7, 32, 50, 61)):
        sizes = split if isinstance(split, tuple) else [split] * (n // split) + ([n % split] if n % split else [])
        st = m.new_state()
        hs, p = [], 0
        for s in sizes:
            hs.append(m.hidden(ids[p:p + s], st))
            p += s
        d = maxdiff(torch.cat(hs), h_all)
        dc = max([maxdiff(a[k], b[k]) for a, b in zip(st["layers"], st_all["layers"]) for k in a] + [0.0])
        label = f"chunks {split}" if isinstance(split, tuple) else f"chunks of {split}"
        check(f"{name}: chunked prefill ({label}) == all at once", d == 0.0 and dc == 0.0,
              f"(hidden max |diff| {d:.3g}, caches {dc:.3g})")
    return h_all


# ------------------------------------------------------------------ attention vs dense fp64
def layer_inputs(m, ids):
    """The input of every layer (the residual stream h before it) for one prefill of ids, and the state."""
    st = m.new_state()
    idt = torch.tensor(ids)
    h = bf16(m.embed[idt] * m.embed_scale)
    ple = m.per_layer_inputs(idt, h) if m.cfg.ple_dim else None
    hs = []
    for i, layer in enumerate(m.layers):
        hs.append(h)
        h = layer.forward(h, 0, st["layers"], None if ple is None else ple[:, i])
    return hs, st


def dense_attention_f64(q, k, v, window, rounded=False):
    """Plain masked attention over the whole [S, S] score matrix in float64: scores q.k^T, additive
    -inf mask (causal, and 0 <= q-k < W when sliding), softmax, P.V; query t at position t.
    rounded: the same formulation with the contract's three roundings (z, p, o to bf16 via fp32)."""
    S, H, D = q.shape
    rep = H // k.shape[1]
    qd, kd, vd = q.double(), k.double().repeat_interleave(rep, 1), v.double().repeat_interleave(rep, 1)
    r = (lambda x: bf16(x.float()).double()) if rounded else (lambda x: x)
    z = r(torch.einsum("shd,thd->hst", qd, kd))
    t = torch.arange(S)
    dist = t[:, None] - t[None, :]
    vis = (dist >= 0) & ((dist < window) if window else torch.ones_like(dist, dtype=torch.bool))
    p = r(torch.softmax(z.masked_fill(~vis, float("-inf")), -1))
    return r(torch.einsum("hst,thd->shd", p, vd))


def test_attention(m, name, ids, hs, st):
    """The reference (row by row over the visible keys, bf16 z / p / o) against the dense masked
    formulation: with the same roundings it must agree bit for bit (so the masks and the GQA mapping
    are the same), without them in float64 it differs by what the roundings do: bf16 scores of
    magnitude up to ~|q||k| (scale 1) move softmax weights by up to ~2^-9 |z|."""
    worst = 0.0
    for i, layer in enumerate(m.layers):
        a = layer.attn
        x = G.rms_norm(hs[i], layer.in_norm, m.cfg.eps)
        q, _, _ = a.project(x, 0)
        src = st["layers"][a.i if a.src is None else a.src]
        k, v = src["k"], src["v"]
        ref = G.attention(q, k, v, list(range(len(ids))), a.window)
        same = float((dense_attention_f64(q, k, v, a.window, rounded=True).float() == ref).float().mean())
        dense = dense_attention_f64(q, k, v, a.window)
        d = maxdiff(ref, dense)
        rel = d / float(dense.abs().max())
        worst = max(worst, rel)
        kind = f"sliding W={a.window}" if a.window else "full"
        extra = ""
        if a.window:   # the window matters: the full-mask result differs on rows past the window
            full = dense_attention_f64(q, k, v, None)
            extra = f"; a full mask instead moves rows past the window by {maxdiff(full[a.window:], dense[a.window:]):.3g}"
        zmax = float(torch.einsum("shd,thd->hst", q, k.repeat_interleave(q.shape[1] // k.shape[1], 1)).abs().max())
        check(f"{name}: layer {i} ({kind}, D={a.D}, KV={k.shape[1]}{', shared' if a.src is not None else ''}) "
              f"attention: == dense masked with the same roundings, ~ dense fp64",
              same == 1.0 and rel < 5e-2,
              f"({100 * same:.2f}% bit-equal; vs fp64 max |diff| {d:.3g}, / max |o| {rel:.1e}, max |z| {zmax:.3g}{extra})")
    return worst


# ------------------------------------------------------------------ RoPE, K=V, sharing
def inv_freq_formula(D, theta, prf):
    """Transcription in numpy: A = int(prf * D // 2); inv[i] = fp32(1 / fp32(theta ** fp32(2i / D))) for
    i < A (pow in fp64, rounded once), 0 for A <= i < D/2."""
    A = int(prf * D // 2)
    out = np.zeros(D // 2, dtype=np.float32)
    for i in range(A):
        e = np.float32(2 * i) / np.float32(D)
        out[i] = np.float32(1) / np.float32(np.float64(np.float32(theta)) ** np.float64(e))
    return out


def test_rope(m, name):
    c = m.cfg
    for i in range(c.n_layers):
        a = m.layers[i].attn
        p = c.rope[c.layer_types[i]]
        if c.is_full(i):
            want = inv_freq_formula(a.D, p["rope_theta"], p["partial_rotary_factor"])
        else:
            want = inv_freq_formula(a.D, p["rope_theta"], 1.0)
        ok = np.array_equal(a.inv_freq.numpy(), want)
        if i < 3:
            nz = int((a.inv_freq != 0).sum())
            check(f"{name}: layer {i} inv_freq == formula ({'proportional' if c.is_full(i) else 'default'}, "
                  f"D={a.D}, {nz} of {a.D // 2} angles rotate)", ok)
    big = G.rope_inv_freq_proportional(512, 1e6, 0.25)
    check("proportional D=512, p=0.25: 64 rotated angles, formula", int((big != 0).sum()) == 64 and
          np.array_equal(big.numpy(), inv_freq_formula(512, 1e6, 0.25)))
    a = next(l.attn for l in m.layers if l.attn.window is None)
    A = int((a.inv_freq != 0).sum())
    cos, sin = G.rope_cos_sin(a.inv_freq, range(0, 4000, 37))
    x = bf16(torch.randn(cos.shape[0], 2, a.D, generator=torch.Generator().manual_seed(0)))
    y = G.apply_rope(x, cos, sin)
    h = a.D // 2
    keep = torch.cat([torch.arange(A, h), torch.arange(h + A, a.D)])
    rot = torch.cat([torch.arange(0, A), torch.arange(h, h + A)])
    check(f"{name}: full-layer RoPE leaves the {2 * (h - A)} non-rotated dims unchanged, rotates the others",
          torch.equal(y[..., keep], x[..., keep]) and not torch.equal(y[1:, :, rot], x[1:, :, rot]))


def test_k_eq_v(m, name, hs):
    c = m.cfg
    for i, layer in enumerate(m.layers):
        a = layer.attn
        if not a.k_eq_v:
            continue
        has_v = m.W.has(f"layers.{i}.self_attn.v_proj.weight")
        x = G.rms_norm(hs[i], layer.in_norm, c.eps)
        st = m.new_state()["layers"]
        layer.forward(hs[i], 0, st)
        raw = bf16(G.linear_mm(x, a.wk)).view(x.shape[0], a.KV, a.D)
        v_want = G.rms_norm_noscale(raw, c.eps)
        k_want = G.apply_rope(G.rms_norm(raw, a.k_norm, c.eps), *G.rope_cos_sin(a.inv_freq, range(x.shape[0])))
        check(f"{name}: layer {i} K=V: no v_proj, V == v_norm(k_proj x), K == RoPE(k_norm(k_proj x)) != V",
              not has_v and torch.equal(st[i]["v"], v_want) and torch.equal(st[i]["k"], k_want)
              and not torch.equal(st[i]["k"], st[i]["v"]))


def test_sharing(m, name):
    c = m.cfg
    st = m.new_state()
    srcs = [l.attn.src for l in m.layers]
    widths = [l.mlp[0].shape[0] for l in m.layers]
    m.hidden([5, 6, 7], st)
    empty = [i for i, s in enumerate(st["layers"]) if not s]
    has_kv = [m.W.has(f"layers.{i}.self_attn.k_proj.weight") for i in range(c.n_layers)]
    check(f"{name}: KV-shared layers {empty} read {[srcs[i] for i in empty]}, hold no cache, have no k_proj; "
          f"MLP widths {widths}", empty == [4, 5] and srcs[4:] == [3, 2] and has_kv == [True] * 4 + [False] * 2
          and widths == [c.intermediate_size] * 4 + [2 * c.intermediate_size] * 2)


# ------------------------------------------------------------------ eager bf16 transcription
def gelu_eager(x):
    """gelu_pytorch_tanh on a bf16 tensor as modern torch computes it (fp32 math, one rounding)."""
    return F.gelu(x.float(), approximate="tanh").to(BF)


def smul(x, c):
    """A bf16 tensor times a Python float as torch >= 2 and CUDA compute it: the scalar in fp32
    (opmath), one rounding. torch 1.13's CPU kernel rounds the scalar to bf16 first (measured:
    x * 128**-0.5 differs on 2.6 % of elements), which the transcription sets aside."""
    return (x.float() * torch.tensor(c, dtype=torch.float32)).to(BF)


def norm_eager(x, w=None, eps=1e-6):
    """T:Gemma4RMSNorm.forward, literally (torch's fp32 mean and pow)."""
    xf = x.float()
    y = xf * torch.pow(xf.pow(2).mean(-1, keepdim=True) + eps, -0.5)
    return (y if w is None else y * w.float()).to(BF)


def eager_layer(m, i, h, ple):
    """T:Gemma4TextDecoderLayer.forward transcribed with torch bf16 tensors (prefill from position 0)."""
    c, L = m.cfg, m.layers[i]
    a = L.attn
    lin = lambda x, w: F.linear(x, w.to(BF))
    S, eps = h.shape[0], c.eps
    res = h
    x = norm_eager(h, L.in_norm, eps)
    cos, sin = (t.to(BF) for t in G.rope_cos_sin(a.inv_freq, range(S)))
    emb = lambda t: torch.cat([t, t], -1)[:, None, :]

    def rope(t):
        half = t.shape[-1] // 2
        return t * emb(cos) + torch.cat([-t[..., half:], t[..., :half]], -1) * emb(sin)

    q = rope(norm_eager(lin(x, a.wq).view(S, -1, a.D), a.q_norm, eps)).transpose(0, 1)
    raw = lin(x, a.wk).view(S, -1, a.D)
    k = rope(norm_eager(raw, a.k_norm, eps)).transpose(0, 1)
    v = norm_eager(raw if a.k_eq_v else lin(x, a.wv).view(S, -1, a.D), None, eps).transpose(0, 1)
    rep = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    t = torch.arange(S)
    dist = t[:, None] - t[None, :]
    vis = (dist >= 0) & ((dist < a.window) if a.window else True)
    mask = torch.where(vis, torch.zeros(()), torch.full((), torch.finfo(BF).min)).to(BF)
    w = torch.matmul(q, k.transpose(1, 2)) + mask      # * scaling 1.0: a no-op
    o = torch.matmul(F.softmax(w, dim=-1, dtype=torch.float32).to(BF), v).transpose(0, 1).reshape(S, -1)
    h = res + norm_eager(lin(o, a.wo), L.post_attn_norm, eps)
    res = h
    xm = norm_eager(h, L.pre_ffn_norm, eps)
    wg, wu, wd = (t.to(BF) for t in L.mlp)
    mo = F.linear(gelu_eager(F.linear(xm, wg)) * F.linear(xm, wu), wd)
    if L.moe is not None:
        mo1 = norm_eager(mo, L.post_ffn_norm_1, eps)
        R = L.moe
        n = smul(norm_eager(res, None, eps) * R.scale.to(BF), c.hidden_size ** -0.5)
        probs = F.softmax(lin(n, R.proj), dim=-1)                       # bf16 in, bf16 out
        idx = G.topk_desc(probs.float(), c.top_k)                       # T: torch.topk (ties: lower index here)
        tw = probs.gather(-1, idx)
        tw = tw / tw.sum(-1, keepdim=True)
        tw = tw * R.per_expert_scale.to(BF)[idx]
        x2 = norm_eager(res, L.pre_ffn_norm_2, eps)
        acc = torch.zeros_like(x2)
        for e in sorted(set(idx.flatten().tolist())):
            rows, slot = torch.where(idx == e)
            gate, up = F.linear(x2[rows], torch.cat([R.experts[e][0], R.experts[e][1]]).to(BF)).chunk(2, -1)
            y = F.linear(gelu_eager(gate) * up, R.experts[e][2].to(BF)) * tw[rows, slot, None]
            acc.index_add_(0, rows, y)
        mo = mo1 + norm_eager(acc, L.post_ffn_norm_2, eps)
    h = res + norm_eager(mo, L.post_ffn_norm, eps)
    if ple is not None:
        res = h
        tt = gelu_eager(lin(h, L.ple_gate)) * ple.to(BF)
        h = res + norm_eager(lin(tt, L.ple_proj), L.ple_norm, eps)
    return h * L.layer_scalar.to(BF)


def eager_inputs_and_head(m, ids, h):
    """T:Gemma4TextScaledWordEmbedding, T:Gemma4TextModel.project_per_layer_inputs and the lm_head +
    softcap of T:Gemma4ForConditionalGeneration, transcribed with torch bf16 tensors."""
    c = m.cfg
    idt = torch.tensor(ids)
    e = m.embed[idt].to(BF) * torch.tensor(c.hidden_size ** 0.5).to(BF)
    ple = None
    if c.ple_dim:
        pl = (m.ple_embed[idt].to(BF) * torch.tensor(c.ple_dim ** 0.5).to(BF)).view(len(ids), c.n_layers, -1)
        proj = smul(F.linear(e, m.ple_model_proj.to(BF)), c.hidden_size ** -0.5).view(len(ids), c.n_layers, -1)
        ple = smul(norm_eager(proj, m.ple_proj_norm, c.eps) + pl, 2 ** -0.5)
    lg = F.linear(norm_eager(h.to(BF), m.norm, c.eps), m.head.to(BF))
    lg = smul(torch.tanh((lg.float() / torch.tensor(c.softcap)).to(BF).float()).to(BF), c.softcap)
    return e, ple, lg


def test_eager(m, name, ids, hs):
    """Each layer fed the same bf16 input in both forms (prefill of all ids)."""
    c = m.cfg
    idt = torch.tensor(ids)
    ple = m.per_layer_inputs(idt, hs[0]) if c.ple_dim else None
    e, ple_e, lg_e = eager_inputs_and_head(m, ids, hs[-1])
    agree_rate = lambda a, b: float((a.float() == b).float().mean())
    check(f"{name}: eager scaled embedding", agree_rate(e, hs[0]) == 1.0)
    if c.ple_dim:
        check(f"{name}: eager per-layer inputs (PLE projection, norm, scales)", agree_rate(ple_e, ple) >= 0.999,
              f"({100 * agree_rate(ple_e, ple):.2f}% bit-equal)")
    lg = m.logits(G.rms_norm(hs[-1], m.norm, c.eps))
    check(f"{name}: eager final norm + tied head + softcap", agree_rate(lg_e, lg) >= 0.995,
          f"({100 * agree_rate(lg_e, lg):.2f}% bit-equal)")
    for i in range(c.n_layers):
        if m.layers[i].attn.src is not None:
            continue   # shared layers: the source layer's K/V, checked by the consistency tests
        st = m.new_state()["layers"]
        ref = m.layers[i].forward(hs[i], 0, st, None if ple is None else ple[:, i])
        eg = eager_layer(m, i, hs[i].to(BF), None if ple is None else ple[:, i]).float()
        eq = agree_rate(eg, ref)
        rel = maxdiff(eg, ref) / float(ref.abs().max())
        rows = int((eg != ref).any(-1).sum())
        # torch's own summation orders (bf16 matmuls, fp32 norm means) move an element by one bf16 ulp
        # now and then; in a score that changes its softmax row and so a whole output row. A misplaced
        # rounding would disagree on most elements.
        check(f"{name}: eager bf16 decoder layer {i} ({c.layer_types[i].split('_')[0]})", eq >= 0.97 and rel < 1e-2,
              f"({100 * eq:.2f}% bit-equal, {rows} of {len(ids)} rows touched, max |diff| / max |ref| {rel:.1e})")


def test_fast_profile(m, name, ids):
    with N.profile("fast"):
        ref = m.logits(m.hidden(ids, m.new_state()))
        dd = maxdiff(G.run_teacher_forcing(m, ids, 1), ref)
    ex = m.logits(m.hidden(ids, m.new_state()))
    check(f"{name}: fast profile: prefill 1 + decode == prefill all", dd == 0.0,
          f"(max |diff| {dd:.3g}; fast vs exact: max |diff| {maxdiff(ref, ex):.3g}, {int((ref != ex).sum())} logits differ)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=150, help="tokens per sequence")
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS))
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    t0 = time.time()
    for preset in a.preset or list(PRESETS):
        with tempfile.TemporaryDirectory() as d:
            make_tiny(d, seed=0, preset=preset)
            m = G.Model(d)
            name = preset
            ids = torch.randint(0, m.cfg.vocab_size, (a.n,), generator=torch.Generator().manual_seed(5)).tolist()
            test_consistency(m, name, ids)
            hs, st = layer_inputs(m, ids)
            test_attention(m, name, ids, hs, st)
            test_rope(m, name)
            test_k_eq_v(m, name, hs)
            if m.cfg.n_kv_shared:
                test_sharing(m, name)
            test_eager(m, name, ids, hs)
            if m.cfg.moe:
                _, idx, _ = G.route(hs[0], m.layers[0].moe.scale, m.layers[0].moe.proj,
                                    m.layers[0].moe.per_expert_scale, m.cfg.top_k, m.cfg.eps)
                use = torch.bincount(idx.flatten(), minlength=m.cfg.n_experts).tolist()
                print(f"[info] {name}: layer 0's router on the embedding rows, expert use {use}")
            test_fast_profile(m, name, ids)
        print(f"[info] {preset}: {time.time() - t0:.1f} s so far", flush=True)
    print("FAILED: " + ", ".join(FAILS) if FAILS else "all checks passed")
    raise SystemExit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
