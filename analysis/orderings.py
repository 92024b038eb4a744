"""Which orderings of runs the seeds resolve: each pair of runs' seed-paired difference with its interval.

A task's final scores always order the runs, but two runs whose difference is smaller than what the seeds move
are not ordered by the task: they are tied within noise. The runs of one sweep share their seeds' data order and
initialisation seed, so seed s of one run is compared with seed s of the other (a paired difference), and the
pair is resolved when the t interval of the mean difference excludes 0. Each seed's final score is its mean over
its last checkpoints, as the separation statistic has it (`analysis.signal`, docs/statistics.md).
"""

from __future__ import annotations

import polars as pl
from scipy import stats

from analysis.scores.schema import KEY

_SELECTED = ("task", "fewshot", "metric")
PAIR_COLUMNS = ("task", "fewshot", "metric", "run_a", "run_b", "n_seeds", "difference", "ci_low", "ci_high",
                "resolved")  # fmt: skip


def final_scores(table: pl.DataFrame, selected: pl.DataFrame, last_checkpoints: int) -> pl.DataFrame:
    """task, fewshot, metric, run, seed (a null seed as -1), final: each series' mean score over its last
    `last_checkpoints` steps, for the selected (task, fewshot, metric) rows."""
    rows = table.join(selected.select(_SELECTED).unique(), on=list(_SELECTED), how="semi")
    return (
        rows.with_columns(pl.col("seed").fill_null(-1))
        .sort(list(KEY))
        .group_by([*_SELECTED, "run", "seed"], maintain_order=True)
        .agg(pl.col("score").tail(last_checkpoints).mean().alias("final"))
    )


def paired_differences(
    table: pl.DataFrame, selected: pl.DataFrame, *, last_checkpoints: int = 3, confidence: float = 0.95
) -> pl.DataFrame:
    """One row per selected (task, fewshot, metric) and pair of runs (run_a before run_b by name): the seeds both
    have, the mean of run_a's final score minus run_b's over them, its t interval at `confidence`, and whether
    the pair is resolved (the interval excludes 0; with one seed it never is). Raw scores: for a lower-is-better
    metric a negative difference means run_a is better."""
    finals = final_scores(table, selected, last_checkpoints)
    return seed_paired(finals, _SELECTED, "final", confidence).select(PAIR_COLUMNS)


def seed_paired(frame: pl.DataFrame, keys: tuple[str, ...], value: str, confidence: float = 0.95) -> pl.DataFrame:
    """The seed-paired comparison of every pair of runs within each `keys` group of `frame` (columns: keys, run,
    seed, `value`): keys, run_a, run_b (run_a < run_b), n_seeds (seeds both have), difference (mean of run_a's
    value minus run_b's over those seeds), ci_low, ci_high (the t interval; null with one seed), resolved."""
    pairs = (
        frame.select(*keys, "run", "seed", pl.col(value).alias("value"))
        .join(frame.select(*keys, "run", "seed", pl.col(value).alias("value")), on=[*keys, "seed"], suffix="_b")
        .filter(pl.col("run") < pl.col("run_b"))
        .sort([*keys, "run", "run_b", "seed"])
        .with_columns((pl.col("value") - pl.col("value_b")).alias("d"))
        .group_by([*keys, "run", "run_b"], maintain_order=True)
        .agg(pl.len().alias("n_seeds"), pl.col("d").mean().alias("difference"), pl.col("d").std().alias("sd"))
        .sort([*keys, "run", "run_b"])
    )
    n = pairs.get_column("n_seeds").to_numpy()
    quantile = stats.t.ppf(1 - (1 - confidence) / 2, df=(n - 1).clip(min=1))
    half = pl.lit(pl.Series("t", quantile, dtype=pl.Float64)) * pl.col("sd") / pl.col("n_seeds").cast(pl.Float64).sqrt()
    interval = pairs.with_columns(
        pl.when(pl.col("n_seeds") >= 2).then(pl.col("difference") - half).alias("ci_low"),
        pl.when(pl.col("n_seeds") >= 2).then(pl.col("difference") + half).alias("ci_high"),
    )
    resolved = ((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)).fill_null(False)
    return (
        interval.rename({"run": "run_a"})
        .with_columns(resolved.alias("resolved"))
        .select(*keys, "run_a", "run_b", "n_seeds", "difference", "ci_low", "ci_high", "resolved")
    )
