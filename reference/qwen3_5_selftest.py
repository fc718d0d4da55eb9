"""Self-test of the Qwen3.5 reference (needs torch; run by hand, not in CI):

    python3 -m reference.qwen3_5_selftest [--long] [--seeds N]

Checks, on tiny random checkpoints (dense and MoE):
* the chunked (WY, C = 64) delta rule equals the recurrence in fp64 (the algebra), and its fp32
  spread against the canonical recurrent form over 300 tokens, several seeds and decay regimes
  (printed: the tolerance for a C++ chunked kernel);
* prefill all at once == prefill K + token-by-token decode, bit for bit; chunked prefill with any
  split == all at once, bit for bit; the same for the MTP head;
* a literal bf16 eager transcription of the official layers (torch bf16 tensors, fp32 kernels)
  against the reference's explicit roundings: agreement rate of the bf16 layer outputs (summation
  order may move a rare element by one bf16 ulp; a misplaced rounding would show everywhere).
"""
import argparse
import tempfile

import torch
import torch.nn.functional as F

from . import qwen3_5 as Q
from .formats import bf16
from .qwen3_5_tiny_checkpoint import make_tiny

FAILS = []
BF = torch.bfloat16


def check(name, ok, detail=""):
    print(f"[{'ok' if ok else 'FAIL'}] {name} {detail}")
    if not ok:
        FAILS.append(name)


# ------------------------------------------------------------------ delta rule forms
def delta_inputs(seed, T, Hv=4, D=128, regime="model"):
    """Kernel inputs as the model makes them: q/k/v = bf16(SiLU(conv output)), gates from A_log,
    dt_bias and a; a random initial state (as after a prefix). regime 'weak' = slow decay (long memory)."""
    g_ = torch.Generator().manual_seed(seed)
    q, k, v = (bf16(F.silu(torch.randn(T, Hv, D, generator=g_) * 1.5)) for _ in range(3))
    A = 1 + 15 * torch.rand(Hv, generator=g_) if regime == "model" else 0.01 + 0.1 * torch.rand(Hv, generator=g_)
    a, b = bf16(torch.randn(T, Hv, generator=g_)), bf16(torch.randn(T, Hv, generator=g_))
    g, beta = Q.gdn_gates(a, b, bf16(torch.log(A)), bf16(torch.ones(Hv)))
    qn, kn = Q.gdn_qk(q, k)
    S0 = torch.randn(Hv, D, D, generator=g_) * 0.1
    return qn, kn, v, g, beta, S0


def recurrent_f64(q, k, v, g, beta, S):
    S = S.double()
    o = torch.empty(v.shape, dtype=torch.float64)
    for t in range(q.shape[0]):
        S = S * g[t].double().exp()[:, None, None]
        u = (v[t].double() - torch.einsum("hij,hi->hj", S, k[t].double())) * beta[t].double()[:, None]
        S = S + k[t].double()[:, :, None] * u[:, None, :]
        o[t] = torch.einsum("hij,hi->hj", S, q[t].double())
    return o, S


def test_delta_rule(long, seeds):
    T = 300
    qn, kn, v, g, beta, S0 = delta_inputs(0, 130)
    o64, s64 = recurrent_f64(qn, kn, v, g, beta, S0)
    oc, sc = Q.delta_rule_chunked(qn, kn, v, g, beta, S0, dtype=torch.float64)
    d = max(float((oc.double() - o64).abs().max()), float((sc.double() - s64).abs().max()))
    check("chunked (C=64) == recurrence in fp64 (the WY algebra)", d < 1e-4, f"(max |diff| {d:.2e}; fp32-rounded outputs)")
    worst_o = worst_s = worst_ref = 0.0
    print(f"[info] recurrent (contract, fp32) vs chunked fp32 C=64, T={T}, 4 value heads x 128 x 128, random S0:")
    for regime in ("model", "weak"):
        for seed in range(seeds):
            qn, kn, v, g, beta, S0 = delta_inputs(100 + seed, T, regime=regime)
            o_r, s_r = Q.delta_rule_recurrent(qn, kn, v, g, beta, S0)
            o_c, s_c = Q.delta_rule_chunked(qn, kn, v, g, beta, S0)
            # a chunked prefill that resumes mid-chunk: chunks start at 0 and at 100
            o_c1, s_c1 = Q.delta_rule_chunked(qn[:100], kn[:100], v[:100], g[:100], beta[:100], S0)
            o_c2, s_c2 = Q.delta_rule_chunked(qn[100:], kn[100:], v[100:], g[100:], beta[100:], s_c1)
            o64, s64 = recurrent_f64(qn, kn, v, g, beta, S0)
            do = max(float((o_c - o_r).abs().max()), float((torch.cat([o_c1, o_c2]) - o_r).abs().max()))
            ds = max(float((s_c - s_r).abs().max()), float((s_c2 - s_r).abs().max()))
            dref = float((o_r.double() - o64).abs().max())
            mism = float((bf16(o_c) != bf16(o_r)).float().mean())
            worst_o, worst_s, worst_ref = max(worst_o, do), max(worst_s, ds), max(worst_ref, dref)
            print(f"       {regime:5s} seed {seed}: max|o| {float(o_r.abs().max()):7.3f} max|do| {do:.2e}  "
                  f"max|S| {float(s_r.abs().max()):7.3f} max|dS| {ds:.2e}  bf16(o) differ {100 * mism:.2f}%  "
                  f"(contract vs fp64 recurrence: {dref:.2e})")
    print(f"[info] delta rule spread: max |d o| {worst_o:.2e}, max |d S| {worst_s:.2e} (chunked fp32 vs contract); "
          f"contract vs fp64 truth {worst_ref:.2e}")
    check("chunked fp32 within 1e-4 of the recurrent contract", worst_o < 1e-4 and worst_s < 1e-4)


# ------------------------------------------------------------------ whole model
def test_model(d, name, long):
    m = Q.Model(d)
    V = m.cfg.vocab_size
    n = 300 if long else 150
    ids = torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(5)).tolist()
    st = m.new_state()
    h_all = m.hidden(ids, st)
    ref = m.logits(h_all)                                          # every position's logits, one prefill
    for K in ((1, 64, 100, 131, n - 1) if long else (1, 64, 100)):
        lg = Q.run_teacher_forcing(m, ids, K)
        diff = float((lg - ref[K - 1:]).abs().max())
        check(f"{name}: prefill {K} + decode == prefill all (positions {K - 1}..{n - 1})", diff == 0.0,
              f"(max |diff| {diff:.3g}, max |logit| {float(ref.abs().max()):.3g})")
    for split in ((37, 64, 49), (64, 64, 22), (1, 127, 22), (5, 5, 5, 135)):
        st = m.new_state()
        hs, p = [], 0
        for s in split:
            hs.append(m.hidden(ids[p:p + s], st))
            p += s
        diff = float((torch.cat(hs) - h_all[:p]).abs().max())
        check(f"{name}: chunked prefill {split} == all at once", diff == 0.0, f"(max |diff| {diff:.3g})")
    # MTP: rows t = 0..n-2 pair h_t with ids[t+1]; all at once vs a prefix + one row at a time
    st1, st2 = m.new_state(), m.new_state()
    _, a = m.mtp_forward(h_all[:n - 1], ids[1:n], st1)
    _, b = m.mtp_forward(h_all[:n - 20], ids[1:n - 19], st2)
    rows = [b]
    for t in range(n - 20, n - 1):
        lg, r = m.mtp_forward(h_all[t:t + 1], ids[t + 1:t + 2], st2)
        rows.append(r)
    diff = float((torch.cat(rows) - a).abs().max())
    ok = diff == 0.0 and bool(torch.isfinite(lg).all())
    check(f"{name}: MTP prefill + one row at a time == all at once", ok, f"(max |diff| {diff:.3g})")
    # MTP acceptance on a random model is meaningless; just show the head runs and chains
    lg2, _ = m.mtp_forward(r, [int(lg.argmax())], st2)
    check(f"{name}: MTP chained draft step runs", bool(torch.isfinite(lg2).all()))
    return m, ids


# ------------------------------------------------------------------ eager bf16 transcription
def act(x):
    """F.silu of a bf16 tensor as modern torch computes it (fp32 math, one rounding; CUDA and CPU
    torch >= 2). torch 1.13's CPU kernel rounds each step of x / (1 + exp(-x)) to bf16 instead."""
    return F.silu(x.float()).to(BF)


def sig(x):
    return torch.sigmoid(x.float()).to(BF)


def eager_rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w.float())).to(BF)


def eager_gdn(L, x, c):
    """The official torch path, line by line in bf16 tensors (prefill from an empty state)."""
    T = x.shape[0]
    lin = lambda a, w: F.linear(a, w.to(BF))
    qkv = lin(x, L.w_qkv).t()[None]                                   # [1, C, T]
    z, b, a = lin(x, L.w_z), lin(x, L.w_b), lin(x, L.w_a)
    qkv = act(F.conv1d(qkv, L.conv_w.to(BF).unsqueeze(1), padding=c.conv_kernel - 1,
                          groups=qkv.shape[1])[..., :T])[0].t()
    Hk, Hv, Dk, Dv = c.lin_k_heads, c.lin_v_heads, c.lin_k_dim, c.lin_v_dim
    q, k, v = qkv[:, :Hk * Dk].reshape(T, Hk, Dk), qkv[:, Hk * Dk:2 * Hk * Dk].reshape(T, Hk, Dk), qkv[:, 2 * Hk * Dk:].reshape(T, Hv, Dv)
    beta = sig(b)
    g = -L.A_log.to(BF).float().exp() * F.softplus(a.float() + L.dt_bias.to(BF))
    q, k = q.repeat_interleave(Hv // Hk, 1).float(), k.repeat_interleave(Hv // Hk, 1).float()
    q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6) * (Dk ** -0.5)
    k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    v, beta = v.float(), beta.float()
    S = torch.zeros(Hv, Dk, Dv)
    o = torch.empty(T, Hv, Dv)
    for t in range(T):
        S = S * g[t].exp()[:, None, None]
        u = (v[t] - (S * k[t][:, :, None]).sum(-2)) * beta[t][:, None]
        S = S + k[t][:, :, None] * u[:, None, :]
        o[t] = (S * q[t][:, :, None]).sum(-2)
    o = o.to(BF)
    of = o.float()
    n = (of * torch.rsqrt(of.pow(2).mean(-1, keepdim=True) + c.eps)).to(BF)
    y = (L.norm_w.to(BF) * n) * F.silu(z.reshape(T, Hv, Dv).float())
    return lin(y.to(BF).reshape(T, -1), L.w_out)


def eager_attention(L, x, c):
    T, H, Hk, D = x.shape[0], c.n_heads, c.n_kv_heads, c.head_dim
    lin = lambda a, w: F.linear(a, w.to(BF))
    q, gate = torch.chunk(lin(x, L.wq).view(T, H, 2 * D), 2, dim=-1)
    gate = gate.reshape(T, -1)
    q = eager_rmsnorm(q, L.q_norm, c.eps).transpose(0, 1)
    k = eager_rmsnorm(lin(x, L.wk).view(T, Hk, D), L.k_norm, c.eps).transpose(0, 1)
    v = lin(x, L.wv).view(T, Hk, D).transpose(0, 1)
    inv = 1.0 / (c.rope_theta ** (torch.arange(0, c.rotary_dim, 2, dtype=torch.int64).float() / c.rotary_dim))
    fr = inv[:, None] @ torch.arange(T).float()[None]
    emb = torch.cat([fr.t(), fr.t()], -1)
    cos, sin = emb.cos().to(BF), emb.sin().to(BF)
    r = c.rotary_dim

    def rope(t):
        a, rest = t[..., :r], t[..., r:]
        rot = torch.cat([-a[..., r // 2:], a[..., :r // 2]], -1)
        return torch.cat([a * cos + rot * sin, rest], -1)

    q, k = rope(q), rope(k)
    k, v = k.repeat_interleave(H // Hk, 0), v.repeat_interleave(H // Hk, 0)
    w = torch.matmul(q, k.transpose(1, 2)) * (D ** -0.5)
    w = w + torch.full((T, T), torch.finfo(BF).min).triu(1).to(BF)
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(BF)
    o = torch.matmul(w, v).transpose(0, 1).reshape(T, -1)
    return lin(o * sig(gate), L.wo)


def eager_mlp(mlp, x, c):
    if not c.moe:
        wg, wu, wd = (w.to(BF) for w in mlp.w)
        return F.linear(act(F.linear(x, wg)) * F.linear(x, wu), wd)
    lg = F.linear(x, mlp.gate_w.to(BF))
    probs = F.softmax(lg, dtype=torch.float, dim=-1)
    # torch.topk's tie order is unspecified (torch 1.13 CPU was seen to put the higher index first);
    # bf16 logits tie often, so the transcription uses the reference's rule (lower index first)
    idx = Q.topk_desc(probs, c.n_active)
    top = probs.gather(-1, idx)
    top = (top / top.sum(-1, keepdim=True)).to(BF)
    out = torch.zeros_like(x)
    for e in sorted(set(idx.flatten().tolist())):
        slot_tok = torch.where(idx == e)
        wg, wu, wd = (w.to(BF) for w in mlp.expert(e))
        xe = x[slot_tok[0]]
        h = F.linear(act(F.linear(xe, wg)) * F.linear(xe, wu), wd) * top[slot_tok[0], slot_tok[1], None]
        out.index_add_(0, slot_tok[0], h)
    sg, su, sd = (w.to(BF) for w in mlp.shared)
    sh = F.linear(act(F.linear(x, sg)) * F.linear(x, su), sd)
    return out + sig(F.linear(x, mlp.shared_gate.to(BF))) * sh


def bf16_ulps(a, ref):
    """max |a - ref| in units of ref's bf16 ulp (2^(e-8) for |ref| in [2^(e-1), 2^e))."""
    e = torch.frexp(ref.abs())[1]
    return float(((a - ref).abs() / torch.ldexp(torch.ones_like(ref), e - 8)).max())


def agree(name, eager, ref, need):
    eq = float((eager.float() == ref).float().mean())
    rel = float((eager.float() - ref).abs().max() / ref.abs().max())
    detail = f"({100 * eq:.3f}% bit-equal, max {bf16_ulps(eager.float(), ref):.0f} bf16 ulp, max |diff| / max |ref| {rel:.1e})"
    if need is None:
        print(f"[info] {name} {detail}")
    else:
        check(name, eq >= need, detail)


def test_eager(m, ids, name):
    """Each block fed the same bf16 input in both forms, so only accumulation order differs."""
    c = m.cfg
    x = m.embed[torch.tensor(ids[:96])]
    gdn, att = m.layers[0], m.layers[3]
    hn = Q.rms_norm(x, gdn.in_norm, c.eps)
    agree(f"{name}: eager (1+w) RMSNorm", eager_rmsnorm(x.to(BF), gdn.in_norm, c.eps), hn, 0.999)
    agree(f"{name}: eager Gated DeltaNet layer (conv, gates, fp32 kernel, gated norm)",
          eager_gdn(gdn.mixer, hn.to(BF), c), gdn.mixer.forward(hn, 0, gdn.mixer.new_state()), 0.99)
    agree(f"{name}: eager {'MoE block' if c.moe else 'SwiGLU MLP'}", eager_mlp(gdn.mlp, hn.to(BF), c),
          gdn.mlp.forward(hn), 0.99)
    # attention: the core with shared q / k / v (one softmax row sums 96 keys, so one differing
    # input element moves many outputs; the whole mixer is shown for information)
    T, H, D = hn.shape[0], c.n_heads, c.head_dim
    q, k, v = (bf16(torch.randn(T, h, D, generator=torch.Generator().manual_seed(s)) * 2)
               for s, h in ((1, H), (2, c.n_kv_heads), (3, c.n_kv_heads)))
    ref = Q.attention(q, k, v, list(range(T)), D ** -0.5)
    rep = H // c.n_kv_heads
    qb, kb, vb = (t.to(BF).transpose(0, 1) for t in (q, k, v))
    kb, vb = kb.repeat_interleave(rep, 0), vb.repeat_interleave(rep, 0)
    w = torch.matmul(qb, kb.transpose(1, 2)) * (D ** -0.5) + torch.full((T, T), torch.finfo(BF).min).triu(1).to(BF)
    o = torch.matmul(F.softmax(w, dim=-1, dtype=torch.float32).to(BF), vb).transpose(0, 1)
    agree(f"{name}: eager attention core (bf16 scores, fp32 softmax, bf16 P.V; causal, GQA)", o, ref, 0.99)
    agree(f"{name}: eager gated attention layer (q/k norms, partial RoPE, core, gate, o_proj)",
          eager_attention(att.mixer, hn.to(BF), c), att.mixer.forward(hn, 0, att.mixer.new_state()), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--long", action="store_true", help="300-token model tests")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per decay regime for the delta-rule spread")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    test_delta_rule(a.long, a.seeds)
    for moe in (False, True):
        with tempfile.TemporaryDirectory() as d:
            make_tiny(d, seed=0, moe=moe)
            name = "moe" if moe else "dense"
            m, ids = test_model(d, name, a.long)
            test_eager(m, ids, name)
    print("FAILED: " + ", ".join(FAILS) if FAILS else "all checks passed")
    raise SystemExit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
