"""`finetasks-afr report`: the selection report (Markdown and HTML) of a score table, in one command.

It runs the same pipeline as `select` (statistics, selection,
ranking, figures) and says where the HTML pages are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from analysis.base.io import OutputDirectoryError, output_lock
from analysis.config import ConfigError, load_config
from analysis.scores.read import read_scores
from analysis.scores.table import ScoreTableError
from finetasks_afr.cli.common import (
    TOKENS_PER_STEP_HELP,
    console,
    fail,
    output_failure,
    require_analysis_out,
    waiting_note,
    wrote_line,
)
from finetasks_afr.data.bundled import BUNDLED_SWEEP, config_for

"""The default score table (as `finetasks-afr select`); the figures stack is imported only when the command runs."""


def report_command(
    scores: Annotated[
        Path | None,
        typer.Argument(
            help="Score table: .parquet, .csv, or lm-evaluation-harness JSON files/directory. "
            "Default: the bundled demo sweep."
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("out/report"),
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML file overriding analysis/default_config.toml.")
    ] = None,
    task_info: Annotated[
        Path | None, typer.Option("--task-info", help="CSV of task metadata for lm-evaluation-harness tasks.")
    ] = None,
    tokens_per_step: Annotated[int | None, typer.Option("--tokens-per-step", help=TOKENS_PER_STEP_HELP)] = None,
    figures: Annotated[bool, typer.Option(help="Draw the figures the pages show (matplotlib).")] = True,
) -> None:
    """Write the selection report of SCORES into DIR: report.html (+ one page per language), report.md,
    figures/, and the selection's decisions.csv, suites/ and ranking.csv."""
    from analysis.pipeline import run_selection

    require_analysis_out(out)
    if scores is None and not BUNDLED_SWEEP.is_file():
        raise fail(f"the bundled sweep {BUNDLED_SWEEP} is missing; regenerate it with `make bundle`")
    path = scores or BUNDLED_SWEEP
    try:
        cfg = load_config(config_for(scores, config))
        table, load_report = read_scores(path, task_info=task_info, tokens_per_step=tokens_per_step)
    except (ConfigError, ScoreTableError) as error:
        raise fail(str(error)) from error
    console.print(f"[green]loaded[/] {load_report.summary()}")
    with console.status("statistics, selection, ranking, figures, report"):
        try:  # another writer of --out: wait for it, saying whom (or exit 2 naming it after the wait)
            with output_lock(out, on_wait=waiting_note):
                output = run_selection(table, load_report, cfg, out, figures=figures)
        except (OSError, OutputDirectoryError) as error:
            raise output_failure(out, error) from error
    kept, chosen = output.selection.kept.height, output.selection.decisions.filter("chosen").height
    console.print(f"{kept} of {chosen} tasks kept")
    pages = ", ".join(p.name for key, p in sorted(output.html.items()) if key != "index")
    console.print(wrote_line(out, output.written))
    console.print(f"open {escape(str(out / 'report.html'))} (language pages: {escape(pages)})")


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
