"""The majority answer's share as the non-randomness baseline of accuracy (issue 37, item 3): a model giving one
answer to every document scores it, so 3 sigma above 1/k is not enough where the evaluated gold is unbalanced."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest

from analysis.config import Config
from analysis.scores.schema import SCHEMA, ScoreTableError
from analysis.scores.validate import validate
from analysis.select import select
from analysis.signal import compute_signal

CONFIG = Config()
UNIFORM = replace(CONFIG, non_random=replace(CONFIG.non_random, baseline="uniform"))


def table(finals: dict[str, list[float]], metric: str = "acc", majority: float | None = 0.6) -> pl.DataFrame:
    """Two runs' seeds rising to `finals` over 4 checkpoints on one 4-choice task (baseline 0.25)."""
    records: list[dict[str, Any]] = []
    for run, seeds in finals.items():
        for seed, final in enumerate(seeds, start=1):
            for step in range(1, 5):
                records.append({"run": run, "seed": seed, "step": step, "tokens": step * 1000, "task": "t",
                                "benchmark": "b", "language": "zul", "category": "RC", "formulation": "MCF",
                                "fewshot": 0, "metric": metric, "score": 0.25 + (final - 0.25) * step / 4,
                                "stderr": None, "random_baseline": 0.25, "majority_baseline": majority})  # fmt: skip
    return pl.DataFrame(records, schema={**SCHEMA, "majority_baseline": pl.Float64})


FINALS = {"a": [0.60, 0.61, 0.62], "b": [0.63, 0.64, 0.65]}  # far above 1/4, at the majority share 0.6


def decision(frame: pl.DataFrame, config: Config) -> dict[str, Any]:
    return select(compute_signal(frame, config), config).decisions.row(0, named=True)


def test_accuracy_is_tested_against_the_majority_share_when_the_table_records_it() -> None:
    # best run b: mean 0.64, seed sd 0.01 -> 39 sigma above 0.25, but (0.64 - 0.6) / 0.01 = 4 above 0.6 and
    # run a (0.61) only 1: the max over runs, 4, passes; at a majority of 0.63 it is (0.64 - 0.63) / 0.01 = 1
    row = decision(table(FINALS), CONFIG)
    assert row["non_random_baseline"] == 0.6 and row["random_baseline"] == 0.25
    assert row["non_random_sigmas"] == pytest.approx(4.0)
    assert "sigma above the majority answer's share 0.600" in row["reason"]
    strict = decision(table(FINALS, majority=0.63), CONFIG)
    assert strict["non_random_sigmas"] == pytest.approx(1.0) and strict["non_random_pass"] is False
    assert strict["kept"] is False


def test_the_uniform_key_restores_finetasks_one_over_k() -> None:
    row = decision(table(FINALS, majority=0.63), UNIFORM)
    assert row["non_random_baseline"] == 0.25
    assert row["non_random_sigmas"] == pytest.approx((0.64 - 0.25) / 0.01)


def test_tables_without_the_column_and_other_metrics_keep_the_random_baseline() -> None:
    without = table(FINALS).drop("majority_baseline")
    assert decision(without, CONFIG)["non_random_baseline"] == 0.25
    f1 = decision(table(FINALS, metric="f1"), CONFIG)  # a constant answer's F1 is not the majority share
    assert f1["non_random_baseline"] == 0.25
    unknown = decision(table(FINALS, majority=None), CONFIG)
    assert unknown["non_random_baseline"] == 0.25


def test_the_score_table_keeps_the_column_and_refuses_shares_outside_zero_one() -> None:
    frame, _ = validate(table(FINALS), source="t.parquet")
    assert frame.get_column("majority_baseline").unique().to_list() == [0.6]
    assert "majority_baseline" not in validate(table(FINALS).drop("majority_baseline"), source="t")[0].columns
    with pytest.raises(ScoreTableError, match="majority_baseline outside"):
        validate(table(FINALS, majority=1.5), source="t.parquet")
