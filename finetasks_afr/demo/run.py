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
      timings.json     seconds per stage (world, training, evaluation, analysis) of the last run

The analysis uses the demo's configuration (`demo_config.toml`: the FineTasks consistency threshold scaled to
the demo's training length).

Every stage is resumable: a world, a trained run or an evaluated checkpoint already there is reused. A world
built by an older version of `world.py` is rebuilt in place (new tasks, same corpus); if its corpus changed, what
was trained on the old one is stale and the demo stops, naming the fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from analysis.base.processes import die_with_parent, starting_children
from finetasks_afr.data.bundled import BUNDLED_CONFIG

if TYPE_CHECKING:
    from rich.console import Console

    from analysis.config import Config
    from analysis.scores.validate import LoadReport
    from finetasks_afr.demo.world import World
    from finetasks_afr.sweep.collect import CollectReport

DEMO_TASKS_MODULE = str(Path(__file__).resolve().parent / "tasks.py")
WORLD_ENV = "FINETASKS_AFR_DEMO_WORLD"
DEMO_CONFIG = BUNDLED_CONFIG  # the demo's analysis configuration (finetasks_afr/data/demo_config.toml)
MIXES_FILE = "mixes.json"
TIMINGS_FILE = "timings.json"  # seconds per stage of the last (resumed) run


@dataclass
class DemoSettings:
    seeds: tuple[int, ...] = (1, 2, 3)
    steps: int | None = None  # None: train.py's default
    save_every: int | None = None
    workers: int = 2
    world_seed: int = 0

    @classmethod
    def quick(cls, workers: int = 2) -> DemoSettings:
        """The quick demo (`finetasks-afr demo --quick`): the whole chain in a few minutes, on less evidence: two
        seeds (the fewest the seed SNR needs) of the three mixes, 300 steps with a checkpoint every 50 (seven per
        run, the early one included) instead of three seeds x 800 steps x nine checkpoints."""
        return cls(seeds=(1, 2), steps=300, save_every=50, workers=workers)

    def training(self) -> tuple[int, int]:
        """(checkpoints saved per run, tokens each run trains on), train.py's defaults filling what is None."""
        from finetasks_afr.demo.tiny import save_steps
        from finetasks_afr.demo.train import train_run

        defaults = {name: p.default for name, p in inspect.signature(train_run).parameters.items()}
        steps = self.steps or defaults["steps"]
        saved = save_steps(steps, self.save_every or defaults["save_every"], defaults["first_save"])
        return len(saved), steps * defaults["batch_size"] * defaults["seq_len"]


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


def _trained(run_dir: Path, settings: DemoSettings) -> bool:
    """Whether the run is trained, with these settings: a run trained with other steps would mix two designs in one
    sweep, so that is an error naming the fix."""
    done = run_dir / "DONE"
    if not done.is_file():
        return False
    found = done.read_text(encoding="utf-8").strip()
    if found != _done_marker(settings):
        raise RuntimeError(
            f"{run_dir} was trained with other settings ({done}: {found!r}, this demo: {_done_marker(settings)!r}); "
            "fix: pass another --out (`demo --quick` writes out/demo-quick by default), or remove the old output"
        )
    return True


def _done_marker(settings: DemoSettings) -> str:
    """The DONE file's text: `trained` for train.py's defaults (as every earlier demo wrote), else the steps."""
    if settings.steps is None and settings.save_every is None:
        return "trained"
    return f"trained steps={settings.steps} save_every={settings.save_every}"


def _saved(run_dir: Path) -> int:
    """The checkpoints a run has finished writing (the Trainer writes trainer_state.json last)."""
    return sum(1 for state in run_dir.glob("checkpoint-*/trainer_state.json"))


def train_all(
    world: World,
    checkpoints: Path,
    settings: DemoSettings,
    log: Callable[[str], None],
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Train every (mix, seed) run not yet trained, `settings.workers` at a time (one torch thread each).

    `progress(saved, total)` is told, every second while training, how many of the pending runs' checkpoints are
    written: the workers are other processes, and a checkpoint folder is what each leaves behind as it goes."""
    jobs = [
        (mix, seed, checkpoints / mix / f"seed-{seed}")
        for mix in sorted(world.mixes)
        for seed in settings.seeds
        if not _trained(checkpoints / mix / f"seed-{seed}", settings)
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
        total = len(jobs) * settings.training()[0]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: str(futures[f][2])):
                mix, seed, run_dir = futures[future]
                future.result()
                (run_dir / "DONE").write_text(_done_marker(settings) + "\n", encoding="utf-8")
                log(f"trained {mix} seed {seed} ({time.perf_counter() - started:.0f} s so far)")
            if progress is not None:
                progress(min(total, sum(_saved(run_dir) for _, _, run_dir in jobs)), total)


@contextlib.contextmanager
def _training_bar(console: Console | None) -> Iterator[Callable[[int, int], None] | None]:
    """A rich bar of the checkpoints written so far on `console` (none without one), gone when training ends."""
    if console is None:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("training: checkpoints"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        job = bar.add_task("training", total=None)
        yield lambda saved, total: bar.update(job, completed=saved, total=total)


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
    from analysis.scores.validate import LoadReport

    return LoadReport(source=str(scores), n_rows=collected.rows, notes=collected.summary().splitlines()[1:])


def mixes_design(world: World) -> dict[str, dict[str, float]]:
    """{run: {language: share}}: each language's share of every run's documents (common corpora included)."""
    from finetasks_afr.demo.world import mix_shares

    return {mix: mix_shares(world, mix) for mix in sorted(world.mixes)}


def demo_config(settings: DemoSettings) -> Config:
    """The demo's analysis configuration, its consistency window moved to the second half of training when the
    runs train for other than train.py's default steps (the quick demo): `demo_config.toml` is sized for those."""
    from analysis.config import load_config

    config = load_config(DEMO_CONFIG)
    trained = settings.training()[1]
    if trained // 2 == config.consistency.min_tokens:
        return config
    return dataclasses.replace(config, consistency=dataclasses.replace(config.consistency, min_tokens=trained // 2))


def run_demo(
    out: Path,
    settings: DemoSettings | None = None,
    log: Callable[[str], None] = print,
    console: Console | None = None,
) -> dict[str, Path]:
    """Run (or resume) the whole demo under `out`; returns the paths of its main outputs. With a `console`,
    training and evaluation show progress bars on it."""
    from analysis.base.io import atomic_write_text, write_csv_atomic
    from analysis.pipeline import run_aggregate, run_selection
    from analysis.scores.discover import discover
    from analysis.scores.stream import frame_scan
    from analysis.scores.write import write_scores
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
    with _training_bar(console) as progress:
        train_all(world, checkpoints, settings, log, progress)
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
    result = run_sweep(spec, found, workers=settings.workers, console=console, progress=console is not None)
    if result.failed:
        raise RuntimeError(f"{len(result.failed)} checkpoint(s) failed; see {out / 'sweep' / 'summary.json'}")
    lap("evaluation")

    table, report = collect([out / "sweep"])
    scores = out / "scores.parquet"
    write_scores(table, scores)
    config = demo_config(settings)
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
    seconds = {stage: round(value, 1) for stage, value in timings.items()}
    atomic_write_text(out / TIMINGS_FILE, json.dumps(seconds, indent=2) + "\n")  # what the docs' times come from
    return {"scores": scores, "selection": out / "selection", "truth": out / "truth_check.csv",
            "mixes": out / MIXES_FILE}  # fmt: skip
