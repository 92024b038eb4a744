"""The demo world: deterministic files, datasets that load offline, prompts built from real rows, answers that
follow the corpus' regularities, random labels that cannot be learnt, held-out text for perplexity that the
training corpus does not contain, and a short training that writes standard checkpoints."""

from __future__ import annotations

import csv
import importlib
import json
import math
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from finetasks_afr.demo import world as demo_world
from finetasks_afr.demo.world import (
    FAMILIES,
    LANGUAGES,
    MIXES,
    N_CHOICES,
    PPL,
    World,
    build_world,
    corpus_for_mix,
    heldout_sentences,
)

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
for _key, _value in OFFLINE.items():
    os.environ.setdefault(_key, _value)

SIZES = {"facts": 64, "agreement": 64, "randlabel": 64, "tiny": 6, "text": 48}  # test items per language
TRAIN_SIZES = {"facts": 8, "agreement": 8, "randlabel": 8, "tiny": 8}  # few-shot split (none for perplexity)
PPL_METRICS = ["word_perplexity", "byte_perplexity", "bits_per_byte"]


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
    assert len(loaded.tasks) == 4 * len(LANGUAGES) * 2 + len(LANGUAGES)  # 4 MC families x CF/MCF, one PPL family
    with (world.root / "truth.csv").open(newline="") as handle:
        truth = {row["task"]: row["kind"] for row in csv.DictReader(handle)}
    assert truth == {task.name: task.kind for task in world.tasks}
    assert Counter(truth.values()) == {"learnable": 12, "random_label": 6, "too_small": 6, "learnable_ppl": 3}
    names = {task.name for task in world.tasks}
    assert {"demofacts_qaa_cf", "demoagreement_qab_mcf", "demorandlabel_qab_mcf", "demotiny_qac_cf"} <= names
    ppl = [task for task in loaded.tasks if task.formulation == PPL]
    assert [task.name for task in ppl] == ["demotext_qaa", "demotext_qab", "demotext_qac"]
    assert all(task.random_baseline is None and task.category == "GEN" for task in ppl)
    assert json.loads((world.root / "world.json").read_text())["tasks"][-1]["random_baseline"] is None  # strict JSON
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
                assert set(loaded) == set(family.splits)
                assert loaded["test"].num_rows == SIZES[family.name]
                if "train" in family.splits:
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


def test_heldout_text_is_new_sentences_of_the_language(world: World) -> None:
    """The perplexity set: distinct sentences that are no line of the training corpus (nor part of one), made of
    the language's own words (all of them in its corpus), with no English quiz scaffolding."""
    for language in LANGUAGES:
        texts = [row["text"] for row in rows(world, "text", language)]
        assert len(texts) == len(set(texts)) == SIZES["text"]
        corpus = world.corpus_path(language).read_text(encoding="utf-8")
        lines = set(corpus.split("\n"))
        vocabulary = {word.strip(".?") for word in corpus.split()}
        for text in texts:
            assert text not in lines and f"{text}\n" not in corpus, (language, text)
            assert "Question" not in text and "Answer" not in text and "\n" not in text
            assert text.endswith(".") and text == " ".join(text.split())
            assert {word.strip(".") for word in text.split()} <= vocabulary, (language, text)


def test_heldout_sentences_are_deterministic_and_avoid_what_is_seen(world: World) -> None:
    """A pure function of its arguments; whatever is in `seen` never comes out (the corpus filter is real)."""
    language = "qab"
    lexicon = demo_world.make_lexicon(language, world.seed, world.items_per_task)
    facts = demo_world.make_facts(lexicon, world.seed, rare=demo_world.tiny_persons(world.items_per_task))
    _, _, pairs = demo_world.held_out_pairs(lexicon, world.seed, world.items_per_task)
    seen = set(world.corpus_path(language).read_text(encoding="utf-8").split("\n"))
    first = heldout_sentences(lexicon, facts, pairs, world.seed, seen)
    assert first == heldout_sentences(lexicon, facts, pairs, world.seed, seen)
    assert first == [row["text"] for row in rows(world, "text", language)]  # what build_world wrote
    more = heldout_sentences(lexicon, facts, pairs, world.seed, seen | set(first[:10]), n=20)
    assert not set(more) & set(first[:10])
    assert more[:10] == first[10:20]  # the same stream, the excluded sentences skipped
    unfiltered = heldout_sentences(lexicon, facts, pairs, world.seed, set(), n=200)
    assert set(unfiltered) & seen  # without the filter the stream repeats corpus sentences: the filter matters


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
    from finetasks_afr.benchmarks import perplexity

    names = [config.name for config in tasks_module.TASKS_TABLE]
    assert sorted(names) == sorted(task.name for task in world.tasks)
    assert set(tasks_module.TASK_INFO) == set(names)
    for task in world.tasks:
        info = tasks_module.TASK_INFO[task.name]
        assert (info.benchmark, info.language, info.formulation) == (task.benchmark, task.language, task.formulation)
        assert info.category in CATEGORIES and info.formulation in FORMULATIONS
        if task.formulation == PPL:  # as the suite's flores_ppl_<iso3>: GEN, no chance level
            assert (info.formulation, info.category) == (perplexity.FORMULATION, perplexity.CATEGORY)
            assert math.isnan(info.random_baseline)
        else:
            assert info.random_baseline == pytest.approx(1 / N_CHOICES)


@pytest.mark.slow
def test_metrics_and_splits(tasks_module) -> None:
    for config in tasks_module.TASKS_TABLE:
        metrics = [metric.metric_name for metric in config.metrics]
        assert tuple(config.evaluation_splits) == ("test",)
        assert Path(config.hf_repo).is_dir() and config.hf_subset in LANGUAGES
        if config.name.startswith("demotext_"):
            assert metrics == PPL_METRICS and config.few_shots_split is None  # 0-shot only
            assert list(config.hf_avail_splits) == ["test"]
            continue
        if config.name.endswith("_cf"):
            assert metrics == ["acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"]
        else:
            assert metrics == ["acc"]
        assert config.few_shots_split == "train"


@pytest.mark.slow
def test_perplexity_docs_loaded_by_lighteval(tasks_module, world: World) -> None:
    """lighteval's own loading (the local dataset folder, offline) gives one Doc per held-out sentence: the
    sentence is the query, nothing else is scored or counted."""
    from lighteval.tasks.lighteval_task import LightevalTask

    configs = {config.name: config for config in tasks_module.TASKS_TABLE}
    for language in LANGUAGES:
        docs = LightevalTask(configs[f"demotext_{language}"]).eval_docs()
        assert [doc.query for doc in docs] == [row["text"] for row in rows(world, "text", language)]
        assert all(doc.choices is None and doc.gold_index is None and doc.original_query is None for doc in docs)


@pytest.mark.slow
def test_prompt_functions_build_docs_from_real_rows(tasks_module, world: World) -> None:
    by_name = {task.name: task for task in world.tasks}
    for config in tasks_module.TASKS_TABLE:
        task = by_name[config.name]
        if task.formulation == PPL:
            for row in rows(world, task.dataset, task.subset)[:5]:
                doc = config.prompt_function(row, config.name)
                assert doc.query == row["text"] and doc.choices is None and doc.gold_index is None
                assert doc.task_name == config.name
            assert config.prompt_function({"id": "x", "text": "  "}, config.name) is None  # skipped, not scored
            continue
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
