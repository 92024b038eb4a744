"""Run a sweep: plan what is pending, hand it to an executor, show progress, write the summary.

Executors:
- `local`: in this process (`workers=1`) or N spawned worker processes, each an `Evaluator` over its share;
- `slurm`: a submitit job array on a Slurm cluster, one array task per group of `per_job` checkpoints, resources
  from `SlurmOptions`; the driver polls the sweep directory for committed parts to show progress;
- `submitit-local`: the same submitit code path with submitit's local executor (no Slurm needed).

Every executor runs `finetasks_afr.sweep.evaluate.evaluate_shard`; all share the sweep directory's rules (see
`finetasks_afr.sweep.store`), so they can be mixed, interrupted and restarted freely.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from analysis.base.processes import die_with_parent, sigterm_exits, starting_children, stop_processes
from analysis.base.write_errors import writing
from analysis.scores.discover import Checkpoint
from finetasks_afr.sweep.evaluate import Outcome, SweepSpec, SweepWriteError, evaluate_shard
from finetasks_afr.sweep.store import SweepStore
from finetasks_afr.sweep.task_list import check_tasks

if TYPE_CHECKING:
    import submitit

EXECUTORS = ("local", "slurm", "submitit-local")


@dataclass
class SlurmOptions:
    """sbatch resources of each array task."""

    partition: str | None = None
    time_min: int = 60
    cpus_per_task: int = 4
    mem_gb: float = 16
    gpus_per_node: int = 0
    per_job: int = 1  # checkpoints per array task: more amortises lighteval's start-up, fewer spreads wider
    parallelism: int = 64  # array tasks running at once
    account: str | None = None
    qos: str | None = None
    setup: list[str] = field(default_factory=list)  # shell lines run before the worker (module load ...)

    def submitit_parameters(self) -> dict:
        params: dict = {
            "timeout_min": self.time_min,
            "cpus_per_task": self.cpus_per_task,
            "mem_gb": self.mem_gb,
            "slurm_array_parallelism": self.parallelism,
            "name": "finetasks-afr-sweep",
        }
        if self.gpus_per_node:
            params["gpus_per_node"] = self.gpus_per_node
        if self.partition:
            params["slurm_partition"] = self.partition
        if self.account:
            params["slurm_account"] = self.account
        if self.qos:
            params["slurm_qos"] = self.qos
        if self.setup:
            params["slurm_setup"] = list(self.setup)
        return params


@dataclass
class SweepResult:
    outcomes: list[Outcome]
    startup_seconds: list[float]  # one per worker that ran
    held_elsewhere: list[Checkpoint] = field(default_factory=list)  # still pending, locked by another process

    @property
    def counts(self) -> Counter:
        return Counter(o.status for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]


# --------------------------------------------------------------------------------------------------
# Planning and summary


def plan(spec: SweepSpec, checkpoints: list[Checkpoint], store: SweepStore) -> tuple[list[Checkpoint], list[Outcome]]:
    """(checkpoints with pending tasks, skipped outcomes for those already complete)."""
    todo, skipped = [], []
    for checkpoint in checkpoints:
        if store.pending_tasks(checkpoint, spec.tasks):
            todo.append(checkpoint)
        else:
            skipped.append(Outcome(checkpoint, "skipped", "already evaluated"))
    return todo, skipped


def write_summary(store: SweepStore, result: SweepResult) -> Path:
    counts = result.counts
    payload = {
        "evaluated": counts.get("evaluated", 0),
        "skipped": counts.get("skipped", 0),
        "failed": counts.get("failed", 0),
        "busy": counts.get("busy", 0),
        "held_by_another_process": [c.label for c in result.held_elsewhere],
        "worker_startup_seconds": result.startup_seconds,
        "checkpoints": [o.to_json() for o in result.outcomes],
    }
    with writing(store.root / "summary.json"):  # a refused write names the file, not a temporary one
        return store.write_file("summary.json", json.dumps(payload, indent=2) + "\n")  # under the directory's lock


def failed_details(outcomes: list[Outcome], shown: int = 10) -> str:
    """One line per distinct reason, naming its checkpoints: a task whose data cannot be read fails every
    checkpoint with the same reason, which was printed once per checkpoint (42 times in the quick demo)."""
    by_reason: dict[str, list[str]] = {}
    for outcome in outcomes:
        by_reason.setdefault(outcome.reason, []).append(outcome.checkpoint.label)
    lines = []
    for reason, labels in list(by_reason.items())[:shown]:
        if len(labels) == 1:
            lines.append(f"{labels[0]}: {reason}")
        else:
            named = ", ".join(labels[:3]) + (", ..." if len(labels) > 3 else "")
            lines.append(f"{len(labels)} checkpoints ({named}): {reason}")
    if len(by_reason) > shown:
        lines.append(f"... and {len(by_reason) - shown} other reason(s): see each checkpoint's log")
    return "\n".join(lines)


def summary_table(result: SweepResult) -> Table:
    counts = result.counts
    table = Table(title="sweep summary", show_lines=False)
    table.add_column("outcome")
    table.add_column("checkpoints", justify="right")
    table.add_column("details")
    for status in ("evaluated", "skipped", "busy", "failed"):
        if not counts.get(status):
            continue
        outcomes = [o for o in result.outcomes if o.status == status]
        if status == "failed":
            details = failed_details(outcomes)
        elif status == "evaluated":
            seconds = sum(o.timing.total for o in outcomes if o.timing)
            details = f"{seconds:.1f} s in evaluation"
        else:
            details = outcomes[0].reason
        table.add_row(status, str(len(outcomes)), details)
    return table


# --------------------------------------------------------------------------------------------------
# Progress


class _Progress:
    """Two rich bars: checkpoints, and tasks (a checkpoint's tasks count when it completes)."""

    def __init__(self, console: Console, checkpoints: list[Checkpoint], n_tasks: int, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
        )
        self.checkpoint_bar = self.progress.add_task("checkpoints", total=len(checkpoints))
        self.task_bar = self.progress.add_task("tasks", total=len(checkpoints) * n_tasks)

    def __enter__(self) -> _Progress:
        self.progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.progress.__exit__(kind, error, trace)

    def started(self, checkpoint: Checkpoint) -> None:
        self.progress.update(self.checkpoint_bar, description=f"checkpoints (now {checkpoint.label})")

    def done(self, outcome: Outcome, n_tasks: int) -> None:
        self.progress.advance(self.checkpoint_bar)
        self.progress.advance(self.task_bar, n_tasks)


# --------------------------------------------------------------------------------------------------
# Executors


def run_sweep(
    spec: SweepSpec,
    checkpoints: list[Checkpoint],
    *,
    executor: str = "local",
    workers: int = 1,
    slurm: SlurmOptions | None = None,
    console: Console | None = None,
    progress: bool = True,
) -> SweepResult:
    """Evaluate every checkpoint's pending tasks with the chosen executor; write summary.json; return outcomes.

    Before any model loads: the task names are checked (`TaskListError`) and the directory's result-changing
    settings are recorded or compared (`SweepSettingsError`). Checkpoints that another process (a second sweep over
    the same directory) still holds at the end are listed in `held_elsewhere`: the sweep directory is then not
    complete, whatever this run evaluated.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    console = console or Console(stderr=True)
    check_tasks(spec.tasks, spec.custom_tasks, spec.builtin_tasks)
    store = SweepStore(Path(spec.out_dir))
    store.root.mkdir(parents=True, exist_ok=True)
    store.record_settings(spec.settings())
    store.write_sweep_request(spec.to_json())
    removed = store.clean_stale_staging()
    if removed:
        console.print(f"removed {removed} staging folder(s) of an interrupted sweep")
    todo, skipped = plan(spec, checkpoints, store)
    console.print(
        f"{len(checkpoints)} checkpoint(s), {len(spec.tasks)} task(s): {len(todo)} to evaluate, "
        f"{len(skipped)} already done"
    )
    with _Progress(console, todo, len(spec.tasks), progress) as bars:
        if not todo:
            result = SweepResult([], [])
        elif executor == "local" and workers <= 1:
            result = _run_in_process(spec, todo, bars)
        elif executor == "local":
            result = _run_workers(spec, todo, workers, bars)
        else:
            result = _run_submitit(spec, todo, slurm or SlurmOptions(), bars, cluster=executor)
    result.outcomes = skipped + result.outcomes
    result.held_elsewhere = [
        o.checkpoint for o in result.outcomes if o.status == "busy" and store.pending_tasks(o.checkpoint, spec.tasks)
    ]
    write_summary(store, result)
    console.print(summary_table(result))
    return result


def _run_in_process(spec: SweepSpec, todo: list[Checkpoint], bars: _Progress) -> SweepResult:
    os.environ.setdefault("TQDM_DISABLE", "1")
    outcomes, startup = evaluate_shard(spec, todo, bars.started, lambda o: bars.done(o, len(spec.tasks)))
    return SweepResult(outcomes, [startup])


def _shards(items: list[Checkpoint], n: int) -> list[list[Checkpoint]]:
    """Round-robin shards, so every worker gets early and late checkpoints alike."""
    return [items[i::n] for i in range(n) if items[i::n]]


def _worker_main(parent: int, spec_json: dict, checkpoints_json: list[dict], events: multiprocessing.Queue) -> None:
    """Entry point of a local worker process: evaluate a shard, report each checkpoint on the queue.

    The worker dies with the sweep (`die_with_parent`): a killed sweep must not leave workers evaluating to the end.
    A parent already gone before this line (killed while the worker was starting) is caught by its pid. It ignores
    Ctrl-C, which the terminal sends to the whole process group: the parent stops it (SIGTERM, which unwinds it as
    an exit: `sigterm_exits`), no traceback here.
    """
    if os.getppid() != parent:
        os._exit(1)
    die_with_parent()
    sigterm_exits()
    os.environ["TQDM_DISABLE"] = "1"
    spec = SweepSpec.from_json(spec_json)
    checkpoints = [Checkpoint.from_json(c) for c in checkpoints_json]
    try:
        _, startup = evaluate_shard(
            spec,
            checkpoints,
            on_start=lambda c: events.put(("start", c.to_json())),
            on_done=lambda o: events.put(("done", o.to_json())),
        )
        events.put(("startup", startup))
    except SweepWriteError as error:  # a full disk ends the sweep: the parent raises it, no traceback here
        events.put(("refused", [error.errno, error.strerror, error.filename]))
    except BaseException as error:  # the parent turns the shard's unfinished checkpoints into failures
        events.put(("crash", f"{type(error).__name__}: {error}"))
        raise


def _run_workers(spec: SweepSpec, todo: list[Checkpoint], workers: int, bars: _Progress) -> SweepResult:
    shards = _shards(todo, workers)
    if spec.torch_threads is None:
        spec = SweepSpec.from_json({**spec.to_json(), "torch_threads": max(1, (os.cpu_count() or 1) // len(shards))})
    context = multiprocessing.get_context("spawn")
    events: multiprocessing.Queue = context.Queue()
    processes = [
        context.Process(target=_worker_main, args=(os.getpid(), spec.to_json(), [c.to_json() for c in shard], events))
        for shard in shards
    ]
    with starting_children():  # a Ctrl-C while a worker starts up waits, unseen by the worker
        for process in processes:
            process.start()
    try:
        return _gather(spec, todo, shards, processes, events, bars)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) or failing: no worker outlives the sweep
        stop_processes(processes)
        raise


def _gather(
    spec: SweepSpec,
    todo: list[Checkpoint],
    shards: list[list[Checkpoint]],
    processes: list,
    events: multiprocessing.Queue,
    bars: _Progress,
) -> SweepResult:
    """Follow the workers' events until every worker has ended; the outcomes of the whole sweep."""
    outcomes: dict[str, Outcome] = {}
    startups: list[float] = []
    crashes: list[str] = []
    refused: list[list] = []  # a worker's SweepWriteError (errno, strerror, file name): it ends the sweep

    def drain(block: bool) -> None:
        try:
            kind, payload = events.get(timeout=0.5) if block else events.get_nowait()
        except queue.Empty:
            return
        if kind == "start":
            bars.started(Checkpoint.from_json(payload))
        elif kind == "done":
            outcome = Outcome.from_json(payload)
            outcomes[outcome.checkpoint.key] = outcome
            bars.done(outcome, len(spec.tasks))
        elif kind == "startup":
            startups.append(payload)
        elif kind == "refused":
            refused.append(payload)
        else:
            crashes.append(payload)

    while any(p.is_alive() for p in processes):
        drain(block=True)
    while not events.empty():
        drain(block=False)
    for process in processes:
        process.join()
    # A refused write is raised once every worker has ended: a full disk stops the others at their next write, and
    # stopping one mid-evaluation would leave its staging folder and semaphores behind (resource_tracker warnings).
    if refused:
        raise SweepWriteError(*refused[0])
    reason = crashes[0] if crashes else "worker process died (exit code {})"
    for process, shard in zip(processes, shards, strict=True):
        for checkpoint in shard:
            if checkpoint.key not in outcomes:
                outcomes[checkpoint.key] = Outcome(checkpoint, "failed", reason.format(process.exitcode))
    return SweepResult([outcomes[c.key] for c in todo], startups)


def _submitit_shard(spec_json: dict, checkpoints_json: list[dict]) -> dict:
    """Entry point of one Slurm array task: evaluate a group of checkpoints; return JSON outcomes."""
    os.environ["TQDM_DISABLE"] = "1"
    spec = SweepSpec.from_json(spec_json)
    outcomes, startup = evaluate_shard(spec, [Checkpoint.from_json(c) for c in checkpoints_json])
    return {"outcomes": [o.to_json() for o in outcomes], "startup": startup}


def make_submitit_executor(folder: Path, options: SlurmOptions, cluster: str) -> submitit.AutoExecutor:
    import submitit

    executor = submitit.AutoExecutor(folder=str(folder), cluster="local" if cluster == "submitit-local" else "slurm")
    params = options.submitit_parameters()
    if cluster == "submitit-local":  # the local executor knows none of the slurm_* options
        params = {k: v for k, v in params.items() if not k.startswith("slurm_") and k != "gpus_per_node"}
    executor.update_parameters(**params)
    return executor


def _run_submitit(
    spec: SweepSpec, todo: list[Checkpoint], options: SlurmOptions, bars: _Progress, cluster: str
) -> SweepResult:
    store = SweepStore(Path(spec.out_dir))
    groups = [todo[i : i + options.per_job] for i in range(0, len(todo), max(1, options.per_job))]
    if spec.torch_threads is None:
        spec = SweepSpec.from_json({**spec.to_json(), "torch_threads": options.cpus_per_task})
    executor = make_submitit_executor(store.root / "slurm" / "%j", options, cluster)
    jobs = executor.map_array(
        _submitit_shard, [spec.to_json()] * len(groups), [[c.to_json() for c in g] for g in groups]
    )
    _watch(jobs, groups, store, spec, bars)
    outcomes: list[Outcome] = []
    startups: list[float] = []
    for job, group in zip(jobs, groups, strict=True):
        try:
            returned = job.result()
        except Exception as error:  # the array task failed: its unfinished checkpoints failed with its reason
            last_line = (str(error).strip().splitlines() or [type(error).__name__])[-1]
            reason = f"job {job.job_id} failed: {last_line[:300]}"
            outcomes += _after_failed_job(group, store, spec, reason)
            continue
        outcomes += [Outcome.from_json(o) for o in returned["outcomes"]]
        startups.append(returned["startup"])
    return SweepResult(outcomes, startups)


def _after_failed_job(group: list[Checkpoint], store: SweepStore, spec: SweepSpec, reason: str) -> list[Outcome]:
    out = []
    for checkpoint in group:
        if store.pending_tasks(checkpoint, spec.tasks):
            out.append(Outcome(checkpoint, "failed", reason))
        else:
            out.append(Outcome(checkpoint, "evaluated", "committed before the job failed"))
    return out


def _watch(jobs: list, groups: list[list[Checkpoint]], store: SweepStore, spec: SweepSpec, bars: _Progress) -> None:
    """Advance the bars as parts appear in the sweep directory, until every job has finished."""
    seen: set[str] = set()
    everything = [c for group in groups for c in group]

    def poll() -> None:
        for checkpoint in everything:
            if checkpoint.key not in seen and not store.pending_tasks(checkpoint, spec.tasks):
                seen.add(checkpoint.key)
                bars.done(Outcome(checkpoint, "evaluated"), len(spec.tasks))

    while not all(job.done() for job in jobs):
        poll()
        time.sleep(2)
    poll()
