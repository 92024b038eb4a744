"""LightEval custom tasks of the demo world: `--custom-tasks finetasks_afr/demo/tasks.py`.

The world directory comes from `$FINETASKS_AFR_DEMO_WORLD` (built by `finetasks_afr.demo.world.build_world`).
Without it the module still imports (`TASKS_TABLE = []`, `TASK_INFO = {}`), so tools that import every module do
not break; `build_tasks(world_root)` builds the table explicitly and names what is missing.

Every multiple-choice task uses lighteval's multiple-choice template with English prompt words
(`Question: ...\\nAnswer:`), in CF or MCF (letters) form, reads its local dataset directory (config = language,
evaluation split `test`, few-shot split `train`), and gets the suite's metrics
(`finetasks_afr.benchmarks.common.mc_metrics`). The perplexity tasks (`demotext_<lang>`, formulation PPL) are built
as the suite's `flores_ppl_<iso3>` are, with `finetasks_afr.benchmarks.perplexity`'s own prompt function, metrics
and metadata: the held-out sentence is the query, 0-shot, category GEN, no random baseline (NaN). Importing applies
`finetasks_afr.scoring.compat` (lighteval 0.13's acc_norm_token, acc_norm_pmi and loglikelihood_rolling fixes), like
`finetasks_afr/tasks.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc
from lighteval.tasks.templates.multichoice import MCQInput, get_mcq_prompt_function
from lighteval.tasks.templates.utils.formulation import CFFormulation, Formulation, MCFFormulation
from lighteval.utils.language import Language

from analysis.scores.task_info import TaskInfo
from finetasks_afr.benchmarks import perplexity
from finetasks_afr.benchmarks.common import mc_metrics
from finetasks_afr.demo.world import MANIFEST, PPL, TEXT_FIELD, DemoTask, World
from finetasks_afr.scoring import compat

WORLD_ENV = "FINETASKS_AFR_DEMO_WORLD"
FORMULATION: dict[str, Formulation] = {"CF": CFFormulation(), "MCF": MCFFormulation("Letters")}


def adapter(line: dict) -> MCQInput:
    """A dataset row -> the template's input (question, choices, gold index)."""
    choices = [str(choice) for choice in line["choices"]]
    gold = int(line["gold"])
    if not 0 <= gold < len(choices):
        raise ValueError(f"gold {gold} out of range for {len(choices)} choices")
    return {"question": str(line["question"]), "choices": choices, "gold_idx": gold}


def is_perplexity(task: DemoTask) -> bool:
    return task.formulation == PPL


def prompt_function(task: DemoTask) -> Callable[[dict, str], Doc | None]:
    """lighteval's own multiple-choice template (English prompt words), as the real suite uses; for perplexity,
    the suite's text prompt (the cleaned sentence is the query, no choices)."""
    if is_perplexity(task):
        return perplexity.text_prompt(task.name, TEXT_FIELD)
    return get_mcq_prompt_function(Language.ENGLISH, adapter, formulation=FORMULATION[task.formulation])


def task_info(task: DemoTask) -> TaskInfo:
    """What the collector needs to fill the score table's task columns (a perplexity has no chance level: NaN,
    as `perplexity.NO_RANDOM_BASELINE`, so the analysis reports non-randomness as not applicable)."""
    if is_perplexity(task):
        return TaskInfo(task.benchmark, task.language, perplexity.CATEGORY, perplexity.FORMULATION,
                        perplexity.NO_RANDOM_BASELINE)  # fmt: skip
    if task.random_baseline is None:
        raise ValueError(f"{task.name}: a multiple-choice task needs its random baseline")
    return TaskInfo(task.benchmark, task.language, task.category, task.formulation, task.random_baseline)


def data_version(world: World, task: DemoTask) -> int:
    """The task's `version`, derived from its data files' names (which hold their content digests).

    lighteval keys its prediction cache on the task config, not on the data: without this, a rebuilt world with
    other items would be answered from the old world's cached predictions."""
    files = world.data_files.get(task.dataset, {}).get(task.subset, {})
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode("utf-8")).hexdigest()
    return int(digest[:8], 16)


def task_config(world: World, task: DemoTask) -> LightevalTaskConfig:
    """A task reading the world's local dataset folder (no hub), with the suite's metrics.

    Perplexity tasks, like the suite's, have only a `test` split and no few-shot split (0-shot only)."""
    ppl = is_perplexity(task)
    return LightevalTaskConfig(
        name=task.name,
        prompt_function=prompt_function(task),  # type: ignore[arg-type]  # lighteval skips rows that give None
        hf_repo=str(world.dataset_dir(task.dataset)),
        hf_subset=task.subset,
        hf_avail_splits=["test"] if ppl else ["test", "train"],
        evaluation_splits=["test"],
        few_shots_split=None if ppl else "train",
        metrics=list(perplexity.METRICS) if ppl else mc_metrics(FORMULATION[task.formulation]),
        generation_size=None if ppl else -1,
        version=data_version(world, task),
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
