"""A parquet score table read whole tasks at a time, every read validated as the whole table would be.

The analysis of a table too large for memory (`analysis.streaming`) never holds more than some whole tasks: every
statistic, decision and ranking input is computed among one task's rows. `ScoreScan` is how it reads them. One pass
over the task column (with language and benchmark) builds an index of the tasks and their row counts; the
partitions are consecutive runs of tasks of about `partition_rows` rows; each read of a partition goes through
`validate_partition` (types, names, values, keys: everything inside a task), and the rules across tasks (one token
count per checkpoint, counts that never fall, the load report's notes) run once on the summed `PartialReport`s
(`finish_report`). A task is identified by its stripped name, as `validate` strips it: "x " and "x" are one task,
read together.

A file written in task order (`bench.synthetic.write_synthetic_parquet`, any table sorted by task) is read about
once in all: each partition's filter skips the row groups of other tasks by their statistics. A file in any other
order (`write_scores` sorts by run first, as sweeps write it) would be scanned once per partition; such a file is
first split by partition into a temporary folder of parquet files (one streaming pass of polars, `reorder`), and
each partition reads its own file. The folder lives as long as the `ScoreScan` context.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from analysis.scores.read import IGNORED_OPTIONS_NOTE, check_score_path, read_scores
from analysis.scores.schema import ScoreTableError
from analysis.scores.task_info import TaskInfo
from analysis.scores.validate import (
    LoadReport,
    PartialReport,
    finish_report,
    require_rows,
    validate,
    validate_partition,
)

DEFAULT_PARTITION_ROWS = 250_000  # measured: ~20% less CPU per row than 1M (cache-sized group-bys)
MAX_READ_AMPLIFICATION = 3.0
"""Rows a partitioned read of the file would decode, over its rows, above which it is reordered first: a file in
task order reads each row group about once (1.0-1.2); a file in run order reads all of them for every partition."""


@dataclass(frozen=True)
class TaskSet:
    """Some whole tasks of a table: their names as the file spells them (before stripping), their rows, and the
    parquet file or folder that holds them. `first`/`last` are set when the names are exactly the file's task
    names from `first` to `last` in string order, so the read is a range filter that row-group statistics serve."""

    names: tuple[str, ...]
    rows: int
    sources: tuple[Path, ...]
    first: str | None = None
    last: str | None = None
    whole_source: bool = False  # the sources hold these tasks only (a reordered partition's own file)

    def predicate(self) -> pl.Expr:
        if self.first is not None and self.last is not None:
            return pl.col("task").is_between(pl.lit(self.first), pl.lit(self.last))
        return pl.col("task").is_in(list(self.names))

    def read_raw(self) -> pl.DataFrame:
        """The rows of these tasks as stored (not yet validated)."""
        scan = pl.scan_parquet(list(self.sources))
        return (scan if self.whole_source else scan.filter(self.predicate())).collect()


@dataclass
class ScoreScan:
    """A parquet score table, indexed by task: `index` has one row per task as the file spells it (raw), with its
    stripped name (task), rows, language and benchmark (stripped; from its first row, for planning reads only).
    Open it with `ScoreScan.open` (a context manager: a reordered copy is removed on exit)."""

    path: Path
    source: str
    index: pl.DataFrame
    known_report: LoadReport | None = None  # a table validated whole before (`open_scores` of a CSV, lm-eval)
    notes: list[str] = field(default_factory=list)  # added to the load report
    _workdir: Path | None = field(default=None, repr=False)
    _reordered: dict[int, list[TaskSet]] = field(default_factory=dict, repr=False)

    @classmethod
    @contextmanager
    def open(
        cls, path: Path | str, *, source: str | None = None, known_report: LoadReport | None = None
    ) -> Iterator[ScoreScan]:
        """Index the table at `path` (a .parquet file); `source` names it in messages (default: the path).

        Raises ScoreTableError for a file polars cannot read, a missing or mistyped column (as `validate`), a
        task column that is not text, and a table with no rows.
        """
        path = Path(path)
        name = source or str(path)
        scan = cls(path, name, _task_index(path, name), known_report)
        try:
            yield scan
        finally:
            if scan._workdir is not None:
                shutil.rmtree(scan._workdir, ignore_errors=True)

    @property
    def rows(self) -> int:
        return int(self.index.get_column("rows").sum())

    @property
    def tasks(self) -> list[str]:
        """Every task (stripped names), sorted."""
        return self.index.get_column("task").unique().sort().to_list()

    def partitions(self, partition_rows: int = DEFAULT_PARTITION_ROWS) -> list[TaskSet]:
        """Whole tasks in consecutive groups of about `partition_rows` rows (a larger task is a group of its own),
        each read from the original file, or from its own file of a reordered copy when the original is not in
        task order (`MAX_READ_AMPLIFICATION`)."""
        groups = _groups(self.index, partition_rows)
        planned = [self._task_set(group) for group in groups]
        if len(planned) <= 1 or read_amplification(self.path, planned) <= MAX_READ_AMPLIFICATION:
            return planned
        if partition_rows not in self._reordered:
            self._reordered[partition_rows] = self._reorder(groups)
        return self._reordered[partition_rows]

    def task_set(self, tasks: Iterable[str]) -> TaskSet:
        """The TaskSet of these tasks (stripped names; absent ones are ignored): read from the original file, or
        from the files of the reordered copy's partitions that hold them when `partitions` made one."""
        wanted = self._task_set(self.index.filter(pl.col("task").is_in(list(tasks))))
        reordered = next(iter(self._reordered.values()), None)
        if reordered is None:
            return wanted
        names = set(wanted.names)
        sources = tuple(source for part in reordered if names & set(part.names) for source in part.sources)
        return TaskSet(wanted.names, wanted.rows, sources or wanted.sources)

    def read(self, tasks: TaskSet, *, sort: bool = True) -> tuple[pl.DataFrame, PartialReport]:
        """The validated rows of `tasks` (typed, stripped, sorted by KEY unless `sort=False`: then in the file's
        order) and what validating them found."""
        return validate_partition(tasks.read_raw(), source=self.source, sort=sort)

    def read_tasks(self, tasks: Iterable[str]) -> pl.DataFrame:
        """The validated rows of these tasks (stripped names)."""
        return self.read(self.task_set(tasks))[0]

    def _task_set(self, rows: pl.DataFrame) -> TaskSet:
        raw = rows.get_column("raw").sort()
        names = tuple(raw.to_list())
        total = int(rows.get_column("rows").sum())
        if not names:
            return TaskSet((), 0, (self.path,))
        all_raw = self.index.get_column("raw")
        between = all_raw.filter((all_raw >= names[0]) & (all_raw <= names[-1]))
        if between.len() == len(names):  # no other task's name sorts between them: a range read
            return TaskSet(names, total, (self.path,), names[0], names[-1])
        return TaskSet(names, total, (self.path,))

    def _reorder(self, groups: list[pl.DataFrame]) -> list[TaskSet]:
        """Split the file by partition into a temporary folder, one streaming pass; a TaskSet per folder."""
        self._workdir = Path(tempfile.mkdtemp(prefix="finetasks-afr-scores-"))
        bucket = {raw: i for i, group in enumerate(groups) for raw in group.get_column("raw").to_list()}
        key = pl.col("task").replace_strict(bucket, return_dtype=pl.Int32).alias("partition")
        target = self._workdir / "by-partition"
        try:
            pl.scan_parquet(self.path).sink_parquet(pl.PartitionBy(target, key=key, include_key=False), mkdir=True)
        except pl.exceptions.PolarsError as error:
            raise ScoreTableError(f"{self.source}: cannot split it into task partitions ({error})") from error
        return [
            TaskSet(
                tuple(group.get_column("raw").sort().to_list()),
                int(group.get_column("rows").sum()),
                (target / f"partition={i}",),
                whole_source=True,
            )
            for i, group in enumerate(groups)
        ]


@contextmanager
def open_scores(
    path: Path | str,
    *,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    tokens_per_step: int | None = None,
    skip_unknown: bool = False,
) -> Iterator[ScoreScan]:
    """Any score source `read_scores` reads, as a ScoreScan. A .parquet table whose task column is text is
    streamed as it is. Anything else (a CSV, lm-evaluation-harness output, a parquet with categorical task names)
    is read and validated in memory once (`read_scores`, with its messages and notes) and written in task order to
    a temporary parquet file, removed on exit; its scan carries that load report."""
    path = Path(path)
    check_score_path(path)  # by stat, before any open: a FIFO would block, a symlink loop raise RuntimeError
    if path.suffix.lower() == ".parquet" and path.is_file() and _streamable(path):
        with ScoreScan.open(path) as scan:
            if task_info is not None or tokens_per_step is not None:
                scan.notes.append(IGNORED_OPTIONS_NOTE)
            yield scan
        return
    frame, report = read_scores(path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown)
    with frame_scan(frame, report) as scan:
        yield scan


@contextmanager
def frame_scan(frame: pl.DataFrame, report: LoadReport | None = None, *, source: str = "table") -> Iterator[ScoreScan]:
    """A score table in memory as a ScoreScan: written in task order to a temporary parquet file (removed on exit).
    `report`: the load report of its validation, which the scan then carries (without it, streaming validates the
    rows and names them `source`)."""
    workdir = Path(tempfile.mkdtemp(prefix="finetasks-afr-scores-"))
    try:
        path = workdir / "scores.parquet"
        frame.sort("task", "fewshot", "metric", "run", "seed", "step").write_parquet(path, row_group_size=65_536)
        with ScoreScan.open(path, source=report.source if report else source, known_report=report) as scan:
            yield scan
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _streamable(path: Path) -> bool:
    """Whether ScoreScan can index this parquet file itself (else `open_scores` converts it, with read_scores's
    messages for what is wrong with it)."""
    try:
        return pl.read_parquet_schema(path).get("task") == pl.String()
    except (OSError, pl.exceptions.PolarsError):
        return False


def _task_index(path: Path, source: str) -> pl.DataFrame:
    """One row per raw task name: raw, task (stripped), rows, language, benchmark."""
    try:
        schema = pl.read_parquet_schema(path)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise ScoreTableError(f"{path}: cannot read it as parquet ({error})") from error
    validate(pl.DataFrame(schema=schema), source=source)  # missing or mistyped columns, before any pass
    if schema["task"] != pl.String():
        raise ScoreTableError(
            f"{source}: column 'task' has type {schema['task']}; a table is streamed by task name, which must be "
            "text. fix: store task names as strings (or read the table in memory with read_scores)"
        )
    index = (  # first values, stripped after: an expression on every row would materialise 100M strings
        pl.scan_parquet(path)
        .group_by(pl.col("task").alias("raw"))
        .agg(pl.len().alias("rows"), pl.col("language").first(), pl.col("benchmark").first())
        .collect(engine="streaming")
        .with_columns(pl.col(c).cast(pl.String).str.strip_chars() for c in ("language", "benchmark"))
    )
    read = int(index.get_column("rows").sum())
    if index.get_column("raw").null_count():  # rows that no task partition would hold: validate names them
        validate_partition(pl.scan_parquet(path).filter(pl.col("task").is_null()).collect(), source=source)
    if read == 0:
        require_rows(0, LoadReport(source, 0), 0)
    return index.with_columns(pl.col("raw").str.strip_chars().alias("task")).sort("raw")


def _groups(index: pl.DataFrame, partition_rows: int) -> list[pl.DataFrame]:
    """Index rows grouped into consecutive stripped tasks of about `partition_rows` rows; all raw spellings of a
    task in one group."""
    per_task = index.group_by("task").agg(pl.col("rows").sum()).sort("task")
    labels: list[int] = []
    group, rows = 0, 0
    for n in per_task.get_column("rows").to_list():
        if rows and rows + n > partition_rows:
            group, rows = group + 1, 0
        labels.append(group)
        rows += n
    labelled = per_task.select("task", pl.Series("group", labels, dtype=pl.Int64))
    joined = index.join(labelled, on="task", how="left")
    return [joined.filter(pl.col("group") == g).drop("group") for g in range(group + 1)]


def read_amplification(path: Path, task_sets: Sequence[TaskSet]) -> float:
    """Rows the range reads of `task_sets` would decode (every row group whose task statistics overlap each range),
    over the file's rows; infinite when a set is not a range or the file has no task statistics."""
    metadata = pq.ParquetFile(path).metadata
    column = metadata.schema.names.index("task")
    groups = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        stats = group.column(column).statistics
        if stats is None or not stats.has_min_max:
            return float("inf")
        groups.append((str(stats.min), str(stats.max), group.num_rows))
    total = sum(n for *_, n in groups) or 1
    decoded = 0
    for tasks in task_sets:
        if tasks.first is None or tasks.last is None:
            return float("inf")
        decoded += sum(n for low, high, n in groups if not (high < tasks.first or low > tasks.last))
    return decoded / total


def merge_reports(parts: Sequence[PartialReport], source: str) -> LoadReport:
    """The LoadReport of a whole table from its partitions' reports (raises the rules across tasks)."""
    return finish_report(PartialReport.combine(parts, source))


__all__ = [
    "DEFAULT_PARTITION_ROWS",
    "MAX_READ_AMPLIFICATION",
    "ScoreScan",
    "TaskSet",
    "frame_scan",
    "merge_reports",
    "open_scores",
    "read_amplification",
]
