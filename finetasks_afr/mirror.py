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

What each raw release becomes (configs, splits, fields: the hub's where known) is declared by its benchmark
module (``DatasetSource.raw`` in ``finetasks_afr/benchmarks/<name>.py``); this module only drives them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import socket
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

from finetasks_afr.raw import RawImporter, Unit
from finetasks_afr.sources import DATA_DIR_ENV, LAYOUT_MARKER, README_NAME, SOURCES, DatasetSource, source

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
        f"- {LAYOUT_MARKER} {src.layout}",
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
    importers = {key: src.raw for key, src in SOURCES.items() if src.raw is not None}
    keys = _selected(datasets, importers)
    report = MirrorReport(out=out)
    wanted = set(configs) if configs is not None else None
    plan: list[tuple[str, RawImporter, list[Unit]]] = []
    for key in keys:
        importer = importers.get(key)
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
        plan.append((key, importer, importer.units(root)))
    for key in sorted(set(SOURCES) - set(importers)):
        if datasets is None:
            report.notes.append(f"{key}: hub only (no raw release here); not in this mirror")

    started = time.perf_counter()
    total = sum(len(units) for _, _, units in plan)
    done = 0
    if progress:
        progress(done, total, "")
    for key, importer, units in plan:
        rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for unit in units:
            for config, split, item in unit.read():
                if wanted is not None and config not in wanted:
                    continue
                if isinstance(item, str):
                    count = report.count(key, config, split)
                    count.skipped += 1
                    count.reasons[item] += 1
                else:
                    rows.setdefault((config, split), []).append(item)
            done += 1
            if progress:
                progress(done, total, unit.label)
        report.counts.setdefault(key, {})
        if wanted is not None and not rows:
            report.notes.append(f"{key}: none of the requested configs; mirror left untouched")
            continue
        writer = _DatasetWriter(out, SOURCES[key], report)
        for (config, split), split_rows in sorted(rows.items()):
            writer.write_split(config, split, split_rows)
            writer.set_features(config, importer.features(config)._to_yaml_list())
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
