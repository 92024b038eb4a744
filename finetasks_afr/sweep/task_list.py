"""The `--tasks` argument of a sweep: parsed from a list or a file, and checked against the custom tasks module (names,
few-shot limits) before any model loads.

A misspelt task or a 5-shot request of a 0-shot-only task would otherwise surface once per checkpoint, after each
model load, deep inside lighteval; here it is one `TaskListError` naming the entry, its close matches and the fix.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.base.encoding import TextEncodingError, read_user_text
from analysis.base.names import control_character_problem, nfc

DEFAULT_CUSTOM_TASKS = str(Path(__file__).resolve().parent.parent / "tasks.py")


class TaskListError(ValueError):
    """A task list entry that is not `task`, `task|fewshot` or `suite|task|fewshot`."""


def _task_file(spec: str | Path) -> Path | None:
    """The task file `spec` names, or None when it is a task list.

    A comma or a `|` makes it a list without asking the file system (a 27-task list is longer than a file name may
    be, and stat() would fail on it). A single word is a file when one exists by that name; one that looks like a
    path (a folder separator or a file suffix) but does not exist is an error naming it, not a task called so.
    """
    text = str(spec)
    if isinstance(spec, str) and ("," in text or "|" in text):
        return None
    path = Path(spec)
    try:
        if path.is_file():
            return path
    except OSError as error:  # a name too long, or not readable: say so
        raise TaskListError(f"--tasks {text[:200]}: cannot read it as a task file ({error.strerror})") from error
    if isinstance(spec, Path) or "/" in text or path.suffix in (".txt", ".tasks", ".list", ".lst"):
        raise TaskListError(
            f"--tasks {text}: no such task file; fix: check the path, or give the tasks as a comma-separated "
            "list (task|fewshot,task|fewshot)"
        )
    return None


def parse_tasks(spec: str | Path) -> list[str]:
    """`task|fewshot` entries from a file (one per line, `#` comments) or a comma-separated list.

    Accepts `task` (0-shot), `task|k` and lighteval's old `suite|task|k` (the suite is dropped), so the suite
    files written by `finetasks-afr select` can be swept as they are.
    """
    path = _task_file(spec)
    if path is not None:
        try:
            text = read_user_text(path)
        except TextEncodingError as error:
            raise TaskListError(str(error)) from None
        # "\n" only: str.splitlines would also split at a vertical tab or U+0085 inside an entry, hiding them
        raw = [line.split("#", 1)[0].strip() for line in text.split("\n")]
        source = str(path)
    else:
        raw = [item.strip() for item in str(spec).split(",")]
        source = "the task list"
    out: list[str] = []
    for entry in filter(None, raw):
        problem = control_character_problem(entry, "task entry", source)
        if problem:
            raise TaskListError(problem)
        parts = nfc(entry).split("|")
        if len(parts) == 3:
            parts = parts[1:]
        if len(parts) == 1:
            parts.append("0")
        if len(parts) != 2 or not parts[0] or not parts[1].isdigit():
            raise TaskListError(f"{source}: {entry!r} is not task, task|fewshot or suite|task|fewshot; fix that entry")
        normalised = f"{parts[0]}|{int(parts[1])}"
        if normalised not in out:
            out.append(normalised)
    if not out:
        raise TaskListError(f"{source}: no task given; fix: list task|fewshot, comma-separated or one per line")
    return out


def custom_tasks_module(location: str) -> Any:
    """The custom tasks module at `location` (a .py file or an importable name), imported once per process and
    data directory: the sweep checks the task names with it before any model loads, and the in-process evaluator
    reuses it.

    The suite's task configs name their dataset's location (the mirror in $FINETASKS_AFR_DATA_DIR, else the hub)
    when the module is executed, so a module built under another data directory would send an in-process sweep
    whose spec sets a new one to the old location (found by the study's CI slice run after other sweeps in one
    pytest worker: every task fell back to the hub).
    """
    return _custom_tasks_module(location, os.environ.get("FINETASKS_AFR_DATA_DIR", ""))


@functools.cache
def _custom_tasks_module(location: str, data_dir: str) -> Any:
    from lighteval.tasks.registry import Registry

    return Registry.create_custom_tasks_module(location)


def check_tasks(tasks: Sequence[str], custom_tasks: str | None, builtin_tasks: bool = False) -> None:
    """Every requested task exists in the custom tasks module, else a `TaskListError` naming the unknown ones with
    their close matches; run before any model loads (lighteval would find it once per checkpoint, after loading
    each). With `builtin_tasks` the built-in registry (10-15 s to build) is not consulted, so no check is made."""
    if builtin_tasks or not custom_tasks:
        return
    module = custom_tasks_module(custom_tasks)
    known = sorted({config.name for config in getattr(module, "TASKS_TABLE", [])})
    unknown = [task.split("|")[0] for task in tasks if task.split("|")[0] not in known]
    if not unknown:
        check_fewshot_limits(list(tasks))
        return
    described = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(name, known, n=3)
        described.append(f"unknown task {name!r}" + (f" (close: {', '.join(close)})" if close else ""))
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    raise TaskListError(
        f"--tasks: {'; '.join(described)}{more}; the known tasks are the {len(known)} names in TASKS_TABLE of "
        f"{custom_tasks}; fix the names, or pass --custom-tasks with the module that defines them "
        "(--builtin-tasks for lighteval's own)"
    )


def check_fewshot_limits(tasks: list[str]) -> None:
    """A `TaskListError` naming every `task|k` whose task allows fewer than k few-shot examples (a 0-shot-only
    perplexity task asked with k > 0; the limits are set where the tasks are defined, `compat.limit_fewshot`), so
    that it is refused before any model loads instead of dying in lighteval's sampler (issue 26)."""
    from finetasks_afr.scoring.compat import fewshot_limit_problem

    found = []
    for task in tasks:
        parts = task.split("|")  # task, task|k or suite|task|k (entries are normalised to task|k)
        k = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 0
        problem = fewshot_limit_problem(parts[-2] if len(parts) > 1 else parts[0], k)
        if problem is not None:
            found.append(problem)
    if found:
        raise TaskListError("--tasks: " + "; ".join(found))
