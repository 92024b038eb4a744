"""Uhura ARC-Easy: grade-school science questions translated into African languages (RES)."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by

SOURCES = (
    DatasetSource(
        key="uhura_arc_easy",
        hub_repo="masakhane/uhura-arc-easy",
        revision=None,
        splits=("train", "validation", "test"),
        codes={
            "amh": "am_multiple_choice",
            "eng": "en_multiple_choice",
            "hau": "ha_multiple_choice",
            "nso": "nso_multiple_choice",
            "swa": "sw_multiple_choice",
            "yor": "yo_multiple_choice",
            "zul": "zu_multiple_choice",
        },
        notes="Unpinned. zu_multiple_choice and nso_multiple_choice_unmatched have no validation split. "
        "answerKey letters vs. digits unverified. No raw source: hub only.",
    ),
)


def adapter(line: dict) -> dict:
    texts, labels = line["choices"]["text"], [str(label).strip() for label in line["choices"]["label"]]
    if len(texts) != len(labels) or len(texts) < 2:
        raise ValueError("choices text and label lists differ")
    return {
        "question": clean(line["question"]),
        "choices": [clean(text) for text in texts],
        "gold_idx": labels.index(str(line["answerKey"]).strip()),  # letters or digits, as the row labels them
    }


def _few_shots_split(language: AfricanLanguage) -> str:
    """nso and zu have no validation split on the hub: take few-shot examples from train."""
    return "train" if language.codes["uhura_arc_easy"].split("_")[0] in ("nso", "zu") else "validation"


FAMILY = Family(
    benchmark="uhura_arc_easy",
    dataset="uhura_arc_easy",
    category="RES",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("train", "validation", "test"),
    few_shots_split_for=_few_shots_split,
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("uhura_arc_easy"))
