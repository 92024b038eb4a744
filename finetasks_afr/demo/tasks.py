"""LightEval custom tasks of the demo world: `--custom-tasks finetasks_afr/demo/tasks.py`.

The world directory comes from `$FINETASKS_AFR_DEMO_WORLD` (built by `finetasks_afr.demo.world.build_world`).
Without it the module still imports (`TASKS_TABLE = []`, `TASK_INFO = {}`), so tools that import every module do
not break; `build_tasks(world_root)` builds the table explicitly and names what is missing.

Every task uses lighteval's multiple-choice template with English prompt words (`Question: ...\\nAnswer:`), in CF
or MCF (letters) form, reads its local dataset directory (config = language, evaluation split `test`, few-shot
split `train`), and gets the suite's metrics (`finetasks_afr.benchmarks.common.mc_metrics`). Importing applies
`finetasks_afr.compat` (lighteval 0.13's acc_norm_token and acc_norm_pmi fixes), like `finetasks_afr/tasks.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function
from lighteval.tasks.templates.utils.formulation import CFFormulation, Formulation, MCFFormulation
from lighteval.utils.language import Language

from analysis.table import TaskInfo
from finetasks_afr import compat
from finetasks_afr.benchmarks.common import mc_metrics
from finetasks_afr.demo.world import MANIFEST, DemoTask, World

WORLD_ENV = "FINETASKS_AFR_DEMO_WORLD"
FORMULATION: dict[str, Formulation] = {"CF": CFFormulation(), "MCF": MCFFormulation("Letters")}


def adapter(line: dict) -> dict[str, Any]:
    """A dataset row -> the template's input (question, choices, gold index)."""
    choices = [str(choice) for choice in line["choices"]]
    gold = int(line["gold"])
    if not 0 <= gold < len(choices):
        raise ValueError(f"gold {gold} out of range for {len(choices)} choices")
    return {"question": str(line["question"]), "choices": choices, "gold_idx": gold}


def prompt_function(task: DemoTask) -> Callable[[dict, str], Doc | None]:
    return get_mcq_prompt_function(Language.ENGLISH, adapter, formulation=FORMULATION[task.formulation])


def task_info(task: DemoTask) -> TaskInfo:
    return TaskInfo(task.benchmark, task.language, task.category, task.formulation, task.random_baseline)


def task_config(world: World, task: DemoTask) -> LightevalTaskConfig:
    return LightevalTaskConfig(
        name=task.name,
        prompt_function=prompt_function(task),
        hf_repo=str(world.dataset_dir(task.dataset)),
        hf_subset=task.subset,
        hf_avail_splits=["test", "train"],
        evaluation_splits=["test"],
        few_shots_split="train",
        metrics=mc_metrics(FORMULATION[task.formulation]),
        generation_size=-1,
    )


def build_tasks(world_root: Path | str | None = None) -> tuple[list[LightevalTaskConfig], dict[str, TaskInfo]]:
    """(TASKS_TABLE, TASK_INFO) of the world at `world_root` (default: `$FINETASKS_AFR_DEMO_WORLD`)."""
    root = world_root if world_root is not None else os.environ.get(WORLD_ENV)
    if not root:
        raise FileNotFoundError(f"no demo world: set {WORLD_ENV} to a directory built by build_world")
    if not (Path(root) / MANIFEST).is_file():
        raise FileNotFoundError(
            f"no demo world at {root} ({WORLD_ENV}={os.environ.get(WORLD_ENV)!r}): {MANIFEST} is missing; "
            "build it with finetasks_afr.demo.world.build_world"
        )
    world = World.load(Path(root))
    return [task_config(world, task) for task in world.tasks], {task.name: task_info(task) for task in world.tasks}


compat.apply()
TASKS_TABLE: list[LightevalTaskConfig] = []
TASK_INFO: dict[str, TaskInfo] = {}
if os.environ.get(WORLD_ENV):
    TASKS_TABLE, TASK_INFO = build_tasks()

__all__ = ["TASKS_TABLE", "TASK_INFO", "WORLD_ENV", "build_tasks"]
