"""One module per benchmark, discovered rather than listed: adding a benchmark is adding a file.

A benchmark module (any module of this package except `common`) defines `tasks() -> list[LightevalTaskConfig]`
and, when it reads datasets, `SOURCES: tuple[DatasetSource, ...]` holding everything about them: hub repository
and revision, configs and language codes, exclusions, splits, raw-file importer and text field
(:mod:`finetasks_afr.data.sources` and :mod:`finetasks_afr.data.mirror` only drive those declarations). The task
configs themselves (adapter, template, few-shot split) are built by the module's `tasks()`.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

from lighteval.tasks.lighteval_task import LightevalTaskConfig

NOT_BENCHMARKS = frozenset({"common", "translation"})


@cache
def benchmark_modules() -> tuple[ModuleType, ...]:
    """Every benchmark module of this package, imported, in name order."""
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        if info.name.startswith("_") or info.name in NOT_BENCHMARKS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not callable(getattr(module, "tasks", None)):
            raise RuntimeError(f"benchmark module {module.__name__} defines no tasks() function")
        modules.append(module)
    return tuple(modules)


def all_tasks() -> list[LightevalTaskConfig]:
    """Every task of the suite (call after finetasks_afr.prompts.literals.register_literals())."""
    return [config for module in benchmark_modules() for config in module.tasks()]
