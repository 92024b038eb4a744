"""AfriSenti: 3-way tweet sentiment (NLU).

The prompt names the task and the three sentiments (as lm-evaluation-harness's afrisenti prompts do); the
instruction and sentiment names are English in both prompt variants. Some tweets occur in both the
validation (few-shot) and the test split; finetasks_afr.prompts.fewshot keeps a test tweet's duplicate out of its
own examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, labelled_row
from finetasks_afr.data.raw import RawImporter, RowError, str_field, string_features, tsv_units
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, same_codes

SENTIMENTS = ("negative", "positive", "neutral")  # lm-evaluation-harness order
INSTRUCTION = "Classify the sentiment of the tweet as one of: " + ", ".join(SENTIMENTS) + "."


def _raw_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    label = (str_field(raw, "label") or "").strip().lower()
    if label not in SENTIMENTS:
        raise RowError("bad label")
    return {"tweet": str_field(raw, "tweet"), "label": label}


SOURCES = (
    DatasetSource(
        key="afrisenti",
        hub_repo="masakhane/afrisenti",
        revision=None,
        splits=("train", "validation", "test"),
        codes=same_codes("amh arq ary hau ibo kin orm pcm swa tir tso twi yor"),
        excluded={"por": "Portuguese (Mozambican tweets): not an African language"},
        notes="Unpinned. label assumed a string (negative/positive/neutral) as in the raw TSV. The raw data "
        "here has no train split (lm-eval's few-shot split), so a raw-import mirror has validation/test "
        "only; the raw orm files' extra ID column is dropped.",
        text_field=("tweet", "test"),
        raw=RawImporter(
            "afrisenti", tsv_units("afrisenti", _raw_row, ("tweet", "label")), string_features("tweet", "label")
        ),
    ),
)


def adapter(line: dict) -> dict:
    return labelled_row(INSTRUCTION, clean(line["tweet"]), SENTIMENTS, line["label"])


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
