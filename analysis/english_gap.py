"""The gap to English over training: English score minus the language's score, per run and checkpoint.

Bridging the Gap reports the gap to English as one number per finished model. A sweep that evaluates parallel
tasks (the same benchmark in English and in each language) can show how that gap opens or closes over training,
per data mix: this module pairs every task of a language with its benchmark's English task and follows the
difference checkpoint by checkpoint.

Pairing. A language task and an English task pair when they share benchmark, formulation, few-shot count and
metric, and the English task's language is `eng`; a metric is compared without the language code lighteval puts in
generative metric names (`f1_yor` and `f1_eng` are both `f1`, the `metric` of the outputs). When a benchmark has
several English tasks for one key (two prompt variants), the English task named like the language task (`_<lang>_`
-> `_eng_`, without the English prompt-word suffix) is taken. Both prompt variants of a language pair with the same
English task; the one with English prompt words (`prompt = en`) differs from the English task only by the language
of its content, so the report and the figure show that one where it exists.

Per (pair, run, seed, step) the gap is `english score - language score` (both seeds must be evaluated). Per
(pair, run, step) the CSV holds the mean over seeds with an interval from the scores' standard errors: the
standard error of a seed mean is sqrt(sum of stderr^2) / n on each side, and the two sides are added in
quadrature. Parallel test sets share their items, so the two sides' sampling errors are positively correlated and
this interval is conservative (too wide, never too narrow). Where a side has no stderr, the spread of the per-seed
gaps (std / sqrt(n), two or more seeds) is used instead, else the interval is empty.

Whether the gap narrows is measured like the monotonicity criterion (the same step window and minimum number of
checkpoints): Spearman's rho between step and the English lead, negated, for every (run, seed) series, averaged
over series, with a bootstrap interval over series. The lead is the gap oriented so that positive means English
is better (the gap itself for higher-is-better metrics, minus the gap for bits per byte and perplexities), so
`narrowing` is +1 for a lead that shrinks at every checkpoint, whatever the metric's direction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from scipy.stats import norm

from analysis.base.io import write_csv_atomic
from analysis.config import Config
from analysis.scores.metrics import metric_info
from analysis.scores.schema import ENGLISH_PROMPT_SUFFIX
from analysis.scores.validate import checkpoint_tokens
from analysis.signal import bootstrap_mean_ci

ENGLISH = "eng"

PAIR: tuple[str, ...] = ("task", "english_task", "fewshot", "metric")
GAP_COLUMNS: tuple[str, ...] = (
    "run", "benchmark", "language", "step", "tokens", "metric", "gap", "ci_low", "ci_high",
    "task", "english_task", "formulation", "fewshot", "prompt", "english_score", "language_score", "n_seeds",
)  # fmt: skip
SUMMARY_COLUMNS: tuple[str, ...] = (
    "benchmark", "language", "task", "english_task", "formulation", "fewshot", "metric", "prompt", "run",
    "last_step", "tokens", "gap", "ci_low", "ci_high", "run_narrowing", "narrowing", "narrowing_ci_low",
    "narrowing_ci_high", "narrowing_n_series",
)  # fmt: skip
GAP_FILE = "english_gap.csv"
SUMMARY_FILE = "english_gap_summary.csv"


@dataclass
class EnglishGap:
    """The gap curves (`gaps`, one row per pair, run and step), the last checkpoint and narrowing per pair and
    run (`summary`), and notes on what could not be paired."""

    gaps: pl.DataFrame
    summary: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # the tasks the note says were left out (ambiguous)

    @property
    def empty(self) -> bool:
        return self.gaps.height == 0


def pair_tasks(table: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """(task, english_task, fewshot, metric, language_metric, english_metric, benchmark, language, formulation,
    prompt) of every pairable task; `metric` is the metric without its language code (`metric_family`); and the
    note on tasks left out."""
    pairs, left_out = _pairs(table)
    return pairs, ambiguity_notes(left_out)


def _pairs(table: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """`pair_tasks`' pairs, and the tasks left out because several English tasks pair with them."""
    keys = ["benchmark", "formulation", "fewshot", "metric_key"]
    names = table.get_column("metric").unique().to_list()
    family = pl.col("metric").replace_strict({m: metric_family(m) for m in names}, return_dtype=pl.String)
    tasks = table.select("task", "language", "benchmark", "formulation", "fewshot", "metric").unique()
    tasks = tasks.with_columns(family.alias("metric_key") if names else pl.col("metric").alias("metric_key"))
    english = (
        tasks.filter(pl.col("language") == ENGLISH)
        .drop("language")
        .rename({"task": "english_task", "metric": "english_metric"})
    )
    others = tasks.filter(pl.col("language") != ENGLISH).rename({"metric": "language_metric"})
    pairs = others.join(english, on=keys, how="inner").rename({"metric_key": "metric"})
    expected = {
        (task, language): _english_name(task, language)
        for task, language in pairs.select("task", "language").unique().iter_rows()
    }
    named = pl.struct("task", "language", "english_task").map_elements(
        lambda row: row["english_task"] == expected[(row["task"], row["language"])], return_dtype=pl.Boolean
    )
    several = pl.len().over(["task", "fewshot", "metric"]) > 1
    ambiguous = pairs.filter(several & ~named.any().over(["task", "fewshot", "metric"]))
    pairs = pairs.filter(~several | named)
    left_out = sorted(ambiguous.get_column("task").unique().to_list())
    prompt = pl.when(pl.col("task").str.ends_with(ENGLISH_PROMPT_SUFFIX)).then(pl.lit("en")).otherwise(pl.lit("native"))
    return pairs.with_columns(prompt.alias("prompt")).sort(PAIR), left_out


def ambiguity_notes(tasks: list[str]) -> list[str]:
    """The note on tasks left out because several English tasks pair with them and none is named like them."""
    if not tasks:
        return []
    names = sorted(tasks)
    return [
        f"gap to English: {len(names)} task(s) have several English counterparts and none named like them, "
        f"left out: {', '.join(names[:5])}"
    ]


def metric_family(metric: str) -> str:
    """A metric name without the language code lighteval puts in it (`f1_yor` -> `f1`, `exact_match_eng_prefix` ->
    `exact_match_prefix`): the generative tasks of two languages report their F1 under two names."""
    return _LANGUAGE_IN_METRIC.sub(r"\1", metric)


_LANGUAGE_IN_METRIC = re.compile(r"^(f1|exact_match)_[a-z]{2,3}(?=$|_)")


def _english_name(task: str, language: str) -> str:
    """The English task named like `task`: `_<lang>_` (or a final `_<lang>`) -> `_eng`, English-words suffix off."""
    base = task.removesuffix(ENGLISH_PROMPT_SUFFIX)
    if base.endswith(f"_{language}"):
        return base.removesuffix(f"_{language}") + f"_{ENGLISH}"
    return base.replace(f"_{language}_", f"_{ENGLISH}_", 1)


def _seed_gaps(table: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per (pair, run, seed, step) where both tasks were evaluated: both scores and stderrs, the gap."""
    seed = pl.col("seed").fill_null(-1)
    side = ["run", "seed", "step", "fewshot"]
    language = (
        table.rename({"metric": "language_metric"})
        .join(pairs, on=["task", "fewshot", "language_metric"], how="inner", suffix="_pair")
        .select(
            *PAIR,
            "english_metric",
            "benchmark",
            "language",
            "formulation",
            "prompt",
            "run",
            seed,
            "step",
            "tokens",
            pl.col("score").alias("language_score"),
            pl.col("stderr").alias("language_stderr"),
        )
    )
    english = table.filter(pl.col("language") == ENGLISH).select(
        pl.col("task").alias("english_task"), pl.col("metric").alias("english_metric"), "run", seed, "step",
        "fewshot", pl.col("score").alias("english_score"), pl.col("stderr").alias("english_stderr"),
    )  # fmt: skip
    joined = language.join(english, on=["english_task", "english_metric", *side], how="inner")
    metrics = joined.get_column("metric").unique().to_list()
    sign = (
        pl.col("metric").replace_strict({m: _orientation(m) for m in metrics}, return_dtype=pl.Float64)
        if metrics
        else pl.lit(1.0)  # no pair: an empty frame with the same columns
    )
    return joined.with_columns(
        (pl.col("english_score") - pl.col("language_score")).alias("gap"),
        sign.alias("sign"),
    ).with_columns((pl.col("gap") * pl.col("sign")).alias("lead"))


def _orientation(metric: str) -> float:
    info = metric_info(metric)
    return 1.0 if info is None or info.higher_is_better else -1.0


def _curves(seed_gaps: pl.DataFrame, confidence: float) -> pl.DataFrame:
    """Per (pair, run, step): the seed-mean gap and its interval (module docstring)."""
    z = float(norm.ppf(0.5 + confidence / 2))
    both = pl.col("english_stderr").is_not_null() & pl.col("language_stderr").is_not_null()
    grouped = seed_gaps.group_by([*PAIR, "run", "step"]).agg(
        *[pl.col(c).first() for c in ("benchmark", "language", "formulation", "prompt")],
        checkpoint_tokens(),
        pl.col("gap").mean(),
        pl.col("english_score").mean(),
        pl.col("language_score").mean(),
        pl.len().alias("n_seeds"),
        both.all().alias("has_stderr"),
        (pl.col("english_stderr").pow(2) + pl.col("language_stderr").pow(2)).sum().sqrt().alias("stderr_sum"),
        pl.col("gap").std(ddof=1).alias("spread"),
    )
    se = (
        pl.when(pl.col("has_stderr"))
        .then(pl.col("stderr_sum") / pl.col("n_seeds"))
        .when(pl.col("n_seeds") >= 2)
        .then(pl.col("spread") / pl.col("n_seeds").sqrt())
        .otherwise(None)
    )
    return (
        grouped.with_columns(se.alias("se"))
        .with_columns(
            (pl.col("gap") - z * pl.col("se")).alias("ci_low"), (pl.col("gap") + z * pl.col("se")).alias("ci_high")
        )
        .select(GAP_COLUMNS)
        .sort(["benchmark", "language", "task", "fewshot", "metric", "run", "step"])
    )


def _narrowing(seed_gaps: pl.DataFrame, config: Config) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per pair and run: mean rho over seeds; per pair: mean rho over series with its bootstrap interval)."""
    window = config.monotonicity
    rows = seed_gaps
    if window.step_min is not None:
        rows = rows.filter(pl.col("step") >= window.step_min)
    if window.step_max is not None:
        rows = rows.filter(pl.col("step") <= window.step_max)
    series = (
        rows.group_by([*PAIR, "run", "seed"])
        .agg(
            pl.len().alias("n"),
            (pl.col("lead").max() == pl.col("lead").min()).alias("constant"),
            pl.corr(pl.col("step"), -pl.col("lead"), method="spearman").alias("rho"),
        )
        .filter((pl.col("n") >= window.min_checkpoints) & ~pl.col("constant"))
        .sort([*PAIR, "run", "seed"])
    )
    per_run = series.group_by([*PAIR, "run"]).agg(pl.col("rho").mean().alias("run_narrowing"))
    groups = series.select(PAIR).unique().sort(PAIR).with_row_index("gid")
    keyed = series.join(groups, on=PAIR)
    low, high = bootstrap_mean_ci(
        keyed.get_column("gid").to_numpy(), keyed.get_column("rho").to_numpy(), groups.height, config.bootstrap
    )
    per_pair = keyed.group_by(PAIR).agg(pl.col("rho").mean().alias("narrowing"), pl.len().alias("narrowing_n_series"))
    per_pair = per_pair.join(
        groups.with_columns(
            pl.Series("narrowing_ci_low", low).fill_nan(None), pl.Series("narrowing_ci_high", high).fill_nan(None)
        ).drop("gid"),
        on=PAIR,
    )
    return per_run, per_pair


def english_gap(table: pl.DataFrame, config: Config) -> EnglishGap:
    """The gap to English of every pairable task of a validated score table (empty when nothing pairs)."""
    pairs, left_out = _pairs(table)
    seed_gaps = _seed_gaps(table, pairs)
    gaps = _curves(seed_gaps, config.bootstrap.confidence)
    per_run, per_pair = _narrowing(seed_gaps, config)
    last = gaps.filter(pl.col("step") == pl.col("step").max().over([*PAIR, "run"])).rename({"step": "last_step"})
    summary = (
        last.join(per_run, on=[*PAIR, "run"], how="left")
        .join(per_pair, on=PAIR, how="left")
        .select(SUMMARY_COLUMNS)
        .sort(["benchmark", "language", "task", "fewshot", "metric", "run"])
    )
    return EnglishGap(gaps, summary, ambiguity_notes(left_out), left_out)


def combine_gaps(parts: list[EnglishGap]) -> EnglishGap:
    """The gap to English of a table from the gaps of its benchmarks (pairs never cross benchmarks, and every
    output is per pair): concatenated in the order `english_gap` sorts, the note on left-out tasks rebuilt whole."""
    gaps = pl.concat([part.gaps for part in parts])
    summary = pl.concat([part.summary for part in parts])
    left_out = sorted({task for part in parts for task in part.left_out})
    return EnglishGap(
        gaps.sort(["benchmark", "language", "task", "fewshot", "metric", "run", "step"]),
        summary.sort(["benchmark", "language", "task", "fewshot", "metric", "run"]),
        ambiguity_notes(left_out),
        left_out,
    )


def display_rows(gap: EnglishGap, decisions: pl.DataFrame | None = None) -> pl.DataFrame:
    """The summary rows a reader sees first: per benchmark one (formulation, few-shot, metric), and per language
    the English-prompt-words task where there is one.

    The variant of a benchmark is the one the selection chose most often for its language tasks (`decisions`,
    column `chosen`), else the first in name order: one comparable number per language.
    """
    summary = gap.summary
    if summary.is_empty():
        return summary
    variant = ["benchmark", "formulation", "fewshot", "metric"]
    options = summary.select(variant).unique()
    if decisions is not None and {"chosen", "task", "fewshot", "metric"} <= set(decisions.columns):
        chosen = decisions.filter(pl.col("chosen")).select("task", "fewshot", "metric")
        votes = summary.select(*variant, "task").unique().join(chosen, on=["task", "fewshot", "metric"])
        options = options.join(votes.group_by(variant).agg(pl.len().alias("votes")), on=variant, how="left")
    else:
        options = options.with_columns(pl.lit(0, dtype=pl.UInt32).alias("votes"))
    best = (
        options.with_columns(pl.col("votes").fill_null(0))
        .sort(["benchmark", "votes", "formulation", "fewshot", "metric"], descending=[False, True, False, False, False])
        .group_by("benchmark", maintain_order=True)
        .first()
        .drop("votes")
    )
    rows = summary.join(best, on=variant, how="inner")
    has_en = (pl.col("prompt") == "en").any().over(["benchmark", "language"])
    return rows.filter(~has_en | (pl.col("prompt") == "en")).sort(["benchmark", "language", "run"])


def write_english_gap(gap: EnglishGap, out_dir: Path) -> list[Path]:
    """english_gap.csv and english_gap_summary.csv, each written atomically; nothing when nothing pairs."""
    if gap.empty:
        return []
    return [
        write_csv_atomic(gap.gaps, Path(out_dir) / GAP_FILE),
        write_csv_atomic(gap.summary, Path(out_dir) / SUMMARY_FILE),
    ]
