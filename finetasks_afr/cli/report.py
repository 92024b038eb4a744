"""`finetasks-afr report`: the selection report (Markdown and HTML) of a score table, in one command.

It runs the same pipeline as `select` (statistics, selection,
ranking, figures) and says where the HTML pages are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from finetasks_afr.cli.analysis import WorkersOpt, run_selection_command
from finetasks_afr.cli.common import TOKENS_PER_STEP_HELP, console, wrote_line


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
    workers: WorkersOpt = None,
) -> None:
    """Write the selection report of SCORES into DIR: report.html (+ one page per language), report.md,
    figures/, and the selection's decisions.csv, suites/ and ranking.csv."""
    output = run_selection_command(scores, out, config, task_info, tokens_per_step, False, figures, workers)
    kept, chosen = output.selection.kept.height, output.selection.decisions.filter("chosen").height
    console.print(f"{kept} of {chosen} tasks kept")
    pages = ", ".join(p.name for key, p in sorted(output.html.items()) if key != "index")
    console.print(wrote_line(out, output.written))
    console.print(f"open {escape(str(out / 'report.html'))} (language pages: {escape(pages)})")


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
