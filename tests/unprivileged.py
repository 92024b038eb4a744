"""Run `finetasks-afr` in a subprocess that obeys file modes, also when the tests run as root (here and in CI).

Root writes into a 0o555 folder (CAP_DAC_OVERRIDE), so a read-only `--out` test run as root in-process proves
nothing. Switching to user `nobody` does not work where the interpreter lives under /root (mode 0o700, as with pyenv
on the development machine: nobody cannot even start `.venv/bin/python`). So, as root, the command runs as root
without the two capabilities that bypass file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): a tiny launcher drops
them from its bounding set and execs the CLI, whose capabilities are then the bounding set (Linux, capabilities(7)).
Root is then held to the owner's bits like any user: `os.access(W_OK)` and `open(..., "w")` fail in a 0o555 folder.
As any other user the same subprocess runs, without the drop. Nothing but the test's own folders is touched: HOME
and the caches point into a folder of the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CLI = Path(sys.executable).parent / "finetasks-afr"
CANNOT_DROP = 77  # the launcher's exit code when the kernel refuses the drop: the test is skipped, saying why

# prctl(PR_CAPBSET_DROP=24, cap): CAP_DAC_OVERRIDE=1, CAP_DAC_READ_SEARCH=2; then exec the CLI with the rest of argv.
_LAUNCHER = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in (1, 2):
    if libc.prctl(24, cap, 0, 0, 0) != 0:
        print(f"cannot drop capability {{cap}}: {{os.strerror(ctypes.get_errno())}}", file=sys.stderr)
        sys.exit({CANNOT_DROP})
os.execv(sys.argv[1], sys.argv[1:])
"""


def run_cli_unprivileged(args: list[str | Path], home: Path) -> subprocess.CompletedProcess[str]:
    """`finetasks-afr *args` in a subprocess that cannot write where file modes forbid it (see the module doc).

    `home` (made if absent) holds HOME and the caches. Skips the test when run as root and the capabilities cannot
    be dropped (a container without CAP_SETPCAP); the result's `stdout` and `stderr` are the command's.
    """
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "HF_HOME": str(home / ".cache" / "huggingface"),
        "MPLCONFIGDIR": str(home / ".cache" / "matplotlib"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "COLUMNS": "1000",  # rich wraps (and folds paths) at the width: one line per message
    }
    argv = [str(CLI), *(str(arg) for arg in args)]
    if os.geteuid() == 0:
        argv = [sys.executable, "-c", _LAUNCHER, *argv]
    result = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, timeout=300, check=False)
    if os.geteuid() == 0 and result.returncode == CANNOT_DROP and "cannot drop capability" in result.stderr:
        pytest.skip(f"root, and file modes cannot be enforced on a subprocess: {result.stderr.strip()}")
    return result


@contextmanager
def read_only_folder(parent: Path) -> Iterator[Path]:
    """An empty folder `parent/locked` of mode 0o555 (made writable again afterwards, so it can be removed)."""
    locked = parent / "locked"
    locked.mkdir(parents=True)
    locked.chmod(0o555)
    try:
        yield locked
    finally:
        locked.chmod(0o755)


__all__ = ["CLI", "read_only_folder", "run_cli_unprivileged"]
