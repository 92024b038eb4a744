"""Every score source the analysis reads, by what the path holds: a score table (.parquet, .csv), or the output
of lm-evaluation-harness (0.4 results folders and files, or the v0 JSON).

It sits above the readers (`table_file`, `harness_json`, `lm_eval`) so that no reader imports another, and the
schema and the validation every reader goes through (`schema`, `validate`) import no reader.
"""

from __future__ import annotations

import json
import shlex
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

_SWEEP_FILES = ("settings.json", "sweep.json")
"""Files at the top of a sweep's --out (`finetasks_afr.sweep.store`, which the analysis does not import)."""
_SWEEP_PART = ("part.json", "results.json")
"""A sweep part's manifest and lighteval's results file beside it (`finetasks_afr.sweep.store`)."""
_LIGHTEVAL_RESULTS = "results_*.json"
"""lighteval's results file name under its --output-dir (`results/<model>/results_<datetime>.json`)."""


def _is_sweep_part(folder: Path) -> bool:
    """Whether `folder` is one part of a sweep's checkpoint: a manifest beside lighteval's results."""
    return all((folder / name).is_file() for name in _SWEEP_PART)


def _is_lighteval_results(path: Path) -> bool:
    """Whether a .json file is lighteval's results (its `config_general`); unreadable files are not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("config_general"), dict)


def _collect_command(path: Path) -> str:
    """The `collect` command line for `path`, quoted for the shell so that it pastes as it is."""
    return f"`finetasks-afr collect {shlex.quote(str(path))} --out scores.parquet`"


def sweep_problem(path: Path) -> str | None:
    """What to pass instead when `path` is a sweep's --out or a folder of its parts, else None.

    A sweep holds lighteval JSON, so it would reach the v0 reader, whose only complaint is a file name without
    `_step<N>`: advice to rename files that are not v0 results at all. Told by its layout alone (no file opened),
    so it is checked before anything reads the folder's JSON.
    """
    if path.is_file():
        return None
    if any((path / name).is_file() for name in _SWEEP_FILES) or _is_sweep_part(path):
        table = path / "scores.parquet"
        if table.is_file():
            return f"{path} is a sweep folder (`finetasks-afr sweep --out`), not a score table; fix: pass {table}"
        return (
            f"{path} is a sweep folder (`finetasks-afr sweep --out`) without its score table (scores.parquet); "
            f"fix: run `finetasks-afr collect {shlex.quote(str(path))} --out {shlex.quote(str(table))}` and pass "
            "that file"
        )
    parts = sorted(p.parent for p in path.rglob(_SWEEP_PART[0]) if _is_sweep_part(p.parent))
    if parts:
        return (
            f"{path} holds a sweep's results ({len(parts)} part folders, e.g. {parts[0]}), not a score table; "
            "fix: pass the sweep folder's scores.parquet, or run "
            f"{_collect_command(path)} and pass scores.parquet"
        )
    return None


def lighteval_problem(path: Path) -> str | None:
    """What to run instead when `path` is a lighteval --output-dir or results file, else None.

    lighteval's results are JSON too and would reach the v0 reader (see `sweep_problem`); they are told by
    lighteval's `config_general`, which needs the files opened, so this runs once lm-eval 0.4 is ruled out.
    """
    collect = _collect_command(path)
    if path.is_file():
        if _is_lighteval_results(path):
            return (
                f"{path} is a lighteval results file, which `finetasks-afr collect` reads into a score table; "
                f"fix: run {collect} (--task-info or --custom-tasks for tasks outside this suite) and pass "
                "scores.parquet"
            )
        return None
    if any(_is_lighteval_results(p) for p in sorted(path.rglob(_LIGHTEVAL_RESULTS)) if p.is_file()):
        return (
            f"{path} is a lighteval output folder (results_*.json with config_general), which "
            f"`finetasks-afr collect` reads into a score table; fix: run {collect} (--task-info or --custom-tasks "
            "for tasks outside this suite) and pass scores.parquet"
        )
    return None


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
        problem = sweep_problem(path)
        if problem is not None:
            raise ScoreTableError(problem)
        if looks_like_lm_eval_04(path):
            return read_lm_eval_04(
                path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown
            )
        problem = lighteval_problem(path)
        if problem is not None:
            raise ScoreTableError(problem)
        return read_lm_eval_harness(
            path, task_info=task_info, tokens_per_step=tokens_per_step, skip_unknown=skip_unknown
        )
    frame, report = read_table_file(path)
    if task_info is not None or tokens_per_step is not None:
        report.notes.append(IGNORED_OPTIONS_NOTE)
    return frame, report
