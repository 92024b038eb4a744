"""0-shot-only tasks asked with k > 0 get a named error before any model loads (issue 26, item 4).

The perplexity tasks (`flores_ppl_*`, `belebele_ppl_*`) are marked 0-shot only where they are defined
(`compat.limit_fewshot`); the sweep's task check and lighteval's own task building (compat fix 5, which the suite
module applies) refuse `task|k`, k > 0, naming the task, its maximum few-shot count and the fix. Stock lighteval
instead dies in its few-shot sampler with `TypeError: 'NoneType' object is not subscriptable`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import finetasks_afr.tasks as suite
from finetasks_afr.scoring import compat


def test_the_perplexity_tasks_and_only_they_are_marked_zero_shot_only() -> None:
    ppl = {c.name for c in suite.TASKS_TABLE if suite.TASK_INFO[c.name].benchmark in ("flores_ppl", "belebele_ppl")}
    assert len(ppl) > 40
    limited = {c.name for c in suite.TASKS_TABLE if compat.fewshot_limit(c.name) is not None}
    assert limited == ppl
    assert all(compat.fewshot_limit(n).maximum == 0 for n in limited)  # type: ignore[union-attr]


def test_the_sweep_task_check_names_the_task_its_maximum_and_the_fix() -> None:
    from finetasks_afr.sweep.task_list import DEFAULT_CUSTOM_TASKS, TaskListError, check_tasks

    check_tasks(["flores_ppl_hau|0", "belebele_ppl_hau|0", "sib200_hau_cf|5"], DEFAULT_CUSTOM_TASKS)
    with pytest.raises(TaskListError) as error:
        check_tasks(["flores_ppl_hau|5", "belebele_ppl_zul|1"], DEFAULT_CUSTOM_TASKS)
    message = str(error.value)
    for expected in ("flores_ppl_hau", "belebele_ppl_zul", "0-shot only", "maximum few-shot count 0"):
        assert expected in message
    assert "fix: ask for flores_ppl_hau|0" in message and "fix: ask for belebele_ppl_zul|0" in message


def test_lighteval_builds_no_task_from_a_config_asking_too_many() -> None:
    """lighteval's registry and Pipeline build every LightevalTask before they load data or the model."""
    from lighteval.tasks.lighteval_task import LightevalTask

    assert compat.FIX_FEWSHOT_LIMIT in compat.applied()
    config = next(c for c in suite.TASKS_TABLE if c.name == "flores_ppl_hau")
    LightevalTask(dataclasses.replace(config, num_fewshots=0))
    with pytest.raises(compat.FewShotLimitError, match=r"flores_ppl_hau asked with 5 few-shot") as error:
        LightevalTask(dataclasses.replace(config, num_fewshots=5))
    assert isinstance(error.value, ValueError) and "fix: ask for flores_ppl_hau|0" in str(error.value)


def test_the_lighteval_pipeline_refuses_before_loading_the_model(tmp_path: Path) -> None:
    """The plain lighteval Python API (the CLI's path): the named error, not the model's missing weights."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    params = PipelineParameters(launcher_type=ParallelismManager.ACCELERATE, custom_tasks_directory=suite)  # type: ignore[arg-type]
    missing = TransformersModelConfig(model_name=str(tmp_path / "no-such-model"), device="cpu")
    with pytest.raises(compat.FewShotLimitError, match=r"belebele_ppl_hau.*maximum few-shot count 0"):
        Pipeline(
            tasks="belebele_ppl_hau|3",
            pipeline_parameters=params,
            evaluation_tracker=EvaluationTracker(output_dir=str(tmp_path)),
            model_config=missing,
        )


def test_stock_lighteval_still_dies_in_its_sampler() -> None:
    """Why the fix exists: lighteval 0.13's balanced sampler on a perplexity task's gold-less documents."""
    assert compat.zero_shot_sampler_bug_present()
