"""The gap to English over training (analysis.english_gap): a hand-computed case, scipy's Spearman rho,
and a simulated sweep whose gaps are known, recovered within their intervals, with narrowing and widening told apart."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm, spearmanr

from analysis.config import Config
from analysis.english_gap import (
    GAP_COLUMNS,
    SUMMARY_COLUMNS,
    display_rows,
    english_gap,
    metric_family,
    pair_tasks,
)
from analysis.scores.validate import validate

RUNS = ("mix-afr60", "mix-afr10", "mix-eng")
SEEDS = (0, 1, 2, 3)
STEPS = tuple(range(1000, 10001, 1000))
ITEMS = 2000


def _row(run: str, seed: int | None, step: int, task: str, language: str, score: float, stderr: float | None,
         *, benchmark: str = "afrimmlu", metric: str = "acc", baseline: float | None = 0.25,
         formulation: str = "CF") -> dict:  # fmt: skip
    return {
        "run": run, "seed": seed, "step": step, "tokens": step * 1_000_000, "task": task, "benchmark": benchmark,
        "language": language, "category": "GK", "formulation": formulation, "fewshot": 0, "metric": metric,
        "score": score, "stderr": stderr, "random_baseline": baseline,
    }  # fmt: skip


def _table(rows: list[dict]) -> pl.DataFrame:
    frame, _ = validate(pl.DataFrame(rows), source="test")
    return frame


def test_hand_computed_gap_interval_and_narrowing() -> None:
    english = [0.50, 0.60, 0.70]
    language = [0.30, 0.45, 0.62]  # gap 0.20, 0.15, 0.08: narrowing at every step
    se_e, se_l = 0.01, 0.02
    rows = [_row("r", None, s, "afrimmlu_eng_cf", "eng", e, se_e) for s, e in zip((1, 2, 3), english, strict=True)]
    rows += [_row("r", None, s, "afrimmlu_hau_cf", "hau", v, se_l) for s, v in zip((1, 2, 3), language, strict=True)]
    gap = english_gap(_table(rows), Config())
    assert gap.gaps.columns == list(GAP_COLUMNS) and gap.summary.columns == list(SUMMARY_COLUMNS)
    assert gap.gaps.get_column("gap").to_list() == pytest.approx([0.20, 0.15, 0.08])
    half = norm.ppf(0.975) * math.hypot(se_e, se_l)
    assert gap.gaps.get_column("ci_low").to_list() == pytest.approx([0.20 - half, 0.15 - half, 0.08 - half])
    assert gap.gaps.get_column("ci_high").to_list() == pytest.approx([0.20 + half, 0.15 + half, 0.08 + half])
    [summary] = gap.summary.iter_rows(named=True)
    assert (summary["last_step"], summary["gap"], summary["prompt"]) == (3, pytest.approx(0.08), "native")
    assert summary["run_narrowing"] == pytest.approx(1.0) and summary["narrowing"] == pytest.approx(1.0)
    assert summary["narrowing_n_series"] == 1


def test_seed_mean_interval_and_the_spread_fallback_without_stderr() -> None:
    rows = []
    for seed, (e, v) in enumerate([(0.6, 0.4), (0.7, 0.4)]):
        rows.append(_row("r", seed, 1, "afrimmlu_eng_cf", "eng", e, 0.03))
        rows.append(_row("r", seed, 1, "afrimmlu_hau_cf", "hau", v, 0.04))
        rows.append(_row("r", seed, 1, "sib200_eng_cf", "eng", e, None, benchmark="sib200"))
        rows.append(_row("r", seed, 1, "sib200_hau_cf", "hau", v, None, benchmark="sib200"))
    gaps = english_gap(_table(rows), Config()).gaps
    z = norm.ppf(0.975)
    with_stderr = gaps.filter(pl.col("benchmark") == "afrimmlu").row(0, named=True)
    assert with_stderr["gap"] == pytest.approx(0.25) and with_stderr["n_seeds"] == 2
    assert with_stderr["ci_high"] - 0.25 == pytest.approx(z * math.sqrt(2 * (0.03**2 + 0.04**2)) / 2)
    spread = gaps.filter(pl.col("benchmark") == "sib200").row(0, named=True)
    assert spread["ci_high"] - 0.25 == pytest.approx(z * np.std([0.2, 0.3], ddof=1) / math.sqrt(2))


def test_pairs_follow_benchmark_formulation_fewshot_metric_and_prefer_the_named_english_task() -> None:
    rows = []
    for task, language, formulation in [
        ("afrimmlu_eng_cf", "eng", "CF"), ("afrimmlu_eng_mcf", "eng", "MCF"), ("afrimmlu_hau_cf", "hau", "CF"),
        ("afrimmlu_hau_cf_enprompt", "hau", "CF"), ("afrimmlu_hau_mcf", "hau", "MCF"),
        ("afrimmlu_yor_hybrid", "yor", "HYBRID"),  # no English HYBRID task: not paired
    ]:  # fmt: skip
        rows.append(_row("r", None, 1, task, language, 0.4, 0.01, formulation=formulation))
    rows.append(_row("r", None, 1, "afrimmlu_eng_cf_copy", "eng", 0.4, 0.01))  # a second English CF task
    pairs, notes = pair_tasks(_table(rows))
    got = {(r["task"], r["english_task"], r["prompt"]) for r in pairs.iter_rows(named=True)}
    assert got == {
        ("afrimmlu_hau_cf", "afrimmlu_eng_cf", "native"),
        ("afrimmlu_hau_cf_enprompt", "afrimmlu_eng_cf", "en"),
        ("afrimmlu_hau_mcf", "afrimmlu_eng_mcf", "native"),
    }
    assert not notes


# ------------------------------------------------------------------------------------- simulated sweep

# Known gap (English minus language, in accuracy) per run as a function of training progress t in (0, 1]:
# the African-heavy mix closes it, the English-only mix opens it, the middle one keeps it.
TRUE_GAP = {
    "mix-afr60": lambda t: 0.20 - 0.16 * t,
    "mix-afr10": lambda t: 0.08 + 0.0 * t,
    "mix-eng": lambda t: 0.05 + 0.15 * t,
}


def simulate_gap_sweep(seed: int = 0) -> pl.DataFrame:
    """A SIMULATED sweep with known gaps: English and two languages of one benchmark (both prompt variants), and
    a bits-per-byte benchmark whose English lead follows the same law; binomial sampling noise, 4 seeds."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in RUNS:
        for s in SEEDS:
            for step in STEPS:
                t = step / STEPS[-1]
                p_english = 0.30 + 0.35 * t
                rows.append(_binomial(rng, run, s, step, "afrimmlu_eng_cf", "eng", p_english))
                for language in ("hau", "yor"):
                    for suffix in ("", "_enprompt"):
                        p = p_english - TRUE_GAP[run](t)
                        rows.append(_binomial(rng, run, s, step, f"afrimmlu_{language}_cf{suffix}", language, p))
                bpb_english = 1.2 - 0.3 * t
                for task, language, bpb in [
                    ("flores_ppl_eng", "eng", bpb_english), ("flores_ppl_hau", "hau", bpb_english + TRUE_GAP[run](t))
                ]:  # fmt: skip
                    noise = 0.004
                    rows.append(
                        _row(
                            run,
                            s,
                            step,
                            task,
                            language,
                            bpb + rng.normal(0, noise),
                            noise,
                            benchmark="flores_ppl",
                            metric="bits_per_byte",
                            baseline=None,
                            formulation="PPL",
                        )
                    )
    return _table(rows)


def _binomial(rng: np.random.Generator, run: str, seed: int, step: int, task: str, language: str, p: float) -> dict:
    score = rng.binomial(ITEMS, p) / ITEMS
    return _row(run, seed, step, task, language, score, math.sqrt(score * (1 - score) / ITEMS))


def _true_gap(row: dict) -> float:
    gap = TRUE_GAP[row["run"]](row["step"] / STEPS[-1])
    return -gap if row["metric"] == "bits_per_byte" else gap  # English bits per byte are lower: gap < 0


def test_a_simulated_sweep_s_known_gaps_are_recovered_within_their_intervals() -> None:
    gap = english_gap(simulate_gap_sweep(), Config())
    rows = list(gap.gaps.iter_rows(named=True))
    assert len(rows) == len(RUNS) * len(STEPS) * 5  # 4 accuracy pairs + 1 bits-per-byte pair
    inside = [row["ci_low"] <= _true_gap(row) <= row["ci_high"] for row in rows]
    assert sum(inside) / len(inside) >= 0.9  # 95% intervals
    assert all(abs(row["gap"] - _true_gap(row)) < 0.05 for row in rows)
    assert {row["n_seeds"] for row in rows} == {len(SEEDS)}


def test_narrowing_tells_closing_from_opening_whatever_the_metric_direction() -> None:
    summary = english_gap(simulate_gap_sweep(), Config()).summary
    for metric in ("acc", "bits_per_byte"):
        by_run = {
            r["run"]: r["run_narrowing"] for r in summary.filter(pl.col("metric") == metric).iter_rows(named=True)
        }
        assert by_run["mix-afr60"] > 0.8 and by_run["mix-eng"] < -0.8, (metric, by_run)
        assert abs(by_run["mix-afr10"]) < 0.5, (metric, by_run)


def test_narrowing_equals_scipy_spearman_over_series() -> None:
    table = simulate_gap_sweep()
    gap = english_gap(table, Config())
    english = table.filter(pl.col("task") == "afrimmlu_eng_cf")
    language = table.filter(pl.col("task") == "afrimmlu_yor_cf_enprompt")
    joined = language.join(english, on=["run", "seed", "step"], suffix="_eng").sort(["run", "seed", "step"])
    rhos = []
    for (_run, _seed), series in joined.group_by(["run", "seed"], maintain_order=True):
        lead = (series["score_eng"] - series["score"]).to_numpy()
        rhos.append(spearmanr(series["step"].to_numpy(), -lead).statistic)
    row = gap.summary.filter(pl.col("task") == "afrimmlu_yor_cf_enprompt").row(0, named=True)
    assert row["narrowing"] == pytest.approx(np.mean(rhos), abs=1e-12)
    assert row["narrowing_n_series"] == len(RUNS) * len(SEEDS)
    assert row["narrowing_ci_low"] <= row["narrowing"] <= row["narrowing_ci_high"]


def test_display_rows_show_the_english_prompt_variant_once_per_language_and_run() -> None:
    gap = english_gap(simulate_gap_sweep(), Config())
    shown = display_rows(gap)
    assert set(shown.filter(pl.col("benchmark") == "afrimmlu").get_column("prompt")) == {"en"}
    assert shown.group_by(["benchmark", "language", "run"]).len().get_column("len").max() == 1


def test_generative_metrics_pair_without_their_language_code() -> None:
    rows = [
        _row("r", None, s, "afrimgsm_eng", "eng", e, 0.01, benchmark="afrimgsm", metric="f1_eng", formulation="GEN",
             baseline=0.0)
        for s, e in ((1, 0.4), (2, 0.5))
    ] + [
        _row("r", None, s, "afrimgsm_yor", "yor", v, 0.01, benchmark="afrimgsm", metric="f1_yor", formulation="GEN",
             baseline=0.0)
        for s, v in ((1, 0.1), (2, 0.3))
    ]  # fmt: skip
    gap = english_gap(_table(rows), Config())
    assert gap.gaps.get_column("metric").to_list() == ["f1", "f1"]
    assert gap.gaps.get_column("gap").to_list() == pytest.approx([0.3, 0.2])
    assert [metric_family(m) for m in ("f1_yor", "exact_match_gaz_prefix", "f1_macro", "acc_norm", "f1")] == [
        "f1",
        "exact_match_prefix",
        "f1_macro",
        "acc_norm",
        "f1",
    ]


def test_a_table_without_english_tasks_has_no_gap() -> None:
    rows = [_row("r", None, s, "afrimmlu_hau_cf", "hau", 0.3, 0.01) for s in (1, 2, 3)]
    gap = english_gap(_table(rows), Config())
    assert gap.empty and gap.summary.is_empty()


@pytest.mark.slow
def test_select_writes_the_gap_files_the_report_section_and_one_figure_per_benchmark(tmp_path: Path) -> None:
    from analysis.pipeline import run_selection
    from analysis.scores.stream import frame_scan

    table = simulate_gap_sweep()
    out = tmp_path / "out"
    with frame_scan(table, source="simulated gap sweep") as scan:
        result = run_selection(scan, Config(), out)
    written = pl.read_csv(out / "english_gap.csv")
    assert tuple(written.columns) == GAP_COLUMNS
    assert written.height == len(RUNS) * len(STEPS) * 5
    summary = pl.read_csv(out / "english_gap_summary.csv")
    assert tuple(summary.columns) == SUMMARY_COLUMNS and summary.height == len(RUNS) * 5
    assert {out / "english_gap.csv", out / "english_gap_summary.csv"} <= set(result.written)
    for benchmark in ("afrimmlu", "flores_ppl"):
        figure = result.figures[f"english_gap_{benchmark}"]
        assert figure == out / "figures" / f"english_gap_{benchmark}.png" and figure.stat().st_size > 10_000
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Gap to English" in report and "figures/english_gap_afrimmlu.png" in report
    section = report.split("## Gap to English")[1].split("\n## ")[0]
    assert "| afrimmlu | hau | acc (CF, 0-shot) | mix-afr60 | 10000 |" in section
    assert "afrimmlu_hau_cf_enprompt" not in section  # tasks are named in the CSVs, the table shows languages
    index = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="english-gap"' in index and "figures/english_gap_flores_ppl.png" in index


def test_no_gap_section_or_files_without_english_counterparts(tmp_path: Path) -> None:
    from analysis.pipeline import run_selection
    from analysis.scores.stream import frame_scan

    table = simulate_gap_sweep().filter(pl.col("language") != "eng")
    out = tmp_path / "out"
    with frame_scan(table, source="no English") as scan:
        run_selection(scan, Config(), out, figures=False)
    assert not (out / "english_gap.csv").exists() and not (out / "english_gap_summary.csv").exists()
    assert "Gap to English" not in (out / "report.md").read_text(encoding="utf-8")


def test_every_suite_benchmark_with_an_english_task_pairs_all_its_language_tasks() -> None:
    """On the suite's own task metadata: each language task of a benchmark that has an English task of its
    formulation pairs with exactly that task (no ambiguity note), and the benchmarks the README names pair."""
    from finetasks_afr.tasks import TASK_INFO, TASKS_TABLE

    first_metric = {config.name: config.metrics[0].metric_name for config in TASKS_TABLE}  # f1_yor for afrimgsm_yor
    rows = [
        _row("r", None, 1, name, info.language, 1.0 if info.formulation == "PPL" else 0.5, 0.01,
             benchmark=info.benchmark, metric=str(first_metric[name]),
             baseline=None if info.formulation == "PPL" else 0.25, formulation=info.formulation)
        for name, info in TASK_INFO.items()
    ]  # fmt: skip
    pairs, notes = pair_tasks(_table(rows))
    assert not notes
    english = {(i.benchmark, i.formulation) for i in TASK_INFO.values() if i.language == "eng"}
    expected = {
        name for name, i in TASK_INFO.items() if i.language != "eng" and (i.benchmark, i.formulation) in english
    }
    assert set(pairs.get_column("task")) == expected and pairs.height == len(expected)
    for row in pairs.iter_rows(named=True):
        assert TASK_INFO[row["english_task"]].benchmark == TASK_INFO[row["task"]].benchmark
    paired = set(pairs.get_column("benchmark"))
    assert {"afrimmlu", "afrixnli", "afrimgsm", "belebele", "sib200", "masakhanews", "uhura_arc_easy",
            "winogrande_afr", "mmlu_afr_virology", "global_mmlu", "nollysenti", "injongointent", "injongointent4",
            "uhura_truthfulqa", "flores_ppl", "belebele_ppl"} <= paired  # fmt: skip


def test_the_streamed_gap_is_the_whole_tables_gap(tmp_path: Path) -> None:
    """`select` computes the gap one benchmark at a time (`english_gap_of_scan`, tiny partitions here): the same
    curves, summary and note as `english_gap` on the whole table, with a task left out as ambiguous in each of two
    benchmarks (one note naming both) and a benchmark without English tasks, which is never read."""
    from analysis.pipeline import english_gap_of_scan
    from analysis.scores.stream import frame_scan
    from bench.bench_scale import compare_frames

    table = simulate_gap_sweep()
    extra = []
    for benchmark, metric, baseline in (("afrimmlu", "acc", 0.25), ("flores_ppl", "bits_per_byte", None)):
        formulation = "CF" if baseline else "PPL"
        extra += [_row(run, seed, step, f"{benchmark}_{name}", language, 0.4 + step / 1e6, 0.01, benchmark=benchmark,
                       metric=metric, baseline=baseline, formulation=formulation)
                  for name, language in (("xxx_odd", "hau"), ("eng_odd1", "eng"), ("eng_odd2", "eng"))
                  for run in RUNS[:2] for seed in SEEDS[:2] for step in STEPS[:3]]  # fmt: skip
    extra += [_row(run, 0, step, "sib_hau_cf", "hau", 0.3, 0.01, benchmark="sib") for run in RUNS for step in STEPS]
    table, _ = validate(pl.concat([table, _table(extra)], how="vertical_relaxed"), source="t")
    whole = english_gap(table, Config())
    assert whole.left_out == ["afrimmlu_xxx_odd", "flores_ppl_xxx_odd"] and len(whole.notes) == 1
    with frame_scan(table, source="gap") as scan:
        streamed = english_gap_of_scan(scan, Config())
    # floats within 1e-9, as the streamed statistics (a bootstrap's matrix product may round its last bit
    # differently with another number of groups beside it)
    assert compare_frames("gaps", whole.gaps, streamed.gaps) == []
    assert compare_frames("summary", whole.summary, streamed.summary) == []
    assert streamed.notes == whole.notes and streamed.left_out == whole.left_out
