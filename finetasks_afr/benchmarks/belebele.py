"""Belebele: multiple-choice reading comprehension on FLORES passages, every African variant (RC).

Belebele has only a test split, so few-shot examples come from the test split itself: the document being
evaluated is never among its own examples (finetasks_afr.prompts.fewshot repairs lighteval 0.13's self-exclusion,
which compares task names that differ by the `|k` suffix and so excluded nothing), nor is any other question
whose text equals it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.data.raw import RawImporter, RowError, Unit, Yielded, read_text, str_field
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, flores_codes

_TEXT_FIELDS = ("link", "flores_passage", "question", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4")


def _raw_units(root: Path) -> list[Unit]:
    """Bridging-the-Gap's copy: `belebele[_xx].jsonl`, one dialect per file, the dialect in each row."""
    return [Unit(f"belebele/{path.stem}", partial(_raw_rows, path)) for path in sorted(root.glob("belebele*.jsonl"))]


def _raw_rows(path: Path) -> Iterator[Yielded]:
    for line in read_text(path).splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            yield "<unknown>", "test", "invalid JSON"
            continue
        if not isinstance(raw, dict):
            yield "<unknown>", "test", "not a JSON object"
            continue
        dialect = raw.get("dialect")
        if not isinstance(dialect, str) or not re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", dialect):
            yield "<unknown>", "test", "missing dialect"
            continue
        try:
            yield dialect, "test", _raw_row(raw, dialect)
        except RowError as skip:
            yield dialect, "test", str(skip)


def _raw_row(raw: dict[str, Any], dialect: str) -> dict[str, Any]:
    row: dict[str, Any] = {name: str_field(raw, name) for name in _TEXT_FIELDS}
    number = raw.get("question_number")
    if isinstance(number, str) and number.strip().isdigit():
        number = int(number)
    if not isinstance(number, int) or isinstance(number, bool):
        raise RowError("bad question_number")
    answer = str(raw.get("correct_answer_num", "")).strip()
    if answer not in ("1", "2", "3", "4"):
        raise RowError("bad correct_answer_num")
    return {
        "link": row["link"],
        "question_number": number,
        **{name: row[name] for name in _TEXT_FIELDS[1:]},
        "correct_answer_num": answer,
        "dialect": dialect,
        "ds": str_field(raw, "ds", required=False),
    }


def _raw_features(config: str) -> Any:
    from datasets import Features, Value

    return Features(
        {
            "link": Value("string"),
            "question_number": Value("int64"),
            **{name: Value("string") for name in _TEXT_FIELDS[1:]},
            "correct_answer_num": Value("string"),
            "dialect": Value("string"),
            "ds": Value("string"),
        }
    )


SOURCES = (
    DatasetSource(
        key="belebele",
        hub_repo="facebook/belebele",
        revision=None,
        splits=("test",),
        # The 29 African variants of facebook/belebele (hub-datasets.md section 6) + English.
        codes=flores_codes(
            "afr_Latn amh_Ethi ary_Arab arz_Arab bam_Latn fuv_Latn gaz_Latn hau_Latn ibo_Latn kea_Latn "
            "kin_Latn lin_Latn lug_Latn luo_Latn nso_Latn nya_Latn plt_Latn sna_Latn som_Latn sot_Latn "
            "ssw_Latn swh_Latn tir_Ethi tsn_Latn tso_Latn wol_Latn xho_Latn yor_Latn zul_Latn eng_Latn"
        ),
        notes="Unpinned. Configs = FLORES codes (e.g. zul_Latn, swh_Latn). A raw import covers only the "
        "12 dialects in Bridging-the-Gap's copy (eng_Latn + 11 African); its `ds` dates differ per "
        "dialect and were not compared with the hub.",
        text_field=("flores_passage", "test"),
        raw=RawImporter("bridging_the_gap/belebele", _raw_units, _raw_features),
    ),
)


def adapter(line: dict) -> dict:
    choices = [clean(line[f"mc_answer{i}"]) for i in range(1, 5)]
    return {
        "context": clean(line["flores_passage"]),
        "question": clean(line["question"]),
        "choices": choices,
        "gold_idx": letter_index(line["correct_answer_num"], 4),  # one-indexed "1".."4"
    }


FAMILY = Family(
    benchmark="belebele",
    dataset="belebele",
    category="RC",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="test",  # the only split (see the module docstring for how leaks are prevented)
    hf_avail_splits=("test",),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("belebele"))
