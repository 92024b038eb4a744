"""Sweep building blocks without lighteval runs: discovery, task lists, the sweep directory's rules, collection of
lighteval results files (including corrupt and partial ones)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from analysis.base.io import safe_file_name
from analysis.scores.discover import Checkpoint, DiscoveryError, discover, identity_from_path, parse_source
from finetasks_afr.sweep.collect import CollectError, collect
from finetasks_afr.sweep.store import PART_MANIFEST, SweepStore, SweepStoreError, part_id
from finetasks_afr.sweep.task_list import TaskListError, parse_tasks


def make_checkpoint(
    directory: Path, *, tokens: int | None = None, weights: bool = True, step: int | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text("{}")
    if weights:
        (directory / "model.safetensors").write_bytes(b"\0")
    if tokens is not None or step is not None:
        state = {"global_step": step or 0, "num_input_tokens_seen": tokens or 0}
        (directory / "trainer_state.json").write_text(json.dumps(state))
    return directory


# --------------------------------------------------------------------------------------------------
# Discovery


def test_distinct_run_names_get_distinct_store_folders() -> None:
    """Formerly `mix-α` and `mix-β` (and `mix\nz` and `mix_z`) shared `results/mix-_`: the second run was reported
    "already evaluated" and left out of the table. Plain names keep their folder (resumable sweeps)."""
    names = ["mix-α", "mix-β", "mix\nz", "mix_z", "mix z", "mix/z", "mix-a", "mix+b", ".."]
    keys = [Checkpoint(name, 1, 100, None, "/x").key for name in names]
    assert len(set(keys)) == len(names), keys
    assert Checkpoint("mix-a", 1, 100, None, "/x").key == "mix-a/seed-1/step-000000100"
    assert Checkpoint("mix+b", None, 7, None, "/x").key == "mix+b/seed-none/step-000000007"
    for key in keys:
        run = key.split("/")[0]
        assert run and not run.startswith(".") and "\n" not in run


def test_trainer_layout_with_seed_folders_and_tokens_from_trainer_state(tmp_path: Path) -> None:
    for seed in (1, 2):
        for step in (100, 200):
            make_checkpoint(tmp_path / "mix-a" / f"seed-{seed}" / f"checkpoint-{step}", tokens=step * 1000 + seed)
    found = discover([str(tmp_path / "mix-a")]).checkpoints
    assert [(c.run, c.seed, c.step, c.tokens) for c in found] == [
        ("mix-a", 1, 100, 100_001),
        ("mix-a", 1, 200, 200_001),
        ("mix-a", 2, 100, 100_002),
        ("mix-a", 2, 200, 200_002),
    ]
    assert all(Path(c.path).is_absolute() for c in found)


def test_parent_of_seeded_run_dirs_and_tokens_per_step(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "mix-a-seed3" / "checkpoint-50")
    make_checkpoint(tmp_path / "mix-b_seed_4" / "step-60")
    found = discover([str(tmp_path)], tokens_per_step=10).checkpoints
    assert [(c.run, c.seed, c.step, c.tokens) for c in found] == [("mix-a", 3, 50, 500), ("mix-b", 4, 60, 600)]


def test_glob_odd_names_and_explicit_names(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "weird run" / "ckpt_000120")
    make_checkpoint(tmp_path / "weird run" / "ckpt_000240")
    found = discover([f"baseline:7={tmp_path}/weird run/ckpt_*"]).checkpoints
    assert [(c.run, c.seed, c.step) for c in found] == [("baseline", 7, 120), ("baseline", 7, 240)]
    assert [c.tokens for c in found] == [None, None]
    assert found[0].key == "baseline/seed-7/step-000000120"
    plain = discover([f"{tmp_path}/weird run/ckpt_*"]).checkpoints
    assert {c.run for c in plain} == {"weird run"} and plain[0].seed is None
    assert plain[0].key.startswith(f"{safe_file_name('weird run')}/seed-none/") and plain[0].key.startswith(
        "weird_run-"
    )


def test_step_from_trainer_state_when_the_name_has_none(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "run" / "final", step=900, tokens=9)
    found = discover([str(tmp_path / "run" / "*")]).checkpoints
    assert [(c.run, c.step, c.tokens) for c in found] == [("run", 900, 9)]


def test_missing_weights_is_a_clear_error_unless_skipped(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "run" / "checkpoint-1")
    make_checkpoint(tmp_path / "run" / "checkpoint-2", weights=False)
    with pytest.raises(DiscoveryError) as error:
        discover([str(tmp_path / "run")])
    message = str(error.value)
    assert "checkpoint-2" in message and "weights" in message and "--skip-incomplete" in message
    found = discover([str(tmp_path / "run")], allow_incomplete=True)
    assert [c.step for c in found.checkpoints] == [1]
    assert found.incomplete[0].path.endswith("checkpoint-2")


def test_corrupt_trainer_state_names_the_file(tmp_path: Path) -> None:
    directory = make_checkpoint(tmp_path / "run" / "checkpoint-5")
    (directory / "trainer_state.json").write_text("{not json")
    with pytest.raises(DiscoveryError, match=r"trainer_state\.json"):
        discover([str(tmp_path / "run")])


def test_bad_sources(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DiscoveryError, match="no checkpoint folders"):
        discover([str(tmp_path / "empty")])
    with pytest.raises(DiscoveryError, match="does not exist"):
        discover([str(tmp_path / "nowhere")])
    with pytest.raises(DiscoveryError, match="matches no directory"):
        discover([str(tmp_path / "nothing-*")])


def test_two_sources_with_the_same_identity_collide(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "a" / "checkpoint-1")
    make_checkpoint(tmp_path / "b" / "checkpoint-1")
    with pytest.raises(DiscoveryError, match="NAME"):
        discover([f"x={tmp_path / 'a'}", f"x={tmp_path / 'b'}"])


def test_steps_filter_and_parse_source(tmp_path: Path) -> None:
    for step in (1, 2, 3):
        make_checkpoint(tmp_path / "r" / f"checkpoint-{step}")
    assert [c.step for c in discover([str(tmp_path / "r")], steps=[1, 3]).checkpoints] == [1, 3]
    assert parse_source("mix:2=some/where") == (("mix", 2), "some/where")
    assert parse_source("hf://org/repo") == (None, "hf://org/repo")


def test_identity_from_path_matches_discovery():
    assert identity_from_path("/x/mix-a/seed-2/checkpoint-300") == ("mix-a", 2, 300)
    assert identity_from_path("/x/mix-b-seed5/checkpoint-10") == ("mix-b", 5, 10)
    assert identity_from_path("/x/solo/step_42") == ("solo", None, 42)


# --------------------------------------------------------------------------------------------------
# Task lists


def test_parse_tasks_accepts_lists_files_and_suite_files(tmp_path: Path) -> None:
    assert parse_tasks("a, b|5 ,a|0") == ["a|0", "b|5"]
    suite = tmp_path / "suite.txt"
    suite.write_text("# Reading comprehension (RC)\nlighteval|belebele_yor_cf|0\n\nsib200_yor_mcf|3  # why\n")
    assert parse_tasks(suite) == ["belebele_yor_cf|0", "sib200_yor_mcf|3"]
    with pytest.raises(TaskListError, match="x\\|y"):
        parse_tasks("x|y")
    with pytest.raises(TaskListError, match="no task"):
        parse_tasks(" , ")


# --------------------------------------------------------------------------------------------------
# Store


def _stage(store: SweepStore, checkpoint: Checkpoint, tasks: list[str], name: str) -> Path:
    with store.staging() as staging:
        part = staging / "part"
        part.mkdir()
        (part / "results.json").write_text("{}")
        (part / PART_MANIFEST).write_text(json.dumps({"checkpoint": checkpoint.to_json(), "tasks": tasks}))
        return store.commit(part, checkpoint, name)


def test_parts_pending_tasks_and_commit(tmp_path: Path) -> None:
    store = SweepStore(tmp_path)
    checkpoint = Checkpoint("r", 1, 10, None, "/nowhere")
    assert store.pending_tasks(checkpoint, ["a|0", "b|0"]) == ["a|0", "b|0"]
    _stage(store, checkpoint, ["a|0"], "part-1")
    assert store.pending_tasks(checkpoint, ["a|0", "b|0"]) == ["b|0"]
    _stage(store, checkpoint, ["b|0"], "part-2")
    assert store.pending_tasks(checkpoint, ["a|0", "b|0"]) == []
    with pytest.raises(SweepStoreError, match="already exists"):
        _stage(store, checkpoint, ["b|0"], "part-2")
    assert not any((tmp_path / "staging").iterdir()), "staging folders are removed"
    assert part_id(["b|0", "a|0"], {"x": 1}) == part_id(["a|0", "b|0"], {"x": 1}) != part_id(["a|0"], {"x": 1})


def test_claim_is_exclusive_and_stale_staging_is_cleaned(tmp_path: Path) -> None:
    store = SweepStore(tmp_path)
    checkpoint = Checkpoint("r", None, 1, None, "/nowhere")
    with store.claim(checkpoint) as first:
        assert first
        # flock is per open file description: a second open in this process conflicts like another process would
        with store.claim(checkpoint) as second:
            assert not second
    stale = tmp_path / "staging" / "dead-worker"
    stale.mkdir(parents=True)
    (stale / "half-written").write_text("x")
    assert store.clean_stale_staging() == 1 and not stale.exists()


def test_broken_manifest_names_the_file(tmp_path: Path) -> None:
    store = SweepStore(tmp_path)
    checkpoint = Checkpoint("r", None, 1, None, "/nowhere")
    part = store.checkpoint_dir(checkpoint) / "part-x"
    part.mkdir(parents=True)
    (part / PART_MANIFEST).write_text("{")
    with pytest.raises(SweepStoreError, match=r"part\.json"):
        store.pending_tasks(checkpoint, ["a|0"])


# --------------------------------------------------------------------------------------------------
# Collection from lighteval results files (the format of lighteval 0.13's EvaluationTracker)

INFO_CSV = "task,benchmark,language,category,formulation,random_baseline\ntoy_cf,toy,yor,NLU,CF,0.25\n"


def lighteval_results(model_name: str, scores: dict[str, float], revision: str = "main") -> dict:
    metrics = {}
    for metric, value in scores.items():
        metrics[metric] = value
        metrics[f"{metric}_stderr"] = 0.01
    return {
        "config_general": {"model_name": model_name, "model_config": {"model_name": model_name, "revision": revision}},
        "results": {"toy_cf|0": metrics, "all": metrics},
        "versions": {},
    }


def write_results(directory: Path, stamp: str, payload: dict | str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"results_{stamp}.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def test_collect_a_users_own_lighteval_loop(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for step in (100, 200):
        make_checkpoint(runs / "mix-a" / "seed-1" / f"checkpoint-{step}", tokens=step * 7)
    out = tmp_path / "lighteval-out"
    for step, score in ((100, 0.3), (200, 0.5)):
        model = str(runs / "mix-a" / "seed-1" / f"checkpoint-{step}")
        write_results(out / "results" / model.strip("/"), f"2026-01-0{step // 100}T00", lighteval_results(
            model, {"acc": score, "acc_norm": score + 0.1}))  # fmt: skip
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    frame, report = collect([out], task_info=info)
    assert frame.height == 4 and report.files == 2
    row = frame.filter((pl.col("step") == 200) & (pl.col("metric") == "acc_norm")).row(0, named=True)
    assert row["run"] == "mix-a" and row["seed"] == 1 and row["tokens"] == 1400
    assert math.isclose(row["score"], 0.6) and row["stderr"] == 0.01
    assert (row["language"], row["category"], row["formulation"], row["random_baseline"]) == ("yor", "NLU", "CF", 0.25)


def test_rerun_of_the_same_checkpoint_keeps_the_newer_file(tmp_path: Path) -> None:
    model = str(make_checkpoint(tmp_path / "r" / "checkpoint-5"))
    write_results(tmp_path / "out", "2026-01-01T00", lighteval_results(model, {"acc": 0.1}))
    write_results(tmp_path / "out", "2026-02-01T00", lighteval_results(model, {"acc": 0.9}))
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    frame, report = collect([tmp_path / "out"], task_info=info)
    assert frame.height == 1 and frame["score"].item() == 0.9
    assert len(report.superseded) == 1 and "2026-01-01" in report.superseded[0]


def test_hub_revision_names_the_step(tmp_path: Path) -> None:
    write_results(tmp_path, "t", lighteval_results("EleutherAI/pythia-160m", {"acc": 0.4}, revision="step3000"))
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    frame, _ = collect([tmp_path], task_info=info, tokens_per_step=2)
    assert frame.select("run", "step", "tokens").row(0) == ("pythia-160m", 3000, 6000)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"config_general": {"model_name": "/x/r/checkpoint-1"}, "results": {"toy_cf|0": {"acc": 0.', "corrupt"),
        ('{"config_general": {"model_name": "/x/r/checkpoint-1"}}', "no 'results'"),
        ("[1, 2]", "expected a JSON object"),
        ('{"config_general": {"model_name": "/x/r/checkpoint-1"}, "results": {"toy_cf|0": {"acc": "high"}}}', "not a"),
    ],
)
def test_bad_results_files_name_the_file_and_skip_bad_collects_the_rest(
    tmp_path: Path, content: str, expected: str
) -> None:
    model = str(make_checkpoint(tmp_path / "runs" / "r" / "checkpoint-1"))
    write_results(tmp_path / "out", "good", lighteval_results(model, {"acc": 0.5}))
    bad = write_results(tmp_path / "out" / "sub", "bad", content)
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    with pytest.raises(CollectError) as error:
        collect([tmp_path / "out"], task_info=info)
    assert str(bad) in str(error.value) and expected in str(error.value) and "--skip-bad" in str(error.value)
    frame, report = collect([tmp_path / "out"], task_info=info, skip_bad=True)
    assert frame.height == 1 and report.skipped[0][0] == str(bad)


def test_unknown_task_and_unknown_step_are_errors(tmp_path: Path) -> None:
    model = str(make_checkpoint(tmp_path / "runs" / "r" / "checkpoint-1"))
    payload = lighteval_results(model, {"acc": 0.5})
    payload["results"]["mystery|0"] = {"acc": 0.1}
    write_results(tmp_path / "out", "a", payload)
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    with pytest.raises(CollectError, match="mystery"):
        collect([tmp_path / "out"], task_info=info)
    write_results(tmp_path / "out2", "a", lighteval_results("/x/final-model", {"acc": 0.5}))
    with pytest.raises(CollectError, match="step"):
        collect([tmp_path / "out2"], task_info=info)
    with pytest.raises(CollectError, match="no lighteval results"):
        collect([tmp_path / "runs"], task_info=info)


def test_hub_repository_revisions_become_steps(monkeypatch):
    """The hub path with huggingface_hub's list_repo_refs mocked (the hub is not reachable here)."""
    from types import SimpleNamespace

    import huggingface_hub

    refs = SimpleNamespace(
        branches=[SimpleNamespace(name=n) for n in ("main", "step2000", "step1000")],
        tags=[SimpleNamespace(name="step3000"), SimpleNamespace(name="v1.0")],
    )
    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_refs", lambda self, repo_id: refs)
    found = discover(["pythia:0=hf://EleutherAI/pythia-160m"], tokens_per_step=2_097_152).checkpoints
    assert [(c.run, c.seed, c.step, c.revision, c.path) for c in found] == [
        ("pythia", 0, 1000, "step1000", "EleutherAI/pythia-160m"),
        ("pythia", 0, 2000, "step2000", "EleutherAI/pythia-160m"),
        ("pythia", 0, 3000, "step3000", "EleutherAI/pythia-160m"),
    ]
    assert found[0].tokens == 1000 * 2_097_152
    with pytest.raises(DiscoveryError, match="revision-pattern"):
        discover(["hf://EleutherAI/pythia-160m"], revision_pattern=r"^ckpt(\d+)$")
