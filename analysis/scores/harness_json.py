"""lm-evaluation-harness v0 result JSON files (the Pythia evaluations' `<model>_step<N>.json`) -> the score table.

The step comes from `_step<N>` in the file name, the few-shot count from `config.num_fewshot`, the run from the
nearest folder that is not a shot folder, and what the files do not say about a task from `analysis.scores.task_info`.

A module of its own, beside `lm_eval.py` (the reader of lm-eval 0.4 folders): `analysis.scores.read` tells the two
formats apart by what a file holds, so neither reader imports the other, and both validate through
`analysis.scores.validate`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from analysis.base.input_file import input_problem, special_file_problem
from analysis.scores.metrics import metric_info
from analysis.scores.schema import ACCEPTED_FORMATS, COLUMNS, SCHEMA, ScoreTableError
from analysis.scores.task_info import BIAS_PROBE_PREFIXES, TaskInfo, merged_task_info
from analysis.scores.validate import LoadReport, require_rows, validate

_SHOT_DIR = re.compile(r"(zero|one|two|three|four|five|six|seven|eight|nine|ten|few)-shot|\d+-?shot", re.I)
_STEP = re.compile(r"_step(\d+)")


def _json_files(paths: Path | Sequence[Path]) -> list[Path]:
    """Every result file named or found (recursively) under a named directory, in a stable order."""
    roots = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    files: list[Path] = []
    for root in roots:
        problem = input_problem(root, what="lm-evaluation-harness result file", folders=True)
        if problem is not None:
            raise ScoreTableError(problem)
        if root.is_dir():
            found = sorted(root.rglob("*.json"))
            files += [p for p in found if not p.is_dir()]
        elif root.is_file():
            files.append(root)
        else:
            raise ScoreTableError(f"{root}: no such file or directory; expected {ACCEPTED_FORMATS}")
    for file in files:  # a FIFO among the results would block its read: named, never opened
        problem = special_file_problem(file, what="lm-evaluation-harness result file")
        if problem is not None:
            raise ScoreTableError(problem)
    if not files:
        raise ScoreTableError(
            f"{', '.join(map(str, roots))}: no lm-evaluation-harness *.json result files found; "
            f"expected {ACCEPTED_FORMATS}"
        )
    return files


def run_name(path: Path) -> str:
    """The run a result file belongs to: the nearest ancestor folder that is not a shot folder."""
    for parent in path.resolve().parents:
        if parent.name and not _SHOT_DIR.fullmatch(parent.name):
            return parent.name
    raise ScoreTableError(f"{path}: cannot name its run from its folders; fix: pass run=")


def _load_result_file(path: Path) -> tuple[int, int, dict[str, dict[str, Any]]]:
    """(step, fewshot, results) of one harness file; anything unreadable names the file."""
    steps = _STEP.findall(path.name)
    if not steps:
        raise ScoreTableError(
            f"{path}: no `_step<N>` in the file name, so the checkpoint is unknown; "
            "fix: name result files like <model>_step<N>.json"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ScoreTableError(f"{path}: not a readable JSON file ({error}); fix: re-run or delete it") from error
    results = data.get("results") if isinstance(data, dict) else None
    config = data.get("config") if isinstance(data, dict) else None
    fewshot = config.get("num_fewshot") if isinstance(config, dict) else None
    if not isinstance(results, dict) or not isinstance(fewshot, int):
        raise ScoreTableError(
            f"{path}: not an lm-evaluation-harness result file (needs `results` and `config.num_fewshot`); "
            "fix: remove it from the input or re-run the evaluation"
        )
    return int(steps[-1]), fewshot, results


def _number(value: object, *, what: str, path: Path) -> float | None:
    """A JSON metric value as float; null means no number (NaN for a score, null for a stderr)."""
    if value is None or (isinstance(value, str) and value.strip().upper() in {"N/A", "NAN", ""}):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoreTableError(f"{path}: {what} is {value!r}, not a number; fix: re-run the evaluation")
    return float(value)


@dataclass
class _HarnessRows:
    """Rows gathered column-wise from the result files, with what was skipped and why."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in COLUMNS})
    unknown_tasks: set[str] = field(default_factory=set)
    bias_probes: set[str] = field(default_factory=set)
    unknown_metrics: set[str] = field(default_factory=set)

    def add(self, **values: Any) -> None:
        """Append one row."""
        for column, cells in self.columns.items():
            cells.append(values[column])


def _add_file(rows: _HarnessRows, path: Path, info: Mapping[str, TaskInfo], run: str, tokens: int | None) -> None:
    """Append the rows of one result file; remember tasks and metrics that are skipped."""
    step, fewshot, results = _load_result_file(path)
    for task, metrics in results.items():
        if task not in info:
            is_probe = task.startswith(BIAS_PROBE_PREFIXES)
            (rows.bias_probes if is_probe else rows.unknown_tasks).add(task)
            continue
        ti = info[task]
        for metric, value in metrics.items():
            if metric.endswith("_stderr"):
                continue
            if metric_info(metric) is None:
                rows.unknown_metrics.add(metric)
                continue
            score = _number(value, what=f"{task} {metric}", path=path)
            stderr = _number(metrics.get(f"{metric}_stderr"), what=f"{task} {metric}_stderr", path=path)
            rows.add(
                run=run, seed=None, step=step, tokens=None if tokens is None else step * tokens,
                task=task, benchmark=ti.benchmark, language=ti.language, category=ti.category,
                formulation=ti.formulation, fewshot=fewshot, metric=metric,
                score=float("nan") if score is None else score, stderr=stderr,
                random_baseline=ti.random_baseline,
            )  # fmt: skip


def _listing(names: Iterable[str], limit: int = 10) -> str:
    """Sorted names, the first `limit` spelled out."""
    ordered = sorted(names)
    more = f" (+{len(ordered) - limit} more)" if len(ordered) > limit else ""
    return ", ".join(ordered[:limit]) + more


def _harness_notes(rows: _HarnessRows, source: str, skip_unknown: bool) -> list[str]:
    """Notes on what was skipped; an unknown task is an error unless skip_unknown."""
    if rows.unknown_tasks and not skip_unknown:
        raise ScoreTableError(
            f"{source}: {len(rows.unknown_tasks)} task(s) without task info (benchmark, language, "
            f"category, formulation, random_baseline): {_listing(rows.unknown_tasks)}; fix: pass "
            "--task-info CSV (columns task,benchmark,language,category,formulation,random_baseline) or "
            "--skip-unknown to skip them (Python API: task_info=, skip_unknown=True)"
        )
    notes = []
    if rows.unknown_tasks:
        notes.append(f"skipped {len(rows.unknown_tasks)} tasks without task info: {_listing(rows.unknown_tasks)}")
    if rows.bias_probes:
        notes.append(f"skipped {len(rows.bias_probes)} bias-probe tasks (not skill measures): "
                     f"{_listing(rows.bias_probes, 3)}")  # fmt: skip
    if rows.unknown_metrics:
        notes.append(f"skipped metrics unknown to the analysis: {_listing(rows.unknown_metrics)}")
    return notes


def read_lm_eval_harness(
    paths: Path | Sequence[Path],
    *,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    tokens_per_step: int | None = None,
    run: str | None = None,
    skip_unknown: bool = False,
) -> tuple[pl.DataFrame, LoadReport]:
    """Read lm-evaluation-harness (v0) result JSON files into a validated score table.

    Args:
        paths: result files, or directories searched recursively for `*.json`.
        task_info: per-task attributes the files lack; a mapping or a CSV path, overriding and
            extending `LM_EVAL_TASK_INFO`.
        tokens_per_step: tokens = step * tokens_per_step; tokens stay null without it.
        run: the run name for every file; default: each file's nearest non-shot ancestor folder.
        skip_unknown: skip tasks without task info (with a note) instead of raising.

    The step comes from `_step<N>` in the file name, fewshot from `config.num_fewshot`, seed is null.
    Metrics unknown to `analysis.scores.metrics` and bias probes (crows_pairs_*) are skipped with a note.
    """
    files = _json_files(paths)
    roots = [paths] if isinstance(paths, str | Path) else list(paths)
    source = ", ".join(map(str, roots[:3])) + (f" (+{len(roots) - 3} more)" if len(roots) > 3 else "")
    info = merged_task_info(task_info)
    rows = _HarnessRows()
    for path in files:
        _add_file(rows, path, info, run or run_name(path), tokens_per_step)
    notes = [f"read {len(files)} lm-evaluation-harness result files"]
    notes += _harness_notes(rows, source, skip_unknown)
    raw = pl.DataFrame(rows.columns, schema=SCHEMA)
    frame, report = validate(raw, source=source)
    report.notes = notes + report.notes
    require_rows(frame.height, report, raw.height, notes[1:])
    return frame, report
