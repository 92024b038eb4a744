"""The end-to-end demo: a synthetic world, tiny models trained on three data mixes x three seeds, every checkpoint
evaluated with lighteval through the sweep, collected, selected, aggregated and reported. All on CPU, offline.

    out/demo/
      world/           the invented languages' corpus, datasets and tokenizer (finetasks_afr.demo.world)
      checkpoints/     <mix>/seed-<s>/checkpoint-<step>/ (HF Trainer folders)
      sweep/           the sweep directory (lighteval results per checkpoint, logs, summary.json)
      scores.parquet   the collected score table
      selection/       decisions.csv, suites/, report.md, figures/ (finetasks_afr select)
      aggregate/       ranking.csv, language_scores.csv
      mixes.json       the design: {run: {language: share of the run's documents}}
      truth_check.csv  every designed expectation against what the analysis found (finetasks_afr.demo.truth)

The analysis uses the demo's configuration (`demo_config.toml`: the FineTasks consistency threshold scaled to
the demo's training length).

Every stage is resumable: a world, a trained run or an evaluated checkpoint already there is reused. A world
built by an older version of `world.py` is rebuilt in place (new tasks, same corpus); if its corpus changed, what
was trained on the old one is stale and the demo stops, naming the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from analysis.base.processes import die_with_parent, starting_children
from finetasks_afr.data.bundled import BUNDLED_CONFIG

if TYPE_CHECKING:
    from analysis.scores.table import LoadReport
    from finetasks_afr.demo.world import World
    from finetasks_afr.sweep.collect import CollectReport

DEMO_TASKS_MODULE = str(Path(__file__).resolve().parent / "tasks.py")
WORLD_ENV = "FINETASKS_AFR_DEMO_WORLD"
DEMO_CONFIG = BUNDLED_CONFIG  # the demo's analysis configuration (finetasks_afr/data/demo_config.toml)
MIXES_FILE = "mixes.json"


@dataclass
class DemoSettings:
    seeds: tuple[int, ...] = (1, 2, 3)
    steps: int | None = None  # None: train.py's default
    save_every: int | None = None
    workers: int = 2
    world_seed: int = 0


class _TrainOverrides(TypedDict, total=False):
    """The `train_run` settings a demo may override."""

    steps: int
    save_every: int


def _train_one(world_root: str, mix: str, seed: int, out_dir: str, steps: int | None, save_every: int | None) -> str:
    """Worker entry point (module level, so a spawned process can import it)."""
    os.environ["TQDM_DISABLE"] = "1"  # before transformers is imported: no "Writing model shards" bars
    from finetasks_afr.demo.train import train_run
    from finetasks_afr.demo.world import World

    extra: _TrainOverrides = {}  # what is None keeps train.py's default
    if steps is not None:
        extra["steps"] = steps
    if save_every is not None:
        extra["save_every"] = save_every
    train_run(World.load(Path(world_root)), mix, seed, Path(out_dir), threads=1, quiet=True, **extra)
    return out_dir


def _trained(run_dir: Path) -> bool:
    return (run_dir / "DONE").is_file()


def train_all(world: World, checkpoints: Path, settings: DemoSettings, log: Callable[[str], None]) -> None:
    """Train every (mix, seed) run not yet trained, `settings.workers` at a time (one torch thread each)."""
    jobs = [
        (mix, seed, checkpoints / mix / f"seed-{seed}")
        for mix in sorted(world.mixes)
        for seed in settings.seeds
        if not _trained(checkpoints / mix / f"seed-{seed}")
    ]
    if not jobs:
        log("training: every run is already trained")
        return
    started = time.perf_counter()
    pool = ProcessPoolExecutor(settings.workers, mp_context=get_context("spawn"), initializer=die_with_parent)
    with pool:
        with starting_children():  # the workers (started by submit) ignore Ctrl-C and end with this process
            root, steps, every = str(world.root), settings.steps, settings.save_every
            futures = {
                pool.submit(_train_one, root, mix, seed, str(run_dir), steps, every): (mix, seed, run_dir)
                for mix, seed, run_dir in jobs
            }
        for future, (mix, seed, run_dir) in futures.items():
            future.result()
            (run_dir / "DONE").write_text("trained\n")
            log(f"trained {mix} seed {seed} ({time.perf_counter() - started:.0f} s so far)")


def _corpus_digests(world_root: Path) -> dict[str, str]:
    """Content digest of each corpus file of a world (empty when there is none)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(world_root.glob("corpus/*.txt"))
    }


def prepare_world(out: Path, world_seed: int) -> World:
    """The demo's world under `out/world`: reused when current, (re)built when missing or older.

    A rebuilt world that changes the corpus would leave the tokenizer and checkpoints trained on the old one: an
    error then, rather than a silently mixed demo."""
    from finetasks_afr.demo.world import MANIFEST, WORLD_VERSION, World, build_world, manifest_version

    world_root = out / "world"
    if manifest_version(world_root) == WORLD_VERSION:
        return World.load(world_root)
    before = _corpus_digests(world_root) if (world_root / MANIFEST).is_file() else {}
    world = build_world(world_root, world_seed)
    trained = (world_root / "tokenizer").is_dir() or any((out / "checkpoints").glob("*/seed-*/DONE"))
    if before and before != _corpus_digests(world_root) and trained:
        raise RuntimeError(
            f"the demo world under {world_root} was rebuilt for version {WORLD_VERSION} and its corpus changed: the "
            f"tokenizer and checkpoints under {out} were trained on the old corpus; fix: remove {out} (or pass another "
            "--out) and run the demo again"
        )
    return world


def _load_report(scores: Path, collected: CollectReport) -> LoadReport:
    """The analysis's `LoadReport` of the collected table: the report's source is the score file the demo wrote
    (what `finetasks-afr select <scores>` would name), its notes are what collection skipped, superseded or noted."""
    from analysis.scores.table import LoadReport

    return LoadReport(source=str(scores), n_rows=collected.rows, notes=collected.summary().splitlines()[1:])


def mixes_design(world: World) -> dict[str, dict[str, float]]:
    """{run: {language: share}}: each language's share of every run's documents (common corpora included)."""
    from finetasks_afr.demo.world import mix_shares

    return {mix: mix_shares(world, mix) for mix in sorted(world.mixes)}


def run_demo(out: Path, settings: DemoSettings | None = None, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Run (or resume) the whole demo under `out`; returns the paths of its main outputs."""
    from analysis.base.io import atomic_write_text, write_csv_atomic
    from analysis.config import load_config
    from analysis.pipeline import run_aggregate, run_selection
    from analysis.scores.discover import discover
    from analysis.scores.stream import frame_scan
    from analysis.scores.table import write_scores
    from finetasks_afr.demo.train import train_tokenizer
    from finetasks_afr.demo.truth import truth_check
    from finetasks_afr.sweep.collect import collect
    from finetasks_afr.sweep.evaluate import SweepSpec
    from finetasks_afr.sweep.run import run_sweep

    settings = settings or DemoSettings()
    out = Path(out)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        timings[stage] = time.perf_counter() - clock
        log(f"{stage}: {timings[stage]:.1f} s")
        clock = time.perf_counter()

    world = prepare_world(out, settings.world_seed)
    world_root = world.root
    if not (world_root / "tokenizer").is_dir():
        train_tokenizer(world)
    lap("world")

    checkpoints = out / "checkpoints"
    train_all(world, checkpoints, settings, log)
    lap("training")

    os.environ[WORLD_ENV] = str(world_root.resolve())
    found = discover([str(checkpoints)]).checkpoints
    spec = SweepSpec(
        tasks=[f"{task.name}|0" for task in world.tasks],
        out_dir=str((out / "sweep").resolve()),
        custom_tasks=DEMO_TASKS_MODULE,
        max_length=512,
        env={WORLD_ENV: str(world_root.resolve())},
    )
    result = run_sweep(spec, found, workers=settings.workers)
    if result.failed:
        raise RuntimeError(f"{len(result.failed)} checkpoint(s) failed; see {out / 'sweep' / 'summary.json'}")
    lap("evaluation")

    table, report = collect([out / "sweep"])
    scores = out / "scores.parquet"
    write_scores(table, scores)
    config = load_config(DEMO_CONFIG)
    with frame_scan(table, _load_report(scores, report)) as scan:
        selection = run_selection(scan, config, out / "selection")
        aggregated = run_aggregate(scan, config, out / "aggregate", selection.selection.decisions)
    mixes = mixes_design(world)
    atomic_write_text(out / MIXES_FILE, json.dumps(mixes, indent=2, sort_keys=True) + "\n")
    kinds = {task.name: task.kind for task in world.tasks}
    check = truth_check(kinds, selection.selection.decisions, mixes, aggregated.language_scores)
    write_csv_atomic(check, out / "truth_check.csv")
    lap("analysis")
    log("truth check (designed expectation -> found):")
    for (check_name, kind), rows in sorted(check.group_by(["check", "kind"]), key=lambda item: str(item[0])):
        log(f"  {check_name} {kind}: {rows['ok'].sum()} of {rows.height} as designed")
    log("stage times: " + ", ".join(f"{stage} {seconds:.0f} s" for stage, seconds in timings.items()))
    return {"scores": scores, "selection": out / "selection", "truth": out / "truth_check.csv",
            "mixes": out / MIXES_FILE}  # fmt: skip
