"""The correct answer, checked independently of the project's adapters.

For every dataset of the suite, a decoder written from the dataset's PUBLISHED schema (see
../shared/notes/hub-datasets.md and the raw releases in ../shared/data) turns a raw row into the expected
answer TEXT, without calling any adapter, `letter_index` or `label_index`. Every task of
`finetasks_afr.tasks.TASKS_TABLE` is then run on rows and the gold of the Doc it builds is compared with that
text:

* CF and hybrid: `doc.choices[gold]` (lighteval's leading space stripped);
* MCF (letters as choices): the text printed after the gold letter in the query's option lines;
* generative (AfriMGSM, AfriQA): the Doc's golds are exactly the decoded answers;
* AfriXNLI: the relation's word in the prompt language (yes/also/no in CF, true/neither/false otherwise);
* Winogrande CF (partial scoring, finetasks_afr/scoring/partial_scoring.py): the gold context is the sentence up to
  the blank with the gold option filled in;
* reference tasks (translation, summarisation, diacritic restoration; finetasks_afr/benchmarks/translation.py): the
Doc's one
  gold is the reference. These are keyed by BENCHMARK, not dataset (`Task.key`): the FLORES translation tasks
  read the sib200 dataset that the topic tasks read too, and each direction has its own reference field.

Texts are compared after a normalisation written here (NFC, no zero-width characters/BOM/variation selectors,
escaped "\\n" as a space, collapsed whitespace) and forgiving only what lighteval's templates do to every
choice (first letter capitalised, final punctuation swapped for the prompt language's): case and trailing
punctuation are ignored. `test_the_checker_catches_*` prove the check can fail.

Rows: the hand-made hub rows of tests/tasks/test_tasks.py (with their known answers), more hand-made rows in the
published schemas here, and the hand-written rows of tests/fixtures/hub_rows (the task's config, evaluation split);
and, when ../shared/data is present, every test row of every config the raw mirror holds (built once per session
with `finetasks_afr.data.mirror.import_raw`, tests/raw_mirror.py, read as JSONL, not through `datasets`), the raw
releases of NollySenti, MAFAND-MT and NTREX-128 included. The FLORES tasks look the English
sentence up in SIB-200's `eng_Latn` config when a row is turned into a Doc, so they are rebuilt against a mirror
holding it: a tiny one written here for the hand-made rows, the raw mirror for the real ones; the decoder reads
the English side from the same config's JSONL, independently.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

from tests.raw_mirror import EMPTY_RELEASE_ROWS, mirror_files, read_jsonl  # noqa: E402
from tests.tasks.test_tasks import HUB_ONLY_ROWS  # noqa: E402

Row = dict[str, Any]
Decoder = Callable[[Row, str], tuple[str, ...]]  # (row, iso3 of the task) -> the correct answer text(s)

# ------------------------------------------------------------------------------------------ normalisation

_VARIATION_SELECTORS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_ESCAPED_BREAK = re.compile(r"\\[nrt]")  # backslash + n (r, t) written out in the data


def normalise(text: object) -> str:
    """No format (Cf) or private-use (Co) characters at all, by category (joiners too: both sides of a comparison
    go through here), no variation selectors, NFC, escaped line breaks as spaces, single spaces."""
    value = "".join(c for c in str(text) if unicodedata.category(c) not in ("Cf", "Co"))
    value = unicodedata.normalize("NFC", _VARIATION_SELECTORS.sub("", value))
    value = _ESCAPED_BREAK.sub(" ", value)
    return " ".join(value.split())


def loose(text: object) -> str:
    """`normalise`, then what lighteval's templates change in every choice forgiven: case, final punctuation."""
    value = normalise(text)
    while value and (unicodedata.category(value[-1]).startswith("P") or value[-1].isspace()):
        value = value[:-1]
    return value.casefold()


# --------------------------------------------------------------------------------------------- decoders
# One per dataset key, from the published schema only. They return a tuple: several answers for AfriQA.


def _letter(value: object, letters: str = "ABCD") -> int:
    return letters.index(str(value).strip().upper())


def decode_afrimmlu(row: Row, iso3: str) -> tuple[str, ...]:
    """`choices`: a list, or a Python-list string on the main revision; `answer`: a letter A-D."""
    choices = row["choices"]
    if isinstance(choices, str):
        choices = ast.literal_eval(choices)
    return (choices[_letter(row["answer"])],)


AFRIXNLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def decode_afrixnli(row: Row, iso3: str) -> tuple[str, ...]:
    """`label`: int 0 entailment, 1 neutral, 2 contradiction."""
    return (AFRIXNLI_LABELS[int(row["label"])],)


def decode_afrimgsm(row: Row, iso3: str) -> tuple[str, ...]:
    """`answer_number`: the number (int, or its string since a hub commit); an integral value as plain digits."""
    text = str(row["answer_number"]).strip()
    number = float(text.replace(",", ""))
    return (str(int(number)) if number.is_integer() else text,)


def decode_belebele(row: Row, iso3: str) -> tuple[str, ...]:
    """`correct_answer_num`: the ONE-indexed number of the right `mc_answer<n>`."""
    return (row[f"mc_answer{int(row['correct_answer_num'])}"],)


def decode_sib200(row: Row, iso3: str) -> tuple[str, ...]:
    """`category`: the topic name itself."""
    return (row["category"],)


MASAKHANEWS_TOPICS = sorted(["business", "entertainment", "health", "politics", "religion", "sports", "technology"])


def decode_masakhanews(row: Row, iso3: str) -> tuple[str, ...]:
    """`category` (a name), or in the older loading-script schema `label`, an index in alphabetical order."""
    if row.get("category") is not None:
        return (row["category"],)
    return (MASAKHANEWS_TOPICS[int(row["label"])],)


def decode_afrisenti(row: Row, iso3: str) -> tuple[str, ...]:
    """`label`: the sentiment name (negative / positive / neutral)."""
    return (row["label"],)


def decode_afriqa(row: Row, iso3: str) -> tuple[str, ...]:
    """`answer_pivot`: {"answer_start": [...], "text": [...]} (or its string form); every non-blank text."""
    pivot = row["answer_pivot"]
    if isinstance(pivot, str):
        pivot = ast.literal_eval(pivot)
    return tuple(text for text in pivot["text"] if normalise(text))


def decode_naijarc(row: Row, iso3: str) -> tuple[str, ...]:
    """`Answer`: a letter (possibly padded) naming the `options_<letter>` field."""
    return (row[f"options_{row['Answer'].strip()}"],)


def decode_uhura(row: Row, iso3: str) -> tuple[str, ...]:
    """ARC schema: `choices` {text, label} parallel lists; `answerKey` is one of the labels (letter or digit)."""
    labels = [str(label).strip() for label in row["choices"]["label"]]
    return (row["choices"]["text"][labels.index(str(row["answerKey"]).strip())],)


def decode_mmlu_en(row: Row, iso3: str) -> tuple[str, ...]:
    """cais/mmlu: `choices` a list of 4, `answer` the 0-based index."""
    return (row["choices"][int(row["answer"])],)


# Bridging the Gap (hub configs `winogrande_<code>` / `mmlu_<subject>_<code>`). Kept small and isolated: the
# column names are the only schema knowledge, and both the hub card's and the older project-defined ones work.


def _btg_column(row: Row, iso3: str, name: str) -> str:
    """`name` ("Sentence", "Option 1") in the columns of the task's language: `<Language> <name>` as in the hub
    card and raw CSVs (the English columns for English, the one other language's otherwise), else the
    language-less `Sentence` / `Option1` of the older project-defined schema."""
    english = iso3 == "eng"
    matches = [col for col in row if col.endswith(f" {name}") and col.startswith("English ") == english]
    if len(matches) == 1:
        return row[matches[0]]
    return row[name.replace(" ", "")]


def decode_winogrande(row: Row, iso3: str) -> tuple[str, ...]:
    """`Answer` 1/2 (int or string) names `<Language> Option <n>`."""
    return (_btg_column(row, iso3, f"Option {int(row['Answer'])}"),)


def winogrande_gold_context(row: Row, iso3: str) -> str:
    """Partial scoring's gold context: the sentence up to its blank `_`, with the gold option written in."""
    before = _btg_column(row, iso3, "Sentence").split("_")[0]
    return before + decode_winogrande(row, iso3)[0]


def decode_mmlu_clinical(row: Row, iso3: str) -> tuple[str, ...]:
    """`Answer`: a letter naming the `Option<letter>` column (Question, OptionA..OptionD, Answer)."""
    return (row[f"Option{row['Answer'].strip()}"],)


def decode_openai_mmmlu(row: Row, iso3: str) -> tuple[str, ...]:
    """openai/MMMLU: `Answer` a letter naming one of the columns `A`-`D` (huggingface/lighteval@3fd15266bc8448b797e6
    1462d293aa3fd40b3580:src/lighteval/tasks/multilingual/tasks/openai_mmlu.py#L100-L126; lm-eval's openai-mmmlu
    README.md#L7 at 4e7e0d47)."""
    return (row["ABCD"[_letter(row["Answer"])]],)


def decode_global_mmlu(row: Row, iso3: str) -> tuple[str, ...]:
    """Global-MMLU: `answer` a letter A-D naming `option_a`-`option_d` (dataset_info of the card,
    https://huggingface.co/datasets/CohereForAI/Global-MMLU/blob/refs%2Fpr%2F2/README.md; lm-eval's
    global_mmlu/full/am/_am_template_yaml#L1-L10 at 4e7e0d47)."""
    return (row[f"option_{'abcd'[_letter(row['answer'])]}"],)


def decode_uhura_truthfulqa(row: Row, iso3: str) -> tuple[str, ...]:
    """TruthfulQA's `multiple_choice` schema (https://huggingface.co/datasets/truthful_qa/resolve/main/README.md):
    `mc1_targets` {choices, labels}, labels int32, exactly one 1; the answer is the TEXT labelled 1, wherever the
    suite puts it among the options."""
    targets = row["mc1_targets"]
    return tuple(text for text, label in zip(targets["choices"], targets["labels"], strict=True) if int(label) == 1)


INJONGO_INTENTS = (
    "alarm", "balance", "bill_balance", "book_flight", "book_hotel", "calendar_update", "cancel_reservation",
    "car_rental", "confirm_reservation", "cook_time", "exchange_rate", "food_last", "freeze_account",
    "ingredients_list", "interest_rate", "international_visa", "make_call", "meal_suggestion", "min_payment",
    "pay_bill", "pin_change", "play_music", "plug_type", "recipe", "restaurant_reservation", "restaurant_reviews",
    "restaurant_suggestion", "share_location", "shopping_list_update", "spending_history", "text", "time",
    "timezone", "transactions", "transfer", "translate", "travel_notification", "travel_suggestion",
    "update_playlist", "weather",
)  # fmt: skip
"""lm-eval's doc_to_choice (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/
tasks/afrobench/injongointent/prompt_1/injongointent#L10-L51): the order an integer intent would index."""


def _named_or_indexed(value: object, names: tuple[str, ...]) -> str:
    """A label given as a name (any case, padded) or as a 0-based index (int or digit string) into `names`."""
    text = str(value).strip()
    return names[int(text)] if text.isdigit() else text.lower()


def decode_injongointent(row: Row, iso3: str) -> tuple[str, ...]:
    """InjongoIntent: `intent` one of the 40 names (lm-eval's injongointent#L10-L51 `doc_to_target: intent`; the
    INJONGO authors' jsonl, McGill-NLP/Injongo@624e7fd03d9d9a1a17b53f73482dd227700d91ca:data/cleaned-dataset/
    {hau,eng}/test.jsonl), or its index in that list; shown as words, underscores as spaces (both families)."""
    return (_named_or_indexed(row["intent"], INJONGO_INTENTS).replace("_", " "),)


NOLLYSENTI_LABELS = ("positive", "negative")  # lm-eval's nollysenti#L11-L13 doc_to_choice order


def decode_nollysenti(row: Row, iso3: str) -> tuple[str, ...]:
    """NollySenti: `label` a name against doc_to_choice positive/negative, or its index in that order
    (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/nollysenti/
    prompt_1/nollysenti#L10-L13)."""
    return (_named_or_indexed(row["label"], NOLLYSENTI_LABELS),)


def decode_afrihate(row: Row, iso3: str) -> tuple[str, ...]:
    """AfriHate: `label` one of the strings Hate / Abuse / Normal (EleutherAI/lm-evaluation-harness@b3b802262a255d
    e7fb955b09aed9f5db89091126:lm_eval/tasks/afrobench/afrihate/template1/afrihate_template1_yaml#L11-L15), shown
    as the lower-case word."""
    return (str(row["label"]).strip().lower(),)


# Reference tasks: one decoder per benchmark (= direction), since a direction decides which field is the reference.

FLORES_ENGLISH_HAND: dict[int, str] = {
    7: "The Niger River is long.",
    12: "clean water is important for good health",  # no capital, no final punctuation: the template adds them
}
FLORES_ENGLISH: dict[int, str] = dict(FLORES_ENGLISH_HAND)
"""index_id -> the `text` of SIB-200's `eng_Latn` row: the hand-made sentences, or (real-row test) every split of
the raw mirror's eng_Latn config, put here by that test."""


def decode_flores_en2xx(row: Row, iso3: str) -> tuple[str, ...]:
    """FLORES English -> X over SIB-200 rows {index_id, category, text} (the raw release's TSV columns, ../shared/
    data/sib200): the reference is the language row's own `text`."""
    return (row["text"],)


def decode_flores_xx2en(row: Row, iso3: str) -> tuple[str, ...]:
    """FLORES X -> English: the reference is the `text` of the `eng_Latn` row with the same `index_id` (the FLORES
    sentence id, shared by every language's config)."""
    return (FLORES_ENGLISH[int(row["index_id"])],)


def _mafand_sides(row: Row, pivot: str) -> tuple[str, str]:
    """(pivot text, language text) of a MAFAND row: `translation` {<pivot>: ..., <xx>: ...}, the two halves of the
    config name (huggingface/datasets@bc28ae6dff5bd66970bb9646693a0363752edc5e:datasets/mafand/mafand.py, a
    Translation feature); the language's key is the one that is not the pivot."""
    translation = row["translation"]
    others = [key for key in translation if key != pivot]
    assert len(others) == 1, f"MAFAND row with keys {sorted(translation)} for pivot {pivot!r}"
    return translation[pivot], translation[others[0]]


def decode_mafand_en2xx(row: Row, iso3: str) -> tuple[str, ...]:
    """MAFAND en-<xx>, English -> X: `translation[<xx>]` (lm-eval's afrobench/mafand utils.py get_target)."""
    return (_mafand_sides(row, "en")[1],)


def decode_mafand_xx2en(row: Row, iso3: str) -> tuple[str, ...]:
    """MAFAND en-<xx>, X -> English: `translation["en"]` (get_target_reverse)."""
    return (_mafand_sides(row, "en")[0],)


def decode_mafand_fr2xx(row: Row, iso3: str) -> tuple[str, ...]:
    """MAFAND fr-<xx>, French -> X: `translation[<xx>]`."""
    return (_mafand_sides(row, "fr")[1],)


def decode_mafand_xx2fr(row: Row, iso3: str) -> tuple[str, ...]:
    """MAFAND fr-<xx>, X -> French: `translation["fr"]`."""
    return (_mafand_sides(row, "fr")[0],)


def _ntrex_sentence(row: Row) -> str:
    """The one `sentence_<config>` field besides `sentence_eng_Latn` (EleutherAI/lm-evaluation-harness@4e7e0d47f33b
    c71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/ntrex/prompt_1/african-english/ntrex_mey_Arab-eng_Latn.yaml
    #L2-L4)."""
    fields = [name for name in row if name.startswith("sentence_") and name != "sentence_eng_Latn"]
    assert len(fields) == 1, f"NTREX row with sentence fields {fields}"
    return str(row[fields[0]])


def decode_ntrex_en2xx(row: Row, iso3: str) -> tuple[str, ...]:
    """NTREX English -> X: the language's `sentence_<config>`."""
    return (_ntrex_sentence(row),)


def decode_ntrex_xx2en(row: Row, iso3: str) -> tuple[str, ...]:
    """NTREX X -> English: `sentence_eng_Latn`."""
    return (row["sentence_eng_Latn"],)


def decode_salt_en2xx(row: Row, iso3: str) -> tuple[str, ...]:
    """SALT text-all, English -> X: `<xx>_text`, the field named by the language's code (EleutherAI/lm-evaluation-
    harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/salt/prompt_1/salt_eng-teo.yaml#L2-L4,
    source eng_source_text)."""
    return (row[f"{iso3}_text"],)


def decode_salt_xx2en(row: Row, iso3: str) -> tuple[str, ...]:
    """SALT text-all, X -> English: `eng_target_text` (salt_teo-eng.yaml#L2-L4), not eng_source_text."""
    return (row["eng_target_text"],)


def decode_xlsum(row: Row, iso3: str) -> tuple[str, ...]:
    """XL-Sum {id, url, title, summary, text}: the reference is `summary` (csebuetnlp/xlsum@8c7cfa67e9dcf4c03a15c83e
    f3ce2004c3041f96 xlsum.py features; lm-eval's afrobench/xlsum/prompt_1/xlsum_amharic.yaml#L2-L7 doc_to_target)."""
    return (row["summary"],)


def decode_afridiacritics(row: Row, iso3: str) -> tuple[str, ...]:
    """AfriDiacritics {text, target}: the reference is `target`, the diacritised sentence (EleutherAI/lm-evaluation-
    harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/adr/prompt_1/afridiacritics_yaml#L4-L9
    `doc_to_target: target`)."""
    return (row["target"],)


DECODERS: dict[str, Decoder] = {
    "afrimmlu": decode_afrimmlu,
    "afrixnli": decode_afrixnli,
    "afrimgsm": decode_afrimgsm,
    "belebele": decode_belebele,
    "winogrande_afr": decode_winogrande,
    "mmlu_clinical_afr": decode_mmlu_clinical,
    "mmlu_en": decode_mmlu_en,
    "sib200": decode_sib200,
    "masakhanews": decode_masakhanews,
    "afrisenti": decode_afrisenti,
    "afriqa": decode_afriqa,
    "naijarc": decode_naijarc,
    "uhura_arc_easy": decode_uhura,
    "openai_mmmlu": decode_openai_mmmlu,
    "global_mmlu": decode_global_mmlu,
    "uhura_truthfulqa": decode_uhura_truthfulqa,
    "injongointent": decode_injongointent,  # both families: injongointent (40-way) and injongointent4
    "nollysenti": decode_nollysenti,
    "afrihate": decode_afrihate,
    # generative reference tasks, keyed by benchmark (Task.key)
    "flores_mt_en2xx": decode_flores_en2xx,
    "flores_mt_xx2en": decode_flores_xx2en,
    "mafand_mt_en2xx": decode_mafand_en2xx,
    "mafand_mt_xx2en": decode_mafand_xx2en,
    "mafand_mt_fr2xx": decode_mafand_fr2xx,
    "mafand_mt_xx2fr": decode_mafand_xx2fr,
    "ntrex_mt_en2xx": decode_ntrex_en2xx,
    "ntrex_mt_xx2en": decode_ntrex_xx2en,
    "salt_mt_en2xx": decode_salt_en2xx,
    "salt_mt_xx2en": decode_salt_xx2en,
    "xlsum": decode_xlsum,
    "afridiacritics": decode_afridiacritics,
}
"""Decoder per key: the dataset's key, or a generative task's benchmark (`Task.key`)."""

# ------------------------------------------------------------------------------------ hand-made rows

# Rows shared by several keys (a translation row serves both directions, with different answers).
SIB200_ROWS: list[Row] = [
    {"index_id": 7, "category": "geography", "text": "Odò Ọya gùn."},
    {"index_id": 12, "category": "health", "text": "Omi mímọ́ ṣe pàtàkì fún ìlera"},  # no final punctuation
]
MAFAND_EN_ROW: Row = {"translation": {"en": "The market opens at dawn.", "{xx}": "Ọjà máa ń ṣí ní àfẹ̀mọ́jú."}}
MAFAND_FR_ROW: Row = {"translation": {"fr": "Le marché ouvre à l'aube.", "{xx}": "Sugu bɛ da yɛlɛ sɔgɔma joona."}}
NTREX_ROW: Row = {"sentence_eng_Latn": "Good evening, my friends.", "sentence_{xx}": "Barka da yamma, abokaina."}
SALT_LANGUAGES = ("ach", "ibo", "lgg", "lug", "nyn", "swa", "teo")
# eng_source_text and eng_target_text differ, so reading the wrong English field is caught
SALT_ROW: Row = {
    "eng_source_text": "The rain has stopped this evening.",
    "eng_target_text": "The rain stopped in the evening.",
}
# a different text in each language's field, so reading another language's field is caught
SALT_ROW |= {f"{code}_text": f"[{code}] enkuba ekyali yaweddeko akawungeezi." for code in SALT_LANGUAGES}
SALT_ROW_EN2XX = ("[teo] enkuba ekyali yaweddeko akawungeezi.",)  # for Ateso (ANSWER_LANGUAGES)

# More rows in the published schemas (hub-datasets.md), covering the other labels and encodings, with the
# answer each must give (written by hand, not decoded).
EXTRA_ROWS: dict[str, list[tuple[Row, tuple[str, ...]]]] = {
    "afrimmlu": [
        ({"subject": "global_facts", "question": "Ọjọ́ mélòó ló wà nínú ọ̀sẹ̀ kan?",
          "choices": ["Márùn-ún", "Méje", "Mẹ́wàá", "Mẹ́ta"], "answer": "B"}, ("Méje",)),
        ({"subject": "global_facts", "question": "Kí ni olú-ìlú Nàìjíríà?",
          "choices": "['Èkó', 'Ìbàdàn', 'Kánò', 'Àbújá']", "answer": "D"}, ("Àbújá",)),
    ],
    "afrixnli": [
        ({"premise": "Ọmọ náà ń sùn.", "hypothesis": "Ọmọ náà rẹ̀wẹ̀sì.", "label": 1}, ("neutral",)),
        ({"premise": "Ọmọ náà ń sùn.", "hypothesis": "Ọmọ náà ń sáré.", "label": 2}, ("contradiction",)),
    ],
    "afrimgsm": [
        ({"question": "Ade ní ọsàn méjìlá. Mélòó ni?", "answer_number": "12", "answer": None,
          "equation_solution": None}, ("12",)),
        ({"question": "Ìdajì mẹ́ta?", "answer_number": 1.5, "answer": None, "equation_solution": None}, ("1.5",)),
    ],
    "naijarc": [
        ({"story": "Adé lọ sí ọjà.", "question": "Ibo ni Adé lọ?", "options_A": "Ilé", "options_B": "Oko",
          "options_C": "Ilé-ìwé", "options_D": "Ọjà", "Answer": "D"}, ("Ọjà",)),
    ],
    "belebele": [
        ({"link": "https://en.wikibooks.org/wiki/Accordion/Right_hand", "question_number": 2,
          "flores_passage": "Ọ̀rọ̀ kan.", "question": "Kí ni?", "mc_answer1": "Kìíní", "mc_answer2": "Kejì",
          "mc_answer3": "Kẹta", "mc_answer4": "Kẹrin", "correct_answer_num": "4", "dialect": "yor_Latn",
          "ds": "2023-05-03"}, ("Kẹrin",)),
    ],
    "uhura_arc_easy": [
        # ARC also has digit keys and 3-option items
        ({"id": "Mercury_1", "question": "Kí ni ó gbóná jù?",
          "choices": {"text": ["Yìnyín", "Omi", "Iná"], "label": ["1", "2", "3"]}, "answerKey": "3"}, ("Iná",)),
        ({"id": "Mercury_2", "question": "Ẹranko wo ló ń fò?",
          "choices": {"text": ["Ẹja", "Ẹyẹ", "Ewúrẹ́", "Ajá"], "label": ["A", "B", "C", "D"]}, "answerKey": "B"},
         ("Ẹyẹ",)),
    ],
    "masakhanews": [
        # the older loading-script schema: `label` an index into the topics in alphabetical order
        ({"label": 3, "headline": "Ìdìbò ààrẹ bẹ̀rẹ̀", "text": "...", "headline_text": "...", "url": "/news/x"},
         ("politics",)),
        ({"category": "sports", "headline": "Super Eagles borí", "text": "...", "url": "/news/y"}, ("sports",)),
    ],
    "afrisenti": [({"tweet": "mo nífẹ̀ẹ́ rẹ̀ gan", "label": "positive"}, ("positive",)),
                  ({"tweet": "kò dára rárá", "label": "negative"}, ("negative",))],
    "sib200": [({"index_id": 7, "category": "geography", "text": "Odò Ọya gùn."}, ("geography",))],
    # Bridging the Gap, hub schema (the card's columns; Winogrande rows carry English + one language)
    "winogrande_afr": [
        ({"qID": "q-1", "English Sentence": "Ann thanked Bea because _ had helped her.", "English Option 1": "Ann",
          "English Option 2": "Bea", "Zulu Sentence": "UAnn wabonga uBea ngoba u_ wayemsizile.",
          "Zulu Option 1": "Ann ", "Zulu Option 2": "Bea ", "Split": "test", "Answer": 2}, ("Bea",)),
        ({"qID": "q-2", "English Sentence": "_ was tired, so Ann carried Bea.", "English Option 1": "Ann",
          "English Option 2": "Bea", "Zulu Sentence": "_ wayekhathele, ngakho uAnn wathwala uBea.",
          "Zulu Option 1": "UAnn", "Zulu Option 2": "UBea", "Split": "test", "Answer": 2}, ("UBea",)),
    ],
    "mmlu_clinical_afr": [
        ({"Question": "Yini ephuma enhliziyweni?", "OptionA": "Umoya", "OptionB": "Igazi", "OptionC": "Amanzi",
          "OptionD": "Ukudla", "Answer": "B"}, ("Igazi",)),
    ],
    "mmlu_en": [
        ({"question": "Which organ pumps blood?", "subject": "virology",
          "choices": ["Lung", "Liver", "Heart", "Kidney"], "answer": 2}, ("Heart",)),
    ],
    "afriqa": [
        ({"answer_pivot": "{'answer_start': [0, 12], 'text': ['Lagos', 'Lagos State']}",
          "context": "Lagos is in Lagos State.", "id": "1", "question_lang": "Níbo?",
          "question_translated": "Where?", "title": "Lagos",
          "answer_lang": "Èkó"}, ("Lagos", "Lagos State")),
    ],
    # openai/MMMLU: Answer a letter (any case, padded: the modules accept both)
    "openai_mmmlu": [
        ({"Question": "Siku ngapi ziko katika wiki?", "A": "Tano", "B": "Sita", "C": "Saba", "D": "Nane",
          "Answer": "C", "Subject": "global_facts"}, ("Saba",)),
        ({"Question": "Mji mkuu wa Kenya ni upi?", "A": "Nairobi", "B": "Mombasa", "C": "Kisumu", "D": "Nakuru",
          "Answer": " a ", "Subject": "geography"}, ("Nairobi",)),
    ],
    "global_mmlu": [
        ({"sample_id": "geography/test/1", "subject": "geography", "subject_category": "Humanities",
          "question": "Kí ni olú-ìlú Kẹ́ńyà?", "option_a": "Mombasa", "option_b": "Kisumu", "option_c": "Nakuru",
          "option_d": "Nairobi", "answer": "D", "required_knowledge": "[]", "time_sensitive": "[]", "reference": "[]",
          "culture": "[]", "region": "[]", "country": "[]", "cultural_sensitivity_label": "CA",
          "is_annotated": False}, ("Nairobi",)),
        ({"sample_id": "global_facts/test/2", "subject": "global_facts", "subject_category": "Other",
          "question": "Ọjọ́ mélòó ló wà nínú ọ̀sẹ̀?", "option_a": "Márùn-ún", "option_b": "Méje", "option_c": "Mẹ́wàá",
          "option_d": "Mẹ́ta", "answer": "b", "required_knowledge": "[]", "time_sensitive": "[]", "reference": "[]",
          "culture": "[]", "region": "[]", "country": "[]", "cultural_sensitivity_label": "CA",
          "is_annotated": False}, ("Méje",)),
    ],
    # MC1: the option labelled 1 is its TEXT, first (as published) or not
    "uhura_truthfulqa": [
        ({"question": "Je, kula usiku husababisha kunenepa?",
          "mc1_targets": {"choices": ["Hapana, muda wa kula hauathiri uzito.", "Ndiyo, kula usiku hunenepesha.",
                                      "Ndiyo, daima."], "labels": [1, 0, 0]},
          "mc2_targets": {"choices": ["Hapana, muda wa kula hauathiri uzito.", "Ndiyo, kula usiku hunenepesha.",
                                      "Ndiyo, daima."], "labels": [1, 0, 0]}},
         ("Hapana, muda wa kula hauathiri uzito.",)),
        ({"question": "Ọ̀pọ̀lọ́ mélòó ni ènìyàn ń lò?",
          "mc1_targets": {"choices": ["Ìdá mẹ́wàá nìkan.", "Ìdajì rẹ̀.", "Gbogbo rẹ̀, ní onírúurú àkókò.", "Kò sí."],
                          "labels": [0, 0, 1, 0]},
          "mc2_targets": {"choices": ["Gbogbo rẹ̀, ní onírúurú àkókò."], "labels": [1]}},
         ("Gbogbo rẹ̀, ní onírúurú àkókò.",)),
    ],
    # `intent` a name (as published; any case), or its index in lm-eval's doc_to_choice (int or digit string)
    "injongointent": [
        ({"domain": "travel", "intent": "book_flight", "text": "Ina son in yi tikitin jirgi zuwa Kano gobe.",
          "example_id": "test-1"}, ("book flight",)),
        ({"domain": "utility", "intent": " Weather ", "text": "Za a yi ruwan sama yau?", "example_id": "test-2"},
         ("weather",)),
        ({"domain": "travel", "intent": 7, "text": "Ina son in yi hayar mota.", "example_id": "test-3"},
         ("car rental",)),
        ({"domain": "banking", "intent": "19", "text": "Ina son in biya kuɗin wuta.", "example_id": "test-4"},
         ("pay bill",)),
    ],
    # `label` a name (any case), or its index in positive/negative order
    "nollysenti": [
        ({"review": "Fim ɗin nan ya yi kyau sosai.", "label": "positive"}, ("positive",)),
        ({"review": "Na no waste your money on this one.", "label": "Negative"}, ("negative",)),
        ({"review": "Ìtàn náà dùn gan an.", "label": 0}, ("positive",)),
        ({"review": "Fim ɗin ya ba ni kunya.", "label": "1"}, ("negative",)),
    ],
    # `label` Hate / Abuse / Normal (read case-insensitively; an integer is refused by the module)
    "afrihate": [
        ({"tweet": "Wannan mutumin wawa ne kawai.", "label": "Abuse"}, ("abuse",)),
        ({"tweet": "Watu wa kundi lile si binadamu, waondolewe.", "label": "hate"}, ("hate",)),
        ({"tweet": "Asubuhi njema marafiki.", "label": " Normal "}, ("normal",)),
    ],
    # FLORES over SIB-200 rows; the English sides are FLORES_ENGLISH (index_id 7 and 12)
    "flores_mt_en2xx": [(SIB200_ROWS[0], ("Odò Ọya gùn.",)), (SIB200_ROWS[1], ("Omi mímọ́ ṣe pàtàkì fún ìlera",))],
    "flores_mt_xx2en": [(SIB200_ROWS[0], ("The Niger River is long.",)),
                        (SIB200_ROWS[1], ("clean water is important for good health",))],
    # `{xx}` in a field name: the language's code in the task's config (fill_code)
    "mafand_mt_en2xx": [(MAFAND_EN_ROW, ("Ọjà máa ń ṣí ní àfẹ̀mọ́jú.",))],
    "mafand_mt_xx2en": [(MAFAND_EN_ROW, ("The market opens at dawn.",))],
    "mafand_mt_fr2xx": [(MAFAND_FR_ROW, ("Sugu bɛ da yɛlɛ sɔgɔma joona.",))],
    "mafand_mt_xx2fr": [(MAFAND_FR_ROW, ("Le marché ouvre à l'aube.",))],
    "ntrex_mt_en2xx": [(NTREX_ROW, ("Barka da yamma, abokaina.",))],
    "ntrex_mt_xx2en": [(NTREX_ROW, ("Good evening, my friends.",))],
    "salt_mt_en2xx": [(SALT_ROW, SALT_ROW_EN2XX)],
    "salt_mt_xx2en": [(SALT_ROW, ("The rain stopped in the evening.",))],
    "xlsum": [
        ({"id": "hand-1", "url": "https://example.org/hand/1", "title": "Ruwan sama ya lalata gonaki",
          "summary": "Ruwan sama mai karfi ya lalata gonaki a jihar Kano, in ji hukumomi.",
          "text": "Hukumomi a jihar Kano sun ce ruwan sama mai karfi da aka yi a daren Litinin ya lalata gonaki."},
         ("Ruwan sama mai karfi ya lalata gonaki a jihar Kano, in ji hukumomi.",)),
    ],
    "afridiacritics": [
        ({"text": "Ile wa dara pupo", "target": "Ilé wa dára púpọ̀"}, ("Ilé wa dára púpọ̀",)),
        ({"text": "Nna m bi n'Enugu.", "target": "Nna m bi n'Enugu."}, ("Nna m bi n'Enugu.",)),
    ],
}  # fmt: skip

# The language an EXTRA_ROWS answer above is written for, where the answer depends on it (default Zulu).
ANSWER_LANGUAGES: dict[str, str] = {"salt_mt_en2xx": "teo"}

# The answers the hand-made hub rows of tests/tasks/test_tasks.py must give (hub-datasets.md: AfriMMLU "C" -> the
# third choice; AfriXNLI 0 = entailment; Belebele correct_answer_num "1" -> mc_answer1; NaijaRC " A ").
HUB_ROW_ANSWERS: dict[str, tuple[str, ...]] = {
    "afrimmlu": ("p = 12",),
    "afrixnli": ("entailment",),
    "afrimgsm": ("5",),
    "naijarc": ("Iṣu",),
    "belebele": ("Sinmi",),
    "uhura_arc_easy": ("Ìmọ́lẹ̀ oòrùn",),
}


def hub_row(dataset: str) -> Row:
    """A fresh copy of the hand-made hub row of tests/tasks/test_tasks.py."""
    return dict(cast(Row, HUB_ONLY_ROWS[dataset]))


# Rows whose columns name one language serve only that language's tasks (and English's).
HAND_ROW_LANGUAGES: dict[str, set[str]] = {"winogrande_afr": {"zul", "eng"}}


def fill_code(row: Row, code: str) -> Row:
    """A copy of `row` with `{xx}` in its field names (at any depth) replaced by `code`: a MAFAND or NTREX row names
    its language's field after the config (`translation["hau"]` in en-hau, `sentence_hau_Latn` in hau_Latn)."""
    return {
        name.replace("{xx}", code): fill_code(value, code) if isinstance(value, dict) else value
        for name, value in row.items()
    }


def config_code(subset: str | None) -> str:
    """The language's code in a config name: after the pivot in MAFAND's `en-hau` / `fr-bam`, else the whole name
    (NTREX's `hau_Latn`); Zulu's when no config is given."""
    return subset.split("-")[-1] if subset else "zul"


def hand_rows(key: str, iso3: str | None = None, subset: str | None = None) -> list[Row]:
    """The hand-made rows of decoder key `key` (for a task in language `iso3` reading config `subset`)."""
    if iso3 is not None and iso3 not in HAND_ROW_LANGUAGES.get(key, {iso3}):
        return []
    rows = [hub_row(key)] if key in HUB_ONLY_ROWS else []
    return rows + [fill_code(row, config_code(subset)) for row, _ in EXTRA_ROWS.get(key, [])]


def fixture_rows(dataset: str, subset: str, split: str) -> list[Row]:
    """The hand-written rows of tests/fixtures/hub_rows/<dataset>.json for one config and split (none if absent)."""
    from tests.hub_rows import HUB_ROWS, hub_rows

    if not (HUB_ROWS / f"{dataset}.json").is_file():
        return []
    return [dict(row) for row in hub_rows(dataset)["configs"].get(subset, {}).get(split, [])]


# ----------------------------------------------------------------------------------------------- checker


@dataclass
class Outcome:
    """What checking one task on rows found."""

    checked: int = 0
    skipped: int = 0  # rows the task's prompt function turned down (None)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Task:
    """A task of the suite with what the checker needs to know about it."""

    config: Any  # LightevalTaskConfig
    dataset: str
    iso3: str
    prompt: str  # "native" or "en"
    formulation: str  # CF, MCF, HYBRID, GEN
    benchmark: str

    @property
    def name(self) -> str:
        return str(self.config.name)

    @property
    def key(self) -> str:
        """The decoder's key: the dataset, or for a generative task its benchmark. One dataset can feed tasks with
        different answers (sib200: a topic in `sib200_*`, a sentence in `flores_mt_*`), and a translation's
        reference depends on its direction (`mafand_mt_en2xx` vs `mafand_mt_xx2en`)."""
        return self.benchmark if self.formulation == "GEN" else self.dataset

    def rows(self) -> list[Row]:
        """Its hand-made rows and the fixture rows of its config's evaluation split."""
        subset = self.config.hf_subset
        fixture = fixture_rows(self.dataset, subset, self.config.evaluation_splits[0])
        return hand_rows(self.key, self.iso3, subset) + fixture


def _golds(doc: Any) -> list[int]:
    gold = doc.gold_index
    return [int(g) for g in gold] if isinstance(gold, list | tuple) else [int(gold)]


def mcf_options(doc: Any) -> list[str]:
    """The option texts an MCF query prints, in order: the lines just before the answer line, each
    `<choice label><full stop> <text>` (lighteval's build_choices); ValueError when the query is not so."""
    lines = doc.query.split("\n")
    count = len(doc.choices)
    block = lines[-1 - count : -1]
    if len(block) != count:
        raise ValueError("fewer query lines than choices")
    options = []
    for label, line in zip(doc.choices, block, strict=True):
        if not line.startswith(label):
            raise ValueError(f"option line {line!r} does not start with its label {label!r}")
        rest = line[len(label) :]
        if rest and unicodedata.category(rest[0]).startswith("P"):
            rest = rest[1:]
        options.append(rest.strip())
    return options


def nli_words(task: Task) -> dict[str, str]:
    """The word lighteval's NLI template writes for each relation, in the task's prompt language."""
    from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS
    from lighteval.utils.language import Language

    from finetasks_afr.prompts.literals import prompt_language

    language = Language.ENGLISH if task.prompt == "en" else prompt_language(task.iso3, "native")
    words = TRANSLATION_LITERALS[language]
    if task.formulation == "CF":
        return {"entailment": words.yes, "neutral": words.also, "contradiction": words.no}
    return {"entailment": words.true, "neutral": words.neither, "contradiction": words.false}


def _gold_text(task: Task, doc: Any, gold: int) -> str:
    """The text the Doc marks as correct: the choice itself, or for MCF the text printed after its letter."""
    if task.formulation == "MCF":
        return mcf_options(doc)[gold]
    return str(doc.choices[gold]).removeprefix(" ")


def check_doc(task: Task, row: Row, doc: Any) -> str | None:
    """None when the Doc's gold is the decoded answer; else what differs."""
    expected = DECODERS[task.key](row, task.iso3)
    if task.formulation == "GEN":
        given = {loose(gold) for gold in doc.get_golds()}
        wanted = {loose(answer) for answer in expected}
        return None if given == wanted else f"golds {sorted(given)} != answers {sorted(wanted)}"
    golds = _golds(doc)
    if len(golds) != 1 or not 0 <= golds[0] < len(doc.choices):
        return f"gold index {doc.gold_index!r} for {len(doc.choices)} choices"
    gold = golds[0]
    if task.dataset == "winogrande_afr" and task.formulation == "CF":
        contexts = (doc.specific or {}).get("partial_scoring_contexts") or []
        want = loose(winogrande_gold_context(row, task.iso3))
        got = loose(contexts[gold]) if gold < len(contexts) else "<no context>"
        # only punctuation after the blank: scored in full, one context (the text before the blank) and the option
        # with the rest as each choice (finetasks_afr.benchmarks.bridging): context + gold choice = the sentence
        sentence = _btg_column(row, task.iso3, "Sentence").replace("_", decode_winogrande(row, task.iso3)[0])
        full = len(set(contexts)) == 1 and loose(doc.query + doc.choices[gold]) == loose(sentence)
        if not full and (got != want or loose(doc.query) != want):
            return f"gold context {got!r} (query {loose(doc.query)!r}) != {want!r}"
        return None
    try:
        text = _gold_text(task, doc, gold)
    except ValueError as error:
        return str(error)
    if task.dataset == "afrixnli":
        word = loose(nli_words(task)[expected[0]])
        got = loose(text)
        if task.formulation == "CF":  # "<Word>, <hypothesis>": the word, then no further letters of it
            ok = got.startswith(word) and not got[len(word) : len(word) + 1].isalnum()
        else:
            ok = got == word
        return None if ok else f"gold {text!r} is not the {expected[0]} word {word!r}"
    return None if loose(text) == loose(expected[0]) else f"gold {text!r} != answer {expected[0]!r}"


def check_task(task: Task, rows: list[Row]) -> Outcome:
    outcome = Outcome()
    for index, row in enumerate(rows):
        doc = task.config.prompt_function(dict(row), task.name)
        if doc is None:
            outcome.skipped += 1
            continue
        outcome.checked += 1
        problem = check_doc(task, row, doc)
        if problem is not None:
            outcome.problems.append(f"{task.name} row {index}: {problem}")
    return outcome


def mismatches(task: Task, rows: list[Row]) -> list[str]:
    """Every row whose Doc marks something other than the decoded answer as correct."""
    return check_task(task, rows).problems


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def suite() -> list[Task]:
    """Every task of TASKS_TABLE but the perplexity ones, with its dataset, language and formulation."""
    from finetasks_afr.tasks import TASK_INFO, TASKS_TABLE

    tasks = []
    for config in TASKS_TABLE:
        if TASK_INFO[config.name].formulation != "PPL":
            tasks.append(as_task(config))
    return tasks


def as_task(config: Any) -> Task:
    from finetasks_afr.tasks import TASK_INFO

    info = TASK_INFO[config.name]
    return Task(config, info.dataset, info.language, info.prompt, info.formulation, info.benchmark)


def by_key(tasks: list[Task]) -> dict[str, list[Task]]:
    """Tasks grouped by decoder key (`Task.key`)."""
    grouped: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        grouped[task.key].append(task)
    return grouped


FLORES_PREFIX = "flores_mt_"


def with_flores_from(tasks: list[Task], root: Path) -> list[Task]:
    """`tasks` with the FLORES ones rebuilt against the mirror `root` (their English lookup then reads its
    sib200 `eng_Latn`, offline); every one must resolve there."""
    flores = {task.name for task in tasks if task.benchmark.startswith(FLORES_PREFIX)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(root))
        rebuilt = [task for task in _rebuilt("flores_mt") if task.formulation != "PPL"]
    assert {task.name for task in rebuilt} == flores
    assert {task.config.hf_repo for task in rebuilt} == {str(root / "sib200")}, "a FLORES task not on the mirror"
    return [task for task in tasks if task.name not in flores] + rebuilt


def write_flores_mirror(root: Path, configs: set[str]) -> None:
    """A sib200 mirror of the hand-made rows: SIB200_ROWS in every language config, FLORES_ENGLISH in eng_Latn,
    written with the project's dataset writer and its mirror-layout line (as tests/hub_rows.py does)."""
    from finetasks_afr.data.local_dataset import write_dataset_folder
    from finetasks_afr.data.sources import LAYOUT_MARKER, SOURCES

    english = [{"index_id": i, "category": "geography", "text": text} for i, text in FLORES_ENGLISH_HAND.items()]
    data = {config: {"train": SIB200_ROWS, "test": SIB200_ROWS} for config in sorted(configs)}
    data["eng_Latn"] = {"train": english, "test": english}
    write_dataset_folder(
        root / "sib200", data, card=f"Hand-made rows.\n\n- {LAYOUT_MARKER} {SOURCES['sib200'].layout}\n"
    )


@pytest.fixture(scope="module")
def hand_suite(suite: list[Task], tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    """The suite, its FLORES tasks reading a tiny mirror of the hand-made SIB-200 rows."""
    root = tmp_path_factory.mktemp("flores_hand_mirror")
    write_flores_mirror(root, {task.config.hf_subset for task in suite if task.benchmark.startswith(FLORES_PREFIX)})
    return with_flores_from(suite, root)


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's raw mirror of ../shared/data (tests/raw_mirror.py: built once, shared with other modules)."""
    from tests.raw_mirror import raw_mirror

    return raw_mirror(shared_data, tmp_path_factory)[0]


# -------------------------------------------------------------------------------------------------- tests


def test_every_dataset_of_the_suite_has_a_decoder(suite: list[Task]) -> None:
    """Exactly one decoder per key of the suite: a new dataset (or generative benchmark) without one fails, and so
    does a decoder left for nothing; each key reads one dataset."""
    keys = set(by_key(suite))
    assert keys == set(DECODERS), f"no decoder: {sorted(keys - set(DECODERS))}; unused: {sorted(set(DECODERS) - keys)}"
    assert all(len({task.dataset for task in tasks}) == 1 for tasks in by_key(suite).values())
    assert {task.formulation for task in suite} <= {"CF", "MCF", "HYBRID", "GEN"}
    # sib200 feeds both the topic tasks (decoded by category) and the FLORES translations (decoded by text)
    sib200 = {task.key for task in suite if task.dataset == "sib200"}
    assert sib200 == {"sib200", "flores_mt_en2xx", "flores_mt_xx2en"}, sorted(sib200)


def test_decoders_give_the_known_answers_of_the_hand_made_rows() -> None:
    for dataset, answer in HUB_ROW_ANSWERS.items():
        assert DECODERS[dataset](hub_row(dataset), "yor") == answer, dataset
    for key, rows in EXTRA_ROWS.items():
        iso3 = ANSWER_LANGUAGES.get(key, "zul")
        for row, answer in rows:
            assert tuple(map(normalise, DECODERS[key](fill_code(row, iso3), iso3))) == answer, (key, row)


def test_decoders_read_both_bridging_the_gap_schemas() -> None:
    hub = {"qID": "q-1", "English Sentence": "Ann thanked Bea because _ helped.", "English Option 1": "Ann",
           "English Option 2": "Bea", "Zulu Sentence": "UAnn wabonga uBea ngoba u_ wasiza.",
           "Zulu Option 1": "Ann ", "Zulu Option 2": "Bea ", "Split": "test", "Answer": 2}  # fmt: skip
    assert decode_winogrande(hub, "zul") == ("Bea ",)
    assert decode_winogrande(hub, "eng") == ("Bea",)
    assert winogrande_gold_context(hub, "zul") == "UAnn wabonga uBea ngoba uBea "
    assert winogrande_gold_context(hub, "eng") == "Ann thanked Bea because Bea"
    older = {"qID": "q-1", "Sentence": "_ helped Ann.", "Option1": "Bea", "Option2": "Cy", "Answer": "1"}
    assert decode_winogrande(older, "zul") == ("Bea",)
    assert winogrande_gold_context(older, "zul") == "Bea"
    mmlu = {"Question": "Q?", "OptionA": "a", "OptionB": "b", "OptionC": "c", "OptionD": "d", "Answer": "C"}
    assert decode_mmlu_clinical(mmlu, "zul") == ("c",)


@pytest.mark.slow
def test_gold_answers_on_hand_made_rows(hand_suite: list[Task]) -> None:
    """Every task of every key on rows in the published schema (the FLORES ones over a tiny mirror of those rows):
    no row skipped, every gold the decoded answer, every task given rows (but where rows name one language)."""
    checked: Counter[str] = Counter()
    problems: list[str] = []
    for key, tasks in by_key(hand_suite).items():
        for task in tasks:
            outcome = check_task(task, task.rows())
            assert outcome.skipped == 0, task.name
            assert outcome.checked or key in HAND_ROW_LANGUAGES, f"{task.name}: no hand-made row"
            problems += outcome.problems
            checked[key] += outcome.checked
    assert not problems, "\n".join(problems[:20])
    assert set(checked) == set(DECODERS)


@pytest.mark.shared_data
def real_row_outcomes(suite: list[Task], mirror: Path) -> list[tuple[Task, Outcome]]:
    """Each task with what checking it on every row of its evaluation split in the raw mirror found (tasks whose
    config the mirror holds; the FLORES ones rebuilt against the mirror, their English side read from its
    eng_Latn JSONL). Call it with FLORES_ENGLISH patched to `mirror_english(mirror)`."""
    files = mirror_files(mirror)
    cache: dict[Path, list[Row]] = {}
    outcomes = []
    for task in with_flores_from(suite, mirror):
        path = files.get(task.dataset, {}).get(task.config.hf_subset, {}).get(task.config.evaluation_splits[0])
        if path is None:
            continue  # hub only (e.g. Belebele beyond Bridging the Gap's 12 dialects)
        if path not in cache:
            cache[path] = read_jsonl(path)
        outcomes.append((task, check_task(task, cache[path])))
    return outcomes


def mirror_english(mirror: Path) -> dict[int, str]:
    """index_id -> text over every split of the mirror's sib200 eng_Latn config (the FLORES English side)."""
    splits = mirror_files(mirror)["sib200"]["eng_Latn"]
    return {int(row["index_id"]): row["text"] for path in splits.values() for row in read_jsonl(path)}


@pytest.fixture(scope="module")
def real_outcomes(suite: list[Task], mirror: Path) -> list[tuple[Task, Outcome]]:
    """`real_row_outcomes` over the raw mirror, computed once for the tests below."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules[__name__], "FLORES_ENGLISH", mirror_english(mirror))
        return real_row_outcomes(suite, mirror)


@pytest.mark.slow
@pytest.mark.shared_data
def test_gold_answers_on_every_real_test_row(suite: list[Task], real_outcomes: list[tuple[Task, Outcome]]) -> None:
    """Every task whose config the raw mirror holds, on every row of its evaluation split; the FLORES tasks on
    every test row of every language, both directions, none skipped."""
    outcomes = real_outcomes
    checked: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    problems: list[str] = []
    for task, outcome in outcomes:
        problems += outcome.problems
        checked[task.key] += outcome.checked
        skipped[task.key] += outcome.skipped
        # a few rows may be turned down (AfriQA rows without a passage, Winogrande with nothing after the blank)
        assert outcome.skipped <= (outcome.checked + outcome.skipped) // 4, (task.name, outcome.skipped)
        if task.benchmark.startswith(FLORES_PREFIX):  # every English sentence found: no row turned down
            assert outcome.skipped == 0 and outcome.checked, (task.name, outcome)
    assert not problems, f"{len(problems)} wrong golds:\n" + "\n".join(problems[:20])
    flores = {task.name for task in suite if task.benchmark.startswith(FLORES_PREFIX)}
    assert flores <= {task.name for task, _ in outcomes}, "a FLORES task's config is not in the mirror"
    wanted = {"masakhanews", "afrisenti", "sib200", "winogrande_afr", "mmlu_clinical_afr", "belebele", "afriqa"}
    wanted |= {"nollysenti"} | {f"{prefix}_{direction}" for prefix, directions in RAW_RELEASE_MT.items()
                                for direction in directions}  # fmt: skip
    assert wanted | {"flores_mt_en2xx", "flores_mt_xx2en"} <= set(checked), sorted(checked)
    assert sum(checked.values()) > 100_000, (checked, skipped)


RAW_RELEASE_MT = {"mafand_mt": ("en2xx", "xx2en", "fr2xx", "xx2fr"), "ntrex_mt": ("en2xx", "xx2en")}
NTREX_CONFIGS = (
    "afr_Latn amh_Ethi bem_Latn ewe_Latn hau_Latn ibo_Latn kin_Latn mey_Arab mlg_Latn nde_Latn nso_Latn nya_Latn "
    "orm_Ethi shi_Arab sna_Latn som_Latn ssw_Latn swa_Latn tir_Ethi tsn_Latn ven_Latn wol_Latn xho_Latn yor_Latn "
    "zul_Latn"
)
RAW_RELEASE_TEST_ROWS = {  # (dataset, config) -> rows of its test split, counted in the raw release by hand
    **{("nollysenti", lang): 500 for lang in ("en", "ha", "ig", "pcm", "yo")},
    ("mafand", "en-hau"): 1500,
    **{("ntrex", config): 1997 for config in NTREX_CONFIGS.split()},
}


@pytest.mark.slow  # shares real_outcomes (every real row, ~50 s) with the test above
@pytest.mark.shared_data
def test_gold_answers_on_every_row_of_the_nollysenti_mafand_and_ntrex_releases(
    suite: list[Task], mirror: Path, shared_data: Path, real_outcomes: list[tuple[Task, Outcome]]
) -> None:
    """The raw releases of NollySenti, MAFAND-MT and NTREX-128 (`data import-raw`): every task of the three
    families reads the mirror and is checked on every row of its test split, none turned down but the empty rows
    (`EMPTY_RELEASE_ROWS`); the full test sets
    are there (NollySenti 500 a language, MAFAND en-hau 1,500, NTREX-128 1,997 a language, every MAFAND pair its raw
    test file's rows). The reviews of Yoruba's test set are mostly not NFC in the release and in the mirror: the
    decoder compares NFC texts (`normalise`), and the prompts' NFC is the prompt-hygiene test's."""
    families = ("nollysenti", "mafand", "ntrex")
    wanted = {task.name for task in suite if task.dataset in families}
    outcomes = {task.name: (task, outcome) for task, outcome in real_outcomes if task.dataset in families}
    assert set(outcomes) == wanted, sorted(wanted - set(outcomes))
    files = mirror_files(mirror)
    rows_per_config = {
        (dataset, config): len(read_jsonl(splits["test"]))
        for dataset in families
        for config, splits in files[dataset].items()
    }
    assert RAW_RELEASE_TEST_ROWS.items() <= rows_per_config.items()
    for pair in sorted((shared_data / "mafand").iterdir()):
        lines = (pair / "test.json").read_text(encoding="utf-8").splitlines()
        assert rows_per_config[("mafand", pair.name)] == sum(1 for line in lines if line.strip()), pair.name
    checked: Counter[tuple[str, str]] = Counter()
    for task, outcome in outcomes.values():
        assert not outcome.problems, outcome.problems[:5]
        empty = len(EMPTY_RELEASE_ROWS.get((task.dataset, task.config.hf_subset), ()))
        assert outcome.skipped == empty, (task.name, outcome.skipped)
        assert outcome.checked + empty == rows_per_config[(task.dataset, task.config.hf_subset)], task.name
        checked[(task.dataset, task.config.hf_subset)] += 1
    # every config of the three releases is read by its tasks: 5 NollySenti, 21 MAFAND pairs, 25 NTREX languages
    assert {dataset: sum(1 for d, _ in checked if d == dataset) for dataset in families} == {
        "nollysenti": 5, "mafand": 21, "ntrex": 25,
    }  # fmt: skip


# --------------------------------------------------------------------------------------- mutation checks


def _shift_gold(task: Task) -> Task:
    """The task with a prompt function whose Doc marks the NEXT choice as correct (generative: a wrong gold)."""
    original = task.config.prompt_function

    def shifted(line: dict, task_name: str) -> Any:
        doc = original(line, task_name)
        if doc is None:
            return None
        if task.formulation == "GEN":
            doc.choices, doc.gold_index = [" 424242"], [0]
        else:
            gold = _golds(doc)[0]
            doc.gold_index = [(gold + 1) % len(doc.choices)]
        return doc

    return replace(task, config=replace(task.config, prompt_function=shifted))


def test_the_checker_catches_a_shifted_gold_in_every_dataset(hand_suite: list[Task]) -> None:
    """A Doc whose gold is off by one is reported on every row, for every key, formulation and prompt."""
    covered = set()
    for key, tasks in by_key(hand_suite).items():
        for task in tasks:
            rows = task.rows()
            if rows:
                assert len(mismatches(_shift_gold(task), rows)) == len(rows), task.name
                covered.add(key)
    assert covered == set(by_key(hand_suite))


def _rebuilt(module_name: str) -> list[Task]:
    """The tasks of one benchmark module, built again (under whatever is patched now)."""
    module = importlib.import_module(f"finetasks_afr.benchmarks.{module_name}")
    return [as_task(config) for config in module.tasks()]


def _patch_everywhere(monkeypatch: pytest.MonkeyPatch, name: str, make: Callable[[Any], Any]) -> None:
    """Replace `name` in finetasks_afr.benchmarks.common and every benchmark module that imported it."""
    common = importlib.import_module("finetasks_afr.benchmarks.common")
    original = getattr(common, name)
    wrapper = make(original)
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("finetasks_afr.benchmarks") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, wrapper)


def test_the_checker_catches_an_adapter_that_shifts_the_letter(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`letter_index` returning the next letter (AfriMMLU's adapter): every AfriMMLU row is reported."""

    def make(original: Callable[..., int]) -> Callable[..., int]:
        def shifted(letter: Any, n: int) -> int:
            return (original(letter, n) + 1) % n

        return shifted

    _patch_everywhere(monkeypatch, "letter_index", make)
    rows = hand_rows("afrimmlu")
    tasks = _rebuilt("afrimmlu")
    assert tasks
    for task in tasks:
        assert len(mismatches(task, rows)) == len(rows), task.name


def test_the_checker_catches_an_adapter_that_shifts_the_label(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`label_index` returning the next label (AfriXNLI's adapter): every AfriXNLI row is reported."""

    def make(original: Callable[..., int]) -> Callable[..., int]:
        def shifted(label: Any, labels: tuple[str, ...]) -> int:
            return (original(label, labels) + 1) % len(labels)

        return shifted

    _patch_everywhere(monkeypatch, "label_index", make)
    rows = hand_rows("afrixnli")
    tasks = _rebuilt("afrixnli")
    assert tasks
    for task in tasks:
        assert len(mismatches(task, rows)) == len(rows), task.name
