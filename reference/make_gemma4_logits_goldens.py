"""End-to-end Gemma 4 logits goldens: tests/goldens/gemma4/logits/<case>/ (exact profile) and
tests/goldens/gemma4/logits/fast/<case>/ (fast profile, --numerics fast).

    /usr/bin/python3 -m reference.make_gemma4_logits_goldens --strata build/release/strata [--case NAME ...]
    /usr/bin/python3 -m reference.make_gemma4_logits_goldens --strata build/release/strata --numerics fast
    /usr/bin/python3 -m reference.make_gemma4_logits_goldens --model DIR --case NAME [...]
    /usr/bin/python3 -m reference.make_gemma4_logits_goldens --tiny [--case NAME ...]

Checkpoint per case: `strata make-model --preset P --seed S` (--strata), a given directory (--model,
every selected case runs on it), or reference.gemma4_tiny_checkpoint with preset P and seed S
(--tiny). Then reference.logits' contract (prefill ids[0..K), one teacher-forced decode step per
remaining id) and the same compact record as the other logits goldens
(reference/make_logits_goldens.py): meta.json with the per-row 64-bit hash of the exact float32
logits bytes (`row_hash`), subset.npy (logits at vocab indices i * (vocab // 128), i < 128),
top_ids.npy / top_vals.npy (top-10, ties -> lower id). meta.json's `source` says which checkpoint
made the case. The fast profile's goldens use the same cases and record, meta.json with `numerics`.

Every case is 150 tokens: the 32-token sliding window of the tiny presets is crossed four times,
with the prefill K = 1 (every token decoded), K in the middle, and K = n (one row: the prefill alone).
"""

from . import gemma4 as G
from .bf16_logits_goldens import Goldens
from .gemma4_tiny_checkpoint import make_tiny

CASES = {
    "tiny_s1_n150_k1": ("gemma4-tiny", 1, 111, 150, 1),
    "tiny_s2_n150_k75": ("gemma4-tiny", 2, 222, 150, 75),
    "tiny_s3_n150_k150": ("gemma4-tiny", 3, 333, 150, 150),
    "kv_tiny_s4_n150_k1": ("gemma4-kv-tiny", 4, 444, 150, 1),
    "kv_tiny_s5_n150_k75": ("gemma4-kv-tiny", 5, 555, 150, 75),
    "kv_tiny_s6_n150_k150": ("gemma4-kv-tiny", 6, 666, 150, 150),
    "e_tiny_s7_n150_k1": ("gemma4-e-tiny", 7, 777, 150, 1),
    "e_tiny_s8_n150_k75": ("gemma4-e-tiny", 8, 888, 150, 75),
    "moe_tiny_s9_n150_k1": ("gemma4-moe-tiny", 9, 999, 150, 1),
    "moe_tiny_s10_n150_k75": ("gemma4-moe-tiny", 10, 1010, 150, 75),
}


def _tiny(mdir, seed, preset):
    make_tiny(mdir, seed, preset)
    return f"reference.gemma4_tiny_checkpoint --preset {preset} --seed {seed}"


GOLDENS = Goldens("gemma4", G, CASES, _tiny, what=", after the final logit softcap")
ROOT, case_model, case_logits, make_case = GOLDENS.root, GOLDENS.case_model, GOLDENS.case_logits, GOLDENS.make_case


def main(argv=None):
    GOLDENS.main(argv, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
