"""The on-disk layout of a sweep, and the rules that make it resumable, idempotent and safe to kill.

    OUT/
      sweep.json                           what was asked (tasks, model arguments); informative
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

from analysis.io import atomic_write_text
from finetasks_afr.sweep.discover import Checkpoint

PART_MANIFEST = "part.json"
RESULTS_FILE = "results.json"


class SweepStoreError(RuntimeError):
    """A sweep directory in a state the sweep cannot use; the message names the file and the fix."""


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
        """Hold the checkpoint's lock for the block; yields False (and holds nothing) when someone else has it."""
        path = self.lock_path(checkpoint)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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
            with lock_file.open("a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live worker's
                shutil.rmtree(directory, ignore_errors=True)
                fcntl.flock(lock, fcntl.LOCK_UN)
            lock_file.unlink(missing_ok=True)
            removed += 1
        return removed

    def commit(self, staged_part: Path, checkpoint: Checkpoint, name: str) -> Path:
        """Move a finished part (its part.json written last) into results/ in one rename."""
        if not (staged_part / PART_MANIFEST).is_file():
            raise SweepStoreError(f"{staged_part}: no {PART_MANIFEST}; a part is committed only when complete")
        target_parent = self.checkpoint_dir(checkpoint)
        target_parent.mkdir(parents=True, exist_ok=True)
        target = target_parent / name
        if target.exists():  # the same request evaluated twice (a race lost before the lock): keep the first
            raise SweepStoreError(f"{target}: already exists; the checkpoint was evaluated by another worker")
        staged_part.rename(target)
        return target

    def write_sweep_request(self, request: dict) -> None:
        atomic_write_text(self.root / "sweep.json", json.dumps(request, indent=2, sort_keys=True) + "\n")


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
