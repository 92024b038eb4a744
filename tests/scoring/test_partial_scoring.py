"""Proof that Winogrande CF is partial scoring: log P(rest of the sentence | sentence before the blank + option).

Hand-made rows (qID, Sentence with one "_", Option1, Option2, Answer; stored under the hub's English columns),
a blank-first sentence and an attached prefix ("u_") among them, go through lighteval's real machinery: the suite's
own task config (`bridging.winogrande_tasks`, pointed at a local dataset), `Pipeline` with the Python API, a
`TransformersModel` over a tiny Llama (finetasks_afr.demo.tiny), 1-shot from the dev split. An independent reference
builds each context from the raw row, renders the 1-shot prompt as the complete correct dev sentence, and scores
the rest of the sentence with a plain forward pass. After `partial_scoring.apply()` lighteval must report the
same per-choice log-probabilities (1e-5), token counts and acc / acc_norm / acc_norm_token. Without it the two
choices are scored after the same (gold) query, so the values differ: the test fails if the patch stops applying.
The stock run also leaves its values in lighteval's prediction cache, and the patched run must not read them.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bench.probe_tasks import tasks_module  # noqa: E402
from finetasks_afr.demo.tiny import make_tiny_causal_lm  # noqa: E402
from finetasks_afr.scoring import compat, partial_scoring  # noqa: E402
from finetasks_afr.scoring.core import weights_dtype  # noqa: E402
from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only  # noqa: E402
from tests.local_dataset import write_local_dataset  # noqa: E402

if TYPE_CHECKING:
    from lighteval.logging.info_loggers import DetailsLogger
    from lighteval.pipeline import Pipeline
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import Doc

pytestmark = pytest.mark.slow

TASK = "winogrande_partial_probe"
TASK_KEY = f"{TASK}|1"
METRIC_NAMES = ("acc", "acc_norm", "acc_norm_token")
MAX_LENGTH = 256
TOL = 1e-5

TEST_ROWS = [
    {"qID": "t1", "Sentence": "Randy did not like technology unlike Dennis so _ stayed informed through reading "
     "online newspapers.", "Option1": "Randy", "Option2": "Dennis", "Answer": "2"},
    {"qID": "t2", "Sentence": "_ could not lift the heavy box, so Musa carried it for her.",
     "Option1": "Grace", "Option2": "The strong man", "Answer": "1"},  # blank first
    {"qID": "t3", "Sentence": "UNatalie wayeqikelela kodwa u_ ngephutha wavumela amantongomane ukuwela.",
     "Option1": "Natalie ", "Option2": "Emily ", "Answer": "1"},  # attached prefix: "uNatalie"
    {"qID": "t4", "Sentence": "The trophy does not fit into the brown suitcase because the _ is too large.",
     "Option1": "trophy", "Option2": "suitcase", "Answer": "1"},
    {"qID": "t5", "Sentence": "  The  cat chased the mouse until   the _ got tired and slept. ",
     "Option1": " cat", "Option2": "mouse  ", "Answer": "1"},  # messy whitespace
    {"qID": "t6", "Sentence": "_ is taller than Peter, so Peter asked him to reach the shelf.",
     "Option1": "Kwame the basketball player", "Option2": "Peter", "Answer": "1"},  # blank first
    {"qID": "t7", "Sentence": "He looked everywhere for the _", "Option1": "keys", "Option2": "phone",
     "Answer": "1"},  # nothing after the blank: skipped by CF
]  # fmt: skip
DEV_ROWS = [
    {"qID": "d1", "Sentence": "Amina gave her umbrella to Zawadi because _ was going out into the rain.",
     "Option1": "Amina", "Option2": "Zawadi", "Answer": "2"},
]  # fmt: skip
SCORED = [row for row in TEST_ROWS if row["qID"] != "t7"]


def _norm(text: str) -> str:
    return " ".join(text.split())


def expected_parts(row: dict) -> tuple[list[str], str, int]:
    """(context per option, rest of the sentence, gold) built from the raw row, independently of the suite."""
    before, after = _norm(row["Sentence"]).split("_")
    options = [_norm(row["Option1"]), _norm(row["Option2"])]
    return [_norm(before + option) for option in options], after.strip(), int(row["Answer"]) - 1


def full_sentence(row: dict) -> str:
    contexts, rest, gold = expected_parts(row)
    return f"{contexts[gold]} {rest}"


# lighteval 0.13 renders a plain-text prompt as "\n\n".join([instruction, *few-shot "query gold", query]); the
# continuation template's instruction is "", which used to become an empty first paragraph (two leading newlines);
# the suite turns an empty instruction into None, so the prompt starts with the example.
FEWSHOT_PREFIX = full_sentence(DEV_ROWS[0]) + "\n\n"

CORPUS = [full_sentence(row) for row in TEST_ROWS + DEV_ROWS if row["qID"] != "t7"] + [
    "Dennis read online newspapers every morning. Grace asked Musa to carry the box.",
    "The suitcase was small and the trophy was large. The mouse ran and the cat slept.",
    "UEmily wayeqikelela amantongomane. Peter is short and Kwame is tall.",
]


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module", autouse=True)
def _leave_patches_as_found():
    was = (compat.applied(), partial_scoring.applied())
    yield
    partial_scoring.restore()
    compat.restore()
    if was[0]:
        compat.apply()
    if was[1]:
        partial_scoring.apply()


def _patched() -> None:
    """The production set-up (finetasks_afr/tasks.py): compat first, partial scoring on top."""
    partial_scoring.restore()
    compat.restore()
    compat.apply()
    assert partial_scoring.apply() == {"partial_scoring": "applied"}


def _stock_partial_scoring() -> None:
    """Everything but partial scoring."""
    partial_scoring.restore()
    compat.restore()
    compat.apply()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_causal_lm(
        tmp_path_factory.mktemp("tiny") / "model",
        CORPUS,
        vocab_size=300,
        hidden_size=32,
        layers=2,
        heads=2,
        max_position_embeddings=MAX_LENGTH,
        seed=0,
        train_steps=30,
        train_seq_len=48,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    splits = {"test": [hub_row(row) for row in TEST_ROWS], "dev": [hub_row(row) for row in DEV_ROWS]}
    return write_local_dataset(tmp_path_factory.mktemp("wino"), "winogrande_partial", splits)


HUB_COLUMNS = {"Sentence": "English Sentence", "Option1": "English Option 1", "Option2": "English Option 2"}


def hub_row(row: dict) -> dict:
    """A row as the hub's winogrande_<xx> configs hold it, read by the English task (its English columns)."""
    return {HUB_COLUMNS.get(key, key): value for key, value in row.items()}


@pytest.fixture(scope="module")
def suite_configs():
    """The suite's own Winogrande configs for English (CF = partial scoring, MCF unchanged)."""
    from finetasks_afr.benchmarks import bridging
    from finetasks_afr.prompts.languages import language
    from finetasks_afr.prompts.literals import register_literals

    register_literals()
    return {config.name: config for config in bridging.winogrande_tasks([language("eng")])}


@pytest.fixture(scope="module")
def probe_config(suite_configs, data_dir):
    return dataclasses.replace(
        suite_configs["winogrande_afr_eng_cf"],
        name=TASK,
        hf_repo=str(data_dir),
        hf_subset="default",
        hf_revision=None,
        hf_avail_splits=["dev", "test"],
    )


def run_pipeline(model_dir: Path, config: LightevalTaskConfig, out_dir: Path) -> tuple[Pipeline, list[list[Doc]]]:
    """Evaluate the probe task 1-shot; returns (pipeline, the docs of each _loglikelihood_tokens call)."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    module = tasks_module("winogrande_partial_probe_tasks", [config])
    calls: list[list[Doc]] = []
    original = TransformersModel._loglikelihood_tokens

    def spy(self, docs, *args, **kwargs):
        calls.append(list(docs))
        return original(self, docs, *args, **kwargs)

    with custom_tasks_only(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransformersModel, "_loglikelihood_tokens", spy)
        pipeline = Pipeline(
            tasks=TASK_KEY,
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                custom_tasks_directory=module,  # type: ignore[arg-type]  # declared str | None; a module works too
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(out_dir), save_details=False),
            model_config=TransformersModelConfig(
                model_name=str(model_dir), device="cpu", batch_size=32, max_length=MAX_LENGTH
            ),
        )
        pipeline.evaluate()
    return pipeline, calls


def _details(pipeline: Pipeline) -> dict[str, DetailsLogger.Detail]:
    return {detail.doc.query: detail for detail in pipeline.get_details()[TASK_KEY]}


# ------------------------------------------------------------------------------------------------ reference


class Reference:
    """Independent scorer: one plain forward pass per (context, continuation), no lighteval code."""

    def __init__(self, model_dir: Path):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, **weights_dtype(torch.float32)).eval()

    def logprob(self, context: str, continuation: str) -> tuple[float, int]:
        # lighteval's convention: the context gets <s>, the continuation no special token.
        context_ids = self.tokenizer(context, add_special_tokens=True)["input_ids"]
        continuation_ids = self.tokenizer(continuation, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([context_ids + continuation_ids])).logits[0].double()
        logprobs = torch.log_softmax(logits, dim=-1)
        positions = range(len(context_ids) - 1, len(context_ids) + len(continuation_ids) - 1)
        return sum(float(logprobs[p, t]) for p, t in zip(positions, continuation_ids, strict=True)), len(
            continuation_ids
        )

    def score(self, row: dict, prefix: str) -> dict:
        contexts, rest, gold = expected_parts(row)
        continuation = " " + rest
        scored = [self.logprob(prefix + context, continuation) for context in contexts]
        raw = [value for value, _ in scored]
        counts = [count for _, count in scored]
        normalised = {
            "acc": raw,
            "acc_norm": [value / len(continuation) for value in raw],  # LogProbCharNorm: leading space counted
            "acc_norm_token": [value / count for value, count in zip(raw, counts, strict=True)],
        }
        return {
            "query": contexts[gold],
            "raw": raw,
            "n_tokens": counts,
            "acc": {name: float(int(np.argmax(values)) == gold) for name, values in normalised.items()},
        }


@pytest.fixture(scope="module")
def reference(tiny_model: Path) -> dict[str, dict]:
    scorer = Reference(tiny_model)
    return {row["qID"]: scorer.score(row, FEWSHOT_PREFIX) for row in SCORED}


@pytest.fixture(scope="module")
def runs(tiny_model, probe_config, tmp_path_factory):
    """Three runs on one model copy (one prediction cache): stock, patched, patched again."""
    model_dir = tmp_path_factory.mktemp("models") / "model"
    shutil.copytree(tiny_model, model_dir)
    results: dict[str, Any] = {}
    try:
        _stock_partial_scoring()
        results["stock"] = run_pipeline(model_dir, probe_config, tmp_path_factory.mktemp("out_stock"))
        _patched()
        partial_scoring.reset_stats()
        results["patched"] = run_pipeline(model_dir, probe_config, tmp_path_factory.mktemp("out_patched"))
        results["stats"] = dataclasses.replace(partial_scoring.STATS)
        results["cached"] = run_pipeline(model_dir, probe_config, tmp_path_factory.mktemp("out_cached"))
    finally:
        partial_scoring.restore()
    return results


# ------------------------------------------------------------------------------------------------ the proof


def test_partial_scores_equal_the_reference(runs, reference):
    pipeline, _ = runs["patched"]
    details = _details(pipeline)
    assert len(details) == len(SCORED)  # the blank-first rows are scored, the blank-last row is not
    for row in SCORED:
        expected = reference[row["qID"]]
        detail = details[expected["query"]]
        response = detail.model_response
        np.testing.assert_allclose(response.logprobs, expected["raw"], rtol=TOL, atol=TOL, err_msg=row["qID"])
        assert [len(tokens) for tokens in response.output_tokens] == expected["n_tokens"]
        for name in METRIC_NAMES:
            assert detail.metric[name] == pytest.approx(expected["acc"][name], abs=TOL), (row["qID"], name)
        assert set(detail.metric) == set(METRIC_NAMES)  # no acc_norm_pmi for partial scoring
    results = pipeline.get_results()["results"][f"{TASK}:1"]
    for name in METRIC_NAMES:
        assert results[name] == pytest.approx(np.mean([reference[r["qID"]]["acc"][name] for r in SCORED]), abs=TOL)


def test_the_probe_discriminates(reference):
    """Every row's two options get clearly different partial scores (else the comparisons prove little)."""
    assert all(abs(ref["raw"][0] - ref["raw"][1]) > 1e-3 for ref in reference.values())


def test_without_apply_both_choices_are_scored_after_the_gold_query(runs, reference):
    pipeline, calls = runs["stock"]
    details = _details(pipeline)
    assert len(calls) == 1 and all(":partial" not in doc.id for doc in calls[0])
    differs = acc_differs = 0
    for row in SCORED:
        expected = reference[row["qID"]]
        logprobs = details[expected["query"]].model_response.logprobs
        assert logprobs[0] == pytest.approx(logprobs[1], abs=1e-9)  # identical choices, identical query
        gold = int(row["Answer"]) - 1
        assert logprobs[gold] == pytest.approx(expected["raw"][gold], abs=1e-4)  # the gold context, as query
        differs += abs(logprobs[1 - gold] - expected["raw"][1 - gold]) > 1e-3
        acc_differs += details[expected["query"]].metric["acc"] != expected["acc"]["acc"]
    assert differs == len(SCORED)
    assert acc_differs > 0  # stock acc = [gold is option 1], whatever the model


def test_stale_cache_is_not_read_and_partial_scores_are_cached(runs, reference):
    _, patched_calls = runs["patched"]
    # The stock run cached the documents under their plain ids; the patched run sent per-choice requests.
    assert len(patched_calls) == 1
    requests = patched_calls[0]
    assert len(requests) == 2 * len(SCORED)
    assert all(":partial" in request.id and len(request.choices) == 1 for request in requests)
    stats = runs["stats"]
    assert (stats.docs, stats.requests) == (len(SCORED), 2 * len(SCORED))
    # Third run: every per-choice request comes from the cache, the values are still the reference.
    pipeline, cached_calls = runs["cached"]
    assert cached_calls == []
    details = _details(pipeline)
    for row in SCORED:
        expected = reference[row["qID"]]
        logprobs = details[expected["query"]].model_response.logprobs
        np.testing.assert_allclose(logprobs, expected["raw"], rtol=TOL, atol=TOL)


def test_pipeline_refuses_partial_documents_without_the_scoring_patch(tiny_model, probe_config, tmp_path_factory):
    """FINETASKS_AFR_PARTIAL_SCORING=off (or an unsupported lighteval): the guard stops the run, no silent 50%."""
    model_dir = tmp_path_factory.mktemp("models_guard") / "model"
    shutil.copytree(tiny_model, model_dir)
    _stock_partial_scoring()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(partial_scoring.ENV_SWITCH, "off")
            assert partial_scoring.apply()["partial_scoring"].startswith("disabled")
        with pytest.raises(RuntimeError, match="need partial scoring"):
            run_pipeline(model_dir, probe_config, tmp_path_factory.mktemp("out_guard"))
    finally:
        partial_scoring.restore()


def test_requests_render_the_one_shot_example_as_the_complete_sentence(runs):
    from lighteval.tasks.prompt_manager import PromptManager

    _, calls = runs["patched"]
    manager = PromptManager()
    rendered = {manager.prepare_prompt(request) + request.choices[0] for request in calls[0]}
    expected = set()
    for row in SCORED:
        contexts, rest, _ = expected_parts(row)
        expected |= {FEWSHOT_PREFIX + context + " " + rest for context in contexts}
    assert rendered == expected


def test_one_shot_prompt_of_the_task(probe_config):
    """LightevalTask's own 1-shot docs: the example reads as the full correct sentence, then context_i."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    task = LightevalTask(dataclasses.replace(probe_config, num_fewshots=1))
    docs = task.get_docs()
    manager = PromptManager()
    model = types.SimpleNamespace(prompt_manager=manager)
    requests, plan = partial_scoring.expand_requests(model, docs)
    by_query = {doc.query: (doc, entry) for doc, entry in zip(docs, plan, strict=True)}
    for row in SCORED:
        contexts, rest, gold = expected_parts(row)
        doc, entry = by_query[contexts[gold]]
        assert isinstance(entry, list), entry  # a partial-scoring doc: one request per context
        assert [fewshot.query + " " + fewshot.get_golds()[0].strip() for fewshot in doc.fewshot_samples] == [
            full_sentence(DEV_ROWS[0])
        ]
        assert manager.prepare_prompt(doc).split("\n\n") == [full_sentence(DEV_ROWS[0]), contexts[gold]]
        prompts = [manager.prepare_prompt(requests[index]) for index in entry]
        assert prompts == [FEWSHOT_PREFIX + context for context in contexts]
        assert [requests[index].choices for index in entry] == [[" " + rest]] * 2


# ------------------------------------------------------------------------------------------------ units


def test_prompt_function_on_rows(suite_configs):
    cf, mcf = suite_configs["winogrande_afr_eng_cf"], suite_configs["winogrande_afr_eng_mcf"]
    for row in SCORED:
        doc = cf.prompt_function(hub_row(row), cf.name)
        contexts, rest, gold = expected_parts(row)
        assert doc.specific == {partial_scoring.SPECIFIC_KEY: contexts}
        assert doc.query == contexts[gold] and doc.choices == [" " + rest] * 2 and doc.gold_index == [gold]
        assert doc.unconditioned_query is None
    blank_first = next(row for row in TEST_ROWS if row["qID"] == "t2")
    assert cf.prompt_function(hub_row(blank_first), cf.name).specific[partial_scoring.SPECIFIC_KEY] == [
        "Grace",
        "The strong man",
    ]
    attached = next(row for row in TEST_ROWS if row["qID"] == "t3")
    assert cf.prompt_function(hub_row(attached), cf.name).query.endswith("kodwa uNatalie")
    assert cf.prompt_function(hub_row(TEST_ROWS[-1]), cf.name) is None  # nothing after the blank
    mcf_doc = mcf.prompt_function(hub_row(blank_first), mcf.name)  # MCF: the sentence with its blank, lettered options
    assert mcf_doc is not None and "_ could not lift" in mcf_doc.query and mcf_doc.choices == [" A", " B"]
    assert [m.metric_name for m in cf.metrics] == list(METRIC_NAMES)
    assert [m.metric_name for m in mcf.metrics] == ["acc"]


def test_direct_model_call_mixes_partial_and_plain_documents(tiny_model, suite_configs):
    """Outside a pipeline (no cache), 0-shot: partial docs get partial scores, plain docs are untouched."""
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.tasks.requests import Doc

    cf = suite_configs["winogrande_afr_eng_cf"]
    partial_docs = [cf.prompt_function(hub_row(row), cf.name) for row in SCORED[:3]]
    plain = Doc(query="Question: Is water wet?\nAnswer:", choices=[" yes", " no way"], gold_index=0)
    docs = [partial_docs[0], plain, *partial_docs[1:]]
    for index, doc in enumerate(docs):
        doc.id, doc.task_name = str(index), "direct|0"
    scorer = Reference(tiny_model)
    config = TransformersModelConfig(model_name=str(tiny_model), device="cpu", batch_size=16, max_length=MAX_LENGTH)
    _patched()
    try:
        model = TransformersModel(config)
        model._cache = None  # type: ignore[assignment]  # declared SampleCache; lighteval's @cached skips a None
        responses = model.loglikelihood(docs)
    finally:
        partial_scoring.restore()
    assert len(responses) == len(docs)
    for row, response in zip(SCORED[:3], [responses[0], *responses[2:]], strict=True):
        expected = scorer.score(row, "")  # 0-shot: no instruction paragraph (the empty one was removed)
        np.testing.assert_allclose(response.logprobs, expected["raw"], rtol=TOL, atol=TOL)
        assert [len(tokens) for tokens in response.output_tokens] == expected["n_tokens"]
    expected_plain = [scorer.logprob(plain.query, choice) for choice in plain.choices]
    np.testing.assert_allclose(responses[1].logprobs, [value for value, _ in expected_plain], rtol=TOL, atol=TOL)
    assert [len(tokens) for tokens in responses[1].output_tokens] == [count for _, count in expected_plain]


def test_apply_restore_and_stacking_with_compat():
    from lighteval.models.transformers.transformers_model import TransformersModel
    from lighteval.pipeline import Pipeline

    partial_scoring.restore()
    compat.restore()
    stock = (TransformersModel.__dict__["loglikelihood"], Pipeline.__dict__["_run_model"])
    try:
        # compat first, then partial scoring (the order of finetasks_afr/tasks.py), applied twice.
        compat.apply()
        assert partial_scoring.apply() == partial_scoring.apply() == {"partial_scoring": "applied"}
        assert partial_scoring.applied()
        chain = partial_scoring._chain(TransformersModel.__dict__["loglikelihood"])
        assert chain[0] in partial_scoring._WRAPPERS  # ours, outermost
        assert compat._ORIGINALS[(TransformersModel, "loglikelihood")] is chain[2] is stock[0]  # compat's below
        # compat.restore() under us removes both wrappers; apply() puts ours back.
        compat.restore()
        assert not partial_scoring.applied()
        partial_scoring.apply()
        assert partial_scoring.applied()
        partial_scoring.restore()
        assert TransformersModel.__dict__["loglikelihood"] is stock[0]
        assert Pipeline.__dict__["_run_model"] is stock[1]
        # The other order: partial scoring first, compat on top; restoring ours leaves a pass-through.
        partial_scoring.apply()
        compat.apply()
        assert partial_scoring.applied()
        partial_scoring.restore()
        assert not partial_scoring.applied()
        compat.restore()
        assert TransformersModel.__dict__["loglikelihood"] is stock[0]
    finally:
        partial_scoring.restore()
        compat.restore()


def test_guards(monkeypatch):
    from lighteval.models.transformers.transformers_model import TransformersModel
    from lighteval.tasks.requests import Doc, SamplingMethod

    assert partial_scoring.version_is_supported("0.13.0")
    assert not partial_scoring.version_is_supported("0.14.0")
    assert partial_scoring.backend_scores_query_then_choices()
    doc = Doc(query="A", choices=[" x", " x"], gold_index=0, specific={partial_scoring.SPECIFIC_KEY: ["A", "B"]})
    doc.task_name = "probe|0"

    class Subclass(TransformersModel):
        pass

    class OtherBackend:
        def loglikelihood(self, docs):
            raise AssertionError("not reached")

    def pipeline(model):
        return types.SimpleNamespace(sampling_docs={SamplingMethod.LOGPROBS: [doc]}, model=model)

    partial_scoring.restore()
    try:
        _patched()
        partial_scoring.check_pipeline(pipeline(object.__new__(Subclass)))  # inherits the wrapper: fine
        with pytest.raises(RuntimeError, match="need partial scoring"):
            partial_scoring.check_pipeline(pipeline(OtherBackend()))
        partial_scoring.restore()
        monkeypatch.setenv(partial_scoring.ENV_SWITCH, "off")
        assert partial_scoring.apply()["partial_scoring"].startswith("disabled")
        with pytest.raises(RuntimeError, match="need partial scoring"):
            partial_scoring.check_pipeline(pipeline(object.__new__(Subclass)))
        partial_scoring.restore()
        monkeypatch.delenv(partial_scoring.ENV_SWITCH)
        monkeypatch.setattr(compat, "lighteval_version", lambda: "0.14.0")
        assert partial_scoring.apply()["partial_scoring"].startswith("skipped")
        assert not partial_scoring.applied()
    finally:
        partial_scoring.restore()
        compat.restore()
