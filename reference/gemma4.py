"""Gemma 4 reference forward (text model of `gemma4` / `gemma4_unified`, or a bare `gemma4_text` /
`gemma4_unified_text` checkpoint).

Follows the bf16 eager (pure torch) execution of huggingface/transformers
`models/gemma4/modeling_gemma4.py` (Gemma4TextModel, Gemma4ForConditionalGeneration) and the
proportional RoPE of `modeling_rope_utils.py`, with every bf16 materialization of that execution
reproduced as an explicit rounding. reference/README.md §Gemma 4 lists every rounding point with
its source; "T:" below cites transformers.

Conventions (reference/numerics.py): every tensor is torch.float32; bf16() rounds RNE; products are
fp64 rounded once to fp32 (the weight products through numerics.linear_mm, which is the engine's
fast order in the fast profile); transcendental functions (rsqrt, tanh, gelu, cos, sin, pow,
softmax) are fp64 rounded once; RMS sums fp64 rounded once. Parameters: bf16(stored value).

Mechanisms: sliding-window (W) and full attention layers with their own head dim, KV heads and
RoPE (default on sliding, proportional on full); plain-weight RMSNorms (q/k norms, an unweighted v
norm); attention scale 1; K = V on full layers when attention_k_eq_v; per-layer embeddings (PLE);
KV-shared trailing layers; double-wide MLP on those; the MoE block beside the dense MLP; a
per-layer scalar; final logit softcapping. Batch 1; any number of tokens per call from any
position (prefill, chunked prefill and decode are the same code); attention runs one query row
at a time over exactly its visible keys.

Usage: `m = Model(dir)`, `st = m.new_state()`, `logits = m.forward(ids, st)` (continues at
st["pos"]). State: per layer that computes K/V, K [n, KV, D] (after k_norm + RoPE) and V [n, KV, D]
(after v_norm) of every position so far (bf16 values; a sliding layer only ever reads its last W
rows); KV-shared layers keep nothing and read their source layer's.
"""
import json
import os

import torch

from .formats import bf16
from .numerics import einsum, linear_mm, mean_sq, rsqrt, softmax, sum_exact
from .qwen3_5 import Weights, apply_rope, f32, rope_cos_sin, rope_inv_freq, topk_desc

WRAPPER_TYPES = ("gemma4", "gemma4_unified")
TEXT_TYPES = ("gemma4_text", "gemma4_unified_text")
SLIDING, FULL = "sliding_attention", "full_attention"


# ============================================================== config
class Config:
    """config.json -> attributes. Defaults where a key is absent are T:Gemma4TextConfig's."""

    def __init__(self, d):
        self.raw = d
        t = d["text_config"] if d.get("model_type") in WRAPPER_TYPES else d
        self.model_type = t.get("model_type")
        if self.model_type not in TEXT_TYPES:
            raise ValueError(f"not a Gemma 4 text config: model_type {self.model_type!r}")
        if t.get("hidden_activation", "gelu_pytorch_tanh") != "gelu_pytorch_tanh":
            raise ValueError("only hidden_activation gelu_pytorch_tanh is supported")
        if t.get("attention_bias", False):
            raise ValueError("attention_bias true is not supported")
        if t.get("use_bidirectional_attention") == "all":
            raise ValueError("use_bidirectional_attention 'all' (a non-causal model) is not supported")
        self.hidden_size = t["hidden_size"]
        self.n_layers = t["num_hidden_layers"]
        self.vocab_size = t["vocab_size"]
        self.intermediate_size = t["intermediate_size"]
        self.eps = float(t.get("rms_norm_eps", 1e-6))
        self.n_heads = t["num_attention_heads"]
        self.n_kv_heads = t["num_key_value_heads"]
        self.head_dim = t["head_dim"]
        # T:Gemma4TextAttention: a falsy global_head_dim means head_dim (the config's default is 512)
        self.global_head_dim = t.get("global_head_dim", 512) or self.head_dim
        self.k_eq_v = bool(t.get("attention_k_eq_v", False))
        self.n_global_kv_heads = t.get("num_global_key_value_heads")
        if self.k_eq_v and not self.n_global_kv_heads:
            raise ValueError("attention_k_eq_v needs num_global_key_value_heads")
        self.sliding_window = t.get("sliding_window", 512)
        lt = t.get("layer_types")
        if lt is None:  # T:Gemma4TextConfig.__post_init__: 5 sliding : 1 full
            lt = [SLIDING if (i + 1) % 6 else FULL for i in range(self.n_layers)]
        lt = list(lt)
        if len(lt) != self.n_layers or any(x not in (SLIDING, FULL) for x in lt):
            raise ValueError(f"bad layer_types {lt}")
        lt[-1] = FULL  # T: "Last layer must use full_attention ... Forcing"
        self.layer_types = lt
        rp = t.get("rope_parameters") or {
            SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
            FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
        if rp[SLIDING].get("rope_type", "default") != "default":
            raise ValueError("sliding layers: only rope_type default is supported")
        if rp[FULL].get("rope_type") != "proportional":
            raise ValueError("full layers: only rope_type proportional is supported")
        self.rope = rp
        cap = t.get("final_logit_softcapping")
        self.softcap = None if cap is None else float(cap)
        self.tie = bool(d.get("tie_word_embeddings", t.get("tie_word_embeddings", True)))
        # PLE: T's default hidden_size_per_layer_input is 256 when the key is absent; 0 / null = none
        self.ple_dim = t.get("hidden_size_per_layer_input", 256) or 0
        self.ple_vocab = t.get("vocab_size_per_layer_input", 262144)
        self.n_kv_shared = t.get("num_kv_shared_layers", 0) or 0
        self.double_wide = bool(t.get("use_double_wide_mlp", False))
        self.moe = bool(t.get("enable_moe_block", False))
        if self.moe:
            self.n_experts = t["num_experts"]
            self.top_k = t["top_k_experts"]
            self.moe_inter = t["moe_intermediate_size"]

    # ---- per-layer geometry (T:Gemma4TextAttention.__init__, Gemma4TextMLP.__init__)
    @property
    def first_shared(self):
        """Index of the first KV-shared layer (n_layers when none; T: `layer_idx >= first > 0`)."""
        f = self.n_layers - self.n_kv_shared
        return f if 0 < f < self.n_layers else self.n_layers

    def is_full(self, i):
        return self.layer_types[i] == FULL

    def attn_dims(self, i):
        """(head dim D, KV heads, K=V, window or None) of layer i."""
        if not self.is_full(i):
            return self.head_dim, self.n_kv_heads, False, self.sliding_window
        kv = self.n_global_kv_heads if self.k_eq_v else self.n_kv_heads
        return self.global_head_dim, kv, self.k_eq_v, None

    def kv_source(self, i):
        """For a KV-shared layer, the last layer before the shared block with the same type; else None."""
        f = self.first_shared
        if i < f:
            return None
        return max(j for j in range(f) if self.layer_types[j] == self.layer_types[i])

    def mlp_inter(self, i):
        return self.intermediate_size * (2 if self.double_wide and i >= self.first_shared else 1)

    @staticmethod
    def load(directory):
        with open(os.path.join(directory, "config.json")) as f:
            return Config(json.load(f))


# ============================================================== elementwise rules
def rms_norm(x, w, eps):
    """T:Gemma4RMSNorm (plain weight): bf16((x * rsqrt(mean(x^2) + eps)) * w); mean_sq is the fp64 sum
    rounded once / n; T's torch.pow(ms, -0.5) is the fp64 rsqrt rounded once."""
    return bf16((x * rsqrt(mean_sq(x) + eps)) * w)


def rms_norm_noscale(x, eps):
    """T:Gemma4RMSNorm(with_scale=False) (v_norm, the router's norm): bf16(x * rsqrt(mean(x^2) + eps))."""
    return bf16(x * rsqrt(mean_sq(x) + eps))


def gelu_tanh(x):
    """gelu_pytorch_tanh = F.gelu(x, approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    in fp64, rounded once to fp32 (callers round to bf16, as the bf16 tensor op returns)."""
    xd = x.double()
    return (0.5 * xd * (1.0 + torch.tanh((2.0 / torch.pi) ** 0.5 * (xd + 0.044715 * xd ** 3)))).float()


def softcap(logits, cap):
    """T:Gemma4ForConditionalGeneration.forward on bf16 logits: bf16(l / fp32(c)) (IEEE fp32
    division); bf16(tanh) (fp64 rounded once to fp32, then bf16); bf16(l * fp32(c))."""
    c = f32(cap)
    x = bf16(logits / c)
    x = bf16(torch.tanh(x.double()).float())
    return bf16(x * c)


# ============================================================== RoPE
def rope_inv_freq_proportional(D, theta, partial_rotary_factor, factor=1.0):
    """T:_compute_proportional_rope_parameters with head_dim_key global_head_dim: A =
    int(prf * D // 2) rotated angles, inv[i] = 1 / fp32(theta ** fp32(2i / D)) for i < A (THE FULL D in
    the exponent; pow fp64 rounded once), inv[i] = 0 for A <= i < D/2 (cos 1, sin 0: those pairs pass
    through unchanged); then inv / fp32(factor)."""
    A = int(partial_rotary_factor * D // 2)
    e = torch.arange(0, 2 * A, 2, dtype=torch.int64).float() / D
    inv = 1.0 / torch.pow(f32(theta).double(), e.double()).float()
    inv = torch.cat([inv, torch.zeros(D // 2 - A)])
    return inv / f32(factor) if factor != 1.0 else inv


def layer_inv_freq(cfg, i):
    D = cfg.attn_dims(i)[0]
    p = cfg.rope[cfg.layer_types[i]]
    if cfg.is_full(i):
        return rope_inv_freq_proportional(D, float(p["rope_theta"]), float(p.get("partial_rotary_factor", 1.0)),
                                          float(p.get("factor", 1.0)))
    return rope_inv_freq(D, float(p["rope_theta"]))  # T:compute_default_rope_parameters, dim = head_dim


# ============================================================== attention
def attention(q, k, v, positions, window):
    """T:eager_attention_forward with scaling 1.0 and no softcap, one query row at a time over exactly
    its visible keys (full: 0..p; sliding: p-W < key <= p, T:sliding_window mask):
      z = bf16(q.k) (fp64 rounded once, then bf16; * 1.0 is a no-op);  p = bf16(softmax_fp32(z));
      o = bf16(p.V).  GQA: query head h reads kv head h // (H/KV).
    q [S,H,D]; k, v [N,KV,D] (row = position); positions: absolute position per row of q."""
    S, H, D = q.shape
    rep = H // k.shape[1]
    kr, vr = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    out = torch.empty(S, H, D)
    for t, p in enumerate(positions):
        lo = 0 if window is None else max(0, p - window + 1)
        z = bf16(einsum("hd,nhd->hn", q[t], kr[lo:p + 1]))
        w = bf16(softmax(z, -1))
        out[t] = bf16(einsum("hn,nhd->hd", w, vr[lo:p + 1]))
    return out


class Attention:
    """T:Gemma4TextAttention: q = RoPE(q_norm(q_proj x)); K/V layers: k = RoPE(k_norm(k_proj x)),
    v = v_norm(v_proj x), or with K=V (full layers, attention_k_eq_v; no v_proj) v = v_norm(k_proj x)
    (the raw projection, before k_norm and RoPE); KV-shared layers read the K/V of layer `src`."""

    def __init__(self, W, p, cfg, i):
        self.cfg, self.i = cfg, i
        self.D, self.KV, self.k_eq_v, self.window = cfg.attn_dims(i)
        self.src = cfg.kv_source(i)
        self.wq, self.wo = W(p + ".q_proj.weight"), W(p + ".o_proj.weight")
        self.q_norm = W(p + ".q_norm.weight")
        if self.src is None:
            self.wk, self.k_norm = W(p + ".k_proj.weight"), W(p + ".k_norm.weight")
            self.wv = None if self.k_eq_v else W(p + ".v_proj.weight")
        self.inv_freq = layer_inv_freq(cfg, i)

    def new_state(self):
        if self.src is not None:
            return {}
        return {"k": torch.zeros(0, self.KV, self.D), "v": torch.zeros(0, self.KV, self.D)}

    def project(self, x, pos0):
        """(q, k, v) of rows x at positions pos0.. (k, v None on a KV-shared layer)."""
        S, D, eps = x.shape[0], self.D, self.cfg.eps
        cos, sin = rope_cos_sin(self.inv_freq, range(pos0, pos0 + S))
        q = apply_rope(rms_norm(bf16(linear_mm(x, self.wq)).view(S, -1, D), self.q_norm, eps), cos, sin)
        if self.src is not None:
            return q, None, None
        raw = bf16(linear_mm(x, self.wk)).view(S, self.KV, D)
        k = apply_rope(rms_norm(raw, self.k_norm, eps), cos, sin)
        vr = raw if self.k_eq_v else bf16(linear_mm(x, self.wv)).view(S, self.KV, D)
        return q, k, rms_norm_noscale(vr, eps)

    def forward(self, x, pos0, states):
        S = x.shape[0]
        q, k, v = self.project(x, pos0)
        if self.src is None:
            st = states[self.i]
            assert st["k"].shape[0] == pos0, "the cache must hold exactly the positions before pos0"
            st["k"], st["v"] = torch.cat([st["k"], k]), torch.cat([st["v"], v])
        else:  # the source layer (earlier in this same call) already holds these tokens
            st = states[self.src]
            assert st["k"].shape[0] == pos0 + S
        o = attention(q, st["k"], st["v"], list(range(pos0, pos0 + S)), self.window)
        return bf16(linear_mm(o.reshape(S, -1), self.wo))


# ============================================================== MLP / MoE
def geglu(x, wg, wu, wd):
    """T:Gemma4TextMLP: down(gelu_tanh(gate(x)) * up(x)), every step a bf16 tensor."""
    g, u = bf16(linear_mm(x, wg)), bf16(linear_mm(x, wu))
    return bf16(linear_mm(bf16(bf16(gelu_tanh(g)) * u), wd))


def route(r, scale, proj, per_expert_scale, k, eps):
    """T:Gemma4TextRouter on the layer's residual r, in bf16 tensors:
      n = bf16(bf16(norm(r) * scale) * fp32(H^-0.5))   (unweighted RMSNorm -> bf16)
      probs = bf16(softmax_fp32(bf16(n . proj)))        (F.softmax of a bf16 tensor returns bf16)
      top-k of probs (ties -> lower index);  s = bf16(sum top) (fp32 sum, rounded once)
      w = bf16(top / s);  w = bf16(w * per_expert_scale[idx]).
    Returns (probs, idx [S,k], w [S,k])."""
    n = rms_norm_noscale(r, eps)
    n = bf16(bf16(n * scale) * f32(r.shape[-1] ** -0.5))
    probs = bf16(softmax(bf16(linear_mm(n, proj)), -1))
    idx = topk_desc(probs, k)
    top = probs.gather(-1, idx)
    w = bf16(top / bf16(sum_exact(top)))
    return probs, idx, bf16(w * per_expert_scale[idx])


class MoE:
    """T:Gemma4TextExperts with T:Gemma4TextRouter: fused gate_up_proj [E, 2I, H] (rows [0, I) gate,
    [I, 2I) up), down_proj [E, H, I]; expert e (ascending id) on its rows of x:
    y = bf16(geglu(x) * w); acc = bf16(acc + y) (index_add_ into a bf16 zeros buffer)."""

    def __init__(self, W, p, cfg):
        self.cfg = cfg
        self.proj, self.scale = W(p + ".router.proj.weight"), W(p + ".router.scale")
        self.per_expert_scale = W(p + ".router.per_expert_scale")
        gu, dn = W(p + ".experts.gate_up_proj"), W(p + ".experts.down_proj")
        I = cfg.moe_inter
        self.experts = [(gu[e, :I].contiguous(), gu[e, I:].contiguous(), dn[e].contiguous()) for e in range(cfg.n_experts)]

    def forward(self, r, x):
        """r: the router input (the layer residual); x: the experts' input. Returns acc (bf16)."""
        _, idx, w = route(r, self.scale, self.proj, self.per_expert_scale, self.cfg.top_k, self.cfg.eps)
        acc = torch.zeros_like(x)
        for e in sorted(set(idx.flatten().tolist())):
            rows, slot = torch.where(idx == e)
            y = bf16(geglu(x[rows], *self.experts[e]) * w[rows, slot].unsqueeze(-1))
            acc[rows] = bf16(acc[rows] + y)
        return acc


# ============================================================== decoder layer / model
class DecoderLayer:
    """T:Gemma4TextDecoderLayer:
      h = bf16(h + post_attn_norm(attn(input_norm(h))))
      m = mlp(pre_ffn_norm(h));  MoE: m = bf16(post_ffn_norm_1(m) + post_ffn_norm_2(moe(r=h, x=pre_ffn_norm_2(h))))
      h = bf16(h + post_ffn_norm(m))
      PLE: h = bf16(h + post_ple_norm(proj(bf16(bf16(gelu(gate(h))) * ple_i))))
      h = bf16(h * layer_scalar)"""

    def __init__(self, W, p, cfg, i):
        self.cfg = cfg
        n = lambda name: W(f"{p}.{name}.weight")
        self.in_norm, self.post_attn_norm = n("input_layernorm"), n("post_attention_layernorm")
        self.pre_ffn_norm, self.post_ffn_norm = n("pre_feedforward_layernorm"), n("post_feedforward_layernorm")
        self.attn = Attention(W, p + ".self_attn", cfg, i)
        self.mlp = [n(f"mlp.{k}_proj") for k in ("gate", "up", "down")]
        assert self.mlp[0].shape[0] == cfg.mlp_inter(i), "MLP width (use_double_wide_mlp?)"
        self.moe = None
        if cfg.moe:
            self.moe = MoE(W, p, cfg)
            self.post_ffn_norm_1, self.post_ffn_norm_2 = n("post_feedforward_layernorm_1"), n("post_feedforward_layernorm_2")
            self.pre_ffn_norm_2 = n("pre_feedforward_layernorm_2")
        if cfg.ple_dim:
            self.ple_gate, self.ple_proj = n("per_layer_input_gate"), n("per_layer_projection")
            self.ple_norm = n("post_per_layer_input_norm")
        self.layer_scalar = W(p + ".layer_scalar")   # [1], a bf16 buffer

    def forward(self, h, pos0, states, ple=None):
        eps = self.cfg.eps
        a = self.attn.forward(rms_norm(h, self.in_norm, eps), pos0, states)
        h = bf16(h + rms_norm(a, self.post_attn_norm, eps))
        m = geglu(rms_norm(h, self.pre_ffn_norm, eps), *self.mlp)
        if self.moe is not None:
            m1 = rms_norm(m, self.post_ffn_norm_1, eps)
            m2 = rms_norm(self.moe.forward(h, rms_norm(h, self.pre_ffn_norm_2, eps)), self.post_ffn_norm_2, eps)
            m = bf16(m1 + m2)
        h = bf16(h + rms_norm(m, self.post_ffn_norm, eps))
        if ple is not None:
            t = bf16(gelu_tanh(bf16(linear_mm(h, self.ple_gate))))
            t = bf16(linear_mm(bf16(t * ple), self.ple_proj))
            h = bf16(h + rms_norm(t, self.ple_norm, eps))
        return bf16(h * self.layer_scalar)


class Model:
    def __init__(self, directory, load_mtp=False):   # load_mtp: the common interface; Gemma 4 has no MTP
        self.cfg = cfg = Config.load(directory)
        self.W = W = Weights(directory)
        self.embed = W("embed_tokens.weight")
        self.norm = W("norm.weight")
        if cfg.tie:
            self.head = self.embed      # T: lm_head tied to the (unscaled) embedding weight
        elif W.has("lm_head.weight"):
            self.head = W("lm_head.weight")
        else:
            raise ValueError("tie_word_embeddings is false but the checkpoint has no lm_head.weight")
        # T:Gemma4TextScaledWordEmbedding: embed_scale = torch.tensor(sqrt(H)) (fp32), cast to bf16
        self.embed_scale = bf16(f32(cfg.hidden_size ** 0.5))
        if cfg.ple_dim:
            self.ple_embed = W("embed_tokens_per_layer.weight")                # [Vp, L*P]
            self.ple_embed_scale = bf16(f32(cfg.ple_dim ** 0.5))
            self.ple_model_proj = W("per_layer_model_projection.weight")      # [L*P, H]
            self.ple_proj_norm = W("per_layer_projection_norm.weight")        # [P]
        self.layers = [DecoderLayer(W, f"layers.{i}", cfg, i) for i in range(cfg.n_layers)]

    def new_state(self):
        return {"pos": 0, "layers": [l.attn.new_state() for l in self.layers]}

    def per_layer_inputs(self, ids, e):
        """T:Gemma4TextModel.get_per_layer_inputs + project_per_layer_inputs, e the scaled embedding:
          ple  = bf16(E_pl[ids] * bf16(fp32(sqrt(P))))                        [S, L, P]
          proj = per_layer_projection_norm(bf16(bf16(e . W_plmp) * fp32(H^-0.5)))   [S, L, P]
          out  = bf16(bf16(proj + ple) * fp32(2^-0.5))"""
        c = self.cfg
        S, L, P = ids.numel(), c.n_layers, c.ple_dim
        if int(ids.max()) >= c.ple_vocab:
            raise ValueError("token id >= vocab_size_per_layer_input")
        ple = bf16(self.ple_embed[ids] * self.ple_embed_scale).view(S, L, P)
        proj = bf16(bf16(linear_mm(e, self.ple_model_proj)) * f32(c.hidden_size ** -0.5)).view(S, L, P)
        proj = rms_norm(proj, self.ple_proj_norm, c.eps)
        return bf16(bf16(proj + ple) * f32(2 ** -0.5))

    def hidden(self, ids, state):
        """Final-norm hidden states [S, H] (bf16 values) of ids at positions state['pos'].. ; advances
        the state."""
        ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1)
        pos0 = state["pos"]
        h = bf16(self.embed[ids] * self.embed_scale)
        ple = self.per_layer_inputs(ids, h) if self.cfg.ple_dim else None
        for i, layer in enumerate(self.layers):
            h = layer.forward(h, pos0, state["layers"], None if ple is None else ple[:, i])
        state["pos"] = pos0 + ids.numel()
        return rms_norm(h, self.norm, self.cfg.eps)

    def logits(self, h):
        """lm_head in bf16 (bf16 values, not upcast), then the final logit softcap."""
        lg = bf16(linear_mm(h, self.head))
        return lg if self.cfg.softcap is None else softcap(lg, self.cfg.softcap)

    def forward(self, ids, state):
        """Any number of tokens from state['pos'] (a prefill, a chunk of one, or a decode step):
        logits [vocab] of the last (bf16 values)."""
        return self.logits(self.hidden(ids, state)[-1:])[0]


def run_teacher_forcing(model, ids, prefill):
    """reference.logits' contract: prefill ids[:prefill] from position 0, then one decode step per
    remaining id. Returns [1 + n - prefill, vocab] fp32 logits (bf16 values)."""
    state = model.new_state()
    out = [model.forward(ids[:prefill], state)]
    for p in range(prefill, len(ids)):
        out.append(model.forward(ids[p:p + 1], state))
    return torch.stack(out)
