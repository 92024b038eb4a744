"""`make bench-scale`: criteria, selection and ranking of a 100M-row parquet score table, streamed by task ranges.

1. Equality: the 1M-row table of `make bench`, analysed in memory (compute_signal, select, aggregate), against the
   streaming path (analysis.streaming) over the same table written as parquet in task order, in
   partitions small enough that there are several. Every value of the signal, the decisions, the suites, the coverage
   flags and the ranking frames and notes is compared; floats within 1e-9 (relative, 1e-12 absolute), all else exactly.
   Any difference fails the bench (exit 2).
2. Scale: for each size, the synthetic table is generated into out/bench-scale/ in chunks (generation is not
   timed, and the file is kept for the next run; its name carries the generator's hash), then the streaming
   analysis runs in a child process: wall seconds and the child's peak resident memory, beside the load average
   (a shared machine's figures are noisy). Targets: 100M rows in < 60 s and < 16 GB.

Results go to out/bench/scale.json, merged by size, so `make bench` (10M only) can also print the last 100M run.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import time
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.aggregate import aggregate, rankable
from analysis.config import Config, load_config
from analysis.select import select
from analysis.signal import compute_signal
from analysis.streaming import DEFAULT_PARTITION_ROWS, StreamedAnalysis, analyse_parquet
from bench.synthetic import make_synthetic_table, write_synthetic_parquet

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "out" / "bench-scale"
RESULTS = ROOT / "out" / "bench" / "scale.json"
# 10M: the FineTasks-sized shape of `make bench` x10 tasks; 100M: the African suite's runs, seeds and steps
# (2,047 tasks x 5 metrics in the issue; the generator has 4 metrics, so 2,500 tasks).
SHAPES: dict[str, dict[str, int]] = {
    "1M": {"n_tasks": 125, "n_metrics": 4, "n_runs": 10, "n_seeds": 4, "n_steps": 50},
    "10M": {"n_tasks": 1250, "n_metrics": 4, "n_runs": 10, "n_seeds": 4, "n_steps": 50},
    "100M": {"n_tasks": 2500, "n_metrics": 4, "n_runs": 20, "n_seeds": 5, "n_steps": 100},
}
TARGET_SECONDS = 60.0
TARGET_GIB = 16.0
TOLERANCE = 1e-9


def compare_frames(name: str, a: pl.DataFrame, b: pl.DataFrame, tolerance: float = TOLERANCE) -> list[str]:
    """Differences between two frames, value by value: floats within `tolerance` (relative; 1e-12 absolute),
    NaN and null equal to themselves, every other value exactly. Empty when equal."""
    if a.columns != b.columns:
        return [f"{name}: columns differ: {a.columns} vs {b.columns}"]
    if a.height != b.height:
        return [f"{name}: {a.height} rows vs {b.height}"]
    problems = []
    for column in a.columns:
        x, y = a.get_column(column), b.get_column(column)
        if x.dtype.is_float() or y.dtype.is_float():
            for i, (u, v) in enumerate(zip(x.to_list(), y.to_list(), strict=True)):
                if not _close(u, v, tolerance):
                    problems.append(f"{name}.{column} row {i}: {u!r} vs {v!r}")
        elif x.to_list() != y.to_list():
            bad = next(i for i, (u, v) in enumerate(zip(x.to_list(), y.to_list(), strict=True)) if u != v)
            problems.append(f"{name}.{column} row {bad}: {x[bad]!r} vs {y[bad]!r}")
    return problems


def _close(u: float | None, v: float | None, tolerance: float) -> bool:
    if u is None or v is None:
        return u is None and v is None
    if math.isnan(u) or math.isnan(v):
        return math.isnan(u) and math.isnan(v)
    if math.isinf(u) or math.isinf(v):
        return u == v
    return abs(u - v) <= max(tolerance * max(abs(u), abs(v)), 1e-12)


def compare_with_memory(
    table: pl.DataFrame, streamed: StreamedAnalysis, config: Config, *, with_ci: bool = False
) -> tuple[list[str], int]:
    """The in-memory path on `table` against `streamed`: (differences, number of values compared)."""
    signal = compute_signal(table, config, with_ci=with_ci)
    selection = select(signal, config)
    chosen = selection.kept.select("task", "fewshot", "metric")
    ranking = aggregate(table, chosen, config.aggregate) if rankable(chosen) else None
    pairs = [("signal", signal, streamed.signal), ("decisions", selection.decisions, streamed.selection.decisions)]
    problems: list[str] = []
    if (ranking is None) != (streamed.ranking is None):
        problems.append(f"ranking: in memory {ranking is not None}, streamed {streamed.ranking is not None}")
    elif ranking is not None and streamed.ranking is not None:
        pairs += [(f"ranking.{part}", getattr(ranking, part), getattr(streamed.ranking, part))
                  for part in ("ranking", "language_scores", "category_scores")]  # fmt: skip
        if ranking.notes != streamed.ranking.notes:
            problems.append("ranking.notes differ")
    if selection.suites != streamed.selection.suites:
        problems.append("suites differ")
    if selection.coverage != streamed.selection.coverage:
        problems.append("coverage flags differ")
    compared = 0
    for name, a, b in pairs:
        problems += compare_frames(name, a, b)
        compared += a.height * a.width
    return problems, compared


def _generator_hash() -> str:
    return hashlib.sha256((ROOT / "bench" / "synthetic.py").read_bytes()).hexdigest()[:10]


def table_path(size: str) -> Path:
    """The parquet file of a size's shape; generated (in chunks) when absent."""
    shape = SHAPES[size]
    name = "x".join(str(shape[k]) for k in ("n_tasks", "n_metrics", "n_runs", "n_seeds", "n_steps"))
    path = DATA_DIR / f"synthetic-{name}-{_generator_hash()}.parquet"
    if not path.exists():
        for stale in DATA_DIR.glob(f"synthetic-{name}-*.parquet"):
            stale.unlink()  # an older generator's table of this shape
        start = time.perf_counter()
        partial = path.with_suffix(".parquet.partial")
        rows = write_synthetic_parquet(partial, **shape)
        partial.rename(path)
        print(f"generated {rows:,} rows into {path.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s "
              f"({path.stat().st_size / 1e6:.0f} MB)")  # fmt: skip
    return path


def _stream_child(path: str, partition_rows: int, workers: int, queue: Queue[dict[str, Any]]) -> None:
    config = load_config()
    start = time.perf_counter()
    result = analyse_parquet(path, config, partition_rows=partition_rows, workers=workers)
    seconds = time.perf_counter() - start
    queue.put(
        {
            "seconds": seconds,
            # this process, plus the largest worker's peak (workers each hold one partition at a time)
            "peak_gib": (
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                + workers * resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            )
            / 2**20,
            "rows": result.rows,
            "partitions": result.partitions,
            "groups": result.signal.height,
            "kept": result.selection.kept.height,
            "runs_ranked": 0 if result.ranking is None else result.ranking.ranking.height,
        }
    )


def run_scale(size: str, partition_rows: int, workers: int) -> dict[str, Any]:
    """The streaming analysis of one size in a child process (its own peak memory)."""
    path = table_path(size)
    context = mp.get_context("spawn")
    queue: Queue[dict[str, Any]] = context.Queue()
    load_before = os.getloadavg()[0]
    process = context.Process(target=_stream_child, args=(str(path), partition_rows, workers, queue))
    process.start()
    result: dict[str, Any] = queue.get()
    process.join()
    return result | {
        "size": size,
        "shape": SHAPES[size],
        "partition_rows": partition_rows,
        "workers": workers,
        "load_1min_before": load_before,
        "load_1min_after": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def check_equality(partition_rows: int) -> int:
    """Step 1: returns the number of values compared; exits 2 on a difference."""
    config = load_config()
    table = make_synthetic_table(**SHAPES["1M"])
    path = DATA_DIR / "equality-1M.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    # task order, so that ranges map onto row groups as in the big tables; the in-memory side keeps its order
    table.sort("task", maintain_order=True).write_parquet(path, row_group_size=100_000)
    streamed = analyse_parquet(path, config, partition_rows=partition_rows)
    problems, compared = compare_with_memory(table, streamed, config)
    if problems:
        print(f"RESULTS DIFFER ({len(problems)}): " + "; ".join(problems[:20]))
        sys.exit(2)
    print(f"equal results at 1M rows: {compared:,} values of signal, decisions and ranking agree with the in-memory "
          f"path (floats within {TOLERANCE:g}; {streamed.partitions} partitions)")  # fmt: skip
    return compared


def _line(r: dict[str, Any]) -> str:
    return (f"streaming {r['size']:>4} rows ({r['rows']:,}, {r['partitions']} partitions, {r['groups']:,} groups, "
            f"{r.get('workers', 1)} worker(s)): "
            f"{r['seconds']:6.1f} s, peak {r['peak_gib']:.2f} GiB; load {r['load_1min_before']:.1f} before, "
            f"{r['load_1min_after']:.1f} after, {r['cpus']} cpus; kept {r['kept']}, ranked {r['runs_ranked']} runs "
            f"[{r['when']}]")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10M,100M", help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--partition-rows", type=int, default=DEFAULT_PARTITION_ROWS)
    parser.add_argument("--workers", type=int, default=1, help="partitions analysed at once, in child processes")
    parser.add_argument("--no-targets", action="store_true", help="report the figures, check only equality")
    args = parser.parse_args()
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown size(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    compared = check_equality(partition_rows=100_000)
    records: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for size in sizes:
        records[size] = run_scale(size, args.partition_rows, args.workers) | {"equal_values_1m": compared}
        print(_line(records[size]))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(records, indent=2))
    for size in (s for s in SHAPES if s in records and s not in sizes):
        print("last run: " + _line(records[size]))
    if "100M" not in records:
        print("100M rows: not run yet (make bench-scale)")
    if args.no_targets or "100M" not in sizes:
        return
    big = records["100M"]
    failures = [f"{what} {value:.2f} >= {limit:g}"
                for what, value, limit in (("seconds", big["seconds"], TARGET_SECONDS),
                                           ("peak GiB", big["peak_gib"], TARGET_GIB)) if value >= limit]  # fmt: skip
    if failures:
        print("TARGET MISSED at 100M rows: " + "; ".join(failures))
        sys.exit(1)
    print(f"targets met at 100M rows: < {TARGET_SECONDS:g} s and < {TARGET_GIB:g} GiB")


if __name__ == "__main__":
    main()
