"""Qwen3.5 reference forward (text model; dense `qwen3_5` and MoE `qwen3_5_moe`).

Follows the bf16 eager (pure torch) execution of huggingface/transformers' Qwen3.5 code
(`models/qwen3_5/modeling_qwen3_5.py`, `models/qwen3_5_moe/modeling_qwen3_5_moe.py`, the torch
fallbacks of `models/qwen3_next/modular_qwen3_next.py`), with every bf16 materialization of that
execution reproduced as an explicit rounding, and the MTP head of vLLM
(`vllm/model_executor/models/qwen3_5_mtp.py`). reference/README.md §Qwen3.5 lists every rounding
point with its source; "T:" below cites transformers, "V:" vLLM.

Conventions (reference/numerics.py): every tensor is torch.float32; bf16() rounds RNE; mm is an
fp64 product rounded once to fp32; transcendental functions are fp64 rounded once; RMS sums are
fp64 rounded once; the weight products are numerics.linear_mm (= mm in the exact profile, the engine's
fast order in the fast profile). Parameters are used as the bf16 execution holds them: bf16(stored value).

Decisions (README §Qwen3.5):
* Gated DeltaNet runs in the recurrent form, token by token, for prefill and decode alike, so a
  sequence's outputs do not depend on how its tokens are chunked or batched. The chunked (WY)
  form is here too (`delta_rule_chunked`) to measure the spread a chunked kernel may show.
* Attention is computed per query row over exactly its visible keys (0..position).
* Batch size 1. Any number of tokens per call, from any position (prefill, chunked prefill,
  decode are the same code).

Usage: `m = Model(dir)`, `st = m.new_state()`, `logits = m.prefill(ids, st)`, then
`m.decode(token, st)` per token (both are `forward`, which continues at st["pos"] with any number
of tokens); `m.mtp_forward(st["hidden"], next_ids, st)` for the MTP head. The state (a dict):
per GDN layer the conv tail [K-1, conv_dim] (pre-conv rows) and S [Hv, Dk, Dv] fp32, per attention
layer K and V [n, Hkv, D] (bf16 values), the MTP layers' K/V, the positions reached.
"""
import json
import os

import torch

from .formats import bf16, bf16_from_bits
from .numerics import einsum, exp, linear_mm, mean_sq, rsqrt, sigmoid, silu, softmax, softplus, sum_exact, sum_sq
from .safetensors_io import Checkpoint

WRAPPER_TYPES = ("qwen3_5", "qwen3_5_moe")
TEXT_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")
L2NORM_EPS = 1e-6  # T: torch_*_gated_delta_rule call l2norm(x, eps=1e-6); fla: 1e-6 in the kernel


def f32(v):
    """A Python scalar as the fp32 value torch uses when it multiplies an fp32/bf16 tensor by it."""
    return torch.tensor(v, dtype=torch.float32)


# ============================================================== config
class Config:
    """config.json -> attributes. Accepts the VLM wrapper (`qwen3_5` / `qwen3_5_moe` with a
    `text_config`) or a bare text config (`qwen3_5_text` / `qwen3_5_moe_text`)."""

    def __init__(self, d):
        self.raw = d
        t = d["text_config"] if d.get("model_type") in WRAPPER_TYPES else d
        self.model_type = t.get("model_type")
        if self.model_type not in TEXT_TYPES:
            raise ValueError(f"not a Qwen3.5 text config: model_type {self.model_type!r}")
        self.moe = self.model_type == "qwen3_5_moe_text"
        if t.get("hidden_act", "silu") != "silu":
            raise ValueError("only hidden_act silu is supported")
        self.hidden_size = t["hidden_size"]
        self.n_layers = t["num_hidden_layers"]
        self.vocab_size = t["vocab_size"]
        self.eps = float(t.get("rms_norm_eps", 1e-6))
        # full attention
        self.n_heads = t["num_attention_heads"]
        self.n_kv_heads = t["num_key_value_heads"]
        self.head_dim = t.get("head_dim") or self.hidden_size // self.n_heads
        if t.get("attn_output_gate", True) is False:
            raise ValueError("attn_output_gate false: T:Qwen3_5Attention always splits q_proj into q | gate")
        rp = t.get("rope_parameters") or {}
        if rp.get("rope_type", "default") != "default":
            raise ValueError(f"rope_type {rp.get('rope_type')!r} not supported (text positions, default RoPE)")
        self.rope_theta = float(rp.get("rope_theta", t.get("rope_theta", 10000.0)))
        # T:configuration_qwen3_5(_moe) __post_init__: partial_rotary_factor defaults to 0.25
        self.partial_rotary_factor = float(rp.get("partial_rotary_factor", t.get("partial_rotary_factor", 0.25)))
        self.rotary_dim = int(self.head_dim * self.partial_rotary_factor)
        # Gated DeltaNet
        self.lin_k_heads = t["linear_num_key_heads"]
        self.lin_v_heads = t["linear_num_value_heads"]
        self.lin_k_dim = t["linear_key_head_dim"]
        self.lin_v_dim = t["linear_value_head_dim"]
        self.conv_kernel = t.get("linear_conv_kernel_dim", 4)
        if self.lin_v_heads % self.lin_k_heads:
            raise ValueError("linear_num_value_heads must be a multiple of linear_num_key_heads")
        lt = t.get("layer_types")
        if lt is None:  # T:configuration __post_init__: every full_attention_interval-th layer is full
            iv = t.get("full_attention_interval", 4)
            lt = ["linear_attention" if (i + 1) % iv else "full_attention" for i in range(self.n_layers)]
        if len(lt) != self.n_layers or any(x not in ("linear_attention", "full_attention") for x in lt):
            raise ValueError(f"bad layer_types {lt}")
        self.layer_types = list(lt)
        # MLP
        if self.moe:
            self.n_experts = t["num_experts"]
            self.n_active = t["num_experts_per_tok"]
            self.moe_inter = t["moe_intermediate_size"]
            self.shared_inter = t["shared_expert_intermediate_size"]
        else:
            self.intermediate_size = t["intermediate_size"]
        self.tie = bool(d.get("tie_word_embeddings", t.get("tie_word_embeddings", False)))
        self.n_mtp = int(t.get("mtp_num_hidden_layers", 0) or 0)

    @staticmethod
    def load(directory):
        with open(os.path.join(directory, "config.json")) as f:
            return Config(json.load(f))


# ============================================================== weights
class Weights:
    """Checkpoint tensors as the bf16 execution holds them: every floating tensor rounded to bf16
    (T loads the whole model in the config dtype bfloat16; A_log, dt_bias and norm weights are no
    exception there), returned as fp32. Names are relative to the text model's prefix
    (`model.language_model.` in the published VLM layout, `model.` for a bare text checkpoint);
    names starting with `mtp.` or `lm_head.` are absolute."""

    def __init__(self, directory):
        self.ck = Checkpoint(directory)
        self.prefix = "model.language_model." if "model.language_model.embed_tokens.weight" in self.ck else "model."
        self.cache = {}

    def _full(self, name):
        return name if name.startswith(("mtp.", "lm_head.")) else self.prefix + name

    def has(self, name):
        return self._full(name) in self.ck

    def __call__(self, name):
        full = self._full(name)
        if full not in self.cache:
            tag, a = self.ck.get(full)
            if tag == "BF16":
                t = bf16_from_bits(a)
            elif tag in ("F32", "F16", "F64"):
                t = bf16(torch.from_numpy(a.astype("float32")))
            else:
                raise ValueError(f"{full}: unsupported dtype {tag}")
            self.cache[full] = t
        return self.cache[full]


class DictWeights:
    """In-memory weights {name: fp32 tensor} with the Weights interface (component goldens)."""

    def __init__(self, tensors):
        self.t = tensors

    def has(self, name):
        return name in self.t

    def __call__(self, name):
        return bf16(self.t[name])


# ============================================================== norms
def rms_norm(x, w, eps):
    """T:Qwen3_5RMSNorm (Gemma-style, zero-centred weight): fp32 `x * rsqrt(mean(x^2) + eps)`, times
    fp32(1 + w), then cast to bf16. mean(x^2) = mean_sq (fp64 sum rounded once, / n)."""
    return bf16((x * rsqrt(mean_sq(x) + eps)) * (1.0 + w))


def gated_rms_norm(o, z, w, eps):
    """T:Qwen3_5RMSNormGated (torch path; GDN `norm`, plain weight): the normalized fp32 value is cast
    back to the input dtype bf16 *before* the weight multiply (bf16 x bf16 -> bf16), then times
    SiLU(z) computed in fp32, then cast to bf16. (fla's FusedRMSNormGated keeps fp32 throughout.)"""
    n = bf16(o * rsqrt(mean_sq(o) + eps))
    n = bf16(w * n)
    return bf16(n * silu(z))


def l2norm(x, eps=L2NORM_EPS):
    """T:l2norm on fp32 inputs (transformers PR #47625: q/k are cast to fp32 first, "to match the FLA
    library"): x * rsqrt(sum(x^2) + eps); sum(x^2) is an fp64 sum rounded once to fp32."""
    return x * rsqrt(sum_sq(x) + eps)


# ============================================================== RoPE (partial, rotate-half)
def rope_inv_freq(rotary_dim, theta):
    """T:Qwen3_5TextRotaryEmbedding.compute_default_rope_parameters, fp32:
    inv_freq[i] = 1 / fp32(theta ** fp32(2i / rotary_dim)), i < rotary_dim/2 (pow in fp64, rounded once)."""
    e = torch.arange(0, rotary_dim, 2, dtype=torch.int64).float() / rotary_dim
    p = torch.pow(f32(theta).double(), e.double()).float()
    return 1.0 / p


def rope_cos_sin(inv_freq, positions):
    """T:Qwen3_5TextRotaryEmbedding.forward for text positions (the three MRoPE rows are equal, so the
    interleaving is a no-op): angle = fp32(pos * inv_freq), cos/sin in fp32 (fp64 rounded once),
    returned cast to the activation dtype bf16. Shape [n, rotary_dim/2] (emb = cat(freqs, freqs))."""
    ang = torch.outer(torch.tensor(list(positions), dtype=torch.int64).float(), inv_freq)
    return bf16(torch.cos(ang.double()).float()), bf16(torch.sin(ang.double()).float())


def apply_rope(x, cos, sin):
    """T:apply_rotary_pos_emb on the first rotary_dim dims of each head (rotate-half / NeoX pairs
    (i, i + r/2)), executed in bf16 tensors: each product and the sum rounded to bf16:
      out[i]       = bf16(bf16(x[i] c_i) + bf16(-x[i+r/2] s_i))
      out[i + r/2] = bf16(bf16(x[i+r/2] c_i) + bf16(x[i] s_i))        (i < r/2)
    x [S, heads, head_dim]; cos/sin [S, r/2]."""
    h = cos.shape[-1]
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    x1, x2 = x[..., :h], x[..., h:2 * h]
    o1 = bf16(bf16(x1 * c) + bf16(-x2 * s))
    o2 = bf16(bf16(x2 * c) + bf16(x1 * s))
    return torch.cat([o1, o2, x[..., 2 * h:]], dim=-1)


# ============================================================== full attention
def attention(q, k, v, positions, scale):
    """T:eager_attention_forward (GQA via repeat_kv: query head h reads kv head h // (H/Hkv)), one
    query row at a time over exactly its visible keys 0..pos:
      z = bf16(bf16(q.k) * fp32(scale));  p = bf16(softmax_fp32(z));  o = bf16(p.V)
    q [S,H,D]; k, v [N,Hkv,D] (the whole cache, bf16 values); positions: absolute position per row."""
    S, H, D = q.shape
    rep = H // k.shape[1]
    kr, vr = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    sc = f32(scale)
    out = torch.empty(S, H, D)
    for t, p in enumerate(positions):
        n = p + 1
        z = bf16(bf16(einsum("hd,nhd->hn", q[t], kr[:n])) * sc)
        w = bf16(softmax(z, -1))
        out[t] = bf16(einsum("hn,nhd->hd", w, vr[:n]))
    return out


class Attention:
    """T:Qwen3_5Attention (gated): q_proj -> [H, 2*head_dim] split per head into [q | gate];
    q_norm / k_norm (1+w RMSNorm over head_dim); partial RoPE; attention over the whole cache
    (bf16 K after norm + RoPE, bf16 V); attn * sigmoid(gate) in bf16; o_proj."""

    def __init__(self, W, p, cfg):
        self.cfg = cfg
        self.wq, self.wk, self.wv, self.wo = (W(f"{p}.{n}_proj.weight") for n in "qkvo")
        self.q_norm, self.k_norm = W(p + ".q_norm.weight"), W(p + ".k_norm.weight")
        self.inv_freq = rope_inv_freq(cfg.rotary_dim, cfg.rope_theta)

    def new_state(self):
        c = self.cfg
        return {"k": torch.zeros(0, c.n_kv_heads, c.head_dim), "v": torch.zeros(0, c.n_kv_heads, c.head_dim)}

    def forward(self, x, pos0, st):
        c = self.cfg
        S, H, Hk, D = x.shape[0], c.n_heads, c.n_kv_heads, c.head_dim
        assert st["k"].shape[0] == pos0, "the cache must hold exactly the positions before pos0"
        qg = bf16(linear_mm(x, self.wq)).view(S, H, 2 * D)
        q, gate = qg[..., :D], qg[..., D:].reshape(S, H * D)
        q = rms_norm(q, self.q_norm, c.eps)
        k = rms_norm(bf16(linear_mm(x, self.wk)).view(S, Hk, D), self.k_norm, c.eps)
        v = bf16(linear_mm(x, self.wv)).view(S, Hk, D)
        pos = list(range(pos0, pos0 + S))
        cos, sin = rope_cos_sin(self.inv_freq, pos)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        st["k"] = torch.cat([st["k"], k])
        st["v"] = torch.cat([st["v"], v])
        o = attention(q, st["k"], st["v"], pos, D ** -0.5).reshape(S, H * D)
        o = bf16(o * bf16(sigmoid(gate)))
        return bf16(linear_mm(o, self.wo))


# ============================================================== Gated DeltaNet
def causal_conv1d(x, tail, w):
    """T:Qwen3_5GatedDeltaNet conv path (nn.Conv1d depthwise, no bias, bf16 -> bf16; then F.silu in
    bf16): y[t,c] = bf16(silu(bf16(sum_j w[c,j] * x[t-K+1+j, c]))), the sum exact (fp64, rounded once
    to fp32). x [T,C] pre-conv rows (bf16 values); tail [K-1,C] the rows before x (zeros at the start
    of a sequence, as the conv's left padding); w [C,K]. Returns (y, new tail = last K-1 rows)."""
    K = w.shape[1]
    full = torch.cat([tail, x])
    win = full.unfold(0, K, 1)                       # [T, C, K], window j = row t-K+1+j
    y = bf16(sum_exact(win.double() * w.double(), -1, False))
    return bf16(silu(y)), full[full.shape[0] - (K - 1):].clone()


def gdn_gates(a, b, A_log, dt_bias):
    """T:Qwen3_5GatedDeltaNet.forward: beta = b.sigmoid() (bf16 tensor -> bf16);
    g = -A_log.float().exp() * softplus(a.float() + dt_bias)  (fp32; a + dt_bias is an fp32 add)."""
    beta = bf16(sigmoid(b))
    g = -exp(A_log) * softplus(a + dt_bias)
    return g, beta


def gdn_qk(q, k):
    """The kernel's q/k preparation (T:torch_recurrent_gated_delta_rule after PR #47625, fla
    fused_recurrent): cast to fp32, l2norm both, then q * fp32(Dk^-0.5)."""
    return l2norm(q) * f32(q.shape[-1] ** -0.5), l2norm(k)


def delta_rule_recurrent(q, k, v, g, beta, S):
    """The canonical Gated DeltaNet core, token by token (T:torch_recurrent_gated_delta_rule,
    fla naive/fused recurrent). Per token t and value head h, every step an fp32 operation:
      d = exp(g)                          (fp64 rounded once)
      S[i,j] = S[i,j] * d
      kv[j]  = sum_i S[i,j] k[i]          (mm rule: fp64 sum rounded once)
      u[j]   = (v[j] - kv[j]) * beta
      S[i,j] = S[i,j] + (k[i] * u[j])     (product rounded, then the sum rounded: no FMA)
      o[j]   = sum_i S[i,j] q[i]          (mm rule)
    q, k [T,Hv,Dk] (l2-normalized, q scaled, already repeated to the value heads); v [T,Hv,Dv];
    g, beta [T,Hv]; S [Hv,Dk,Dv] fp32. Returns (o [T,Hv,Dv] fp32, S)."""
    o = torch.empty(v.shape)
    d = exp(g)
    for t in range(q.shape[0]):
        S = S * d[t][:, None, None]
        kv = einsum("hij,hi->hj", S, k[t])
        u = (v[t] - kv) * beta[t][:, None]
        S = S + k[t][:, :, None] * u[:, None, :]
        o[t] = einsum("hij,hi->hj", S, q[t])
    return o, S


def delta_rule_chunked(q, k, v, g, beta, S, chunk=64, dtype=torch.float32):
    """The chunked (WY) form of `delta_rule_recurrent` (T:torch_chunk_gated_delta_rule, fla naive
    chunk), computed in `dtype` with torch's own matmuls: not the contract, the yardstick for a
    chunked kernel. Chunks of `chunk` tokens start at t = 0 of this call; within a chunk, with
    gam = cumsum(g) and D[i,j] = exp(gam_i - gam_j) for j <= i (else 0):
      A = strictly_lower(beta_i (k_i.k_j) D[i,j]);  solve (I + A) U = beta V, (I + A) W = beta K exp(gam)
      V' = U - W S;  O = (Q exp(gam)) S + ((Q K^T) * D) V';  S <- exp(gam_C) S + (K exp(gam_C - gam))^T V'
    Same inputs and outputs as delta_rule_recurrent (o and S returned as fp32)."""
    T = q.shape[0]
    Sd = S.to(dtype)
    outs = []
    for c0 in range(0, T, chunk):
        Q, K, V = (x[c0:c0 + chunk].transpose(0, 1).to(dtype) for x in (q, k, v))   # [H, L, *]
        G, B = (x[c0:c0 + chunk].t().to(dtype) for x in (g, beta))                  # [H, L]
        L = Q.shape[1]
        gam = G.cumsum(-1)
        lower = torch.ones(L, L, dtype=torch.bool).tril()
        D = torch.where(lower, gam[:, :, None] - gam[:, None, :], torch.tensor(float("-inf"), dtype=dtype)).exp()
        A = (B[:, :, None] * (K @ K.transpose(1, 2)) * D).tril(-1)
        IA = A + torch.eye(L, dtype=dtype)
        eg = gam.exp()[:, :, None]
        U = torch.linalg.solve_triangular(IA, B[:, :, None] * V, upper=False, unitriangular=True)
        Wm = torch.linalg.solve_triangular(IA, B[:, :, None] * K * eg, upper=False, unitriangular=True)
        Vp = U - Wm @ Sd
        outs.append(((Q * eg) @ Sd + ((Q @ K.transpose(1, 2)) * D) @ Vp).transpose(0, 1))
        last = gam[:, -1:]
        Sd = last.exp()[:, :, None] * Sd + (K * (last - gam).exp()[:, :, None]).transpose(1, 2) @ Vp
    return torch.cat(outs).float(), Sd.float()


class GatedDeltaNet:
    """T:Qwen3_5GatedDeltaNet (`linear_attn`): in_proj_qkv -> causal conv (+ SiLU) -> split q | k | v
    (contiguous, head-major); z = in_proj_z, b = in_proj_b, a = in_proj_a; gates; q/k repeated to the
    value heads (value head h reads key head h // (Hv/Hk)); recurrent core; gated RMSNorm with z;
    out_proj. State: conv tail [K-1, conv_dim] (pre-conv rows, bf16 values) and S [Hv, Dk, Dv] fp32."""

    def __init__(self, W, p, cfg):
        self.cfg = cfg
        self.w_qkv, self.w_z = W(p + ".in_proj_qkv.weight"), W(p + ".in_proj_z.weight")
        self.w_b, self.w_a = W(p + ".in_proj_b.weight"), W(p + ".in_proj_a.weight")
        self.conv_w = W(p + ".conv1d.weight").squeeze(1)          # [conv_dim, 1, K] -> [conv_dim, K]
        self.A_log, self.dt_bias = W(p + ".A_log"), W(p + ".dt_bias")
        self.norm_w, self.w_out = W(p + ".norm.weight"), W(p + ".out_proj.weight")

    def new_state(self):
        c = self.cfg
        conv_dim = 2 * c.lin_k_heads * c.lin_k_dim + c.lin_v_heads * c.lin_v_dim
        return {"conv": torch.zeros(c.conv_kernel - 1, conv_dim),
                "S": torch.zeros(c.lin_v_heads, c.lin_k_dim, c.lin_v_dim)}

    def forward(self, x, pos0, st):
        c = self.cfg
        T, Hk, Hv, Dk, Dv = x.shape[0], c.lin_k_heads, c.lin_v_heads, c.lin_k_dim, c.lin_v_dim
        qkv = bf16(linear_mm(x, self.w_qkv))
        z = bf16(linear_mm(x, self.w_z)).view(T, Hv, Dv)
        b, a = bf16(linear_mm(x, self.w_b)), bf16(linear_mm(x, self.w_a))
        qkv, st["conv"] = causal_conv1d(qkv, st["conv"], self.conv_w)
        q = qkv[:, :Hk * Dk].view(T, Hk, Dk)
        k = qkv[:, Hk * Dk:2 * Hk * Dk].view(T, Hk, Dk)
        v = qkv[:, 2 * Hk * Dk:].view(T, Hv, Dv)
        g, beta = gdn_gates(a, b, self.A_log, self.dt_bias)
        q, k = q.repeat_interleave(Hv // Hk, dim=1), k.repeat_interleave(Hv // Hk, dim=1)
        qn, kn = gdn_qk(q, k)
        o, st["S"] = delta_rule_recurrent(qn, kn, v, g, beta, st["S"])
        y = gated_rms_norm(bf16(o), z, self.norm_w, c.eps)       # kernel output cast to bf16 first
        return bf16(linear_mm(y.reshape(T, Hv * Dv), self.w_out))


# ============================================================== MLP / MoE
def swiglu(x, wg, wu, wd):
    """T:Qwen3_5MLP: down(act(gate(x)) * up(x)), every step a bf16 tensor."""
    g, u = bf16(linear_mm(x, wg)), bf16(linear_mm(x, wu))
    return bf16(linear_mm(bf16(bf16(silu(g)) * u), wd))


def topk_desc(scores, k):
    """Top-k by descending score, ties -> lower index first (stable sort; torch.topk leaves the tie
    order unspecified)."""
    return torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :k]


def moe_route(x, gate_w, k):
    """T:Qwen3_5MoeTopKRouter: logits = bf16(x @ W^T); probs = softmax in fp32 over all experts;
    top-k of probs; weights = top / sum(top) in fp32 (always renormalised; the sum an fp64 sum rounded
    once), then cast to the logits dtype bf16. Returns (probs, indices [S,k], weights [S,k])."""
    probs = softmax(bf16(linear_mm(x, gate_w)), -1)
    idx = topk_desc(probs, k)
    top = probs.gather(-1, idx)
    return probs, idx, bf16(top / sum_exact(top))


class MLP:
    def __init__(self, W, p):
        self.w = [W(f"{p}.{n}_proj.weight") for n in ("gate", "up", "down")]

    def forward(self, x):
        return swiglu(x, *self.w)


class MoE:
    """T:Qwen3_5MoeSparseMoeBlock: routed experts (fused gate_up_proj [E, 2I, H] split at I into
    gate | up, down_proj [E, H, I]) + shared expert gated by sigmoid(shared_expert_gate(x)).
    T:Qwen3_5MoeExperts accumulates into a bf16 buffer with index_add_ in ascending expert id:
    y = bf16(y + bf16(expert_out * weight)) per expert; out = bf16(y + bf16(sigmoid(gate) * shared)).
    Also reads per-expert tensors `experts.{e}.{gate,up,down}_proj.weight` (V loads both layouts)."""

    def __init__(self, W, p, cfg):
        self.cfg, self.W, self.p = cfg, W, p
        self.gate_w = W(p + ".gate.weight")
        self.fused = W.has(p + ".experts.gate_up_proj")
        self.shared = [W(f"{p}.shared_expert.{n}_proj.weight") for n in ("gate", "up", "down")]
        self.shared_gate = W(p + ".shared_expert_gate.weight")

    def expert(self, e):
        p, I = self.p + ".experts", self.cfg.moe_inter
        if self.fused:
            gu, dn = self.W(p + ".gate_up_proj")[e], self.W(p + ".down_proj")[e]
            return gu[:I], gu[I:], dn
        return tuple(self.W(f"{p}.{e}.{n}_proj.weight") for n in ("gate", "up", "down"))

    def forward(self, x):
        shared = swiglu(x, *self.shared)
        _, idx, wts = moe_route(x, self.gate_w, self.cfg.n_active)
        y = torch.zeros_like(x)
        for e in sorted(set(idx.flatten().tolist())):
            rows, slot = torch.where(idx == e)
            h = swiglu(x[rows], *self.expert(e))
            y[rows] = bf16(y[rows] + bf16(h * wts[rows, slot].unsqueeze(-1)))
        sg = bf16(sigmoid(bf16(linear_mm(x, self.shared_gate))))
        return bf16(y + bf16(sg * shared))


# ============================================================== decoder layer / model
class DecoderLayer:
    """T:Qwen3_5DecoderLayer: h = bf16(h + mixer(norm(h))); h = bf16(h + mlp(norm(h)))."""

    def __init__(self, W, p, cfg, kind):
        self.cfg, self.kind = cfg, kind
        self.in_norm, self.post_norm = W(p + ".input_layernorm.weight"), W(p + ".post_attention_layernorm.weight")
        self.mixer = Attention(W, p + ".self_attn", cfg) if kind == "full_attention" else \
            GatedDeltaNet(W, p + ".linear_attn", cfg)
        self.mlp = MoE(W, p + ".mlp", cfg) if cfg.moe else MLP(W, p + ".mlp")

    def forward(self, h, pos0, st):
        h = bf16(h + self.mixer.forward(rms_norm(h, self.in_norm, self.cfg.eps), pos0, st))
        return bf16(h + self.mlp.forward(rms_norm(h, self.post_norm, self.cfg.eps)))


class Model:
    def __init__(self, directory, load_mtp=True):
        self.cfg = cfg = Config.load(directory)
        self.W = W = Weights(directory)
        self.embed = W("embed_tokens.weight")
        self.norm = W("norm.weight")
        if cfg.tie:
            self.head = self.embed
        elif W.has("lm_head.weight"):
            self.head = W("lm_head.weight")
        else:
            raise ValueError("tie_word_embeddings is false but the checkpoint has no lm_head.weight")
        self.layers = [DecoderLayer(W, f"layers.{i}", cfg, cfg.layer_types[i]) for i in range(cfg.n_layers)]
        self.mtp = []
        if load_mtp and cfg.n_mtp and W.has("mtp.fc.weight"):
            # V:Qwen3_5MultiTokenPredictor; `mtp_use_dedicated_embeddings: false` -> the main embedding
            # (a checkpoint with its own mtp.embed_tokens.weight uses that; unverified, no such checkpoint seen)
            self.mtp_embed = W("mtp.embed_tokens.weight") if W.has("mtp.embed_tokens.weight") else self.embed
            self.mtp_fc = W("mtp.fc.weight")
            self.mtp_norm_e, self.mtp_norm_h = W("mtp.pre_fc_norm_embedding.weight"), W("mtp.pre_fc_norm_hidden.weight")
            self.mtp_norm = W("mtp.norm.weight")
            self.mtp = [DecoderLayer(W, f"mtp.layers.{j}", cfg, "full_attention") for j in range(cfg.n_mtp)]

    def new_state(self):
        return {"pos": 0, "layers": [l.mixer.new_state() for l in self.layers],
                "mtp_pos": 0, "mtp": [l.mixer.new_state() for l in self.mtp]}

    def logits(self, h):
        """T:Qwen3_5ForConditionalGeneration.forward: lm_head in bf16, logits not upcast -> bf16 values."""
        return bf16(linear_mm(h, self.head))

    def hidden(self, ids, state):
        """Final-norm hidden states [S, hidden] (bf16 values) of ids at positions state['pos'].. ;
        advances the state."""
        ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1)
        pos0 = state["pos"]
        h = self.embed[ids]
        for layer, st in zip(self.layers, state["layers"]):
            h = layer.forward(h, pos0, st)
        state["pos"] = pos0 + ids.numel()
        return rms_norm(h, self.norm, self.cfg.eps)

    def forward(self, ids, state):
        """Logits [vocab] of the last of ids (bf16 values). state['hidden'] keeps the final-norm hidden
        states of all of ids (the MTP input)."""
        h = self.hidden(ids, state)
        state["hidden"] = h
        return self.logits(h[-1:])[0]

    def prefill(self, ids, state):
        """Any number of tokens from state['pos'] (a prefill, or a chunk of one): logits of the last."""
        return self.forward(ids, state)

    def decode(self, token, state):
        """One token at state['pos']: its logits."""
        return self.forward([token], state)

    def mtp_forward(self, h, next_ids, state, j=0):
        """MTP layer j (V:Qwen3_5MultiTokenPredictor.forward) on rows at positions state['mtp_pos'].. :
        row t pairs h_t, the target's hidden state at position p_t *after its final norm* (what V's
        target model returns and the model runner feeds the drafter), with next_ids[t] = token p_t + 1;
        the row sits at position p_t (V's EAGLE proposer shifts the ids, not the positions):
          x = bf16(fc(cat[rms_norm(embed(next), pre_fc_norm_embedding), rms_norm(h, pre_fc_norm_hidden)]))
          x = full-attention decoder layer (own KV cache);  out = rms_norm(x, mtp.norm);  logits = lm_head(out)
        Returns (logits [vocab] of the last row, out [S, hidden]); for a further draft step V feeds
        `out` back as h."""
        cfg = self.cfg
        next_ids = torch.as_tensor(next_ids, dtype=torch.int64).reshape(-1)
        e = rms_norm(self.mtp_embed[next_ids], self.mtp_norm_e, cfg.eps)
        hn = rms_norm(h, self.mtp_norm_h, cfg.eps)
        x = bf16(linear_mm(torch.cat([e, hn], -1), self.mtp_fc))
        pos0 = state["mtp_pos"]
        x = self.mtp[j].forward(x, pos0, state["mtp"][j])
        state["mtp_pos"] = pos0 + next_ids.numel()
        out = rms_norm(x, self.mtp_norm, cfg.eps)
        return self.logits(out[-1:])[0], out


def run_teacher_forcing(model, ids, prefill):
    """reference.logits' contract: prefill ids[:prefill] from position 0, then one decode step per
    remaining id. Returns [1 + n - prefill, vocab] fp32 logits (bf16 values)."""
    state = model.new_state()
    out = [model.forward(ids[:prefill], state)]
    for p in range(prefill, len(ids)):
        out.append(model.forward(ids[p:p + 1], state))
    return torch.stack(out)
