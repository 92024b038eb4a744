"""The one writer of local dataset folders: what `datasets.load_dataset(<folder>, name=<config>)` reads offline.

Every local dataset this project makes (the mirror of `data import-raw` / `data mirror`, the demo world's task
datasets, the LongPPL key paragraphs, the tests' probe datasets) is written here, so there is one layout and one
guard against stale caches:

    <folder>/README.md                         YAML front matter: configs (config_name, data_files: [{split, path}])
                                               and, when given, dataset_info (config_name, features) per config
    <folder>/<config>/<split>-<digest>.jsonl   one JSON object per line (or <folder>/<split>-<digest>.jsonl)

Why the content digest is in the file name: `datasets` (5.x, offline) caches a local folder under
`<folder name>/<config>/0.0.0/<hash>`, and that hash covers the README's YAML (the config entries with their
relative data-file paths, the features), not the files' content, their modification time or the README's prose.
With fixed file names a rebuilt dataset, or another dataset in a folder of the same name, is silently served the
rows of the first one ever loaded (a fingerprint in the README's body does not help: measured, the body is not
hashed). Naming each file after its content makes changed rows a new path, hence a new cache entry.

Order of writes (each file atomic via `analysis.base.io`): data files first, the README last, then the data files
the new README no longer lists are removed. The previous README keeps pointing at the previous files, which stay until
the new README is in place, so a folder interrupted at any point is the whole old dataset or the whole new one;
files of a failed write are removed again, and so are the folders it made (a full disk leaves no empty config
folder, nor an empty mirror root), and `.tmp` leftovers of a killed run are removed by the next one. A write the
system refuses is raised as an OSError naming the file (`analysis.base.write_errors.writing`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from analysis.base.io import atomic_write_text, remove_stale_temporaries
from analysis.base.write_errors import writing

README_NAME = "README.md"
DIGEST_LENGTH = 16
Rows = Iterable[Mapping[str, Any]]
Layout = dict[str, dict[str, str]]
"""config -> split -> the data file's path relative to the folder (what the README lists)."""

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


class LocalDatasetError(ValueError):
    """A config or split name that cannot be a file name; the message names it."""


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_to_none(v) for v in value]
    return value


def json_line(row: Mapping[str, Any]) -> str:
    """One row as a JSON line; NaN/inf (not JSON, refused by the `datasets` json loader) become null."""
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_nan_to_none(dict(row)), ensure_ascii=False) + "\n"


def data_file_name(split: str, text: str) -> str:
    """`<split>-<digest>.jsonl`, the digest of the file's content (see the module docstring for why)."""
    return f"{split}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:DIGEST_LENGTH]}.jsonl"


def front_matter(layout: Layout, features: Mapping[str, list[dict[str, Any]]] | None = None) -> str:
    """The README's YAML header: the configs with their data files, and the features where known."""
    front: dict[str, Any] = {
        "configs": [
            {"config_name": config, "data_files": [{"split": split, "path": path} for split, path in splits.items()]}
            for config, splits in layout.items()
        ]
    }
    known = features or {}
    infos = [{"config_name": config, "features": known[config]} for config in layout if config in known]
    if infos:
        front["dataset_info"] = infos
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


@contextlib.contextmanager
def removed_if_failed(folder: Path) -> Iterator[None]:
    """When the block fails, remove `folder` and the parents of it that the block made, as far as they are empty.

    A writer that fails part-way (a full disk, a file-size limit) removes its files again; without this, the
    folders it made for them stay, empty: a mirror root with nothing in it looks like a finished empty import.
    Only folders that did not exist before the block are removed, and only when empty (`rmdir`).
    """
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    try:
        yield
    except BaseException:
        current = folder
        while current != existing and current.is_relative_to(existing):
            try:
                current.rmdir()
            except OSError:
                break
            current = current.parent
        raise


def _write_text(path: Path, text: str) -> None:
    with writing(path):
        atomic_write_text(path, text)


def _check_name(kind: str, name: str, root: Path) -> None:
    if not _SAFE_NAME.fullmatch(name):
        raise LocalDatasetError(
            f"{root}: {kind} name {name!r} is not usable as a file name; use letters, digits and _ . + - only"
        )


def _data_files(root: Path) -> set[Path]:
    """The data files of a folder in any layout this project wrote: `*.jsonl` at its top and one level down."""
    return set(root.glob("*.jsonl")) | set(root.glob("*/*.jsonl"))


def _clean_temporaries(root: Path) -> None:
    remove_stale_temporaries(root)
    for folder in root.iterdir():
        if folder.is_dir():
            remove_stale_temporaries(folder)


def _write_data(root: Path, configs: Mapping[str, Mapping[str, Rows]], config_folders: bool,
                created: list[Path]) -> Layout:  # fmt: skip
    layout: Layout = {}
    for config, splits in configs.items():
        _check_name("config", config, root)
        for split, rows in splits.items():
            _check_name("split", split, root)
            text = "".join(json_line(row) for row in rows)
            if not text:  # an empty JSONL file does not load: the split is left out
                continue
            name = data_file_name(split, text)
            relative = f"{config}/{name}" if config_folders else name
            path = root / relative
            if not path.is_file():  # a file named after its content is already right
                created.append(path)
                _write_text(path, text)
            layout.setdefault(config, {})[split] = relative
    return layout


def _remove_stale(root: Path, layout: Layout) -> None:
    keep = {root / path for splits in layout.values() for path in splits.values()}
    for stale in sorted(_data_files(root) - keep):
        stale.unlink(missing_ok=True)
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty


def write_dataset_folder(
    root: Path,
    configs: Mapping[str, Mapping[str, Rows]],
    *,
    card: str | Callable[[Layout], str] = "",
    features: Mapping[str, list[dict[str, Any]]] | None = None,
    config_folders: bool = True,
) -> Layout:
    """Write `configs` (config -> split -> rows, in the order given) as the dataset folder `root`; returns its layout.

    `card` is the README's markdown body (or a function of the layout, e.g. for a table of row counts); `features`
    (config -> `Features._to_yaml_list()`) pins the column types. `config_folders=False` puts the data files at the
    folder's top (a folder with one config). Splits without rows are left out, and a folder left without any rows
    loses its README: it is no dataset any more. Other files in `root` (e.g. a JSON beside the data) are kept.
    """
    root = Path(root)
    with removed_if_failed(root):
        root.mkdir(parents=True, exist_ok=True)
        _clean_temporaries(root)
        folders = {path for path in root.iterdir() if path.is_dir()}
        created: list[Path] = []
        try:
            layout = _write_data(root, configs, config_folders, created)
            if layout:
                body = card(layout) if callable(card) else card
                _write_text(root / README_NAME, front_matter(layout, features) + body)
            else:
                (root / README_NAME).unlink(missing_ok=True)
        except BaseException:
            for path in created:
                path.unlink(missing_ok=True)
            for folder in {path.parent for path in created} - folders - {root}:
                with contextlib.suppress(OSError):
                    folder.rmdir()  # made for this write, and empty again
            raise
    _remove_stale(root, layout)
    return layout


__all__ = [
    "README_NAME",
    "Layout",
    "LocalDatasetError",
    "data_file_name",
    "front_matter",
    "json_line",
    "removed_if_failed",
    "write_dataset_folder",
]
