"""Seed-paired differences of runs (`analysis.orderings`): hand-computed, against scipy's paired t-test."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.orderings import paired_differences
from tests.analysis.test_signal import rows_to_table, series

SELECTED = pl.DataFrame({"task": ["t"], "fewshot": [0], "metric": ["acc"]})


def table_of(finals: dict[str, list[float]]) -> pl.DataFrame:
    """Each run's seeds end on a flat stretch of three checkpoints at the given final score."""
    rows = []
    for run, scores in finals.items():
        for seed, final in enumerate(scores):
            rows += series(run, [0.1, final, final, final], seed=seed)
    return rows_to_table(rows)


def test_hand_computed_pair() -> None:
    # a - b per seed: 0.10, 0.20, 0.30: mean 0.2, sd 0.1, half-width t(0.975, 2) * 0.1 / sqrt(3)
    pairs = paired_differences(table_of({"a": [0.5, 0.6, 0.7], "b": [0.4, 0.4, 0.4]}), SELECTED)
    row = pairs.row(0, named=True)
    half = scipy.stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert (row["run_a"], row["run_b"], row["n_seeds"]) == ("a", "b", 3)
    assert row["difference"] == pytest.approx(0.2)
    assert row["ci_low"] == pytest.approx(0.2 - half) and row["ci_high"] == pytest.approx(0.2 + half)
    assert half == pytest.approx(0.2484, abs=1e-4)  # wider than the difference: three seeds cannot resolve it
    assert row["resolved"] is False
    four = paired_differences(table_of({"a": [0.5, 0.6, 0.7, 0.6], "b": [0.4] * 4}), SELECTED).row(0, named=True)
    assert four["ci_low"] > 0 and four["resolved"] is True  # 0.2 +- t(0.975, 3) * 0.0816 / 2 = 0.2 +- 0.13


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=6))
def test_matches_scipy_ttest_rel(values: list[tuple[float, float]]) -> None:
    a, b = np.array([v[0] for v in values]), np.array([v[1] for v in values])
    row = paired_differences(table_of({"a": list(a), "b": list(b)}), SELECTED).row(0, named=True)
    d = a - b
    assert row["difference"] == pytest.approx(d.mean(), abs=1e-12)
    if np.ptp(d) < 1e-12:  # no spread: scipy's interval is undefined; ours has width 0
        return
    interval = scipy.stats.ttest_rel(a, b).confidence_interval(0.95)
    assert row["ci_low"] == pytest.approx(interval.low, abs=1e-9)
    assert row["ci_high"] == pytest.approx(interval.high, abs=1e-9)
    assert row["resolved"] is bool(interval.low > 0 or interval.high < 0)


def test_one_common_seed_is_never_resolved_and_seeds_pair_by_number() -> None:
    rows = series("a", [0.1, 0.9, 0.9, 0.9], seed=1) + series("b", [0.1, 0.2, 0.2, 0.2], seed=1)
    rows += series("b", [0.1, 0.3, 0.3, 0.3], seed=2)  # b's seed 2 has no partner in a
    row = paired_differences(rows_to_table(rows), SELECTED).row(0, named=True)
    assert row["n_seeds"] == 1 and row["difference"] == pytest.approx(0.7)
    assert row["ci_low"] is None and row["resolved"] is False
