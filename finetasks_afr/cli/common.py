"""What every `finetasks-afr` command shares: the stderr console, the one error printer, and the `--out` check.

A user error is a red line on stderr and exit code 2, never a traceback. Messages are escaped for rich, so text
such as "[monotonicity] min" (a config section) is printed as written instead of being read as a style tag.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

console = Console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` as an error on the stderr console and return the Exit to raise."""
    console.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code=code)


def output_dir_problem(path: Path, option: str = "--out") -> str | None:
    """Why `path` cannot be (or become) a writable output directory, or None when it can.

    Checked before any work starts, so a mistyped `--out` costs nothing: a path that is a file, a parent that is a
    file, or a directory (or its nearest existing ancestor) that this user cannot write.
    """
    if path.exists() and not path.is_dir():
        return f"{option} {path} is a file, not a directory; choose a directory path"
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        return f"{option} {path}: {ancestor} is a file, so no directory can be made under it; choose another path"
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{option} {path}: {ancestor} is not writable by this user; choose a writable directory"
    return None


def require_output_dir(path: Path, option: str = "--out") -> Path:
    """`path` when it can be an output directory, else the named error (exit 2) saying why."""
    problem = output_dir_problem(path, option)
    if problem is not None:
        raise fail(problem)
    return path


def require_output_file(path: Path, suffixes: tuple[str, ...], option: str = "--out") -> Path:
    """`path` when it names a writable file with one of `suffixes`, else the named error, before any work."""
    if path.suffix.lower() not in suffixes:
        raise fail(f"{option} {path}: the file name must end in {' or '.join(suffixes)} (the format is chosen by it)")
    if path.is_dir():
        raise fail(f"{option} {path} is a directory; give a file name ending in {' or '.join(suffixes)}")
    problem = output_dir_problem(path.parent, option=f"{option} {path}: its folder")
    if problem is not None:
        raise fail(problem)
    return path


__all__ = ["console", "fail", "output_dir_problem", "require_output_dir", "require_output_file"]
