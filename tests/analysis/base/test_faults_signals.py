"""Ctrl-C, SIGTERM and a closed terminal's SIGHUP (issue 25, part 5; issue 41): any `finetasks-afr` command ends with
one line on stderr and exit code 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP, unless ignored from the start: nohup),
no traceback from its workers or itself, no process of its group left running, and a state that the same command
resumes.

The sweeps run as real processes of the installed console script, in a process group of their own: SIGINT goes to
the whole group, as a terminal's Ctrl-C does (the workers receive it too), SIGTERM to the parent only, as `kill`
does. Each signal is sent once a worker is evaluating a checkpoint (its staging folder exists).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from finetasks_afr.cli import app
from finetasks_afr.sweep.collect import collect
from tests.process_tools import children
from tests.sweep_world import STEPS, build_world, cli, group_members, start, sweep_command

KEY = ["run", "seed", "step", "task", "fewshot", "metric"]
NOISE = ("Traceback", "KeyboardInterrupt", "Exception ignored", "Error", "leaked semaphore")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("signals"))


def scores(out: Path) -> pl.DataFrame:
    frame, _ = collect([out])
    return frame.sort(KEY)


def run_in_process(world: dict[str, Path], out: Path) -> str:
    """The same sweep, resumed in this process (lighteval loads once for the whole module); returns its output.

    One worker instead of two changes no score (`--workers` is not among the settings a sweep directory records).
    """
    result = CliRunner().invoke(app, sweep_command(world, out, "--workers", "1")[1:])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def reference(world: dict[str, Path]) -> pl.DataFrame:
    out = world["root"] / "reference"
    run_in_process(world, out)
    return scores(out)


def evaluating(process: subprocess.Popen[str], out: Path, workers: int) -> set[int]:
    """Wait until `workers` spawned workers run and one of them evaluates a checkpoint; return the workers' pids."""
    deadline = time.monotonic() + 90
    found: set[int] = set()
    while not (len(found) >= workers and any((out / "staging").glob("*/"))):
        assert process.poll() is None, f"the sweep ended before the signal: {process.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint was being evaluated in time"
        found = {pid for pid in children(process.pid) if "spawn_main" in _cmdline(pid)}
        time.sleep(0.02)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        pytest.fail(f"the command did not end within 60 s of the signal: {stderr[-3000:]}")
    return process.returncode, stderr


def assert_one_line(stderr: str, name: str) -> None:
    """The interrupt is said in one line, the last, and nothing on stderr is a traceback or an error."""
    for needle in NOISE:
        assert needle not in stderr, f"{needle!r} on stderr:\n{stderr[-4000:]}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if "interrupt" in line.lower()]
    assert len(said) == 1, f"not one line about the interrupt:\n{stderr[-4000:]}"
    assert lines[-1] == said[0] and said[0].startswith(f"interrupted ({name})"), stderr[-4000:]


def assert_group_ends(group: int) -> None:
    """No process of the command's group outlives it (for long: the resource tracker ends on the parent's exit)."""
    deadline = time.monotonic() + 5
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = group_members(group)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) of the group kept running: {[_cmdline(p) for p in left]}"


def assert_resumable(out: Path) -> int:
    """Only whole parts are committed, and not all: the rerun has work left. Returns how many are done."""
    done = len(list((out / "results").rglob("part.json"))) if (out / "results").exists() else 0
    assert done < len(STEPS), "the sweep finished before the signal: nothing left to resume"
    for part in (out / "results").rglob("part-*") if (out / "results").exists() else []:
        assert (part / "part.json").is_file(), f"a part without its manifest was committed: {part}"
    return done


# --------------------------------------------------------------------------------------------------
# 1. Ctrl-C of a sweep with two workers


@pytest.mark.slow
def test_ctrl_c_of_a_two_worker_sweep_says_one_line_exits_130_and_resumes(world, reference, tmp_path):
    out = tmp_path / "sweep"
    command = sweep_command(world, out, "--workers", "2")
    process = start(command)
    evaluating(process, out, workers=2)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: to the parent and its workers
    code, stderr = finish(process)
    assert code == 130, stderr[-4000:]
    assert_one_line(stderr, "SIGINT")
    assert "rerun" in stderr.splitlines()[-1]
    assert_group_ends(process.pid)
    done = assert_resumable(out)
    assert f"{len(STEPS) - done} to evaluate, {done} already done" in run_in_process(world, out)
    assert scores(out).equals(reference)
    assert pl.read_parquet(out / "scores.parquet").sort(KEY).equals(reference)


# --------------------------------------------------------------------------------------------------
# 2. SIGTERM to the parent only


@pytest.mark.slow
def test_sigterm_to_the_parent_stops_its_workers_says_one_line_exits_143_and_resumes(world, reference, tmp_path):
    out = tmp_path / "sweep"
    process = start(sweep_command(world, out, "--workers", "2", "--no-collect"))
    workers = evaluating(process, out, workers=2)
    process.send_signal(signal.SIGTERM)  # as `kill` does: the workers are not told
    code, stderr = finish(process)
    assert code == 143, stderr[-4000:]
    assert_one_line(stderr, "SIGTERM")
    assert len(workers) == 2
    assert_group_ends(process.pid)
    assert_resumable(out)
    run_in_process(world, out)
    assert scores(out).equals(reference)


# --------------------------------------------------------------------------------------------------
# 3. A second Ctrl-C while the first one is being handled


@pytest.mark.slow
def test_a_second_ctrl_c_during_shutdown_adds_no_traceback(world, tmp_path):
    out = tmp_path / "sweep"
    process = start(sweep_command(world, out, "--workers", "2", "--no-collect"))
    evaluating(process, out, workers=2)
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    code, stderr = finish(process)
    assert code == 130, stderr[-4000:]
    assert_one_line(stderr, "SIGINT")
    assert_group_ends(process.pid)
    assert_resumable(out)


# --------------------------------------------------------------------------------------------------
# 4. Any command: select, with its figure workers


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "terminal-closed"])
def test_ctrl_c_or_a_closed_terminal_during_select_s_figures_says_one_line_and_leaves_nothing(tmp_path, signum):
    """SIGHUP (issue 41, case 5): before, exit 129 with no message, "5 leaked semaphore objects", and the staging
    folder and lock left beside --out."""
    from finetasks_afr.data.bundled import BUNDLED_SWEEP

    out = tmp_path / "selection"
    process = start([cli(), "select", str(BUNDLED_SWEEP), "--out", str(out)])
    deadline = time.monotonic() + 90
    while not any(tmp_path.glob(".selection.staging-*/figures/curves/*.png")):
        assert process.poll() is None, f"select ended before the signal: {process.communicate()}"
        assert time.monotonic() < deadline, "no figure was drawn in time"
        time.sleep(0.02)
    os.killpg(process.pid, signum)
    code, stderr = finish(process)
    assert code == 128 + signum, stderr[-4000:]
    assert_one_line(stderr, signal.Signals(signum).name)
    assert_group_ends(process.pid)
    assert not out.exists(), "a half-made selection took the place of --out"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "staging or lock left beside --out"


# --------------------------------------------------------------------------------------------------
# 5. A Ctrl-C that Python raises inside a destructor is not lost

SLOW_DESTRUCTOR = textwrap.dedent(
    """
    import time
    from analysis.base.processes import run_interruptible

    class Slow:
        def __del__(self):
            start = time.monotonic()
            while time.monotonic() - start < 1.0:
                pass

    def work():
        print("ready", flush=True)
        Slow()  # dropped at once: its destructor runs now, for a second
        time.sleep(5)
        print("finished", flush=True)

    run_interruptible(work)
    """
)


def test_a_ctrl_c_raised_inside_a_destructor_still_ends_the_command(tmp_path):
    """Python prints "Exception ignored ... KeyboardInterrupt" for an interrupt raised in `__del__` (or a weakref
    callback: seen in select and sweep) and goes on as if no Ctrl-C had come; the handler sends it again."""
    script = tmp_path / "slow_destructor.py"
    script.write_text(SLOW_DESTRUCTOR, encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    time.sleep(0.3)  # inside the destructor's loop
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert (process.returncode, stdout) == (130, ""), stderr
    assert_one_line(stderr, "SIGINT")


NOHUP = textwrap.dedent(
    """
    import time
    from analysis.base.processes import run_interruptible

    def work():
        print("ready", flush=True)
        time.sleep(1.5)
        print("finished", flush=True)

    run_interruptible(work)
    """
)


@pytest.mark.slow
def test_a_command_started_under_nohup_keeps_ignoring_sighup(tmp_path):
    """`nohup finetasks-afr sweep ...` means: go on when the terminal closes. A SIGHUP ignored at the start stays
    ignored; only a SIGHUP the command would have died of becomes an interrupt."""
    script = tmp_path / "nohup.py"
    script.write_text(NOHUP, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # what nohup does before exec
    )  # fmt: skip
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=30)
    assert (process.returncode, stdout, stderr) == (0, "finished\n", "")
