"""InjongoIntent, NollySenti and AfriHate: the families build in every language their data covers, prompts render
through the real task configs on hand-written rows in the published schema (tests/fixtures/hub_rows), the 4-way
InjongoIntent options are deterministic across processes, bad rows are skipped and counted, baselines follow the
labels offered, and AfriHate's macro-F1 is the number a direct computation gives."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
KEYS = ["injongointent", "nollysenti", "afrihate"]
INJONGO_LANGS = ["amh", "eng", "ewe", "hau", "ibo", "kin", "lin", "lug", "orm"]
INJONGO_LANGS += ["sna", "sot", "swa", "twi", "wol", "xho", "yor", "zul"]
AFRIHATE_LANGS = ["amh", "arq", "ary", "hau", "ibo", "kin", "orm", "pcm"]
AFRIHATE_LANGS += ["som", "swa", "tir", "twi", "xho", "yor", "zul"]
NOLLY_LANGS = ["eng", "hau", "ibo", "pcm", "yor"]
ENGLISH_ONLY_WORDS = {"arq", "pcm"}  # no lighteval literals: English prompt words only


def _expected(benchmark: str, languages: list[str], forms: tuple[str, ...]) -> set[str]:
    names = set()
    for iso3 in languages:
        for form in forms:
            if iso3 == "eng" or iso3 in ENGLISH_ONLY_WORDS:
                names.add(f"{benchmark}_{iso3}_{form}" + ("" if iso3 == "eng" else "_enprompt"))
            else:
                names |= {f"{benchmark}_{iso3}_{form}", f"{benchmark}_{iso3}_{form}_enprompt"}
    return names


@pytest.fixture(scope="module")
def hub_configs() -> dict[str, Any]:
    """The three modules' configs as the hub sees them (no mirror)."""
    mp = pytest.MonkeyPatch()
    mp.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    import finetasks_afr.tasks  # noqa: F401  (literals registered, fixes applied)
    from finetasks_afr.benchmarks import afrihate, injongointent, nollysenti

    try:
        return {config.name: config for module in (injongointent, nollysenti, afrihate) for config in module.tasks()}
    finally:
        mp.undo()


def test_every_family_builds_in_every_language_with_its_baseline(hub_configs: dict[str, Any]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO

    names = set(hub_configs)
    injongo40 = _expected("injongointent", INJONGO_LANGS, ("cf",))
    injongo4 = _expected("injongointent4", INJONGO_LANGS, ("cf", "mcf", "hybrid"))
    nolly = _expected("nollysenti", NOLLY_LANGS, ("cf", "mcf", "hybrid"))
    hate = _expected("afrihate", AFRIHATE_LANGS, ("cf", "mcf", "hybrid"))
    assert (len(injongo40), len(injongo4), len(nolly), len(hate)) == (33, 99, 24, 84)
    assert names == injongo40 | injongo4 | nolly | hate
    baselines = {"injongointent": 1 / 40, "injongointent4": 1 / 4, "nollysenti": 1 / 2, "afrihate": 1 / 3}
    for name in names:
        info = TASK_INFO[name]
        assert info.random_baseline == pytest.approx(baselines[info.benchmark]), name
        assert info.category == "NLU"
    assert {TASK_INFO[n].dataset for n in injongo40 | injongo4} == {"injongointent"}
    assert {TASK_INFO[n].language for n in nolly} == set(NOLLY_LANGS)
    assert {hub_configs[n].hf_subset for n in nolly} == {"en", "ha", "ig", "pcm", "yo"}
    # English InjongoIntent has no validation split: its few-shot examples come from train
    assert {hub_configs[n].few_shots_split for n in injongo40 | injongo4 if "_eng_" in n} == {"train"}
    assert {hub_configs[n].few_shots_split for n in injongo40 | injongo4 if "_eng_" not in n} == {"validation"}
    assert {hub_configs[n].few_shots_split for n in hate} == {"train"}
    assert {hub_configs[n].few_shots_split for n in nolly} == {"validation"}
    assert all(hub_configs[n].hf_revision == "043a407643d9ef670eb4009a4070ac07ca5145ff" for n in injongo4)
    assert all(hub_configs[n].hf_revision is None for n in hate)


def test_afrihate_reports_macro_f1_in_every_formulation(hub_configs: dict[str, Any]) -> None:
    from analysis.scores.metrics import metric_info
    from finetasks_afr.benchmarks.afrihate import F1_MACRO

    for name, config in hub_configs.items():
        names = [metric.metric_name for metric in config.metrics]
        assert ("f1_macro" in names) == name.startswith("afrihate_"), name
        assert "acc" in names
    assert F1_MACRO.metric_name == "f1_macro"
    info = metric_info("f1_macro")
    assert info is not None and info.higher_is_better and info.bounded
    assert metric_info("f1_macro_stderr") is None  # stderr columns are not metrics of their own


# ------------------------------------------------------------------ prompts through the real task configs


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Any]]]:
    """5-shot documents of the tasks reading the hand-written rows, as lighteval builds them (fixes applied)."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from tests.hub_rows import write_hub_row_mirror

    mirror = tmp_path_factory.mktemp("mirror")
    assert write_hub_row_mirror(mirror, KEYS) == KEYS
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    import finetasks_afr.tasks  # noqa: F401
    from finetasks_afr.benchmarks import afrihate, injongointent, nollysenti

    try:
        configs = [
            c for m in (injongointent, nollysenti, afrihate) for c in m.tasks() if c.hf_repo.startswith(str(mirror))
        ]
        yield {
            config.name: LightevalTask(dataclasses.replace(config, num_fewshots=5)).get_docs(max_samples=10)
            for config in configs
        }
    finally:
        mp.undo()


def _rows(key: str, config: str, split: str) -> list[dict[str, Any]]:
    from tests.hub_rows import hub_rows

    return list(hub_rows(key)["configs"][config][split])


def _body(query: str) -> str:
    """The row text inside a rendered query (after the question word, before the options/answer word)."""
    return query.split("\n")[1].split(":", 1)[1].strip()


def test_the_mirror_serves_exactly_the_fixture_configs(rendered: dict[str, list[Any]]) -> None:
    languages = {name.split("_")[1] for name in rendered}
    assert languages == {"hau", "eng", "pcm", "swa"}
    assert {name.split("_")[0] for name in rendered} == {"injongointent", "injongointent4", "nollysenti", "afrihate"}
    assert all(len(docs) >= 3 for docs in rendered.values())
    assert all(len(doc.fewshot_samples) == 5 for docs in rendered.values() for doc in docs)


def test_injongointent_gold_is_the_rows_intent_among_all_40_words(rendered: dict[str, list[Any]]) -> None:
    from finetasks_afr.benchmarks.injongointent import INTENTS

    gold_of = {row["text"]: row["intent"] for row in _rows("injongointent", "hau", "test")}
    for name in ("injongointent_hau_cf", "injongointent_hau_cf_enprompt"):
        for doc in rendered[name]:
            assert [c.strip().lower() for c in doc.choices] == [i.replace("_", " ") for i in INTENTS]
            assert doc.instruction.startswith("Classify the intent of the user's message as one of: alarm, balance")
            text = doc.query.split("\n")[1].split(":", 1)[1].strip()
            assert doc.choices[doc.gold_index[0]].strip().lower() == gold_of[text].replace("_", " ")
    assert all(
        "\nQuestion:" in d.query and d.query.endswith("Answer:") for d in rendered["injongointent_hau_cf_enprompt"]
    )
    assert not any("Question:" in d.query or "Answer:" in d.query for d in rendered["injongointent_hau_cf"])


def test_injongointent4_offers_gold_and_three_distractors_in_every_form(rendered: dict[str, list[Any]]) -> None:
    for language, split in (("hau", "test"), ("eng", "test")):
        gold_of = {row["text"]: row["intent"].replace("_", " ") for row in _rows("injongointent", language, split)}
        for form in ("cf", "mcf", "hybrid"):
            name = f"injongointent4_{language}_{form}"
            for doc in rendered[name]:
                text = doc.query.split("\n")[1].split(":", 1)[1].strip()
                # each document shows its own four options (issue 26): CF on an "Intents:" line, else lettered
                lines = doc.query.split("\n")
                if form == "cf":
                    options = next(x for x in lines if x.startswith("Intents: ")).removeprefix("Intents: ").split(", ")
                else:
                    options = [x.strip()[3:].lower() for x in lines if x.strip()[:3] in ("A. ", "B. ", "C. ", "D. ")]
                assert len(options) == 4 and len(set(options)) == 4 and options.count(gold_of[text]) == 1
                assert options[doc.gold_index[0]] == gold_of[text], name
                if form == "mcf":
                    assert [c.strip() for c in doc.choices] == ["A", "B", "C", "D"]
                else:
                    assert [c.strip().lower() for c in doc.choices] == options


def test_english_injongointent_examples_come_from_train(rendered: dict[str, list[Any]]) -> None:
    train = {row["text"] for row in _rows("injongointent", "eng", "train")}
    test = {row["text"] for row in _rows("injongointent", "eng", "test")}
    for name in ("injongointent_eng_cf", "injongointent4_eng_mcf"):
        for doc in rendered[name]:
            assert _body(doc.query) in test
            assert {_body(example.query) for example in doc.fewshot_samples} <= train


def test_nollysenti_and_afrihate_gold_labels_and_words(rendered: dict[str, list[Any]]) -> None:
    cases = [
        ("nollysenti_eng_cf", "nollysenti", "en", "review", ["positive", "negative"]),
        ("nollysenti_hau_mcf_enprompt", "nollysenti", "ha", "review", ["positive", "negative"]),
        ("nollysenti_pcm_hybrid_enprompt", "nollysenti", "pcm", "review", ["positive", "negative"]),
        ("afrihate_hau_cf", "afrihate", "hau", "tweet", ["hate", "abuse", "normal"]),
        ("afrihate_swa_mcf_enprompt", "afrihate", "swa", "tweet", ["hate", "abuse", "normal"]),
    ]
    for name, key, config, field, labels in cases:
        gold_of = {row[field]: row["label"].lower() for row in _rows(key, config, "test")}
        golds = []
        for doc in rendered[name]:
            assert doc.instruction.startswith("Classify the") and doc.instruction.endswith(", ".join(labels) + ".")
            text = _body(doc.query)
            golds.append(gold_of[text])
            assert labels[doc.gold_index[0]] == gold_of[text], name
            shown = [c.strip().lower() for c in doc.choices]
            assert shown == (["a", "b", "c"][: len(labels)] if "_mcf" in name else labels), name
            if name.endswith("_enprompt") or "_eng_" in name:
                assert "\nQuestion:" in doc.query and doc.query.endswith("Answer:")
            else:
                assert "Question:" not in doc.query
        assert len(set(golds)) > 1, name  # the hand-written rows exercise more than one label


# ------------------------------------------------------------------------------ the seeded 4-way options

_CHOICES_SCRIPT = """
import json, sys
from finetasks_afr.benchmarks.injongointent import adapter4
rows = json.loads(sys.stdin.read())
print(json.dumps([adapter4(row) for row in rows]))
"""


def _probe_rows() -> list[dict[str, str]]:
    from finetasks_afr.benchmarks.injongointent import INTENTS

    rows = [{"text": f"utterance number {i} about {intent}", "intent": intent} for i, intent in enumerate(INTENTS * 3)]
    return rows + _rows("injongointent", "hau", "test") + _rows("injongointent", "eng", "train")


@pytest.mark.slow
def test_4way_options_are_identical_across_processes_and_hash_seeds() -> None:
    from finetasks_afr.benchmarks.injongointent import adapter4

    rows = _probe_rows()
    here = [adapter4(row) for row in rows]
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(PROJECT)}
        done = subprocess.run([sys.executable, "-c", _CHOICES_SCRIPT], input=json.dumps(rows), env=env,
                              capture_output=True, text=True, check=True, cwd=PROJECT, timeout=300)  # fmt: skip
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1] == json.loads(json.dumps(here))


def test_4way_options_hold_the_gold_once_among_four_distinct_intents() -> None:
    from finetasks_afr.benchmarks.injongointent import INTENTS, adapter4, words

    positions: Counter[int] = Counter()
    distractors: Counter[str] = Counter()
    for row in _probe_rows():
        out = adapter4(row)
        assert len(out["choices"]) == 4 and len(set(out["choices"])) == 4
        assert set(out["choices"]) <= {words(intent) for intent in INTENTS}
        assert out["choices"].count(words(row["intent"])) == 1
        assert out["choices"][out["gold_idx"]] == words(row["intent"])
        positions[out["gold_idx"]] += 1
        distractors.update(c for c in out["choices"] if c != words(row["intent"]))
    assert set(positions) == {0, 1, 2, 3} and min(positions.values()) > len(_probe_rows()) / 10
    assert len(distractors) > 30  # drawn from the whole intent set, not a fixed few
    # the options depend on the text: the same intent gets different distractors for different utterances
    a = adapter4({"text": "please wake me up at five", "intent": "alarm"})
    b = adapter4({"text": "set an alarm for the morning", "intent": "alarm"})
    assert sorted(a["choices"]) != sorted(b["choices"])


# ----------------------------------------------------------------------------------------------- bad rows


def test_bad_rows_are_skipped_and_counted(hub_configs: dict[str, Any]) -> None:
    from finetasks_afr.benchmarks.common import SKIPPED_ROWS

    bad: dict[str, list[dict[str, Any]]] = {
        "injongointent_hau_cf": [{"text": "a", "intent": "fly"}, {"intent": "alarm"}, {"text": "", "intent": "alarm"}],
        "injongointent4_hau_mcf": [{"text": "a", "intent": "fly_to_moon"}, {"text": "a", "intent": 40}],
        "nollysenti_eng_cf": [{"review": "ok", "label": "neutral"}, {"review": "ok", "label": 2}, {"label": "good"}],
        "afrihate_hau_mcf": [{"tweet": "a", "label": "insult"}, {"tweet": "a", "label": 1}, {"tweet": "a"}],
    }  # fmt: skip
    for name, rows in bad.items():
        before = SKIPPED_ROWS[name]
        for row in rows:
            assert hub_configs[name].prompt_function(row, name) is None, (name, row)
        assert SKIPPED_ROWS[name] == before + len(rows), name
    good = hub_configs["afrihate_hau_mcf"].prompt_function({"tweet": "a", "label": "ABUSE"}, "afrihate_hau_mcf")
    assert good is not None and good.gold_index == [1]
    nolly = hub_configs["nollysenti_eng_cf"].prompt_function({"review": "ok", "label": 1}, "nollysenti_eng_cf")
    assert nolly is not None and nolly.gold_index == [1]  # an integer indexes lm-eval's (positive, negative)


# ---------------------------------------------------------------------------------------------- macro-F1

GOLD = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
PRED = [0, 0, 1, 2, 1, 1, 0, 2, 2, 1, 2, 0]


def _hand_macro_f1(gold: list[int], pred: list[int]) -> float:
    """Macro-F1 written out: per class 2TP / (2TP + FP + FN), averaged over the classes seen in gold or pred."""
    scores = []
    for label in sorted(set(gold) | set(pred)):
        tp = sum(g == p == label for g, p in zip(gold, pred, strict=True))
        fp = sum(p == label != g for g, p in zip(gold, pred, strict=True))
        fn = sum(g == label != p for g, p in zip(gold, pred, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return sum(scores) / len(scores)


def _items(metric: Any) -> list[Any]:
    """The metric's per-document inputs for hand-made responses whose highest log-probability is PRED."""
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    items = []
    for gold, pred in zip(GOLD, PRED, strict=True):
        doc = Doc(query="q", choices=[" hate", " abuse", " normal"], gold_index=gold, task_name="afrihate_x")
        logprobs = [-3.0, -3.0, -3.0]
        logprobs[pred] = -0.5
        items.append(
            metric.compute_sample(doc=doc, model_response=ModelResponse(logprobs=logprobs))[metric.metric_name]
        )
    return items


def test_f1_macro_equals_a_direct_macro_f1_and_has_a_bootstrap_stderr() -> None:
    from lighteval.metrics.metrics import Metrics
    from lighteval.metrics.utils.stderr import get_stderr_function, mean_stderr

    from finetasks_afr.benchmarks.afrihate import F1_MACRO

    expected = _hand_macro_f1(GOLD, PRED)
    # class 0: TP 2, FP 2, FN 2 -> 1/2; class 1: TP 2, FP 2, FN 1 -> 4/7; class 2: TP 3, FP 1, FN 2 -> 2/3
    assert expected == pytest.approx((1 / 2 + 4 / 7 + 2 / 3) / 3)
    [(name, aggregate)] = F1_MACRO.get_corpus_aggregations().items()
    assert name == "f1_macro"
    items = _items(F1_MACRO)
    assert aggregate(items) == pytest.approx(expected, abs=1e-12)
    from sklearn.metrics import f1_score  # a lighteval dependency: always installed

    assert f1_score(GOLD, PRED, average="macro") == pytest.approx(expected, abs=1e-12)
    # lighteval's ready-made loglikelihood_f1 is the best class's F1, not macro-F1: why it is not used
    stock: Any = Metrics.__members__["loglikelihood_f1"].value
    stock_items = _items(stock)
    assert stock.get_corpus_aggregations()["loglikelihood_f1"](stock_items) == pytest.approx(2 / 3)
    # the aggregation is not a mean, so lighteval bootstraps `f1_macro_stderr`
    stderr = get_stderr_function(aggregation=aggregate, number_experiments=200)
    assert stderr is not None and stderr is not mean_stderr
    value = stderr(items)
    assert 0.0 < value < 0.5
