"""Where a sweep's time goes, per checkpoint of the demo: start-up, model load, forward passes, everything else.

Runs a fresh in-process sweep (one worker, as a Slurm array task would) over every checkpoint of one demo run,
into a temporary directory, and splits each checkpoint's wall time with the sweep's own instrumentation
(`finetasks_afr.sweep.evaluate.Timing`: model load timed around lighteval's loader, forward passes by hooks on
the torch module, start-up = lighteval import + task-suite construction, paid once per worker and amortised
over its checkpoints). Baseline in the same run: one `lighteval accelerate` CLI call per checkpoint (what a
shell loop over checkpoints costs), on the first `--cli-baseline` checkpoints.

    python bench/bench_sweep.py [--demo out/demo] [--run mix-a/seed-1] [--cli-baseline 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo", type=Path, default=PROJECT / "out" / "demo")
    parser.add_argument("--run", default="mix-a/seed-1", help="run folder under DEMO/checkpoints")
    parser.add_argument("--cli-baseline", type=int, default=2, help="checkpoints evaluated by the lighteval CLI")
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "bench" / "sweep.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("TQDM_DISABLE", "1")

    from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
    from finetasks_afr.demo.world import World
    from finetasks_afr.sweep.discover import discover
    from finetasks_afr.sweep.evaluate import SweepSpec
    from finetasks_afr.sweep.run import run_sweep

    run_dir = args.demo / "checkpoints" / args.run
    if not run_dir.is_dir():
        print(f"error: {run_dir} does not exist; run `make demo` first", file=sys.stderr)
        return 2
    world = World.load(args.demo / "world")
    os.environ[WORLD_ENV] = str(world.root.resolve())
    tasks = [f"{task.name}|0" for task in world.tasks]
    checkpoints = discover([str(run_dir)]).checkpoints
    with tempfile.TemporaryDirectory() as scratch:
        spec = SweepSpec(tasks=tasks, out_dir=scratch, custom_tasks=DEMO_TASKS_MODULE, max_length=512,
                         env={WORLD_ENV: str(world.root.resolve())}, torch_threads=1)  # fmt: skip
        started = time.perf_counter()
        result = run_sweep(spec, checkpoints, progress=False)
        sweep_wall = time.perf_counter() - started
    timings = [o.timing for o in result.outcomes if o.timing is not None]
    if len(timings) != len(checkpoints):
        print(f"error: {len(checkpoints) - len(timings)} checkpoint(s) failed", file=sys.stderr)
        return 1
    startup = result.startup_seconds[0]
    n = len(timings)
    per = {
        "startup (amortised)": startup / n,
        "model load": statistics.fmean(t.load for t in timings),
        "forward passes": statistics.fmean(t.forward or 0.0 for t in timings),
        "everything else": statistics.fmean(t.other for t in timings),
    }
    total = sum(per.values())
    non_forward = 1 - per["forward passes"] / total
    print(f"demo sweep: {n} checkpoints of {args.run} x {len(tasks)} tasks, one worker, torch threads 1")
    print(f"{'per checkpoint':<22}{'seconds':>9}{'share':>8}")
    for name, seconds in per.items():
        print(f"{name:<22}{seconds:>9.3f}{seconds / total:>8.1%}")
    print(f"{'total':<22}{total:>9.3f}")
    print(f"non-forward share: {non_forward:.1%} (target < 25%); start-up once per worker: {startup:.1f} s")
    baseline = cli_baseline(checkpoints[: args.cli_baseline], tasks, world) if args.cli_baseline else None
    if baseline:
        print(f"baseline, one `lighteval accelerate` call per checkpoint: {baseline:.1f} s per checkpoint, "
              f"{baseline / total:.1f}x the sweep's {total:.2f} s")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"checkpoints": n, "tasks": len(tasks), "per_checkpoint": per, "non_forward_share": non_forward,
              "startup": startup, "sweep_wall": sweep_wall, "cli_per_checkpoint": baseline}  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def cli_baseline(checkpoints, tasks: list[str], world) -> float:
    """Mean wall seconds of one `lighteval accelerate` process per checkpoint (start-up paid every time)."""
    from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
    from finetasks_afr.lighteval_runtime import clear_prediction_cache, ensure_tiny_benchmarks_file

    ensure_tiny_benchmarks_file()
    lighteval = str(Path(sys.executable).parent / "lighteval")
    env = os.environ | {WORLD_ENV: str(world.root.resolve()), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                        "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    walls = []
    for checkpoint in checkpoints:
        with tempfile.TemporaryDirectory() as scratch:
            command = [lighteval, "accelerate", f"model_name={checkpoint.path},device=cpu,batch_size=64,max_length=512",
                       ",".join(tasks), "--custom-tasks", DEMO_TASKS_MODULE, "--output-dir", scratch]  # fmt: skip
            started = time.perf_counter()
            subprocess.run(command, env=env, check=True, capture_output=True)
            walls.append(time.perf_counter() - started)
            clear_prediction_cache(Path(checkpoint.path))  # the CLI writes its cache into the checkpoint folder
    return statistics.fmean(walls)


if __name__ == "__main__":
    raise SystemExit(main())
