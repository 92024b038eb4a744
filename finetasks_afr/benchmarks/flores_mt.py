"""FLORES-200 translation English <-> X from the SIB-200 rows, every language SIB-200 covers.

SIB-200 (source key "sib200", declared in :mod:`finetasks_afr.benchmarks.sib200`) is built from FLORES-200 dev and
devtest sentences: every language's config has the same rows under the same `index_id` (the FLORES sentence id,
unique across SIB-200's train/validation/test), with the same topic; tests/benchmarks/test_translation.py checks this on
every language of the real release. A task reads ONE config (lighteval loads one per task), the African
language's, and finds the English sentence of each row by `index_id` in the `eng_Latn` config, loaded once per
location through the suite's loader, as lighteval's load is (`finetasks_afr.data.sources.load_dataset`: the hub
repository Davlan/sib200 and a local mirror both work). Both configs are read from ONE place, resolved when the task is
built: the mirror when it holds both, else the hub (a partial mirror without `eng_Latn` would otherwise pair mirrored
rows with hub rows, and fail offline).

Tasks (:mod:`finetasks_afr.benchmarks.translation` for the forms and metrics), per language X:
`flores_mt_en2xx_ll_<x>`, `flores_mt_en2xx_gen_<x>` (English -> X) and `flores_mt_xx2en_ll_<x>`,
`flores_mt_xx2en_gen_<x>` (X -> English). Evaluation on SIB-200's test split (204 sentences), few-shot examples
from its train split (701), as the sib200 tasks. The same test sentences are scored as plain text by
`flores_ppl_<x>`.

Few-shot pools without conflicting copies: in a few languages the release gives one sentence of the language to two
FLORES ids whose English sentences differ (a neighbouring sentence's translation copied into the wrong id; ary test
row 13, index_id 1354 "The wheel has changed the world...", holds the Darija text of train row 244, index_id 365,
about electricity in a bulb socket). An example drawn from such a row would show the evaluated document's source
with another translation (xx2en), or its reference under another English source (en2xx), which the suite's same-text
exclusion cannot see because the other side differs. :func:`source_conflicts` finds these groups from the rows
themselves (texts compared up to case, Unicode form, punctuation and spacing, since some copies differ only there),
and every few-shot-split row of a group is left out of the pool of every flores_mt task of the language (both
directions, both forms); a pair inside the few-shot split goes too, as two of its rows drawn for one document would
show one source with two translations. Evaluation rows of a group are flagged in the log, not dropped: with their
twins out of the pool nothing leaks, and dropping them would make the 204-sentence test set differ from every other
evaluation of SIB-200/FLORES; each is one mis-paired sentence that no model can translate into its reference.
tests/data/test_data_artefacts.py lists the rows.

Generation size: 512 tokens, above the longest SIB-200 test sentence in characters in any language
(tests/benchmarks/test_translation.py checks it on the real rows), so a tokenizer that spends at most one token per
character is never cut short; generation stops at the first newline anyway.
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.common import clean
from finetasks_afr.benchmarks.translation import Direction, pair_tasks, texts
from finetasks_afr.data.sources import hf_location, load_dataset, source
from finetasks_afr.prompts.languages import covered_by, language

DATASET = "sib200"
PREFIX = "flores_mt"
SPLITS = ("train", "validation", "test")
GENERATION_SIZE = 512
FEW_SHOTS_SPLIT = "train"

logger = logging.getLogger(__name__)

_ENGLISH: dict[tuple[str, str | None, str], dict[int, str]] = {}
_LEFT_OUT: dict[tuple[str, str | None, str], frozenset[int]] = {}


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


@dataclass(frozen=True)
class SourceRow:
    """One row of a language's config: its split, its position in that split, and its FLORES id."""

    split: str
    position: int
    index_id: int


def same_text_key(text: str) -> str:
    """The text without case, Unicode-form, punctuation, symbol, spacing and control differences."""
    folded = unicodedata.normalize("NFKC", clean(text)).casefold()
    return "".join(character for character in folded if unicodedata.category(character)[0] not in "PSZC")


def source_conflicts(
    rows_by_split: Mapping[str, Sequence[Mapping[str, Any]]], english: Mapping[int, str]
) -> list[list[SourceRow]]:
    """Groups of rows that share a source sentence (in either direction) but not its translation.

    `rows_by_split`: split -> the language config's rows (`index_id`, `text`) in order; `english`: index_id ->
    English sentence. A group holds the rows whose text in the language is one text (:func:`same_text_key`) while
    their English sentences are not, or whose English sentence is one while their texts in the language are not;
    groups come in order of their first row (splits in the mapping's order). Rows without text or without an
    English sentence never become documents and are not compared."""
    pairs = [
        (SourceRow(split, position, int(row["index_id"])), same_text_key(row["text"]), same_text_key(english_text))
        for split, split_rows in rows_by_split.items()
        for position, row in enumerate(split_rows)
        if row.get("text") is not None and (english_text := english.get(int(row["index_id"]))) is not None
    ]
    groups: dict[tuple[int, str], list[tuple[SourceRow, str]]] = {}
    for row, own, eng in pairs:
        groups.setdefault((0, own), []).append((row, eng))
        groups.setdefault((1, eng), []).append((row, own))
    conflicting = [
        [row for row, _ in members] for members in groups.values() if len({other for _, other in members}) > 1
    ]
    order = {row: number for number, (row, _, _) in enumerate(pairs)}
    return sorted(conflicting, key=lambda group: order[group[0]])


def left_out_of_pool(repo: str, revision: str | None, config: str) -> frozenset[int]:
    """index_ids of the few-shot split's rows in a :func:`source_conflicts` group, found once per location and
    config (loaded as lighteval loads the task's data); logs the rows left out and the evaluation rows flagged."""
    key = (repo, revision, config)
    if key not in _LEFT_OUT:
        loaded = load_dataset(repo, config, revision)
        groups = source_conflicts(
            {split: list(loaded[split]) for split in SPLITS if split in loaded},
            english_sentences(repo, revision, english_config()),
        )
        rows = [row for group in groups for row in group]
        left_out = frozenset(row.index_id for row in rows if row.split == FEW_SHOTS_SPLIT)
        flagged = [row for row in rows if row.split != FEW_SHOTS_SPLIT]
        if groups:
            logger.info(
                "flores_mt %s: %d few-shot (%s) rows left out of the pool, their source sentence being another "
                "row's with a different translation (index_id %s); their twins in other splits, kept as they are: %s",
                config,
                len(left_out),
                FEW_SHOTS_SPLIT,
                ", ".join(str(index_id) for index_id in sorted(left_out)),
                ", ".join(f"{row.split} {row.position} (index_id {row.index_id})" for row in flagged) or "none",
            )
        _LEFT_OUT[key] = left_out
    return _LEFT_OUT[key]


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


def pair_for(
    lookup: Callable[[int], str], left_out: Callable[[], frozenset[int]] = frozenset
) -> Callable[[Direction], Callable[[dict], tuple[str, str] | None]]:
    """Row of the African language's config -> (source, reference) in the direction's order; None (no document)
    for a row whose index_id is in `left_out()` (few-shot rows only: index_ids are unique across the splits)."""

    def for_direction(direction: Direction) -> Callable[[dict], tuple[str, str] | None]:
        def pair(line: dict) -> tuple[str, str] | None:
            index_id = int(line["index_id"])
            if index_id in left_out():
                return None
            english = lookup(index_id)
            own = line["text"]
            return texts(english, own) if direction.source.iso3 == "eng" else texts(own, english)

        return pair

    return for_direction


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for lang in covered_by(DATASET):
        if lang.iso3 == "eng":
            continue
        code = lang.codes[DATASET]
        location = pair_location(code)
        pair = pair_for(english_lookup(*location), functools.partial(left_out_of_pool, location[0], location[1], code))
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=code,
            language=lang,
            pair=pair,
            evaluation_splits=("test",),
            few_shots_split=FEW_SHOTS_SPLIT,
            hf_avail_splits=SPLITS,
            generation_size=GENERATION_SIZE,
            location=location,
        )
    return configs
