"""Score table -> signal -> selection -> ranking -> figures -> report, written into one directory.

The directory is replaced whole (built aside, swapped in), every path from the data goes through
`safe_file_name` and is checked to stay inside it, and figure workers die with a killed parent.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Collection, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.aggregate import AggregateError, AggregateResult, aggregate, rankable, write_ranking
from analysis.base.io import (
    OUTPUT_MARKER,
    OutputDirectoryError,
    atomic_write_text,
    older_analysis_output,
    output_lock,
    staged_directory,
    write_csv_atomic,
)
from analysis.base.processes import die_with_parent, starting_children
from analysis.config import Config
from analysis.english_gap import ENGLISH, EnglishGap, combine_gaps, display_rows, english_gap, write_english_gap
from analysis.plots import (
    plot_consistency_forest,
    plot_criteria_overview,
    plot_english_gap,
    plot_ranking,
    plot_training_curves,
)
from analysis.report import render_report, write_html_report
from analysis.scores.schema import SCHEMA
from analysis.scores.stream import DEFAULT_PARTITION_ROWS, ScoreScan
from analysis.scores.validate import LoadReport
from analysis.select import Selection, safe_file_name, select, write_selection
from analysis.signal import compute_signal
from analysis.streaming import Progress, analyse_scan, rank_scan


@dataclass
class SelectionOutput:
    """What `run_selection` produced, for the CLI's summary and for tests."""

    selection: Selection
    signal: pl.DataFrame
    ranking: AggregateResult | None
    out_dir: Path
    figures: dict[str, Path]
    html: dict[str, Path] = field(default_factory=dict)  # "index" and each language -> its HTML page
    written: list[Path] = field(default_factory=list)  # every file written, under out_dir
    load_report: LoadReport | None = None  # what validating the table found (streamed: known only at the end)


@dataclass
class Analysis:
    """Statistics, decisions and ranking of a score table, computed in memory (nothing written)."""

    signal: pl.DataFrame
    selection: Selection
    ranking: AggregateResult | None
    english_gap: EnglishGap | None = None  # None: not computed (an empty EnglishGap: nothing pairs)


def selected_metrics(selection: Selection) -> pl.DataFrame:
    """(task, fewshot, metric) of the kept tasks: what the multilingual score averages."""
    return selection.kept.select("task", "fewshot", "metric")


def run_selection(
    scan: ScoreScan,
    config: Config,
    out_dir: Path,
    *,
    figures: bool = True,
    progress: Progress | None = None,
    workers: int = 1,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
) -> SelectionOutput:
    """Run the whole analysis of a score table, streamed some whole tasks at a time (`analysis.streaming`), and
    write decisions.csv, suites/, ranking.csv, english_gap.csv and its summary (when the table has English
    counterparts of its tasks), figures/, report.md and the HTML report (report.html and one
    report_<language>.html per language). Nothing holds the whole table: the gap to English reads the tasks of
    benchmarks with an English task, each figure the rows of its task.

    The directory is built aside and swapped in whole (`analysis.base.io.staged_directory`): a rerun never leaves
    the suites or ranking of an older table beside new decisions, and a killed run leaves the previous output
    as it was. The returned paths are the final ones under `out_dir`.
    """
    out_dir = Path(out_dir)
    with output_directory(out_dir, "select") as staging:
        streamed = analyse_scan(
            scan, config, with_ci=True, partition_rows=partition_rows, workers=workers, progress=progress
        )
        notes = (consistency_window_note(pl.scan_parquet(scan.path), config), sampled_scores_note(scan))
        if streamed.load_report is not None:
            streamed.load_report.notes += [note for note in notes if note is not None]
        result = Analysis(streamed.signal, streamed.selection, streamed.ranking, english_gap_of_scan(scan, config))
        written, figure_paths, html = _write_selection(
            scan, streamed.load_report, config, result, staging, figures, progress, workers
        )
        check_inside(staging, written)

    def final(path: Path) -> Path:
        return out_dir / path.relative_to(staging)

    return SelectionOutput(
        result.selection,
        result.signal,
        result.ranking,
        out_dir,
        {key: final(path) for key, path in figure_paths.items()},
        {key: final(path) for key, path in html.items()},
        [final(path) for path in written],
        streamed.load_report,
    )


NOTHING_KEPT = (
    "the selection keeps no task of this table, so there is nothing to rank the runs on. `finetasks-afr select` "
    "writes each task's reason (report.md, decisions.csv). To rank anyway: relax the criteria that fail with a "
    "--config file (for a small ablation usually [consistency] min_tokens and [snr] min), or choose the tasks "
    "yourself: a decisions CSV (task,fewshot,metric,kept) with kept=true on them, passed as --decisions"
)


def consistency_window_note(table: pl.LazyFrame, config: Config) -> str | None:
    """What to change when the consistency window begins past the table's last checkpoint (a small ablation under
    FineTasks' 15B tokens), or None when it does not. The proposed value is half of the largest token count: the
    second half of training, as FineTasks' 15B is the second half of its 30B-token runs."""
    cfg = config.consistency
    if cfg.min_step is not None or cfg.min_tokens <= 0:
        return None
    largest = table.select(pl.col("tokens").max()).collect().item()
    if largest is None or largest > cfg.min_tokens:
        return None
    half = int(largest) // 2
    return (
        f"consistency: its window begins past {cfg.min_tokens:,} tokens ([consistency] min_tokens), but the "
        f"table's last checkpoint has {int(largest):,} tokens, so no task's consistency can be measured. For a "
        f"run this small, measure it over the second half of training as FineTasks does (15B of 30B): a --config "
        f"file with [consistency] min_tokens = {half:_}"
    )


def sampled_scores_note(scan: ScoreScan, tasks: Collection[str] | None = None) -> str | None:
    """What the user must know when scores of the table (or of `tasks`) were computed on a sample of their task's
    documents (the table's `sampled_documents`: lighteval --max-samples, lm-eval --limit), or None when none was.
    A sample's score is another, noisier estimate: its SNR, consistency and ranking describe the sample."""
    table = pl.scan_parquet(scan.path)
    if "sampled_documents" not in table.collect_schema().names():
        return None
    if tasks is not None:
        table = table.filter(pl.col("task").is_in(list(tasks)))
    sampled = (
        table.filter(pl.col("sampled_documents").is_not_null())
        .group_by("task")
        .agg(pl.col("sampled_documents").max())
        .sort("task")
        .collect()
    )
    if sampled.is_empty():
        return None
    counts = sampled.get_column("sampled_documents")
    low, high = int(counts.min()), int(counts.max())  # type: ignore[arg-type]
    span = f"{low:,}" if low == high else f"{low:,} to {high:,}"
    examples = ", ".join(f"{task} ({n:,})" for task, n in sampled.head(3).iter_rows())
    return (
        f"sampled scores: {sampled.height} task(s) were scored on a sample of their documents ({span} documents: "
        f"lighteval --max-samples or lm-eval --limit; decisions.csv column sampled_documents), e.g. {examples}. "
        "A score on a sample is another, noisier estimate than the whole task's: its statistics and ranking "
        "describe the sample. Evaluate without the cap before publishing suites or rankings from these scores"
    )


def english_gap_of_scan(scan: ScoreScan, config: Config) -> EnglishGap:
    """`english_gap` of a streamed table, one benchmark at a time: a task pairs only with an English task of its
    own benchmark, so only benchmarks that have an English task are read, each alone (its tasks' rows), and the
    per-benchmark gaps combine into the table's (`combine_gaps`)."""
    index = scan.index
    benchmarks = index.filter(pl.col("language") == ENGLISH).get_column("benchmark").unique().sort().to_list()
    parts = [
        english_gap(scan.read_tasks(index.filter(pl.col("benchmark") == name).get_column("task").to_list()), config)
        for name in benchmarks
    ]
    return combine_gaps(parts) if parts else english_gap(pl.DataFrame(schema=SCHEMA), config)


def _write_selection(
    scan: ScoreScan,
    load_report: LoadReport,
    config: Config,
    result: Analysis,
    out_dir: Path,
    figures: bool,
    progress: Progress | None,
    workers: int,
) -> tuple[list[Path], dict[str, Path], dict[str, Path]]:
    """Every file of a selection output into `out_dir` (the staging directory): (all paths, figures, pages)."""
    selection, ranking = result.selection, result.ranking
    gap = result.english_gap if result.english_gap is not None else english_gap(pl.DataFrame(schema=SCHEMA), config)
    written = write_selection(selection, out_dir)
    if ranking is not None:
        written += [write_ranking(ranking, out_dir), out_dir / "language_scores.csv", out_dir / "language_pairs.csv"]
    written += write_english_gap(gap, out_dir)
    figure_paths = _figures(scan, selection, ranking, config, out_dir, progress, workers) if figures else {}
    if figures:
        figure_paths.update(_gap_figures(gap, selection, out_dir))
    report = render_report(selection, config, load_report, ranking, figure_paths, out_dir, english_gap=gap)
    written.append(atomic_write_text(out_dir / "report.md", report))
    html = write_html_report(selection, config, load_report, ranking, figure_paths, out_dir, english_gap=gap)
    written += [*figure_paths.values(), *html.values()]
    return written, figure_paths, html


def analyse(table: pl.DataFrame, config: Config) -> Analysis:
    """Signal, selection and (when a task is kept) the multilingual ranking: what `run_selection` writes,
    for callers that only want the numbers (the notebook helpers of `analysis.explore`)."""
    signal = compute_signal(table, config)
    selection = select(signal, config)
    return Analysis(signal, selection, _ranking(table, selection, config), english_gap(table, config))


def _ranking(table: pl.DataFrame, selection: Selection, config: Config) -> AggregateResult | None:
    """The multilingual ranking, or None when no kept task can enter it (none is kept, or every kept metric's
    direction is unknown). The report then says there is no ranking; before, `select` stopped with a traceback."""
    chosen = selected_metrics(selection)
    return aggregate(table, chosen, config.aggregate, bootstrap=config.bootstrap) if rankable(chosen) else None


def run_aggregate(
    scan: ScoreScan,
    config: Config,
    out_dir: Path,
    decisions: pl.DataFrame | None = None,
    *,
    workers: int = 1,
    partition_rows: int = DEFAULT_PARTITION_ROWS,
) -> AggregateResult:
    """Rank runs on the kept tasks of `decisions` (or of a fresh selection with `config`), streamed.

    ranking.csv, language_scores.csv and aggregated_tasks.csv are built aside and swapped in whole, like
    `run_selection`'s output: a failed or killed run leaves the previous ranking untouched.
    """
    with output_directory(Path(out_dir), "aggregate") as staging:
        result: AggregateResult | None = None
        if decisions is None:
            streamed = analyse_scan(scan, config, with_ci=False, partition_rows=partition_rows, workers=workers)
            chosen = selected_metrics(streamed.selection)
            result = streamed.ranking  # the ranking of the kept tasks when one can rank; else aggregate's error
        else:
            chosen = decisions.filter(pl.col("kept")).select("task", "fewshot", "metric")
        if result is None:
            if chosen.is_empty():
                raise AggregateError(NOTHING_KEPT)
            result, _ = rank_scan(scan, chosen, config, partition_rows=partition_rows, workers=workers)
        sampled = sampled_scores_note(scan, chosen.get_column("task").to_list())
        if sampled is not None:
            result.notes.append(sampled)
        written = [write_ranking(result, staging), staging / "language_scores.csv", staging / "language_pairs.csv"]
        written.append(write_csv_atomic(chosen, staging / "aggregated_tasks.csv"))
        check_inside(staging, written)
    return result


def _gap_figures(gap: EnglishGap, selection: Selection, out_dir: Path) -> dict[str, Path]:
    """One gap-to-English figure per benchmark with English counterparts (`figures/english_gap_<benchmark>.png`)."""
    shown = display_rows(gap, selection.decisions)
    if shown.is_empty():
        return {}
    return {
        f"english_gap_{benchmark}": plot_english_gap(
            shown, gap.gaps, benchmark, out_dir / "figures" / f"english_gap_{safe_file_name(benchmark)}.png"
        )
        for benchmark in sorted(shown.get_column("benchmark").unique().to_list())
    }


# Names an analysis output directory holds: one of them, made before the marker file existed, is adopted.


@contextmanager
def output_directory(out_dir: Path, command: str) -> Iterator[Path]:
    """`staged_directory(out_dir)` for `command` (its marker names it), accepting an output of an older
    finetasks-afr (made before the marker; its owner is told by its files, `analysis.base.io.LEGACY_OUTPUTS`).

    A directory holding `decisions.csv` or `ranking.csv` and otherwise only names `select` or `aggregate`
    write is such an output (a resumed demo has one): it gets the marker and is replaced whole like any other.
    Any other non-empty directory is refused by `staged_directory` with `OutputDirectoryError`. The adoption too
    happens under the output's lock (`output_lock`, which `staged_directory` re-enters): a second writer waits.
    """
    with output_lock(out_dir):
        if older_analysis_output(out_dir):
            (out_dir / OUTPUT_MARKER).write_text("adopted by finetasks-afr: an older analysis output\n")
        with staged_directory(out_dir, command=command) as staging:
            yield staging


def check_inside(root: Path, paths: list[Path]) -> None:
    """Refuse (before the swap) any written path that resolves outside `root`, or two outputs on one file.

    `safe_file_name` makes both impossible for names from the data; this is the last guard, so a future path
    built without it fails here instead of writing beside the user's files.
    """
    base = root.resolve()
    resolved = [Path(path).resolve() for path in paths]
    outside = [str(path) for path, real in zip(paths, resolved, strict=True) if not real.is_relative_to(base)]
    if outside:
        raise OutputDirectoryError(f"output path(s) {', '.join(outside)} resolve outside {root}; nothing was written")
    if len(set(resolved)) != len(resolved):
        twice = sorted({str(p) for p in resolved if resolved.count(p) > 1})
        raise OutputDirectoryError(f"two outputs would be written to the same file: {', '.join(twice)}")


CURVES_WORTH_A_POOL = 12
"""Fewer curves are drawn in this process: a spawned worker pays about 3 s to start (Python, polars, matplotlib)
against about 0.55 s a curve. On the 2-core machine, select with 5 curves took 4.5 s drawn here and 5.5 s (7.2
CPU-s against 4.4) with two workers; with 24, 14.9 s here and 10.2 s with workers; with 65, 40.7 s and 22.4 s."""


def _figures(
    scan: ScoreScan,
    selection: Selection,
    ranking: AggregateResult | None,
    config: Config,
    out_dir: Path,
    progress: Progress | None,
    workers: int = 1,
) -> dict[str, Path]:
    """All figures; the per-task curves (most of the time: matplotlib layout) are drawn in worker processes, each
    reading its task's rows from the table."""
    figures_dir = out_dir / "figures"
    chosen = selection.decisions.filter(pl.col("chosen")).sort(["language", "task"])
    languages = sorted(chosen.get_column("language").unique().to_list())
    total = chosen.height + 2 * len(languages) + (1 if ranking is not None else 0)
    jobs = [
        (
            scan,
            row["task"],
            row["fewshot"],
            figures_dir / "curves" / f"{safe_file_name(row['task'])}.png",
            row["metric"],
        )
        for row in chosen.iter_rows(named=True)
    ]
    paths: dict[str, Path] = {}
    done = 0
    workers = max(workers, min(4, os.cpu_count() or 1))
    with ExitStack() as stack:
        if workers > 1 and len(jobs) >= CURVES_WORTH_A_POOL:
            pool = stack.enter_context(
                ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=die_with_parent)
            )
            with starting_children():  # workers start with Ctrl-C held until they ignore it (no traceback)
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
            figures_dir / f"criteria_{safe_file_name(language)}.png",
            monotonicity_min=config.monotonicity.min,
            snr_min=config.snr.min,
            separation_alpha=config.separation.alpha,
        )
        paths[f"consistency_{language}"] = plot_consistency_forest(
            selection.decisions, language, figures_dir / f"consistency_{safe_file_name(language)}.png"
        )
        done += 2
        if progress:
            progress("figures", done, total)
    if ranking is not None:
        paths["ranking"] = plot_ranking(ranking.ranking, figures_dir / "ranking.png")
        if progress:
            progress("figures", total, total)
    return paths


def _curve_job(job: tuple[ScoreScan, str, int, Path, str]) -> Path:
    scan, task, fewshot, path, metric = job
    rows = scan.read_tasks([task]).filter(pl.col("fewshot") == fewshot)
    return plot_training_curves(rows, task, fewshot, path, highlight_metric=metric)
