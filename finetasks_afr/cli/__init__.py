"""The `finetasks-afr` command line, one module per command group.

Every module exposes ``register(app)``, the one way a command joins the application; they share the console and
the error printer of :mod:`finetasks_afr.cli.common`. The heavy stacks (lighteval, torch, matplotlib) are imported
inside the command functions, so `finetasks-afr --help` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from finetasks_afr.cli import analysis, data, longppl, recommend, report, sweep

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="finetasks-afr: African-language LightEval tasks, checkpoint sweeps, and the FineTasks analysis that "
    "decides which tasks to trust (select, aggregate, report), plus perplexity signals (recommend, longppl) and "
    "the local dataset mirror (data).",
)


@app.callback()
def main(
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Local dataset mirror (sets $FINETASKS_AFR_DATA_DIR for tasks and sweeps)."),
    ] = None,
) -> None:
    """finetasks-afr: African-language LightEval tasks and the FineTasks analysis."""
    if data_dir is not None:
        from finetasks_afr.sources import DATA_DIR_ENV

        os.environ[DATA_DIR_ENV] = str(data_dir.resolve())


for _module in (analysis, report, sweep, data, recommend, longppl):
    _module.register(app)

__all__ = ["app"]
