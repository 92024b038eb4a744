"""A local dataset folder lighteval loads offline (`hf_repo=str(path)`), named after its content.

`datasets` caches a local folder under its basename (+ config and README), not its content: a folder named
after its rows cannot be served the stale rows of an older run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def write_local_dataset(parent: Path, stem: str, splits: dict[str, list[dict]]) -> Path:
    """`parent/<stem>_<digest>/` with one `<split>.jsonl` per split and a README.md listing them (config `default`)."""
    text = {
        split: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) for split, rows in splits.items()
    }
    digest = hashlib.sha256(json.dumps(text).encode()).hexdigest()[:16]
    root = parent / f"{stem}_{digest}"
    root.mkdir(parents=True)
    for split, lines in text.items():
        (root / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    files = "".join(f"  - split: {split}\n    path: {split}.jsonl\n" for split in splits)
    (root / "README.md").write_text(f"---\nconfigs:\n- config_name: default\n  data_files:\n{files}---\n")
    return root
