"""The data and figures behind notebooks/training_curves.ipynb, so that the notebook itself holds no logic.

Everything shown comes from the analysis: statistics and decisions from `analysis.pipeline.analyse`
(the same `compute_signal` + `select` + `aggregate` as `finetasks-afr select`), figures from
`analysis.plots`, Kendall's tau from `analysis.signal.kendall_between`. Figures are
returned as matplotlib `Figure` objects (no pyplot state); `figure_png` turns one into PNG bytes for display.
Only `readme_figures` writes files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from analysis.aggregate import AggregateResult
from analysis.config import Config, load_config
from analysis.pipeline import analyse
from analysis.plots import (
    Band,
    consistency_forest_figure,
    figure_png,
    formulation_curves_figure,
    plot_consistency_forest,
    plot_criteria_overview,
    plot_training_curves,
    run_order_figure,
    seed_curves,
    task_criteria_figure,
    training_curves_figure,
)
from analysis.report import consistency_order, format_ci, format_number
from analysis.scores.metrics import metric_info
from analysis.scores.read import read_scores
from analysis.scores.validate import LoadReport, validate
from analysis.select import Selection
from analysis.signal import kendall_between

__all__ = [
    "MODE_ENV",
    "Exploration",
    "consistency_figure",
    "consistency_overview",
    "criteria_figure",
    "criteria_summary",
    "curves_figure",
    "explore",
    "figure_png",
    "focus",
    "formulation_curves",
    "formulation_figure",
    "from_table",
    "interactive",
    "is_live_frontend",
    "languages",
    "ordering_figure",
    "readme_figures",
    "run_order",
    "selection_overview",
    "showcase",
    "siblings",
    "task_criteria",
    "task_row",
    "task_views",
    "tasks",
]

MODE_ENV = "FINETASKS_AFR_NOTEBOOK_MODE"
"""`interactive` or `static` forces the notebook's mode; unset, `is_live_frontend` decides."""

_FORMULATION_ORDER = ("CF", "MCF", "HYBRID", "GEN", "PPL")


@dataclass(frozen=True)
class Exploration:
    """A score table with its statistics, decisions and ranking, as `finetasks-afr select` computes them."""

    table: pl.DataFrame
    load_report: LoadReport
    config: Config
    signal: pl.DataFrame
    selection: Selection
    ranking: AggregateResult | None

    @property
    def decisions(self) -> pl.DataFrame:
        return self.selection.decisions

    @property
    def chosen(self) -> pl.DataFrame:
        """One row per task: the (fewshot, metric) the selection judged it by."""
        return self.decisions.filter(pl.col("chosen"))


def explore(scores: str | Path, config: Config | str | Path | None = None) -> Exploration:
    """Load a score table and run the selection on it, in memory (`config`: a Config, a TOML file, or None for the
    FineTasks defaults). The notebook passes the bundled demo sweep and its own configuration
    (`finetasks_afr.data.bundled`) when it is given no table: the analysis knows no data of the evaluation half."""
    table, report = read_scores(Path(scores))
    return _explored(table, report, config)


def from_table(frame: pl.DataFrame, config: Config | str | Path | None = None, *, source: str = "table") -> Exploration:
    """`explore` for a score table already in memory (validated like a file; `source` names it in errors)."""
    table, report = validate(frame, source=source)
    return _explored(table, report, config)


def _explored(table: pl.DataFrame, report: LoadReport, config: Config | str | Path | None) -> Exploration:
    cfg = config if isinstance(config, Config) else load_config(config)
    result = analyse(table, cfg)
    return Exploration(table, report, cfg, result.signal, result.selection, result.ranking)


# ------------------------------------------------------------------------------------------ choosing


def languages(ex: Exploration) -> list[str]:
    return sorted(ex.chosen.get_column("language").unique().to_list())


def tasks(ex: Exploration, language: str) -> list[str]:
    """The language's tasks, alphabetical. Raises ValueError naming the known languages."""
    rows = ex.chosen.filter(pl.col("language") == language)
    if rows.is_empty():
        raise ValueError(f"language {language!r} is not in the score table; languages: {languages(ex)}")
    return sorted(rows.get_column("task").to_list())


def task_row(ex: Exploration, task: str) -> dict[str, Any]:
    """The task's chosen decision row (its fewshot, metric, statistics, kept, reason)."""
    rows = ex.chosen.filter(pl.col("task") == task)
    if rows.is_empty():
        known = sorted(ex.chosen.get_column("task").to_list())
        more = " ..." if len(known) > 20 else ""
        raise ValueError(f"task {task!r} is not in the score table; tasks: {known[:20]}{more}")
    return rows.row(0, named=True)


def focus(ex: Exploration, language: str | None = None, task: str | None = None) -> tuple[str, str]:
    """The (language, task) to show: the given ones, checked, or by default the kept task with the
    best margin (in `language` when given), else the language's first task. Accuracy tasks come before
    perplexity ones (they have the metric variants and the CF/MCF twin the views compare)."""
    if task is not None:
        row = task_row(ex, task)
        if language is not None and row["language"] != language:
            raise ValueError(f"task {task!r} is in language {row['language']!r}, not {language!r}")
        return row["language"], task
    candidates = ex.chosen if language is None else ex.chosen.filter(pl.col("language") == language)
    if candidates.is_empty():
        tasks(ex, str(language))  # raises, naming the languages
    kept = (
        candidates.filter(pl.col("kept"))
        .with_columns(_is_ppl=pl.col("formulation") == "PPL")
        .sort(["_is_ppl", "margin", "task"], descending=[False, True, False])
    )
    best = kept.row(0, named=True) if kept.height else candidates.sort(["language", "task"]).row(0, named=True)
    return best["language"], best["task"]


def showcase(ex: Exploration, language: str, task: str, n: int = 2) -> list[tuple[str, str]]:
    """A few other (language, task) pairs worth a static look: the language's most clearly dropped task
    of the same formulation, then the best kept task of each other language; at most `n`."""
    row = task_row(ex, task)
    same = ex.chosen.filter(
        (pl.col("language") == language) & (pl.col("task") != task) & (pl.col("formulation") == row["formulation"])
    )
    picks: list[tuple[str, str]] = []
    dropped = same.filter(~pl.col("kept")).sort(["margin", "task"])
    if dropped.height:
        picks.append((language, dropped.row(0, named=True)["task"]))
    for other in languages(ex):
        if other != language:
            picks.append(focus(ex, other))
    return picks[:n]


def selection_overview(ex: Exploration) -> pl.DataFrame:
    """One row per task: language, formulation, chosen metric, kept, margin, ordering consistency with its
    95% CI bounds (null when not measurable: `consistency_overview` says why), decision accuracy and the
    selection's reason."""
    return ex.chosen.select(
        "language", "task", "formulation", "category", "fewshot", "metric", "kept", "margin",
        "consistency", "consistency_ci_low", "consistency_ci_high", "decision_accuracy", "reason",
    ).sort(["language", "kept", "task"], descending=[False, True, False])  # fmt: skip


CONSISTENCY_COLUMNS = (
    "language", "task", "formulation", "metric", "kept", "consistency", "consistency_ci_low",
    "consistency_ci_high", "consistency_n_pairs", "decision_accuracy", "consistency_reason", "decision_reason",
)  # fmt: skip


def consistency_overview(ex: Exploration, language: str | None = None) -> pl.DataFrame:
    """Ordering consistency of every task (kept and dropped) on its chosen metric, as the report lists it.

    Columns: language, task, formulation, metric, kept, consistency (mean Kendall tau between consecutive
    checkpoints), consistency_ci_low/high (95% bootstrap interval), consistency_n_pairs (the step pairs
    averaged), decision_accuracy, and consistency_reason / decision_reason (why a value is null, e.g.
    "consistency: needs >= 3 runs"). Per language, highest consistency first, not measurable last.
    """
    rows = ex.chosen if language is None else ex.chosen.filter(pl.col("language") == language)
    if language is not None and rows.is_empty():
        tasks(ex, language)  # raises, naming the languages
    columns = [c for c in CONSISTENCY_COLUMNS if c in rows.columns]
    return consistency_order(rows.select(columns)).sort("language", maintain_order=True)


def consistency_figure(ex: Exploration, language: str | None = None) -> Figure:
    """Forest plot of `consistency_overview`: each task's consistency with its 95% CI, kept green dots,
    dropped red crosses, reasons where it is not measurable (what the report draws per language)."""
    rows = consistency_overview(ex, language)
    n_kept = rows.filter(pl.col("kept")).height
    where = language if language is not None else "all languages"
    title = f"{where}: ordering consistency per task, 95% CI ({n_kept} of {rows.height} tasks kept)"
    return consistency_forest_figure(rows, title=title)


# ------------------------------------------------------------------------------------------ one task


def curves_figure(ex: Exploration, task: str, band: Band = "minmax", x: str = "tokens") -> Figure:
    """Score against tokens for every run and metric variant, seed bands, random baseline; the chosen
    metric's panel is marked "(selected)"."""
    row = task_row(ex, task)
    return training_curves_figure(
        ex.table, task, row["fewshot"], highlight_metric=row["metric"], x=x, band=band, ddof=ex.config.snr.ddof
    )


_CRITERIA: tuple[tuple[str, str, str, str | None, str | None], ...] = (
    # name, value column, label, threshold column, pass column
    ("monotonicity", "monotonicity", "monotonicity (mean Spearman ρ)", "monotonicity_min", "monotonicity_pass"),
    ("snr", "snr", "SNR", "snr_min", "snr_pass"),
    ("non_random", "non_random_sigmas", "sigmas above random", "sigma_min", "non_random_pass"),
    ("consistency", "consistency", "ordering consistency (Kendall τ)", None, "consistency_pass"),
    ("decision_accuracy", "decision_accuracy", "decision accuracy", None, None),
)


def task_criteria(ex: Exploration, task: str) -> pl.DataFrame:
    """The FineTasks criteria of every metric of the task (at its chosen few-shot setting), long format.

    Columns: criterion, label, metric, value, ci_low, ci_high, threshold, passed (null: not measurable
    or not thresholded), required (by `selection.require`), chosen, kept. Values are the decisions'
    (`analysis.select`), not recomputed.
    """
    row = task_row(ex, task)
    rows = ex.decisions.filter((pl.col("task") == task) & (pl.col("fewshot") == row["fewshot"]))
    required = set(ex.config.selection.require)
    exempt = row["formulation"] in ex.config.snr.exempt_formulations
    parts = []
    for name, column, label, threshold, passed in _CRITERIA:
        if column not in rows.columns:
            continue
        if name == "snr":
            label = "SNR (exempt: " + row["formulation"] + ")" if exempt else f"SNR ({row.get('snr_kind') or 'seed'})"
        has_ci = f"{column}_ci_low" in rows.columns
        parts.append(
            rows.select(
                pl.lit(name).alias("criterion"),
                pl.lit(label).alias("label"),
                "metric",
                pl.col(column).cast(pl.Float64).alias("value"),
                (pl.col(f"{column}_ci_low") if has_ci else pl.lit(None)).cast(pl.Float64).alias("ci_low"),
                (pl.col(f"{column}_ci_high") if has_ci else pl.lit(None)).cast(pl.Float64).alias("ci_high"),
                (pl.col(threshold) if threshold in rows.columns else pl.lit(None)).cast(pl.Float64).alias("threshold"),
                (pl.col(passed) if passed in rows.columns else pl.lit(None)).cast(pl.Boolean).alias("passed"),
                pl.lit(name in required).alias("required"),
                "chosen",
                "kept",
            )
        )
    return pl.concat(parts)


def criteria_summary(ex: Exploration, task: str) -> pl.DataFrame:
    """The task's metrics side by side as the report shows them: values with [95% CI], margin, reason."""
    row = task_row(ex, task)
    rows = ex.decisions.filter((pl.col("task") == task) & (pl.col("fewshot") == row["fewshot"]))
    return pl.DataFrame(
        [
            {
                "metric": r["metric"],
                "chosen": r["chosen"],
                "kept": r["kept"],
                "monotonicity [CI]": format_ci(r, "monotonicity"),
                "SNR [CI]": format_ci(r, "snr", 1),
                "sigmas above random": format_number(r.get("non_random_sigmas"), 1),
                "consistency [CI]": format_ci(r, "consistency"),
                "decision accuracy": format_number(r.get("decision_accuracy")),
                "margin": format_number(r.get("margin")),
                "reason": r["reason"],
            }
            for r in rows.sort("metric").iter_rows(named=True)
        ]
    )


def criteria_figure(ex: Exploration, task: str) -> Figure:
    row = task_row(ex, task)
    verdict = "kept" if row["kept"] else "dropped"
    title = f"{task} ({row['fewshot']}-shot): {verdict} with {row['metric']}"
    return task_criteria_figure(task_criteria(ex, task), title=title)


def siblings(ex: Exploration, task: str) -> dict[str, str]:
    """{formulation: task} of the task's benchmark and language (CF, MCF, hybrid... of the same data)."""
    row = task_row(ex, task)
    same = ex.chosen.filter((pl.col("benchmark") == row["benchmark"]) & (pl.col("language") == row["language"]))
    found = dict(same.select("formulation", "task").sort("task").iter_rows())

    def order(formulation: str) -> tuple[int, str]:
        known = formulation in _FORMULATION_ORDER
        return (_FORMULATION_ORDER.index(formulation) if known else len(_FORMULATION_ORDER), formulation)

    return {f: found[f] for f in sorted(found, key=order)}


def formulation_curves(ex: Exploration, task: str, band: Band = "minmax") -> pl.DataFrame:
    """Seed curves of each formulation of the task's benchmark and language, each on its chosen metric."""
    parts = []
    for formulation, name in siblings(ex, task).items():
        row = task_row(ex, name)
        verdict = "kept" if row["kept"] else "dropped"
        rows = ex.table.filter(
            (pl.col("task") == name)
            & (pl.col("fewshot") == row["fewshot"])
            & (pl.col("metric") == row["metric"])
            & pl.col("score").is_finite()
        )
        curves = seed_curves(rows, (), band=band, ddof=ex.config.snr.ddof)
        parts.append(
            curves.with_columns(
                pl.lit(f"{formulation}: {name} · {row['metric']} · {verdict}").alias("series"),
                pl.lit(formulation).alias("formulation"),
                pl.lit(row["random_baseline"], dtype=pl.Float64).alias("baseline"),
            )
        )
    return pl.concat(parts)


def formulation_figure(ex: Exploration, task: str, band: Band = "minmax") -> Figure | None:
    """CF against MCF (and other formulations) of the task's benchmark and language, one panel per run;
    None when the task has no other formulation in the table."""
    found = siblings(ex, task)
    if len(found) < 2:
        return None
    row = task_row(ex, task)
    title = f"{row['benchmark']} in {row['language']}: " + " against ".join(found) + " (each on its chosen metric)"
    return formulation_curves_figure(formulation_curves(ex, task, band), title=title, band=band)


def run_order(ex: Exploration, task: str, metric: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """How the runs are ordered over training on the task (default: its chosen metric).

    Returns (ranks, taus): ranks has run, step, tokens, mean (the seed mean) and rank (1 = best, ties
    averaged, respecting the metric's direction); taus has, per pair of consecutive checkpoints, step and
    tokens of the later one, previous_step, tau (Kendall's tau of `consistency.variant` between the runs'
    seed means, by `analysis.signal.kendall_between`; null when undefined) and n_runs.
    """
    row = task_row(ex, task)
    metric = metric or row["metric"]
    rows = ex.table.filter(
        (pl.col("task") == task)
        & (pl.col("fewshot") == row["fewshot"])
        & (pl.col("metric") == metric)
        & pl.col("score").is_finite()
    )
    if rows.is_empty():
        raise ValueError(f"task {task!r} has no score for metric {metric!r}")
    info = metric_info(metric)
    sign = -1.0 if info is not None and not info.higher_is_better else 1.0
    curves = seed_curves(rows, ()).select("run", "step", "tokens", "mean")
    ranks = curves.with_columns(
        (pl.col("mean") * -sign).rank("average").over("step").alias("rank"),
    ).sort("step", "run")
    steps = sorted(curves.get_column("step").unique().to_list())
    runs = sorted(curves.get_column("run").unique().to_list())
    grid = np.full((len(steps), len(runs)), np.nan)
    step_index = {s: i for i, s in enumerate(steps)}
    run_index = {r: i for i, r in enumerate(runs)}
    for run, step, mean in curves.select("run", "step", "mean").iter_rows():
        grid[step_index[step], run_index[run]] = mean
    tau, n = kendall_between(grid[:-1], grid[1:], ex.config.consistency.variant)
    # runs share one x position per step: the mean of their (seed-mean) token counts, docs/statistics.md
    tokens = dict(curves.group_by("step").agg(pl.col("tokens").mean()).iter_rows())
    taus = pl.DataFrame(
        {
            "step": steps[1:],
            "tokens": [tokens[s] for s in steps[1:]],
            "previous_step": steps[:-1],
            "tau": tau,
            "n_runs": n.astype(np.int64),
        },
        schema={
            "step": pl.Int64,
            "tokens": pl.Float64,
            "previous_step": pl.Int64,
            "tau": pl.Float64,
            "n_runs": pl.Int64,
        },
    ).with_columns(pl.col("tau").fill_nan(None))
    return ranks, taus


def ordering_figure(ex: Exploration, task: str, metric: str | None = None) -> Figure:
    """Rank of each run per checkpoint and Kendall's tau between consecutive checkpoints; the shaded
    window is where the consistency criterion averages (past `consistency.min_tokens`)."""
    row = task_row(ex, task)
    metric = metric or row["metric"]
    ranks, taus = run_order(ex, task, metric)
    decision = ex.decisions.filter(
        (pl.col("task") == task) & (pl.col("fewshot") == row["fewshot"]) & (pl.col("metric") == metric)
    ).row(0, named=True)
    cfg = ex.config.consistency
    has_tokens = ranks.get_column("tokens").null_count() == 0
    window = float(cfg.min_tokens) if has_tokens else (float(cfg.min_step) if cfg.min_step is not None else None)
    consistency = "consistency " + format_ci(decision, "consistency")
    if decision.get("consistency") is None:  # say why ("consistency: needs >= 3 runs"), from the signal
        reasons = ex.signal.filter(
            (pl.col("task") == task) & (pl.col("fewshot") == row["fewshot"]) & (pl.col("metric") == metric)
        )
        if "consistency_reason" in reasons.columns and reasons.height:
            consistency = reasons.row(0, named=True)["consistency_reason"] or consistency
    title = f"{task} · {metric}: {consistency}; decision accuracy {format_number(decision.get('decision_accuracy'))}"
    return run_order_figure(ranks, taus, title=title, x="tokens" if has_tokens else "step", window_start=window)


def task_views(ex: Exploration, task: str, band: Band = "minmax") -> dict[str, Figure | None]:
    """Every figure of one task, by name: curves, criteria, formulations (None without a sibling), ordering."""
    return {
        "curves": curves_figure(ex, task, band),
        "criteria": criteria_figure(ex, task),
        "formulations": formulation_figure(ex, task, band),
        "ordering": ordering_figure(ex, task),
    }


# ---------------------------------------------------------------------------------------- notebooks


def is_live_frontend() -> bool:
    """True when a person runs the notebook in a frontend (JupyterLab, Notebook, VS Code): show widgets.

    False in plain Python, terminal IPython and headless execution (nbclient, `jupyter nbconvert
    --execute`, papermill). The kernel alone cannot tell (headless runs use the same ipykernel), but the
    execute request can: headless executors send `allow_stdin=False` (no one could answer `input()`),
    live frontends allow stdin. `FINETASKS_AFR_NOTEBOOK_MODE=interactive|static` overrides the guess.
    """
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode in ("interactive", "static"):
        return mode == "interactive"
    if mode:
        raise ValueError(f"{MODE_ENV}={mode!r}: use 'interactive', 'static', or leave it unset")
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return False
    try:
        parent = kernel.get_parent()
    except Exception:  # an older or unusual kernel: show static figures, which work everywhere
        return False
    return bool((parent or {}).get("content", {}).get("allow_stdin", False))


def interactive(ex: Exploration, language: str | None = None, task: str | None = None, band: Band = "minmax") -> Any:
    """An ipywidgets panel: pick language, task and seed band; every view of `task_views` redraws.

    Figures are `ipywidgets.Image` values (PNG bytes), so the panel needs no pyplot and no Output capture.
    """
    import ipywidgets as widgets

    language, task = focus(ex, language, task)
    pick_language = widgets.Dropdown(options=languages(ex), value=language, description="language")
    pick_task = widgets.Dropdown(options=tasks(ex, language), value=task, description="task")
    pick_band = widgets.ToggleButtons(
        options=[("seed min..max", "minmax"), ("seed mean ± 1 sd", "sd")], value=band, description="band"
    )
    summary = widgets.HTML()
    images = {name: widgets.Image(format="png") for name in ("curves", "criteria", "formulations", "ordering")}

    def render(_change: object = None) -> None:
        current = pick_task.value
        if current is None:
            return
        row = task_row(ex, current)
        summary.value = f"<b>{'kept' if row['kept'] else 'dropped'}</b>: " + criteria_summary(ex, current)._repr_html_()
        for name, figure in task_views(ex, current, pick_band.value).items():
            images[name].value = figure_png(figure) if figure is not None else b""
            images[name].layout.display = "none" if figure is None else None

    def change_language(change: dict[str, Any]) -> None:
        options = tasks(ex, change["new"])
        pick_task.unobserve(render, names="value")
        pick_task.options = options
        pick_task.value = focus(ex, change["new"])[1]
        pick_task.observe(render, names="value")
        render()

    pick_language.observe(change_language, names="value")
    pick_task.observe(render, names="value")
    pick_band.observe(render, names="value")
    render()
    return widgets.VBox([widgets.HBox([pick_language, pick_task]), pick_band, summary, *images.values()])


# ------------------------------------------------------------------------------------- README figures


def readme_figures(out_dir: Path, scores: str | Path, config: Config | str | Path | None = None) -> list[Path]:
    """The README's demo figures, from the analysis's own plotting (`make figures`).

    In the language whose best kept task has the largest margin: that task's training curves
    (`demo_curves_kept.png`), the most clearly dropped task of the same formulation
    (`demo_curves_dropped.png`), the language's criteria overview (`demo_criteria.png`) and the ordering
    consistency of its every task with its interval (`demo_consistency.png`).
    """
    ex = explore(scores, config)
    ranked = ex.chosen.filter(pl.col("kept")).sort(["margin", "task"], descending=[True, False])
    for language, kept in ranked.select("language", "task").iter_rows():
        dropped = showcase(ex, language, kept, n=1)
        if dropped and dropped[0][0] == language:
            break
    else:
        raise ValueError("no kept task has a dropped task of the same language and formulation to show beside it")
    paths = []
    for name, task in (("demo_curves_kept.png", kept), ("demo_curves_dropped.png", dropped[0][1])):
        row = task_row(ex, task)
        paths.append(
            plot_training_curves(ex.table, task, row["fewshot"], Path(out_dir) / name, highlight_metric=row["metric"])
        )
    paths.append(
        plot_criteria_overview(
            ex.decisions,
            language,
            Path(out_dir) / "demo_criteria.png",
            monotonicity_min=ex.config.monotonicity.min,
            snr_min=ex.config.snr.min,
            separation_alpha=ex.config.separation.alpha,
        )
    )
    paths.append(plot_consistency_forest(ex.decisions, language, Path(out_dir) / "demo_consistency.png"))
    return paths
