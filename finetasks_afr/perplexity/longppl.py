"""Cross-lingual LongPPL: find key paragraphs with a teacher in the source language, carry them to the target.

LongPPL (Fang et al. 2024, "What is Wrong with Perplexity for Long-context Language Modeling?") measures
perplexity only on the tokens that need the long context. Its cross-lingual variant finds the key parts in a
source-language document (where a strong teacher model exists) and transfers them to the parallel target-language
document by alignment, so a low-resource language gets a long-context signal without a teacher of its own.

Here the unit is the paragraph (format: docs/longppl-schema.md):

1. The teacher (any causal LM) scores every source paragraph i >= 1 by its perplexity given the preceding source
   document (under the one scoring core's windowing rule: all of it when the document fits in the teacher's
   length, else at least half a window of it). Paragraph 0 has no preceding document, so it is never a candidate.
2. The `top_k` candidates of highest perplexity are the key paragraphs (ties: the earlier paragraph first).
3. Each key source paragraph is aligned to the target paragraph whose embedding (mean-pooled last hidden state,
   L2-normalised) has the highest cosine with it (ties: the earlier target paragraph); the alignment is kept only
   when the cosine is >= `threshold` and the target paragraph is not paragraph 0 (no context to score it with).
4. A document left without any aligned key paragraph is skipped and counted.

The output folder (`prepare(..., out=DIR)`, one sub-folder per target language) holds the versioned JSON file and
a dataset folder that the lighteval task `longppl_<iso3>` (finetasks_afr.benchmarks.longppl) reads offline.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from analysis.base.encoding import TextEncodingError, read_user_text
from analysis.base.io import atomic_write_text
from analysis.base.write_errors import writing
from finetasks_afr.data.local_dataset import removed_if_failed, write_dataset_folder
from finetasks_afr.data.sources import LANGUAGE_CODE, LONGPPL_DIR_ENV, LONGPPL_SPLIT
from finetasks_afr.scoring import core as scoring

SCHEMA = "finetasks-afr/longppl"
VERSION = 1
SEPARATOR = "\n\n"  # paragraphs are joined with a blank line; a paragraph is scored with the break before it
JSON_NAME = "longppl.json"
DIR_ENV = LONGPPL_DIR_ENV  # where the LongPPL tasks read what `prepare` writes (finetasks_afr.data.sources)
SPLIT = LONGPPL_SPLIT
ISO3 = LANGUAGE_CODE
_BLANK_LINE = re.compile(r"\n[ \t]*\n")

Progress = Callable[[int, int, str], None]


class LongPPLFileError(ValueError):
    """A prepared file or an input file that does not follow its documented format."""


class LongPPLInputError(ValueError):
    """The parallel-documents JSONL is malformed (names the file, line and field)."""


# ------------------------------------------------------------------------------------------------ input


@dataclass(frozen=True)
class ParallelDocument:
    """One document in two languages, as paragraph lists (indices are positions in these lists)."""

    id: str
    source_lang: str
    target_lang: str
    source: list[str]
    target: list[str]


def split_paragraphs(text: str) -> list[str]:
    """A text -> its paragraphs: split on blank lines, each stripped, empty ones dropped."""
    return [part.strip() for part in _BLANK_LINE.split(text.replace("\r\n", "\n")) if part.strip()]


def _paragraphs(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return split_paragraphs(value)
    if not isinstance(value, list):
        raise LongPPLInputError(f"{where}: expected a list of paragraph strings or one string, got {_kind(value)}")
    paragraphs = []
    for index, paragraph in enumerate(value):
        if not isinstance(paragraph, str) or not paragraph.strip():
            raise LongPPLInputError(f"{where}[{index}]: expected a non-empty string, got {paragraph!r}")
        paragraphs.append(paragraph.strip())
    return paragraphs


def _language(value: Any, where: str) -> str:
    if not isinstance(value, str) or not ISO3.fullmatch(value):
        raise LongPPLInputError(f"{where}: expected an ISO 639-3 code (3 lower-case letters), got {value!r}")
    return value


def read_documents(path: Path) -> list[ParallelDocument]:
    """Read and check the parallel-documents JSONL (one language pair per document, one target language)."""
    path = Path(path)
    documents: list[ParallelDocument] = []
    seen: dict[str, int] = {}
    try:
        text = read_user_text(path)
    except TextEncodingError as error:
        raise LongPPLInputError(str(error)) from None
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 may sit inside a string
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise LongPPLInputError(f"{where}: not valid JSON ({error})") from error
        if not isinstance(row, dict):
            raise LongPPLInputError(f"{where}: expected a JSON object, got {_kind(row)}")
        missing = [key for key in ("id", "source_lang", "target_lang", "source", "target") if key not in row]
        if missing:
            raise LongPPLInputError(f"{where}: missing field(s) {', '.join(missing)}")
        doc_id = row["id"]
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or not str(doc_id).strip():
            raise LongPPLInputError(f"{where}: id: expected a non-empty string, got {doc_id!r}")
        doc_id = str(doc_id)
        if doc_id in seen:
            raise LongPPLInputError(f"{where}: id {doc_id!r} already used on line {seen[doc_id]}")
        seen[doc_id] = number
        document = ParallelDocument(
            id=doc_id,
            source_lang=_language(row["source_lang"], f"{where}: source_lang"),
            target_lang=_language(row["target_lang"], f"{where}: target_lang"),
            source=_paragraphs(row["source"], f"{where}: source"),
            target=_paragraphs(row["target"], f"{where}: target"),
        )
        if documents and document.target_lang != documents[0].target_lang:
            raise LongPPLInputError(
                f"{where}: target_lang {document.target_lang!r} differs from {documents[0].target_lang!r} "
                "(line 1 onwards); prepare one file per target language"
            )
        documents.append(document)
    if not documents:
        raise LongPPLInputError(f"{path}: no documents")
    return documents


# ------------------------------------------------------------------------------------------------ teacher


class Teacher(Protocol):
    """Scores paragraphs by perplexity given the preceding paragraphs of their document."""

    name: str
    max_length: int

    def paragraph_perplexities(self, paragraphs: Sequence[str]) -> list[float | None]:
        """Perplexity of each paragraph i >= 1 given the paragraphs before it (as much of them as the teacher's
        windowing rule gives it); None for paragraph 0 (never key: it has no context)."""
        ...


def paragraph_token_ids(tokenizer: Any, paragraphs: Sequence[str]) -> list[list[int]]:
    """Each paragraph's tokens as the teacher sees them: paragraph 0 with the tokenizer's special tokens (a final
    eos dropped), every later one as SEPARATOR + paragraph without special tokens (so the blank line that opens
    a paragraph is part of it, as in the evaluation task)."""
    first = list(tokenizer(paragraphs[0], add_special_tokens=True)["input_ids"])
    if first and first[-1] == tokenizer.eos_token_id and len(first) > 1:
        first = first[:-1]
    rest = [list(tokenizer(SEPARATOR + text, add_special_tokens=False)["input_ids"]) for text in paragraphs[1:]]
    return [first, *rest]


class CausalLMTeacher:
    """A transformers causal LM as the teacher, scoring through the one scoring core (`finetasks_afr.scoring.core`).

    A document's token sequence is the concatenation of `paragraph_token_ids`; its first token (the BOS the
    tokenizer adds, else the core's prefix token) conditions the rest. The document is scored once under the
    core's windowing rule (the whole document when it fits in `max_length` inputs, else sliding windows advancing
    by half a window, each token scored once with at least half a window of context), and a paragraph's perplexity
    is exp of the mean negative log-probability of its own tokens. So the teacher's numbers are those the
    perplexity tasks and `recommend` would give for the same tokens."""

    def __init__(self, model: str, *, max_length: int | None = None, device: str = "cpu", batch_size: int = 8) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = model
        self.device = device
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        loaded = AutoModelForCausalLM.from_pretrained(model, **scoring.weights_dtype(torch.float32))
        self.model = loaded.to(device).eval()  # type: ignore[arg-type]  # transformers types .to as unbound
        self.max_length = max_length or _model_max_length(self.model.config, self.tokenizer, model)

    def paragraph_perplexities(self, paragraphs: Sequence[str]) -> list[float | None]:

        pieces = paragraph_token_ids(self.tokenizer, paragraphs)
        tokens = [token for piece in pieces for token in piece]
        if tokens and tokens[0] == self.tokenizer.bos_token_id:
            prefix, scored_tokens, offset = tokens[0], tokens[1:], 1
        else:
            prefix, scored_tokens, offset = scoring.prefix_token_id(self.tokenizer), tokens, 0
        (result,) = scoring.score_token_texts(
            self.model, [scored_tokens], prefix=prefix, max_length=self.max_length, batch_size=self.batch_size,
            pad_id=scoring.pad_token_id(self.tokenizer), keep_tokens=True,
        )  # fmt: skip
        logprobs = np.asarray(result.token_logprobs, dtype=np.float64)
        ends = np.cumsum([len(piece) for piece in pieces]) - offset
        out: list[float | None] = [None]
        for i in range(1, len(pieces)):
            span = logprobs[ends[i] - len(pieces[i]) : ends[i]]
            out.append(math.exp(-float(span.sum()) / len(span)) if len(span) else None)
        return out


def _model_max_length(config: Any, tokenizer: Any, name: str) -> int:
    for value in (getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)):
        if isinstance(value, int) and 1 < value < 1_000_000:
            return value
    raise ValueError(f"{name}: cannot tell the model's maximum length; pass --teacher-max-length")


def select_key(perplexities: Sequence[float | None], top_k: int) -> list[int]:
    """The indices of the `top_k` highest perplexities (None = not a candidate); ties go to the earlier paragraph.
    Returned in rank order (highest first)."""
    candidates = [(value, index) for index, value in enumerate(perplexities) if value is not None]
    candidates.sort(key=lambda item: (-item[0], item[1]))
    return [index for _, index in candidates[:top_k]]


# ----------------------------------------------------------------------------------------------- embedder


class Embedder(Protocol):
    """Maps texts to embeddings (rows); cosines are taken after L2 normalisation."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class MeanPoolEmbedder:
    """A transformers encoder (AutoModel): mean of the last hidden state over the attention mask, L2-normalised.
    Texts longer than `max_length` tokens are cut on the right (the start of a paragraph carries its topic)."""

    def __init__(self, model: str, *, max_length: int = 512, device: str = "cpu", batch_size: int = 32) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.name = model
        self.device = device
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = AutoModel.from_pretrained(model, **scoring.weights_dtype(torch.float32)).to(device).eval()
        self.max_length = max_length

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        rows = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                list(texts[start : start + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state.double()
            mask = batch["attention_mask"].unsqueeze(-1).double()
            rows.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).cpu().numpy())
        return normalise(np.concatenate(rows))


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float64; a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def align(source: np.ndarray, target: np.ndarray, keys: Sequence[int]) -> list[tuple[int, int, float]]:
    """For each key source row: (source index, best target index, cosine). Rows are normalised here, cosines clipped
    to [-1, 1]; ties go to the earlier target paragraph."""
    cosines = np.clip(normalise(source)[list(keys)] @ normalise(target).T, -1.0, 1.0)  # rounding: 1 + 2e-16
    return [(key, int(np.argmax(row)), float(row.max())) for key, row in zip(keys, cosines, strict=True)]


# -------------------------------------------------------------------------------------------- preparation


@dataclass
class Counts:
    """What preparation dropped, per reason (written to the file and printed)."""

    skipped: Counter[str] = field(default_factory=Counter)  # documents
    stats: Counter[str] = field(default_factory=Counter)  # paragraphs and alignments


def prepare_document(
    document: ParallelDocument, teacher: Teacher, embedder: Embedder, top_k: int, threshold: float, counts: Counts
) -> dict[str, Any] | None:
    """One document's entry of the output file, or None (skipped, counted) when no key paragraph aligns."""
    if len(document.source) < 2 or len(document.target) < 2:
        counts.skipped["too_few_paragraphs"] += 1
        return None
    perplexities = teacher.paragraph_perplexities(document.source)
    counts.stats["source_paragraphs_too_long"] += sum(value is None for value in perplexities[1:])
    keys = select_key(perplexities, top_k)
    if not keys:
        counts.skipped["no_scorable_paragraph"] += 1
        return None
    counts.stats["key_source_paragraphs"] += len(keys)
    embeddings = embedder.embed([*document.source, *document.target])
    pairs = align(embeddings[: len(document.source)], embeddings[len(document.source) :], sorted(keys))
    alignment: list[dict[str, Any]] = []  # the prepared file's alignment records (schema: docs/longppl-schema.md)
    for source_index, target_index, cosine in pairs:
        if cosine < threshold:
            counts.stats["below_threshold"] += 1
        elif target_index == 0:
            counts.stats["aligned_to_first_paragraph"] += 1
        else:
            alignment.append(
                {
                    "source_index": source_index,
                    "target_index": target_index,
                    "cosine": cosine,
                    "teacher_ppl": perplexities[source_index],
                }
            )
    if not alignment:
        counts.skipped["no_aligned_key"] += 1
        return None
    key_paragraphs = sorted({pair["target_index"] for pair in alignment})
    counts.stats["aligned"] += len(alignment)
    counts.stats["key_paragraphs"] += len(key_paragraphs)
    counts.stats["shared_target_paragraph"] += len(alignment) - len(key_paragraphs)
    return {
        "id": document.id,
        "source_lang": document.source_lang,
        "paragraphs": list(document.target),
        "key_paragraphs": key_paragraphs,
        "alignment": alignment,
    }


def prepare(
    documents: Path | Sequence[ParallelDocument],
    teacher: str | Teacher,
    embedder: str | Embedder,
    top_k: int,
    threshold: float = 0.5,
    *,
    out: Path,
    teacher_max_length: int | None = None,
    embedder_max_length: int = 512,
    device: str = "cpu",
    progress: Progress | None = None,
) -> Path:
    """Select, align and write: `<out>/<target iso3>/longppl.json` plus the task's dataset folder beside it.

    `teacher` / `embedder` are model paths or hub ids (loaded with transformers), or ready objects (tests).
    Returns the JSON file's path."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold is a cosine: it must lie in [-1, 1], got {threshold}")
    docs = read_documents(Path(documents)) if isinstance(documents, str | Path) else list(documents)
    if not docs:
        raise ValueError("no documents to prepare")
    if isinstance(teacher, str):
        teacher = CausalLMTeacher(teacher, max_length=teacher_max_length, device=device)
    if isinstance(embedder, str):
        embedder = MeanPoolEmbedder(embedder, max_length=embedder_max_length, device=device)
    counts = Counts()
    kept = []
    for done, document in enumerate(docs):
        if progress:
            progress(done, len(docs), document.id)
        entry = prepare_document(document, teacher, embedder, top_k, threshold, counts)
        if entry is not None:
            kept.append(entry)
    if progress:
        progress(len(docs), len(docs), "written")
    if not kept:
        raise LongPPLFileError(
            f"no document of {len(docs)} has an aligned key paragraph (skipped: {dict(counts.skipped)}); "
            "nothing written. Lower --threshold or check the source/target pairing."
        )
    payload = {
        "schema": SCHEMA,
        "version": VERSION,
        "language": docs[0].target_lang,
        "teacher": teacher.name,
        "teacher_max_length": teacher.max_length,
        "embedder": embedder.name,
        "top_k": top_k,
        "threshold": threshold,
        "separator": SEPARATOR,
        "documents": kept,
        "skipped": {reason: counts.skipped[reason] for reason in SKIP_REASONS},
        "stats": {"documents_read": len(docs), "documents_kept": len(kept)}
        | {name: counts.stats[name] for name in STAT_NAMES},
    }
    return write_prepared(payload, Path(out))


SKIP_REASONS = ("too_few_paragraphs", "no_scorable_paragraph", "no_aligned_key")
STAT_NAMES = (
    "key_source_paragraphs",
    "aligned",
    "below_threshold",
    "aligned_to_first_paragraph",
    "shared_target_paragraph",
    "key_paragraphs",
    "source_paragraphs_too_long",
)


# --------------------------------------------------------------------------------------- output on disk


def language_dir(root: Path, language: str) -> Path:
    """Where a language's prepared file and dataset live: `<root>/<iso3>/`."""
    return Path(root) / language


def task_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per key paragraph: what the lighteval task scores (context = every preceding paragraph)."""
    separator = payload["separator"]
    rows = []
    for document in payload["documents"]:
        paragraphs = document["paragraphs"]
        for index in document["key_paragraphs"]:
            rows.append(
                {
                    "document_id": document["id"],
                    "paragraph_index": index,
                    "context": separator.join(paragraphs[:index]),
                    "paragraph": paragraphs[index],
                    "separator": separator,
                }
            )
    return rows


def _card(language: str) -> str:
    return "\n".join(
        [
            f"# LongPPL key paragraphs ({language})",
            "",
            f"Written by `finetasks-afr longppl prepare` from {JSON_NAME} (schema {SCHEMA} v{VERSION}, see",
            "docs/longppl-schema.md). One row per key paragraph: document_id, paragraph_index, context (the",
            "preceding paragraphs joined by the separator), paragraph, separator.",
            "",
        ]
    )


def write_prepared(payload: dict[str, Any], root: Path) -> Path:
    """Write the JSON, then the task's dataset folder beside it (`test-<content digest>.jsonl` and the README, by
    `finetasks_afr.data.local_dataset`, which removes the data files of earlier runs). Every write is atomic.

    The two belong together (the task reads the folder, `load_longppl_file` the JSON), so a failure of either (a
    full disk, a file-size limit) keeps the previous pair: the previous JSON is kept under a second name (a hard
    link: no data is copied, so this works on a full disk) until the dataset folder is complete, and put back when
    it is not. The folders this call made are removed again on a failure.
    """
    folder = language_dir(root, payload["language"])
    json_path = folder / JSON_NAME
    validate(payload, json_path)  # never write a file that would not read back
    previous = folder / f".{JSON_NAME}.previous"
    language = payload["language"]
    with removed_if_failed(folder):
        folder.mkdir(parents=True, exist_ok=True)
        previous.unlink(missing_ok=True)
        if json_path.is_file():
            try:
                os.link(json_path, previous)
            except OSError:  # a file system without hard links
                shutil.copy2(json_path, previous)
        try:
            with writing(json_path):
                atomic_write_text(json_path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
            write_dataset_folder(folder, {language: {SPLIT: task_rows(payload)}}, card=_card(language),
                                 config_folders=False)  # fmt: skip
        except BaseException:
            if previous.is_file():
                previous.replace(json_path)
            else:
                json_path.unlink(missing_ok=True)
            raise
        previous.unlink(missing_ok=True)
    return json_path


# ------------------------------------------------------------------------------------------------ validation


@dataclass(frozen=True)
class LongPPLFile:
    """A validated prepared file."""

    path: Path
    payload: dict[str, Any]

    @property
    def language(self) -> str:
        return self.payload["language"]

    @property
    def documents(self) -> list[dict[str, Any]]:
        return self.payload["documents"]

    @property
    def skipped(self) -> dict[str, int]:
        return self.payload["skipped"]

    def n_key_paragraphs(self) -> int:
        return sum(len(document["key_paragraphs"]) for document in self.documents)


def load_longppl_file(path: Path) -> LongPPLFile:
    """Read and validate a prepared file; LongPPLFileError names the file, the field (JSON path) and the fix."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise LongPPLFileError(f"{path}: no such file; write it with `finetasks-afr longppl prepare`") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise LongPPLFileError(f"{path}: not valid JSON ({error})") from error
    validate(payload, path)
    return LongPPLFile(path=path, payload=payload)


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


class _Checker:
    """Collects the path prefix for messages: `<file>: documents[3].key_paragraphs[0]: expected ..., got ...`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, expected: str, got: Any = ..., hint: str = "") -> LongPPLFileError:
        shown = "" if got is ... else f", got {got!r}" if not isinstance(got, dict | list) else f", got {_kind(got)}"
        return LongPPLFileError(f"{self.path}: {where}: expected {expected}{shown}" + (f" ({hint})" if hint else ""))

    def field(self, obj: dict, key: str, where: str) -> Any:
        if key not in obj:
            raise self.fail(f"{where}.{key}" if where else key, "a value", hint="field missing")
        return obj[key]

    def integer(self, value: Any, where: str, low: int, high: int | None = None, hint: str = "") -> int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
        if not ok:
            span = f"{low}..{high}" if high is not None else f">= {low}"
            raise self.fail(where, f"an integer in {span}", value, hint)
        return value

    def number(self, value: Any, where: str, low: float, high: float = math.inf, hint: str = "") -> float:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or not low <= value <= high:
            raise self.fail(where, f"a finite number in [{low}, {high}]", value, hint)
        return float(value)

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "a non-empty string", value)
        return value

    def array(self, value: Any, where: str, *, non_empty: bool = True, hint: str = "") -> list:
        if not isinstance(value, list):
            raise self.fail(where, "a list", value)
        if non_empty and not value:
            raise self.fail(where, "a non-empty list", value, hint)
        return value


def validate(payload: Any, path: Path) -> None:
    """Raise LongPPLFileError at the first field that breaks docs/longppl-schema.md."""
    check = _Checker(path)
    if not isinstance(payload, dict):
        raise check.fail("(top level)", "an object", payload)
    if payload.get("schema") != SCHEMA:
        raise check.fail("schema", repr(SCHEMA), payload.get("schema"), "not a finetasks-afr LongPPL file")
    version = payload.get("version")
    if version != VERSION or isinstance(version, bool):
        raise check.fail(
            "version", str(VERSION), version, f"unknown version; this finetasks-afr reads version {VERSION}"
        )
    language = check.field(payload, "language", "")
    if not isinstance(language, str) or not ISO3.fullmatch(language):
        raise check.fail("language", "an ISO 639-3 code (3 lower-case letters)", language)
    check.text(check.field(payload, "teacher", ""), "teacher")
    check.integer(check.field(payload, "teacher_max_length", ""), "teacher_max_length", 2)
    check.text(check.field(payload, "embedder", ""), "embedder")
    top_k = check.integer(check.field(payload, "top_k", ""), "top_k", 1)
    threshold = check.number(check.field(payload, "threshold", ""), "threshold", -1.0, 1.0)
    separator = check.field(payload, "separator", "")
    if not isinstance(separator, str) or not separator:
        raise check.fail("separator", "a non-empty string", separator)
    for name in ("skipped", "stats"):
        counts = check.field(payload, name, "")
        if not isinstance(counts, dict):
            raise check.fail(name, "an object of counts", counts)
        for key, value in counts.items():
            check.integer(value, f"{name}.{key}", 0)
    documents = check.array(
        check.field(payload, "documents", ""), "documents", hint="every document was skipped: see `skipped`"
    )
    seen: dict[str, int] = {}
    for number, document in enumerate(documents):
        where = f"documents[{number}]"
        if not isinstance(document, dict):
            raise check.fail(where, "an object", document)
        doc_id = check.text(check.field(document, "id", where), f"{where}.id")
        if doc_id in seen:
            raise check.fail(f"{where}.id", f"an id not used before (documents[{seen[doc_id]}] has it)", doc_id)
        seen[doc_id] = number
        _validate_document(check, document, where, top_k, threshold)


def _validate_document(check: _Checker, document: dict, where: str, top_k: int, threshold: float) -> None:
    source_lang = check.field(document, "source_lang", where)
    if not isinstance(source_lang, str) or not ISO3.fullmatch(source_lang):
        raise check.fail(f"{where}.source_lang", "an ISO 639-3 code (3 lower-case letters)", source_lang)
    paragraphs = check.array(check.field(document, "paragraphs", where), f"{where}.paragraphs")
    if len(paragraphs) < 2:
        raise check.fail(f"{where}.paragraphs", "at least 2 paragraphs", f"{len(paragraphs)} paragraph")
    for index, paragraph in enumerate(paragraphs):
        check.text(paragraph, f"{where}.paragraphs[{index}]")
    last = len(paragraphs) - 1
    no_context = "paragraph 0 has no preceding context and is never key"
    keys = check.array(check.field(document, "key_paragraphs", where), f"{where}.key_paragraphs")
    for index, key in enumerate(keys):
        check.integer(key, f"{where}.key_paragraphs[{index}]", 1, last, no_context)
        if index and key <= keys[index - 1]:
            raise check.fail(
                f"{where}.key_paragraphs[{index}]", f"an index above {keys[index - 1]} (sorted, unique)", key
            )
    alignment = check.array(check.field(document, "alignment", where), f"{where}.alignment")
    if len(alignment) > top_k:
        raise check.fail(f"{where}.alignment", f"at most top_k = {top_k} entries", f"{len(alignment)} entries")
    targets = set()
    for index, pair in enumerate(alignment):
        at = f"{where}.alignment[{index}]"
        if not isinstance(pair, dict):
            raise check.fail(at, "an object", pair)
        check.integer(check.field(pair, "source_index", at), f"{at}.source_index", 1, hint=no_context)
        target = check.integer(check.field(pair, "target_index", at), f"{at}.target_index", 1, last, no_context)
        if target not in keys:
            raise check.fail(f"{at}.target_index", f"one of key_paragraphs {keys}", target)
        targets.add(target)
        check.number(
            check.field(pair, "cosine", at),
            f"{at}.cosine",
            threshold,
            1.0,
            "kept alignments reach the threshold",
        )
        check.number(check.field(pair, "teacher_ppl", at), f"{at}.teacher_ppl", 1.0)
    for index, key in enumerate(keys):
        if key not in targets:
            raise check.fail(f"{where}.key_paragraphs[{index}]", "a target_index of some alignment entry", key)
