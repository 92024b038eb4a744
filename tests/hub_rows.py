"""Rows written by hand in the exact published schema of hub-only datasets, as a mirror lighteval loads offline.

`tests/fixtures/hub_rows/<source key>.json` holds, for one dataset the suite reads from the hub only (no raw
release in ../shared/data), a few rows per config and split, each file citing where its schema comes from:

    {"_schema": "<repository@commit:path or card URL the field names and types are taken from>",
     "configs": {"<config>": {"<split>": [{...row...}, ...]}}}

`write_hub_row_mirror` writes every such file as `<mirror>/<key>/` through the project's one dataset writer, with
the mirror-layout line of its source, so the suite's tasks read those rows exactly as they read a real mirror. The
suite-wide prompt-hygiene test renders them beside the real rows; a file needs at least 6 distinct rows in the
few-shot split (5 examples per document, never the document itself) with varied answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finetasks_afr.data.local_dataset import write_dataset_folder
from finetasks_afr.data.sources import LAYOUT_MARKER, SOURCES

HUB_ROWS = Path(__file__).with_name("fixtures") / "hub_rows"


def hub_row_files() -> dict[str, Path]:
    """Source key -> its fixture file; a file named after no source is an error (a typo would check nothing)."""
    files = {path.stem: path for path in sorted(HUB_ROWS.glob("*.json"))}
    unknown = sorted(set(files) - set(SOURCES))
    assert not unknown, f"tests/fixtures/hub_rows has files for unknown source keys {unknown}"
    return files


def hub_rows(key: str) -> dict[str, Any]:
    """The fixture of source `key`: {"_schema": ..., "configs": {config: {split: rows}}}."""
    data = json.loads((HUB_ROWS / f"{key}.json").read_text(encoding="utf-8"))
    assert data.get("_schema") and data.get("configs"), f"{key}.json needs '_schema' (a citation) and 'configs'"
    return data


def write_hub_row_mirror(mirror: Path, keys: list[str] | None = None) -> list[str]:
    """Write the hand-written rows of `keys` (default: every fixture) into `mirror`; returns the keys written."""
    written = []
    for key in keys if keys is not None else list(hub_row_files()):
        data = hub_rows(key)
        write_dataset_folder(
            mirror / key,
            data["configs"],
            card=f"Rows written by hand in the published schema ({data['_schema']}).\n\n"
            f"- {LAYOUT_MARKER} {SOURCES[key].layout}\n",
        )
        written.append(key)
    return written
