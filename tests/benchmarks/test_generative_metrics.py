"""Value tests of the generative metrics: lighteval's F1 and prefix exact match with its multilingual normalisers.

The generative tasks (AfriMGSM, AfriQA) score with `MultilingualQuasiF1ScoreMetric(lang)` and
`MultilingualQuasiExactMatchMetric(lang, "prefix")` (finetasks_afr.benchmarks.common.gen_metrics), `lang` the
CONTENT language (`content_language`: the language's lighteval member, English rules where it has none).
Every value here is computed through the metric objects of real tasks of TASKS_TABLE with lighteval's own
`apply_metric` (what `Pipeline._compute_metrics` calls) on a Doc and a ModelResponse, and was worked out by hand.

What lighteval 0.13 does (metrics/normalizations.py `get_multilingual_normalizer`, metrics_sample.py):
  normalise(text) = word_tokenize(lower(remove_punc(remove_articles(text, lang))))   joined by single spaces
  - remove_articles: a regex per language, only for a few European languages and Hebrew (English
    `\\b(a|an|the)\\b`); no African language has one. It runs BEFORE lowercasing, so "The" is kept.
  - remove_punc: drops every Unicode P* character (".", ",", "-", "'", Ethiopic "።"); NOT combining marks
    (category Mn), so tone marks and underdots stay. No Unicode normalisation (NFC/NFD) and no accent folding.
  - lower(), then the language's word tokenizer (spaCy for English/Yoruba/Swahili-as-English, ...; plain
    whitespace splitting for languages without one, e.g. Hausa, Zulu, Igbo).
  F1 = nltk f_measure on the SETS of tokens (repeats count once), max over golds.
  Prefix exact match = 1 if normalise(pred).startswith(normalise(gold)): a CHARACTER prefix, not a token one.
"""

from __future__ import annotations

import os
import unicodedata
from typing import Any, cast

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

from tests.tasks.test_tasks import HUB_ONLY_ROWS  # noqa: E402

YORUBA, SWAHILI, ENGLISH, HAUSA, VAI = "afrimgsm_yor", "afrimgsm_swa", "afrimgsm_eng", "afriqa_hau", "afrimgsm_vai"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Any]:
    """The QA-style generative tasks of the suite by name (both prompt variants share their metrics); translation,
    summarisation and diacritics are scored with chrF++ (tests/benchmarks/test_translation.py)."""
    from finetasks_afr.tasks import TASK_INFO, TASKS_TABLE

    return {
        config.name: config
        for config in TASKS_TABLE
        if TASK_INFO[config.name].formulation == "GEN" and TASK_INFO[config.name].benchmark in ("afrimgsm", "afriqa")
    }


def _config(tasks: dict[str, Any], name: str) -> Any:
    return tasks[name] if name in tasks else tasks[f"{name}_enprompt"]  # vai: English prompt words only


def score(tasks: dict[str, Any], name: str, prediction: str, golds: list[str]) -> tuple[float, float]:
    """(F1, prefix exact match) of `prediction` against `golds` with task `name`'s own metric objects."""
    from lighteval.metrics import apply_metric
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    config = _config(tasks, name)
    # as the QA template stores golds: one choice per answer, with lighteval's leading space
    doc = Doc(query="Q:", choices=[f" {gold}" for gold in golds], gold_index=list(range(len(golds))), task_name=name)
    [values] = apply_metric(responses=[ModelResponse(text=[prediction])], docs=[doc], metrics=config.metrics)
    return _pick(values, "f1_"), _pick(values, "exact_match_")


def _pick(values: dict[str, float], prefix: str) -> float:
    [value] = [float(v) for key, v in values.items() if key.startswith(prefix)]
    return value


# ------------------------------------------------------------------------------------------ names and setup


def test_metric_names_in_the_task_configs(tasks: dict[str, Any]) -> None:
    """f1_<lighteval language value> and exact_match_<value>_prefix: the value, not our ISO code (Oromo: gaz)."""
    names = {name: [metric.metric_name for metric in config.metrics] for name, config in tasks.items()}
    assert names["afrimgsm_yor"] == ["f1_yor", "exact_match_yor_prefix"]
    assert names["afrimgsm_yor_enprompt"] == ["f1_yor", "exact_match_yor_prefix"]  # content language, not words
    assert names["afrimgsm_swa"] == ["f1_swa", "exact_match_swa_prefix"]
    assert names["afrimgsm_eng"] == ["f1_eng", "exact_match_eng_prefix"]
    assert names["afrimgsm_orm"] == ["f1_gaz", "exact_match_gaz_prefix"]  # Language.WEST_CENTRAL_OROMO
    assert names["afrimgsm_vai_enprompt"] == ["f1_eng", "exact_match_eng_prefix"]  # no lighteval member
    # AfriQA's golds are spans of the English (fon: French) pivot passage: that language's rules
    assert names["afriqa_hau"] == ["f1_eng", "exact_match_eng_prefix"]
    assert names["afriqa_zul"] == ["f1_eng", "exact_match_eng_prefix"]
    assert names["afriqa_fon_enprompt"] == ["f1_fra", "exact_match_fra_prefix"]
    for name, config in tasks.items():
        assert len(names[name]) == 2 and names[name][1].endswith("_prefix"), name
        assert config.stop_sequence == ["\n"], name


def test_languages_without_a_lighteval_member_fall_back_to_english_rules() -> None:
    from lighteval.utils.language import Language

    from finetasks_afr.benchmarks.common import content_language
    from finetasks_afr.prompts.languages import language

    assert content_language(language("pcm")) == Language.ENGLISH  # Nigerian Pidgin
    assert content_language(language("vai")) == Language.ENGLISH
    assert content_language(language("yor")) == Language.YORUBA
    assert content_language(language("orm")) == Language.WEST_CENTRAL_OROMO


# ------------------------------------------------------------------------------------------------- values


def test_end_to_end_on_a_real_prompt(tasks: dict[str, Any]) -> None:
    """AfriMGSM Yoruba on the hand-made hub row (answer_number 5): the Doc's gold " 5" as the task builds it."""
    from lighteval.metrics import apply_metric
    from lighteval.models.model_output import ModelResponse

    config = tasks[YORUBA]
    doc = config.prompt_function(dict(cast(dict[str, Any], HUB_ONLY_ROWS["afrimgsm"])), YORUBA)
    assert doc.get_golds() == [" 5"]
    expected = {  # prediction -> (F1, prefix EM)
        "5": (1.0, 1.0),
        " 5.": (1.0, 1.0),  # spaces and the full stop go
        "5 ọsàn": (2 / 3, 1.0),  # {5, ọsàn} vs {5}: P 1/2, R 1
        "4": (0.0, 0.0),
        "50": (0.0, 1.0),  # "50" starts with "5": a character prefix (see the AfriMGSM note below)
        "": (0.0, 0.0),
    }
    for prediction, (f1, em) in expected.items():
        [values] = apply_metric(responses=[ModelResponse(text=[prediction])], docs=[doc], metrics=config.metrics)
        assert values == {"f1_yor": pytest.approx(f1), "exact_match_yor_prefix": em}, prediction


def test_tone_marks_and_underdots_are_kept_not_folded(tasks: dict[str, Any]) -> None:
    """Yoruba "ọmọ" (child) and "omo" are different words to the normaliser: combining marks are category Mn,
    not punctuation, and nothing strips accents. A wrong tone is a wrong answer, as for a reader of Yoruba."""
    assert score(tasks, YORUBA, "ọmọ", ["ọmọ"]) == (1.0, 1.0)
    assert score(tasks, YORUBA, "omo", ["ọmọ"]) == (0.0, 0.0)
    assert score(tasks, YORUBA, "ọmọ́", ["ọmọ"]) == (0.0, 1.0)  # extra high tone: a new token, same char prefix
    assert score(tasks, YORUBA, "Ọmọ", ["ọmọ"]) == (1.0, 1.0)  # case folds (str.lower knows Ọ)


def test_no_unicode_normalisation_nfd_differs_from_nfc(tasks: dict[str, Any]) -> None:
    """SURPRISING: the same word decomposed (o + U+0323 combining dot) does not match its composed form, so a
    model that writes NFD scores 0. The Doc's gold is NFC (finetasks_afr's clean()); the prediction is not
    normalised by anyone."""
    composed = unicodedata.normalize("NFC", "ọmọ")
    decomposed = unicodedata.normalize("NFD", "ọmọ")
    assert composed != decomposed
    assert score(tasks, YORUBA, decomposed, [composed]) == (0.0, 0.0)
    assert score(tasks, YORUBA, unicodedata.normalize("NFD", "Bénin"), ["Bénin"]) == (0.0, 0.0)


def test_english_articles_are_removed_only_in_lower_case(tasks: dict[str, Any]) -> None:
    """English rules drop a/an/the, but before lowercasing: a capitalised "The" stays (SURPRISING)."""
    assert score(tasks, ENGLISH, "the answer", ["answer"]) == (1.0, 1.0)
    assert score(tasks, ENGLISH, "answer", ["the answer"]) == (1.0, 1.0)
    # "The answer" -> "the answer": {the, answer} vs {answer}: P 1/2, R 1, F1 2/3; "the answer" !startswith "answer"
    assert score(tasks, ENGLISH, "The answer", ["answer"]) == (pytest.approx(2 / 3), 0.0)


def test_swahili_rules_keep_english_articles(tasks: dict[str, Any]) -> None:
    """Swahili has no article pattern (lighteval tokenises it with English spaCy, but removes no words)."""
    assert score(tasks, SWAHILI, "the answer", ["answer"]) == (pytest.approx(2 / 3), 0.0)
    assert score(tasks, ENGLISH, "the answer", ["answer"]) == (1.0, 1.0)


def test_punctuation_is_removed(tasks: dict[str, Any]) -> None:
    assert score(tasks, HAUSA, "Lagos.", ["Lagos"]) == (1.0, 1.0)
    assert score(tasks, HAUSA, "Lagos", ["Lagos."]) == (1.0, 1.0)
    assert score(tasks, HAUSA, '"Lagos",', ["Lagos"]) == (1.0, 1.0)
    # a hyphen is punctuation and goes WITHOUT a space: "Abu-Dhabi" -> "abudhabi" != "abu dhabi"
    assert score(tasks, HAUSA, "Abu-Dhabi", ["Abu Dhabi"]) == (0.0, 0.0)
    # digit group separators too: "1,000" -> "1000"
    assert score(tasks, YORUBA, "1,000", ["1000"]) == (1.0, 1.0)


def test_prefix_exact_match(tasks: dict[str, Any]) -> None:
    assert score(tasks, YORUBA, "12 apples", ["12"])[1] == 1.0
    assert score(tasks, YORUBA, "1", ["12"])[1] == 0.0
    assert score(tasks, YORUBA, "12", ["12 apples"])[1] == 0.0  # the gold must be the prefix
    # SURPRISING for AfriMGSM: the prefix is one of characters, so a longer number matches, and "12.5" loses
    # its point ("125") and matches too; F1 (whole tokens) does not.
    assert score(tasks, YORUBA, "120", ["12"]) == (0.0, 1.0)
    assert score(tasks, YORUBA, "12.5", ["12"]) == (0.0, 1.0)
    # and the sign: "-" (hyphen-minus, category Pd) is punctuation, so "-12" equals "12"
    assert score(tasks, YORUBA, "-12", ["12"]) == (1.0, 1.0)


def test_token_f1_by_hand(tasks: dict[str, Any]) -> None:
    # {x, y, z} vs {y, z, w}: 2 common, P = 2/3, R = 2/3, F1 = 2/3
    assert score(tasks, SWAHILI, "x y z", ["y z w"]) == (pytest.approx(2 / 3), 0.0)
    # the same letters as "a b c" / "b c d": Swahili keeps "a" (2/3); English drops it: {b, c} vs {b, c, d},
    # P = 1, R = 2/3, F1 = 0.8
    assert score(tasks, SWAHILI, "a b c", ["b c d"])[0] == pytest.approx(2 / 3)
    assert score(tasks, ENGLISH, "a b c", ["b c d"])[0] == pytest.approx(0.8)
    # {x} vs {x, y}: P = 1, R = 1/2, F1 = 2/3
    assert score(tasks, HAUSA, "x", ["x y"]) == (pytest.approx(2 / 3), 0.0)
    # SETS of tokens: a repeated word counts once ("x x y" vs "x y" is 1.0; SQuAD's counting F1 gives 0.8)
    assert score(tasks, HAUSA, "x x y", ["x y"]) == (1.0, 0.0)
    assert score(tasks, HAUSA, "p q", ["x y"]) == (0.0, 0.0)


def test_multiple_golds_take_the_best(tasks: dict[str, Any]) -> None:
    """AfriQA rows may list several answer texts: each metric is the max over them."""
    golds = ["Lagos", "Lagos State"]
    assert score(tasks, HAUSA, "Lagos State", golds) == (1.0, 1.0)
    # vs "lagos": {lagos, city} P 1/2 R 1 -> 2/3; vs "lagos state": P 1/2 R 1/2 -> 1/2; max 2/3. Prefix: "lagos"
    assert score(tasks, HAUSA, "Lagos city", golds) == (pytest.approx(2 / 3), 1.0)
    assert score(tasks, HAUSA, "Abuja", golds) == (0.0, 0.0)


def test_afriqa_english_answers_get_english_rules(tasks: dict[str, Any]) -> None:
    """AfriQA's answers are English (French for fon) passage spans. With the question language's normaliser (Hausa:
    no article removal; the bug found by this file) "Nile" vs "the Nile" scored F1 2/3 and exact match 0; with the
    answers' own (English) rules the article goes and both are 1."""
    assert score(tasks, HAUSA, "Nile", ["the Nile"]) == (1.0, 1.0)
    assert score(tasks, ENGLISH, "Nile", ["the Nile"]) == (1.0, 1.0)


def test_english_fallback_for_vai_and_pidgin(tasks: dict[str, Any]) -> None:
    """Vai has no lighteval member: English rules. Vai syllabary text passes untouched; the English article
    pattern is ASCII-only. (The same fallback for Nigerian Pidgin would drop its pronoun "a", 'I'.)"""
    assert score(tasks, VAI, "ꕙꔤ ꕉ", ["ꕙꔤ ꕉ"]) == (1.0, 1.0)
    assert score(tasks, VAI, "ꕙꔤ", ["ꕙꔤ ꕉ"]) == (pytest.approx(2 / 3), 0.0)
    assert score(tasks, VAI, "a dey come", ["dey come"]) == (1.0, 1.0)


def test_ethiopic_full_stop_is_punctuation(tasks: dict[str, Any]) -> None:
    assert score(tasks, "afrimgsm_amh", "ወደ ቤት።", ["ወደ ቤት"]) == (1.0, 1.0)
