"""End-to-end Qwen3.5 logits goldens: tests/goldens/qwen3_5/logits/<case>/ (exact profile) and
tests/goldens/qwen3_5/logits/fast/<case>/ (fast profile, --numerics fast).

    /usr/bin/python3 -m reference.make_qwen3_5_logits_goldens --strata build/release/strata [--case NAME ...]
    /usr/bin/python3 -m reference.make_qwen3_5_logits_goldens --strata build/release/strata --numerics fast
    /usr/bin/python3 -m reference.make_qwen3_5_logits_goldens --model DIR --case NAME [...]
    /usr/bin/python3 -m reference.make_qwen3_5_logits_goldens --tiny [--case NAME ...]

Checkpoint per case: `strata make-model --preset P --seed S` (--strata), a given directory (--model,
every selected case runs on it), or reference.qwen3_5_tiny_checkpoint with seed S (--tiny; the MoE
variant for the MoE presets). Then reference.logits' contract (prefill ids[0..K), one teacher-forced
decode step per remaining id) and the same compact record as the DeepSeek-V4 goldens
(reference/make_logits_goldens.py): meta.json with the per-row 64-bit hash of the exact float32
logits bytes (`row_hash`), subset.npy (logits at vocab indices i * (vocab // 128), i < 128),
top_ids.npy / top_vals.npy (top-10, ties -> lower id). meta.json's `source` says which checkpoint
made the case; rerun with --strata once the presets exist.

The fast profile's goldens (the weight products in the order of src/kernels/fast_linear.h) use
the same cases and record, meta.json with `numerics`; their tolerance: reference/fast_spread.py.

Every case is 150 tokens: it crosses the 64-token chunk and a 128-token block boundary, with the
prefill K = 1 (every token decoded), K in the middle, and K = n (one row: the prefill path alone).
"""

from . import qwen3_5 as Q
from .bf16_logits_goldens import Goldens
from .qwen3_5_tiny_checkpoint import make_tiny

MOE_PRESETS = ("qwen3.5-moe-tiny",)

CASES = {
    "tiny_s1_n150_k1": ("qwen3.5-tiny", 1, 111, 150, 1),
    "tiny_s2_n150_k75": ("qwen3.5-tiny", 2, 222, 150, 75),
    "tiny_s3_n150_k150": ("qwen3.5-tiny", 3, 333, 150, 150),
    "moe_tiny_s4_n150_k1": ("qwen3.5-moe-tiny", 4, 444, 150, 1),
    "moe_tiny_s5_n150_k75": ("qwen3.5-moe-tiny", 5, 555, 150, 75),
    "moe_tiny_s6_n150_k150": ("qwen3.5-moe-tiny", 6, 666, 150, 150),
}


def _tiny(mdir, seed, preset):
    make_tiny(mdir, seed, moe=preset in MOE_PRESETS)
    return f"reference.qwen3_5_tiny_checkpoint seed {seed}{' --moe' if preset in MOE_PRESETS else ''}"


GOLDENS = Goldens("qwen3_5", Q, CASES, _tiny)
ROOT, case_model, case_logits, make_case = GOLDENS.root, GOLDENS.case_model, GOLDENS.case_logits, GOLDENS.make_case


def main(argv=None):
    GOLDENS.main(argv, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
