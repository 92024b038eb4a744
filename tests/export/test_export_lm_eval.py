"""`finetasks-afr export lm-eval` on real rows (a mirror imported from ../shared/data): every exported document is
what this project's lighteval task shows a model (context with its few-shot examples, choices, gold), the YAML is
what lm-eval 0.4 reads (fields named, documents loaded by the folder's own utils.py), groups per language, and the
kept tasks it cannot express are listed with the reason. The real lm-eval run of the folder is not made here."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

KEPT = [
    ("sib200_yor_cf", 0, "acc_norm_token"),
    ("belebele_zul_mcf", 5, "acc"),
    ("mmlu_afr_virology_zul_hybrid", 5, "acc_norm_pmi"),
    ("flores_ppl_yor", 0, "bits_per_byte"),
    ("winogrande_afr_zul_cf", 0, "acc"),  # partial scoring: one request per (document, choice)
    ("afriqa_hau", 0, "f1_eng"),  # generative, F1 and prefix match
    ("mafand_mt_en2xx_gen_yor", 1, "chrf++"),  # generative, corpus chrF++
    ("mafand_mt_en2xx_ll_yor", 1, "bits_per_byte"),  # the reference's bits per byte given its prompt
    ("winogrande_afr_ibo_cf", 0, "acc_norm_pmi"),  # partial scoring with PMI: left out
    ("sib_hau_prompt_1", 0, "acc"),  # an AfroBench task of lm-eval's own
]


class _Loader(yaml.SafeLoader):
    """lm-eval's YAML: `!function module.name` tags."""


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


@pytest.fixture(scope="module")
def exported(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """The export of KEPT from a mirror of the real releases; --data-dir names the mirror (as a user passes it), and
    the module's tests read it too; the variable is put back after them (--data-dir sets it for the process)."""
    from finetasks_afr.cli import app
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.data.sources import DATA_DIR_ENV

    before = os.environ.get(DATA_DIR_ENV)

    root = tmp_path_factory.mktemp("export")
    mirror = root / "mirror"
    wanted = ["sib200", "belebele", "mmlu_clinical_afr", "winogrande_afr", "afriqa", "mafand"]
    import_raw(shared_data, mirror, datasets=wanted)
    selection = root / "selection"
    selection.mkdir()
    lines = ["task,fewshot,metric,kept"] + [f"{t},{k},{m},true" for t, k, m in KEPT] + ["sib200_hau_cf,0,acc,false"]
    (selection / "decisions.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "lm-eval-tasks"
    args = ["--data-dir", str(mirror), "export", "lm-eval", str(selection), "--out", str(out)]
    try:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        yield out, result
    finally:
        if before is None:
            os.environ.pop(DATA_DIR_ENV, None)
        else:
            os.environ[DATA_DIR_ENV] = before


def _rendered(name: str, fewshot: int) -> list[tuple[str, list[str], int]]:
    """(context, choices, gold) of every document, as the lighteval task builds and renders them."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.tasks import TASK_INFO  # noqa: F401 (first: the suite's fixes and prompt words)

    config = next(c for c in all_tasks() if c.name == name)  # built now: from the mirror the environment names
    docs = LightevalTask(dataclasses.replace(config, num_fewshots=fewshot)).get_docs()
    manager = PromptManager(use_chat_template=False)
    golds = [doc.gold_index[0] if isinstance(doc.gold_index, list) else doc.gold_index for doc in docs]
    return [(manager.prepare_prompt(doc), list(doc.choices), gold) for doc, gold in zip(docs, golds, strict=True)]


def _docs(name: str, fewshot: int) -> list[Any]:
    from lighteval.tasks.lighteval_task import LightevalTask

    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.tasks import TASK_INFO  # noqa: F401 (first: the suite's fixes and prompt words)

    config = next(c for c in all_tasks() if c.name == name)
    return list(LightevalTask(dataclasses.replace(config, num_fewshots=fewshot)).get_docs())


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_document_is_the_lighteval_task_s_own(exported: tuple[Path, Any]) -> None:
    out, _ = exported
    for name, fewshot, _metric in KEPT[:3]:
        rows = _jsonl(out / f"{name}.jsonl")
        assert [(r["context"], r["choices"], r["gold"]) for r in rows] == _rendered(name, fewshot), name
        assert len(rows) > 10
    belebele = _jsonl(out / "belebele_zul_mcf.jsonl")[0]["context"]
    assert belebele.count("Impendulo:") == 6  # five examples with their answers, then the question
    flores = _jsonl(out / "flores_ppl_yor.jsonl")
    assert flores and all(set(r) == {"text"} and r["text"] for r in flores)


def test_the_yaml_is_lm_eval_s_format_and_loads_its_documents_from_the_folder(exported: tuple[Path, Any]) -> None:
    out, _ = exported
    task = yaml.load((out / "sib200_yor_cf.yaml").read_text(), Loader=_Loader)
    assert task["custom_dataset"] == "!function utils.load_docs" and task["output_type"] == "multiple_choice"
    assert (task["doc_to_text"], task["doc_to_choice"], task["doc_to_target"], task["target_delimiter"]) == (
        "context", "choices", "gold", "")  # fmt: skip
    assert [m["metric"] for m in task["metric_list"]] == ["acc", "acc_norm"]  # acc_norm_token's nearest: acc_norm
    pmi = yaml.load((out / "mmlu_afr_virology_zul_hybrid.yaml").read_text(), Loader=_Loader)
    assert [m["metric"] for m in pmi["metric_list"]] == ["acc", "acc_norm", "acc_mutual_info"]
    rolling = yaml.load((out / "flores_ppl_yor.yaml").read_text(), Loader=_Loader)
    assert rolling["output_type"] == "loglikelihood_rolling" and rolling["doc_to_target"] == "text"
    namespace: dict[str, Any] = {"__file__": str(out / "utils.py")}
    exec(compile((out / "utils.py").read_text(), str(out / "utils.py"), "exec"), namespace)
    loaded = namespace["load_docs"](data_file="sib200_yor_cf.jsonl")
    assert loaded["test"].to_list() == _jsonl(out / "sib200_yor_cf.jsonl")


def test_groups_per_language_and_what_was_left_out(exported: tuple[Path, Any]) -> None:
    out, result = exported
    groups = {p.stem: yaml.safe_load(p.read_text()) for p in out.glob("finetasks_afr_*.yaml")}
    assert {name: g["task"] for name, g in groups.items()} == {  # a language: its categories; a category: its tasks
        "finetasks_afr_hau": ["finetasks_afr_hau_gen", "finetasks_afr_hau_nlu"],
        "finetasks_afr_hau_gen": ["afriqa_hau"],
        "finetasks_afr_hau_nlu": ["sib_hau_prompt_1"],
        "finetasks_afr_yor": ["finetasks_afr_yor_gen", "finetasks_afr_yor_nlu"],
        "finetasks_afr_yor_gen": ["flores_ppl_yor", "mafand_mt_en2xx_gen_yor", "mafand_mt_en2xx_ll_yor"],
        "finetasks_afr_yor_nlu": ["sib200_yor_cf"],
        "finetasks_afr_zul": ["finetasks_afr_zul_rc", "finetasks_afr_zul_gk", "finetasks_afr_zul_res"],
        "finetasks_afr_zul_rc": ["belebele_zul_mcf"],
        "finetasks_afr_zul_gk": ["mmlu_afr_virology_zul_hybrid"],
        "finetasks_afr_zul_res": ["winogrande_afr_zul_cf"],
    }
    gen = groups["finetasks_afr_yor_gen"]["aggregate_metric_list"]  # bits per byte: no mean; chrF++: the mean
    assert [m["metric"] for m in gen] == ["chrf++"]
    assert [m["metric"] for m in groups["finetasks_afr_zul"]["aggregate_metric_list"]] == [
        "acc",
        "acc_norm",
        "acc_mutual_info",
    ]
    assert "acc_mutual_info conditions on nothing" in (out / "finetasks_afr_zul.yaml").read_text()
    assert "a language is the plain mean of all its tasks" in (out / "finetasks_afr_zul.yaml").read_text()
    readme = (out / "README.md").read_text()
    assert "--include_path" in readme and "finetasks_afr_hau,finetasks_afr_yor,finetasks_afr_zul" in readme
    assert "sib200 (`Davlan/sib200`): CC-BY-SA-4.0" in readme and "belebele (`facebook/belebele`)" in readme
    assert "sib200_hau_cf" not in readme  # not kept
    said = " ".join(result.output.split())
    assert "8 task(s) rendered, 1 lm-eval task(s) named, 3 language group(s)" in said


def test_partial_scoring_is_one_request_per_choice_exactly_lighteval_s_and_folded_back_per_document(
    exported: tuple[Path, Any],
) -> None:
    """Each request lm-eval will make is the one lighteval's partial scoring makes: per choice, the prompt of the
    document with that choice's context as its query, and the choice's own continuation (Winogrande zul holds both
    kinds: a shared continuation after each option's context, and sentences ending at the blank, one context and
    the option plus the rest as each continuation); utils.py folds them back into lighteval's accuracy."""
    from lighteval.tasks.prompt_manager import PromptManager

    from finetasks_afr.scoring.partial_scoring import partial_contexts

    out, _ = exported
    manager = PromptManager(use_chat_template=False)
    docs = _docs("winogrande_afr_zul_cf", 0)
    expected = []
    for number, doc in enumerate(docs):
        contexts = partial_contexts(doc)
        assert contexts is not None
        for i, (context, choice) in enumerate(zip(contexts, doc.choices, strict=True)):
            prompt = manager.prepare_prompt(dataclasses.replace(doc, query=context))
            expected.append((prompt, choice, number, i, len(doc.choices), doc.gold_index[0]))
    rows = _jsonl(out / "winogrande_afr_zul_cf.jsonl")
    assert [(r["context"], r["continuation"], r["document"], r["choice"], r["choices"], r["gold"]) for r in rows] == (
        expected
    )
    kinds = Counter((len({r["context"] for r in rows if r["document"] == n}) > 1) for n in range(len(docs)))
    assert kinds[True] > 1000 and kinds[False] > 50  # a context per choice; one context, a continuation per choice
    spec = yaml.load((out / "winogrande_afr_zul_cf.yaml").read_text(), Loader=_Loader)
    assert spec["output_type"] == "loglikelihood" and spec["process_results"] == "!function utils.choice_loglikelihood"
    assert [(m["metric"], m["aggregation"], m["higher_is_better"]) for m in spec["metric_list"]] == [
        ("acc", "!function utils.accuracy_over_choices", True),
        ("acc_norm", "!function utils.normalised_accuracy_over_choices", True),
    ]
    assert spec["metadata"] == {"version": 1.0, "fewshot_in_context": 0}
    namespace: dict[str, Any] = {"__file__": str(out / "utils.py")}
    exec(compile((out / "utils.py").read_text(), str(out / "utils.py"), "exec"), namespace)
    lls = [-float(len(r["context"]) % 7 + r["choice"] * (r["document"] % 3 - 1)) for r in rows]  # ties included
    items = [namespace["choice_loglikelihood"](r, [(ll, False)])["acc"] for r, ll in zip(rows, lls, strict=True)]
    by_document: dict[int, list[float]] = {}
    normalised: dict[int, list[float]] = {}
    for row, ll in zip(rows, lls, strict=True):
        by_document.setdefault(row["document"], []).append(ll)
        normalised.setdefault(row["document"], []).append(ll / len(row["continuation"]))  # lighteval's LogProbCharNorm
    gold = {r["document"]: r["gold"] for r in rows}
    right = sum(int(np.argmax(scores) == gold[n]) for n, scores in by_document.items())  # lighteval: np.argmax
    assert namespace["accuracy_over_choices"](items) == right / len(docs)
    right_norm = sum(int(np.argmax(scores) == gold[n]) for n, scores in normalised.items())
    assert namespace["normalised_accuracy_over_choices"](items) == right_norm / len(docs) != right / len(docs)
    with pytest.raises(ValueError, match="document 0: log-likelihoods of choices"):
        namespace["accuracy_over_choices"](items[1:])  # a choice cut off (lm-eval's --limit): named, not a miss


def test_generative_and_reference_tasks_carry_lighteval_s_prompts_golds_and_settings(
    exported: tuple[Path, Any],
) -> None:
    from lighteval.tasks.prompt_manager import PromptManager

    out, _ = exported
    manager = PromptManager(use_chat_template=False)
    docs = _docs("afriqa_hau", 0)
    rows = _jsonl(out / "afriqa_hau.jsonl")
    assert [(r["context"], r["golds"]) for r in rows] == [(manager.prepare_prompt(d), d.get_golds()) for d in docs]
    assert rows[0]["answers_in"] == "eng" and rows[0]["word_split"] == "spacy:en" and rows[0]["articles"]
    spec = yaml.load((out / "afriqa_hau.yaml").read_text(), Loader=_Loader)
    assert spec["output_type"] == "generate_until" and spec["process_results"] == "!function utils.f1_and_prefix_match"
    assert spec["generation_kwargs"] == {"until": ["\n"], "max_gen_toks": docs[0].generation_size, "do_sample": False}
    assert [m["metric"] for m in spec["metric_list"]] == ["f1_eng", "exact_match_eng_prefix"]
    chrf = yaml.load((out / "mafand_mt_en2xx_gen_yor.yaml").read_text(), Loader=_Loader)
    assert chrf["metric_list"] == [{"metric": "chrf++", "aggregation": "!function utils.chrf_plus_plus",
                                    "higher_is_better": True}]  # fmt: skip
    docs = _docs("mafand_mt_en2xx_ll_yor", 1)
    rows = _jsonl(out / "mafand_mt_en2xx_ll_yor.jsonl")
    assert [(r["context"], r["continuation"]) for r in rows] == [
        (manager.prepare_prompt(d), d.choices[d.gold_index[0] if isinstance(d.gold_index, list) else d.gold_index])
        for d in docs
    ]
    assert rows[0]["context"].count(" YO: ") == 1 and rows[0]["continuation"].startswith(" ")  # one example, 1-shot
    spec = yaml.load((out / "mafand_mt_en2xx_ll_yor.yaml").read_text(), Loader=_Loader)
    assert spec["output_type"] == "loglikelihood" and spec["metric_list"][0]["aggregation"] == "bits_per_byte"
    readme = (out / "README.md").read_text()
    assert "`winogrande_afr_ibo_cf`: partial scoring with PMI" in readme and "eng (spacy:en)" in readme


def test_the_exported_metrics_equal_lighteval_s_on_real_answers(exported: tuple[Path, Any]) -> None:
    """utils.py's F1, prefix match, chrF++ and reference bits per byte against lighteval's (and this project's)
    metric objects on the real documents, with predictions made from real answers: exact equality."""
    from lighteval.metrics.metrics_corpus import CorpusLevelPerplexityMetric
    from lighteval.metrics.sample_preparator import GenerativeCorpusMetricInput, PerplexityCorpusMetricInput
    from lighteval.models.model_output import ModelResponse
    from lighteval.utils.language import Language

    from finetasks_afr.benchmarks.common import gen_metrics
    from finetasks_afr.benchmarks.translation import CorpusChrF

    out, _ = exported
    namespace: dict[str, Any] = {"__file__": str(out / "utils.py")}
    exec(compile((out / "utils.py").read_text(), str(out / "utils.py"), "exec"), namespace)
    f1_metric, prefix_metric = gen_metrics(Language("eng"))
    docs, rows = _docs("afriqa_hau", 0), _jsonl(out / "afriqa_hau.jsonl")
    answers = [gold for row in rows for gold in row["golds"]]
    checked = 0
    for i, (doc, row) in enumerate(zip(docs, rows, strict=True)):
        gold = row["golds"][0]
        for prediction in (gold, f"The {gold}, surely.", gold.split()[0] if gold.split() else "", "",
                           answers[(i * 7) % len(answers)], f"{gold} and 100km more"):  # fmt: skip
            response = ModelResponse(text=[prediction])
            ours = namespace["f1_and_prefix_match"](row, [prediction])
            assert ours["f1_eng"] == f1_metric.sample_level_fn.compute(doc=doc, model_response=response), prediction
            assert ours["exact_match_eng_prefix"] == prefix_metric.sample_level_fn.compute(
                doc=doc, model_response=response
            ), prediction
            checked += 1
    assert checked > 100
    references = [row["golds"][0] for row in _jsonl(out / "mafand_mt_en2xx_gen_yor.jsonl")]
    hypotheses = [references[(i + 1) % len(references)][: 5 + i % 40] for i in range(len(references))]
    pairs = list(zip(hypotheses, references, strict=True))
    items = [namespace["chrf_plus_plus_results"]({"golds": [r]}, [h])["chrf++"] for h, r in pairs]
    lighteval_items = [GenerativeCorpusMetricInput(golds=[r], preds=[h]) for h, r in pairs]
    assert namespace["chrf_plus_plus"](items) == CorpusChrF(word_order=2).compute_corpus(lighteval_items)
    rows = _jsonl(out / "mafand_mt_en2xx_ll_yor.jsonl")
    lls = [-(1.5 + (i % 13) / 7) * len(r["continuation"]) for i, r in enumerate(rows)]
    summed = [
        namespace["reference_bits_per_byte"](r, [(ll, False)])["bits_per_byte"] for r, ll in zip(rows, lls, strict=True)
    ]
    ours_bpb = -sum(ll for ll, _ in summed) / sum(n for _, n in summed) / math.log(2)  # lm-eval's bits_per_byte
    # one summed log-probability and one byte count per document, as translation.ReferenceBytes gives them
    inputs = [PerplexityCorpusMetricInput(logprobs=ll, weights=len(r["continuation"].encode()))  # type: ignore[arg-type]
              for r, ll in zip(rows, lls, strict=True)]  # fmt: skip
    assert math.isclose(ours_bpb, CorpusLevelPerplexityMetric("bits_per_byte").compute_corpus(inputs), rel_tol=1e-12)
