"""What each metric name means for the analysis: its direction, whether it is bounded to [0, 1], its scale.

The score table stores metric names as lighteval writes them (`acc`, `acc_norm`, `f1_yor`,
`exact_match_swa_prefix`, `bits_per_byte`, ...). The statistics need to know which way is better
(perplexities fall as a model learns) and which values are legal (accuracies live in [0, 1]). The aggregation
rescales every task between its random baseline and a perfect score, so it needs the perfect score too, and whether
the metric is a perplexity (rescaled on its logarithm, where it is a bits-per-unit quantity like the others).
A metric measured per byte has a chance level that needs no model and no task: the uniform distribution over
the 256 byte values (`chance`, docs/statistics.md "A random baseline for bits per byte").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class MetricInfo:
    """Semantics of one metric name."""

    name: str
    higher_is_better: bool
    bounded: bool  # scores must lie in [0, 1]
    perfect: float = 1.0  # the best score a model can reach (0 bits per byte, perplexity 1, accuracy 1, BLEU 100)
    log_scale: bool = False  # a perplexity: rescaled on its logarithm (bits per unit)
    chance: float | None = None  # the score of a uniform byte model, for a per-byte metric; else None


UNIFORM_BYTE_BITS = 8.0
"""Bits per byte of a model uniform over the 256 byte values: what a model that knows nothing of the text scores."""
_SCALES: dict[str, tuple[float, bool, float | None]] = {  # metric -> perfect, log scale, chance (per-byte metrics)
    "bits_per_byte": (0.0, False, UNIFORM_BYTE_BITS),
    "byte_perplexity": (1.0, True, 2.0**UNIFORM_BYTE_BITS),
    "word_perplexity": (1.0, True, None),
    "perplexity": (1.0, True, None),
    "ppl": (1.0, True, None),
    "longppl": (1.0, True, None),
    "log2_longppl": (0.0, False, None),
    "nll": (0.0, False, None),
    "bleu": (100.0, False, None),
    "chrf": (100.0, False, None),
    "chrf++": (100.0, False, None),
    "ter_inverse": (100.0, False, None),
}


# Ordered: the first pattern that matches wins. Anchored at both ends.
_PATTERNS: tuple[tuple[str, bool, bool], ...] = (
    (r"acc(_norm(_token|_pmi|_char)?)?", True, True),
    (r"(f1|f1_score)(_[a-z]{2,3})?", True, True),
    (r"f1_macro", True, True),  # corpus macro-F1 of the argmax choice (finetasks_afr.benchmarks.afrihate)
    (r"(exact_match|em|quasi_exact_match|prefix_match)(_[a-z]{2,3})?(_(prefix|suffix|full))?", True, True),
    (r"(bleu|chrf|chrf\+\+|ter_inverse)", True, False),
    (r"(bits_per_byte|byte_perplexity|word_perplexity|perplexity|ppl|longppl|log2_longppl|nll)", False, False),
)


@cache
def metric_info(name: str) -> MetricInfo | None:
    """Semantics of `name`, or None when the analysis does not know the metric."""
    for pattern, higher, bounded in _PATTERNS:
        if re.fullmatch(pattern, name):
            perfect, log_scale, chance = _SCALES.get(name, (1.0, False, None))
            return MetricInfo(name, higher, bounded, perfect, log_scale, chance)
    return None


def known_metric_help() -> str:
    """One line listing the accepted metric names, for error messages."""
    return (
        "known metrics: acc, acc_norm, acc_norm_token, acc_norm_pmi, f1[_<lang>], f1_macro, "
        "exact_match[_<lang>][_prefix|_suffix|_full], bleu, chrf, and the lower-is-better "
        "bits_per_byte, byte_perplexity, word_perplexity, perplexity, ppl, longppl, log2_longppl, nll"
    )


def chance_levels(metrics: Iterable[str]) -> dict[str, float]:
    """metric -> its chance level, for the given metrics that have one."""
    return {m: info.chance for m in metrics if (info := metric_info(m)) is not None and info.chance is not None}
