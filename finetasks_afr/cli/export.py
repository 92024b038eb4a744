"""`finetasks-afr export lm-eval`: a selection's fine tasks as an lm-evaluation-harness task folder."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from analysis.base.io import OutputDirectoryError
from finetasks_afr.cli.common import console, fail, named_write_errors, output_failure, require_output_dir

export_app = typer.Typer(no_args_is_help=True)

# lighteval warns so for every task whose few-shot split is its evaluation split, 0-shot tasks included.
_FEWSHOT_NOTE = "to build the few shot examples"


def _not_the_fewshot_note(record: logging.LogRecord) -> bool:
    return _FEWSHOT_NOTE not in record.getMessage()


@contextmanager
def quiet_rendering() -> Iterator[None]:
    """No datasets progress bars and no lighteval few-shot note while the documents are rendered.

    Rendering loads every kept task's dataset, and datasets draws a "Generating ... split" bar for each
    split, hundreds of lines that bury the one summary line; the exported tasks are 0-shot where the note
    is about few-shot examples, so it says nothing about them. Other warnings still show, and the
    libraries' settings are restored afterwards (the command may run inside a longer process or a test).
    """
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    lighteval_task = logging.getLogger("lighteval.tasks.lighteval_task")
    lighteval_task.addFilter(_not_the_fewshot_note)
    try:
        yield
    finally:
        lighteval_task.removeFilter(_not_the_fewshot_note)
        if bars:
            datasets.enable_progress_bars()


@export_app.command("lm-eval")
def lm_eval_command(
    selection: Annotated[Path, typer.Argument(help="The --out of a `finetasks-afr select` (holds decisions.csv).")],
    out: Annotated[Path, typer.Option("--out", help="The lm-eval task folder to write (replaced whole).")],
) -> None:
    """Write the kept tasks as lm-eval 0.4 tasks (documents rendered by this project) and one group per language."""
    from analysis.select import DecisionsError
    from finetasks_afr.export.lm_eval import ExportError, export_lm_eval

    require_output_dir(out)
    try:  # the decisions and --out (a user's folder, another command's output, the selection) are checked first
        with named_write_errors(out, kept="the previous folder"), quiet_rendering():
            result = export_lm_eval(selection, out)
    except (DecisionsError, ExportError) as error:
        raise fail(str(error)) from error
    except OutputDirectoryError as error:
        raise output_failure(out, error) from error
    rendered = sum(1 for task in result.tasks if task.rows)
    console.print(
        f"[green]wrote[/] {escape(str(out))}: {rendered} task(s) rendered, "
        f"{len(result.tasks) - rendered} lm-eval task(s) named, {len({t.language for t in result.tasks})} language "
        "group(s); README.md: how to run"
    )
    for name, why in sorted(result.skipped.items()):
        console.print(f"[yellow]not exported:[/] {escape(name)}: {escape(why)}")


def register(app: typer.Typer) -> None:
    app.add_typer(export_app, name="export", help="Export a selection's fine tasks for another harness (lm-eval).")
