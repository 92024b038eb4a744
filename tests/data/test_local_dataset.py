"""The one local-dataset writer (`finetasks_afr.data.local_dataset.write_dataset_folder`).

What it must guarantee: `datasets.load_dataset(<folder>, name=<config>)` offline returns the rows written last, also
through a warm cache (the cache is keyed by folder name, config and README YAML, not by content); every file is
written atomically, no `.tmp` survives, and data files the new README does not list are removed.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
import yaml

from finetasks_afr.data.local_dataset import LocalDatasetError, write_dataset_folder

datasets.disable_progress_bars()


pytestmark = pytest.mark.usefixtures("offline")  # tests/data/conftest.py


def load(folder: Path, config: str, split: str, cache: Path) -> list[dict]:
    return list(datasets.load_dataset(str(folder), name=config, split=split, cache_dir=str(cache)))


def readme_configs(folder: Path) -> dict[str, dict[str, str]]:
    front = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    return {c["config_name"]: {f["split"]: f["path"] for f in c["data_files"]} for c in front["configs"]}


def test_changed_rows_are_loaded_not_the_cached_old_ones(tmp_path: Path) -> None:
    folder, cache = tmp_path / "ds", tmp_path / "cache"
    write_dataset_folder(folder, {"hau": {"train": [{"x": "a"}], "test": [{"x": "b"}]}})
    assert load(folder, "hau", "test", cache) == [{"x": "b"}]  # warms the cache
    layout = write_dataset_folder(folder, {"hau": {"test": [{"x": "new"}, {"x": "rows"}]}})
    assert load(folder, "hau", "test", cache) == [{"x": "new"}, {"x": "rows"}]
    assert readme_configs(folder) == layout == {"hau": {"test": layout["hau"]["test"]}}
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.jsonl")) == [layout["hau"]["test"]]
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_stale_temporaries_and_configs_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    write_dataset_folder(folder, {"old": {"test": [{"x": 1}]}, "keep": {"test": [{"x": 2}]}})
    (folder / "keep" / ".test-0.jsonl.abc123.tmp").write_text("half")  # a killed run's leftover
    (folder / ".README.md.def456.tmp").write_text("half")
    write_dataset_folder(folder, {"keep": {"test": [{"x": 2}]}}, card="# card\n")
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]
    assert not (folder / "old").exists() and list(readme_configs(folder)) == ["keep"]
    assert (folder / "README.md").read_text().endswith("---\n# card\n")


def test_flat_layout_keeps_other_files_and_empty_data_removes_the_readme(tmp_path: Path) -> None:
    folder = tmp_path / "yor"
    (folder).mkdir()
    (folder / "longppl.json").write_text("{}")
    layout = write_dataset_folder(folder, {"yor": {"test": [{"p": "x"}], "train": []}}, config_folders=False)
    assert list(layout["yor"]) == ["test"] and "/" not in layout["yor"]["test"]  # the empty split is left out
    assert write_dataset_folder(folder, {"yor": {"test": []}}, config_folders=False) == {}
    assert sorted(p.name for p in folder.iterdir()) == ["longppl.json"]  # no rows: no dataset, no README


def test_features_and_nan(tmp_path: Path) -> None:
    features = datasets.Features({"x": datasets.Value("string"), "n": datasets.Value("float64")})
    folder = tmp_path / "ds"
    write_dataset_folder(
        folder, {"c": {"test": [{"x": "a", "n": float("nan")}]}}, features={"c": features._to_yaml_list()}
    )
    assert load(folder, "c", "test", tmp_path / "cache") == [{"x": "a", "n": None}]


@pytest.mark.parametrize("name", ["../up", "", "a b", ".hidden"])
def test_a_config_or_split_that_is_no_file_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(LocalDatasetError, match="not usable as a file name"):
        write_dataset_folder(tmp_path / "ds", {name: {"test": [{"x": 1}]}})
    with pytest.raises(LocalDatasetError, match="not usable as a file name"):
        write_dataset_folder(tmp_path / "ds", {"ok": {name: [{"x": 1}]}})
    assert not list((tmp_path / "ds").rglob("*.jsonl"))
