"""The one way a `finetasks-afr` command reports a user error: a red line on stderr, then exit code 2.

The message is escaped for rich, so text such as "[monotonicity] min" (a config section) is printed as written
instead of being read as a style tag and dropped.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape


def fail(console: Console, message: str, code: int = 2) -> typer.Exit:
    """Print `message` as an error on `console` and return the Exit to raise."""
    console.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code=code)


__all__ = ["fail"]
