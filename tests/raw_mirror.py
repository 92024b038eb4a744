"""One raw-import mirror of ../shared/data per test session, shared by the test modules that read real rows.

`finetasks_afr.data.mirror.import_raw` over the whole of ../shared/data takes about 10 s; the gold-answer,
prompt-hygiene and raw-release tests all read the same mirror, so it is built once per pytest process (pytest runs the
suite in one process) under the session's temporary directory and handed out read-only. A test that needs to add
datasets to it (the prompt-hygiene test writes the hand-made hub rows beside the real ones) takes `overlay`: a new
folder whose real datasets are hard links to the shared files, so nothing it writes reaches the shared mirror.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from finetasks_afr.data.mirror import MirrorReport, import_raw

_BUILT: dict[Path, tuple[Path, MirrorReport]] = {}


EMPTY_RELEASE_ROWS: dict[tuple[str, str], tuple[int, ...]] = {("mafand", "en-amh"): (15,)}
"""Test rows (by position) with no visible text, turned down by every task of their config: MAFAND en-amh row 15
holds only U+202A (LEFT-TO-RIGHT EMBEDDING) on both sides, empty once `clean()` drops format characters."""


def raw_mirror(shared_data: Path, factory: pytest.TempPathFactory) -> tuple[Path, MirrorReport]:
    """The mirror `import_raw(shared_data, ...)` builds (every dataset with a raw release) and its report, built on
    the first call of the session. Do not write into it: use `overlay`."""
    key = shared_data.resolve()
    if key not in _BUILT:
        out = factory.mktemp("raw_mirror")
        _BUILT[key] = (out, import_raw(shared_data, out))
    return _BUILT[key]


def overlay(mirror: Path, out: Path) -> Path:
    """`out` holding every dataset of `mirror` as hard links (files never rewritten in place: the writer replaces
    them), ready for more datasets to be written beside them."""
    shutil.copytree(mirror, out, copy_function=os.link, dirs_exist_ok=True)
    return out


def mirror_files(root: Path) -> dict[str, dict[str, dict[str, Path]]]:
    """dataset key -> config -> split -> JSONL file, from each mirrored dataset's README front matter."""
    found: dict[str, dict[str, dict[str, Path]]] = {}
    for readme in sorted(root.glob("*/README.md")):
        front = readme.read_text(encoding="utf-8").split("---\n")[1]
        found[readme.parent.name] = {
            config["config_name"]: {item["split"]: readme.parent / item["path"] for item in config["data_files"]}
            for config in yaml.safe_load(front)["configs"]
        }
    return found


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of one mirror data file, in order (read directly, not through `datasets`)."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
