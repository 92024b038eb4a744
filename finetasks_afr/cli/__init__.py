"""The `finetasks-afr` command line: `main` (the console script) and `app` (the typer application).

Ctrl-C, SIGTERM or SIGHUP ends any command with one line on stderr and exit code 130, 143 or 129, never a traceback
(`analysis.base.processes.run_interruptible`). For that to hold from the first moment, `main` takes over the three
signals before it imports the application: loading typer, rich, polars and every command module takes most of a
second, and a Ctrl-C then would be Python's KeyboardInterrupt traceback. So this package imports nothing heavy
itself, and `app` (defined in :mod:`finetasks_afr.cli.application`) is handed out on first use:
`from finetasks_afr.cli import app` works as before.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.base.memory import (
    LOCK_LEDGER_ENV,
    SUPERVISED_ENV,
    MemoryLimit,
    below_floor,
    how_it_ended,
    is_out_of_memory,
    memory_limits,
    out_of_memory_message,
    supervised,
)
from analysis.base.processes import handle_interrupts, run_interruptible, supervise, watch_parent

if TYPE_CHECKING:
    from finetasks_afr.cli.application import app


def main() -> None:
    """The `finetasks-afr` console script and `python -m finetasks_afr.cli`.

    The hub is switched off for the process when it cannot be reached (`finetasks_afr.cli.offline`), as make does.
    Under a memory limit the command runs as a child of this process, which names an out-of-memory crash below
    Python (a polars abort, the OOM killer) as such (`analysis.base.memory`); without one it runs here."""
    limits = memory_limits()
    refused = below_floor(limits)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        raise SystemExit(2)
    from finetasks_afr.cli.offline import apply_at_start_up

    apply_at_start_up(sys.argv[1:])  # once, before any child: they inherit the decision (make's offline variables)
    if limits and not supervised():
        raise SystemExit(_run_supervised(limits))
    if supervised():
        watch_parent()  # a supervising parent killed with -9 takes its command along
    handle_interrupts()

    def run() -> None:
        from finetasks_afr.cli.application import app

        try:
            app()
        except BaseException as error:  # typer re-raises what a command did not handle; a polars panic is a
            if isinstance(error, KeyboardInterrupt | SystemExit) or not is_out_of_memory(error):  # BaseException
                raise
            print(f"error: {out_of_memory_message(how_it_ended(error), limits)}", file=sys.stderr)
            raise SystemExit(2) from None

    run_interruptible(run)


def _run_supervised(limits: list[MemoryLimit]) -> int:
    """This command again, as a child (`analysis.base.processes.supervise`): a crash is named, and the outputs the
    child had locked are released and cleaned (`analysis.base.io.release_after_crash`); the exit code to end with."""
    import tempfile

    command = [sys.executable, *([sys.argv[0]] if Path(sys.argv[0]).is_file() else ["-m", "finetasks_afr.cli"])]
    handle, name = tempfile.mkstemp(prefix="finetasks-afr-locks-", suffix=".txt")
    os.close(handle)
    ledger = Path(name)

    def on_crash(ended: str) -> str:
        from analysis.base.io import release_after_crash

        release_after_crash(ledger)
        return out_of_memory_message(ended, limits)

    try:
        env = {**os.environ, SUPERVISED_ENV: "1", LOCK_LEDGER_ENV: str(ledger)}
        return supervise([*command, *sys.argv[1:]], env, on_crash)
    finally:
        ledger.unlink(missing_ok=True)


def __getattr__(name: str) -> Any:
    if name == "app":
        from finetasks_afr.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
