"""Profile one demo checkpoint's evaluation (after a warm-up one): where the sweep's non-forward time goes.

Prints the checkpoint's phases (`finetasks_afr.scoring.phases`, the sweep's own exclusive clock: they add up to its
wall time), then cProfile's functions by cumulative time. cProfile slows the Python-heavy phases more than the
forward passes; the phases of an unprofiled run are in bench/bench_sweep.py's output.

python bench/profile_checkpoint.py [--engine finetasks|lighteval] [--lines 35]   (needs out/demo from `make demo`)
"""

import argparse
import cProfile
import os
import pstats
import tempfile

os.environ["TQDM_DISABLE"] = "1"
from pathlib import Path

from analysis.scores.discover import discover
from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
from finetasks_afr.demo.world import World
from finetasks_afr.sweep.evaluate import Evaluator, SweepSpec

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--engine", choices=("finetasks", "lighteval"), default="finetasks")
parser.add_argument("--lines", type=int, default=35)
args = parser.parse_args()
w = World.load(Path("out/demo/world"))
os.environ[WORLD_ENV] = str(w.root)
cks = discover(["out/demo/checkpoints/mix-a/seed-1"]).checkpoints
d = tempfile.mkdtemp()
spec = SweepSpec(
    tasks=[f"{t.name}|0" for t in w.tasks],
    out_dir=d,
    custom_tasks=DEMO_TASKS_MODULE,
    max_length=512,
    env={WORLD_ENV: str(w.root)},
    torch_threads=1,
    engine=args.engine,
)
ev = Evaluator(spec)
ev.evaluate(cks[0])
pr = cProfile.Profile()
pr.enable()
o = ev.evaluate(cks[1])
pr.disable()
ev.close()
assert o.timing is not None, o.reason
print(f"{args.engine}: {o.timing.total:.3f} s, {o.timing.documents} documents; phases (s, profiled):")
for name, seconds in o.timing.phases.items():
    print(f"  {name:<24}{seconds:>8.3f}")
pstats.Stats(pr).sort_stats("cumulative").print_stats(args.lines)
