"""The multilingual score: rescale to the random baseline, average by category, aggregate ranks.

FineTasks ("Multilingual score" in ../shared/notes/signal-definitions.md):

1. A run's task score is the mean over seeds at the run's last step for that task (or a given step),
   rescaled Open-LLM-Leaderboard style to its random baseline, ``(s - b) / (1 - b)``, clipped at 0.
2. A language score is the mean of the category means (GK, RC, RES, NLU, GEN), so that a language with
   ten reading-comprehension tasks and one knowledge task is not a reading-comprehension score.
3. Runs are ranked within each language and the ranks averaged (lower is better). Borda points and
   HELM's mean win rate are reported beside it, because rank aggregates disagree when languages do.

A run that lacks any of a language's selected tasks has no score for that language: averaging a partial
task set would compare runs on different tests. The language is listed as missing and a note says which
tasks are absent.

Usage::

    result = aggregate(table, selected, config.aggregate)
    write_ranking(result, Path("out"))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from analysis.base.io import write_csv_atomic
from analysis.config import AggregateConfig
from analysis.scores.metrics import metric_info

SELECTION_COLUMNS: tuple[str, ...] = ("task", "fewshot", "metric")
TABLE_COLUMNS: tuple[str, ...] = (
    "run", "seed", "step", "task", "language", "category", "fewshot", "metric", "score", "random_baseline",
)  # fmt: skip
_SELECTION_SCHEMA: dict[str, pl.DataType] = {
    "task": pl.String(),
    "fewshot": pl.Int64(),
    "metric": pl.String(),
}
_MAX_LISTED = 10  # items named in one error message or note before "..."


class AggregateError(ValueError):
    """A selection that cannot be aggregated over the given table; the message names what is wrong."""


@dataclass
class AggregateResult:
    """Per-run multilingual scores and rank aggregates, with the notes that explain every gap.

    Attributes:
        ranking: one row per run: run, ``score_<lang>`` per language, n_languages, missing_languages
            (comma-joined), mean_rank (FineTasks, lower is better), borda, mean_win_rate (HELM);
            sorted by mean_rank, then run.
        language_scores: long: run, language, score, rank (1 = best; ties get the average rank).
        category_scores: long: run, language, category, score, n_tasks (only complete languages).
        notes: what was excluded or missing, and why.
    """

    ranking: pl.DataFrame
    language_scores: pl.DataFrame
    category_scores: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def aggregate(
    table: pl.DataFrame,
    selected: pl.DataFrame,
    config: AggregateConfig,
    step: int | None = None,
) -> AggregateResult:
    """Multilingual score of every run in `table` over the `selected` (task, fewshot, metric) rows.

    Args:
        table: a validated score table (analysis.scores.table.SCHEMA).
        selected: one row per kept task: task, fewshot, metric (other columns are ignored).
        config: the [aggregate] section of the analysis config.
        step: score every run at this step; default: each run's last step for each task.

    Raises:
        AggregateError: empty selection, a task selected twice, selected rows absent from the table,
            a task with more than one language or category, or missing columns.
    """
    notes: list[str] = []
    _check_columns(table, TABLE_COLUMNS, "score table")
    selection = usable_selection(selected, notes)
    runs = table.select(pl.col("run").unique().sort())
    return aggregate_task_scores(task_scores(table, selection, step), selection, runs, config, step, notes, table)


@dataclass
class TaskScores:
    """What aggregation needs from the score table, per (run, task) of the selection: all later steps use only this.

    Attributes:
        stats: run, task, last (the step scored), seeds_all, language, category, n_bad (non-finite scores).
        scores: run, task, step, score (mean over seeds), baseline, n_seeds, seeds_all; sorted by run, task.

    Every row depends on one task's rows only, so the TaskScores of partitions holding whole tasks, concatenated
    (`concat_task_scores`), equal the whole table's: the streaming path (analysis.streaming) relies on
    this.
    """

    stats: pl.DataFrame
    scores: pl.DataFrame


def task_scores(table: pl.DataFrame, selected: pl.DataFrame, step: int | None = None) -> TaskScores:
    """Per (run, task) of `selected` (task, fewshot, metric): the step to score and the mean over seeds there."""
    selection = _normalise_selection(selected)
    rows = _selected_rows(table, selection)
    stats = _run_task_stats(rows, step)
    return TaskScores(stats, _task_scores(rows, stats))


def concat_task_scores(parts: list[TaskScores]) -> TaskScores:
    """The TaskScores of partitions with disjoint tasks as one, in the order `task_scores` gives."""
    return TaskScores(
        pl.concat([p.stats for p in parts], how="vertical_relaxed"),
        pl.concat([p.scores for p in parts], how="vertical_relaxed").sort("run", "task"),
    )


def aggregate_task_scores(
    scored: TaskScores,
    selected: pl.DataFrame,
    runs: pl.DataFrame,
    config: AggregateConfig,
    step: int | None,
    notes: list[str],
    table: pl.DataFrame | pl.LazyFrame,
) -> AggregateResult:
    """`aggregate` from per-(run, task) scores: `selected` is the usable selection, `runs` every run of the table
    (one column, sorted), `table` is read only to describe selected rows it lacks."""
    selection = _normalise_selection(selected)
    stats = scored.stats.join(selection.select("task"), on="task", how="semi")
    _check_found(stats, selection, table)
    tasks = _task_info(stats)
    n_bad = int(stats.get_column("n_bad").sum())
    if n_bad:
        notes.append(f"{n_bad} row(s) with a missing or non-finite score ignored")
    scores = scored.scores.join(selection.select("task"), on="task", how="semi").sort("run", "task")
    _note_partial_seeds(scores, notes)
    kept_scores, tasks = _drop_unrescalable(scores.drop("seeds_all"), tasks, notes)
    rescaled = _rescale(kept_scores, config.clip_below_baseline)
    complete = _complete_languages(rescaled, tasks, runs, step, notes)
    category_scores = _category_scores(rescaled, tasks, complete)
    language_scores = _language_scores(category_scores)
    languages = tasks.get_column("language").unique().sort().to_list()
    ranking = _ranking(language_scores, runs, languages)
    return AggregateResult(ranking, language_scores, category_scores, notes)


def write_ranking(result: AggregateResult, out_dir: Path) -> Path:
    """Write out_dir/ranking.csv and out_dir/language_scores.csv atomically; return the ranking path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(result.language_scores, out_dir / "language_scores.csv")
    return write_csv_atomic(result.ranking, out_dir / "ranking.csv")


# --- selection -----------------------------------------------------------------------------------------


def usable_selection(selected: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """The selection's keys, one row per task, without the metrics that cannot be rescaled (a note for each)."""
    return _usable_selection(_normalise_selection(selected), notes)


def rankable(selected: pl.DataFrame) -> bool:
    """Whether any selected metric can enter the ranking: a known higher-is-better one (not a perplexity)."""
    return any((info := metric_info(m)) is not None and info.higher_is_better for m in selected.get_column("metric"))


def _check_columns(frame: pl.DataFrame, required: tuple[str, ...], what: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        has = ", ".join(frame.columns)
        raise AggregateError(f"{what} lacks column(s) {', '.join(missing)}; it has {has}")


def _normalise_selection(selected: pl.DataFrame) -> pl.DataFrame:
    """The selection's key columns with the table's types; one row per task (a run has one score each)."""
    _check_columns(selected, SELECTION_COLUMNS, "selection")
    selection = selected.select(pl.col(c).cast(t) for c, t in _SELECTION_SCHEMA.items()).unique(maintain_order=True)
    if selection.is_empty():
        raise AggregateError("the selection is empty: select at least one (task, fewshot, metric)")
    twice = selection.filter(pl.len().over("task") > 1).get_column("task").unique().sort().to_list()
    if twice:
        raise AggregateError(
            f"task(s) selected with more than one (fewshot, metric): {_listing(twice)}; keep one row per task"
        )
    return selection


def _usable_selection(selection: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Drop metrics the baseline rescaling cannot handle: lower-is-better (perplexity) and unknown ones."""
    keep = []
    for task, metric in selection.select("task", "metric").iter_rows():
        info = metric_info(metric)
        if info is None:
            notes.append(f"task {task} excluded: metric {metric!r} is unknown, so its direction is unknown")
        elif not info.higher_is_better:
            notes.append(
                f"task {task} excluded: metric {metric!r} is lower-is-better and cannot be rescaled "
                "to a random baseline"
            )
        keep.append(info is not None and info.higher_is_better)
    usable = selection.filter(pl.Series(keep, dtype=pl.Boolean))
    if usable.is_empty():
        raise AggregateError("no selected task has a higher-is-better metric; nothing to aggregate")
    return usable


def _selected_rows(table: pl.DataFrame, selection: pl.DataFrame) -> pl.DataFrame:
    """Rows of `table` for the selected (task, fewshot, metric): a semi-join, cheap on a large table."""
    return table.lazy().select(TABLE_COLUMNS).join(selection.lazy(), on=list(SELECTION_COLUMNS), how="semi").collect()


def _check_found(stats: pl.DataFrame, selection: pl.DataFrame, table: pl.DataFrame | pl.LazyFrame) -> None:
    """Fail on selected rows absent from the table, naming them and what the table has for the task."""
    absent = selection.join(stats.select("task").unique(), on="task", how="anti").sort(SELECTION_COLUMNS)
    if absent.is_empty():
        return
    available = (
        table.lazy()
        .filter(pl.col("task").is_in(absent.get_column("task").implode()))
        .select("task", "fewshot", "metric")
        .unique()
        .sort("task", "fewshot", "metric")
        .collect()
    )
    described = []
    for task, fewshot, metric in absent.iter_rows():
        has = [f"({f}, {m})" for t, f, m in available.iter_rows() if t == task]
        where = f"table has (fewshot, metric) {', '.join(has)}" if has else "task not in table"
        described.append(f"({task}, {fewshot}, {metric}): {where}")
    raise AggregateError(
        "selected (task, fewshot, metric) not found in the score table: "
        + _listing(described, sep="; ")
        + "; make the selection from this table or fix its fewshot/metric"
    )


def _task_info(stats: pl.DataFrame) -> pl.DataFrame:
    """task -> language, category; a task must belong to exactly one of each."""
    info = stats.group_by("task").agg(
        pl.col("language").unique().sort(),
        pl.col("category").unique().sort(),
    )
    ambiguous = info.filter((pl.col("language").list.len() > 1) | (pl.col("category").list.len() > 1))
    if not ambiguous.is_empty():
        bad = [
            f"{t} (languages {', '.join(ls)}; categories {', '.join(cs)})"
            for t, ls, cs in ambiguous.sort("task").iter_rows()
        ]
        raise AggregateError(f"task(s) with more than one language or category: {_listing(bad, sep='; ')}")
    return info.select("task", pl.col("language").list.first(), pl.col("category").list.first()).sort("task")


# --- per (run, task) -----------------------------------------------------------------------------------

_PER = ("run", "task")
# NaN, null or infinite scores are ignored: a mean over them would be NaN, hiding every other seed.
_FINITE = pl.col("score").is_finite().fill_null(False)


def _run_task_stats(rows: pl.DataFrame, step: int | None) -> pl.DataFrame:
    """Per (run, task): the step to score (the last, or `step`) and the number of seeds.

    The last step is the last evaluated, finite or not: a failed final evaluation makes the task missing
    rather than silently scoring an older checkpoint. Language and category ride along for _task_info.
    """
    last = pl.col("step").max() if step is None else pl.lit(step, dtype=pl.Int64)
    return rows.group_by(_PER).agg(
        last.alias("last"),
        pl.col("seed").n_unique().alias("seeds_all"),
        pl.col("language").first(),
        pl.col("category").first(),
        (~_FINITE).sum().alias("n_bad"),
    )


def _task_scores(rows: pl.DataFrame, stats: pl.DataFrame) -> pl.DataFrame:
    """run, task, step, score, baseline, n_seeds, seeds_all: the mean over seeds at the step to score.

    A (run, task) with no finite score at that step is left out: for the language it is a missing task.
    """
    return (
        rows.lazy()
        .join(stats.lazy().select(*_PER, "last", "seeds_all"), on=list(_PER))
        .filter((pl.col("step") == pl.col("last")) & _FINITE)
        # Sorted so that float sums run in the same order whatever the input's row order.
        .sort("run", "task", "seed", nulls_last=True)
        .group_by(_PER, maintain_order=True)
        .agg(
            pl.col("step").first(),
            pl.col("score").mean(),
            pl.col("random_baseline").mean().alias("baseline"),
            pl.col("seed").n_unique().alias("n_seeds"),
            pl.col("seeds_all").first(),
        )
        .collect()
    )


def _note_partial_seeds(scores: pl.DataFrame, notes: list[str]) -> None:
    """Say where some seeds lack the scored step: the mean then rests on fewer replicas."""
    partial = scores.filter(pl.col("n_seeds") < pl.col("seeds_all"))
    columns = ("run", "task", "step", "n_seeds", "seeds_all")
    for run, task, step, n, n_all in partial.select(columns).iter_rows():
        notes.append(f"run {run}, task {task}: step {step} has {n} of {n_all} seeds; averaged over those")


def _drop_unrescalable(
    task_scores: pl.DataFrame, tasks: pl.DataFrame, notes: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Exclude tasks whose random baseline is >= 1: guessing is already perfect, (1 - b) is no scale."""
    bad = task_scores.filter(pl.col("baseline") >= 1.0).get_column("task").unique().sort().to_list()
    for task in bad:
        notes.append(f"task {task} excluded: random baseline >= 1 leaves nothing to rescale")
    if bad and len(bad) == tasks.height:
        raise AggregateError("every selected task has a random baseline >= 1; nothing to aggregate")
    keep = ~pl.col("task").is_in(bad)
    return task_scores.filter(keep), tasks.filter(keep)


def _rescale(task_scores: pl.DataFrame, clip: bool) -> pl.DataFrame:
    """(s - b) / (1 - b): 0 = random guessing, 1 = perfect, so tasks with different baselines average."""
    rescaled = _divide(
        task_scores.get_column("score") - task_scores.get_column("baseline"),
        1.0 - task_scores.get_column("baseline"),
    )
    if clip:
        rescaled = rescaled.clip(lower_bound=0.0)
    return task_scores.with_columns(rescaled.alias("rescaled"))


# --- per (run, language) -------------------------------------------------------------------------------


def _complete_languages(
    rescaled: pl.DataFrame,
    tasks: pl.DataFrame,
    runs: pl.DataFrame,
    step: int | None,
    notes: list[str],
) -> pl.DataFrame:
    """(run, language) pairs with every selected task of the language; a note for each other pair."""
    expected = runs.join(tasks.select("task", "language"), how="cross")
    absent = expected.join(rescaled.select("run", "task"), on=["run", "task"], how="anti")
    n_tasks = tasks.group_by("language").agg(pl.len().alias("n_expected"))
    gaps = (
        absent.sort("run", "language", "task")
        .group_by("run", "language", maintain_order=True)
        .agg(pl.col("task"))
        .join(n_tasks, on="language")
    )
    where = "" if step is None else f" at step {step}"
    for run, language, missing, n_expected in gaps.iter_rows():
        notes.append(
            f"run {run} has no {language} score: missing {len(missing)} of {n_expected} selected "
            f"task(s){where}: {_listing(missing)}"
        )
    pairs = expected.select("run", "language").unique()
    return pairs.join(gaps.select("run", "language"), on=["run", "language"], how="anti")


def _category_scores(rescaled: pl.DataFrame, tasks: pl.DataFrame, complete: pl.DataFrame) -> pl.DataFrame:
    """run, language, category, score, n_tasks: the mean rescaled score of a category's tasks."""
    return (
        rescaled.join(tasks, on="task")
        .join(complete, on=["run", "language"], how="semi")
        .sort("run", "language", "category", "task")
        .group_by("run", "language", "category", maintain_order=True)
        .agg(pl.col("rescaled").mean().alias("score"), pl.len().cast(pl.Int64).alias("n_tasks"))
    )


def _language_scores(category_scores: pl.DataFrame) -> pl.DataFrame:
    """run, language, score, rank: the mean of category means, ranked within language (1 = best)."""
    return (
        category_scores.group_by("run", "language", maintain_order=True)
        .agg(pl.col("score").mean())
        .with_columns(pl.col("score").rank("average", descending=True).over("language").alias("rank"))
        .sort("language", "rank", "run")
    )


# --- global --------------------------------------------------------------------------------------------


def _ranking(language_scores: pl.DataFrame, runs: pl.DataFrame, languages: list[str]) -> pl.DataFrame:
    """One row per run: wide language scores and the three rank aggregates.

    With n runs in a language and average rank r, runs strictly below plus half the ties is n - r (Borda)
    and the win rate over the n - 1 opponents is (n - r) / (n - 1); a language with one run has no
    opponents, so it gives no win rate.
    """
    n_runs = language_scores.select(pl.len().over("language").cast(pl.Float64)).to_series()
    borda = n_runs - language_scores.get_column("rank")
    per_language = language_scores.with_columns(
        borda.alias("borda"),
        _divide(borda, n_runs - 1.0).alias("win_rate"),  # n - 1 = 0 opponents: null
    )
    per_run = per_language.group_by("run").agg(
        *(_language_column(lang) for lang in languages),
        pl.len().cast(pl.Int64).alias("n_languages"),
        pl.col("rank").mean().alias("mean_rank"),
        pl.col("borda").sum().alias("borda"),
        pl.col("win_rate").mean().alias("mean_win_rate"),
    )
    missing = (
        runs.join(pl.DataFrame({"language": languages}, schema={"language": pl.String()}), how="cross")
        .join(language_scores.select("run", "language"), on=["run", "language"], how="anti")
        .sort("run", "language")
        .group_by("run", maintain_order=True)
        .agg(pl.col("language").str.join(",").alias("missing_languages"))
    )
    return (
        runs.join(per_run, on="run", how="left")
        .join(missing, on="run", how="left")
        .with_columns(pl.col("n_languages").fill_null(0), pl.col("missing_languages").fill_null(""))
        .select(
            "run",
            *(f"score_{lang}" for lang in languages),
            "n_languages",
            "missing_languages",
            "mean_rank",
            "borda",
            "mean_win_rate",
        )
        .sort("mean_rank", "run", nulls_last=True)
    )


def _language_column(language: str) -> pl.Expr:
    """The run's score in `language` as a column of the wide ranking (null when missing)."""
    return pl.col("score").filter(pl.col("language") == language).first().alias(f"score_{language}")


# --- helpers -------------------------------------------------------------------------------------------


def _divide(numerator: pl.Series, denominator: pl.Series) -> pl.Series:
    """Elementwise IEEE division, null where the denominator is 0.

    numpy, not polars: polars divides by a column it sees as constant through a reciprocal, which is
    one ulp off and depends on row positions, so equal inputs could stop tying after a reordering.
    """
    num = numerator.cast(pl.Float64).to_numpy()
    den = denominator.cast(pl.Float64).to_numpy()
    zero = den == 0.0
    quotient = np.divide(num, np.where(zero, 1.0, den))
    return pl.Series(numerator.name, quotient, dtype=pl.Float64).scatter(np.flatnonzero(zero), None)


def _listing(items: list[str], sep: str = ", ") -> str:
    """Join at most _MAX_LISTED items, so one message stays readable on a large table."""
    shown = sep.join(str(i) for i in items[:_MAX_LISTED])
    return shown if len(items) <= _MAX_LISTED else f"{shown}{sep}... ({len(items)} in all)"
