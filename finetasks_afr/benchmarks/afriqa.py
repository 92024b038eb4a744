"""AfriQA with its gold passages: a question in an African language, the answer span from an English or
French Wikipedia passage (reading comprehension, generative: GEN)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.utils.language import Language

from finetasks_afr.benchmarks.common import clean, generative_tasks
from finetasks_afr.data.raw import RawImporter, RowError, Unit, Yielded, lang_dirs, read_text, str_field
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by, same_codes

_RAW_FILE = re.compile(
    r"^gold_span_passages\.afriqa\.(?P<lang>[a-z]+)\.(?P<pivot>[a-z]+)\.(?P<split>train|dev|test)\.json$"
)
_RAW_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
_OPTIONAL = ("context", "question_translated", "title", "answer_lang")


def _raw_units(root: Path) -> list[Unit]:
    """`<lang>/gold_span_passages.afriqa.<lang>.<pivot>.<split>.json` (JSON lines) of masakhane-io/afriqa."""
    units = []
    for lang_dir in lang_dirs(root):
        for path in sorted(lang_dir.glob("gold_span_passages.afriqa.*.json")):
            match = _RAW_FILE.match(path.name)
            if match and match["lang"] == lang_dir.name:
                split = _RAW_SPLITS[match["split"]]
                units.append(Unit(f"afriqa/{lang_dir.name}/{split}", partial(_raw_rows, path, lang_dir.name, split)))
    return units


def _raw_rows(path: Path, config: str, split: str) -> Iterator[Yielded]:
    for line in read_text(path).splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)  # Python's json accepts the NaN the raw files contain
        except json.JSONDecodeError:
            yield config, split, "invalid JSON"
            continue
        try:
            if not isinstance(raw, dict):
                raise RowError("not a JSON object")
            yield config, split, _raw_row(raw)
        except RowError as skip:
            yield config, split, str(skip)


def _raw_row(raw: dict[str, Any]) -> dict[str, Any]:
    pivot = raw.get("answer_pivot")
    if not isinstance(pivot, dict):
        raise RowError("missing answer_pivot")
    starts, texts = pivot.get("answer_start"), pivot.get("text")
    if (
        not isinstance(texts, list)
        or not texts
        or not all(isinstance(t, str) and t.strip() for t in texts)
        or not isinstance(starts, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in starts)
    ):
        raise RowError("bad answer_pivot")
    row: dict[str, Any] = {
        "answer_pivot": {"answer_start": starts, "text": texts},
        "id": str_field(raw, "id"),
        "question_lang": str_field(raw, "question_lang"),
    }
    for name in _OPTIONAL:
        row[name] = str_field(raw, name, required=False)
    order = ("answer_pivot", "context", "id", "question_lang", "question_translated", "title", "answer_lang")
    return {name: row[name] for name in order}


def _raw_features(config: str) -> Any:
    from datasets import Features, List, Value

    return Features(
        {
            "answer_pivot": {"answer_start": List(Value("int64")), "text": List(Value("string"))},
            "context": Value("string"),
            "id": Value("string"),
            "question_lang": Value("string"),
            "question_translated": Value("string"),
            "title": Value("string"),
            "answer_lang": Value("string"),
        }
    )


SOURCES = (
    DatasetSource(
        key="afriqa",
        hub_repo="masakhane/afriqa-gold-passages",
        revision=None,
        splits=("train", "validation", "test"),
        # configs of masakhane/afriqa; the gold-passages repository lacks wol (no task is built for it)
        codes=same_codes("bem fon hau ibo kin swa twi wol yor zul"),
        notes="Unpinned. lm-eval loads it with trust_remote_code (a loading script): datasets>=4 refuses "
        "scripts, so the hub repo may only load from its parquet export (revision "
        "'refs/convert/parquet'), unverified. Typing of answer_pivot on the hub is unverified (the raw "
        "JSON has a struct {answer_start: [int], text: [str]}). swa has test only, yor train/test. Rows whose "
        "answer is not located in the passage (empty answer_start, mostly a null context) are kept in a mirror; "
        "the prompt function skips rows without a context.",
        raw=RawImporter("afriqa/gold_passages", _raw_units, _raw_features),
    ),
)


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


PIVOT = {"fon": Language.FRENCH, "wol": Language.FRENCH}
"""The language of the passages and gold answers: French for the francophone languages, else English."""


def answer_language(language: AfricanLanguage) -> Language:
    """Answers are spans of the English (French) pivot passage, so F1 and exact match normalise them with that
    language's rules (articles, punctuation), not the question language's: "the Nile" vs "Nile" must match."""
    return PIVOT.get(language.iso3, Language.ENGLISH)


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
        answer_language=answer_language,
    )
