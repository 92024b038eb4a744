"""OpenAI MMMLU: the MMLU test set translated by professional translators, Swahili and Yoruba locales (GK).

Read as lighteval reads it: revision 038c7808122969ead7456361af05cb8f47d247f8 (lighteval's `openai_mmlu` pin;
neither lighteval nor its commit says why that revision), configs `SW_KE` and `YO_NG`, fields `Question`, `A`-`D`,
`Answer` (a letter) and `Subject`, split `test` only. Unlike lighteval, which builds one task per subject, one task
per language covers all 57 subjects, as AfriMMLU's tasks do.

Few-shot examples come from the test split itself, because the dataset publishes no other split (lighteval's
tasks declare `hf_avail_splits=["test"]` and run 0-shot only). Borrowing another dataset's dev split (cais/mmlu in
English, or Global-MMLU's translation) would show examples in another language or from another translation, so the
score would no longer measure this dataset alone. Drawing from the test split is safe here for the same reason it is
for Belebele: `finetasks_afr.prompts.fewshot` never shows a document among its own examples (lighteval 0.13's
self-exclusion compares task names that differ by the `|k` suffix and so excludes nothing), nor any other row with
the same question and options, and each document draws its own examples.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, lettered_row
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by

HUB_REPO = "openai/MMMLU"
REVISION = "038c7808122969ead7456361af05cb8f47d247f8"
OPTION_FIELDS = ("A", "B", "C", "D")

SOURCES = (
    DatasetSource(
        key="openai_mmmlu",
        hub_repo=HUB_REPO,
        revision=REVISION,
        splits=("test",),
        codes={"swa": "SW_KE", "yor": "YO_NG"},
        config_names=("SW_KE", "YO_NG"),
        notes="Pinned to lighteval's revision (huggingface/lighteval src/lighteval/tasks/multilingual/tasks/"
        "openai_mmlu.py: hf_revision, hf_avail_splits ['test']); the hub's main has moved on (325a01dc). Configs "
        "SW_KE/YO_NG and columns Question, A-D, Answer (letter), Subject from lighteval and lm-eval's "
        "openai-mmmlu README; column types not read from the card (inferred strings). Only a test split: "
        "few-shot examples are drawn from it, never the document itself (finetasks_afr.prompts.fewshot). The other 12 "
        "locales (AR_XY included, Arabic of no African locale) and the `default` config are not used. "
        "No raw source here: hub only.",
    ),
)


def adapter(line: dict) -> dict:
    """One MMMLU row: the question, the four options A-D in order, the gold index from the `Answer` letter."""
    choices = [clean(line[field]) for field in OPTION_FIELDS]
    if not all(choices):
        raise ValueError("an option is empty")
    return lettered_row(clean(line["Question"]), choices, line["Answer"])


FAMILY = Family(
    benchmark="openai_mmmlu",
    dataset="openai_mmmlu",
    category="GK",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="test",  # the only split (see the module docstring for how leaks are prevented)
    hf_avail_splits=("test",),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("openai_mmmlu"))
