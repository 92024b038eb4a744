"""Writing a score table: validated first, then written through the project's one atomic writer.

Usage::

    write_scores(frame, "out/scores.parquet")              # atomic (analysis.base.io.atomic_write)

A module of its own because the producers (the sweep's collection, the demo, the study) write tables and no reader
needs to: it validates like every reader, so a table it wrote reads back as it was written, in KEY order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from analysis.base.io import atomic_write
from analysis.base.write_errors import writing
from analysis.scores.schema import ScoreTableError
from analysis.scores.validate import LoadReport, validate


def write_scores(frame: pl.DataFrame, path: str | Path) -> LoadReport:
    """Validate and write a score table through the project's one atomic writer (`analysis.base.io.atomic_write`).

    The suffix picks the format (.parquet or .csv); parent folders are created. A failed write leaves any previous
    file untouched and no temporary file behind, and the file gets the permissions of a plain `open()`: all of that
    is `atomic_write`'s job, so this function only validates and chooses the format. A write the system refuses
    (full disk, file-size limit, ...) is raised as an OSError naming `path`, not as the ComputeError polars wraps
    it in, so that callers name it (`analysis.base.write_errors`). Returns validate's report.
    """
    path = Path(path)
    writers: dict[str, Callable[[pl.DataFrame, Path], None]] = {
        ".parquet": lambda f, p: f.write_parquet(p),
        ".csv": lambda f, p: f.write_csv(p),
    }
    suffix = path.suffix.lower()
    if suffix not in writers:
        raise ScoreTableError(f"{path}: cannot write '{path.suffix}'; fix: use a .parquet or .csv path")
    frame, report = validate(frame, source=f"{path} (writing)")
    with writing(path):  # polars' ComputeError on a full disk becomes the OSError it wraps, naming `path`
        atomic_write(path, lambda tmp: writers[suffix](frame, tmp))
    return report
