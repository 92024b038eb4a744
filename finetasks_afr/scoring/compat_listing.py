"""`lighteval tasks list` shows no task in lighteval 0.13: a version-guarded fix, applied by `finetasks_afr/tasks.py`.

lighteval 0.13's `Registry.print_all_tasks` keeps a registered task only when the part of its name before `|` is a
suite (`CORE_SUITES`: "helm", "lighteval", "custom", ...), but the same release keys its registry by the config's
bare name (`afrixnli_hau_cf`, `arc_easy`: configs no longer carry a suite), so no name passes and the command prints
"Total tasks displayed: 0", for the built-in tasks and for `--custom-tasks finetasks_afr/tasks.py` alike.

The fix replaces `Registry.print_all_tasks` with a listing of what the registry holds: the suite's tasks (the names
`apply` is given) under "custom", the rest under "lighteval", one name a line, then the total. Importing the
custom-tasks module happens inside `Registry.__init__`, before the command prints, so the task module's `apply()`
comes in time. Only a 0.13.x release whose stock listing shows the bug is patched (`bug_present`);
`tests/tasks/test_tasks_cli.py` checks the stock method still drops every bare name, so a lighteval that fixes it
shows up as a failing test, not as a silent second fix.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Collection
from contextlib import redirect_stdout
from typing import Any

from finetasks_afr.data.lighteval_release import in_series, lighteval_version

AFFECTED_SERIES = (0, 13)
_ORIGINAL: dict[str, Callable[..., Any]] = {}
_SUITE: set[str] = set()


def bug_present() -> bool:
    """Whether the installed `Registry.print_all_tasks` drops a registered task with a bare name (stock 0.13)."""
    from lighteval.tasks.registry import Registry

    original = _ORIGINAL.get("print_all_tasks", Registry.print_all_tasks)
    registry = Registry.__new__(Registry)
    registry._task_registry = {"finetasks_afr_probe": None}  # type: ignore[dict-item]
    out = io.StringIO()
    with redirect_stdout(out):
        original(registry)
    return "finetasks_afr_probe" not in out.getvalue()


def print_all_tasks(self: Any, suites: str | None = None) -> None:
    """Every registered task: the suite's under "custom", lighteval's own under "lighteval", then the total."""
    names = sorted(self._task_registry)
    groups = {"custom": [n for n in names if n in _SUITE], "lighteval": [n for n in names if n not in _SUITE]}
    print("Displaying tasks for suites: " + ", ".join(group for group, members in groups.items() if members))
    print("=" * 60)
    for group, members in groups.items():
        if members:
            print(f"\n- {group}:")
            for name in members:
                print(f"  - {name}")
    print(f"\nTotal tasks displayed: {len(names)}")


def apply(suite_names: Collection[str]) -> str:
    """Install the listing (idempotent) for a 0.13.x lighteval that has the bug; 'applied' or why not."""
    _SUITE.update(suite_names)
    version = lighteval_version()
    if not in_series(version, AFFECTED_SERIES):
        return f"skipped: lighteval {version} is not a 0.13.x release"
    from lighteval.tasks.registry import Registry

    if "print_all_tasks" in _ORIGINAL:
        return "applied"
    if not bug_present():
        return "skipped: this lighteval lists bare task names"
    _ORIGINAL["print_all_tasks"] = Registry.print_all_tasks
    Registry.print_all_tasks = print_all_tasks  # type: ignore[method-assign]
    return "applied"


def restore() -> None:
    """Put lighteval's own listing back (for tests)."""
    from lighteval.tasks.registry import Registry

    if "print_all_tasks" in _ORIGINAL:
        Registry.print_all_tasks = _ORIGINAL.pop("print_all_tasks")  # type: ignore[method-assign]
