"""A minimal multiple-choice probe task (query, choices, gold, unconditioned query) read from a local dataset,
with any of the four log-likelihood accuracies: what the compat test and the PMI bench evaluate."""

from __future__ import annotations

import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lighteval.tasks.lighteval_task import LightevalTaskConfig


def tasks_module(module_name: str, configs: list[LightevalTaskConfig]) -> types.ModuleType:
    """A module that lighteval's Registry reads as custom tasks (`custom_tasks=`): its TASKS_TABLE is `configs`.

    Through `__dict__` because ModuleType declares no TASKS_TABLE attribute for a type checker."""
    module = types.ModuleType(module_name)
    module.__dict__["TASKS_TABLE"] = configs
    return module


def probe_task_module(data_dir: Path, task: str, metric_names: tuple[str, ...], module_name: str) -> types.ModuleType:
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
    from lighteval.metrics.normalizations import LogProbCharNorm, LogProbPMINorm, LogProbTokenNorm
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import Doc

    def prompt(line: dict[str, Any], task_name: str) -> Doc:
        return Doc(
            task_name=task_name,
            query=line["query"],
            choices=list(line["choices"]),
            gold_index=line["gold"],
            unconditioned_query=line["uq"],
        )

    metrics = {
        "acc": LogLikelihoodAccMetric(normalization=None),
        "acc_norm": LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
        "acc_norm_token": LogLikelihoodAccMetric(normalization=LogProbTokenNorm()),
        "acc_norm_pmi": LogLikelihoodAccMetric(normalization=LogProbPMINorm()),
    }
    config = LightevalTaskConfig(
        name=task,
        prompt_function=prompt,
        hf_repo=str(data_dir),
        hf_subset="default",
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        metrics=[metrics[name] for name in metric_names],
    )
    return tasks_module(module_name, [config])
