"""Proof that finetasks_afr.scoring.compat fixes lighteval 0.13's acc_norm_token and acc_norm_pmi (issues 1170, 997).

A tiny Llama (finetasks_afr.demo.tiny) scores hand-made multiple-choice documents through lighteval's real machinery:
a custom task, `Pipeline` with the Python API, `TransformersModel` from a `TransformersModelConfig`, and the
metrics `LogLikelihoodAccMetric` with no normalisation, `LogProbCharNorm`, `LogProbTokenNorm`, `LogProbPMINorm`.
An independent reference recomputes every choice's log-probability with a plain forward pass per sequence
(sum of log-softmax of the continuation tokens given the context), normalises it by hand
(characters of the choice as written, leading space included, which is lighteval's LogProbCharNorm default;
the choice's own token count; minus log P(choice | unconditioned_query)), and must agree with what lighteval
reports after `compat.apply()` (per choice and per document, to 1e-5). With `compat.restore()` the stock
behaviour must show both bugs, so this test fails if the fix silently stops being applied.

The built-in task registry is replaced by the custom task alone (offline, lighteval's built-in registry imports
`tiny_benchmarks.py`, which downloads a file at import, and it costs ~10 s).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import types
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from bench.probe_tasks import probe_task_module  # noqa: E402
from finetasks_afr.demo.tiny import make_tiny_causal_lm  # noqa: E402
from finetasks_afr.scoring import compat  # noqa: E402
from finetasks_afr.scoring.core import weights_dtype  # noqa: E402
from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only  # noqa: E402
from tests.local_dataset import write_local_dataset  # noqa: E402

if TYPE_CHECKING:
    from lighteval.logging.info_loggers import DetailsLogger
    from lighteval.pipeline import Pipeline
    from lighteval.tasks.requests import Doc

pytestmark = pytest.mark.slow

TASK = "compat_probe"
TASK_KEY = f"{TASK}|0"
METRIC_NAMES = ("acc", "acc_norm", "acc_norm_token", "acc_norm_pmi")
BATCH_SIZE = 48  # continuations; lighteval turns it into max(1, round(48 // 5 / 8) * 8) = 8 documents per batch
MAX_LENGTH = 256
TOL = 1e-5

LETTERS = [" A", " B", " C", " D"]
DOCS: list[dict[str, Any]] = [
    # Cloze (CF) style, choices of very different lengths, shared "Answer:".
    {
        "query": "Question: What is the capital of Kenya?\nAnswer:",
        "choices": [" Nairobi", " Mombasa on the coast", " Kisumu", " Nakuru town in the Rift Valley"],
        "gold": 0,
        "uq": "Answer:",
    },
    {
        "query": "Question: Which animal is the largest?\nAnswer:",
        "choices": [" The elephant", " A cat", " The blue whale of the deep ocean", " Ant"],
        "gold": 2,
        "uq": "Answer:",
    },
    {
        "query": "Ìbéèrè: Kí ni olú ìlú Nàìjíríà?\nÌdáhùn:",
        "choices": [" Àbújá", " Èkó", " Ìbàdàn ìlú ńlá", " Kánò"],
        "gold": 0,
        "uq": "Ìdáhùn:",
    },
    {
        "query": "Swali: Mji mkuu wa Tanzania ni upi?\nJibu:",
        "choices": [" Dodoma", " Dar es Salaam", " Arusha"],
        "gold": 0,
        "uq": "Jibu:",
    },
    {
        "query": "Question: Is water wet?\nAnswer:",
        "choices": [" yes", " no"],
        "gold": 0,
        "uq": "Answer:",
    },
    {
        "query": "Question: Pick the longest river.\nAnswer:",
        "choices": [" Nile", " Congo", " Niger", " Zambezi", " Limpopo river"],
        "gold": 0,
        "uq": "Answer:",
    },
]
# Letter (MCF) style: every choice is 2 tokens, fewer than the 4 choices, which used to IndexError.
MCF = [
    ("What is 2 + 2?", ["3", "4", "5", "22"], 1),
    ("Which is a colour?", ["Red", "Table", "Run", "Seven"], 0),
    ("Which language is spoken in Lagos?", ["Zulu", "Amharic", "Yoruba", "Somali"], 2),
    ("Which is a fruit?", ["Stone", "Mango", "Chair", "River"], 1),
    ("Which number is even?", ["7", "9", "11", "12"], 3),
    ("Which planet do we live on?", ["Mars", "Earth", "Venus", "Jupiter"], 1),
]
DOCS += [
    {
        "query": "Question: "
        + question
        + "\n"
        + "\n".join(f"{letter.strip()}. {option}" for letter, option in zip(LETTERS, options, strict=True))
        + "\nAnswer:",
        "choices": LETTERS,
        "gold": gold,
        "uq": "Answer:",
    }
    for question, options, gold in MCF
]

CORPUS = [doc["query"] + doc["choices"][doc["gold"]] for doc in DOCS] + [
    "The quick brown fox jumps over the lazy dog.",
    "Nairobi is the capital of Kenya. Dodoma is the capital of Tanzania. Abuja is the capital of Nigeria.",
    "Mji mkuu wa Kenya ni Nairobi. Jibu: A. Jibu: B. Jibu: C. Jibu: D.",
    "Olú ìlú Nàìjíríà ni Àbújá. Èkó jẹ́ ìlú ńlá. Ìdáhùn: A.",
    "Answer: A. Answer: B. Answer: C. Answer: D. The blue whale is the largest animal.",
]


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module", autouse=True)
def _leave_compat_as_found():
    """These tests apply and restore the fixes; other modules (importing finetasks_afr.tasks) expect them on."""
    was_applied = compat.applied()
    yield
    compat.restore()
    if was_applied:
        compat.apply()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_causal_lm(
        tmp_path_factory.mktemp("tiny") / "model",
        CORPUS,
        vocab_size=320,
        hidden_size=32,
        layers=2,
        heads=2,
        max_position_embeddings=MAX_LENGTH,
        seed=0,
        train_steps=40,
        train_seq_len=48,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_local_dataset(tmp_path_factory.mktemp("probe"), "compat_probe", {"test": DOCS})


def _task_module(data_dir: Path, metric_names: tuple[str, ...] = METRIC_NAMES) -> types.ModuleType:
    return probe_task_module(data_dir, TASK, metric_names, "compat_probe_tasks")


def run_pipeline(
    model_dir: Path, data_dir: Path, out_dir: Path, metric_names: tuple[str, ...] = METRIC_NAMES
) -> tuple[Pipeline, list[list[Doc]]]:
    """Evaluate the probe task through lighteval's Pipeline; returns (pipeline, calls to _loglikelihood_tokens)."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    module = _task_module(data_dir, metric_names)
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
                model_name=str(model_dir), device="cpu", batch_size=BATCH_SIZE, max_length=MAX_LENGTH
            ),
        )
        pipeline.evaluate()
    return pipeline, calls


def _copy_model(model_dir: Path, name: str) -> Path:
    """A fresh copy: lighteval caches predictions inside an absolute model_name's directory."""
    target = model_dir.parent / name
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("[0-9a-f]" * 16))
    return target


# ------------------------------------------------------------------------------------------------ reference


class Reference:
    """Independent scorer: one plain forward pass per (context, continuation), no lighteval code."""

    def __init__(self, model_dir: Path):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, **weights_dtype(torch.float32)).eval()

    def encode(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        # The convention of lighteval's scoring: trailing spaces of the context belong to the continuation,
        # the context gets the tokenizer's special tokens (<s>), the continuation none.
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        context_ids = self.tokenizer(context, add_special_tokens=True)["input_ids"]
        if context_ids and context_ids[-1] == self.tokenizer.eos_token_id:
            context_ids = context_ids[:-1]
        return context_ids, self.tokenizer(continuation, add_special_tokens=False)["input_ids"]

    def logprob(self, context: str, continuation: str) -> tuple[float, int]:
        context_ids, continuation_ids = self.encode(context, continuation)
        ids = torch.tensor([context_ids + continuation_ids])
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0].double()
        logprobs = torch.log_softmax(logits, dim=-1)
        positions = range(len(context_ids) - 1, len(context_ids) + len(continuation_ids) - 1)
        total = sum(float(logprobs[p, t]) for p, t in zip(positions, continuation_ids, strict=True))
        return total, len(continuation_ids)

    def score(self, doc: dict) -> dict:
        raw, n_tokens, unconditioned = [], [], []
        for choice in doc["choices"]:
            value, count = self.logprob(doc["query"], choice)
            raw.append(value)
            n_tokens.append(count)
            unconditioned.append(self.logprob(doc["uq"], choice)[0])
        normalised = {
            "acc": raw,
            "acc_norm": [value / len(choice) for value, choice in zip(raw, doc["choices"], strict=True)],
            "acc_norm_token": [value / count for value, count in zip(raw, n_tokens, strict=True)],
            "acc_norm_pmi": [value - base for value, base in zip(raw, unconditioned, strict=True)],
        }
        return {
            "raw": raw,
            "n_tokens": n_tokens,
            "unconditioned": unconditioned,
            "normalised": normalised,
            "pred": {name: int(np.argmax(values)) for name, values in normalised.items()},
            "acc": {name: float(int(np.argmax(values)) == doc["gold"]) for name, values in normalised.items()},
        }


@pytest.fixture(scope="module")
def reference(tiny_model: Path) -> dict[str, dict]:
    scorer = Reference(tiny_model)
    return {doc["query"]: scorer.score(doc) for doc in DOCS}


def _details(pipeline: Pipeline) -> dict[str, DetailsLogger.Detail]:
    return {detail.doc.query: detail for detail in pipeline.get_details()[TASK_KEY]}


def _distinct_unconditioned() -> set[tuple[str, str]]:
    return {(doc["uq"], choice) for doc in DOCS for choice in doc["choices"]}


# ------------------------------------------------------------------------------------------------ the proof


@pytest.fixture(scope="module")
def fixed_run(tiny_model, data_dir, tmp_path_factory):
    compat.restore()
    status = compat.apply()
    compat.reset_stats()
    try:
        pipeline, calls = run_pipeline(
            _copy_model(tiny_model, "model_fixed"), data_dir, tmp_path_factory.mktemp("out_fixed")
        )
    finally:
        stats = dataclasses.replace(compat.STATS)
        compat.restore()
    return status, pipeline, calls, stats


ALL_FIXES = {
    "acc_norm_token": "applied",
    "acc_norm_pmi": "applied",
    "loglikelihood_rolling": "applied",
    "stderr_bootstrap_pool": "applied",
    "fewshot_limit": "applied",  # issue 26: tests/tasks/test_zero_shot_only.py
    "option_case": "applied",  # issue 26: tests/scoring/test_option_case.py
    "local_model_cache": "applied",  # issue 40: tests/scoring/test_cache_location.py
}


def test_apply_reports_every_fix(fixed_run):
    status, *_ = fixed_run
    assert status == ALL_FIXES


def test_apply_is_idempotent_and_restore_puts_originals_back():
    from lighteval.metrics.metrics_sample import LoglikelihoodAcc
    from lighteval.models.transformers.transformers_model import TransformersModel
    from lighteval.pipeline import Pipeline

    compat.restore()
    originals = (TransformersModel.loglikelihood, Pipeline._run_model, LoglikelihoodAcc.compute)
    try:
        compat.apply()
        patched = (TransformersModel.loglikelihood, Pipeline._run_model, LoglikelihoodAcc.compute)
        assert compat.apply() == ALL_FIXES
        assert (TransformersModel.loglikelihood, Pipeline._run_model, LoglikelihoodAcc.compute) == patched
        assert all(
            getattr(function, "__wrapped__", None) is original
            for function, original in zip(patched, originals, strict=True)
        )
        assert compat.applied() == set(ALL_FIXES)
    finally:
        compat.restore()
    assert (TransformersModel.loglikelihood, Pipeline._run_model, LoglikelihoodAcc.compute) == originals
    assert compat.applied() == frozenset()


def test_version_guard(monkeypatch):
    assert compat.version_is_affected("0.13.0")
    assert compat.version_is_affected("0.13.2")
    assert not compat.version_is_affected("0.14.0")
    assert not compat.version_is_affected("0.12.1")
    assert not compat.version_is_affected(None)
    monkeypatch.setattr(compat, "lighteval_version", lambda: "0.14.0")
    compat.restore()
    status = compat.apply()
    assert all(outcome.startswith("skipped") for outcome in status.values())
    assert compat.applied() == frozenset()
    monkeypatch.setenv(compat.ENV_SWITCH, "off")
    assert all(outcome.startswith("disabled") for outcome in compat.apply().values())
    compat.restore()


def test_bug_checks_see_the_installed_lighteval():
    version = compat.lighteval_version()
    assert version is not None and version.startswith("0.13.")
    assert compat.token_norm_bug_present()
    assert compat.pmi_backend_bug_present()
    assert compat.pmi_metric_bug_present()
    assert compat.rolling_bug_present()
    assert compat.bootstrap_pool_present()
    assert compat.zero_shot_sampler_bug_present()
    assert compat.option_case_bug_present()


def weighted_perplexity(items):
    """A corpus metric like lighteval's perplexities (module level: the stock pool pickles it)."""
    import math

    return math.exp(-sum(lp for lp, _ in items) / sum(w for _, w in items))


def test_in_process_bootstrap_gives_lighteval_s_exact_stderr():
    """Fix 4 only moves the work: the same seeded draws, so the same replicates and stderr as the stock pool."""
    from lighteval.metrics.utils.stderr import _bootstrap_internal, bootstrap_stderr

    population = [(-float(i % 7) - 0.5, 3 + i % 5) for i in range(60)]  # (sum logprob, weight) like perplexities
    compat.restore()
    try:
        stock_draws = _bootstrap_internal(number_draws=50, metric=weighted_perplexity)((population, 0))
        stock = bootstrap_stderr(weighted_perplexity, population, number_experiments=200)
        assert compat.apply()["stderr_bootstrap_pool"] == "applied"
        fixed_draws = _bootstrap_internal(number_draws=50, metric=weighted_perplexity)((population, 0))
        fixed = bootstrap_stderr(weighted_perplexity, population, number_experiments=200)
    finally:
        compat.restore()
    assert fixed_draws == stock_draws
    assert fixed == stock > 0


def test_fixed_scores_equal_the_reference(fixed_run, reference):
    from lighteval.metrics.normalizations import (
        LogProbCharNorm,
        LogProbPMINorm,
        LogProbTokenNorm,
        normalize_log_probs,
    )

    _, pipeline, _, _ = fixed_run
    details = _details(pipeline)
    assert len(details) == len(DOCS)
    normalisations: dict[str, LogProbCharNorm | LogProbTokenNorm | LogProbPMINorm] = {
        "acc_norm": LogProbCharNorm(),
        "acc_norm_token": LogProbTokenNorm(),
        "acc_norm_pmi": LogProbPMINorm(),
    }
    for doc in DOCS:
        detail, expected = details[doc["query"]], reference[doc["query"]]
        response = detail.model_response
        np.testing.assert_allclose(response.logprobs, expected["raw"], rtol=TOL, atol=TOL)
        assert [len(tokens) for tokens in response.output_tokens] == expected["n_tokens"]
        assert all(token >= 0 for tokens in response.output_tokens for token in tokens)
        assert response.unconditioned_logprobs is not None
        np.testing.assert_allclose(response.unconditioned_logprobs, expected["unconditioned"], rtol=TOL, atol=TOL)
        for name, normalisation in normalisations.items():
            ours = normalize_log_probs(
                normalisation,
                response.logprobs,
                response.unconditioned_logprobs,
                doc["choices"],
                response.output_tokens,
            )
            np.testing.assert_allclose(ours, expected["normalised"][name], rtol=TOL, atol=TOL, err_msg=name)
        for name in METRIC_NAMES:
            assert detail.metric[name] == pytest.approx(expected["acc"][name], abs=TOL), (doc["query"], name)

    results = pipeline.get_results()["results"][f"{TASK}:0"]  # get_results() spells it task:fewshot
    for name in METRIC_NAMES:
        expected_mean = np.mean([reference[doc["query"]]["acc"][name] for doc in DOCS])
        assert results[name] == pytest.approx(expected_mean, abs=TOL), name


def test_the_probe_discriminates(reference):
    """The documents are such that each normalisation changes some prediction (else the test proves little)."""
    preds = {name: [reference[doc["query"]]["pred"][name] for doc in DOCS] for name in METRIC_NAMES}
    assert preds["acc_norm_token"] != preds["acc"]
    assert preds["acc_norm_pmi"] != preds["acc"]
    assert preds["acc_norm"] != preds["acc_norm_token"]
    n_tokens = [reference[doc["query"]]["n_tokens"] for doc in DOCS]
    assert any(max(counts) < len(counts) for counts in n_tokens)  # the old IndexError case is in the set
    assert any(len(set(counts)) > 1 for counts in n_tokens)


def test_pmi_unconditioned_scored_once_per_distinct_pair(fixed_run):
    _, _, calls, stats = fixed_run
    distinct = _distinct_unconditioned()
    # Call 1: the documents themselves; call 2: the unconditioned requests, deduplicated.
    assert len(calls) == 2
    assert sorted(doc.query for doc in calls[0]) == sorted(doc["query"] for doc in DOCS)
    scored = Counter((doc.query, choice) for doc in calls[1] for choice in doc.choices)
    assert set(scored) == distinct and set(scored.values()) == {1}
    assert stats.continuations_scored == len(distinct)
    assert stats.continuations_needed == sum(len(doc["choices"]) for doc in DOCS)
    assert stats.docs == len(DOCS)
    # The 6 MCF documents share "Answer:" + " A".." D": 4 continuations instead of 24.
    mcf_pairs = {("Answer:", letter) for letter in LETTERS}
    assert mcf_pairs <= set(scored)


# ------------------------------------------------------------------------------------------------ bugs are real


@pytest.fixture(scope="module")
def stock_run(tiny_model, data_dir, tmp_path_factory):
    """lighteval as released. With acc alone the run completes; with the four metrics it aborts."""
    compat.restore()
    model_dir = _copy_model(tiny_model, "model_stock")
    pipeline, _ = run_pipeline(model_dir, data_dir, tmp_path_factory.mktemp("out_stock"), metric_names=("acc",))
    with pytest.raises((IndexError, AssertionError)) as aborted:
        run_pipeline(model_dir, data_dir, tmp_path_factory.mktemp("out_stock_all"))
    return model_dir, pipeline, aborted.value


def test_without_fix_the_full_stock_run_aborts(stock_run):
    *_, error = stock_run
    assert isinstance(error, IndexError | AssertionError)


def test_without_fix_token_norm_equals_acc_or_raises(stock_run, reference):
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
    from lighteval.metrics.normalizations import LogProbTokenNorm

    _, pipeline, _ = stock_run
    details = _details(pipeline)
    token_norm = LogLikelihoodAccMetric(normalization=LogProbTokenNorm())
    equal = raised = 0
    stock, expected = [], []
    for doc in DOCS:
        detail = details[doc["query"]]
        response = detail.model_response
        counts = reference[doc["query"]]["n_tokens"]
        if max(counts) < len(counts):  # rows dropped by [:num_choices][:len_choice]
            assert len(response.output_tokens) == max(counts) < len(doc["choices"])
            with pytest.raises(IndexError):
                token_norm.compute_sample(doc=detail.doc, model_response=response)
            raised += 1
        else:  # every row padded with -1 to the longest choice OF THE BATCH: all choices get the same divisor
            assert len(response.output_tokens) == len(doc["choices"])
            assert len({len(tokens) for tokens in response.output_tokens}) == 1
            assert len(response.output_tokens[0]) >= max(counts)
            value = token_norm.compute_sample(doc=detail.doc, model_response=response)["acc_norm_token"]
            assert value == detail.metric["acc"]
            equal += 1
            stock.append(value)
            expected.append(reference[doc["query"]]["acc"]["acc_norm_token"])
    assert raised == len(MCF)
    assert equal == len(DOCS) - len(MCF)
    assert stock != expected  # and that is wrong on these documents


def test_without_fix_pmi_raises(stock_run):
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
    from lighteval.metrics.normalizations import LogProbPMINorm

    _, pipeline, _ = stock_run
    pmi = LogLikelihoodAccMetric(normalization=LogProbPMINorm())
    for detail in _details(pipeline).values():
        assert detail.model_response.unconditioned_logprobs is None
        with pytest.raises(AssertionError, match="unconditioned_logprob must be provided"):
            pmi.compute_sample(doc=detail.doc, model_response=detail.model_response)


def test_fix_repairs_responses_read_from_a_stale_cache(stock_run, data_dir, reference, tmp_path_factory):
    """The aborted stock run left its (buggy) predictions in lighteval's cache; the fix sits outside the cache."""
    from unittest import mock

    from lighteval.utils.cache_management import SampleCache

    model_dir, _, _ = stock_run
    compat.restore()
    stock_location = SampleCache.__init__
    compat.apply()
    try:  # fix 7 moves the cache of a local model; to read the stock run's back, this run keeps lighteval's place
        with mock.patch.object(SampleCache, "__init__", stock_location):
            pipeline, calls = run_pipeline(model_dir, data_dir, tmp_path_factory.mktemp("out_cached"))
    finally:
        compat.restore()
    assert len(calls) == 1  # only the unconditioned requests: the documents came from the cache
    details = _details(pipeline)
    for doc in DOCS:
        detail, expected = details[doc["query"]], reference[doc["query"]]
        assert [len(tokens) for tokens in detail.model_response.output_tokens] == expected["n_tokens"]
        for name in METRIC_NAMES:
            assert detail.metric[name] == pytest.approx(expected["acc"][name], abs=TOL), (doc["query"], name)


def test_no_unconditioned_requests_for_tasks_without_a_pmi_metric(tiny_model, data_dir, reference, tmp_path_factory):
    compat.restore()
    compat.apply()
    try:
        pipeline, calls = run_pipeline(
            _copy_model(tiny_model, "model_no_pmi"),
            data_dir,
            tmp_path_factory.mktemp("out_no_pmi"),
            metric_names=("acc", "acc_norm_token"),
        )
    finally:
        compat.restore()
    assert len(calls) == 1
    details = _details(pipeline)
    for doc in DOCS:
        detail = details[doc["query"]]
        assert detail.model_response.unconditioned_logprobs is None
        assert detail.metric["acc_norm_token"] == reference[doc["query"]]["acc"]["acc_norm_token"]


def test_pmi_metric_adapter_touches_only_pmi_normalisation():
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric, NormalizedMultiChoiceProbMetric
    from lighteval.metrics.metrics_sample import MRR, Recall
    from lighteval.metrics.normalizations import LogProbPMINorm, LogProbTokenNorm
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    doc = Doc(query="q", choices=[" a", " b", " c"], gold_index=2)
    response = ModelResponse(
        logprobs=[-1.0, -2.0, -3.0], output_tokens=[[1], [2], [3, 4]], unconditioned_logprobs=[-0.5, -1.0, -5.0]
    )
    pmi = [-0.5, -1.0, 2.0]
    compat.restore()
    compat.apply()
    try:
        assert LogLikelihoodAccMetric(LogProbPMINorm()).compute_sample(doc=doc, model_response=response) == {
            "acc_norm_pmi": 1
        }
        assert LogLikelihoodAccMetric().compute_sample(doc=doc, model_response=response) == {"acc": 0}
        assert LogLikelihoodAccMetric(LogProbTokenNorm()).compute_sample(doc=doc, model_response=response) == {
            "acc_norm_token": 0
        }
        prob = NormalizedMultiChoiceProbMetric(LogProbPMINorm()).compute_sample(doc=doc, model_response=response)
        assert prob["normalized_mc_prob_norm_pmi"] == pytest.approx(np.exp(pmi[2]) / np.exp(pmi).sum())
        assert Recall(k=1).compute(doc=doc, model_response=response) == 0
        assert MRR().compute(doc=doc, model_response=response) == pytest.approx(1 / 3)
        assert response.logprobs == [-1.0, -2.0, -3.0]  # never extended in place
    finally:
        compat.restore()


def test_direct_model_call_scores_every_unconditioned_query(tiny_model):
    """Outside a Pipeline (no task scope): every doc with an unconditioned_query, the empty one included."""
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.tasks.requests import Doc

    scorer = Reference(tiny_model)
    specs = [
        ("Question: Is the sky blue?\nAnswer:", [" yes", " no", " maybe not"], ""),
        ("Swali: Maji ni mvua?\nJibu:", [" ndiyo", " hapana"], "Jibu:"),
        ("Question: Name a river. Answer: ", ["Nile", "Congo river"], None),  # trailing space moves to the choice
    ]
    docs = [
        Doc(query=query, choices=choices, gold_index=0, unconditioned_query=uq, task_name="direct|0")
        for query, choices, uq in specs
    ]
    config = TransformersModelConfig(model_name=str(tiny_model), device="cpu", batch_size=16, max_length=MAX_LENGTH)
    compat.restore()
    compat.apply()
    try:
        model = TransformersModel(config)
        # no prediction cache outside a pipeline (it needs the task registry); lighteval's @cached skips a None
        model._cache = None  # type: ignore[assignment]  # declared SampleCache
        responses = model.loglikelihood(docs)
    finally:
        compat.restore()
    for (query, choices, uq), response in zip(specs, responses, strict=True):
        expected = [scorer.logprob(query, choice) for choice in choices]
        np.testing.assert_allclose(response.logprobs, [value for value, _ in expected], rtol=TOL, atol=TOL)
        assert [len(tokens) for tokens in response.output_tokens] == [count for _, count in expected]
        if uq is None:
            assert response.unconditioned_logprobs is None
        else:
            unconditioned = [scorer.logprob(uq, choice)[0] for choice in choices]
            np.testing.assert_allclose(response.unconditioned_logprobs, unconditioned, rtol=TOL, atol=TOL)
