"""`make demo` writes only under its DEMO_OUT: no tracked file of the project is touched, none appears.

Before the fix, the demo target passed `--bundle`, so a user's first `make demo` rewrote the bundled sweep
(finetasks_afr/data/demo_sweep.parquet and its truth table) and left `git status` dirty wherever the floats
differed; `make bundle` now does that on purpose. The demo is resumable, so the test runs the real `make demo` on a
copy of a finished demo ($FINETASKS_AFR_DEMO_DIR, which CI makes): training and the sweep are found done, selection,
aggregation and the report run again. Files are compared by content and by modification time, so a rewrite with
identical bytes fails too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
FRESH = os.environ.get("FINETASKS_AFR_DEMO_DIR")


def _tracked_state() -> dict[str, tuple[int, int]]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    state = {}
    for name in filter(None, names):
        path = PROJECT / name
        if path.is_file():
            info = path.stat()
            state[name] = (info.st_mtime_ns, info.st_size)
    return state


def _porcelain() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=PROJECT, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip


@pytest.mark.slow
def test_make_demo_leaves_every_tracked_file_alone(tmp_path: Path) -> None:
    if not FRESH:
        pytest.skip("no fresh demo output ($FINETASKS_AFR_DEMO_DIR unset; CI sets it)")
    if shutil.which("git") is None or not (PROJECT / ".git").exists():
        pytest.skip("not a git checkout")
    demo = tmp_path / "demo"
    shutil.copytree(FRESH, demo)
    status, tracked = _porcelain(), _tracked_state()
    result = subprocess.run(
        ["make", "demo", f"DEMO_OUT={demo}"], cwd=PROJECT, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (demo / "selection" / "decisions.csv").is_file()
    assert _porcelain() == status
    changed = sorted(name for name, state in _tracked_state().items() if tracked.get(name) != state)
    assert changed == [], f"make demo wrote tracked files: {changed}"
