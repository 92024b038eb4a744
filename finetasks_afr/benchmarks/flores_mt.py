"""FLORES-200 translation English <-> X from the SIB-200 rows, every language SIB-200 covers.

SIB-200 (source key "sib200", declared in :mod:`finetasks_afr.benchmarks.sib200`) is built from FLORES-200 dev and
devtest sentences: every language's config has the same rows under the same `index_id` (the FLORES sentence id,
unique across SIB-200's train/validation/test), with the same topic; tests/test_translation.py checks this on
every language of the real release. A task reads ONE config (lighteval loads one per task), the African
language's, and finds the English sentence of each row by `index_id` in the `eng_Latn` config, loaded once per
location through the suite's loader, as lighteval's load is (`finetasks_afr.sources.load_dataset`: the hub repository
Davlan/sib200 and a local mirror both work). Both configs are read from ONE place, resolved when the task is built:
the mirror when it holds both, else the hub (a partial mirror without `eng_Latn` would otherwise pair mirrored
rows with hub rows, and fail offline).

Tasks (:mod:`finetasks_afr.translation` for the forms and metrics), per language X:
`flores_mt_en2xx_ll_<x>`, `flores_mt_en2xx_gen_<x>` (English -> X) and `flores_mt_xx2en_ll_<x>`,
`flores_mt_xx2en_gen_<x>` (X -> English). Evaluation on SIB-200's test split (204 sentences), few-shot examples
from its train split (701), as the sib200 tasks. The same test sentences are scored as plain text by
`flores_ppl_<x>`.

Generation size: 512 tokens, above the longest SIB-200 test sentence in characters in any language
(tests/test_translation.py checks it on the real rows), so a tokenizer that spends at most one token per character
is never cut short; generation stops at the first newline anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.common import clean
from finetasks_afr.languages import covered_by, language
from finetasks_afr.sources import hf_location, load_dataset, source
from finetasks_afr.translation import Direction, pair_tasks, texts

DATASET = "sib200"
PREFIX = "flores_mt"
SPLITS = ("train", "validation", "test")
GENERATION_SIZE = 512

_ENGLISH: dict[tuple[str, str | None, str], dict[int, str]] = {}


def english_sentences(repo: str, revision: str | None, config: str) -> Mapping[int, str]:
    """index_id -> cleaned English text over every split of `config`, loaded once per (repo, revision, config)."""
    key = (repo, revision, config)
    if key not in _ENGLISH:
        loaded = load_dataset(repo, config, revision)
        table: dict[int, str] = {}
        for split in loaded.values():
            for row in split:
                table[int(row["index_id"])] = clean(row["text"])
        if not table:
            raise ValueError(f"{repo} ({config}): no English rows; rebuild the mirror or check the hub repository")
        _ENGLISH[key] = table
    return _ENGLISH[key]


def pair_location(code: str) -> tuple[str, str | None]:
    """Where a pair with the language config `code` is read: the mirror when it holds that config and English."""
    here = hf_location(DATASET, code)
    if here == hf_location(DATASET, english_config()):
        return here
    return source(DATASET).hub_repo, source(DATASET).revision


def english_config() -> str:
    return language("eng").codes[DATASET]


def english_lookup(repo: str, revision: str | None) -> Callable[[int], str]:
    """index_id -> English sentence of SIB-200 at (repo, revision), loaded on first use."""
    config = english_config()

    def lookup(index_id: int) -> str:
        table = english_sentences(repo, revision, config)
        if index_id not in table:
            raise KeyError(f"index_id {index_id} has no English sentence in {repo} ({config})")
        return table[index_id]

    return lookup


def pair_for(lookup: Callable[[int], str]) -> Callable[[Direction], Callable[[dict], tuple[str, str]]]:
    """Row of the African language's config -> (source, reference) in the direction's order."""

    def for_direction(direction: Direction) -> Callable[[dict], tuple[str, str]]:
        def pair(line: dict) -> tuple[str, str]:
            english = lookup(int(line["index_id"]))
            own = line["text"]
            return texts(english, own) if direction.source.iso3 == "eng" else texts(own, english)

        return pair

    return for_direction


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for lang in covered_by(DATASET):
        if lang.iso3 == "eng":
            continue
        location = pair_location(lang.codes[DATASET])
        pair = pair_for(english_lookup(*location))
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=lang.codes[DATASET],
            language=lang,
            pair=pair,
            evaluation_splits=("test",),
            few_shots_split="train",
            hf_avail_splits=SPLITS,
            generation_size=GENERATION_SIZE,
            location=location,
        )
    return configs
