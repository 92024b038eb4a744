"""AfriSenti: 3-way tweet sentiment (NLU). Sentiment names are English in both prompt variants."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, label_index
from finetasks_afr.languages import covered_by

SENTIMENTS = ("negative", "positive", "neutral")  # lm-evaluation-harness order


def adapter(line: dict) -> dict:
    return {
        "question": clean(line["tweet"]),
        "choices": list(SENTIMENTS),
        "gold_idx": label_index(line["label"], SENTIMENTS),
    }


FAMILY = Family(
    benchmark="afrisenti",
    dataset="afrisenti",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(SENTIMENTS),
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("afrisenti"))
