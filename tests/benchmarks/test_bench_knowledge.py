"""Knowledge log-likelihood families added in issue 16: OpenAI MMMLU, Global-MMLU and Uhura-TruthfulQA.

What is checked: each family builds exactly the tasks its data covers (names, counts, metadata); the task configs
read the pinned hub revision, or the mirror when one is configured; the hand-written rows of
tests/fixtures/hub_rows (the published schemas, cited there) go through lighteval's own `LightevalTask` and become
prompts with the question, every option and the right gold index, English words for `_enprompt` and the
language's own words otherwise; rows that cannot become a prompt are skipped and counted.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FORMS = ("cf", "mcf", "hybrid")
KEYS = ("openai_mmmlu", "global_mmlu", "uhura_truthfulqa")


def _names(benchmark: str, native: list[str], english_only: tuple[str, ...] = ()) -> list[str]:
    """Expected task names: every form in both prompt languages for `native`, one prompt for English."""
    names = []
    for iso3 in sorted([*native, *english_only]):
        for form in FORMS:
            names.append(f"{benchmark}_{iso3}_{form}")
            if iso3 not in english_only:
                names.append(f"{benchmark}_{iso3}_{form}_enprompt")
    return names


EXPECTED = {
    "openai_mmmlu": _names("openai_mmmlu", ["swa", "yor"]),
    "global_mmlu": _names("global_mmlu", ["amh", "hau", "ibo", "nya", "plt", "sna", "som", "swa", "yor"], ("eng",)),
    "uhura_truthfulqa": _names("uhura_truthfulqa", ["amh", "hau", "nso", "swa", "yor", "zul"], ("eng",)),
}
BASELINES = {"openai_mmmlu": 0.25, "global_mmlu": 0.25, "uhura_truthfulqa": 0.2}
REVISIONS = {
    "openai_mmmlu": ("openai/MMMLU", "038c7808122969ead7456361af05cb8f47d247f8"),
    "global_mmlu": ("CohereLabs/Global-MMLU", "c17ce281eb44393304c86bd291c9a7d8203a212f"),
    "uhura_truthfulqa": ("masakhane/uhura-truthfulqa", "1867a89351420f53688283fdb2100b93c5166c7c"),
}
FEWSHOT_SPLITS = {"openai_mmmlu": "test", "global_mmlu": "dev", "uhura_truthfulqa": "train"}


def _module(key: str) -> Any:
    import importlib

    return importlib.import_module(f"finetasks_afr.benchmarks.{key}")


@pytest.fixture(scope="module")
def hub_configs(monkeypatch_module: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The three families built with no mirror configured: what a machine with hub access reads."""
    monkeypatch_module.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    import finetasks_afr.tasks  # noqa: F401  (literals registered, fixes applied)

    return {key: _module(key).tasks() for key in KEYS}


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The three families built over a mirror of the hand-written rows (hub_rows.write_hub_row_mirror)."""
    import finetasks_afr.tasks  # noqa: F401
    from tests.hub_rows import write_hub_row_mirror

    mirror = tmp_path_factory.mktemp("knowledge_mirror")
    write_hub_row_mirror(mirror, list(KEYS))
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        configs = [config for key in KEYS for config in _module(key).tasks()]
        yield {"mirror": mirror, "configs": {config.name: config for config in configs}}
    finally:
        mp.undo()


def _rows(key: str) -> dict[str, dict[str, list[dict]]]:
    return json.loads((FIXTURES / "hub_rows" / f"{key}.json").read_text(encoding="utf-8"))["configs"]


def test_each_family_builds_exactly_the_languages_its_data_covers(hub_configs: dict[str, list[Any]]) -> None:
    assert {key: [config.name for config in configs] for key, configs in hub_configs.items()} == EXPECTED
    assert [len(EXPECTED[key]) for key in KEYS] == [12, 57, 39]


def test_task_metadata(hub_configs: dict[str, list[Any]]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO

    for key, configs in hub_configs.items():
        for config in configs:
            info = TASK_INFO[config.name]
            form = config.name.removesuffix("_enprompt").rsplit("_", 1)[1]
            iso3 = config.name.removesuffix("_enprompt").rsplit("_", 2)[1]
            assert (info.benchmark, info.dataset, info.category) == (key, key, "GK"), config.name
            assert (info.language, info.formulation) == (iso3, form.upper()), config.name
            assert info.random_baseline == BASELINES[key], config.name
            assert info.prompt == ("en" if config.name.endswith("_enprompt") else "native"), config.name
            assert info.subset == config.hf_subset == _module(key).SOURCES[0].codes[iso3], config.name


def test_configs_read_the_pinned_revision_and_their_few_shot_split(hub_configs: dict[str, list[Any]]) -> None:
    for key, configs in hub_configs.items():
        source = _module(key).SOURCES[0]
        assert (source.hub_repo, source.revision) == REVISIONS[key]
        for config in configs:
            assert (config.hf_repo, config.hf_revision) == REVISIONS[key], config.name
            assert list(config.evaluation_splits) == ["test"], config.name
            assert config.few_shots_split == FEWSHOT_SPLITS[key], config.name
            assert set(config.hf_avail_splits) == set(source.splits), config.name
    assert {c.hf_subset for c in hub_configs["openai_mmmlu"]} == {"SW_KE", "YO_NG"}
    assert {c.hf_subset for c in hub_configs["global_mmlu"]} == {
        "am",
        "en",
        "ha",
        "ig",
        "mg",
        "ny",
        "sn",
        "so",
        "sw",
        "yo",
    }
    assert "zu" not in {c.hf_subset for c in hub_configs["global_mmlu"]}  # lighteval's list has it; the data not


def _docs(config: Any) -> list[Any]:
    """The documents lighteval itself builds from the mirror (its loader, filters and our few-shot sampler)."""
    from lighteval.tasks.lighteval_task import LightevalTask

    task = LightevalTask(dataclasses.replace(config, num_fewshots=5))
    return task.get_docs()


def _correct_option(key: str, row: dict) -> str:
    """The option text the published row marks correct, read independently of the suite's adapters."""
    if key == "openai_mmmlu":
        return row[row["Answer"]]
    if key == "global_mmlu":
        return row["option_" + row["answer"].lower()]
    targets = row["mc1_targets"]
    return targets["choices"][targets["labels"].index(1)]


def _options(key: str, row: dict) -> list[str]:
    if key == "openai_mmmlu":
        return [row[letter] for letter in "ABCD"]
    if key == "global_mmlu":
        return [row[f"option_{letter}"] for letter in "abcd"]
    return list(row["mc1_targets"]["choices"])


def _question(key: str, row: dict) -> str:
    return row["Question"] if key == "openai_mmmlu" else row["question"]


def _key(name: str) -> str:
    return next(key for key in KEYS if name.startswith(key + "_"))


def _form(name: str) -> str:
    return name.removesuffix("_enprompt").rsplit("_", 1)[1]


def _option_line(letter: str, option: str) -> re.Pattern[str]:
    """An option line of an MCF/hybrid query: letter, the language's full stop ("." or Amharic "።"), the text."""
    return re.compile(rf"\n {letter}\S {re.escape(option)}\n")


def test_hand_written_rows_become_prompts_with_the_right_gold(mirrored: dict[str, Any]) -> None:
    """Every mirrored config, every form and prompt language, through lighteval's loader: the question and all
    options are in the prompt (option texts as CF/hybrid choices, lettered lines in the MCF/hybrid query), the gold
    index points at the option the row marks correct, and each document gets five examples, never itself."""
    checked: dict[str, int] = {}
    for name, config in mirrored["configs"].items():
        if not config.hf_repo.startswith(str(mirrored["mirror"])):
            continue  # a language without hand-written rows: read from the hub
        key, form = _key(name), _form(name)
        rows = _rows(key)[config.hf_subset]["test"]
        docs = _docs(config)
        assert len(docs) == len(rows), name
        for doc in docs:
            [row] = [row for row in rows if _question(key, row) in doc.query]
            correct, options = _correct_option(key, row), _options(key, row)
            gold = doc.gold_index if isinstance(doc.gold_index, int) else doc.gold_index[0]
            if form == "mcf":
                letters = "ABCDEFGHIJ"[: len(options)]
                assert [choice.strip() for choice in doc.choices] == list(letters), name
                assert _option_line(letters[gold], correct).search(doc.query), (name, doc.query)
            else:
                assert sorted(choice.strip() for choice in doc.choices) == sorted(options), name
                assert doc.choices[gold].strip() == correct, name
            if form != "cf":  # the options are listed in the query, each on its own lettered line
                assert all(_option_line("[A-J]", option).search(doc.query) for option in options), (name, doc.query)
            assert len(doc.fewshot_samples) == 5, name
            assert all(example.query != doc.query for example in doc.fewshot_samples), name
        checked[key] = checked.get(key, 0) + 1
    # SW_KE + YO_NG x 6; Global-MMLU en (3) + sw, yo, am (6 each); Uhura en (3) + sw (6)
    assert checked == {"openai_mmmlu": 12, "global_mmlu": 21, "uhura_truthfulqa": 9}


def test_prompt_words_english_for_enprompt_native_otherwise(mirrored: dict[str, Any]) -> None:
    """Swahili rows: lighteval's Swahili words (Swali/Jibu) in the native prompt, English ones with `_enprompt`;
    Yoruba and Amharic use the suite's registered words; English has one prompt, in English."""
    configs = mirrored["configs"]
    for key in KEYS:
        for form in FORMS:
            native = _docs(configs[f"{key}_swa_{form}"])[0].query
            english = _docs(configs[f"{key}_swa_{form}_enprompt"])[0].query
            assert english.startswith("Question: ") and english.endswith("\nAnswer:"), (key, form, english)
            assert native.startswith("Swali: ") and native.endswith("\nJibu:"), (key, form, native)
    for name in ("openai_mmmlu_yor_mcf", "global_mmlu_amh_hybrid", "global_mmlu_yor_cf"):
        query = _docs(configs[name])[0].query
        assert "Question" not in query and "Answer" not in query, (name, query)
    assert _docs(configs["global_mmlu_eng_mcf"])[0].query.startswith("Question: ")
    assert "global_mmlu_eng_mcf_enprompt" not in configs


def test_uhura_options_are_reordered_by_question_not_left_correct_first(mirrored: dict[str, Any]) -> None:
    """TruthfulQA lists the correct MC1 answer first; the suite's fixed per-question order moves it, so that a
    model cannot score by always answering A, and the order is the same on every call."""
    from finetasks_afr.benchmarks import uhura_truthfulqa

    rows = [row for split in _rows("uhura_truthfulqa")["sw_multiple_choice"].values() for row in split]
    adapted = [uhura_truthfulqa.adapter(row) for row in rows]
    assert adapted == [uhura_truthfulqa.adapter(row) for row in rows]
    assert len({item["gold_idx"] for item in adapted}) > 1
    for row, item in zip(rows, adapted, strict=True):
        assert item["choices"][item["gold_idx"]] == _correct_option("uhura_truthfulqa", row)
        assert sorted(item["choices"]) == sorted(row["mc1_targets"]["choices"])
    docs = _docs(mirrored["configs"]["uhura_truthfulqa_swa_mcf"])
    answers = {example.get_golds()[0] for doc in docs for example in doc.fewshot_samples}
    assert len(answers) > 1  # few-shot examples do not all answer the same letter


BAD_ROWS: dict[str, list[dict[str, Any]]] = {
    "openai_mmmlu": [
        {"Question": "q", "A": "a", "B": "b", "C": "c", "D": "d", "Answer": "E", "Subject": "anatomy"},
        {"Question": "q", "A": "a", "B": "b", "C": "c", "Answer": "A", "Subject": "anatomy"},
        {"Question": "q", "A": "a", "B": " ", "C": "c", "D": "d", "Answer": "A", "Subject": "anatomy"},
    ],
    "global_mmlu": [
        {"question": "q", "option_a": "a", "option_b": None, "option_c": "c", "option_d": "d", "answer": "A"},
        {"question": "q", "option_a": "a", "option_b": "b", "option_c": "c", "option_d": "d", "answer": "Z"},
        {"option_a": "a", "option_b": "b", "option_c": "c", "option_d": "d", "answer": "A"},
    ],
    "uhura_truthfulqa": [
        {"question": "q", "mc1_targets": {"choices": ["a", "b"], "labels": [1, 1]}},
        {"question": "q", "mc1_targets": {"choices": ["a", "b", "c"], "labels": [1, 0]}},
        {"question": "q", "mc1_targets": {"choices": ["a", "b"], "labels": [0, 0]}},
        {"question": "q", "mc2_targets": {"choices": ["a", "b"], "labels": [1, 0]}},
    ],
}


@pytest.mark.parametrize("key", KEYS)
def test_bad_rows_are_skipped_and_counted(hub_configs: dict[str, list[Any]], key: str) -> None:
    from finetasks_afr.benchmarks.common import SKIPPED_ROWS

    for config in hub_configs[key]:
        before = SKIPPED_ROWS[config.name]
        for row in BAD_ROWS[key]:
            assert config.prompt_function(dict(row), config.name) is None, (config.name, row)
        assert SKIPPED_ROWS[config.name] == before + len(BAD_ROWS[key]), config.name


def test_sources_declare_only_the_configs_the_tasks_read(hub_configs: dict[str, list[Any]]) -> None:
    """`config_names` limits what `data mirror` downloads: Global-MMLU has 42 configs, MMMLU a `default` of all."""
    for key, configs in hub_configs.items():
        source = _module(key).SOURCES[0]
        assert set(source.config_names) == {config.hf_subset for config in configs} == set(source.codes.values())
