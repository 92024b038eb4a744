"""The vectorised polars statistics equal the straightforward pandas/scipy reference (bench/)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis.config import Config, ConsistencyConfig, MonotonicityConfig, load_config
from analysis.signal import compute_signal
from bench.pandas_reference import STATISTIC_COLUMNS, compute_signal_reference
from bench.synthetic import make_small_random_table, make_synthetic_table

NUMERIC = [c for c in STATISTIC_COLUMNS if c != "three_sigma_kind"]


def assert_equal_statistics(table: pl.DataFrame, config: Config) -> None:
    fast = compute_signal(table, config, with_ci=False)
    slow = pl.from_pandas(compute_signal_reference(table, config))
    assert fast.height == slow.height
    joined = fast.join(slow, on=["task", "fewshot", "metric"], suffix="_ref")
    assert joined.height == fast.height
    for column in NUMERIC:
        a = joined.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()
        b = joined.get_column(f"{column}_ref").cast(pl.Float64).fill_null(np.nan).to_numpy()
        bad = ~((np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=1e-9, atol=1e-12))
        assert not bad.any(), (
            column,
            joined.filter(pl.Series(bad)).select("task", "metric", column, f"{column}_ref"),
        )
    kinds = joined.select(
        (pl.col("three_sigma_kind").fill_null("") == pl.col("three_sigma_kind_ref").fill_null("")).all()
    ).item()
    assert kinds


@pytest.mark.parametrize("seed", range(12))
def test_small_ragged_tables_match_reference(seed):
    assert_equal_statistics(make_small_random_table(seed), load_config())


@pytest.mark.parametrize(
    "config",
    [
        Config(consistency=ConsistencyConfig(variant="tau_a", min_tokens=0)),
        Config(monotonicity=MonotonicityConfig(step_min=3, step_max=9, min_checkpoints=2)),
        Config(consistency=ConsistencyConfig(min_step=4, min_runs=2)),
    ],
    ids=["tau_a", "window", "min_step"],
)
@pytest.mark.parametrize("seed", range(4))
def test_variants_match_reference(seed, config):
    assert_equal_statistics(make_small_random_table(100 + seed), config)


@pytest.mark.slow
def test_synthetic_sweep_matches_reference():
    table = make_synthetic_table(n_tasks=10, n_runs=5, n_seeds=3, n_steps=20)
    assert_equal_statistics(table, load_config())
