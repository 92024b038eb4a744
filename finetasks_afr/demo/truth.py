"""What the demo's design says the analysis must find, and the check of an analysis against it.

The world is built so that the answer is known: which tasks carry signal (and which do not, and why), and which
mix is best on each language (the one with the largest share of it). `truth_check` lays every designed
expectation next to what the selection and the aggregation found, one row per check, so `truth_check.csv`
shows at a glance whether the FineTasks criteria recover the design.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from analysis.report import format_ci

# Patterns of the selection's reasons (analysis/select.py) for the criterion a control is designed to
# fail.
NON_RANDOM_FAILED = r"-?(?:[\d.]+|inf) sigma above random <= "
SNR_FAILED = r"snr [\d.]+ < "
MONOTONICITY_FAILED = r"monotonicity -?[\d.]+ < "
# Flat at chance: not rising, or not above random (which of the two depends on whether the seeds' letter habits are
# identical, 0 sigma, or wander, no trend); failing only SNR would not be it.
FLAT_AT_CHANCE = rf"{MONOTONICITY_FAILED}|{NON_RANDOM_FAILED}"


@dataclass(frozen=True)
class Expectation:
    """The designed verdict of a task kind: kept, or dropped by the criterion (a reason pattern) it must fail."""

    kept: bool
    reason: str | None  # a regular expression the selection's reason must match (dropped kinds only)
    text: str


EXPECTATIONS: dict[str, Expectation] = {
    "learnable": Expectation(True, None, "kept"),
    "learnable_ppl": Expectation(True, None, "kept"),
    "noise_ordered": Expectation(True, None, "kept (learnable), its ordering of the mixes noise"),
    # Flat at chance: no rising trend. (Its 3-sigma test is not the designed reason: with 3 seeds the final-step
    # std has 2 degrees of freedom, and a chance-level task passes it in a few percent of runs.)
    "random_label": Expectation(False, MONOTONICITY_FAILED, "dropped: not monotone (flat at chance)"),
    "mcf_at_chance": Expectation(False, FLAT_AT_CHANCE, "dropped: flat at chance (not monotone, or not above random)"),
    "too_small": Expectation(False, SNR_FAILED, "dropped: SNR below its threshold"),
}

TRUTH_SCHEMA: dict[str, pl.DataType] = {
    "check": pl.String(),
    "subject": pl.String(),
    "kind": pl.String(),
    "expected": pl.String(),
    "observed": pl.String(),
    "ok": pl.Boolean(),
    "detail": pl.String(),
}


def designed_best_mix(mixes: Mapping[str, Mapping[str, float]]) -> dict[str, str]:
    """language -> the mix with the strictly largest share of it (a language without one has no designed best)."""
    languages = sorted({language for shares in mixes.values() for language in shares})
    best: dict[str, str] = {}
    for language in languages:
        ranked = sorted(mixes, key=lambda run: mixes[run].get(language, 0.0), reverse=True)
        if len(ranked) == 1 or mixes[ranked[0]].get(language, 0.0) > mixes[ranked[1]].get(language, 0.0):
            best[language] = ranked[0]
    return best


def verdict_rows(kinds: Mapping[str, str], decisions: pl.DataFrame) -> list[dict]:
    """One row per task: its kind's expected verdict against the selection's, on the chosen metric."""
    chosen = {row["task"]: row for row in decisions.filter(pl.col("chosen")).iter_rows(named=True)}
    rows = []
    for task, kind in sorted(kinds.items()):
        expected = EXPECTATIONS[kind]
        row = chosen.get(task)
        if row is None:
            rows.append(_row("verdict", task, kind, expected.text, "not in the selection", False, ""))
            continue
        kept = bool(row["kept"])
        ok = kept == expected.kept and (
            expected.reason is None or re.search(expected.reason, row["reason"]) is not None
        )
        observed = "kept" if kept else "dropped"
        consistency = format_ci(row, "consistency") if row.get("consistency") is not None else ""
        detail = f"{row['metric']}: {row['reason']}" + (f" | consistency {consistency}" if consistency else "")
        rows.append(_row("verdict", task, kind, expected.text, observed, ok, detail))
    return rows


def best_mix_rows(mixes: Mapping[str, Mapping[str, float]], language_scores: pl.DataFrame) -> list[dict]:
    """One row per language: the designed best mix against the run ranked first on the language's score."""
    rows = []
    for language, best in designed_best_mix(mixes).items():
        scores = language_scores.filter(pl.col("language") == language).sort("score", descending=True)
        shares = ", ".join(f"{run} {mixes[run].get(language, 0.0):.3f}" for run in sorted(mixes))
        if scores.is_empty():
            rows.append(_row("best_mix", language, "language score", best, "no language score", False, shares))
            continue
        first = scores.filter(pl.col("rank") == 1.0)["run"].to_list()  # ties share an averaged rank: not 1
        observed = first[0] if len(first) == 1 else "no single first run"
        ranking = ", ".join(f"{run} {score:.3f}" for run, score in scores.select("run", "score").iter_rows())
        detail = f"scores: {ranking}; shares: {shares}"
        rows.append(_row("best_mix", language, "language score", best, observed, observed == best, detail))
    return rows


def truth_check(
    kinds: Mapping[str, str],
    decisions: pl.DataFrame,
    mixes: Mapping[str, Mapping[str, float]],
    language_scores: pl.DataFrame,
) -> pl.DataFrame:
    """Every designed expectation next to what the analysis found (`ok` says whether they agree)."""
    rows = verdict_rows(kinds, decisions) + best_mix_rows(mixes, language_scores)
    return pl.DataFrame(rows, schema=TRUTH_SCHEMA)


def _row(check: str, subject: str, kind: str, expected: str, observed: str, ok: bool, detail: str) -> dict:
    return {"check": check, "subject": subject, "kind": kind, "expected": expected, "observed": observed, "ok": ok,
            "detail": detail}  # fmt: skip


__all__ = ["EXPECTATIONS", "Expectation", "designed_best_mix", "truth_check"]
