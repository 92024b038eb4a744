"""Criteria, selection and ranking of a parquet score table too large for memory, a range of tasks at a time.

Every signal statistic is per (task, fewshot, metric), every selection decision is made among one task's rows,
and the ranking's first stage is per (run, task) (`analysis.aggregate.TaskScores`). So the table is read in
partitions that each hold whole tasks (contiguous ranges of task names, sized from one pass over the task
column), the in-memory functions run on each partition unchanged, and only their per-task outputs are kept and
combined: one implementation of each statistic, and memory bounded by a partition, not the table. Small
partitions are also faster per row than one big frame (the group-bys' hash tables stay in cache).

A file written in task order (`bench.synthetic.write_synthetic_parquet`) is read about once in all: row-group
statistics let each range skip the other row groups. An unordered file gives the same results, but each range
then scans the whole file. The table is taken as valid (`analysis.table.validate` needs it in memory).
"""

from __future__ import annotations

from dataclasses import dataclass
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


def analyse_parquet(
    source: Path | str | pl.LazyFrame,
    config: Config,
    *,
    with_ci: bool = False,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
    step: int | None = None,
) -> StreamedAnalysis:
    """`compute_signal`, `select` and (when a kept task is rankable) `aggregate` of a score table, by partitions.

    Equal to the in-memory path value by value (tests/test_streaming_analysis.py, `make bench-scale` at 1M rows).
    """
    scan = source if isinstance(source, pl.LazyFrame) else pl.scan_parquet(source)
    ranges = task_ranges(scan, partition_rows)
    signals: list[pl.DataFrame] = []
    scored: list[TaskScores] = []
    kept_parts: list[pl.DataFrame] = []
    runs: list[pl.DataFrame] = []
    rows = 0
    for first, last, _ in ranges:
        part = read_range(scan, first, last)
        rows += part.height
        signal = compute_signal(part, config, with_ci=with_ci)
        kept = decide(signal, config).filter(pl.col("kept")).select(GROUP)
        if not kept.is_empty():
            scored.append(task_scores(part, kept, step))
        signals.append(signal)
        kept_parts.append(kept)
        runs.append(part.select(pl.col("run").unique()))
        del part
    signal = pl.concat(signals, how="vertical_relaxed").sort(list(GROUP))
    selection = select(signal, config)
    chosen = selection.kept.select(GROUP)
    # decisions are per task, so the partitions' kept rows are the whole selection's; a difference is a bug here
    by_parts = pl.concat(kept_parts).sort(list(GROUP))
    if not chosen.sort(list(GROUP)).equals(by_parts):
        raise RuntimeError("per-partition decisions differ from the whole selection's: a task spans partitions")
    ranking = None
    if rankable(chosen):
        notes: list[str] = []
        usable = usable_selection(chosen, notes)
        all_runs = pl.concat(runs).unique().sort("run")
        ranking = aggregate_task_scores(
            concat_task_scores(scored), usable, all_runs, config.aggregate, step, notes, scan
        )
    return StreamedAnalysis(signal, selection, ranking, rows, len(ranges))
