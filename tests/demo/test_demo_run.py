"""`finetasks-afr demo`'s own mechanics: training shows its progress, `--quick` runs a smaller design with a
consistency window inside its training, and a run trained with other settings is never mixed into a resumed demo.

The full demo's output is checked by test_demo.py (CI runs it fresh); here the training is a few steps long.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analysis.config import load_config
from finetasks_afr.cli import app
from finetasks_afr.demo import run as demo_run
from finetasks_afr.demo.run import DEMO_CONFIG, DemoSettings, demo_config, prepare_world, train_all


@pytest.mark.slow
def test_training_reports_the_checkpoints_written_and_resumes_only_with_the_same_settings(tmp_path: Path) -> None:
    from finetasks_afr.demo.train import train_tokenizer

    world = prepare_world(tmp_path, 0)
    train_tokenizer(world)
    settings = DemoSettings(seeds=(1,), steps=4, save_every=2, workers=2)
    seen: list[tuple[int, int]] = []
    lines: list[str] = []
    train_all(world, tmp_path / "checkpoints", settings, lines.append, lambda saved, total: seen.append((saved, total)))
    per_run, tokens = settings.training()
    assert (per_run, tokens) == (2, 4 * 32 * 64)  # steps 2 and 4 (the early save at 25 falls on the last step)
    total = len(world.mixes) * per_run
    assert seen and seen[-1] == (total, total) and {t for _, t in seen} == {total}
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)
    assert len(list((tmp_path / "checkpoints").glob("*/seed-1/checkpoint-*/trainer_state.json"))) == total
    lines.clear()
    train_all(world, tmp_path / "checkpoints", settings, lines.append)  # resumed: nothing left to train
    assert lines == ["training: every run is already trained"]
    other = DemoSettings(seeds=(1,), steps=6, save_every=2, workers=2)
    with pytest.raises(RuntimeError, match=r"trained with other settings .*fix: pass another --out"):
        train_all(world, tmp_path / "checkpoints", other, lines.append)


def test_the_quick_demo_measures_consistency_over_the_second_half_of_its_own_training() -> None:
    assert demo_config(DemoSettings()) == load_config(DEMO_CONFIG)  # the full demo: demo_config.toml as it is
    quick = DemoSettings.quick()
    per_run, tokens = quick.training()
    assert (quick.seeds, per_run, tokens) == ((1, 2), 7, 300 * 32 * 64)  # checkpoints 25, 50, 100, ..., 300
    config = demo_config(quick)
    assert config.consistency.min_tokens == tokens // 2
    assert config.snr == load_config(DEMO_CONFIG).snr  # only the window moves


def test_demo_quick_runs_the_quick_design_into_its_own_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Path, DemoSettings, Any]] = []

    def fake_run_demo(out: Path, settings: DemoSettings, log: Any, console: Any) -> dict[str, Path]:
        calls.append((out, settings, console))
        return {}

    monkeypatch.setattr(demo_run, "run_demo", fake_run_demo)
    runner = CliRunner()
    assert runner.invoke(app, ["demo", "--quick"]).exit_code == 0
    assert runner.invoke(app, ["demo"]).exit_code == 0
    assert [(out, settings) for out, settings, _ in calls] == [
        (Path("out/demo-quick"), DemoSettings.quick()),
        (Path("out/demo"), DemoSettings()),
    ]
    assert all(console is not None for *_, console in calls)  # progress bars on the CLI's console
    refused = runner.invoke(app, ["demo", "--quick", "--bundle"])
    assert refused.exit_code == 2 and "drop --quick" in refused.output
