"""Exact number formats and the quantization kernels of DeepSeek's inference/kernel.py.

All functions take and return torch.float32 tensors (values that the official code keeps
in bf16 are float32 tensors holding bf16-representable values). torch 1.13 has no float8 /
float4 dtypes, so e4m3 / e8m0 / e2m1 are encoded and decoded here by hand:

  bf16   : round-to-nearest-even of the fp32 value (torch .to(bfloat16)).
  e4m3fn : 1 sign, 4 exponent (bias 7), 3 mantissa; subnormal step 2^-9; max 448; no inf;
           code 0x7f/0xff = NaN.  Rounding RNE.
  e8m0   : scale byte b -> 2^(b-127); b = 255 is NaN.
  e2m1   : 1 sign, 2 exponent (bias 1), 1 mantissa: magnitudes 0,0.5,1,1.5,2,3,4,6. RNE.
"""
import numpy as np
import torch

F32_INV448 = torch.tensor(1.0 / 448.0, dtype=torch.float32)  # kernel: fp8_max_inv as fp32
F32_INV6 = torch.tensor(1.0 / 6.0, dtype=torch.float32)      # kernel: fp4_max_inv as fp32
E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


# ---------------------------------------------------------------- bf16
def bf16(x):
    """Round fp32 -> bf16 (RNE) and return as fp32."""
    return x.float().to(torch.bfloat16).to(torch.float32)


def bf16_bits(x):
    """fp32 tensor -> uint16 NumPy array of the RNE-rounded bf16 bit patterns."""
    return x.float().to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def bf16_from_bits(u16):
    """uint16 NumPy array of bf16 bits -> fp32 torch tensor (exact)."""
    return torch.from_numpy((np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).copy())


# ---------------------------------------------------------------- generic minifloat RNE
def _round_minifloat(x, mbits, emin, maxval):
    """Round fp32 x to the nearest value of a minifloat with `mbits` mantissa bits, minimum normal
    exponent `emin` (subnormals below it), ties to even, saturating at maxval (inputs are clamped
    by the callers, so saturation never changes a value that the real cast would not)."""
    a = x.abs()
    _, e = torch.frexp(a)                      # a = m * 2^e, m in [0.5, 1)
    exp = (e - 1).clamp(min=emin)              # unbiased exponent of the binade (or subnormal)
    step = torch.ldexp(torch.ones_like(a), (exp - mbits))
    q = torch.round(a / step) * step           # torch.round = half to even; a/step is exact
    q = torch.minimum(q, torch.tensor(maxval))
    return torch.where(x < 0, -q, q)


def round_e4m3(x):
    """RNE to float8_e4m3fn (|x| must already be <= 448)."""
    return _round_minifloat(x, 3, -6, 448.0)


def round_e2m1(x):
    """RNE to float4_e2m1fn (|x| must already be <= 6)."""
    return _round_minifloat(x, 1, 0, 6.0)


# ---------------------------------------------------------------- e4m3 codes
def _e4m3_lut():
    v = np.zeros(256, dtype=np.float32)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            val = np.nan
        elif e == 0:
            val = m * 2.0 ** -9
        else:
            val = (1 + m / 8.0) * 2.0 ** (e - 7)
        v[c] = -val if s else val
    return torch.from_numpy(v)


E4M3_LUT = _e4m3_lut()


def e4m3_decode(codes):
    """uint8 codes (NumPy or torch) -> fp32 values."""
    c = torch.from_numpy(np.asarray(codes, dtype=np.uint8).astype(np.int64)) if not torch.is_tensor(codes) else codes.long()
    return E4M3_LUT[c]


def e4m3_encode(v):
    """fp32 values that are exactly e4m3 (e.g. round_e4m3 output) -> uint8 NumPy codes."""
    v = v.float()
    a = v.abs()
    _, e = torch.frexp(a)
    exp = e - 1
    sub = a < 2.0 ** -6
    mant_sub = torch.round(a / 2.0 ** -9)
    mant_norm = torch.round((torch.ldexp(a, -exp) - 1.0) * 8.0)
    code = torch.where(sub, mant_sub, (exp + 7).float() * 8 + mant_norm)
    code = code.long() | ((v < 0) | ((v == 0) & (torch.signbit(v)))).long() << 7
    back = E4M3_LUT[code]
    assert torch.equal(back[~torch.isnan(v)], v[~torch.isnan(v)]), "value not representable in e4m3"
    return code.numpy().astype(np.uint8)


# ---------------------------------------------------------------- e8m0 scales
def e8m0_decode(codes):
    c = torch.from_numpy(np.asarray(codes, dtype=np.uint8).astype(np.int32)) if not torch.is_tensor(codes) else codes.int()
    out = torch.ldexp(torch.ones(c.shape), c - 127)
    return torch.where(c == 255, torch.tensor(float("nan")), out)


def e8m0_encode(s):
    """power-of-two fp32 scales -> uint8 codes (exponent + 127)."""
    m, e = torch.frexp(s.float())
    assert torch.all(m == 0.5), "scale is not a power of two"
    return (e - 1 + 127).numpy().astype(np.uint8)


# ---------------------------------------------------------------- e2m1 codes
def e2m1_encode(v):
    """fp32 values exactly on the e2m1 grid -> int codes 0..15 (bit 3 = sign)."""
    a = v.abs()
    idx = (a.unsqueeze(-1) == E2M1_VALUES).float().argmax(-1)
    assert torch.all(E2M1_VALUES[idx] == a), "value not representable in e2m1"
    return idx | ((v < 0).long() << 3)


def e2m1_decode(codes):
    c = codes.long()
    mag = E2M1_VALUES[c & 7]
    return torch.where((c & 8) != 0, -mag, mag)


def fp4_pack(codes):
    """[..., n] codes 0..15 -> [..., n/2] int8 bytes; low nibble = even element."""
    c = codes.long()
    b = c[..., 0::2] | (c[..., 1::2] << 4)
    return b.numpy().astype(np.uint8).view(np.int8)


def fp4_unpack(packed):
    """[..., n/2] int8/uint8 bytes -> [..., n] codes."""
    b = torch.from_numpy(np.asarray(packed).view(np.uint8).astype(np.int64))
    return torch.stack([b & 15, b >> 4], dim=-1).flatten(-2)


# ---------------------------------------------------------------- power-of-two scale (kernel bit trick)
def pow2_ceil(t):
    """kernel.py fast_round_scale: 2^ceil(log2 t) from the fp32 bits of t (t normal, > 0):
    exponent field - 127, plus one if the mantissa bits are non-zero."""
    bits = t.float().contiguous().view(torch.int32)
    e = ((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0).int()
    return ((e + 127) << 23).view(torch.float32)


# ---------------------------------------------------------------- activation quantization
def act_quant(x, block=128):
    """kernel.py act_quant with scale_fmt='ue8m0' (round_scale=True), per `block` elements of the
    last dim.  amax = max(|x|, 1e-4);  s = 2^ceil(log2(amax * fp32(1/448)));
    q = e4m3_RNE(clamp(x / s, -448, 448)).  Returns (q, s) with s of shape [..., n/block, 1]."""
    g = x.float().unflatten(-1, (-1, block))
    amax = g.abs().amax(-1, keepdim=True).clamp_min(1e-4)
    s = pow2_ceil(amax * F32_INV448)
    q = round_e4m3((g / s).clamp(-448.0, 448.0))
    return q, s


def act_quant_sim(x, block=128):
    """inplace=True variant (the later revision really rounds to e4m3): returns q * s (exact in bf16)."""
    q, s = act_quant(x, block)
    return (q * s).flatten(-2)


def fp4_act_quant(x, block=32):
    """kernel.py fp4_act_quant: amax = max(|x|, 6 * 2^-126); s = 2^ceil(log2(amax * fp32(1/6)));
    q = e2m1_RNE(clamp(x / s, -6, 6)).  Returns (q, s)."""
    g = x.float().unflatten(-1, (-1, block))
    amax = g.abs().amax(-1, keepdim=True).clamp_min(6 * 2.0 ** -126)
    s = pow2_ceil(amax * F32_INV6)
    q = round_e2m1((g / s).clamp(-6.0, 6.0))
    return q, s


def fp4_act_quant_sim(x, block=32):
    """inplace=True variant: q * s (exact in bf16)."""
    q, s = fp4_act_quant(x, block)
    return (q * s).flatten(-2)


# ---------------------------------------------------------------- weights
def dequant_fp8_weight(codes, scale_codes, block=128):
    """F8_E4M3 [out, in] x F8_E8M0 [ceil(out/128), ceil(in/128)] -> fp32 [out, in] (exact)."""
    w = e4m3_decode(codes)
    s = e8m0_decode(scale_codes)
    out, inn = w.shape
    s = s.repeat_interleave(block, 0)[:out].repeat_interleave(block, 1)[:, :inn]
    return w * s


def dequant_fp4_weight(packed, scale_codes, block=32):
    """I8 [out, in/2] (low nibble = even column) x F8_E8M0 [out, in/32] -> fp32 [out, in] (exact)."""
    w = e2m1_decode(fp4_unpack(packed))
    s = e8m0_decode(scale_codes).repeat_interleave(block, 1)
    return w * s


def quant_fp8_weight(w, block=128):
    """Real 128x128 block quantization with UE8M0 scales (amax-based, s = 2^ceil(log2(amax/448))).
    Returns (uint8 codes [out,in], uint8 scale codes [ceil(out/128), ceil(in/128)])."""
    out, inn = w.shape
    po, pi = -out % block, -inn % block
    wp = torch.nn.functional.pad(w.float(), (0, pi, 0, po))
    g = wp.view(wp.shape[0] // block, block, wp.shape[1] // block, block).permute(0, 2, 1, 3)
    amax = g.abs().amax((-1, -2), keepdim=True).clamp_min(1e-4)
    s = pow2_ceil(amax * F32_INV448)
    q = round_e4m3((g / s).clamp(-448.0, 448.0))
    q = q.permute(0, 2, 1, 3).reshape(wp.shape)[:out, :inn]
    return e4m3_encode(q), e8m0_encode(s[..., 0, 0])


def quant_fp4_weight(w, block=32):
    """Real MXFP4 quantization, per-32 power-of-two scales. Returns (int8 packed, uint8 scales)."""
    q, s = fp4_act_quant(w, block)
    return fp4_pack(e2m1_encode(q.flatten(-2))), e8m0_encode(s[..., 0])


# ---------------------------------------------------------------- Hadamard
def hadamard_matrix(n):
    """Sylvester (natural-order) Hadamard matrix H_n, entries +-1, n a power of two."""
    h = torch.ones(1, 1)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def hadamard(x):
    """fast_hadamard_transform(x, scale=n^-0.5) on bf16 input: computed in fp32, output rounded to bf16."""
    n = x.shape[-1]
    return bf16((x.float() @ hadamard_matrix(n)) * (n ** -0.5))
