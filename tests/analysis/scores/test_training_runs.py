"""Training runs as users have them: HF Trainer checkpoint folders whose seeds saw different token counts, evaluated
by lm-eval 0.4 into the checkpoint folders, read by `collect`, `read_scores` and `finetasks-afr select`.

The results files are lm-eval 0.4's schema (the committed fixture's file, its model and scores changed per
checkpoint); `make test-lm-eval` runs the same chain on the real harness's output. Expectations are computed here
from the trainer_state.json files and the JSON each test wrote, not from the readers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.scores.read import read_scores
from finetasks_afr.cli import app
from finetasks_afr.sweep.collect import CollectError, collect

TEMPLATE = next(
    (Path(__file__).resolve().parents[2] / "fixtures" / "lm_eval_04" / "leaderboard").glob(
        "__ckpt__*checkpoint-500/results_*.json"
    )
)
TASKS = ("sib_hau_prompt_1", "sib_yor_prompt_1")  # AfroBench names: builtin task info
RUNS = ("mix-a", "mix-b")
SEEDS = (1, 2)
STEPS = (100, 200, 300)


def tokens_seen(run: str, seed: int, step: int) -> int:
    """Unpacked batches: each seed counts its own tokens (mix-a step 100: 49,496 and 50,352 as in the issue)."""
    base = {"mix-a": 495, "mix-b": 510}[run] * step
    return base - 4 + (seed - 1) * (856 * step // 100)


def score(run: str, seed: int, step: int, task: str) -> float:
    return round(0.2 + step / 2000 + (0.05 if run == "mix-a" else 0.0) + seed / 1000 + len(task) / 1000, 6)


def results_json(checkpoint: Path, run: str, seed: int, step: int, tasks: tuple[str, ...] = TASKS) -> dict[str, Any]:
    """The template with this checkpoint as model and one acc per task (group `sib` over its two tasks)."""
    data = copy.deepcopy(json.loads(TEMPLATE.read_text(encoding="utf-8")))
    data["config"]["model_args"] = f"pretrained={checkpoint},dtype=float32"
    data["model_name"] = str(checkpoint)
    data["results"] = {
        task: {"alias": task, "acc,none": score(run, seed, step, task), "acc_stderr,none": 0.03} for task in tasks
    }
    data["results"]["sib"] = {"alias": "sib", "acc,none": 0.5, "acc_stderr,none": 0.02}
    data["groups"] = {"sib": data["results"]["sib"]}
    data["group_subtasks"] = {"sib": list(tasks)}
    data["n-shot"] = dict.fromkeys(tasks, 0)
    data["configs"] = {task: {"task": task, "num_fewshot": 0} for task in tasks}
    return data


def checkpoint_folder(root: Path, run: str, seed: int, step: int, tokens: int | None = None) -> Path:
    """`<root>/<run>/seed-<seed>/checkpoint-<step>/trainer_state.json` as the HF Trainer writes it."""
    folder = root / run / f"seed-{seed}" / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    seen = tokens_seen(run, seed, step) if tokens is None else tokens
    state = {"global_step": step, "num_input_tokens_seen": seen, "log_history": [], "max_steps": max(STEPS)}
    (folder / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


def lm_eval_output(folder: Path, data: dict[str, Any], name: str = "results_2026-11-27T10-00-00.000000.json") -> Path:
    """Where lm-eval 0.4 writes for `--output_path <checkpoint>`: `<output_path>/<model_name_sanitized>/<name>`."""
    sanitized = str(folder).replace("/", "__")
    path = folder / sanitized / name
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def trainer_sweep(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for run in RUNS:
        for seed in SEEDS:
            for step in STEPS:
                folder = checkpoint_folder(root, run, seed, step)
                lm_eval_output(folder, results_json(folder, run, seed, step))
    return root


def expected_rows() -> set[tuple]:
    return {
        (run, seed, step, tokens_seen(run, seed, step), task, score(run, seed, step, task))
        for run in RUNS
        for seed in SEEDS
        for step in STEPS
        for task in TASKS
    }


def observed(frame: pl.DataFrame) -> set[tuple]:
    assert set(frame["metric"]) == {"acc"}
    return set(frame.select("run", "seed", "step", "tokens", "task", "score").iter_rows())


def test_seeds_with_different_token_counts_collect_and_load(trainer_sweep: Path) -> None:
    assert tokens_seen("mix-a", 1, 100) == 49_496 and tokens_seen("mix-a", 2, 100) == 50_352
    frame, report = collect([trainer_sweep])
    assert observed(frame) == expected_rows() and frame.height == len(expected_rows())
    assert any("different token counts at 6 of 6 (run, step)" in note for note in report.notes), report.notes
    loaded, load = read_scores(trainer_sweep)
    assert observed(loaded) == expected_rows()
    assert any("seed mean" in note for note in load.notes), load.notes


def test_select_and_make_target_path_accept_the_sweep(trainer_sweep: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["select", str(trainer_sweep), "--out", str(tmp_path / "sel"), "--no-figures"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sel" / "decisions.csv").is_file()


def test_tokens_per_step_overrides_trainer_state_and_says_so(trainer_sweep: Path) -> None:
    frame, report = collect([trainer_sweep], tokens_per_step=512)
    assert (frame["tokens"] == frame["step"] * 512).all()
    (note,) = [n for n in report.notes if "--tokens-per-step" in n]
    assert "overrides the num_input_tokens_seen of 12 checkpoint(s)' trainer_state.json" in note
    assert "recorded 49,496, used 51,200" in note  # mix-a seed 1 step 100, the first checkpoint read
    loaded, load = read_scores(trainer_sweep, tokens_per_step=512)
    assert (loaded["tokens"] == loaded["step"] * 512).all()
    assert any("overrides the num_input_tokens_seen of 12" in n for n in load.notes), load.notes


def test_one_seed_with_two_token_counts_names_both_files(tmp_path: Path) -> None:
    """The one true conflict: one model (the same folder) whose sweep part recorded one count while its
    trainer_state.json, read for an lm-eval results file of the same folder, now says another."""
    folder = checkpoint_folder(tmp_path / "runs", "mix-a", 1, 100, tokens=50_000)
    lm_eval_path = lm_eval_output(folder, results_json(folder, "mix-a", 1, 100, tasks=(TASKS[1],)))
    part = tmp_path / "sweep" / "results" / "mix-a" / "seed-1" / "step-000000100" / "part-x"
    part.mkdir(parents=True)
    checkpoint = {"run": "mix-a", "seed": 1, "step": 100, "tokens": 49_496, "path": str(folder), "revision": None}
    info = {"benchmark": "sib", "language": "hau", "category": "NLU", "formulation": "MCF", "random_baseline": 0.2}
    manifest = {"checkpoint": checkpoint, "tasks": [f"{TASKS[0]}|0"], "task_info": {TASKS[0]: info}}
    (part / "part.json").write_text(json.dumps(manifest), encoding="utf-8")
    (part / "results.json").write_text(json.dumps({"results": {f"{TASKS[0]}|0": {"acc": 0.5}}}), encoding="utf-8")
    with pytest.raises(CollectError) as caught:
        collect([tmp_path])
    message = str(caught.value)
    assert "1 checkpoint(s) of one seed have two token counts" in message
    assert "mix-a seed 1 step 100: 49,496" in message and "vs 50,000" in message
    for path in (lm_eval_path, folder / "trainer_state.json", part / "results.json", part / "part.json"):
        assert str(path) in message, (path, message)
    # an explicit count per step resolves it (and says so)
    frame, _ = collect([tmp_path], tokens_per_step=500)
    assert set(frame["tokens"]) == {50_000}


def test_two_copies_of_a_run_are_two_models_each_with_its_count(tmp_path: Path) -> None:
    """Copies in two folders are two models (issue 25): two runs named by the folder that tells them apart."""
    for root, tokens in (("a", 49_496), ("b", 50_000)):
        folder = checkpoint_folder(tmp_path / root / "runs", "mix-a", 1, 100, tokens=tokens)
        lm_eval_output(folder, results_json(folder, "mix-a", 1, 100, tasks=(TASKS[0],)))
    frame, report = collect([tmp_path])
    assert sorted(frame.select("run", "tokens").unique().rows()) == [("a/mix-a", 49_496), ("b/mix-a", 50_000)]
    assert any("different models would share run 'mix-a'" in note for note in report.notes)
    table, load = read_scores(tmp_path)
    assert sorted(table["run"].unique()) == ["a/mix-a", "b/mix-a"]
    assert any("different models" in note for note in load.notes)


def test_output_path_ending_in_json_is_found_by_content(tmp_path: Path) -> None:
    """`--output_path out/x.json` makes lm-eval write `out/x_<datetime>.json`."""
    folder = checkpoint_folder(tmp_path / "runs", "mix-a", 1, 100)
    out = tmp_path / "out"
    out.mkdir()
    (out / "x_2026-11-27T10-00-00.000000.json").write_text(
        json.dumps(results_json(folder, "mix-a", 1, 100)), encoding="utf-8"
    )
    (out / "unrelated.json").write_text('{"results": {"a": 1}}', encoding="utf-8")  # v0-like: not 0.4 content
    frame, _ = collect([out])
    assert set(frame["task"]) == set(TASKS) and set(frame["tokens"]) == {49_496}
    loaded, report = read_scores(out)
    assert loaded.height == len(TASKS) and any("read 1 lm-evaluation-harness 0.4" in n for n in report.notes)


def test_collect_names_the_file_of_an_unknown_task_and_can_skip_it(trainer_sweep: Path, tmp_path: Path) -> None:
    folder = checkpoint_folder(tmp_path / "more", "mix-c", 1, 100, tokens=51_000)
    path = lm_eval_output(folder, results_json(folder, "mix-c", 1, 100, tasks=("my_own_task", *TASKS)))
    with pytest.raises(CollectError) as caught:
        collect([trainer_sweep, tmp_path / "more"])
    message = str(caught.value)
    assert f"my_own_task (in {path})" in message
    assert "--task-info CSV" in message and "--skip-unknown" in message
    frame, report = collect([trainer_sweep, tmp_path / "more"], skip_unknown=True)
    assert "my_own_task" not in set(frame["task"]) and frame.filter(pl.col("run") == "mix-c").height == len(TASKS)
    assert any(n.startswith("skipped 1 task(s) without task info: my_own_task") for n in report.notes)
    info = tmp_path / "info.csv"
    info.write_text("task,benchmark,language,category,formulation,random_baseline\nmy_own_task,mine,yor,NLU,CF,0.5\n")
    out = tmp_path / "scores.parquet"
    cli = ["collect", str(trainer_sweep), str(tmp_path / "more"), "--out", str(out)]
    assert CliRunner().invoke(app, [*cli, "--task-info", str(info)]).exit_code == 0
    assert "my_own_task" in set(pl.read_parquet(out)["task"])
    assert CliRunner().invoke(app, [*cli, "--skip-unknown"]).exit_code == 0
    failed = CliRunner().invoke(app, cli)
    assert failed.exit_code == 2 and "my_own_task" in failed.output
