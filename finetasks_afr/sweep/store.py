"""The on-disk layout of a sweep, and the rules that make it resumable, idempotent and safe to kill.

    OUT/
      settings.json                        the result-changing settings, written by the first sweep; binding
      sweep.json                           what the last sweep asked (tasks, model arguments); informative
      results/<run>/seed-<s>/step-<N>/     one folder per checkpoint
        part-<id>/                         one evaluation of a set of tasks; appears complete or not at all
          results.json                     lighteval's results file, unchanged
          part.json                        the checkpoint, the tasks, the model arguments, versions, timings
          details/                         lighteval's per-sample details (with --save-details)
      logs/<run>/seed-<s>/step-<N>.log     the log of every attempt at that checkpoint
      staging/<random>/                    work in progress (lighteval output and prediction cache)
      locks/                               one lock file per checkpoint being evaluated
      summary.json                         the last sweep's outcome per checkpoint

A part is evaluated in `staging/`, its `part.json` written last, and the whole folder renamed into `results/`
(a rename is atomic on one file system): a killed sweep leaves only a staging folder, which the next sweep
deletes once nobody holds its lock. A checkpoint's pending tasks are the requested ones that no complete part
holds, so a restart evaluates exactly what is missing, and nothing twice. Locks are `flock`s: two sweeps over
the same OUT (or two workers of one) never evaluate the same checkpoint at once.

One directory holds scores of one set of result-changing settings (`RESULT_SETTINGS`): the first sweep records
them in `settings.json` and every later sweep over the directory must ask the same, or is refused before any
work (`SweepSettingsError`, naming the setting, both values and the fix). A directory made before
`settings.json` existed is judged by its parts' manifests (`model_args`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from analysis.base.io import OutputLockedError, atomic_write_text, lock_holder, output_lock, try_lock
from analysis.base.write_errors import writing
from analysis.scores.discover import Checkpoint

PART_MANIFEST = "part.json"
RESULTS_FILE = "results.json"
RUN_NAME_FILE = "run.json"
"""Beside each run's folder in results/: the run's original name (folder names are made path-safe)."""
SETTINGS_FILE = "settings.json"

RESULT_SETTINGS = {
    "backend": "--backend",
    "max_length": "--max-length",
    "dtype": "--dtype",
    "tokenizer": "--tokenizer",
    "max_samples": "--max-samples",
}
"""The settings that change scores, with their `finetasks-afr sweep` options; scores of different ones never share
a sweep directory or a score table.

- backend: vLLM and transformers are different implementations (vLLM picks its own dtype and context handling);
- max_length: prompts longer than it are cut from the left, so a shorter one changes the scores of long prompts;
- dtype: bfloat16 and float32 log-probabilities differ enough to flip close choices;
- tokenizer: another tokenizer gives other tokens, hence other scores;
- max_samples: a subset of the documents is another estimate of the score.

Not result-changing: the task list (each part records its tasks; adding tasks to a sweep is how it grows), the
engine (`finetasks` and `lighteval` give the same scores, tests/scoring/test_engine.py), batch size and device (the same
sums up to float rounding, about 1e-6 in log-probability; batches are right-padded and unmasked), the worker and
thread counts, `--save-details`, and the few-shot sampling (lighteval seeds it with a constant, not an option).
The custom tasks module and the data mirror are locations, not contents: the same module is found at other paths
on other machines (Slurm nodes, copies), so they are not compared either.
"""


class SweepStoreError(RuntimeError):
    """A sweep directory in a state the sweep cannot use; the message names the file and the fix."""


class SweepSettingsError(SweepStoreError):
    """A sweep asked for result-changing settings other than those its directory already holds."""


def part_settings(manifest: dict) -> dict | None:
    """The result-changing settings a part was evaluated with: its `settings`, else those among its `model_args`
    (parts written before settings were recorded); None when it records neither."""
    settings = manifest.get("settings")
    if isinstance(settings, dict):
        return settings
    model_args = manifest.get("model_args")
    if isinstance(model_args, dict):
        return {key: model_args[key] for key in RESULT_SETTINGS if key in model_args}
    return None


def setting_differences(old: dict, new: dict) -> list[tuple[str, object, object]]:
    """(setting, old value, new value) for every result-changing setting both record and that differs."""
    return [(key, old[key], new[key]) for key in RESULT_SETTINGS if key in old and key in new and old[key] != new[key]]


def describe_differences(differences: list[tuple[str, object, object]]) -> str:
    return ", ".join(f"{key} {old!r} there, {new!r} here ({RESULT_SETTINGS[key]})" for key, old, new in differences)


def part_id(tasks: list[str], model_args: dict) -> str:
    """A short stable id of (tasks, model arguments): the same request always maps to the same part name."""
    payload = json.dumps({"tasks": sorted(tasks), "model": model_args}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


class SweepStore:
    """Paths and state of one sweep output directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # layout ---------------------------------------------------------------------------------------
    def checkpoint_dir(self, checkpoint: Checkpoint) -> Path:
        return self.root / "results" / checkpoint.key

    def log_path(self, checkpoint: Checkpoint) -> Path:
        return self.root / "logs" / f"{checkpoint.key}.log"

    def lock_path(self, checkpoint: Checkpoint) -> Path:
        return self.root / "locks" / (checkpoint.key.replace("/", "__") + ".lock")

    # state ----------------------------------------------------------------------------------------
    def parts(self, checkpoint: Checkpoint) -> list[Path]:
        """Complete parts of a checkpoint (a folder in results/ always is: it arrived by rename)."""
        directory = self.checkpoint_dir(checkpoint)
        if not directory.is_dir():
            return []
        return sorted(p for p in directory.iterdir() if p.is_dir() and (p / PART_MANIFEST).is_file())

    def done_tasks(self, checkpoint: Checkpoint) -> set[str]:
        """`task|fewshot` entries already evaluated for this checkpoint, over all its parts."""
        done: set[str] = set()
        for part in self.parts(checkpoint):
            manifest = read_manifest(part / PART_MANIFEST)
            done.update(manifest["tasks"])
        return done

    def pending_tasks(self, checkpoint: Checkpoint, tasks: list[str]) -> list[str]:
        done = self.done_tasks(checkpoint)
        return [task for task in tasks if task not in done]

    # claiming and staging ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def claim(self, checkpoint: Checkpoint) -> Iterator[bool]:
        """Hold the checkpoint's lock for the block; yields False (and holds nothing) when someone else has it.

        The holder records `pid@host (command)` in the lock file, so that a sweep that finds the checkpoint taken
        can name who evaluates it (`claim_holder`): on a shared directory, the other sweep may be another user's.
        """
        path = self.lock_path(checkpoint)
        path.parent.mkdir(parents=True, exist_ok=True)
        with try_lock(path, record=True) as held:
            yield held

    def claim_holder(self, checkpoint: Checkpoint) -> str | None:
        """Who holds (or last held) the checkpoint's claim, as it recorded itself; None when nobody said."""
        return lock_holder(self.lock_path(checkpoint))

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A fresh, locked work folder under staging/, removed afterwards unless it was moved away."""
        base = self.root / "staging"
        base.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=f"{os.uname().nodename}-{os.getpid()}-", dir=base))
        lock = (base / (directory.name + ".lock")).open("a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            (base / (directory.name + ".lock")).unlink(missing_ok=True)

    def clean_stale_staging(self) -> int:
        """Delete staging folders left by killed sweeps (their lock is free). Returns how many."""
        base = self.root / "staging"
        if not base.is_dir():
            return 0
        removed = 0
        for directory in [p for p in base.iterdir() if p.is_dir()]:
            lock_file = base / (directory.name + ".lock")
            with try_lock(lock_file) as held:
                if not held:
                    continue  # a live worker's
                shutil.rmtree(directory, ignore_errors=True)
            lock_file.unlink(missing_ok=True)
            removed += 1
        for lock_file in base.glob("*.lock"):  # a kill between removing a folder and its lock leaves the lock alone
            if not lock_file.with_suffix("").exists():
                with try_lock(lock_file) as held:
                    if held:
                        lock_file.unlink(missing_ok=True)
        return removed

    def commit(self, staged_part: Path, checkpoint: Checkpoint, name: str) -> Path:
        """Move a finished part (its part.json written last) into results/ in one rename."""
        if not (staged_part / PART_MANIFEST).is_file():
            raise SweepStoreError(f"{staged_part}: no {PART_MANIFEST}; a part is committed only when complete")
        target_parent = self.checkpoint_dir(checkpoint)
        target_parent.mkdir(parents=True, exist_ok=True)
        self._record_run_name(checkpoint)
        target = target_parent / name
        if target.exists():  # the same request evaluated twice (a race lost before the lock): keep the first
            raise SweepStoreError(f"{target}: already exists; the checkpoint was evaluated by another worker")
        staged_part.rename(target)
        return target

    def _record_run_name(self, checkpoint: Checkpoint) -> None:
        """Write the run's original name beside its folder (`results/<folder>/run.json`): the folder name is the
        name made path-safe (`mix-_-1a2b3c4d` for `mix-α`), so a person browsing the store can tell which run it
        holds; a record naming another run means two names share one folder, which must never pass silently."""
        record = self.checkpoint_dir(checkpoint).parent.parent / RUN_NAME_FILE
        if record.is_file():
            try:
                recorded = json.loads(record.read_text(encoding="utf-8")).get("run")
            except (OSError, ValueError, AttributeError) as error:
                raise SweepStoreError(f"{record}: unreadable ({error}); fix: delete it (it is rewritten)") from error
            if recorded != checkpoint.run:
                raise SweepStoreError(
                    f"{record.parent}: holds run {recorded!r}, not {checkpoint.run!r}; two run names share one folder. "
                    "Fix: rename one of the runs (NAME[:SEED]=PATH)"
                )
            return
        atomic_write_text(record, json.dumps({"run": checkpoint.run}, ensure_ascii=False) + "\n")

    def recorded_settings(self) -> tuple[dict, Path] | None:
        """(settings, the file saying so): settings.json, else the first part manifest that records them."""
        path = self.root / SETTINGS_FILE
        if path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8")), path
            except ValueError as error:
                raise SweepStoreError(f"{path}: unreadable ({error}); fix: restore it, or delete it") from error
        for manifest_path in sorted((self.root / "results").glob(f"*/*/*/*/{PART_MANIFEST}")):
            settings = part_settings(read_manifest(manifest_path))
            if settings:
                return settings, manifest_path
        return None

    def record_settings(self, settings: dict) -> None:
        """Record the sweep's result-changing settings, or refuse ones that differ from those already recorded.

        Checked and written under the directory's lock (`analysis.base.io.output_lock`, held only for this), so two
        sweeps starting at once on a new directory cannot both record.
        """
        with self.directory_lock():
            recorded = self.recorded_settings()
            differences = setting_differences(recorded[0], settings) if recorded else []
            if recorded and differences:
                key, old, new = differences[0]
                resume = f"without {RESULT_SETTINGS[key]}" if old is None else f"with {RESULT_SETTINGS[key]} {old}"
                raise SweepSettingsError(
                    f"--out {self.root} holds scores evaluated with other settings ({recorded[1]}): "
                    f"{describe_differences(differences)}; scores of different settings must not share one table. "
                    f"Fix: rerun {resume} to resume that sweep, or pass a new --out directory for {key} {new}"
                )
            if not (self.root / SETTINGS_FILE).is_file():  # a new directory, or one from before settings.json
                atomic_write_text(self.root / SETTINGS_FILE, json.dumps(settings, indent=2, sort_keys=True) + "\n")

    def write_sweep_request(self, request: dict) -> None:
        self.write_file("sweep.json", json.dumps(request, indent=2, sort_keys=True) + "\n")

    def write_file(self, name: str, text: str) -> Path:
        """Write a directory-level file (sweep.json, summary.json) atomically, under the directory's lock.

        Sweeps over one directory cooperate (each checkpoint is claimed by one), so the lock is held for the write
        only, never for a whole sweep; it orders these writes with those of any other writer of the directory.
        """
        with self.directory_lock(), writing(self.root / name):  # a refused write names this file
            return atomic_write_text(self.root / name, text)

    @contextlib.contextmanager
    def directory_lock(self) -> Iterator[None]:
        """`analysis.base.io.output_lock` of the sweep directory; a holder that outlasts the wait is a
        `SweepStoreError` naming it (the sweep command's exit 2), not a traceback."""
        held = contextlib.ExitStack()
        try:
            held.enter_context(output_lock(self.root))
        except OutputLockedError as error:
            raise SweepStoreError(str(error)) from error
        with held:
            yield


def read_manifest(path: Path) -> dict:
    """A part's manifest; a broken one is an error naming it (a part in results/ is never half-written)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SweepStoreError(
            f"{path}: unreadable part manifest ({error}); fix: delete its part folder and rerun the sweep"
        ) from error
    if not isinstance(manifest, dict) or not isinstance(manifest.get("tasks"), list) or "checkpoint" not in manifest:
        raise SweepStoreError(f"{path}: not a sweep part manifest (needs 'checkpoint' and 'tasks'); fix: delete it")
    return manifest
