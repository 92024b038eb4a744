"""The multilingual score: rescale to the random baseline, average by category, aggregate ranks.

FineTasks ("Multilingual score" in ../shared/notes/signal-definitions.md), extended to every kind of task:

1. A run's task score is the mean over seeds at the run's last step for that task (or a given step),
   rescaled Open-LLM-Leaderboard style between its random baseline b and a perfect score p,
   ``(s - b) / (p - b)``, clipped at 0: for accuracy ``(s - b) / (1 - b)``; for bits per byte, whose baseline is
   the uniform byte model's 8 bits, ``1 - s / 8``; a perplexity on its logarithm.
2. A language score is the mean of the category means (GK, RC, RES, NLU, GEN), so that a language with
   ten reading-comprehension tasks and one knowledge task is not a reading-comprehension score. A language
   with a kept task that has no baseline (a word perplexity, a foreign table's metric) is scored on one other
   scale for all its tasks: each task's win rate, the share of the other runs it beats (direction-aware, ties
   half), averaged the same way; the `kind` column says which.
3. Runs are ranked within each language and the ranks averaged (lower is better). Borda points and
   HELM's mean win rate are reported beside it, because rank aggregates disagree when languages do.
4. Uncertainty from the seeds: percentile bootstrap intervals of every language score and mean rank (each run's
   seeds resampled with replacement, the same draw for all its tasks: a seed is one trained model), and per
   language and pair of runs the seed-paired difference of their per-seed language scores with its t interval
   (`analysis.orderings.seed_paired`): `language_pairs` says which orderings the seeds resolve.

A run that lacks any of a language's selected tasks has no score for that language: averaging a partial
task set would compare runs on different tests. The language is listed as missing and a note says which
tasks are absent.

Usage::

    result = aggregate(table, selected, config.aggregate, bootstrap=config.bootstrap)
    write_ranking(result, Path("out"))
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import rankdata

from analysis.base.io import write_csv_atomic
from analysis.config import AggregateConfig, BootstrapConfig
from analysis.orderings import seed_paired
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
            (comma-joined), mean_rank (FineTasks, lower is better) with its bootstrap interval
            (mean_rank_ci_low, mean_rank_ci_high), borda, mean_win_rate (HELM); sorted by mean_rank, then run.
        language_scores: long: run, language, kind ("rescaled" or "win_rate"), score, ci_low, ci_high (bootstrap
            over seeds), rank (1 = best; ties get the average rank), tied_with (the runs whose difference from
            this one the seeds do not resolve, comma-joined).
        category_scores: long: run, language, category, score, n_tasks (only complete languages).
        language_pairs: per language and pair of runs (run_a before run_b by name): n_seeds, difference (run_a
            minus run_b, seed-paired language scores), ci_low, ci_high, resolved.
        notes: what was excluded or missing, and why.
    """

    ranking: pl.DataFrame
    language_scores: pl.DataFrame
    category_scores: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    language_pairs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PAIR_SCHEMA))


def aggregate(
    table: pl.DataFrame,
    selected: pl.DataFrame,
    config: AggregateConfig,
    step: int | None = None,
    *,
    bootstrap: BootstrapConfig | None = None,
) -> AggregateResult:
    """Multilingual score of every run in `table` over the `selected` (task, fewshot, metric) rows.

    Args:
        table: a validated score table (analysis.scores.schema.SCHEMA).
        selected: one row per kept task: task, fewshot, metric (other columns are ignored).
        config: the [aggregate] section of the analysis config.
        step: score every run at this step; default: each run's last step for each task.
        bootstrap: replicates, seed and confidence of the intervals (default: BootstrapConfig()).

    Raises:
        AggregateError: empty selection, a task selected twice, selected rows absent from the table,
            a task with more than one language or category, or missing columns.
    """
    notes: list[str] = []
    _check_columns(table, TABLE_COLUMNS, "score table")
    selection = usable_selection(selected, notes)
    runs = table.select(pl.col("run").unique().sort())
    return aggregate_task_scores(
        task_scores(table, selection, step), selection, runs, config, step, notes, table, bootstrap
    )


@dataclass
class TaskScores:
    """What aggregation needs from the score table, per (run, task) of the selection: all later steps use only this.

    Attributes:
        stats: run, task, last (the step scored), seeds_all, language, category, n_bad (non-finite scores).
        scores: run, task, step, score (mean over seeds), baseline, n_seeds, seeds_all; sorted by run, task.
        seed_scores: run, task, seed (a null seed as -1), score: each seed's finite score at the scored step.

    Every row depends on one task's rows only, so the TaskScores of partitions holding whole tasks, concatenated
    (`concat_task_scores`), equal the whole table's: the streaming path (analysis.streaming) relies on
    this.
    """

    stats: pl.DataFrame
    scores: pl.DataFrame
    seed_scores: pl.DataFrame


def task_scores(table: pl.DataFrame, selected: pl.DataFrame, step: int | None = None) -> TaskScores:
    """Per (run, task) of `selected` (task, fewshot, metric): the step to score and the mean over seeds there."""
    selection = _normalise_selection(selected)
    rows = _selected_rows(table, selection)
    stats = _run_task_stats(rows, step)
    seeds = _seed_scores(rows, stats)
    return TaskScores(stats, _task_scores(seeds, stats), seeds)


def concat_task_scores(parts: list[TaskScores]) -> TaskScores:
    """The TaskScores of partitions with disjoint tasks as one, in the order `task_scores` gives."""
    return TaskScores(
        pl.concat([p.stats for p in parts], how="vertical_relaxed"),
        pl.concat([p.scores for p in parts], how="vertical_relaxed").sort("run", "task"),
        pl.concat([p.seed_scores for p in parts], how="vertical_relaxed").sort("run", "task", "seed"),
    )


def aggregate_task_scores(
    scored: TaskScores,
    selected: pl.DataFrame,
    runs: pl.DataFrame,
    config: AggregateConfig,
    step: int | None,
    notes: list[str],
    table: pl.DataFrame | pl.LazyFrame,
    bootstrap: BootstrapConfig | None = None,
) -> AggregateResult:
    """`aggregate` from per-(run, task) scores: `selected` is the usable selection, `runs` every run of the table
    (one column, sorted), `table` is read only to describe selected rows it lacks."""
    selection = _normalise_selection(selected)
    stats = scored.stats.join(selection.select("task"), on="task", how="semi")
    _check_found(stats, selection, table)
    tasks = _task_info(stats).join(selection.select("task", "metric"), on="task", how="left")
    n_bad = int(stats.get_column("n_bad").sum())
    if n_bad:
        notes.append(f"{n_bad} row(s) with a missing or non-finite score ignored")
    scores = scored.scores.join(selection.select("task"), on="task", how="semi").sort("run", "task")
    _note_partial_seeds(scores, notes)
    scores, tasks = _drop_unrescalable(scores.drop("seeds_all"), tasks, notes)
    scales = _task_scales(scores, tasks, notes)
    complete = _complete_languages(scores, tasks, runs, step, notes)
    grid = _Grid.build(scales, runs.get_column("run").to_list(), complete, config.clip_below_baseline)
    seeds = scored.seed_scores.join(scales.select("task"), on="task", how="semi")
    return grid.result(scores, seeds, bootstrap or BootstrapConfig(), notes)


def write_ranking(result: AggregateResult, out_dir: Path) -> Path:
    """Write out_dir/ranking.csv, language_scores.csv and language_pairs.csv atomically; return the ranking path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(result.language_scores, out_dir / "language_scores.csv")
    write_csv_atomic(result.language_pairs, out_dir / "language_pairs.csv")
    return write_csv_atomic(result.ranking, out_dir / "ranking.csv")


# --- selection -----------------------------------------------------------------------------------------


def usable_selection(selected: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """The selection's keys, one row per task, without the metrics that cannot be rescaled (a note for each)."""
    return _usable_selection(_normalise_selection(selected), notes)


def rankable(selected: pl.DataFrame) -> bool:
    """Whether any selected metric can enter the ranking: one whose direction is known (every kind can: rescaled
    on its baseline, or by win rate)."""
    return any(metric_info(m) is not None for m in selected.get_column("metric"))


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
    """Drop metrics whose direction is unknown: neither a rescaling nor a win rate can orient them."""
    keep = []
    for task, metric in selection.select("task", "metric").iter_rows():
        info = metric_info(metric)
        if info is None:
            notes.append(f"task {task} excluded: metric {metric!r} is unknown, so its direction is unknown")
        keep.append(info is not None)
    usable = selection.filter(pl.Series(keep, dtype=pl.Boolean))
    if usable.is_empty():
        raise AggregateError("no selected task has a metric of known direction; nothing to aggregate")
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


def _seed_scores(rows: pl.DataFrame, stats: pl.DataFrame) -> pl.DataFrame:
    """run, task, step, seed (null as -1), score, baseline: each seed's finite score at the step to score."""
    return (
        rows.lazy()
        .join(stats.lazy().select(*_PER, "last"), on=list(_PER))
        .filter((pl.col("step") == pl.col("last")) & _FINITE)
        .select(*_PER, "step", pl.col("seed").fill_null(-1), "score", pl.col("random_baseline").alias("baseline"))
        .sort("run", "task", "seed")
        .collect()
    )


def _task_scores(seeds: pl.DataFrame, stats: pl.DataFrame) -> pl.DataFrame:
    """run, task, step, score, baseline, n_seeds, seeds_all: the mean over seeds at the step to score.

    A (run, task) with no finite score at that step is left out: for the language it is a missing task.
    """
    # Sorted by seed (`_seed_scores`), so that float sums run in the same order whatever the input's row order.
    return (
        seeds.group_by(_PER, maintain_order=True)
        .agg(
            pl.col("step").first(),
            pl.col("score").mean(),
            pl.col("baseline").mean(),
            pl.col("seed").n_unique().alias("n_seeds"),
        )
        .join(stats.select(*_PER, "seeds_all"), on=list(_PER), how="left", maintain_order="left")
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
    """Exclude tasks whose random baseline is already a perfect score (or better): there is nothing to rescale
    (an accuracy baseline >= 1, a bits-per-byte baseline <= 0)."""
    baselines = task_scores.group_by("task").agg(pl.col("baseline").drop_nulls().first())
    rows = tasks.join(baselines, on="task", how="left").select("task", "metric", "baseline").sort("task")
    bad = [task for task, metric, baseline in rows.iter_rows() if _beyond_perfect(metric, baseline)]
    for task in bad:
        notes.append(f"task {task} excluded: its random baseline is already a perfect score; nothing to rescale")
    if bad and len(bad) == tasks.height:
        raise AggregateError("every selected task has a random baseline at a perfect score; nothing to aggregate")
    keep = ~pl.col("task").is_in(bad)
    return task_scores.filter(keep), tasks.filter(keep)


def _beyond_perfect(metric: str, baseline: float | None) -> bool:
    info = metric_info(metric)
    if info is None or baseline is None or np.isnan(baseline):
        return False
    return baseline >= info.perfect if info.higher_is_better else baseline <= info.perfect


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


def _task_scales(scores: pl.DataFrame, tasks: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Per task: language, category, how its score is put on the common scale (baseline, perfect score, log scale,
    direction) and its language's kind: "rescaled" when every task of the language has a baseline, else
    "win_rate" (a note names the tasks without one)."""
    baselines = scores.group_by("task").agg(pl.col("baseline").drop_nulls().first())
    rows = []
    for task, language, category, metric, baseline in (
        tasks.join(baselines, on="task", how="left")
        .select("task", "language", "category", "metric", "baseline")
        .sort("task")
        .iter_rows()
    ):
        info = metric_info(metric)
        assert info is not None  # unknown metrics left the selection in _usable_selection
        rows.append({"task": task, "language": language, "category": category, "metric": metric,
                     "baseline": baseline, "perfect": info.perfect, "log_scale": info.log_scale,
                     "higher_is_better": info.higher_is_better})  # fmt: skip
    scales = pl.DataFrame(rows, schema=_SCALE_SCHEMA)
    without = scales.filter(pl.col("baseline").is_null())
    for language, missing in without.group_by("language", maintain_order=True).agg("task").sort("language").iter_rows():
        notes.append(
            f"{language}: scored by win rate (the share of other runs each task's score beats), not on rescaled "
            f"scores: {_listing(missing)} ha{'s' if len(missing) == 1 else 've'} no random baseline"
        )
    by_win_rate = without.get_column("language").unique().to_list()
    kind = pl.when(pl.col("language").is_in(by_win_rate)).then(pl.lit(WIN_RATE)).otherwise(pl.lit(RESCALED))
    return scales.with_columns(kind.alias("kind"))


RESCALED, WIN_RATE = "rescaled", "win_rate"
_SCALE_SCHEMA: dict[str, pl.DataType] = {
    "task": pl.String(), "language": pl.String(), "category": pl.String(), "metric": pl.String(),
    "baseline": pl.Float64(), "perfect": pl.Float64(), "log_scale": pl.Boolean(), "higher_is_better": pl.Boolean(),
}  # fmt: skip
PAIR_SCHEMA: dict[str, pl.DataType] = {
    "language": pl.String(), "run_a": pl.String(), "run_b": pl.String(), "n_seeds": pl.UInt32(),
    "difference": pl.Float64(), "ci_low": pl.Float64(), "ci_high": pl.Float64(), "resolved": pl.Boolean(),
}  # fmt: skip
_BOOTSTRAP_CELLS = 4_000_000  # replicates x runs x runs x tasks computed at once (memory: 8 bytes each)


@dataclass(frozen=True)
class _Grid:
    """The selection as arrays: runs x tasks scores in, runs x languages (and categories) scores out.

    One function (`scores_of`) turns any runs x tasks matrix of raw scores into language scores: the seed means
    (the estimate), one seed's scores (the paired differences) and bootstrap replicates (the intervals) all go
    through it. `complete` masks the (run, language) pairs whose run lacks a task of the language.
    """

    runs: list[str]
    tasks: list[str]
    scales: pl.DataFrame
    languages: list[str]
    cells: list[tuple[str, str]]  # the (language, category) pairs
    cell_tasks: list[np.ndarray]  # per cell: the indices of its tasks
    language_cells: list[np.ndarray]  # per language: the indices of its cells
    cell_language: np.ndarray  # per cell: the index of its language
    win_rate_tasks: np.ndarray  # bool per task: scored by win rate
    complete: np.ndarray  # runs x languages
    clip: bool

    @staticmethod
    def build(scales: pl.DataFrame, runs: list[str], complete: pl.DataFrame, clip: bool) -> _Grid:
        tasks = scales.get_column("task").to_list()
        task_cells = list(scales.select("language", "category").iter_rows())
        cells = sorted(set(task_cells))
        languages = sorted({language for language, _ in cells})
        cell_tasks = [np.flatnonzero([c == cell for c in task_cells]) for cell in cells]
        language_cells = [np.flatnonzero([lang == language for lang, _ in cells]) for language in languages]
        cell_language = np.array([languages.index(language) for language, _ in cells], dtype=int)
        done = set(complete.select("run", "language").iter_rows())
        mask = np.array([[(run, language) in done for language in languages] for run in runs], dtype=bool)
        mask = mask.reshape(len(runs), len(languages))
        win = scales.get_column("kind").to_numpy() == WIN_RATE
        return _Grid(runs, tasks, scales, languages, cells, cell_tasks, language_cells, cell_language, win, mask, clip)

    def matrix(self, frame: pl.DataFrame, value: str = "score") -> np.ndarray:
        """runs x tasks of `frame`'s `value` (run, task columns), NaN where absent."""
        out = np.full((len(self.runs), len(self.tasks)), np.nan)
        run_of = {run: i for i, run in enumerate(self.runs)}
        task_of = {task: i for i, task in enumerate(self.tasks)}
        for run, task, score in frame.select("run", "task", value).iter_rows():
            if run in run_of and task in task_of and score is not None:
                out[run_of[run], task_of[task]] = score
        return out

    def units(self, raw: np.ndarray) -> np.ndarray:
        """(..., runs, tasks) raw scores -> each task on its language's scale: rescaled between baseline and perfect
        score, or the run's win rate among the runs scored on the task."""
        baseline = self.scales.get_column("baseline").fill_null(np.nan).to_numpy()
        perfect = self.scales.get_column("perfect").to_numpy()
        log_scale = self.scales.get_column("log_scale").to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(log_scale, np.log(raw), raw)
            low = np.where(log_scale, np.log(baseline), baseline)
            high = np.where(log_scale, np.log(perfect), perfect)
            rescaled = (value - low) / (high - low)
        if self.clip:
            rescaled = np.where(np.isnan(rescaled), np.nan, np.maximum(rescaled, 0.0))
        if not self.win_rate_tasks.any():
            return rescaled
        sign = np.where(self.scales.get_column("higher_is_better").to_numpy(), 1.0, -1.0)
        return np.where(self.win_rate_tasks, _win_rates(raw * sign), rescaled)

    def scores_of(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(..., runs, tasks) raw scores -> category scores (..., runs, cells) and language scores
        (..., runs, languages), NaN where the run lacks the language or a task's score.

        Means over column subsets, not a weighted matrix product: a product may round two equal rows differently,
        and runs with equal scores must tie."""
        units = self.units(raw)
        categories = np.stack([units[..., cell].mean(axis=-1) for cell in self.cell_tasks], axis=-1)
        languages = np.stack([categories[..., cells].mean(axis=-1) for cells in self.language_cells], axis=-1)
        languages[..., ~self.complete] = np.nan
        categories[..., ~self.complete[:, self.cell_language]] = np.nan
        return categories, languages

    def result(
        self, scores: pl.DataFrame, seeds: pl.DataFrame, bootstrap: BootstrapConfig, notes: list[str]
    ) -> AggregateResult:
        categories, languages = self.scores_of(self.matrix(scores))
        replicates = self.bootstrap_languages(seeds, bootstrap)
        low, high = _interval(replicates, bootstrap.confidence, languages.shape)
        rank_low, rank_high = _interval(_mean_ranks(replicates), bootstrap.confidence, (len(self.runs),))
        pairs = self.language_pairs(seeds, bootstrap.confidence)
        language_scores = self.language_frame(languages, low, high, pairs)
        ranking = _ranking(language_scores, self.runs, self.languages, rank_low, rank_high)
        return AggregateResult(ranking, language_scores, self.category_frame(categories), notes, pairs)

    def seed_matrices(self, seeds: pl.DataFrame) -> tuple[list[int], np.ndarray]:
        """The seeds and a runs x tasks x seeds array of each seed's score (NaN where absent)."""
        seed_ids = sorted(seeds.get_column("seed").unique().to_list())
        out = np.full((len(self.runs), len(self.tasks), len(seed_ids)), np.nan)
        for position, seed in enumerate(seed_ids):
            out[:, :, position] = self.matrix(seeds.filter(pl.col("seed") == seed))
        return seed_ids, out

    def bootstrap_languages(self, seeds: pl.DataFrame, config: BootstrapConfig) -> np.ndarray:
        """replicates x runs x languages: language scores with each run's seeds drawn with replacement."""
        _, per_seed = self.seed_matrices(seeds)
        if per_seed.shape[2] == 0 or config.n <= 0:
            return np.empty((0, len(self.runs), len(self.languages)))
        present = ~np.isnan(per_seed).all(axis=1)  # runs x seeds: the seeds a run has
        rng = np.random.default_rng(config.seed)
        counts = np.zeros((config.n, len(self.runs), per_seed.shape[2]))
        for r in range(len(self.runs)):
            have = np.flatnonzero(present[r])
            if have.size:
                counts[:, r, have] = rng.multinomial(have.size, np.full(have.size, 1.0 / have.size), size=config.n)
        finite = ~np.isnan(per_seed)
        values = np.where(finite, per_seed, 0.0)
        block = max(1, _BOOTSTRAP_CELLS // max(1, len(self.runs) ** 2 * len(self.tasks)))
        out = []
        for start in range(0, config.n, block):
            c = counts[start : start + block]
            with np.errstate(invalid="ignore", divide="ignore"):
                raw = np.einsum("brs,rts->brt", c, values) / np.einsum("brs,rts->brt", c, finite.astype(float))
            out.append(self.scores_of(raw)[1])
        return np.concatenate(out)

    def language_pairs(self, seeds: pl.DataFrame, confidence: float) -> pl.DataFrame:
        """Per language and pair of runs: the seed-paired difference of their per-seed language scores."""
        seed_ids, per_seed = self.seed_matrices(seeds)
        rows = []
        for position, seed in enumerate(seed_ids):
            _, languages = self.scores_of(per_seed[:, :, position])
            for r, run in enumerate(self.runs):
                for j, language in enumerate(self.languages):
                    if not np.isnan(languages[r, j]):
                        rows.append((language, run, seed, float(languages[r, j])))
        frame = pl.DataFrame(rows, schema={"language": pl.String(), "run": pl.String(), "seed": pl.Int64(),
                                           "score": pl.Float64()}, orient="row")  # fmt: skip
        return seed_paired(frame, ("language",), "score", confidence).cast(PAIR_SCHEMA)  # type: ignore[arg-type]

    def language_frame(
        self, languages: np.ndarray, low: np.ndarray, high: np.ndarray, pairs: pl.DataFrame
    ) -> pl.DataFrame:
        """run, language, kind, score, ci_low, ci_high, rank, tied_with (long; complete languages only)."""
        kind_of = dict(self.scales.select("language", "kind").unique("language").iter_rows())
        unresolved: dict[tuple[str, str], list[str]] = {}
        ties = pairs.filter(~pl.col("resolved")).select("language", "run_a", "run_b")
        for language, run_a, run_b in ties.iter_rows():
            unresolved.setdefault((language, run_a), []).append(run_b)
            unresolved.setdefault((language, run_b), []).append(run_a)
        rows = [
            {"run": run, "language": language, "kind": kind_of[language], "score": float(languages[r, j]),
             "ci_low": _finite(low[r, j]), "ci_high": _finite(high[r, j]),
             "tied_with": ",".join(sorted(unresolved.get((language, run), [])))}
            for r, run in enumerate(self.runs)
            for j, language in enumerate(self.languages)
            if not np.isnan(languages[r, j])
        ]  # fmt: skip
        schema = {"run": pl.String(), "language": pl.String(), "kind": pl.String(), "score": pl.Float64(),
                  "ci_low": pl.Float64(), "ci_high": pl.Float64(), "tied_with": pl.String()}  # fmt: skip
        frame = pl.DataFrame(rows, schema=schema)
        return (
            frame.with_columns(pl.col("score").rank("average", descending=True).over("language").alias("rank"))
            .select("run", "language", "kind", "score", "ci_low", "ci_high", "rank", "tied_with")
            .sort("language", "rank", "run")
        )

    def category_frame(self, categories: np.ndarray) -> pl.DataFrame:
        """run, language, category, score, n_tasks (long; complete languages only)."""
        rows = [
            (run, language, category, float(categories[r, c]), len(self.cell_tasks[c]))
            for r, run in enumerate(self.runs)
            for c, (language, category) in enumerate(self.cells)
            if not np.isnan(categories[r, c])
        ]
        schema = {"run": pl.String(), "language": pl.String(), "category": pl.String(), "score": pl.Float64(),
                  "n_tasks": pl.Int64()}  # fmt: skip
        return pl.DataFrame(rows, schema=schema, orient="row").sort("run", "language", "category")


def _win_rates(oriented: np.ndarray) -> np.ndarray:
    """(..., runs, tasks) oriented scores (higher is better) -> each run's share of the other scored runs it beats
    on the task, ties counting half; NaN where the run has no score or is the only one scored."""
    valid = ~np.isnan(oriented)
    a, b = oriented[..., :, None, :], oriented[..., None, :, :]
    both = valid[..., :, None, :] & valid[..., None, :, :]
    beats = ((a > b) & both).sum(axis=-2) + 0.5 * ((a == b) & both).sum(axis=-2) - 0.5 * valid
    opponents = valid.sum(axis=-2, keepdims=True) - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = beats / opponents
    return np.where(valid & (opponents > 0), rates, np.nan)


def _mean_ranks(languages: np.ndarray) -> np.ndarray:
    """(..., runs, languages) scores -> (..., runs) the mean over languages of each run's rank (1 = best, ties
    averaged) among the runs scored in the language; NaN for a run scored in no language."""
    if languages.size == 0:
        return np.full(languages.shape[:-1], np.nan)
    ranks = rankdata(-languages, method="average", axis=-2, nan_policy="omit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a run without any language: NaN, said by the caller
        return np.nanmean(ranks, axis=-1)


def _interval(replicates: np.ndarray, confidence: float, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval over the first axis of `replicates` (NaN replicates ignored); NaN without any."""
    if replicates.shape[0] == 0:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    alpha = (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells: no interval
        low, high = np.nanquantile(replicates, [alpha, 1 - alpha], axis=0)
    return low, high


def _finite(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _ranking(
    language_scores: pl.DataFrame,
    runs: list[str],
    languages: list[str],
    rank_low: np.ndarray,
    rank_high: np.ndarray,
) -> pl.DataFrame:
    """One row per run: wide language scores and the three rank aggregates.

    With n runs in a language and average rank r, runs strictly below plus half the ties is n - r (Borda)
    and the win rate over the n - 1 opponents is (n - r) / (n - 1); a language with one run has no
    opponents, so it gives no win rate.
    """
    run_frame = pl.DataFrame({"run": runs}, schema={"run": pl.String()})
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
    intervals = run_frame.with_columns(
        pl.Series("mean_rank_ci_low", rank_low, dtype=pl.Float64).fill_nan(None),
        pl.Series("mean_rank_ci_high", rank_high, dtype=pl.Float64).fill_nan(None),
    )
    missing = (
        run_frame.join(pl.DataFrame({"language": languages}, schema={"language": pl.String()}), how="cross")
        .join(language_scores.select("run", "language"), on=["run", "language"], how="anti")
        .sort("run", "language")
        .group_by("run", maintain_order=True)
        .agg(pl.col("language").str.join(",").alias("missing_languages"))
    )
    return (
        run_frame.join(per_run, on="run", how="left")
        .join(missing, on="run", how="left")
        .join(intervals, on="run", how="left")
        .with_columns(pl.col("n_languages").fill_null(0), pl.col("missing_languages").fill_null(""))
        .select(
            "run",
            *(f"score_{lang}" for lang in languages),
            "n_languages",
            "missing_languages",
            "mean_rank",
            "mean_rank_ci_low",
            "mean_rank_ci_high",
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
