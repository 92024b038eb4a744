"""analysis.explore (the notebook's helpers) and the figures it draws: values come from the decisions,
ranks and taus are right on hand-made tables, widgets react, the README figures are up to date."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import kendalltau

from analysis import explore
from analysis.plots import BAND_LABELS, seed_curves, task_criteria_figure, training_curves_figure
from finetasks_afr.data.bundled import BUNDLED_CONFIG, BUNDLED_SWEEP
from tests.typed_values import number

DOCS_FIGURES = Path(__file__).resolve().parents[2] / "docs" / "figures"
SIMULATED = Path(__file__).resolve().parents[2] / "finetasks_afr" / "data" / "simulated_sweep.parquet"


@pytest.fixture(scope="module")
def ex() -> explore.Exploration:
    return explore.explore(BUNDLED_SWEEP, BUNDLED_CONFIG)


@pytest.fixture(scope="module")
def simulated() -> explore.Exploration:
    """The simulated sweep: 4 runs, so ordering consistency is measurable (the demo sweep has 2)."""
    return explore.explore(SIMULATED)


def _table(scores: dict[str, list[list[float]]], metric: str = "acc", baseline: float | None = 0.25) -> pl.DataFrame:
    """A validated-shape score table: scores[run][seed][step] for one CF task, steps 1..n."""
    rows = []
    for run, seeds in scores.items():
        for seed, series in enumerate(seeds):
            for step, score in enumerate(series, start=1):
                rows.append(
                    {"run": run, "seed": seed, "step": step, "tokens": step * 1000, "task": "toy_xx_cf",
                     "benchmark": "toy", "language": "xx", "category": "GK", "formulation": "CF", "fewshot": 0,
                     "metric": metric, "score": score, "stderr": 0.01, "random_baseline": baseline}
                )  # fmt: skip
    return pl.DataFrame(rows)


# ------------------------------------------------------------------------------------- bundled sweep


def test_focus_defaults_to_the_best_kept_task(ex: explore.Exploration) -> None:
    language, task = explore.focus(ex)
    # accuracy tasks first, even where a perplexity task has the best margin
    kept = ex.chosen.filter(pl.col("kept") & (pl.col("formulation") != "PPL")).sort("margin", descending=True)
    assert (language, task) == (kept.row(0, named=True)["language"], kept.row(0, named=True)["task"])
    with_ppl = ex.chosen.with_columns(
        pl.when(pl.col("formulation") == "PPL").then(pl.lit(99.0)).otherwise(pl.col("margin")).alias("margin")
    )
    assert explore.focus(replace(ex, selection=replace(ex.selection, decisions=with_ppl)))[1] == task
    assert explore.focus(ex, "qaa")[0] == "qaa"
    assert explore.focus(ex, task="demotiny_qac_cf") == ("qac", "demotiny_qac_cf")


def test_unknown_names_are_clear_errors(ex: explore.Exploration) -> None:
    with pytest.raises(ValueError, match=r"language 'zzz' is not in the score table; languages: \['qaa'"):
        explore.tasks(ex, "zzz")
    with pytest.raises(ValueError, match="task 'nope' is not in the score table"):
        explore.task_row(ex, "nope")
    with pytest.raises(ValueError, match="is in language 'qaa', not 'qab'"):
        explore.focus(ex, "qab", "demofacts_qaa_cf")


def test_task_criteria_are_the_decisions_values(ex: explore.Exploration) -> None:
    task = "demofacts_qab_cf"
    criteria = explore.task_criteria(ex, task)
    decisions = ex.decisions.filter(pl.col("task") == task)
    assert set(criteria.get_column("metric")) == set(decisions.get_column("metric"))
    for row in decisions.iter_rows(named=True):
        mono = criteria.filter((pl.col("criterion") == "monotonicity") & (pl.col("metric") == row["metric"])).row(
            0, named=True
        )
        assert mono["value"] == row["monotonicity"]
        assert (mono["ci_low"], mono["ci_high"]) == (row["monotonicity_ci_low"], row["monotonicity_ci_high"])
        assert mono["threshold"] == ex.config.monotonicity.min
        assert mono["passed"] == row["monotonicity_pass"]
        snr = criteria.filter((pl.col("criterion") == "snr") & (pl.col("metric") == row["metric"])).row(0, named=True)
        assert (snr["value"], snr["threshold"], snr["passed"]) == (row["snr"], row["snr_min"], row["snr_pass"])
    required = dict(criteria.select("criterion", "required").unique().iter_rows())
    assert required == {"monotonicity": True, "snr": True, "non_random": True, "consistency": False,
                        "decision_accuracy": False}  # fmt: skip
    accuracy = criteria.filter(pl.col("criterion") == "decision_accuracy")
    assert accuracy.get_column("passed").null_count() == accuracy.height  # reported, never thresholded
    chosen = criteria.filter(pl.col("chosen")).get_column("metric").unique().to_list()
    assert chosen == [explore.task_row(ex, task)["metric"]]
    summary = explore.criteria_summary(ex, task)
    assert summary.filter(pl.col("chosen")).row(0, named=True)["reason"].startswith("kept: ")


def test_siblings_and_formulation_curves(ex: explore.Exploration) -> None:
    assert explore.siblings(ex, "demofacts_qab_mcf") == {"CF": "demofacts_qab_cf", "MCF": "demofacts_qab_mcf"}
    curves = explore.formulation_curves(ex, "demofacts_qab_cf", band="sd")
    series = curves.get_column("series").unique().sort().to_list()
    assert series == ["CF: demofacts_qab_cf · acc_norm_token · kept", "MCF: demofacts_qab_mcf · acc · dropped"]
    raw = ex.table.filter(
        (pl.col("task") == "demofacts_qab_cf") & (pl.col("metric") == "acc_norm_token")
        & (pl.col("run") == "mix-a") & (pl.col("step") == 400)
    ).get_column("score")  # fmt: skip
    assert raw.len() == 3
    point = curves.filter(pl.col("series").str.starts_with("CF") & (pl.col("run") == "mix-a") & (pl.col("step") == 400))
    assert point.row(0, named=True)["mean"] == pytest.approx(raw.mean())
    assert point.row(0, named=True)["hi"] == pytest.approx(number(raw.mean()) + number(raw.std(ddof=1)))


@pytest.mark.slow  # ~10 s on 2 cores: four figures
def test_every_view_is_a_figure(ex: explore.Exploration) -> None:
    views = explore.task_views(ex, "demofacts_qac_cf", "sd")
    assert set(views) == {"curves", "criteria", "formulations", "ordering"}
    for name, figure in views.items():
        assert figure is not None, name
        png = explore.figure_png(figure)
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
    curves = views["curves"]
    assert curves is not None
    legend = [t.get_text() for t in curves.legends[0].get_texts()]
    assert BAND_LABELS["sd"] in legend


def test_showcase_picks_a_dropped_task_and_another_language(ex: explore.Exploration) -> None:
    picks = explore.showcase(ex, "qab", "demofacts_qab_cf")
    assert picks[0] == ("qab", "demorandlabel_qab_cf")  # the clearest CF failure in qab
    assert picks[1][0] != "qab"
    assert explore.task_row(ex, picks[1][1])["kept"]


def test_consistency_overview_gives_every_task_its_interval(simulated: explore.Exploration) -> None:
    overview = explore.consistency_overview(simulated)
    assert sorted(overview.get_column("task").to_list()) == sorted(simulated.chosen.get_column("task").to_list())
    dropped = overview.filter(~pl.col("kept"))
    assert dropped.height > 0
    for rows in (overview, dropped):  # no task, kept or dropped, without its value and interval
        for column in ("consistency", "consistency_ci_low", "consistency_ci_high", "decision_accuracy"):
            assert rows.get_column(column).null_count() == 0, column
    assert overview.get_column("consistency_reason").null_count() == overview.height
    assert (overview.get_column("consistency_n_pairs") > 0).all()
    inside = (pl.col("consistency_ci_low") <= pl.col("consistency")) & (
        pl.col("consistency") <= pl.col("consistency_ci_high")
    )
    assert overview.select(inside.all()).item()
    assert overview.get_column("language").to_list() == sorted(overview.get_column("language").to_list())
    for language in explore.languages(simulated):
        values = overview.filter(pl.col("language") == language).get_column("consistency").to_list()
        assert values == sorted(values, reverse=True), language  # highest first within the language
    yor = explore.consistency_overview(simulated, "yor")
    assert yor.equals(overview.filter(pl.col("language") == "yor"))
    with pytest.raises(ValueError, match="language 'zzz' is not in the score table"):
        explore.consistency_overview(simulated, "zzz")
    # selection_overview carries the same numbers, dropped tasks included
    joined = explore.selection_overview(simulated).join(overview, on="task", suffix="_c")
    assert joined.height == overview.height
    for column in ("consistency", "consistency_ci_low", "consistency_ci_high", "decision_accuracy"):
        assert joined.get_column(column).to_list() == joined.get_column(f"{column}_c").to_list(), column


def test_consistency_overview_of_the_bundled_demo_has_intervals(ex: explore.Exploration) -> None:
    """Three mixes: every CF task's consistency is measured, with its interval, in the overview."""
    assert ex.table.get_column("run").n_unique() >= 3
    overview = explore.consistency_overview(ex).filter(pl.col("task").str.ends_with("_cf"))
    assert overview.height > 0 and overview.get_column("consistency").null_count() == 0
    assert overview.get_column("consistency_ci_low").null_count() == 0


def two_runs(ex: explore.Exploration) -> explore.Exploration:
    runs = sorted(ex.table.get_column("run").unique().to_list())[:2]
    return explore.from_table(ex.table.filter(pl.col("run").is_in(runs)), ex.config, source="two runs")


def test_consistency_overview_says_why_with_two_runs(ex: explore.Exploration) -> None:
    ex = two_runs(ex)
    assert ex.table.get_column("run").n_unique() == 2
    overview = explore.consistency_overview(ex)
    assert overview.height == ex.chosen.height and overview.filter(~pl.col("kept")).height > 0
    assert overview.get_column("consistency").null_count() == overview.height
    assert set(overview.get_column("consistency_reason").to_list()) == {"consistency: needs >= 3 runs"}
    assert explore.selection_overview(ex).get_column("consistency").null_count() == overview.height


def test_consistency_figure_marks_every_task(simulated: explore.Exploration, ex: explore.Exploration) -> None:
    figure = explore.consistency_figure(simulated, "yor")
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert labels == explore.consistency_overview(simulated, "yor").get_column("task").to_list()
    assert explore.figure_png(figure).startswith(b"\x89PNG")
    texts = [t.get_text() for t in explore.consistency_figure(two_runs(ex), "qab").axes[0].texts]
    assert texts == ["not measurable: needs >= 3 runs"] * len(explore.tasks(ex, "qab"))


# ---------------------------------------------------------------------------------- hand-made tables


def test_seed_curves_bands() -> None:
    table = _table({"a": [[0.2, 0.4], [0.4, 0.8], [0.3, 0.6]]})
    minmax = seed_curves(table, ())
    sd = seed_curves(table, (), band="sd")
    first = minmax.filter(pl.col("step") == 1).row(0, named=True)
    assert (first["mean"], first["lo"], first["hi"], first["n_seeds"]) == pytest.approx((0.3, 0.2, 0.4, 3))
    second = sd.filter(pl.col("step") == 2).row(0, named=True)
    std = float(np.std([0.4, 0.8, 0.6], ddof=1))
    assert (second["lo"], second["hi"]) == pytest.approx((0.6 - std, 0.6 + std))
    with pytest.raises(ValueError, match="band must be one of"):
        seed_curves(table, (), band="iqr")  # type: ignore[arg-type]


def test_run_order_ranks_and_taus() -> None:
    # a > b > c at steps 1-2, reversed at 3-4; two seeds each (means are the midpoints)
    def run(values: list[float]) -> list[list[float]]:
        return [[v - 0.01 for v in values], [v + 0.01 for v in values]]

    ex = explore.from_table(
        _table({"a": run([0.6, 0.7, 0.3, 0.35]), "b": run([0.5, 0.6, 0.4, 0.45]), "c": run([0.4, 0.5, 0.5, 0.55])})
    )
    ranks, taus = explore.run_order(ex, "toy_xx_cf")
    at = {(r, s): k for r, s, k in ranks.select("run", "step", "rank").iter_rows()}
    assert [at[("a", s)] for s in (1, 2, 3, 4)] == [1.0, 1.0, 3.0, 3.0]
    assert [at[("c", s)] for s in (1, 2, 3, 4)] == [3.0, 3.0, 1.0, 1.0]
    assert taus.get_column("tau").to_list() == pytest.approx([1.0, -1.0, 1.0])
    assert taus.get_column("previous_step").to_list() == [1, 2, 3]
    assert explore.ordering_figure(ex, "toy_xx_cf") is not None


def test_run_order_lower_is_better_and_ties() -> None:
    scores = {"a": [[3.0, 2.0, 1.0]], "b": [[2.0, 2.0, 1.5]], "c": [[1.0, 2.0, 2.0]]}
    ex = explore.from_table(_table(scores, metric="bits_per_byte", baseline=None))
    ranks, taus = explore.run_order(ex, "toy_xx_cf")
    first = dict(ranks.filter(pl.col("step") == 1).select("run", "rank").iter_rows())
    assert first == {"a": 3.0, "b": 2.0, "c": 1.0}  # lower bits per byte is better
    tied = dict(ranks.filter(pl.col("step") == 2).select("run", "rank").iter_rows())
    assert tied == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert taus.get_column("tau").to_list() == [None, None]  # all tied at step 2: undefined both sides


def test_run_order_tau_matches_scipy() -> None:
    rng = np.random.default_rng(7)
    scores = {f"r{i}": [(rng.integers(0, 4, size=6) / 4).tolist()] for i in range(5)}  # ties included
    ex = explore.from_table(_table(scores))
    _, taus = explore.run_order(ex, "toy_xx_cf")
    runs = sorted(scores)
    for j, tau in enumerate(taus.get_column("tau").to_list()):
        x = [scores[r][0][j] for r in runs]
        y = [scores[r][0][j + 1] for r in runs]
        expected = kendalltau(x, y).statistic  # tau-b, as consistency.variant's default
        if np.isnan(expected):
            assert tau is None
        else:
            assert tau == pytest.approx(expected)


def test_criteria_figure_draws_infinite_and_missing_values() -> None:
    criteria = pl.DataFrame(
        {
            "criterion": ["non_random", "non_random", "consistency", "consistency"],
            "label": ["sigmas above random"] * 2 + ["consistency"] * 2,
            "metric": ["acc", "acc_norm"] * 2,
            "value": [float("inf"), 1.5, None, 0.4],
            "ci_low": [None, None, None, 0.1],
            "ci_high": [None, None, None, 0.7],
            "threshold": [3.0, 3.0, None, None],
            "passed": [True, False, None, None],
            "required": [True, True, False, False],
            "chosen": [True, False, True, False],
        }
    )
    png = explore.figure_png(task_criteria_figure(criteria, title="toy"))
    assert png.startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="criteria lacks column"):
        task_criteria_figure(criteria.drop("threshold"), title="toy")


def test_training_curves_band_is_checked() -> None:
    with pytest.raises(ValueError, match="band must be one of"):
        training_curves_figure(_table({"a": [[0.1, 0.2]]}), "toy_xx_cf", 0, band="range")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------- notebooks


class _Kernel:
    def __init__(self, allow_stdin: bool) -> None:
        self.allow_stdin = allow_stdin

    def get_parent(self) -> dict:
        return {"content": {"allow_stdin": self.allow_stdin}}


class _Shell:
    def __init__(self, allow_stdin: bool) -> None:
        self.kernel = _Kernel(allow_stdin)


@pytest.mark.parametrize(("shell", "expected"), [(None, False), (_Shell(True), True), (_Shell(False), False)])
def test_live_frontend_detection(monkeypatch: pytest.MonkeyPatch, shell: object, expected: bool) -> None:
    import IPython

    monkeypatch.delenv(explore.MODE_ENV, raising=False)
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert explore.is_live_frontend() is expected
    monkeypatch.setenv(explore.MODE_ENV, "static")
    assert explore.is_live_frontend() is False
    monkeypatch.setenv(explore.MODE_ENV, "interactive")
    assert explore.is_live_frontend() is True
    monkeypatch.setenv(explore.MODE_ENV, "sometimes")
    with pytest.raises(ValueError, match="FINETASKS_AFR_NOTEBOOK_MODE='sometimes'"):
        explore.is_live_frontend()


@pytest.mark.slow  # every change redraws four figures
def test_interactive_panel_redraws(ex: explore.Exploration) -> None:
    panel = explore.interactive(ex, "qab", "demofacts_qab_cf")
    (pick_language, pick_task), (pick_band, summary, *images) = panel.children[0].children, panel.children[1:]
    assert "demofacts_qab_cf" in pick_task.options and "kept" in summary.value
    curves_before = bytes(images[0].value)
    pick_band.value = "sd"
    assert bytes(images[0].value) != curves_before and bytes(images[0].value).startswith(b"\x89PNG")
    pick_language.value = "qaa"
    assert all(task.endswith(("_qaa_cf", "_qaa_mcf")) or task == "demotext_qaa" for task in pick_task.options)
    assert pick_task.value == explore.focus(ex, "qaa")[1]
    pick_task.value = "demorandlabel_qaa_mcf"
    assert "dropped" in summary.value


@pytest.mark.slow  # ~15 s on 2 cores: the criteria overview's label placement
def test_readme_figures_are_up_to_date(tmp_path: Path) -> None:
    paths = explore.readme_figures(tmp_path, BUNDLED_SWEEP, BUNDLED_CONFIG)
    assert [p.name for p in paths] == [
        "demo_curves_kept.png",
        "demo_curves_dropped.png",
        "demo_criteria.png",
        "demo_consistency.png",
    ]
    for path in paths:
        committed = DOCS_FIGURES / path.name
        assert committed.is_file(), f"{committed} is missing: run `make figures`"
        assert committed.read_bytes() == path.read_bytes(), f"{committed} is stale: run `make figures`"


def test_pairs_of_metrics_never_share_a_rank_column(ex: explore.Exploration) -> None:
    """Ranks are per (step): every step ranks each run once, 1..n with ties averaged."""
    ranks, _ = explore.run_order(ex, "demoagreement_qaa_cf")
    for _, group in itertools.groupby(ranks.sort("step").iter_rows(named=True), key=lambda r: r["step"]):
        values = sorted(r["rank"] for r in group)
        assert sum(values) == pytest.approx(len(values) * (len(values) + 1) / 2)
