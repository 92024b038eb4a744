"""Build local mirrors of the hub datasets our tasks use (layout: see :mod:`finetasks_afr.sources`).

Two ways to fill ``<out>/<key>/``:

* :func:`mirror_from_hub` (machines with hub access): every config of every source, loaded with
  ``datasets.load_dataset(hub_repo, config, revision=...)`` and written split by split; the features come
  from the hub, so the mirror has exactly the hub's schema.
* :func:`import_raw` (air-gapped machines, tests): the same layout from the raw GitHub releases laid out as in
  ``shared/data`` (``bridging_the_gap/``, ``sib200/``, ``masakhanews/``, ``afrisenti/``, ``afriqa/``). Config
  names, split names and fields follow the hub where known (raw ``dev`` becomes ``validation`` except for
  Bridging-the-Gap, whose hub split names are ``dev``/``val``/``test``) and project-defined choices where the
  hub is unknown (see ``SOURCES[key].notes``). Rows that cannot be converted (missing field, bad label) are
  skipped and counted in the :class:`MirrorReport`.

Per dataset: an existing README.md is removed first, every data file is written to a temporary file in the
same directory and moved into place with ``os.replace``, README.md is written last (also atomically), and only
then are data files it no longer lists removed. A half-built dataset therefore has no README.md and
:func:`finetasks_afr.sources.hf_location` keeps using the hub. Re-running replaces the dataset.

Raw-import field choices (hub schema where known):

=================  ===========================================  ==========================================
key                configs / splits                             fields
=================  ===========================================  ==========================================
winogrande_afr     af am bm ig nso sn st tn ts xh zu en;        qID, Sentence, Option1, Option2,
                   train_s dev test (raw ``Split`` column)      Answer ("1"/"2")
mmlu_clinical_afr  <subject>_<lang>, <subject>_en; dev val test Question, OptionA..OptionD, Answer (A-D)
belebele           row ``dialect`` (FLORES code); test          link, question_number, flores_passage,
                                                                question, mc_answer1..4,
                                                                correct_answer_num ("1"-"4"), dialect, ds
sib200             folder (hau_Latn, ...); train validation     index_id (int), category, text
                   test
masakhanews        folder; (train) validation test              category, headline, text, url
afrisenti          folder; (train) validation test              tweet, label (negative/positive/neutral)
afriqa             folder under afriqa/gold_passages;           answer_pivot {answer_start, text}, context,
                   train validation test                        id, question_lang, question_translated,
                                                                title, answer_lang (null when missing)
=================  ===========================================  ==========================================

afriqa keeps rows whose ``answer_start`` is empty (answer not located in the passage; in the raw data these
are mostly the rows whose ``context`` is null): task prompt functions must skip rows without a context. Rows
without any answer text are skipped.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import math
import os
import re
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from finetasks_afr.sources import DATA_DIR_ENV, README_NAME, SOURCES, DatasetSource, source

Progress = Callable[[int, int, str], None]
"""``progress(done, total, label)``: called once before work starts and after each unit of work."""

OFFLINE_HINT = "the hub is unreachable; use `finetasks-afr data import-raw` or copy a mirror"

csv.field_size_limit(sys.maxsize)


class MirrorError(ValueError):
    """Bad input for building a mirror (missing raw folder, dataset without a raw importer)."""


class HubUnreachableError(RuntimeError):
    """The Hugging Face Hub cannot be reached (offline mode, no network)."""


# --------------------------------------------------------------------------------------------- report


@dataclass
class SplitCount:
    rows: int = 0
    skipped: int = 0
    reasons: Counter[str] = field(default_factory=Counter)


@dataclass
class MirrorReport:
    """Row and skip counts per dataset / config / split, plus notes and per-dataset errors."""

    out: Path
    counts: dict[str, dict[str, dict[str, SplitCount]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, dataset: str, config: str, split: str) -> SplitCount:
        return self.counts.setdefault(dataset, {}).setdefault(config, {}).setdefault(split, SplitCount())

    def _select(self, dataset: str | None, config: str | None, split: str | None) -> Iterator[SplitCount]:
        for ds_name, configs in self.counts.items():
            if dataset is not None and ds_name != dataset:
                continue
            for cfg_name, splits in configs.items():
                if config is not None and cfg_name != config:
                    continue
                for split_name, count in splits.items():
                    if split is None or split_name == split:
                        yield count

    def rows(self, dataset: str | None = None, config: str | None = None, split: str | None = None) -> int:
        return sum(count.rows for count in self._select(dataset, config, split))

    def skipped(self, dataset: str | None = None, config: str | None = None, split: str | None = None) -> int:
        return sum(count.skipped for count in self._select(dataset, config, split))

    def configs(self, dataset: str) -> list[str]:
        """Configs of ``dataset`` that have at least one row (the ones listed in its README)."""
        return [name for name, splits in self.counts.get(dataset, {}).items() if any(c.rows for c in splits.values())]

    def per_dataset(self) -> list[tuple[str, int, int, int]]:
        """``(dataset, configs, rows, skipped)`` per dataset, in build order."""
        return [(name, len(self.configs(name)), self.rows(name), self.skipped(name)) for name in self.counts]

    def summary(self) -> str:
        lines = [f"mirror at {self.out}"]
        for name, n_configs, n_rows, n_skipped in self.per_dataset():
            lines.append(f"  {name}: {n_configs} configs, {n_rows} rows, {n_skipped} skipped")
            for cfg_name, splits in self.counts[name].items():
                for split_name, count in splits.items():
                    if count.skipped:
                        reasons = "; ".join(f"{reason} x{n}" for reason, n in count.reasons.most_common())
                        lines.append(f"    skipped {cfg_name}/{split_name}: {count.skipped} ({reasons})")
        lines.append(f"  total: {self.rows()} rows, {self.skipped()} skipped, {self.seconds:.1f} s")
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  ERROR: {error}" for error in self.errors]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ writing


def _atomic_write(path: Path, write: Callable[[Any], None]) -> None:
    """Write ``path`` via a temporary file in the same directory and ``os.replace``; no temp file survives."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp_name).replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp_name).unlink()
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def _json_line(row: Mapping[str, Any]) -> str:
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN/inf: not valid JSON for the datasets json loader
        return json.dumps(_nan_to_none(row), ensure_ascii=False)


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    def write(handle: Any) -> None:
        for row in rows:
            handle.write(_json_line(row))
            handle.write("\n")

    _atomic_write(path, write)


def _ordered_splits(splits: Iterable[str], src: DatasetSource) -> list[str]:
    known = [s for s in src.splits if s in splits]
    return known + sorted(s for s in splits if s not in src.splits)


def _readme_text(
    src: DatasetSource,
    layout: Mapping[str, Sequence[str]],
    features: Mapping[str, list[dict[str, Any]]],
    origin: str,
    report: MirrorReport,
) -> str:
    front: dict[str, Any] = {
        "configs": [
            {
                "config_name": cfg,
                "data_files": [{"split": split, "path": f"{cfg}/{split}.jsonl"} for split in splits],
            }
            for cfg, splits in layout.items()
        ],
        "dataset_info": [{"config_name": cfg, "features": features[cfg]} for cfg in layout if cfg in features],
    }
    header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
    table = ["| config | split | rows | skipped |", "|---|---|---|---|"]
    for cfg, splits in layout.items():
        for split in splits:
            count = report.count(src.key, cfg, split)
            table.append(f"| {cfg} | {split} | {count.rows} | {count.skipped} |")
    built = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = [
        f"# {src.key}: local mirror of `{src.hub_repo}`",
        "",
        "Written by finetasks-afr (layout: `finetasks_afr/sources.py`). Load it with",
        f"`datasets.load_dataset('<this directory>', name=<config>)`; point `{DATA_DIR_ENV}` at its parent.",
        "",
        f"- origin: {origin}",
        f"- built: {built}",
        f"- hub notes: {src.notes}",
        "",
        *table,
        "",
    ]
    return f"---\n{header}---\n" + "\n".join(body)


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


class _DatasetWriter:
    """Writes one dataset directory: README removed first, data files atomically, README last, stale files last."""

    def __init__(self, out: Path, src: DatasetSource, report: MirrorReport) -> None:
        self.root = out / src.key
        self.src = src
        self.report = report
        self.layout: dict[str, list[str]] = {}
        self.features: dict[str, list[dict[str, Any]]] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (self.root / README_NAME).unlink()

    def write_split(self, config: str, split: str, rows: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]]):
        for name in (config, split):
            if not _SAFE_NAME.fullmatch(name):
                raise MirrorError(f"{self.src.key}: config/split name {name!r} is not usable as a file name")
        path = self.root / config / f"{split}.jsonl"
        count = self.report.count(self.src.key, config, split)
        written = 0

        def counted() -> Iterator[Mapping[str, Any]]:
            nonlocal written
            for row in rows:
                written += 1
                yield row

        _write_jsonl(path, counted())
        if written == 0:  # an empty JSONL file does not load: leave the split out
            path.unlink()
            return
        count.rows = written
        splits = self.layout.setdefault(config, [])
        if split not in splits:
            splits.append(split)

    def set_features(self, config: str, features_yaml: list[dict[str, Any]]) -> None:
        self.features[config] = features_yaml

    def finish(self, origin: str) -> None:
        layout = {cfg: _ordered_splits(splits, self.src) for cfg, splits in sorted(self.layout.items()) if splits}
        if not layout:
            self.report.notes.append(f"{self.src.key}: no rows; no README written")
        else:
            text = _readme_text(self.src, layout, self.features, origin, self.report)
            # `datasets` caches a local dataset by folder name, config and README, not by data content: the
            # content fingerprint in the README makes changed data a new cache entry (no stale rows)
            digest = hashlib.sha256()
            for cfg, splits in layout.items():
                for split in splits:
                    digest.update((self.root / cfg / f"{split}.jsonl").read_bytes())
            text += f"\ncontent sha256: {digest.hexdigest()}\n"
            _atomic_write(self.root / README_NAME, lambda handle: handle.write(text))
        keep = {self.root / cfg / f"{split}.jsonl" for cfg, splits in layout.items() for split in splits}
        for path in sorted(self.root.rglob("*.jsonl")):
            if path not in keep:
                path.unlink()
        for path in sorted((p for p in self.root.iterdir() if p.is_dir()), reverse=True):
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty


# ------------------------------------------------------------------------------------- raw importers


class _RowError(Exception):
    """A raw row that cannot be converted; the message is the reason counted in the report."""


Yielded = tuple[str, str, dict[str, Any] | str]
"""``(config, split, row)`` or ``(config, split, reason)`` for a skipped row."""


@dataclass(frozen=True)
class _Unit:
    label: str
    read: Callable[[], Iterator[Yielded]]


@dataclass(frozen=True)
class _RawImporter:
    key: str
    subdir: str  # under src
    units: Callable[[Path], list[_Unit]]
    features: Callable[[], Any]  # -> datasets.Features


def _str_field(row: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = row.get(name)
    if isinstance(value, float) and math.isnan(value):
        value = None
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise _RowError(f"missing {name}")
        return None
    if not isinstance(value, str):
        if isinstance(value, bool | int):
            return str(value)
        raise _RowError(f"bad {name}")
    return value


def _read_tsv(path: Path) -> Iterator[dict[str, str] | str]:
    """Rows of a TSV with a header (CSV-style quoting, as written by pandas); a malformed row yields a reason."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header is None:
            return
        header = [name.strip() for name in header]
        for values in reader:
            if not values or values == [""]:
                continue
            if len(values) != len(header):
                yield f"expected {len(header)} columns, got {len(values)}"
                continue
            yield dict(zip(header, values, strict=True))


def _lang_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


# winogrande_afr ------------------------------------------------------------------------------------

_WINO_FILE = re.compile(r"^winogrande(?:_(?P<lang>[a-z]+))?\.csv$")
_WINO_SPLITS = ("train_s", "dev", "test")


def _wino_units(root: Path) -> list[_Unit]:
    units = []
    for path in sorted(root.glob("winogrande*.csv")):
        match = _WINO_FILE.match(path.name)
        if match:
            config = match["lang"] or "en"
            units.append(_Unit(f"winogrande_afr/{config}", lambda p=path, c=config: _wino_rows(p, c)))
    return units


def _wino_rows(path: Path, config: str) -> Iterator[Yielded]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        lang = "English" if config == "en" else _target_language(columns)
        for raw in reader:
            split = (raw.get("Split") or "").strip()
            if split not in _WINO_SPLITS:
                yield config, split or "<missing>", "bad Split"
                continue
            try:
                answer = (_str_field(raw, "Answer") or "").strip()
                if answer not in ("1", "2"):
                    raise _RowError("bad Answer")
                row = {
                    "qID": _str_field(raw, "qID"),
                    "Sentence": _str_field(raw, f"{lang} Sentence"),
                    "Option1": _str_field(raw, f"{lang} Option 1"),
                    "Option2": _str_field(raw, f"{lang} Option 2"),
                    "Answer": answer,
                }
            except _RowError as skip:
                yield config, split, str(skip)
                continue
            yield config, split, row


def _target_language(columns: Sequence[str]) -> str:
    names = [c[: -len(" Sentence")] for c in columns if c.endswith(" Sentence") and c != "English Sentence"]
    if len(names) != 1:
        raise MirrorError(f"cannot find the target-language Sentence column among {list(columns)}")
    return names[0]


def _wino_features() -> Any:
    from datasets import Features, Value

    return Features({name: Value("string") for name in ("qID", "Sentence", "Option1", "Option2", "Answer")})


# mmlu_clinical_afr ---------------------------------------------------------------------------------

_MMLU_SUBJECTS = ("clinical_knowledge", "college_medicine", "virology")
_MMLU_FILE = re.compile(
    rf"^(?P<subject>{'|'.join(_MMLU_SUBJECTS)})_(?P<split>dev|val|test)(?:_(?P<lang>[a-z]+))?\.csv$"
)


def _mmlu_units(root: Path) -> list[_Unit]:
    units = []
    for path in sorted(root.glob("*.csv")):
        match = _MMLU_FILE.match(path.name)
        if match:
            config = f"{match['subject']}_{match['lang'] or 'en'}"
            split = match["split"]
            units.append(
                _Unit(f"mmlu_clinical_afr/{config}/{split}", lambda p=path, c=config, s=split: _mmlu_rows(p, c, s))
            )
    return units


def _mmlu_rows(path: Path, config: str, split: str) -> Iterator[Yielded]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        for values in csv.reader(handle):
            if not values or values == [""]:
                continue
            if len(values) != 6:
                yield config, split, f"expected 6 columns, got {len(values)}"
                continue
            answer = values[5].strip().upper()
            if answer not in ("A", "B", "C", "D"):
                yield config, split, "bad Answer"
                continue
            if not values[0].strip():
                yield config, split, "missing Question"
                continue
            names = ("Question", "OptionA", "OptionB", "OptionC", "OptionD")
            yield config, split, {**dict(zip(names, values[:5], strict=True)), "Answer": answer}


def _mmlu_features() -> Any:
    from datasets import Features, Value

    names = ("Question", "OptionA", "OptionB", "OptionC", "OptionD", "Answer")
    return Features({name: Value("string") for name in names})


# belebele ------------------------------------------------------------------------------------------

_BELEBELE_TEXT = ("link", "flores_passage", "question", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4")


def _belebele_units(root: Path) -> list[_Unit]:
    return [
        _Unit(f"belebele/{path.stem}", lambda p=path: _belebele_rows(p))
        for path in sorted(root.glob("belebele*.jsonl"))
    ]


def _belebele_rows(path: Path) -> Iterator[Yielded]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError:
                yield "<unknown>", "test", "invalid JSON"
                continue
            if not isinstance(raw, dict):
                yield "<unknown>", "test", "not a JSON object"
                continue
            dialect = raw.get("dialect")
            if not isinstance(dialect, str) or not re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", dialect):
                yield "<unknown>", "test", "missing dialect"
                continue
            try:
                row: dict[str, Any] = {name: _str_field(raw, name) for name in _BELEBELE_TEXT}
                number = raw.get("question_number")
                if isinstance(number, str) and number.strip().isdigit():
                    number = int(number)
                if not isinstance(number, int) or isinstance(number, bool):
                    raise _RowError("bad question_number")
                answer = str(raw.get("correct_answer_num", "")).strip()
                if answer not in ("1", "2", "3", "4"):
                    raise _RowError("bad correct_answer_num")
                ds = _str_field(raw, "ds", required=False)
            except _RowError as skip:
                yield dialect, "test", str(skip)
                continue
            yield (
                dialect,
                "test",
                {
                    "link": row["link"],
                    "question_number": number,
                    "flores_passage": row["flores_passage"],
                    "question": row["question"],
                    "mc_answer1": row["mc_answer1"],
                    "mc_answer2": row["mc_answer2"],
                    "mc_answer3": row["mc_answer3"],
                    "mc_answer4": row["mc_answer4"],
                    "correct_answer_num": answer,
                    "dialect": dialect,
                    "ds": ds,
                },
            )


def _belebele_features() -> Any:
    from datasets import Features, Value

    return Features(
        {
            "link": Value("string"),
            "question_number": Value("int64"),
            **{name: Value("string") for name in _BELEBELE_TEXT[1:]},
            "correct_answer_num": Value("string"),
            "dialect": Value("string"),
            "ds": Value("string"),
        }
    )


# TSV datasets (sib200, masakhanews, afrisenti) -----------------------------------------------------

_TSV_SPLITS = {"train.tsv": "train", "dev.tsv": "validation", "test.tsv": "test"}
_MASAKHANEWS_LABELS = frozenset(("business", "entertainment", "health", "politics", "religion", "sports", "technology"))
_AFRISENTI_LABELS = frozenset(("negative", "positive", "neutral"))


def _tsv_units(key: str, convert: Callable[[dict[str, str], Path], dict[str, Any]]) -> Callable[[Path], list[_Unit]]:
    def units(root: Path) -> list[_Unit]:
        found = []
        for lang_dir in _lang_dirs(root):
            for file_name, split in _TSV_SPLITS.items():
                path = lang_dir / file_name
                if path.is_file():
                    found.append(
                        _Unit(
                            f"{key}/{lang_dir.name}/{split}",
                            lambda p=path, c=lang_dir.name, s=split: _tsv_rows(p, c, s, convert),
                        )
                    )
        return found

    return units


def _tsv_rows(
    path: Path, config: str, split: str, convert: Callable[[dict[str, str], Path], dict[str, Any]]
) -> Iterator[Yielded]:
    for raw in _read_tsv(path):
        if isinstance(raw, str):
            yield config, split, raw
            continue
        try:
            yield config, split, convert(raw, path)
        except _RowError as skip:
            yield config, split, str(skip)


_SIB_LABELS: dict[Path, frozenset[str] | None] = {}


def _sib_labels(folder: Path) -> frozenset[str] | None:
    if folder not in _SIB_LABELS:
        labels = folder / "labels.txt"
        _SIB_LABELS[folder] = (
            frozenset(line.strip() for line in labels.read_text(encoding="utf-8").splitlines() if line.strip())
            if labels.is_file()
            else None
        )
    return _SIB_LABELS[folder]


def _sib_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    index = (raw.get("index_id") or "").strip()
    if not index.lstrip("-").isdigit():
        raise _RowError("bad index_id")
    category = (_str_field(raw, "category") or "").strip()
    labels = _sib_labels(path.parent)
    if labels is not None and category not in labels:
        raise _RowError("bad category")
    return {"index_id": int(index), "category": category, "text": _str_field(raw, "text")}


def _masakhanews_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    category = (_str_field(raw, "category") or "").strip()
    if category not in _MASAKHANEWS_LABELS:
        raise _RowError("bad category")
    return {
        "category": category,
        "headline": _str_field(raw, "headline"),
        "text": _str_field(raw, "text"),
        "url": raw.get("url") or "",
    }


def _afrisenti_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    label = (_str_field(raw, "label") or "").strip().lower()
    if label not in _AFRISENTI_LABELS:
        raise _RowError("bad label")
    return {"tweet": _str_field(raw, "tweet"), "label": label}


def _string_features(*names: str) -> Callable[[], Any]:
    def build() -> Any:
        from datasets import Features, Value

        return Features({name: Value("string") for name in names})

    return build


def _sib_features() -> Any:
    from datasets import Features, Value

    return Features({"index_id": Value("int64"), "category": Value("string"), "text": Value("string")})


# afriqa (gold passages) ----------------------------------------------------------------------------

_AFRIQA_FILE = re.compile(
    r"^gold_span_passages\.afriqa\.(?P<lang>[a-z]+)\.(?P<pivot>[a-z]+)\.(?P<split>train|dev|test)\.json$"
)
_AFRIQA_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
_AFRIQA_OPTIONAL = ("context", "question_translated", "title", "answer_lang")


def _afriqa_units(root: Path) -> list[_Unit]:
    units = []
    for lang_dir in _lang_dirs(root):
        for path in sorted(lang_dir.glob("gold_span_passages.afriqa.*.json")):
            match = _AFRIQA_FILE.match(path.name)
            if match and match["lang"] == lang_dir.name:
                split = _AFRIQA_SPLITS[match["split"]]
                units.append(
                    _Unit(
                        f"afriqa/{lang_dir.name}/{split}",
                        lambda p=path, c=lang_dir.name, s=split: _afriqa_rows(p, c, s),
                    )
                )
    return units


def _afriqa_rows(path: Path, config: str, split: str) -> Iterator[Yielded]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                raw = json.loads(line)  # Python's json accepts the NaN the raw files contain
            except json.JSONDecodeError:
                yield config, split, "invalid JSON"
                continue
            try:
                if not isinstance(raw, dict):
                    raise _RowError("not a JSON object")
                yield config, split, _afriqa_row(raw)
            except _RowError as skip:
                yield config, split, str(skip)


def _afriqa_row(raw: dict[str, Any]) -> dict[str, Any]:
    pivot = raw.get("answer_pivot")
    if not isinstance(pivot, dict):
        raise _RowError("missing answer_pivot")
    starts, texts = pivot.get("answer_start"), pivot.get("text")
    if (
        not isinstance(texts, list)
        or not texts
        or not all(isinstance(t, str) and t.strip() for t in texts)
        or not isinstance(starts, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in starts)
    ):
        raise _RowError("bad answer_pivot")
    row: dict[str, Any] = {
        "answer_pivot": {"answer_start": starts, "text": texts},
        "id": _str_field(raw, "id"),
        "question_lang": _str_field(raw, "question_lang"),
    }
    for name in _AFRIQA_OPTIONAL:
        row[name] = _str_field(raw, name, required=False)
    order = ("answer_pivot", "context", "id", "question_lang", "question_translated", "title", "answer_lang")
    return {name: row[name] for name in order}


def _afriqa_features() -> Any:
    from datasets import Features, List, Value

    return Features(
        {
            "answer_pivot": {"answer_start": List(Value("int64")), "text": List(Value("string"))},
            "context": Value("string"),
            "id": Value("string"),
            "question_lang": Value("string"),
            "question_translated": Value("string"),
            "title": Value("string"),
            "answer_lang": Value("string"),
        }
    )


RAW_IMPORTERS: dict[str, _RawImporter] = {
    imp.key: imp
    for imp in (
        _RawImporter("winogrande_afr", "bridging_the_gap/winogrande_s", _wino_units, _wino_features),
        _RawImporter("mmlu_clinical_afr", "bridging_the_gap/mmlu_cm_ck_vir", _mmlu_units, _mmlu_features),
        _RawImporter("belebele", "bridging_the_gap/belebele", _belebele_units, _belebele_features),
        _RawImporter("sib200", "sib200", _tsv_units("sib200", _sib_row), _sib_features),
        _RawImporter(
            "masakhanews",
            "masakhanews",
            _tsv_units("masakhanews", _masakhanews_row),
            _string_features("category", "headline", "text", "url"),
        ),
        _RawImporter(
            "afrisenti", "afrisenti", _tsv_units("afrisenti", _afrisenti_row), _string_features("tweet", "label")
        ),
        _RawImporter("afriqa", "afriqa/gold_passages", _afriqa_units, _afriqa_features),
    )
}
"""Keys that :func:`import_raw` can build, with the raw folder (under ``src``) each reads."""


def _selected(datasets: Sequence[str] | None, default: Iterable[str]) -> list[str]:
    if datasets is None:
        return list(default)
    keys = list(dict.fromkeys(datasets))
    for key in keys:
        source(key)  # KeyError naming an unknown key
    return keys


def import_raw(
    src: Path,
    out: Path,
    *,
    datasets: Sequence[str] | None = None,
    configs: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> MirrorReport:
    """Build the mirror under ``out`` from raw files laid out as in ``shared/data`` (``src``).

    ``datasets``: keys to build (default: every key with a raw importer whose raw folder exists);
    ``configs``: only these config names (for quick builds). Unknown key -> KeyError; a hub-only key or a
    missing raw folder for an explicitly requested key -> MirrorError naming it.
    """
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise MirrorError(f"raw data folder not found: {src}")
    keys = _selected(datasets, RAW_IMPORTERS)
    report = MirrorReport(out=out)
    wanted = set(configs) if configs is not None else None
    plan: list[tuple[_RawImporter, list[_Unit]]] = []
    for key in keys:
        importer = RAW_IMPORTERS.get(key)
        if importer is None:
            raise MirrorError(
                f"no raw importer for {key!r} (hub only: {SOURCES[key].hub_repo}); "
                "use `finetasks-afr data mirror` on a machine with hub access"
            )
        root = src / importer.subdir
        if not root.is_dir():
            if datasets is not None:
                raise MirrorError(f"raw folder for {key!r} not found: {root}")
            report.notes.append(f"{key}: raw folder {root} not found; skipped")
            continue
        plan.append((importer, importer.units(root)))
    for key in sorted(set(SOURCES) - set(RAW_IMPORTERS)):
        if datasets is None:
            report.notes.append(f"{key}: hub only (no raw release here); not in this mirror")

    started = time.perf_counter()
    total = sum(len(units) for _, units in plan)
    done = 0
    if progress:
        progress(done, total, "")
    for importer, units in plan:
        rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for unit in units:
            for config, split, item in unit.read():
                if wanted is not None and config not in wanted:
                    continue
                if isinstance(item, str):
                    count = report.count(importer.key, config, split)
                    count.skipped += 1
                    count.reasons[item] += 1
                else:
                    rows.setdefault((config, split), []).append(item)
            done += 1
            if progress:
                progress(done, total, unit.label)
        report.counts.setdefault(importer.key, {})
        if wanted is not None and not rows:
            report.notes.append(f"{importer.key}: none of the requested configs; mirror left untouched")
            continue
        writer = _DatasetWriter(out, SOURCES[importer.key], report)
        features_yaml = importer.features()._to_yaml_list()
        for (config, split), split_rows in sorted(rows.items()):
            writer.write_split(config, split, split_rows)
            writer.set_features(config, features_yaml)
        writer.finish(f"raw import from `{src}` (finetasks-afr data import-raw)")
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------------------------------------- hub


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def _check_hub_reachable(timeout: float = 5.0) -> None:
    """Fail fast when the hub cannot be reached, instead of datasets' retries (about 25 s per call)."""
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("HF_DATASETS_OFFLINE")):
        raise HubUnreachableError(f"{OFFLINE_HINT} (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set)")
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return  # a direct connection test says nothing behind a proxy; let the real request decide
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        raise HubUnreachableError(f"{OFFLINE_HINT} ({host}:{port}: {error})") from error


def _is_offline_error(error: BaseException) -> bool:
    names = {"OfflineModeIsEnabled", "LocalEntryNotFoundError", "ConnectError", "ConnectTimeout", "TimeoutException"}
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError | TimeoutError | socket.gaierror):
            return True
        if any(cls.__name__ in names for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def _script_hint(error: BaseException) -> str:
    if "scripts are no longer supported" in str(error).lower():
        return " (a loading-script repo: datasets>=4 cannot run it; try revision 'refs/convert/parquet')"
    return ""


def mirror_from_hub(
    out: Path,
    *,
    datasets: Sequence[str] | None = None,
    configs: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> MirrorReport:
    """Mirror the hub datasets (every config, every split, the pinned revision) into ``out``.

    Raises HubUnreachableError at once when the hub cannot be reached. Any other failure of one dataset
    (repository missing, loading script refused by datasets>=4, ...) is recorded in ``report.errors`` and
    that dataset keeps its previous mirror state minus its README (it falls back to the hub).
    """
    import datasets as hf_datasets

    out = Path(out)
    keys = _selected(datasets, SOURCES)
    wanted = set(configs) if configs is not None else None
    report = MirrorReport(out=out)
    _check_hub_reachable()
    started = time.perf_counter()
    done, total = 0, 0
    if progress:
        progress(done, total, "")
    for key in keys:
        src = SOURCES[key]
        try:
            names = hf_datasets.get_dataset_config_names(src.hub_repo, revision=src.revision)
        except Exception as error:
            if _is_offline_error(error):
                raise HubUnreachableError(f"{OFFLINE_HINT} ({src.hub_repo}: {error})") from error
            report.errors.append(
                f"{key}: cannot list configs of {src.hub_repo}@{src.revision or 'main'}: {error}{_script_hint(error)}"
            )
            continue
        names = [name for name in names if wanted is None or name in wanted]
        report.counts.setdefault(key, {})
        if not names:
            report.notes.append(f"{key}: none of the requested configs on the hub; mirror left untouched")
            continue
        total += len(names)
        writer = _DatasetWriter(out, src, report)
        failed = False
        for name in names:
            try:
                loaded = hf_datasets.load_dataset(src.hub_repo, name, revision=src.revision)
            except Exception as error:
                if _is_offline_error(error):
                    raise HubUnreachableError(f"{OFFLINE_HINT} ({src.hub_repo}/{name}: {error})") from error
                report.errors.append(
                    f"{key}/{name}: cannot load {src.hub_repo}@{src.revision or 'main'}: {error}{_script_hint(error)}"
                )
                failed = True
                break
            try:
                for split in _ordered_splits(list(loaded), src):
                    dataset = loaded[split]
                    writer.write_split(name, split, iter(dataset))
                    writer.set_features(name, dataset.features._to_yaml_list())
            except (MirrorError, TypeError, ValueError) as error:  # e.g. a field JSON cannot hold
                report.errors.append(f"{key}/{name}: cannot write the mirror: {error}")
                failed = True
                break
            done += 1
            if progress:
                progress(done, total, f"{key}/{name}")
        if failed:
            report.notes.append(f"{key}: incomplete; README not written (tasks keep using the hub)")
            continue
        revision = f"@{src.revision}" if src.revision else " (unpinned: main)"
        writer.finish(f"hub `{src.hub_repo}`{revision} (finetasks-afr data mirror)")
    report.seconds = time.perf_counter() - started
    return report
