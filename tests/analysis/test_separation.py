"""Separation (do the runs differ beyond seed noise?): hand-computed, against scipy's one-way ANOVA, and the
selection rules built on it (required without a random baseline, degenerate constant tasks dropped)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analysis.config import load_config
from analysis.select import decide
from analysis.signal import DEGENERATE_REASON, SEPARATION_REASONS, compute_signal
from tests.analysis.test_signal import one, rows_to_table, series
from tests.typed_values import number

CONFIG = load_config()


def final_scores_table(finals: dict[str, list[float]], *, step: float = 0.01, **extra: Any) -> pl.DataFrame:
    """Each run's seeds, each with three checkpoints whose mean is the given final score (the last 3 count by
    default), moving by `step` per checkpoint (negative: falling, as bits per byte do in training)."""
    rows = []
    for run, scores in finals.items():
        for seed, final in enumerate(scores):
            rows += series(run, [final - step, final, final + step], seed=seed, **extra)
    return rows_to_table(rows)


def test_hand_computed_anova_and_its_interval() -> None:
    # runs a: 0.50, 0.52; b: 0.60, 0.62; c: 0.70, 0.74
    # means 0.51, 0.61, 0.72; grand 0.61333; SSB = 2 * (0.10333^2 + 0.00333^2 + 0.10667^2) = 0.044133
    # SSW = 0.0002 + 0.0002 + 0.0008 = 0.0012; MSB = 0.022067, MSW = 0.0004, F = 331 / 6 = 55.17 on (2, 3) df;
    # n0 = (6 - 12 / 6) / 2 = 2
    table = final_scores_table({"a": [0.50, 0.52], "b": [0.60, 0.62], "c": [0.70, 0.74]})
    row = compute_signal(table, CONFIG).row(0, named=True)
    F = 331 / 6
    assert row["separation_f"] == pytest.approx(F)
    assert row["separation_p"] == pytest.approx(scipy.stats.f.sf(F, 2, 3))
    assert row["separation"] == pytest.approx(math.sqrt((F - 1) / 2))
    low = math.sqrt((F / scipy.stats.f.ppf(0.975, 2, 3) - 1) / 2)
    high = math.sqrt((F / scipy.stats.f.ppf(0.025, 2, 3) - 1) / 2)
    assert row["separation_ci_low"] == pytest.approx(low)
    assert row["separation_ci_high"] == pytest.approx(high)
    assert row["separation_reason"] is None


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=4), min_size=2, max_size=5),
    st.sampled_from(["acc", "bits_per_byte"]),
)
@example([[0.0, 1.0, 0.5, 1 / 3], [0.0, 1 / 3, 1.0, 0.5]], "acc")  # equal means: scipy's F -2e-32, p nan (CI)
def test_matches_scipy_f_oneway(groups: list[list[float]], metric: str) -> None:
    finals = {f"r{i}": scores for i, scores in enumerate(groups)}
    extra: dict[str, Any] = {"metric": metric, "random_baseline": None if metric == "bits_per_byte" else 0.25}
    if metric == "bits_per_byte":
        extra["formulation"] = "PPL"
    row = compute_signal(final_scores_table(finals, **extra), CONFIG).row(0, named=True)
    total, k = sum(map(len, groups)), len(groups)
    spread = np.var(np.concatenate(groups))
    if total - k < 1:
        assert row["separation_reason"] == SEPARATION_REASONS["seeds"]
        return
    if spread < 1e-20:
        assert row["separation_reason"] == SEPARATION_REASONS["constant"]
        return
    within = sum(np.var(g) * len(g) for g in groups)
    if within < 1e-20:
        assert row["separation_f"] == math.inf and row["separation_p"] == 0.0
        return
    expected = scipy.stats.f_oneway(*[np.array(g) for g in groups])
    assert row["separation_f"] == pytest.approx(expected.statistic, rel=1e-6, abs=1e-9)
    if math.isnan(expected.pvalue) and abs(expected.statistic) < 1e-12:  # equal run means: scipy's F rounds to
        assert row["separation_p"] == 1.0  # -2e-32 and its p to nan; at F = 0 the F survival function is 1
        return
    assert row["separation_p"] == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-12)


def test_the_final_score_is_each_seeds_mean_over_its_last_checkpoints() -> None:
    # seed 0 of run a ends 0.2, 0.4, 0.6 (mean 0.4); an earlier 0.9 is outside the last three
    rows = series("a", [0.9, 0.2, 0.4, 0.6], seed=0) + series("a", [0.1, 0.4, 0.4, 0.4], seed=1)
    rows += series("b", [0.1, 0.5, 0.5, 0.5], seed=0) + series("b", [0.1, 0.6, 0.6, 0.6], seed=1)
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    expected = scipy.stats.f_oneway([0.4, 0.4], [0.5, 0.6])
    assert row["separation_f"] == pytest.approx(expected.statistic)
    one_checkpoint = replace(CONFIG, separation=replace(CONFIG.separation, last_checkpoints=1))
    row = compute_signal(rows_to_table(rows), one_checkpoint).row(0, named=True)
    assert row["separation_f"] == pytest.approx(scipy.stats.f_oneway([0.6, 0.4], [0.5, 0.6]).statistic)


def test_reasons_when_not_measurable() -> None:
    one_run = compute_signal(final_scores_table({"a": [0.5, 0.6]}), CONFIG).row(0, named=True)
    assert one_run["separation"] is None and one_run["separation_reason"] == SEPARATION_REASONS["runs"]
    one_seed = compute_signal(final_scores_table({"a": [0.5], "b": [0.6]}), CONFIG).row(0, named=True)
    assert one_seed["separation_reason"] == SEPARATION_REASONS["seeds"]


def bpb_table(finals: dict[str, list[float]]) -> pl.DataFrame:
    return final_scores_table(finals, step=-0.01, metric="bits_per_byte", formulation="PPL", random_baseline=None)


def test_a_task_without_baseline_must_separate_the_runs() -> None:
    # falling bits per byte with a high seed SNR (~3 / 0.03) in both tables; only the first separates the runs
    separated = decide(compute_signal(bpb_table({"a": [3.00, 3.02], "b": [2.80, 2.82]}), CONFIG), CONFIG)
    assert separated.row(0, named=True)["kept"] is True
    assert "runs separated" in separated.row(0, named=True)["reason"]
    noisy = decide(compute_signal(bpb_table({"a": [3.00, 3.06], "b": [3.01, 3.05]}), CONFIG), CONFIG)
    row = noisy.row(0, named=True)
    assert row["snr_pass"] is True and row["monotonicity_pass"] is True
    assert row["kept"] is False and row["separation_pass"] is False
    assert "p " in row["reason"] and ">= 0.05" in row["reason"]
    optional = replace(
        CONFIG,
        separation=replace(CONFIG.separation, required_without_baseline=False, required_lower_is_better=False),
    )
    assert decide(compute_signal(bpb_table({"a": [3.00, 3.06], "b": [3.01, 3.05]}), optional), optional).row(
        0, named=True
    )["kept"]


def test_a_lower_is_better_task_must_separate_the_runs_even_with_its_baseline() -> None:
    # 8 bits per byte (the uniform byte model) lies hundreds of sigma above any trained model: the baseline alone
    # says nothing, so `required_lower_is_better` keeps separation required
    table = bpb_table({"a": [3.00, 3.06], "b": [3.01, 3.05]}).with_columns(pl.lit(8.0).alias("random_baseline"))
    row = decide(compute_signal(table, CONFIG), CONFIG).row(0, named=True)
    assert row["non_random_pass"] is True and row["snr_pass"] is True and row["monotonicity_pass"] is True
    assert row["kept"] is False and "runs separated" in row["reason"]
    only_no_baseline = replace(CONFIG, separation=replace(CONFIG.separation, required_lower_is_better=False))
    assert decide(compute_signal(table, only_no_baseline), only_no_baseline).row(0, named=True)["kept"] is True


def test_separation_is_optional_for_tasks_with_a_baseline_unless_required() -> None:
    table = final_scores_table({"a": [0.600, 0.610], "b": [0.602, 0.608]})  # far above 0.25, runs alike
    assert one(decide(compute_signal(table, CONFIG), CONFIG), task="t")["kept"] is True
    strict = replace(CONFIG, selection=replace(CONFIG.selection, require=(*CONFIG.selection.require, "separation")))
    row = one(decide(compute_signal(table, strict), strict), task="t")
    assert row["kept"] is False and "runs separated" in row["reason"]


def test_a_constant_task_is_dropped_as_degenerate() -> None:
    # 17/32 for every run, seed and checkpoint (the study's winogrande_afr_tsn_mcf_enprompt): infinite sigma
    # above 0.5 and no seed noise, which FineTasks' criteria alone would keep
    rows = [r for run in ("a", "b") for seed in (0, 1) for r in series(run, [17 / 32] * 4, seed=seed)]
    table = rows_to_table(rows).with_columns(pl.lit(0.5).alias("random_baseline"))
    row = decide(compute_signal(table, CONFIG), CONFIG).row(0, named=True)
    assert row["separation_reason"] == SEPARATION_REASONS["constant"]
    assert row["degenerate"] is True
    assert row["kept"] is False and row["reason"].startswith("dropped: " + DEGENERATE_REASON)


def test_a_task_constant_only_at_the_last_checkpoint_is_degenerate_too() -> None:
    # the study's winogrande_afr_tsn_mcf_enprompt: one seed strays before the end, every series ends on 17/32
    rows = [r for run in ("a", "b") for seed in (0, 1) for r in series(run, [17 / 32] * 4, seed=seed)]
    rows[-2]["score"] = 20 / 32
    table = rows_to_table(rows).with_columns(pl.lit(0.5).alias("random_baseline"))
    row = decide(compute_signal(table, CONFIG), CONFIG).row(0, named=True)
    assert row["separation_p"] is not None  # the last three checkpoints differ: separation is measured
    assert row["degenerate"] is True and row["kept"] is False
    assert DEGENERATE_REASON in row["reason"]


# --- calibration on known truth (the numbers docs/statistics.md states) --------------------------------------


def test_calibration_on_the_simulated_sweep() -> None:
    from finetasks_afr.demo.simulate import simulate_sweep

    table, truth = simulate_sweep(0)
    signal = compute_signal(table, CONFIG, with_ci=False).join(truth, on="task")
    p = pl.col("separation_p")
    by_kind = signal.group_by("kind").agg(pl.len(), (p < 0.05).sum().alias("below"), (p < 0.01).sum().alias("b01"),
                                          (p < 0.1).sum().alias("b10"))  # fmt: skip
    rows = {r["kind"]: r for r in by_kind.iter_rows(named=True)}
    learnable = [rows[k] for k in ("learnable", "late_emerging")]
    assert sum(r["len"] for r in learnable) == 161
    assert all(r["b01"] == r["len"] for r in learnable)
    assert (rows["random_label"]["len"], rows["random_label"]["below"], rows["random_label"]["b10"]) == (24, 0, 1)


def test_calibration_on_the_bundled_demo_sweep() -> None:
    from analysis.scores.read import read_scores
    from finetasks_afr.data.bundled import BUNDLED_CONFIG, BUNDLED_SWEEP, BUNDLED_TRUTH

    table, _ = read_scores(BUNDLED_SWEEP)
    config = load_config(BUNDLED_CONFIG)
    verdicts = pl.read_csv(BUNDLED_TRUTH).filter(pl.col("check") == "verdict")
    kinds = verdicts.select(pl.col("subject").alias("task"), "kind")
    signal = compute_signal(table, config, with_ci=False).join(kinds, on="task")
    p = {k: g.get_column("separation_p") for (k,), g in signal.group_by("kind")}
    assert p["learnable_ppl"].len() == 9 and number(p["learnable_ppl"].max()) <= 0.0044
    best = signal.filter(pl.col("kind") == "learnable").group_by("task").agg(pl.col("separation_p").min())
    assert best.height == 6 and number(best.get_column("separation_p").max()) <= 0.0011
    assert number(p["noise_ordered"].min()) >= 0.13 and number(p["mcf_at_chance"].min()) >= 0.10
    assert (p["random_label"] < 0.05).sum() == 3 and p["random_label"].len() == 15
