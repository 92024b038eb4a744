"""A plain pandas + scipy reference for the signal statistics of docs/statistics.md.

This is the straightforward "groupby-apply" implementation: one Python function per
(task, fewshot, metric) group that loops over runs, seeds and steps and calls scipy's spearmanr and
kendalltau. It exists to check the fast polars implementation (`analysis.signal`) and to time it in
`make bench`; it only gives point estimates (no bootstrap CIs, no reasons), and a statistic that is not
measurable is NaN here (`three_sigma_kind` is None).
"""

from __future__ import annotations

import math
from itertools import combinations, pairwise
from typing import Any, cast

import numpy as np
import pandas as pd
import polars as pl
from scipy.stats import kendalltau, spearmanr

from analysis.config import Config, load_config
from analysis.scores.metrics import metric_info

GROUP_KEYS: list[str] = ["task", "fewshot", "metric"]
NULL_SEED = -1  # a null seed is one replica; it gets this label for grouping
STATISTIC_COLUMNS: list[str] = [
    "monotonicity",
    "monotonicity_n_constant",
    "snr_seed",
    "avg_std",
    "snr_checkpoint",
    "non_random_distance",
    "non_random_sigmas",
    "three_sigma_kind",
    "consistency",
    "consistency_n_pairs",
    "consistency_n_undefined",
    "decision_accuracy",
    "monotonicity_ai2",
]
OUTPUT_COLUMNS: list[str] = GROUP_KEYS + STATISTIC_COLUMNS
_INT_COLUMNS = ("monotonicity_n_constant", "consistency_n_pairs", "consistency_n_undefined")
NAN = float("nan")


def compute_signal_reference(table: pd.DataFrame | pl.DataFrame, config: Config | None = None) -> pd.DataFrame:
    """One row per (task, fewshot, metric) with the point estimates of every signal statistic.

    `table` has the columns of `analysis.scores.schema.SCHEMA` (a polars frame is converted). Not-measurable
    values are NaN; `three_sigma_kind` is "seed", "stderr" or None.
    """
    if isinstance(table, pl.DataFrame):
        table = table.to_pandas()
    if config is None:
        config = load_config()
    # Only numeric columns inside the groups (slicing pyarrow-backed strings is slow); a run is only an
    # identity here, so it becomes an integer code. A null seed is one replica, labelled NULL_SEED.
    df = pd.DataFrame(
        {
            "task": table["task"].astype(object),
            "fewshot": table["fewshot"].astype("int64"),
            "metric": table["metric"].astype(object),
            "run": pd.factorize(table["run"])[0],
            "seed": table["seed"].astype("float64").fillna(NULL_SEED).astype("int64"),
            "step": table["step"].astype("int64"),
            "tokens": table["tokens"].astype("float64"),  # null -> NaN
            "score": table["score"].astype("float64"),
            "stderr": table["stderr"].astype("float64"),  # null -> NaN
            "random_baseline": table["random_baseline"].astype("float64"),
        }
    )
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in OUTPUT_COLUMNS})
    result = df.groupby(GROUP_KEYS, sort=True).apply(  # type: ignore[call-overload]  # stubs lack include_groups=
        lambda g: pd.Series(_one_group(g, config)), include_groups=False
    )
    result = result.reset_index()
    for column in STATISTIC_COLUMNS:
        if column == "three_sigma_kind":
            result[column] = result[column].astype(object).where(result[column].notna(), None)
        elif column in _INT_COLUMNS:
            result[column] = result[column].astype("int64")
        else:
            result[column] = result[column].astype("float64")
    return result[OUTPUT_COLUMNS]


def _one_group(g: pd.DataFrame, config: Config) -> dict[str, Any]:
    """All statistics of one (task, fewshot, metric) group."""
    _task, _fewshot, metric = g.name
    info = metric_info(metric)
    sign = -1.0 if info is not None and not info.higher_is_better else 1.0
    baseline = sign * float(g["random_baseline"].mean())
    runs = _runs(g)
    # The curve of a run: mean over its seeds of the oriented score at each step (rows: step, cols: run).
    curve = (sign * g["score"]).groupby([g["run"], g["step"]]).mean().unstack("run").sort_index()

    out: dict[str, Any] = {}
    out.update(_monotonicity(runs, sign, config))
    out.update(_snr_seed(runs, config))
    out["snr_checkpoint"] = _snr_checkpoint(runs, config)
    out.update(_non_random(runs, curve, sign, baseline, config))
    out.update(_consistency(g, curve, config))
    out["decision_accuracy"] = _decision_accuracy(curve, config)
    out["monotonicity_ai2"] = _monotonicity_ai2(curve)
    return out


def _runs(g: pd.DataFrame) -> dict[int, tuple[pd.DataFrame, pd.DataFrame]]:
    """Per run: its raw scores and stderrs as (step x seed) matrices, NaN where a seed lacks a step.

    Rows are the steps at which the run has at least one score, sorted; columns are the run's seeds.
    """
    wide = g.pivot(index=["run", "step"], columns="seed", values=["score", "stderr"]).sort_index()
    runs: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}
    for run in wide.index.get_level_values("run").unique():
        one = cast(pd.DataFrame, wide.xs(run, level="run"))
        # `wide` has (value, seed) columns, so selecting a value gives a (step x seed) frame, not a Series.
        scores = cast(pd.DataFrame, one["score"]).dropna(axis=1, how="all")  # the seeds of this run
        runs[run] = (scores, cast(pd.DataFrame, one["stderr"])[scores.columns])
    return runs


def _row(frame: pd.DataFrame, label: Any) -> pd.Series:
    """The row `label` of a frame whose index is unique, so `.loc` gives one Series (the stubs allow a frame)."""
    return cast(pd.Series, frame.loc[label])


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else NAN


def _std(values: np.ndarray, ddof: int) -> float:
    """np.std, but exactly 0 for equal values.

    np.std of five copies of 0.00368098... is 4e-19, not 0 (the mean is rounded), which would flip the
    "std = 0" branches of the spec (noise = 0, avg-std = 0, z = +inf).
    """
    if np.all(values == values[0]):
        return 0.0
    return float(np.std(values, ddof=ddof))


# ---------------------------------------------------------------------------------------------------------
# Monotonicity


def _monotonicity(runs: dict[int, tuple[pd.DataFrame, pd.DataFrame]], sign: float, config: Config) -> dict:
    cfg = config.monotonicity
    rhos: list[float] = []
    n_constant = 0
    for scores, _ in runs.values():
        steps = scores.index.to_numpy()
        keep = np.ones(len(steps), dtype=bool)
        if cfg.step_min is not None:
            keep &= steps >= cfg.step_min
        if cfg.step_max is not None:
            keep &= steps <= cfg.step_max
        for seed in scores.columns:
            values = sign * scores[seed].to_numpy()
            present = keep & ~np.isnan(values)
            x, y = steps[present], values[present]
            if len(y) < cfg.min_checkpoints:
                continue
            if np.all(y == y[0]):
                n_constant += 1
                continue
            rhos.append(float(spearmanr(x, y).statistic))
    return {"monotonicity": _mean(rhos), "monotonicity_n_constant": n_constant}


def _monotonicity_ai2(curve: pd.DataFrame) -> float:
    """(rising - falling) / non-zero steps of each run's curve, averaged over runs."""
    values: list[float] = []
    for run in curve.columns:
        diffs = np.diff(curve[run].dropna().to_numpy())
        rising = int((diffs > 0).sum())
        falling = int((diffs < 0).sum())
        if rising + falling > 0:
            values.append((rising - falling) / (rising + falling))
    return _mean(values)


# ---------------------------------------------------------------------------------------------------------
# SNR


def _final_common_step(scores: pd.DataFrame) -> int | None:
    """Largest step at which every seed of the run has a score."""
    complete = scores.index[scores.notna().all(axis=1)]
    return int(complete.max()) if len(complete) else None


def _snr_seed(runs: dict[int, tuple[pd.DataFrame, pd.DataFrame]], config: Config) -> dict[str, float]:
    ddof = config.snr.ddof
    per_step_std: list[float] = []  # one per (run, step) cell with >= 2 seeds, pooled over runs
    finals: list[float] = []
    n_replica_runs = 0
    for scores, _ in runs.values():
        matrix = scores.to_numpy()  # rows: steps
        n_present = (~np.isnan(matrix)).sum(axis=1)
        cells = matrix[(n_present >= 2) & (n_present > ddof)]
        stds = np.nanstd(cells, axis=1, ddof=ddof)  # std across seeds at each step
        stds[np.nanmax(cells, axis=1) == np.nanmin(cells, axis=1)] = 0.0  # exactly 0, as in _std
        per_step_std.extend(stds.tolist())
        if scores.shape[1] < 2:
            continue
        n_replica_runs += 1
        step = _final_common_step(scores)
        if step is not None:
            finals.append(float(_row(scores, step).mean()))
    avg_std = _mean(per_step_std)
    signal = _mean(finals)
    measurable = n_replica_runs > 0 and not math.isnan(avg_std) and avg_std != 0 and not math.isnan(signal)
    return {"snr_seed": signal / avg_std if measurable else NAN, "avg_std": avg_std}


def _snr_checkpoint(runs: dict[int, tuple[pd.DataFrame, pd.DataFrame]], config: Config) -> float:
    last_n = config.snr.checkpoint_last_n
    noises: list[float] = []
    finals: list[float] = []
    for scores, _ in runs.values():
        for seed in scores.columns:
            values = scores[seed].to_numpy()
            c = values[~np.isnan(values)][-last_n:]  # the series' last n checkpoints (rows sorted by step)
            if len(c) < 2 or c.mean() == 0:
                continue
            noises.append(_std(c, ddof=0) / float(c.mean()))
        finals.append(float(scores.iloc[-1].mean()))  # mean over seeds at the run's last step
    noise = _mean(noises)
    if len(finals) < 2 or np.mean(finals) == 0:
        return NAN
    signal = (max(finals) - min(finals)) / float(np.mean(finals))
    if math.isnan(noise) or noise == 0:
        return NAN
    return signal / noise


# ---------------------------------------------------------------------------------------------------------
# Non-randomness


def _z(excess: float, std: float) -> float | None:
    """(mean - baseline) / std; with std = 0: +inf above the baseline, -inf below, 0 exactly at it."""
    if math.isnan(excess) or math.isnan(std):
        return None
    if std > 0:
        return excess / std
    if abs(excess) <= 1e-12:  # at the baseline up to float rounding of the seed mean
        return 0.0
    return math.inf if excess > 0 else -math.inf


def _non_random(
    runs: dict[int, tuple[pd.DataFrame, pd.DataFrame]],
    curve: pd.DataFrame,
    sign: float,
    baseline: float,
    config: Config,
) -> dict[str, Any]:
    distance = float(np.nanmax(curve.to_numpy())) - baseline
    ddof = config.snr.ddof
    zs: list[float] = []
    kind: str | None = None
    for scores, _ in runs.values():
        if scores.shape[1] < 2 or scores.shape[1] <= ddof:
            continue
        step = _final_common_step(scores)
        if step is None:
            continue
        final = scores.loc[step].to_numpy()
        z = _z(float(np.mean(sign * final)) - baseline, _std(final, ddof=ddof))
        if z is not None:
            zs.append(z)
            kind = "seed"
    if kind is None and config.non_random.stderr_fallback:
        # no run has >= 2 seeds at a common final step: use the table's stderr at each run's last step
        for scores, stderrs in runs.values():
            last = scores.index.max()
            stderr = float(stderrs.loc[last].mean())  # mean over seeds, nulls skipped; NaN if all null
            z = _z(float((sign * scores.loc[last]).mean()) - baseline, stderr)
            if z is not None:
                zs.append(z)
                kind = "stderr"
    return {
        "non_random_distance": distance,
        "non_random_sigmas": max(zs) if zs else NAN,
        "three_sigma_kind": kind,
    }


# ---------------------------------------------------------------------------------------------------------
# Ordering consistency


def _tau_a(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    concordant = discordant = 0
    for i, j in combinations(range(n), 2):
        s = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
        if s > 0:
            concordant += 1
        elif s < 0:
            discordant += 1
    return (concordant - discordant) / (n * (n - 1) / 2)


def _consistency(g: pd.DataFrame, curve: pd.DataFrame, config: Config) -> dict[str, Any]:
    cfg = config.consistency
    steps: list[int] | None
    if cfg.min_tokens <= 0:
        steps = sorted(g["step"].unique())
    elif g["tokens"].notna().any():
        steps = sorted(g.loc[g["tokens"] >= cfg.min_tokens, "step"].unique())
    elif cfg.min_step is not None:
        steps = sorted(g.loc[g["step"] >= cfg.min_step, "step"].unique())
    else:
        steps = None
    if steps is None:
        return {"consistency": NAN, "consistency_n_pairs": 0, "consistency_n_undefined": 0}

    taus: list[float] = []
    n_undefined = 0
    values = curve.to_numpy()
    row_of = {step: i for i, step in enumerate(curve.index)}
    for early, late in pairwise(steps):
        x_all, y_all = values[row_of[early]], values[row_of[late]]
        present = ~np.isnan(x_all) & ~np.isnan(y_all)  # runs present at both steps
        x, y = x_all[present], y_all[present]
        if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
            n_undefined += 1
            continue
        if cfg.variant == "tau_a":
            taus.append(_tau_a(x, y))
        else:
            taus.append(float(kendalltau(x, y).statistic))
    n_runs = g["run"].nunique()
    value = _mean(taus) if n_runs >= cfg.min_runs else NAN
    return {"consistency": value, "consistency_n_pairs": len(taus), "consistency_n_undefined": n_undefined}


# ---------------------------------------------------------------------------------------------------------
# Decision accuracy


def _decision_accuracy(curve: pd.DataFrame, config: Config) -> float:
    if curve.shape[1] < 2:
        return NAN
    common = curve.index[curve.notna().all(axis=1)]
    if len(common) == 0:
        return NAN
    final = common.max()
    early_candidates = common[(common <= config.decision.early_fraction * final) & (common < final)]
    if len(early_candidates) == 0:
        return NAN
    early = early_candidates.max()
    early_row = _row(curve, early).to_numpy(dtype=float)  # one value per run, in column order
    final_row = _row(curve, final).to_numpy(dtype=float)
    points: list[float] = []
    for i, j in combinations(range(curve.shape[1]), 2):
        order_early = np.sign(early_row[i] - early_row[j])
        order_final = np.sign(final_row[i] - final_row[j])
        if order_early == 0 or order_final == 0:
            points.append(0.5)
        elif order_early == order_final:
            points.append(1.0)
        else:
            points.append(0.0)
    return _mean(points)
