"""AfriMGSM (IrokoBench): grade-school maths word problems; the model generates the number (GEN)."""

from __future__ import annotations

import re

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.common import clean, generative_tasks
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import IROKOBENCH, covered_by, same_codes

SOURCES = (
    DatasetSource(
        key="afrimgsm",
        hub_repo="masakhane/afrimgsm",
        revision=None,
        splits=("train", "test"),
        codes=same_codes(IROKOBENCH + " vai"),
        excluded={"fra": "French: not African and not the English reference"},
        notes="Unpinned. Type of answer_number unverified (a hub commit changed it int -> string). The train rows' "
        "question carries its own 'Question:' prefix, removed here as lm-eval does. No raw source: hub only.",
    ),
)
_QUESTION_PREFIX = re.compile(r"^\s*Question\s*:\s*")


def number_text(value: object) -> str:
    """The gold number as text: '12' for 12, 12.0 or '12.0'; other decimals kept as written."""
    text = clean(value)
    try:
        number = float(text.replace(",", ""))
    except ValueError as error:
        raise ValueError(f"answer_number {value!r} is not a number") from error
    return str(int(number)) if number.is_integer() else text


def adapter(line: dict) -> dict:
    """The question without the "Question:" the train rows carry (the template writes its own)."""
    question = _QUESTION_PREFIX.sub("", clean(line["question"]))
    if not question:
        raise ValueError("empty question")
    return {"question": question, "choices": [number_text(line["answer_number"])]}


def tasks() -> list[LightevalTaskConfig]:
    return generative_tasks(
        benchmark="afrimgsm",
        dataset="afrimgsm",
        category="GEN",
        adapter=adapter,
        languages=covered_by("afrimgsm"),
        evaluation_splits=("test",),
        few_shots_split=lambda language: "train",
        hf_avail_splits=("train", "test"),
        generation_size=25,
    )
