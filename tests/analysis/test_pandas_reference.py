"""The pandas reference of the signal statistics on hand-computed cases, and the synthetic tables."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy.stats import kendalltau

from analysis.config import Config, load_config
from analysis.scores.metrics import metric_info
from analysis.scores.schema import KEY, SCHEMA
from bench.pandas_reference import OUTPUT_COLUMNS, compute_signal_reference
from bench.synthetic import LANGUAGES, make_small_random_table, make_synthetic_table
from tests.typed_values import number

CONFIG = load_config()


def _table(
    records: list[tuple[Any, ...]],
    metric: str = "acc",
    baseline: float = 0.25,
    tokens_per_step: int | None = 1_000_000_000_000,
) -> pd.DataFrame:
    """A one-group table from (run, seed, step, score[, stderr]) records; tokens = step x tokens_per_step."""
    rows = []
    for record in records:
        run, seed, step, score = record[:4]
        rows.append(
            {
                "run": run,
                "seed": seed,
                "step": step,
                "tokens": None if tokens_per_step is None else step * tokens_per_step,
                "task": "belebele_yor_cf",
                "benchmark": "belebele",
                "language": "yor",
                "category": "RC",
                "formulation": "CF",
                "fewshot": 0,
                "metric": metric,
                "score": score,
                "stderr": record[4] if len(record) > 4 else None,
                "random_baseline": baseline,
            }
        )
    return pl.DataFrame(rows, schema=SCHEMA).to_pandas()


def _one(table: pd.DataFrame, config: Config = CONFIG) -> pd.Series:
    result = compute_signal_reference(table, config)
    assert len(result) == 1
    assert list(result.columns) == OUTPUT_COLUMNS
    return result.iloc[0]


def _series(run: str, seed: int | None, scores: list[float], steps: list[int] | None = None) -> list[tuple]:
    steps = steps if steps is not None else list(range(1, len(scores) + 1))
    return [(run, seed, step, score) for step, score in zip(steps, scores, strict=True)]


# --- monotonicity ---------------------------------------------------------------------------------------


def test_perfectly_rising_series_has_monotonicity_one() -> None:
    row = _one(_table(_series("A", 0, [0.3, 0.35, 0.4, 0.5, 0.6])))
    assert row["monotonicity"] == pytest.approx(1.0)
    assert row["monotonicity_n_constant"] == 0
    assert row["monotonicity_ai2"] == pytest.approx(1.0)


def test_constant_series_is_left_out_and_counted() -> None:
    records = (
        _series("A", 0, [0.1, 0.3, 0.2, 0.4])  # ranks 1 3 2 4: rho = 1 - 6 * 2 / (4 * 15) = 0.8
        + _series("B", 0, [0.2, 0.25, 0.3, 0.35])  # rho = 1
        + _series("C", 0, [0.3, 0.3, 0.3, 0.3])  # constant: left out, counted
        + _series("D", 0, [0.9, 0.1])  # fewer than 3 checkpoints: left out, not counted
    )
    row = _one(_table(records))
    assert row["monotonicity"] == pytest.approx((0.8 + 1.0) / 2)
    assert row["monotonicity_n_constant"] == 1
    # AI2 variant on curves: A (2 rising - 1 falling) / 3, B 1, C no non-zero step, D -1.
    assert row["monotonicity_ai2"] == pytest.approx((1 / 3 + 1 - 1) / 3)


def test_every_series_constant_leaves_monotonicity_not_measurable() -> None:
    row = _one(_table(_series("A", 0, [0.25] * 4) + _series("B", 1, [0.5] * 4)))
    assert math.isnan(row["monotonicity"])
    assert row["monotonicity_n_constant"] == 2


def test_monotonicity_step_window() -> None:
    records = _series("A", 0, [0.9, 0.1, 0.2, 0.3], steps=[10, 20, 30, 40])
    config = replace(CONFIG, monotonicity=replace(CONFIG.monotonicity, step_min=20))
    assert _one(_table(records), config)["monotonicity"] == pytest.approx(1.0)
    assert _one(_table(records))["monotonicity"] == pytest.approx(1 - 6 * 12 / 60)  # ranks 4 1 2 3


# --- SNR ------------------------------------------------------------------------------------------------


def test_two_seed_snr_by_hand() -> None:
    records = [
        ("A", 0, 1, 0.4),
        ("A", 1, 1, 0.6),
        ("A", 0, 2, 0.5),
        ("A", 1, 2, 0.7),
        ("A", 0, 3, 0.9),  # seed 1 lacks step 3: final common step is 2, step 3 has no std
        # a single-seed run (null seed) adds no std cell and is not a run with replicas
        *_series("B", None, [0.2, 0.3, 0.35]),
    ]
    row = _one(_table(records))
    std = 0.2 / math.sqrt(2)  # sample std of two values 0.2 apart
    assert row["avg_std"] == pytest.approx(std)
    assert row["snr_seed"] == pytest.approx(0.6 / std)  # = 3 sqrt(2)
    assert row["snr_seed"] == pytest.approx(3 * math.sqrt(2))
    # 3-sigma at A's final common step: (0.6 - 0.25) / std.
    assert row["three_sigma_kind"] == "seed"
    assert row["non_random_sigmas"] == pytest.approx(0.35 / std)


def test_snr_not_measurable_without_replicas_and_stderr_fallback() -> None:
    records = [
        *[(r, s, t, v, 0.05) for r, s, t, v in _series("A", 0, [0.4, 0.5, 0.6])],
        *[(r, s, t, v, 0.02) for r, s, t, v in _series("B", None, [0.2, 0.2, 0.2])],
    ]
    row = _one(_table(records))
    assert math.isnan(row["snr_seed"])
    assert math.isnan(row["avg_std"])
    # checkpoint noise: A std([.4,.5,.6], ddof 0) / 0.5, B 0 / 0.2; signal (0.6 - 0.2) / 0.4 = 1.
    noise = (np.std([0.4, 0.5, 0.6]) / 0.5 + 0.0) / 2
    assert row["snr_checkpoint"] == pytest.approx(1.0 / noise)
    assert row["three_sigma_kind"] == "stderr"
    assert row["non_random_sigmas"] == pytest.approx((0.6 - 0.25) / 0.05)  # B: (0.2 - 0.25) / 0.02
    no_fallback = replace(CONFIG, non_random=replace(CONFIG.non_random, stderr_fallback=False))
    row = _one(_table(records), no_fallback)
    assert math.isnan(row["non_random_sigmas"])
    assert row["three_sigma_kind"] is None


def test_three_sigma_is_infinite_when_seeds_agree_above_baseline() -> None:
    records = _series("A", 0, [0.3, 0.5]) + _series("A", 1, [0.35, 0.5])
    row = _one(_table(records))
    assert row["non_random_sigmas"] == math.inf
    assert row["non_random_distance"] == pytest.approx(0.5 - 0.25)


def test_std_of_equal_values_is_exactly_zero() -> None:
    value = 3 / 815  # np.std of five copies is 4e-19, not 0
    assert np.std([value] * 5) != 0  # the floating-point trap the reference avoids
    records = [("A", seed, step, value) for seed in range(5) for step in range(1, 6)]
    records += _series("B", 0, [2 * value] * 5)
    row = _one(_table(records, baseline=0.0))
    assert row["avg_std"] == 0.0
    assert math.isnan(row["snr_seed"])  # avg-std = 0
    assert math.isnan(row["snr_checkpoint"])  # every series is constant: noise = 0
    assert row["non_random_sigmas"] == math.inf  # final-std = 0 above the baseline


# --- consistency ----------------------------------------------------------------------------------------


def _three_runs() -> list[tuple]:
    # steps 10, 20, 30 at 10, 20, 30 B tokens: with the 15B threshold only the pair (20, 30) counts.
    return [
        *_series("A", 0, [0.1, 0.1, 0.3], steps=[10, 20, 30]),
        ("A", 1, 20, 0.3),  # A's curve at step 20 is the seed mean 0.2
        *_series("B", 0, [0.2, 0.1, 0.2], steps=[10, 20, 30]),
        *_series("C", 0, [0.3, 0.3, 0.1], steps=[10, 20, 30]),
    ]


def test_three_run_consistency_is_the_hand_computed_kendall_tau() -> None:
    table = _table(_three_runs(), tokens_per_step=1_000_000_000)
    row = _one(table)
    # step 20: A .2, B .1, C .3; step 30: A .3, B .2, C .1 -> pairs AB concordant, AC and BC discordant.
    assert row["consistency"] == pytest.approx((1 - 2) / 3)
    assert row["consistency"] == pytest.approx(kendalltau([0.2, 0.1, 0.3], [0.3, 0.2, 0.1]).statistic)
    assert row["consistency_n_pairs"] == 1
    assert row["consistency_n_undefined"] == 0
    all_steps = replace(CONFIG, consistency=replace(CONFIG.consistency, min_tokens=0))
    row = _one(table, all_steps)  # step 10 -> 20: A .1 B .2 C .3 vs .2 .1 .3 -> tau 1/3
    assert row["consistency"] == pytest.approx((1 / 3 - 1 / 3) / 2)
    assert row["consistency_n_pairs"] == 2


def test_consistency_without_tokens_uses_min_step_or_is_not_measurable() -> None:
    table = _table(_three_runs(), tokens_per_step=None)
    row = _one(table)
    assert math.isnan(row["consistency"])
    with_min_step = replace(CONFIG, consistency=replace(CONFIG.consistency, min_step=20))
    assert _one(table, with_min_step)["consistency"] == pytest.approx(-1 / 3)


def test_consistency_tau_variants_with_ties_and_undefined_pairs() -> None:
    records = [
        *_series("A", 0, [0.1, 0.1, 0.5]),
        *_series("B", 0, [0.1, 0.2, 0.5]),
        *_series("C", 0, [0.3, 0.3, 0.5]),  # step 3: all tied -> pair (2, 3) undefined
    ]
    table = _table(records)
    row = _one(table)
    assert row["consistency"] == pytest.approx(2 / math.sqrt(6))  # tau-b: (2 - 0) / sqrt(2 * 3)
    assert row["consistency_n_pairs"] == 1
    assert row["consistency_n_undefined"] == 1
    tau_a = replace(CONFIG, consistency=replace(CONFIG.consistency, variant="tau_a"))
    assert _one(table, tau_a)["consistency"] == pytest.approx(2 / 3)  # (2 - 0) / 3 pairs


def test_consistency_needs_min_runs() -> None:
    records = _series("A", 0, [0.1, 0.2, 0.3]) + _series("B", 0, [0.2, 0.3, 0.4])
    row = _one(_table(records))
    assert math.isnan(row["consistency"])
    two_runs = replace(CONFIG, consistency=replace(CONFIG.consistency, min_runs=2))
    assert _one(_table(records), two_runs)["consistency"] == pytest.approx(1.0)


# --- decision accuracy ----------------------------------------------------------------------------------


def test_decision_accuracy_counts_a_tie_as_half() -> None:
    records = [
        *_series("A", 0, [0.2, 0.3, 0.4, 0.5]),
        *_series("B", 0, [0.2, 0.3, 0.35, 0.4]),
        *_series("C", 0, [0.05, 0.1, 0.45], steps=[1, 2, 4]),  # C lacks step 3
    ]
    row = _one(_table(records))
    # common steps 1, 2, 4: T = 4, early = 2. AB tied early -> 0.5; AC agree -> 1; BC flip -> 0.
    assert row["decision_accuracy"] == pytest.approx(1.5 / 3)


def test_decision_accuracy_not_measurable_with_one_run_or_no_early_step() -> None:
    assert math.isnan(_one(_table(_series("A", 0, [0.2, 0.3, 0.4])))["decision_accuracy"])
    records = _series("A", 0, [0.2, 0.3], steps=[10, 20]) + _series("B", 0, [0.3, 0.4], steps=[15, 20])
    assert math.isnan(_one(_table(records))["decision_accuracy"])  # only common step is T


# --- orientation ----------------------------------------------------------------------------------------


def test_bits_per_byte_is_oriented_lower_is_better() -> None:
    info = metric_info("bits_per_byte")
    assert info is not None and not info.higher_is_better
    a = [3.0, 2.5, 2.0, 1.5]
    b = [3.2, 2.9, 2.6, 2.4]
    c = [3.3, 3.0, 2.7, 2.6]
    records = _series("A", 0, a) + _series("B", 0, b) + _series("C", 0, c)
    row = _one(_table(records, metric="bits_per_byte", baseline=8.0))
    assert row["monotonicity"] == pytest.approx(1.0)
    assert row["monotonicity_ai2"] == pytest.approx(1.0)
    assert row["non_random_distance"] == pytest.approx(-1.5 - -8.0)
    assert row["decision_accuracy"] == pytest.approx(1.0)
    # order A < B < C in bpb at every step -> tau = 1 for every step pair
    assert row["consistency"] == pytest.approx(1.0)
    # checkpoint SNR uses raw scores
    finals = [1.5, 2.4, 2.6]
    noise = np.mean([np.std(s) / np.mean(s) for s in (a, b, c)])
    assert row["snr_checkpoint"] == pytest.approx((max(finals) - min(finals)) / np.mean(finals) / noise)
    assert row["three_sigma_kind"] is None  # no sigma could be measured
    assert math.isnan(row["non_random_sigmas"])  # no stderr in the table


def test_bits_per_byte_seed_snr_and_three_sigma() -> None:
    records = _series("A", 0, [3.0, 2.0, 1.5]) + _series("A", 1, [3.2, 2.2, 1.7])
    row = _one(_table(records, metric="bits_per_byte", baseline=8.0))
    std = 0.2 / math.sqrt(2)
    assert row["snr_seed"] == pytest.approx(1.6 / std)  # raw final score, not oriented
    assert row["non_random_sigmas"] == pytest.approx((-1.6 - -8.0) / std)
    assert row["monotonicity"] == pytest.approx(1.0)


# --- several groups, polars input -----------------------------------------------------------------------


def test_one_row_per_group_and_polars_input() -> None:
    table = pl.concat(
        [
            pl.from_pandas(_table(_series("A", 0, [0.1, 0.2, 0.3]), metric="acc")).cast(pl.Schema(SCHEMA)),
            pl.from_pandas(_table(_series("A", 0, [0.3, 0.2, 0.1]), metric="acc_norm")).cast(pl.Schema(SCHEMA)),
        ]
    )
    result = compute_signal_reference(table, CONFIG)
    assert list(result["metric"]) == ["acc", "acc_norm"]
    assert list(result["monotonicity"]) == pytest.approx([1.0, -1.0])


# --- synthetic tables -----------------------------------------------------------------------------------


def test_synthetic_table_schema_size_and_keys() -> None:
    table = make_synthetic_table()
    assert table.schema == pl.Schema(SCHEMA)
    assert table.height == 1_000_000
    assert table.select(pl.struct(list(KEY)).is_unique().all()).item()
    assert table.null_count().sum_horizontal().item() == 0
    assert set(table["language"].unique()) == set(LANGUAGES)
    assert set(table["category"].unique()) == {"GK", "RC", "RES", "NLU", "GEN"}
    assert table["task"].n_unique() == 125
    assert all(metric_info(m) is not None for m in table["metric"].unique())
    assert number(table["score"].min()) >= 0.0 and number(table["score"].max()) <= 1.0
    assert set(table["random_baseline"].unique().round(6)) <= {0.0, 0.25, 0.5, round(1 / 3, 6)}
    assert (table["tokens"] == table["step"] * 1_048_576).all()
    assert table["step"].min() == 1000 and table["step"].max() == 50000
    gen = table.filter(pl.col("formulation") == "GEN")
    assert set(gen["metric"].unique()) >= {"f1", "exact_match"}
    assert (gen["random_baseline"] == 0.0).all()


def test_synthetic_table_small_is_deterministic() -> None:
    a = make_synthetic_table(n_tasks=7, n_metrics=2, n_runs=3, n_seeds=2, n_steps=5, seed=3)
    b = make_synthetic_table(n_tasks=7, n_metrics=2, n_runs=3, n_seeds=2, n_steps=5, seed=3)
    assert a.height == 7 * 2 * 3 * 2 * 5
    assert a.equals(b)


@pytest.mark.slow
def test_small_random_tables_cover_the_edge_cases() -> None:
    seen = {"null_seed": False, "bits_per_byte": False, "null_tokens": False, "single_run": False}
    for rng_seed in range(30):
        table = make_small_random_table(rng_seed)
        assert table.schema == pl.Schema(SCHEMA)
        assert table.select(pl.struct(list(KEY)).is_unique().all()).item()
        seen["null_seed"] |= table["seed"].null_count() > 0
        seen["bits_per_byte"] |= "bits_per_byte" in table["metric"].to_list()
        seen["null_tokens"] |= table["tokens"].null_count() > 0
        runs = table.group_by("task", "metric").agg(pl.col("run").n_unique())
        seen["single_run"] |= (runs["run"] == 1).any()
        result = compute_signal_reference(table, CONFIG)
        assert len(result) == table.select("task", "fewshot", "metric").unique().height
    assert all(seen.values()), seen
