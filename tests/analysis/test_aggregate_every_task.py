"""Every kept task enters its language's score (issue 37): bits per byte rescaled on the uniform byte model, a
language with a task without baseline scored by win rate, bootstrap intervals over seeds and seed-paired language
differences. Hand-computed cases, each beside an independent computation (scipy) where one exists."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.aggregate import aggregate
from analysis.config import AggregateConfig, BootstrapConfig
from analysis.scores.schema import SCHEMA

NO_CLIP = AggregateConfig(clip_below_baseline=False)
# task -> (language, category, metric, random baseline or None)
TASKS: dict[str, tuple[str, str, str, float | None]] = {
    "swa_nlu": ("swa", "NLU", "acc", 0.5),
    "swa_gen": ("swa", "GEN", "f1", 0.0),
    "swa_bpb": ("swa", "GEN", "bits_per_byte", 8.0),
    "swa_byte_ppl": ("swa", "GEN", "byte_perplexity", 256.0),
    "swa_word_ppl": ("swa", "GEN", "word_perplexity", None),
}


def table(finals: dict[tuple[str, str], list[float]]) -> pl.DataFrame:
    """(run, task) -> the seeds' final scores (seed 1, 2, ...), all at step 100."""
    records: list[dict[str, Any]] = []
    for (run, task), scores in finals.items():
        language, category, metric, baseline = TASKS[task]
        for seed, score in enumerate(scores, start=1):
            records.append({"run": run, "seed": seed, "step": 100, "tokens": 100_000, "task": task,
                            "benchmark": task, "language": language, "category": category, "formulation": "GEN",
                            "fewshot": 0, "metric": metric, "score": score, "stderr": None,
                            "random_baseline": baseline})  # fmt: skip
    return pl.DataFrame(records, schema=SCHEMA)


def selection(tasks: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"task": tasks, "fewshot": [0] * len(tasks), "metric": [TASKS[t][2] for t in tasks]})


def scores_of(frame: pl.DataFrame) -> dict[str, float]:
    return dict(frame.select("run", "score").iter_rows())


BASE = {("A", "swa_nlu"): [0.75], ("B", "swa_nlu"): [0.75], ("C", "swa_nlu"): [1.0],
        ("A", "swa_gen"): [0.3], ("B", "swa_gen"): [0.3], ("C", "swa_gen"): [0.0]}  # fmt: skip


def test_bits_per_byte_is_rescaled_on_the_uniform_byte_model() -> None:
    # swa_bpb: A 1.2 -> 1 - 1.2/8 = 0.85; B 0.9 -> 0.8875; C 1.5 -> 0.8125
    # GEN = (swa_gen + swa_bpb) / 2: A 0.575, B 0.59375, C 0.40625; NLU (b 0.5): A 0.5, B 0.5, C 1
    # swa = (NLU + GEN) / 2: A 0.5375, B 0.546875, C 0.703125
    finals = {**BASE, ("A", "swa_bpb"): [1.2], ("B", "swa_bpb"): [0.9], ("C", "swa_bpb"): [1.5]}
    result = aggregate(table(finals), selection(["swa_nlu", "swa_gen", "swa_bpb"]), NO_CLIP)
    assert scores_of(result.language_scores) == pytest.approx({"A": 0.5375, "B": 0.546875, "C": 0.703125})
    assert set(result.language_scores.get_column("kind")) == {"rescaled"}
    assert dict(result.language_scores.select("run", "rank").iter_rows()) == {"C": 1.0, "B": 2.0, "A": 3.0}


def test_byte_perplexity_is_rescaled_on_its_logarithm_as_bits_per_byte() -> None:
    # byte perplexity 2^b against 256 = 2^8, on the log scale: the same rescaled score as b bits per byte
    bpb = {"A": 1.2, "B": 0.9, "C": 1.5}
    as_bits = {**BASE, **{(run, "swa_bpb"): [b] for run, b in bpb.items()}}
    as_perplexity = {**BASE, **{(run, "swa_byte_ppl"): [2.0**b] for run, b in bpb.items()}}
    bits = aggregate(table(as_bits), selection(["swa_nlu", "swa_gen", "swa_bpb"]), NO_CLIP)
    perplexity = aggregate(table(as_perplexity), selection(["swa_nlu", "swa_gen", "swa_byte_ppl"]), NO_CLIP)
    assert scores_of(perplexity.language_scores) == pytest.approx(scores_of(bits.language_scores))


def test_a_language_with_a_task_without_baseline_is_scored_by_win_rate() -> None:
    # word perplexity (lower is better) has no baseline: every swa task is scored by its win rate over 2 runs
    #   swa_nlu: A 0.75, B 0.75, C 1.0 -> A 0.25, B 0.25, C 1;  swa_gen: A 0.3, B 0.3, C 0 -> A 0.75, B 0.75, C 0
    #   swa_word_ppl: A 30, B 20, C 40 -> A 0.5, B 1, C 0
    #   NLU: A 0.25, B 0.25, C 1;  GEN: A (0.75 + 0.5)/2 = 0.625, B 0.875, C 0
    #   swa: A 0.4375, B 0.5625, C 0.5
    finals = {**BASE, ("A", "swa_word_ppl"): [30.0], ("B", "swa_word_ppl"): [20.0], ("C", "swa_word_ppl"): [40.0]}
    result = aggregate(table(finals), selection(["swa_nlu", "swa_gen", "swa_word_ppl"]), NO_CLIP)
    assert scores_of(result.language_scores) == pytest.approx({"A": 0.4375, "B": 0.5625, "C": 0.5})
    assert set(result.language_scores.get_column("kind")) == {"win_rate"}
    assert any(n.startswith("swa: scored by win rate") and "swa_word_ppl has no random baseline" in n
               for n in result.notes)  # fmt: skip


SEEDS = {"A": [0.60, 0.70, 0.95], "B": [0.55, 0.80, 0.85]}  # acc, baseline 0.5: rescaled 2s - 1


def seeded() -> pl.DataFrame:
    return table({(run, "swa_nlu"): scores for run, scores in SEEDS.items()})


def test_the_bootstrap_interval_of_a_language_score_over_three_seeds() -> None:
    # With 3 seeds the bootstrap mean takes 10 values; the lowest (all three draws the lowest seed) and the highest
    # have probability 1/27 > 2.5% each, so the 95% percentile interval is [lowest seed, highest seed], rescaled.
    # scipy's percentile bootstrap of the same seeds agrees.
    result = aggregate(seeded(), selection(["swa_nlu"]), NO_CLIP, bootstrap=BootstrapConfig(n=4000, seed=1))
    for run, scores in SEEDS.items():
        row = result.language_scores.filter(pl.col("run") == run).row(0, named=True)
        rescaled = [2 * s - 1 for s in scores]
        assert row["score"] == pytest.approx(np.mean(rescaled))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((min(rescaled), max(rescaled)))
        reference = stats.bootstrap((np.array(rescaled),), np.mean, method="percentile", n_resamples=4000,
                                    random_state=np.random.default_rng(2)).confidence_interval  # fmt: skip
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((reference.low, reference.high))


def test_language_pairs_are_the_seed_paired_t_interval_of_scipy() -> None:
    result = aggregate(seeded(), selection(["swa_nlu"]), NO_CLIP)
    pair = result.language_pairs.row(0, named=True)
    a, b = (np.array([2 * s - 1 for s in SEEDS[run]]) for run in ("A", "B"))
    interval = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (pair["language"], pair["run_a"], pair["run_b"], pair["n_seeds"]) == ("swa", "A", "B", 3)
    assert pair["difference"] == pytest.approx(float(np.mean(a - b)))
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((interval.low, interval.high))
    assert pair["resolved"] is False  # A - B = +0.0167 [-0.41, +0.44]
    assert dict(result.language_scores.select("run", "tied_with").iter_rows()) == {"A": "B", "B": "A"}


def test_a_difference_larger_than_the_seeds_move_is_resolved() -> None:
    finals = {("A", "swa_nlu"): [0.90, 0.92, 0.91], ("B", "swa_nlu"): [0.60, 0.63, 0.61]}
    result = aggregate(table(finals), selection(["swa_nlu"]), NO_CLIP)
    assert result.language_pairs.get_column("resolved").to_list() == [True]
    assert set(result.language_scores.get_column("tied_with")) == {""}
    ranking = {row["run"]: row for row in result.ranking.iter_rows(named=True)}
    assert (ranking["A"]["mean_rank_ci_low"], ranking["A"]["mean_rank_ci_high"]) == (1.0, 1.0)
