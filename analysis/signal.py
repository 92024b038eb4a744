"""Signal statistics per (task, fewshot, metric), vectorised over the whole score table.

Definitions: docs/statistics.md (FineTasks monotonicity, seed SNR, non-randomness, ordering consistency;
AI2 checkpoint-noise SNR; DataDecide decision accuracy; bootstrap CIs). Per-group work is done by polars
group-bys or by numpy on dense (group x step x run) arrays: there is no Python loop over groups.
A statistic that cannot be computed is null and its `<stat>_reason` says why.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import polars as pl
from scipy import stats

from analysis.base.ordinal import dense_ids
from analysis.config import BootstrapConfig, Config
from analysis.scores.metrics import metric_info
from analysis.scores.validate import checkpoint_tokens

GROUP: tuple[str, ...] = ("task", "fewshot", "metric")
_META = ("benchmark", "language", "category", "formulation", "random_baseline")


def compute_signal(table: pl.DataFrame, config: Config, *, with_ci: bool = True) -> pl.DataFrame:
    """One row per (task, fewshot, metric) with every statistic, its CI and a reason when unmeasurable."""
    compact, groups = _prepare(table, non_random_baseline=config.non_random.baseline)
    series = _series(compact, config)
    cells = _cells(compact, series, config.snr.ddof)
    parts = [
        _monotonicity(series, groups, config, with_ci),
        _monotonicity_ai2(cells, groups),
        _seed_snr(cells, groups, config, with_ci),
        _checkpoint_snr(series, cells, groups),
        _non_randomness(cells, groups, config),
        _separation(series, groups, config),
        _consistency(cells, groups, config, with_ci),
        _decision_accuracy(cells, groups, config),
    ]
    out = groups
    for part in parts:
        out = out.join(part, on="gid", how="left")
    return _choose_snr(out, config).drop("gid", "sign").sort(list(GROUP))


def series_monotonicity(table: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Spearman rho of every series (task, fewshot, metric, run, seed): the per-run view behind monotonicity.

    rho is null where it is undefined (constant series, or fewer than `min_checkpoints` steps).
    """
    compact, groups = _prepare(table, keep_run=True)
    series = _series(compact, config).with_columns(
        pl.when((pl.col("n") >= config.monotonicity.min_checkpoints) & ~pl.col("constant"))
        .then(pl.col("rho"))
        .alias("rho"),
        pl.when(pl.col("seed") >= 0).then(pl.col("seed")).alias("seed"),
    )
    return (
        series.join(groups.select("gid", *GROUP), on="gid")
        .select(*GROUP, "run", "seed", pl.col("n").alias("n_checkpoints"), "constant", "rho")
        .sort([*GROUP, "run", "seed"], nulls_last=False)
    )


# ----------------------------------------------------------------------------------------------- prep


def _prepare(
    table: pl.DataFrame, *, keep_run: bool = False, non_random_baseline: str = "uniform"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A compact frame: integer group and run ids, oriented scores (higher is better for every metric), and the
    oriented baseline non-randomness tests against (`non_random_baseline_expr`).

    gid is the dense rank of (task, fewshot, metric), so groups sorted by gid are sorted by name.
    """
    table = table.with_columns(non_random_baseline_expr(table, non_random_baseline).alias("non_random_baseline"))
    keyed = table.with_columns(
        dense_ids(table, GROUP).alias("gid"),
        pl.col("run").cast(pl.Categorical).to_physical().alias("rid"),
    )
    groups = (
        keyed.group_by("gid")
        .agg(
            *[pl.col(c).first() for c in (*GROUP, *_META, "non_random_baseline")],
            pl.col("rid").n_unique().alias("n_runs"),
            pl.col("seed").n_unique().alias("n_seeds_max"),
            pl.col("step").n_unique().alias("n_steps"),
            *_sampled_documents(table),
        )
        .sort("gid")
    )
    # the direction per group, spread to the rows by gid (groups sorted by gid are 0..n-1): a lookup per group,
    # not a string replace per row
    metrics = groups.get_column("metric").unique().to_list()
    sign_of = {m: (1.0 if _higher_is_better(m) else -1.0) for m in metrics}
    groups = groups.with_columns(pl.col("metric").replace_strict(sign_of, return_dtype=pl.Float64).alias("sign"))
    sign = groups.get_column("sign").gather(keyed.get_column("gid"))
    compact = keyed.select(
        "gid",
        "rid",
        *(["run"] if keep_run else []),
        pl.col("seed").fill_null(-1),
        "step",
        "tokens",
        "score",
        "stderr",
        (pl.col("score") * sign).alias("oriented"),
        (pl.col("non_random_baseline") * sign).alias("baseline"),
    )
    return compact, groups


def _sampled_documents(table: pl.DataFrame) -> list[pl.Expr]:
    """The group's largest `sampled_documents` (null: every score on every document), when the table has it: the
    decisions flag a task whose scores are on a sample."""
    return [pl.col("sampled_documents").max()] if "sampled_documents" in table.columns else []


def non_random_baseline_expr(table: pl.DataFrame, kind: str) -> pl.Expr:
    """The baseline non-randomness tests a row against: `random_baseline`, or for an accuracy metric with
    `kind` "majority" the larger of it and the table's `majority_baseline` (the share of the evaluated documents
    whose gold is the most common answer: what a model giving one answer to every document scores). A table
    without the column (from elsewhere) keeps random_baseline (1/k)."""
    if kind != "majority" or "majority_baseline" not in table.columns:
        return pl.col("random_baseline")
    accuracy = pl.col("metric").str.contains(r"^acc(_norm(_token|_pmi|_char)?)?$")
    return (
        pl.when(accuracy & pl.col("majority_baseline").is_not_null())
        .then(pl.max_horizontal("random_baseline", "majority_baseline"))
        .otherwise(pl.col("random_baseline"))
    )


def _higher_is_better(metric: str) -> bool:
    info = metric_info(metric)
    if info is None:
        raise ValueError(f"metric {metric!r} is unknown to analysis.scores.metrics; validate the table first")
    return info.higher_is_better


def _cells(compact: pl.DataFrame, series: pl.DataFrame, ddof: int) -> pl.DataFrame:
    """Per (group, run, step): seeds present, raw mean and std across seeds, the curve value (oriented
    seed mean), mean stderr, tokens (`checkpoint_tokens`: the seed mean); and whether the step is the run's final
    common step (all seeds: a run has as many seeds as `series` has rows for it)."""
    cells = compact.group_by(["gid", "rid", "step"]).agg(
        pl.len().alias("n"),
        pl.col("score").mean().alias("mean"),
        pl.col("score").std(ddof=ddof).alias("std"),
        pl.col("oriented").mean().alias("value"),
        pl.col("baseline").first(),
        pl.col("stderr").mean(),
        checkpoint_tokens(),
    )
    run_seeds = series.group_by(["gid", "rid"]).agg(pl.len().alias("run_seeds"))
    cells = cells.join(run_seeds, on=["gid", "rid"])
    # sorted: group-by output order varies between runs, and float sums downstream must not
    return (
        cells.sort(["gid", "rid", "step"])
        .with_columns(
            pl.col("step").max().over(["gid", "rid"]).alias("last_step"),
            pl.col("step").filter(pl.col("n") == pl.col("run_seeds")).max().over(["gid", "rid"]).alias("final_step"),
        )
        .with_columns((pl.col("step") == pl.col("final_step")).fill_null(False).alias("is_final"))
    )


def _series(compact: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Per (group, run, seed): Spearman rho in the step window, and the last checkpoints' relative noise."""
    cfg = config.monotonicity
    window = pl.lit(True)
    if cfg.step_min is not None:
        window = window & (pl.col("step") >= cfg.step_min)
    if cfg.step_max is not None:
        window = window & (pl.col("step") <= cfg.step_max)
    in_window = pl.col("oriented").filter(window)
    tail = pl.col("score").sort_by("step").tail(config.snr.checkpoint_last_n)
    final = pl.col("score").sort_by("step").tail(config.separation.last_checkpoints).mean()
    names = [pl.col("run").first()] if "run" in compact.columns else []
    return (
        compact.group_by(["gid", "rid", "seed"])
        .agg(
            *names,
            in_window.len().alias("n"),
            (in_window.max() == in_window.min()).alias("constant"),
            pl.corr(pl.col("step").filter(window), in_window, method="spearman").alias("rho"),
            tail.len().alias("tail_n"),
            tail.std(ddof=0).alias("tail_sd"),
            tail.mean().alias("tail_mean"),
            final.alias("final_score"),
            pl.col("score").sort_by("step").last().alias("last_score"),
        )
        .sort(["gid", "rid", "seed"])  # deterministic order for the float means over series
    )


def _fill_reason(frame: pl.DataFrame, groups: pl.DataFrame, reason_col: str, default: str) -> pl.DataFrame:
    """Left-join a part onto every group; groups the part never saw get `default` as their reason."""
    seen = frame.with_columns(pl.lit(True).alias("_seen"))
    full = groups.select("gid").join(seen, on="gid", how="left")
    return full.with_columns(
        pl.when(pl.col("_seen").is_null()).then(pl.lit(default)).otherwise(pl.col(reason_col)).alias(reason_col)
    ).drop("_seen")


def _reason(cases: list[tuple[pl.Expr, str]]) -> pl.Expr:
    """First matching case gives the reason; null (measurable) otherwise."""
    expr: pl.Expr = pl.lit(None, dtype=pl.String)
    for condition, text in reversed(cases):
        expr = pl.when(condition).then(pl.lit(text)).otherwise(expr)
    return expr


# --------------------------------------------------------------------------------------- monotonicity


def _monotonicity(series: pl.DataFrame, groups: pl.DataFrame, config: Config, with_ci: bool) -> pl.DataFrame:
    cfg = config.monotonicity
    long_enough = pl.col("n") >= cfg.min_checkpoints
    series = series.with_columns(
        pl.when(long_enough & ~pl.col("constant")).then(pl.col("rho")).otherwise(None).alias("rho")
    )
    per_group = series.group_by("gid").agg(
        pl.col("rho").mean().alias("monotonicity"),
        pl.col("rho").count().alias("monotonicity_n_series"),
        (pl.col("constant") & long_enough).sum().alias("monotonicity_n_constant"),
    )
    per_group = per_group.with_columns(
        _reason(
            [
                (
                    (pl.col("monotonicity_n_series") == 0) & (pl.col("monotonicity_n_constant") > 0),
                    "monotonicity: every series is constant",
                ),
                (
                    pl.col("monotonicity_n_series") == 0,
                    f"monotonicity: no series has >= {cfg.min_checkpoints} checkpoints in the step window",
                ),
            ]
        ).alias("monotonicity_reason")
    )
    if with_ci:
        defined = series.filter(pl.col("rho").is_not_null())
        low, high = bootstrap_mean_ci(
            defined.get_column("gid").to_numpy(),
            defined.get_column("rho").to_numpy(),
            groups.height,
            config.bootstrap,
        )
        per_group = per_group.join(_ci_frame(low, high, "monotonicity"), on="gid", how="left")
    return _fill_reason(per_group, groups, "monotonicity_reason", "monotonicity: no checkpoints in the step window")


def _monotonicity_ai2(cells: pl.DataFrame, groups: pl.DataFrame) -> pl.DataFrame:
    """AI2's cheap variant on each run's curve: (rising - falling) / non-zero steps, mean over runs."""
    diffs = cells.sort(["gid", "rid", "step"]).with_columns(pl.col("value").diff().over(["gid", "rid"]).alias("d"))
    per_run = (
        diffs.group_by(["gid", "rid"])
        .agg(
            (pl.col("d") > 0).sum().cast(pl.Float64).alias("up"),  # float: up - down may be negative
            (pl.col("d") < 0).sum().cast(pl.Float64).alias("down"),
        )
        .filter((pl.col("up") + pl.col("down")) > 0)
        .sort(["gid", "rid"])  # deterministic float mean below
        .with_columns(((pl.col("up") - pl.col("down")) / (pl.col("up") + pl.col("down"))).alias("m"))
    )
    return groups.select("gid").join(
        per_run.group_by("gid").agg(pl.col("m").mean().alias("monotonicity_ai2")), on="gid", how="left"
    )


# ------------------------------------------------------------------------------------------------ SNR

NO_SEED_REPLICAS = (
    "snr: no seed replicas (no run has >= 2 seeds at a step); "
    'with one seed per run set `[snr] fallback = "checkpoint"` in a --config file'
)
"""Why the seed SNR is missing, with the way forward: leaderboard and lm-eval results (one seed per model) lack seed
replicas by nature, and only this reason reaches the user (decisions.csv, the report, coverage lines), so it names
the fallback (AI2's checkpoint-noise SNR, `_checkpoint_snr`) that exists for exactly that case."""


def _seed_snr(cells: pl.DataFrame, groups: pl.DataFrame, config: Config, with_ci: bool) -> pl.DataFrame:
    replicated = cells.filter(pl.col("n") >= 2)
    noise = replicated.group_by("gid").agg(pl.col("std").mean().alias("avg_std"))
    signal = (
        cells.filter(pl.col("is_final") & (pl.col("run_seeds") >= 2))
        .group_by("gid")
        .agg(pl.col("mean").mean().alias("snr_signal"), pl.len().alias("snr_n_runs"))
    )
    part = (
        groups.select("gid")
        .join(noise, on="gid", how="left")
        .join(signal, on="gid", how="left")
        .with_columns(
            pl.when(pl.col("avg_std") > 0).then(pl.col("snr_signal") / pl.col("avg_std")).alias("snr_seed"),
            _reason(
                [
                    (pl.col("avg_std").is_null(), NO_SEED_REPLICAS),
                    (pl.col("snr_signal").is_null(), "snr: no step where all seeds of a run are present"),
                    (pl.col("avg_std") == 0, "snr: seed replicas are identical (zero noise)"),
                ]
            ).alias("snr_seed_reason"),
        )
    )
    if with_ci:
        # Bootstrap over checkpoints: resample the (run, step) std cells; SNR = signal / avg-std maps the
        # avg-std interval onto an SNR interval. (Resampling 2-4 seeds is degenerate: a draw of one seed
        # repeated has zero noise.)
        std_low, std_high = bootstrap_mean_ci(
            replicated.get_column("gid").to_numpy(), replicated.get_column("std").to_numpy(),
            groups.height, config.bootstrap,
        )  # fmt: skip
        part = part.join(_ci_frame(std_low, std_high, "avg_std"), on="gid", how="left").with_columns(
            pl.when(pl.col("snr_seed").is_not_null() & (pl.col("avg_std_ci_high") > 0))
            .then(pl.col("snr_signal") / pl.col("avg_std_ci_high"))
            .alias("snr_seed_ci_low"),
            pl.when(pl.col("snr_seed").is_not_null() & (pl.col("avg_std_ci_low") > 0))
            .then(pl.col("snr_signal") / pl.col("avg_std_ci_low"))
            # a zero-noise resample: infinite SNR; no avg-std interval (one std cell): no SNR interval
            .when(pl.col("snr_seed").is_not_null() & (pl.col("avg_std_ci_low") == 0))
            .then(pl.lit(float("inf")))
            .alias("snr_seed_ci_high"),
        )
    return part


def _checkpoint_snr(series: pl.DataFrame, cells: pl.DataFrame, groups: pl.DataFrame) -> pl.DataFrame:
    """AI2 Signal and Noise: spread of final scores over runs / relative std of a series' last checkpoints."""
    noise = (
        series.filter((pl.col("tail_n") >= 2) & (pl.col("tail_mean") != 0))
        .group_by("gid")
        .agg((pl.col("tail_sd") / pl.col("tail_mean").abs()).mean().alias("checkpoint_noise"))
    )
    finals = cells.filter(pl.col("step") == pl.col("last_step"))
    signal = finals.group_by("gid").agg(
        ((pl.col("mean").max() - pl.col("mean").min()) / pl.col("mean").mean().abs()).alias("checkpoint_signal"),
        pl.len().alias("n_final_runs"),
    )
    return (
        groups.select("gid")
        .join(noise, on="gid", how="left")
        .join(signal, on="gid", how="left")
        .with_columns(
            pl.when((pl.col("n_final_runs") >= 2) & (pl.col("checkpoint_noise") > 0))
            .then(pl.col("checkpoint_signal") / pl.col("checkpoint_noise"))
            .alias("snr_checkpoint"),
            _reason(
                [
                    (pl.col("n_final_runs") < 2, "checkpoint snr: needs >= 2 runs for the signal"),
                    (pl.col("checkpoint_noise").is_null(), "checkpoint snr: no series with >= 2 checkpoints"),
                    (
                        pl.col("checkpoint_noise") == 0,
                        "checkpoint snr: last checkpoints are constant (zero noise)",
                    ),
                ]
            ).alias("snr_checkpoint_reason"),
        )
        .drop("n_final_runs")
    )


def _choose_snr(out: pl.DataFrame, config: Config) -> pl.DataFrame:
    """`snr` is the seed SNR; the checkpoint-noise SNR only stands in when asked and seeds are missing."""
    use_checkpoint = pl.col("snr_seed").is_null() & pl.lit(config.snr.fallback == "checkpoint")
    return out.with_columns(
        pl.when(use_checkpoint).then(pl.col("snr_checkpoint")).otherwise(pl.col("snr_seed")).alias("snr"),
        pl.when(use_checkpoint & pl.col("snr_checkpoint").is_not_null())
        .then(pl.lit("checkpoint"))
        .when(pl.col("snr_seed").is_not_null())
        .then(pl.lit("seed"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias("snr_kind"),
        pl.when(use_checkpoint)
        .then(pl.col("snr_checkpoint_reason"))
        .otherwise(pl.col("snr_seed_reason"))
        .alias("snr_reason"),
        *[
            pl.when(use_checkpoint).then(None).otherwise(pl.col(f"snr_seed_ci_{side}")).alias(f"snr_ci_{side}")
            for side in ("low", "high")
            if f"snr_seed_ci_{side}" in out.columns
        ],
    )


# ---------------------------------------------------------------------------------------- separation

SEPARATION_COLUMNS = ("separation", "separation_ci_low", "separation_ci_high", "separation_f", "separation_p",
                      "separation_reason")  # fmt: skip
SEPARATION_REASONS = {
    "runs": "separation: needs >= 2 runs",
    "seeds": "separation: needs a run with >= 2 seeds",
    "constant": "separation: every seed of every run has the same final score",
}
DEGENERATE_REASON = (
    "degenerate: every seed of every run has the same score at its last checkpoint (a constant answer scores the "
    "majority label's share whatever the model; such a task cannot order runs)"
)


def _separation(series: pl.DataFrame, groups: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Whether the runs differ beyond seed noise: a one-way ANOVA of the seeds' final scores (each seed's mean over
    its last `separation.last_checkpoints` checkpoints) with the runs as groups.

    `separation_p` is the F-test's p-value; `separation` = sqrt(max(0, (F - 1) / n0)) estimates the standard
    deviation of the run means over the seed standard deviation (scale-free, so a bits-per-byte task and an
    accuracy task are judged alike), with the exact interval of the one-way random-effects model
    (docs/statistics.md).
    """
    score = pl.col("final_score")
    # maintain_order: float sums in the same order every time (the series are sorted by gid, rid, seed)
    per_run = (
        series.filter(score.is_not_null())
        .group_by(["gid", "rid"], maintain_order=True)
        .agg(pl.len().alias("n"), score.mean().alias("mean"), ((score - score.mean()) ** 2).sum().alias("ss"))
    )
    grand = per_run.group_by("gid", maintain_order=True).agg(
        ((pl.col("n") * pl.col("mean")).sum() / pl.col("n").sum()).alias("grand")
    )
    anova = (
        per_run.join(grand, on="gid", maintain_order="left")
        .group_by("gid", maintain_order=True)
        .agg(
            pl.len().cast(pl.Float64).alias("k"),
            pl.col("n").sum().cast(pl.Float64).alias("total"),
            (pl.col("n").cast(pl.Float64) ** 2).sum().alias("n_squared"),
            pl.col("ss").sum().alias("ss_within"),
            (pl.col("n") * (pl.col("mean") - pl.col("grand")) ** 2).sum().alias("ss_between"),
        )
        .sort("gid")
    )
    columns = {c: anova.get_column(c).to_numpy() for c in ("k", "total", "n_squared", "ss_within", "ss_between")}
    tested = separation_test(**columns, confidence=config.bootstrap.confidence)
    part = anova.select("gid", "k", "total").with_columns(
        pl.Series(name, values).fill_nan(None) for name, values in tested.items()
    )
    # every series ends on the same score: a model answering one label whatever the input
    degenerate = series.group_by("gid").agg(
        ((pl.len() >= 2) & (pl.col("last_score").max() == pl.col("last_score").min())).alias("degenerate")
    )
    part = part.join(degenerate, on="gid", how="full", coalesce=True)
    return (
        groups.select("gid")
        .join(part, on="gid", how="left")
        .with_columns(
            _reason(
                [
                    (pl.col("k").fill_null(0) < 2, SEPARATION_REASONS["runs"]),
                    (pl.col("total") - pl.col("k") < 1, SEPARATION_REASONS["seeds"]),
                    (pl.col("separation_p").is_null(), SEPARATION_REASONS["constant"]),
                ]
            ).alias("separation_reason")
        )
        .with_columns(
            pl.when(pl.col("separation_reason").is_null()).then(pl.col(c)).alias(c) for c in SEPARATION_COLUMNS[:-1]
        )
        .with_columns(pl.col("degenerate").fill_null(False))
        .drop("k", "total")
    )


def separation_test(
    k: np.ndarray,
    total: np.ndarray,
    n_squared: np.ndarray,
    ss_within: np.ndarray,
    ss_between: np.ndarray,
    confidence: float,
) -> dict[str, np.ndarray]:
    """The one-way ANOVA per group from its sums: `k` runs, `total` seeds, the sum of squared run sizes and the
    within- and between-run sums of squares. NaN where undefined (k < 2, no residual degree of freedom, or no
    variation at all); an F of inf (runs differ, seeds agree exactly) has p 0 and an infinite separation."""
    df_between, df_within = k - 1, total - k
    valid = (df_between >= 1) & (df_within >= 1) & ((ss_within > 0) | (ss_between > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ms_between = ss_between / df_between
        ms_within = ss_within / df_within
        f = np.where(valid, np.where(ms_within > 0, ms_between / ms_within, np.inf), np.nan)
        n0 = (total - n_squared / total) / df_between
        dfb, dfw = np.where(valid, df_between, 1.0), np.where(valid, df_within, 1.0)
        p = np.where(valid, stats.f.sf(f, dfb, dfw), np.nan)
        alpha = (1 - confidence) / 2
        upper_quantile, lower_quantile = stats.f.ppf(1 - alpha, dfb, dfw), stats.f.ppf(alpha, dfb, dfw)

        def ratio(x: np.ndarray) -> np.ndarray:
            return np.sqrt(np.clip((x - 1) / n0, 0, None))

        return {
            "separation": np.where(valid, ratio(f), np.nan),
            "separation_ci_low": np.where(valid, ratio(f / upper_quantile), np.nan),
            "separation_ci_high": np.where(valid, ratio(f / lower_quantile), np.nan),
            "separation_f": f,
            "separation_p": p,
        }


# ---------------------------------------------------------------------------------------- non-random


# A perplexity has no chance level independent of the tokenizer: its random_baseline is null, and distance
# to random is not measured (null), not failed.
NOT_APPLICABLE = "non-random: not applicable (no random baseline, e.g. a perplexity)"


def _non_randomness(cells: pl.DataFrame, groups: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Distance of the best curve value above the random baseline, in seed (or stderr) sigmas at the final step;
    not applicable (null, with the reason) when the task has no random baseline."""
    cfg = config.non_random
    margin = pl.col("value") - pl.col("baseline")
    distance = cells.group_by("gid").agg(margin.max().alias("non_random_distance"))
    seed_z = (
        cells.filter(pl.col("is_final") & (pl.col("run_seeds") >= 2))
        .group_by("gid")
        .agg(_z(margin, pl.col("std")).max().alias("z_seed"))
    )
    stderr_z = (
        cells.filter((pl.col("step") == pl.col("last_step")) & pl.col("stderr").is_not_null())
        .group_by("gid")
        .agg(_z(margin, pl.col("stderr")).max().alias("z_stderr"))
    )
    use_stderr = pl.col("z_seed").is_null() & pl.lit(cfg.stderr_fallback)
    no_sigma = "non-random: no seed replicas at a final step" + (" and no stderr" if cfg.stderr_fallback else "")
    no_baseline = pl.col("random_baseline").is_null()
    return (
        groups.select("gid", "random_baseline")
        .join(distance, on="gid", how="left")
        .join(seed_z, on="gid", how="left")
        .join(stderr_z, on="gid", how="left")
        .with_columns(
            # without a baseline a zero-sigma z would read -inf (a null margin is not > 0): force null
            pl.when(no_baseline).then(None).otherwise(pl.col(c)).alias(c)
            for c in ("non_random_distance", "z_seed", "z_stderr")
        )
        .with_columns(
            pl.when(use_stderr).then(pl.col("z_stderr")).otherwise(pl.col("z_seed")).alias("non_random_sigmas")
        )
        .with_columns(
            (pl.col("non_random_sigmas") > cfg.sigma).alias("three_sigma"),
            pl.when(pl.col("z_seed").is_not_null())
            .then(pl.lit("seed"))
            .when(pl.col("non_random_sigmas").is_not_null())
            .then(pl.lit("stderr"))
            .otherwise(pl.lit(None, dtype=pl.String))
            .alias("three_sigma_kind"),
            (~no_baseline).alias("non_random_applicable"),
            _reason([(no_baseline, NOT_APPLICABLE), (pl.col("non_random_sigmas").is_null(), no_sigma)]).alias(
                "non_random_reason"
            ),
        )
        .drop("z_seed", "z_stderr", "random_baseline")
    )


def _z(margin: pl.Expr, sigma: pl.Expr) -> pl.Expr:
    """margin / sigma; for a zero sigma +-inf, or 0 when the margin is 0 up to float rounding."""
    return (
        pl.when(sigma > 0)
        .then(margin / sigma)
        .when(margin.abs() <= 1e-12)
        .then(pl.lit(0.0))
        .when(margin > 0)
        .then(pl.lit(float("inf")))
        .otherwise(pl.lit(float("-inf")))
    )


# --------------------------------------------------------------------------------------- consistency


def _dense_cube(cells: pl.DataFrame, n_groups: int) -> np.ndarray:
    """(group x step-index x run-index) array of curve values (NaN = missing); indices are dense ranks."""
    indexed = cells.with_columns(
        (pl.col("step").rank("dense").over("gid") - 1).cast(pl.Int64).alias("j"),
        (pl.col("rid").rank("dense").over("gid") - 1).cast(pl.Int64).alias("r"),
    )
    n_steps = int(indexed.get_column("j").to_numpy().max(initial=0)) + 1
    n_runs = int(indexed.get_column("r").to_numpy().max(initial=0)) + 1
    cube = np.full((n_groups, n_steps, n_runs), np.nan)
    cube[
        indexed.get_column("gid").to_numpy(),
        indexed.get_column("j").to_numpy(),
        indexed.get_column("r").to_numpy(),
    ] = indexed.get_column("value").to_numpy()
    return cube


def kendall_between(x: np.ndarray, y: np.ndarray, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's tau between x[..., r] and y[..., r] over the runs r present in both (NaN = absent).

    Returns (tau, number of runs used); tau is NaN when undefined (fewer than 2 runs, or one side all
    tied). tau-b = sum(sx*sy) / sqrt(sum(sx^2) * sum(sy^2)) over pair signs, which is scipy's tau-b.
    """
    present = ~np.isnan(x) & ~np.isnan(y)
    x0 = np.where(present, x, 0.0)
    y0 = np.where(present, y, 0.0)
    both = present[..., :, None] & present[..., None, :]
    sx = np.sign(x0[..., :, None] - x0[..., None, :]) * both
    sy = np.sign(y0[..., :, None] - y0[..., None, :]) * both
    numerator = (sx * sy).sum(axis=(-1, -2))
    n = present.sum(axis=-1)
    tau_b_denominator = np.sqrt((sx * sx).sum(axis=(-1, -2)) * (sy * sy).sum(axis=(-1, -2)))
    denominator = (n * (n - 1)).astype(float) if variant == "tau_a" else tau_b_denominator
    defined = (n >= 2) & (tau_b_denominator > 0)  # all tied on one side: undefined for both variants
    tau = np.where(defined, numerator / np.where(defined, denominator, 1.0), np.nan)
    return tau, n


def _consistency(cells: pl.DataFrame, groups: pl.DataFrame, config: Config, with_ci: bool) -> pl.DataFrame:
    cfg = config.consistency
    has_tokens = cells.group_by("gid").agg(pl.col("tokens").is_not_null().all().alias("has_tokens"))
    eligible = cells.join(has_tokens, on="gid").filter(
        pl.when(pl.col("has_tokens"))
        .then(pl.col("tokens") >= cfg.min_tokens)
        .otherwise(pl.col("step") >= (cfg.min_step if cfg.min_step is not None else 0))
        & (pl.col("has_tokens") | pl.lit(cfg.min_step is not None or cfg.min_tokens <= 0))
    )
    cube = _dense_cube(eligible.select("gid", "rid", "step", "value"), groups.height)
    tau, _ = kendall_between(cube[:, :-1, :], cube[:, 1:, :], cfg.variant)
    pair_defined = ~np.isnan(tau)
    pair_exists = (~np.isnan(cube[:, :-1, :])).any(axis=-1) & (~np.isnan(cube[:, 1:, :])).any(axis=-1)
    n_defined = pair_defined.sum(axis=1)
    tau_sum = np.where(pair_defined, tau, 0.0).sum(axis=1)
    mean_tau = np.where(n_defined > 0, tau_sum / np.maximum(n_defined, 1), np.nan)
    part = pl.DataFrame(
        {
            "gid": np.arange(groups.height, dtype=np.uint32),
            "consistency": mean_tau,
            "consistency_n_pairs": pair_defined.sum(axis=1),
            "consistency_n_undefined": (pair_exists & ~pair_defined).sum(axis=1),
        }
    ).with_columns(pl.col("consistency").fill_nan(None))
    part = (
        part.join(groups.select("gid", "n_runs"), on="gid")
        .join(has_tokens, on="gid", how="left")
        .with_columns(
            pl.when(pl.col("n_runs") < cfg.min_runs).then(None).otherwise(pl.col("consistency")).alias("consistency"),
            _reason(
                [
                    (pl.col("n_runs") < cfg.min_runs, f"consistency: needs >= {cfg.min_runs} runs"),
                    (
                        ~pl.col("has_tokens") & pl.lit(cfg.min_step is None and cfg.min_tokens > 0),
                        "consistency: tokens unknown (set consistency.min_step)",
                    ),
                    (
                        pl.col("consistency_n_pairs") == 0,
                        f"consistency: no pair of consecutive checkpoints past {cfg.min_tokens:,} tokens "
                        "with untied runs",
                    ),
                ]
            ).alias("consistency_reason"),
        )
        .drop("n_runs", "has_tokens")
    )
    if with_ci:
        g_idx, j_idx = np.nonzero(pair_defined)
        low, high = bootstrap_mean_ci(g_idx, tau[g_idx, j_idx], groups.height, config.bootstrap)
        part = part.join(_ci_frame(low, high, "consistency"), on="gid", how="left").with_columns(
            [
                pl.when(pl.col("consistency").is_null()).then(None).otherwise(pl.col(c)).alias(c)
                for c in ("consistency_ci_low", "consistency_ci_high")
            ]
        )
    return part


# ---------------------------------------------------------------------------------- decision accuracy


def _decision_accuracy(cells: pl.DataFrame, groups: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Share of run pairs ordered the same at the early step and the final step (ties count 0.5)."""
    n_runs = cells.group_by("gid").agg(pl.col("rid").n_unique().alias("runs"))
    common = (
        cells.group_by(["gid", "step"])
        .agg(pl.len().alias("present"))
        .join(n_runs, on="gid")
        .filter(pl.col("present") == pl.col("runs"))
    )
    final = common.group_by("gid").agg(pl.col("step").max().alias("final_step"))
    early = (
        common.join(final, on="gid")
        .filter(
            (pl.col("step") < pl.col("final_step"))
            & (pl.col("step") <= pl.col("final_step") * config.decision.early_fraction)
        )
        .group_by("gid")
        .agg(pl.col("step").max().alias("decision_step"))
    )
    steps = final.join(early, on="gid", how="inner")
    at = (
        cells.select("gid", "rid", "step", "value")
        .join(steps, on="gid")
        .filter((pl.col("step") == pl.col("final_step")) | (pl.col("step") == pl.col("decision_step")))
    )
    cube = _dense_cube(at.select("gid", "rid", "step", "value"), groups.height)
    accuracy = np.full(groups.height, np.nan)
    if cube.shape[1] == 2:
        accuracy = _pair_agreement(cube[:, 0, :], cube[:, 1, :])
    part = pl.DataFrame({"gid": np.arange(groups.height, dtype=np.uint32), "decision_accuracy": accuracy})
    return (
        part.with_columns(pl.col("decision_accuracy").fill_nan(None))
        .join(steps.select("gid", "decision_step", "final_step"), on="gid", how="left")
        .join(n_runs, on="gid", how="left")
        .with_columns(
            _reason(
                [
                    (pl.col("runs") < 2, "decision accuracy: needs >= 2 runs"),
                    (pl.col("decision_step").is_null(), "decision accuracy: no common early checkpoint"),
                ]
            ).alias("decision_reason")
        )
        .with_columns(
            pl.when(pl.col("decision_reason").is_null()).then(pl.col("decision_accuracy")).alias("decision_accuracy")
        )
        .drop("runs")
    )


def _pair_agreement(early: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Mean over unordered pairs of present runs: 1 same order, 0 opposite, 0.5 a tie on either side."""
    present = ~np.isnan(early) & ~np.isnan(final)
    e = np.where(present, early, 0.0)
    f = np.where(present, final, 0.0)
    product = np.sign(e[:, :, None] - e[:, None, :]) * np.sign(f[:, :, None] - f[:, None, :])
    score = np.where(product > 0, 1.0, np.where(product < 0, 0.0, 0.5))
    n = present.shape[1]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    mask = present[:, :, None] & present[:, None, :] & upper
    pairs = mask.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, (score * mask).sum(axis=(1, 2)) / np.maximum(pairs, 1), np.nan)


# ------------------------------------------------------------------------------------------ bootstrap


def _ci_frame(low: np.ndarray, high: np.ndarray, name: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"gid": np.arange(len(low), dtype=np.uint32), f"{name}_ci_low": low, f"{name}_ci_high": high}
    ).with_columns(pl.col(f"{name}_ci_low").fill_nan(None), pl.col(f"{name}_ci_high").fill_nan(None))


@lru_cache(maxsize=16)
def _resampling_counts(seed: int, size: int, n: int) -> np.ndarray:
    """`n` multinomial resamplings of `size` values (counts per value), seeded by (seed, size): every group of one
    size gets the same draws, whichever partition of a streamed table it is in. Cached: a streamed table asks for
    the same matrix once per partition, and drawing it costs more than using it (read-only, shared)."""
    counts = np.random.default_rng([seed, size]).multinomial(size, np.full(size, 1 / size), n)
    counts.setflags(write=False)
    return counts


def bootstrap_mean_ci(
    gid: np.ndarray, values: np.ndarray, n_groups: int, cfg: BootstrapConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean of `values` within each group (NaN for < 2 values).

    Groups of equal size share one multinomial resampling matrix, so the only loop is over distinct
    group sizes; each group's CI is an ordinary multinomial bootstrap.
    """
    low = np.full(n_groups, np.nan)
    high = np.full(n_groups, np.nan)
    gid, values = np.asarray(gid, dtype=np.int64), np.asarray(values, dtype=float)
    order = np.lexsort((values, gid))  # sorted values within a group: the CI ignores input row order
    gid, values = gid[order], values[order]
    counts = np.bincount(gid, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    alpha = (1 - cfg.confidence) / 2
    for size in np.unique(counts[counts >= 2]):
        members = np.flatnonzero(counts == size)
        matrix = values[starts[members][:, None] + np.arange(size)]
        means = matrix @ _resampling_counts(cfg.seed, int(size), cfg.n).T / size
        low[members], high[members] = np.quantile(means, [alpha, 1 - alpha], axis=1)
    return low, high
