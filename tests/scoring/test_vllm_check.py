"""The vLLM-vs-transformers check can fail: its comparison on doctored details (scripts/check_vllm.py), and the
vLLM shims' pure parts (finetasks_afr/scoring/compat_vllm.py). Runs in the main environment, where vLLM is not
installed; the real run is `make test-vllm` (its own environment)."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import math
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finetasks_afr.scoring import compat_vllm

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_vllm.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_vllm", SCRIPT)
    assert spec is not None and spec.loader is not None, SCRIPT
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_vllm"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop("check_vllm", None)
        raise
    yield module
    sys.modules.pop("check_vllm", None)


def record(logprobs, unconditioned=None, tokens=None, metrics=None, choices=(" a", " b", " c")):
    return {
        "query": "Question: q\nAnswer:",
        "choices": list(choices),
        "logprobs": list(logprobs),
        "unconditioned_logprobs": None if unconditioned is None else list(unconditioned),
        "output_tokens": tokens if tokens is not None else [[7], [8, 9], [10]],
        "metrics": metrics if metrics is not None else {"acc": 1, "acc_norm": 1},
    }


def task_docs():
    return {
        "0": record([-1.5, -3.25, -7.0], [-2.0, -4.0, -6.0]),
        "1": record([-4.0, -2.0, -9.5], [-1.0, -3.0, -5.0], metrics={"acc": 0, "acc_norm": 1}),
    }


def runs(docs):
    return {"mix-a/seed-1/step-000000010": {"t_cf|0": docs}}


RESULTS = {"mix-a/seed-1/step-000000010": {"t_cf|0": {"acc": 0.5, "acc_stderr": 0.5, "acc_norm": 1.0}}}


def compare(check, reference, candidate, ref_results=RESULTS, cand_results=RESULTS):
    comparisons = check.compare_runs(runs(reference), runs(candidate), ref_results, cand_results, ["t_cf|0"])
    return comparisons, check.summarise(comparisons)


def test_identical_details_pass(check):
    comparisons, summary = compare(check, task_docs(), task_docs())
    assert summary["passed"] and summary["accuracies_equal"]
    assert summary["max_rel"] == 0.0 and summary["max_abs"] == 0.0
    assert summary["choices"] == 6 and summary["unconditioned"] == 6 and summary["docs"] == 2
    assert comparisons[0].accuracies == {"acc": (0.5, 0.5), "acc_norm": (1.0, 1.0)}  # stderr not compared


def test_float32_noise_passes_and_is_reported(check):
    candidate = task_docs()
    candidate["1"]["logprobs"][2] = -9.5 * (1 + 3e-6)
    _, summary = compare(check, task_docs(), candidate)
    assert summary["passed"]
    assert summary["max_rel"] == pytest.approx(3e-6, rel=1e-3)
    assert summary["max_abs"] == pytest.approx(9.5 * 3e-6, rel=1e-3)
    assert "doc 1 choice 2 (logprobs)" in summary["worst"]


def test_a_logprob_beyond_the_tolerance_fails_naming_task_doc_and_choice(check):
    candidate = task_docs()
    candidate["1"]["logprobs"][1] = -2.0 * (1 + 2e-4)  # accuracies unchanged: only the number is wrong
    comparisons, summary = compare(check, task_docs(), candidate)
    assert not summary["passed"]
    assert summary["accuracies_equal"]
    (mismatch,) = comparisons[0].mismatches
    assert (mismatch.task, mismatch.doc, mismatch.what) == ("t_cf|0", "1", "logprobs")
    assert "choice 1" in mismatch.message() and "mix-a/seed-1/step-000000010" in mismatch.message()


def test_unconditioned_logprobs_are_compared_when_the_reference_has_them(check):
    candidate = task_docs()
    candidate["0"]["unconditioned_logprobs"][0] = -2.1
    comparisons, summary = compare(check, task_docs(), candidate)
    assert not summary["passed"]
    assert comparisons[0].mismatches[0].what == "unconditioned_logprobs"
    # a candidate without them where the reference has them fails too
    candidate = task_docs()
    candidate["0"]["unconditioned_logprobs"] = None
    assert not compare(check, task_docs(), candidate)[1]["passed"]
    # no PMI metric: neither side scored them, nothing to compare
    reference, candidate = task_docs(), task_docs()
    for docs in (reference, candidate):
        for item in docs.values():
            item["unconditioned_logprobs"] = None
    assert compare(check, reference, candidate)[1]["passed"]


def test_a_flipped_per_document_metric_fails(check):
    candidate = task_docs()
    candidate["0"]["metrics"]["acc_norm"] = 0
    comparisons, summary = compare(check, task_docs(), candidate)
    assert not summary["passed"] and not summary["accuracies_equal"]
    assert any(m.what == "metric" and m.doc == "0" and "acc_norm" in m.detail for m in comparisons[0].mismatches)


def test_a_different_task_accuracy_fails(check):
    other = copy.deepcopy(RESULTS)
    other["mix-a/seed-1/step-000000010"]["t_cf|0"]["acc"] = 0.5000001
    comparisons, summary = compare(check, task_docs(), task_docs(), RESULTS, other)
    assert not summary["passed"] and not summary["accuracies_equal"]
    assert [m.what for m in comparisons[0].mismatches] == ["accuracy"]


@pytest.mark.parametrize(
    ("doctor", "what"),
    [
        (lambda docs: docs.pop("1"), "docs"),
        (lambda docs: docs["0"].update(output_tokens=[[7], [8], [10]]), "tokens"),
        (lambda docs: docs["0"].update(choices=[" a", " b", " d"]), "choices"),
        (lambda docs: docs["0"]["logprobs"].pop(), "logprobs"),
        (lambda docs: docs["0"]["logprobs"].__setitem__(0, math.nan), "logprobs"),
    ],
)
def test_structural_differences_fail(check, doctor, what):
    candidate = task_docs()
    doctor(candidate)
    comparisons, summary = compare(check, task_docs(), candidate)
    assert not summary["passed"]
    assert what in {m.what for m in comparisons[0].mismatches}


def test_a_task_missing_from_one_backend_fails(check):
    comparisons = check.compare_runs(runs(task_docs()), {}, RESULTS, {}, ["t_cf|0"])
    summary = check.summarise(comparisons)
    assert not summary["passed"]
    assert "no details from the candidate" in summary["first_mismatches"][0]


def test_nothing_compared_is_not_a_pass(check):
    assert not check.summarise([])["passed"]


def test_relative_difference(check):
    assert check.relative_difference(0.0, 0.0) == 0.0
    assert check.relative_difference(-2.0, -2.0002) == pytest.approx(0.0002 / 2.0002)
    assert check.relative_difference(-1.0, -math.inf) == math.inf
    assert check.relative_difference(math.nan, -1.0) == math.inf  # NaN never passes


def details_table(docs: dict, task: str) -> pa.Table:
    """A details table shaped like lighteval 0.13's (doc / metric / model_response structs)."""
    rows = []
    for doc_id, item in docs.items():
        rows.append(
            {
                "doc": {
                    "query": item["query"],
                    "choices": item["choices"],
                    "gold_index": [0],
                    "id": doc_id,
                    "task_name": task,
                    "unconditioned_query": "Answer:",
                },
                "metric": item["metrics"],
                "model_response": {
                    "input_tokens": [1, 2],
                    "output_tokens": item["output_tokens"],
                    "logprobs": item["logprobs"],
                    "unconditioned_logprobs": item["unconditioned_logprobs"],
                },
            }
        )
    return pa.Table.from_pylist(rows)


def test_read_details_then_compare_doctored_parquet(check, tmp_path):
    for backend, docs in (("reference", task_docs()), ("candidate", task_docs())):
        if backend == "candidate":
            docs["0"]["logprobs"][2] = -7.01
        folder = tmp_path / backend / "part-1" / "details" / "model" / "2026"
        folder.mkdir(parents=True)
        pq.write_table(details_table(docs, "t_cf|0"), folder / "details_t_cf|0_2026.parquet")
    reference = check.read_details(tmp_path / "reference" / "part-1")
    candidate = check.read_details(tmp_path / "candidate" / "part-1")
    assert reference["t_cf|0"]["1"]["logprobs"] == [-4.0, -2.0, -9.5]
    assert reference["t_cf|0"]["0"]["metrics"] == {"acc": 1, "acc_norm": 1}
    comparisons, summary = compare(check, reference["t_cf|0"], candidate["t_cf|0"])
    assert not summary["passed"]
    assert comparisons[0].mismatches[0].message().endswith("(relative 0.00143 > 0.0001)")


def test_read_details_refuses_ambiguous_document_ids(check, tmp_path):
    docs = task_docs()
    docs["1"]["metrics"] = {"acc": 1, "acc_norm": 1}
    table = details_table(docs, "t_cf|0")
    table = pa.concat_tables([table, table])
    pq.write_table(table, tmp_path / "details_t_cf|0_x.parquet")
    with pytest.raises(ValueError, match="twice"):
        check.read_details(tmp_path)


def test_table_lists_every_task(check):
    comparisons, _ = compare(check, task_docs(), task_docs())
    text = check.table(comparisons)
    assert "t_cf|0" in text and "yes" in text


def test_main_refuses_a_directory_that_is_not_a_demo(check, tmp_path, capsys):
    assert check.main(["--demo", str(tmp_path)]) == 2
    assert "not a demo directory" in capsys.readouterr().err


# ------------------------------------------------------------------------------- compat_vllm, pure parts


@pytest.fixture
def clean_shims():
    compat_vllm.restore()
    yield
    compat_vllm.restore()


def test_apply_without_vllm_steps_aside(clean_shims, monkeypatch):
    monkeypatch.delenv(compat_vllm.ENV_SWITCH, raising=False)
    monkeypatch.setattr(compat_vllm, "vllm_importable", lambda: False)
    status = compat_vllm.apply()
    assert set(status) == set(compat_vllm.SHIMS)
    assert all(outcome == "skipped: vllm is not installed" for outcome in status.values())
    assert compat_vllm.applied() == frozenset()


def test_env_switch_off(clean_shims, monkeypatch):
    monkeypatch.setenv(compat_vllm.ENV_SWITCH, "off")
    assert set(compat_vllm.apply().values()) == {f"disabled by {compat_vllm.ENV_SWITCH}"}


def test_version_guard(clean_shims, monkeypatch):
    monkeypatch.delenv(compat_vllm.ENV_SWITCH, raising=False)
    monkeypatch.setattr(compat_vllm.compat, "lighteval_version", lambda: "0.14.0")
    assert all("not a 0.13.x release" in outcome for outcome in compat_vllm.apply().values())


def test_cpu_env_defaults_never_clobber(clean_shims, monkeypatch):
    monkeypatch.setattr(compat_vllm, "runs_on_cpu", lambda: True)
    for name in compat_vllm.CPU_ENV_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "7")
    done = compat_vllm.set_cpu_env_defaults()
    assert done == {"VLLM_TARGET_DEVICE": "cpu", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "7"
    compat_vllm.restore()
    assert "VLLM_TARGET_DEVICE" not in os.environ and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "7"


class FakeLLM:
    """Stands in for vLLM 0.32's LLM: rejects swap_space, takes prompts only."""

    def __init__(self, model, **kwargs):
        if "swap_space" in kwargs:
            raise TypeError("EngineArgs.__init__() got an unexpected keyword argument 'swap_space'")
        self.kwargs = kwargs

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True):
        return prompts, sampling_params, use_tqdm


def test_llm_subclass_bridges_swap_space_and_prompt_token_ids(clean_shims, monkeypatch):
    monkeypatch.setattr(compat_vllm._STATE, "active", {compat_vllm.SHIM_SWAP_SPACE, compat_vllm.SHIM_GENERATE})
    cls = compat_vllm.compat_llm_class(FakeLLM)
    assert issubclass(cls, FakeLLM) and compat_vllm.compat_llm_class(cls) is cls
    llm: Any = cls("m", swap_space=4, seed=1)  # its generate() takes prompt_token_ids, FakeLLM's does not
    assert llm.kwargs == {"seed": 1}
    prompts, params, _ = llm.generate(prompt_token_ids=[[1, 2], [3]], sampling_params="p", use_tqdm=True)
    assert prompts == [{"prompt_token_ids": [1, 2]}, {"prompt_token_ids": [3]}] and params == "p"
    assert llm.generate(["text"])[0] == ["text"]
    with pytest.raises(TypeError, match="not both"):
        llm.generate(["text"], prompt_token_ids=[[1]])


def test_llm_subclass_gives_vllm_a_bar_whose_elapsed_time_is_never_zero(clean_shims, monkeypatch):
    monkeypatch.setattr(compat_vllm._STATE, "active", {compat_vllm.SHIM_TQDM})
    llm = compat_vllm.compat_llm_class(FakeLLM)("m")
    bar_class = llm.generate(["x"], use_tqdm=True)[2]
    assert bar_class is compat_vllm.progress_bar_class()
    assert llm.generate(["x"], use_tqdm=False)[2] is False  # an explicit choice stays
    bar = bar_class(total=3, disable=True)  # what TQDM_DISABLE=1 gives: vLLM 0.32 divided by its elapsed 0
    assert bar.format_dict["elapsed"] > 0
    bar.close()


def test_ray_stub(clean_shims):
    ray = compat_vllm.ray_stub()
    assert ray.shutdown() is None and ray.is_initialized() is False
    with pytest.raises(RuntimeError, match="data_parallel_size"):
        ray.remote(lambda: None)


def test_is_package_available_answers_for_vllm_only(clean_shims, monkeypatch):
    seen = []

    def original(package):
        seen.append(package)
        return False

    monkeypatch.setattr(compat_vllm, "vllm_importable", lambda: True)
    wrapped = compat_vllm._wrap_is_package_available(original)
    assert wrapped("vllm") is True
    assert wrapped(type("Requirement", (), {"name": "vllm"})()) is True
    assert wrapped("ray") is False and seen == ["ray"]
    assert inspect.unwrap(wrapped) is original
