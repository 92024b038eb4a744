"""The end-to-end demo's real output: the selection keeps the learnable tasks (the CF ones and the held-out text
perplexities) and rejects the random-label ones, for honest reasons.

Two outputs are checked: the bundled demo sweep (`finetasks_afr/data/demo_sweep.parquet`, committed output of
`make demo`), re-analysed here; and, when $FINETASKS_AFR_DEMO_DIR names a fresh `finetasks-afr demo` output
directory (CI runs the demo before the tests), that run's own selection and report.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from analysis.config import load_config
from analysis.select import select
from analysis.signal import compute_signal
from analysis.table import read_scores
from finetasks_afr.cli import BUNDLED_SWEEP

CONFIG = load_config()
TRUTH = BUNDLED_SWEEP.with_name("demo_sweep_truth.csv")
LANGUAGES = {"qaa", "qab", "qac"}
PPL_METRICS = ("word_perplexity", "byte_perplexity", "bits_per_byte")


def verdicts(decisions: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    kinds = truth.select("task", "kind")
    return decisions.filter(pl.col("chosen")).join(kinds, on="task", how="inner")


def check_selection(chosen: pl.DataFrame) -> None:
    random_label = chosen.filter(pl.col("kind") == "random_label")
    assert random_label.height > 0
    assert not random_label["kept"].any(), random_label.select("task", "metric", "reason")
    assert random_label["reason"].str.contains("random|monoton|SNR|snr").all(), random_label["reason"].to_list()
    learnable_cf = chosen.filter((pl.col("kind") == "learnable") & (pl.col("formulation") == "CF"))
    assert learnable_cf.height > 0
    missed = learnable_cf.filter(~pl.col("kept"))
    assert missed.height == 0, missed.select("task", "metric", "reason")
    check_perplexity(chosen)


def check_perplexity(chosen: pl.DataFrame) -> None:
    """The held-out text perplexity (one task per language, no random baseline) is kept in every language, on a
    perplexity metric, with non-randomness not applicable rather than passed."""
    ppl = chosen.filter(pl.col("kind") == "learnable_ppl")
    assert set(ppl["language"]) == LANGUAGES and ppl.height == len(LANGUAGES), ppl.select("task", "metric")
    assert (ppl["formulation"] == "PPL").all() and (ppl["category"] == "GEN").all()
    assert ppl["metric"].is_in(PPL_METRICS).all(), ppl["metric"].to_list()
    assert ppl["random_baseline"].is_null().all()
    assert (~ppl["non_random_applicable"]).all() and ppl["non_random_pass"].is_null().all()
    missed = ppl.filter(~pl.col("kept"))
    assert missed.height == 0, missed.select("task", "metric", "reason")
    assert ppl["reason"].str.contains("non-random not applicable").all(), ppl["reason"].to_list()


@pytest.fixture(scope="module")
def bundled() -> tuple[pl.DataFrame, pl.DataFrame]:
    table, _ = read_scores(BUNDLED_SWEEP)
    truth = pl.read_csv(TRUTH)
    return table, verdicts(select(compute_signal(table, CONFIG), CONFIG).decisions, truth)


def test_bundled_sweep_is_real_demo_output(bundled):
    table, _ = bundled
    assert not table["run"].str.starts_with("sim-").any()
    assert set(table["run"].unique()) == {"mix-a", "mix-b"}
    assert table["seed"].n_unique() == 3
    assert table.group_by("run", "seed").agg(pl.col("step").n_unique())["step"].min() >= 5
    assert table["tokens"].null_count() == 0


def test_bundled_selection_keeps_learnable_and_rejects_random_labels(bundled):
    check_selection(bundled[1])


def test_default_select_cli_analyses_the_bundled_demo_sweep(tmp_path: Path):
    from typer.testing import CliRunner

    from finetasks_afr.cli import app

    result = CliRunner().invoke(app, ["select", "--out", str(tmp_path), "--no-figures"])
    assert result.exit_code == 0, result.output
    decisions = pl.read_csv(tmp_path / "decisions.csv")
    assert set(decisions["language"].unique()) == {"qaa", "qab", "qac"}


FRESH = os.environ.get("FINETASKS_AFR_DEMO_DIR")


@pytest.mark.skipif(not FRESH, reason="no fresh demo output ($FINETASKS_AFR_DEMO_DIR unset; CI sets it)")
def test_fresh_demo_run_selection_and_report():
    out = Path(FRESH or "")
    truth = pl.read_csv(out / "truth_check.csv")
    decisions = pl.read_csv(out / "selection" / "decisions.csv")
    check_selection(verdicts(decisions, truth))
    report = (out / "selection" / "report.md").read_text(encoding="utf-8")
    for task in truth.filter(pl.col("kind") == "random_label")["task"]:
        assert task in report
    summary = (out / "sweep" / "summary.json").read_text(encoding="utf-8")
    assert '"failed": 0' in summary
    assert (out / "aggregate" / "ranking.csv").is_file()
