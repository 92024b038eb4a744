"""Where every dataset our LightEval tasks read comes from: its hub repository, or a local mirror.

LightEval loads task data with ``load_dataset(path=hf_repo, name=hf_subset, revision=hf_revision)``.
Task definitions take ``hf_repo`` / ``hf_revision`` from :func:`hf_location`, which returns the published
hub repository (with a pinned revision where one is known) or, when ``$FINETASKS_AFR_DATA_DIR`` is set and
holds a mirror of that dataset, the local mirror directory. A mirror has the same config names, split names
and row schema as the hub, so one task definition works on both.

Mirror layout (``<DATA_DIR>`` = ``$FINETASKS_AFR_DATA_DIR``; build it with ``finetasks-afr data mirror`` on a
machine with hub access, or ``finetasks-afr data import-raw`` from the raw GitHub releases; see
:mod:`finetasks_afr.data.mirror`)::

    <DATA_DIR>/<key>/README.md              YAML front matter: configs (config_name, data_files: [{split, path}])
                                            and dataset_info (config_name, features) per config
    <DATA_DIR>/<key>/<config>/<split>-<digest>.jsonl
                                            one JSON object per line, the hub's field names and types; the digest
                                            of its content in the name keeps `datasets`' cache from serving the
                                            rows of an older build (see :mod:`finetasks_afr.data.local_dataset`)

``<key>`` is a key of :data:`SOURCES`. A dataset directory counts as a mirror only once its README.md exists
(the README is written last, after the data files it lists), so a half-built mirror is never picked up, and an
interrupted rebuild leaves the previous one whole. A key without a mirror falls back
to the hub, also when the data dir is set. The README records the mirror layout version of its dataset
(``finetasks-afr mirror layout: N``); a mirror older than its dataset's :attr:`DatasetSource.layout` (for
example Bridging-the-Gap mirrors built before the hub's config names were adopted) is refused with
:class:`StaleMirrorError`, which says how to rebuild it, instead of silently falling back to the hub.

Every dataset is declared by its benchmark module (``finetasks_afr/benchmarks/<name>.py``, in its ``SOURCES``
tuple): this module only discovers them (:data:`SOURCES`, built on first use), resolves locations and loads them.

**Hub forms** (:attr:`DatasetSource.hub_form`): what the publisher serves at the revision the suite reads, and so
how a task loads it (:func:`load_arguments`, the one place that turns a task's ``(hf_repo, hf_subset,
hf_revision)`` into ``datasets.load_dataset`` arguments):

* ``configs`` (most families): a README whose YAML ``configs:`` list names each config's data files;
  ``load_dataset(repo, name=<config>, revision=...)``, as lighteval calls it. Where the card's ``data_files`` do not
  match the files at the pinned revision, :attr:`DatasetSource.data_files` gives the files per config and split
  (Uhura-TruthfulQA's English: ``.jsonl`` files, the card of that commit lists ``.json``).
* ``parquet-branch``: the hub's parquet conversion (``refs/convert/parquet``), laid out ``<config>/<split>/*.parquet``
  with no README. `datasets` (5.x) matches such a tree by file patterns into ONE ``default`` config
  (``BuilderConfig 'hausa' not found. Available: ['default']``), so a config is read as a folder:
  ``load_dataset(repo, revision=..., data_dir=<config>)`` (splits from the folder names below it). MAFAND-MT and
  XL-Sum, whose own repositories are loading scripts.
* ``script``: a repository that holds only a loading script at the revision (NollySenti at its pin). datasets >= 4
  refuses scripts, so no hub load is attempted: loading raises :class:`ScriptOnlyDatasetError`, which names the
  working alternative (a mirror built by ``finetasks-afr data import-raw`` from the raw release). A local mirror of
  the dataset, when configured, is read as any other.

lighteval 0.13 loads a task's data with ``load_dataset(path=hf_repo, name=hf_subset, revision=hf_revision)`` in
``lighteval.tasks.lighteval_task`` and passes nothing else, so :func:`install_lighteval_loader` (called whenever the
suite builds a task config) puts :func:`load_dataset` in that module's place: every other location (a local mirror,
a ``configs`` hub source, any dataset the suite does not declare) is loaded exactly as lighteval would.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from finetasks_afr.data.raw import RawImporter

DATA_DIR_ENV = "FINETASKS_AFR_DATA_DIR"
README_NAME = "README.md"
LAYOUT_MARKER = "finetasks-afr mirror layout:"
PARQUET_BRANCH_REVISION = "refs/convert/parquet"
LONGPPL_DIR_ENV = "FINETASKS_AFR_LONGPPL_DIR"
"""The folder of prepared LongPPL datasets, one per language: `finetasks-afr longppl prepare` writes them
(finetasks_afr.perplexity.longppl), the LongPPL tasks read them (finetasks_afr.benchmarks.longppl)."""
LONGPPL_SPLIT = "test"
LANGUAGE_CODE = re.compile(r"[a-z]{3}")
"""An ISO 639-3 code, as the LongPPL folders are named."""
HubForm = Literal["configs", "parquet-branch", "script"]
HUB_FORMS: tuple[HubForm, ...] = ("configs", "parquet-branch", "script")


class StaleMirrorError(RuntimeError):
    """A mirror built with an older layout than its dataset now needs; the message says how to rebuild it."""


class ScriptOnlyDatasetError(RuntimeError):
    """A task (or `data mirror`) asked the hub for a dataset whose repository is a loading script only at the
    revision the suite reads; the message says how to build a local mirror from the raw release instead."""


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
    hub_form: HubForm = "configs"  # what the repository serves at `revision` (module docstring, "Hub forms")
    data_files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # config -> split -> file in the
    # repository, for configs whose card lists files the revision does not hold (hub_form "configs" only)
    raw_release: str = ""  # where the raw release comes from (repository, licence), for the script-only error

    def __post_init__(self) -> None:
        if self.hub_form not in HUB_FORMS:
            raise ValueError(f"{self.key}: hub_form {self.hub_form!r} is none of {', '.join(HUB_FORMS)}")
        if self.hub_form == "parquet-branch" and not self.revision:
            raise ValueError(f"{self.key}: a parquet-branch source reads a revision ({PARQUET_BRANCH_REVISION!r})")
        if self.data_files and self.hub_form != "configs":
            raise ValueError(f"{self.key}: data_files apply to hub_form 'configs' only, not {self.hub_form!r}")


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


BENCHMARKS_PACKAGE = "finetasks_afr.benchmarks"
"""The package whose modules declare the suite's datasets (a `SOURCES` tuple each). This module finds them at run
time by name, as plugins, and imports no benchmark statically: the benchmarks build their tasks on this module
(`hf_location`), so the data layer stays below them (the layer contract in `.importlinter`)."""


def _discover() -> dict[str, DatasetSource]:
    benchmarks = importlib.import_module(BENCHMARKS_PACKAGE)
    found: dict[str, DatasetSource] = {}
    for module in benchmarks.benchmark_modules():
        for src in getattr(module, "SOURCES", ()):
            if src.key in found:
                raise RuntimeError(f"dataset key {src.key!r} declared twice (second: {module.__name__})")
            found[src.key] = src
    return found


SOURCES: Mapping[str, DatasetSource] = LazyMapping(_discover)
"""Every dataset of the suite, by key, in benchmark-module order."""


LICENCES: Mapping[str, str] = {
    "afridiacritics": "Apache-2.0 on the card, but built from MAFAND (CC-BY-NC-4.0): treat as non-commercial",
    "afrihate": "Apache-2.0 on the card, CC-BY-4.0 on mteb's copy (conflicting)",
    "afrimgsm": "Apache-2.0 (not re-checked)",
    "afrimmlu": "Apache-2.0 (not re-checked)",
    "afriqa": "CC-BY-SA-4.0 (hub), CC-BY-4.0 (raw release)",
    "afrisenti": "CC-BY-4.0",
    "afrixnli": "Apache-2.0 (not re-checked)",
    "belebele": "CC-BY-SA-4.0",
    "winogrande_afr": "Apache-2.0",
    "mmlu_clinical_afr": "MIT",
    "mmlu_en": "MIT",
    "global_mmlu": "Apache-2.0",
    "injongointent": "CC-BY-4.0 per mteb's copy (the card names none)",
    "mafand": "CC-BY-NC-4.0: non-commercial",
    "masakhanews": "AfL (not re-checked)",
    "naijarc": "not checked",
    "nollysenti": "CC-BY-4.0 (the release's README)",
    "ntrex": "not verified (upstream NTREX-128: CC-BY-SA-4.0)",
    "openai_mmmlu": "MIT",
    "salt": "not verified",
    "sib200": "CC-BY-SA-4.0",
    "uhura_arc_easy": "not checked",
    "uhura_truthfulqa": "MIT on the card now; cc-by-nc-4.0 on 2024 captures of the card: possibly non-commercial",
    "xlsum": "CC-BY-NC-SA-4.0: non-commercial",
}
"""Each dataset's licence as far as it was checked (the "licence" column of docs/tasks-and-data.md says the same;
tests/data keeps one entry per source): what an exported copy of its documents (`finetasks-afr export`) carries."""


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


# ------------------------------------------------------------------------------------------------ loading


def hub_source(path: str, revision: str | None) -> DatasetSource | None:
    """The declared source a `load_dataset(path, revision=...)` call reads from the hub, or None (a local folder, a
    revision the suite does not declare, a dataset outside the suite)."""
    for src in SOURCES.values():
        if src.hub_repo == path and src.revision == revision:
            return src
    return None


def script_only_message(src: DatasetSource) -> str:
    """Why a script-only source cannot load from the hub, and the working alternative."""
    import datasets

    at = f"@{src.revision}" if src.revision else " (main)"
    release = f" (the raw release: {src.raw_release})" if src.raw_release else ""
    return (
        f"{src.key}: the hub repository {src.hub_repo}{at} holds only a loading script, which datasets >= 4 refuses "
        f"(installed: datasets {datasets.__version__}), so no {src.key} task can load from the hub. Build a local "
        f"mirror from the raw release instead{release}: `finetasks-afr data import-raw <raw data folder laid out like "
        f"shared/data> --out <mirror> -d {src.key}`, then set {DATA_DIR_ENV}=<mirror>"
    )


def load_arguments(path: str, name: str | None = None, revision: str | None = None) -> dict[str, Any]:
    """The `datasets.load_dataset` keyword arguments that read config `name` of `path` at `revision` as its source
    is published (module docstring, "Hub forms"): `path`/`name`/`revision` unchanged for a local folder and a
    `configs` source; `data_dir=<config>` (no `name`) on a parquet branch; the declared `data_files` of a config
    whose card is wrong at the revision. ScriptOnlyDatasetError for a script-only source, before any hub request."""
    src = hub_source(path, revision)
    if src is None:
        return {"path": path, "name": name, "revision": revision}
    if src.hub_form == "script":
        raise ScriptOnlyDatasetError(script_only_message(src))
    if src.hub_form == "parquet-branch":
        if not name:
            raise ValueError(f"{src.key}: {path}@{revision} is a parquet branch read per config; name the config")
        return {"path": path, "revision": revision, "data_dir": name}
    arguments: dict[str, Any] = {"path": path, "name": name, "revision": revision}
    if name is not None and name in src.data_files:
        arguments["data_files"] = dict(src.data_files[name])
    return arguments


class UnreachableDataError(ConnectionError):
    """A task's data is in no local mirror and the hub is switched off: the one-line message says which and what to
    do (`unreachable_reason`)."""


def hub_offline() -> bool:
    """Whether the hub is switched off for datasets (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE set to a true value)."""
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))  # fmt: skip


def unreachable_reason(hf_repo: str) -> str | None:
    """Why data at `hf_repo` (a task config's location: a mirror folder or a hub repository) cannot be read here,
    or None when it can or might: a local folder, the hub switched on (a failure is then the network's, named by
    `datasets`), or the repository in the local hub cache."""
    if Path(hf_repo).is_dir() or not hub_offline():
        return None
    if any(src.hub_repo == hf_repo and src.hub_form == "script" for src in SOURCES.values()):
        return None  # no hub load can read it, online or not: ScriptOnlyDatasetError says what to do
    from huggingface_hub import constants

    if (Path(constants.HF_HUB_CACHE) / f"datasets--{hf_repo.replace('/', '--')}").is_dir():
        return None
    mirror = data_dir()
    where = f"not in the mirror at {mirror}" if mirror else f"no mirror configured (${DATA_DIR_ENV} unset)"
    return (
        f"hub-only ({hf_repo}), {where}, and the hub is off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); run online "
        "once (the hub cache then serves it offline) or drop it"
    )


def unreachable_tasks(locations: Mapping[str, str]) -> list[str]:
    """ "task: reason" for every task (name -> its config's hf_repo) whose data cannot be read here."""
    return [f"{task}: {reason}" for task, repo in locations.items() if (reason := unreachable_reason(repo)) is not None]


def load_dataset(path: str, name: str | None = None, revision: str | None = None, **kwargs: Any) -> Any:
    """`datasets.load_dataset` for config `name` of `path` at `revision`, read as its source is published
    (:func:`load_arguments`); other keyword arguments (`split`, `cache_dir`, ...) are passed on."""
    import datasets

    return datasets.load_dataset(**load_arguments(path, name, revision), **kwargs)


def install_lighteval_loader() -> None:
    """Make lighteval read the suite's datasets through :func:`load_dataset` (idempotent).

    lighteval 0.13's `LightevalTask.download_dataset_worker` calls the name `load_dataset` of its own module with
    path, name and revision only; that name is replaced, so the worker (and anything wrapping it, such as the
    sweep's memoised loader) keeps its behaviour for every location that needs nothing more. RuntimeError, naming
    the installed lighteval, when that module no longer loads datasets this way."""
    from lighteval.tasks import lighteval_task

    if getattr(lighteval_task, "load_dataset", None) is load_dataset:
        return
    if not callable(getattr(lighteval_task, "load_dataset", None)):
        import lighteval

        raise RuntimeError(
            f"lighteval {getattr(lighteval, '__version__', '?')} does not load task data through "
            "lighteval.tasks.lighteval_task.load_dataset any more: parquet-branch and script-only sources cannot be "
            "read; update finetasks_afr.data.sources.install_lighteval_loader"
        )
    lighteval_task.load_dataset = load_dataset


def parquet_branch_configs(src: DatasetSource) -> list[str]:
    """The config folders at the top of a parquet-branch source (what `datasets` cannot list there: it sees one
    `default` config), read from the hub's file tree."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFolder

    tree = HfApi().list_repo_tree(src.hub_repo, repo_type="dataset", revision=src.revision)
    return sorted(entry.path for entry in tree if isinstance(entry, RepoFolder))
