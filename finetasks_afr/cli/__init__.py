"""The `finetasks-afr` command line: `main` (the console script) and `app` (the typer application).

Ctrl-C, SIGTERM or SIGHUP ends any command with one line on stderr and exit code 130, 143 or 129, never a traceback
(`analysis.base.processes.run_interruptible`). For that to hold from the first moment, `main` takes over the three
signals before it imports the application: loading typer, rich, polars and every command module takes most of a
second, and a Ctrl-C then would be Python's KeyboardInterrupt traceback. So this package imports nothing heavy
itself, and `app` (defined in :mod:`finetasks_afr.cli.application`) is handed out on first use:
`from finetasks_afr.cli import app` works as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysis.base.processes import handle_interrupts, run_interruptible

if TYPE_CHECKING:
    from finetasks_afr.cli.application import app


def main() -> None:
    """The `finetasks-afr` console script and `python -m finetasks_afr.cli`."""
    handle_interrupts()

    def run() -> None:
        from finetasks_afr.cli.application import app

        app()

    run_interruptible(run)


def __getattr__(name: str) -> Any:
    if name == "app":
        from finetasks_afr.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
