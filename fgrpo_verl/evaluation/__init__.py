"""Unbiased pass@k evaluation: estimator, uncertainty, and the generate -> score -> report pipeline.

The math (:mod:`.passk`, :mod:`.stats`) imports only numpy; the stages import their heavy
dependencies (vLLM, transformers, matplotlib, the reward functions) lazily.
"""

from fgrpo_verl.evaluation.passk import default_ks, mean_pass_at_k, pass_at_k, pass_at_k_curve
from fgrpo_verl.evaluation.stats import PairedComparison, bootstrap_ci, paired_subsample_test

__all__ = [
    "PairedComparison",
    "bootstrap_ci",
    "default_ks",
    "mean_pass_at_k",
    "paired_subsample_test",
    "pass_at_k",
    "pass_at_k_curve",
]
