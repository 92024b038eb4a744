"""Tests for analysis.aggregate: a hand-computed example, gaps, ties, a reference check, properties."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy.stats import rankdata

from analysis.aggregate import AggregateError, AggregateResult, aggregate, write_ranking
from analysis.config import AggregateConfig
from analysis.scores.schema import CATEGORIES, SCHEMA

Row = tuple[str, int | None, int, str, str, float]  # run, seed, step, task, metric, score

CLIP = AggregateConfig(clip_below_baseline=True)
NO_CLIP = AggregateConfig(clip_below_baseline=False)

# task -> (language, category, metric, random baseline)
HAND_TASKS: dict[str, tuple[str, str, str, float]] = {
    "yor_gk": ("yor", "GK", "acc_norm", 0.25),
    "yor_rc": ("yor", "RC", "acc_norm", 0.25),
    "yor_rc2": ("yor", "RC", "acc", 0.5),
    "swa_nlu": ("swa", "NLU", "acc", 0.5),
    "swa_gen": ("swa", "GEN", "f1", 0.0),
    "swa_ppl": ("swa", "GEN", "bits_per_byte", 0.0),
}
TASKS: dict[str, tuple[str, str, str, float]] = {
    **HAND_TASKS,
    "swa_sure": ("swa", "NLU", "acc", 1.0),  # a degenerate task: guessing is always right
}  # + RANDOM_TASKS below


def make_table(rows: Sequence[Row]) -> pl.DataFrame:
    """A score table from (run, seed, step, task, metric, score); task facts from the task's name."""
    records: list[dict[str, Any]] = []
    for run, seed, step, task, metric, score in rows:
        language, category, _, baseline = TASKS[task]
        records.append(
            {
                "run": run,
                "seed": seed,
                "step": step,
                "tokens": step * 1000,
                "task": task,
                "benchmark": task.rsplit("_", 1)[0],
                "language": language,
                "category": category,
                "formulation": "GEN" if category == "GEN" else "CF",
                "fewshot": 0,
                "metric": metric,
                "score": score,
                "stderr": None,
                "random_baseline": baseline,
            }
        )
    return pl.DataFrame(records, schema=SCHEMA)


def selection(tasks: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {"task": tasks, "fewshot": [0] * len(tasks), "metric": [TASKS[t][2] for t in tasks]},
        schema={"task": pl.String, "fewshot": pl.Int64, "metric": pl.String},
    )


HAND_SELECTED = list(HAND_TASKS)

# Final-step scores (step 200, except run C's yor_gk, whose last step is 150). Rescaled = (s - b)/(1 - b):
#   yor_gk  (GK,  b=0.25): A mean(0.70, 0.80) = 0.75 -> 0.50/0.75 = 2/3;  B 0.55 -> 0.30/0.75 = 0.4;
#                          C 0.10 -> -0.15/0.75 = -0.2, clipped to 0
#   yor_rc  (RC,  b=0.25): A 0.25 -> 0;   B 0.625 -> 0.375/0.75 = 0.5;  C 1.0 -> 1
#   yor_rc2 (RC,  b=0.5):  A 0.75 -> 0.5; B 0.5 -> 0;                  C 0.6 -> 0.1/0.5 = 0.2
#   swa_nlu (NLU, b=0.5):  A 0.75 -> 0.5; B 0.75 -> 0.5;               C 1.0 -> 1
#   swa_gen (GEN, b=0):    A 0.3 -> 0.3;  B 0.3 -> 0.3;                C 0.0 -> 0
#   swa_ppl: bits_per_byte with a baseline of 0 bits, already a perfect score: excluded with a note
#            (tests/analysis/test_aggregate_every_task.py rescales bits per byte on its real baseline, 8).
# Category means:   yor RC: A (0 + 0.5)/2 = 0.25, B (0.5 + 0)/2 = 0.25, C (1 + 0.2)/2 = 0.6
# Language scores:  yor: A (2/3 + 0.25)/2 = 11/24, B (0.4 + 0.25)/2 = 0.325, C (0 + 0.6)/2 = 0.3
#                   swa: A (0.5 + 0.3)/2 = 0.4,    B 0.4,                     C (1 + 0)/2 = 0.5
#   (a plain mean over tasks would give yor A 0.389, B 0.3, C 0.4: the category means matter.)
# Ranks:            yor: A 1, B 2, C 3;  swa: C 1, A and B tie at 2.5
# Mean rank:        A (1 + 2.5)/2 = 1.75,  B (2 + 2.5)/2 = 2.25,  C (3 + 1)/2 = 2
# Borda (below + ties/2): yor A 2, B 1, C 0;  swa C 2, A 0 + 1/2, B 1/2  -> A 2.5, B 1.5, C 2
# Win rate over 2 opponents: yor A 2/2, B 1/2, C 0;  swa C 1, A 0.5/2, B 0.25
#                            -> A (1 + 0.25)/2 = 0.625, B (0.5 + 0.25)/2 = 0.375, C (0 + 1)/2 = 0.5
# Order by mean rank: A (1.75), C (2), B (2.25).
HAND_FINAL: dict[tuple[str, str], list[float]] = {
    ("A", "yor_gk"): [0.70, 0.80],
    ("B", "yor_gk"): [0.55],
    ("C", "yor_gk"): [0.10],
    ("A", "yor_rc"): [0.25],
    ("B", "yor_rc"): [0.625],
    ("C", "yor_rc"): [1.0],
    ("A", "yor_rc2"): [0.75],
    ("B", "yor_rc2"): [0.5],
    ("C", "yor_rc2"): [0.6],
    ("A", "swa_nlu"): [0.75],
    ("B", "swa_nlu"): [0.75],
    ("C", "swa_nlu"): [1.0],
    ("A", "swa_gen"): [0.3],
    ("B", "swa_gen"): [0.3],
    ("C", "swa_gen"): [0.0],
    ("A", "swa_ppl"): [1.2],
    ("B", "swa_ppl"): [0.9],
    ("C", "swa_ppl"): [1.5],
}


def hand_rows(runs: tuple[str, ...] = ("A", "B", "C")) -> list[Row]:
    rows: list[Row] = []
    for (run, task), scores in HAND_FINAL.items():
        if run not in runs:
            continue
        metric = TASKS[task][2]
        final = 150 if (run, task) == ("C", "yor_gk") else 200
        rows.append((run, 1, 100, task, metric, 0.9))  # an earlier checkpoint: must not be used
        rows.extend((run, seed, final, task, metric, s) for seed, s in enumerate(scores, start=1))
        rows.append((run, 1, final, task, "acc_norm_pmi", 0.0))  # an unselected metric: ignored
    return rows


def hand_table() -> pl.DataFrame:
    return make_table(hand_rows())


def by_run(result: AggregateResult) -> dict[str, dict[str, Any]]:
    return {row["run"]: row for row in result.ranking.iter_rows(named=True)}


def language_score(result: AggregateResult, run: str, language: str) -> float:
    frame = result.language_scores.filter((pl.col("run") == run) & (pl.col("language") == language))
    assert frame.height == 1
    return float(frame.get_column("score").item())


# --- the hand-computed example ----------------------------------------------------------------------------


def test_hand_example_category_scores() -> None:
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    cats = {(r, lang, c): (s, n) for r, lang, c, s, n in result.category_scores.iter_rows()}
    assert cats[("A", "yor", "GK")] == (pytest.approx(2 / 3), 1)
    assert cats[("C", "yor", "GK")] == (pytest.approx(0.0), 1)  # clipped from -0.2
    assert cats[("A", "yor", "RC")] == (pytest.approx(0.25), 2)
    assert cats[("B", "yor", "RC")] == (pytest.approx(0.25), 2)
    assert cats[("C", "yor", "RC")] == (pytest.approx(0.6), 2)
    assert cats[("C", "swa", "NLU")] == (pytest.approx(1.0), 1)
    assert cats[("A", "swa", "GEN")] == (pytest.approx(0.3), 1)  # swa_ppl excluded, so one GEN task
    assert len(cats) == 3 * 4  # 3 runs x (GK, RC) + (NLU, GEN)


def test_hand_example_language_scores_and_ranks() -> None:
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    expected = {
        ("A", "yor"): (11 / 24, 1.0),
        ("B", "yor"): (0.325, 2.0),
        ("C", "yor"): (0.3, 3.0),
        ("A", "swa"): (0.4, 2.5),
        ("B", "swa"): (0.4, 2.5),
        ("C", "swa"): (0.5, 1.0),
    }
    scores = result.language_scores.select("run", "language", "score", "rank")
    got = {(r, lang): (s, k) for r, lang, s, k in scores.iter_rows()}
    assert got.keys() == expected.keys()
    for key, (score, rank) in expected.items():
        assert got[key][0] == pytest.approx(score)
        assert got[key][1] == rank
    assert result.language_scores.columns == [
        "run", "language", "kind", "score", "ci_low", "ci_high", "rank", "tied_with",
    ]  # fmt: skip
    assert set(result.language_scores.get_column("kind")) == {"rescaled"}


def test_hand_example_ranking() -> None:
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    ranking = result.ranking
    assert ranking.columns == [
        "run", "score_swa", "score_yor", "n_languages", "missing_languages", "mean_rank", "mean_rank_ci_low",
        "mean_rank_ci_high", "borda", "mean_win_rate",
    ]  # fmt: skip
    assert ranking.get_column("run").to_list() == ["A", "C", "B"]
    rows = by_run(result)
    assert rows["A"]["mean_rank"] == pytest.approx(1.75)
    assert rows["B"]["mean_rank"] == pytest.approx(2.25)
    assert rows["C"]["mean_rank"] == pytest.approx(2.0)
    assert rows["A"]["borda"] == pytest.approx(2.5)
    assert rows["B"]["borda"] == pytest.approx(1.5)
    assert rows["C"]["borda"] == pytest.approx(2.0)
    assert rows["A"]["mean_win_rate"] == pytest.approx(0.625)
    assert rows["B"]["mean_win_rate"] == pytest.approx(0.375)
    assert rows["C"]["mean_win_rate"] == pytest.approx(0.5)
    assert rows["A"]["score_yor"] == pytest.approx(11 / 24)
    assert rows["C"]["score_swa"] == pytest.approx(0.5)
    assert all(rows[r]["n_languages"] == 2 and rows[r]["missing_languages"] == "" for r in "ABC")


def test_hand_example_without_clipping() -> None:
    # C's yor_gk stays at -0.2, so yor: C = (-0.2 + 0.6)/2 = 0.2; the ranks do not change.
    result = aggregate(hand_table(), selection(HAND_SELECTED), NO_CLIP)
    assert language_score(result, "C", "yor") == pytest.approx(0.2)
    assert language_score(result, "A", "yor") == pytest.approx(11 / 24)
    assert by_run(result)["C"]["mean_rank"] == pytest.approx(2.0)


def test_a_baseline_at_a_perfect_score_is_excluded_with_note() -> None:
    # swa_ppl's random baseline is 0 bits per byte: no model can beat it, so there is no scale to rescale on
    with_ppl = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    without = aggregate(hand_table(), selection([t for t in HAND_SELECTED if t != "swa_ppl"]), CLIP)
    assert_frame_equal(with_ppl.ranking, without.ranking)
    assert any("swa_ppl excluded" in n and "already a perfect score" in n for n in with_ppl.notes)
    assert not any("swa_ppl" in n for n in without.notes)


def test_given_step_scores_that_step_and_notes_missing_seeds() -> None:
    # At step 100 every run scored 0.9 on every task (one seed), so all runs tie in both languages.
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP, step=100)
    assert result.language_scores.get_column("rank").to_list() == [2.0] * 6
    rows = by_run(result)
    assert all(rows[r]["mean_rank"] == 2.0 and rows[r]["borda"] == 2.0 for r in "ABC")  # 2 x (0 + 2/2)
    assert all(rows[r]["mean_win_rate"] == pytest.approx(0.5) for r in "ABC")
    # A's yor_gk has seeds 1 and 2, but only seed 1 reached step 100.
    assert any("run A, task yor_gk: step 100 has 1 of 2 seeds" in n for n in result.notes)


def test_step_absent_for_a_run_makes_its_languages_missing() -> None:
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP, step=200)
    # C's yor_gk ended at step 150: C has no yor score at step 200.
    assert by_run(result)["C"]["missing_languages"] == "yor"
    assert any("run C has no yor score" in n and "at step 200" in n and "yor_gk" in n for n in result.notes)


def test_non_finite_final_score_makes_the_task_missing() -> None:
    # C's only yor_rc score at its last step is NaN: C is not scored at an older checkpoint instead.
    rows = [
        (r, seed, step, task, metric, math.nan if (r, task, step) == ("C", "yor_rc", 200) else score)
        for r, seed, step, task, metric, score in hand_rows()
    ]
    result = aggregate(make_table(rows), selection(HAND_SELECTED), CLIP)
    assert by_run(result)["C"]["missing_languages"] == "yor"
    assert "1 row(s) with a missing or non-finite score ignored" in result.notes
    assert any(n.startswith("run C has no yor score") and n.endswith("yor_rc") for n in result.notes)


def test_baseline_of_one_is_excluded_with_note() -> None:
    extra = [(r, 1, 200, "swa_sure", "acc", 1.0) for r in "ABC"]
    result = aggregate(make_table([*hand_rows(), *extra]), selection([*HAND_SELECTED, "swa_sure"]), CLIP)
    assert any("swa_sure excluded: its random baseline is already a perfect score" in n for n in result.notes)
    expected = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    assert_frame_equal(result.ranking, expected.ranking)


# --- missing languages and partial task sets ---------------------------------------------------------------


def test_missing_language_reported_not_averaged() -> None:
    # D has every yor task and no swa task, and beats everyone in yor (rescaled 1 on each).
    extra = [("D", 1, 200, t, TASKS[t][2], 1.0) for t in ("yor_gk", "yor_rc", "yor_rc2")]
    result = aggregate(make_table([*hand_rows(), *extra]), selection(HAND_SELECTED), CLIP)
    rows = by_run(result)
    assert rows["D"]["n_languages"] == 1
    assert rows["D"]["missing_languages"] == "swa"
    assert rows["D"]["score_swa"] is None
    # yor ranks: D 1, A 2, B 3, C 4; swa (D absent): C 1, A 2.5, B 2.5.
    assert rows["D"]["mean_rank"] == pytest.approx(1.0)  # its one language, not (1 + anything)/2
    assert rows["A"]["mean_rank"] == pytest.approx((2 + 2.5) / 2)
    assert rows["C"]["mean_rank"] == pytest.approx((4 + 1) / 2)
    # Borda: yor (4 runs) D 3, A 2, B 1, C 0; swa (3 runs) C 2, A 0.5, B 0.5.
    assert rows["D"]["borda"] == pytest.approx(3.0)
    assert rows["A"]["borda"] == pytest.approx(2.5)
    # Win rate: yor D 3/3, A 2/3, B 1/3, C 0; swa C 1, A 0.25, B 0.25.
    assert rows["D"]["mean_win_rate"] == pytest.approx(1.0)
    assert rows["A"]["mean_win_rate"] == pytest.approx((2 / 3 + 0.25) / 2)
    assert rows["C"]["mean_win_rate"] == pytest.approx(0.5)
    assert result.language_scores.filter(pl.col("run") == "D").get_column("language").to_list() == ["yor"]
    assert any("run D has no swa score: missing 2 of 2" in n for n in result.notes)


def test_partial_task_set_makes_language_missing_with_note() -> None:
    # D lacks yor_rc2: its yor score would be a mean over a different test, so it gets none.
    extra = [("D", 1, 200, t, TASKS[t][2], 1.0) for t in ("yor_gk", "yor_rc", "swa_nlu", "swa_gen")]
    result = aggregate(make_table([*hand_rows(), *extra]), selection(HAND_SELECTED), CLIP)
    rows = by_run(result)
    assert rows["D"]["missing_languages"] == "yor"
    assert rows["D"]["score_yor"] is None
    assert rows["D"]["score_swa"] == pytest.approx(1.0)
    assert result.category_scores.filter((pl.col("run") == "D") & (pl.col("language") == "yor")).is_empty()
    notes = [n for n in result.notes if n.startswith("run D")]
    assert notes == ["run D has no yor score: missing 1 of 3 selected task(s): yor_rc2"]
    # Others' yor ranks are unaffected by D: A 1, B 2, C 3.
    assert rows["A"]["score_yor"] == pytest.approx(11 / 24)
    yor = result.language_scores.filter(pl.col("language") == "yor")
    assert dict(zip(yor["run"], yor["rank"], strict=True)) == {"A": 1.0, "B": 2.0, "C": 3.0}


def test_run_without_any_selected_task_ranks_last_with_nulls() -> None:
    extra = [("E", 1, 200, "yor_gk", "acc_norm_pmi", 0.5)]
    result = aggregate(make_table([*hand_rows(), *extra]), selection(HAND_SELECTED), CLIP)
    last = result.ranking.row(-1, named=True)
    assert last["run"] == "E"
    assert last["n_languages"] == 0
    assert last["missing_languages"] == "swa,yor"
    assert last["mean_rank"] is None and last["borda"] is None and last["mean_win_rate"] is None


def test_all_ties() -> None:
    rows = [(r, 1, 10, t, TASKS[t][2], 0.8) for r in ("x", "y", "z", "w") for t in HAND_SELECTED]
    result = aggregate(make_table(rows), selection(HAND_SELECTED), CLIP)
    # 4 runs tie: average rank (1+2+3+4)/4 = 2.5; Borda 0 below + 3 ties/2 = 1.5 per language;
    # win rate (0 + 3/2)/3 = 0.5.
    assert result.ranking.get_column("run").to_list() == ["w", "x", "y", "z"]  # ties broken by name
    assert result.ranking.get_column("mean_rank").to_list() == [2.5] * 4
    assert result.ranking.get_column("borda").to_list() == [3.0] * 4
    assert result.ranking.get_column("mean_win_rate").to_list() == [0.5] * 4


def test_single_run_has_rank_one_and_no_win_rate() -> None:
    result = aggregate(make_table(hand_rows(("A",))), selection(HAND_SELECTED), CLIP)
    row = result.ranking.row(0, named=True)
    assert (row["mean_rank"], row["borda"], row["mean_win_rate"]) == (1.0, 0.0, None)


# --- errors ---------------------------------------------------------------------------------------------


def test_selected_rows_not_in_table_are_named() -> None:
    selected = pl.concat(
        [
            selection(["yor_gk"]),
            pl.DataFrame({"task": ["yor_rc"], "fewshot": [5], "metric": ["acc_norm"]}),
            pl.DataFrame({"task": ["hau_gk"], "fewshot": [0], "metric": ["acc"]}),
        ]
    )
    with pytest.raises(AggregateError) as error:
        aggregate(hand_table(), selected, CLIP)
    message = str(error.value)
    assert "(yor_rc, 5, acc_norm)" in message and "(0, acc_norm)" in message
    assert "(hau_gk, 0, acc): task not in table" in message
    assert "yor_gk" not in message


def test_empty_selection() -> None:
    with pytest.raises(AggregateError, match="empty"):
        aggregate(hand_table(), selection([]), CLIP)


def test_only_tasks_without_a_scale() -> None:
    with pytest.raises(AggregateError, match="perfect score; nothing to aggregate"):
        aggregate(hand_table(), selection(["swa_ppl"]), CLIP)


def test_task_selected_twice() -> None:
    selected = pl.concat([selection(["yor_gk"]), pl.DataFrame({"task": ["yor_gk"], "fewshot": [0], "metric": ["acc"]})])
    with pytest.raises(AggregateError, match="yor_gk"):
        aggregate(hand_table(), selected, CLIP)


def test_selection_missing_column() -> None:
    with pytest.raises(AggregateError, match="metric"):
        aggregate(hand_table(), selection(["yor_gk"]).drop("metric"), CLIP)


def test_aggregate_error_is_value_error() -> None:
    assert issubclass(AggregateError, ValueError)


# --- writing --------------------------------------------------------------------------------------------


def test_write_ranking(tmp_path: Path) -> None:
    result = aggregate(hand_table(), selection(HAND_SELECTED), CLIP)
    out = tmp_path / "agg"
    path = write_ranking(result, out)
    assert path == out / "ranking.csv"
    assert sorted(p.name for p in out.iterdir()) == ["language_pairs.csv", "language_scores.csv", "ranking.csv"]
    assert_frame_equal(pl.read_csv(path, schema=result.ranking.schema), result.ranking)
    back = pl.read_csv(out / "language_scores.csv", schema=result.language_scores.schema)
    assert_frame_equal(back, result.language_scores)
    write_ranking(result, out)  # overwriting is fine
    assert sorted(p.name for p in out.iterdir()) == ["language_pairs.csv", "language_scores.csv", "ranking.csv"]


# --- a reference implementation on random tables ------------------------------------------------------------


def reference_mean_ranks(table: pl.DataFrame, tasks: list[str], clip: bool) -> dict[str, float | None]:
    """Straight-line Python/scipy version of the FineTasks multilingual mean rank."""
    metric_of = {t: TASKS[t][2] for t in tasks}
    final: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in table.iter_rows(named=True):
        if row["task"] in metric_of and row["metric"] == metric_of[row["task"]]:
            final[(row["run"], row["task"])][row["step"]].append(row["score"])
    runs = sorted(set(table["run"]))
    languages = sorted({TASKS[t][0] for t in tasks})
    scores: dict[str, dict[str, float]] = {lang: {} for lang in languages}
    for run in runs:
        for lang in languages:
            lang_tasks = [t for t in tasks if TASKS[t][0] == lang]
            if any((run, t) not in final for t in lang_tasks):
                continue
            by_cat: dict[str, list[float]] = defaultdict(list)
            for t in lang_tasks:
                steps = final[(run, t)]
                s = float(np.mean(steps[max(steps)]))
                b = TASKS[t][3]
                r = (s - b) / (1 - b)
                by_cat[TASKS[t][1]].append(max(r, 0.0) if clip else r)
            scores[lang][run] = float(np.mean([np.mean(v) for v in by_cat.values()]))
    ranks: dict[str, list[float]] = defaultdict(list)
    for lang in languages:
        names = list(scores[lang])
        if names:
            for name, rank in zip(names, rankdata([-scores[lang][n] for n in names]), strict=True):
                ranks[name].append(float(rank))
    return {run: (float(np.mean(ranks[run])) if ranks[run] else None) for run in runs}


def random_table(rng: np.random.Generator, n_runs: int, tasks: list[str], drop: float) -> pl.DataFrame:
    rows: list[Row] = []
    for r in range(n_runs):
        for task in tasks:
            for seed in range(1, int(rng.integers(1, 4)) + 1):
                for step in range(1, int(rng.integers(1, 5)) + 1):
                    if rng.random() < drop:
                        continue
                    score = float(rng.integers(0, 9)) / 8  # a coarse grid, so ties happen
                    rows.append((f"run{r}", seed, step, task, TASKS[task][2], score))
    return make_table(rows)


RANDOM_TASKS = {
    f"{lang}_{cat.lower()}{i}": (lang, cat, metric, b)
    for lang in ("aaa", "bbb", "ccc")
    for i, (cat, metric, b) in enumerate(
        [("GK", "acc_norm", 0.25), ("RC", "acc", 0.5), ("RC", "acc_norm_token", 0.0), ("GEN", "f1", 0.0)]
    )
}
TASKS.update(RANDOM_TASKS)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("clip", [True, False])
def test_mean_rank_matches_scipy_reference(seed: int, clip: bool) -> None:
    rng = np.random.default_rng(seed)
    tasks = list(RANDOM_TASKS)
    table = random_table(rng, n_runs=int(rng.integers(2, 8)), tasks=tasks, drop=0.08)
    result = aggregate(table, selection(tasks), AggregateConfig(clip_below_baseline=clip))
    expected = reference_mean_ranks(table, tasks, clip)
    got = dict(zip(result.ranking["run"], result.ranking["mean_rank"], strict=True))
    assert got.keys() == expected.keys()
    for run, value in expected.items():
        assert got[run] == (None if value is None else pytest.approx(value)), run


# --- properties -----------------------------------------------------------------------------------------


@st.composite
def tables(draw: st.DrawFn, low: int = 0, drop: bool = True) -> tuple[pl.DataFrame, list[str]]:
    """Small random score tables over the RANDOM_TASKS of 1-3 languages; scores on a k/8 grid."""
    languages = draw(st.lists(st.sampled_from(["aaa", "bbb", "ccc"]), min_size=1, max_size=3, unique=True))
    tasks = [t for t in RANDOM_TASKS if RANDOM_TASKS[t][0] in languages]
    tasks = draw(st.lists(st.sampled_from(tasks), min_size=1, max_size=len(tasks), unique=True))
    n_runs = draw(st.integers(2, 5))
    rows: list[Row] = []
    for r in range(n_runs):
        for task in tasks:
            if drop and draw(st.integers(0, 9)) == 0:
                continue  # a run without this task
            for seed in range(1, draw(st.integers(1, 2)) + 1):
                for step in range(1, draw(st.integers(1, 3)) + 1):
                    score = draw(st.integers(low, 8)) / 8
                    rows.append((f"r{r}", seed, step, task, TASKS[task][2], score))
    present = {row[3] for row in rows}
    tasks = [t for t in tasks if t in present]  # a selection is made from the table it scores
    assume(tasks)
    return make_table(rows), tasks


def canonical(result: AggregateResult) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[str]]:
    return (
        result.ranking.sort("run"),
        result.language_scores.sort("run", "language"),
        result.category_scores.sort("run", "language", "category"),
        sorted(result.notes),
    )


PROPERTY_SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(data=tables(), order_seed=st.integers(0, 2**32 - 1))
def test_invariant_to_row_order(data: tuple[pl.DataFrame, list[str]], order_seed: int) -> None:
    table, tasks = data
    shuffled = table.sample(fraction=1.0, shuffle=True, seed=order_seed)
    a = canonical(aggregate(table, selection(tasks), CLIP))
    b = canonical(aggregate(shuffled, selection(tasks), CLIP))
    for x, y in zip(a[:3], b[:3], strict=True):
        assert_frame_equal(x, y)
    assert a[3] == b[3]


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(data=tables(), perm_seed=st.integers(0, 2**32 - 1))
def test_permuting_run_names_permutes_ranking(data: tuple[pl.DataFrame, list[str]], perm_seed: int) -> None:
    table, tasks = data
    runs = sorted(set(table["run"]))
    new_names = [f"n{i}" for i in np.random.default_rng(perm_seed).permutation(len(runs))]
    mapping = dict(zip(runs, new_names, strict=True))
    renamed = table.with_columns(pl.col("run").replace_strict(mapping))
    before = by_run(aggregate(table, selection(tasks), CLIP))
    after = by_run(aggregate(renamed, selection(tasks), CLIP))
    assert set(after) == set(new_names)
    # the bootstrap draws each run's seeds in the runs' name order: a Monte Carlo interval moves with the names
    ignored = {"run", "mean_rank_ci_low", "mean_rank_ci_high"}
    for old, new in mapping.items():
        assert {k: v for k, v in after[new].items() if k not in ignored} == {
            k: v for k, v in before[old].items() if k not in ignored
        }


def same_order(a: float, b: float, x: float, y: float) -> bool:
    """Whether (a vs b) and (x vs y) compare the same way, ties within float rounding."""

    def sign(u: float, v: float) -> int:
        return 0 if math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-12) else (1 if u > v else -1)

    return sign(a, b) == sign(x, y)


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(data=tables(low=4))
def test_adding_a_run_that_loses_everywhere_keeps_the_order(data: tuple[pl.DataFrame, list[str]]) -> None:
    # Every other run scores >= 0.5 > every baseline (<= 0.25 here: 0.5-baseline tasks rescale 0.5 to 0);
    # the loser scores 0 everywhere, so it is strictly last in every language where others are above 0.
    table, tasks = data
    tasks = [t for t in tasks if TASKS[t][3] < 0.5]
    if not tasks:
        return
    table = table.filter(pl.col("task").is_in(tasks))
    loser = make_table([("zz_loser", 1, 1, t, TASKS[t][2], 0.0) for t in tasks])
    before = by_run(aggregate(table, selection(tasks), CLIP))
    after = by_run(aggregate(pl.concat([table, loser]), selection(tasks), CLIP))
    assert after["zz_loser"]["missing_languages"] == ""
    runs = sorted(before)
    for run in runs:  # the loser sits below everyone: every other run keeps its ranks
        assert after[run]["mean_rank"] == before[run]["mean_rank"]
    if len(runs) < 2 or any(before[r]["missing_languages"] for r in runs):
        return  # Borda and win rate weigh languages by their number of runs: only comparable when complete
    for a in runs:
        for b in runs:
            for key in ("mean_rank", "borda", "mean_win_rate"):
                assert same_order(before[a][key], before[b][key], after[a][key], after[b][key]), (a, b, key)


# --- speed ----------------------------------------------------------------------------------------------


def big_table(n_runs: int = 40, n_tasks: int = 250, n_steps: int = 25) -> tuple[pl.DataFrame, pl.DataFrame]:
    """1,000,000 rows: 40 runs x 2 seeds x 25 steps x 250 tasks x 2 metrics; one metric selected."""
    grid = np.stack(
        np.meshgrid(np.arange(n_runs), [1, 2], np.arange(1, n_steps + 1), np.arange(n_tasks), [0, 1]),
        axis=-1,
    ).reshape(-1, 5)
    codes = pl.DataFrame(grid, schema=["r", "seed", "s", "t", "m"], orient="row")
    task = pl.format("t{}", pl.col("t").cast(pl.String).str.zfill(3))
    table = codes.select(
        pl.format("run{}", pl.col("r")).alias("run"),
        pl.col("seed").cast(pl.Int64),
        (pl.col("s") * 1000).cast(pl.Int64).alias("step"),
        (pl.col("s") * 1_000_000).cast(pl.Int64).alias("tokens"),
        task.alias("task"),
        task.alias("benchmark"),
        pl.format("l{}", pl.col("t") % 25).alias("language"),
        pl.col("t").mod(len(CATEGORIES)).replace_strict(range(len(CATEGORIES)), CATEGORIES).alias("category"),
        pl.lit("CF").alias("formulation"),
        pl.lit(0, dtype=pl.Int64).alias("fewshot"),
        pl.when(pl.col("m") == 0).then(pl.lit("acc")).otherwise(pl.lit("acc_norm")).alias("metric"),
        pl.Series("score", np.random.default_rng(0).random(len(grid))),
        pl.lit(None, dtype=pl.Float64).alias("stderr"),
        pl.lit(0.25).alias("random_baseline"),
    ).cast(pl.Schema(SCHEMA))
    selected = table.select("task", "fewshot").unique().with_columns(metric=pl.lit("acc_norm"))
    return table, selected


@pytest.mark.slow
def test_one_million_rows_aggregate() -> None:
    """Scale check without timing (speed is measured in `make bench`, not asserted here)."""
    table, selected = big_table()
    assert table.height == 1_000_000
    result = aggregate(table, selected, CLIP)
    assert result.ranking.height == 40 and result.ranking["n_languages"].to_list() == [25] * 40
