"""Every score source the analysis reads, by what the path holds: a score table (.parquet, .csv), or the output
of lm-evaluation-harness (0.4 results folders and files, or the v0 JSON).

It sits above the readers (`table_file`, `harness_json`, `lm_eval`) so that no reader imports another, and the
schema and the validation every reader goes through (`schema`, `validate`) import no reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from analysis.scores.harness_json import read_lm_eval_harness
from analysis.scores.lm_eval import looks_like_lm_eval_04, read_lm_eval_04
from analysis.scores.schema import ACCEPTED_FORMATS, ScoreTableError
from analysis.scores.table_file import read_table_file
from analysis.scores.task_info import TaskInfo
from analysis.scores.validate import LoadReport

IGNORED_OPTIONS_NOTE = "task_info/tokens_per_step ignored: they apply to lm-evaluation-harness input"


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
    if not path.exists():
        raise ScoreTableError(f"{path}: no such file or directory; expected {ACCEPTED_FORMATS}")
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
