"""The study's truth check (`finetasks_afr.study.truth`) on a hand-made score table whose answer is known, put
through the real selection and aggregation so that the decisions' and language scores' columns are the pipeline's:
a language ordering the mixes as designed, one reversed, a tie, a lower-is-better task, a dropped task and the
Somali control, which has no designed answer."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import kendalltau

from analysis.config import BootstrapConfig, Config
from analysis.pipeline import run_aggregate, run_selection
from analysis.scores.stream import frame_scan
from analysis.scores.validate import LoadReport, validate
from finetasks_afr.demo.truth import TRUTH_SCHEMA
from finetasks_afr.study.design import DESIGNED_ORDER
from finetasks_afr.study.truth import NOISE, designed_tau, ordering, study_truth, summarise_truth

RUNS = ("mix-N", "mix-B", "mix-S")
SEEDS = (1, 2, 3)
STEPS = (1, 2, 3, 4, 5)
SEED_NOISE = {1: -0.002, 2: 0.0, 3: 0.002}  # the same for every run: equal rates give exactly equal means


def rising(rates: dict[str, float]) -> dict[tuple[str, int, int], float]:
    """A learnable task: from chance (0.25) up at each run's rate, a little apart across seeds."""
    return {(run, seed, step): 0.25 + rates[run] * step / 5 + SEED_NOISE[seed] for run in RUNS for seed in SEEDS
            for step in STEPS}  # fmt: skip


def flat(offsets: dict[str, float]) -> dict[tuple[str, int, int], float]:
    """At chance, zig-zagging from step to step (not monotone: dropped), runs a little apart at the last step."""
    return {(run, seed, step): 0.25 + offsets[run] + (0.02 if step % 2 else -0.02) + SEED_NOISE[seed] / 10
            for run in RUNS for seed in SEEDS for step in STEPS}  # fmt: skip


def falling(rates: dict[str, float]) -> dict[tuple[str, int, int], float]:
    """Bits per byte: lower is better, falling at each run's rate."""
    return {(run, seed, step): 3.0 - rates[run] * step + SEED_NOISE[seed] for run in RUNS for seed in SEEDS
            for step in STEPS}  # fmt: skip


N_FIRST = {"mix-N": 0.30, "mix-B": 0.20, "mix-S": 0.10}
TASKS: dict[str, tuple[str, str, str, dict[tuple[str, int, int], float]]] = {
    # task: (language, metric, formulation, scores)
    "t_zul_cf": ("zul", "acc", "CF", rising(N_FIRST)),  # as designed
    "t_zul_ppl": ("zul", "bits_per_byte", "PPL", falling(N_FIRST)),  # lowest for mix-N: as designed
    "t_xho_cf": ("xho", "acc", "CF", rising({"mix-N": 0.25, "mix-B": 0.25, "mix-S": 0.10})),  # a tie
    "t_nso_cf": ("nso", "acc", "CF", rising(N_FIRST)),  # the reverse of nso's design
    "t_tsn_cf": ("tsn", "acc", "CF", flat({"mix-N": 0.001, "mix-B": 0.002, "mix-S": 0.003})),  # dropped, as designed
    "t_som_cf": ("som", "acc", "CF", rising({"mix-N": 0.10, "mix-B": 0.30, "mix-S": 0.20})),  # the control
}


def score_table() -> pl.DataFrame:
    rows = []
    for task, (language, metric, formulation, scores) in TASKS.items():
        for (run, seed, step), score in scores.items():
            rows.append({"run": run, "seed": seed, "step": step, "tokens": step * 1_000_000, "task": task,
                         "benchmark": task.rsplit("_", 1)[0], "language": language, "category": "NLU",
                         "formulation": formulation, "fewshot": 0, "metric": metric, "score": score,
                         "stderr": 0.01, "random_baseline": None if formulation == "PPL" else 0.25})  # fmt: skip
    frame, _ = validate(pl.DataFrame(rows), source="test")
    return frame


@pytest.fixture(scope="module")
def check(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    table = score_table()
    config = replace(Config(), bootstrap=BootstrapConfig(n=50))
    out: Path = tmp_path_factory.mktemp("study")
    with frame_scan(table, LoadReport(source="test", n_rows=table.height)) as scan:
        selection = run_selection(scan, config, out / "selection", figures=False)
        decisions = selection.selection.decisions
        aggregated = run_aggregate(scan, config, out / "aggregate", decisions)
    return study_truth(table, decisions, aggregated.language_scores)


def rows_of(check: pl.DataFrame, name: str) -> dict[str, dict]:
    return {row["subject"]: row for row in check.filter(pl.col("check") == name).iter_rows(named=True)}


def test_the_check_has_the_truth_schema_and_every_kind(check: pl.DataFrame) -> None:
    assert check.schema == pl.Schema(TRUTH_SCHEMA)
    assert set(check.get_column("check")) == {"language_ranking", "task_order", "contrast", "summary"}
    order = check.filter(pl.col("check") == "task_order").get_column("subject").to_list()
    assert order == ["t_zul_cf", "t_zul_ppl", "t_xho_cf", "t_nso_cf", "t_tsn_cf", "t_som_cf"]  # design order


def test_task_order_against_the_designed_order(check: pl.DataFrame) -> None:
    tasks = rows_of(check, "task_order")
    zul = tasks["t_zul_cf"]
    assert zul["ok"] is True and zul["expected"] == "mix-N > mix-B > mix-S"
    assert zul["observed"] == "mix-N 0.5500 > mix-B 0.4500 > mix-S 0.3500"
    assert "Kendall tau 1.00" in zul["detail"] and "kept:" in zul["detail"]
    ppl = tasks["t_zul_ppl"]  # lower is better: the lowest bits per byte comes first
    assert ppl["ok"] is True and ppl["observed"] == "mix-N 1.5000 < mix-B 2.0000 < mix-S 2.5000"
    assert "lower is better" in ppl["detail"]
    nso = tasks["t_nso_cf"]
    assert nso["ok"] is False and nso["expected"] == "mix-S > mix-B > mix-N" and "Kendall tau -1.00" in nso["detail"]
    xho = tasks["t_xho_cf"]  # mix-N and mix-B tie seed for seed: not resolved, so neither as designed nor against
    assert xho["ok"] is None and xho["observed"].startswith("unresolved: tie: mix-B 0.5000 = mix-N 0.5000 > mix-S")
    assert re.search(r"mix-N - mix-B [+-]0\.0000 \[[+-]0\.0000, [+-]0\.0000\] unresolved", xho["detail"])
    assert "mix-B - mix-S +0.1200 [+0.1200, +0.1200] as designed" in xho["detail"]  # last 3 steps: 0.20 - 0.08
    assert "mix-S - mix-N -0.1600 [-0.1600, -0.1600] against the design" in nso["detail"]
    tsn = tasks["t_tsn_cf"]
    assert tsn["ok"] is True and "dropped:" in tsn["detail"]
    som = tasks["t_som_cf"]
    assert som["ok"] is None and som["expected"] == NOISE and som["observed"].startswith("mix-B")


def test_language_ranking_from_the_aggregated_scores(check: pl.DataFrame) -> None:
    languages = rows_of(check, "language_ranking")
    assert languages["zul"]["ok"] is True and "Kendall tau 1.00" in languages["zul"]["detail"]
    assert languages["nso"]["ok"] is False and "Kendall tau -1.00" in languages["nso"]["detail"]
    assert languages["xho"]["ok"] is False and languages["xho"]["observed"].startswith("tie: ")
    assert languages["tsn"]["ok"] is False and languages["tsn"]["observed"] == "no language score"  # none kept
    assert languages["som"]["ok"] is None and languages["som"]["expected"] == NOISE
    assert languages["som"]["observed"].startswith("mix-B")


def test_summary_counts_kept_and_dropped_tasks(check: pl.DataFrame) -> None:
    rows = check.filter(pl.col("check") == "summary").iter_rows(named=True)
    summary = {(row["subject"], row["kind"]): row for row in rows}
    zul = summary[("zul", "kept tasks")]
    assert zul["observed"] == "2 as designed, 0 against, 0 unresolved (of 2)" and zul["ok"] is True
    assert summary[("nso", "kept tasks")]["observed"] == "0 as designed, 1 against, 0 unresolved (of 1)"
    assert summary[("nso", "kept tasks")]["ok"] is False and "t_nso_cf" in summary[("nso", "kept tasks")]["detail"]
    xho = summary[("xho", "kept tasks")]  # unresolved is not against the design
    assert xho["observed"] == "0 as designed, 0 against, 1 unresolved (of 1)" and xho["ok"] is True
    assert "unresolved: t_xho_cf" in xho["detail"]
    tsn_kept = summary[("tsn", "kept tasks")]
    assert tsn_kept["observed"] == "0 as designed, 0 against, 0 unresolved (of 0)" and tsn_kept["ok"] is None
    assert summary[("tsn", "dropped tasks")]["observed"] == "1 as designed, 0 against, 0 unresolved (of 1)"
    assert summary[("tsn", "dropped tasks")]["ok"] is None
    assert summary[("som", "kept tasks")]["observed"] == "1 of 1 kept" and summary[("som", "kept tasks")]["ok"] is None
    pooled = summary[("all designed languages", "kept tasks")]
    assert pooled["observed"] == "2 as designed, 1 against, 1 unresolved (of 4)" and pooled["ok"] is False


def test_summarise_truth_is_markdown_from_the_check(check: pl.DataFrame) -> None:
    text = summarise_truth(check)
    assert text.count("### ") == 4
    assert "| zul | language score | mix-N > mix-B > mix-S | mix-N " in text
    assert (
        "| all designed languages | kept tasks | no resolved order against the design | 2 as designed, 1 against, "
        "1 unresolved (of 4) | no |" in text
    )
    judged = check.filter((pl.col("check") == "task_order") & pl.col("ok").is_not_null())
    count = f"{judged.filter(pl.col('ok')).height} of {judged.height} with a designed answer as designed"
    assert f"{count}; 1 unresolved by the seeds." in text
    assert "| t_xho_cf | xho | mix-N > mix-B > mix-S | unresolved: tie: " in text and "| unresolved |" in text


def test_kendall_tau_is_scipys_and_the_hand_computed_value() -> None:
    designed = DESIGNED_ORDER["zul"]
    # N > S > B against N > B > S: pairs (N, B) and (N, S) agree, (B, S) does not: (2 - 1) / 3
    assert designed_tau({"mix-N": 3.0, "mix-S": 2.0, "mix-B": 1.0}, designed) == pytest.approx(1 / 3)
    assert designed_tau({"mix-N": 1.0, "mix-B": 2.0, "mix-S": 3.0}, designed) == pytest.approx(-1.0)
    assert designed_tau({"mix-N": 1.0, "mix-B": 2.0, "mix-S": 3.0}, designed, higher_is_better=False) == 1.0
    rng = np.random.default_rng(0)
    for _ in range(20):
        values = rng.integers(0, 3, size=3).astype(float)  # ties included
        scores = dict(zip(designed, values, strict=True))
        expected = kendalltau([3.0, 2.0, 1.0], values).statistic
        tau = designed_tau(scores, designed)
        assert (tau is None and np.isnan(expected)) or tau == pytest.approx(expected)


def test_ordering_names_ties_and_missing_runs() -> None:
    tied = ordering({"mix-N": 0.5, "mix-B": 0.5, "mix-S": 0.1}, DESIGNED_ORDER["zul"], RUNS)
    assert tied.tie and not tied.matches(DESIGNED_ORDER["zul"])
    assert tied.observed() == "tie: mix-B 0.5000 = mix-N 0.5000 > mix-S 0.1000"
    partial = ordering({"mix-N": 0.5}, DESIGNED_ORDER["zul"], RUNS)
    assert partial.missing == ("mix-B", "mix-S") and partial.tau is None and not partial.matches(DESIGNED_ORDER["zul"])


def test_each_designed_contrast_is_counted_over_the_language_s_kept_tasks(check: pl.DataFrame) -> None:
    rows = check.filter(pl.col("check") == "contrast").iter_rows(named=True)
    contrasts = {(row["subject"], row["kind"]): row for row in rows}
    # every designed language x its three designed pairs; the control has none
    assert sorted(contrasts) == sorted((language, f"{order[i]} vs {worse}") for language, order in
                                       DESIGNED_ORDER.items() for i in range(3) for worse in order[i + 1:])  # fmt: skip
    for pair in ("mix-N vs mix-B", "mix-B vs mix-S", "mix-N vs mix-S"):  # both zul tasks: every pair as designed
        zul = contrasts[("zul", pair)]
        assert zul["observed"] == "2 as designed, 0 against, 0 unresolved (of 2 kept)" and zul["ok"] is True
        assert zul["detail"].startswith("as designed: t_zul_cf, t_zul_ppl")
    nso = contrasts[("nso", "mix-S vs mix-N")]  # nso's one kept task is reversed
    assert nso["observed"] == "0 as designed, 1 against, 0 unresolved (of 1 kept)" and nso["ok"] is False
    assert "against the design: t_nso_cf" in nso["detail"]
    tie = contrasts[("xho", "mix-N vs mix-B")]  # a tie seed for seed: unresolved, so not recovered
    assert tie["observed"] == "0 as designed, 0 against, 1 unresolved (of 1 kept)" and tie["ok"] is False
    assert contrasts[("xho", "mix-B vs mix-S")]["ok"] is True  # the tie leaves xho's other pairs resolved
    tsn = contrasts[("tsn", "mix-S vs mix-B")]  # nothing kept: not recovered
    assert tsn["observed"] == "0 as designed, 0 against, 0 unresolved (of 0 kept)" and tsn["ok"] is False
    assert tsn["detail"] == "no kept task of this language"
