"""MasakhaNEWS: news topic classification from the headline, 7 topics (NLU).

Rows carry the topic as `category` (a name) or, in the older loading-script schema, `label` (an index in
alphabetical order); both are accepted. Topic names are English in both prompt variants.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, label_index
from finetasks_afr.languages import covered_by

TOPICS = ("business", "entertainment", "health", "politics", "religion", "sports", "technology")


def adapter(line: dict) -> dict:
    label = line["category"] if line.get("category") is not None else line["label"]
    return {"question": clean(line["headline"]), "choices": list(TOPICS), "gold_idx": label_index(label, TOPICS)}


FAMILY = Family(
    benchmark="masakhanews",
    dataset="masakhanews",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(TOPICS),
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("train", "validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("masakhanews"))
