"""Fault tests of `finetasks-afr sweep` and `finetasks-afr collect` (issue 15): every bad input ends in a named
error (exit 2, no traceback, nothing written outside --out, no `.tmp` left) or is handled as a user wants.

The fixture is one run of two tiny checkpoints and a custom tasks module of two toy tasks: `good_eng_cf` over a
healthy local dataset and `broken_eng_cf` over a mirror folder that lacks the `test` split.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.scores.discover import discover
from finetasks_afr.cli import app
from finetasks_afr.sweep.collect import CollectError, collect
from finetasks_afr.sweep.evaluate import SweepSpec
from finetasks_afr.sweep.store import SweepSettingsError, SweepStore
from finetasks_afr.sweep.task_list import TaskListError, parse_tasks
from tests.process_tools import alive, children
from tests.unprivileged import read_only_folder, run_cli_unprivileged

ITEMS = [
    ("The sun rises in the", ["east", "west", "sea", "night"], 0),
    ("Water is", ["wet", "dry", "loud", "square"], 0),
    ("Birds can", ["fly", "read", "melt", "vote"], 0),
]
GOOD = "good_eng_cf|0"
BROKEN = "broken_eng_cf|0"
TASK_MODULE = """
from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from analysis.scores.task_info import TaskInfo


def prompt(line, task_name):
    return Doc(task_name=task_name, query=line["query"], choices=[" " + c for c in line["choices"]],
               gold_index=line["gold"])


TASKS_TABLE = [
    LightevalTaskConfig(name=name, prompt_function=prompt, hf_repo=repo, hf_subset="default",
                        hf_avail_splits=["test"], evaluation_splits=["test"],
                        metrics=[LogLikelihoodAccMetric(normalization=None)])
    for name, repo in (("good_eng_cf", {good!r}), ("broken_eng_cf", {broken!r}))
]
TASK_INFO = {{
    "good_eng_cf": TaskInfo("good", "eng", "GK", "CF", 0.25),
    "broken_eng_cf": TaskInfo("broken", "eng", "GK", "CF", 0.25),
}}
"""


def _dataset(directory: Path, split: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ITEMS]
    (directory / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (directory / "README.md").write_text(
        f"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: {split}\n    path: {split}.jsonl\n---\n",
        encoding="utf-8",
    )
    return directory


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("faults-sweep")
    good = _dataset(root / "mirror" / "good", "test")
    broken = _dataset(root / "mirror" / "broken", "train")  # the mirror lacks the test split
    module = root / "fault_tasks.py"
    module.write_text(TASK_MODULE.format(good=str(good), broken=str(broken)), encoding="utf-8")
    corpus = [f"{q} {c[g]}." for q, c, g in ITEMS] * 10
    runs = root / "runs"
    for step in (1, 2):
        make_tiny_causal_lm(runs / "mix" / f"checkpoint-{step}", corpus, seed=step, vocab_size=300, hidden_size=32)
    return {"root": root, "runs": runs, "module": module, "broken": broken}


def sweep(world: dict[str, Path], out: Path, *extra: str, tasks: str = GOOD) -> tuple[int, str]:
    args = ["sweep", str(world["runs"]), "--tasks", tasks, "--out", str(out), "--custom-tasks", str(world["module"])]
    result = CliRunner().invoke(app, [*args, "--max-length", "128", *extra])
    return result.exit_code, " ".join(result.output.split())


def assert_named_error(code: int, output: str, *needles: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output, output
    for needle in needles:
        assert needle in output, (needle, output)


def no_tmp_left(directory: Path) -> None:
    assert not list(directory.rglob("*.tmp")), "a temporary file was left behind"


# --------------------------------------------------------------------------------------------------
# 1. One sweep directory, one set of result-changing settings


@pytest.mark.slow
def test_rerun_with_a_different_max_length_is_refused_naming_both_values(world, tmp_path):
    out = tmp_path / "sweep"
    code, output = sweep(world, out)
    assert code == 0, output
    table = pl.read_parquet(out / "scores.parquet")
    code, output = sweep(world, out, "--max-length", "16")
    assert_named_error(code, output, "max_length", "128", "16", "--max-length", "new --out")
    assert pl.read_parquet(out / "scores.parquet").equals(table), "the refused run changed the table"
    assert json.loads((out / "settings.json").read_text())["max_length"] == 128
    no_tmp_left(out)


def test_same_settings_resume_and_settings_that_do_not_change_scores_are_accepted(world, tmp_path):
    out = tmp_path / "sweep"
    assert sweep(world, out, "--steps", "1")[0] == 0
    code, output = sweep(world, out, "--batch-size", "8", "--engine", "lighteval")  # resumes: adds checkpoint 2
    assert code == 0, output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["evaluated"], summary["skipped"]) == (1, 1)
    assert pl.read_parquet(out / "scores.parquet")["step"].unique().sort().to_list() == [1, 2]


def test_store_refuses_different_settings_and_reads_them_from_parts_of_older_sweeps(tmp_path):
    store = SweepStore(tmp_path)
    store.record_settings({"max_length": 128, "dtype": None})
    store.record_settings({"max_length": 128, "dtype": None})  # same: fine
    with pytest.raises(SweepSettingsError, match=r"max_length.*128.*16"):
        store.record_settings({"max_length": 16, "dtype": None})
    legacy = SweepStore(tmp_path / "legacy")  # a sweep made before settings.json: its parts' model_args count
    part = legacy.root / "results" / "r" / "seed-none" / "step-000000001" / "part-x"
    part.mkdir(parents=True)
    manifest = {"checkpoint": {}, "tasks": ["a|0"], "model_args": {"max_length": 512, "batch_size": 64}}
    (part / "part.json").write_text(json.dumps(manifest))
    with pytest.raises(SweepSettingsError, match=r"512"):
        legacy.record_settings({"max_length": 16})


def test_collect_refuses_parts_of_different_settings(world, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    assert sweep(world, first, "--steps", "1")[0] == 0
    assert sweep(world, second, "--steps", "2", "--max-length", "16")[0] == 0
    with pytest.raises(CollectError, match=r"max_length.*128.*16"):
        collect([first, second])
    result = CliRunner().invoke(app, ["collect", str(first), str(second), "--out", str(tmp_path / "t.parquet")])
    output = " ".join(result.output.split())
    assert_named_error(result.exit_code, output, "part.json", "max_length", "separate")
    assert not (tmp_path / "t.parquet").exists()


# --------------------------------------------------------------------------------------------------
# 2. Workers die with their parent


@pytest.mark.slow
def test_killing_the_parent_of_two_workers_ends_both_workers(world, tmp_path):
    out = tmp_path / "sweep"
    command = [str(Path(sys.executable).parent / "finetasks-afr"), "sweep", str(world["runs"]), "--tasks", GOOD,
               "--out", str(out), "--custom-tasks", str(world["module"]), "--workers", "2", "--no-collect"]  # fmt: skip
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    parent = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2:
        assert parent.poll() is None and time.monotonic() < deadline, "the workers never started"
        workers = [pid for pid in children(parent.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        time.sleep(0.05)
    time.sleep(1.5)  # the workers are importing lighteval, about to evaluate
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in workers if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"{len(survivors)} worker(s) kept running after their parent was killed"


# --------------------------------------------------------------------------------------------------
# 3. A checkpoint held by another sweep: no partial table


def test_a_sweep_that_ends_while_another_holds_a_checkpoint_writes_no_partial_table(world, tmp_path):
    out = tmp_path / "sweep"
    checkpoints = discover([str(world["runs"])]).checkpoints
    store = SweepStore(out)
    with store.claim(checkpoints[1]) as mine:  # another sweep evaluating step 2 (flock: per open file)
        assert mine
        code, output = sweep(world, out)
    assert code == 0, output
    assert "1 checkpoint(s) held by another process" in output and "scores.parquet" in output, output
    assert "not written" in output and "rerun" in output
    assert not (out / "scores.parquet").exists(), "a partial table was written"
    code, output = sweep(world, out)  # the other run died: a rerun completes the sweep and the table
    assert code == 0, output
    assert pl.read_parquet(out / "scores.parquet")["step"].unique().sort().to_list() == [1, 2]


# --------------------------------------------------------------------------------------------------
# 4, 5. Task lists checked before any model loads


def test_an_unknown_task_is_named_with_close_matches_before_any_model_loads(world, tmp_path):
    out = tmp_path / "sweep"
    code, output = sweep(world, out, tasks=f"{GOOD},good_eng_c|0")
    assert_named_error(code, output, "unknown task 'good_eng_c'", "good_eng_cf", "TASKS_TABLE")
    assert not (out / "results").exists() and not (out / "logs").exists(), "a checkpoint was evaluated"


def test_a_missing_tasks_file_is_named(world, tmp_path):
    missing = tmp_path / "suites" / "yor.txt"
    code, output = sweep(world, tmp_path / "sweep", tasks=str(missing))
    assert_named_error(code, output, str(missing), "no such task file")
    assert "Cannot find task" not in output
    with pytest.raises(TaskListError, match="no such task file"):
        parse_tasks(missing)


def test_a_long_comma_list_of_tasks_is_a_list_not_a_file_name():
    names = [f"sib200_{code}_cf|0" for code in ("yor", "hau", "ibo", "swh", "zul", "xho", "amh", "som", "kin")] * 3
    names = [f"{name.split('|')[0]}_{i}|0" for i, name in enumerate(names)]  # 27 distinct names, 400+ chars
    assert len(",".join(names)) > 255
    assert parse_tasks(",".join(names)) == names


def test_a_long_task_list_on_the_command_line_is_checked_not_a_traceback(world, tmp_path):
    tasks = ",".join([GOOD] + [f"good_eng_cf_{i:02d}|0" for i in range(26)])
    code, output = sweep(world, tmp_path / "sweep", tasks=tasks)
    assert_named_error(code, output, "unknown task 'good_eng_cf_00'")
    assert "File name too long" not in output


# --------------------------------------------------------------------------------------------------
# 6. A task whose data is broken fails alone, named


def test_a_task_with_a_missing_split_fails_alone_and_is_named(world, tmp_path):
    out = tmp_path / "sweep"
    code, output = sweep(world, out, "--steps", "1", tasks=f"{GOOD},{BROKEN}")
    assert code == 1, output
    assert "Traceback" not in output
    summary = json.loads((out / "summary.json").read_text())
    reason = summary["checkpoints"][0]["reason"]
    assert summary["failed"] == 1 and summary["checkpoints"][0]["tasks"] == [GOOD]
    for needle in ("broken_eng_cf|0", "'test'", str(world["broken"]), "train"):
        assert needle in reason, (needle, reason)
    table = pl.read_parquet(out / "scores.parquet")
    assert table["task"].unique().to_list() == ["good_eng_cf"], "the healthy task of the checkpoint was evaluated"


# --------------------------------------------------------------------------------------------------
# 7. --out checked before any work


def test_sweep_out_that_is_a_file_or_under_a_file_is_refused_first(world, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep")
    for out, needle in ((afile, "is a file"), (afile / "sub", "is a file")):
        code, output = sweep(world, out)
        assert_named_error(code, output, "--out", str(afile), needle)
    assert afile.read_text() == "keep" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.slow
def test_sweep_and_collect_into_a_read_only_folder_are_refused_first(world, tmp_path):
    """In a subprocess that obeys file modes even as root (tests/unprivileged.py), so it runs in CI too."""
    home = tmp_path / "home"
    with read_only_folder(tmp_path) as locked:
        args = ["sweep", world["runs"], "--tasks", GOOD, "--out", locked / "sweep", "--custom-tasks", world["module"]]
        result = run_cli_unprivileged([*args, "--max-length", "128"], home)
        output = " ".join((result.stdout + result.stderr).split())
        assert_named_error(result.returncode, output, "--out", str(locked), "not writable")
        result = run_cli_unprivileged(["collect", tmp_path, "--out", locked / "t.parquet"], home)
        output = " ".join((result.stdout + result.stderr).split())
        assert_named_error(result.returncode, output, str(locked), "not writable")
        assert list(locked.iterdir()) == []


def test_collect_out_with_a_wrong_suffix_is_refused_before_reading_anything(tmp_path):
    result = CliRunner().invoke(app, ["collect", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.txt")])
    output = " ".join(result.output.split())
    assert_named_error(result.exit_code, output, "x.txt", ".parquet or .csv")
    assert "nowhere" not in output, "the suffix must be checked before the inputs are read"


# --------------------------------------------------------------------------------------------------
# 8. One writer


def test_the_sweep_writes_through_analysis_io_only():
    root = Path(__file__).resolve().parents[2] / "finetasks_afr" / "sweep"
    for path in root.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for private in (r"(?<!atomic_)write_text\(", r"(?<!atomic_)write_bytes\(", r"os\.replace\(", r"mkstemp\("):
            assert not re.search(private, text), f"{path.name} writes with {private} instead of analysis.base.io"


def test_spec_settings_are_exactly_the_result_changing_fields():
    spec = SweepSpec(tasks=["a|0"], out_dir="/x", max_length=64, dtype="bfloat16", batch_size=8, engine="lighteval")
    assert spec.settings() == {
        "backend": "accelerate",
        "dtype": "bfloat16",
        "max_length": 64,
        "max_samples": None,
        "tokenizer": None,
    }


def test_a_lock_file_left_by_a_kill_after_its_staging_folder_was_removed_is_cleaned(tmp_path):
    """A kill between removing a staging folder and its lock file (right after a commit) left the lock behind."""
    store = SweepStore(tmp_path)
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "host-1-abc.lock").write_text("")
    store.clean_stale_staging()
    assert not any((tmp_path / "staging").iterdir())


# --------------------------------------------------------------------------------------------------
# A checkpoint still being written (issue 41, case 4)


def test_a_checkpoint_without_the_trainer_state_its_siblings_have_is_refused_then_picked_up(world, tmp_path):
    """Before: evaluated at once (`evaluated 3`), its tokens null beside 512 and 1,024, accepted by select."""
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(world["runs"], runs)
    state = {"global_step": 1, "num_input_tokens_seen": 512}
    (runs / "mix" / "checkpoint-1" / "trainer_state.json").write_text(json.dumps(state))  # checkpoint-2: being saved
    out = tmp_path / "sweep"
    args = ["sweep", str(runs), "--tasks", GOOD, "--out", str(out), "--custom-tasks", str(world["module"])]
    refused = CliRunner().invoke(app, [*args, "--max-length", "128"])
    output = " ".join(refused.output.split())
    assert_named_error(refused.exit_code, output, "checkpoint-2", "no trainer_state.json", "--skip-incomplete")
    assert not (out / "results").exists()
    skipped = CliRunner().invoke(app, [*args, "--max-length", "128", "--skip-incomplete"])
    assert skipped.exit_code == 0, skipped.output
    said = " ".join(skipped.output.split())
    assert "skipping incomplete checkpoint" in said and "still being written" in said
    assert sorted(collect([out])[0]["step"].unique()) == [1]
    state = {"global_step": 2, "num_input_tokens_seen": 1024}
    (runs / "mix" / "checkpoint-2" / "trainer_state.json").write_text(json.dumps(state))  # the save finished
    resumed = CliRunner().invoke(app, [*args, "--max-length", "128", "--skip-incomplete"])
    assert resumed.exit_code == 0, resumed.output
    table, _ = collect([out])
    assert table.select("step", "tokens").unique().sort("step").rows() == [(1, 512), (2, 1024)]


def test_a_table_with_a_checkpoint_without_tokens_beside_counted_ones_says_so():
    from analysis.scores.validate import validate

    rows = [
        {"run": "mix-a", "seed": 1, "step": step, "tokens": tokens, "task": "toy_yor_cf", "benchmark": "toy",
         "language": "yor", "category": "NLU", "formulation": "CF", "fewshot": 0, "metric": "acc", "score": 0.5,
         "stderr": 0.01, "random_baseline": 0.25}
        for step, tokens in ((1, 512), (2, 1024), (3, None))
    ]  # fmt: skip
    _, report = validate(pl.DataFrame(rows), source="scores.parquet")
    assert "1 checkpoint(s) have no token count" in report.summary()
    assert "run=mix-a seed=1 step=3" in report.summary()
    _, all_null = validate(pl.DataFrame(rows).with_columns(pl.lit(None, pl.Int64).alias("tokens")), source="t")
    assert "no token count" not in all_null.summary()  # a table without counts at all is another matter


def test_weights_that_change_while_read_are_not_evaluated_and_the_rerun_picks_them_up(world, tmp_path, monkeypatch):
    import shutil

    from finetasks_afr.sweep.evaluate import Evaluator
    from finetasks_afr.sweep.run import run_sweep

    runs = tmp_path / "runs"
    shutil.copytree(world["runs"], runs)
    original = Evaluator._load_model

    def load_while_a_save_goes_on(self, checkpoint):
        model = original(self, checkpoint)
        weights = Path(checkpoint.path) / "model.safetensors"
        weights.write_bytes(weights.read_bytes())  # the trainer rewrites the file meanwhile: a new mtime
        os.utime(weights, ns=(1, 1))
        return model

    spec = SweepSpec(tasks=[GOOD], out_dir=str(tmp_path / "sweep"), custom_tasks=str(world["module"]), max_length=128)
    checkpoints = discover([str(runs)]).checkpoints
    monkeypatch.setattr(Evaluator, "_load_model", load_while_a_save_goes_on)
    first = run_sweep(spec, checkpoints, progress=False)
    assert first.counts == {"failed": 2}
    assert all("changed while they were read" in outcome.reason for outcome in first.outcomes)
    monkeypatch.setattr(Evaluator, "_load_model", original)
    assert run_sweep(spec, checkpoints, progress=False).counts == {"evaluated": 2}


def test_a_truncated_safetensors_file_or_a_missing_shard_is_an_incomplete_checkpoint(world, tmp_path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(world["runs"], runs)
    weights = runs / "mix" / "checkpoint-2" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # a copy still under way
    index = runs / "mix" / "checkpoint-1" / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "model.safetensors", "v": "model-00002-of-00002.safetensors"}}))
    found = discover([str(runs)], allow_incomplete=True)
    assert found.checkpoints == []
    reasons = {Path(item.path).name: item.reason for item in found.incomplete}
    assert "the end of model.safetensors" in reasons["checkpoint-2"]
    assert "model-00002-of-00002.safetensors (named by model.safetensors.index.json)" in reasons["checkpoint-1"]
