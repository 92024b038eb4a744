"""Shared fixtures. `shared_data` points at ../shared/data; absent data skips, unless CI requires it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
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
