"""AfriQA with its gold passages: a question in an African language, the answer span from an English or
French Wikipedia passage (reading comprehension, generative: GEN)."""

from __future__ import annotations

import ast

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.common import clean, generative_tasks
from finetasks_afr.languages import AfricanLanguage, covered_by


def answers(pivot: object) -> list[str]:
    """`answer_pivot` as a dict {"answer_start": [...], "text": [...]} or that dict's string form."""
    if isinstance(pivot, str):
        pivot = ast.literal_eval(pivot)
    if not isinstance(pivot, dict):
        raise ValueError("answer_pivot is not a dict")
    texts = [clean(text) for text in pivot["text"] if clean(text)]
    if not texts:
        raise ValueError("no answer text")
    return texts


def adapter(line: dict) -> dict:
    return {
        "context": clean(line["context"]),
        "question": clean(line["question_lang"]),
        "choices": answers(line["answer_pivot"]),
    }


def _few_shots_split(language: AfricanLanguage) -> str:
    return "test" if language.iso3 == "swa" else "train"  # Swahili has only a test split


def tasks() -> list[LightevalTaskConfig]:
    # the gold-passages repository has no Wolof configuration (the queries repository does)
    languages = [language for language in covered_by("afriqa") if language.iso3 != "wol"]
    return generative_tasks(
        benchmark="afriqa",
        dataset="afriqa",
        category="GEN",
        adapter=adapter,
        languages=languages,
        evaluation_splits=("test",),
        few_shots_split=_few_shots_split,
        hf_avail_splits=("train", "validation", "test"),
        generation_size=32,
    )
