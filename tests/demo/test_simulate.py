"""The simulated default sweep: shape, determinism, the committed file, and the margins of its design.

The FineTasks criteria are recomputed here with plain numpy/scipy, as docs/statistics.md defines them,
independently of the `analysis` package, so that the simulated truth holds with a wide margin whatever
the analysis does with ties and edge cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy.stats import rankdata

from analysis.scores.schema import KEY, SCHEMA
from finetasks_afr.demo import simulate
from finetasks_afr.demo.simulate import (
    RUNS,
    SEEDS,
    SIMULATED_SWEEP_PATH,
    STEPS,
    TRUTH_COLUMNS,
    simulate_sweep,
    truth_path,
    write_bundled_sweep,
)
from tests.typed_values import number

KEPT_KINDS = ("learnable", "late_emerging")
CATEGORIES = ("GK", "RC", "RES", "NLU", "GEN")


@pytest.fixture(scope="module")
def sweep() -> tuple[pl.DataFrame, pl.DataFrame]:
    return simulate_sweep(0)


@dataclass(frozen=True)
class Criteria:
    """FineTasks criteria of one (task, metric), recomputed here."""

    task: str
    metric: str
    formulation: str
    monotonicity: float  # mean Spearman rho over run x seed series
    snr: float  # mean final score / pooled per-step seed std
    z: np.ndarray  # per run: (mean final score - baseline) / final seed std


def _criteria(table: pl.DataFrame) -> list[Criteria]:
    R, S, T = len(RUNS), len(SEEDS), len(STEPS)
    ordered = table.sort("task", "metric", "run", "seed", "step")
    groups = ordered.select("task", "metric", "formulation", "random_baseline").unique(
        ["task", "metric"], maintain_order=True
    )
    G = groups.height
    assert ordered.height == G * R * S * T, "every (task, metric) must have every run, seed and step"
    x = ordered["score"].to_numpy().reshape(G, R, S, T)

    # Monotonicity: Spearman rho (average ranks) per series; constant series are left out.
    ranks = rankdata(x, axis=-1)
    step_ranks = np.arange(1, T + 1, dtype=float)
    rc = ranks - ranks.mean(axis=-1, keepdims=True)
    sc = step_ranks - step_ranks.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rc * sc).sum(axis=-1) / np.sqrt((rc**2).sum(axis=-1) * (sc**2).sum())
    rho[np.ptp(x, axis=-1) == 0] = np.nan
    monotonicity = np.nanmean(rho.reshape(G, -1), axis=1)

    # Seed SNR: pooled per-(run, step) std across seeds; signal = mean over runs of the final seed mean.
    std = x.std(axis=2, ddof=1)  # (G, R, T)
    final_mean = x[:, :, :, -1].mean(axis=2)  # (G, R)
    snr = final_mean.mean(axis=1) / std.mean(axis=(1, 2))

    # 3-sigma rule at the final step, per run.
    baseline = groups["random_baseline"].to_numpy()[:, None]
    final_std = std[:, :, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(
            final_std > 0,
            (final_mean - baseline) / final_std,
            np.sign(final_mean - baseline) * np.inf,
        )

    return [
        Criteria(task, metric, formulation, float(monotonicity[g]), float(snr[g]), z[g])
        for g, (task, metric, formulation, _) in enumerate(groups.iter_rows())
    ]


def _kinds(truth: pl.DataFrame) -> dict[str, str]:
    return dict(truth.select("task", "kind").iter_rows())


# --- the table -----------------------------------------------------------------------------------------


def test_score_table_has_the_schema_and_a_unique_key(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, _ = sweep
    assert table.schema == pl.Schema(SCHEMA)
    assert table.null_count().sum_horizontal().item() == 0
    assert not table.select(KEY).is_duplicated().any()
    assert table.equals(table.sort(KEY))


def test_world_is_the_one_described(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, _ = sweep
    assert sorted(table["run"].unique()) == sorted(RUNS)
    assert all(run.startswith(simulate.SIMULATED_MARKER) for run in RUNS)
    assert sorted(table["seed"].unique()) == [0, 1, 2, 3]
    assert sorted(table["step"].unique()) == list(range(1500, 30001, 1500))
    assert (table["tokens"] == table["step"] * 1_048_576).all()
    late = table.filter(pl.col("tokens") >= 15_000_000_000)["step"].n_unique()
    assert 9 <= late <= 11  # about half the checkpoints are past 15B tokens
    assert sorted(table["language"].unique()) == ["amh", "hau", "swa", "yor", "zul"]
    assert set(table["category"].unique()) == set(CATEGORIES)
    assert table["score"].is_between(0.0, 1.0).all()
    assert (table["stderr"] >= 0).all()


def test_formulations_fewshot_metrics_and_baselines(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, _ = sweep
    per_task = table.group_by("task").agg(
        pl.col("formulation").unique(),
        pl.col("fewshot").unique(),
        pl.col("metric").unique().sort(),
        pl.col("random_baseline").unique(),
    )
    for task, formulations, fewshots, metrics, baselines in per_task.iter_rows():
        assert len(formulations) == len(fewshots) == len(baselines) == 1, task
        formulation, fewshot, baseline = formulations[0], fewshots[0], baselines[0]
        if formulation == "GEN":
            assert not task.endswith(("_cf", "_mcf")), task
            assert fewshot == 0 and baseline == 0.0, task
            assert set(metrics) <= {"f1", "exact_match"}, task
        else:
            assert task.endswith(f"_{formulation.lower()}"), task
            assert fewshot == (5 if formulation == "MCF" else 0), task
            assert metrics == ["acc", "acc_norm", "acc_norm_pmi", "acc_norm_token"], task
            assert 0 < baseline < 1, task
    baseline_of = dict(per_task.select("task", pl.col("random_baseline").list.first()).iter_rows())
    assert baseline_of["belebele_yor_cf"] == 0.25
    assert baseline_of["winogrande_zul_cf"] == 0.5
    assert baseline_of["afrixnli_hau_mcf"] == pytest.approx(1 / 3)
    assert baseline_of["sib200_swa_cf"] == pytest.approx(1 / 7)


def test_metric_variants_are_correlated_but_distinct(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, _ = sweep
    wide = table.filter(pl.col("formulation") == "CF").pivot(
        on="metric", index=["run", "seed", "step", "task"], values="score"
    )
    assert number((wide["acc"] != wide["acc_norm_token"]).mean()) > 0.9
    # Seed noise: acc_norm_token a little less noisy than acc, acc_norm_pmi noisier.
    seed_std = (
        table.filter(pl.col("formulation") == "CF")
        .group_by("task", "metric", "run", "step")
        .agg(pl.col("score").std())
        .group_by("metric")
        .agg(pl.col("score").mean())
    )
    noise = dict(seed_std.iter_rows())
    assert noise["acc_norm_token"] < noise["acc"] < noise["acc_norm_pmi"]
    # Same answers scored: the seed-level deviations of two metrics are correlated.
    dev = wide.with_columns(
        (pl.col(m) - pl.col(m).mean().over("task", "run", "step")).alias(m) for m in ("acc", "acc_norm_token")
    )
    assert dev.select(pl.corr("acc", "acc_norm_token")).item() > 0.3


# --- the truth -----------------------------------------------------------------------------------------


def test_truth_table(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, truth = sweep
    assert truth.schema == pl.Schema(TRUTH_COLUMNS)
    assert truth["task"].is_unique().all()
    assert set(truth["task"]) == set(table["task"])
    assert set(truth["kind"]) == {"learnable", "late_emerging", "noisy", "random_label", "non_monotone"}
    assert (truth["expected_kept"] == truth["kind"].is_in(KEPT_KINDS)).all()
    reasons = dict(truth.select("kind", "expected_reason").unique().iter_rows())
    assert reasons == {
        "learnable": "kept",
        "late_emerging": "kept",
        "noisy": "snr",
        "random_label": "non_random",
        "non_monotone": "monotonicity",
    }
    gen = table.filter(pl.col("formulation") == "GEN")["task"].unique().implode()
    gen_kinds = truth.filter(pl.col("task").is_in(gen))["kind"]
    assert gen_kinds.is_in((*KEPT_KINDS, "non_monotone")).all()


def test_amh_alone_lacks_a_kept_res_task(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """Per language and suite (CF + GEN, MCF + GEN), every category has a kept task, except amh RES."""
    table, truth = sweep
    kept = (
        table.select("task", "language", "category", "formulation")
        .unique()
        .join(truth, on="task")
        .filter(pl.col("expected_kept"))
    )
    for suite, formulations in {"cf": ["CF", "GEN"], "mcf": ["MCF", "GEN"]}.items():
        covered = (
            kept.filter(pl.col("formulation").is_in(formulations)).group_by("language").agg(pl.col("category").unique())
        )
        assert covered.height == 5
        for language, categories in covered.iter_rows():
            expected = set(CATEGORIES) - ({"RES"} if language == "amh" else set())
            assert set(categories) == expected, (suite, language)


# --- the margins of the design, recomputed without the analysis package --------------------------------


def test_kept_tasks_pass_every_criterion_with_margin(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, truth = sweep
    kinds = _kinds(truth)
    passing: dict[str, bool] = {}
    for c in _criteria(table):
        if kinds[c.task] not in KEPT_KINDS:
            continue
        ok = c.monotonicity >= 0.6 and c.z.max() >= 4 and (c.formulation == "GEN" or c.snr >= 30)
        passing[c.task] = passing.get(c.task, False) or ok
    failing = sorted(task for task, ok in passing.items() if not ok)
    assert len(passing) == truth["expected_kept"].sum()
    assert not failing, f"kept tasks without a clearly passing metric: {failing}"


def test_dropped_tasks_fail_their_criterion_for_every_metric(
    sweep: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    table, truth = sweep
    kinds = _kinds(truth)
    wrong = []
    for c in _criteria(table):
        kind = kinds[c.task]
        if kind == "noisy" and not c.snr < 15:
            wrong.append(f"{c.task}/{c.metric}: snr {c.snr:.1f}")
        if kind == "random_label" and not (c.z < 2.5).all():
            wrong.append(f"{c.task}/{c.metric}: z {c.z.max():.2f}")
        if kind == "non_monotone" and not c.monotonicity < 0.4:
            wrong.append(f"{c.task}/{c.metric}: rho {c.monotonicity:.2f}")
    assert not wrong


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_design_holds_for_other_seeds(seed: int) -> None:
    """The margins are a property of the design, not of the lucky seed 0."""
    table, truth = simulate_sweep(seed)
    kinds = _kinds(truth)
    kept_ok: dict[str, bool] = {}
    for c in _criteria(table):
        kind = kinds[c.task]
        if kind in KEPT_KINDS:
            ok = c.monotonicity >= 0.5 and c.z.max() > 3 and (c.formulation == "GEN" or c.snr >= 20)
            kept_ok[c.task] = kept_ok.get(c.task, False) or ok
        elif kind == "noisy":
            assert c.snr < 20, c
        elif kind == "random_label":
            assert (c.z <= 3).all(), c
        elif kind == "non_monotone":
            assert c.monotonicity < 0.5, c
    assert all(kept_ok.values()), sorted(t for t, ok in kept_ok.items() if not ok)


# --- determinism and the committed file ----------------------------------------------------------------


def test_deterministic(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    table, truth = simulate_sweep(0)
    assert_frame_equal(table, sweep[0])
    assert_frame_equal(truth, sweep[1])
    assert not simulate_sweep(1)[0].equals(table)


def test_committed_sweep_is_simulate_sweep_0(sweep: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    assert SIMULATED_SWEEP_PATH.is_file(), "regenerate it: python -m finetasks_afr.demo.simulate"
    assert SIMULATED_SWEEP_PATH.stat().st_size < 2_000_000
    assert_frame_equal(pl.read_parquet(SIMULATED_SWEEP_PATH), sweep[0])
    assert_frame_equal(pl.read_csv(truth_path(SIMULATED_SWEEP_PATH), schema=TRUTH_COLUMNS), sweep[1])
    assert pl.read_parquet_metadata(SIMULATED_SWEEP_PATH)["finetasks_afr.simulated"] == "true"


def test_write_bundled_sweep(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "sweep.parquet"
    path.parent.mkdir()
    path.write_bytes(b"stale")  # replaced, not appended to
    write_bundled_sweep(path, seed=3)
    table, truth = simulate_sweep(3)
    assert_frame_equal(pl.read_parquet(path), table)
    assert truth_path(path) == tmp_path / "sub" / "sweep_truth.csv"
    assert_frame_equal(pl.read_csv(truth_path(path), schema=TRUTH_COLUMNS), truth)
    metadata = pl.read_parquet_metadata(path)
    assert metadata["finetasks_afr.simulated"] == "true"
    assert metadata["finetasks_afr.seed"] == "3"
    assert sorted(p.name for p in path.parent.iterdir()) == ["sweep.parquet", "sweep_truth.csv"]


def test_failed_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sweep.parquet"

    def broken(self: pl.DataFrame, file: Path, **kwargs: object) -> None:
        Path(file).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        write_bundled_sweep(path)
    assert list(tmp_path.iterdir()) == []
