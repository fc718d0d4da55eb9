"""DeepSeek-V4 reference forward (Flash / Pro), following DeepSeek's official inference/model.py
and kernel.py (later revision) numerically.

Convention: every tensor is torch.float32.  Where the official code materializes a bf16 tensor
(its default dtype), we round with `bf16()` at exactly that point, so a value "in bf16" is an
fp32 tensor holding a bf16-representable number.  Citations "M:" refer to model.py classes,
"K:" to kernel.py kernels.  reference/README.md lists every rounding point.

Only batch size 1.  Usage: `Model(ckpt_dir)`, `state = model.new_state()`,
`logits = model.forward(ids, start_pos, state)` with start_pos == 0 (prefill, any length) or
start_pos > 0 with exactly one token (decode), as the official code supports.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

from .formats import (act_quant_sim, bf16, bf16_from_bits, dequant_fp4_weight, dequant_fp8_weight,
                      e4m3_decode, e8m0_decode, fp4_act_quant_sim, hadamard)
from .numerics import einsum, exp, get_profile, linear_mm, mean_exact, mean_sq, mm, rsqrt, sigmoid, silu, softmax  # noqa: F401 (D.mm etc.)
from .safetensors_io import Checkpoint

NEG_INF = float("-inf")
ATTN_CHUNK = None  # None: one softmax pass with the global max; 64: emulate K:sparse_attn's blocks


def sqrt_softplus(x):
    """sqrt(F.softplus(x)) with torch's default threshold: softplus(x) = x for x > 20."""
    xd = x.double()
    return torch.where(xd > 20, xd, torch.log1p(torch.exp(xd))).sqrt().float()


# ============================================================== config
class Config:
    """HF config.json keys -> attributes (names follow the HF keys)."""

    def __init__(self, d):
        self.raw = d
        g = d.get
        self.hidden_size = d["hidden_size"]
        self.num_attention_heads = d["num_attention_heads"]
        self.q_lora_rank = d["q_lora_rank"]
        self.o_groups = d["o_groups"]
        self.o_lora_rank = d["o_lora_rank"]
        self.head_dim = d["head_dim"]
        self.rope_dim = d["qk_rope_head_dim"]
        self.compress_ratios = list(d["compress_ratios"])
        self.compress_rope_theta = float(d["compress_rope_theta"])
        self.rope_theta = float(d["rope_theta"])
        rs = g("rope_scaling") or {}
        self.rope_factor = float(rs.get("factor", 1.0))
        self.original_seq_len = int(rs.get("original_max_position_embeddings", 0))
        self.beta_fast = rs.get("beta_fast", 32)
        self.beta_slow = rs.get("beta_slow", 1)
        self.index_n_heads = d["index_n_heads"]
        self.index_head_dim = d["index_head_dim"]
        self.index_topk = d["index_topk"]
        self.n_routed_experts = d["n_routed_experts"]
        self.n_act = d["num_experts_per_tok"]
        self.moe_inter = d["moe_intermediate_size"]
        self.route_scale = float(d["routed_scaling_factor"])
        self.num_hash_layers = d.get("num_hash_layers", 0)
        self.hc_mult = d["hc_mult"]
        self.hc_iters = d["hc_sinkhorn_iters"]
        self.hc_eps = float(d["hc_eps"])
        self.eps = float(d["rms_norm_eps"])
        self.swiglu_limit = float(g("swiglu_limit", 0.0) or 0.0)
        self.window = d["sliding_window"]
        self.vocab_size = d["vocab_size"]
        self.n_layers = d["num_hidden_layers"]
        self.n_mtp = d.get("num_nextn_predict_layers", 0)
        self.expert_dtype = g("expert_dtype", "fp4") or "fp4"
        assert g("scoring_func", "sqrtsoftplus") == "sqrtsoftplus"

    @staticmethod
    def load(directory):
        with open(os.path.join(directory, "config.json")) as f:
            return Config(json.load(f))


# ============================================================== weights
class Weights:
    """Decodes checkpoint tensors to fp32 on demand. FP8 linears -> dequantized [out, in];
    FP4 (I8 + per-32 scale) -> dequantized; BF16/F32 -> fp32; I64/I32 -> int64.
    Routed experts are not cached (a full checkpoint would not fit in fp32)."""

    def __init__(self, directory):
        self.ck = Checkpoint(directory)
        self.cache = {}

    def has(self, name):
        return name in self.ck

    def tensor(self, name):
        if name in self.cache:
            return self.cache[name]
        tag, a = self.ck.get(name)
        if tag == "BF16":
            t = bf16_from_bits(a)
        elif tag in ("F32", "F16", "F64"):
            t = torch.from_numpy(a.astype("float32"))
        elif tag in ("I64", "I32"):
            t = torch.from_numpy(a.astype("int64"))
        elif tag == "F8_E4M3":
            t = e4m3_decode(a)
        elif tag == "F8_E8M0":
            t = e8m0_decode(a)
        else:
            t = torch.from_numpy(a.copy())
        if ".experts." not in name:
            self.cache[name] = t
        return t

    def linear(self, prefix):
        """Dequantized weight of linear `prefix` (+ its kind: 'fp8', 'fp4' or 'bf16')."""
        key = prefix + "#deq"
        if key in self.cache:
            return self.cache[key]
        tag, w = self.ck.get(prefix + ".weight")
        if tag == "F8_E4M3":
            _, s = self.ck.get(prefix + ".scale")
            out = (dequant_fp8_weight(w, s), "fp8")
        elif tag in ("I8", "U8"):
            _, s = self.ck.get(prefix + ".scale")
            out = (dequant_fp4_weight(w, s), "fp4")
        else:
            out = (self.tensor(prefix + ".weight"), "bf16")
        if ".experts." not in prefix:
            self.cache[key] = out
        return out


class DictWeights:
    """Weights from an in-memory dict {name: fp32 tensor} (component tests and goldens).
    linear(prefix) returns (tensor, kind) with kind given by kinds[prefix] (default 'bf16');
    a quantized kind means the tensor already holds the dequantized weight."""

    def __init__(self, tensors, kinds=None):
        self.t, self.kinds = tensors, kinds or {}

    def has(self, name):
        return name in self.t

    def tensor(self, name):
        return self.t[name]

    def linear(self, prefix):
        return self.t[prefix + ".weight"], self.kinds.get(prefix, "bf16")


# ============================================================== basic ops
def qlinear(x, w):
    """M:linear for an FP8 or FP4 weight: act_quant(x, 128, ue8m0) (K:act_quant, not in place), then
    an exact product with the dequantized weight accumulated in fp32 (K:fp8_gemm / fp4_gemm),
    output in the default dtype bf16. (The product is numerics.linear_mm, as every weight product
    that the engine computes with kernels::linear: exact, or the fast profile's order.)"""
    return bf16(linear_mm(act_quant_sim(x, 128), w))


def lin(x, wk):
    """Dispatch like M:linear: quantized weights go through qlinear; bf16 weights use F.linear in bf16."""
    w, kind = wk
    if kind in ("fp8", "fp4"):
        return qlinear(x, w)
    return bf16(linear_mm(x, w))


def rms_norm(x, w, eps):
    """M:RMSNorm: fp32 compute, x * rsqrt(mean(x^2) + eps), times weight, cast back to bf16.
    mean(x^2) = fp64 sum rounded once to fp32, / n (mean_sq)."""
    var = mean_sq(x)
    return bf16(w * (x * rsqrt(var + eps)))


def head_rms_rescale(q, eps):
    """M:Attention `q *= rsqrt(q.square().mean(-1) + eps)` executed in bf16 tensors:
    every intermediate (square, mean, +eps, rsqrt, product) is rounded to bf16."""
    m = bf16(mean_exact(bf16(q.square())))
    r = bf16(rsqrt(bf16(m + eps)))
    return bf16(q * r)


# ============================================================== RoPE / YaRN
def rope_freqs(dim, original_seq_len, base, factor, beta_fast, beta_slow):
    """M:precompute_freqs_cis frequencies (fp32). YaRN blend only when original_seq_len > 0; no mscale."""
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    if original_seq_len > 0:
        def corr_dim(rot):
            return dim * math.log(original_seq_len / (rot * 2 * math.pi)) / (2 * math.log(base))
        low = max(math.floor(corr_dim(beta_fast)), 0)
        high = min(math.ceil(corr_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        smooth = 1 - ramp
        freqs = freqs / factor * (1 - smooth) + freqs * smooth
    return freqs


def rope_table(freqs, positions):
    """cos/sin [n, dim/2] (fp32) for integer positions: angle = fp32(pos * freq) (torch.outer)."""
    ang = torch.outer(torch.tensor(list(positions), dtype=torch.int64).float(), freqs)
    return torch.cos(ang.double()).float(), torch.sin(ang.double()).float()


def apply_rope(x, cos, sin, inverse=False):
    """M:apply_rotary_emb on the last 2*len(cos) dims of x: adjacent pairs (2k, 2k+1) form a complex
    number multiplied by (cos + i sin) (conjugate when inverse); computed in fp32, stored in bf16.
    cos/sin: [n, r/2] broadcast over the dims between the position axis and the last one."""
    rd = 2 * cos.shape[-1]
    shape = (cos.shape[0],) + (1,) * (x.dim() - 2) + (cos.shape[-1],)
    c, s = cos.reshape(shape), sin.reshape(shape)
    if inverse:
        s = -s
    pair = x[..., -rd:].unflatten(-1, (-1, 2))
    a, b = pair[..., 0], pair[..., 1]
    out = torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
    return torch.cat([x[..., :-rd], bf16(out)], dim=-1)


# ============================================================== attention kernel
def sparse_attn(q, kv, sink, idx, scale, chunk=None):
    """K:sparse_attn. q [S,H,D] (bf16 values), kv [N,D] (bf16 values), sink [H] fp32,
    idx [S,K] rows of kv (-1 = masked). Scores z = fp32(q.k) * scale (fp32), one softmax over the
    list whose denominator also holds exp(sink - max) (sink adds no value):
        m = max_j z_j ; p_j = exp(z_j - m) ; l = sum_j p_j + exp(sink - m)
        o = bf16( sum_j bf16(p_j) * kv_j / l )      (P is rounded to bf16 for the P.V product)
    chunk=None (default): m is the max over the whole list, so the result does not depend on the
    list layout (prefill and decode agree). chunk=64 emulates the kernel's online softmax exactly:
    blocks of 64 in list order with a running max, bf16(p) taken relative to the running max."""
    chunk = chunk if chunk is not None else ATTN_CHUNK
    S, H, D = q.shape
    K = idx.shape[1]
    if not chunk or chunk >= K:
        valid = idx >= 0
        kvg = kv[idx.clamp(min=0)] * valid.unsqueeze(-1)                # [S,K,D]
        z = einsum("shd,skd->shk", q, kvg)
        z = torch.where(valid.unsqueeze(1), z, torch.tensor(NEG_INF)) * scale
        m = z.amax(-1)
        p = exp(z - m.unsqueeze(-1))
        l = (p.double().sum(-1) + exp(sink.unsqueeze(0) - m).double()).float()
        acc = einsum("shk,skd->shd", bf16(p), kvg)
        return bf16(acc / l.unsqueeze(-1))
    m = torch.full((S, H), NEG_INF)
    l = torch.zeros(S, H)
    acc = torch.zeros(S, H, D)
    for c0 in range(0, K, chunk):
        ids = idx[:, c0:c0 + chunk]
        valid = ids >= 0
        kvc = kv[ids.clamp(min=0)] * valid.unsqueeze(-1)           # [S,B,D], zeros where invalid
        z = einsum("shd,sbd->shb", q, kvc)
        z = torch.where(valid.unsqueeze(1), z, torch.tensor(NEG_INF)) * scale
        m_new = torch.maximum(m, z.amax(-1))
        alpha = exp(m - m_new)
        p = exp(z - m_new.unsqueeze(-1))
        l = l * alpha + p.sum(-1)
        acc = acc * alpha.unsqueeze(-1) + einsum("shb,sbd->shd", bf16(p), kvc)
        m = m_new
    l = l + exp(sink.unsqueeze(0) - m)
    return bf16(acc / l.unsqueeze(-1))


def window_idxs(window, seqlen, start_pos):
    """M:get_window_topk_idxs. Prefill: row t lists positions max(0,t-w+1)..t (-1 padded, width
    min(seqlen, w)). Decode: ring slots oldest-first (slot = pos % w), -1 padded before the ring fills."""
    if start_pos >= window - 1:
        sp = start_pos % window
        return torch.cat([torch.arange(sp + 1, window), torch.arange(0, sp + 1)]).unsqueeze(0)
    if start_pos > 0:
        return F.pad(torch.arange(start_pos + 1), (0, window - start_pos - 1), value=-1).unsqueeze(0)
    base = torch.arange(seqlen).unsqueeze(1)
    mat = (base - window + 1).clamp(min=0) + torch.arange(min(seqlen, window))
    return torch.where(mat > base, torch.tensor(-1), mat)


def compress_idxs(ratio, seqlen, start_pos, offset):
    """M:get_compress_topk_idxs (ratio-128 layers read every visible entry: i < (t+1)//ratio)."""
    if start_pos > 0:
        return (torch.arange(0, (start_pos + 1) // ratio) + offset).unsqueeze(0)
    mat = torch.arange(seqlen // ratio).repeat(seqlen, 1)
    mask = mat >= torch.arange(1, seqlen + 1).unsqueeze(1) // ratio
    return torch.where(mask, torch.tensor(-1), mat + offset)


# ============================================================== mHC
def hc_split_sinkhorn(mixes, scale, base, hc, iters, eps):
    """K:hc_split_sinkhorn (fp32). mixes [..., (2+hc)*hc]:
    pre = sigmoid(m[:hc]*s0 + b) + eps; post = 2*sigmoid(m[hc:2hc]*s1 + b);
    comb[j][k] = m[2hc + j*hc + k]*s2 + b -> row softmax + eps -> column normalize (sum + eps)
    -> (iters-1) x [row normalize (sum + eps), column normalize (sum + eps)]."""
    pre = sigmoid(mixes[..., :hc] * scale[0] + base[:hc]) + eps
    post = 2 * sigmoid(mixes[..., hc:2 * hc] * scale[1] + base[hc:2 * hc])
    comb = (mixes[..., 2 * hc:] * scale[2] + base[2 * hc:]).unflatten(-1, (hc, hc))
    comb = exp(comb - comb.amax(-1, keepdim=True))
    comb = comb / comb.sum(-1, keepdim=True) + eps
    comb = comb / (comb.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(-1, keepdim=True) + eps)
        comb = comb / (comb.sum(-2, keepdim=True) + eps)
    return pre, post, comb


def hc_mixes(X, fn, eps, weight_product=True):
    """M:Block.hc_pre first half: flatten the hc streams (fp32), mixes = (x @ fn^T) * rsqrt(mean(x^2)+eps).
    weight_product: the engine computes it as a weight product (kernels::linear: hc_pre; fn is an
    F32 tensor, so in the fast profile the f32 route, fp32 FMAs); False: as plain dots, exact in
    every profile (the engine's hc_head, kernels::dot)."""
    xf = X.flatten(-2)
    mixes = linear_mm(xf, fn, weight_bf16=False) if weight_product else mm(xf, fn.t())
    return mixes * rsqrt(mean_sq(xf) + eps)


def hc_pre(X, fn, scale, base, cfg):
    """M:Block.hc_pre: X [S,hc,d] bf16 -> (bf16(sum_j pre_j X_j), post, comb)."""
    mixes = hc_mixes(X, fn, cfg.eps)
    pre, post, comb = hc_split_sinkhorn(mixes, scale, base, cfg.hc_mult, cfg.hc_iters, cfg.hc_eps)
    return bf16((pre.unsqueeze(-1) * X).sum(-2)), post, comb


def hc_post(y, X, post, comb):
    """M:Block.hc_post: new stream k = post_k * y + sum_j comb[j][k] * X_j (fp32), stored in bf16."""
    mix = (comb.unsqueeze(-1) * X.unsqueeze(-2)).sum(-3)   # [S, k, d] = sum_j comb[j,k] X_j
    return bf16(post.unsqueeze(-1) * y.unsqueeze(-2) + mix)


def hc_head(X, fn, scale, base, cfg):
    """M:ParallelHead.hc_head: pre = sigmoid(mixes*scale + base) + eps (no Sinkhorn); bf16(sum pre_j X_j).
    Its 4 mixes are exact dots in both profiles, as the engine's hc_head computes them."""
    mixes = hc_mixes(X, fn, cfg.eps, weight_product=False)
    pre = sigmoid(mixes * scale + base) + cfg.hc_eps
    return bf16((pre.unsqueeze(-1) * X).sum(-2))


# ============================================================== MoE
def gate(x, weight, bias, tid2eid, ids, topk, route_scale):
    """M:Gate: scores = sqrt(softplus(x @ W^T)) in fp32 (softplus threshold 20: identity above).
    Hash layers take experts tid2eid[id]; others top-k of scores + bias (bias only selects).
    Tie-break (ours): equal values -> lowest expert index first. Weights = raw scores of the chosen
    experts / their sum * route_scale."""
    scores = sqrt_softplus(linear_mm(x, weight))
    if tid2eid is not None:
        indices = tid2eid[ids]
    else:
        indices = torch.sort(scores + bias, dim=-1, descending=True, stable=True).indices[..., :topk]
    w = scores.gather(-1, indices)
    w = w / w.sum(-1, keepdim=True)
    return w * route_scale, indices


def expert(x, w1, w2, w3, limit, weight=None):
    """M:Expert: gate = w1(x), up = w3(x) (quantized linears, bf16 outputs) in fp32; up clamped to
    [-limit, limit], gate clamped to max=limit (when limit > 0); h = silu(gate) * up; h *= routing
    weight (fp32); w2(bf16(h)) -> bf16."""
    g = lin(x, w1)
    u = lin(x, w3)
    if limit > 0:
        u = u.clamp(-limit, limit)
        g = g.clamp(max=limit)
    h = silu(g) * u
    if weight is not None:
        h = weight * h
    return lin(bf16(h), w2)


# ============================================================== compressor / indexer
class Compressor:
    """M:Compressor for one layer (ratio 4 -> overlap, coff=2; ratio 128 -> coff=1).
    Projections and pooling in fp32; pooled entry -> bf16 -> RMSNorm -> RoPE at the block's first
    position -> (main) FP8 sim of the first head_dim-64 dims in blocks of 64, or (indexer, rotate)
    Hadamard then FP4 sim of the whole vector in blocks of 32."""

    def __init__(self, W, prefix, cfg, ratio, head_dim, rotate, freqs):
        self.cfg, self.ratio, self.d, self.rotate, self.freqs = cfg, ratio, head_dim, rotate, freqs
        self.overlap = ratio == 4
        self.wkv = W.tensor(prefix + ".wkv.weight")
        self.wgate = W.tensor(prefix + ".wgate.weight")
        self.ape = W.tensor(prefix + ".ape")
        self.norm = W.tensor(prefix + ".norm.weight")

    def new_state(self):
        coff = 2 if self.overlap else 1
        return {"kv": torch.zeros(coff * self.ratio, coff * self.d),
                "score": torch.full((coff * self.ratio, coff * self.d), NEG_INF),
                "cache": torch.zeros(0, self.d)}

    def _finish(self, kv, positions):
        kv = rms_norm(bf16(kv), self.norm, self.cfg.eps)
        cos, sin = rope_table(self.freqs, positions)
        kv = apply_rope(kv, cos, sin)
        rd = self.cfg.rope_dim
        if self.rotate:
            return fp4_act_quant_sim(hadamard(kv), 32)
        return torch.cat([act_quant_sim(kv[..., :-rd], 64), kv[..., -rd:]], -1)

    def overlap_transform(self, t, fill):
        """[n, r, 2d] -> [n, 2r, d]: slots r..2r-1 = current block's second-half channels,
        slots 0..r-1 = previous block's first-half channels (fill for block 0)."""
        n, r, d = t.shape[0], self.ratio, self.d
        out = torch.full((n, 2 * r, d), fill)
        out[:, r:] = t[:, :, d:]
        out[1:, :r] = t[:-1, :, :d]
        return out

    def forward(self, x, start_pos, st):
        """x [S,dim] bf16 values. Returns the new entries (possibly empty); appends them to st['cache']."""
        r, d = self.ratio, self.d
        kv = linear_mm(x, self.wkv)          # fp32 projections (bf16 weights upcast)
        score = linear_mm(x, self.wgate)
        S = x.shape[0]
        if start_pos == 0:
            cutoff = S - S % r
            off = r if self.overlap else 0
            if self.overlap and cutoff >= r:   # last complete block becomes the "previous" block
                st["kv"][:r] = kv[cutoff - r:cutoff]
                st["score"][:r] = score[cutoff - r:cutoff] + self.ape
            rem = S - cutoff
            if rem:
                st["kv"][off:off + rem] = kv[cutoff:]
                st["score"][off:off + rem] = score[cutoff:] + self.ape[:rem]
            if cutoff == 0:
                return torch.zeros(0, d)
            kvb = kv[:cutoff].unflatten(0, (-1, r))
            sb = score[:cutoff].unflatten(0, (-1, r)) + self.ape
            if self.overlap:
                kvb = self.overlap_transform(kvb, 0.0)
                sb = self.overlap_transform(sb, NEG_INF)
            pooled = (kvb * softmax(sb, 1)).sum(dim=1)
            new = self._finish(pooled, list(range(0, cutoff, r)))
        else:
            assert S == 1
            score = score + self.ape[start_pos % r]
            if self.overlap:
                st["kv"][r + start_pos % r] = kv[0]
                st["score"][r + start_pos % r] = score[0]
            else:
                st["kv"][start_pos % r] = kv[0]
                st["score"][start_pos % r] = score[0]
            if (start_pos + 1) % r != 0:
                return torch.zeros(0, d)
            if self.overlap:
                kvs = torch.cat([st["kv"][:r, :d], st["kv"][r:, d:]], 0)
                ss = torch.cat([st["score"][:r, :d], st["score"][r:, d:]], 0)
                pooled = (kvs * softmax(ss, 0)).sum(dim=0, keepdim=True)
                st["kv"][:r] = st["kv"][r:].clone()
                st["score"][:r] = st["score"][r:].clone()
            else:
                pooled = (st["kv"] * softmax(st["score"], 0)).sum(dim=0, keepdim=True)
            new = self._finish(pooled, [start_pos + 1 - r])
        st["cache"] = torch.cat([st["cache"], new], 0)
        return new


def topk_desc(scores, k):
    """Top-k by descending score; ties -> lowest index first (stable sort). Returns indices."""
    return torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :k]


class Indexer:
    """M:Indexer (ratio-4 layers): q from qr via wq_b, RoPE on the last 64 dims, Hadamard, FP4 sim;
    keys from its own rotate=True compressor; score[t] = sum_h relu(q_h . k_t) * w_h with every
    step in bf16 (K: einsum/relu/mul/sum outputs bf16); top-k = min(index_topk, visible)."""

    def __init__(self, W, prefix, cfg, freqs):
        self.cfg, self.freqs = cfg, freqs
        self.wq_b = W.linear(prefix + ".wq_b")
        self.weights_proj = W.linear(prefix + ".weights_proj")
        self.compressor = Compressor(W, prefix + ".compressor", cfg, 4, cfg.index_head_dim, True, freqs)
        self.wscale = float(torch.tensor(cfg.index_head_dim ** -0.5 * cfg.index_n_heads ** -0.5, dtype=torch.float32))

    def scores(self, x, qr, start_pos, st):
        """Returns bf16 index scores [S, n_entries] (masked -inf for invisible entries in prefill)."""
        cfg = self.cfg
        S = x.shape[0]
        q = lin(qr, self.wq_b).unflatten(-1, (cfg.index_n_heads, cfg.index_head_dim))
        cos, sin = rope_table(self.freqs, range(start_pos, start_pos + S))
        q = apply_rope(q, cos, sin)
        q = fp4_act_quant_sim(hadamard(q), 32)
        self.compressor.forward(x, start_pos, st)
        w = bf16(lin(x, self.weights_proj) * self.wscale)
        k = st["cache"]
        sc = bf16(einsum("shd,td->sht", q, k)).relu()
        sc = bf16(bf16(sc * w.unsqueeze(-1)).sum(1))
        if start_pos == 0:
            mask = torch.arange(k.shape[0]).unsqueeze(0) >= (torch.arange(1, S + 1).unsqueeze(1) // 4)
            sc = sc.masked_fill(mask, NEG_INF)
        return sc

    def forward(self, x, qr, start_pos, offset, st):
        S = x.shape[0]
        sc = self.scores(x, qr, start_pos, st)
        end = start_pos + S
        k = min(self.cfg.index_topk, end // 4)
        idx = topk_desc(sc, k)
        if start_pos == 0:
            invisible = idx >= (torch.arange(1, S + 1).unsqueeze(1) // 4)
            return torch.where(invisible, torch.tensor(-1), idx + offset)
        return idx + offset


# ============================================================== attention
class Attention:
    def __init__(self, W, prefix, cfg, layer_id):
        self.cfg = cfg
        self.ratio = cfg.compress_ratios[layer_id]
        p = prefix + ".attn"
        self.sink = W.tensor(p + ".attn_sink")
        self.wq_a, self.wq_b, self.wkv = W.linear(p + ".wq_a"), W.linear(p + ".wq_b"), W.linear(p + ".wkv")
        self.q_norm, self.kv_norm = W.tensor(p + ".q_norm.weight"), W.tensor(p + ".kv_norm.weight")
        # wo_a: FP8 in the checkpoint, dequantized to a bf16 parameter at load (exact).
        self.wo_a = bf16(W.linear(p + ".wo_a")[0])
        self.wo_b = W.linear(p + ".wo_b")
        if self.ratio:   # compressed layers: compress_rope_theta with YaRN; window-only: rope_theta
            self.freqs = rope_freqs(cfg.rope_dim, cfg.original_seq_len, cfg.compress_rope_theta,
                                    cfg.rope_factor, cfg.beta_fast, cfg.beta_slow)
            self.compressor = Compressor(W, p + ".compressor", cfg, self.ratio, cfg.head_dim, False, self.freqs)
            self.indexer = Indexer(W, p + ".indexer", cfg, self.freqs) if self.ratio == 4 else None
        else:
            self.freqs = rope_freqs(cfg.rope_dim, 0, cfg.rope_theta, cfg.rope_factor, cfg.beta_fast, cfg.beta_slow)
            self.compressor = self.indexer = None

    def new_state(self):
        st = {"ring": torch.zeros(self.cfg.window, self.cfg.head_dim)}
        if self.compressor:
            st["comp"] = self.compressor.new_state()
        if self.indexer:
            st["index"] = self.indexer.compressor.new_state()
        return st

    def forward(self, x, start_pos, st):
        cfg = self.cfg
        S = x.shape[0]
        H, hd, rd, win = cfg.num_attention_heads, cfg.head_dim, cfg.rope_dim, cfg.window
        cos, sin = rope_table(self.freqs, range(start_pos, start_pos + S))
        qr = rms_norm(lin(x, self.wq_a), self.q_norm, cfg.eps)
        q = lin(qr, self.wq_b).unflatten(-1, (H, hd))
        q = head_rms_rescale(q, cfg.eps)
        q = apply_rope(q, cos, sin)
        kv = rms_norm(lin(x, self.wkv), self.kv_norm, cfg.eps)
        kv = apply_rope(kv, cos, sin)
        kv = torch.cat([act_quant_sim(kv[:, :-rd], 64), kv[:, -rd:]], -1)  # FP8 sim, rope dims stay bf16
        idx = window_idxs(win, S, start_pos)
        if self.ratio:
            offset = S if start_pos == 0 else win
            if self.indexer is not None:
                cidx = self.indexer.forward(x, qr, start_pos, offset, st["index"])
            else:
                cidx = compress_idxs(self.ratio, S, start_pos, offset)
            idx = torch.cat([idx.expand(S, -1), cidx.expand(S, -1)], -1)
        ring = st["ring"]
        if start_pos == 0:
            last = torch.arange(max(0, S - win), S)
            ring[last % win] = kv[last]
            if self.ratio:
                self.compressor.forward(x, 0, st["comp"])
                kv_all = torch.cat([kv, st["comp"]["cache"]], 0)
            else:
                kv_all = kv
        else:
            ring[start_pos % win] = kv[0]
            if self.ratio:
                self.compressor.forward(x, start_pos, st["comp"])
                kv_all = torch.cat([ring, st["comp"]["cache"]], 0)
            else:
                kv_all = ring
        o = sparse_attn(q, kv_all, self.sink, idx.expand(S, -1), hd ** -0.5)
        o = apply_rope(o, cos, sin, inverse=True)
        G = cfg.o_groups
        wo_a = self.wo_a.view(G, cfg.o_lora_rank, -1)
        og = o.reshape(S, G, -1)
        if get_profile() == "exact":
            u = bf16(einsum("sgd,grd->sgr", og, wo_a))
        else:   # the same grouped product as the engine runs it: per group g, kernels::linear of the
            # group's heads [S, H·hd/G] with its wo_a rows [ol, H·hd/G] (weight_rows(wo_a, g·ol, ol))
            u = bf16(torch.stack([linear_mm(og[:, g], wo_a[g]) for g in range(G)], 1))
        return lin(u.flatten(1), self.wo_b)


# ============================================================== block / model
class MoE:
    def __init__(self, W, prefix, cfg, layer_id):
        self.cfg, self.W, self.p = cfg, W, prefix + ".ffn"
        self.gate_w = W.tensor(self.p + ".gate.weight")
        self.hash = layer_id < cfg.num_hash_layers
        self.tid2eid = W.tensor(self.p + ".gate.tid2eid") if self.hash else None
        self.bias = None if self.hash else W.tensor(self.p + ".gate.bias")
        self.shared = [W.linear(f"{self.p}.shared_experts.{n}") for n in ("w1", "w2", "w3")]

    def forward(self, x, ids):
        cfg = self.cfg
        weights, indices = gate(x, self.gate_w, self.bias, self.tid2eid, ids, cfg.n_act, cfg.route_scale)
        y = torch.zeros_like(x)
        for e in sorted(set(indices.flatten().tolist())):   # experts in ascending id, like M:MoE
            rows, slot = torch.where(indices == e)
            w1, w2, w3 = (self.W.linear(f"{self.p}.experts.{e}.{n}") for n in ("w1", "w2", "w3"))
            y[rows] += expert(x[rows], w1, w2, w3, cfg.swiglu_limit, weights[rows, slot].unsqueeze(-1))
        y = y + expert(x, *self.shared, cfg.swiglu_limit)
        return bf16(y)


class Block:
    def __init__(self, W, prefix, cfg, layer_id):
        self.cfg, self.layer_id = cfg, layer_id
        t = W.tensor
        self.attn = Attention(W, prefix, cfg, layer_id)
        self.ffn = MoE(W, prefix, cfg, layer_id)
        self.attn_norm, self.ffn_norm = t(prefix + ".attn_norm.weight"), t(prefix + ".ffn_norm.weight")
        self.hc_attn = (t(prefix + ".hc_attn_fn"), t(prefix + ".hc_attn_scale"), t(prefix + ".hc_attn_base"))
        self.hc_ffn = (t(prefix + ".hc_ffn_fn"), t(prefix + ".hc_ffn_scale"), t(prefix + ".hc_ffn_base"))

    def forward(self, X, start_pos, ids, st):
        cfg = self.cfg
        x, post, comb = hc_pre(X, *self.hc_attn, cfg)
        y = self.attn.forward(rms_norm(x, self.attn_norm, cfg.eps), start_pos, st)
        X = hc_post(y, X, post, comb)
        x, post, comb = hc_pre(X, *self.hc_ffn, cfg)
        y = self.ffn.forward(rms_norm(x, self.ffn_norm, cfg.eps), ids)
        return hc_post(y, X, post, comb)


class Model:
    def __init__(self, directory, load_mtp=True):
        self.cfg = cfg = Config.load(directory)
        self.W = W = Weights(directory)
        self.embed = W.tensor("embed.weight")
        self.head = W.tensor("head.weight")
        self.norm = W.tensor("norm.weight")
        self.hc_head_p = (W.tensor("hc_head_fn"), W.tensor("hc_head_scale"), W.tensor("hc_head_base"))
        self.layers = [Block(W, f"layers.{i}", cfg, i) for i in range(cfg.n_layers)]
        self.mtp = []
        if load_mtp:
            for j in range(cfg.n_mtp):
                p = f"mtp.{j}"
                if not W.has(p + ".e_proj.weight"):
                    break
                self.mtp.append({
                    "block": Block(W, p, cfg, cfg.n_layers + j),
                    "e_proj": W.linear(p + ".e_proj"), "h_proj": W.linear(p + ".h_proj"),
                    "enorm": W.tensor(p + ".enorm.weight"), "hnorm": W.tensor(p + ".hnorm.weight"),
                    "norm": W.tensor(p + ".norm.weight"),
                    "hc_head": (W.tensor(p + ".hc_head_fn"), W.tensor(p + ".hc_head_scale"),
                                W.tensor(p + ".hc_head_base")),
                })

    def new_state(self):
        return {"layers": [b.attn.new_state() for b in self.layers],
                "mtp": [m["block"].attn.new_state() for m in self.mtp]}

    def logits_of(self, X, hc_p, norm):
        """M:ParallelHead: hc_head -> RMSNorm (bf16) -> fp32 head on the last position."""
        x = rms_norm(hc_head(X[-1:], *hc_p, self.cfg), norm, self.cfg.eps)   # per-position: last only
        return linear_mm(x, self.head)[0]

    def hidden(self, ids, start_pos, state):
        """Final hc streams [S, hc, d] (bf16 values) after all main layers."""
        ids = torch.as_tensor(ids, dtype=torch.int64)
        if start_pos > 0:
            assert ids.numel() == 1, "decode takes one token at a time (as the official code)"
        X = self.embed[ids].unsqueeze(1).repeat(1, self.cfg.hc_mult, 1)
        for blk, st in zip(self.layers, state["layers"]):
            X = blk.forward(X, start_pos, ids, st)
        return X

    def forward(self, ids, start_pos, state):
        """fp32 logits [vocab] of the last position."""
        X = self.hidden(ids, start_pos, state)
        state["last_hidden"] = X
        return self.logits_of(X, self.hc_head_p, self.norm)

    def mtp_forward(self, h, next_ids, start_pos, state, j=0):
        """M:MTPBlock: x = e_proj(enorm(embed(next_ids))) + h_proj(hnorm(h)) (bf16 sum), then a Block
        (layer id n_layers + j: window-only, biased gate), its own hc_head + norm, the shared head.
        h: main-model streams [S,hc,d] at the same positions as next_ids (next_ids[t] = token t+1)."""
        m, cfg = self.mtp[j], self.cfg
        next_ids = torch.as_tensor(next_ids, dtype=torch.int64)
        e = rms_norm(self.embed[next_ids], m["enorm"], cfg.eps)
        hn = rms_norm(h, m["hnorm"], cfg.eps)
        x = bf16(lin(e, m["e_proj"]).unsqueeze(1) + lin(hn, m["h_proj"]))
        X = m["block"].forward(x, start_pos, next_ids, state["mtp"][j])
        return self.logits_of(X, m["hc_head"], m["norm"])


def run_teacher_forcing(model, ids, prefill):
    """Prefill ids[:prefill] from position 0, then one decode step per remaining id.
    Returns [1 + n - prefill, vocab] fp32 logits."""
    state = model.new_state()
    out = [model.forward(ids[:prefill], 0, state)]
    for p in range(prefill, len(ids)):
        out.append(model.forward(ids[p:p + 1], p, state))
    return torch.stack(out)
