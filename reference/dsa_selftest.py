"""Self-test of the DSA reference (DeepSeek-V3.2 / GLM-5; needs torch; run by hand, not in CI):

    python3 -m reference.dsa_selftest

On the tiny random checkpoints of reference/dsa_tiny_checkpoint.py (deepseek-v3.2-tiny, glm5-tiny):
* config parsing (GLM-5 indexer schedules by list, pattern and freq/offset; the mscale rule);
* cache entry sizes: 656 B latent / 132 B index key at kv_lora 512, rope 64, head 128, and the
  tiny models' own sizes by formula, from the bytes the state holds; the byte layout round trips;
* bit for bit (max |diff| == 0): prefill of n tokens == prefill K + token-by-token decode ==
  chunked prefill, n = 150 and 300 (index_topk 64: the indexer really selects), logits too;
  the MTP layer: prefill == prefix + one row at a time;
* GLM-5 shared layers use the previous full layer's selection (and have no index cache);
* swapping the indexer's RoPE layout changes the selection on a long sequence (the flag matters);
* the absorbed MLA (with its roundings) against a plain non-absorbed fp64 formulation, and the
  absorption algebra in fp64.
"""
import argparse
import tempfile
import time

import numpy as np
import torch

from . import dsa
from .dsa_tiny_checkpoint import config as preset_config
from .dsa_tiny_checkpoint import make_tiny
from .formats import E4M3_LUT, bf16

FAILS = []
PRESETS = ("deepseek-v3.2-tiny", "glm5-tiny")


def check(name, ok, detail=""):
    print(f"[{'ok' if ok else 'FAIL'}] {name} {detail}", flush=True)
    if not ok:
        FAILS.append(name)


def maxdiff(a, b):
    return float((a.double() - b.double()).abs().max())


# ------------------------------------------------------------------ config
def test_config():
    c = dsa.Config(preset_config("glm5-tiny"))
    check("glm5-tiny indexer schedule (freq 2, offset 1)", c.indexer_types == ["full", "shared", "full", "shared"],
          str(c.indexer_types))
    d = preset_config("glm5-tiny")
    for k in ("index_topk_freq", "index_skip_topk_offset"):
        del d[k]
    check("glm_moe_dsa default schedule (freq 1, offset 2): every layer full",
          dsa.Config(d).indexer_types == ["full"] * 4)
    d["index_topk_pattern"] = "FSFF"
    check("index_topk_pattern FSFF", dsa.Config(d).indexer_types == ["full", "shared", "full", "full"])
    d["indexer_types"] = ["full", "full", "shared", "shared"]
    check("indexer_types list", dsa.Config(d).indexer_types == ["full", "full", "shared", "shared"])
    d["indexer_types"] = ["shared", "full", "full", "full"]
    try:
        dsa.Config(d)
        check("layer 0 shared is rejected", False)
    except ValueError:
        check("layer 0 shared is rejected", True)
    v = dsa.Config(preset_config("deepseek-v3.2-tiny"))
    m = 0.1 * 1.0 * np.log(40) + 1
    check("deepseek-v3.2-tiny softmax scale = fp32(128^-0.5 m^2)",
          v.softmax_scale == float(np.float32(128 ** -0.5 * m * m)) and not v.indexer_rope_interleaved and c.indexer_rope_interleaved,
          f"(m = {m:.6f}, scale {v.softmax_scale!r}; glm5-tiny {c.softmax_scale!r})")
    d = preset_config("deepseek-v3.2-tiny")
    d["rope_scaling"]["mscale"] = 0.707
    try:
        dsa.Config(d)
        check("mscale != mscale_all_dim is rejected", False)
    except ValueError:
        check("mscale != mscale_all_dim is rejected", True)


# ------------------------------------------------------------------ cache entries
def test_entries():
    g = torch.Generator().manual_seed(1)
    lat = bf16(torch.randn(3, 512, generator=g) * torch.logspace(-2, 1, 4).repeat_interleave(128))
    kpe = bf16(torch.randn(3, 64, generator=g))
    codes, scales = dsa.quantize_latent(lat)
    e = dsa.latent_entry_bytes(codes, scales, kpe)
    kc, ks = dsa.quantize_latent(bf16(torch.randn(3, 128, generator=g)))
    ie = dsa.index_entry_bytes(kc, ks.reshape(-1))
    check("latent cache entry at kv_lora 512, rope 64: 656 B", e.shape == (3, 656), str(e.shape))
    check("index-key cache entry at head 128: 132 B", ie.shape == (3, 132), str(ie.shape))
    back_codes = torch.from_numpy(e[:, :512].copy())
    back_scales = torch.from_numpy(e[:, 512:528].copy().view("<f4"))
    back_kpe = torch.from_numpy(e[:, 528:].copy().view(np.int16)).view(torch.bfloat16).float()
    dq = dsa.dequant_codes(back_codes, back_scales)
    rel = float(((dq - lat).abs().max(-1).values / lat.abs().max(-1).values).max())
    check("latent entry bytes round trip (codes | fp32 scales | bf16 k_pe)",
          torch.equal(back_kpe, kpe) and torch.equal(dq, dsa.dequant_codes(codes, scales)) and rel <= 2 ** -4,
          f"(max |dq - latent| / max |latent| per row {rel:.3g})")


def test_cache_sizes(m, st, name):
    c = m.cfg
    lat_formula = c.kv_lora_rank + 4 * (c.kv_lora_rank // 128) + 2 * c.rope_dim
    sizes = [dsa.cache_bytes_per_token(s) for s in st["layers"]]
    want = [(lat_formula, 132 if t == "full" else 0) for t in c.indexer_types]
    n = st["pos"]
    held = [(s["codes"].shape[0], s["kc"].shape[0] if "kc" in s else 0) for s in st["layers"]]
    ok = sizes == want and all(a == n and (b == n or t == "shared") for (a, b), t in zip(held, c.indexer_types))
    e = dsa.latent_entry_bytes(st["layers"][0]["codes"], st["layers"][0]["scales"], st["layers"][0]["k_pe"])
    ok &= e.shape == (n, lat_formula)
    check(f"{name}: cache bytes per token (latent kv_lora + 4 kv_lora/128 + 2 rope = {lat_formula}, index 132)",
          ok, f"(per layer {sizes}, entries held {held[0]} of {n} tokens)")


# ------------------------------------------------------------------ whole model
def hidden_decode(m, ids, K, st=None):
    """Final-norm rows of ids: prefill ids[:K], then one token at a time."""
    st = st or m.new_state()
    rows = [m.hidden(ids[:K], st)]
    for p in range(K, len(ids)):
        rows.append(m.hidden(ids[p:p + 1], st))
    return torch.cat(rows), st


def test_model(d, name):
    t0 = time.time()
    m = dsa.Model(d)
    c = m.cfg
    V = c.vocab_size
    ids = torch.randint(2, V, (300,), generator=torch.Generator().manual_seed(7)).tolist()
    st = m.new_state()
    h_all = m.hidden(ids, st)
    sel0 = st["selections"][0]
    cnt = sel0.sum(-1)
    sparse_rows = int((cnt < torch.arange(1, 301)).sum())
    check(f"{name}: the indexer selects (300 tokens, top-{c.index_topk})",
          sparse_rows == 300 - c.index_topk and int(cnt.max()) == c.index_topk,
          f"({sparse_rows} rows attend to a strict subset; prefill 300 in {time.time() - t0:.1f} s with load)")
    test_cache_sizes(m, st, name)
    for n, K in ((300, 150), (150, 1), (300, 299)):
        t = time.time()
        h, _ = hidden_decode(m, ids[:n], K)
        diff = maxdiff(h, h_all[:n])
        check(f"{name}: prefill {K} + decode == prefill {n} all at once (final-norm rows)", diff == 0.0,
              f"(max |diff| {diff:.3g}, {time.time() - t:.1f} s)")
    for split in ((37, 64, 49, 150), (1, 127, 22), (64, 64, 64, 64, 44), (200, 100)):
        t = time.time()
        st2, hs, p = m.new_state(), [], 0
        for s in split:
            hs.append(m.hidden(ids[p:p + s], st2))
            p += s
        diff = maxdiff(torch.cat(hs), h_all[:p])
        same_cache = all(torch.equal(a[k], b[k]) for a, b in zip(st2["layers"], st["layers"]) for k in a) if p == 300 else True
        check(f"{name}: chunked prefill {split} == all at once", diff == 0.0 and same_cache,
              f"(max |diff| {diff:.3g}{', caches identical' if p == 300 else ''}, {time.time() - t:.1f} s)")
    # the logits contract itself (run_teacher_forcing) against the head on the all-at-once rows
    t = time.time()
    lg = dsa.run_teacher_forcing(m, ids[:200], 170)
    ref = m.logits(h_all[169:200])
    diff = maxdiff(lg, ref)
    check(f"{name}: run_teacher_forcing (prefill 170, 30 decode steps) logits == prefill-200 rows' logits",
          diff == 0.0 and bool(torch.isfinite(lg).all()),
          f"(max |diff| {diff:.3g}, max |logit| {float(ref.abs().max()):.3g}, {time.time() - t:.1f} s)")
    # MTP: rows t = 0..n-2 pair h_t with ids[t+1]
    t = time.time()
    n = 300
    s1, s2 = m.new_state(), m.new_state()
    la, a = m.mtp_forward(h_all[:n - 1], ids[1:n], s1)
    _, b = m.mtp_forward(h_all[:n - 40], ids[1:n - 39], s2)
    rows = [b]
    for p in range(n - 40, n - 1):
        lb, r = m.mtp_forward(h_all[p:p + 1], ids[p + 1:p + 2], s2)
        rows.append(r)
    diff = max(maxdiff(torch.cat(rows), a), maxdiff(la, lb))
    own = d is not None and m.W.has(f"model.layers.{c.n_layers}.embed_tokens.weight")
    check(f"{name}: MTP prefill {n - 40} + one row at a time == prefill {n - 1} rows (own indexer, top-{c.index_topk})",
          diff == 0.0 and bool(torch.isfinite(la).all()) and int(s1["mtp"]["kc"].shape[0]) == n - 1,
          f"(max |diff| {diff:.3g}; {'own' if own else 'main'} embedding/head; {time.time() - t:.1f} s)")
    return m, ids, h_all, st


def test_shared(m, ids, st, name):
    c = m.cfg
    sels = st["selections"]
    full = [i for i, t in enumerate(c.indexer_types) if t == "full"]
    ok, detail = True, []
    for i, t in enumerate(c.indexer_types):
        if t == "shared":
            j = max(f for f in full if f < i)
            ok &= torch.equal(sels[i], sels[j]) and "kc" not in st["layers"][i]
            detail.append(f"{i}<-{j}")
    differ = int((sels[full[0]] != sels[full[1]]).any(-1).sum()) if len(full) > 1 else 0
    check(f"{name}: shared layers use the previous full layer's selection, hold no index cache",
          ok, f"({', '.join(detail)}; full layers {full[0]} and {full[1] if len(full) > 1 else '-'} differ on {differ} of 300 rows)")
    # and in decode: one more token
    st2 = m.new_state()
    m.hidden(ids[:299], st2)
    m.hidden(ids[299:300], st2)
    s = st2["selections"]
    ok = all(torch.equal(s[i], s[max(f for f in full if f < i)]) for i, t in enumerate(c.indexer_types) if t == "shared")
    ok &= all(torch.equal(s[i], sels[i][-1:]) for i in range(len(s)))
    check(f"{name}: decode step: shared selection == previous full layer's, every layer's == the prefill's last row", ok)


def test_rope_swap(m, ids, st, name):
    c = m.cfg
    c.indexer_rope_interleaved = not c.indexer_rope_interleaved
    try:
        st2 = m.new_state()
        m.hidden(ids, st2)
    finally:
        c.indexer_rope_interleaved = not c.indexer_rope_interleaved
    a, b = st["selections"][0], st2["selections"][0]
    rows = int((a != b).any(-1).sum())
    keys = float((a != b).sum(-1).float().max()) / 2
    check(f"{name}: indexer RoPE layout swapped -> the selection changes (layer 0, 300 tokens)", rows > 0,
          f"({rows} of {300 - c.index_topk} sparse rows differ, up to {keys:.0f} of {c.index_topk} keys)")


# ------------------------------------------------------------------ absorbed vs plain MLA
def mla_plain_f64(q_nope, q_pe, latent_dq, k_pe, sel, w_uk, w_uv, scale):
    """Non-absorbed MLA in fp64: per head k_nope = W_UK latent, v = W_UV latent; softmax over the selected keys."""
    q_nope, q_pe, lat, k_pe, w_uk, w_uv = (t.double() for t in (q_nope, q_pe, latent_dq, k_pe, w_uk, w_uv))
    k_nope = torch.einsum("hdc,nc->nhd", w_uk, lat)
    v = torch.einsum("hjc,nc->nhj", w_uv, lat)
    z = (torch.einsum("shd,nhd->shn", q_nope, k_nope) + torch.einsum("shr,nr->shn", q_pe, k_pe)) * scale
    z = z.masked_fill(~sel.unsqueeze(1), float("-inf"))
    return torch.einsum("shn,nhj->shj", torch.softmax(z, -1), v)


def mla_absorbed_f64(q_nope, q_pe, latent_dq, k_pe, sel, w_uk, w_uv, scale):
    q_nope, q_pe, lat, k_pe, w_uk, w_uv = (t.double() for t in (q_nope, q_pe, latent_dq, k_pe, w_uk, w_uv))
    q_lat = torch.einsum("shd,hdc->shc", q_nope, w_uk)
    z = (torch.einsum("shc,nc->shn", q_lat, lat) + torch.einsum("shr,nr->shn", q_pe, k_pe)) * scale
    z = z.masked_fill(~sel.unsqueeze(1), float("-inf"))
    return torch.einsum("shc,hjc->shj", torch.einsum("shn,nc->shc", torch.softmax(z, -1), lat), w_uv)


def test_mla(m, ids, name):
    c = m.cfg
    worst = []
    for li in (0, len(m.layers) - 1):
        L = m.layers[li]
        st = m.new_state()
        h, sel = m.embed[torch.tensor(ids)], None
        for k in range(li):
            h, sel = m.layers[k].forward(h, 0, st["layers"][k], sel)
        x = dsa.rms_norm(h, L.in_norm, c.eps)
        cos, sin = dsa.rope_table(c.freqs, range(len(ids)))
        qr, q_nope, q_pe = L.attn.queries(x, cos, sin)
        lat, k_pe = L.attn.latent(x, cos, sin)
        lat_dq = dsa.dequant_codes(*dsa.quantize_latent(lat))
        if L.indexer is not None:
            kc, ks, _ = L.indexer.keys(x, cos, sin)
            qc, w, _ = L.indexer.queries(x, qr, cos, sin)
            sel = dsa.select_topk(dsa.index_scores(qc, w, E4M3_LUT[kc.long()], ks), 0, c.index_topk)
        # a shared layer: the selection carried from the previous full layer
        args = (q_nope, q_pe, lat_dq, k_pe, sel, L.attn.w_uk, L.attn.w_uv, c.softmax_scale)
        o, _ = dsa.mla_absorbed(*args)
        plain = mla_plain_f64(*args)
        alg = float((mla_absorbed_f64(*args) - plain).abs().max())
        d = float((o.double() - plain).abs().max())
        rel = d / float(plain.abs().max())
        worst.append((d, rel, alg, float(plain.abs().max())))
    d, rel, alg, mx = max(worst)
    check(f"{name}: absorbed MLA (reference, bf16 roundings) vs plain non-absorbed fp64, layers 0 and last, 300 tokens",
          rel < 2e-2 and max(w[2] for w in worst) < 1e-12,
          f"(max |diff| {d:.3g} on max |o| {mx:.3g}: relative {rel:.2e}; absorbed fp64 vs plain fp64 {max(w[2] for w in worst):.2e})")
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.parse_args()
    torch.set_grad_enabled(False)
    t0 = time.time()
    test_config()
    test_entries()
    mla = {}
    for preset in PRESETS:
        with tempfile.TemporaryDirectory() as d:
            t = time.time()
            make_tiny(d, seed=0, preset=preset)
            print(f"[info] {preset}: checkpoint written in {time.time() - t:.1f} s", flush=True)
            m, ids, h_all, st = test_model(d, preset)
            if m.cfg.glm:
                test_shared(m, ids, st, preset)
            test_rope_swap(m, ids, st, preset)
            mla[preset] = test_mla(m, ids, preset)
    print(f"[info] absorbed vs non-absorbed MLA, max |diff|: " + ", ".join(f"{k} {v:.3g}" for k, v in mla.items()))
    print(f"[info] total {time.time() - t0:.0f} s")
    print("FAILED: " + ", ".join(FAILS) if FAILS else "all checks passed")
    raise SystemExit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
