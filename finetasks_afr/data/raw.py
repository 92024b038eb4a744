"""Shared pieces of the raw-file importers: each benchmark module reads its own raw release with these.

`finetasks-afr data import-raw` builds a mirror (layout: :mod:`finetasks_afr.data.sources`) from the raw GitHub
releases of the datasets, laid out as in ``shared/data``. The knowledge of one release (file names, columns,
labels, the hub schema its rows become) lives in that benchmark's module as a :class:`RawImporter`; this module
holds only what every importer needs: reading a raw file as text, reading TSV files (CSV quoting, as pandas writes
them), JSON-lines files and line-aligned text files (one sentence a line, paired by line number), checking a string
field, and the unit/row protocol that :func:`finetasks_afr.data.mirror.import_raw` drives.

A bad row is skipped and counted (the mirror report lists the reasons); a bad *file* (not UTF-8, empty, a header
without a column every row needs) is a :class:`RawFileError` naming the file and the fix, raised while reading,
before anything is written: a whole file lost behind a count of "missing tweet" skips is no skip. A UTF-8 byte
order mark (Excel's "UTF-8" export) is removed, not read as part of the first column's name.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from analysis.base.encoding import TextEncodingError, decode_user_text

csv.field_size_limit(sys.maxsize)


class RowError(Exception):
    """A raw row that cannot be converted; the message is the reason counted in the mirror report."""


class RawFileError(ValueError):
    """A raw file that cannot be imported at all; the message names the file, what is wrong and the fix."""


Yielded = tuple[str, str, dict[str, Any] | str]
"""``(config, split, row)`` or ``(config, split, reason)`` for a skipped row."""


@dataclass(frozen=True)
class Unit:
    """One raw file (or one part of it) to read: a progress label and a reader of its rows."""

    label: str
    read: Callable[[], Iterator[Yielded]]


@dataclass(frozen=True)
class RawImporter:
    """How to turn a dataset's raw release into mirror rows with the hub's config names, splits and schema."""

    subdir: str  # the raw folder, relative to the raw data root (``shared/data`` layout)
    units: Callable[[Path], list[Unit]]
    features: Callable[[str], Any]  # config name -> datasets.Features of its rows


def str_field(row: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    """The string value of ``name``; a missing or blank required value raises RowError naming the field."""
    value = row.get(name)
    if isinstance(value, float) and math.isnan(value):
        value = None
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise RowError(f"missing {name}")
        return None
    if not isinstance(value, str):
        if isinstance(value, bool | int):
            return str(value)
        raise RowError(f"bad {name}")
    return value


def read_text(path: Path) -> str:
    """The whole file as text (UTF-8, a byte order mark removed); RawFileError when it is empty or not UTF-8."""
    data = path.read_bytes()
    try:
        text = decode_user_text(path, data)
    except TextEncodingError as error:
        raise RawFileError(str(error)) from None
    if not text.strip():
        raise RawFileError(
            f"{path} is empty ({len(data)} bytes); copy it again from the release, or delete it if that split "
            "does not exist"
        )
    return text


def require_columns(path: Path, found: list[str], required: tuple[str, ...], kind: str) -> None:
    """RawFileError naming the file, the missing and the found columns when a header lacks a required column."""
    missing = [name for name in required if name not in found]
    if missing:
        raise RawFileError(
            f"{path}: no column {', '.join(missing)} in its header (columns found: {', '.join(found) or 'none'}); "
            f"this release's {kind} files need the columns {', '.join(required)}: restore the header line or copy "
            "the file again from the release"
        )


def read_tsv(
    path: Path, required: tuple[str, ...] = (), *, single_line: bool = False
) -> Iterator[dict[str, str] | str]:
    """Rows of a TSV with a header (CSV-style quoting, as written by pandas); a malformed row yields a reason.

    A header without one of the `required` columns is a RawFileError: every row would be skipped for it. With
    `single_line` (a release whose every row is one line), a row read over several lines is a RawFileError: a double
    quote that its line does not close swallows the lines after it into one field, up to the end of the file, which
    would otherwise be one skipped row standing for all of them."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t")
    header = [name.strip() for name in next(reader, [])]
    require_columns(path, header, required, "TSV")
    line = reader.line_num
    for values in reader:
        first, line = line + 1, reader.line_num
        if single_line and line > first:
            raise RawFileError(
                f"{path}: the row at line {first} runs on to line {line}: a double quote opens a quoted field that its "
                "line does not close, so the lines after it were read as part of that row; every row of this release "
                "is one line (a quoted field ends with a quote before its tab): restore the file from the release"
            )
        if not values or values == [""]:
            continue
        if len(values) != len(header):
            yield f"expected {len(header)} columns, got {len(values)}"
            continue
        yield dict(zip(header, values, strict=True))


def read_jsonl(path: Path) -> Iterator[dict[str, Any] | str]:
    """The objects of a JSON-lines file, one a line (blank lines ignored); a line that is not a JSON object
    yields the reason it is skipped ("invalid JSON", "not a JSON object")."""
    for line in read_text(path).split("\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            yield "invalid JSON"
            continue
        yield value if isinstance(value, dict) else "not a JSON object"


def read_lines(path: Path) -> list[str]:
    """The lines of a line-aligned text file (one sentence a line, as NTREX-128's): split on line feeds only, a
    carriage return before one removed, no line dropped: line i stays line i, blank or not, so a parallel file can
    be paired line by line. A final line break does not make a last empty line. Other Unicode line separators
    (U+2028, form feeds...) are text, not breaks: `str.splitlines` would split on them and shift every later line
    of one file against its partner."""
    lines = read_text(path).split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def lang_dirs(root: Path) -> list[Path]:
    """The per-language folders of a raw release (hidden folders ignored), sorted."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


TSV_SPLITS = {"train.tsv": "train", "dev.tsv": "validation", "test.tsv": "test"}


def tsv_units(
    key: str,
    convert: Callable[[dict[str, str], Path], dict[str, Any]],
    columns: tuple[str, ...] | Callable[[str], tuple[str, ...]],
    *,
    single_line: bool = False,
) -> Callable[[Path], list[Unit]]:
    """Units of a ``<lang>/{train,dev,test}.tsv`` release: config = folder name, raw ``dev`` = hub ``validation``.

    ``columns``: the header columns every file must have (a file without one is a RawFileError, not skips), or a
    function of the folder name giving them (NollySenti's ``<lang>_review``); ``single_line``: see :func:`read_tsv`."""

    def units(root: Path) -> list[Unit]:
        found = []
        for lang_dir in lang_dirs(root):
            required = columns(lang_dir.name) if callable(columns) else columns
            for file_name, split in TSV_SPLITS.items():
                path = lang_dir / file_name
                if path.is_file():
                    found.append(
                        Unit(
                            f"{key}/{lang_dir.name}/{split}",
                            partial(_tsv_rows, path, lang_dir.name, split, convert, required, single_line),
                        )
                    )
        return found

    return units


def _tsv_rows(
    path: Path,
    config: str,
    split: str,
    convert: Callable[[dict[str, str], Path], dict[str, Any]],
    columns: tuple[str, ...],
    single_line: bool,
) -> Iterator[Yielded]:
    rows = read_tsv(path, columns, single_line=single_line)
    yield from converted(config, split, rows, lambda raw: convert(raw, path))


def converted(
    config: str, split: str, items: Iterable[dict[str, Any] | str], convert: Callable[[dict[str, Any]], dict[str, Any]]
) -> Iterator[Yielded]:
    """What a unit yields for the items of a reader (raw rows, or reasons for the lines it could not read): each raw
    row converted to a hub row, or the reason it is skipped (a reader's, or the RowError `convert` raised)."""
    for item in items:
        if isinstance(item, str):
            yield config, split, item
            continue
        try:
            yield config, split, convert(item)
        except RowError as skip:
            yield config, split, str(skip)


def string_features(*names: str) -> Callable[[str], Any]:
    """A features factory: every named column a string, in every config."""

    def build(config: str) -> Any:
        from datasets import Features, Value

        return Features({name: Value("string") for name in names})

    return build
