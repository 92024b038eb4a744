"""Criteria, selection and ranking of a parquet score table too large for memory, a range of tasks at a time.

Every signal statistic is per (task, fewshot, metric), every selection decision is made among one task's rows,
and the ranking's first stage is per (run, task) (`analysis.aggregate.TaskScores`). So the table is read
in partitions that each hold whole tasks (contiguous ranges of task names, sized from one pass over the task
column), the in-memory functions run on each partition unchanged, and only their per-task outputs are kept and
combined: one implementation of each statistic, and memory bounded by a partition, not the table. Small
partitions are also faster per row than one big frame (the group-bys' hash tables stay in cache).

A file written in task order (`bench.synthetic.write_synthetic_parquet`) is read about once in all: row-group
statistics let each range skip the other row groups. An unordered file gives the same results, but each range
then scans the whole file. The table is taken as valid (`analysis.scores.table.validate` needs it in memory).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
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
from analysis.select import Selection, decide, select
from analysis.signal import GROUP, compute_signal

DEFAULT_PARTITION_ROWS = 250_000  # measured: ~20% less CPU per row than 1M (cache-sized group-bys)


@dataclass
class StreamedAnalysis:
    """What `analyse_parquet` computed: the in-memory path's signal, selection and ranking, and how it was read."""

    signal: pl.DataFrame
    selection: Selection
    ranking: AggregateResult | None
    rows: int
    partitions: int


def task_ranges(scan: pl.LazyFrame, partition_rows: int = DEFAULT_PARTITION_ROWS) -> list[tuple[str, str, int]]:
    """(first task, last task, rows) of consecutive task-name ranges of about `partition_rows` rows each.

    A task is never split: one with more rows than `partition_rows` is a range of its own.
    """
    counts = scan.group_by("task").agg(pl.len().alias("n")).sort("task").collect(engine="streaming")
    ranges: list[tuple[str, str, int]] = []
    first: str | None = None
    last, rows = "", 0
    for task, n in counts.iter_rows():
        if first is not None and rows + n > partition_rows:
            ranges.append((first, last, rows))
            first, rows = None, 0
        first = task if first is None else first
        last, rows = task, rows + n
    if first is not None:
        ranges.append((first, last, rows))
    return ranges


def read_range(scan: pl.LazyFrame, first: str, last: str) -> pl.DataFrame:
    """The rows of the tasks named first..last (inclusive, by string order)."""
    return scan.filter(pl.col("task").is_between(pl.lit(first), pl.lit(last))).collect()


@dataclass
class _Part:
    """One partition's share of the results: its signal, kept rows, ranking inputs and runs."""

    signal: pl.DataFrame
    kept: pl.DataFrame
    scored: TaskScores | None
    runs: pl.DataFrame
    rows: int


def _analyse_range(scan: pl.LazyFrame, first: str, last: str, config: Config, with_ci: bool, step: int | None) -> _Part:
    part = read_range(scan, first, last)
    signal = compute_signal(part, config, with_ci=with_ci)
    kept = decide(signal, config).filter(pl.col("kept")).select(GROUP)
    scored = None if kept.is_empty() else task_scores(part, kept, step)
    return _Part(signal, kept, scored, part.select(pl.col("run").unique()), part.height)


def _parts(
    scan: pl.LazyFrame,
    ranges: list[tuple[str, str, int]],
    config: Config,
    with_ci: bool,
    step: int | None,
    workers: int,
) -> Iterator[_Part]:
    """Each range's _Part, in order: in this process, or in `workers` single-threaded processes (one partition
    each at a time). Whether whole partitions in parallel beat polars' own threads depends on the machine: on the
    shared 2-core bench machine under load they did not (`bench/bench_scale.py --workers 2`), so 1 is the default."""
    if workers <= 1:
        for first, last, _ in ranges:
            yield _analyse_range(scan, first, last, config, with_ci, step)
        return
    firsts, lasts = [r[0] for r in ranges], [r[1] for r in ranges]
    previous = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"  # read by each worker's polars at import
    try:
        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=die_with_parent)
        with pool:
            args = (repeat(scan), firsts, lasts, repeat(config), repeat(with_ci), repeat(step))
            with starting_children():  # the workers start (Ctrl-C held) on the first submission
                pending = pool.map(_analyse_range, *args)
            results = list(pending)
    finally:
        if previous is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = previous
    yield from results


def analyse_parquet(
    source: Path | str | pl.LazyFrame,
    config: Config,
    *,
    with_ci: bool = False,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
    step: int | None = None,
    workers: int = 1,
) -> StreamedAnalysis:
    """`compute_signal`, `select` and (when a kept task is rankable) `aggregate` of a score table, by partitions.

    Equal to the in-memory path value by value (tests/analysis/test_streaming_analysis.py, `make bench-scale` at 1M
    rows).
    `workers` > 1 analyses that many partitions at once in child processes (memory: one partition each).
    """
    scan = source if isinstance(source, pl.LazyFrame) else pl.scan_parquet(source)
    ranges = task_ranges(scan, partition_rows)
    parts = list(_parts(scan, ranges, config, with_ci, step, workers))
    signal = pl.concat([p.signal for p in parts], how="vertical_relaxed").sort(list(GROUP))
    selection = select(signal, config)
    chosen = selection.kept.select(GROUP)
    # decisions are per task, so the partitions' kept rows are the whole selection's; a difference is a bug here
    by_parts = pl.concat([p.kept for p in parts]).sort(list(GROUP))
    if not chosen.sort(list(GROUP)).equals(by_parts):
        raise RuntimeError("per-partition decisions differ from the whole selection's: a task spans partitions")
    ranking = None
    if rankable(chosen):
        notes: list[str] = []
        usable = usable_selection(chosen, notes)
        all_runs = pl.concat([p.runs for p in parts]).unique().sort("run")
        scored = concat_task_scores([p.scored for p in parts if p.scored is not None])
        ranking = aggregate_task_scores(scored, usable, all_runs, config.aggregate, step, notes, scan)
    return StreamedAnalysis(signal, selection, ranking, sum(p.rows for p in parts), len(ranges))
