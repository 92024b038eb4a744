"""Score table -> signal -> selection -> ranking -> figures -> report, written into one directory."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.aggregate import AggregateResult, aggregate, write_ranking
from analysis.config import Config
from analysis.io import atomic_write_text, write_csv_atomic
from analysis.plots import plot_consistency_forest, plot_criteria_overview, plot_ranking, plot_training_curves
from analysis.report import render_report, write_html_report
from analysis.select import Selection, select, write_selection
from analysis.signal import compute_signal
from analysis.table import LoadReport

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass
class SelectionOutput:
    """What `run_selection` produced, for the CLI's summary and for tests."""

    selection: Selection
    signal: pl.DataFrame
    ranking: AggregateResult | None
    out_dir: Path
    figures: dict[str, Path]
    html: dict[str, Path] = field(default_factory=dict)  # "index" and each language -> its HTML page


@dataclass
class Analysis:
    """Statistics, decisions and ranking of a score table, computed in memory (nothing written)."""

    signal: pl.DataFrame
    selection: Selection
    ranking: AggregateResult | None


def selected_metrics(selection: Selection) -> pl.DataFrame:
    """(task, fewshot, metric) of the kept tasks: what the multilingual score averages."""
    return selection.kept.select("task", "fewshot", "metric")


def run_selection(
    table: pl.DataFrame,
    load_report: LoadReport,
    config: Config,
    out_dir: Path,
    *,
    figures: bool = True,
    progress: Progress | None = None,
) -> SelectionOutput:
    """Run the whole analysis and write decisions.csv, suites/, ranking.csv, figures/, report.md and the
    HTML report (report.html and one report_<language>.html per language)."""
    result = analyse(table, config)
    selection, ranking = result.selection, result.ranking
    write_selection(selection, out_dir)
    if ranking is not None:
        write_ranking(ranking, out_dir)
    figure_paths = _figures(table, selection, ranking, config, out_dir, progress) if figures else {}
    report = render_report(selection, config, load_report, ranking, figure_paths, out_dir)
    atomic_write_text(out_dir / "report.md", report)
    html = write_html_report(selection, config, load_report, ranking, figure_paths, out_dir)
    return SelectionOutput(selection, result.signal, ranking, out_dir, figure_paths, html)


def analyse(table: pl.DataFrame, config: Config) -> Analysis:
    """Signal, selection and (when a task is kept) the multilingual ranking: what `run_selection` writes,
    for callers that only want the numbers (the notebook helpers of `analysis.explore`)."""
    signal = compute_signal(table, config)
    selection = select(signal, config)
    ranking = aggregate(table, selected_metrics(selection), config.aggregate) if selection.kept.height else None
    return Analysis(signal, selection, ranking)


def run_aggregate(
    table: pl.DataFrame, config: Config, out_dir: Path, decisions: pl.DataFrame | None = None
) -> AggregateResult:
    """Rank runs on the kept tasks of `decisions` (or of a fresh selection with `config`)."""
    if decisions is None:
        chosen = selected_metrics(select(compute_signal(table, config, with_ci=False), config))
    else:
        chosen = decisions.filter(pl.col("kept")).select("task", "fewshot", "metric")
    result = aggregate(table, chosen, config.aggregate)
    write_ranking(result, out_dir)
    write_csv_atomic(chosen, out_dir / "aggregated_tasks.csv")
    return result


def _figures(
    table: pl.DataFrame,
    selection: Selection,
    ranking: AggregateResult | None,
    config: Config,
    out_dir: Path,
    progress: Progress | None,
    workers: int | None = None,
) -> dict[str, Path]:
    """All figures; the per-task curves (most of the time: matplotlib layout) are drawn in worker processes."""
    figures_dir = out_dir / "figures"
    chosen = selection.decisions.filter(pl.col("chosen")).sort(["language", "task"])
    languages = sorted(chosen.get_column("language").unique().to_list())
    total = chosen.height + 2 * len(languages) + (1 if ranking is not None else 0)
    jobs = [
        (
            table.filter((pl.col("task") == row["task"]) & (pl.col("fewshot") == row["fewshot"])),
            row["task"],
            row["fewshot"],
            figures_dir / "curves" / f"{row['task']}.png",
            row["metric"],
        )
        for row in chosen.iter_rows(named=True)
    ]
    paths: dict[str, Path] = {}
    done = 0
    workers = workers or min(4, os.cpu_count() or 1)
    with ExitStack() as stack:
        if workers > 1 and len(jobs) > 4:
            pool = stack.enter_context(ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")))
            results = pool.map(_curve_job, jobs)
        else:
            results = map(_curve_job, jobs)
        for (_, task, *_rest), path in zip(jobs, results, strict=True):
            paths[f"curves_{task}"] = path
            done += 1
            if progress:
                progress("figures", done, total)
    for language in languages:
        paths[f"criteria_{language}"] = plot_criteria_overview(
            selection.decisions,
            language,
            figures_dir / f"criteria_{language}.png",
            monotonicity_min=config.monotonicity.min,
            snr_min=config.snr.min,
        )
        paths[f"consistency_{language}"] = plot_consistency_forest(
            selection.decisions, language, figures_dir / f"consistency_{language}.png"
        )
        done += 2
        if progress:
            progress("figures", done, total)
    if ranking is not None:
        paths["ranking"] = plot_ranking(ranking.ranking, figures_dir / "ranking.png")
        if progress:
            progress("figures", total, total)
    return paths


def _curve_job(job: tuple[pl.DataFrame, str, int, Path, str]) -> Path:
    rows, task, fewshot, path, metric = job
    return plot_training_curves(rows, task, fewshot, path, highlight_metric=metric)
