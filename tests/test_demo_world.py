"""The demo world: deterministic files, datasets that load offline, prompts built from real rows, answers that
follow the corpus' regularities, random labels that cannot be learnt, and a short training that writes
standard checkpoints."""

from __future__ import annotations

import csv
import importlib
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from finetasks_afr.demo import world as demo_world
from finetasks_afr.demo.world import FAMILIES, LANGUAGES, MIXES, N_CHOICES, World, build_world, corpus_for_mix

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
for _key, _value in OFFLINE.items():
    os.environ.setdefault(_key, _value)

SIZES = {"facts": 64, "agreement": 64, "randlabel": 64, "tiny": 6}  # test items per language (default build)
TRAIN_SIZES = {"facts": 8, "agreement": 8, "randlabel": 8, "tiny": 8}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_world(tmp_path_factory.mktemp("world") / "w")


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def rows(world: World, family: str, language: str, split: str = "test") -> list[dict]:
    path = world.dataset_dir(family) / world.data_files[family][language][split]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ------------------------------------------------------------------------------------------- files


def test_build_is_deterministic_and_seeded(tmp_path: Path) -> None:
    a = files_of(build_world(tmp_path / "a", seed=3, docs_per_language=300).root)
    b = files_of(build_world(tmp_path / "b", seed=3, docs_per_language=300).root)
    c = files_of(build_world(tmp_path / "c", seed=4, docs_per_language=300).root)
    assert a == b
    assert not any(name.endswith(".tmp") for name in a)
    assert {"world.json", "truth.csv", "corpus/qaa.txt", "datasets/facts/README.md"} <= set(a)
    assert a["datasets/facts/README.md"] != c["datasets/facts/README.md"]  # other seed, other items


def test_rebuild_in_place_leaves_no_stale_files(tmp_path: Path) -> None:
    build_world(tmp_path / "w", seed=0, docs_per_language=200)
    build_world(tmp_path / "w", seed=1, docs_per_language=200)
    fresh = build_world(tmp_path / "fresh", seed=1, docs_per_language=200)
    assert files_of(tmp_path / "w") == files_of(fresh.root)


def test_manifest_round_trip_and_truth(world: World) -> None:
    loaded = World.load(world.root)
    assert loaded == world
    assert loaded.mixes == MIXES and loaded.languages == LANGUAGES
    assert len(loaded.tasks) == len(FAMILIES) * len(LANGUAGES) * 2
    with (world.root / "truth.csv").open(newline="") as handle:
        truth = {row["task"]: row["kind"] for row in csv.DictReader(handle)}
    assert truth == {task.name: task.kind for task in world.tasks}
    assert Counter(truth.values()) == {"learnable": 12, "random_label": 6, "too_small": 6}
    names = {task.name for task in world.tasks}
    assert {"demofacts_qaa_cf", "demoagreement_qab_mcf", "demorandlabel_qab_mcf", "demotiny_qac_cf"} <= names
    with pytest.raises(FileNotFoundError, match=r"world\.json"):
        World.load(world.root / "nowhere")


def test_mixes_order_the_languages_differently() -> None:
    a, b = MIXES["mix-a"], MIXES["mix-b"]
    assert abs(sum(a.values()) - 1) < 1e-9 and abs(sum(b.values()) - 1) < 1e-9
    assert a["qaa"] > a["qac"] and b["qac"] > b["qaa"]


# ---------------------------------------------------------------------------------------- datasets


def test_datasets_load_offline_with_fresh_cache_after_rebuild(tmp_path: Path) -> None:
    import datasets

    root = tmp_path / "w"
    cache = tmp_path / "cache"
    for seed in (0, 1):  # the same folder rebuilt: the cache must not serve the first build's rows
        built = build_world(root, seed=seed, docs_per_language=200)
        for family in FAMILIES:
            for language in LANGUAGES:
                loaded = datasets.load_dataset(str(built.dataset_dir(family.name)), name=language, cache_dir=str(cache))
                assert loaded["test"].num_rows == SIZES[family.name]
                assert loaded["train"].num_rows == TRAIN_SIZES[family.name]
                assert loaded["test"][0] == rows(built, family.name, language)[0]


def test_gold_letters_are_balanced(world: World) -> None:
    for family in ("facts", "agreement", "randlabel"):
        for language in LANGUAGES:
            golds = Counter(row["gold"] for row in rows(world, family, language))
            assert set(golds.values()) == {SIZES[family] // N_CHOICES}, (family, language, golds)


def test_facts_are_stated_in_the_corpus(world: World) -> None:
    for language in LANGUAGES:
        corpus = world.corpus_path(language).read_text(encoding="utf-8")
        for family in ("facts", "tiny"):
            for row in rows(world, family, language):
                gold = row["choices"][row["gold"]]
                assert f"Answer: {gold}" in corpus, (language, gold)  # the quiz form of the fact
                assert f"{gold} " in corpus  # and the plain sentence
                for i, wrong in enumerate(row["choices"]):
                    if i != row["gold"]:
                        assert wrong not in corpus, (language, wrong)


def test_agreement_items_are_held_out_but_follow_the_rule(world: World) -> None:
    for language in LANGUAGES:
        lines = world.corpus_path(language).read_text(encoding="utf-8").splitlines()
        together: dict[str, set[str]] = {}  # word -> the words it shares a line with
        for line in lines:
            line_words = {word.strip(".?") for word in line.split()}
            for word in line_words:
                together.setdefault(word, set()).update(line_words)
        for row in rows(world, "agreement", language):
            noun = row["question"].split()[0]
            verbs = [choice.split()[-1] for choice in row["choices"]]
            gold = verbs[row["gold"]]
            assert len(set(verbs)) == N_CHOICES and all(v[2:] == gold[2:] for v in verbs)  # one stem, 4 prefixes
            assert gold in together  # the agreeing form exists in the language...
            assert gold not in together[noun]  # ...but never with this noun: the rule, not a memorised pair


def test_random_labels_are_independent_of_the_content(world: World) -> None:
    for language in LANGUAGES:
        facts = {row["question"]: row["choices"][row["gold"]] for row in rows(world, "facts", language)}
        items = rows(world, "randlabel", language)
        agree = sum(row["gold"] == row["truth"] for row in items)
        assert agree <= len(items) / N_CHOICES - len(items) / 32  # at most a hair below chance
        assert agree >= 4  # but a real draw, not an anti-correlated labelling
        for row in items:  # the truth is the corpus' fact: the label is what is random
            assert row["choices"][row["truth"]] == facts[row["question"]]


def test_corpus_for_mix_follows_the_shares(world: World) -> None:
    docs = corpus_for_mix(world, "mix-a", 2000, seed=0)
    assert docs == corpus_for_mix(world, "mix-a", 2000, seed=0)
    assert docs != corpus_for_mix(world, "mix-a", 2000, seed=1)
    consonants = {lang: set(demo_world._PHONOLOGY[lang][0]) for lang in LANGUAGES}
    counts = Counter(
        next(lang for lang in LANGUAGES if set(re.sub(r"Question|Answer", "", doc).lower()) & consonants[lang])
        for doc in docs
    )
    assert counts == {lang: round(share * 2000) for lang, share in MIXES["mix-a"].items()}


# ---------------------------------------------------------------------------------------- lighteval
# (marked slow: the first of these imports lighteval, 10-20 s on 2 cores)


@pytest.fixture(scope="module")
def tasks_module(world: World):
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DEMO_WORLD", str(world.root))
    import finetasks_afr.demo.tasks as module

    module = importlib.reload(module)
    yield module
    mp.undo()
    importlib.reload(module)


@pytest.mark.slow
def test_task_info_covers_the_table(tasks_module, world: World) -> None:
    from analysis.table import CATEGORIES, FORMULATIONS

    names = [config.name for config in tasks_module.TASKS_TABLE]
    assert sorted(names) == sorted(task.name for task in world.tasks)
    assert set(tasks_module.TASK_INFO) == set(names)
    for task in world.tasks:
        info = tasks_module.TASK_INFO[task.name]
        assert (info.benchmark, info.language, info.formulation) == (task.benchmark, task.language, task.formulation)
        assert info.category in CATEGORIES and info.formulation in FORMULATIONS
        assert info.random_baseline == pytest.approx(1 / N_CHOICES)


@pytest.mark.slow
def test_metrics_and_splits(tasks_module) -> None:
    for config in tasks_module.TASKS_TABLE:
        metrics = [metric.metric_name for metric in config.metrics]
        if config.name.endswith("_cf"):
            assert metrics == ["acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"]
        else:
            assert metrics == ["acc"]
        assert tuple(config.evaluation_splits) == ("test",) and config.few_shots_split == "train"
        assert Path(config.hf_repo).is_dir() and config.hf_subset in LANGUAGES


@pytest.mark.slow
def test_prompt_functions_build_docs_from_real_rows(tasks_module, world: World) -> None:
    by_name = {task.name: task for task in world.tasks}
    for config in tasks_module.TASKS_TABLE:
        task = by_name[config.name]
        for row in rows(world, task.dataset, task.subset)[:5]:
            doc = config.prompt_function(row, config.name)
            assert doc.gold_index == [row["gold"]]
            assert doc.query.startswith("Question: ") and doc.query.endswith("\nAnswer:")
            assert doc.query[len("Question: ")] == row["question"][0].upper()
            if task.formulation == "CF":
                assert doc.choices == [f" {c[0].upper()}{c[1:]}" for c in row["choices"]]
            else:
                assert doc.choices == [" A", " B", " C", " D"]
                for letter, choice in zip("ABCD", row["choices"], strict=True):
                    assert f" {letter}. {choice[0].upper()}{choice[1:]}\n" in doc.query


@pytest.mark.slow
def test_module_imports_without_a_world(tasks_module, tmp_path: Path) -> None:
    mp = pytest.MonkeyPatch()
    mp.delenv("FINETASKS_AFR_DEMO_WORLD", raising=False)
    try:
        module = importlib.reload(tasks_module)
        assert module.TASKS_TABLE == [] and module.TASK_INFO == {}
        with pytest.raises(FileNotFoundError, match="FINETASKS_AFR_DEMO_WORLD"):
            module.build_tasks()
        with pytest.raises(FileNotFoundError, match=r"world\.json"):
            module.build_tasks(tmp_path / "missing")
    finally:
        mp.undo()
        importlib.reload(tasks_module)  # the world's table again, for the tests that share the module


# ----------------------------------------------------------------------------------------- training


@pytest.mark.slow
def test_short_training_writes_standard_checkpoints(tmp_path: Path) -> None:
    from finetasks_afr.demo.train import train_run, train_tokenizer

    small = build_world(tmp_path / "w", docs_per_language=300)
    tokenizer_dir = train_tokenizer(small)
    assert (tokenizer_dir / "tokenizer.json").is_file()
    settings = {"steps": 6, "save_every": 3, "first_save": 1, "seq_len": 32, "batch_size": 4}
    out = train_run(small, "mix-a", 0, tmp_path / "run", **settings)
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-3", "checkpoint-6"]
    for step in (1, 3, 6):
        checkpoint = out / f"checkpoint-{step}"
        for name in ("config.json", "model.safetensors", "tokenizer.json", "trainer_state.json"):
            assert (checkpoint / name).is_file(), name
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        assert state["global_step"] == step
        assert state["num_input_tokens_seen"] == step * 4 * 32
    again = train_run(small, "mix-a", 0, tmp_path / "again", **settings)
    other = train_run(small, "mix-a", 1, tmp_path / "other", **settings)
    weights = (out / "checkpoint-6" / "model.safetensors").read_bytes()
    assert (again / "checkpoint-6" / "model.safetensors").read_bytes() == weights  # deterministic given the seed
    assert (other / "checkpoint-6" / "model.safetensors").read_bytes() != weights
    assert not (out / "runs").exists()  # no logging directories
