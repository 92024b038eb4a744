"""The finetasks engine (`finetasks_afr.scoring.engine.SharedPrefixModel`) against lighteval's own transformers path.

On real rows of ../shared/data (a mirror built by `import_raw`), one task per formulation: CF with PMI and a
few-shot example, MCF (letters: single-token continuations), hybrid, Winogrande partial scoring, Belebele MCF with
passages longer than `max_length` (the truncation fallback), the flores_ppl perplexity task (rolling windows: the
texts are longer than `max_length`) and a generative task. Both models evaluate the same Pipeline; every
per-choice log-probability (and PMI's unconditioned ones) must agree to 1e-5 relative in float32, the greedy flags
and continuation tokens must be equal, generations identical, and every metric in the results identical.

"lighteval's path" is `TransformersModel` with the project's run-time fixes (`finetasks_afr.scoring.compat`, applied on
import of the task module): the fixes never change a multiple-choice log-probability (they add PMI's unconditioned
scores and repair token lists), so these log-probabilities are stock lighteval's `_loglikelihood_tokens` values;
for PMI and perplexity stock lighteval has no correct value to compare with (tests/scoring/test_compat_metrics.py,
tests/benchmarks/test_perplexity_tasks.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest

if TYPE_CHECKING:
    from lighteval.models.abstract_model import LightevalModel
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import Pipeline

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

PROJECT = Path(__file__).resolve().parents[2]
TASKS_MODULE = str(PROJECT / "finetasks_afr" / "tasks.py")
MAX_LENGTH = 192  # below the longest Belebele prompts and flores texts: truncation and windows are exercised
MAX_SAMPLES = 6
TASKS = {
    "sib200_yor_cf|1": "CF + PMI, one few-shot example",
    "sib200_zul_mcf_enprompt|0": "MCF letters",
    "afrisenti_hau_hybrid|0": "hybrid",
    "winogrande_afr_zul_cf|0": "partial scoring",
    "belebele_zul_mcf|1": "MCF over passages, contexts longer than max_length",
    "masakhanews_yor_cf|0": "CF + PMI, long choices",
    "flores_ppl_yor|0": "perplexity: rolling windows",
    "afriqa_hau|0": "generative",
}
REL = 1e-5

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]


@pytest.fixture(scope="module")
def setup(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("engine")
    mirror = root / "mirror"
    import_raw(
        shared_data,
        mirror,
        datasets=["sib200", "belebele", "winogrande_afr", "afriqa", "afrisenti", "masakhanews"],
        configs=["yor_Latn", "zul_Latn", "winogrande_zu", "hau", "yor"],
    )
    corpus = [line.strip() for line in (shared_data / "sib200" / "yor_Latn" / "train.tsv").open(encoding="utf-8")]
    model = make_tiny_causal_lm(root / "model", corpus[:300], seed=1)
    return mirror, model


def _run(model: LightevalModel, tasks: str, out: Path) -> Pipeline:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only

    tracker = EvaluationTracker(output_dir=str(out), save_details=True)
    with custom_tasks_only():
        pipeline = Pipeline(
            tasks=tasks,
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                custom_tasks_directory=TASKS_MODULE,
                max_samples=MAX_SAMPLES,
            ),
            evaluation_tracker=tracker,
            model=model,
        )
        pipeline.model._cache = None
        pipeline.evaluate()
    return pipeline


def _config(model_dir: Path) -> TransformersModelConfig:
    from lighteval.models.model_input import GenerationParameters
    from lighteval.models.transformers.transformers_model import TransformersModelConfig

    return TransformersModelConfig(
        model_name=str(model_dir), device="cpu", batch_size=16, max_length=MAX_LENGTH, dtype="float32",
        generation_parameters=GenerationParameters(max_new_tokens=8),
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(setup, tmp_path_factory):
    from lighteval.models.transformers.transformers_model import TransformersModel

    from finetasks_afr.scoring import core as scoring
    from finetasks_afr.scoring.engine import SharedPrefixModel

    mirror, model_dir = setup
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    try:
        stock = _run(TransformersModel(_config(model_dir)), ",".join(TASKS), tmp_path_factory.mktemp("lighteval"))
        scoring.reset_stats()
        ours = _run(SharedPrefixModel(_config(model_dir)), ",".join(TASKS), tmp_path_factory.mktemp("finetasks"))
        stats = dict(vars(scoring.STATS))
    finally:
        mp.undo()
    return stock, ours, stats


def test_every_formulation_is_evaluated(runs):
    stock, ours, _ = runs
    for pipeline in (stock, ours):
        details = pipeline.get_details()
        assert {key.replace(":", "|") for key in details} >= set(TASKS), sorted(details)
        assert all(len(items) == MAX_SAMPLES for items in details.values())


def test_per_choice_logprobs_equal_lighteval(runs):
    stock, ours, _ = runs
    theirs, mine = stock.get_details(), ours.get_details()
    compared = 0
    for task, items in theirs.items():
        for expected, got in zip(items, mine[task], strict=True):
            assert expected.doc.query == got.doc.query
            a, b = expected.model_response, got.model_response
            if not a.logprobs:  # generative: untouched, the same greedy text
                assert a.text == b.text, task
                continue
            np.testing.assert_allclose(b.logprobs, a.logprobs, rtol=REL, err_msg=task)
            assert list(b.argmax_logits_eq_gold) == list(a.argmax_logits_eq_gold), task
            assert [list(map(int, t)) for t in b.output_tokens] == [list(map(int, t)) for t in a.output_tokens], task
            if a.unconditioned_logprobs is not None:
                np.testing.assert_allclose(b.unconditioned_logprobs, a.unconditioned_logprobs, rtol=REL, err_msg=task)
            compared += len(a.logprobs)
    assert compared > 150


def test_scores_are_identical(runs):
    stock, ours, _ = runs
    theirs, mine = stock.get_results()["results"], ours.get_results()["results"]
    assert set(theirs) == set(mine)
    for task, metrics in theirs.items():
        for metric, value in metrics.items():
            if metric.endswith("_stderr"):
                assert mine[task][metric] == pytest.approx(value, rel=1e-6, abs=1e-12), (task, metric)
            elif "perplexity" in metric or "bits_per_byte" in metric:
                assert mine[task][metric] == pytest.approx(value, rel=1e-6), (task, metric)
            else:
                assert mine[task][metric] == value, (task, metric)


def test_prefix_sharing_and_the_fallback_were_exercised(runs):
    _, _, stats = runs
    assert stats["shared_contexts"] > 0 and stats["continuations"] > stats["shared_contexts"]
    assert stats["fallback_rows"] > 0  # Belebele prompts longer than MAX_LENGTH: scored as lighteval scores them


def test_tokenisation_is_reused_only_for_a_byte_identical_tokenizer(setup, tmp_path):
    from finetasks_afr.scoring import engine

    _, model_dir = setup
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    first = engine.SharedPrefixModel(_config(model_dir))
    second = engine.SharedPrefixModel(_config(copy))
    assert first.tokenizer_digest == second.tokenizer_digest
    first.tok_encode_pair("Ìbéèrè: kí ni?", [" A", " B"], pairwise=True)
    misses = second.tokenisation_misses
    assert second.tok_encode_pair("Ìbéèrè: kí ni?", [" A", " B"], pairwise=True) == first.tok_encode_pair(
        "Ìbéèrè: kí ni?", [" A", " B"], pairwise=True
    )
    assert second.tokenisation_misses == misses  # served from the memo built with the first checkpoint
    config = json.loads((copy / "tokenizer_config.json").read_text())
    config["model_max_length"] = 12345
    (copy / "tokenizer_config.json").write_text(json.dumps(config))
    third = engine.SharedPrefixModel(_config(copy))
    assert third.tokenizer_digest != first.tokenizer_digest
    third.tok_encode_pair("Ìbéèrè: kí ni?", [" A", " B"], pairwise=True)
    assert third.tokenisation_misses == 1  # a different tokenizer file: tokenised again


def _logprob_docs(pipeline: Pipeline) -> list:
    from lighteval.tasks.requests import SamplingMethod

    return [doc for doc in pipeline.sampling_docs[SamplingMethod.LOGPROBS] if doc.choices]


def test_batched_tokenisation_equals_tok_encode_pair_on_every_request(setup, runs):
    """The first checkpoint's requests are tokenised in two batched calls (`_prefetch_pairs`); each must be what
    lighteval's own `tok_encode_pair(..., pairwise=True)` gives, text by text."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    from finetasks_afr.scoring import engine

    _, ours, _ = runs
    _, model_dir = setup
    model = engine.SharedPrefixModel(_config(model_dir))
    docs = _logprob_docs(ours)
    prompts = [model.prompt_manager.prepare_prompt(doc) for doc in docs]
    engine._TOKENISATIONS.pop(model.tokenizer_digest, None)  # the runs above memoised them one way or the other
    model._prefetch_pairs(prompts, docs)
    assert model.tokenisation_prefetched == len({(p, tuple(d.choices)) for p, d in zip(prompts, docs, strict=True)})
    memo = engine.tokenisation_memo(model.tokenizer_digest)
    for prompt, doc in zip(prompts, docs, strict=True):
        contexts, continuations = memo[(model.add_special_tokens, prompt, tuple(doc.choices), True)]
        expected = TransformersModel.tok_encode_pair(model, prompt, list(doc.choices), pairwise=True)
        assert [list(c) for c in contexts] == [list(c) for c in expected[0]], doc.task_name
        assert [list(c) for c in continuations] == [list(c) for c in expected[1]], doc.task_name


def test_batched_tokenisation_steps_aside_when_it_would_differ(setup, runs, monkeypatch, caplog):
    from lighteval.models.transformers.transformers_model import TransformersModel

    from finetasks_afr.scoring import engine

    _, ours, _ = runs
    _, model_dir = setup
    model = engine.SharedPrefixModel(_config(model_dir))
    docs = _logprob_docs(ours)
    prompts = [model.prompt_manager.prepare_prompt(doc) for doc in docs]
    engine._TOKENISATIONS.pop(model.tokenizer_digest, None)
    original = TransformersModel.tok_encode_pair

    def shifted(self, context, continuations, pairwise=False):  # a lighteval that tokenises otherwise
        contexts, encoded = original(self, context, continuations, pairwise=pairwise)
        return [[*c, 0] for c in contexts], encoded

    monkeypatch.setattr(TransformersModel, "tok_encode_pair", shifted)
    model._prefetch_pairs(prompts, docs)
    assert model.tokenisation_prefetched == 0 and model._batched_pairs is False
    assert not engine.tokenisation_memo(model.tokenizer_digest)
    assert "batched tokenisation differs" in caplog.text
    contexts, _ = model.tok_encode_pair(prompts[0], list(docs[0].choices), pairwise=True)
    assert contexts[0][-1] == 0  # one by one, through the (patched) lighteval method


def test_lighteval_custom_cli_runs_the_engine(setup, tmp_path):
    """lighteval's own `custom` launcher loads `finetasks_afr/lighteval_model.py` and evaluates with it."""
    from finetasks_afr.scoring.lighteval_runtime import ensure_tiny_benchmarks_file

    mirror, model_dir = setup
    ensure_tiny_benchmarks_file()
    env = os.environ | {
        "FINETASKS_AFR_DATA_DIR": str(mirror),
        "FINETASKS_AFR_MODEL_ARGS": f"device=cpu,batch_size=16,max_length={MAX_LENGTH}",
    }
    lighteval = shutil.which("lighteval", path=str(Path(sys.executable).parent)) or "lighteval"
    command = [
        lighteval, "custom", str(model_dir), str(PROJECT / "finetasks_afr" / "lighteval_model.py"),
        "sib200_zul_mcf_enprompt|0", "--custom-tasks", TASKS_MODULE, "--output-dir", str(tmp_path / "out"),
        "--max-samples", str(MAX_SAMPLES),
    ]  # fmt: skip
    run = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (results,) = (tmp_path / "out" / "results").rglob("results_*.json")
    assert 0.0 <= json.loads(results.read_text())["results"]["sib200_zul_mcf_enprompt|0"]["acc"] <= 1.0


def test_lighteval_s_custom_loader_picks_the_engine(setup, monkeypatch):
    """What `lighteval custom` instantiates from that file (its loader takes the first LightevalModel subclass)."""
    from lighteval.models.custom.custom_model import CustomModelConfig
    from lighteval.models.model_loader import load_model

    from finetasks_afr.lighteval_model import FinetasksEngineModel

    _, model_dir = setup
    monkeypatch.setenv("FINETASKS_AFR_MODEL_ARGS", f"batch_size=16,max_length={MAX_LENGTH}")
    config = CustomModelConfig(
        model_name=str(model_dir), model_definition_file_path=str(PROJECT / "finetasks_afr" / "lighteval_model.py")
    )
    # lighteval loads its own copy of the class from the file (another class object, hence the name check)
    model = cast(FinetasksEngineModel, load_model(config=config))
    assert type(model).__name__ == FinetasksEngineModel.__name__
    assert model.max_length == MAX_LENGTH and model.config.batch_size == 16 and str(model.device) == "cpu"
