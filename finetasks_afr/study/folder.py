"""A finished study's folder, checked before `study --reanalyse` copies or analyses anything.

`--reanalyse DIR` trusts two files that belong together: the score table (`scores.parquet`) and the study's record
(`study.json`, whose `sizes` set the consistency window and whose `tasks` say what was evaluated). Each way they
can be wrong is a named error here, before any work: a missing or non-regular file, a truncated or non-JSON record,
a record without `sizes` (or with a field of the wrong type), a table that polars cannot read (named by its path in
DIR, not by a copy), and a table whose runs, seeds or tasks are not the study's (another study's or the demo's
table beside this study's record would otherwise be analysed and report "0 of 4" designed orders recovered without
saying why).
"""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from analysis.base.input_file import input_problem
from finetasks_afr.study.design import ModelShape, StudySizes

if TYPE_CHECKING:
    import polars as pl

    from analysis.scores.validate import LoadReport

SCORES, RECORD = "scores.parquet", "study.json"
OPTIONAL_SIZES = frozenset({"lr_scheduler"})
"""`sizes` fields a record may lack: recorded before the field existed (round 1), read with their old default."""
POSITIVE_SIZES = frozenset({"tokens_per_run", "seq_len", "batch_size", "checkpoints"})
"""Sizes the analysis divides by (the training steps, the consistency window): zero or less is no study's."""
_SHOWN = 5  # names listed in a message before "and N more"


class StudyFolderError(ValueError):
    """The folder given to `study --reanalyse` is not a finished study's: the message names the file, the field and
    the fix."""


@dataclass(frozen=True)
class StudyFolder:
    """A checked study folder: its record, the sizes it ran with, and its score table as read and validated."""

    folder: Path
    record: dict[str, Any]
    sizes: StudySizes
    table: pl.DataFrame
    load_report: LoadReport


def _listed(names: Sequence[object]) -> str:
    shown = ", ".join(str(name) for name in names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value can stand for a field annotated `hint` (a tuple is a JSON list, a dataclass an object)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, option) for option in get_args(hint))
    if origin is tuple:
        return isinstance(value, list) and all(_fits(item, get_args(hint)[0]) for item in value)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(option) for option in get_args(hint))
    if origin is tuple:
        item = get_args(hint)[0]
        return "a list of " + {int: "integers", float: "numbers", str: "strings"}.get(item, _type_name(item))
    if hint is type(None):
        return "null"
    return {int: "an integer", float: "a number", str: "a string"}.get(hint, "an object")


def _field_names(kind: type) -> set[str]:
    return {field.name for field in dataclasses.fields(kind)}


def _check_fields(raw: Mapping[str, Any], kind: type, where: str, optional: frozenset[str] = frozenset()) -> None:
    """Every field of the dataclass `kind` present in `raw` (unless `optional`) with a value of its type."""
    hints = get_type_hints(kind)
    missing = [field.name for field in dataclasses.fields(kind) if field.name not in raw and field.name not in optional]
    if missing:
        raise StudyFolderError(f"{where} lacks {_listed(missing)}")
    for name, hint in hints.items():
        if name in raw and not _fits(raw[name], hint):
            raise StudyFolderError(f"{where}.{name} is {json.dumps(raw[name])[:80]}, not {_type_name(hint)}")


def recorded_sizes(record: Mapping[str, Any]) -> StudySizes:
    """The sizes a finished study ran with, from its `study.json`: a study published before the defaults changed
    (round 1, docs/study/round-1) is re-analysed with its own consistency window (half of its own training), not
    with the current defaults'. A record without `sizes`, or with a field missing or of the wrong type, raises
    `StudyFolderError` naming the field (the message starts at `sizes`; `read_record` puts the file before it)."""
    sizes = record.get("sizes")
    if not isinstance(sizes, dict):
        raise StudyFolderError("sizes is missing or not an object (the sizes the study ran with)")
    _check_fields(sizes, StudySizes, "sizes", OPTIONAL_SIZES)
    _check_fields(sizes["shape"], ModelShape, "sizes.shape")
    for name in sorted(POSITIVE_SIZES):
        if sizes[name] <= 0:
            raise StudyFolderError(f"sizes.{name} is {sizes[name]}; a study's must be positive")
    raw = {key: value for key, value in sizes.items() if key in _field_names(StudySizes)}
    raw["shape"] = ModelShape(**{key: value for key, value in raw["shape"].items() if key in _field_names(ModelShape)})
    for key in ("seeds", "mixes", "tasks"):
        if raw.get(key) is not None:
            raw[key] = tuple(raw[key])
    raw.setdefault("lr_scheduler", "constant_with_warmup")  # recorded before the field existed: a constant rate
    return StudySizes(**raw)


def _regular_file(path: Path, what: str) -> Path:
    """`path` when it is a regular file; a missing one, a folder, a FIFO, a device, a broken link or a loop of links
    is a named error, found without opening it (`analysis.base.input_file`: a FIFO would block the open)."""
    problem = input_problem(path, what=what)
    if problem is not None:
        raise StudyFolderError(problem)
    if not path.exists():
        raise StudyFolderError(
            f"{path} is missing: --reanalyse takes the folder of a finished study, holding its {SCORES} and "
            f"{RECORD} (e.g. docs/study)"
        )
    return path


def read_record(path: Path) -> tuple[dict[str, Any], StudySizes]:
    """The study's record at `path` and its sizes, checked: JSON, an object, `sizes` and `tasks` of their types."""
    fix = f"restore it from the study it belongs to (git checkout {path}, or rerun `make study`)"
    try:
        record = json.loads(_regular_file(path, "study record (study.json)").read_text(encoding="utf-8"))
    except OSError as error:
        raise StudyFolderError(f"{path} could not be read ({error}); make it readable, or {fix}") from None
    except UnicodeDecodeError as error:
        raise StudyFolderError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start}); {fix}") from None
    except json.JSONDecodeError as error:
        raise StudyFolderError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}; a truncated "
            f"file?); {fix}"
        ) from None
    if not isinstance(record, dict):
        raise StudyFolderError(f"{path} holds a JSON {type(record).__name__}, not a study's record (an object); {fix}")
    try:
        sizes = recorded_sizes(record)
    except StudyFolderError as error:
        raise StudyFolderError(f"{path}: {error}; {fix}") from None
    tasks = record.get("tasks")
    if not (isinstance(tasks, list) and tasks and all(isinstance(task, str) for task in tasks)):
        raise StudyFolderError(f"{path}: tasks is missing or not a non-empty list of task names; {fix}")
    return record, sizes


def _mismatch(values: set[Any], expected: set[Any]) -> list[Any]:
    return sorted(values - expected, key=str)


def check_study_folder(folder: Path) -> StudyFolder:
    """The study in `folder`, every check passed (module docstring), or `StudyFolderError` / `ScoreTableError`
    naming the file in `folder`; nothing is copied or written."""
    from analysis.scores.read import read_scores

    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise StudyFolderError(f"{folder} {what}; pass the folder of a finished study (e.g. docs/study)")
    scores_path = _regular_file(folder / SCORES, "score table")
    record_path = folder / RECORD
    record, sizes = read_record(record_path)
    try:
        table, load_report = read_scores(scores_path)  # a truncated table is named by this path, the user's
    except OSError as error:
        raise StudyFolderError(f"{scores_path} could not be read ({error}); make it readable") from None
    tasks = set(table["task"].unique().to_list())
    runs = set(table["run"].unique().to_list())
    seeds = set(table["seed"].drop_nulls().unique().to_list()) if "seed" in table.columns else set()
    not_the_study = f"{scores_path} and {record_path} are not one study's"
    fix = f"pass a folder whose {SCORES} is the study's collected table (e.g. docs/study, or `make study`'s out/study)"
    problems = []
    if unknown := _mismatch(runs, set(sizes.mixes)):
        problems.append(f"the table's run(s) {_listed(unknown)} are not the study's mixes ({_listed(sizes.mixes)})")
    elif absent := _mismatch(set(sizes.mixes), runs):
        problems.append(f"the table lacks the study's mix(es) {_listed(absent)}")
    if unknown := _mismatch(seeds, set(sizes.seeds)):
        problems.append(f"the table's seed(s) {_listed(unknown)} are not the study's ({_listed(sizes.seeds)})")
    if unknown := _mismatch(tasks, set(record["tasks"])):
        problems.append(f"{len(unknown)} of the table's {len(tasks)} task(s) are not in the record's tasks "
                        f"({_listed(unknown)})")  # fmt: skip
    if problems:
        raise StudyFolderError(f"{not_the_study}: {'; '.join(problems)}; {fix}")
    return StudyFolder(folder, record, sizes, table, load_report)


__all__ = ["RECORD", "SCORES", "StudyFolder", "StudyFolderError", "check_study_folder", "read_record", "recorded_sizes"]
