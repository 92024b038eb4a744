"""`longppl prepare` loads its two models without transformers' load report on the terminal.

transformers 5 logs a "LOAD REPORT" (unused or missing weights, with raw ANSI escape codes) as a warning
for an encoder loaded with AutoModel; the command keeps transformers at error level while it prepares,
and restores the verbosity afterwards.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from transformers.utils import logging as hf_logging
from typer.testing import CliRunner

import finetasks_afr.cli.longppl as longppl_cli
import finetasks_afr.perplexity.longppl as longppl
from finetasks_afr.cli.application import app


@pytest.mark.slow  # require_device imports torch
def test_prepare_keeps_transformers_quiet_while_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_prepare(*args: Any, **kwargs: Any) -> Path:
        seen["verbosity"] = hf_logging.get_verbosity()
        return tmp_path / "longppl.json"

    monkeypatch.setattr(longppl, "prepare", fake_prepare)
    monkeypatch.setattr(longppl_cli, "load_longppl_file", lambda path: None)
    monkeypatch.setattr(longppl_cli, "_summary", lambda prepared, out: None)
    documents = tmp_path / "docs.jsonl"
    documents.write_text("{}\n")
    before = hf_logging.get_verbosity()
    args = ["longppl", "prepare", str(documents), "--teacher", "org/teacher", "--embedder", "org/embedder"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "out"), "--top-k", "2"])
    assert result.exit_code == 0, result.output
    assert seen["verbosity"] == logging.ERROR
    assert hf_logging.get_verbosity() == before
