"""Atomic file writes: nothing the analysis produces is ever half-written."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        tmp.chmod(0o666 & ~_umask())  # mkstemp makes the file private (0600): give it the usual permissions
        tmp.replace(path)  # atomic rename (os.replace)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def atomic_write_text(path: Path, text: str) -> Path:
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return atomic_write(path, write)


def write_csv_atomic(frame: pl.DataFrame, path: Path) -> Path:
    """CSV with empty cells for nulls (a not-measurable statistic is an empty cell)."""
    return atomic_write(path, lambda tmp: frame.write_csv(tmp, null_value=""))
