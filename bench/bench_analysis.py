"""`make bench`: the analysis on a 1,000,000-row sweep, against a straightforward pandas implementation.

Each implementation runs in its own child process (same synthetic table, generated there) so that peak
memory is its own. Prints both times, the ratio and peak memory, and asserts equal statistics.
Absolute times on a shared 2-core machine are noisy; the ratio is measured in the same run.

`--no-targets` with a small shape is the slice `make bench-smoke` runs in CI: the statistics of both
implementations must still be equal (an assertion fails otherwise), but the speed targets are not checked, since
a table of a few thousand rows times start-up costs, not the analysis.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COMPARED = [
    "monotonicity", "monotonicity_n_constant", "snr_seed", "avg_std", "snr_checkpoint", "non_random_distance",
    "non_random_sigmas", "consistency", "consistency_n_pairs", "consistency_n_undefined", "decision_accuracy",
    "monotonicity_ai2",
]  # fmt: skip
TARGET_SECONDS = 2.0
TARGET_RATIO = 10.0
GAP_ENGLISH_STAND_IN = "yor"  # the synthetic table has no English: its Yoruba tasks play the English counterparts


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _table(shape: dict) -> pl.DataFrame:
    from bench.synthetic import make_synthetic_table

    return make_synthetic_table(**shape)


def _run_polars(shape: dict, repeats: int, queue: Queue[dict[str, Any]]) -> None:

    import polars as pl

    from analysis.aggregate import aggregate
    from analysis.config import load_config
    from analysis.english_gap import english_gap
    from analysis.select import select
    from analysis.signal import compute_signal

    config = load_config()
    table = _table(shape)
    # the gap to English, which `select` adds, on the same table with one language read as English
    as_english = table.with_columns(pl.col("language").replace({GAP_ENGLISH_STAND_IN: "eng"}))
    before = _peak_mib()
    timings: dict[str, list[float]] = {"criteria": [], "total": [], "total_with_ci": [], "english_gap": []}
    for _ in range(repeats):
        start = time.perf_counter()
        signal = compute_signal(table, config, with_ci=False)
        criteria = time.perf_counter() - start
        selection = select(signal, config)
        ranking = aggregate(table, selection.kept.select("task", "fewshot", "metric"), config.aggregate)
        timings["criteria"].append(criteria)
        timings["total"].append(time.perf_counter() - start)
        start = time.perf_counter()
        signal_ci = compute_signal(table, config, with_ci=True)
        select(signal_ci, config)
        timings["total_with_ci"].append(time.perf_counter() - start)
        start = time.perf_counter()
        gap = english_gap(as_english, config)
        timings["english_gap"].append(time.perf_counter() - start)
    queue.put(
        {
            "rows": table.height,
            "best": {k: min(v) for k, v in timings.items()},
            "peak_increase_mib": _peak_mib() - before,
            "peak_mib": _peak_mib(),
            "kept": selection.kept.height,
            "runs_ranked": ranking.ranking.height,
            "signal": signal.select(["task", "fewshot", "metric", *COMPARED]).to_dicts(),
            "groups": signal.height,
            "gap_rows": gap.gaps.height,
        }
    )


def _run_pandas(shape: dict, queue: Queue[dict[str, Any]]) -> None:
    from analysis.config import load_config
    from bench.pandas_reference import compute_signal_reference

    config = load_config()
    table = _table(shape).to_pandas()
    before = _peak_mib()
    start = time.perf_counter()
    reference = compute_signal_reference(table, config)
    seconds = time.perf_counter() - start
    queue.put(
        {
            "criteria": seconds,
            "peak_increase_mib": _peak_mib() - before,
            "peak_mib": _peak_mib(),
            "signal": reference[["task", "fewshot", "metric", *COMPARED]].to_dict("records"),
        }
    )


def _in_child(target: Callable[..., None], *args: Any) -> dict:
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def _compare(fast: list[dict], slow: list[dict]) -> int:
    """Assert equal statistics (NaN == not measurable == None); returns the number of values compared."""
    key = ("task", "fewshot", "metric")
    slow_by_key = {tuple(r[k] for k in key): r for r in slow}
    assert len(fast) == len(slow_by_key), (len(fast), len(slow_by_key))
    compared = 0
    for row in fast:
        other = slow_by_key[tuple(row[k] for k in key)]
        for column in COMPARED:
            a = np.nan if row[column] is None else float(row[column])
            b = np.nan if other[column] is None else float(other[column])
            assert (np.isnan(a) and np.isnan(b)) or np.isclose(a, b, rtol=1e-9, atol=1e-12), (
                f"{column} differs for {row['task']} {row['metric']}: polars {a} vs pandas {b}"
            )
            compared += 1
    return compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=125)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument(
        "--no-targets", action="store_true", help="a slice (make bench-smoke): check equal results, not the speed"
    )
    args = parser.parse_args()
    shape = {
        "n_tasks": args.tasks,
        "n_metrics": 4,
        "n_runs": args.runs,
        "n_seeds": args.seeds,
        "n_steps": args.steps,
    }
    fast = _in_child(_run_polars, shape, args.repeats)
    print(f"table: {fast['rows']:,} rows, {fast['groups']} (task, metric) groups  {shape}")
    print(f"polars  criteria                     {fast['best']['criteria']:7.3f} s (best of {args.repeats})")
    print(f"polars  criteria+selection+aggregate {fast['best']['total']:7.3f} s   target < {TARGET_SECONDS} s")
    print(f"polars  same + bootstrap CIs (n=1000) {fast['best']['total_with_ci']:6.3f} s")
    print(f"polars  gap to English ({GAP_ENGLISH_STAND_IN} as eng)  {fast['best']['english_gap']:7.3f} s   "
          f"{fast['gap_rows']:,} gap rows")  # fmt: skip
    slow = _in_child(_run_pandas, shape)
    ratio = slow["criteria"] / fast["best"]["criteria"]
    print(f"pandas  criteria (groupby-apply)     {slow['criteria']:7.3f} s")
    print(f"ratio   pandas / polars criteria     {ratio:7.1f} x   target >= {TARGET_RATIO:g} x")
    print(f"peak memory  polars: +{fast['peak_increase_mib']:.0f} MiB over the loaded table "
          f"(process peak {fast['peak_mib']:.0f} MiB); pandas: +{slow['peak_increase_mib']:.0f} MiB "
          f"(process peak {slow['peak_mib']:.0f} MiB)")  # fmt: skip
    compared = _compare(fast["signal"], slow["signal"])
    print(f"equal results: {compared:,} statistic values agree (rtol 1e-9)")
    print(f"selection kept {fast['kept']} tasks; ranked {fast['runs_ranked']} runs")
    if args.json:
        summary = {k: v for k, v in fast.items() if k != "signal"} | {
            "pandas_seconds": slow["criteria"],
            "ratio": ratio,
        }
        args.json.write_text(json.dumps(summary, indent=2))
    if args.no_targets:
        print("targets not checked (--no-targets: a slice, whose times say nothing about them)")
        return
    failures = []
    if fast["best"]["total"] >= TARGET_SECONDS:
        failures.append(f"total {fast['best']['total']:.2f} s >= {TARGET_SECONDS} s")
    if ratio < TARGET_RATIO:
        failures.append(f"ratio {ratio:.1f} < {TARGET_RATIO}")
    if failures:
        print("TARGET MISSED: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
