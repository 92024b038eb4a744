"""`select` (and every reader of a score source) pointed at a folder that holds scores in another form: a sweep's
--out or a lighteval --output-dir. Each is named for what it is, with the command that turns it into a score
table, not the v0 reader's advice to rename files `<model>_step<N>.json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.scores.read import read_scores
from analysis.scores.schema import ScoreTableError

LIGHTEVAL_RESULTS = {
    "config_general": {"model_name": "runs/mix-a/seed-1/checkpoint-100", "model_config": {}},
    "results": {"toy_cf|0": {"acc": 0.5, "acc_stderr": 0.01}, "all": {"acc": 0.5, "acc_stderr": 0.01}},
    "versions": {},
}


def _sweep(root: Path) -> Path:
    """A sweep's --out as `finetasks_afr.sweep.store` lays it out: settings, one checkpoint's part, its log."""
    (root / "settings.json").parent.mkdir(parents=True)
    (root / "settings.json").write_text('{"model_args": {}}')
    (root / "sweep.json").write_text('{"tasks": ["toy_cf|0"]}')
    part = root / "results" / "mix-a" / "seed-1" / "step-100" / "part-0a1b"
    part.mkdir(parents=True)
    (part / "results.json").write_text(json.dumps(LIGHTEVAL_RESULTS))
    (part / "part.json").write_text('{"checkpoint": {"run": "mix-a", "seed": 1, "step": 100}, "tasks": {}}')
    (root / "logs" / "mix-a" / "seed-1").mkdir(parents=True)
    (root / "logs" / "mix-a" / "seed-1" / "step-100.log").write_text("")
    return root


def _message(path: Path) -> str:
    with pytest.raises(ScoreTableError) as error:
        read_scores(path)
    message = str(error.value)
    assert "_step<N>" not in message, message
    return message


def test_a_collected_sweep_folder_points_at_its_score_table(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path / "sweep")
    (sweep / "scores.parquet").write_bytes(b"")
    message = _message(sweep)
    assert "sweep folder" in message and str(sweep / "scores.parquet") in message, message


def test_an_uncollected_sweep_folder_says_run_collect(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path / "sweep")
    message = _message(sweep)
    assert "sweep folder" in message and f"finetasks-afr collect {sweep}" in message, message


def test_a_sweep_results_subfolder_is_a_sweep_too(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path / "sweep")
    message = _message(sweep / "results")
    assert "sweep" in message and "finetasks-afr collect" in message, message


def test_a_lighteval_output_folder_says_run_collect(tmp_path: Path) -> None:
    out = tmp_path / "lighteval-out"
    model = out / "results" / "runs" / "mix-a" / "seed-1" / "checkpoint-100"
    model.mkdir(parents=True)
    (model / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(LIGHTEVAL_RESULTS))
    message = _message(out)
    assert "lighteval" in message and f"finetasks-afr collect {out}" in message, message
    file_message = _message(next(model.glob("results_*.json")))  # one of its files, named directly
    assert "lighteval" in file_message and "finetasks-afr collect" in file_message, file_message
