"""AfriMMLU (IrokoBench): MMLU questions translated into African languages (GK)."""

from __future__ import annotations

import ast

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.languages import covered_by


def adapter(line: dict) -> dict:
    choices = line["choices"]
    if isinstance(choices, str):  # the published main revision stores a Python-list string
        choices = ast.literal_eval(choices)
    choices = [clean(choice) for choice in choices]
    return {
        "question": clean(line["question"]),
        "choices": choices,
        "gold_idx": letter_index(line["answer"], len(choices)),
    }


FAMILY = Family(
    benchmark="afrimmlu",
    dataset="afrimmlu",
    category="GK",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("afrimmlu"))
