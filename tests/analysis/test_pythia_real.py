"""Real data: the signal statistics on EleutherAI's Pythia checkpoint evaluations (../shared/data/pythia).

Our path: the lm-evaluation-harness JSON files -> analysis.scores.harness_json reader -> analysis.signal.
Independent path, written here: the tidy CSV derived from the same files -> csv module -> plain loops with
scipy.stats. Both must agree on every statistic for 8 model sizes x 65 tasks x 2 metrics.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from analysis.config import Config, SNRConfig
from analysis.scores.harness_json import read_lm_eval_harness
from analysis.scores.task_info import LM_EVAL_TASK_INFO
from analysis.scores.validate import LoadReport
from analysis.signal import compute_signal, series_monotonicity

pytestmark = pytest.mark.shared_data

MODELS = [f"pythia-{size}-deduped" for size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")]
TOKENS_PER_STEP = 2_097_152  # Pythia: 1024 sequences x 2048 tokens per step
CONFIG = Config(snr=SNRConfig(fallback="checkpoint", checkpoint_last_n=5))


@pytest.fixture(scope="module")
def pythia(shared_data: Path) -> tuple[pl.DataFrame, LoadReport]:
    root = shared_data / "pythia" / "evals" / "pythia-v1"
    table, report = read_lm_eval_harness(
        [root / model / "zero-shot" for model in MODELS], tokens_per_step=TOKENS_PER_STEP
    )
    return table, report


@pytest.fixture(scope="module")
def independent(shared_data: Path) -> dict[tuple[str, str], dict[str, dict[int, tuple[float, float]]]]:
    """(task, metric) -> model -> step -> (value, stderr), read from the tidy CSV with the csv module."""
    data: dict = defaultdict(lambda: defaultdict(dict))
    with (shared_data / "pythia" / "pythia_v1_tidy.csv").open() as handle:
        for row in csv.DictReader(handle):
            if row["shots"] != "zero-shot" or row["model"] not in MODELS or row["task"] not in LM_EVAL_TASK_INFO:
                continue
            if row["metric"] not in ("acc", "acc_norm"):
                continue
            stderr = float(row["stderr"]) if row["stderr"] else float("nan")
            data[(row["task"], row["metric"])][row["model"]][int(row["step"])] = (float(row["value"]), stderr)
    return data


def test_reader_covers_the_tidy_csv(pythia, independent):
    table, _ = pythia
    accuracy = table.filter(table["metric"].is_in(["acc", "acc_norm"]))
    expected = sum(len(steps) for models in independent.values() for steps in models.values())
    assert accuracy.height == expected
    assert sorted(accuracy["run"].unique()) == sorted(MODELS)


def test_monotonicity_per_model_and_task_matches_scipy(pythia, independent):
    table, _ = pythia
    rhos = {
        (r["task"], r["metric"], r["run"]): r["rho"]
        for r in series_monotonicity(table, CONFIG).iter_rows(named=True)
        if r["metric"] in ("acc", "acc_norm")
    }
    checked = 0
    for (task, metric), models in independent.items():
        for model, steps in models.items():
            ordered = sorted(steps)
            values = [steps[s][0] for s in ordered]
            expected = scipy.stats.spearmanr(ordered, values).statistic if len(set(values)) > 1 else None
            assert rhos[(task, metric, model)] == pytest.approx(expected, abs=1e-12), (task, metric, model)
            checked += 1
    assert checked == 8 * len(independent) > 1000  # 8 models x 127 (task, metric): lambada has no acc_norm


def _curves(models: dict[str, dict[int, tuple[float, float]]]) -> dict[str, dict[int, float]]:
    return {model: {step: value for step, (value, _) in steps.items()} for model, steps in models.items()}


def test_task_statistics_match_an_independent_implementation(pythia, independent):
    table, _ = pythia
    signal = {(r["task"], r["metric"]): r for r in compute_signal(table, CONFIG, with_ci=False).iter_rows(named=True)}
    for (task, metric), models in independent.items():
        row = signal[(task, metric)]
        baseline = LM_EVAL_TASK_INFO[task].random_baseline
        curves = _curves(models)
        # monotonicity: mean of per-model Spearman rho (constant series left out)
        rhos = []
        for steps in curves.values():
            ordered = sorted(steps)
            values = [steps[s] for s in ordered]
            if len(set(values)) > 1:
                rhos.append(scipy.stats.spearmanr(ordered, values).statistic)
        assert row["monotonicity"] == pytest.approx(np.mean(rhos), abs=1e-12)
        # non-randomness: best score over models and steps minus the baseline; sigmas from stderr
        assert row["non_random_distance"] == pytest.approx(max(max(c.values()) for c in curves.values()) - baseline)
        sigmas = []
        for steps in models.values():
            value, stderr = steps[max(steps)]
            sigmas.append((value - baseline) / stderr)
        assert row["non_random_sigmas"] == pytest.approx(max(sigmas)) and row["three_sigma_kind"] == "stderr"
        # ordering consistency across model sizes after 15B tokens (Kendall tau-b between consecutive steps)
        late_steps = sorted({s for c in curves.values() for s in c if s * TOKENS_PER_STEP >= 15e9})
        taus = []
        for a, b in pairwise(late_steps):
            present = [m for m in curves if a in curves[m] and b in curves[m]]
            tau = scipy.stats.kendalltau([curves[m][a] for m in present], [curves[m][b] for m in present]).statistic
            if not np.isnan(tau):
                taus.append(tau)
        assert row["consistency"] == pytest.approx(np.mean(taus), abs=1e-12)
        # checkpoint-noise SNR (AI2): spread of final scores / mean relative std of the last 5 checkpoints
        noises, finals = [], []
        for steps in curves.values():
            last = [steps[s] for s in sorted(steps)[-5:]]
            noises.append(np.std(last) / np.mean(last))
            finals.append(steps[max(steps)])
        signal_ = (max(finals) - min(finals)) / np.mean(finals)
        assert row["snr_checkpoint"] == pytest.approx(signal_ / np.mean(noises), rel=1e-9)
        assert row["snr"] == pytest.approx(row["snr_checkpoint"]) and row["snr_kind"] == "checkpoint"


def test_known_facts_about_pythia(pythia):
    """Sanity anchors a reader of the Pythia paper would expect."""
    table, _ = pythia
    signal = compute_signal(table, CONFIG, with_ci=False)
    by_task = {(r["task"], r["metric"]): r for r in signal.iter_rows(named=True)}
    # LAMBADA accuracy and ARC-Easy rise steadily for every size and order the sizes consistently
    for task in ("lambada_openai", "arc_easy", "piqa", "sciq"):
        assert by_task[(task, "acc")]["monotonicity"] > 0.8, task
        assert by_task[(task, "acc")]["consistency"] > 0.6, task
    # most MMLU subjects stay near chance at these scales: many are not monotone
    mmlu = [r for (task, metric), r in by_task.items() if task.startswith("hendrycksTest") and metric == "acc"]
    assert sum(r["monotonicity"] < 0.5 for r in mmlu) > len(mmlu) / 2
    # perplexity is lower-is-better: it falls during training, so it is monotone after orientation
    assert by_task[("lambada_openai", "ppl")]["monotonicity"] > 0.8
