"""A run that runs out of file descriptors (EMFILE under a low `ulimit -n`) names the limit and its fix, not the
folder, and leaves no staging folder behind (analysis/base/io.py keeps descriptors aside to remove it)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.base.io import staged_directory
from analysis.base.write_errors import too_many_open_files


@pytest.mark.slow  # a real `select` in a process with 14 open files at most: seconds
def test_select_under_a_low_open_file_limit_names_it_and_leaves_no_staging_folder(tmp_path: Path) -> None:
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (14, 14))

    out = tmp_path / "selection"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    ended = subprocess.run(
        [sys.executable, "-m", "finetasks_afr.cli", "select", "--out", str(out)],
        preexec_fn=low_limit,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    said = " ".join(ended.stderr.split())
    assert ended.returncode == 2, said
    assert "too many open files (EMFILE)" in said and "ulimit -n" in said, said
    assert "choose a writable directory" not in said and "Traceback" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no staging folder, no lock


def test_a_staged_run_that_ran_out_of_descriptors_is_removed_and_named(tmp_path: Path) -> None:
    """The run takes every descriptor left and keeps them while the staging folder is removed, as a traceback keeps
    a failed run's open files: without the descriptors kept aside, the removal cannot list a folder."""
    out = tmp_path / "out"
    held: list[int] = []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        with pytest.raises(OSError) as raised, staged_directory(out, command="test") as staging:
            (staging / "suites" / "cf").mkdir(parents=True)
            (staging / "suites" / "cf" / "yor.txt").write_text("a task\n")
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(list(Path("/proc/self/fd").iterdir())) + 4, hard))
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert too_many_open_files(raised.value) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == []
