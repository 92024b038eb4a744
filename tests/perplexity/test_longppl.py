"""Cross-lingual LongPPL preparation, file schema, task table and metrics (finetasks_afr.perplexity.longppl,
finetasks_afr.benchmarks.longppl, finetasks_afr.cli.longppl).

Teacher perplexities are checked against a plain forward pass per paragraph written here (torch log_softmax);
key selection, alignment and the threshold on hand-built perplexities and embeddings whose cosines are exact;
the corpus metrics on hand-computed values. The end-to-end lighteval run is in tests/perplexity/test_longppl_e2e.py.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from finetasks_afr.perplexity import longppl  # noqa: E402
from finetasks_afr.perplexity.longppl import (  # noqa: E402
    SEPARATOR,
    LongPPLFileError,
    LongPPLInputError,
    ParallelDocument,
    align,
    load_longppl_file,
    prepare,
    read_documents,
    select_key,
    split_paragraphs,
)
from finetasks_afr.scoring.core import weights_dtype  # noqa: E402

if TYPE_CHECKING:
    from analysis.scores.task_info import TaskInfo

CORPUS = [f"Paragraph {i} tells of the river, the market and the town number {i}." for i in range(40)]


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    return make_tiny_causal_lm(tmp_path_factory.mktemp("teacher"), CORPUS, vocab_size=320, seed=3)


@pytest.fixture(scope="module")
def embedder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BertModel with a byte-level BPE tokenizer: useless as an encoder, fine for identical texts."""
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from finetasks_afr.demo.tiny import BOS, EOS, PAD, train_byte_level_bpe

    out = tmp_path_factory.mktemp("embedder")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_byte_level_bpe(CORPUS, 320), bos_token=BOS, eos_token=EOS, pad_token=PAD
    )
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture
def task_info_snapshot() -> Iterator[dict[str, TaskInfo]]:
    """Task tables register metadata in the shared TASK_INFO: put it back after each test."""
    from finetasks_afr.benchmarks.common import TASK_INFO

    saved = dict(TASK_INFO)
    yield TASK_INFO
    TASK_INFO.clear()
    TASK_INFO.update(saved)


class FakeTeacher:
    """Perplexities given per document (by its first source paragraph)."""

    name = "fake-teacher"
    max_length = 64

    def __init__(self, table: dict[str, list[float | None]]) -> None:
        self.table = table

    def paragraph_perplexities(self, paragraphs):
        return list(self.table[paragraphs[0]])


class FakeEmbedder:
    """Each text -> the vector given for it: the test sets every cosine exactly."""

    name = "fake-embedder"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts):
        return np.array([self.vectors[text] for text in texts], dtype=np.float64)


# -------------------------------------------------------------------------------------------------- input


def test_split_paragraphs_on_blank_lines():
    assert split_paragraphs("a b\nc\n\n  d \n \t\n\n\ne\r\n\r\nf\n") == ["a b\nc", "d", "e", "f"]


def test_read_documents_accepts_lists_and_strings(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    rows = [
        {"id": "a", "source_lang": "eng", "target_lang": "yor", "source": ["s0", " s1 "], "target": "t0\n\nt1"},
        {"id": 7, "source_lang": "fra", "target_lang": "yor", "source": "x\n\ny", "target": ["u", "v"]},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n", encoding="utf-8")
    documents = read_documents(path)
    assert documents == [
        ParallelDocument("a", "eng", "yor", ["s0", "s1"], ["t0", "t1"]),
        ParallelDocument("7", "fra", "yor", ["x", "y"], ["u", "v"]),
    ]


GOOD_ROW = {"id": "a", "source_lang": "eng", "target_lang": "yor", "source": ["s0", "s1"], "target": ["t0", "t1"]}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{not json"], ":1: not valid JSON"),
        ([[1, 2]], ":1: expected a JSON object"),
        ([{k: v for k, v in GOOD_ROW.items() if k != "target"}], ":1: missing field(s) target"),
        ([GOOD_ROW | {"target_lang": "yo"}], ":1: target_lang: expected an ISO 639-3 code"),
        ([GOOD_ROW | {"source": ["s0", "  "]}], ":1: source[1]: expected a non-empty string"),
        ([GOOD_ROW | {"source": 3}], ":1: source: expected a list of paragraph strings or one string"),
        ([GOOD_ROW, GOOD_ROW], ":2: id 'a' already used on line 1"),
        ([GOOD_ROW, GOOD_ROW | {"id": "b", "target_lang": "hau"}], ":2: target_lang 'hau' differs from 'yor'"),
        ([], ": no documents"),
    ],
)
def test_read_documents_errors_name_line_and_field(tmp_path: Path, rows: list, message: str) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    with pytest.raises(LongPPLInputError) as error:
        read_documents(path)
    assert str(error.value).startswith(str(path))
    assert message in str(error.value)


# ------------------------------------------------------------------------------------------------ teacher


def _hand_perplexities(model_dir: Path, paragraphs: list[str], max_length: int) -> list[float | None]:
    """Independent reference, one forward pass per token: token i of the document after its BOS is predicted from
    everything before it while i < max_length, else in the sliding window (max_length inputs, advancing by
    max_length // 2) whose end is the first multiple-of-stride boundary past it (the scoring core's rule, stated
    per token)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, **weights_dtype(torch.float32)).eval()
    first = tokenizer(paragraphs[0])["input_ids"]  # <s> + paragraph 0 (this tokenizer adds no </s>)
    assert first[0] == tokenizer.bos_token_id and first[-1] != tokenizer.eos_token_id
    pieces = [first] + [tokenizer("\n\n" + p, add_special_tokens=False)["input_ids"] for p in paragraphs[1:]]
    ids = [token for piece in pieces for token in piece]
    n, stride = len(ids) - 1, max(1, max_length // 2)
    token_logprob = []
    for i in range(n):
        begin = 0 if i < max_length else min(max_length + ((i - max_length) // stride + 1) * stride, n) - max_length
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids[begin : i + 1]])).logits[0, -1].double()
        token_logprob.append(float(torch.log_softmax(logits, dim=-1)[ids[i + 1]]))
    result: list[float | None] = [None]
    end = len(pieces[0]) - 1
    for piece in pieces[1:]:
        span = token_logprob[end : end + len(piece)]
        end += len(piece)
        result.append(math.exp(-sum(span) / len(span)))
    return result


@pytest.mark.parametrize("max_length", [512, 40, 12])
def test_teacher_perplexities_equal_a_forward_pass_by_hand(teacher_dir: Path, max_length: int) -> None:
    paragraphs = [CORPUS[0], CORPUS[1][:30], CORPUS[2], "x", CORPUS[3] + " " + CORPUS[4]]
    teacher = longppl.CausalLMTeacher(str(teacher_dir), max_length=max_length)
    got = teacher.paragraph_perplexities(paragraphs)
    expected = _hand_perplexities(teacher_dir, paragraphs, max_length)
    assert got[0] is None and expected[0] is None
    for value, reference in zip(got[1:], expected[1:], strict=True):
        assert value == pytest.approx(reference, rel=1e-5)
        assert value is not None and value > 1
    if max_length == 12:  # windows matter: a longer window gives the long paragraphs other perplexities
        wide = longppl.CausalLMTeacher(str(teacher_dir), max_length=512).paragraph_perplexities(paragraphs)
        assert wide[4] is not None and got[4] is not None
        assert abs(wide[4] - got[4]) > 1e-3


def test_teacher_max_length_defaults_to_the_model(teacher_dir: Path) -> None:
    assert longppl.CausalLMTeacher(str(teacher_dir)).max_length == 512


# ---------------------------------------------------------------------------------- selection, alignment


@pytest.mark.parametrize(
    ("perplexities", "top_k", "expected"),
    [
        ([None, 5.0, 9.0, 7.0, 9.0], 2, [2, 4]),  # tie at 9.0: the earlier paragraph ranks first
        ([None, 5.0, 9.0, 7.0, 9.0], 3, [2, 4, 3]),
        ([None, 3.0, None, 2.0], 5, [1, 3]),  # fewer candidates than top_k; None is never key
        ([None, 4.0, 4.0, 4.0], 2, [1, 2]),
        ([None], 1, []),
    ],
)
def test_select_key_by_perplexity_then_position(perplexities, top_k, expected):
    assert select_key(perplexities, top_k) == expected


def test_align_picks_highest_cosine_earliest_on_ties():
    source = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    target = np.array([[0.0, 1.0], [5.0, 0.0], [1.0, 0.0], [3.0, 4.0]])
    pairs = align(source, target, [0, 1, 2])
    assert pairs == [(0, 1, 1.0), (1, 0, 1.0), (2, 3, pytest.approx(1.0, abs=1e-15))]
    assert align(source, target[:3], [2]) == [(2, 0, pytest.approx(0.8))]


def _document(doc_id: str, n: int) -> ParallelDocument:
    source, target = [f"{doc_id} s{i}" for i in range(n)], [f"{doc_id} t{i}" for i in range(n)]
    return ParallelDocument(doc_id, "eng", "yor", source, target)


def test_prepare_threshold_skips_and_counts(tmp_path: Path) -> None:
    """Cosines set exactly by hand: 0.5 (the default threshold) is kept, 0.4988 is not; a document whose key
    paragraphs all fail is skipped and counted; an alignment onto target paragraph 0 is dropped and counted."""
    documents = [_document("a", 4), _document("b", 3), _document("c", 3), _document("d", 1)]
    teacher = FakeTeacher(
        {
            "a s0": [None, 2.0, 9.0, 4.0],  # top-2: s2, s3
            "b s0": [None, 3.0, 1.5],  # top-2: s1, s2
            "c s0": [None, 8.0, None],  # one candidate
        }
    )
    e = np.eye(4).tolist()
    vectors = {
        # a: s2 -> t3 with cosine exactly 0.5 (kept); s3 -> t1 with cosine 1 (kept); s1 is not key
        "a s0": e[0], "a s1": e[0], "a s2": e[0], "a s3": e[1],
        "a t0": e[2], "a t1": e[1], "a t2": e[2], "a t3": [1.0, 1.0, 1.0, 1.0],
        # b: s1 -> t1 at 0.4988 (< 0.5), s2 -> t0 (paragraph 0): nothing left, skipped
        "b s0": e[3], "b s1": e[0], "b s2": e[1],
        "b t0": e[1], "b t1": [1.0, 1.0, 1.0, 1.01], "b t2": e[2],
        # c: s1 -> t2 (cosine 1): kept
        "c s0": e[3], "c s1": e[0], "c s2": e[1],
        "c t0": e[1], "c t1": e[2], "c t2": e[0],
    }  # fmt: skip
    path = prepare(documents, teacher, FakeEmbedder(vectors), top_k=2, out=tmp_path / "out")
    assert path == tmp_path / "out" / "yor" / "longppl.json"
    prepared = load_longppl_file(path)
    by_id = {document["id"]: document for document in prepared.documents}
    assert sorted(by_id) == ["a", "c"]
    assert by_id["a"]["key_paragraphs"] == [1, 3]
    assert by_id["a"]["alignment"] == [
        {"source_index": 2, "target_index": 3, "cosine": 0.5, "teacher_ppl": 9.0},
        {"source_index": 3, "target_index": 1, "cosine": 1.0, "teacher_ppl": 4.0},
    ]
    assert by_id["a"]["paragraphs"] == documents[0].target
    assert by_id["c"]["key_paragraphs"] == [2]
    assert prepared.skipped == {"too_few_paragraphs": 1, "no_scorable_paragraph": 0, "no_aligned_key": 1}
    stats = prepared.payload["stats"]
    assert stats["documents_read"] == 4 and stats["documents_kept"] == 2
    assert stats["below_threshold"] == 1 and stats["aligned_to_first_paragraph"] == 1
    assert stats["key_source_paragraphs"] == 2 + 2 + 1 and stats["aligned"] == 3

    # A threshold of 0.49 also keeps b's 0.4988 alignment.
    lower = load_longppl_file(prepare(documents, teacher, FakeEmbedder(vectors), 2, 0.49, out=tmp_path / "low"))
    assert [document["id"] for document in lower.documents] == ["a", "b", "c"]
    assert lower.skipped["no_aligned_key"] == 0


def test_prepare_with_nothing_aligned_writes_nothing(tmp_path: Path) -> None:
    teacher = FakeTeacher({"a s0": [None, 2.0]})
    vectors = {"a s0": [1.0, 0.0], "a s1": [1.0, 0.0], "a t0": [1.0, 0.0], "a t1": [0.0, 1.0]}
    with pytest.raises(LongPPLFileError, match="no document of 1 has an aligned key paragraph"):
        prepare([_document("a", 2)], teacher, FakeEmbedder(vectors), 1, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_prepare_with_real_models_aligns_identical_paragraphs(
    tmp_path: Path, teacher_dir: Path, embedder_dir: Path
) -> None:
    """Identical source and target paragraphs: the tiny encoder gives cosine 1 with the paragraph itself."""
    documents = [
        ParallelDocument(f"d{j}", "eng", "yor", CORPUS[5 * j : 5 * j + 5], CORPUS[5 * j : 5 * j + 5]) for j in range(3)
    ]
    path = prepare(documents, str(teacher_dir), str(embedder_dir), top_k=2, out=tmp_path / "out")
    prepared = load_longppl_file(path)
    teacher = longppl.CausalLMTeacher(str(teacher_dir))
    for document, entry in zip(documents, prepared.documents, strict=True):
        expected_keys = select_key(teacher.paragraph_perplexities(document.source), 2)
        assert entry["key_paragraphs"] == sorted(expected_keys)
        for pair in entry["alignment"]:
            assert pair["target_index"] == pair["source_index"]
            assert pair["cosine"] == pytest.approx(1.0, abs=1e-9)
    assert prepared.payload["teacher"] == str(teacher_dir) and prepared.payload["teacher_max_length"] == 512


# ------------------------------------------------------------------------------------------------ schema


def _valid_payload() -> dict:
    return {
        "schema": "finetasks-afr/longppl",
        "version": 1,
        "language": "yor",
        "teacher": "teacher-model",
        "teacher_max_length": 2048,
        "embedder": "embedder-model",
        "top_k": 2,
        "threshold": 0.5,
        "separator": "\n\n",
        "documents": [
            {
                "id": "d0",
                "source_lang": "eng",
                "paragraphs": ["p0", "p1", "p2"],
                "key_paragraphs": [1, 2],
                "alignment": [
                    {"source_index": 1, "target_index": 1, "cosine": 0.9, "teacher_ppl": 12.5},
                    {"source_index": 3, "target_index": 2, "cosine": 0.5, "teacher_ppl": 7.0},
                ],
            },
            {
                "id": "d1",
                "source_lang": "eng",
                "paragraphs": ["q0", "q1"],
                "key_paragraphs": [1],
                "alignment": [{"source_index": 2, "target_index": 1, "cosine": 1.0, "teacher_ppl": 3.0}],
            },
        ],
        "skipped": {"too_few_paragraphs": 0, "no_scorable_paragraph": 0, "no_aligned_key": 4},
        "stats": {"documents_read": 6, "documents_kept": 2},
    }


def _set(payload: dict, path: str, value: object) -> dict:
    """Set (or delete, value=...) the field at a dotted path with [i] indices."""
    parts = path.replace("[", ".").replace("]", "").split(".")
    target = payload
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    last = parts[-1]
    if value is ...:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return payload


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("schema", "something/else", "schema: expected 'finetasks-afr/longppl'"),
        ("version", 2, "version: expected 1, got 2 (unknown version; this finetasks-afr reads version 1)"),
        ("version", True, "version: expected 1"),
        ("language", "yo", "language: expected an ISO 639-3 code"),
        ("teacher", ..., "teacher: expected a value (field missing)"),
        ("top_k", 0, "top_k: expected an integer in >= 1, got 0"),
        ("threshold", "0.5", "threshold: expected a finite number in [-1.0, 1.0], got '0.5'"),
        ("skipped.no_aligned_key", -1, "skipped.no_aligned_key: expected an integer in >= 0"),
        ("documents", [], "documents: expected a non-empty list, got a list (every document was skipped"),
        ("documents[1].id", "d0", "documents[1].id: expected an id not used before (documents[0] has it)"),
        ("documents[0].paragraphs", ["only"], "documents[0].paragraphs: expected at least 2 paragraphs"),
        ("documents[0].paragraphs[2]", "", "documents[0].paragraphs[2]: expected a non-empty string"),
        ("documents[0].key_paragraphs[0]", 0, "documents[0].key_paragraphs[0]: expected an integer in 1..2, got 0"),
        ("documents[0].key_paragraphs[1]", 3, "documents[0].key_paragraphs[1]: expected an integer in 1..2, got 3"),
        ("documents[0].key_paragraphs[1]", 1.5, "documents[0].key_paragraphs[1]: expected an integer in 1..2"),
        ("documents[0].key_paragraphs", [2, 1], "documents[0].key_paragraphs[1]: expected an index above 2"),
        ("documents[1].key_paragraphs", [], "documents[1].key_paragraphs: expected a non-empty list"),
        ("documents[0].alignment[1].target_index", 1, "documents[0].key_paragraphs[1]: expected a target_index"),
        ("documents[1].alignment[0].target_index", 5, "documents[1].alignment[0].target_index: expected an integer"),
        ("documents[0].alignment[1].cosine", 0.4, "documents[0].alignment[1].cosine: expected a finite number in"),
        ("documents[0].alignment[0].cosine", 1.1, "documents[0].alignment[0].cosine: expected a finite number in"),
        ("documents[0].alignment[0].teacher_ppl", float("nan"), "documents[0].alignment[0].teacher_ppl: expected"),
        ("documents[0].alignment[0].source_index", 0, "documents[0].alignment[0].source_index: expected an integer"),
        ("documents[1].alignment[0]", "x", "documents[1].alignment[0]: expected an object, got 'x'"),
        ("documents[0].source_lang", ..., "documents[0].source_lang: expected a value (field missing)"),
    ],
)
def test_schema_errors_name_the_file_and_field(tmp_path: Path, field: str, value: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_set(_valid_payload(), field, value)), encoding="utf-8")
    with pytest.raises(LongPPLFileError) as error:
        load_longppl_file(path)
    assert str(error.value).startswith(f"{path}: "), str(error.value)
    assert message in str(error.value), str(error.value)


def test_schema_accepts_the_documented_example_and_rejects_non_json(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_valid_payload()), encoding="utf-8")
    prepared = load_longppl_file(path)
    assert prepared.language == "yor" and prepared.n_key_paragraphs() == 3
    path.write_text("{", encoding="utf-8")
    with pytest.raises(LongPPLFileError, match="not valid JSON"):
        load_longppl_file(path)
    with pytest.raises(LongPPLFileError, match="no such file; write it with `finetasks-afr longppl prepare`"):
        load_longppl_file(tmp_path / "missing.json")


def test_schema_doc_example_is_valid(tmp_path: Path) -> None:
    """The example in docs/longppl-schema.md passes validation (the doc cannot drift from the code)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "longppl-schema.md").read_text(encoding="utf-8")
    example = text.split("<!-- example -->")[1].split("```json")[1].split("```")[0]
    path = tmp_path / "example.json"
    path.write_text(example, encoding="utf-8")
    assert load_longppl_file(path).n_key_paragraphs() >= 1


# ------------------------------------------------------------------------------------- dataset on disk


def test_task_rows_hold_the_whole_preceding_document():
    rows = longppl.task_rows(_valid_payload())
    assert rows[0] == {"document_id": "d0", "paragraph_index": 1, "context": "p0", "paragraph": "p1",
                       "separator": SEPARATOR}  # fmt: skip
    assert rows[1]["context"] == "p0\n\np1" and rows[1]["paragraph"] == "p2"
    assert [row["document_id"] for row in rows] == ["d0", "d0", "d1"]


def test_regenerated_data_is_not_served_stale_by_the_datasets_cache(
    tmp_path: Path, task_info_snapshot: dict[str, TaskInfo]
) -> None:
    """`datasets` caches a local folder by name/config/relative file paths: the digest in the data file's name
    is what makes a regenerated file load its new rows (and change the task's version for lighteval's cache)."""
    import datasets

    from finetasks_afr.benchmarks.longppl import tasks

    first = _valid_payload()
    longppl.write_prepared(first, tmp_path)
    rows = datasets.load_dataset(str(tmp_path / "yor"), "yor", split="test")
    assert rows["paragraph"] == ["p1", "p2", "q1"]
    version = tasks(tmp_path)[0].version

    second = copy.deepcopy(first)
    second["documents"][0]["paragraphs"] = ["new zero", "new one", "new two"]
    longppl.write_prepared(second, tmp_path)
    rows = datasets.load_dataset(str(tmp_path / "yor"), "yor", split="test")
    assert rows["paragraph"] == ["new one", "new two", "q1"]
    assert rows["context"][1] == "new zero\n\nnew one"
    assert len(list((tmp_path / "yor").glob("test-*.jsonl"))) == 1  # the old file is gone
    assert tasks(tmp_path)[0].version != version
    assert load_longppl_file(tmp_path / "yor" / "longppl.json").documents[0]["paragraphs"][0] == "new zero"


# --------------------------------------------------------------------------------------------- task table


def test_tasks_one_per_prepared_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_info_snapshot: dict[str, TaskInfo]
) -> None:
    from finetasks_afr.benchmarks import longppl as family

    monkeypatch.delenv(longppl.DIR_ENV, raising=False)
    assert family.tasks() == []
    monkeypatch.setenv(longppl.DIR_ENV, str(tmp_path / "missing"))
    assert family.tasks() == []

    longppl.write_prepared(_valid_payload(), tmp_path)
    longppl.write_prepared(_valid_payload() | {"language": "hau"}, tmp_path)
    (tmp_path / "notes").mkdir()  # not a language folder
    (tmp_path / "ibo").mkdir()  # a language folder without a dataset
    monkeypatch.setenv(longppl.DIR_ENV, str(tmp_path))
    configs = family.tasks()
    assert [config.name for config in configs] == ["longppl_hau", "longppl_yor"]
    config = configs[1]
    assert (config.hf_repo, config.hf_subset, config.evaluation_splits) == (str(tmp_path / "yor"), "yor", ("test",))
    assert [metric.metric_name for metric in config.metrics] == ["longppl", "log2_longppl"]
    assert all(not metric.higher_is_better for metric in config.metrics)
    info = task_info_snapshot["longppl_yor"]
    assert (info.benchmark, info.language, info.category, info.formulation) == ("longppl", "yor", "GEN", "PPL")
    assert math.isnan(info.random_baseline)  # no chance level for a perplexity (as benchmarks/perplexity.py)


def test_prompt_scores_the_paragraph_after_its_context():
    from finetasks_afr.benchmarks.longppl import longppl_prompt

    row = longppl.task_rows(_valid_payload())[1]
    doc = longppl_prompt(row, "longppl_yor")
    assert (doc.query, doc.choices, doc.gold_index) == ("p0\n\np1", ["\n\np2"], 0)
    assert doc.specific == {"document_id": "d0", "paragraph_index": 2}


# ------------------------------------------------------------------------------------------------ metrics


def test_corpus_metrics_are_token_weighted_by_hand():
    from finetasks_afr.benchmarks.longppl import KeyParagraphScore, Log2LongPPL, LongPPL

    items = [KeyParagraphScore(logprob=-1.0, tokens=1), KeyParagraphScore(logprob=-9.0, tokens=3)]
    # 10 nats over 4 tokens; a mean of per-paragraph perplexities would give (e^1 + e^3) / 2 = 11.4 instead
    assert LongPPL().compute_corpus(items) == pytest.approx(math.exp(2.5), rel=1e-12)
    assert Log2LongPPL().compute_corpus(items) == pytest.approx(2.5 / math.log(2), rel=1e-12)
    assert math.isnan(LongPPL().compute_corpus([]))


def test_preparator_counts_the_continuation_tokens():
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    from finetasks_afr.benchmarks.longppl import KeyParagraphPreparator, continuation_token_count

    assert continuation_token_count(torch.tensor([[5, 6, 7, -1]])) == 3
    assert continuation_token_count([[5, 6]]) == 2
    doc = Doc(query="c", choices=["\n\np"], gold_index=0)
    response = ModelResponse(logprobs=[-4.5], output_tokens=[[1, 2, 3]])
    score = KeyParagraphPreparator().prepare(doc=doc, model_response=response)
    assert (score.logprob, score.tokens) == (-4.5, 3)


def test_analysis_treats_longppl_as_lower_is_better():
    from analysis.scores.metrics import metric_info

    for name in ("longppl", "log2_longppl"):
        info = metric_info(name)
        assert info is not None and not info.higher_is_better and not info.bounded


# -------------------------------------------------------------------------------------------------- CLI


def test_cli_prepare_writes_and_summarises(tmp_path: Path, teacher_dir: Path, embedder_dir: Path) -> None:
    from typer.testing import CliRunner

    from finetasks_afr.cli.longppl import longppl_app as app

    documents = tmp_path / "docs.jsonl"
    rows = [
        {"id": "long", "source_lang": "eng", "target_lang": "hau", "source": "\n\n".join(CORPUS[:4]),
         "target": CORPUS[:4]},
        {"id": "short", "source_lang": "eng", "target_lang": "hau", "source": [CORPUS[9]], "target": [CORPUS[9]]},
    ]  # fmt: skip
    documents.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(app, ["prepare", str(documents), "--teacher", str(teacher_dir), "--embedder",
                                 str(embedder_dir), "--top-k", "2", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "documents kept" in result.output and "too_few_paragraphs" in result.output
    assert "longppl_hau|0" in result.output
    prepared = load_longppl_file(out / "hau" / "longppl.json")
    assert [document["id"] for document in prepared.documents] == ["long"]
    assert prepared.skipped["too_few_paragraphs"] == 1

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0] | {"target_lang": "Hausa"}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["prepare", str(bad), "--teacher", str(teacher_dir), "--embedder",
                                 str(embedder_dir), "--top-k", "2", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2
    assert "bad.jsonl:1: target_lang" in " ".join(result.output.split())
    result = runner.invoke(app, ["prepare", str(tmp_path / "none.jsonl"), "--teacher", "t", "--embedder", "e",
                                 "--top-k", "1", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2 and "documents file not found" in result.output
