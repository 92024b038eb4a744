"""Every score source the analysis reads, by what the path holds: a score table (.parquet, .csv), or the output
of lm-evaluation-harness (0.4 results folders and files, or the v0 JSON).

It sits above the readers (`table_file`, `harness_json`, `lm_eval`) so that no reader imports another, and the
schema and the validation every reader goes through (`schema`, `validate`) import no reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from analysis.base.input_file import input_problem
from analysis.scores.harness_json import read_lm_eval_harness
from analysis.scores.lm_eval import looks_like_lm_eval_04, read_lm_eval_04
from analysis.scores.schema import ACCEPTED_FORMATS, ScoreTableError
from analysis.scores.table_file import read_table_file
from analysis.scores.task_info import TaskInfo
from analysis.scores.validate import LoadReport

IGNORED_OPTIONS_NOTE = "task_info/tokens_per_step ignored: they apply to lm-evaluation-harness input"
_TABLE_SUFFIXES = (".parquet", ".csv")


def check_score_path(path: Path) -> None:
    """ScoreTableError unless `path` is a regular file or a folder of results, found without opening it.

    A FIFO, device or socket would block or never end in open() (`analysis.base.input_file`); a symlink loop
    would raise pathlib's RuntimeError; a folder named like a table (a dataset written in parts, `x.parquet/`)
    would be searched for lm-evaluation-harness JSON and reported as holding none, which says nothing of the parts.
    """
    problem = input_problem(path, what="score table", folders=True)
    if problem is not None:
        raise ScoreTableError(problem)
    if not path.exists():
        raise ScoreTableError(f"{path}: no such file or directory; expected {ACCEPTED_FORMATS}")
    suffix = path.suffix.lower()
    if suffix in _TABLE_SUFFIXES and path.is_dir():
        merge = (
            f"python -c \"import polars as pl; pl.scan_parquet('{path}/**/*.parquet').sink_parquet('merged.parquet')\""
            if suffix == ".parquet"
            else f"python -c \"import polars as pl; pl.scan_csv('{path}/**/*.csv').sink_csv('merged.csv')\""
        )
        raise ScoreTableError(
            f"{path} is a directory (a table written in parts?), not one {suffix} file; a score table is one file; "
            f"fix: give one {suffix} file, e.g. its parts merged with `{merge}`"
        )


def read_scores(
    path: str | Path,
    *,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    tokens_per_step: int | None = None,
    skip_unknown: bool = False,
) -> tuple[pl.DataFrame, LoadReport]:
    """Read any supported score source and validate it: .parquet, .csv, harness .json or a directory.

    `task_info`, `tokens_per_step` and `skip_unknown` apply to lm-evaluation-harness input only. A folder or .json
    holding lm-eval 0.4 results (`results_*.json` with `configs`/`n-shot`) is read by `analysis.scores.lm_eval`,
    anything else JSON by the v0 reader (`read_lm_eval_harness`).
    """
    path = Path(path)
    check_score_path(path)
    if path.is_dir() or path.suffix == ".json":
        if looks_like_lm_eval_04(path):
            return read_lm_eval_04(
                path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown
            )
        return read_lm_eval_harness(
            path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown
        )
    frame, report = read_table_file(path)
    if task_info is not None or tokens_per_step is not None:
        report.notes.append(IGNORED_OPTIONS_NOTE)
    return frame, report
