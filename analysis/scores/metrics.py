"""What each metric name means for the analysis: its direction, whether it is bounded to [0, 1].

The score table stores metric names as lighteval writes them (`acc`, `acc_norm`, `f1_yor`,
`exact_match_swa_prefix`, `bits_per_byte`, ...). The statistics need to know which way is better
(perplexities fall as a model learns) and which values are legal (accuracies live in [0, 1]).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class MetricInfo:
    """Semantics of one metric name."""

    name: str
    higher_is_better: bool
    bounded: bool  # scores must lie in [0, 1]


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
            return MetricInfo(name=name, higher_is_better=higher, bounded=bounded)
    return None


def known_metric_help() -> str:
    """One line listing the accepted metric names, for error messages."""
    return (
        "known metrics: acc, acc_norm, acc_norm_token, acc_norm_pmi, f1[_<lang>], f1_macro, "
        "exact_match[_<lang>][_prefix|_suffix|_full], bleu, chrf, and the lower-is-better "
        "bits_per_byte, byte_perplexity, word_perplexity, perplexity, ppl, longppl, log2_longppl, nll"
    )
