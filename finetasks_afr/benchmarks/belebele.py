"""Belebele: multiple-choice reading comprehension on FLORES passages, every African variant (RC)."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.languages import covered_by


def adapter(line: dict) -> dict:
    choices = [clean(line[f"mc_answer{i}"]) for i in range(1, 5)]
    return {
        "context": clean(line["flores_passage"]),
        "question": clean(line["question"]),
        "choices": choices,
        "gold_idx": letter_index(line["correct_answer_num"], 4),  # one-indexed "1".."4"
    }


FAMILY = Family(
    benchmark="belebele",
    dataset="belebele",
    category="RC",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="test",  # the only split; lighteval never shows a document as its own example
    hf_avail_splits=("test",),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("belebele"))
