"""Fault tests of two writers on one output (issue 25, part 3): one lock per output directory or file.

Before the fix, two `select` runs into one `--out` raced: the second run's staging recovery deleted the staging
folder the first was still writing, so the first swapped in a directory without its output marker (or failed
with ENOENT). Now every writer of an analysis output (`select`, `aggregate`, `report`, `collect`, the directory
level files of `sweep`) holds `analysis.base.io.output_lock`, a second one waits for it with a note naming the
holder (pid@host and its command) and gives up after `FINETASKS_AFR_LOCK_WAIT` seconds with exit 2 naming the holder;
staging recovery runs only under that lock, so it never removes the folder of a live writer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import polars as pl
import pytest

from analysis.base.io import OUTPUT_MARKER, recover_directory
from analysis.scores.discover import discover
from finetasks_afr.data.bundled import BUNDLED_SWEEP
from finetasks_afr.sweep.store import SweepStore
from tests.process_tools import alive
from tests.sweep.test_faults_sweep import sweep, world  # noqa: F401  (world: the module fixture of tiny checkpoints)

CLI = Path(sys.executable).parent / "finetasks-afr"
HOST = os.uname().nodename
ENV = {**os.environ, "MPLBACKEND": "Agg"}

# `finetasks-afr` whose analysis, inside its staging folder, waits until the file $RELEASE exists (30 s at most):
# the window in which a second writer's staging recovery used to delete the folder, opened exactly as long as needed.
HELD_CLI = """
import os, sys, time
from pathlib import Path
import analysis.pipeline as pipeline
analyse = pipeline.analyse_scan
def held(*args, **kwargs):
    deadline = time.monotonic() + 30
    while not Path(os.environ["RELEASE"]).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return analyse(*args, **kwargs)
pipeline.analyse_scan = held
from finetasks_afr.cli import app
sys.argv[0] = "finetasks-afr"
app()
"""

# Holds a staging folder of `staged_directory(sys.argv[1])` open until killed: a live writer in another process.
LIVE_WRITER = """
import sys, time
from pathlib import Path
from analysis.base.io import staged_directory
with staged_directory(Path(sys.argv[1]), command="select") as staging:
    (staging / "half.txt").write_text("being written\\n")
    print(staging, flush=True)
    time.sleep(300)
"""


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".staging-" in p.name or ".old-" in p.name or p.suffix == ".tmp")


def _squeezed(text: str) -> str:
    """`text` without whitespace: rich wraps long lines (even inside paths) at the terminal width."""
    return "".join(text.split())


def _start(command: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, env={**ENV, "COLUMNS": "400", **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# --------------------------------------------------------------------------------------------------
# 1. Two select runs into one --out


@pytest.mark.slow
def test_two_selects_into_one_out_both_finish_with_a_complete_output(tmp_path: Path) -> None:
    """Before the fix the second run's recovery deleted the first run's staging folder: the first swapped in a
    directory without its marker (or failed with ENOENT). Now the second waits for the first, then replaces it.

    The first run is held inside its staging folder. In even trials it is let go once the second run waits for it
    (or, before the fix, has finished): the overlap every time. In odd trials it is let go at once, after a delay
    that differs per trial: the two race as they would, unaided.
    """
    for trial in range(6):
        parent = tmp_path / f"trial-{trial}"
        parent.mkdir()
        out, release = parent / "out", tmp_path / f"release-{trial}"
        args = ["select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures"]
        first = _start([sys.executable, "-c", HELD_CLI, *args], RELEASE=str(release))
        _wait_for(lambda: any(".out.staging-" in p.name for p in parent.iterdir()))  # noqa: B023 (called at once)
        second = _start([str(CLI), *args])
        assert second.stderr is not None
        seen = ""
        if trial % 2 == 0:
            while "waiting" not in seen and (line := second.stderr.readline()):
                seen += line
        else:
            time.sleep(0.1 * trial)
        release.touch()
        outputs = [
            (first, "".join(first.communicate(timeout=120))),
            (second, seen + "".join(second.communicate(timeout=120))),
        ]
        for process, output in outputs:
            assert process.returncode == 0, (trial, output)
            assert "ENOENT" not in output and "No such file" not in output and "Traceback" not in output, output
        assert (out / OUTPUT_MARKER).is_file(), f"trial {trial}: the output lost its marker"
        assert {"decisions.csv", "report.md", "suites"} <= {p.name for p in out.iterdir()}, trial
        assert _leftovers(parent) == [], f"trial {trial}"
        assert sorted(p.name for p in parent.iterdir()) == ["out"], "a lock file or staging folder was left"
        if trial % 2 == 0:
            assert f"{first.pid}@{HOST}" in _squeezed(seen), seen  # the second run's note names the first


# --------------------------------------------------------------------------------------------------
# 2. Staging recovery spares a live writer's folder


def test_recovery_keeps_the_staging_folder_of_a_live_writer_and_removes_a_dead_ones(tmp_path: Path) -> None:
    """Before the fix `recover_directory` removed every staging folder, the live writer's too."""
    out = tmp_path / "out"
    writer = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        staging = Path(writer.stdout.readline().strip())
        assert staging.is_dir(), writer.stderr.read() if writer.stderr else ""
        recover_directory(out)
        assert (staging / "half.txt").is_file(), "the live writer's staging folder was removed"
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        assert not alive(writer.pid)
        assert staging.is_dir()  # a dead writer's leftover, until the next recovery
        recover_directory(out)
        assert not staging.exists(), "the dead writer's staging folder was kept"
        assert _leftovers(tmp_path) == []
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


# --------------------------------------------------------------------------------------------------
# 3. The second writer names the holder


def _hold(target: Path) -> AbstractContextManager[Path]:
    """Hold `target`'s output lock in this process, as another writer would."""
    from analysis.base.io import output_lock  # new in the fix: imported here so that only these tests need it

    return output_lock(target)


@pytest.mark.slow
def test_a_second_select_gives_up_naming_the_holder(tmp_path: Path) -> None:
    """Before the fix nothing was locked: the command wrote over the other writer's output without a word."""
    out = tmp_path / "out"
    with _hold(out):
        result = subprocess.run(
            [str(CLI), "select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures"],
            env={**ENV, "FINETASKS_AFR_LOCK_WAIT": "1"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    output = _squeezed(result.stdout + result.stderr)
    assert result.returncode == 2, output
    assert "Traceback" not in output
    assert f"{os.getpid()}@{HOST}" in output, output
    assert "waiting" in output, output  # the one-line note before giving up
    assert not out.exists(), "the command wrote although another process held the output"
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("command", ["aggregate", "report"])
def test_a_second_writer_waits_with_a_note_naming_the_holder_then_writes(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    with _hold(out):
        process = subprocess.Popen(
            [str(CLI), command, str(BUNDLED_SWEEP), "--out", str(out), *(["--no-figures"] * (command == "report"))],
            env={**ENV, "COLUMNS": "400"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        seen = ""
        while "waiting" not in seen:
            line = process.stderr.readline()
            assert line, f"the command ended without waiting: {seen}"
            seen += line
        assert not out.exists(), "written while another process held the lock"
    rest = process.stderr.read()
    assert process.wait(timeout=120) == 0, seen + rest
    assert f"{os.getpid()}@{HOST}" in _squeezed(seen), seen
    assert (out / OUTPUT_MARKER).is_file()


@pytest.mark.slow
def test_collect_into_a_table_another_process_writes_names_the_holder(tmp_path: Path) -> None:
    table = tmp_path / "scores.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(table)
    with _hold(table):
        result = subprocess.run(
            [str(CLI), "collect", str(tmp_path / "nothing-here"), "--out", str(table)],
            env={**ENV, "FINETASKS_AFR_LOCK_WAIT": "0"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    output = _squeezed(result.stdout + result.stderr)
    assert result.returncode == 2 and f"{os.getpid()}@{HOST}" in output, output
    assert pl.read_parquet(table)["x"].to_list() == [1]


# --------------------------------------------------------------------------------------------------
# 4. A checkpoint held by another sweep: the warning names it


def test_the_held_checkpoint_warning_names_the_other_sweep(world: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Before the fix the warning said only "another process"."""
    out = tmp_path / "sweep"
    checkpoints = discover([str(world["runs"])]).checkpoints
    with SweepStore(out).claim(checkpoints[1]) as mine:
        assert mine
        code, output = sweep(world, out)
    assert code == 0, output
    assert "held by another process" in output, output
    assert f"{os.getpid()}@{HOST}" in _squeezed(output), output
