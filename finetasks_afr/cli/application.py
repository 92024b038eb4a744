"""The `finetasks-afr` typer application: every command group registered on one `app`.

Every module exposes ``register(app)``, the one way a command joins the application; they share the console and
the error printer of :mod:`finetasks_afr.cli.common`. The heavy stacks (lighteval, torch, matplotlib) are imported
inside the command functions, so `finetasks-afr --help` stays fast. The package `finetasks_afr.cli` hands this
`app` out lazily: its console-script entry takes over Ctrl-C and SIGTERM before this module's imports start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.rich_utils
from rich.table import Table

from analysis.base.processes import run_interruptible
from finetasks_afr.cli import analysis, data, export, longppl, recommend, report, sweep, tasks


class _HelpTable(Table):
    """typer's options table, with the help column (the last) flexible so that option names stay whole.

    typer fills its options table with `add_row` only, so every column is fixed-width; in 80 columns the
    widest help word (`num_input_tokens_seen`, a path) makes rich shrink all columns evenly and cut the
    names (`--tokens-per-st…`), the part a reader copies. A flexible last column takes what the name,
    negative-flag and metavar columns leave, and its help text wraps there instead. Tables that name their
    own ratios (typer's commands table) are left as they are.
    """

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*renderables, **kwargs)
        if self.columns and not any(column.ratio for column in self.columns):
            self.columns[-1].ratio = 1


typer.rich_utils.Table = _HelpTable  # type: ignore[misc]


class InterruptibleTyper(typer.Typer):
    """A typer application whose every run, called as `app()`, ends an interrupt with one line and 130 or 143.

    In `__call__` and not in a command: Ctrl-C may come during argument parsing, inside any command, or while
    typer turns the command's KeyboardInterrupt into exit code 130 (with no word said); `run_interruptible` sees
    all three. A test's `CliRunner.invoke(app, ...)` does not call `__call__`, and keeps its own handling.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return run_interruptible(lambda: super(InterruptibleTyper, self).__call__(*args, **kwargs))


app = InterruptibleTyper(
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
        from finetasks_afr.data.sources import DATA_DIR_ENV

        os.environ[DATA_DIR_ENV] = str(data_dir.resolve())


for _module in (analysis, report, sweep, data, export, recommend, longppl, tasks):
    _module.register(app)

__all__ = ["InterruptibleTyper", "app"]
