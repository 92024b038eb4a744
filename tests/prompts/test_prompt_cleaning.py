"""Invisible characters and near-copies on real rows (issue 26, items 2 and 3).

`finetasks_afr.prompts.text.clean` removes every format (Cf) and private-use (Co) character, keeping ZWJ/ZWNJ only
inside words of the scripts that use them; `finetasks_afr.prompts.fewshot.text_key` calls two documents near-copies
when their text without the answer is equal up to case, Unicode form, whitespace, punctuation, quotes and emoji.

What the real data holds (every text file of ../shared/data but the Pythia scores: `CENSUS`, per character and the
script of the nearest letter before it, else after it): zero-width spaces and BOMs in Latin, Ethiopic and Arabic
text; ZWJ 1,120 times beside Latin letters (emoji sequences in tweets, and their remnants `U+200D U+FE0F` after the
emoji were lost), 3 times inside Sinhala words (somwiki) and once after an Arabic letter cited alone; ZWNJ 5 times,
all Arabic script (Persian names in somwiki and an AfriQA Twi passage); bidi marks, embeddings and isolates (U+200E,
U+200F, U+202A-U+202C, U+2068, U+061C) in Arabic, Ethiopic, Hebrew and Latin text; U+2060, U+2061, U+2063 and the
soft hyphen in Latin text; private-use U+E702, U+EA00, U+F076, U+F0FC and U+100000. Ethiopic and Latin never need a
joiner: of the scripts present, only Arabic (ZWNJ) and Sinhala (ZWJ) keep one.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import regex

from finetasks_afr.prompts import fewshot
from finetasks_afr.prompts.text import INVISIBLE, clean

ZWJ, ZWNJ = "\u200d", "\u200c"
CF_OR_CO = regex.compile(r"[\p{Cf}\p{Co}]")
LETTER = regex.compile(r"\p{L}")
CENSUS_SCRIPTS = ("Latin", "Arabic", "Ethiopic", "Hebrew", "Greek", "Sinhala")
CENSUS = {
    ("U+00AD", "Latin"): 3,
    ("U+061C", "Arabic"): 1,
    ("U+100000", "Latin"): 5,
    ("U+200B", "Ethiopic"): 33,
    ("U+200B", "Latin"): 1669,
    ("U+200C", "Arabic"): 5,
    ("U+200D", "Arabic"): 1,
    ("U+200D", "Latin"): 1120,
    ("U+200D", "Sinhala"): 3,
    ("U+200E", "Arabic"): 315,
    ("U+200E", "Hebrew"): 7,
    ("U+200E", "Latin"): 26,
    ("U+200F", "Arabic"): 7,
    ("U+200F", "Ethiopic"): 9,
    ("U+200F", "Latin"): 42,
    ("U+202A", "Ethiopic"): 2,
    ("U+202A", "Latin"): 15,
    ("U+202A", "none"): 1,
    ("U+202B", "Latin"): 1,
    ("U+202C", "Latin"): 12,
    ("U+2060", "Latin"): 23,
    ("U+2061", "Latin"): 8,
    ("U+2063", "Latin"): 2,
    ("U+2068", "Latin"): 1,
    ("U+E702", "Latin"): 1,
    ("U+EA00", "Latin"): 1,
    ("U+F076", "Latin"): 5,
    ("U+F0FC", "Latin"): 4,
    ("U+FEFF", "Arabic"): 2,
    ("U+FEFF", "Ethiopic"): 13,
    ("U+FEFF", "Latin"): 1581,
    ("U+FEFF", "none"): 2,
}
"""Cf/Co characters in ../shared/data, by the script of the nearest letter (before, else after)."""


def _script(char: str | None) -> str:
    if char is None:
        return "none"
    return next((name for name in CENSUS_SCRIPTS if regex.match(rf"\p{{Script={name}}}", char)), "other")


def _data_lines(shared_data: Path) -> list[tuple[str, str]]:
    """(file, line) for every line of the text files that holds a Cf or Co character."""
    found = []
    for path in sorted(shared_data.rglob("*")):
        if path.suffix in {".tsv", ".json", ".jsonl", ".csv", ".txt"} and "pythia" not in path.parts:
            found += [
                (str(path.relative_to(shared_data)), line)
                for line in path.read_text(encoding="utf-8").splitlines()
                if CF_OR_CO.search(line)
            ]
    return found


def left_over(text: str) -> list[str]:
    """The Cf/Co characters of `text` other than a ZWJ/ZWNJ between two letters or marks of Arabic or Sinhala (the
    joining scripts present in the data), written with `regex`'s script extensions (the Arabic vowel marks are of
    script "Inherited"), independently of `clean`."""
    bad = []
    for match in CF_OR_CO.finditer(text):
        i, char = match.start(), match.group()
        inside = char in (ZWJ, ZWNJ) and 0 < i < len(text) - 1
        if inside and any(
            regex.match(rf"[\p{{scx={s}}}&&[\p{{L}}\p{{M}}]]", text[i - 1], flags=regex.V1)
            and regex.match(rf"[\p{{scx={s}}}&&[\p{{L}}\p{{M}}]]", text[i + 1], flags=regex.V1)
            for s in ("Arabic", "Sinhala")
        ):
            continue
        bad.append(f"U+{ord(char):04X}")
    return bad


# ------------------------------------------------------------------------------- item 2: invisible characters


def test_the_removed_class_is_every_format_and_private_use_character_but_the_joiners() -> None:
    expected = {
        code
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in ("Cf", "Co") or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF
    } - {ord(ZWJ), ord(ZWNJ)}
    removed = {code for code in expected if INVISIBLE.fullmatch(chr(code))}
    assert removed == expected
    sample = [chr(code) for code in range(0, 0x110000, 97) if code not in expected and not 0xD800 <= code <= 0xDFFF]
    assert not [char for char in sample if INVISIBLE.fullmatch(char)]


@pytest.mark.slow
@pytest.mark.shared_data
def test_census_of_invisible_characters_in_the_data(shared_data: Path) -> None:
    """The Cf/Co characters the real rows hold, by script; `clean` leaves none of them but the joiners inside
    Arabic and Sinhala words, and its output is NFC."""
    census: Counter[tuple[str, str]] = Counter()
    bad = []
    for name, line in _data_lines(shared_data):
        for match in CF_OR_CO.finditer(line):
            i = match.start()
            near = next((c for c in reversed(line[:i]) if LETTER.match(c)), None)
            near = near or next((c for c in line[i + 1 :] if LETTER.match(c)), None)
            census[(f"U+{ord(match.group()):04X}", _script(near))] += 1
        cleaned = clean(line)
        if left_over(cleaned) or unicodedata.normalize("NFC", cleaned) != cleaned:
            bad.append((name, left_over(cleaned), line[:80]))
    assert dict(census) == CENSUS
    assert not bad, bad[:10]


# (file under ../shared/data, 0-based line, the character, the script it sits in, kept by clean)
SCRIPT_CASES = [
    ("afrisenti/orm/test.tsv", 871, "\ue702", "Latin", False),  # afrisenti_orm 870
    ("afrisenti/pcm/test.tsv", 1017, "\u2068", "Latin", False),  # afrisenti_pcm 1016
    ("sib200/aka_Latn/train.tsv", 392, "\u202a", "Latin", False),  # sib200_aka, flores_mt_*_aka 391
    ("afriqa/gold_passages/yor/gold_span_passages.afriqa.yor.en.test.json", 160, "\u2063", "Latin", False),
    ("afrisenti/hau/test.tsv", 60, ZWJ, "Latin", False),  # an emoji's ZWJ left after the emoji was lost
    ("mafand/en-zul/test.json", 209, ZWJ, "Latin", False),  # inside an emoji sequence
    ("afrisenti/ary/dev.tsv", 398, "\u061c", "Arabic", False),  # afrisenti_ary 397
    ("afrisenti/ary/test.tsv", 1714, "\u200f", "Arabic", False),  # afrisenti_ary 1713
    ("afrisenti/ary/test.tsv", 1707, "\u200e", "Arabic", False),  # afrisenti_ary 1706
    ("corpus/somwiki/som.txt", 39991, ZWNJ, "Arabic", True),  # a Persian name
    ("afriqa/gold_passages/twi/gold_span_passages.afriqa.twi.en.test.json", 135, ZWNJ, "Arabic", True),
    ("mafand/en-amh/test.json", 274, "\u200f", "Ethiopic", False),
    ("masakhanews/amh/dev.tsv", 39, "\ufeff", "Ethiopic", False),  # inside an Ethiopic word
    ("corpus/somwiki/som.txt", 52751, ZWJ, "Sinhala", True),  # the conjunct of "Sri Lanka"
    ("afriqa/gold_passages/hau/gold_span_passages.afriqa.hau.en.dev.json", 80, "\u200e", "Hebrew", False),
]


@pytest.mark.shared_data
@pytest.mark.parametrize(("name", "line", "char", "script", "kept"), SCRIPT_CASES)
def test_clean_per_script_on_real_rows(
    shared_data: Path, name: str, line: int, char: str, script: str, kept: bool
) -> None:
    raw = (shared_data / name).read_text(encoding="utf-8").splitlines()[line]
    assert char in raw
    assert any(regex.match(rf"\p{{Script={script}}}", c) for c in raw)
    cleaned = clean(raw)
    assert (char in cleaned) is kept, (script, f"U+{ord(char):04X}", cleaned[:120])
    assert not left_over(cleaned)
    assert unicodedata.normalize("NFC", cleaned) == cleaned


def test_a_removed_character_between_a_letter_and_its_mark_leaves_nfc() -> None:
    assert clean("o\u200b\u0301 e\u200e\u0323") == "ó ẹ"


# ---------------------------------------------------------------------------------- item 3: near-copies

NEAR_COPIES = [
    # (task, evaluated test document id, its near-copy among the few-shot documents, what differs)
    ("afriqa_twi", "225", "113", "answers 'Prince Edward' and 'Prince Edward,'"),
    ("afriqa_kin", "69", "51", "quotes around 'Spy Kids'"),
    ("afriqa_ibo", "277", "6", "answers 1896 and 1894"),
    ("afriqa_bem", "100", "142", "word boundaries: 'iyakulisha' and 'iya kulisha'"),
    ("afrisenti_ibo_cf", "1530", "473", "a trailing emoji"),
    ("afrisenti_orm_mcf", "220", "369", 'an inserted ""'),
    ("afrisenti_yor_hybrid", "1403", "858", "punctuation and case"),
]


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.raw_mirror import raw_mirror

    return raw_mirror(shared_data, tmp_path_factory)[0]


def lighteval_task(mirror: Path, name: str) -> Any:
    """The suite's task `name` reading `mirror`, 5-shot, with the few-shot fixes applied."""
    from lighteval.tasks.lighteval_task import LightevalTask

    import finetasks_afr.tasks  # noqa: F401  (applies the fixes)
    from finetasks_afr.benchmarks import all_tasks

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        config = next(c for c in all_tasks() if c.name == name)
        return LightevalTask(dataclasses.replace(config, num_fewshots=5))


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize(("task_name", "doc_id", "copy_id", "difference"), NEAR_COPIES)
def test_near_copies_on_real_rows_are_never_examples(
    mirror: Path, task_name: str, doc_id: str, copy_id: str, difference: str
) -> None:
    """The near-copy shares the key, and asking the installed sampler for the whole pool (every candidate it may
    ever draw) leaves it out and counts it as a duplicate."""
    task = lighteval_task(mirror, task_name)
    if not fewshot.applied():
        pytest.skip("finetasks_afr.prompts.fewshot replaces the sampler of lighteval 0.13 only")
    doc = next(d for d in task.eval_docs() if d.id == doc_id)
    pool = task.fewshot_docs()
    copy = next(d for d in pool if d.id == copy_id)
    assert doc.query != copy.query or doc.choices != copy.choices, difference
    assert fewshot.text_key(doc) == fewshot.text_key(copy)
    fewshot.reset_counters()
    drawable = task.fewshot_sampler.sample_fewshot_examples(len(pool), 0, formatted_doc=doc)
    assert all(example.id != copy_id for example in drawable)
    assert len(drawable) >= len(pool) - 5  # only the near-copies are left out, the pool is not emptied
    assert fewshot.EXCLUDED[(f"{task_name}|5", fewshot.DUPLICATE)] >= 1


def test_the_key_ignores_answers_and_typography_but_keeps_options_and_diacritics() -> None:
    from lighteval.tasks.requests import Doc

    base = Doc(query="Passage.\nQ: Tani ọba?\nA:", choices=[" Prince Edward"], gold_index=0)
    other_answer = Doc(query="passage \nq: tani ọba\na:", choices=[" Prince Edward,", " Edward"], gold_index=[0, 1])
    assert fewshot.text_key(base) == fewshot.text_key(other_answer)
    tweet = Doc(query='Tweet: "Nri ndị oga" 😂\nSentiment:', choices=[" positive", " negative"], gold_index=0)
    plain = Doc(query="Tweet: Nri ndị oga\nSentiment:", choices=[" Negative", " positive"], gold_index=1)
    assert fewshot.text_key(tweet) == fewshot.text_key(plain)  # options unordered, the gold not compared
    assert fewshot.text_key(dataclasses.replace(plain, query="Tweet: Nri ndi oga\nSentiment:")) != fewshot.text_key(
        plain
    )
    other_options = dataclasses.replace(plain, choices=[" good", " bad"])
    assert fewshot.text_key(other_options) != fewshot.text_key(plain)
