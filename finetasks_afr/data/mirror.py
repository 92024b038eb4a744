"""Build local mirrors of the hub datasets our tasks use (layout: see :mod:`finetasks_afr.data.sources`).

Two ways to fill ``<out>/<key>/``:

* :func:`mirror_from_hub` (machines with hub access): every config of every source, loaded as the tasks load it
  (:func:`finetasks_afr.data.sources.load_dataset`: ``load_dataset(hub_repo, config, revision=...)``, a parquet branch
  config by config with ``data_dir``) and written split by split; the features come from the hub, so the mirror has
  exactly the hub's schema. A source whose repository is only a loading script is refused by name (the error says
  to use ``import-raw``), before the hub is contacted.
* :func:`import_raw` (air-gapped machines, tests): the same layout from the raw GitHub releases laid out as in
  ``shared/data`` (``bridging_the_gap/``, ``sib200/``, ``masakhanews/``, ``afrisenti/``, ``afriqa/``,
  ``nollysenti/``, ``mafand/``, ``ntrex/``). Config
  names, split names and fields follow the hub where known (raw ``dev`` becomes ``validation`` except for
  Bridging-the-Gap, whose hub split names are ``dev``/``val``/``test``) and project-defined choices where the
  hub is unknown (see ``SOURCES[key].notes``). Rows that cannot be converted (missing field, bad label) are
  skipped and counted in the :class:`MirrorReport`.

Every dataset folder is written by :func:`finetasks_afr.data.local_dataset.write_dataset_folder` (data files named
after their content, each written atomically, README.md last, stale files removed after it): an interrupted
rebuild leaves the previous dataset whole, and a changed dataset is never served from a stale `datasets` cache.
Re-running replaces the dataset. :func:`import_raw` reads and checks every raw file before it writes anything, so
a bad file (not UTF-8, empty, a header without a needed column) is a named error with nothing half-written.

What each raw release becomes (configs, splits, fields: the hub's where known) is declared by its benchmark
module (``DatasetSource.raw`` in ``finetasks_afr/benchmarks/<name>.py``); this module only drives them.
"""

from __future__ import annotations

import difflib
import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from analysis.base.write_errors import ANYWHERE_ERRNOS, os_error_behind
from finetasks_afr.data.local_dataset import Layout, write_dataset_folder
from finetasks_afr.data.raw import RawImporter, Unit
from finetasks_afr.data.sources import (
    DATA_DIR_ENV,
    LAYOUT_MARKER,
    SOURCES,
    DatasetSource,
    load_dataset,
    parquet_branch_configs,
    script_only_message,
    source,
)

Progress = Callable[[int, int, str], None]
"""``progress(done, total, label)``: called once before work starts and after each unit of work."""

OFFLINE_HINT = "the hub is unreachable; use `finetasks-afr data import-raw` or copy a mirror"


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


def _ordered_splits(splits: Iterable[str], src: DatasetSource) -> list[str]:
    known = [s for s in src.splits if s in splits]
    return known + sorted(s for s in splits if s not in src.splits)


def _card(src: DatasetSource, origin: str, report: MirrorReport) -> Callable[[Layout], str]:
    """The README body (below the front matter the writer makes): origin, layout version, row counts."""

    def body(layout: Layout) -> str:
        table = ["| config | split | rows | skipped |", "|---|---|---|---|"]
        for cfg, splits in layout.items():
            for split in splits:
                count = report.count(src.key, cfg, split)
                table.append(f"| {cfg} | {split} | {count.rows} | {count.skipped} |")
        built = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = [
            f"# {src.key}: local mirror of `{src.hub_repo}`",
            "",
            "Written by finetasks-afr (layout: `finetasks_afr/data/sources.py`). Load it with",
            f"`datasets.load_dataset('<this directory>', name=<config>)`; point `{DATA_DIR_ENV}` at its parent.",
            "",
            f"- origin: {origin}",
            f"- {LAYOUT_MARKER} {src.layout}",
            f"- built: {built}",
            f"- hub notes: {src.notes}",
            "",
            *table,
            "",
        ]
        return "\n".join(lines)

    return body


def _write_dataset(
    out: Path,
    src: DatasetSource,
    splits: Mapping[str, Mapping[str, Sized]],
    features: Mapping[str, list[dict[str, Any]]],
    origin: str,
    report: MirrorReport,
) -> None:
    """One dataset folder `<out>/<key>/` from config -> split -> rows (lists or `datasets.Dataset`s)."""
    configs: dict[str, dict[str, Any]] = {}
    for config in sorted(splits):
        by_split = splits[config]
        configs[config] = {split: by_split[split] for split in _ordered_splits(by_split, src)}
        for split, rows in configs[config].items():
            report.count(src.key, config, split).rows = len(rows)
    layout = write_dataset_folder(
        out / src.key, configs, card=_card(src, origin, report), features=features, config_folders=True
    )
    if not layout:
        report.notes.append(f"{src.key}: no rows; no README written")


def _selected(datasets: Sequence[str] | None, default: Iterable[str]) -> list[str]:
    if datasets is None:
        return list(default)
    keys = list(dict.fromkeys(datasets))
    for key in keys:
        source(key)  # KeyError naming an unknown key
    return keys


def _plan(
    src: Path, keys: Sequence[str], explicit: bool, report: MirrorReport
) -> list[tuple[str, RawImporter, list[Unit]]]:
    """The raw units to read per key; MirrorError for a hub-only key or (when asked for by name) a missing folder."""
    plan: list[tuple[str, RawImporter, list[Unit]]] = []
    for key in keys:
        importer = SOURCES[key].raw
        if importer is None:
            raise MirrorError(
                f"no raw importer for {key!r} (hub only: {SOURCES[key].hub_repo}); "
                "use `finetasks-afr data mirror` on a machine with hub access"
            )
        root = src / importer.subdir
        if not root.is_dir():
            if explicit:
                raise MirrorError(f"raw folder for {key!r} not found: {root}")
            report.notes.append(f"{key}: raw folder {root} not found; skipped")
            continue
        plan.append((key, importer, importer.units(root)))
    return plan


Rows = dict[str, dict[str, list[dict[str, Any]]]]
"""config -> split -> converted rows of one dataset."""


def _read_all(
    plan: list[tuple[str, RawImporter, list[Unit]]],
    wanted: set[str] | None,
    report: MirrorReport,
    progress: Progress | None,
) -> tuple[dict[str, Rows], set[str]]:
    """Every raw file read and converted (a RawFileError stops here, before anything is written); also returns
    every config name the raw files hold, for checking ``--config``."""
    total = sum(len(units) for _, _, units in plan)
    done = 0
    if progress:
        progress(done, total, "")
    read: dict[str, Rows] = {}
    seen: set[str] = set()
    for key, _, units in plan:
        rows: Rows = read.setdefault(key, {})
        report.counts.setdefault(key, {})
        for unit in units:
            for config, split, item in unit.read():
                seen.add(config)
                if wanted is not None and config not in wanted:
                    continue
                if isinstance(item, str):
                    count = report.count(key, config, split)
                    count.skipped += 1
                    count.reasons[item] += 1
                else:
                    rows.setdefault(config, {}).setdefault(split, []).append(item)
            done += 1
            if progress:
                progress(done, total, unit.label)
    return read, seen


def _check_configs(wanted: set[str] | None, seen: set[str], keys: Sequence[str]) -> None:
    """MirrorError naming a requested config that no raw file holds, with the close matches."""
    if wanted is None:
        return
    unknown = sorted(wanted - seen)
    if not unknown:
        return
    lines = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(seen), n=5, cutoff=0.6)
        lines.append(f"{name!r} (close matches: {', '.join(close)})" if close else repr(name))
    listed = sorted(seen)
    available = ", ".join(listed[:40]) + (f", ... ({len(listed)} in all)" if len(listed) > 40 else "")
    raise MirrorError(
        f"--config {'; '.join(lines)} is no config of {', '.join(keys)} in these raw files, so nothing was written; "
        f"configs available: {available or 'none'}"
    )


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
    missing raw folder for an explicitly requested key, or a config no raw file holds -> MirrorError naming it; a
    raw file that cannot be read -> RawFileError naming it. Every raw file is read before anything is written.
    """
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise MirrorError(f"raw data folder not found: {src}")
    importers = [key for key, source_ in SOURCES.items() if source_.raw is not None]
    keys = _selected(datasets, importers)
    report = MirrorReport(out=out)
    wanted = set(configs) if configs is not None else None
    plan = _plan(src, keys, datasets is not None, report)
    if datasets is None:
        for key in sorted(set(SOURCES) - set(importers)):
            report.notes.append(f"{key}: hub only (no raw release here); not in this mirror")
    started = time.perf_counter()
    read, seen = _read_all(plan, wanted, report, progress)
    _check_configs(wanted, seen, [key for key, _, _ in plan])
    origin = f"raw import from `{src}` (finetasks-afr data import-raw)"
    for key, importer, _ in plan:
        rows = read[key]
        if wanted is not None and not rows:
            report.notes.append(f"{key}: none of the requested configs; mirror left untouched")
            continue
        features = {config: importer.features(config)._to_yaml_list() for config in rows}
        _write_dataset(out, SOURCES[key], rows, features, origin, report)
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


def _disk_refused(error: BaseException) -> bool:
    """A full disk (or quota, file-size limit, read-only mount) behind a hub download: it ends the whole mirror
    with the named error, instead of failing every dataset in turn with the same words."""
    cause = os_error_behind(error)
    return cause is not None and cause.errno in ANYWHERE_ERRNOS


def _script_hint(error: BaseException) -> str:
    if "scripts are no longer supported" in str(error).lower():
        return " (a loading-script repo: datasets>=4 cannot run it; try revision 'refs/convert/parquet')"
    return ""


def _hub_config_names(src: DatasetSource) -> list[str]:
    """The configs the hub serves for ``src``: datasets' own listing, or the config folders of a parquet branch
    (where datasets sees a single ``default`` config)."""
    import datasets as hf_datasets

    if src.hub_form == "parquet-branch":
        return parquet_branch_configs(src)
    return list(hf_datasets.get_dataset_config_names(src.hub_repo, revision=src.revision))


def mirror_from_hub(
    out: Path,
    *,
    datasets: Sequence[str] | None = None,
    configs: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> MirrorReport:
    """Mirror the hub datasets (every config, every split, the pinned revision) into ``out``.

    A source whose repository is only a loading script (hub form ``script``) is recorded in ``report.errors`` with
    the way to build it from its raw release, without contacting the hub. Raises HubUnreachableError at once when
    the hub cannot be reached. Any other failure of one dataset (repository missing, loading script refused by
    datasets>=4, ...) is recorded in ``report.errors`` and that dataset keeps its previous mirror as it was (or,
    without one, falls back to the hub).
    """
    out = Path(out)
    keys = _selected(datasets, SOURCES)
    wanted = set(configs) if configs is not None else None
    report = MirrorReport(out=out)
    for key in [key for key in keys if SOURCES[key].hub_form == "script"]:
        report.errors.append(script_only_message(SOURCES[key]))
        report.notes.append(f"{key}: not mirrored from the hub; its previous mirror (if any) is kept as it was")
    keys = [key for key in keys if SOURCES[key].hub_form != "script"]
    if not keys:
        return report
    _check_hub_reachable()
    started = time.perf_counter()
    done, total = 0, 0
    if progress:
        progress(done, total, "")
    for key in keys:
        src = SOURCES[key]
        try:
            names = _hub_config_names(src)
        except Exception as error:
            if _disk_refused(error):
                raise
            if _is_offline_error(error):
                raise HubUnreachableError(f"{OFFLINE_HINT} ({src.hub_repo}: {error})") from error
            report.errors.append(
                f"{key}: cannot list configs of {src.hub_repo}@{src.revision or 'main'}: {error}{_script_hint(error)}"
            )
            continue
        names = [
            name
            for name in names
            if (wanted is None or name in wanted) and (not src.config_names or name in src.config_names)
        ]
        report.counts.setdefault(key, {})
        if not names:
            report.notes.append(f"{key}: none of the requested configs on the hub; mirror left untouched")
            continue
        total += len(names)
        loaded_splits: dict[str, dict[str, Any]] = {}
        features: dict[str, list[dict[str, Any]]] = {}
        failed = False
        for name in names:
            try:
                loaded = load_dataset(src.hub_repo, name, src.revision)
            except Exception as error:
                if _disk_refused(error):
                    raise
                if _is_offline_error(error):
                    raise HubUnreachableError(f"{OFFLINE_HINT} ({src.hub_repo}/{name}: {error})") from error
                report.errors.append(
                    f"{key}/{name}: cannot load {src.hub_repo}@{src.revision or 'main'}: {error}{_script_hint(error)}"
                )
                failed = True
                break
            loaded_splits[name] = {split: loaded[split] for split in loaded}
            for split in loaded:
                features[name] = loaded[split].features._to_yaml_list()
            done += 1
            if progress:
                progress(done, total, f"{key}/{name}")
        if not failed:
            revision = f"@{src.revision}" if src.revision else " (unpinned: main)"
            try:
                _write_dataset(out, src, loaded_splits, features, f"hub `{src.hub_repo}`{revision} "
                               "(finetasks-afr data mirror)", report)  # fmt: skip
            except (TypeError, ValueError) as error:  # e.g. a field JSON cannot hold
                report.errors.append(f"{key}: cannot write the mirror: {error}")
                failed = True
        if failed:
            report.notes.append(f"{key}: not rebuilt; its previous mirror (if any) is kept as it was")
    report.seconds = time.perf_counter() - started
    return report
