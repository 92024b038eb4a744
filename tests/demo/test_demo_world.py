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
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TypedDict

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

SIZES = {"facts": 256, "agreement": 256, "randlabel": 256, "tiny": 8, "common": 256, "text": 160}  # test items
TRAIN_SIZES = {"facts": 8, "agreement": 8, "randlabel": 8, "tiny": 8, "common": 8}  # few-shot (none for PPL)
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_manifest_round_trip_and_truth(world: World) -> None:
    loaded = World.load(world.root)
    assert loaded == world
    assert loaded.mixes == MIXES and loaded.languages == LANGUAGES
    # facts and randlabel in CF and MCF, agreement, tiny and common in CF, one PPL family
    assert len(loaded.tasks) == (2 * 2 + 3 + 1) * len(LANGUAGES)
    with (world.root / "truth.csv").open(newline="") as handle:
        truth = {row["task"]: row["kind"] for row in csv.DictReader(handle)}
    assert truth == {task.name: task.kind for task in world.tasks}
    assert Counter(truth.values()) == {"learnable": 6, "mcf_at_chance": 3, "random_label": 6, "too_small": 3,
                                       "noise_ordered": 3, "learnable_ppl": 3}  # fmt: skip
    names = {task.name for task in world.tasks}
    assert {"demofacts_qaa_cf", "demofacts_qab_mcf", "demoagreement_qab_cf", "demorandlabel_qab_mcf"} <= names
    assert {"demotiny_qac_cf", "democommon_qaa_cf"} <= names and "demoagreement_qab_mcf" not in names
    ppl = [task for task in loaded.tasks if task.formulation == PPL]
    assert [task.name for task in ppl] == ["demotext_qaa", "demotext_qab", "demotext_qac"]
    assert all(task.random_baseline is None and task.category == "GEN" for task in ppl)
    assert json.loads((world.root / "world.json").read_text())["tasks"][-1]["random_baseline"] is None  # strict JSON
    with pytest.raises(FileNotFoundError, match=r"world\.json"):
        World.load(world.root / "nowhere")


def test_mixes_are_a_latin_square_with_a_common_share(world: World) -> None:
    """Three or more mixes; every language strictly dominant in exactly one, and the mixes strictly ordered on
    every language (distinct shares); the common corpora take the same share of every mix."""
    assert len(MIXES) >= 3
    for shares in MIXES.values():
        assert set(shares) == set(LANGUAGES) and sum(shares.values()) == pytest.approx(1)
        assert len(set(shares.values())) == len(shares)
    for language in LANGUAGES:
        column = sorted((shares[language] for shares in MIXES.values()), reverse=True)
        assert len(set(column)) == len(column)  # no tie anywhere: a designed order of the mixes per language
    dominant = [max(shares, key=shares.__getitem__) for shares in MIXES.values()]
    assert sorted(dominant) == sorted(LANGUAGES)
    for mix in MIXES:
        effective = demo_world.mix_shares(world, mix)
        assert sum(effective.values()) == pytest.approx(1)
        for language in LANGUAGES:
            scale = 1 - world.common_share * len(LANGUAGES)
            assert effective[language] == pytest.approx(MIXES[mix][language] * scale + world.common_share)


# ---------------------------------------------------------------------------------------- datasets


@pytest.mark.slow
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
    """Every letter equally often, in every family (tiny too: 8 items), so always answering one letter in MCF scores
    chance exactly (with 6 tiny items, always-A scored 2/6 and looked learnt, at an infinite 3-sigma)."""
    for family in ("facts", "agreement", "randlabel", "common", "tiny"):
        for language in LANGUAGES:
            golds = Counter(row["gold"] for row in rows(world, family, language))
            assert set(golds.values()) == {SIZES[family] // N_CHOICES}, (family, language, golds)


@pytest.mark.slow
def test_facts_are_stated_in_the_corpus(world: World) -> None:
    """Each fact in its own corpus: facts and tiny in the main corpus, common in the common corpus only."""
    for language in LANGUAGES:
        main = world.corpus_path(language).read_text(encoding="utf-8")
        common = world.common_corpus_path(language).read_text(encoding="utf-8")
        for family, corpus, other in (("facts", main, common), ("tiny", main, common), ("common", common, main)):
            for row in rows(world, family, language):
                assert row["question"].split()[-1].rstrip("?") not in other  # the person is never in the other
                gold = row["choices"][row["gold"]]
                # the fact is stated, as a quiz answer or in a sentence (the rarest people: once or twice)
                assert f"Answer: {gold}\n" in corpus or f"{gold} " in corpus, (family, language, gold)
                for i, wrong in enumerate(row["choices"]):
                    if i != row["gold"]:
                        assert wrong not in corpus, (language, wrong)


def test_fact_items_are_graded_by_how_often_the_corpus_mentions_them(world: World) -> None:
    """Graded difficulty, so no learnable task reaches its ceiling: the facts test asks about people down the whole
    frequency ranking (mentions fall with rank, the first test person > 5x the last), and so does the common
    test in the common corpus."""
    from scipy.stats import spearmanr

    for language in LANGUAGES:
        for family, path, ratio in (
            ("facts", world.corpus_path(language), 5),
            ("common", world.common_corpus_path(language), 5),
        ):
            mentions = Counter(re.findall(r"\b[A-Z][a-z]{7}\b", path.read_text(encoding="utf-8")))
            persons = list(
                dict.fromkeys(row["question"].split()[-1].rstrip("?") for row in rows(world, family, language))
            )
            counts = [mentions[person] for person in persons]
            assert len(persons) == SIZES[family] // 2 and min(counts) > 0
            assert spearmanr(range(len(counts)), counts).statistic < -0.9, (family, language, counts)
            assert counts[0] > ratio * counts[-1], (family, language, counts)


def test_agreement_items_are_held_out_but_follow_the_rule(world: World) -> None:
    for language in LANGUAGES:
        lines = world.corpus_path(language).read_text(encoding="utf-8").splitlines()
        together: dict[str, set[str]] = {}  # word -> the words it shares a line with
        for line in lines:
            line_words = {word.strip(".?") for word in line.split()}
            for word in line_words:
                together.setdefault(word, set()).update(line_words)
        for row in rows(world, "agreement", language):
            assert row["question"].endswith("?") and len(row["question"].split()) == 1  # the bare noun
            noun = row["question"].rstrip("?")
            verbs = [choice.split()[-1] for choice in row["choices"]]
            gold = verbs[row["gold"]]
            assert len(set(verbs)) == N_CHOICES and all(v[2:] == gold[2:] for v in verbs)  # one stem, 4 prefixes
            assert gold in together  # the agreeing form exists in the language...
            assert gold not in together[noun]  # ...but never with this noun: the rule, not a memorised pair
            prefix = gold[:2]  # the noun's class shows only in the forms it occurs with: learnable, noun by noun
            assert any(word[:2] == prefix and word != noun for word in together[noun])


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
    cast = demo_world.people(world.items_per_task)
    facts = demo_world.make_facts(lexicon, world.seed, cast)
    _, _, pairs = demo_world.held_out_pairs(lexicon, world.seed, world.items_per_task)
    seen = set(world.corpus_path(language).read_text(encoding="utf-8").split("\n"))
    seen |= set(world.common_corpus_path(language).read_text(encoding="utf-8").split("\n"))
    first = heldout_sentences(lexicon, facts, pairs, world.seed, seen, population=cast.main)
    assert first == heldout_sentences(lexicon, facts, pairs, world.seed, seen, population=cast.main)
    assert first == [row["text"] for row in rows(world, "text", language)]  # what build_world wrote
    more = heldout_sentences(lexicon, facts, pairs, world.seed, seen | set(first[:10]), n=20, population=cast.main)
    assert not set(more) & set(first[:10])
    assert more[:10] == first[10:20]  # the same stream, the excluded sentences skipped
    unfiltered = heldout_sentences(lexicon, facts, pairs, world.seed, set(), n=200, population=cast.main)
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
    scale = 1 - world.common_share * len(LANGUAGES)  # main corpus in the mix's share of what the common ones leave
    expected = {lang: round(share * scale * 2000) + round(world.common_share * 2000) for lang, share in
                MIXES["mix-a"].items()}  # fmt: skip
    assert counts == expected


# ---------------------------------------------------------------------------------------- lighteval
# (marked slow: the first of these imports lighteval, 10-20 s on 2 cores)


@pytest.fixture(scope="module")
def tasks_module(world: World) -> Iterator[ModuleType]:
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DEMO_WORLD", str(world.root))
    import finetasks_afr.demo.tasks as module

    module = importlib.reload(module)
    yield module
    mp.undo()
    importlib.reload(module)


@pytest.mark.slow
def test_task_info_covers_the_table(tasks_module: ModuleType, world: World) -> None:
    from analysis.scores.schema import CATEGORIES, FORMULATIONS
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
def test_metrics_and_splits(tasks_module: ModuleType) -> None:
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
def test_perplexity_docs_loaded_by_lighteval(tasks_module: ModuleType, world: World) -> None:
    """lighteval's own loading (the local dataset folder, offline) gives one Doc per held-out sentence: the
    sentence is the query, nothing else is scored or counted."""
    from lighteval.tasks.lighteval_task import LightevalTask

    configs = {config.name: config for config in tasks_module.TASKS_TABLE}
    for language in LANGUAGES:
        docs = LightevalTask(configs[f"demotext_{language}"]).eval_docs()
        assert [doc.query for doc in docs] == [row["text"] for row in rows(world, "text", language)]
        assert all(doc.choices is None and doc.gold_index is None and doc.original_query is None for doc in docs)


@pytest.mark.slow
def test_prompt_functions_build_docs_from_real_rows(tasks_module: ModuleType, world: World) -> None:
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
def test_module_imports_without_a_world(tasks_module: ModuleType, tmp_path: Path) -> None:
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


class TrainSettings(TypedDict):
    """The keyword arguments of `train_run` the training test sets (a short run)."""

    steps: int
    save_every: int
    first_save: int
    seq_len: int
    batch_size: int


@pytest.mark.slow
def test_short_training_writes_standard_checkpoints(tmp_path: Path) -> None:
    from finetasks_afr.demo.train import train_run, train_tokenizer

    small = build_world(tmp_path / "w", docs_per_language=300)
    tokenizer_dir = train_tokenizer(small)
    assert (tokenizer_dir / "tokenizer.json").is_file()
    settings = TrainSettings(steps=6, save_every=3, first_save=1, seq_len=32, batch_size=4)
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
