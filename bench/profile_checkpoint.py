"""Profile one demo checkpoint's evaluation (after a warm-up one): where the sweep's non-forward time goes.

python bench/profile_checkpoint.py   (needs out/demo from `make demo`)
"""

import cProfile
import os
import pstats
import tempfile

os.environ["TQDM_DISABLE"] = "1"
from pathlib import Path

from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
from finetasks_afr.demo.world import World
from finetasks_afr.sweep.discover import discover
from finetasks_afr.sweep.evaluate import Evaluator, SweepSpec

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
)
ev = Evaluator(spec)
ev.evaluate(cks[0])
pr = cProfile.Profile()
pr.enable()
o = ev.evaluate(cks[1])
pr.disable()
print(o.timing)
pstats.Stats(pr).sort_stats("cumulative").print_stats(35)
