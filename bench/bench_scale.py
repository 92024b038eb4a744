"""`make bench-scale`: `finetasks-afr select` itself on a 100M-row parquet score table, streamed by task partitions.

1. Equality: the 1M-row table of `make bench`, analysed in memory (compute_signal, select, aggregate), against the
   streaming path (analysis.streaming.analyse_parquet) over the same table written as parquet in task order, in
   partitions small enough that there are several; then `finetasks-afr select` (bootstrap intervals included) on
   that file against the in-memory `analysis.pipeline.analyse` of the table: its decisions.csv and ranking.csv.
   Every value is compared; floats within 1e-9 (relative, 1e-12 absolute), all else exactly. Any difference fails
   the bench (exit 2).
2. Scale: for each size, the synthetic table is generated into out/bench-scale/ in chunks (generation is not
   timed, and the file is kept for the next run; its name carries the generator's hash; `10M-run-order` is the 10M
   table sorted by run first, as sweeps write it, so the command must split it by partition first). Then the
   console script `finetasks-afr select TABLE --out DIR --no-figures --workers W` runs as a child: wall seconds,
   and the peak of the summed resident memory of its process tree (the command and its workers, sampled
   every 0.1 s from /proc), beside the load average (a shared machine's figures are noisy). Targets: 100M rows in < 60 s
   and < 6 GiB.

Results go to out/bench/scale.json, merged by size, so `make bench` (10M only) can also print the last 100M run.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.aggregate import aggregate, rankable
from analysis.config import Config, load_config
from analysis.pipeline import analyse
from analysis.select import select
from analysis.signal import compute_signal
from analysis.streaming import StreamedAnalysis, analyse_parquet
from bench.synthetic import make_synthetic_table, write_synthetic_parquet

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("finetasks-afr")
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
TARGET_GIB = 6.0
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
    """The parquet file of a size's shape; generated (in chunks) when absent. `<size>-run-order`: the same table
    sorted by run, seed, step, task (made from it in memory: 10M only)."""
    if size.endswith("-run-order"):
        ordered = table_path(size.removesuffix("-run-order"))
        path = ordered.with_name(ordered.stem + "-run-order.parquet")
        if not path.exists():
            partial = path.with_suffix(".parquet.partial")
            pl.read_parquet(ordered).sort("run", "seed", "step", "task").write_parquet(partial)
            partial.rename(path)
        return path
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


def _tree_rss_bytes(root: int) -> int:
    """The summed resident memory of `root` and every process below it: from `root` down through each thread's
    /proc children list, a few small reads per sample (walking all of /proc every 50 ms took CPU from the command
    measured)."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[21]) * PAGE
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while being read
    return total


PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_SECONDS = 0.1


def run_cli(table: Path, out: Path, workers: int) -> tuple[float, int, str]:
    """`finetasks-afr select` on `table`: (wall seconds, peak tree RSS in bytes, its output)."""
    command = [str(CLI), "select", str(table), "--out", str(out), "--no-figures", "--workers", str(workers)]
    log = out.with_name(out.name + ".log")
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as sink:  # a file, not a pipe: a long summary would block the command
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss_bytes(process.pid))
            time.sleep(SAMPLE_SECONDS)
    seconds = time.perf_counter() - start
    output = log.read_text(encoding="utf-8")
    if process.returncode != 0:
        print(output[-5000:])
        raise SystemExit(f"finetasks-afr select failed on {table} (exit {process.returncode}); its output: {log}")
    return seconds, peak, output


def run_scale(size: str, workers: int) -> dict[str, Any]:
    """`finetasks-afr select` on one size: wall time and peak memory of its process tree."""
    path = table_path(size)
    load_before = os.getloadavg()[0]
    out = DATA_DIR / f"select-{size}"
    seconds, peak, _ = run_cli(path, out, workers)
    decisions = pl.read_csv(out / "decisions.csv")
    return {
        "seconds": seconds,
        "peak_gib": peak / 2**30,
        "rows": pl.scan_parquet(path).select(pl.len()).collect().item(),
        "groups": decisions.height,
        "kept": decisions.filter(pl.col("kept")).height,
        "runs_ranked": pl.read_csv(out / "ranking.csv").height if (out / "ranking.csv").exists() else 0,
        "split_by_partition": "run-order" in size,
        "size": size,
        "shape": SHAPES[size.removesuffix("-run-order")],
        "workers": workers,
        "command": f"finetasks-afr select {path.relative_to(ROOT)} --out {out.relative_to(ROOT)} --no-figures "
        f"--workers {workers}",
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
    return compared + check_cli_equality(path, table, config)


def check_cli_equality(path: Path, table: pl.DataFrame, config: Config) -> int:
    """`finetasks-afr select` (intervals included) on `path` against the in-memory `analyse` of `table`: its
    decisions.csv and ranking.csv, value by value. Returns the number of values compared; exits 2 on a difference."""
    out = DATA_DIR / "equality-1M-select"
    run_cli(path, out, workers=2)
    memory = analyse(table, config)
    written = pl.read_csv(out / "decisions.csv", infer_schema_length=None)
    expected = memory.selection.decisions
    cast = written.select(pl.col(c).cast(expected.schema[c]) for c in expected.columns)
    pairs = [("decisions.csv", expected, cast)]
    if memory.ranking is not None:
        ranking = pl.read_csv(out / "ranking.csv")
        pairs.append(("ranking.csv", memory.ranking.ranking, ranking.select(memory.ranking.ranking.columns)))
    problems = [p for name, a, b in pairs for p in compare_frames(name, a.cast(b.schema), b)]
    if problems:
        print(f"CLI RESULTS DIFFER ({len(problems)}): " + "; ".join(problems[:20]))
        sys.exit(2)
    compared = sum(a.height * a.width for _, a, _ in pairs)
    print(f"equal results at 1M rows: `finetasks-afr select` wrote {compared:,} values of decisions.csv and "
          "ranking.csv that agree with the in-memory path (bootstrap intervals included)")  # fmt: skip
    return compared


def _line(r: dict[str, Any]) -> str:
    return (f"finetasks-afr select {r['size']:>4} rows ({r['rows']:,}, {r['groups']:,} groups, "
            f"{r.get('workers', 1)} worker(s)): "
            f"{r['seconds']:6.1f} s, peak {r['peak_gib']:.2f} GiB; load {r['load_1min_before']:.1f} before, "
            f"{r['load_1min_after']:.1f} after, {r['cpus']} cpus; kept {r['kept']}, ranked {r['runs_ranked']} runs "
            f"[{r['when']}]")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10M,10M-run-order,100M",
                        help=f"comma-separated, of {', '.join(SHAPES)} (and <size>-run-order)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="select's --workers: partitions analysed at once")
    parser.add_argument("--no-targets", action="store_true", help="report the figures, check only equality")
    args = parser.parse_args()
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s.removesuffix("-run-order") not in SHAPES]
    if unknown:
        parser.error(f"unknown size(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    compared = check_equality(partition_rows=100_000)
    records: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for size in sizes:
        records[size] = run_scale(size, args.workers) | {"equal_values_1m": compared}
        print(_line(records[size]))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(records, indent=2))
    for size in (s for s in sizes if s.endswith("-run-order") and s.removesuffix("-run-order") in sizes):
        same = [
            (DATA_DIR / f"select-{name}" / "decisions.csv").read_bytes()
            for name in (size.removesuffix("-run-order"), size)
        ]
        if same[0] != same[1]:
            print(f"RESULTS DIFFER: decisions.csv of {size} is not that of the same table in task order")
            sys.exit(2)
        print(f"{size}: decisions.csv byte-identical to the same table's in task order")
    for size in (s for s in records if s not in sizes):
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
