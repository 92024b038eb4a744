"""Where every dataset our LightEval tasks read comes from: its hub repository, or a local mirror.

LightEval loads task data with ``load_dataset(path=hf_repo, name=hf_subset, revision=hf_revision)``.
Task definitions take ``hf_repo`` / ``hf_revision`` from :func:`hf_location`, which returns the published
hub repository (with a pinned revision where one is known) or, when ``$FINETASKS_AFR_DATA_DIR`` is set and
holds a mirror of that dataset, the local mirror directory. A mirror has the same config names, split names
and row schema as the hub, so one task definition works on both.

Mirror layout (``<DATA_DIR>`` = ``$FINETASKS_AFR_DATA_DIR``; build it with ``finetasks-afr data mirror`` on a
machine with hub access, or ``finetasks-afr data import-raw`` from the raw GitHub releases; see
:mod:`finetasks_afr.mirror`)::

    <DATA_DIR>/<key>/README.md              YAML front matter: configs (config_name, data_files: [{split, path}])
                                            and dataset_info (config_name, features) per config
    <DATA_DIR>/<key>/<config>/<split>-<digest>.jsonl
                                            one JSON object per line, the hub's field names and types; the digest
                                            of its content in the name keeps `datasets`' cache from serving the
                                            rows of an older build (see :mod:`finetasks_afr.local_dataset`)

``<key>`` is a key of :data:`SOURCES`. A dataset directory counts as a mirror only once its README.md exists
(the README is written last, after the data files it lists), so a half-built mirror is never picked up, and an
interrupted rebuild leaves the previous one whole. A key without a mirror falls back
to the hub, also when the data dir is set. The README records the mirror layout version of its dataset
(``finetasks-afr mirror layout: N``); a mirror older than its dataset's :attr:`DatasetSource.layout` (for
example Bridging-the-Gap mirrors built before the hub's config names were adopted) is refused with
:class:`StaleMirrorError`, which says how to rebuild it, instead of silently falling back to the hub.

Every dataset is declared by its benchmark module (``finetasks_afr/benchmarks/<name>.py``, in its ``SOURCES``
tuple): this module only discovers them (:data:`SOURCES`, built on first use) and resolves locations.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Generic, TypeVar

from finetasks_afr.raw import RawImporter

DATA_DIR_ENV = "FINETASKS_AFR_DATA_DIR"
README_NAME = "README.md"
LAYOUT_MARKER = "finetasks-afr mirror layout:"


class StaleMirrorError(RuntimeError):
    """A mirror built with an older layout than its dataset now needs; the message says how to rebuild it."""


@dataclass(frozen=True)
class DatasetSource:
    """One dataset as published on the Hugging Face Hub, and everything the suite needs to read it."""

    key: str  # the mirror folder name and the name benchmark modules refer to
    hub_repo: str
    revision: str | None  # pinned commit/ref; None = unpinned (see notes)
    splits: tuple[str, ...]  # hub split names
    notes: str  # where the facts come from, and what is unverified
    codes: Mapping[str, str] = field(default_factory=dict)  # ISO 639-3 -> the dataset's code for it
    excluded: Mapping[str, str] = field(default_factory=dict)  # published config -> why it is not used
    config_names: tuple[str, ...] = ()  # the hub configs to mirror; () = every config of the repository
    text_field: tuple[str, str] | None = None  # (field, default split) of running text, for `recommend --texts`
    raw: RawImporter | None = None  # how `data import-raw` builds the mirror from the raw release
    layout: int = 1  # mirror layout version; bumped when config names, splits or row schema change


K = TypeVar("K")
V = TypeVar("V")


class LazyMapping(Mapping[K, V], Generic[K, V]):
    """A read-only mapping built on first access: the registry needs every benchmark module imported, which
    imports lighteval (seconds), so nothing is discovered until a caller actually reads it."""

    def __init__(self, build: Callable[[], Mapping[K, V]]) -> None:
        self._build = build
        self._data: Mapping[K, V] | None = None

    def _loaded(self) -> Mapping[K, V]:
        if self._data is None:
            self._data = MappingProxyType(dict(self._build()))
        return self._data

    def __getitem__(self, key: K) -> V:
        return self._loaded()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"LazyMapping({dict(self._loaded())!r})"


def _discover() -> dict[str, DatasetSource]:
    from finetasks_afr.benchmarks import benchmark_modules

    found: dict[str, DatasetSource] = {}
    for module in benchmark_modules():
        for src in getattr(module, "SOURCES", ()):
            if src.key in found:
                raise RuntimeError(f"dataset key {src.key!r} declared twice (second: {module.__name__})")
            found[src.key] = src
    return found


SOURCES: Mapping[str, DatasetSource] = LazyMapping(_discover)
"""Every dataset of the suite, by key, in benchmark-module order."""


def data_dir() -> Path | None:
    """The mirror root from ``$FINETASKS_AFR_DATA_DIR``; None when unset or empty."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    if not value:
        return None
    return Path(value).expanduser().absolute()


def source(key: str) -> DatasetSource:
    """The :class:`DatasetSource` for ``key``; KeyError naming the key when unknown."""
    try:
        return SOURCES[key]
    except KeyError:
        raise KeyError(f"unknown dataset key {key!r}; known keys: {', '.join(sorted(SOURCES))}") from None


def mirror_path(key: str, root: Path | None = None) -> Path | None:
    """``<root>/<key>`` when it holds a complete mirror (README.md present), else None."""
    source(key)
    root = data_dir() if root is None else root
    if root is None:
        return None
    path = root / key
    return path if (path / README_NAME).is_file() else None


def mirror_configs(path: Path) -> frozenset[str]:
    """The config names a mirror's README.md declares (its YAML `configs:` list)."""
    text = (path / README_NAME).read_text(encoding="utf-8")
    return frozenset(re.findall(r"^\s*-?\s*config_name:\s*['\"]?([^'\"\s]+)", text, flags=re.MULTILINE))


def mirror_layout(path: Path) -> int:
    """The layout version a mirror's README.md records; 1 for mirrors written before versions were recorded."""
    text = (path / README_NAME).read_text(encoding="utf-8")
    found = re.search(rf"^- {re.escape(LAYOUT_MARKER)}\s*(\d+)", text, flags=re.MULTILINE)
    return int(found.group(1)) if found else 1


def check_layout(key: str, path: Path) -> None:
    """StaleMirrorError when the mirror at ``path`` predates its dataset's current layout."""
    src = source(key)
    found = mirror_layout(path)
    if found < src.layout:
        raise StaleMirrorError(
            f"the mirror {path} of {key!r} has layout {found}, the suite now reads layout {src.layout} "
            f"(config names, splits or fields of {src.hub_repo} changed); rebuild it with "
            f"`finetasks-afr data import-raw SRC {path.parent} -d {key}` or `finetasks-afr data mirror "
            f"{path.parent} -d {key}`"
        )


def hf_location(key: str, subset: str | None = None) -> tuple[str, str | None]:
    """``(hf_repo, hf_revision)`` for a LightevalTaskConfig: the local mirror when configured (and, given a
    subset, when the mirror holds that config), else the hub. A partial mirror (e.g. Belebele's 12 Bridging-the-
    Gap dialects) thus serves what it has and leaves the other configs to the hub. A mirror of an older layout
    raises StaleMirrorError rather than being bypassed."""
    src = source(key)
    path = mirror_path(key)
    if path is not None:
        check_layout(key, path)
        if subset is None or subset in mirror_configs(path):
            return str(path), None
    return src.hub_repo, src.revision
