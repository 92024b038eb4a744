"""The streaming analysis (analysis.streaming) equals the in-memory path value by value, on small tables.

`make bench-scale` checks the same at 1M rows; these run in CI. Partitions are made tiny so that every table
is split into several, and the irregular tables (null seeds and tokens, ties, constant series, perplexities,
runs missing steps) and an unordered file cover what the regular synthetic sweep does not.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from analysis.config import load_config
from analysis.scores.schema import KEY
from analysis.scores.stream import MAX_READ_AMPLIFICATION, ScoreScan, _groups, read_amplification
from analysis.scores.validate import validate
from analysis.streaming import analyse_parquet
from bench.bench_scale import compare_frames, compare_with_memory
from bench.synthetic import make_small_random_table, make_synthetic_table, write_synthetic_parquet

CONFIG = load_config()


def _streamed_equals_memory(table: pl.DataFrame, path: Path, partition_rows: int, *, with_ci: bool = False) -> int:
    table.write_parquet(path, row_group_size=500)  # whatever its order: out of task order, it is split first
    streamed = analyse_parquet(path, CONFIG, partition_rows=partition_rows, with_ci=with_ci)
    assert streamed.rows == table.height
    assert streamed.partitions > 1
    problems, compared = compare_with_memory(table, streamed, CONFIG, with_ci=with_ci)
    assert problems == []
    return compared


def test_synthetic_sweep_streamed_equals_memory(tmp_path: Path) -> None:
    table = make_synthetic_table(n_tasks=24, n_runs=5, n_seeds=3, n_steps=12).sort("task", maintain_order=True)
    assert _streamed_equals_memory(table, tmp_path / "t.parquet", partition_rows=3_000) > 1_000


def test_sampled_documents_reach_the_decisions_streamed_as_in_memory(tmp_path: Path) -> None:
    from analysis.pipeline import analyse

    table = make_synthetic_table(n_tasks=8, n_runs=3, n_seeds=2, n_steps=6).sort("task", maintain_order=True)
    tasks = table.get_column("task").unique().sort().to_list()
    sampled = {tasks[0]: 30, tasks[1]: 50}  # a third task: 40 at one step only, so the task's largest is 40
    table = table.with_columns(
        pl.col("task").replace_strict(sampled, default=None, return_dtype=pl.Int64).alias("sampled_documents")
    ).with_columns(
        pl.when((pl.col("task") == tasks[2]) & (pl.col("step") == pl.col("step").max()))
        .then(40)
        .otherwise(pl.col("sampled_documents"))
        .alias("sampled_documents")
    )
    _streamed_equals_memory(table, tmp_path / "t.parquet", partition_rows=300)
    decisions = analyse(validate(table, source="t")[0], CONFIG).selection.decisions
    got = dict(decisions.select("task", "sampled_documents").unique().iter_rows())
    assert got == {task: {**sampled, tasks[2]: 40}.get(task) for task in tasks}


@pytest.mark.slow
def test_bootstrap_cis_streamed_equal_memory(tmp_path: Path) -> None:
    """CIs are seeded per group size, so a group's interval does not depend on the partition it is in."""
    table = make_synthetic_table(n_tasks=12, n_runs=4, n_seeds=3, n_steps=8)
    _streamed_equals_memory(table, tmp_path / "t.parquet", partition_rows=1_000, with_ci=True)


@pytest.mark.parametrize("rng_seed", range(6))
def test_irregular_tables_streamed_equal_memory(tmp_path: Path, rng_seed: int) -> None:
    table = make_small_random_table(rng_seed, n_tasks=6)
    if table.get_column("task").n_unique() < 2:
        pytest.skip("one task: nothing to partition")
    # unordered rows: every range then scans the whole file, with the same result
    _streamed_equals_memory(table.sample(fraction=1.0, shuffle=True, seed=rng_seed), tmp_path / "t.parquet", 1)


def test_partitions_cover_every_row_once_and_never_split_a_task(tmp_path: Path) -> None:
    table = make_synthetic_table(n_tasks=10, n_runs=3, n_seeds=2, n_steps=5).sort("task")
    path = tmp_path / "t.parquet"
    table.write_parquet(path, row_group_size=100)
    with ScoreScan.open(path) as scan:
        partitions = scan.partitions(partition_rows=250)
        parts = [scan.read(tasks)[0] for tasks in partitions]
        assert all(tasks.first is not None for tasks in partitions)  # task order: range reads of the file itself
        assert read_amplification(path, partitions) < 1.5
        assert len(scan.partitions(partition_rows=1)) == 10  # a task larger than a partition is one of its own
    assert [p.height for p in parts] == [tasks.rows for tasks in partitions]
    assert sum(p.height for p in parts) == table.height
    tasks = [set(p.get_column("task").unique().to_list()) for p in parts]
    assert sum(len(t) for t in tasks) == len(set().union(*tasks)) == 10


def test_a_file_out_of_task_order_is_split_by_partition_first(tmp_path: Path) -> None:
    """A table sorted by run first (as `write_scores` and sweeps write it) would be scanned whole by every
    partition: it is split into one file per partition, read once each, with the same results; the split is
    removed with the scan."""
    table = make_synthetic_table(n_tasks=10, n_runs=3, n_seeds=2, n_steps=5).sort("run", "seed", "step", "task")
    path = tmp_path / "t.parquet"
    table.write_parquet(path, row_group_size=100)
    with ScoreScan.open(path) as scan:
        direct = [scan._task_set(group) for group in _groups(scan.index, 250)]
        assert read_amplification(path, direct) > MAX_READ_AMPLIFICATION
        partitions = scan.partitions(partition_rows=250)
        assert all(tasks.whole_source and tasks.sources[0].parent.parent == scan._workdir for tasks in partitions)
        parts = [scan.read(tasks)[0] for tasks in partitions]
        workdir = scan._workdir
        assert scan.read_tasks(["afrimmlu_yor_cf"]).height == table.filter(pl.col("task") == "afrimmlu_yor_cf").height
    assert workdir is not None and not workdir.exists()
    assert [p.height for p in parts] == [tasks.rows for tasks in partitions]
    assert pl.concat(parts).sort(KEY).equals(validate(table, source="t")[0].sort(KEY))
    _streamed_equals_memory(table, tmp_path / "u.parquet", partition_rows=250)


def test_chunked_writer_gives_a_schema_table_in_task_order(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    rows = write_synthetic_parquet(path, n_tasks=9, n_metrics=2, n_runs=3, n_seeds=2, n_steps=4, chunk_rows=100)
    frame = pl.read_parquet(path)
    assert rows == frame.height == 9 * 2 * 3 * 2 * 4
    assert frame.schema == make_synthetic_table(n_tasks=1, n_metrics=1, n_runs=1, n_seeds=1, n_steps=2).schema
    assert frame.get_column("task").is_sorted()
    assert frame.select("run", "seed", "step", "task", "fewshot", "metric").is_unique().all()


def test_compare_frames_reports_a_difference_beyond_the_tolerance() -> None:
    a = pl.DataFrame({"k": ["x", "y"], "v": [1.0, None]})
    assert compare_frames("f", a, a.with_columns(pl.col("v") * (1 + 1e-12))) == []
    assert compare_frames("f", a, a.with_columns(pl.col("v") + 1e-6)) != []
    assert compare_frames("f", a, a.with_columns(pl.col("k").str.to_uppercase())) != []


@pytest.mark.slow
def test_worker_processes_give_the_same_results(tmp_path: Path) -> None:
    table = make_synthetic_table(n_tasks=8, n_runs=4, n_seeds=2, n_steps=6).sort("task")
    path = tmp_path / "t.parquet"
    table.write_parquet(path)
    alone = analyse_parquet(path, CONFIG, partition_rows=500)
    pooled = analyse_parquet(path, CONFIG, partition_rows=500, workers=2)
    assert pooled.partitions == alone.partitions > 2
    assert compare_frames("signal", alone.signal, pooled.signal) == []
    assert alone.ranking is not None and pooled.ranking is not None
    assert compare_frames("ranking", alone.ranking.ranking, pooled.ranking.ranking) == []


@pytest.mark.slow
def test_the_bench_memory_sampler_sums_the_command_and_its_children() -> None:
    """bench_scale's peak memory is the whole process tree's (a worker's allocation counts), read from the
    command's own /proc children lists."""
    import subprocess
    import sys
    import time

    from bench.bench_scale import _tree_rss_bytes

    hold = "import time; x = bytearray(200_000_000); x[::4096] = b'1' * len(x[::4096]); time.sleep(3)"
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {hold!r}]); time.sleep(3)"
    process = subprocess.Popen([sys.executable, "-c", parent])
    try:
        time.sleep(1.5)
        assert _tree_rss_bytes(process.pid) > 200_000_000
    finally:
        process.wait()
