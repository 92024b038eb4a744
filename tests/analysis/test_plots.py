"""analysis.plots: valid, non-blank, deterministic PNGs; ValueError when there is nothing to plot."""

from __future__ import annotations

import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.image import imread

from analysis.plots import (
    consistency_forest_figure,
    plot_consistency_forest,
    plot_criteria_overview,
    plot_ranking,
    plot_training_curves,
)
from analysis.scores.schema import SCHEMA

TASK = "community|afrixnli_yor_mcf|0"
STEPS = (1000, 2000, 3000, 4000, 5000)
TOKENS_PER_STEP = 4_000_000  # 4M tokens/step -> up to 20B tokens


def _rows(
    run: str, seeds: list[int | None], metric: str, start: float, slope: float, *, tokens: bool = True
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for seed in seeds:
        wobble = 0.0 if seed is None else 0.004 * seed
        for i, step in enumerate(STEPS):
            rows.append(
                {
                    "run": run,
                    "seed": seed,
                    "step": step,
                    "tokens": step * TOKENS_PER_STEP if tokens else None,
                    "task": TASK,
                    "benchmark": "afrixnli",
                    "language": "yor",
                    "category": "NLU",
                    "formulation": "MCF",
                    "fewshot": 0,
                    "metric": metric,
                    "score": start + slope * i + wobble,
                    "stderr": 0.01,
                    "random_baseline": 1 / 3 if metric.startswith("acc") else None,
                }
            )
    return rows


def score_table(*, tokens: bool = True) -> pl.DataFrame:
    rows: list[dict[str, object]] = []
    # run-a: three seeds; run-b: one seed (no band); run-c: a null seed (one replica).
    for metric in ("acc_norm", "acc", "bits_per_byte", "acc_norm_pmi"):
        lower = metric == "bits_per_byte"
        sign = -1.0 if lower else 1.0
        base = 1.2 if lower else 0.34
        rows += _rows("run-a", [0, 1, 2], metric, base, sign * 0.02, tokens=tokens)
        rows += _rows("run-b", [0], metric, base + sign * 0.01, sign * 0.015, tokens=tokens)
        rows += _rows("run-c", [None], metric, base - sign * 0.01, sign * 0.01, tokens=tokens)
    table = pl.DataFrame(rows, schema=SCHEMA)
    # a null score and a NaN score must be ignored, not break the curves
    return table.with_columns(
        score=pl.when((pl.col("run") == "run-b") & (pl.col("step") == 3000))
        .then(None)
        .when((pl.col("run") == "run-c") & (pl.col("step") == 2000))
        .then(float("nan"))
        .otherwise(pl.col("score"))
    )


def decisions_table() -> pl.DataFrame:
    base = {
        "language": "yor",
        "category": "NLU",
        "formulation": "MCF",
        "fewshot": 0,
        "snr_kind": "seed",
        "non_random_distance": 0.1,
        "non_random_sigmas": 5.0,
        "three_sigma": True,
        "reason": "",
    }
    specs: list[dict[str, object]] = [
        # a good, kept task (chosen metric acc_norm) plus a non-chosen row of the same task
        {"task": TASK, "metric": "acc_norm", "monotonicity": 0.9, "snr": 40.0, "consistency": 0.7,
         "chosen": True, "kept": True},
        {"task": TASK, "metric": "acc", "monotonicity": 0.6, "snr": 12.0, "consistency": 0.5,
         "chosen": False, "kept": False},
        # dropped: low SNR
        {"task": "community|afrimmlu_yor_cf|0", "metric": "acc", "monotonicity": 0.7, "snr": 5.0,
         "consistency": 0.2, "chosen": True, "kept": False, "reason": "snr 5 < 20"},
        # not measurable SNR (one seed) and not measurable consistency
        {"task": "community|belebele_yor_mcf|0", "metric": "acc_norm", "monotonicity": 0.8, "snr": None,
         "consistency": None, "chosen": True, "kept": True},
        # not measurable monotonicity, negative SNR, no chosen row at all (best row is used)
        {"task": "community|flores_yor_gen_a_very_long_task_name_indeed|0", "metric": "chrf",
         "monotonicity": None, "snr": -3.0, "consistency": -0.1, "chosen": False, "kept": False},
        {"task": "community|flores_yor_gen_a_very_long_task_name_indeed|0", "metric": "bits_per_byte",
         "monotonicity": 0.95, "snr": 80.0, "consistency": 0.9, "chosen": False, "kept": False},
        # a negative SNR with a measurable monotonicity: clipped to the bottom edge
        {"task": "community|sib200_yor_cf|0", "metric": "acc", "monotonicity": 0.3, "snr": -2.0,
         "consistency": 0.1, "chosen": True, "kept": False},
        # another language, must not appear
        {"task": "community|afrixnli_hau_mcf|0", "metric": "acc", "monotonicity": 0.9, "snr": 50.0,
         "consistency": 0.8, "chosen": True, "kept": True, "language": "hau"},
    ]  # fmt: skip
    rows = []
    for spec in specs:
        row = {**base, **spec}
        mono, snr = row["monotonicity"], row["snr"]
        row["monotonicity_ci_low"] = None if mono is None else float(mono) - 0.1  # type: ignore[arg-type]
        row["monotonicity_ci_high"] = None if mono is None else min(1.0, float(mono) + 0.05)  # type: ignore[arg-type]
        row["snr_ci_low"] = None if snr is None else float(snr) * 0.5 - 5  # type: ignore[arg-type]
        row["snr_ci_high"] = None if snr is None else abs(float(snr)) * 1.5  # type: ignore[arg-type]
        rows.append(row)
    return pl.DataFrame(
        rows,
        schema={
            "task": pl.String,
            "fewshot": pl.Int64,
            "metric": pl.String,
            "language": pl.String,
            "category": pl.String,
            "formulation": pl.String,
            "monotonicity": pl.Float64,
            "monotonicity_ci_low": pl.Float64,
            "monotonicity_ci_high": pl.Float64,
            "snr": pl.Float64,
            "snr_kind": pl.String,
            "snr_ci_low": pl.Float64,
            "snr_ci_high": pl.Float64,
            "non_random_distance": pl.Float64,
            "non_random_sigmas": pl.Float64,
            "three_sigma": pl.Boolean,
            "consistency": pl.Float64,
            "chosen": pl.Boolean,
            "kept": pl.Boolean,
            "reason": pl.String,
        },
    )


def ranking_table() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run": ["run-a", "run-b", "run-c", "run-d"],
            "mean_rank": [1.5, 1.0, 3.0, None],
            "borda": [5.0, 6.0, 1.0, None],
            "mean_win_rate": [0.6, 0.8, 0.1, None],
            "score_yor": [0.41, 0.45, 0.30, None],
            "score_hau": [0.38, None, 0.33, float("nan")],
            "score_swa": [0.52, 0.55, 0.49, None],
        }
    )


def assert_png(path: Path, *, min_width: int = 300, min_height: int = 200) -> None:
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 5_000
    assert b"Software" not in data and b"Creation Time" not in data  # no version, no timestamp
    image = imread(path)
    height, width = image.shape[:2]
    assert min_width <= width <= 5_000 and min_height <= height <= 5_000
    assert float(np.std(image[..., :3])) > 0.01  # not a blank image
    assert not list(path.parent.glob(f".{path.name}.*"))  # no temporary file left behind


def assert_no_pyplot_figures() -> None:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        assert pyplot.get_fignums() == []


# ---------------------------------------------------------------------------- training curves


@pytest.mark.slow
def test_training_curves_png_and_deterministic(tmp_path: Path) -> None:
    table = score_table()
    first = plot_training_curves(table, TASK, 0, tmp_path / "a.png", highlight_metric="acc_norm")
    second = plot_training_curves(table, TASK, 0, tmp_path / "b.png", highlight_metric="acc_norm")
    assert first == tmp_path / "a.png"
    assert_png(first, min_width=4 * 300)  # four metric panels side by side
    assert first.read_bytes() == second.read_bytes()
    assert_no_pyplot_figures()


@pytest.mark.slow
def test_training_curves_highlight_changes_the_figure(tmp_path: Path) -> None:
    table = score_table()
    plain = plot_training_curves(table, TASK, 0, tmp_path / "plain.png")
    marked = plot_training_curves(table, TASK, 0, tmp_path / "marked.png", highlight_metric="acc")
    assert plain.read_bytes() != marked.read_bytes()


def test_training_curves_metric_subset_steps_and_one_seed(tmp_path: Path) -> None:
    table = score_table(tokens=False).filter(pl.col("run") == "run-b")  # one run, one seed: no band
    out = plot_training_curves(
        table, TASK, 0, tmp_path / "sub" / "dir" / "c.png", metrics=["bits_per_byte", "nope", "acc"]
    )
    assert_png(out)
    # asking for steps explicitly gives the same figure as a table without tokens
    with_tokens = score_table().filter(pl.col("run") == "run-b")
    by_step = plot_training_curves(with_tokens, TASK, 0, tmp_path / "d.png", metrics=["bits_per_byte", "acc"], x="step")
    assert by_step.read_bytes() == out.read_bytes()


def test_training_curves_overwrites_atomically(tmp_path: Path) -> None:
    out = tmp_path / "e.png"
    out.write_bytes(b"old")
    plot_training_curves(score_table(), TASK, 0, out, metrics=["acc"])
    assert_png(out)
    assert [p.name for p in tmp_path.iterdir()] == ["e.png"]


def test_training_curves_nothing_to_plot(tmp_path: Path) -> None:
    table = score_table()
    with pytest.raises(ValueError, match="no_such_task"):
        plot_training_curves(table, "no_such_task", 0, tmp_path / "x.png")
    with pytest.raises(ValueError, match="afrixnli_yor_mcf"):
        plot_training_curves(table, TASK, 5, tmp_path / "x.png")
    with pytest.raises(ValueError, match="afrixnli_yor_mcf"):
        plot_training_curves(table, TASK, 0, tmp_path / "x.png", metrics=["f1"])
    all_null = table.with_columns(score=pl.lit(None, dtype=pl.Float64))
    with pytest.raises(ValueError, match="afrixnli_yor_mcf"):
        plot_training_curves(all_null, TASK, 0, tmp_path / "x.png")
    with pytest.raises(ValueError, match="x must be"):
        plot_training_curves(table, TASK, 0, tmp_path / "x.png", x="flops")
    with pytest.raises(ValueError, match=r"\.png"):
        plot_training_curves(table, TASK, 0, tmp_path / "x.svg")
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------------- criteria overview


@pytest.mark.slow
def test_criteria_overview_png_and_deterministic(tmp_path: Path) -> None:
    decisions = decisions_table()
    first = plot_criteria_overview(decisions, "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20)
    second = plot_criteria_overview(decisions, "yor", tmp_path / "b.png", monotonicity_min=0.5, snr_min=20)
    assert_png(first, min_width=1000)
    assert first.read_bytes() == second.read_bytes()
    other = plot_criteria_overview(decisions, "hau", tmp_path / "c.png", monotonicity_min=0.5, snr_min=20)
    assert_png(other)
    assert other.read_bytes() != first.read_bytes()
    assert_no_pyplot_figures()


@pytest.mark.slow
def test_criteria_overview_draws_separation_when_the_decisions_have_it(tmp_path: Path) -> None:
    import matplotlib.image

    decisions = decisions_table()
    without = plot_criteria_overview(decisions, "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20)
    n = decisions.height
    separated = decisions.with_columns(
        pl.Series("separation", [1.5, float("inf"), None, 0.2, *[0.7] * (n - 4)][:n]),
        pl.Series("separation_ci_low", [0.4, None, None, 0.0, *[0.1] * (n - 4)][:n]),
        pl.Series("separation_ci_high", [6.0, None, None, 3.0, *[4.0] * (n - 4)][:n]),
        pl.Series("separation_p", [0.01, 0.0, None, 0.6, *[0.3] * (n - 4)][:n]),
    )
    with_separation = plot_criteria_overview(
        separated, "yor", tmp_path / "b.png", monotonicity_min=0.5, snr_min=20, separation_alpha=0.05
    )
    assert_png(with_separation)
    # a third panel: 17 inches wide instead of 12
    width = matplotlib.image.imread(with_separation).shape[1] / matplotlib.image.imread(without).shape[1]
    assert width == pytest.approx(17 / 12, rel=0.01)
    assert_no_pyplot_figures()


def test_criteria_overview_without_optional_columns(tmp_path: Path) -> None:
    decisions = decisions_table().drop(
        "chosen", "monotonicity_ci_low", "monotonicity_ci_high", "snr_ci_low", "snr_ci_high"
    )
    out = plot_criteria_overview(decisions, "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=0)
    assert_png(out)


def test_criteria_overview_all_unmeasurable(tmp_path: Path) -> None:
    decisions = decisions_table().with_columns(
        monotonicity=pl.lit(None, dtype=pl.Float64),
        snr=pl.lit(None, dtype=pl.Float64),
        consistency=pl.lit(None, dtype=pl.Float64),
        kept=pl.lit(None, dtype=pl.Boolean),
    )
    out = plot_criteria_overview(decisions, "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20)
    assert_png(out)


def test_criteria_overview_unknown_language(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'zul'"):
        plot_criteria_overview(decisions_table(), "zul", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20)
    with pytest.raises(ValueError, match="'yor'"):
        plot_criteria_overview(decisions_table().clear(), "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20)
    with pytest.raises(ValueError, match="consistency"):
        plot_criteria_overview(
            decisions_table().drop("consistency"), "yor", tmp_path / "a.png", monotonicity_min=0.5, snr_min=20
        )
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- consistency forest


def _with_consistency_ci(decisions: pl.DataFrame) -> pl.DataFrame:
    measured = pl.col("consistency").is_not_null()
    return decisions.with_columns(
        consistency_ci_low=pl.col("consistency") - 0.1,
        consistency_ci_high=(pl.col("consistency") + 0.1).clip(upper_bound=1.0),
        consistency_n_pairs=pl.when(measured).then(pl.lit(7)),
        consistency_reason=pl.when(measured).then(None).otherwise(pl.lit("consistency: needs >= 3 runs")),
    )


def test_consistency_forest_png_and_deterministic(tmp_path: Path) -> None:
    decisions = _with_consistency_ci(decisions_table())
    first = plot_consistency_forest(decisions, "yor", tmp_path / "a.png")
    second = plot_consistency_forest(decisions.reverse(), "yor", tmp_path / "b.png")  # input order does not matter
    assert_png(first)
    assert first.read_bytes() == second.read_bytes()
    bare = plot_consistency_forest(decisions_table(), "yor", tmp_path / "c.png")  # no CI, pairs or reason columns
    assert_png(bare)
    assert bare.read_bytes() != first.read_bytes()
    assert_no_pyplot_figures()


def test_consistency_forest_lists_every_task_highest_first() -> None:
    rows = _with_consistency_ci(decisions_table()).filter(pl.col("language") == "yor")
    chosen = rows.filter(pl.col("chosen") | pl.col("metric").eq("bits_per_byte"))  # flores: its best row
    figure = consistency_forest_figure(chosen, title="yor")
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["flores_yor_gen_a_very_l…", "afrixnli_yor_mcf", "afrimmlu_yor_cf", "sib200_yor_cf",
                      "belebele_yor_mcf"]  # fmt: skip
    texts = [t.get_text() for t in ax.texts]
    assert "not measurable: needs >= 3 runs" in texts  # belebele: the reason instead of a point
    assert "0.20 [0.10, 0.30] · 7 pairs" in texts  # a dropped task keeps its value and interval
    colors = [t.get_color() for t in ax.get_yticklabels()]
    assert colors[1] == "black" and colors[2] != "black"  # kept black, dropped red
    several = consistency_forest_figure(_with_consistency_ci(decisions_table()).filter(pl.col("chosen")), title="all")
    assert "afrixnli_hau_mcf (hau)" in [t.get_text() for t in several.axes[0].get_yticklabels()]


def test_consistency_forest_nothing_to_plot(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'zul'"):
        plot_consistency_forest(decisions_table(), "zul", tmp_path / "a.png")
    with pytest.raises(ValueError, match="consistency"):
        plot_consistency_forest(decisions_table().drop("consistency"), "yor", tmp_path / "a.png")
    with pytest.raises(ValueError, match="no task"):
        consistency_forest_figure(decisions_table().clear(), title="empty")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------- ranking


def test_ranking_png_and_deterministic(tmp_path: Path) -> None:
    ranking = ranking_table()
    first = plot_ranking(ranking, tmp_path / "a.png")
    second = plot_ranking(ranking.reverse(), tmp_path / "b.png")  # input order does not matter
    assert_png(first)
    assert first.read_bytes() == second.read_bytes()
    assert_no_pyplot_figures()


def test_ranking_without_language_scores_or_extras(tmp_path: Path) -> None:
    ranking = ranking_table().select("run", "mean_rank")
    assert_png(plot_ranking(ranking, tmp_path / "a.png"))
    all_missing = ranking_table().with_columns(pl.col("^score_.*$").cast(pl.Float64) * math.nan)
    assert_png(plot_ranking(all_missing, tmp_path / "b.png"))


def test_ranking_empty(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no run"):
        plot_ranking(ranking_table().clear(), tmp_path / "a.png")
    with pytest.raises(ValueError, match="mean_rank"):
        plot_ranking(ranking_table().drop("mean_rank"), tmp_path / "a.png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_figures_in_threads_match_sequential(tmp_path: Path) -> None:
    ranking = ranking_table()
    reference = plot_ranking(ranking, tmp_path / "ref.png").read_bytes()
    with ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda i: plot_ranking(ranking, tmp_path / f"t{i}.png"), range(4)))
    assert all(p.read_bytes() == reference for p in paths)
    assert_no_pyplot_figures()


def test_the_snr_log_axis_labels_plain_numbers() -> None:
    # a new user read "4×10¹" on the criteria figure's SNR axis (issue 40): within one decade the labels are "40"
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from analysis.plots import _draw_scatter

    picked = [{"task": f"t{i}", "_label": f"t{i}", "kept": True, "monotonicity": 0.8, "snr": snr}
              for i, snr in enumerate((25.0, 60.0))]  # fmt: skip
    figure = Figure()
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    _draw_scatter(ax, picked, 0.5, 20.0)
    figure.canvas.draw()
    labels = [t.get_text() for t in [*ax.get_yticklabels(), *ax.get_yticklabels(minor=True)] if t.get_text()]
    assert labels and "20" in labels, labels
    assert not any("\\times" in label or "×" in label or "$" in label for label in labels), labels
