"""End to end, offline: `prepare` (tiny teacher) -> `$FINETASKS_AFR_LONGPPL_DIR` -> a custom tasks module file ->
lighteval's Pipeline on a tiny Llama -> `longppl` and `log2_longppl` equal a direct recomputation from the
model's own log-probabilities (one forward pass of context + paragraph per key paragraph, cut from the left to
max_length as documented), to 1e-4 relative; with a max_length that cuts most contexts and one that cuts none.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from finetasks_afr.perplexity import longppl  # noqa: E402
from finetasks_afr.perplexity.longppl import ParallelDocument  # noqa: E402
from finetasks_afr.scoring import compat  # noqa: E402
from finetasks_afr.scoring.core import weights_dtype  # noqa: E402

pytestmark = pytest.mark.slow

CORPUS = [f"Sentence {i}: the river meets the market of town {i % 7} near hill {i % 5}." for i in range(60)]
TASK = "longppl_yor"


class IdentityEmbedder:
    """One-hot per distinct text: identical texts have cosine 1, different ones 0."""

    name = "identity-embedder"

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def embed(self, texts):
        for text in texts:
            self.ids.setdefault(text, len(self.ids))
        vectors = np.zeros((len(texts), 4096))
        for row, text in enumerate(texts):
            vectors[row, self.ids[text]] = 1.0
        return vectors


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict]:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("longppl_e2e")
    model = make_tiny_causal_lm(root / "model", CORPUS, vocab_size=320, seed=11)
    documents = [
        ParallelDocument(f"d{j}", "eng", "yor", CORPUS[6 * j : 6 * j + 6], CORPUS[6 * j : 6 * j + 6]) for j in range(3)
    ]
    # Not parallel at all: every cosine is 0, so the document is skipped and counted.
    documents.append(ParallelDocument("unaligned", "eng", "yor", CORPUS[40:44], CORPUS[50:54]))
    out = root / "prepared"
    path = longppl.prepare(documents, str(model), IdentityEmbedder(), top_k=2, out=out)
    payload = longppl.load_longppl_file(path).payload
    assert payload["skipped"]["no_aligned_key"] == 1
    assert [document["id"] for document in payload["documents"]] == ["d0", "d1", "d2"]
    module = root / "longppl_tasks.py"
    module.write_text(
        "from finetasks_afr.scoring import compat\n"
        "from finetasks_afr.benchmarks.longppl import tasks\n\n"
        "compat.apply()\n"
        "TASKS_TABLE = tasks()\n",
        encoding="utf-8",
    )
    return model, module, out, payload


def reference(model_dir: Path, payload: dict, max_length: int) -> tuple[float, int, int]:
    """Sum of the key paragraphs' token log-probabilities, their token count, and how many windows were cut,
    by plain forward passes."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, **weights_dtype(torch.float32)).eval()
    total, count, cut = 0.0, 0, 0
    for row in longppl.task_rows(payload):
        context = tokenizer(row["context"], add_special_tokens=True)["input_ids"]  # <s> + the preceding document
        paragraph = tokenizer(row["separator"] + row["paragraph"], add_special_tokens=False)["input_ids"]
        cut += len(context + paragraph) > max_length
        ids = (context + paragraph)[-max_length:]
        with torch.no_grad():
            logprobs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
        start = len(ids) - len(paragraph)
        total += sum(float(logprobs[position - 1, ids[position]]) for position in range(start, len(ids)))
        count += len(paragraph)
    return total, count, cut


@pytest.mark.parametrize("max_length", [512, 40])
def test_pipeline_longppl_equals_direct_recomputation(
    setup: tuple[Path, Path, Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_length: int
) -> None:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only

    model, module, out, payload = setup
    compat.apply()  # as the tasks module does, but before the spy below hides lighteval's scorer from its probes
    monkeypatch.setenv(longppl.DIR_ENV, str(out))
    saved_info = dict(TASK_INFO)  # the tasks module registers longppl_yor in the shared TASK_INFO
    scored: list = []
    original = TransformersModel._loglikelihood_tokens

    def spy(self, docs, *args, **kwargs):
        scored.extend(docs)
        return original(self, docs, *args, **kwargs)

    with custom_tasks_only():
        monkeypatch.setattr(TransformersModel, "_loglikelihood_tokens", spy)
        pipeline = Pipeline(
            tasks=f"{TASK}|0",
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE, custom_tasks_directory=str(module)
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(tmp_path), save_details=False),
            model_config=TransformersModelConfig(
                model_name=str(model), device="cpu", batch_size=64, max_length=max_length
            ),
        )
        pipeline.evaluate()
    TASK_INFO.clear()
    TASK_INFO.update(saved_info)
    results = pipeline.get_results()["results"][f"{TASK}:0"]

    rows = longppl.task_rows(payload)
    assert len(scored) == len(rows) == sum(len(d["key_paragraphs"]) for d in payload["documents"])
    total, count, cut = reference(model, payload, max_length)
    assert results["longppl"] == pytest.approx(math.exp(-total / count), rel=1e-4)
    assert results["log2_longppl"] == pytest.approx(-total / count / math.log(2), rel=1e-4)
    assert results["log2_longppl"] == pytest.approx(math.log2(results["longppl"]), rel=1e-9)
    assert "longppl_stderr" in results
    # 512: nothing is cut; 40: most windows are cut (not those of a paragraph 1 after a short paragraph 0),
    # and the cut changes the result
    assert cut == 0 if max_length == 512 else cut >= len(rows) // 2
    if max_length == 40:
        uncut = reference(model, payload, 512)[0]
        assert results["longppl"] != pytest.approx(math.exp(-uncut / count), rel=1e-6)
