"""Shared fixtures. `shared_data` points at ../shared/data; absent data skips, unless CI requires it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# rich wraps a message at 80 columns when not on a terminal, inside a path if need be; the tests look for whole
# paths in errors, and pytest-xdist's temporary folders (`popen-gw0/`) are long enough to be cut. Every CLI run in
# a test (in process, or a child that inherits this) gets a line wide enough for any temporary path.
os.environ.setdefault("COLUMNS", "320")
# One thread per test process. `make test` runs one pytest-xdist worker per core, and the commands the tests start
# (sweeps, selections, their worker pools) inherit this: a tiny model's or table's work split over threads that
# compete with the other worker costs more than it saves (on 2 cores, 2 workers: the torch-heavy files 142 -> 110 s,
# the analysis files 61 -> 50 s). Set before anything imports torch or polars; a value already set is kept.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POLARS_MAX_THREADS"):
    os.environ.setdefault(_threads, "1")
SHARED_DATA = Path(os.environ.get("FINETASKS_AFR_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Root of the team's real data; skip (or fail under FINETASKS_AFR_REQUIRE_SHARED=1) when absent."""
    if not SHARED_DATA.is_dir():
        message = f"real test data not found at {SHARED_DATA} (set FINETASKS_AFR_SHARED_DATA)"
        if os.environ.get("FINETASKS_AFR_REQUIRE_SHARED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA
