"""Running lighteval 0.13 in-process without paying for what a custom suite does not need."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock


@contextmanager
def custom_tasks_only() -> Iterator[None]:
    """Within the block, lighteval's registry loads only the custom tasks module it is given.

    lighteval 0.13 always imports every built-in task (10-15 s, and a download of tinyBenchmarks.pkl that fails
    offline); a pipeline over our own suite needs none of them.
    """
    from lighteval.tasks.registry import Registry

    def load(custom_tasks=None, load_multilingual=False):
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    with mock.patch.object(Registry, "load_all_task_configs", staticmethod(load)):
        yield


def clear_prediction_cache(model_dir: Path) -> None:
    """Delete lighteval's prediction cache, which lives in `<model_dir>/<16 hex>/` for an absolute model_name
    and is keyed on the model path, not the weights (overwritten weights would get the old predictions)."""
    for cached in Path(model_dir).iterdir():
        if cached.is_dir() and len(cached.name) == 16:
            shutil.rmtree(cached)
