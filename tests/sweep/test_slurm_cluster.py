"""The Slurm path of checkpoint sweeps, for real: submitit jobs on the one-node cluster of `.ci/slurm.sh`.

Skipped when no Slurm cluster answers (no `sinfo`, or its controller is down), unless
FINETASKS_AFR_REQUIRE_SLURM=1 (CI), where every test fails and says to run `bash .ci/slurm.sh up`.

Submitted functions are defined here. The job runs `python -m submitit.core._submit` in a fresh
interpreter where this test module is not importable (pytest imported it from `tests/` through its
own sys.path entry), and cloudpickle pickles module-level functions *by reference* (module name +
qualified name), so unpickling in the job would fail with ModuleNotFoundError. Registering this
module with `cloudpickle.register_pickle_by_value` makes them travel by value (code + globals).
Real sweep workers live in the installed `finetasks_afr` package, which the job's venv imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
import submitit
from submitit.core.utils import FailedJobError, UncompletedJobError

from tests.slurm_probe import slurm_problem

pytestmark = pytest.mark.slow

REQUIRE = os.environ.get("FINETASKS_AFR_REQUIRE_SLURM") == "1"
PARTITION = "debug"
JOB_TIMEOUT_S = 90  # a job that has not finished by then fails the test (and is cancelled)
PROBE_VARIABLE = "FINETASKS_AFR_SLURM_PROBE"

cloudpickle.register_pickle_by_value(sys.modules[__name__])


_PROBLEM = slurm_problem(PARTITION)
if _PROBLEM is not None and not REQUIRE:
    pytest.skip(_PROBLEM, allow_module_level=True)


def _require_cluster() -> None:
    """First call of every test: a missing cluster FAILS the test (not an error) under the env flag."""
    if _PROBLEM is not None:  # only reached under FINETASKS_AFR_REQUIRE_SLURM=1
        pytest.fail(
            f"FINETASKS_AFR_REQUIRE_SLURM=1 but {_PROBLEM}: run `bash .ci/slurm.sh up` (as root) first",
            pytrace=False,
        )


def _sacct_works() -> bool:
    run = subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, timeout=20, check=False)
    return run.returncode == 0


def _executor(folder: Path) -> submitit.AutoExecutor:
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    executor.update_parameters(
        slurm_partition=PARTITION, timeout_min=5, cpus_per_task=1, mem_gb=1, slurm_array_parallelism=2
    )
    return executor


def _wait(jobs: list[submitit.Job[Any]], timeout_s: float = JOB_TIMEOUT_S) -> None:
    """Wait for the jobs with a deadline (job.result() alone waits forever), cancelling them on timeout."""
    deadline = time.monotonic() + timeout_s
    while not all(job.done() for job in jobs):
        if time.monotonic() > deadline:
            for job in jobs:
                job.cancel(check=False)
            states = {job.job_id: job.state for job in jobs}
            pytest.fail(f"Slurm jobs not done after {timeout_s} s: {states}; see `squeue` and /var/log/slurm")
        time.sleep(1)


def _final_state(job: submitit.Job[Any], timeout_s: float = 30) -> str:
    """The job's state in sacct once recorded (slurmctld hands records to slurmdbd asynchronously)."""
    deadline = time.monotonic() + timeout_s
    state = job.watcher.get_state(job.job_id, mode="force")
    while state in {"UNKNOWN", "PENDING", "RUNNING", "COMPLETING"} and time.monotonic() < deadline:
        time.sleep(1)
        state = job.watcher.get_state(job.job_id, mode="force")
    return state


# ---- functions run as Slurm jobs (pickled by value, see the module docstring) ----


def _square_in_job(x: int) -> dict[str, object]:
    return {
        "square": x * x,
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
        "array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
        "executor": os.environ.get("SUBMITIT_EXECUTOR"),
        "probe": os.environ.get(PROBE_VARIABLE),
        "cwd": str(Path.cwd()),
        "python": sys.executable,
    }


def _fail_in_job(marker: str) -> None:
    raise ValueError(f"deliberate failure {marker}")


def _die_in_job() -> None:
    os._exit(3)  # no result pickle: only Slurm (sacct) can tell submitit the job is over


# ---- tests ----


def test_job_array_runs_under_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _require_cluster()
    monkeypatch.setenv(PROBE_VARIABLE, "propagated")
    monkeypatch.chdir(tmp_path)
    jobs = _executor(tmp_path).map_array(_square_in_job, [1, 2, 3])
    assert len(jobs) == 3
    array_id = jobs[0].job_id.split("_")[0]
    assert [job.job_id for job in jobs] == [f"{array_id}_{index}" for index in range(3)]

    _wait(jobs)
    results = [job.result() for job in jobs]

    assert [result["square"] for result in results] == [1, 4, 9]
    for index, result in enumerate(results):
        assert result["array_job_id"] == array_id
        assert result["array_task_id"] == str(index)
        assert result["job_id"]  # each array task is a Slurm job of its own
        assert result["executor"] == "slurm"
        # sbatch exports the submitting environment (--export=ALL) and runs in the submitting cwd.
        assert result["probe"] == "propagated"
        assert Path(str(result["cwd"])).resolve() == tmp_path.resolve()
        assert result["python"] == sys.executable
    if _sacct_works():
        assert [_final_state(job) for job in jobs] == ["COMPLETED"] * 3


def test_exception_in_job_surfaces_with_traceback(tmp_path: Path) -> None:
    _require_cluster()
    job = _executor(tmp_path).submit(_fail_in_job, "xyzzy-42")
    _wait([job])
    with pytest.raises(FailedJobError) as raised:
        job.result()
    message = str(raised.value)
    assert "Traceback" in message
    assert "ValueError: deliberate failure xyzzy-42" in message
    assert "_fail_in_job" in message


def test_job_dying_without_result_is_reported(tmp_path: Path) -> None:
    """A job killed before writing its result (OOM, time limit, crash) is only seen through sacct."""
    _require_cluster()
    if not _sacct_works():
        message = "Slurm accounting is off (sacct fails): submitit would wait forever for this job"
        if REQUIRE:  # CI's cluster (.ci/slurm.sh) runs slurmdbd: without it this path is untested, a failure
            pytest.fail(f"FINETASKS_AFR_REQUIRE_SLURM=1 but {message}; start slurmdbd (`bash .ci/slurm.sh up`)")
        pytest.skip(message)
    job = _executor(tmp_path).submit(_die_in_job)
    _wait([job])
    with pytest.raises(UncompletedJobError, match="has not produced any output"):
        job.result()
    assert _final_state(job) == "FAILED"
