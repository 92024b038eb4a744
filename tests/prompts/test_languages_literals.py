"""Languages per dataset, and in-language prompt words that make lighteval's templates work for each language."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import cast

import pytest
from lighteval.tasks.templates.copa import COPAInput, get_copa_prompt_function
from lighteval.tasks.templates.multichoice import MCQDictAdapter, get_mcq_prompt_function
from lighteval.tasks.templates.nli import NLIAdapter, RelationType, get_nli_prompt_function
from lighteval.tasks.templates.qa import get_qa_prompt_function
from lighteval.tasks.templates.utils.formatting_utils import capitalize
from lighteval.tasks.templates.utils.formulation import CFFormulation, HybridFormulation, MCFFormulation
from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS, TranslationLiterals
from lighteval.utils.language import Language

from finetasks_afr.prompts import literals as lit
from finetasks_afr.prompts.languages import (
    DATASET_CODES,
    DATASET_NOTES,
    EXCLUDED_CONFIGS,
    LANGUAGES,
    covered_by,
    dataset_keys,
    language,
)
from finetasks_afr.prompts.literals import (
    LITERALS,
    NO_LITERALS_REASON,
    REQUIRED_FIELDS,
    WORD_FIELDS,
    native_prompt_available,
    prompt_language,
    register_literals,
)
from finetasks_afr.prompts.prompt_words import HUMAN_WORDS, REJECTED

EXPECTED_COUNTS = {  # in benchmark-module order (modules are discovered in name order)
    "afridiacritics": 5,
    "afrihate": 15,
    "afrimgsm": 18,
    "afrimmlu": 17,
    "afriqa": 10,
    "afrisenti": 13,
    "afrixnli": 17,
    "belebele": 30,  # 29 African variants + eng_Latn
    "winogrande_afr": 12,  # 11 translations + English (the English columns of winogrande_am)
    "mmlu_clinical_afr": 11,
    "mmlu_en": 1,  # English MMLU from cais/mmlu
    "global_mmlu": 10,  # 9 African configs + en
    "injongointent": 17,  # 16 African languages + eng
    "mafand": 21,  # 15 paired with English, 6 with French
    "masakhanews": 15,
    "naijarc": 3,
    "nollysenti": 5,  # hau ibo pcm yor + eng
    "ntrex": 25,
    "openai_mmmlu": 2,
    "salt": 7,
    "sib200": 55,  # 54 African languages (knc_Arab, taq_Tfng: second scripts, excluded) + eng_Latn
    "uhura_arc_easy": 7,
    "uhura_truthfulqa": 7,  # 6 African languages + en
    "xlsum": 10,
}
DATASETS = dataset_keys()
# languages with lm-evaluation-harness afrixnli verbalisers (Swahili aside)
HARNESS_LANGS = (
    "amh", "ewe", "hau", "ibo", "kin", "lin", "lug", "orm", "sna", "sot", "twi", "wol", "xho", "yor", "zul",
)  # fmt: skip
CITED = frozenset({"confirmation_word", "yes", "also", "no"})
WITH_MEMBER = sorted(iso3 for iso3, lang in LANGUAGES.items() if lang.lighteval is not None)
NATIVE = sorted(iso3 for iso3 in LANGUAGES if native_prompt_available(iso3))

# A hand-made row (AfriMMLU's Yoruba sample from hub-datasets.md, plus an NLI pair and a COPA premise).
LINE = {
    "question": "Kínni iyì p nínú 24 = 2p?",
    "choices": ["p = 4", "p = 8", "p = 12", "p = 24"],
    "gold": 2,
    "premise": "Ọmọ náà ń sùn.",
    "hypothesis": "Ọmọ náà wà lójúfò.",
    "label": 2,
}


def words(iso3: str) -> TranslationLiterals:
    """The words lighteval will use for the language (after registration)."""
    return TRANSLATION_LITERALS[LANGUAGES[iso3].lighteval]  # type: ignore[index]


def stored(literals: TranslationLiterals) -> dict:
    return {f.name: vars(literals)[f.name] for f in dataclasses.fields(literals)}


# ---------------------------------------------------------------- languages


def test_dataset_keys_are_exactly_the_agreed_ones():
    assert tuple(EXPECTED_COUNTS) == DATASETS
    assert set(DATASET_NOTES) == set(DATASETS)
    assert set(EXCLUDED_CONFIGS) <= set(DATASETS)


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_dataset_has_its_languages(dataset):
    langs = covered_by(dataset)
    assert len(langs) == EXPECTED_COUNTS[dataset]
    assert [lang.iso3 for lang in langs] == sorted(lang.iso3 for lang in langs)
    assert all(dataset in lang.codes for lang in langs)


@pytest.mark.parametrize("dataset", DATASETS)
def test_codes_are_unique_per_dataset_and_exclusions_are_not_mapped(dataset):
    codes = [lang.codes[dataset] for lang in covered_by(dataset) if (dataset, lang.iso3) != ("winogrande_afr", "eng")]
    assert len(codes) == len(set(codes))  # English Winogrande shares winogrande_am (its English columns)
    assert not set(codes) & set(EXCLUDED_CONFIGS.get(dataset, {}))


def test_language_table_is_consistent():
    assert list(LANGUAGES) == sorted(LANGUAGES)
    for iso3, lang in LANGUAGES.items():
        assert lang.iso3 == iso3 and re.fullmatch(r"[a-z]{3}", iso3)
        assert re.fullmatch(r"[A-Z][a-z]{3}", lang.script)
        assert lang.name and lang.family
        assert lang.codes, f"{iso3} is in no dataset"
        assert set(lang.codes) <= set(DATASETS)
        if lang.lighteval is not None:
            assert lang.lighteval in TRANSLATION_LITERALS
    assert sum(len(lang.codes) for lang in LANGUAGES.values()) == sum(EXPECTED_COUNTS.values())


def test_known_mappings():
    assert language("orm").lighteval is Language.WEST_CENTRAL_OROMO
    assert language("orm").codes["belebele"] == "gaz_Latn"
    assert language("orm").codes["afrimmlu"] == "orm"
    assert language("swa").codes["belebele"] == "swh_Latn"
    assert language("swa").codes["uhura_arc_easy"] == "sw_multiple_choice"
    assert language("nso").codes["uhura_arc_easy"] == "nso_multiple_choice"
    assert language("lug").lighteval is Language.GANDA
    assert language("sot").lighteval is Language.SOUTHERN_SOTHO
    assert language("nso").lighteval is Language.NORTHERN_SOTHO
    assert language("eng").lighteval is Language.ENGLISH
    assert language("eng").codes["mmlu_en"] == "en" and "mmlu_clinical_afr" not in language("eng").codes
    assert language("eng").codes["sib200"] == "eng_Latn"
    assert language("zul").codes["winogrande_afr"] == "winogrande_zu"
    assert language("eng").codes["winogrande_afr"] == "winogrande_am"
    assert language("zul").codes["mmlu_clinical_afr"] == "zu"
    assert language("ary").lighteval is Language.MOROCCAN_ARABIC and language("ary").script == "Arab"
    assert language("tzm").script == "Tfng" and language("amh").script == "Ethi"
    for iso3 in ("pcm", "vai", "arq"):
        assert language(iso3).lighteval is None
    assert "vai" in language("vai").codes["afrimgsm"]
    assert "wol" in language("wol").codes["afriqa"]


def test_lookup_errors_name_the_code():
    with pytest.raises(KeyError, match=r"xyz.*known codes.*yor"):
        language("xyz")
    with pytest.raises(ValueError, match=r"mmlu.*known keys.*belebele"):
        covered_by("mmlu")


@pytest.mark.shared_data
def test_codes_match_the_shared_data_folders(shared_data: Path) -> None:
    def folders(path: Path) -> set[str]:
        return {p.name for p in path.iterdir() if p.is_dir()}

    def mapped(dataset: str) -> set[str]:
        return set(DATASET_CODES[dataset].values())

    def excluded(dataset: str) -> set[str]:
        return set(EXCLUDED_CONFIGS.get(dataset, {}))

    assert folders(shared_data / "sib200") == mapped("sib200") | excluded("sib200")
    assert folders(shared_data / "masakhanews") == mapped("masakhanews") | excluded("masakhanews")
    assert folders(shared_data / "afrisenti") == mapped("afrisenti") | excluded("afrisenti")
    assert folders(shared_data / "afriqa" / "queries") == mapped("afriqa")
    assert folders(shared_data / "afriqa" / "gold_passages") == mapped("afriqa") - {"wol"}
    winogrande = (shared_data / "bridging_the_gap" / "winogrande_s").glob("winogrande_*.csv")
    suffixes = {p.stem.removeprefix("winogrande_") for p in winogrande}
    assert {f"winogrande_{suffix}" for suffix in suffixes} == mapped("winogrande_afr")
    assert suffixes == mapped("mmlu_clinical_afr")


@pytest.mark.shared_data
def test_english_winogrande_columns_of_the_chosen_config_equal_the_english_release(shared_data: Path) -> None:
    """English Winogrande is read from winogrande_am's English columns: they must be the released English rows."""
    import csv

    folder = shared_data / "bridging_the_gap" / "winogrande_s"
    columns = ("English Sentence", "English Option 1", "English Option 2", "Answer", "Split")

    def rows(name: str) -> dict[str, tuple[str, ...]]:
        with (folder / name).open(encoding="utf-8-sig", newline="") as handle:
            return {row["qID"]: tuple(row[c] for c in columns) for row in csv.DictReader(handle)}

    english = rows("winogrande.csv")
    chosen = DATASET_CODES["winogrande_afr"]["eng"].removeprefix("winogrande_")
    assert len(english) == 3674
    assert rows(f"winogrande_{chosen}.csv") == english


# ---------------------------------------------------------------- literals


def test_every_language_with_a_lighteval_member_has_words_or_a_documented_reason():
    for iso3 in WITH_MEMBER:
        assert native_prompt_available(iso3) != (iso3 in NO_LITERALS_REASON), iso3
    assert not set(LITERALS) & set(NO_LITERALS_REASON)
    assert set(LITERALS) | set(NO_LITERALS_REASON) | {"eng"} == set(WITH_MEMBER)
    for iso3, reason in NO_LITERALS_REASON.items():
        assert LANGUAGES[iso3].name in reason
    for iso3 in ("pcm", "vai", "arq"):
        assert not native_prompt_available(iso3)


@pytest.mark.parametrize("iso3", sorted(LITERALS))
def test_entries_are_complete_and_say_where_words_come_from(iso3):
    entry = LITERALS[iso3]
    assert entry.literals.language is LANGUAGES[iso3].lighteval
    for name in WORD_FIELDS:
        value = vars(entry.literals)[name]
        assert isinstance(value, str) and value.strip() == value and value, (iso3, name)
    for name in ("full_stop", "comma", "question_mark", "colon", "sentence_space", "word_space"):
        assert isinstance(vars(entry.literals)[name], str)
    assert entry.source
    assert entry.needs_review <= set(WORD_FIELDS)
    assert set(entry.word_sources) == set(WORD_FIELDS)
    human = {name for name in WORD_FIELDS if (iso3, name) in HUMAN_WORDS and (iso3, name) not in REJECTED}
    if iso3 in HARNESS_LANGS:
        assert "lm-evaluation-harness" in entry.source
        assert human >= CITED  # the IrokoBench verbalisers are human-sourced words
        doubtful = {"confirmation_word", "also"} if iso3 == "twi" else set()
        assert entry.needs_review == set(WORD_FIELDS) - human | doubtful
    elif iso3 != "swa":
        assert entry.needs_review == set(WORD_FIELDS) - human, "words without a human source must all be flagged"
    for name in human:
        assert vars(entry.literals)[name] == HUMAN_WORDS[(iso3, name)].word or iso3 == "swa", (iso3, name)


def test_cited_words_and_punctuation():
    assert (LITERALS["yor"].literals.yes, LITERALS["yor"].literals.no) == ("bẹ́ẹ̀ni", "rárá")
    assert LITERALS["hau"].literals.confirmation_word == "daidai"
    assert LITERALS["hau"].literals.also == "haka kuma"
    assert (LITERALS["zul"].literals.yes, LITERALS["zul"].literals.no) == ("yebo", "cha")
    assert (LITERALS["amh"].literals.yes, LITERALS["amh"].literals.no) == ("አዎ", "አይ")
    for iso3 in ("amh", "tir"):
        assert (LITERALS[iso3].literals.full_stop, LITERALS[iso3].literals.comma) == ("።", "፣")
    assert LITERALS["swa"].needs_review == set()  # lighteval's words + and_word "na" from CLDR
    assert LITERALS["swa"].literals.and_word == "na" and LITERALS["swa"].word_sources["and_word"].startswith("CLDR")
    arabic = TRANSLATION_LITERALS[Language.ARABIC]
    for iso3 in ("ary", "arz", "aeb"):
        ours = LITERALS[iso3].literals
        assert all(getattr(ours, name) == getattr(arabic, name) for name in WORD_FIELDS)
        assert (ours.comma, ours.question_mark, list(ours.indices)) == (
            arabic.comma,
            arabic.question_mark,
            list(arabic.indices),
        )


def test_register_is_idempotent_and_keeps_lightevals_swahili():
    first = register_literals()
    snapshot = {iso3: stored(words(iso3)) for iso3 in first}
    assert register_literals() == first == sorted(LITERALS)
    assert {iso3: stored(words(iso3)) for iso3 in first} == snapshot
    sw = TRANSLATION_LITERALS[Language.SWAHILI]
    assert (sw.question_word, sw.answer, sw.yes, sw.no, sw.true, sw.false) == (
        "swali",
        "jibu",
        "ndiyo",
        "hapana",
        "kweli",
        "uongo",
    )
    assert sw.and_word == LITERALS["swa"].literals.and_word
    for iso3, entry in LITERALS.items():
        for name in WORD_FIELDS:
            assert vars(words(iso3))[name] is not None, (iso3, name)
        if iso3 != "swa":
            assert stored(words(iso3)) == stored(entry.literals)


def test_register_fills_only_missing_words(monkeypatch):
    custom = TranslationLiterals(language=Language.SWAHILI, question_word="SENTINEL", answer="JIBU", comma=";")
    monkeypatch.setitem(TRANSLATION_LITERALS, Language.SWAHILI, custom)
    register_literals()
    assert TRANSLATION_LITERALS[Language.SWAHILI] is custom
    assert (custom.question_word, custom.answer, custom.comma) == ("SENTINEL", "JIBU", ";")
    assert custom.and_word == "na" and custom.yes == "ndiyo"


def test_register_reaches_prompt_functions_built_before_it(monkeypatch):
    monkeypatch.setitem(TRANSLATION_LITERALS, Language.YORUBA, TranslationLiterals(language=Language.YORUBA))
    fn = get_nli_prompt_function(
        Language.YORUBA,
        {"premise": "premise", "hypothesis": "hypothesis", "gold_idx": "label"},
        ["entailment", "neutral", "contradiction"],
        CFFormulation(),
    )
    with pytest.raises(AttributeError, match=r"needed for Language\.YORUBA"):
        fn(LINE, "t")
    register_literals()
    assert fn(LINE, "t").query.endswith("òótọ́?")


def _as_copa_input(line: dict) -> COPAInput:
    """The COPA template's adapter for rows already written as a COPAInput."""
    return cast(COPAInput, line)


def _check_prompts(lang: Language, w: TranslationLiterals) -> None:
    q, a = capitalize(w.question_word), capitalize(w.answer)
    mcq: MCQDictAdapter = {"question": "question", "choices": "choices", "gold_idx": "gold"}
    for formulation in (CFFormulation(), MCFFormulation(), HybridFormulation()):
        doc = get_mcq_prompt_function(lang, mcq, formulation)(LINE, "t")
        assert f"{q}{w.colon}" in doc.query and doc.query.endswith(f"{a}{w.colon}"), formulation
    doc = get_mcq_prompt_function(lang, mcq, MCFFormulation())(LINE, "t")
    assert f"A{w.full_stop}" in doc.query  # MCF lists the options with the language's full stop

    nli: NLIAdapter = {"premise": "premise", "hypothesis": "hypothesis", "gold_idx": "label"}
    relations: list[RelationType] = ["entailment", "neutral", "contradiction"]
    doc = get_nli_prompt_function(lang, nli, relations, CFFormulation())(LINE, "t")
    assert doc.query.endswith(f"{w.word_space}{w.confirmation_word}{w.question_mark}")
    for word, choice in zip((w.yes, w.also, w.no), doc.choices, strict=True):
        assert choice.startswith(f"{w.sentence_space}{capitalize(word)}{w.comma}")
    doc = get_nli_prompt_function(lang, nli, relations, MCFFormulation())(LINE, "t")
    for word in (w.true, w.false, w.neither):
        assert capitalize(word) in doc.query
    assert f"{q}{w.colon}" in doc.query and doc.query.endswith(f"{a}{w.colon}")
    doc = get_nli_prompt_function(lang, nli, relations, HybridFormulation())(LINE, "t")
    assert f"{w.word_space}{w.or_word}{w.word_space}{capitalize(w.neither)}" in doc.query

    qa = get_qa_prompt_function(lang, lambda line: {"question": line["question"], "choices": ["p = 12"]})
    doc = qa(LINE, "t")
    assert f"{q}{w.colon}" in doc.query and doc.query.endswith(f"{a}{w.colon}")

    for kind, word in (("cause", w.cause_word), ("effect", w.effect_word)):
        copa_line = {
            "cause_effect": kind,
            "context": LINE["premise"],
            "continuations": ["p = 4", "p = 8"],
            "gold_idx": 0,
        }
        doc = get_copa_prompt_function(lang, _as_copa_input, CFFormulation())(copa_line, "t")
        assert doc.query.endswith(f"{w.word_space}{word}"), kind
        doc = get_copa_prompt_function(lang, _as_copa_input, MCFFormulation())(copa_line, "t")
        assert word in doc.query and doc.query.endswith(f"{a}{w.colon}")


@pytest.mark.parametrize("iso3", NATIVE)
def test_native_prompts_build_with_every_template(iso3):
    register_literals()
    lang = prompt_language(iso3, "native")
    assert lang is LANGUAGES[iso3].lighteval
    w = TRANSLATION_LITERALS[lang]
    assert all(vars(w)[name] is not None for name in REQUIRED_FIELDS)
    _check_prompts(lang, w)


def test_english_prompt_language_works_everywhere():
    for iso3 in LANGUAGES:
        assert prompt_language(iso3, "en") is Language.ENGLISH
    assert prompt_language("eng", "native") is Language.ENGLISH
    _check_prompts(Language.ENGLISH, TRANSLATION_LITERALS[Language.ENGLISH])


@pytest.mark.parametrize(
    ("iso3", "pattern"),
    [
        ("pcm", r"Nigerian Pidgin \(pcm\) has no lighteval Language member.*prompt='en'"),
        ("vai", r"Vai \(vai\) has no lighteval Language member"),
        ("arq", r"Algerian Arabic \(arq\) has no lighteval"),
        ("nus", r"Nuer \(nus\) has no in-language prompt words.*English-word prompts only"),
        ("tzm", r"Central Atlas Tamazight \(tzm\) has no in-language prompt words"),
    ],
)
def test_prompt_language_errors_name_the_language(iso3, pattern):
    with pytest.raises(ValueError, match=pattern):
        prompt_language(iso3, "native")
    assert not native_prompt_available(iso3)
    assert prompt_language(iso3, "en") is Language.ENGLISH


def test_prompt_language_rejects_bad_arguments():
    with pytest.raises(ValueError, match="'native' or 'en'"):
        prompt_language("yor", "yoruba")
    with pytest.raises(KeyError, match="xyz"):
        prompt_language("xyz", "en")


def test_review_flags_are_counted_per_entry():
    total = sum(len(entry.needs_review) for entry in LITERALS.values())
    human = sum(
        (iso3, name) in HUMAN_WORDS and (iso3, name) not in REJECTED for iso3 in LITERALS for name in WORD_FIELDS
    )
    swahili_builtin = len(WORD_FIELDS) - sum(("swa", name) in HUMAN_WORDS for name in WORD_FIELDS)
    doubtful = 2  # twi's two cited words that stay flagged
    assert total == len(LITERALS) * len(WORD_FIELDS) - human - swahili_builtin + doubtful == 322
    assert lit.TEMPLATE_FIELDS["nli_cf"] == ("confirmation_word", "yes", "no", "also")
