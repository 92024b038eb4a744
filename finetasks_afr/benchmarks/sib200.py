"""SIB-200: topic classification of FLORES sentences, 7 topics, every African variant (NLU).

The topic names are English in both prompt variants (no reviewed translations of them exist here).
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, label_index
from finetasks_afr.languages import covered_by

TOPICS = ("science/technology", "travel", "politics", "sports", "health", "entertainment", "geography")


def adapter(line: dict) -> dict:
    return {"question": clean(line["text"]), "choices": list(TOPICS), "gold_idx": label_index(line["category"], TOPICS)}


FAMILY = Family(
    benchmark="sib200",
    dataset="sib200",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(TOPICS),
    evaluation_splits=("test",),
    few_shots_split="train",
    hf_avail_splits=("train", "validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("sib200"))
