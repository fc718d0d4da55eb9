"""Per-component golden files for the C++ DSA tests (DeepSeek-V3.2 / GLM-5).

    python3 -m reference.make_dsa_component_goldens [--out tests/goldens/dsa/components]

Same format as the DeepSeek-V4 / Qwen3.5 ones (reference/make_component_goldens.py): one directory
per mechanism, NumPy .npy files named by role plus meta.json (shapes, file dtypes, parameters).
  f4 : activations / outputs (bf16-valued where the reference rounds) and fp32 values (F32 weights,
       FP8 `weight_scale_inv`, cache scales)
  u2 : BF16 weights as raw bf16 bit patterns (checkpoint storage form)
  u1 : F8_E4M3 codes (FP8 weights `X.weight`, cache codes), cache entries as bytes, masks
  i8 : indices (-1 = none)
FP8 weights are in the Hugging Face checkpoint form: `X.weight` (u1 e4m3 codes) + `X.weight_scale_inv`
(f4, powers of two per 128x128 block). Fixed seeds: the files are reproducible bit for bit.

| dir | what |
|---|---|
| rope | YaRN (V3.2) and plain (GLM-5) frequencies, cos/sin, interleaved and rotate-half RoPE, the indexer's [rope | nope] layout |
| layer_norm | the indexer's k_norm (fp32 weight/bias, a constant row) |
| latent_quant | act_quant of latents (kv_lora 512) -> codes, scales, dequantized values, the 656-B entries |
| indexer | qI/kI (before RoPE) + weights -> rotated keys/queries, FP8 codes and scales, 132-B key entries, scores, top-k with ties, for both RoPE layouts |
| mla_absorbed | two queries over selected latent-cache entries: q_lat, scores, P, o_lat, o |
| router | group-limited sigmoid router with bias: n_group 4 / topk_group 2 and n_group 1; ties |
| moe | routed experts + shared expert (FP8), fp32 accumulation |
| decoder_layer | layer 0 of deepseek-v3.2-tiny (dense FFN, full indexer, index_topk 4) over 10 tokens from an empty state |
"""
import argparse
import os
import shutil
import tempfile

import numpy as np
import torch

from . import dsa
from . import numerics
from .dsa_tiny_checkpoint import Builder, config as preset_config, layer as tiny_layer
from .formats import act_quant, bf16, dequant_fp8_weight, e4m3_encode, e8m0_decode, quant_fp8_weight
from .make_component_goldens import Golden
from .safetensors_io import write_safetensors

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "goldens", "dsa", "components")
YARN = dict(theta=10000.0, factor=40.0, original_seq_len=4096, beta_fast=32, beta_slow=1)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def bfr(*shape, seed, std=1.0, mean=0.0):
    return bf16(torch.randn(*shape, generator=gen(seed)) * std + mean)


def freqs_yarn(dim=64):
    return dsa.rope_freqs(dim, YARN["original_seq_len"], YARN["theta"], YARN["factor"], YARN["beta_fast"], YARN["beta_slow"])


def freqs_plain(dim=64):
    return dsa.rope_freqs(dim, 0, 10000.0, 1.0, 32, 1)


def fp8w(g, role, w):
    """FP8 weight in checkpoint form: role.weight (u1 e4m3) + role.weight_scale_inv (f4); returns the dequantized value."""
    codes, s = quant_fp8_weight(w)
    g.u8(role + ".weight", codes)
    g.f32(role + ".weight_scale_inv", e8m0_decode(s))
    return dequant_fp8_weight(codes, s)


def sel_indices(sel):
    """[S, N] bool -> [S, max count] int64 ascending indices, -1 padded."""
    k = int(sel.sum(-1).max())
    out = torch.full((sel.shape[0], k), -1, dtype=torch.int64)
    for t in range(sel.shape[0]):
        i = torch.nonzero(sel[t]).flatten()
        out[t, :len(i)] = i
    return out


def rope_scale_note():
    v = dsa.Config(preset_config("deepseek-v3.2-tiny"))
    return v.softmax_scale


# ------------------------------------------------------------------ RoPE
def g_rope(root):
    g = Golden(root, "rope", "frequencies f_k = 1/theta^(2k/64) (fp32 pow); YaRN (deepseek-v3.2): low = max(floor(cd(32)), 0), "
               "high = min(ceil(cd(1)), 63), cd(r) = 64 ln(4096/(2 pi r)) / (2 ln theta), ramp = clamp((k-low)/(high-low)), "
               "f = f/40 (1-smooth) + f smooth, smooth = 1 - ramp; angle = fp32(pos f); cos/sin fp64 rounded once to fp32. "
               "interleaved: pairs (2i, 2i+1) at f_i; rotate_half: pairs (i, i+32) at f_i; both (a c - b s, a s + b c) in fp32, "
               "then bf16")
    pos = [0, 1, 2, 63, 64, 127, 128, 1000, 4095, 4096, 65535, 163839]
    x = bfr(len(pos), 3, 64, seed=1, std=2.0)
    xi = bfr(len(pos), 2, 128, seed=2, std=2.0)
    g.i64("positions", torch.tensor(pos))
    g.f32("x", x)
    g.f32("x_index", xi)
    for name, fr in (("yarn", freqs_yarn()), ("plain", freqs_plain())):
        cos, sin = dsa.rope_table(fr, pos)
        g.f32(f"freqs_{name}", fr)
        g.f32(f"cos_{name}", cos)
        g.f32(f"sin_{name}", sin)
        g.f32(f"out_interleaved_{name}", dsa.rope_interleaved(x, cos, sin))
        g.f32(f"out_rotate_half_{name}", dsa.rope_rotate_half(x, cos, sin))
    cy, sy = dsa.rope_table(freqs_yarn(), pos)
    cp, sp = dsa.rope_table(freqs_plain(), pos)
    g.f32("out_index_v32", dsa.indexer_rope(xi, cy, sy, False))
    g.f32("out_index_glm5", dsa.indexer_rope(xi, cp, sp, True))
    g.done(rope_dim=64, yarn=YARN, plain_theta=10000.0,
           mla="the MLA's q_pe / k_pe use out_interleaved_* (interleaved for both models)",
           out_index_v32="x_index [12, 2, 128] (indexer heads, layout [rope | nope]): rotate-half RoPE with the YaRN table on "
                         "dims 0..63, dims 64..127 unchanged (DeepSeek-V3.2's indexer)",
           out_index_glm5="the same with interleaved RoPE and the plain table (GLM-5's indexer)",
           softmax_scale_v32_tiny=rope_scale_note(),
           softmax_scale_rule="fp32((nope + rope)^-0.5 * m^2), m = 0.1 * mscale_all_dim * ln(factor) + 1 (double); "
                              "deepseek-v3.2-tiny: nope 64 + rope 64, factor 40, mscale_all_dim 1")


# ------------------------------------------------------------------ layer norm
def g_layer_norm(root):
    g = Golden(root, "layer_norm", "the indexer's k_norm: mean = fp32(sum_fp64 x) / n; xc = x - mean (fp32); var = "
               "fp32(sum_fp64 xc^2) / n; out = bf16(((xc * rsqrt(var + eps)) * w) + b), rsqrt fp64 rounded once, eps 1e-6")
    x = bf16(bfr(8, 128, seed=3) * torch.logspace(-3, 2, 8).unsqueeze(1) + torch.linspace(-4, 4, 8).unsqueeze(1))
    x[6] = 5.0                                   # constant row: var 0, out = bf16(b)
    w = torch.randn(128, generator=gen(4)) * 0.1 + 1.0      # fp32 values (not bf16)
    b = torch.randn(128, generator=gen(5)) * 0.1
    g.f32("x", x)
    g.f32("weight", w)
    g.f32("bias", b)
    g.f32("out", dsa.layer_norm(x, w, b))
    g.done(eps=dsa.INDEX_LN_EPS, note="weight/bias are fp32 values that bf16 cannot hold (DeepSeek keeps this norm in fp32); "
           "row 6 is constant")


# ------------------------------------------------------------------ latent cache entry
def g_latent_quant(root):
    g = Golden(root, "latent_quant", "latent cache entry: (codes, scales) = act_quant(latent, 128): amax = max(max|x|, 1e-4), "
               "s = pow2_ceil(fp32(amax * fp32(1/448))), codes = e4m3_RNE(clamp(x / s, +-448)); latent_dq = e4m3(codes) * s "
               "(what every attention reads); entry bytes = 512 codes | 4 fp32 scales (little endian) | 64 bf16 k_pe "
               "(little endian) = 656 B")
    lat = bfr(4, 512, seed=6)
    lat[1, 128:256] = 0.0                                              # zero block: amax clamp
    ties = torch.tensor([448.0, 1.0625, 1.1875, 17.0, -17.0, 2 ** -10, 3 * 2 ** -10, 0.0])
    lat[2, :8] = ties                                                   # block amax 448 -> s = 1, e4m3 ties
    lat[3] = bf16(lat[3] * torch.logspace(-4, 3, 4).repeat_interleave(128))
    kpe = bfr(4, 64, seed=7)
    codes, scales = dsa.quantize_latent(lat)
    g.f32("latent", lat)
    g.f32("k_pe", kpe)
    g.u8("codes", codes)
    g.f32("scales", scales)
    g.f32("latent_dq", dsa.dequant_codes(codes, scales))
    g.u8("entry", dsa.latent_entry_bytes(codes, scales, kpe))
    g.done(kv_lora_rank=512, rope_dim=64, block=128, entry_bytes=656,
           note="row 1 block 1 is zero (scale from the 1e-4 clamp, codes 0); row 2 block 0 has amax 448 (scale 1) and the "
                "e4m3 ties 1.0625 -> 1, 1.1875 -> 1.25, 17 -> 16, 2^-10 -> 0, 3*2^-10 -> 2^-8; row 3 spans 1e-4 .. 1e3 by block")


# ------------------------------------------------------------------ indexer
def g_indexer(root):
    T_pos = [1, 3, 7, 8, 10, 11]
    N, HI, D = 12, 4, 128
    g = Golden(root, "indexer", "lightning indexer from qI / kI (after the projections and k_norm, before RoPE): RoPE on dims "
               "0..63 ([rope | nope]), Hadamard (bf16((x H) * 128^-0.5)), act_quant per 128 -> (codes, scale); key entry = "
               "128 codes | fp32 scale = 132 B; wp = bf16(wp_lin * fp32(4^-0.5)); w = fp32(fp32(wp * q_scale) * fp32(128^-0.5)); "
               "d = exact dot of the e4m3 values; score[t,s] = fp32(fp32(sum_exact_j fp32(relu(d[t,j,s]) * w[t,j])) * k_scale[s]) "
               "for s <= t (-inf above); selected = top min(topk, t+1) by score, ties -> lower s, listed ascending; "
               "fast_scores / fast_selected: the same in the fast profile, d = fp32 steps over the column pairs in order, the "
               "odd column's product first (numerics.pair_step_dot)")
    kp = bfr(N, D, seed=11)
    kp[3, :64] = 0.0
    kp[7] = kp[3]            # same nope dims, zero rope dims: identical after RoPE -> a score tie for every query
    kp[0] = 0.0
    kp[5] = 0.0              # zero keys: score 0 exactly
    for seed in range(20, 400):   # pick queries whose selection boundary falls inside the 3 / 7 tie
        qp = bfr(len(T_pos), HI, D, seed=seed)
        wl = bfr(len(T_pos), HI, seed=seed + 1000)
        wl[5] = -wl[5].abs()                     # last query: every head weight negative -> zero scores rank first
        out, straddle = {}, True
        for name, fr, inter in (("v32", freqs_yarn(), False), ("glm5", freqs_plain(), True)):
            cq, sq = dsa.rope_table(fr, T_pos)
            ck, sk = dsa.rope_table(fr, range(N))
            q = dsa.hadamard(dsa.indexer_rope(qp, cq, sq, inter))
            k = dsa.hadamard(dsa.indexer_rope(kp, ck, sk, inter))
            qc, qs = act_quant(q, 128)
            kq, ks = act_quant(k, 128)
            w = dsa.index_weights(wl, qs.reshape(len(T_pos), HI), HI, D)
            sc = dsa.index_scores(qc.flatten(-2), w, kq.flatten(-2), ks.reshape(-1))
            pos = torch.tensor(T_pos).unsqueeze(1)
            sel = torch.cat([dsa.select_topk(sc[i:i + 1], T_pos[i], 4) for i in range(len(T_pos))])
            straddle &= any(bool(sel[i, 3]) != bool(sel[i, 7]) for i in range(len(T_pos)) if T_pos[i] >= 7)
            with numerics.profile("fast"):   # the fast profile's dots: fp32 steps pair by pair
                fsc = dsa.index_scores(qc.flatten(-2), w, kq.flatten(-2), ks.reshape(-1))
            fsel = torch.cat([dsa.select_topk(fsc[i:i + 1], T_pos[i], 4) for i in range(len(T_pos))])
            above = torch.arange(N).unsqueeze(0) > pos
            out[name] = dict(q_rot=q, k_rot=k, q_codes=torch.from_numpy(e4m3_encode(qc.flatten(-2))),
                             q_scales=qs.reshape(len(T_pos), HI), k_codes=torch.from_numpy(e4m3_encode(kq.flatten(-2))),
                             k_scales=ks.reshape(-1), w=w, scores=sc.masked_fill(above, float("-inf")), sel=sel,
                             fast_scores=fsc.masked_fill(above, float("-inf")), fast_sel=fsel)
        if straddle:
            break
    assert straddle, "no seed puts the 3 / 7 tie on the selection boundary"
    g.f32("q_pre", qp)
    g.f32("k_pre", kp)
    g.f32("wp_lin", wl)
    g.i64("query_positions", torch.tensor(T_pos))
    for name, o in out.items():
        for k in ("q_rot", "k_rot", "q_scales", "k_scales", "w", "scores", "fast_scores"):
            g.f32(f"{k}_{name}", o[k])
        g.u8(f"q_codes_{name}", o["q_codes"])
        g.u8(f"k_codes_{name}", o["k_codes"])
        g.u8(f"k_entry_{name}", dsa.index_entry_bytes(o["k_codes"], o["k_scales"]))
        g.i64(f"selected_{name}", sel_indices(o["sel"]))
        g.i64(f"fast_selected_{name}", sel_indices(o["fast_sel"]))
    g.done(index_n_heads=HI, index_head_dim=D, rope_dim=64, index_topk=4, keys=N, key_positions="0..11", seed=seed,
           v32="rotate-half RoPE with the YaRN table (factor 40, original 4096, theta 10000)",
           glm5="interleaved RoPE with the plain table (theta 10000)",
           wp_lin="bf16(weights_proj(x)) for each query (the bf16 linear's output)",
           note="keys 3 and 7 are identical after RoPE (zero rope dims, same nope dims): they tie for every query and some "
                "query's top-4 takes 3 and not 7; keys 0 and 5 are zero (score 0); the last query's head weights are all "
                "negative, so its zero scores rank first. selected_*: ascending positions, -1 padded (queries at positions "
                "1 and 3 select all their keys)")


# ------------------------------------------------------------------ MLA
def g_mla(root):
    H, nope, rope, v, kvl, N = 2, 64, 64, 64, 256, 10
    scale = rope_scale_note()
    g = Golden(root, "mla_absorbed", "absorbed MLA over selected latent-cache entries: W = bf16(dequant(kv_b_proj)) viewed "
               "[H, nope + v, kv_lora]: W_UK = rows 0..nope-1, W_UV = rows nope..nope+v-1 per head; q_lat = bf16(mm_d q_nope "
               "W_UK); z = fp32(fp32(mm q_lat . latent_dq + mm q_pe . k_pe) * scale); P = bf16(softmax_fp32(z over the "
               "selected)); o_lat = bf16(mm_s P latent_dq); o = bf16(mm_c o_lat W_UV)")
    wkvb = fp8w(g, "kv_b_proj", torch.randn(H * (nope + v), kvl, generator=gen(30)) * kvl ** -0.5)
    w = bf16(wkvb).view(H, nope + v, kvl)
    lat = bfr(N, kvl, seed=31) * bf16(torch.logspace(-1, 0.5, N)).unsqueeze(1)
    codes, scales = dsa.quantize_latent(bf16(lat))
    lat_dq = dsa.dequant_codes(codes, scales)
    k_pe = bfr(N, rope, seed=32)
    q_nope, q_pe = bfr(2, H, nope, seed=33), bfr(2, H, rope, seed=34)
    sel = torch.zeros(2, N, dtype=torch.bool)
    sel[0, [0, 2, 3, 5, 8, 9]] = True            # query 0 at position 9: a selection of 6 of its 10 keys
    sel[1, :7] = True                            # query 1 at position 6: all its keys
    o, it = dsa.mla_absorbed(q_nope, q_pe, lat_dq, k_pe, sel, w[:, :nope], w[:, nope:], scale)
    idx = sel_indices(sel)

    def gather(t, fill):   # [2, H, N] -> [2, H, slots] in the order of idx (-1 slots: fill)
        return torch.stack([t[i][:, idx[i].clamp(min=0)].masked_fill(idx[i] < 0, fill) for i in range(2)])

    g.f32("q_nope", q_nope)
    g.f32("q_pe", q_pe)
    g.u8("latent_codes", codes)
    g.f32("latent_scales", scales)
    g.f32("k_pe", k_pe)
    g.i64("selected", idx)
    g.f32("latent_dq", lat_dq)
    g.f32("q_lat", it["q_lat"])
    g.f32("scores", gather(it["scores"], float("-inf")))
    g.f32("p", gather(it["p"], 0.0))
    g.f32("o_lat", it["o_lat"])
    g.f32("o", o)
    g.done(heads=H, qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=v, kv_lora_rank=kvl, cache_entries=N,
           query_positions=[9, 6], softmax_scale=scale,
           note="scale = deepseek-v3.2-tiny's fp32(128^-0.5 * m^2), m = 0.1 ln 40 + 1; scores / p are [query, head, "
                "selected slot] in the order of `selected` (ascending; -1 slots: score -inf, p 0); q_pe is taken as given "
                "(RoPE already applied)")


# ------------------------------------------------------------------ router
class RCfg:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def g_router(root):
    E, D, S, k = 16, 256, 8, 4
    g = Golden(root, "router", "group-limited sigmoid router (noaux_tc): logits = mm(x, gate^T) (fp32); s = sigmoid(logits) "
               "(fp64 rounded once); sb = fp32(s + bias); n_group > 1: group score = fp32(top1 + top2 of sb in the group), "
               "the topk_group best groups kept (ties -> lower group), other experts out; chosen = top-k by sb (ties -> lower "
               "id); w = s[chosen] / fp32(sum_exact(s[chosen])) (norm_topk_prob) * fp32(2.5)")
    gw = torch.randn(E, D, generator=gen(40)) * D ** -0.5
    bias = torch.randn(E, generator=gen(41)) * 0.05
    gw[8:12] = gw[4:8]                  # groups 1 and 2 (of 4) identical: a group-score tie for every token
    bias[8:12] = bias[4:8]
    gw[13] = gw[2]                      # experts 2 and 13 tie for every token
    bias[13] = bias[2]
    gate = g.bf16w("gate.weight", gw)
    g.f32("e_score_correction_bias", bias)
    for seed in range(42, 400):
        x = bfr(S, D, seed=seed)
        res = {}
        for name, ng, tg in (("grouped", 4, 2), ("n_group1", 1, 1)):
            cfg = RCfg(n_group=ng, topk_group=tg, n_active=k, norm_topk_prob=True, route_scale=2.5)
            idx, w, it = dsa.route(x, (gate, "bf16"), bias, cfg)
            cfg.norm_topk_prob = False
            _, w_nn, _ = dsa.route(x, (gate, "bf16"), bias, cfg)
            res[name] = (idx, w, w_nn, it)
        gi, gs = res["grouped"][0], res["grouped"][3]["group_scores"]
        grp_tie = any(len({1, 2} & set((gi[t] // 4).tolist())) == 1 for t in range(S))
        ni = res["n_group1"][0]
        exp_tie = any(len({2, 13} & set(ni[t].tolist())) == 1 for t in range(S))
        if grp_tie and exp_tie:
            break
    assert grp_tie and exp_tie, "no seed exercises both ties"
    g.f32("x", x)
    for name, (idx, w, w_nn, it) in res.items():
        g.f32(f"logits_{name}", it["logits"])
        g.f32(f"scores_{name}", it["scores"])
        g.f32(f"biased_{name}", it["biased"])
        if it["group_scores"] is not None:
            g.f32(f"group_scores_{name}", it["group_scores"])
        g.i64(f"indices_{name}", idx)
        g.f32(f"weights_{name}", w)
        g.f32(f"weights_nonorm_{name}", w_nn)
    g.done(experts=E, hidden=D, topk=k, routed_scaling_factor=2.5, seed=seed,
           grouped=dict(n_group=4, topk_group=2), n_group1=dict(n_group=1, topk_group=1),
           note="indices are in descending biased-score order, ties -> lower id (the set is what the MoE uses); weights "
                "aligned with them; weights_nonorm: norm_topk_prob false. Gate rows 4..7 == 8..11 (with their biases): "
                "groups 1 and 2 tie for every token and some token keeps group 1 only; experts 2 and 13 tie and some "
                "token's n_group 1 top-4 takes 2 and not 13")


# ------------------------------------------------------------------ MoE
def g_moe(root):
    E, D, I, S, k = 4, 128, 128, 6, 2
    g = Golden(root, "moe", "MoE with FP8 experts: route (n_group 1, top-2, norm_topk_prob, scale 2.5); SwiGLU_e(x) = "
               "down(bf16(silu(gate(x)) * up(x))), FP8 linears (act_quant 1x128, bf16 outputs), silu fp64 rounded once, "
               "product fp32; y = 0 (fp32), per chosen expert in ascending id y = fp32(y + fp32(SwiGLU_e(x) * w_e)); "
               "y = fp32(y + shared(x)); out = bf16(y)")
    t, kinds = {}, {}
    t["m.gate.weight"] = g.bf16w("gate.weight", torch.randn(E, D, generator=gen(50)) * D ** -0.5)
    t["m.gate.e_score_correction_bias"] = torch.randn(E, generator=gen(51)) * 0.05
    g.f32("gate.e_score_correction_bias", t["m.gate.e_score_correction_bias"])
    s = 52
    for pre in [f"experts.{e}" for e in range(E)] + ["shared_experts"]:
        for n, (o, i) in (("gate_proj", (I, D)), ("up_proj", (I, D)), ("down_proj", (D, I))):
            name = f"{pre}.{n}"
            t[f"m.{name}.weight"] = fp8w(g, name, torch.randn(o, i, generator=gen(s)) * i ** -0.5)
            kinds[f"m.{name}"] = "fp8"
            s += 1
    cfg = RCfg(n_group=1, topk_group=1, n_active=k, norm_topk_prob=True, route_scale=2.5, n_shared=1)
    moe = dsa.MoE(dsa.DictWeights(t, kinds), "m", cfg)
    x = bfr(S, D, seed=70)
    idx, w, _ = dsa.route(x, moe.gate, moe.bias, cfg)
    eo = torch.stack([torch.stack([dsa.swiglu(x[r:r + 1], *moe.expert(int(idx[r, j])))[0] for j in range(k)]) for r in range(S)])
    g.f32("x", x)
    g.i64("route_indices", idx)
    g.f32("route_weights", w)
    g.f32("expert_out", eo)
    g.f32("shared_out", dsa.swiglu(x, *moe.shared))
    g.f32("out", moe.forward(x))
    g.done(experts=E, topk=k, hidden=D, moe_intermediate_size=I, n_shared_experts=1, routed_scaling_factor=2.5,
           note="expert_out[r, j] = SwiGLU of expert route_indices[r, j] (bf16, before the weight); the sum runs in "
                "ascending expert id, not in route order")


# ------------------------------------------------------------------ decoder layer
def g_layer(root):
    c = preset_config("deepseek-v3.2-tiny")
    c["index_topk"] = 4
    g = Golden(root, "decoder_layer", "layer 0 of deepseek-v3.2-tiny (FP8, dense SwiGLU FFN, full indexer; index_topk 4 so "
               "the selection bites): h = bf16(h + o_proj(MLA(rms_norm(h)))); h = bf16(h + mlp(rms_norm(h))). Prefill of 7 "
               "tokens from an empty state, then 3 decode steps; every rounding point as reference/dsa.py")
    b = Builder(90, fp8=True)
    tiny_layer(b, 0, c, True)
    with tempfile.TemporaryDirectory() as tmp:
        write_safetensors(os.path.join(tmp, "model.safetensors"), b.t)
        W = dsa.Weights(tmp)
        cfg = dsa.Config(c)
        L = dsa.DecoderLayer(W, 0, cfg, "full")
        for name in sorted(b.t):
            tag, a = b.t[name]
            role = name[len("model.layers.0."):]
            if tag == "F8_E4M3":
                g.u8(role, a)
            elif tag == "BF16":
                g._save(role, a.astype(np.uint16))
            else:
                g.f32(role, torch.from_numpy(a))
    h = bfr(10, c["hidden_size"], seed=91)
    st = L.new_state()
    pre, _ = L.forward(h[:7], 0, st)
    dec = torch.cat([L.forward(h[p:p + 1], p, st)[0] for p in range(7, 10)])
    st_full = L.new_state()
    full, sel = L.forward(h, 0, st_full)
    assert torch.equal(full, torch.cat([pre, dec])) and all(torch.equal(st[k], st_full[k]) for k in st)
    st_a = L.new_state()
    attn, _ = L.attention(dsa.rms_norm(h, L.in_norm, cfg.eps), 0, st_a, None)
    x = dsa.rms_norm(h, L.in_norm, cfg.eps)
    cos, sin = dsa.rope_table(cfg.freqs, range(10))
    qr, _, _ = L.attn.queries(x, cos, sin)
    qc, w, _ = L.indexer.queries(x, qr, cos, sin)
    sc = dsa.index_scores(qc, w, dsa.E4M3_LUT[st_full["kc"].long()], st_full["ks"])
    sc = sc.masked_fill(torch.arange(10).unsqueeze(0) > torch.arange(10).unsqueeze(1), float("-inf"))
    g.f32("h", h)
    g.f32("out_prefill", pre)
    g.f32("out_decode", dec)
    g.f32("attn_out", attn)
    g.f32("index_scores", sc)
    g.i64("selected", sel_indices(sel))
    g.u8("latent_codes", st_full["codes"])
    g.f32("latent_scales", st_full["scales"])
    g.f32("k_pe", st_full["k_pe"].float())
    g.u8("index_codes", st_full["kc"])
    g.f32("index_scales", st_full["ks"])
    g.done(config={k: c[k] for k in ("hidden_size", "num_attention_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                     "qk_rope_head_dim", "v_head_dim", "intermediate_size", "index_n_heads", "index_head_dim",
                                     "index_topk", "rms_norm_eps", "rope_theta", "rope_scaling")},
           softmax_scale=cfg.softmax_scale, prefill=7, seq=10,
           note="weights named as under model.layers.0. (FP8: .weight u1 + .weight_scale_inv f4; BF16 u2; the indexer's "
                "k_norm F32 f4); out_prefill = positions 0..6, out_decode = positions 7..9 one at a time (a 10-token "
                "prefill gives the same rows); attn_out = o_proj output of the 10-token prefill (before the residual); "
                "index_scores [10, 10] (-inf above the diagonal) and selected (ascending, -1 padded) of that prefill; "
                "caches after the 10 tokens (latent: codes, scales, k_pe; index keys: codes, scales)")


def main():
    ap = argparse.ArgumentParser(description="write DSA component goldens")
    ap.add_argument("--out", default=ROOT)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    for f in (g_rope, g_layer_norm, g_latent_quant, g_indexer, g_mla, g_router, g_moe, g_layer):
        f(a.out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print(f"wrote {a.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
