"""DSA family reference forward: DeepSeek-V3.2 (`deepseek_v32`) and GLM-5 (`glm_moe_dsa`).

Both are MLA + DeepSeek Sparse Attention (a lightning indexer picks the top-k earlier tokens that
each query attends to) + a group-limited sigmoid MoE, one MTP layer. This file fixes the
exact-profile semantics that strata implements (reference/README.md §DSA lists every rounding
point and the deviations from DeepSeek's inference/model.py).

Conventions (reference/numerics.py): every tensor is torch.float32; bf16() rounds RNE; `mm` /
`einsum` are fp64 products and sums rounded once to fp32; transcendental functions are fp64
rounded once; the checkpoint linears are numerics.linear_mm (= mm in the exact profile). The
helpers shared with DeepSeek-V4 are imported from reference/deepseek_v4.py: rms_norm, rope_freqs,
rope_table, apply_rope (interleaved pairs), lin / qlinear (FP8 linear = act_quant 1x128 ue8m0 ->
e4m3, exact product, bf16 output; bf16 linear = bf16(mm)), topk_desc (ties -> lower index).

Per layer, S tokens at positions pos0 .. pos0+S-1 (prefill, chunked prefill and decode are the
same code: `Model.forward(ids, state)` continues at state["pos"] with any number of tokens):
  * MLA in the absorbed form for every token: q_lat = bf16(q_nope . W_UK); scores over the
    latent cache entries read back from their FP8 form (656 B per token at kv_lora 512).
  * Lightning indexer (full layers): index keys cached as e4m3 + an fp32 scale (132 B per token);
    selection = top min(index_topk, t+1) keys by score, ties -> lower position, used as a set.
    GLM-5 "shared" layers reuse the selection of the nearest earlier full layer.
  * MoE: sigmoid scores + correction bias, group-limited top-k, fp32 accumulation in ascending
    expert id, then the shared expert; dense SwiGLU in the first layers.

State (a dict): "pos", per layer the latent cache (e4m3 codes uint8 [N, kv_lora], scales fp32
[N, kv_lora/128], k_pe bfloat16 [N, rope]) and, for full layers, the index-key cache (codes uint8
[N, 128], scales fp32 [N]); the MTP layer's own caches and "mtp_pos"; "selections" = the last
call's per-layer selection masks [S, N] (diagnostics).

Usage: `m = Model(dir)`, `st = m.new_state()`, `logits = m.forward(ids, st)` (last row's logits),
`m.hidden(ids, st)` (final-norm rows), `m.mtp_forward(g, next_ids, st)`; run_teacher_forcing is
reference.logits' contract.
"""
import json
import math
import os

import numpy as np
import torch

from .deepseek_v4 import apply_rope, lin, rms_norm, rope_freqs, rope_table, topk_desc
from .formats import E4M3_LUT, act_quant, bf16, bf16_from_bits, e4m3_decode, e4m3_encode, hadamard
from .numerics import FAST_ORDER, einsum, get_profile, linear_mm, mean_sq, pair_step_dot, rsqrt, sigmoid, silu, softmax, sum_exact
from .safetensors_io import Checkpoint

MODEL_TYPES = ("deepseek_v32", "glm_moe_dsa")
NEG_INF = float("-inf")
INDEX_LN_EPS = 1e-6      # the indexer's k_norm LayerNorm eps (fixed, not rms_norm_eps)
LATENT_BLOCK = 128       # act_quant block of the latent cache entry (scales per 128 dims)


def f32(v):
    """A Python scalar as the fp32 value it becomes when it multiplies an fp32 tensor."""
    return torch.tensor(v, dtype=torch.float32)


# ============================================================== config
class Config:
    """config.json -> attributes, for model_type deepseek_v32 (DeepSeek's config.json) and
    glm_moe_dsa (transformers' GlmMoeDsaConfig keys)."""

    def __init__(self, d):
        self.raw = d
        self.model_type = mt = d.get("model_type")
        if mt not in MODEL_TYPES:
            raise ValueError(f"not a DSA config: model_type {mt!r} (expected one of {MODEL_TYPES})")
        self.glm = mt == "glm_moe_dsa"
        if d.get("hidden_act", "silu") != "silu":
            raise ValueError("only hidden_act silu is supported")
        g = d.get
        self.hidden_size = d["hidden_size"]
        self.n_layers = d["num_hidden_layers"]
        self.vocab_size = d["vocab_size"]
        self.eps = float(g("rms_norm_eps", 1e-6))
        self.n_heads = d["num_attention_heads"]
        self.q_lora_rank = d["q_lora_rank"]
        if not self.q_lora_rank:
            raise ValueError("q_lora_rank must be set (the indexer reads the q_a output)")
        self.kv_lora_rank = d["kv_lora_rank"]
        self.nope_dim = d["qk_nope_head_dim"]
        self.rope_dim = d["qk_rope_head_dim"]
        self.v_dim = d["v_head_dim"]
        if self.kv_lora_rank % LATENT_BLOCK:
            raise ValueError("kv_lora_rank must be a multiple of 128 (latent cache scales per 128)")
        # FFN
        self.intermediate_size = d["intermediate_size"]
        self.moe_inter = d["moe_intermediate_size"]
        self.n_experts = d["n_routed_experts"]
        self.n_active = d["num_experts_per_tok"]
        self.n_group = int(g("n_group", 1) or 1)
        self.topk_group = int(g("topk_group", 1) or 1)
        self.n_shared = int(g("n_shared_experts", 0) or 0)
        self.route_scale = float(g("routed_scaling_factor", 1.0))
        self.norm_topk_prob = bool(g("norm_topk_prob", True))
        self.first_k_dense = int(g("first_k_dense_replace", 0))
        if int(g("moe_layer_freq", 1)) != 1:
            raise ValueError("moe_layer_freq != 1 is not supported")
        if g("scoring_func", "sigmoid") != "sigmoid":
            raise ValueError("scoring_func must be sigmoid")
        if g("topk_method", "noaux_tc") != "noaux_tc":
            raise ValueError("topk_method must be noaux_tc")
        if self.n_experts % self.n_group:
            raise ValueError("n_routed_experts must be a multiple of n_group")
        # indexer
        self.index_n_heads = d["index_n_heads"]
        self.index_head_dim = d["index_head_dim"]
        self.index_topk = d["index_topk"]
        if self.index_head_dim != 128:
            raise ValueError("index_head_dim must be 128 (one act_quant block, 132-byte key entries)")
        # the indexer RoPE layout: V3.2 rotate-half (DeepSeek's 2025-11-18 fix), GLM-5 interleaved
        self.indexer_rope_interleaved = self.glm
        self.n_mtp = int(g("num_nextn_predict_layers", 0) or 0)
        self.tie = bool(g("tie_word_embeddings", False))
        self._rope(d)
        self.indexer_types = self._indexer_types(d)

    def _rope(self, d):
        rs = d.get("rope_scaling") or d.get("rope_parameters") or {}
        rtype = rs.get("rope_type", rs.get("type", "default")) or "default"
        self.rope_theta = float(rs.get("rope_theta", d.get("rope_theta", 10000.0)))
        self.yarn = rtype == "yarn"
        if rtype not in ("default", "yarn"):
            raise ValueError(f"rope type {rtype!r} not supported")
        scale = (self.nope_dim + self.rope_dim) ** -0.5
        if self.yarn:
            self.rope_factor = float(rs["factor"])
            self.original_seq_len = int(rs["original_max_position_embeddings"])
            self.beta_fast = rs.get("beta_fast", 32)
            self.beta_slow = rs.get("beta_slow", 1)
            ms, msa = float(rs.get("mscale", 1.0)), float(rs.get("mscale_all_dim", 0.0))
            if ms != msa:   # HF would scale cos/sin by yarn_mscale(mscale) / yarn_mscale(mscale_all_dim)
                raise ValueError(f"rope_scaling mscale {ms} != mscale_all_dim {msa}: not supported")
            m = 0.1 * msa * math.log(self.rope_factor) + 1.0
            scale = scale * (m * m)
            self.freqs = rope_freqs(self.rope_dim, self.original_seq_len, self.rope_theta, self.rope_factor,
                                    self.beta_fast, self.beta_slow)
        else:
            self.freqs = rope_freqs(self.rope_dim, 0, self.rope_theta, 1.0, 32, 1)
        self.softmax_scale = float(f32(scale))   # computed in double, rounded once to fp32

    def _indexer_types(self, d):
        n = self.n_layers
        if not self.glm:
            return ["full"] * n
        it, pat = d.get("indexer_types"), d.get("index_topk_pattern")
        if it:
            types = list(it)[:n]
        elif pat:
            m = {"F": "full", "S": "shared"}
            types = [m[c] for c in str(pat)[:n].upper()]
        else:
            freq = int(d.get("index_topk_freq", 1) or 1)
            off = int(d.get("index_skip_topk_offset", 2))
            types = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(n)]
        if len(types) != n or any(t not in ("full", "shared") for t in types):
            raise ValueError(f"bad indexer types {types}")
        if types[0] != "full":
            raise ValueError("layer 0 must have a full indexer")
        return types

    @staticmethod
    def load(directory):
        with open(os.path.join(directory, "config.json")) as f:
            return Config(json.load(f))


# ============================================================== weights
class Weights:
    """Checkpoint tensors (Hugging Face names) as fp32. linear(prefix) -> (dequantized [out, in],
    kind): FP8 = e4m3 `X.weight` times the float32 power-of-two `X.weight_scale_inv` per 128x128
    block (exact), kind 'fp8'; BF16 -> 'bf16'; F32 -> 'f32'."""

    def __init__(self, directory):
        self.ck = Checkpoint(directory)
        self.cache = {}

    def has(self, name):
        return name in self.ck

    def tensor(self, name):
        if name not in self.cache:
            tag, a = self.ck.get(name)
            if tag == "BF16":
                t = bf16_from_bits(a)
            elif tag in ("F32", "F16", "F64"):
                t = torch.from_numpy(a.astype(np.float32))
            elif tag == "F8_E4M3":
                t = e4m3_decode(a)
            else:
                raise ValueError(f"{name}: unsupported dtype {tag}")
            self.cache[name] = t
        return self.cache[name]

    def linear(self, prefix):
        key = prefix + "#lin"
        if key not in self.cache:
            tag = self.ck.get(prefix + ".weight")[0]
            w = self.tensor(prefix + ".weight")
            if tag == "F8_E4M3":
                s = self.tensor(prefix + ".weight_scale_inv")
                assert bool((torch.frexp(s)[0] == 0.5).all()), f"{prefix}: weight_scale_inv not powers of two"
                o, i = w.shape
                w = w * s.repeat_interleave(128, 0)[:o].repeat_interleave(128, 1)[:, :i]
                out = (w, "fp8")
            else:
                out = (w, "f32" if tag == "F32" else "bf16")
            del self.cache[prefix + ".weight"]
            self.cache[key] = out
        return self.cache[key]


class DictWeights:
    """Weights from {name: fp32 tensor} (component goldens); linear(prefix) -> (tensor, kind) with
    kind from kinds[prefix] (default 'bf16'; 'fp8' = the tensor is the dequantized weight)."""

    def __init__(self, tensors, kinds=None):
        self.t, self.kinds = tensors, kinds or {}

    def has(self, name):
        return name in self.t

    def tensor(self, name):
        return self.t[name]

    def linear(self, prefix):
        return self.t[prefix + ".weight"], self.kinds.get(prefix, "bf16")


def weight_product(x, wk):
    """fp32 y = x W^T of a checkpoint weight without bf16 output (router gate)."""
    w, kind = wk
    return linear_mm(x, w, weight_bf16=kind != "f32")


# ============================================================== norms / RoPE
def layer_norm(x, w, b, eps=INDEX_LN_EPS):
    """The indexer's k_norm (F.layer_norm in fp32, cast to bf16): mean = fp32(sum_fp64 x) / n;
    xc = x - mean (fp32); var = fp32(sum_fp64 xc^2) / n; out = bf16(((xc * rsqrt(var + eps)) * w) + b),
    rsqrt fp64 rounded once, the rest fp32 in that order."""
    n = float(x.shape[-1])
    mean = sum_exact(x) / n
    xc = x - mean
    return bf16(xc * rsqrt(mean_sq(xc) + eps) * w + b)


def rope_interleaved(x, cos, sin):
    """RoPE on all of x's last dim (2 * len(cos)): pairs (2i, 2i+1) at frequency i; fp32 math
    (a c - b s, a s + b c), bf16 result (deepseek_v4.apply_rope)."""
    return apply_rope(x, cos, sin)


def rope_rotate_half(x, cos, sin):
    """Non-interleaved RoPE on all of x's last dim: pairs (i, i + r/2) at frequency i; fp32 math
    (a c - b s, a s + b c), bf16 result. cos/sin [n, r/2] broadcast over the middle dims."""
    h = cos.shape[-1]
    shape = (cos.shape[0],) + (1,) * (x.dim() - 2) + (h,)
    c, s = cos.reshape(shape), sin.reshape(shape)
    a, b = x[..., :h], x[..., h:2 * h]
    return bf16(torch.cat([a * c - b * s, a * s + b * c], -1))


def indexer_rope(x, cos, sin, interleaved):
    """RoPE on dims [0, 2 len(cos)) of x (the indexer's [rope | nope] layout); other dims unchanged."""
    r = 2 * cos.shape[-1]
    f = rope_interleaved if interleaved else rope_rotate_half
    return torch.cat([f(x[..., :r], cos, sin), x[..., r:]], -1)


# ============================================================== caches (FP8 entries)
def quantize_latent(latent):
    """The latent cache entry's FP8 part: act_quant(latent, 128) (ue8m0 scales, e4m3 RNE).
    Returns (codes uint8 [S, kv_lora], scales fp32 [S, kv_lora/128])."""
    q, s = act_quant(latent, LATENT_BLOCK)
    return torch.from_numpy(e4m3_encode(q.flatten(-2))), s[..., 0]


def dequant_codes(codes, scales):
    """e4m3 codes [N, n] x per-128 scales [N, n/128] -> fp32 values (exact; bf16 values)."""
    v = E4M3_LUT[codes.long()]
    nb = scales.shape[-1]
    return (v.unflatten(-1, (nb, v.shape[-1] // nb)) * scales.unsqueeze(-1)).flatten(-2)


def latent_entry_bytes(codes, scales, k_pe):
    """The latent cache entry as bytes (FlashMLA's FP8 sparse layout): kv_lora e4m3 codes |
    kv_lora/128 fp32 scales (little endian) | rope bf16 k_pe. 656 B at kv_lora 512, rope 64."""
    kp = k_pe.float().to(torch.bfloat16).view(torch.int16).numpy().view(np.uint8).reshape(k_pe.shape[0], -1)
    sc = scales.float().contiguous().numpy().astype("<f4").view(np.uint8).reshape(scales.shape[0], -1)
    return np.concatenate([codes.numpy().astype(np.uint8), sc, kp], 1)


def index_entry_bytes(codes, scales):
    """The index-key cache entry as bytes: 128 e4m3 codes | fp32 scale (little endian): 132 B."""
    sc = scales.float().reshape(-1, 1).contiguous().numpy().astype("<f4").view(np.uint8)
    return np.concatenate([codes.numpy().astype(np.uint8), sc], 1)


def cache_bytes_per_token(st):
    """Bytes per token actually held by a layer state's caches: (latent entry, index-key entry or 0)."""
    lat = sum(st[k].element_size() * st[k].shape[1] for k in ("codes", "scales", "k_pe"))
    idx = st["kc"].element_size() * st["kc"].shape[1] + st["ks"].element_size() if "kc" in st else 0
    return lat, idx


# ============================================================== MLA (absorbed)
def mla_absorbed(q_nope, q_pe, latent_dq, k_pe, sel, w_uk, w_uv, scale):
    """Absorbed MLA core. q_nope [S,H,nope], q_pe [S,H,rope] (bf16, RoPE applied); latent_dq [N,kv_lora]
    (the cache's dequantized FP8 latents), k_pe [N,rope] (bf16); sel [S,N] bool (the selected keys);
    w_uk [H,nope,kv_lora], w_uv [H,v,kv_lora] (bf16 values); scale fp32.
      q_lat = bf16(mm_d q_nope W_UK);  z = fp32(fp32(mm q_lat.latent + mm q_pe.k_pe) * scale)
      P = bf16(softmax_fp32(z over the selected keys));  o_lat = bf16(mm_s P latent);  o = bf16(mm_c o_lat W_UV)
    The two absorption products are weight products (the engine's kernels::linear on W_UK^T and
    W_UV per head): linear_mm, exact or the fast profile's order like every checkpoint linear.
    Returns (o [S,H,v], dict of the intermediates)."""
    H = q_nope.shape[1]
    q_lat = bf16(torch.stack([linear_mm(q_nope[:, h], w_uk[h].t().contiguous()) for h in range(H)], dim=1))
    a = einsum("shc,nc->shn", q_lat, latent_dq)
    b = einsum("shr,nr->shn", q_pe, k_pe)
    z = (a + b) * f32(scale)
    z = z.masked_fill(~sel.unsqueeze(1), NEG_INF)
    p = bf16(softmax(z, -1))
    o_lat = bf16(einsum("shn,nc->shc", p, latent_dq))
    o = bf16(torch.stack([linear_mm(o_lat[:, h], w_uv[h]) for h in range(H)], dim=1))
    return o, {"q_lat": q_lat, "scores": z, "p": p, "o_lat": o_lat}


class MLA:
    """self_attn: q_a_proj -> q_a_layernorm -> q_b_proj; kv_a_proj_with_mqa -> [latent | k_pe];
    kv_b_proj split per head into W_UK (first nope rows) and W_UV (next v rows), dequantized to a
    bf16 tensor; o_proj."""

    def __init__(self, W, p, cfg):
        self.cfg = cfg
        H, nope, v, kvl = cfg.n_heads, cfg.nope_dim, cfg.v_dim, cfg.kv_lora_rank
        self.wq_a, self.wq_b = W.linear(p + ".q_a_proj"), W.linear(p + ".q_b_proj")
        self.q_norm = W.tensor(p + ".q_a_layernorm.weight")
        self.wkv_a = W.linear(p + ".kv_a_proj_with_mqa")
        self.kv_norm = W.tensor(p + ".kv_a_layernorm.weight")
        wkv_b = bf16(W.linear(p + ".kv_b_proj")[0]).view(H, nope + v, kvl)
        self.w_uk, self.w_uv = wkv_b[:, :nope].contiguous(), wkv_b[:, nope:].contiguous()
        self.wo = W.linear(p + ".o_proj")

    def queries(self, x, cos, sin):
        """(qr [S,q_lora], q_nope [S,H,nope], q_pe [S,H,rope] after RoPE)."""
        c = self.cfg
        qr = rms_norm(lin(x, self.wq_a), self.q_norm, c.eps)
        q = lin(qr, self.wq_b).view(x.shape[0], c.n_heads, c.nope_dim + c.rope_dim)
        return qr, q[..., :c.nope_dim], rope_interleaved(q[..., c.nope_dim:], cos, sin)

    def latent(self, x, cos, sin):
        """(latent [S,kv_lora] bf16 before quantization, k_pe [S,rope] after RoPE)."""
        c = self.cfg
        ckv = lin(x, self.wkv_a)
        return rms_norm(ckv[:, :c.kv_lora_rank], self.kv_norm, c.eps), rope_interleaved(ckv[:, c.kv_lora_rank:], cos, sin)


# ============================================================== lightning indexer
def index_scores(qc, w, kc, ks):
    """I[t,s] = fp32(fp32(sum_exact_j fp32(relu(d[t,j,s]) * w[t,j])) * ks[s]), d the dot of the e4m3
    values qc [S,HI,128] . kc [N,128]: mm (exact) in the exact profile, pair_step_dot (fp32 steps)
    in the fast one; w [S,HI]; ks [N]. Returns [S, N] (no causal mask)."""
    if get_profile() == "exact" or FAST_ORDER["index_dot"] == "exact":   # the latter: spread measurements
        d = einsum("sjd,nd->sjn", qc, kc)
    else:
        d = pair_step_dot(qc.unsqueeze(2), kc.unsqueeze(0).unsqueeze(0))
    t = torch.relu(d) * w.unsqueeze(-1)
    return sum_exact(t, 1, False) * ks.unsqueeze(0)


def select_topk(scores, pos0, topk):
    """Selection mask [S, N]: row t (position pos0 + t) keeps the top min(topk, pos+1) keys s <= pos by
    score, ties -> lower s (a set; attention reads it in ascending s)."""
    S, N = scores.shape
    pos = torch.arange(pos0, pos0 + S).unsqueeze(1)
    valid = torch.arange(N).unsqueeze(0) <= pos
    idx = topk_desc(scores.masked_fill(~valid, NEG_INF), min(topk, N))
    sel = torch.zeros(S, N, dtype=torch.bool)
    sel.scatter_(1, idx, True)
    return sel & valid


class Indexer:
    """self_attn.indexer: qI = wq_b(qr) [HI,128]; kI = k_norm(wk(x)) (LayerNorm); RoPE on dims [0, rope)
    (rotate-half for V3.2, interleaved for GLM-5; cfg.indexer_rope_interleaved); Hadamard; act_quant
    per 128 -> e4m3 + pow2 scale; weights = bf16(bf16(weights_proj(x)) * fp32(HI^-0.5))."""

    def __init__(self, W, p, cfg):
        self.cfg = cfg
        self.wq_b, self.wk = W.linear(p + ".wq_b"), W.linear(p + ".wk")
        self.k_w, self.k_b = W.tensor(p + ".k_norm.weight"), W.tensor(p + ".k_norm.bias")
        self.wp = W.linear(p + ".weights_proj")

    def keys(self, x, cos, sin):
        """(codes uint8 [S,128], scales fp32 [S], kI after RoPE + Hadamard [S,128])."""
        k = layer_norm(lin(x, self.wk), self.k_w, self.k_b)
        k = hadamard(indexer_rope(k, cos, sin, self.cfg.indexer_rope_interleaved))
        q, s = act_quant(k, 128)
        return torch.from_numpy(e4m3_encode(q.flatten(-2))), s.reshape(-1), k

    def queries(self, x, qr, cos, sin):
        """(qc e4m3 values [S,HI,128], w [S,HI] = fp32(fp32(wp * qs) * fp32(128^-0.5)), qI [S,HI,128])."""
        c = self.cfg
        q = lin(qr, self.wq_b).view(x.shape[0], c.index_n_heads, c.index_head_dim)
        q = hadamard(indexer_rope(q, cos, sin, c.indexer_rope_interleaved))
        qc, qs = act_quant(q, 128)
        w = index_weights(lin(x, self.wp), qs.reshape(qs.shape[0], -1), c.index_n_heads, c.index_head_dim)
        return qc.flatten(-2), w, q


def index_weights(wp_lin, qs, n_heads, head_dim=128):
    """Per query head: w = fp32(fp32(bf16(wp_lin * fp32(HI^-0.5)) * qs) * fp32(head_dim^-0.5)), wp_lin =
    bf16(weights_proj(x)) [S,HI], qs [S,HI] the act_quant scales of the query heads."""
    return bf16(wp_lin * f32(n_heads ** -0.5)) * qs * f32(head_dim ** -0.5)


# ============================================================== FFN
def swiglu(x, wg, wu, wd):
    """down(bf16(silu(gate(x)) * up(x))): linears as checkpoint-stored (FP8: act quant + bf16 out),
    silu fp64 rounded once, the product fp32."""
    return lin(bf16(silu(lin(x, wg)) * lin(x, wu)), wd)


def route(x, gate, bias, cfg):
    """Group-limited sigmoid router (noaux_tc). logits = mm(x, gate^T) (fp32); s = sigmoid(logits);
    sb = fp32(s + bias); n_group > 1: group score = fp32(top1 + top2 of sb in the group), the
    topk_group best groups kept (ties -> lower group), the others' experts -inf; chosen = top-k by sb
    (ties -> lower id); w = s[chosen] (/ sum_exact if norm_topk_prob) * fp32(routed_scaling_factor).
    Returns (indices [S,k] in descending sb order, weights [S,k], dict of intermediates)."""
    logits = weight_product(x, gate)
    s = sigmoid(logits)
    sb = s + bias
    S, E = sb.shape
    gs = None
    sbm = sb
    if cfg.n_group > 1:
        grp = sb.view(S, cfg.n_group, E // cfg.n_group)
        top2 = torch.sort(grp, -1, descending=True).values[..., :2]
        gs = top2[..., 0] + top2[..., 1]
        keep = torch.zeros(S, cfg.n_group, dtype=torch.bool)
        keep.scatter_(1, topk_desc(gs, cfg.topk_group), True)
        sbm = sb.masked_fill(~keep.repeat_interleave(E // cfg.n_group, 1), NEG_INF)
    idx = topk_desc(sbm, cfg.n_active)
    w = s.gather(-1, idx)
    if cfg.norm_topk_prob:
        w = w / sum_exact(w)
    w = w * f32(cfg.route_scale)
    return idx, w, {"logits": logits, "scores": s, "biased": sb, "group_scores": gs}


class Dense:
    def __init__(self, W, p):
        self.w = [W.linear(f"{p}.{n}_proj") for n in ("gate", "up", "down")]

    def forward(self, x):
        return swiglu(x, *self.w)


class MoE:
    """mlp: routed experts (model.layers.i.mlp.experts.e.*) and shared experts. y = 0 (fp32); per
    chosen expert in ascending id y = fp32(y + fp32(SwiGLU_e(x) * w_e)); y = fp32(y + shared(x)); bf16(y)."""

    def __init__(self, W, p, cfg):
        self.cfg, self.W, self.p = cfg, W, p
        self.gate = W.linear(p + ".gate")
        self.bias = W.tensor(p + ".gate.e_score_correction_bias")
        self.shared = [W.linear(f"{p}.shared_experts.{n}_proj") for n in ("gate", "up", "down")] if cfg.n_shared else None

    def expert(self, e):
        return [self.W.linear(f"{self.p}.experts.{e}.{n}_proj") for n in ("gate", "up", "down")]

    def forward(self, x):
        idx, w, _ = route(x, self.gate, self.bias, self.cfg)
        y = torch.zeros_like(x)
        for e in sorted(set(idx.flatten().tolist())):
            rows, slot = torch.where(idx == e)
            y[rows] = y[rows] + swiglu(x[rows], *self.expert(e)) * w[rows, slot].unsqueeze(-1)
        if self.shared:
            y = y + swiglu(x, *self.shared)
        return bf16(y)


# ============================================================== decoder layer / model
class DecoderLayer:
    """model.layers.i: h = bf16(h + MLA(rms_norm(h))); h = bf16(h + FFN(rms_norm(h))). kind: 'full'
    (own indexer) or 'shared' (the selection passed in from the nearest earlier full layer)."""

    def __init__(self, W, i, cfg, kind):
        p = f"model.layers.{i}"
        self.cfg, self.kind = cfg, kind
        self.in_norm = W.tensor(p + ".input_layernorm.weight")
        self.post_norm = W.tensor(p + ".post_attention_layernorm.weight")
        self.attn = MLA(W, p + ".self_attn", cfg)
        self.indexer = Indexer(W, p + ".self_attn.indexer", cfg) if kind == "full" else None
        self.mlp = Dense(W, p + ".mlp") if i < cfg.first_k_dense else MoE(W, p + ".mlp", cfg)

    def new_state(self):
        c = self.cfg
        st = {"codes": torch.zeros(0, c.kv_lora_rank, dtype=torch.uint8),
              "scales": torch.zeros(0, c.kv_lora_rank // LATENT_BLOCK),
              "k_pe": torch.zeros(0, c.rope_dim, dtype=torch.bfloat16)}
        if self.indexer is not None:
            st["kc"] = torch.zeros(0, c.index_head_dim, dtype=torch.uint8)
            st["ks"] = torch.zeros(0)
        return st

    def attention(self, x, pos0, st, sel_prev):
        """MLA over the selected keys; returns (o_proj output [S,D], selection [S,N])."""
        c = self.cfg
        S = x.shape[0]
        assert st["codes"].shape[0] == pos0, "the cache must hold exactly the positions before pos0"
        cos, sin = rope_table(c.freqs, range(pos0, pos0 + S))
        qr, q_nope, q_pe = self.attn.queries(x, cos, sin)
        latent, k_pe = self.attn.latent(x, cos, sin)
        codes, scales = quantize_latent(latent)
        st["codes"] = torch.cat([st["codes"], codes])
        st["scales"] = torch.cat([st["scales"], scales])
        st["k_pe"] = torch.cat([st["k_pe"], k_pe.to(torch.bfloat16)])
        if self.indexer is not None:
            kc, ks, _ = self.indexer.keys(x, cos, sin)
            st["kc"] = torch.cat([st["kc"], kc])
            st["ks"] = torch.cat([st["ks"], ks])
            qc, w, _ = self.indexer.queries(x, qr, cos, sin)
            sc = index_scores(qc, w, E4M3_LUT[st["kc"].long()], st["ks"])
            sel = select_topk(sc, pos0, c.index_topk)
        else:
            sel = sel_prev
            assert sel is not None and sel.shape == (S, pos0 + S), "a shared layer needs the previous full layer's selection"
        latent_dq = dequant_codes(st["codes"], st["scales"])
        o, _ = mla_absorbed(q_nope, q_pe, latent_dq, st["k_pe"].float(), sel, self.attn.w_uk, self.attn.w_uv,
                            c.softmax_scale)
        return lin(o.reshape(S, -1), self.attn.wo), sel

    def forward(self, h, pos0, st, sel_prev=None):
        c = self.cfg
        o, sel = self.attention(rms_norm(h, self.in_norm, c.eps), pos0, st, sel_prev)
        h = bf16(h + o)
        return bf16(h + self.mlp.forward(rms_norm(h, self.post_norm, c.eps))), sel


class Model:
    def __init__(self, directory, load_mtp=True):
        self.cfg = cfg = Config.load(directory)
        self.W = W = Weights(directory)
        self.embed = W.tensor("model.embed_tokens.weight")
        self.norm = W.tensor("model.norm.weight")
        self.head = self.embed if cfg.tie and not W.has("lm_head.weight") else W.tensor("lm_head.weight")
        self.layers = [DecoderLayer(W, i, cfg, cfg.indexer_types[i]) for i in range(cfg.n_layers)]
        self._head64 = {}
        self.mtp = None
        L = cfg.n_layers
        if load_mtp and cfg.n_mtp and W.has(f"model.layers.{L}.eh_proj.weight"):
            p = f"model.layers.{L}"
            self.mtp = {
                "layer": DecoderLayer(W, L, cfg, "full"),
                "enorm": W.tensor(p + ".enorm.weight"), "hnorm": W.tensor(p + ".hnorm.weight"),
                "eh_proj": W.linear(p + ".eh_proj"), "norm": W.tensor(p + ".shared_head.norm.weight"),
                "embed": W.tensor(p + ".embed_tokens.weight") if W.has(p + ".embed_tokens.weight") else self.embed,
                "head": W.tensor(p + ".shared_head.head.weight") if W.has(p + ".shared_head.head.weight") else self.head,
            }

    def new_state(self):
        return {"pos": 0, "layers": [l.new_state() for l in self.layers], "selections": None,
                "mtp_pos": 0, "mtp": self.mtp["layer"].new_state() if self.mtp else None}

    def head_logits(self, h, head):
        """fp32 logits = mm(h, head^T) (no bf16 rounding). Exact profile: the fp64 head is kept."""
        if get_profile() != "exact":
            return linear_mm(h, head)
        k = id(head)
        if k not in self._head64:
            self._head64[k] = head.double().t().contiguous()
        return (h.double() @ self._head64[k]).float()

    def logits(self, h):
        return self.head_logits(h, self.head)

    def hidden(self, ids, state):
        """Final-norm rows [S, D] (bf16 values) of ids at positions state['pos'].. ; advances the state."""
        ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1)
        pos0 = state["pos"]
        h = self.embed[ids]
        sel, sels = None, []
        for layer, st in zip(self.layers, state["layers"]):
            h, sel = layer.forward(h, pos0, st, sel)
            sels.append(sel)
        state["pos"] = pos0 + ids.numel()
        state["selections"] = sels
        return rms_norm(h, self.norm, self.cfg.eps)

    def forward(self, ids, state):
        """fp32 logits [vocab] of the last of ids; state['hidden'] = the final-norm rows (MTP input)."""
        h = self.hidden(ids, state)
        state["hidden"] = h
        return self.logits(h[-1:])[0]

    def mtp_forward(self, g, next_ids, state):
        """MTP layer on rows at positions state['mtp_pos'].. : row t pairs g_t (the main model's final-norm
        output at position p_t) with next_ids[t] = the token at p_t + 1:
          h = bf16lin(eh_proj, cat[rms_norm(embed(next), enorm), rms_norm(g, hnorm)]); h = decoder layer
          (own MLA + indexer caches) at p_t; out = rms_norm(h, shared_head.norm); logits = mm(out, head).
        Returns (logits [vocab] of the last row, out [S, D])."""
        m, c = self.mtp, self.cfg
        next_ids = torch.as_tensor(next_ids, dtype=torch.int64).reshape(-1)
        e = rms_norm(m["embed"][next_ids], m["enorm"], c.eps)
        x = lin(torch.cat([e, rms_norm(g, m["hnorm"], c.eps)], -1), m["eh_proj"])
        pos0 = state["mtp_pos"]
        h, _ = m["layer"].forward(x, pos0, state["mtp"])
        state["mtp_pos"] = pos0 + next_ids.numel()
        out = rms_norm(h, m["norm"], c.eps)
        return self.head_logits(out[-1:], m["head"])[0], out


def run_teacher_forcing(model, ids, prefill):
    """reference.logits' contract: prefill ids[:prefill] from position 0, then one decode step per
    remaining id. Returns [1 + n - prefill, vocab] fp32 logits."""
    state = model.new_state()
    out = [model.forward(ids[:prefill], state)]
    for p in range(prefill, len(ids)):
        out.append(model.forward(ids[p:p + 1], state))
    return torch.stack(out)
