"""The demo's truth check (`finetasks_afr.demo.truth`) on hand-made selections: a verdict is as designed only
with the designed reason, and the best-mix check wants the designed mix alone in first place."""

from __future__ import annotations

import polars as pl
import pytest

from finetasks_afr.demo.truth import EXPECTATIONS, designed_best_mix, truth_check

MIXES = {
    "mix-a": {"qaa": 0.56, "qab": 0.305, "qac": 0.135},
    "mix-b": {"qaa": 0.135, "qab": 0.56, "qac": 0.305},
    "mix-c": {"qaa": 0.305, "qab": 0.135, "qac": 0.56},
}


def decisions(rows: list[tuple[str, bool, str]]) -> pl.DataFrame:
    schema = {"task": pl.String, "metric": pl.String, "chosen": pl.Boolean, "kept": pl.Boolean,
              "reason": pl.String, "consistency": pl.Float64, "consistency_ci_low": pl.Float64,
              "consistency_ci_high": pl.Float64}  # fmt: skip
    table = [(task, "acc_norm_token", True, kept, reason, 0.8, 0.6, 1.0) for task, kept, reason in rows]
    return pl.DataFrame(table, schema=schema, orient="row")


def language_scores(order: dict[str, list[tuple[str, float, float]]]) -> pl.DataFrame:
    rows = [(run, language, score, rank) for language, runs in order.items() for run, score, rank in runs]
    schema = {"run": pl.String, "language": pl.String, "score": pl.Float64, "rank": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_designed_best_mix_is_the_strictly_largest_share() -> None:
    assert designed_best_mix(MIXES) == {"qaa": "mix-a", "qab": "mix-b", "qac": "mix-c"}
    tied = {"x": {"qaa": 0.5, "qab": 0.5}, "y": {"qaa": 0.5, "qab": 0.2}}
    assert designed_best_mix(tied) == {"qab": "x"}  # qaa: a tie, no designed best


@pytest.mark.parametrize(
    ("kind", "kept", "reason", "ok"),
    [
        ("learnable", True, "kept: monotonicity 0.9 >= 0.5", True),
        ("learnable", False, "dropped: snr 12.0 < 20.0 (seed)", False),
        ("too_small", False, "dropped: snr 4.1 < 20.0 (seed)", True),
        ("too_small", False, "dropped: monotonicity 0.30 < 0.5", False),  # dropped, but not for being small
        ("too_small", True, "kept: snr 25.0 >= 20.0 (seed)", False),
        ("random_label", False, "dropped: monotonicity -0.1 < 0.5; 0.4 sigma above random <= 3 (seed)", True),
        ("random_label", False, "dropped: snr 5.2 < 20.0 (seed)", False),
        ("mcf_at_chance", False, "dropped: -1.2 sigma above random <= 3 (seed)", True),
        ("mcf_at_chance", False, "dropped: monotonicity 0.21 < 0.5", True),
        ("mcf_at_chance", False, "dropped: snr 6.4 < 20.0 (seed)", False),
        ("noise_ordered", True, "kept: monotonicity 0.8 >= 0.5", True),
    ],
)
def test_a_verdict_is_as_designed_only_with_the_designed_reason(kind: str, kept: bool, reason: str, ok: bool) -> None:
    check = truth_check({"t": kind}, decisions([("t", kept, reason)]), MIXES, language_scores({}))
    verdict = check.filter(pl.col("check") == "verdict").row(0, named=True)
    assert verdict["ok"] is ok
    assert verdict["expected"] == EXPECTATIONS[kind].text
    assert verdict["detail"].endswith("consistency 0.80 [0.60, 1.00]")


def test_best_mix_check_per_language() -> None:
    scores = language_scores(
        {
            "qaa": [("mix-a", 0.6, 1.0), ("mix-c", 0.5, 2.0), ("mix-b", 0.4, 3.0)],
            "qab": [("mix-a", 0.6, 1.0), ("mix-b", 0.5, 2.0), ("mix-c", 0.4, 3.0)],  # wrong mix first
            "qac": [("mix-c", 0.6, 1.5), ("mix-a", 0.6, 1.5), ("mix-b", 0.4, 3.0)],  # a tie for first: not recovered
        }
    )
    check = truth_check({}, decisions([]), MIXES, scores).filter(pl.col("check") == "best_mix")
    rows = {row["subject"]: row for row in check.iter_rows(named=True)}
    assert rows["qaa"]["ok"] and rows["qaa"]["observed"] == "mix-a"
    assert not rows["qab"]["ok"] and rows["qab"]["observed"] == "mix-a" and rows["qab"]["expected"] == "mix-b"
    assert not rows["qac"]["ok"] and rows["qac"]["observed"] == "no single first run"
    assert "mix-c 0.560" in rows["qac"]["detail"]


def test_a_task_missing_from_the_selection_is_not_as_designed() -> None:
    check = truth_check({"gone": "learnable"}, decisions([]), MIXES, language_scores({}))
    assert check.row(0, named=True)["observed"] == "not in the selection" and not check.row(0, named=True)["ok"]
    missing_language = truth_check({}, decisions([]), MIXES, language_scores({})).filter(pl.col("check") == "best_mix")
    assert missing_language["observed"].to_list() == ["no language score"] * 3
