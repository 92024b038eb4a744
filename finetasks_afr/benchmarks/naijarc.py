"""NaijaRC: Nigerian-language reading comprehension (hau, ibo, yor) (RC)."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.languages import covered_by


def adapter(line: dict) -> dict:
    choices = [clean(line[f"options_{letter}"]) for letter in "ABCD"]
    return {
        "context": clean(line["story"]),
        "question": clean(line["question"]),
        "choices": choices,
        "gold_idx": letter_index(line["Answer"], 4),  # a letter, possibly padded with spaces
    }


FAMILY = Family(
    benchmark="naijarc",
    dataset="naijarc",
    category="RC",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="test",
    hf_avail_splits=("test",),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("naijarc"))
