"""Prompt words from human sources first: the embedded choice equals a re-derivation from the shared TSV, the
precedence IrokoBench > CLDR > MediaWiki > glibc decides the known conflicts, and the counts docs/tasks-and-data.md
gives are true."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from finetasks_afr.prompts import prompt_words
from finetasks_afr.prompts.literals import LITERALS, WORD_FIELDS, prompt_word_counts

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tasks-and-data.md"


@pytest.mark.shared_data
def test_embedded_words_equal_a_derivation_from_the_shared_tsv(shared_data: Path) -> None:
    with (shared_data / "reference" / "prompt_words.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == 366
    chosen, conflicts = prompt_words.derive(rows)
    assert chosen == dict(prompt_words.HUMAN_WORDS)
    assert conflicts == dict(prompt_words.CONFLICTS)


def test_precedence_decides_the_known_conflicts() -> None:
    words, conflicts = prompt_words.HUMAN_WORDS, prompt_words.CONFLICTS
    assert words[("hau", "yes")].word == "ee" and words[("hau", "yes")].source.startswith("IrokoBench")
    assert ("i", "glibc locale LC_MESSAGES yesstr") in conflicts[("hau", "yes")]  # CLDR and glibc say "i"
    assert (
        words[("orm", "no")].word == "lakki" and ("miti", "glibc locale LC_MESSAGES nostr") in conflicts[("orm", "no")]
    )
    assert words[("ibo", "yes")].word == "éè" and {w for w, _ in conflicts[("ibo", "yes")]} == {
        "éè",
        "eye",
        "eeh",
        "eh",
    }
    assert words[("amh", "yes")].word == "አዎ"  # IrokoBench over CLDR's አዎን
    assert words[("ibo", "and_word")].source.startswith("CLDR")  # CLDR "na" over MediaWiki "ná"
    assert words[("afr", "and_word")].word == "en"  # CLDR list pattern "{0} en {1}"
    assert ("zul", "and_word") not in conflicts or words[("zul", "and_word")].word == "na"  # CLDR "ne-" is a prefix
    assert words[("zul", "and_word")].source.startswith("MediaWiki")
    assert ("tir", "and_word") in words and words[("tir", "and_word")].source.startswith("MediaWiki")  # CLDR suffix


def test_normalisation_of_source_forms() -> None:
    assert prompt_words.normalise("&#32;na") == "na"
    assert prompt_words.normalise("Ìbéèrè:") == "ìbéèrè"
    assert prompt_words.normalise("Bẹ́ẹ̀ni ") == "bẹ́ẹ̀ni"
    rows = [
        {"language_iso639_3": "xx", "field": "yes", "word": "Ja", "source": "MediaWiki core message htmlform-yes",
         "source_location": "m", "human_or_machine": "human"},
        {"language_iso639_3": "xx", "field": "yes", "word": "jo", "source": "glibc locale LC_MESSAGES yesstr",
         "source_location": "g", "human_or_machine": "human"},
        {"language_iso639_3": "xx", "field": "no", "word": "nee", "source": "MMLU-ProX prompt lib",
         "source_location": "x", "human_or_machine": "machine (reviewed)"},
        {"language_iso639_3": "xx", "field": "or_word_pattern", "word": "{0}ን {1}ን", "source": "CLDR 48 listPatterns",
         "source_location": "c", "human_or_machine": "human (CLDR)"},
    ]  # fmt: skip
    chosen, conflicts = prompt_words.derive(rows)
    assert chosen == {("xx", "yes"): prompt_words.Word("ja", "MediaWiki core message htmlform-yes", "m")}
    assert conflicts == {
        ("xx", "yes"): (("ja", "MediaWiki core message htmlform-yes"), ("jo", "glibc locale LC_MESSAGES yesstr"))
    }


def test_literals_use_the_human_words_and_record_their_source() -> None:
    for (iso3, field), word in prompt_words.HUMAN_WORDS.items():
        entry = LITERALS.get(iso3)
        if entry is None or field not in WORD_FIELDS or iso3 == "swa" or (iso3, field) in prompt_words.REJECTED:
            continue
        assert vars(entry.literals)[field] == word.word, (iso3, field)
        assert entry.word_sources[field].startswith(word.source), (iso3, field)
    assert LITERALS["tso"].literals.no == "e-e" and "no" in LITERALS["tso"].needs_review  # rejected glibc "ee"


def test_readme_counts_equal_the_literals() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("<!-- prompt-words:start -->")[1].split("<!-- prompt-words:end -->")[0]
    rows = re.findall(r"^\| `(\w{3})` \| (\d+) \| (\d+) \| (\d+) \|$", section, flags=re.MULTILINE)
    assert {iso3: (int(h), int(d), int(m)) for iso3, h, d, m in rows} == prompt_word_counts()
