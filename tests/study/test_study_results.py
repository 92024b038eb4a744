"""The committed results of the micro-scale study (docs/study/, written by `make study-publish`) are what the
analysis makes of the committed score table: re-running the selection reproduces the committed decisions, and the
truth check and its summary are reproduced from them (README, "A real micro-scale study")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from analysis.aggregate import rankable
from analysis.pipeline import run_aggregate, run_selection
from analysis.scores.read import read_scores
from analysis.scores.stream import ScoreScan
from analysis.signal import GROUP
from finetasks_afr.study.design import LANGUAGES, MIXES, StudySizes
from finetasks_afr.study.run import study_config
from finetasks_afr.study.truth import study_truth, summarise_truth

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "study"


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    table, _ = read_scores(PUBLISHED / "scores.parquet")
    out = tmp_path_factory.mktemp("reselected")
    config = study_config(StudySizes())
    with ScoreScan.open(PUBLISHED / "scores.parquet") as scan:  # streamed, as `finetasks-afr select` reads it
        decisions = run_selection(scan, config, out / "selection", figures=False).selection.decisions
        assert rankable(decisions.filter(pl.col("kept")).select(GROUP)), "the committed study keeps a task"
        aggregated = run_aggregate(scan, config, out / "aggregate", decisions)
    truth = study_truth(table, decisions, aggregated.language_scores, language_pairs=aggregated.language_pairs)
    return {"out": out, "table": table, "decisions": decisions, "truth": truth}


def test_the_committed_table_is_the_whole_study() -> None:
    table, _ = read_scores(PUBLISHED / "scores.parquet")
    record = json.loads((PUBLISHED / "study.json").read_text(encoding="utf-8"))
    sizes = StudySizes()
    assert sorted(table["run"].unique()) == sorted(MIXES)
    assert sorted(table["seed"].unique()) == list(sizes.seeds)
    assert table["step"].n_unique() == sizes.checkpoints
    assert sorted(table["task"].unique()) == sorted(record["tasks"])
    assert set(table["language"].unique()) == set(LANGUAGES)


def test_reselecting_the_committed_table_reproduces_the_committed_decisions(reproduced: dict) -> None:
    committed = (PUBLISHED / "selection" / "decisions.csv").read_bytes()
    assert (reproduced["out"] / "selection" / "decisions.csv").read_bytes() == committed


def test_the_committed_truth_check_is_reproduced(reproduced: dict) -> None:
    committed = pl.read_csv(PUBLISHED / "truth_check.csv", schema_overrides={"ok": pl.Boolean})
    assert reproduced["truth"].equals(committed.select(reproduced["truth"].columns), null_equal=True)
    assert (PUBLISHED / "truth.md").read_text(encoding="utf-8") == summarise_truth(reproduced["truth"])


def test_the_published_report_links_only_published_figures_and_every_kept_curve() -> None:
    report = (PUBLISHED / "selection" / "report.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((figures/[^)]+\.png)\)", report)
    assert all((PUBLISHED / "selection" / link).is_file() for link in linked)  # no dead link
    kept = set(pl.read_csv(PUBLISHED / "selection" / "decisions.csv").filter(pl.col("kept"))["task"])
    assert {f"figures/curves/{task}.png" for task in kept} <= set(linked)


@pytest.mark.parametrize("name", ["ranking.csv", "language_scores.csv", "language_pairs.csv"])
def test_the_committed_ranking_is_reproduced(reproduced: dict, name: str) -> None:
    # the bootstrap intervals too: the replicates are drawn from [bootstrap] seed
    assert (reproduced["out"] / "aggregate" / name).read_bytes() == (PUBLISHED / "aggregate" / name).read_bytes()


def test_every_language_with_a_kept_task_has_a_language_score(reproduced: dict) -> None:
    kept = set(reproduced["decisions"].filter(pl.col("kept")).get_column("language"))
    scored = set(pl.read_csv(PUBLISHED / "aggregate" / "language_scores.csv").get_column("language"))
    assert kept and kept == scored
