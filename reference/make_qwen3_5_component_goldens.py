"""Per-component golden files for the C++ Qwen3.5 tests.

    python3 -m reference.make_qwen3_5_component_goldens [--out tests/goldens/qwen3_5/components]

Same format as the DeepSeek-V4 ones (reference/make_component_goldens.py): one directory per
mechanism, NumPy .npy files named by role plus meta.json (shapes, file dtypes, parameters).
  f4 : activations / outputs (bf16-valued where the reference rounds) and fp32 values
  u2 : BF16 weights as raw bf16 bit patterns (checkpoint storage form)
  i8 : indices
Weight roles are named as under the layer in the checkpoint (e.g. `in_proj_qkv.weight`).
Fixed seeds: the files are reproducible bit for bit.
"""
import argparse
import os
import shutil

import torch

from . import qwen3_5 as Q
from .formats import bf16
from .make_component_goldens import Golden

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "goldens", "qwen3_5", "components")
EPS = 1e-6


def gen(seed):
    return torch.Generator().manual_seed(seed)


def bfr(*shape, seed, std=1.0, mean=0.0):
    return bf16(torch.randn(*shape, generator=gen(seed)) * std + mean)


def weight(g, role, out, inn, seed):
    return g.bf16w(role, torch.randn(out, inn, generator=gen(seed)) * inn ** -0.5)


class Cfg:
    """The attributes the layer classes read, for hand-built components."""

    def __init__(self, **kw):
        self.__dict__.update(dict(eps=EPS, moe=False), **kw)


# ------------------------------------------------------------------ norms
def g_rmsnorm(root):
    g = Golden(root, "rmsnorm", "Qwen3_5RMSNorm (zero-centred weight): out = bf16((x * rsqrt(mean(x^2) + eps)) * "
               "fp32(1 + w)); fp32 ops, mean(x^2) = fp64 sum of squares rounded once to fp32, / n")
    x = bf16(bfr(8, 256, seed=1) * torch.logspace(-3, 2, 8).unsqueeze(1))
    x[7] = 0.0                                     # all-zero row: output 0
    w = g.bf16w("weight", torch.randn(256, generator=gen(2)) * 0.3)
    g.f32("x", x)
    g.f32("out", Q.rms_norm(x, w, EPS))
    g.done(eps=EPS, weight_is="zero-centred (the norm multiplies by 1 + w)")


def g_gated_rmsnorm(root):
    g = Golden(root, "gated_rmsnorm", "Qwen3_5RMSNormGated (GDN norm, plain weight) over the last dim: "
               "n = bf16(o * rsqrt(mean(o^2) + eps)); n = bf16(w * n); out = bf16(n * silu(z)) (silu fp32)")
    o = bf16(bfr(6, 4, 64, seed=3) * torch.logspace(-2, 1, 6).view(6, 1, 1))
    o[5, 3] = 0.0
    z = bfr(6, 4, 64, seed=4, std=2.0)
    w = g.bf16w("weight", torch.randn(64, generator=gen(5)) * 0.1 + 1.0)
    g.f32("o", o)
    g.f32("z", z)
    g.f32("out", Q.gated_rms_norm(o, z, w, EPS))
    g.done(eps=EPS)


def g_l2norm(root):
    g = Golden(root, "l2norm", "q/k preparation of the GDN kernel (fp32): k = x * rsqrt(sum(x^2) + 1e-6) "
               "(sum = fp64 sum of squares rounded once); q = k_of(x) * fp32(Dk^-0.5)")
    x = bf16(bfr(8, 128, seed=6) * torch.logspace(-4, 1, 8).unsqueeze(1))
    x[0] = 0.0                                     # the eps guard: output 0
    q, k = Q.gdn_qk(x, x)
    g.f32("x", x)
    g.f32("out_k", k)
    g.f32("out_q", q)
    g.done(eps=Q.L2NORM_EPS, dk=128, q_scale=float(Q.f32(128 ** -0.5)))


# ------------------------------------------------------------------ Gated DeltaNet
def g_conv(root):
    C, K, T = 48, 4, 7
    g = Golden(root, "causal_conv1d", "depthwise causal conv + SiLU with a carried tail: y[t,c] = bf16(silu(bf16("
               "sum_j w[c,j] * x[t-K+1+j,c]))), the sum exact (fp64 rounded once to fp32); rows before x come "
               "from tail_in (oldest first); tail_out = the last K-1 pre-conv rows")
    w = g.bf16w("conv1d.weight", torch.randn(C, 1, K, generator=gen(7)) * 0.5)
    x, tail = bfr(T, C, seed=8, std=2.0), bfr(K - 1, C, seed=9, std=2.0)
    y, tail_out = Q.causal_conv1d(x, tail, w.squeeze(1))
    y0, _ = Q.causal_conv1d(x, torch.zeros(K - 1, C), w.squeeze(1))
    st, rows = tail, []
    for t in range(T):                            # one token at a time == all at once
        r, st = Q.causal_conv1d(x[t:t + 1], st, w.squeeze(1))
        rows.append(r)
    assert torch.equal(torch.cat(rows), y) and torch.equal(st, tail_out)
    for k, v in dict(x=x, tail_in=tail, out=y, tail_out=tail_out, out_zero_tail=y0).items():
        g.f32(k, v)
    g.done(channels=C, kernel=K, weight_layout="[channels, 1, K] as in the checkpoint",
           note="out_zero_tail: the same x from the start of a sequence (tail zeros)")


def g_delta_rule(root):
    T, Hk, Hv, D = 6, 1, 2, 128
    g = Golden(root, "gated_delta_rule", "the GDN core, recurrent form, several steps with the state in/out: "
               "gates g = -exp(A_log) * softplus(a + dt_bias), beta = bf16(sigmoid(b)); q, k repeated to the value "
               "heads (head h reads key head h // (Hv/Hk)), l2-normalized, q scaled; per token: S *= exp(g); "
               "kv = S^T k; u = (v - kv) * beta; S += k u^T; o = S^T q (see README for the fp32 op order)")
    q, k, v = (bf16(torch.nn.functional.silu(bfr(T, h, D, seed=s, std=1.5))) for s, h in ((10, Hk), (11, Hk), (12, Hv)))
    a, b = bfr(T, Hv, seed=13), bfr(T, Hv, seed=14)
    A_log, dt_bias = bf16(torch.log(torch.tensor([2.5, 0.05]))), bf16(torch.tensor([0.8, 1.3]))
    S0 = torch.randn(Hv, D, D, generator=gen(15)) * 0.1
    g_, beta = Q.gdn_gates(a, b, A_log, dt_bias)
    qn, kn = Q.gdn_qk(q.repeat_interleave(Hv // Hk, 1), k.repeat_interleave(Hv // Hk, 1))
    o, S = Q.delta_rule_recurrent(qn, kn, v, g_, beta, S0)
    for kk, vv in dict(q=q, k=k, v=v, a=a, b=b, A_log=A_log, dt_bias=dt_bias, state_in=S0, g=g_, beta=beta,
                       q_prepared=qn, k_prepared=kn, out=o, out_bf16=bf16(o), state_out=S).items():
        g.f32(kk, vv)
    g.done(steps=T, key_heads=Hk, value_heads=Hv, head_dim=D, l2norm_eps=Q.L2NORM_EPS,
           note="A_log and dt_bias already bf16 values (the bf16 execution's parameters); q_prepared/k_prepared are "
                "the repeated, normalized (q also scaled) kernel inputs; out is the fp32 kernel output, out_bf16 its cast")


def gdn_layer():
    c = Cfg(lin_k_heads=2, lin_v_heads=4, lin_k_dim=32, lin_v_dim=32, conv_kernel=4)
    H, conv_dim = 128, 2 * 2 * 32 + 4 * 32
    shapes = {"in_proj_qkv.weight": (conv_dim, H), "in_proj_z.weight": (128, H), "in_proj_b.weight": (4, H),
              "in_proj_a.weight": (4, H), "out_proj.weight": (H, 128)}
    return c, H, shapes


def g_gdn_layer(root):
    c, H, shapes = gdn_layer()
    g = Golden(root, "gdn_layer", "a whole linear_attn layer (in_proj_qkv/z/b/a, conv + SiLU, gates, key-head repeat, "
               "recurrent core, gated RMSNorm, out_proj): prefill of 7 tokens then 3 decode steps with the carried "
               "conv tail and S state")
    t = {}
    for i, (n, (o, inn)) in enumerate(shapes.items()):
        t["l." + n] = weight(g, n, o, inn, 20 + i)
    t["l.conv1d.weight"] = g.bf16w("conv1d.weight", torch.randn(256, 1, 4, generator=gen(30)) * 0.5)
    t["l.A_log"] = bf16(torch.log(1 + 15 * torch.rand(4, generator=gen(31))))
    t["l.dt_bias"] = bf16(torch.randn(4, generator=gen(32)) * 0.5 + 1)
    g.f32("A_log", t["l.A_log"])
    g.f32("dt_bias", t["l.dt_bias"])
    t["l.norm.weight"] = g.bf16w("norm.weight", torch.randn(32, generator=gen(33)) * 0.1 + 1)
    layer = Q.GatedDeltaNet(Q.DictWeights(t), "l", c)
    x = bfr(10, H, seed=34)
    st = layer.new_state()
    pre = layer.forward(x[:7], 0, st)
    dec = torch.cat([layer.forward(x[p:p + 1], p, st) for p in range(7, 10)])
    full = layer.forward(x, 0, layer.new_state())
    assert torch.equal(full, torch.cat([pre, dec]))
    g.f32("x", x)
    g.f32("out_prefill", pre)
    g.f32("out_decode", dec)
    g.f32("conv_tail_after", st["conv"])
    g.f32("state_after", st["S"])
    g.done(hidden=H, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32,
           linear_value_head_dim=32, conv_kernel=4, rms_norm_eps=EPS, prefill=7, seq=10,
           note="out_prefill = positions 0..6 from an empty state; out_decode = positions 7..9, one token each; "
                "a 10-token prefill gives the same rows. conv_tail_after [3, 256], state_after [4, 32, 32] after all 10")


# ------------------------------------------------------------------ attention
def g_rope(root):
    g = Golden(root, "rope", "partial rotate-half RoPE: inv_freq[i] = 1 / fp32(theta^fp32(2i/r)) (fp32, pow fp64 rounded "
               "once); angle = fp32(pos * inv_freq); cos/sin fp32 then bf16; on the first r dims of each head: "
               "out[i] = bf16(bf16(x[i] c) + bf16(-x[i+r/2] s)), out[i+r/2] = bf16(bf16(x[i+r/2] c) + bf16(x[i] s))")
    pos = [0, 1, 2, 63, 64, 127, 128, 129, 1000, 4095, 65535, 262143]
    for r in (16, 64):
        inv = Q.rope_inv_freq(r, 1e7)
        cos, sin = Q.rope_cos_sin(inv, pos)
        g.f32(f"inv_freq_r{r}", inv)
        g.f32(f"cos_r{r}", cos)
        g.f32(f"sin_r{r}", sin)
    x = bfr(len(pos), 3, 64, seed=40)
    g.f32("x", x)
    g.i64("positions", torch.tensor(pos))
    c16, s16 = Q.rope_cos_sin(Q.rope_inv_freq(16, 1e7), pos)
    g.f32("out_r16", Q.apply_rope(x, c16, s16))
    g.done(theta=1e7, head_dim=64, rotary_dims=[16, 64],
           note="out_r16: RoPE on dims 0..15 of each 64-dim head (partial_rotary_factor 0.25), dims 16..63 unchanged")


def g_attention_core(root):
    g = Golden(root, "attention_core", "per query row over its visible keys 0..pos (GQA: head h reads kv head "
               "h // (H/Hkv)): z = bf16(bf16(q.k) * fp32(scale)); p = bf16(softmax_fp32(z)); out = bf16(p.V)")
    q, k, v = bfr(5, 4, 64, seed=41, std=2), bfr(20, 2, 64, seed=42, std=2), bfr(20, 2, 64, seed=43)
    pos = [15, 16, 17, 18, 19]
    for kk, vv in dict(q=q, k=k, v=v, out=Q.attention(q, k, v, pos, 64 ** -0.5)).items():
        g.f32(kk, vv)
    g.i64("positions", torch.tensor(pos))
    g.done(scale=64 ** -0.5, heads=4, kv_heads=2, head_dim=64)


def g_attention(root):
    H, Hk, D, d = 4, 2, 64, 128
    c = Cfg(n_heads=H, n_kv_heads=Hk, head_dim=D, rotary_dim=16, rope_theta=1e7)
    g = Golden(root, "attention_gated", "a whole self_attn layer: q_proj -> [H, 2*head_dim] split per head into q | gate; "
               "q_norm/k_norm (1+w); partial RoPE (16 of 64 dims, theta 1e7); attention over the KV cache; "
               "bf16(attn * bf16(sigmoid(gate))); o_proj. Prefill of 9 tokens then 3 decode steps")
    t = {"a.q_proj.weight": weight(g, "q_proj.weight", 2 * H * D, d, 50),
         "a.k_proj.weight": weight(g, "k_proj.weight", Hk * D, d, 51),
         "a.v_proj.weight": weight(g, "v_proj.weight", Hk * D, d, 52),
         "a.o_proj.weight": weight(g, "o_proj.weight", d, H * D, 53),
         "a.q_norm.weight": g.bf16w("q_norm.weight", torch.randn(D, generator=gen(54)) * 0.3),
         "a.k_norm.weight": g.bf16w("k_norm.weight", torch.randn(D, generator=gen(55)) * 0.3)}
    att = Q.Attention(Q.DictWeights(t), "a", c)
    x = bfr(12, d, seed=56)
    st = att.new_state()
    pre = att.forward(x[:9], 0, st)
    dec = torch.cat([att.forward(x[p:p + 1], p, st) for p in range(9, 12)])
    assert torch.equal(att.forward(x, 0, att.new_state()), torch.cat([pre, dec]))
    g.f32("x", x)
    g.f32("out_prefill", pre)
    g.f32("out_decode", dec)
    g.f32("k_cache", st["k"])
    g.f32("v_cache", st["v"])
    g.done(hidden=d, heads=H, kv_heads=Hk, head_dim=D, partial_rotary_factor=0.25, rope_theta=1e7, rms_norm_eps=EPS,
           prefill=9, seq=12, note="k_cache: K after k_norm and RoPE, [12, 2, 64] (positions 0..11); v_cache likewise")


# ------------------------------------------------------------------ MLP / MoE / MTP / head
def g_mlp(root):
    g = Golden(root, "mlp_swiglu", "down(bf16(bf16(silu(gate(x))) * up(x))), every linear bf16(x W^T)")
    w = [weight(g, f"{n}_proj.weight", o, i, 60 + j) for j, (n, o, i) in
         enumerate((("gate", 256, 128), ("up", 256, 128), ("down", 128, 256)))]
    x = bfr(5, 128, seed=63)
    g.f32("x", x)
    g.f32("out", Q.swiglu(x, *w))
    g.done(hidden=128, intermediate=256)


def g_moe(root):
    E, k, d, I, Is = 8, 2, 128, 64, 128
    g = Golden(root, "moe", "Qwen3_5MoeSparseMoeBlock: probs = softmax_fp32(bf16(x Wg^T)); top-2 (descending, ties -> "
               "lower expert id); weights = bf16(top / sum(top)); experts fused gate_up [E, 2I, H] split at I; "
               "y = bf16(y + bf16(expert(x) * w)) in ascending expert id; out = bf16(y + bf16(bf16(sigmoid("
               "shared_expert_gate(x))) * shared_expert(x)))")
    gw = torch.randn(E, d, generator=gen(70)) * d ** -0.5
    gw[5] = gw[2]                                  # experts 2 and 5 always tie: pins the tie order
    t = {"m.gate.weight": g.bf16w("gate.weight", gw),
         "m.experts.gate_up_proj": g.bf16w("experts.gate_up_proj", torch.randn(E, 2 * I, d, generator=gen(71)) * d ** -0.5),
         "m.experts.down_proj": g.bf16w("experts.down_proj", torch.randn(E, d, I, generator=gen(72)) * I ** -0.5),
         "m.shared_expert_gate.weight": weight(g, "shared_expert_gate.weight", 1, d, 73)}
    for j, (n, o, i) in enumerate((("gate", Is, d), ("up", Is, d), ("down", d, Is))):
        t[f"m.shared_expert.{n}_proj.weight"] = weight(g, f"shared_expert.{n}_proj.weight", o, i, 74 + j)
    moe = Q.MoE(Q.DictWeights(t), "m", Cfg(moe=True, n_active=k, moe_inter=I))
    x = bfr(8, d, seed=77)
    probs, idx, wts = Q.moe_route(x, t["m.gate.weight"], k)
    g.f32("x", x)
    g.f32("router_probs", probs)
    g.i64("route_indices", idx)
    g.f32("route_weights", wts)
    g.f32("out", moe.forward(x))
    both = [t for t in range(8) if {2, 5} <= set(idx[t].tolist())]
    one = [t for t in range(8) if len({2, 5} & set(idx[t].tolist())) == 1]
    assert both and one, "the seed must exercise the tie in the order and in the selection"
    g.done(experts=E, topk=k, moe_intermediate=I, shared_intermediate=Is,
           note=f"gate rows 2 and 5 are equal, so their probabilities tie for every token; tokens {both} select both "
                f"(the tie fixes the order), tokens {one} select one of them (the tie decides the set: the lower id)")


def g_mtp_input(root):
    g = Golden(root, "mtp_input", "MTP input projection: x = bf16(fc(cat[rms_norm(embed(token_{t+1}), pre_fc_norm_embedding), "
               "rms_norm(h_t, pre_fc_norm_hidden)])), fc [H, 2H], order [embedding, hidden]; h_t = the target's hidden "
               "state after its final norm")
    d = 128
    e, h = bfr(4, d, seed=80, std=0.25), bfr(4, d, seed=81)
    ne = g.bf16w("pre_fc_norm_embedding.weight", torch.randn(d, generator=gen(82)) * 0.3)
    nh = g.bf16w("pre_fc_norm_hidden.weight", torch.randn(d, generator=gen(83)) * 0.3)
    fc = weight(g, "fc.weight", d, 2 * d, 84)
    g.f32("embedding", e)
    g.f32("hidden", h)
    g.f32("out", bf16(Q.mm(torch.cat([Q.rms_norm(e, ne, EPS), Q.rms_norm(h, nh, EPS)], -1), fc.t())))
    g.done(hidden=d, eps=EPS, note="embedding = rows of the (main) embed_tokens table for token t+1")


def g_head(root):
    g = Golden(root, "final_norm_head", "final norm + lm_head: logits = bf16(rms_norm(h, norm) @ W^T) (bf16 logits, "
               "as the official lm_head returns them)")
    h = bfr(3, 128, seed=90, std=3)
    n = g.bf16w("norm.weight", torch.randn(128, generator=gen(91)) * 0.3)
    w = g.bf16w("lm_head.weight", torch.randn(64, 128, generator=gen(92)) * 0.25)
    hn = Q.rms_norm(h, n, EPS)
    g.f32("h", h)
    g.f32("normed", hn)
    g.f32("logits", bf16(Q.mm(hn, w.t())))
    g.done(vocab=64, hidden=128, eps=EPS)


def main():
    ap = argparse.ArgumentParser(description="write Qwen3.5 component goldens")
    ap.add_argument("--out", default=ROOT)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    for f in (g_rmsnorm, g_gated_rmsnorm, g_l2norm, g_conv, g_delta_rule, g_gdn_layer, g_rope, g_attention_core,
              g_attention, g_mlp, g_moe, g_mtp_input, g_head):
        f(a.out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print(f"wrote {a.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
