"""NaijaRC: Nigerian-language reading comprehension (hau, ibo, yor) (RC).

Only a test split exists, so few-shot examples come from it; finetasks_afr.prompts.fewshot keeps every document (and any
question with the same text) out of its own examples.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, same_codes

SOURCES = (
    DatasetSource(
        key="naijarc",
        hub_repo="Davlan/NaijaRC",
        revision=None,
        splits=("test",),
        codes=same_codes("hau ibo yor"),
        notes="Unpinned. Configs hau ibo yor; only the test split is known. No raw source: hub only.",
    ),
)


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
    few_shots_split="test",  # the only split: see the module docstring
    hf_avail_splits=("test",),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("naijarc"))
