"""die_with_parent: a pool worker of a killed command exits instead of running on as an orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from analysis.base.processes import POLL_SECONDS

PARENT = textwrap.dedent(
    """
    import os, sys, time
    from concurrent.futures import ProcessPoolExecutor
    from analysis.base.processes import die_with_parent

    def work(path):
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(120)

    if __name__ == "__main__":
        with ProcessPoolExecutor(1, initializer={initializer}) as pool:
            pool.submit(work, sys.argv[1])
            time.sleep(120)
    """
)


def _orphan_alive_after_parent_kill(tmp_path: Path, initializer: str) -> bool:
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(initializer=initializer))
    pid_file = tmp_path / "worker.pid"
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file)], cwd=Path(__file__).parents[3])
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text()):
            if time.monotonic() > deadline:
                pytest.fail("the worker never started")
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        time.sleep(POLL_SECONDS * 6)
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return False
        os.kill(worker, signal.SIGKILL)
        return True
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.slow
def test_a_worker_dies_with_its_killed_parent(tmp_path: Path) -> None:
    assert not _orphan_alive_after_parent_kill(tmp_path, "die_with_parent")


@pytest.mark.slow
def test_without_it_the_worker_outlives_its_parent(tmp_path: Path) -> None:
    """The control: the test above can fail (a plain pool worker runs on as an orphan)."""
    assert _orphan_alive_after_parent_kill(tmp_path, "None")
