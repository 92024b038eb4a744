"""Fix 7 of finetasks_afr.scoring.compat: lighteval's prediction cache of a local model never goes into the model's
folder, and a checkpoint overwritten in place gets a fresh cache (issue 40: a plain `lighteval accelerate` run wrote
`checkpoint-800/8057d472a34c8165/...` into the user's checkpoint)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from finetasks_afr.scoring import compat


def _config(model: Path, cache_dir: Path) -> Any:
    from lighteval.models.transformers.transformers_model import TransformersModelConfig

    return TransformersModelConfig(model_name=str(model), cache_dir=str(cache_dir), device="cpu")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "runs" / "mix-a" / "checkpoint-800"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights one")
    (folder / "config.json").write_text("{}")
    return folder


def test_stock_lighteval_writes_the_cache_of_an_absolute_model_path_into_its_folder(
    model: Path, tmp_path: Path
) -> None:
    from lighteval.utils.cache_management import SampleCache

    was = compat.applied()
    compat.restore()
    try:
        assert compat.cache_location_bug_present()
        cache = SampleCache(_config(model, tmp_path / "cache"))
        assert cache.cache_dir.parent == model  # cache_dir dropped by the Path join
        assert [p.name for p in model.iterdir() if p.is_dir()] == [cache.model_hash]
    finally:
        if was:
            compat.apply()


def test_the_fix_keeps_the_cache_under_cache_dir_and_renews_it_when_weights_change(model: Path, tmp_path: Path) -> None:
    from lighteval.utils.cache_management import SampleCache

    compat.apply()
    assert compat.FIX_CACHE_LOCATION in compat.applied()
    cache_dir = tmp_path / "cache"
    first = SampleCache(_config(model, cache_dir))
    assert first.cache_dir.parent == cache_dir / "local" / Path(*model.resolve().parts[1:])
    assert not [p for p in model.iterdir() if p.is_dir()]  # nothing written into the checkpoint
    assert SampleCache(_config(model, cache_dir)).cache_dir == first.cache_dir  # same weights: the same cache
    (model / "model.safetensors").write_bytes(b"weights two, overwritten in place")
    os.utime(model / "model.safetensors", ns=(1, 1))
    renewed = SampleCache(_config(model, cache_dir))
    assert renewed.cache_dir != first.cache_dir and renewed.cache_dir.parent == first.cache_dir.parent
    # a hub name keeps lighteval's own layout
    hub = SampleCache(_config(Path("org/some-model"), cache_dir))
    assert hub.cache_dir.parent == cache_dir / "org" / "some-model"
