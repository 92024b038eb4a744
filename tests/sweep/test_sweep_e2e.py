"""The sweep for real: lighteval evaluates tiny checkpoints of two runs; results are checked against a direct
forward pass, against each other across executors (in-process, two workers, submitit's local executor, a sweep
killed with SIGKILL and restarted), and collected from a plain `lighteval accelerate` loop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from analysis.scores.discover import discover
from finetasks_afr.sweep.collect import collect
from finetasks_afr.sweep.evaluate import SweepSpec
from finetasks_afr.sweep.run import run_sweep
from tests.scoring.test_compat_metrics import Reference
from tests.slurm_probe import slurm_problem
from tests.toy_tasks import ENV, ITEMS, write_toy_dataset

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2]
TOY_TASKS = str(Path(__file__).resolve().parents[1] / "toy_tasks.py")
TASKS = ["toyfacts_eng_cf|0", "toyfacts2_eng_cf|0"]
KEY = ["run", "seed", "step", "task", "fewshot", "metric"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs x three checkpoints of a tiny Llama (more training steps at later checkpoints)."""
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("sweep")
    data = write_toy_dataset(root / "toy")
    os.environ[ENV] = str(data)
    corpus = [f"{q} {c[g]}." for q, c, g in ITEMS] * 20
    runs = root / "runs"
    for run, seed in (("mix-a", 1), ("mix-b", 2)):
        for step in (1, 2, 3):
            directory = runs / run / f"seed-{seed}" / f"checkpoint-{step}"
            make_tiny_causal_lm(directory, corpus, seed=seed, train_steps=step * 3, vocab_size=300, hidden_size=32)
            state = {"global_step": step, "num_input_tokens_seen": step * 512}
            (directory / "trainer_state.json").write_text(json.dumps(state))
    return {"root": root, "runs": runs, "data": data}


def spec_for(out: Path, tasks: Sequence[str] = TASKS, **extra: Any) -> SweepSpec:
    return SweepSpec(tasks=list(tasks), out_dir=str(out), custom_tasks=TOY_TASKS, max_length=128,
                     env={ENV: os.environ[ENV]}, **extra)  # fmt: skip


def sorted_table(out: Path) -> pl.DataFrame:
    frame, _ = collect([out])
    return frame.sort(KEY)


@pytest.fixture(scope="module")
def reference_sweep(world: dict[str, Path]) -> tuple[Path, pl.DataFrame]:
    out = world["root"] / "reference"
    checkpoints = discover([str(world["runs"])]).checkpoints
    result = run_sweep(spec_for(out), checkpoints, progress=False)
    assert result.counts["evaluated"] == 6
    return out, sorted_table(out)


def direct_acc(model_dir: Path) -> float:
    """CF accuracy from one plain forward pass per (query, choice), no lighteval code."""
    scorer = Reference(model_dir)
    hits = [int(np.argmax([scorer.logprob(q, " " + c)[0] for c in choices])) == gold for q, choices, gold in ITEMS]
    return float(np.mean(hits))


def test_scores_match_a_direct_forward_pass_and_tokens_come_from_trainer_state(world, reference_sweep):
    _, table = reference_sweep
    assert table.height == 6 * 2 * 2
    assert table.filter(pl.col("step") == 3)["tokens"].unique().to_list() == [1536]
    for run, seed in (("mix-a", 1), ("mix-b", 2)):
        for step in (1, 3):
            model_dir = world["runs"] / run / f"seed-{seed}" / f"checkpoint-{step}"
            got = table.filter(
                (pl.col("run") == run) & (pl.col("step") == step) & (pl.col("metric") == "acc")
                & (pl.col("task") == "toyfacts_eng_cf")
            )["score"].item()  # fmt: skip
            assert got == pytest.approx(direct_acc(model_dir), abs=1e-9)


def test_checkpoint_folders_are_left_untouched(world, reference_sweep):
    for directory in world["runs"].rglob("checkpoint-*"):
        assert sorted(p.name for p in directory.iterdir() if p.is_dir()) == [], "no prediction cache in checkpoints"


def test_rerun_skips_everything_and_new_tasks_are_added_as_a_part(world, reference_sweep, tmp_path):
    out = tmp_path / "sweep"
    shutil.copytree(reference_sweep[0], out)
    checkpoints = discover([str(world["runs"])]).checkpoints
    again = run_sweep(spec_for(out), checkpoints, progress=False)
    assert again.counts == {"skipped": 6}
    assert sorted_table(out).equals(reference_sweep[1])
    # a task added later is evaluated alone, as a second part, and collection has no duplicate
    first = checkpoints[:1]
    more = run_sweep(spec_for(out, tasks=[*TASKS, "toyfacts_eng_cf|1"]), first, progress=False)
    assert more.counts == {"evaluated": 1} and more.outcomes[0].tasks == ["toyfacts_eng_cf|1"]
    table = sorted_table(out)
    assert table.height == reference_sweep[1].height + 2
    assert table.filter(pl.col("fewshot") == 0).equals(reference_sweep[1])


def test_weights_replaced_in_place_get_new_predictions(world, reference_sweep, tmp_path):
    """lighteval's own cache would return the old predictions here (keyed on the path, not the weights)."""
    runs = tmp_path / "runs"
    shutil.copytree(world["runs"] / "mix-a", runs / "mix-a")
    out = tmp_path / "sweep"
    target = runs / "mix-a" / "seed-1" / "checkpoint-1"
    checkpoints = [c for c in discover([str(runs)]).checkpoints if c.step == 1]
    spec = spec_for(out, tasks=TASKS[:1], save_details=True)
    run_sweep(spec, checkpoints, progress=False)
    old = detail_logprobs(out)
    shutil.copy(world["runs"] / "mix-b" / "seed-2" / "checkpoint-3" / "model.safetensors", target)
    shutil.rmtree(out / "results")
    run_sweep(spec, checkpoints, progress=False)
    new = detail_logprobs(out)
    scorer = Reference(target)
    direct = {q: [scorer.logprob(q, " " + c)[0] for c in choices] for q, choices, _ in ITEMS}
    assert new.keys() == direct.keys()
    for query, values in new.items():
        assert values == pytest.approx(direct[query], abs=1e-4)
        assert values != pytest.approx(old[query], abs=1e-2), "the test needs weights that score differently"


def detail_logprobs(out: Path) -> dict[str, list[float]]:
    """Per query, the choices' log-probabilities lighteval computed (from --save-details parquet)."""
    files = list((out / "results").rglob("details_*.parquet"))
    assert len(files) == 1
    frame = pl.read_parquet(files[0])
    return {doc["query"]: list(response["logprobs"]) for doc, response in
            zip(frame["doc"].to_list(), frame["model_response"].to_list(), strict=True)}  # fmt: skip


def test_two_local_workers_give_the_same_table(world, reference_sweep, tmp_path):
    checkpoints = discover([str(world["runs"])]).checkpoints
    result = run_sweep(spec_for(tmp_path / "w2"), checkpoints, workers=2, progress=False)
    assert result.counts["evaluated"] == 6 and len(result.startup_seconds) == 2
    assert sorted_table(tmp_path / "w2").equals(reference_sweep[1])


def test_lighteval_engine_gives_the_same_table(world, reference_sweep, tmp_path):
    """The reference sweep ran the finetasks engine (one Pipeline reused over the 6 checkpoints, shared prefixes);
    lighteval's own path with a fresh Pipeline per checkpoint gives the same table."""
    checkpoints = discover([str(world["runs"])]).checkpoints
    result = run_sweep(spec_for(tmp_path / "stock", engine="lighteval"), checkpoints, progress=False)
    assert result.counts["evaluated"] == 6
    manifests = [json.loads(path.read_text()) for path in (tmp_path / "stock").rglob("part.json")]
    assert manifests and {manifest.get("engine") for manifest in manifests} == {"lighteval"}
    assert sorted_table(tmp_path / "stock").equals(reference_sweep[1])


def test_submitit_local_executor_gives_the_same_table(world, reference_sweep, tmp_path):
    from finetasks_afr.sweep.run import SlurmOptions

    checkpoints = discover([str(world["runs"])]).checkpoints
    options = SlurmOptions(per_job=3, cpus_per_task=1, time_min=10, mem_gb=4)
    result = run_sweep(spec_for(tmp_path / "s"), checkpoints, executor="submitit-local", slurm=options, progress=False)
    assert result.counts["evaluated"] == 6, [o.reason for o in result.outcomes]
    assert sorted_table(tmp_path / "s").equals(reference_sweep[1])


def test_a_broken_checkpoint_fails_alone_with_its_reason_in_the_summary_and_log(world, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(world["runs"] / "mix-a", runs / "mix-a")
    (runs / "mix-a" / "seed-1" / "checkpoint-2" / "model.safetensors").write_bytes(b"not a safetensors file")
    out = tmp_path / "sweep"
    result = run_sweep(spec_for(out, tasks=TASKS[:1]), discover([str(runs)]).checkpoints, progress=False)
    assert result.counts == {"evaluated": 2, "failed": 1}
    failed = result.failed[0]
    assert failed.checkpoint.step == 2 and failed.reason
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["checkpoints"][1]["reason"] == failed.reason
    assert "Traceback" in (out / "logs" / "mix-a" / "seed-1" / "step-000000002.log").read_text()
    assert not any((out / "staging").iterdir())


def _cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "finetasks-afr"), *args]


def test_killed_sweep_resumes_losing_nothing_and_duplicating_nothing(world, reference_sweep, tmp_path):
    out = tmp_path / "sweep"
    command = _cli("sweep", str(world["runs"]), "--tasks", ",".join(TASKS), "--out", str(out),
                   "--custom-tasks", TOY_TASKS, "--max-length", "128", "--no-collect")  # fmt: skip
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while not list(out.glob("results/**/part.json")):
        assert process.poll() is None, "the sweep ended before it could be killed"
        assert time.monotonic() < deadline, "no checkpoint finished in time"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done_before = len(list((out / "results").rglob("part.json")))
    assert 1 <= done_before < 6
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"] == done_before and summary["evaluated"] == 6 - done_before
    assert len(list((out / "results").rglob("part.json"))) == 6  # one part per checkpoint: nothing twice
    assert not any((out / "staging").iterdir())
    assert sorted_table(out).equals(reference_sweep[1])


def test_collect_reads_a_plain_lighteval_accelerate_loop(world, reference_sweep, tmp_path):
    from finetasks_afr.scoring.lighteval_runtime import ensure_tiny_benchmarks_file

    ensure_tiny_benchmarks_file()
    out = tmp_path / "own-loop"
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    lighteval = str(Path(sys.executable).parent / "lighteval")
    for step in (1, 3):
        model = world["runs"] / "mix-b" / "seed-2" / f"checkpoint-{step}"
        completed = subprocess.run(
            [lighteval, "accelerate", f"model_name={model},device=cpu,batch_size=64,max_length=128",
             TASKS[0], "--custom-tasks", TOY_TASKS, "--output-dir", str(out)],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-3000:]
    frame, report = collect([out], custom_tasks=TOY_TASKS)
    assert report.files == 2
    expected = reference_sweep[1].filter((pl.col("run") == "mix-b") & pl.col("step").is_in([1, 3])
                                         & (pl.col("task") == "toyfacts_eng_cf"))  # fmt: skip
    # a plain lighteval loop records no evaluated documents: its table has no majority_baseline (1/k is tested)
    assert "majority_baseline" not in frame.columns
    assert frame.sort(KEY).equals(expected.drop("majority_baseline"))


def test_the_majority_answers_share_of_the_evaluated_documents_is_recorded(reference_sweep):
    # every toy item's gold is its first choice: answering the first choice to every item is always right
    _, table = reference_sweep
    assert table.get_column("majority_baseline").unique().to_list() == [1.0]


def test_scores_on_a_sample_record_how_many_documents_and_a_plain_file_its_cap(world, reference_sweep, tmp_path):
    assert "sampled_documents" not in reference_sweep[1].columns  # every document scored: no column
    runs = tmp_path / "runs"
    shutil.copytree(world["runs"] / "mix-a", runs / "mix-a")
    checkpoints = [c for c in discover([str(runs)]).checkpoints if c.step in (1, 3)]
    out = tmp_path / "sampled"
    assert run_sweep(spec_for(out, max_samples=4), checkpoints, progress=False).counts == {"evaluated": 2}
    table = sorted_table(out)
    assert table.get_column("sampled_documents").unique().to_list() == [4]  # 4 of the 6 toy documents
    # lighteval's own results file of that part, read as a plain lighteval output: only the cap is known
    plain = tmp_path / "plain" / "results_2026-01-01T00-00-00.json"
    plain.parent.mkdir()
    shutil.copy(next((out / "results").rglob("results.json")), plain)
    assert json.loads(plain.read_text())["config_general"]["max_samples"] == 4
    frame, _ = collect([plain.parent], custom_tasks=TOY_TASKS)
    assert frame.get_column("sampled_documents").unique().to_list() == [4]
    # a cap above every task's size samples nothing
    whole = tmp_path / "whole"
    run_sweep(spec_for(whole, max_samples=50), checkpoints[:1], progress=False)
    assert "sampled_documents" not in sorted_table(whole).columns


def test_slurm_executor_sweeps_as_a_job_array(world, reference_sweep, tmp_path):
    """The real sbatch path (the one-node cluster of .ci/slurm.sh): two array tasks of three checkpoints each."""
    from finetasks_afr.sweep.run import SlurmOptions

    problem = slurm_problem("debug")
    if problem is not None:
        if os.environ.get("FINETASKS_AFR_REQUIRE_SLURM") == "1":
            pytest.fail(f"FINETASKS_AFR_REQUIRE_SLURM=1 but {problem}: run `bash .ci/slurm.sh up` first")
        pytest.skip(problem)
    checkpoints = discover([str(world["runs"])]).checkpoints
    options = SlurmOptions(partition="debug", per_job=3, cpus_per_task=1, time_min=10, mem_gb=4, parallelism=2)
    out = tmp_path / "slurm"
    result = run_sweep(spec_for(out), checkpoints, executor="slurm", slurm=options, progress=False)
    assert result.counts["evaluated"] == 6, [o.reason for o in result.outcomes]
    assert len(result.startup_seconds) == 2  # one lighteval start-up per array task, not per checkpoint
    job_logs = list((out / "slurm").rglob("*_log.out"))
    assert len(job_logs) == 2, job_logs  # submitit's per-array-task logs: the work went through sbatch
    assert sorted_table(out).equals(reference_sweep[1])
