"""The sweep's dataset memo: each dataset loaded once, its splits iterated in bulk with rows identical to those
`datasets` yields one at a time, fresh on every pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image

from finetasks_afr.scoring.lighteval_runtime import DecodedSplit, decoded, memoised_datasets

ROWS = [
    {"question": "Mji mkuu wa Kenya ni upi?", "choices": ["Nairobi", "Mombasa"], "label": 0, "note": None},
    {"question": "Ọjọ́ wo ni òní?", "choices": ["Ajé", "Ìṣẹ́gun", "Rírú"], "label": 2, "note": "ẹ̀"},
]


def test_a_decoded_split_yields_the_rows_datasets_yields_in_order_and_fresh_each_pass() -> None:
    split = datasets.Dataset.from_list(ROWS).shuffle(seed=3).filter(lambda row: row["label"] >= 0)
    assert split._indices is not None  # a shuffled, filtered split reads through an indices mapping
    fast = DecodedSplit(split)

    first = list(fast)
    assert first == [dict(row) for row in split]
    assert len(fast) == len(split) == 2
    first[0]["__few_shots"] = True  # what lighteval writes into every row it formats
    first[0]["choices"].append("edited")
    assert list(fast) == [dict(row) for row in split]


def test_a_split_with_a_feature_to_decode_is_left_to_datasets() -> None:
    image = Image.fromarray(np.zeros((2, 2, 3), dtype=np.uint8))
    with_image = datasets.Dataset.from_dict(
        {"picture": [image]}, features=datasets.Features({"picture": datasets.Image()})
    )
    text = datasets.Dataset.from_list(ROWS)

    splits = decoded(datasets.DatasetDict({"test": text, "train": with_image}))

    assert isinstance(splits["test"], DecodedSplit)
    assert splits["train"] is with_image


def test_each_dataset_is_loaded_once_per_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask

    class Task:
        def __init__(self, config: str) -> None:
            self.dataset_path, self.dataset_config_name, self.dataset_revision = str(tmp_path), config, None
            self.dataset_filter = None

    loads: list[str] = []

    def load(task: Task) -> datasets.DatasetDict:
        loads.append(task.dataset_config_name)
        return datasets.DatasetDict({"test": datasets.Dataset.from_list(ROWS)})

    monkeypatch.setattr(LightevalTask, "download_dataset_worker", staticmethod(load))
    with memoised_datasets() as memo:
        worker: Any = LightevalTask.download_dataset_worker  # takes lighteval's task; a stand-in here
        swa, again, _yor = (worker(Task(config)) for config in ("swa", "swa", "yor"))

    assert loads == ["swa", "yor"]
    assert swa is again and len(memo) == 2
    assert [dict(row) for row in swa["test"]] == ROWS
