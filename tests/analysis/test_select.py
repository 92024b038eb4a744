"""Selection: thresholds, metric choice, suites, coverage, and the recovery of the simulated sweep's truth."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.config import ConfigError, load_config
from analysis.scores.read import read_scores
from analysis.scores.validate import LoadReport
from analysis.select import Selection, select
from analysis.signal import compute_signal
from finetasks_afr.cli import app
from finetasks_afr.demo.simulate import SIMULATED_SWEEP_PATH as BUNDLED_SWEEP
from finetasks_afr.demo.simulate import truth_path

CONFIG = load_config()
SUITE_LINE = re.compile(r"^(# [A-Za-z ]+ \((GK|RC|RES|NLU|GEN)\)|[a-z_]+\|[A-Za-z0-9_:.]+\|\d+|)$")


Bundled = tuple[pl.DataFrame, LoadReport, Selection, pl.DataFrame]  # scores, load report, selection, truth


@pytest.fixture(scope="module")
def bundled() -> Bundled:
    table, report = read_scores(BUNDLED_SWEEP)
    selection = select(compute_signal(table, CONFIG), CONFIG)
    truth = pl.read_csv(truth_path(BUNDLED_SWEEP))
    return table, report, selection, truth


def test_bundled_sweep_selection_recovers_the_known_tasks(bundled):
    _, _, selection, truth = bundled
    chosen = selection.decisions.filter(pl.col("chosen")).join(truth, on="task", how="inner")
    assert chosen.height == truth.height  # one chosen row per task
    wrong = chosen.filter(pl.col("kept") != pl.col("expected_kept"))
    assert wrong.height == 0, wrong.select("task", "kind", "kept", "reason")
    kept_kinds = set(chosen.filter(pl.col("kept")).get_column("kind").unique())
    assert kept_kinds == {"learnable", "late_emerging"}


def test_dropped_tasks_fail_for_their_designed_reason(bundled):
    _, _, selection, truth = bundled
    phrase = {"snr": "snr ", "non_random": "sigma above random", "monotonicity": "monotonicity "}
    dropped = selection.decisions.filter(pl.col("chosen") & ~pl.col("kept")).join(truth, on="task")
    assert dropped.height > 0
    for row in dropped.iter_rows(named=True):
        assert row["reason"].startswith("dropped: ")
        assert phrase[row["expected_reason"]] in row["reason"], (row["task"], row["reason"])


def test_every_metric_of_a_random_label_task_fails(bundled):
    _, _, selection, truth = bundled
    random_tasks = truth.filter(pl.col("kind") == "random_label").get_column("task").to_list()
    rows = selection.decisions.filter(pl.col("task").is_in(random_tasks))
    assert rows.height > 0 and not rows.get_column("passes").any()


def test_coverage_flags_the_missing_category_with_best_candidate(bundled):
    _, _, selection, _ = bundled
    flags = {(f.language, f.suite, f.category): f for f in selection.coverage}
    assert set(flags) == {("amh", "cf", "RES"), ("amh", "mcf", "RES")}
    flag = flags[("amh", "cf", "RES")]
    assert flag.candidate is not None and "amh" in flag.candidate
    assert "dropped" in flag.candidate_reason


def test_suites_follow_the_published_list_format(bundled: Bundled, shared_data: Path) -> None:
    _, _, selection, _ = bundled
    reference = (shared_data / "reference" / "lighteval_fine_tasks" / "cf" / "sw.txt").read_text()
    for line in reference.splitlines():
        assert SUITE_LINE.match(line), f"reference line not understood by the test: {line!r}"
    for (suite, language), text in selection.suites.items():
        assert suite in ("cf", "mcf") and text.endswith("\n") and not text.endswith("\n\n")
        for line in text.splitlines():
            assert SUITE_LINE.match(line), (suite, language, line)
    yor_mcf = selection.suites[("mcf", "yor")]
    assert "lighteval|afriqa_yor|0" in yor_mcf  # generative tasks belong to both lists
    assert "_cf|" not in yor_mcf


def test_every_suite_task_is_kept_and_in_the_right_list(bundled):
    _, _, selection, _ = bundled
    kept = {(r["task"], r["fewshot"]): r for r in selection.kept.iter_rows(named=True)}
    for (suite, _), text in selection.suites.items():
        for line in text.splitlines():
            if line.startswith("lighteval|"):
                _, task, shots = line.split("|")
                row = kept[(task, int(shots))]
                assert row["formulation"] in {"cf": ("CF", "GEN", "PPL"), "mcf": ("MCF", "HYBRID", "GEN", "PPL")}[suite]


def _signal_row(**overrides: object) -> dict[str, object]:
    row = {
        "task": "t", "fewshot": 0, "metric": "acc", "benchmark": "b", "language": "yor", "category": "GK",
        "formulation": "CF", "random_baseline": 0.25, "monotonicity": 0.9, "monotonicity_reason": None,
        "snr": 40.0, "snr_kind": "seed", "snr_reason": None, "non_random_sigmas": 10.0, "three_sigma": True,
        "three_sigma_kind": "seed", "non_random_reason": None, "consistency": 0.5, "consistency_reason": None,
    }  # fmt: skip
    return row | overrides


def _select(rows: list[dict[str, object]]) -> pl.DataFrame:
    return select(pl.DataFrame(rows, infer_schema_length=None), CONFIG).decisions


def test_metric_with_the_best_margin_is_chosen():
    decisions = _select(
        [
            _signal_row(metric="acc", monotonicity=0.6, snr=100.0),  # margin 0.2 (monotonicity)
            _signal_row(metric="acc_norm", monotonicity=0.95, snr=30.0),  # margin 0.5 (snr 30/20 - 1)
            _signal_row(metric="acc_norm_pmi", monotonicity=0.99, snr=15.0),  # fails snr
        ]
    )
    chosen = decisions.filter(pl.col("chosen")).row(0, named=True)
    assert chosen["metric"] == "acc_norm" and chosen["kept"]
    assert chosen["margin"] == pytest.approx(0.5)
    others = decisions.filter(~pl.col("chosen")).sort("metric")
    assert others.get_column("reason").to_list()[0].startswith("passes, but")
    assert others.get_column("reason").to_list()[1].startswith("fails: snr 15.0 < 20.0")


def test_ties_break_on_consistency_then_preference():
    rows = [_signal_row(metric=m, monotonicity=1.0, snr=80.0, consistency=0.5) for m in ("acc", "acc_norm_token")]
    assert _select(rows).filter(pl.col("chosen")).item(0, "metric") == "acc_norm_token"
    rows[0]["consistency"] = 0.9
    assert _select(rows).filter(pl.col("chosen")).item(0, "metric") == "acc"


def test_not_measurable_required_criterion_drops_with_its_reason():
    decisions = _select([_signal_row(snr=None, snr_kind=None, snr_reason="snr: no seed replicas")])
    row = decisions.row(0, named=True)
    assert not row["kept"] and row["snr_pass"] is None
    assert "snr: no seed replicas" in row["reason"]


def test_generative_tasks_are_exempt_from_snr():
    row = _select([_signal_row(formulation="GEN", metric="f1", snr=2.0)]).row(0, named=True)
    assert row["kept"] and row["snr_pass"] and "snr exempt" in row["reason"]


def test_config_override_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "strict.toml"
    path.write_text("[monotonicity]\nmin = 0.95\n[snr]\nfallback = 'checkpoint'\n")
    config = load_config(path)
    assert config.monotonicity.min == 0.95 and config.snr.fallback == "checkpoint" and config.snr.min == 20.0
    path.write_text("[monotonicity]\nminimum = 0.9\n")
    with pytest.raises(ConfigError, match=r"unknown key \[monotonicity\] minimum"):
        load_config(path)
    path.write_text("[snr]\nfallback = 'seeds'\n")
    with pytest.raises(ConfigError, match="must be one of"):
        load_config(path)
    path.write_text("[selection]\nrequire = ['monotony']\n")
    with pytest.raises(ConfigError, match="unknown criteria"):
        load_config(path)


def test_select_cli_is_deterministic(tmp_path: Path) -> None:
    runner = CliRunner()
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = runner.invoke(app, ["select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures"])
        assert result.exit_code == 0, result.output
        outputs.append(out)
    for relative in ("decisions.csv", "report.md", "ranking.csv", "suites/cf/yor.txt", "suites/mcf/amh.txt"):
        assert (outputs[0] / relative).read_bytes() == (outputs[1] / relative).read_bytes(), relative
    decisions = pl.read_csv(outputs[0] / "decisions.csv")
    required = "task metric language category formulation monotonicity snr snr_kind non_random_distance"
    required += " three_sigma consistency decision_accuracy kept reason"
    assert set(required.split()) <= set(decisions.columns)
    assert not list(outputs[0].rglob("*.tmp"))
    umask = os.umask(0)
    os.umask(umask)
    for written in ("decisions.csv", "ranking.csv", "report.md"):  # not left private by the temporary file
        assert (outputs[0] / written).stat().st_mode & 0o777 == 0o666 & ~umask, written


def test_select_cli_reports_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "scores.csv"
    bad.write_text("run,step\nx,1\n")
    result = CliRunner().invoke(app, ["select", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "scores.csv" in result.output and "missing" in result.output.lower()
    assert not (tmp_path / "o" / "decisions.csv").exists()


@pytest.mark.slow
def test_select_cli_with_figures_writes_everything(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["select", str(BUNDLED_SWEEP), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# FineTasks selection report")
    for link in re.findall(r"\]\((figures/[^)]+)\)", report):
        assert (tmp_path / link).stat().st_size > 5000, link
    assert (tmp_path / "figures" / "criteria_amh.png").is_file()
    assert (tmp_path / "figures" / "ranking.png").is_file()
