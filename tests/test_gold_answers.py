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
* Winogrande CF (partial scoring, finetasks_afr/partial_scoring.py): the gold context is the sentence up to
  the blank with the gold option filled in.

Texts are compared after a normalisation written here (NFC, no zero-width characters/BOM/variation selectors,
escaped "\\n" as a space, collapsed whitespace) and forgiving only what lighteval's templates do to every
choice (first letter capitalised, final punctuation swapped for the prompt language's): case and trailing
punctuation are ignored. `test_the_checker_catches_*` prove the check can fail.

Rows: the hand-made hub rows of tests/test_tasks.py (with their known answers) plus more hand-made rows in the
published schemas here; and, when ../shared/data is present, every test row of every config the raw mirror
holds (built once per module with `finetasks_afr.mirror.import_raw`, read as JSONL, not through `datasets`).
"""

from __future__ import annotations

import ast
import importlib
import json
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
import yaml  # noqa: E402
from test_tasks import HUB_ONLY_ROWS  # noqa: E402

Row = dict[str, Any]
Decoder = Callable[[Row, str], tuple[str, ...]]  # (row, iso3 of the task) -> the correct answer text(s)

# ------------------------------------------------------------------------------------------ normalisation

_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_ESCAPED_BREAK = re.compile(r"\\[nrt]")  # backslash + n (r, t) written out in the data


def normalise(text: object) -> str:
    """NFC, no zero-width characters / BOM / variation selectors, escaped line breaks as spaces, single spaces."""
    value = unicodedata.normalize("NFC", str(text))
    value = _ESCAPED_BREAK.sub(" ", _INVISIBLE.sub("", value))
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
}

# ------------------------------------------------------------------------------------ hand-made rows

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
}  # fmt: skip

# The answers the hand-made hub rows of tests/test_tasks.py must give (hub-datasets.md: AfriMMLU "C" -> the
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
    """A fresh copy of the hand-made hub row of tests/test_tasks.py."""
    return dict(cast(Row, HUB_ONLY_ROWS[dataset]))


# Rows whose columns name one language serve only that language's tasks (and English's).
HAND_ROW_LANGUAGES: dict[str, set[str]] = {"winogrande_afr": {"zul", "eng"}}


def hand_rows(dataset: str, iso3: str | None = None) -> list[Row]:
    """The hand-made rows of `dataset` (for a task in language `iso3`)."""
    if iso3 is not None and iso3 not in HAND_ROW_LANGUAGES.get(dataset, {iso3}):
        return []
    rows = [hub_row(dataset)] if dataset in HUB_ONLY_ROWS else []
    return rows + [dict(row) for row, _ in EXTRA_ROWS.get(dataset, [])]


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

    @property
    def name(self) -> str:
        return str(self.config.name)


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

    from finetasks_afr.literals import prompt_language

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
    expected = DECODERS[task.dataset](row, task.iso3)
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
        if got != want or loose(doc.query) != want:
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
        info = TASK_INFO[config.name]
        if info.formulation != "PPL":
            tasks.append(Task(config, info.dataset, info.language, info.prompt, info.formulation))
    return tasks


def by_dataset(tasks: list[Task]) -> dict[str, list[Task]]:
    grouped: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        grouped[task.dataset].append(task)
    return grouped


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.mirror import import_raw

    out = tmp_path_factory.mktemp("gold_mirror")
    import_raw(shared_data, out)
    return out


def mirror_files(root: Path) -> dict[str, dict[str, dict[str, Path]]]:
    """dataset key -> config -> split -> JSONL file, from each mirrored dataset's README front matter."""
    found: dict[str, dict[str, dict[str, Path]]] = {}
    for readme in sorted(root.glob("*/README.md")):
        front = readme.read_text(encoding="utf-8").split("---\n")[1]
        found[readme.parent.name] = {
            config["config_name"]: {item["split"]: readme.parent / item["path"] for item in config["data_files"]}
            for config in yaml.safe_load(front)["configs"]
        }
    return found


def read_jsonl(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# -------------------------------------------------------------------------------------------------- tests


def test_every_dataset_of_the_suite_has_a_decoder(suite: list[Task]) -> None:
    assert {task.dataset for task in suite} <= set(DECODERS), "a new dataset needs its decoder here"
    assert {task.formulation for task in suite} <= {"CF", "MCF", "HYBRID", "GEN"}


def test_decoders_give_the_known_answers_of_the_hand_made_rows() -> None:
    for dataset, answer in HUB_ROW_ANSWERS.items():
        assert DECODERS[dataset](hub_row(dataset), "yor") == answer, dataset
    for dataset, rows in EXTRA_ROWS.items():
        for row, answer in rows:
            assert tuple(map(normalise, DECODERS[dataset](dict(row), "zul"))) == answer, (dataset, row)


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


def test_gold_answers_on_hand_made_rows(suite: list[Task]) -> None:
    """Every task of every hub-only dataset (and the others with a hand-made row) on rows in the published
    schema: no row skipped, every gold the decoded answer."""
    checked: Counter[str] = Counter()
    problems: list[str] = []
    for dataset, tasks in by_dataset(suite).items():
        for task in tasks:
            outcome = check_task(task, hand_rows(dataset, task.iso3))
            assert outcome.skipped == 0, task.name
            problems += outcome.problems
            checked[dataset] += outcome.checked
    assert not problems, "\n".join(problems[:20])
    assert set(checked) == set(DECODERS)


@pytest.mark.shared_data
def test_gold_answers_on_every_real_test_row(suite: list[Task], mirror: Path) -> None:
    """Every task whose config the raw mirror holds, on every row of its evaluation split."""
    files = mirror_files(mirror)
    cache: dict[Path, list[Row]] = {}
    checked: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    problems: list[str] = []
    for task in suite:
        path = files.get(task.dataset, {}).get(task.config.hf_subset, {}).get(task.config.evaluation_splits[0])
        if path is None:
            continue  # hub only (e.g. Belebele beyond Bridging the Gap's 12 dialects)
        if path not in cache:
            cache[path] = read_jsonl(path)
        outcome = check_task(task, cache[path])
        problems += outcome.problems
        checked[task.dataset] += outcome.checked
        skipped[task.dataset] += outcome.skipped
        # a few rows may be turned down (AfriQA rows without a passage, Winogrande with nothing after the blank)
        assert outcome.skipped <= (outcome.checked + outcome.skipped) // 4, (task.name, outcome.skipped)
    assert not problems, f"{len(problems)} wrong golds:\n" + "\n".join(problems[:20])
    wanted = {"masakhanews", "afrisenti", "sib200", "winogrande_afr", "mmlu_clinical_afr", "belebele", "afriqa"}
    assert wanted <= set(checked), sorted(checked)
    assert sum(checked.values()) > 100_000, (checked, skipped)


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


def test_the_checker_catches_a_shifted_gold_in_every_dataset(suite: list[Task]) -> None:
    """A Doc whose gold is off by one is reported on every row, for every dataset, formulation and prompt."""
    covered = set()
    for dataset, tasks in by_dataset(suite).items():
        for task in tasks:
            rows = hand_rows(dataset, task.iso3)
            if rows:
                assert len(mismatches(_shift_gold(task), rows)) == len(rows), task.name
                covered.add(dataset)
    assert covered == set(by_dataset(suite))


def _rebuilt(module_name: str) -> list[Task]:
    """The tasks of one benchmark module, built again (under whatever is patched now)."""
    from finetasks_afr.tasks import TASK_INFO

    module = importlib.import_module(f"finetasks_afr.benchmarks.{module_name}")
    tasks = []
    for config in module.tasks():
        info = TASK_INFO[config.name]
        tasks.append(Task(config, info.dataset, info.language, info.prompt, info.formulation))
    return tasks


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
