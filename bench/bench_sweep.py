"""Where a sweep's time goes, per checkpoint of the demo, with lighteval's engine and ours, in one run.

Each engine sweeps every checkpoint of one demo run in a fresh worker process of its own (one worker, one torch
thread, as a Slurm array task would), into a temporary directory; each checkpoint's wall time is split with the
sweep's own instrumentation (`finetasks_afr.sweep.evaluate.Timing`: model load timed around the loader, forward
passes by hooks on the torch module, start-up = the sweep's wall time outside its checkpoints: lighteval's import,
the task suite's construction, each task's dataset loaded and checked, paid once per sweep worker and amortised over
its checkpoints). Both score tables are collected and must be identical (the run fails otherwise). Writes
`out/bench/sweep.json` with `speedup_vs_lighteval` (lighteval's seconds per checkpoint / ours) and
`non_forward_share` (ours: 1 - forward / seconds per checkpoint), each worker's peak memory, each engine's phases
per checkpoint (`finetasks_afr.scoring.phases`: exclusive, adding up to the checkpoint's wall time) and its fixed cost
beside forward passes per checkpoint, per task and per 1,000 documents (what a faster device leaves).

    python bench/bench_sweep.py [--demo out/demo] [--run mix-a/seed-1] [--limit-tasks N] [--limit-checkpoints N]

The limits take a slice (the world's first N tasks, the run's first N checkpoints): `make bench-smoke` runs one
in CI so that a change that makes the engines' scores differ fails there, not first in a full bench run. A
slice's ratios say nothing about the goals (start-up is amortised over fewer checkpoints); its identity check is
the same as the full run's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import polars as pl

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

ENGINES = ("lighteval", "finetasks")


def worker(
    demo: Path,
    run: str,
    engine: str,
    out_dir: Path,
    limit_tasks: int | None = None,
    limit_checkpoints: int | None = None,
) -> dict:
    """Sweep one demo run with `engine` in this process; the timings and this process's peak memory. The limits
    keep the world's first tasks and the run's first checkpoints only (the smoke slice)."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    imports_started = time.perf_counter()  # the modules below import lighteval: part of the worker's start-up
    from analysis.scores.discover import discover
    from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
    from finetasks_afr.demo.world import World
    from finetasks_afr.sweep.evaluate import SweepSpec
    from finetasks_afr.sweep.run import run_sweep

    imports_done = time.perf_counter()

    world = World.load(demo / "world")
    os.environ[WORLD_ENV] = str(world.root.resolve())
    tasks = [f"{task.name}|0" for task in world.tasks][:limit_tasks]
    checkpoints = discover([str(demo / "checkpoints" / run)]).checkpoints[:limit_checkpoints]
    spec = SweepSpec(tasks=tasks, out_dir=str(out_dir), custom_tasks=DEMO_TASKS_MODULE, max_length=512,
                     env={WORLD_ENV: str(world.root.resolve())}, torch_threads=1, engine=engine)  # fmt: skip
    started = time.perf_counter()
    result = run_sweep(spec, checkpoints, progress=False)
    wall = time.perf_counter() - started
    timings = [o.timing for o in result.outcomes if o.timing is not None]
    if len(timings) != len(checkpoints):
        failed = [f"{o.checkpoint.label}: {o.reason}" for o in result.outcomes if o.status != "evaluated"]
        raise SystemExit(f"{engine}: {len(checkpoints) - len(timings)} checkpoint(s) failed: {failed}")
    # everything the sweep spent outside its checkpoints: the task check that imports lighteval and the task module
    # (run_sweep, before any worker), the worker's start-up, the summary; plus this process's imports
    startup = imports_done - imports_started + wall - sum(t.total for t in timings)
    n = len(timings)
    per = {
        "startup (amortised)": startup / n,
        "model load": statistics.fmean(t.load for t in timings),
        "forward passes": statistics.fmean(t.forward or 0.0 for t in timings),
        "everything else": statistics.fmean(t.other for t in timings),
    }
    names = list(dict.fromkeys(name for t in timings for name in t.phases))
    phases = {name: sum(t.phases.get(name, 0.0) for t in timings) / n for name in names}
    return {
        "engine": engine,
        "checkpoints": n,
        "tasks": len(tasks),
        "documents": round(statistics.fmean(t.documents for t in timings)),
        "per_checkpoint": per,
        "phases_per_checkpoint": phases,
        "seconds_per_checkpoint": sum(per.values()),
        "startup": startup,
        "sweep_wall": wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _worker_env() -> dict[str, str]:
    """This environment with one Python hash seed for both workers (the caller's, else 0).

    lighteval 0.13's Registry orders the tasks through a set (`tasks/registry.py`, `list(set(expanded_tasks_list))`),
    so each process meets the tasks, hence the documents, in an order of its hash seed; the documents' order sets
    the batches of the float32 passes, and the perplexities then differ between processes in the ninth digit
    (either engine against itself: measured). With one seed both engines see one order and their scores are
    compared as engines, bit for bit.
    """
    return {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}


def fixed_cost(report: dict) -> dict:
    """What a checkpoint costs beside its forward passes (start-up amortised, model load, everything else), per
    checkpoint, per task and per 1,000 documents: on a faster device the forward passes shrink and this stays."""
    seconds = report["seconds_per_checkpoint"] - report["per_checkpoint"]["forward passes"]
    return {
        "seconds_per_checkpoint": seconds,
        "ms_per_task": 1000 * seconds / max(report["tasks"], 1),
        "ms_per_1000_documents": 1e6 * seconds / max(report["documents"], 1),
    }


def _scores(out_dir: Path) -> pl.DataFrame:
    from finetasks_afr.sweep.collect import collect

    frame, _ = collect([out_dir])
    keys = ["run", "seed", "step", "task", "fewshot", "metric"]
    return frame.select([*keys, "score"]).sort(keys)


def compare(lighteval_dir: Path, finetasks_dir: Path) -> dict:
    """Both score tables must hold the same rows and the same scores (exactly, or 1e-9 relative for perplexities:
    the two engines share the rolling path, so they should be bit-equal too)."""
    import polars as pl

    left = _scores(lighteval_dir)
    right = _scores(finetasks_dir)
    if left.height != right.height or left.drop("score").to_dicts() != right.drop("score").to_dicts():
        raise SystemExit(f"score tables differ in rows: lighteval {left.height}, finetasks {right.height}")
    joined = left.with_columns(right["score"].alias("ours"))
    joined = joined.with_columns(((pl.col("score") - pl.col("ours")).abs()).alias("diff"))
    differing = joined.filter(pl.col("diff") > 1e-9 * pl.col("score").abs().clip(lower_bound=1.0))
    if differing.height:
        raise SystemExit(f"scores differ between engines:\n{differing.head(20)}")
    largest = cast(float | None, joined["diff"].max())  # a Float64 column: a float, or None when empty
    return {"rows": left.height, "max_abs_diff": float(largest or 0.0)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo", type=Path, default=PROJECT / "out" / "demo")
    parser.add_argument("--run", default="mix-a/seed-1", help="run folder under DEMO/checkpoints")
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "bench" / "sweep.json")
    parser.add_argument("--limit-tasks", type=int, default=None, help="only the world's first N tasks (a slice)")
    parser.add_argument("--limit-checkpoints", type=int, default=None, help="only the run's first N checkpoints")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--sweep-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        report = worker(args.demo, args.run, args.worker, args.sweep_dir, args.limit_tasks, args.limit_checkpoints)
        print(json.dumps(report))
        return 0
    if not (args.demo / "checkpoints" / args.run).is_dir():
        print(f"error: {args.demo / 'checkpoints' / args.run} does not exist; run `make demo` first", file=sys.stderr)
        return 2
    reports = {}
    with tempfile.TemporaryDirectory() as scratch:
        for engine in ENGINES:
            sweep_dir = Path(scratch) / engine
            command = [sys.executable, __file__, "--demo", str(args.demo), "--run", args.run, "--worker", engine,
                       "--sweep-dir", str(sweep_dir)]  # fmt: skip
            for flag, value in (("--limit-tasks", args.limit_tasks), ("--limit-checkpoints", args.limit_checkpoints)):
                command += [flag, str(value)] if value is not None else []
            done = subprocess.run(command, check=True, capture_output=True, text=True, env=_worker_env())
            reports[engine] = json.loads(done.stdout.strip().splitlines()[-1])
        agreement = compare(Path(scratch) / "lighteval", Path(scratch) / "finetasks")
    ours, theirs = reports["finetasks"], reports["lighteval"]
    speedup = theirs["seconds_per_checkpoint"] / ours["seconds_per_checkpoint"]
    non_forward = 1 - ours["per_checkpoint"]["forward passes"] / ours["seconds_per_checkpoint"]
    print(f"demo sweep: {ours['checkpoints']} checkpoints of {args.run} x {ours['tasks']} tasks, one worker, 1 thread")
    print(f"{'per checkpoint (s)':<22}{'lighteval':>10}{'finetasks':>10}")
    for name in ours["per_checkpoint"]:
        print(f"{name:<22}{theirs['per_checkpoint'][name]:>10.3f}{ours['per_checkpoint'][name]:>10.3f}")
    print(f"{'total':<22}{theirs['seconds_per_checkpoint']:>10.3f}{ours['seconds_per_checkpoint']:>10.3f}")
    print(f"{'peak RSS (MB)':<22}{theirs['peak_rss_mb']:>10.0f}{ours['peak_rss_mb']:>10.0f}")
    print(f"\n{'phases per checkpoint (s)':<26}{'lighteval':>10}{'finetasks':>10}   (exclusive; they add up to the")
    print(f"{'':<46}checkpoint's wall time)")
    from finetasks_afr.scoring.phases import ORDER

    seen = {*theirs["phases_per_checkpoint"], *ours["phases_per_checkpoint"]}
    names = [name for name in ORDER if name in seen] + sorted(seen - set(ORDER))
    for name in names:
        left, right = theirs["phases_per_checkpoint"].get(name, 0.0), ours["phases_per_checkpoint"].get(name, 0.0)
        print(f"{name:<26}{left:>10.3f}{right:>10.3f}")
    costs = {engine: fixed_cost(reports[engine]) for engine in ENGINES}
    print(f"\nfixed cost per checkpoint beside forward passes ({ours['tasks']} tasks, {ours['documents']} documents):")
    for label, key, scale in (("s per checkpoint", "seconds_per_checkpoint", "{:>10.3f}"),
                              ("ms per task", "ms_per_task", "{:>10.1f}"),
                              ("ms per 1,000 documents", "ms_per_1000_documents", "{:>10.1f}")):  # fmt: skip
        print(f"{label:<26}" + scale.format(costs["lighteval"][key]) + scale.format(costs["finetasks"][key]))
    print(f"speedup vs lighteval: {speedup:.2f}x (goal >= 3); non-forward share: {non_forward:.1%} (goal < 25%)")
    print(f"scores identical: {agreement['rows']} rows, max |diff| {agreement['max_abs_diff']:.3g}")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    report = {"engines": reports, "speedup_vs_lighteval": speedup, "non_forward_share": non_forward,
              "fixed_cost": costs, "scores_identical": agreement, "load_average": list(load)}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
