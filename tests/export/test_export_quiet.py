"""`export lm-eval` and `longppl prepare` keep library chatter off the terminal.

Rendering the documents loads each task's dataset (datasets prints a "Generating test split" bar per
split) and builds lighteval tasks (which warn about few-shot examples even for 0-shot perplexity tasks);
loading models prints transformers' load report with raw escape codes. The commands quiet them for
their own duration and restore the libraries' settings afterwards.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import datasets
import pytest
from typer.testing import CliRunner

import finetasks_afr.export.lm_eval as lm_eval
from finetasks_afr.cli.application import app

FEWSHOT_NOTE = "Careful, the task flores_ppl_xho is using evaluation data to build the few shot examples."


def test_export_hides_dataset_bars_and_the_fewshot_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    seen: dict[str, Any] = {}

    def fake_export(selection: Path, out: Path) -> Any:
        seen["bars"] = datasets.is_progress_bar_enabled()
        logging.getLogger("lighteval.tasks.lighteval_task").warning(FEWSHOT_NOTE)
        logging.getLogger("lighteval.tasks.lighteval_task").warning("another lighteval warning")
        return SimpleNamespace(tasks=[], skipped={})

    monkeypatch.setattr(lm_eval, "export_lm_eval", fake_export)
    datasets.enable_progress_bars()
    with caplog.at_level(logging.WARNING):
        result = CliRunner().invoke(app, ["export", "lm-eval", str(tmp_path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert seen["bars"] is False
    messages = [r.getMessage() for r in caplog.records]
    assert FEWSHOT_NOTE not in messages
    assert "another lighteval warning" in messages  # only the few-shot note is dropped
    assert datasets.is_progress_bar_enabled()  # restored
