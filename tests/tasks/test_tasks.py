"""The task suite: every config builds, every prompt function runs on real rows (or hand-made rows in the
published schema for hub-only datasets), prompts are clean and reproducible, bad rows are skipped."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import datasets
import pytest

if TYPE_CHECKING:
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import Doc

    from analysis.scores.task_info import TaskInfo

PROJECT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots" / "prompts.json"
NAME = re.compile(r"^[a-z0-9_]+_[a-z]{3}(_(cf|mcf|hybrid))?(_enprompt)?$")
MIRRORED = (
    "winogrande_afr",
    "mmlu_clinical_afr",
    "mmlu_en",
    "belebele",
    "sib200",
    "masakhanews",
    "afrisenti",
    "afriqa",
    "nollysenti",
    "mafand",
    "ntrex",
)
ROWS_PER_TASK = 12
Suite: TypeAlias = "tuple[list[LightevalTaskConfig], dict[str, TaskInfo]]"  # the task table and its metadata


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("mirror")
    import_raw(shared_data, out)
    return out


@pytest.fixture(scope="module")
def suite(mirror: Path) -> Iterator[Suite]:
    """The task table built with the mirror configured (hf_location resolves at build time)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.prompts.literals import register_literals

    register_literals()
    configs = all_tasks()
    yield configs, TASK_INFO
    mp.undo()


@pytest.mark.slow
def test_names_are_unique_well_formed_and_described(suite: Suite) -> None:
    configs, info = suite
    names = [config.name for config in configs]
    assert len(names) == len(set(names))
    for name in names:
        assert NAME.match(name), name
        meta = info[name]
        assert meta.category in ("GK", "RC", "RES", "NLU", "GEN")
        assert meta.formulation in ("CF", "MCF", "HYBRID", "GEN", "PPL")
        if meta.formulation == "PPL":  # perplexity: no random baseline (tests/benchmarks/test_perplexity_tasks.py)
            assert math.isnan(meta.random_baseline)
        else:
            assert 0.0 <= meta.random_baseline < 1.0
        assert (meta.prompt == "en") == name.endswith("_enprompt")


def test_every_language_of_each_dataset_is_covered(suite: Suite) -> None:
    from finetasks_afr.prompts.languages import covered_by

    configs, info = suite
    languages = defaultdict(set)
    for config in configs:
        languages[info[config.name].dataset].add(info[config.name].language)
    for dataset in ("belebele", "sib200", "afrixnli", "afrimmlu", "masakhanews", "afrisenti", "naijarc"):
        assert languages[dataset] == {language.iso3 for language in covered_by(dataset)}, dataset


def test_tasks_read_the_mirror_where_it_has_the_config_else_the_hub(suite: Suite, mirror: Path) -> None:
    from finetasks_afr.data.sources import SOURCES

    configs, info = suite
    available = {key: set(datasets.get_dataset_config_names(str(mirror / key))) for key in MIRRORED}
    for config in configs:
        key = info[config.name].dataset
        if key in MIRRORED and config.hf_subset in available[key]:
            assert (config.hf_repo, config.hf_revision) == (str(mirror / key), None), config.name
        else:
            assert (config.hf_repo, config.hf_revision) == (SOURCES[key].hub_repo, SOURCES[key].revision)


def _rows(repo: str, subset: str, split: str) -> list[dict]:
    dataset = datasets.load_dataset(repo, name=subset, split=split)
    return [dataset[i] for i in range(min(ROWS_PER_TASK, len(dataset)))]


def _check_doc(doc: Doc | None, name: str) -> None:
    assert doc is not None, name
    assert "  " not in doc.query, (name, doc.query)
    assert doc.query == doc.query.strip() or doc.query.endswith(" "), name
    assert "\n\n" not in doc.query.strip(), (name, doc.query)
    gold = doc.gold_index if isinstance(doc.gold_index, list) else [doc.gold_index]
    assert all(0 <= g < len(doc.choices) for g in gold), name
    assert all(choice == choice.strip(" ") or choice.startswith(" ") for choice in doc.choices), name


@pytest.mark.slow
def test_prompts_on_real_rows_every_language_both_prompts(suite: Suite, mirror: Path) -> None:
    """Every mirrored task (all languages in ../shared/data, both prompt languages) on its real rows."""
    from finetasks_afr.benchmarks.common import SKIPPED_ROWS

    configs, info = suite
    checked: defaultdict[str, int] = defaultdict(int)
    cache: dict[tuple[str, str, str], list[dict]] = {}
    available = {key: set(datasets.get_dataset_config_names(str(mirror / key))) for key in MIRRORED}
    for config in configs:
        meta = info[config.name]
        if meta.formulation == "PPL":
            continue  # no choices; their prompts are checked on real rows in tests/benchmarks/test_perplexity_tasks.py
        if meta.dataset not in MIRRORED or config.hf_subset not in available[meta.dataset]:
            continue  # e.g. Belebele languages beyond the 12 of Bridging the Gap: hub only
        key = (config.hf_repo, config.hf_subset, config.evaluation_splits[0])
        if key not in cache:
            cache[key] = _rows(*key)
        rows = cache[key]
        assert rows, config.name
        before = SKIPPED_ROWS[config.name]
        docs = [config.prompt_function(row, config.name) for row in rows]
        for doc in docs:
            if doc is not None:
                _check_doc(doc, config.name)
        skipped = sum(doc is None for doc in docs)
        assert SKIPPED_ROWS[config.name] - before == skipped  # every skip is counted (and logged)
        assert skipped <= len(rows) // 4, config.name  # e.g. Amharic Winogrande: blank first in 8% of rows
        checked[meta.dataset] += 1
    assert set(checked) == set(MIRRORED)
    assert sum(checked.values()) > 600


# Hand-made rows in the exact published schema of the hub-only datasets (fields, types and label encodings
# from ../shared/notes/hub-datasets.md, which cites lm-evaluation-harness and lighteval).
HUB_ONLY_ROWS: dict[str, dict[str, Any]] = {
    # AfriMMLU (hub-datasets.md 1; H afrimmlu/utils.py: choices is a Python-list string, answer a letter)
    "afrimmlu": {"subject": "elementary_mathematics", "question": "Kínni iyì p nínú 24 = 2p?",
                 "choices": "['p = 4', 'p = 8', 'p = 12', 'p = 24']", "answer": "C"},
    # AfriXNLI (hub-datasets.md 2; label int 0 entailment, 1 neutral, 2 contradiction)
    "afrixnli": {"premise": "Ọmọ náà ń sùn  lórí ibùsùn.", "hypothesis": "Ọmọ kan wà lórí ibùsùn.", "label": 0},
    # AfriMGSM (hub-datasets.md 3; answer_number numeric, answer None on test rows)
    "afrimgsm": {"question": "Ade ní ọsàn mẹ́ta, ó ra méjì sí i. Ọsàn mélòó ni ó ní?", "answer_number": 5,
                 "answer": None, "equation_solution": None},
    # NaijaRC (hub-datasets.md 4; options_A..D, Answer a letter possibly padded)
    "naijarc": {"story": "Adé lọ sí ọjà ní àárọ̀. Ó ra iṣu méjì.", "question": "Kí ni Adé rà?",
                "options_A": "Iṣu", "options_B": "Ẹja", "options_C": "Ata", "options_D": "Ìrẹsì", "Answer": " A "},
    # Uhura ARC-Easy (hub-datasets.md 5; ARC schema: choices {text, label}, answerKey a letter)
    # Belebele (hub-datasets.md 6; correct_answer_num a one-indexed string): the languages not in ../shared/data
    "belebele": {"link": "https://en.wikibooks.org/wiki/Accordion/Right_hand", "question_number": 1,
                 "flores_passage": "Rii daju pe ọwọ rẹ wa ni isinmi.", "question": "Kí ni ó yẹ kí ọwọ́ ṣe?",
                 "mc_answer1": "Sinmi", "mc_answer2": "Gbé", "mc_answer3": "Ṣeré", "mc_answer4": "Sùn",
                 "correct_answer_num": "1", "dialect": "yor_Latn", "ds": "2023-05-03"},
    "uhura_arc_easy": {"id": "Mercury_7220990", "question": "Kí ni ohun ọ̀gbìn nílò láti dàgbà?",
                       "choices": {"text": ["Ìmọ́lẹ̀ oòrùn", "Iyanrìn", "Òkúta", "Irin"],
                                   "label": ["A", "B", "C", "D"]}, "answerKey": "A"},
}  # fmt: skip


def test_hub_only_prompts_on_rows_in_the_published_schema(suite: Suite, mirror: Path) -> None:
    configs, info = suite
    checked: defaultdict[str, int] = defaultdict(int)
    in_mirror = set(datasets.get_dataset_config_names(str(mirror / "belebele")))
    for config in configs:
        meta = info[config.name]
        row = HUB_ONLY_ROWS.get(meta.dataset)
        if row is None or meta.formulation == "PPL" or (meta.dataset == "belebele" and config.hf_subset in in_mirror):
            continue
        doc = config.prompt_function(dict(row), config.name)
        _check_doc(doc, config.name)
        checked[meta.dataset] += 1
    assert set(checked) == set(HUB_ONLY_ROWS)


def test_bad_rows_are_skipped_and_counted(suite: Suite) -> None:
    from finetasks_afr.benchmarks.common import SKIPPED_ROWS

    configs, _ = suite
    config = next(c for c in configs if c.name == "afrixnli_hau_cf")
    before = SKIPPED_ROWS[config.name]
    assert config.prompt_function({"premise": "a", "hypothesis": "b", "label": 7}, config.name) is None
    assert config.prompt_function({"premise": "a", "label": 0}, config.name) is None
    assert SKIPPED_ROWS[config.name] == before + 2


SNAPSHOT_CASES = [
    # (task, dataset row source): CF, MCF, hybrid and generative, in two languages and both prompt words
    ("mmlu_afr_virology_zul_cf", "mirror"),
    ("mmlu_afr_virology_zul_mcf_enprompt", "mirror"),
    ("belebele_zul_hybrid", "mirror"),
    ("sib200_yor_mcf", "mirror"),
    ("masakhanews_amh_mcf", "mirror"),  # 4 of the 7 topics: the ones Amharic's data has
    ("afrisenti_hau_cf_enprompt", "mirror"),
    ("mmlu_afr_virology_eng_mcf", "mirror"),  # English from cais/mmlu's schema
    ("winogrande_afr_eng_cf", "mirror"),  # English columns of winogrande_am
    ("winogrande_afr_zul_cf", "mirror"),
    ("afriqa_hau", "mirror"),
    ("afrixnli_yor_cf", "afrixnli"),
    ("afrixnli_yor_mcf_enprompt", "afrixnli"),
    ("afrimgsm_yor", "afrimgsm"),
]


def _render(suite: Suite, name: str, source: str) -> dict:
    configs, _ = suite
    config = next(c for c in configs if c.name == name)
    row = (
        _rows(config.hf_repo, config.hf_subset, config.evaluation_splits[0])[0]
        if source == "mirror"
        else dict(HUB_ONLY_ROWS[source])
    )
    doc = config.prompt_function(row, name)
    return {"query": doc.query, "choices": list(doc.choices), "gold_index": doc.gold_index}


def test_prompt_snapshots(suite: Suite) -> None:
    """Rendered prompts are byte-for-byte stable.

    The snapshot file is (re)written only when asked, with FINETASKS_AFR_UPDATE_SNAPSHOTS=1; a missing one is a
    failure, never a silent first write that passes (a test that makes its own expected value checks nothing).
    """
    import os

    rendered = {name: _render(suite, name, source) for name, source in SNAPSHOT_CASES}
    if os.environ.get("FINETASKS_AFR_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.parent.mkdir(exist_ok=True)
        SNAPSHOTS.write_text(json.dumps(rendered, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if not SNAPSHOTS.exists():
        pytest.fail(f"{SNAPSHOTS} is missing; write it with FINETASKS_AFR_UPDATE_SNAPSHOTS=1 and review the diff")
    assert rendered == json.loads(SNAPSHOTS.read_text(encoding="utf-8"))


def _five_shot_prompts(suite: Suite, name: str) -> list[str]:
    import dataclasses

    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    configs, _ = suite
    config = dataclasses.replace(next(c for c in configs if c.name == name), num_fewshots=5)
    docs = LightevalTask(config).get_docs(max_samples=4)
    manager = PromptManager()
    return [manager.prepare_prompt(doc) for doc in docs]


def test_few_shot_prompts_repeat_byte_for_byte(suite: Suite) -> None:
    """lighteval's sampler is seeded (variance seed 0, document shuffle 42): two builds give the same prompts."""
    first = _five_shot_prompts(suite, "mmlu_afr_virology_zul_mcf")
    second = _five_shot_prompts(suite, "mmlu_afr_virology_zul_mcf")
    assert first == second
    assert all(prompt.count("Umbuzo:") == 6 for prompt in first)  # 5 examples + the question, in isiZulu words
    assert all("  " not in prompt for prompt in first)


# ------------------------------------------------------------------------------ classification prompts


@pytest.mark.shared_data
def test_masakhanews_offers_each_language_the_topics_its_data_has(shared_data: Path) -> None:
    """The per-language topic sets written in the module equal the topics of the raw release's splits."""
    import csv

    from finetasks_afr.benchmarks import masakhanews

    for folder in sorted((shared_data / "masakhanews").iterdir()):
        if folder.name not in masakhanews.LABELS:
            continue  # fra: excluded
        found: set[str] = set()
        for path in folder.glob("*.tsv"):
            with path.open(encoding="utf-8", newline="") as handle:
                found |= {row["category"].strip() for row in csv.DictReader(handle, delimiter="\t")}
        assert set(masakhanews.LABELS[folder.name]) == found, folder.name
    assert set(masakhanews.LABELS) == {p.name for p in (shared_data / "masakhanews").iterdir()} - {"fra"}


def test_classification_prompts_name_the_task_and_labels_and_baselines_follow_them(suite: Suite) -> None:
    from finetasks_afr.benchmarks import afrisenti, masakhanews, sib200

    configs, info = suite
    by_name = {config.name: config for config in configs}
    rows: dict[str, dict[str, Any]] = {
        "sib200_hau_mcf": {"index_id": 1, "category": "travel", "text": "Tafiya"},
        "masakhanews_amh_cf_enprompt": {"category": "sports", "headline": "H", "text": "T", "url": ""},
        "masakhanews_hau_hybrid": {"category": "religion", "headline": "H", "text": "T", "url": ""},
        "afrisenti_hau_mcf": {"tweet": "kai", "label": "neutral"},
    }
    for name, row in rows.items():
        doc = by_name[name].prompt_function(row, name)
        assert doc.instruction and doc.query.startswith(doc.instruction), name
        assert doc.instruction.startswith("Classify the")
    amh = by_name["masakhanews_amh_cf_enprompt"].prompt_function(rows["masakhanews_amh_cf_enprompt"], "x")
    assert [choice.strip().lower() for choice in amh.choices] == ["business", "health", "politics", "sports"]
    assert amh.instruction is not None and "business, health, politics, sports." in amh.instruction
    assert info["masakhanews_amh_cf"].random_baseline == pytest.approx(1 / 4)
    assert info["masakhanews_ibo_mcf"].random_baseline == pytest.approx(1 / 6)
    assert info["masakhanews_hau_mcf"].random_baseline == pytest.approx(1 / 7)
    assert info["sib200_hau_mcf"].random_baseline == pytest.approx(1 / len(sib200.TOPICS))
    assert info["afrisenti_hau_mcf"].random_baseline == pytest.approx(1 / len(afrisenti.SENTIMENTS))
    for iso3, labels in masakhanews.LABELS.items():
        name = f"masakhanews_{iso3}_mcf" + ("" if iso3 == "eng" else "_enprompt")  # every language has _enprompt
        assert info[name].random_baseline == pytest.approx(1 / len(labels)), iso3
    # a row whose topic the language does not offer is skipped (counted), never mapped to a wrong index
    assert by_name["masakhanews_amh_mcf"].prompt_function(rows["masakhanews_hau_hybrid"], "x") is None


def test_afrimgsm_train_rows_lose_their_own_question_prefix(suite: Suite) -> None:
    configs, _ = suite
    config = next(c for c in configs if c.name == "afrimgsm_yor_enprompt")
    row = {"question": "Question: Ade ní ọsàn mẹ́ta. Ọsàn mélòó?", "answer_number": 3, "answer": "Step-by-step"}
    doc = config.prompt_function(row, config.name)
    assert doc.query.count("Question:") == 1 and "Question: Question:" not in doc.query
    assert doc.query.startswith("Question: Ade")


def test_clean_removes_invisible_characters_escaped_breaks_and_normalises() -> None:
    from finetasks_afr.benchmarks.common import clean

    assert clean("\ufeffSannu\u200b da\u00a0zuwa") == "Sannu da zuwa"
    assert clean("❤\ufe0f love\\nit\\r\\tnow") == "❤ love it now"
    assert clean("e\u0301 \u2060x") == "\u00e9 x"  # NFC: e + combining acute -> é
    assert clean("  a \n\n b  ") == "a b"
    with pytest.raises(ValueError):
        clean(None)


def test_winogrande_reads_the_hub_columns_as_well_as_the_mirror_columns(suite: Suite) -> None:
    """The hub's winogrande_<xx> rows have qID, Sentence, Option1, Option2, Answer (the release script drops the
    English columns and renames the language's); the mirror keeps the raw columns. Both give the same document."""
    configs, _ = suite
    hub = {"qID": "q", "Sentence": "UNatalie wayeqikelela kodwa u_ wavumela.", "Option1": "Natalie ",
           "Option2": "Emily ", "Answer": 1}  # fmt: skip
    mirror = {"qID": "q", "English Sentence": "Natalie was careful but _ let it fall.", "English Option 1": "Natalie",
              "English Option 2": "Emily", "Zulu Sentence": hub["Sentence"], "Zulu Option 1": hub["Option1"],
              "Zulu Option 2": hub["Option2"], "Answer": 1, "Split": "test"}  # fmt: skip
    for name in ("winogrande_afr_zul_cf", "winogrande_afr_zul_mcf", "winogrande_afr_zul_mcf_enprompt"):
        config = next(c for c in configs if c.name == name)
        from_hub, from_mirror = config.prompt_function(dict(hub), name), config.prompt_function(dict(mirror), name)
        assert from_hub is not None and from_mirror is not None, name
        assert (from_hub.query, from_hub.choices, from_hub.gold_index) == (
            from_mirror.query, from_mirror.choices, from_mirror.gold_index,
        ), name  # fmt: skip
    cf = next(c for c in configs if c.name == "winogrande_afr_zul_cf")
    assert cf.prompt_function(dict(hub), cf.name).query.endswith("kodwa uNatalie")
