"""AfriMMLU (IrokoBench): MMLU questions translated into African languages (GK).

Read as lighteval reads it: revision `refs/pr/1` (lighteval's pin, "temporary until the pr is merged"), test
split evaluated, 5 few-shot examples from that revision's `dev` split. lm-evaluation-harness instead reads the
main revision with few-shot examples from `validation`; mixing the two (refs/pr/1 with `validation`) is what
neither does, so the split names follow the pinned revision.
"""

from __future__ import annotations

import ast

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, lettered_row
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import IROKOBENCH, covered_by, same_codes

SOURCES = (
    DatasetSource(
        key="afrimmlu",
        hub_repo="masakhane/afrimmlu",
        revision="refs/pr/1",
        splits=("dev", "test"),
        codes=same_codes(IROKOBENCH),
        excluded={"fra": "French: not African and not the English reference"},
        notes="Pinned to refs/pr/1 with few-shot split `dev`, as lighteval's afri_mmlu tasks; lm-eval reads main "
        "with `validation`/`test`. `choices` is a Python-list string on main (accepted either way). No raw "
        "source here: hub only.",
    ),
)


def adapter(line: dict) -> dict:
    choices = line["choices"]
    if isinstance(choices, str):  # the published main revision stores a Python-list string
        choices = ast.literal_eval(choices)
    choices = [clean(choice) for choice in choices]
    return lettered_row(clean(line["question"]), choices, line["answer"])


FAMILY = Family(
    benchmark="afrimmlu",
    dataset="afrimmlu",
    category="GK",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="dev",
    hf_avail_splits=("dev", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("afrimmlu"))
