"""Validation, criteria, selection and ranking of a parquet score table too large for memory, some tasks at a time.

Every signal statistic is per (task, fewshot, metric), every selection decision is made among one task's rows,
and the ranking's first stage is per (run, task) (`analysis.aggregate.TaskScores`). So the table is read in
partitions that each hold whole tasks (`analysis.scores.stream.ScoreScan`), each partition is validated and the
in-memory functions run on it unchanged, and only their per-task outputs are kept and combined: one
implementation of each statistic, and memory bounded by a partition, not the table. Small partitions are also
faster per row than one big frame (the group-bys' hash tables stay in cache). The rules of validation across
tasks run on the partitions' summed reports, so a table is accepted or refused as `validate` would.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import polars as pl

from analysis.aggregate import (
    AggregateResult,
    TaskScores,
    aggregate_task_scores,
    concat_task_scores,
    rankable,
    task_scores,
    usable_selection,
)
from analysis.base.processes import die_with_parent, starting_children
from analysis.config import Config
from analysis.scores.schema import SCHEMA
from analysis.scores.stream import DEFAULT_PARTITION_ROWS, ScoreScan, TaskSet, merge_reports
from analysis.scores.validate import LoadReport, PartialReport, require_rows
from analysis.select import Selection, decide, select
from analysis.signal import GROUP, compute_signal

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass
class StreamedAnalysis:
    """What `analyse_scan` computed: the in-memory path's signal, selection and ranking, the load report of the
    whole table, and how it was read."""

    signal: pl.DataFrame
    selection: Selection
    ranking: AggregateResult | None
    load_report: LoadReport
    rows: int
    partitions: int


@dataclass
class _Part:
    """One partition's share of the results: its signal, kept rows, ranking inputs, runs and validation report."""

    signal: pl.DataFrame | None  # None: no row of these tasks is left to analyse
    kept: pl.DataFrame
    scored: TaskScores | None
    runs: pl.DataFrame
    report: PartialReport


def _analyse_part(
    scan: ScoreScan, tasks: TaskSet, config: Config, with_ci: bool, step: int | None, chosen: pl.DataFrame | None
) -> _Part:
    """Validate one partition, then its signal and decisions (or the given `chosen` rows) and ranking inputs."""
    part, report = scan.read(tasks, sort=False)  # nothing below depends on row order
    if part.is_empty():  # every row had a NaN score: nothing of these tasks enters the analysis (as in memory)
        return _Part(None, pl.DataFrame(schema=dict.fromkeys(GROUP, pl.String)), None, part.select("run"), report)
    if chosen is None:
        signal = compute_signal(part, config, with_ci=with_ci)
        kept = decide(signal, config).filter(pl.col("kept")).select(GROUP)
    else:
        signal = pl.DataFrame()
        kept = chosen.join(part.select(pl.col("task").unique()), on="task", how="semi")
    scored = None if kept.is_empty() else task_scores(part, kept, step)
    return _Part(signal, kept, scored, part.select(pl.col("run").unique()), report)


def _parts(
    scan: ScoreScan,
    partitions: list[TaskSet],
    config: Config,
    with_ci: bool,
    step: int | None,
    chosen: pl.DataFrame | None,
    workers: int,
    progress: Progress | None,
) -> Iterator[_Part]:
    """Each partition's _Part, in order: in this process, or in `workers` single-threaded processes (one partition
    each at a time; on the 2-core bench machine 2 workers took half the time of polars' own threads in one
    process, `make bench-scale`)."""
    total = len(partitions)
    if workers <= 1 or total <= 1:
        for done, tasks in enumerate(partitions, 1):
            yield _analyse_part(scan, tasks, config, with_ci, step, chosen)
            if progress:
                progress("reading, validating, statistics", done, total)
        return
    with _single_threaded_children():
        pool = ProcessPoolExecutor(min(workers, total), mp_context=mp.get_context("spawn"), initializer=die_with_parent)
        with pool:
            args = (repeat(scan), partitions, repeat(config), repeat(with_ci), repeat(step), repeat(chosen))
            with starting_children():  # the workers start (Ctrl-C held) on the first submission
                pending = pool.map(_analyse_part, *args)
            for done, result in enumerate(pending, 1):
                yield result
                if progress:
                    progress("reading, validating, statistics", done, total)


_ONE_THREAD = ("POLARS_MAX_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def _single_threaded_children() -> Iterator[None]:
    """One thread per worker process started inside, for polars and for numpy's BLAS (the bootstrap's matrix
    products): read by each worker at import. Without the BLAS limit, two workers on two cores ran up to six busy
    threads (load 4.5) and took a third longer."""
    previous = {name: os.environ.get(name) for name in _ONE_THREAD}
    os.environ.update(dict.fromkeys(_ONE_THREAD, "1"))
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def analyse_scan(
    scan: ScoreScan,
    config: Config,
    *,
    with_ci: bool = False,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
    step: int | None = None,
    workers: int = 1,
    progress: Progress | None = None,
) -> StreamedAnalysis:
    """Validate, then `compute_signal`, `select` and (when a kept task is rankable) `aggregate`, by partitions.

    Equal to the in-memory path value by value (tests/analysis/test_streaming_analysis.py, `make bench-scale` at 1M
    rows). `workers` > 1 analyses that many partitions at once in child processes (memory: one partition each).
    """
    partitions = scan.partitions(partition_rows)
    parts = list(_parts(scan, partitions, config, with_ci, step, None, workers, progress))
    load_report = _load_report(scan, parts)
    signal = pl.concat([p.signal for p in parts if p.signal is not None], how="vertical_relaxed").sort(list(GROUP))
    selection = select(signal, config)
    _check_decisions_per_task(selection, parts)
    kept = selection.kept.select(GROUP)
    ranking = None
    if rankable(kept):
        notes: list[str] = []
        ranking = _ranking(scan, parts, usable_selection(kept, notes), config, step, notes)
    return StreamedAnalysis(signal, selection, ranking, load_report, scan.rows, len(partitions))


def rank_scan(
    scan: ScoreScan,
    chosen: pl.DataFrame,
    config: Config,
    *,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
    step: int | None = None,
    workers: int = 1,
    progress: Progress | None = None,
) -> tuple[AggregateResult, LoadReport]:
    """`aggregate` over the `chosen` (task, fewshot, metric) rows (a decisions.csv's kept ones), by partitions,
    without the statistics; raises AggregateError as `aggregate` would (an empty selection, a task the table
    lacks)."""
    notes: list[str] = []
    usable = usable_selection(chosen, notes)  # an empty selection fails before anything is read
    partitions = scan.partitions(partition_rows)
    parts = list(_parts(scan, partitions, config, False, step, chosen, workers, progress))
    load_report = _load_report(scan, parts)
    return _ranking(scan, parts, usable, config, step, notes), load_report


def _load_report(scan: ScoreScan, parts: Sequence[_Part]) -> LoadReport:
    """The whole table's load report from the partitions' (the rules across tasks raise here)."""
    report = merge_reports([p.report for p in parts], scan.source)
    require_rows(report.n_rows, report, scan.rows)
    if scan.known_report is not None:  # validated whole when it was read (a CSV, lm-eval output): its notes
        return scan.known_report
    report.notes += scan.notes
    return report


def _ranking(
    scan: ScoreScan, parts: Sequence[_Part], usable: pl.DataFrame, config: Config, step: int | None, notes: list[str]
) -> AggregateResult:
    """`aggregate_task_scores` of the partitions' per-(run, task) scores; the raw file describes what is missing."""
    runs = pl.concat([p.runs for p in parts]).unique().sort("run")
    scored = [p.scored for p in parts if p.scored is not None]
    combined = concat_task_scores(scored) if scored else task_scores(pl.DataFrame(schema=SCHEMA), usable, step)
    return aggregate_task_scores(
        combined, usable, runs, config.aggregate, step, notes, pl.scan_parquet(scan.path), config.bootstrap
    )


def _check_decisions_per_task(selection: Selection, parts: Sequence[_Part]) -> None:
    """Decisions are per task, so the partitions' kept rows are the whole selection's; a difference is a bug here."""
    by_parts = pl.concat([p.kept for p in parts if p.signal is not None]).sort(list(GROUP))
    if not selection.kept.select(GROUP).sort(list(GROUP)).equals(by_parts):
        raise RuntimeError("per-partition decisions differ from the whole selection's: a task spans partitions")


def analyse_parquet(
    source: Path | str,
    config: Config,
    *,
    with_ci: bool = False,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
    step: int | None = None,
    workers: int = 1,
) -> StreamedAnalysis:
    """`analyse_scan` of the parquet score table at `source`."""
    with ScoreScan.open(source) as scan:
        return analyse_scan(scan, config, with_ci=with_ci, partition_rows=partition_rows, step=step, workers=workers)
