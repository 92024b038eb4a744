"""Turn lighteval result directories into the score table: one row per (run, seed, step, task, fewshot, metric).

Works on a sweep's output (each results file sits in a part folder whose `part.json` names the checkpoint and
the tasks' metadata) and on the output of anyone's own `lighteval accelerate` loop: then the checkpoint is read
from the results file's `model_name` (a local path such as `runs/mix-a/seed-1/checkpoint-200`, by the rules of
`analysis.scores.discover`, or a hub id with a `stepN` revision), tokens from the checkpoint's
`trainer_state.json` when it is still there, else `tokens_per_step`; task metadata from our suite's TASK_INFO,
a custom tasks module's TASK_INFO, or a task-info CSV.

lm-evaluation-harness 0.4 results files (`results_<datetime>.json` with `configs`/`n-shot`) found among them are
read by `analysis.scores.lm_eval` (checkpoint from `config.model_args` by the same rule,
`analysis.scores.lm_eval.checkpoint_of`;
group aggregates skipped; one filter per metric) and described by its built-in AfroBench task info unless the
task-info CSV or a custom module says otherwise.

When the same checkpoint, task and few-shot count appear in two results files (a re-run), the newer file wins
and the older is listed in the report; nothing is counted twice.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from analysis.scores.discover import (
    Checkpoint,
    DiscoveryError,
    separate_models,
    token_override_note,
    tokens_origin,
)
from analysis.scores.lm_eval import (
    builtin_task_info,
    check_token_counts,
    checkpoint_of,
    is_lm_eval_04,
    lm_eval_files,
    read_results_file,
    unknown_tasks,
)
from analysis.scores.metrics import metric_info
from analysis.scores.schema import OPTIONAL_SCHEMA, SCHEMA, ScoreTableError
from analysis.scores.task_info import TaskInfo, read_task_info
from analysis.scores.validate import validate
from finetasks_afr.sweep.evaluate import TASK_INFO_FIELDS
from finetasks_afr.sweep.store import PART_MANIFEST, RESULT_SETTINGS, part_settings, setting_differences

_TIMESTAMP = re.compile(r"results_(.+)\.json$")


class CollectError(ValueError):
    """A results file that cannot be collected; the message names it and the fix."""


@dataclass
class CollectReport:
    """What collection read, skipped and superseded, for the log."""

    files: int = 0
    rows: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason) under --skip-bad
    superseded: list[str] = field(default_factory=list)  # older results of a re-run
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"collected {self.rows} rows from {self.files} results file(s)"]
        if self.superseded:
            lines.append(f"{len(self.superseded)} older result set(s) superseded by newer runs of the same tasks")
        for path, reason in self.skipped:
            lines.append(f"skipped {path}: {reason}")
        lines += self.notes
        return "\n".join(lines)


@dataclass
class _ResultFile:
    path: Path
    checkpoint: Checkpoint
    results: dict[str, dict]
    task_info: dict[str, TaskInfo]
    order: str  # sorts older before newer
    settings: dict | None = None  # a sweep part's result-changing settings
    lm_eval: bool = False  # an lm-evaluation-harness 0.4 file (analysis.scores.lm_eval's task info applies)
    from_sweep: bool = False  # a sweep part: its run was named at discovery, not read from a path
    notes: list[str] = field(default_factory=list)  # what reading it left out
    tokens_from: str = ""  # where the checkpoint's token count came from, for conflict messages
    majority: dict[str, float] = field(default_factory=dict)  # task|fewshot -> majority answer's share (a sweep's)
    sampled: dict[str, int] = field(default_factory=dict)  # task|fewshot -> documents scored, when a sample of them


def results_files(roots: Sequence[Path]) -> list[Path]:
    """Every results file under the roots: lighteval's `results_*.json`, a sweep part's `results.json`, and lm-eval
    0.4 results whatever their name (`analysis.scores.lm_eval.lm_eval_files`: by name or by content)."""
    files: set[Path] = set()
    for root in map(Path, roots):
        if root.is_file():
            files.add(root)
        elif root.is_dir():
            files.update(lm_eval_files(root))  # every results_*.json too
            files.update(p for p in root.rglob("results.json") if (p.parent / PART_MANIFEST).is_file())
        else:
            raise CollectError(f"{root}: no such file or directory; fix: pass lighteval output or sweep directories")
    return sorted(files)


def _load_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CollectError(f"{path}: not UTF-8 text ({error})") from error
    except ValueError as error:
        raise CollectError(f"{path}: corrupt or truncated JSON ({error})") from error
    if not isinstance(data, dict):
        raise CollectError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def _checkpoint_from_config(path: Path, data: dict, tokens_per_step: int | None) -> Checkpoint:
    general = data.get("config_general")
    if not isinstance(general, dict):
        raise CollectError(f"{path}: no config_general; not a lighteval results file")
    found = general.get("model_config")
    model_config: dict[str, Any] = found if isinstance(found, dict) else {}
    model_name = general.get("model_name") or model_config.get("model_name")
    if not isinstance(model_name, str) or not model_name:
        raise CollectError(f"{path}: config_general has no model_name; cannot tell which checkpoint this is")
    revision = model_config.get("revision")
    try:
        return checkpoint_of(path, model_name, revision, tokens_per_step)
    except ScoreTableError as error:
        raise CollectError(str(error)) from error


def _read_lm_eval_file(path: Path, data: dict, tokens_per_step: int | None) -> _ResultFile:
    """An lm-eval 0.4 file in lighteval's results shape; metrics the analysis does not know are left out (noted)."""
    try:
        found = read_results_file(path, tokens_per_step, data)
    except ScoreTableError as error:
        raise CollectError(str(error)) from error
    results = found.lighteval_results()
    unknown = {m for metrics in results.values() for m in metrics if metric_info(m.removesuffix("_stderr")) is None}
    results = {key: {m: v for m, v in metrics.items() if m not in unknown} for key, metrics in results.items()}
    notes = [f"lm-eval: skipped group aggregate(s) {', '.join(sorted(found.groups))}"] if found.groups else []
    notes += [f"lm-eval: one filter per metric: {'; '.join(sorted(found.filters))}"] if found.filters else []
    if unknown:
        names = sorted({m.removesuffix("_stderr") for m in unknown})
        notes.append(f"lm-eval: skipped metrics unknown to the analysis: {', '.join(names)}")
    origin = tokens_origin(found.checkpoint, tokens_per_step)
    sampled = {f"{task}|{fewshot}": n for (task, fewshot), n in found.sampled.items()}
    return _ResultFile(
        path,
        found.checkpoint,
        results,
        {},
        found.order[0],
        lm_eval=True,
        notes=notes,
        tokens_from=origin,
        sampled=sampled,
    )


def _read_file(path: Path, tokens_per_step: int | None) -> _ResultFile:
    data = _load_json(path)
    if is_lm_eval_04(data):
        return _read_lm_eval_file(path, data, tokens_per_step)
    results = data.get("results")
    if not isinstance(results, dict) or not results:
        raise CollectError(f"{path}: no 'results' object (a partial or interrupted write?)")
    _check_results(path, results)
    manifest_path = path.parent / PART_MANIFEST
    info: dict[str, TaskInfo] = {}
    settings = None
    majority: dict[str, float] = {}
    sampled = _capped(data, results, path)  # a plain file's --max-samples cap; a sweep part's manifest knows more
    if path.name == "results.json" and manifest_path.is_file():
        manifest = _load_json(manifest_path)
        try:
            checkpoint = Checkpoint.from_json(manifest["checkpoint"])
            info = {task: TaskInfo(**fields) for task, fields in (manifest.get("task_info") or {}).items()}
        except (KeyError, TypeError) as error:
            raise CollectError(f"{manifest_path}: not a sweep part manifest ({error})") from error
        order = str(manifest.get("finished", ""))
        settings = part_settings(manifest)
        majority = _majority(manifest, manifest_path)
        sampled = _sampled(manifest, manifest_path, sampled)
        if tokens_per_step is not None:  # the explicit option wins over what the sweep recorded
            checkpoint = replace(checkpoint, tokens=tokens_per_step * checkpoint.step)
        origin = tokens_origin(checkpoint, tokens_per_step) if tokens_per_step is not None else str(manifest_path)
    else:
        checkpoint = _checkpoint_from_config(path, data, tokens_per_step)
        stamp = _TIMESTAMP.search(path.name)
        order = stamp.group(1) if stamp else ""
        origin = tokens_origin(checkpoint, tokens_per_step)
    from_sweep = manifest_path.is_file() and path.name == "results.json"
    return _ResultFile(
        path,
        checkpoint,
        results,
        info,
        order,
        settings,
        tokens_from=origin,
        from_sweep=from_sweep,
        majority=majority,
        sampled=sampled,
    )


def _majority(manifest: dict, path: Path) -> dict[str, float]:
    """The part's `majority_baseline` entries (absent in a part written before they were recorded)."""
    found = manifest.get("majority_baseline") or {}
    if not isinstance(found, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1 for v in found.values()
    ):
        raise CollectError(f"{path}: majority_baseline is not a mapping of task|fewshot to a share in [0, 1]")
    return {str(k): float(v) for k, v in found.items()}


def _capped(data: dict, results: dict, path: Path) -> dict[str, int]:
    """task|fewshot -> lighteval's `config_general.max_samples` for every entry of a file evaluated under
    --max-samples (lighteval records the cap, not how many documents each task had: at most that many)."""
    general = data.get("config_general")
    cap = general.get("max_samples") if isinstance(general, dict) else None
    if cap is None:
        return {}
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise CollectError(f"{path}: config_general.max_samples is {cap!r}, not a positive integer")
    return {key: cap for key in results if key != "all"}


def _sampled(manifest: dict, path: Path, capped: dict[str, int]) -> dict[str, int]:
    """A sweep part's `sampled_documents` (task|fewshot -> documents evaluated, for the tasks --max-samples cut);
    a part written before they were recorded keeps the results file's cap (`capped`)."""
    if "sampled_documents" not in manifest:
        return capped
    found = manifest["sampled_documents"]
    if not isinstance(found, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in found.values()
    ):
        raise CollectError(f"{path}: sampled_documents is not a mapping of task|fewshot to a document count")
    return {str(k): int(v) for k, v in found.items()}


def _check_results(path: Path, results: dict) -> None:
    """Every entry is `task|fewshot` with numeric metrics, checked for every file (also one a re-run supersedes)."""
    for key, metrics in results.items():
        if key == "all":
            continue
        _, _, fewshot = key.partition("|")
        if not fewshot.isdigit() or not isinstance(metrics, dict):
            raise CollectError(f"{path}: results entry {key!r} is not 'task|fewshot' with a metrics object")
        for metric, value in metrics.items():
            _number(value, path, f"{key} {metric}")


def _number(value: Any, path: Path, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CollectError(f"{path}: {where} is {value!r}, not a number")
    return float(value)


def _rows(
    result: _ResultFile, keys: set[str], task_info: Mapping[str, TaskInfo], unknown: dict[str, Path]
) -> list[dict]:
    """Score-table rows of the file's `keys` (its task|fewshot entries no newer file supersedes)."""
    rows = []
    checkpoint = result.checkpoint
    for key, metrics in result.results.items():
        if key not in keys:
            continue
        task, _, fewshot = key.partition("|")
        info = result.task_info.get(task) or task_info.get(task)
        if info is None:
            unknown.setdefault(task, result.path)
            continue
        for metric, value in metrics.items():
            if metric.endswith("_stderr"):
                continue
            score = _number(value, result.path, f"{key} {metric}")
            stderr = _number(metrics.get(f"{metric}_stderr"), result.path, f"{key} {metric}_stderr")
            rows.append(
                {
                    "run": checkpoint.run,
                    "seed": checkpoint.seed,
                    "step": checkpoint.step,
                    "tokens": checkpoint.tokens,
                    "task": task,
                    "benchmark": info.benchmark,
                    "language": info.language,
                    "category": info.category,
                    "formulation": info.formulation,
                    "fewshot": int(fewshot),
                    "metric": metric,
                    "score": math.nan if score is None else score,
                    "stderr": None if stderr is None or math.isnan(stderr) else stderr,
                    "random_baseline": float(info.random_baseline),
                    "majority_baseline": result.majority.get(key),
                    "sampled_documents": result.sampled.get(key),
                }
            )
    return rows


def _as_table_info(known: Mapping[str, Any]) -> dict[str, TaskInfo]:
    """The score-table fields of any TASK_INFO mapping (the suite's and the demo's carry more)."""
    return {name: TaskInfo(*(getattr(t, f) for f in TASK_INFO_FIELDS)) for name, t in known.items()}


def suite_task_info() -> dict[str, TaskInfo]:
    """TASK_INFO of the finetasks-afr suite (imports lighteval and builds the suite: a few seconds)."""
    from finetasks_afr.tasks import TASK_INFO

    return _as_table_info(TASK_INFO)


def module_task_info(path: str | Path) -> dict[str, TaskInfo]:
    """TASK_INFO of a custom tasks module (a .py file or an importable name)."""
    from lighteval.tasks.registry import Registry

    module = Registry.create_custom_tasks_module(str(path))
    known = getattr(module, "TASK_INFO", None)
    if not isinstance(known, Mapping):
        raise CollectError(f"{path}: the custom tasks module defines no TASK_INFO; fix: pass --task-info CSV instead")
    return _as_table_info(known)


def collect(
    roots: Sequence[Path],
    *,
    tokens_per_step: int | None = None,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    custom_tasks: str | Path | None = None,
    skip_bad: bool = False,
    skip_unknown: bool = False,
) -> tuple[pl.DataFrame, CollectReport]:
    """The validated score table of every results file under `roots`, and what happened on the way.

    `tokens_per_step`, when given, sets every checkpoint's tokens (overriding trainer_state.json and sweep
    manifests, noted); tasks without metadata are an error naming their files, or skipped (noted) under
    `skip_unknown`.
    """
    report = CollectReport()
    files = results_files(roots)
    if not files:
        raise CollectError(
            f"no lighteval results file (results_*.json) under {', '.join(map(str, roots))}; "
            "fix: point at the --output-dir of lighteval, a sweep's --out or lm-eval 0.4's --output_path"
        )
    parsed: list[_ResultFile] = []
    for path in files:
        try:
            parsed.append(_read_file(path, tokens_per_step))
        except CollectError as error:
            if not skip_bad:
                raise CollectError(f"{error}; fix: repair or delete the file, or pass --skip-bad") from error
            report.skipped.append((str(path), str(error).removeprefix(f"{path}: ")))
    _check_one_setting(parsed)
    try:
        separated, notes = separate_models([r.checkpoint for r in parsed], [r.from_sweep for r in parsed])
    except DiscoveryError as error:
        raise CollectError(str(error)) from error
    for result, checkpoint in zip(parsed, separated, strict=True):
        result.checkpoint = checkpoint
    report.notes += notes
    known = _known_task_info(parsed, task_info, custom_tasks)
    rows, unknown, contributing = _latest_rows(parsed, known, report)
    source = ", ".join(map(str, roots))
    try:
        report.notes += unknown_tasks(
            unknown, source, skip_unknown, also=", --custom-tasks with the lighteval module defining them (and a "
            "TASK_INFO)",
        )  # fmt: skip
        check_token_counts(((r.checkpoint, str(r.path), r.tokens_from) for r in contributing), source)
    except ScoreTableError as error:
        raise CollectError(str(error)) from error
    frame = pl.DataFrame(rows, schema={**SCHEMA, **OPTIONAL_SCHEMA})
    for column in OPTIONAL_SCHEMA:  # no sweep part recorded it, or every score is on every document
        if frame.get_column(column).null_count() == frame.height:
            frame = frame.drop(column)
    report.files = len(parsed)
    report.notes += list(dict.fromkeys(note for result in parsed for note in result.notes))  # once, not per file
    report.notes += token_override_note((r.checkpoint for r in parsed), tokens_per_step)
    try:
        frame, load = validate(frame, source=source)
    except ScoreTableError as error:
        raise CollectError(str(error)) from error
    report.rows = frame.height
    if load.dropped_nan:
        report.notes.append(load.summary())
    report.notes += load.notes
    return frame, report


def _check_one_setting(parsed: list[_ResultFile]) -> None:
    """Sweep parts evaluated with different result-changing settings (`RESULT_SETTINGS`) never share one table:
    the newest-wins rule would otherwise mix, say, max_length 128 and 16 in one column of scores."""
    first: _ResultFile | None = None
    for result in parsed:
        if not result.settings:
            continue
        if first is None or first.settings is None:
            first = result
            continue
        differences = setting_differences(first.settings, result.settings)
        if differences:
            key, old, new = differences[0]
            raise CollectError(
                f"{first.path.parent / PART_MANIFEST} and {result.path.parent / PART_MANIFEST} were evaluated with "
                f"different {key} ({old!r} vs {new!r}, {RESULT_SETTINGS[key]}); one score table holds one setting. "
                "Fix: collect them into separate tables (one sweep directory per setting), or re-evaluate one "
                "of them with the other's setting"
            )


def _known_task_info(
    parsed: list[_ResultFile], task_info: Mapping[str, TaskInfo] | Path | None, custom_tasks: str | Path | None
) -> dict[str, TaskInfo]:
    """Metadata for tasks the sweep manifests do not describe. Precedence: the task-info CSV, the custom module,
    analysis.scores.lm_eval's built-in info (tasks of lm-eval 0.4 files only), the suite; a module (a few seconds
    of lighteval import and task building) is imported only when needed."""
    described = {task for result in parsed for task in result.task_info}
    wanted = {key.partition("|")[0] for result in parsed for key in result.results if key != "all"} - described
    known: dict[str, TaskInfo] = {}
    if task_info is not None:
        known = read_task_info(Path(task_info)) if isinstance(task_info, str | Path) else dict(task_info)
    if wanted - set(known) and custom_tasks is not None:
        known = {**module_task_info(custom_tasks), **known}
    lm_eval_tasks = {key.partition("|")[0] for result in parsed if result.lm_eval for key in result.results}
    known = {**builtin_task_info(lm_eval_tasks - set(known)), **known}  # lm-eval names (AfroBench, Pythia's)
    if wanted - set(known):
        known = {**suite_task_info(), **known}
    return known


def _latest_rows(
    parsed: list[_ResultFile], known: Mapping[str, TaskInfo], report: CollectReport
) -> tuple[list[dict], dict[str, Path], list[_ResultFile]]:
    """Rows of every file, the newest file winning per (checkpoint, task|fewshot); tasks without metadata (with a
    file holding each); the files that gave rows."""
    owner: dict[tuple, _ResultFile] = {}
    for result in sorted(parsed, key=lambda r: r.order):
        c = result.checkpoint
        for key in result.results:
            if key == "all":
                continue
            slot = (c.run, c.seed, c.step, key)
            if slot in owner and owner[slot] is not result:
                report.superseded.append(f"{owner[slot].path} ({key})")
            owner[slot] = result
    kept: dict[int, set[str]] = {}
    for slot, owner_file in owner.items():
        kept.setdefault(id(owner_file), set()).add(slot[3])
    rows: list[dict] = []
    unknown: dict[str, Path] = {}
    for result in parsed:
        rows += _rows(result, kept.get(id(result), set()), known, unknown)
    return rows, unknown, [result for result in parsed if id(result) in kept]
