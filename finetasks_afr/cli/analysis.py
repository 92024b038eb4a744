"""`finetasks-afr select`, `aggregate`, `simulate` and `demo`: the FineTasks analysis of a score table."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import polars as pl
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from analysis.aggregate import AggregateError
from analysis.base.io import OutputDirectoryError, check_output_directory, output_lock
from analysis.config import Config, ConfigError, load_config
from analysis.scores.schema import ScoreTableError
from analysis.scores.stream import ScoreScan, open_scores
from analysis.select import DecisionsError, read_decisions
from finetasks_afr.cli.common import (
    TOKENS_PER_STEP_HELP,
    console,
    fail,
    output_failure,
    print_table,
    require_analysis_out,
    require_output_dir,
    require_scores_input,
    waiting_note,
    wrote_line,
)
from finetasks_afr.data.bundled import BUNDLED_MIXES, BUNDLED_SWEEP, BUNDLED_TRUTH, config_for

if TYPE_CHECKING:
    from analysis.pipeline import SelectionOutput

SIMULATED_SWEEP = Path(__file__).resolve().parents[1] / "data" / "simulated_sweep.parquet"

ScoresArg = Annotated[
    Path | None,
    typer.Argument(help="Score table: .parquet, .csv, or lm-evaluation-harness JSON files/directory (v0 files, "
                   "or lm-eval 0.4's --output_path folder). Default: the bundled sweep."),
]  # fmt: skip
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="TOML file overriding analysis/default_config.toml.")]
TaskInfoOpt = Annotated[
    Path | None,
    typer.Option("--task-info", help="CSV task,benchmark,language,category,formulation,random_baseline "
                 "for lm-evaluation-harness tasks the builtin table lacks."),
]  # fmt: skip
TokensOpt = Annotated[
    int | None,
    typer.Option("--tokens-per-step", help=TOKENS_PER_STEP_HELP),
]
SkipOpt = Annotated[bool, typer.Option("--skip-unknown", help="Skip lm-eval tasks without task info (listed).")]


WorkersOpt = Annotated[
    int | None,
    typer.Option("--workers", min=1, help="Processes that analyse partitions of the table at once (each holds one "
                 "partition of whole tasks). Default: the CPU count, at most 4."),
]  # fmt: skip


def default_workers(workers: int | None) -> int:
    """`--workers`, or the CPU count capped at 4 (more processes than partitions are never started)."""
    return workers or min(4, os.cpu_count() or 1)


@contextmanager
def opened_scores(
    scores: Path | None, task_info: Path | None, tokens_per_step: int | None, skip_unknown: bool = False
) -> Iterator[ScoreScan]:
    """The score table as a ScoreScan (`analysis.scores.stream.open_scores`): a parquet table streamed as it is, any
    other source read once and converted; the bundled sweep when `scores` is None. Errors exit 2 with the message.
    """
    path = scores or BUNDLED_SWEEP
    if scores is None and not BUNDLED_SWEEP.is_file():
        raise fail(f"the bundled sweep {BUNDLED_SWEEP} is missing; regenerate it with `make bundle`")
    try:
        with console.status(f"indexing {path}"):
            stack = ExitStack()
            scan = stack.enter_context(
                open_scores(path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown)
            )
        with stack:
            console.print(f"[green]reading[/] {escape(scan.source)}: {scan.rows:,} rows, {len(scan.tasks):,} tasks")
            yield scan
    except ScoreTableError as error:  # from the index, or from a partition's validation while streaming
        raise fail(str(error)) from error


def run_selection_command(
    scores: Path | None,
    out: Path,
    config: Path | None,
    task_info: Path | None,
    tokens_per_step: int | None,
    skip_unknown: bool,
    figures: bool,
    workers: int | None,
) -> SelectionOutput:
    """What `select` and `report` share: check --out, stream the table through the selection into `out` with a
    progress bar, print the load report; the output for the command's own summary."""
    from analysis.pipeline import run_selection

    require_analysis_out(out)
    cfg = _config(config, scores)  # the inputs named first (a --config folder is a folder, not --out's parent)
    _require_own_out(out, "select", scores, config, task_info)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        opened_scores(scores, task_info, tokens_per_step, skip_unknown) as scan,
        Progress(*columns, console=console, transient=True) as bar,
    ):
        job = bar.add_task("statistics, selection, ranking", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(job, description=what, completed=done, total=total)

        try:  # another writer of --out: wait for it, saying whom (or exit 2 naming it after the wait)
            with output_lock(out, on_wait=waiting_note):
                output = run_selection(
                    scan, cfg, out, figures=figures, progress=progress, workers=default_workers(workers)
                )
        except (OSError, OutputDirectoryError) as error:
            raise output_failure(out, error) from error
    if output.load_report is not None:
        console.print(f"[green]loaded[/] {escape(output.load_report.summary())}")
    return output


def _require_own_out(out: Path, command: str, *inputs: Path | None) -> None:
    """`--out` checked before any work (`analysis.base.io.check_output_directory`): not another command's output,
    a user's folder, nor one of the command's `inputs`, inside one or holding one."""
    try:
        check_output_directory(out, command, [path for path in inputs if path is not None])
    except OutputDirectoryError as error:
        raise output_failure(out, error) from error


def _config(path: Path | None, scores: Path | None = None) -> Config:
    """The configuration: `--config`, else the demo's own for the bundled sweep, else the FineTasks defaults.
    `scores` is checked first (by stat): `config_for` resolves it, which a symlink loop turns into a RuntimeError."""
    require_scores_input(scores)
    chosen = config_for(scores, path)
    if path is None and chosen is not None:
        console.print(f"[dim]the bundled demo sweep: analysed with its own configuration {chosen}[/]")
    try:
        return load_config(chosen)
    except ConfigError as error:
        raise fail(str(error)) from error


def select_command(
    scores: ScoresArg = None,
    out: OutOpt = Path("out/selection"),
    config: ConfigOpt = None,
    task_info: TaskInfoOpt = None,
    tokens_per_step: TokensOpt = None,
    skip_unknown: SkipOpt = False,
    figures: Annotated[bool, typer.Option(help="Write figures (matplotlib).")] = True,
    workers: WorkersOpt = None,
) -> None:
    """Select the fine tasks per language: decisions.csv, suites/{cf,mcf}/<lang>.txt, report.md/.html, figures/."""
    output = run_selection_command(scores, out, config, task_info, tokens_per_step, skip_unknown, figures, workers)
    _print_summary(output.selection.decisions)
    for flag in output.selection.coverage:
        console.print(f"[yellow]coverage:[/] {flag.describe()}")
    console.print(wrote_line(out, output.written))


def _print_summary(decisions: pl.DataFrame) -> None:
    chosen = decisions.filter(pl.col("chosen"))
    table = Table(title="kept tasks per language")
    for column in ("language", "kept", "tasks", "kept tasks"):
        table.add_column(column)
    for (language,), rows in sorted(chosen.group_by(["language"]), key=lambda item: str(item[0][0])):
        kept = rows.filter(pl.col("kept"))
        names = ", ".join(f"{t} ({m})" for t, m in kept.select("task", "metric").sort("task").iter_rows())
        table.add_row(str(language), str(kept.height), str(rows.height), names)
    print_table(table)


def aggregate_command(
    scores: Annotated[Path, typer.Argument(help="Score table (.parquet, .csv, lm-eval JSON).")],
    out: OutOpt = Path("out/aggregate"),
    config: ConfigOpt = None,
    decisions: Annotated[
        Path | None, typer.Option(help="decisions.csv of a selection; default: select with --config first.")
    ] = None,
    task_info: TaskInfoOpt = None,
    tokens_per_step: TokensOpt = None,
    skip_unknown: SkipOpt = False,
    workers: WorkersOpt = None,
) -> None:
    """Rank the runs on the selected tasks: DIR/ranking.csv (mean rank, Borda, mean win rate)."""
    from analysis.pipeline import run_aggregate

    require_analysis_out(out)
    cfg = _config(config, scores)  # the inputs named first (a --config folder is a folder, not --out's parent)
    _require_own_out(out, "aggregate", scores, decisions, config, task_info)
    with opened_scores(scores, task_info, tokens_per_step, skip_unknown) as scan:
        try:
            chosen = None if decisions is None else read_decisions(decisions, set(scan.tasks))
            with console.status("aggregating"), output_lock(out, on_wait=waiting_note):
                result = run_aggregate(scan, cfg, out, chosen, workers=default_workers(workers))
        except (DecisionsError, AggregateError) as error:
            raise fail(str(error)) from error
        except (OSError, OutputDirectoryError) as error:
            raise output_failure(out, error) from error
    view = Table(title="multilingual ranking (lower mean rank is better)")
    for column in ("run", "mean rank", "Borda", "win rate", "missing languages"):
        view.add_column(column)
    for row in result.ranking.iter_rows(named=True):
        view.add_row(row["run"], f"{row['mean_rank']:.2f}", f"{row['borda']:.1f}", f"{row['mean_win_rate']:.2f}",
                     row["missing_languages"] or "")  # fmt: skip
    print_table(view)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"[green]wrote[/] {out}: ranking.csv, language_scores.csv, aggregated_tasks.csv")


def simulate_command(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Parquet file to write.",
            show_default="finetasks_afr/data/simulated_sweep.parquet in the installed package",
        ),
    ] = SIMULATED_SWEEP,
    seed: Annotated[int, typer.Option(help="Random seed of the simulation.")] = 0,
) -> None:
    """Regenerate the SIMULATED sweep (known-quality tasks; a fast fixture for the analysis, not model output)."""
    from finetasks_afr.demo.simulate import write_bundled_sweep

    write_bundled_sweep(out, seed=seed)
    console.print(f"[green]wrote[/] {out}")


def demo_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Demo output directory (resumable). [default: out/demo, --quick: out/demo-quick]"),
    ] = None,
    workers: Annotated[int, typer.Option(help="Processes for training and evaluation.")] = 2,
    quick: Annotated[
        bool,
        typer.Option(help="The whole chain in a few minutes: 2 seeds x 300 steps instead of 3 x 800 (less evidence)."),
    ] = False,
    bundle: Annotated[bool, typer.Option(help="Copy the sweep to the bundled default of `select`.")] = False,
) -> None:
    """The end-to-end demo: train tiny models on a synthetic world, sweep, collect, select, aggregate, report."""
    import shutil
    from functools import partial

    from finetasks_afr.demo.run import DemoSettings, run_demo

    if quick and bundle:
        raise fail("--bundle copies the full demo's sweep (the bundled default of `select`); drop --quick")
    out = out or Path("out/demo-quick" if quick else "out/demo")
    settings = DemoSettings.quick(workers) if quick else DemoSettings(workers=workers)
    try:
        paths = run_demo(out, settings, log=lambda line: console.print(line), console=console)
    except RuntimeError as error:
        raise fail(str(error)) from error
    if bundle:
        from analysis.base.io import atomic_write

        for source, target in ((paths["truth"], BUNDLED_TRUTH), (paths["mixes"], BUNDLED_MIXES),
                               (paths["scores"], BUNDLED_SWEEP)):  # fmt: skip
            atomic_write(target, partial(shutil.copyfile, source))
        console.print(f"[green]bundled[/] {BUNDLED_SWEEP}")
    console.print(f"[green]wrote[/] {out}: scores.parquet, selection/report.md, aggregate/ranking.csv, truth_check.csv")


def study_command(
    shared_data: Annotated[
        Path, typer.Option("--shared-data", help="The shared data root (corpus/ and the raw releases).")
    ] = Path("../shared/data"),
    out: Annotated[Path, typer.Option("--out", help="Study output directory (resumable).")] = Path("out/study"),
    workers: Annotated[int, typer.Option(help="Processes for training and evaluation.")] = 2,
    publish_to: Annotated[
        Path | None, typer.Option("--publish", help="Then copy the results the docs show into this folder.")
    ] = None,
    ci_slice: Annotated[
        bool, typer.Option("--slice", help="The CI slice: one mix, one seed, two checkpoints, three tasks.")
    ] = False,
    pilot: Annotated[
        bool,
        typer.Option(
            "--pilot",
            help="Only round 2's pilot: the dose response of bits per byte to a language's share (pilot.json).",
        ),
    ] = False,
    reanalyse: Annotated[
        Path | None,
        typer.Option(
            "--reanalyse",
            help="Only the analysis, on the score table of a finished study in this folder (e.g. docs/study): "
            "selection, ranking and truth check into --out, without training or evaluation.",
        ),
    ] = None,
) -> None:
    """The micro-scale study: tiny models trained on real African text in three mixes, swept over the real suite,
    selected and ranked against the designed truth (README, "A real micro-scale study")."""
    from finetasks_afr.study.design import StudySizes, slice_sizes
    from finetasks_afr.study.folder import StudyFolderError
    from finetasks_afr.study.run import reanalyse_study, run_study

    _require_study_outputs(out, publish_to, reanalyse)  # before any work: a mistyped path costs nothing
    if reanalyse is not None:
        try:
            reanalyse_study(reanalyse, out, log=lambda line: console.print(line), shared_data=shared_data)
        except (StudyFolderError, ScoreTableError) as error:
            raise fail(f"--reanalyse: {error}") from None
        except (OSError, OutputDirectoryError) as error:
            raise output_failure(out, error) from error
        console.print(f"[green]wrote[/] {out}: selection/report.md, truth_check.csv (from {reanalyse})")
        if publish_to is not None:
            _publish(out, publish_to)
        return
    if not (shared_data / "corpus").is_dir():
        raise fail(f"no training text under {shared_data / 'corpus'}: pass --shared-data <the shared data root>")
    if pilot:
        from finetasks_afr.study.pilot import run_pilot

        result = run_pilot(shared_data, out, threads=workers, log=lambda line: console.print(line))
        for language, fit in result["fits"].items():
            console.print(f"{language}: {fit['slope']:+.4f} bits per byte per doubling of its share "
                          f"(stderr {fit['slope_stderr']:.4f}), seed sd {fit['seed_sd']:.4f}")  # fmt: skip
        console.print(f"[green]wrote[/] {out / 'pilot.json'}")
        return
    sizes = slice_sizes() if ci_slice else StudySizes()
    run_study(out, shared_data, sizes, workers=workers, log=lambda line: console.print(line))
    console.print(f"[green]wrote[/] {out}: scores.parquet, selection/report.md, truth_check.csv, study.json")
    if publish_to is not None:
        _publish(out, publish_to)


def _require_study_outputs(out: Path, publish_to: Path | None, reanalyse: Path | None = None) -> None:
    """`--out` and `--publish` checked before the study starts (hours of training, or a minute of reanalysis): each
    must be able to be a directory, and they must differ (the results would be copied onto themselves). A
    reanalysis writes a whole study folder into `--out`, so `--out` must be neither the folder it reads nor inside
    it (the copy would replace the input it was made from); `--publish` may be that folder (the docs' own flow)."""
    require_output_dir(out)
    if reanalyse is not None and out.resolve().is_relative_to(reanalyse.resolve()):
        raise fail(
            f"--out {out} is the --reanalyse folder {reanalyse} or inside it: the reanalysis would write over its own "
            f"input; write it elsewhere (e.g. --out out/study) and --publish {reanalyse} to update the folder"
        )
    if publish_to is not None:
        require_output_dir(publish_to, "--publish")
        if publish_to.resolve() == out.resolve():
            raise fail(f"--publish {publish_to} is --out itself; publish into another folder (e.g. docs/study)")


def _publish(out: Path, publish_to: Path) -> None:
    """Copy what the docs show into `--publish` (`study.run.publish`); a write the system refused is named."""
    from finetasks_afr.study.run import publish

    try:
        publish(out, publish_to)
    except OSError as error:
        if isinstance(error, FileNotFoundError) and error.filename is None:  # the study is not finished
            raise fail(str(error)) from None
        raise fail(f"--publish {publish_to} could not be written ({error}); choose a writable directory") from None
    console.print(f"[green]published[/] {publish_to}")


def register(app: typer.Typer) -> None:
    app.command("select")(select_command)
    app.command("aggregate")(aggregate_command)
    app.command("simulate")(simulate_command)
    app.command("demo")(demo_command)
    app.command("study")(study_command)
