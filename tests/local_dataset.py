"""A local dataset folder lighteval loads offline (`hf_repo=str(path)`), written by the project's one writer.

`finetasks_afr.data.local_dataset.write_dataset_folder` names every data file after its content: `datasets` caches a
local folder by its name, config and README (relative file paths), not by content, so changed rows are a new cache
entry, never the stale rows of an older run.
"""

from __future__ import annotations

from pathlib import Path

from finetasks_afr.data.local_dataset import write_dataset_folder


def write_local_dataset(parent: Path, stem: str, splits: dict[str, list[dict]]) -> Path:
    """`parent/<stem>/` with one `<split>-<digest>.jsonl` per split and a README.md listing them (config `default`)."""
    root = parent / stem
    write_dataset_folder(root, {"default": splits}, config_folders=False)
    return root
