"""Tests of finetasks_afr/data/: dataset sources (hub or mirror), the replica hub of every published layout, raw-release
imports on the real releases of ../shared/data, the local dataset writer.

Shared fixture: `offline`, the hub switched off through `datasets`' and huggingface_hub's own variables.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No request reaches the hub: a test that would need one fails instead of waiting on the network."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
