"""`make study`: the micro-scale study's stages, each resumable and timed.

    out/study/
      mirror/          the local datasets, imported from the shared data's raw releases
      tokenizer/       the shared 8k byte-level BPE (lower-casing normaliser)
      checkpoints/     <mix>/seed-<s>/checkpoint-<step>/ (HF Trainer folders; DONE once a run is complete)
      sweep/           the sweep directory (lighteval results per checkpoint, logs, summary.json)
      scores.parquet   the collected score table
      selection/       decisions.csv, suites/, report.md, figures/ (the FineTasks selection)
      aggregate/       ranking.csv, language_scores.csv
      truth_check.csv  the designed truth against what the analysis found; truth.md, its summary
      study.json       the design, the sizes, the tasks and every stage's time

An interrupted study continues where it stopped: the mirror and the tokenizer are reused, a run with its DONE is
never retrained (a run without one is retrained from scratch), the sweep evaluates only checkpoints without
results, and the analysis (seconds) is redone. `publish` copies what the docs show into a folder kept in git.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, replace
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.base.io import atomic_write_text, safe_file_name, umask
from analysis.base.processes import die_with_parent, starting_children
from finetasks_afr.study.design import (
    CONTROL,
    DESIGNED_ORDER,
    LANGUAGES,
    MIXES,
    STUDY_FORMULATIONS,
    STUDY_LEFT_OUT_CATEGORIES,
    STUDY_PROMPTS,
    StudySizes,
)
from finetasks_afr.study.folder import RECORD, SCORES, check_study_folder

if TYPE_CHECKING:
    import polars as pl

    from analysis.config import Config
    from analysis.scores.validate import LoadReport

STUDY_CONFIG = Path(__file__).resolve().parent.parent / "data" / "study_config.toml"
DATA_DIR_ENV = "FINETASKS_AFR_DATA_DIR"
MIRROR_DONE = ".imported"
# What `publish` copies (paths relative to the study's folder; the aggregate's only when some task was kept); the
# selection's figures are copied whole.
PUBLISHED = ("scores.parquet", "study.json", "truth_check.csv", "truth.md", "selection/decisions.csv",
             "selection/report.md")  # fmt: skip
PUBLISHED_IF_RANKED = ("aggregate/ranking.csv", "aggregate/language_scores.csv", "aggregate/language_pairs.csv")


def run_dir(out: Path, mix: str, seed: int) -> Path:
    return Path(out) / "checkpoints" / mix / f"seed-{seed}"


def prepare_mirror(shared_data: Path, out: Path) -> Path:
    """The local datasets under `out/mirror`, imported once from the shared data's raw releases."""
    from finetasks_afr.data.mirror import import_raw

    mirror = Path(out) / "mirror"
    if not (mirror / MIRROR_DONE).is_file():
        import_raw(Path(shared_data), mirror)
        (mirror / MIRROR_DONE).write_text("imported\n", encoding="utf-8")
    return mirror


def study_tasks(mirror: Path, sizes: StudySizes) -> list[str]:
    """The tasks the study evaluates: `sizes.tasks`, else every log-likelihood task of the suite with local data for
    the study's languages in the design's formulations and prompt languages, outside its left-out categories
    (`design.STUDY_FORMULATIONS`, `STUDY_PROMPTS`, `STUDY_LEFT_OUT_CATEGORIES`). Generative tasks are left out:
    their F1 and prefix match stay at zero for models this small, and greedy decoding would cost more than all other
    tasks together."""
    os.environ[DATA_DIR_ENV] = str(Path(mirror).resolve())  # the task configs read the mirror it names
    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.tasks import tasks_with_local_data

    available = tasks_with_local_data(Path(mirror), LANGUAGES)
    if sizes.tasks is None:
        return [
            task
            for task in available
            if TASK_INFO[task].formulation in STUDY_FORMULATIONS
            and TASK_INFO[task].prompt in STUDY_PROMPTS
            and TASK_INFO[task].category not in STUDY_LEFT_OUT_CATEGORIES
        ]
    missing = sorted(set(sizes.tasks) - set(available))
    if missing:
        raise ValueError(f"study tasks without local data for the study's languages: {', '.join(missing)}")
    return list(sizes.tasks)


def _train_one(tokenizer_dir: str, shared_data: str, mix: str, seed: int, out_dir: str, sizes: StudySizes) -> str:
    """Worker entry point (module level, so a spawned process can import it)."""
    os.environ["TQDM_DISABLE"] = "1"
    from finetasks_afr.study.train import train_study_run

    train_study_run(Path(tokenizer_dir), Path(shared_data), mix, seed, Path(out_dir), sizes, threads=1, quiet=True)
    return out_dir


def train_all(
    tokenizer_dir: Path, shared_data: Path, out: Path, sizes: StudySizes, workers: int, log: Callable[[str], None]
) -> None:
    """Train every (mix, seed) run without its DONE, `workers` at a time (one torch thread each)."""
    jobs = [
        (mix, seed) for mix in sizes.mixes for seed in sizes.seeds if not (run_dir(out, mix, seed) / "DONE").is_file()
    ]
    if not jobs:
        log("training: every run is already trained")
        return
    started = time.perf_counter()
    pool = ProcessPoolExecutor(max(1, workers), mp_context=get_context("spawn"), initializer=die_with_parent)
    with pool:
        with starting_children():  # the workers ignore Ctrl-C and end with this process
            futures = {
                pool.submit(_train_one, str(tokenizer_dir), str(shared_data), mix, seed,
                            str(run_dir(out, mix, seed)), sizes): (mix, seed)
                for mix, seed in jobs
            }  # fmt: skip
        for future, (mix, seed) in futures.items():
            future.result()
            log(f"trained {mix} seed {seed} ({time.perf_counter() - started:.0f} s so far)")


def study_config(sizes: StudySizes) -> Config:
    """The analysis configuration: study_config.toml, with consistency measured over the second half of training
    (the file holds that value for the study's own sizes; other sizes, the CI slice's, are scaled)."""
    from analysis.config import load_config

    config = load_config(STUDY_CONFIG)
    half = sizes.steps * sizes.batch_size * sizes.seq_len // 2
    if config.consistency.min_tokens != half:
        config = replace(config, consistency=replace(config.consistency, min_tokens=half))
    return config


RESUMED_STAGES = ("tokenizer", "training", "evaluation")
"""Stages whose finished work a resumed study keeps: their time adds up over the invocations that did it. The other
stages are redone whole each time, so theirs is the last invocation's."""


def stage_seconds(previous_record: Path, timings: dict[str, float]) -> dict[str, float]:
    """The time each stage took, over every invocation of this study directory: a resumed study (or `make
    study-publish` after `make study`) does not replace the 27 minutes of training with the second it took to see
    that the runs are trained."""
    try:
        before = json.loads(previous_record.read_text(encoding="utf-8")).get("seconds", {})
    except (OSError, ValueError):
        before = {}
    return {
        stage: round(seconds + float(before.get(stage, 0.0)), 1) if stage in RESUMED_STAGES else seconds
        for stage, seconds in timings.items()
    }


def run_study(
    out: Path,
    shared_data: Path,
    sizes: StudySizes | None = None,
    *,
    workers: int = 2,
    log: Callable[[str], None] = print,
) -> dict[str, Path]:
    """Run (or resume) the whole study under `out`; returns the paths of its main outputs."""

    from analysis.scores.discover import discover
    from analysis.scores.validate import LoadReport
    from analysis.scores.write import write_scores
    from finetasks_afr.study.train import train_study_tokenizer
    from finetasks_afr.sweep.collect import collect
    from finetasks_afr.sweep.evaluate import SweepSpec
    from finetasks_afr.sweep.run import run_sweep

    sizes = sizes or StudySizes()
    out, shared_data = Path(out).resolve(), Path(shared_data).resolve()
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        timings[stage] = round(time.perf_counter() - clock, 1)
        log(f"{stage}: {timings[stage]:.1f} s")
        clock = time.perf_counter()

    mirror = prepare_mirror(shared_data, out)
    tasks = study_tasks(mirror, sizes)
    lap("mirror and tasks")
    tokenizer_dir = train_study_tokenizer(shared_data, out / "tokenizer", sizes.vocab_size)
    lap("tokenizer")
    train_all(tokenizer_dir, shared_data, out, sizes, workers, log)
    lap("training")

    found = discover([str(out / "checkpoints")]).checkpoints
    spec = SweepSpec(
        tasks=[f"{task}|0" for task in tasks],
        out_dir=str(out / "sweep"),
        max_length=sizes.shape.max_position_embeddings,
        max_samples=sizes.max_samples,
        env={DATA_DIR_ENV: str(mirror)},
        torch_threads=1,  # one per worker process, as in training
    )
    result = run_sweep(spec, found, workers=workers)
    if result.failed:
        raise RuntimeError(f"{len(result.failed)} checkpoint(s) failed; see {out / 'sweep' / 'summary.json'}")
    lap("evaluation")

    table, report = collect([out / "sweep"])
    scores = out / "scores.parquet"
    write_scores(table, scores)
    load_report = LoadReport(source=str(scores), n_rows=report.rows, notes=report.summary().splitlines()[1:])
    analyse_study(table, load_report, sizes, out, log)
    lap("analysis")
    record = {
        "design": {"languages": list(LANGUAGES), "control": CONTROL, "mixes": MIXES,
                   "designed_order": {language: list(order) for language, order in DESIGNED_ORDER.items()}},
        "sizes": asdict(sizes) | {"steps": sizes.steps, "save_every": sizes.save_every},
        "tasks": tasks,
        "seconds": timings,
    }  # fmt: skip
    seconds = stage_seconds(out / "study.json", timings)
    record["seconds"] = seconds
    atomic_write_text(out / "study.json", json.dumps(record, indent=2, sort_keys=True) + "\n")
    log("stage times: " + ", ".join(f"{stage} {value:.0f} s" for stage, value in seconds.items()))
    return {
        "scores": scores,
        "selection": out / "selection",
        "truth": out / "truth_check.csv",
        "study": out / "study.json",
    }


def analyse_study(
    table: pl.DataFrame, load_report: LoadReport, sizes: StudySizes, out: Path, log: Callable[[str], None] = print
) -> None:
    """The study's analysis of its score table: the selection, the ranking when a task is kept, the truth check."""
    import polars as pl

    from analysis.aggregate import rankable
    from analysis.base.io import write_csv_atomic
    from analysis.pipeline import run_aggregate, run_selection
    from analysis.scores.stream import frame_scan
    from analysis.signal import GROUP
    from finetasks_afr.study.truth import study_truth, summarise_truth

    config = study_config(sizes)
    with frame_scan(table, load_report) as scan:
        selection = run_selection(scan, config, out / "selection")
        decisions = selection.selection.decisions
        if not rankable(decisions.filter(pl.col("kept")).select(GROUP)):  # a negative result: nothing to rank on
            log("the selection kept no task: the runs are not ranked (no aggregate/)")
            shutil.rmtree(out / "aggregate", ignore_errors=True)
            schema = {"run": pl.String, "language": pl.String, "score": pl.Float64, "rank": pl.Float64}
            language_scores, language_pairs = pl.DataFrame(schema=schema), None
        else:
            aggregated = run_aggregate(scan, config, out / "aggregate", decisions)
            language_scores, language_pairs = aggregated.language_scores, aggregated.language_pairs
    check = study_truth(table, decisions, language_scores, language_pairs=language_pairs)
    write_csv_atomic(check, out / "truth_check.csv")
    atomic_write_text(out / "truth.md", summarise_truth(check))


REANALYSED = (SCORES, RECORD, "truth_check.csv", "truth.md", "selection", "aggregate", "mirror")
"""What `reanalyse_study` writes under `--out` (the mirror only for a table without `majority_baseline`)."""
STAGING_INFIX = ".reanalyse-"


def reanalyse_study(
    published: Path, out: Path, log: Callable[[str], None] = print, shared_data: Path | None = None
) -> None:
    """Only the analysis, on a finished study's score table and record (`published`, e.g. docs/study): for a
    change to the analysis, which needs neither training nor evaluation. Writes `out` as `run_study` would.

    The folder is checked whole first (`folder.check_study_folder`: both files, their schema, the table's runs and
    tasks the record's), so a wrong folder is a named error before anything is copied. The copies and the analysis
    are then built in a hidden sibling of `out` and moved in only when all of it succeeded: a failure leaves `out`
    as it was, without copies.

    A table from before sweeps recorded `majority_baseline` gets it from the evaluated documents (`add_majority`),
    when `shared_data` holds the raw releases to mirror."""
    from analysis.scores.read import read_scores

    study = check_study_folder(Path(published))
    out = Path(out)
    with _staged_outputs(out) as staging:
        for name in (SCORES, RECORD):
            shutil.copyfile(study.folder / name, staging / name)
        table, load_report = study.table, study.load_report
        if "majority_baseline" not in table.columns and shared_data is not None and Path(shared_data).is_dir():
            mirror_root = out if (out / "mirror" / MIRROR_DONE).is_file() else staging  # reused, as `make study`
            add_majority(staging / SCORES, prepare_mirror(Path(shared_data), mirror_root), study.sizes.max_samples)
            log(f"recorded majority_baseline in {out / SCORES} (from the evaluated documents)")
            table, load_report = read_scores(staging / SCORES)
        load_report = replace(load_report, source=str(out / SCORES))  # the report names the table where it stays
        analyse_study(table, load_report, study.sizes, staging, log)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextmanager
def _staged_outputs(out: Path) -> Iterator[Path]:
    """A hidden staging folder for the block: inside `out` when it exists (`.reanalyse-<pid>-*`: no write beside it
    is needed), else beside it (`.<name>.reanalyse-<pid>-*`). On success its entries (`REANALYSED`) replace theirs
    in `out` (a stale `aggregate/` goes when the new analysis ranked nothing), or it becomes `out` when there was
    none; on any failure it is removed and `out` is untouched. A staging folder of a killed run (its pid dead) is
    removed by the next."""
    out = Path(out).resolve()  # a link's target: the renames stay on its file system
    if out.is_dir():
        home, prefix = out, STAGING_INFIX
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        home, prefix = out.parent, f".{out.name}{STAGING_INFIX}"
    for leftover in home.glob(f"{prefix}*-*"):
        pid = leftover.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=home))
    try:
        staging.chmod(0o777 & ~umask())  # as a plain mkdir would make it: it may become `out` itself
        yield staging
        if not out.exists():
            staging.rename(out)
            return
        for name in REANALYSED:
            new, old = staging / name, out / name
            if new.is_dir() and old.is_dir() and not old.is_symlink():
                old.rename(staging / f".old-{name}")  # the old folder aside, then the new one in its place
                new.rename(old)
            elif new.exists():
                new.replace(old)
            elif name == "aggregate" and old.is_dir():  # the new analysis ranked nothing: no stale ranking
                shutil.rmtree(old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def add_majority(scores: Path, mirror: Path, max_samples: int | None) -> None:
    """Rewrite the score table at `scores` with each choice task's `majority_baseline`: the majority answer's share
    of the documents its sweep evaluated (the first `max_samples` of lighteval's shuffle, read from `mirror`)."""
    import polars as pl

    from analysis.scores.write import write_scores

    os.environ[DATA_DIR_ENV] = str(Path(mirror).resolve())
    from finetasks_afr.tasks import evaluated_majority

    table = pl.read_parquet(scores)
    entries = [
        f"{task}|{fewshot}"
        for task, fewshot in table.select("task", "fewshot").unique().sort("task", "fewshot").iter_rows()
    ]
    shares = evaluated_majority(entries, max_samples)
    key = pl.concat_str(pl.col("task"), pl.lit("|"), pl.col("fewshot").cast(pl.String))
    majority = key.replace_strict(shares, default=None, return_dtype=pl.Float64)
    write_scores(table.with_columns(majority.alias("majority_baseline")), scores)


def publish(out: Path, dest: Path) -> list[Path]:
    """Copy the study's results that the docs show into `dest`: `PUBLISHED`, the ranking when there is one, the
    per-language figures and the training curves of the kept tasks.

    The curves of all tasks (about 25 MB at the study's size) would multiply the repository's size for figures of
    tasks the selection dropped; the published report names those tasks without a link, and `make study` (or
    `finetasks-afr select` on the published table) draws them.
    """
    import polars as pl

    out, dest = Path(out), Path(dest)
    missing = [name for name in PUBLISHED if not (out / name).is_file()]
    if missing:
        raise FileNotFoundError(f"the study under {out} is not finished ({', '.join(missing)} missing): run it first")
    copied = []
    for name in PUBLISHED_IF_RANKED:  # a previous study's ranking never outlives it
        (dest / name).unlink(missing_ok=True)
    for name in PUBLISHED + tuple(name for name in PUBLISHED_IF_RANKED if (out / name).is_file()):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / name, target)
        copied.append(target)
    figures, published_figures = out / "selection" / "figures", dest / "selection" / "figures"
    shutil.rmtree(published_figures, ignore_errors=True)
    if figures.is_dir():
        published_figures.mkdir(parents=True)
        for figure in sorted(figures.glob("*.png")):
            shutil.copyfile(figure, published_figures / figure.name)
            copied.append(published_figures / figure.name)
        decisions = pl.read_csv(out / "selection" / "decisions.csv", infer_schema_length=None)
        kept = set(decisions.filter(pl.col("kept"))["task"].to_list())
        for task in sorted(kept):
            curve = figures / "curves" / f"{safe_file_name(task)}.png"
            if curve.is_file():
                (published_figures / "curves").mkdir(exist_ok=True)
                shutil.copyfile(curve, published_figures / "curves" / curve.name)
                copied.append(published_figures / "curves" / curve.name)
    report = dest / "selection" / "report.md"
    atomic_write_text(report, _unlink_missing_curves(report.read_text(encoding="utf-8"), report.parent))
    return copied


def _unlink_missing_curves(report: str, folder: Path) -> str:
    """The report's curve links whose figure was not published become the task's name and where to draw it."""

    def relink(match: re.Match[str]) -> str:
        if (folder / match.group(2)).is_file():
            return match.group(0)
        return f"{match.group(1)} (dropped: its curve is not published; `make study` draws it)"

    return re.sub(r"\[([^\]]+)\]\((figures/curves/[^)]+\.png)\)", relink, report)
