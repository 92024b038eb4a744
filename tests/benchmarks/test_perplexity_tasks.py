"""Per-language perplexity tasks (flores_ppl_<lang>, belebele_ppl_<lang>) and the lighteval 0.13 rolling fix.

- The prompt functions on hand-made and real rows (SIB-200 test sentences, the 12 Belebele files of Bridging the
  Gap), the passage deduplication against an independent (pandas) implementation, and the docs lighteval itself
  loads from a local mirror.
- `finetasks_afr.scoring.compat` fix 3: a REAL offline lighteval Pipeline (custom task module, local dataset directory
  with a README, tiny Llama saved to disk, max_length smaller than the longest text) must report exactly the
  word_perplexity / byte_perplexity / bits_per_byte computed by hand from log_softmax over direct forward passes;
  with `compat.restore()` the stock lighteval crashes or scores with the logits of the wrong position.
- The analysis keeps a perplexity task whose bits_per_byte falls steadily (lower is better; against the uniform byte
  model's 8 bits, and separating the runs) and drops a flat, noisy one, and writes the kept one into the suite files.
- End to end: a perplexity task on a tiny checkpoint, its lighteval results collected into the score table.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import types
import unicodedata
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402

from finetasks_afr.benchmarks import perplexity  # noqa: E402
from finetasks_afr.benchmarks.common import SKIPPED_ROWS, TASK_INFO, clean  # noqa: E402
from finetasks_afr.demo.tiny import make_tiny_causal_lm  # noqa: E402
from finetasks_afr.scoring import compat  # noqa: E402
from finetasks_afr.scoring.core import (  # noqa: E402
    prefix_token_id,
    rolling_windows,
    text_rows,
    weights_dtype,
    window_stride,
)
from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only, prediction_cache_in  # noqa: E402
from tests.local_dataset import write_local_dataset  # noqa: E402

if TYPE_CHECKING:
    import torch
    from lighteval.pipeline import Pipeline
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import Doc

TOL = 1e-5
MAX_LENGTH = 32  # smaller than the longest probe text in tokens: the rolling windows are exercised
BATCH_SIZE = 4
BELEBELE_FILES = ("", "_af", "_am", "_bm", "_ig", "_nso", "_sn", "_st", "_tn", "_ts", "_xh", "_zu")


# ------------------------------------------------------------------------------------- rolling windows


def test_rolling_windows_hand_computed():
    # (begin, end, first) over [prefix, *tokens]: feed sequence[begin:end], score tokens[first:end]
    assert rolling_windows(5, max_length=2) == [(0, 2, 0), (1, 3, 2), (2, 4, 3), (3, 5, 4)]  # stride 1
    assert rolling_windows(10, max_length=4) == [(0, 4, 0), (2, 6, 4), (4, 8, 6), (6, 10, 8)]  # stride 2
    assert rolling_windows(9, max_length=4) == [(0, 4, 0), (2, 6, 4), (4, 8, 6), (5, 9, 8)]  # last: 1 new token
    assert rolling_windows(3, max_length=8) == [(0, 3, 0)]
    assert rolling_windows(2, max_length=1) == [(0, 1, 0), (1, 2, 1)]
    assert rolling_windows(0, max_length=4) == []
    assert text_rows([10, 11, 12, 13, 14], prefix=1, max_length=2) == [
        ([1, 10, 11], 2),
        ([10, 11, 12], 1),
        ([11, 12, 13], 1),
        ([12, 13, 14], 1),
    ]
    with pytest.raises(ValueError, match="max_length"):
        rolling_windows(1, max_length=0)


def test_rolling_windows_score_every_token_once_with_the_stated_context():
    for n in range(0, 23):
        tokens = list(range(100, 100 + n))
        for max_length in (1, 2, 3, 7, 22, 50):
            rows = text_rows(tokens, prefix=1, max_length=max_length)
            assert [t for row, k in rows for t in row[len(row) - k :]] == tokens  # each token once, in order
            for row, k in rows:
                assert 1 <= k <= len(row) - 1 <= max_length  # at most max_length inputs
                assert row == ([1, *tokens])[([1, *tokens]).index(row[0]) :][: len(row)]  # a contiguous slice
            # every token after the first window sees at least max_length - stride tokens before it
            for row, k in rows[1:]:
                assert len(row) - 1 - k + 1 >= max_length - window_stride(max_length)


def test_prefix_token_is_bos_else_eos_else_an_error():
    assert prefix_token_id(types.SimpleNamespace(bos_token_id=1, eos_token_id=2)) == 1
    assert prefix_token_id(types.SimpleNamespace(bos_token_id=None, eos_token_id=2)) == 2
    with pytest.raises(ValueError, match="BOS or EOS"):
        prefix_token_id(types.SimpleNamespace(bos_token_id=None, eos_token_id=None))


# ------------------------------------------------------------------------------------- prompt functions


def _units(text: str) -> tuple[int, int]:
    """(words, bytes) of a text, counted independently of lighteval: single spaces after `clean`."""
    return len(text.split(" ")), len(text.encode("utf-8"))


def _lighteval_units(doc: Doc) -> tuple[int, int]:
    from lighteval.metrics.sample_preparator import PerplexityPreparator
    from lighteval.models.model_output import ModelResponse

    response = ModelResponse(logprobs=[-1.0])
    words = PerplexityPreparator("words").prepare(doc=doc, model_response=response).weights
    size = PerplexityPreparator("bytes").prepare(doc=doc, model_response=response).weights
    return words, size


def test_text_prompt_cleans_and_counts_what_it_scores():
    prompt = perplexity.text_prompt("flores_ppl_probe", "text")
    doc = prompt({"text": "  Ọmọ náà\tń sùn\n\nlórí  ibùsùn. "}, "flores_ppl_probe|0")
    assert doc is not None
    assert doc.query == "Ọmọ náà ń sùn lórí ibùsùn."
    assert doc.choices is None and doc.gold_index is None and doc.original_query is None
    assert (
        _lighteval_units(doc) == _units(doc.query) == (6, 38)
    )  # Ọmọ|náà|ń|sùn|lórí|ibùsùn.; 26 characters, Ọ ọ 3 bytes, 8 others 2
    before = SKIPPED_ROWS["flores_ppl_probe"]
    assert prompt({"text": " \n "}, "flores_ppl_probe|0") is None
    assert prompt({"category": "travel"}, "flores_ppl_probe|0") is None
    assert SKIPPED_ROWS["flores_ppl_probe"] == before + 2


def _passage_rows(passages: list[str]) -> list[dict]:
    return [{"flores_passage": text, "question_number": 1, "__index": i} for i, text in enumerate(passages)]


def test_first_row_per_passage_hand_made():
    prompt = perplexity.FirstRowPerPassage("belebele_ppl_probe", "flores_passage")
    rows = _passage_rows(["A b.", "C d.", "A  b.", "E f.", "C d.", "", "A b.\n"])
    kept = [doc.query if doc else None for doc in (prompt(row, "t|0") for row in rows)]
    # "A  b." and "A b.\n" are "A b." once cleaned; the empty passage is skipped
    assert kept == ["A b.", "C d.", None, "E f.", None, None, None]
    # formatting the split again (a new pass from row 0, or the same rows again) keeps the same rows
    assert [prompt(row, "t|0") is not None for row in rows] == [True, True, False, True, False, False, False]
    assert [prompt(row, "t|0") is not None for row in rows[1:]] == [True, False, True, False, False, False]
    other = _passage_rows(["E f.", "A b."])  # a different split: the memory is cleared at row 0
    assert [prompt(row, "t|0") is not None for row in other] == [True, True]


def test_first_row_per_passage_needs_the_row_order():
    prompt = perplexity.FirstRowPerPassage("belebele_ppl_probe", "flores_passage")
    with pytest.raises(ValueError, match="__index"):
        prompt({"flores_passage": "A b."}, "t|0")


# ------------------------------------------------------------------------------------------- task table


def test_task_table_names_metadata_and_languages():
    from finetasks_afr.prompts.languages import covered_by

    configs = perplexity.tasks()
    names = [config.name for config in configs]
    assert len(names) == len(set(names))
    expected = {f"flores_ppl_{lang.iso3}" for lang in covered_by("sib200")}
    expected |= {f"belebele_ppl_{lang.iso3}" for lang in covered_by("belebele")}
    assert set(names) == expected and len(names) == 55 + 30
    for config in configs:
        info = TASK_INFO[config.name]
        assert (info.category, info.formulation, info.prompt) == ("GEN", "PPL", "native")
        assert math.isnan(info.random_baseline)
        assert info.benchmark == config.name.rsplit("_", 1)[0] and info.language == config.name.rsplit("_", 1)[1]
        assert info.dataset == {"flores_ppl": "sib200", "belebele_ppl": "belebele"}[info.benchmark]
        assert config.hf_subset == info.subset and list(config.evaluation_splits) == ["test"]
        assert [metric.metric_name for metric in config.metrics] == list(perplexity.METRIC_NAMES)
        assert all(not metric.higher_is_better for metric in config.metrics)
    assert TASK_INFO["flores_ppl_yor"].subset == "yor_Latn" and TASK_INFO["belebele_ppl_swa"].subset == "swh_Latn"


# ------------------------------------------------------------------------------------------- real rows


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.shared_data
def test_belebele_dedup_on_the_real_files_matches_pandas(shared_data: Path) -> None:
    """Every Belebele file of Bridging the Gap: 900 rows, 488 passages, each kept once, at its first row."""
    import pandas as pd

    for suffix in BELEBELE_FILES:
        rows = _read_jsonl(shared_data / "bridging_the_gap" / "belebele" / f"belebele{suffix}.jsonl")
        prompt = perplexity.FirstRowPerPassage(f"belebele_ppl_real{suffix}", "flores_passage")
        docs = [prompt({**row, "__index": i}, "t|0") for i, row in enumerate(rows)]
        kept = [i for i, doc in enumerate(docs) if doc is not None]
        kept_docs = [doc for doc in docs if doc is not None]  # docs[i] for i in kept
        frame = pd.DataFrame({"passage": [clean(row["flores_passage"]) for row in rows]})
        assert kept == frame.drop_duplicates("passage", keep="first").index.tolist(), suffix
        assert (len(rows), len(kept)) == (900, 488), suffix
        assert [doc.query for doc in kept_docs] == frame["passage"].iloc[kept].tolist()
        # not "question_number == 1": six passages have only a second question, and are kept
        passages = frame["passage"].tolist()
        no_first = set(passages) - {
            text for text, row in zip(passages, rows, strict=True) if row["question_number"] == 1
        }
        assert len(no_first) == 6 and no_first <= {doc.query for doc in kept_docs}, suffix


SIB200_PROBE_FOLDERS = ("yor_Latn", "zul_Latn", "amh_Ethi", "hau_Latn", "tir_Ethi", "tzm_Tfng")
"""Latin, Ethiopic and Tifinagh scripts, all covered by the suite (nqo_Nkoo was listed once: neither the shared
SIB-200 copy nor the suite has it, and the loop skipped it silently)."""


@pytest.mark.shared_data
def test_flores_prompt_on_real_sib200_rows(shared_data: Path) -> None:
    paths = [shared_data / "sib200" / folder / "test.tsv" for folder in SIB200_PROBE_FOLDERS]
    missing = [str(path) for path in paths if not path.is_file()]
    assert not missing, f"SIB-200 test files missing from the shared data: {missing}"
    checked = 0
    for folder, path in zip(SIB200_PROBE_FOLDERS, paths, strict=True):
        checked += 1
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        prompt = perplexity.text_prompt(f"flores_ppl_real_{folder}", "text")
        maybe_docs = [prompt(row, "t|0") for row in rows]
        docs = [doc for doc in maybe_docs if doc is not None]
        assert len(rows) == 204 and len(docs) == len(maybe_docs), folder
        queries = [doc.query for doc in docs]
        assert len(set(queries)) == len(queries)  # FLORES sentences, no duplicates: nothing to deduplicate
        for doc, row in zip(docs, rows, strict=True):  # the suite's one cleaning step: NFC, single spaces
            assert doc.query == unicodedata.normalize("NFC", " ".join(row["text"].split()))
            assert _lighteval_units(doc) == _units(doc.query)
    assert checked == len(SIB200_PROBE_FOLDERS) == 6


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("ppl_mirror")
    import_raw(shared_data, out, datasets=["sib200", "belebele"], configs=["yor_Latn", "zul_Latn"])
    return out


@pytest.fixture(scope="module")
def mirrored_tasks(mirror: Path) -> dict[str, LightevalTaskConfig]:
    """The perplexity configs built with the mirror configured (hf_location resolves at build time)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        return {config.name: config for config in perplexity.tasks()}


@pytest.mark.slow
@pytest.mark.shared_data
def test_docs_loaded_by_lighteval_from_the_mirror(
    mirrored_tasks: dict[str, LightevalTaskConfig], mirror: Path, shared_data: Path
) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask

    for name, folder in (("flores_ppl_yor", "yor_Latn"), ("flores_ppl_zul", "zul_Latn")):
        config = mirrored_tasks[name]
        assert config.hf_repo == str(mirror / "sib200")
        with (shared_data / "sib200" / folder / "test.tsv").open(encoding="utf-8", newline="") as handle:
            texts = [clean(row["text"]) for row in csv.DictReader(handle, delimiter="\t")]
        docs = LightevalTask(config).eval_docs()
        assert [doc.query for doc in docs] == texts
        assert all(doc.choices is None and doc.original_query is None for doc in docs)

    config = mirrored_tasks["belebele_ppl_zul"]
    assert config.hf_repo == str(mirror / "belebele")
    rows = _read_jsonl(shared_data / "bridging_the_gap" / "belebele" / "belebele_zu.jsonl")
    first: dict[str, int] = {}
    for i, row in enumerate(rows):
        first.setdefault(clean(row["flores_passage"]), i)
    expected = [text for text, _ in sorted(first.items(), key=lambda item: item[1])]
    for _ in range(2):  # a second task object (as a later checkpoint's pipeline builds it) gives the same docs
        docs = LightevalTask(config).eval_docs()
        assert [doc.query for doc in docs] == expected and len(docs) == 488
        assert [int(doc.id) for doc in docs] == sorted(first.values())


# --------------------------------------------------------------------- lighteval's rolling path vs a forward


PROBE_TASK = "flores_ppl_probe"
PROBE_ROWS = [
    {"text": "Ọmọ náà ń sùn  lórí ibùsùn."},
    {"text": "Mji mkuu wa Kenya ni Nairobi.\n"},
    {"text": "   "},  # skipped
    {"text": "Umntwana ulele embhedeni."},
    {"text": "Abuja ni olú ìlú Nàìjíríà; Èkó jẹ́ ìlú ńlá tí ó ní èrò púpọ̀, ọjà àti ọkọ̀ ojú omi. " * 3},
    {"text": "Dodoma ni mji mkuu wa Tanzania, na Dar es Salaam ni mji mkubwa zaidi wa pwani."},
    {"text": "Addis Abeba ni mji mkuu wa Ethiopia."},
]
PROBE_TEXTS = [clean(row["text"]) for row in PROBE_ROWS if clean(row["text"])]
CORPUS = [*PROBE_TEXTS, "Nairobi, Dodoma, Abuja, Addis Abeba.", "Ìlú ńlá ni Èkó. Mji mkubwa ni Dar es Salaam."]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_causal_lm(
        tmp_path_factory.mktemp("ppl_tiny") / "model",
        CORPUS,
        vocab_size=300,
        hidden_size=32,
        layers=2,
        heads=2,
        max_position_embeddings=128,
        seed=0,
        train_steps=30,
        train_seq_len=32,
    )


@pytest.fixture(scope="module")
def probe_module(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    """A custom tasks module: our prompt function and metrics over a local dataset directory."""
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    root = write_local_dataset(tmp_path_factory.mktemp("ppl_probe"), "ppl_probe", {"test": PROBE_ROWS})
    return tasks_module(
        "ppl_probe_tasks",
        [
            LightevalTaskConfig(
                name=PROBE_TASK,
                # lighteval declares `-> Doc` but skips a None doc (LightevalTask._get_docs_from_split)
                prompt_function=perplexity.text_prompt(PROBE_TASK, "text"),  # type: ignore[arg-type]
                hf_repo=str(root),
                hf_subset="default",
                hf_avail_splits=["test"],
                evaluation_splits=["test"],
                metrics=list(perplexity.METRICS),
            )
        ],
    )


def tasks_module(name: str, table: list[LightevalTaskConfig]) -> types.ModuleType:
    """A custom tasks module (as lighteval's Registry takes one) whose TASKS_TABLE is `table`."""
    module = types.ModuleType(name)
    vars(module)["TASKS_TABLE"] = table
    return module


def run_pipeline(
    model_dir: Path, module: types.ModuleType, tasks: str, out_dir: Path, max_samples: int | None = None
) -> Pipeline:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    with custom_tasks_only(), prediction_cache_in(out_dir / "cache"):
        pipeline = Pipeline(
            tasks=tasks,
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                # declared `str | None`, but handed on to Registry(custom_tasks=...), which takes a module too
                custom_tasks_directory=module,  # type: ignore[arg-type]
                max_samples=max_samples,
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(out_dir), save_details=False),
            model_config=TransformersModelConfig(
                model_name=str(model_dir), device="cpu", batch_size=BATCH_SIZE, max_length=MAX_LENGTH
            ),
        )
        pipeline.evaluate()
    return pipeline


class Reference:
    """log P(text) by hand: one forward pass per window, log_softmax, logits at j scoring token j + 1."""

    def __init__(self, model_dir: Path):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, **weights_dtype(torch.float32)).eval()

    def ids(self, text: str) -> list[int]:
        return [self.tokenizer.bos_token_id, *self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def logprobs(self, sequence: list[int]) -> torch.Tensor:
        with self.torch.no_grad():
            logits = self.model(input_ids=self.torch.tensor([sequence])).logits[0].double()
        return self.torch.log_softmax(logits, dim=-1)

    def logprob(self, text: str, max_length: int = MAX_LENGTH) -> float:
        """The windowing rule stated per token, one forward pass per token: token i of the text (i >= 0) is
        predicted from [BOS] + text[:i] when i < max_length; else it is scored in sliding window
        k = (i - max_length) // stride + 1, whose inputs are the max_length tokens ending at that window's end."""
        ids = self.ids(text)
        n, stride = len(ids) - 1, max(1, max_length // 2)
        total = 0.0
        for i in range(n):
            if i < max_length:
                begin = 0
            else:
                end = min(max_length + ((i - max_length) // stride + 1) * stride, n)
                begin = end - max_length
            context = ids[begin : i + 1]  # ids[i + 1] is text token i
            total += float(self.logprobs(context)[-1, ids[i + 1]])
        return total

    def logprob_by_loss(self, text: str) -> float:
        """A second way (the model's own shifted cross-entropy), full context: only for texts of one window."""
        ids = self.torch.tensor([self.ids(text)])
        with self.torch.no_grad():
            loss = self.model(input_ids=ids, labels=ids).loss
        return -float(loss) * (ids.shape[1] - 1)

    def misaligned_logprob(self, text: str) -> float:
        """What stock lighteval 0.13 computes without a BOS: token i scored by the logits at position i."""
        ids = self.ids(text)[1:]
        logprobs = self.logprobs(ids)
        return sum(float(logprobs[i, token]) for i, token in enumerate(ids))


def expected_metrics(texts: list[str], logprobs: list[float]) -> dict[str, float]:
    """The three corpus metrics by their definitions: per word or byte of the scored text."""
    total = sum(logprobs)
    words = sum(_units(text)[0] for text in texts)
    size = sum(_units(text)[1] for text in texts)
    return {
        "word_perplexity": math.exp(-total / words),
        "byte_perplexity": math.exp(-total / size),
        "bits_per_byte": -total / size / math.log(2),
    }


@pytest.fixture(scope="module")
def reference(tiny_model: Path) -> Reference:
    return Reference(tiny_model)


@pytest.fixture(scope="module")
def _leave_compat_as_found():
    was_applied = compat.applied()
    yield
    compat.restore()
    if was_applied:
        compat.apply()


@pytest.fixture(scope="module")
def fixed_run(_leave_compat_as_found, tiny_model, probe_module, tmp_path_factory):
    compat.restore()
    status = compat.apply()
    compat.reset_stats()
    try:
        pipeline = run_pipeline(tiny_model, probe_module, f"{PROBE_TASK}|0", tmp_path_factory.mktemp("ppl_fixed"))
        stats = {name: getattr(compat.STATS, name) for name in ("rolling_docs", "rolling_windows", "rolling_tokens")}
    finally:
        compat.restore()
    return status, pipeline, stats


@pytest.mark.slow
def test_reference_is_self_consistent(reference):
    """The windowed reference equals the model's own loss on texts of one window, and windows matter."""
    lengths = {text: len(reference.ids(text)) - 1 for text in PROBE_TEXTS}
    short = [text for text in PROBE_TEXTS if lengths[text] <= MAX_LENGTH]
    assert short and len(short) < len(PROBE_TEXTS)  # some texts fit in one window, at least one needs several
    for text in short:
        assert reference.logprob(text) == pytest.approx(reference.logprob_by_loss(text), rel=TOL)
    long = max(PROBE_TEXTS, key=len)
    assert lengths[long] > 2 * MAX_LENGTH
    assert abs(reference.logprob(long) - reference.logprob(long, max_length=128)) > 1e-3


@pytest.mark.slow
def test_fixed_rolling_equals_the_hand_computed_perplexities(fixed_run, reference):
    status, pipeline, stats = fixed_run
    assert status[compat.FIX_ROLLING] == "applied"
    details = {detail.doc.query: detail for detail in pipeline.get_details()[f"{PROBE_TASK}|0"]}
    assert sorted(details) == sorted(PROBE_TEXTS)  # the blank row was skipped, every other text scored once
    expected = [reference.logprob(text) for text in PROBE_TEXTS]
    for text, value in zip(PROBE_TEXTS, expected, strict=True):
        response = details[text].model_response
        np.testing.assert_allclose(response.logprobs, [value], rtol=TOL, atol=1e-4)
        assert response.output_tokens == [reference.ids(text)[1:]]
    results = pipeline.get_results()["results"][f"{PROBE_TASK}:0"]
    for name, value in expected_metrics(PROBE_TEXTS, expected).items():
        assert results[name] == pytest.approx(value, rel=TOL), name
    tokens = [len(reference.ids(text)) - 1 for text in PROBE_TEXTS]
    assert stats == {
        "rolling_docs": len(PROBE_TEXTS),
        "rolling_windows": sum(
            1 + max(0, math.ceil((n - MAX_LENGTH) / max(1, MAX_LENGTH // 2))) for n in tokens if n > 0
        ),
        "rolling_tokens": sum(tokens),
    }


@pytest.mark.slow
def test_stock_lighteval_rolling_is_broken(_leave_compat_as_found, tiny_model, probe_module, reference, tmp_path):
    """lighteval 0.13 as released: the pipeline crashes on a perplexity Doc (choices=None); a Doc with the text
    as its one choice crashes with a BOS and, without one, gets the log-probabilities of misaligned logits."""
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.tasks.requests import Doc

    compat.restore()
    assert compat.rolling_bug_present()
    with pytest.raises(TypeError, match="NoneType"):
        run_pipeline(tiny_model, probe_module, f"{PROBE_TASK}|0", tmp_path / "stock")

    def stock_model(add_special_tokens: bool) -> TransformersModel:
        config = TransformersModelConfig(
            model_name=str(tiny_model),
            device="cpu",
            batch_size=BATCH_SIZE,
            max_length=128,
            add_special_tokens=add_special_tokens,
        )
        model = TransformersModel(config)
        # outside a pipeline: no prediction cache (lighteval sets None itself without a config, typed SampleCache)
        model._cache = None  # type: ignore[assignment]
        return model

    texts = PROBE_TEXTS[:2]
    docs = [Doc(query="", choices=[text], gold_index=0, task_name="stock|0") for text in texts]
    with pytest.raises(RuntimeError, match="size of tensor"):
        stock_model(True).loglikelihood_rolling(docs[:1])
    stock = [response.logprobs[0] for response in stock_model(False).loglikelihood_rolling(docs)]
    np.testing.assert_allclose(stock, [reference.misaligned_logprob(text) for text in texts], rtol=TOL, atol=1e-4)
    right = [reference.logprob(text, max_length=128) for text in texts]
    assert all(abs(s - r) > 1.0 for s, r in zip(stock, right, strict=True))


def test_apply_reports_the_rolling_fix_and_restore_puts_the_original_back(_leave_compat_as_found):
    from lighteval.models.transformers.transformers_model import TransformersModel

    compat.restore()
    original = TransformersModel.loglikelihood_rolling
    try:
        assert compat.apply()[compat.FIX_ROLLING] == "applied"
        patched = TransformersModel.loglikelihood_rolling
        assert patched is not original and patched.__wrapped__ is original
        assert compat.apply()[compat.FIX_ROLLING] == "applied" and TransformersModel.loglikelihood_rolling is patched
        assert compat.FIX_ROLLING in compat.applied()
    finally:
        compat.restore()
    assert TransformersModel.loglikelihood_rolling is original
    assert compat.FIX_ROLLING not in compat.applied()


def test_a_document_with_several_choices_is_refused():
    from lighteval.tasks.requests import Doc

    model = types.SimpleNamespace(prompt_manager=None)
    doc = Doc(query="q", choices=["a", "b"], gold_index=0, task_name="two|0")
    with pytest.raises(ValueError, match="2 choices"):
        compat.rolling_text(model, doc)


# ------------------------------------------------------------------------------------------------ analysis


def _ppl_table() -> pl.DataFrame:
    """3 runs x 3 seeds x 10 steps: flores_ppl_yor learns (bits_per_byte falls), belebele_ppl_yor is flat noise,
    and an accuracy task for company (higher is better, with a baseline)."""
    rng = np.random.default_rng(0)
    rows = []
    steps = range(100, 1100, 100)
    for r, run in enumerate(("mix-a", "mix-b", "mix-c")):
        for seed in (1, 2, 3):
            for step in steps:
                learning = 3.0 - 1.5 * step / 1000 - 0.05 * r + rng.normal(0, 0.002)
                flat = 3.0 + rng.normal(0, 0.3)
                accuracy = 0.25 + 0.5 * step / 1000 + 0.02 * r + rng.normal(0, 0.002)
                for task, bpb in (("flores_ppl_yor", learning), ("belebele_ppl_yor", flat)):
                    for metric, score in (
                        ("bits_per_byte", bpb),
                        ("byte_perplexity", 2**bpb),
                        ("word_perplexity", 2 ** (bpb * 6.0)),  # 6 bytes per word
                    ):
                        rows.append(_row(run, seed, step, task, "PPL", "GEN", metric, score, math.nan))
                rows.append(_row(run, seed, step, "sib200_yor_cf", "CF", "NLU", "acc", accuracy, 1 / 7))
    return pl.DataFrame(rows)


def _row(
    run: str,
    seed: int,
    step: int,
    task: str,
    formulation: str,
    category: str,
    metric: str,
    score: float,
    baseline: float | None,
) -> dict[str, object]:
    return {
        "run": run, "seed": seed, "step": step, "tokens": step * 1000, "task": task,
        "benchmark": task.rsplit("_", 1)[0], "language": "yor", "category": category, "formulation": formulation,
        "fewshot": 0, "metric": metric, "score": float(score), "stderr": None, "random_baseline": baseline,
    }  # fmt: skip


@pytest.fixture(scope="module")
def ppl_selection():
    from analysis.config import load_config
    from analysis.pipeline import analyse
    from analysis.scores.validate import validate

    config = load_config()
    table, report = validate(_ppl_table(), source="ppl probe")
    return config, table, report, analyse(table, config)


def test_selection_keeps_a_falling_perplexity_and_drops_a_flat_one(ppl_selection):
    config, table, report, result = ppl_selection
    ppl = table.filter(pl.col("formulation") == "PPL")
    baselines = dict(ppl.group_by("metric").agg(pl.col("random_baseline").unique()).iter_rows())
    # the uniform byte model's 8 bits per byte (byte perplexity 256); a word perplexity has no such level
    assert baselines == {"bits_per_byte": [8.0], "byte_perplexity": [256.0], "word_perplexity": [None]}
    assert any("gave 180 bits_per_byte row(s) without a random baseline" in note for note in report.notes)
    chosen = {row["task"]: row for row in result.selection.decisions.filter(pl.col("chosen")).iter_rows(named=True)}

    learning = chosen["flores_ppl_yor"]
    assert learning["kept"] and learning["monotonicity"] == pytest.approx(1.0)  # falling = improving
    assert learning["metric"] == "bits_per_byte" and learning["non_random_pass"] is True
    assert learning["reason"].startswith("kept: monotonicity 1.00 >= 0.5; snr ")
    assert "sigma above random > 3" in learning["reason"] and "runs separated" in learning["reason"]

    flat = chosen["belebele_ppl_yor"]
    assert not flat["kept"] and flat["monotonicity"] < config.monotonicity.min and flat["snr"] < config.snr.min
    assert flat["reason"].startswith("dropped: monotonicity ") and " < 20.0 (seed)" in flat["reason"]

    accuracy = chosen["sib200_yor_cf"]  # an ordinary task still gets its non-randomness check
    assert accuracy["kept"] and accuracy["non_random_applicable"] is True and accuracy["non_random_pass"] is True
    # both kept tasks enter yor's score, bits per byte rescaled on its 8 bits: the runs ordered by their offsets
    assert result.ranking is not None
    scores = result.ranking.language_scores
    assert scores.get_column("kind").to_list() == ["rescaled"] * 3
    assert scores.get_column("run").to_list() == ["mix-c", "mix-b", "mix-a"]


def test_the_kept_perplexity_task_is_written_into_the_suites(ppl_selection, tmp_path):
    """Both suite files list it under its category, and lighteval's own registry reads the file back."""
    from lighteval.tasks.registry import Registry

    from analysis.select import write_selection

    write_selection(ppl_selection[3].selection, tmp_path)
    suites = {suite: tmp_path / "suites" / suite / "yor.txt" for suite in ("cf", "mcf")}
    for path in suites.values():
        text = path.read_text(encoding="utf-8")
        assert "# Generative (GEN)\nlighteval|flores_ppl_yor|0\n" in text and "belebele_ppl" not in text
    module = tasks_module("ppl_suite_tasks", perplexity.tasks())
    with custom_tasks_only():
        registry = Registry(tasks=str(suites["mcf"]), custom_tasks=module)  # the mcf list: no CF accuracy task
    assert set(registry.task_to_configs) == {"flores_ppl_yor"}
    # lighteval annotates task_to_configs as dict[str, LightevalTaskConfig]; it maps a task to a list of configs
    configs: list[LightevalTaskConfig] = registry.task_to_configs["flores_ppl_yor"]  # type: ignore[assignment]
    (config,) = configs
    assert config.num_fewshots == 0


def test_table_allows_no_baseline_only_for_lower_is_better_metrics(tmp_path):
    from analysis.scores.schema import ScoreTableError
    from analysis.scores.task_info import read_task_info
    from analysis.scores.validate import validate

    base = _row("r", 1, 100, "flores_ppl_yor", "PPL", "GEN", "word_perplexity", 2.5, None)
    table, _ = validate(pl.DataFrame([base]), source="t")
    assert table.get_column("random_baseline").to_list() == [None]
    accuracy = _row("r", 1, 100, "sib200_yor_cf", "CF", "NLU", "acc", 0.5, math.nan)
    with pytest.raises(ScoreTableError, match=r"random_baseline that is not finite .* higher-is-better"):
        validate(pl.DataFrame([base, accuracy]), source="t")
    csv = tmp_path / "info.csv"
    csv.write_text(
        "task,benchmark,language,category,formulation,random_baseline\n"
        "flores_ppl_yor,flores_ppl,yor,GEN,PPL,\nsib200_yor_cf,sib200,yor,NLU,CF,0.142857\n"
    )
    info = read_task_info(csv)
    assert math.isnan(info["flores_ppl_yor"].random_baseline) and info["sib200_yor_cf"].random_baseline == 0.142857
    csv.write_text("task,benchmark,language,category,formulation,random_baseline\nt,b,yor,GEN,PPL,many\n")
    with pytest.raises(ScoreTableError, match="not a finite number"):
        read_task_info(csv)


# ----------------------------------------------------------------------------------- end to end: collect


@pytest.mark.slow
@pytest.mark.shared_data
def test_end_to_end_perplexity_results_collect_into_the_score_table(
    _leave_compat_as_found, mirrored_tasks, tiny_model, reference, tmp_path
):
    from finetasks_afr.sweep.collect import _as_table_info, collect

    checkpoint = tmp_path / "runs" / "mix-a" / "seed-1" / "checkpoint-200"
    shutil.copytree(tiny_model, checkpoint)
    module = tasks_module("ppl_e2e_tasks", [mirrored_tasks["flores_ppl_yor"]])
    compat.restore()
    compat.apply()
    try:
        pipeline = run_pipeline(checkpoint, module, "flores_ppl_yor|0", tmp_path / "out", max_samples=6)
        pipeline.save_and_push_results()
    finally:
        compat.restore()
    docs = [detail.doc.query for detail in pipeline.get_details()["flores_ppl_yor|0"]]
    assert len(docs) == 6
    expected = expected_metrics(docs, [reference.logprob(text) for text in docs])

    table, report = collect(
        [tmp_path / "out"], task_info=_as_table_info({"flores_ppl_yor": TASK_INFO["flores_ppl_yor"]}),
        tokens_per_step=1000,
    )  # fmt: skip
    assert report.files == 1 and table.height == 3
    assert sorted(table.get_column("metric")) == sorted(perplexity.METRIC_NAMES)
    for row in table.iter_rows(named=True):
        assert (row["run"], row["seed"], row["step"], row["tokens"]) == ("mix-a", 1, 200, 200_000)
        assert (row["task"], row["benchmark"], row["language"]) == ("flores_ppl_yor", "flores_ppl", "yor")
        assert (row["category"], row["formulation"], row["fewshot"]) == ("GEN", "PPL", 0)
        chance = {"bits_per_byte": 8.0, "byte_perplexity": 256.0}.get(row["metric"])  # uniform byte model
        assert row["random_baseline"] == chance, row["metric"]
        assert row["score"] == pytest.approx(expected[row["metric"]], rel=TOL), row["metric"]
    assert Counter(table.get_column("metric")) == Counter(perplexity.METRIC_NAMES)


@pytest.mark.slow
def test_rolling_keeps_lighteval_s_prediction_cache(_leave_compat_as_found, tiny_model, probe_module, tmp_path):
    """Fix 3 sits inside lighteval's `@cached(PERPLEXITY)` wrapper: the run stores PERPLEXITY.parquet, and the
    same documents asked again are served from it (no document scored again), with the same log-probabilities."""
    from lighteval.tasks.requests import SamplingMethod
    from lighteval.utils.cache_management import SampleCache

    compat.restore()
    compat.apply()
    try:
        compat.reset_stats()
        pipeline = run_pipeline(tiny_model, probe_module, f"{PROBE_TASK}|0", tmp_path)
        assert compat.STATS.rolling_docs == len(PROBE_TEXTS)
        assert list((tmp_path / "cache").rglob("PERPLEXITY.parquet"))
        details = pipeline.get_details()[f"{PROBE_TASK}|0"]
        docs = pipeline.sampling_docs[SamplingMethod.PERPLEXITY]
        compat.reset_stats()
        again = pipeline.model.loglikelihood_rolling(docs)
        assert compat.STATS.rolling_docs == 0  # every document came from the cache
        by_query = {detail.doc.query: detail.model_response.logprobs for detail in details}
        assert [response.logprobs for response in again] == [by_query[doc.query] for doc in docs]
    finally:
        compat.restore()
    # stock lighteval 0.13 classifies a cached perplexity response as LOGPROBS, so its @cached wrapper drops it
    stock = SampleCache.get_sampling_method
    # called unbound with self=None: the method never reads self
    assert stock(None, {"logprobs": [-1.0], "text": []}) == SamplingMethod.LOGPROBS  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_same_text_gets_the_same_bits_per_byte_everywhere(fixed_run, tiny_model):
    """flores_ppl-style task (lighteval pipeline), `recommend`'s causal scorer and the scoring core agree per text,
    long texts (several windows) included: one core, one windowing rule."""
    from finetasks_afr.perplexity import recommend
    from finetasks_afr.scoring import core as scoring

    _, pipeline, _ = fixed_run
    details = {detail.doc.query: detail.model_response for detail in pipeline.get_details()[f"{PROBE_TASK}|0"]}
    lm = recommend.load_model(str(tiny_model), max_length=MAX_LENGTH)
    scores = recommend.score_causal(lm, PROBE_TEXTS, batch_size=3)
    core = scoring.score_texts(lm.model, lm.tokenizer, PROBE_TEXTS, max_length=MAX_LENGTH, batch_size=5)
    assert max(n for _, n in core) > 2 * MAX_LENGTH  # windows are exercised
    for index, text in enumerate(PROBE_TEXTS):
        n_bytes = len(text.encode("utf-8"))
        task_bpb = scoring.bits_per_byte(details[text].logprobs[0], n_bytes)
        recommend_bpb = float(scores.nll[index, 0]) / math.log(2) / n_bytes
        core_bpb = scoring.bits_per_byte(core[index][0].logprob, n_bytes)
        assert recommend_bpb == pytest.approx(task_bpb, rel=1e-5)
        assert core_bpb == pytest.approx(task_bpb, rel=1e-5)


def test_apply_under_a_spy_keeps_lighteval_s_original(_leave_compat_as_found, monkeypatch):
    """A spy put over the patched `_loglikelihood_tokens` (tests do this), then `apply()` again (importing the
    task module does), then the spy removed: `restore()` must still put lighteval's own method back, and the
    probes must still read lighteval's source (found by the full suite: the original was recorded as the spy)."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    from finetasks_afr.scoring import partial_scoring

    compat.restore()
    lighteval_s = TransformersModel.__dict__["_loglikelihood_tokens"]
    compat.apply()
    patched = TransformersModel.__dict__["_loglikelihood_tokens"]

    def spy(self, docs, *args, **kwargs):
        return patched(self, docs, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(TransformersModel, "_loglikelihood_tokens", spy)
        compat.apply()
        assert partial_scoring.backend_scores_query_then_choices()
    compat.restore()
    assert TransformersModel.__dict__["_loglikelihood_tokens"] is lighteval_s
    assert compat.rolling_bug_present() and compat.token_norm_bug_present()
