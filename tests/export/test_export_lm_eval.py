"""`finetasks-afr export lm-eval` on real rows (a mirror imported from ../shared/data): every exported document is
what this project's lighteval task shows a model (context with its few-shot examples, choices, gold), the YAML is
what lm-eval 0.4 reads (fields named, documents loaded by the folder's own utils.py), groups per language, and the
kept tasks it cannot express are listed with the reason. The real lm-eval run of the folder is not made here."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

KEPT = [
    ("sib200_yor_cf", 0, "acc_norm_token"),
    ("belebele_zul_mcf", 5, "acc"),
    ("mmlu_afr_virology_zul_hybrid", 5, "acc_norm_pmi"),
    ("flores_ppl_yor", 0, "bits_per_byte"),
    ("winogrande_afr_zul_cf", 0, "acc"),  # partial scoring: left out
    ("afriqa_hau", 0, "f1_eng"),  # generative: left out
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
    import_raw(shared_data, mirror, datasets=["sib200", "belebele", "mmlu_clinical_afr", "winogrande_afr", "afriqa"])
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
        "finetasks_afr_hau": ["finetasks_afr_hau_nlu"],
        "finetasks_afr_hau_nlu": ["sib_hau_prompt_1"],
        "finetasks_afr_yor": ["finetasks_afr_yor_gen", "finetasks_afr_yor_nlu"],
        "finetasks_afr_yor_gen": ["flores_ppl_yor"],
        "finetasks_afr_yor_nlu": ["sib200_yor_cf"],
        "finetasks_afr_zul": ["finetasks_afr_zul_rc", "finetasks_afr_zul_gk"],
        "finetasks_afr_zul_rc": ["belebele_zul_mcf"],
        "finetasks_afr_zul_gk": ["mmlu_afr_virology_zul_hybrid"],
    }
    assert "aggregate_metric_list" not in (out / "finetasks_afr_yor_gen.yaml").read_text()  # bits per byte: no mean
    assert [m["metric"] for m in groups["finetasks_afr_zul"]["aggregate_metric_list"]] == [
        "acc",
        "acc_norm",
        "acc_mutual_info",
    ]
    assert "acc_mutual_info conditions on nothing" in (out / "finetasks_afr_zul.yaml").read_text()
    readme = (out / "README.md").read_text()
    assert "--include_path" in readme and "finetasks_afr_hau,finetasks_afr_yor,finetasks_afr_zul" in readme
    assert "`winogrande_afr_zul_cf`: partial scoring" in readme and "`afriqa_hau`: generative" in readme
    assert "sib200 (`Davlan/sib200`): CC-BY-SA-4.0" in readme and "belebele (`facebook/belebele`)" in readme
    assert "sib200_hau_cf" not in readme  # not kept
    said = " ".join(result.output.split())
    assert "4 task(s) rendered, 1 lm-eval task(s) named, 3 language group(s)" in said
