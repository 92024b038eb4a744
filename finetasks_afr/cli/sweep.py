"""`finetasks-afr sweep` and `finetasks-afr collect`: evaluate every checkpoint, then build the score table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from finetasks_afr.cli.common import (
    TOKENS_PER_STEP_HELP,
    console,
    fail,
    named_write_errors,
    require_device,
    require_output_dir,
    require_output_file,
    waiting_note,
)

SWEEP_KEPT = (
    "the parts already in results/ were kept and nothing half-written was committed (the part in flight was "
    "dropped); rerun the same command to resume"
)


def quiet_third_party_progress() -> None:
    """lighteval's, datasets' and transformers' tqdm bars would garble ours; set before they are imported."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def _steps(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise fail(f"--steps {text!r}: expected comma-separated integers, e.g. 1000,2000") from error


RunsArg = Annotated[
    list[str],
    typer.Argument(
        help="Run sources: a run directory (checkpoint-<step> folders), a parent of run directories, a quoted glob "
        "of checkpoint folders, or hf://org/repo (stepN revisions); prefix NAME= or NAME:SEED= to name the run."
    ),
]


def sweep_command(
    runs: RunsArg,
    tasks: Annotated[str, typer.Option("--tasks", help="Task list file (one task|fewshot per line) or a comma list.")],
    out: Annotated[Path, typer.Option("--out", help="Sweep directory (results, logs, summary); reused to resume.")],
    executor: Annotated[str, typer.Option(help="local, slurm, or submitit-local.")] = "local",
    workers: Annotated[
        int, typer.Option(min=1, help="Local worker processes (each evaluates checkpoints in turn); at least 1.")
    ] = 1,
    custom_tasks: Annotated[
        str | None, typer.Option(help="Custom tasks module; default: the finetasks-afr suite.")
    ] = None,
    builtin_tasks: Annotated[bool, typer.Option(help="Also load lighteval's built-in tasks.")] = False,
    backend: Annotated[str, typer.Option(help="accelerate (transformers) or vllm (GPU extra).")] = "accelerate",
    engine: Annotated[
        str,
        typer.Option(
            help="accelerate backend only: finetasks (each context scored once for all its choices, requests built "
            "once per worker) or lighteval (lighteval's own path, for comparison); same scores."
        ),
    ] = "finetasks",
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:0, ...")] = "cpu",
    batch_size: Annotated[int, typer.Option(help="lighteval batch size (counts continuations; use 64+).")] = 64,
    max_length: Annotated[int | None, typer.Option(help="Context length; prompts are cut from the left.")] = None,
    dtype: Annotated[str | None, typer.Option(help="float32, bfloat16, ...")] = None,
    tokenizer: Annotated[str | None, typer.Option(help="Tokenizer for checkpoints saved without one.")] = None,
    max_samples: Annotated[int | None, typer.Option(help="Evaluate only N samples per task (partial!).")] = None,
    save_details: Annotated[bool, typer.Option(help="Keep lighteval's per-sample details.")] = False,
    tokens_per_step: Annotated[int | None, typer.Option(help=TOKENS_PER_STEP_HELP)] = None,
    steps: Annotated[str | None, typer.Option(help="Only these steps, comma-separated.")] = None,
    skip_incomplete: Annotated[
        bool,
        typer.Option(
            help="Skip checkpoint folders without config or weights, or without the trainer_state.json their sibling "
            "checkpoints have (still being written), listed, instead of failing; a rerun picks them up."
        ),
    ] = False,
    revision_pattern: Annotated[
        str, typer.Option(help="Regex of hub revisions naming steps (group 1 = step).")
    ] = r"^step[-_]?(\d+)$",
    collect: Annotated[bool, typer.Option(help="Write OUT/scores.parquet at the end.")] = True,
    slurm_partition: Annotated[str | None, typer.Option(help="Slurm partition.")] = None,
    slurm_time_min: Annotated[int, typer.Option(help="Slurm time limit per array task, minutes.")] = 60,
    slurm_cpus: Annotated[int, typer.Option(help="CPUs per array task.")] = 4,
    slurm_mem_gb: Annotated[float, typer.Option(help="Memory per array task, GB.")] = 16,
    slurm_gpus: Annotated[int, typer.Option(help="GPUs per array task.")] = 0,
    slurm_per_job: Annotated[int, typer.Option(help="Checkpoints per array task.")] = 1,
    slurm_parallelism: Annotated[int, typer.Option(help="Array tasks running at once.")] = 64,
    slurm_account: Annotated[str | None, typer.Option(help="Slurm account.")] = None,
    slurm_qos: Annotated[str | None, typer.Option(help="Slurm QOS.")] = None,
    slurm_setup: Annotated[
        list[str] | None, typer.Option(help="Shell line run before each array task (repeatable).")
    ] = None,
) -> None:
    """Evaluate every checkpoint of the runs on the tasks; resumable (rerun the same command to continue)."""
    from analysis.scores.discover import DiscoveryError, discover, token_override_note
    from finetasks_afr.data.sources import DATA_DIR_ENV
    from finetasks_afr.sweep.evaluate import SweepSpec, tokenizer_problem
    from finetasks_afr.sweep.run import EXECUTORS, SlurmOptions, run_sweep
    from finetasks_afr.sweep.store import SweepStoreError
    from finetasks_afr.sweep.task_list import DEFAULT_CUSTOM_TASKS, TaskListError, parse_tasks

    quiet_third_party_progress()
    require_output_dir(out)
    if executor not in EXECUTORS:
        raise fail(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if executor != "slurm":  # a Slurm job's device is on its node, not here
        require_device(device)
    try:
        task_list = parse_tasks(tasks)
        found = discover(
            runs,
            tokens_per_step=tokens_per_step,
            revision_pattern=revision_pattern,
            steps=_steps(steps),
            allow_incomplete=skip_incomplete,
        )
    except (DiscoveryError, TaskListError) as error:
        raise fail(str(error)) from error
    for item in found.incomplete:
        console.print(f"[yellow]skipping incomplete checkpoint[/] {item.path}: {item.reason}")
    for note in token_override_note(found.checkpoints, tokens_per_step):
        console.print(f"[yellow]note:[/] {escape(note)}")
    if not found.checkpoints:
        raise fail("no checkpoint to evaluate (check --steps)")
    env = {name: os.environ[name] for name in (DATA_DIR_ENV, "FINETASKS_AFR_DEMO_WORLD") if name in os.environ}
    custom = custom_tasks or DEFAULT_CUSTOM_TASKS
    try:
        spec = SweepSpec(
            tasks=task_list,
            out_dir=str(out.resolve()),
            custom_tasks=str(Path(custom).resolve()) if Path(custom).exists() else custom,
            builtin_tasks=builtin_tasks,
            backend=backend,
            engine=engine,
            device=device,
            batch_size=batch_size,
            max_length=max_length,
            dtype=dtype,
            tokenizer=tokenizer,
            max_samples=max_samples,
            save_details=save_details,
            env=env,
        )
    except ValueError as error:  # --backend / --engine outside their choices
        raise fail(str(error)) from error
    missing_tokenizer = tokenizer_problem(found.checkpoints, tokenizer)
    if missing_tokenizer is not None:
        raise fail(missing_tokenizer)
    slurm = SlurmOptions(
        partition=slurm_partition,
        time_min=slurm_time_min,
        cpus_per_task=slurm_cpus,
        mem_gb=slurm_mem_gb,
        gpus_per_node=slurm_gpus,
        per_job=slurm_per_job,
        parallelism=slurm_parallelism,
        account=slurm_account,
        qos=slurm_qos,
        setup=list(slurm_setup or []),
    )
    from analysis.base.processes import set_interrupt_note

    set_interrupt_note("the sweep store is consistent; rerun the same command to resume")  # parts commit by rename
    try:
        with named_write_errors(out, kept=SWEEP_KEPT):
            result = run_sweep(spec, found.checkpoints, executor=executor, workers=workers, slurm=slurm,
                               console=console)  # fmt: skip
    except (TaskListError, SweepStoreError) as error:
        raise fail(str(error)) from error
    from analysis.base.io import OutputDirectoryError, output_lock

    try:  # the table is a directory-level file: written under the directory's lock (other sweeps hold it briefly)
        with output_lock(out, on_wait=waiting_note):
            if result.held_elsewhere:
                _warn_incomplete(out / "scores.parquet", result.held_elsewhere)
            elif collect and any(o.status in ("evaluated", "skipped") or o.part for o in result.outcomes):
                _collect_into(out, out / "scores.parquet", custom_tasks=spec.custom_tasks, skip_bad=False)
    except OutputDirectoryError as error:
        raise fail(str(error)) from error
    if result.failed:
        raise typer.Exit(code=1)


def _warn_incomplete(table: Path, held: list) -> None:
    """Another sweep over the same directory still evaluates `held`: a table now would silently lack them.

    The table is written only by the run that finds the directory complete (the last one to finish), so no
    partial scores.parquet ever exists; a previous one, which lacks what is being added now, is removed. The exit
    code stays 0: this run did its share, and the other run completes the table.
    """
    from finetasks_afr.sweep.store import SweepStore

    stale = table.is_file()
    table.unlink(missing_ok=True)
    labels = escape(", ".join(c.label for c in held[:5]) + (", ..." if len(held) > 5 else ""))
    store = SweepStore(table.parent)  # each claim records its holder: pid@host (command)
    holders = escape("; ".join(sorted({store.claim_holder(c) or "unnamed" for c in held})))
    console.print(
        f"[yellow]warning:[/] {len(held)} checkpoint(s) held by another process (another sweep over this --out, "
        f"{holders}, is evaluating them: {labels}); {escape(table.name)} not written"
        + (" (the previous one was removed)" if stale else "")
        + ", since it would lack them. The other run writes it when it finishes; if that run died, rerun this "
        "command to evaluate them and write the table."
    )


def _collect_into(roots: Path | list[Path], target: Path, **options: Any) -> None:
    from analysis.base.io import OutputDirectoryError, output_lock
    from analysis.scores.schema import ScoreTableError
    from analysis.scores.write import write_scores
    from finetasks_afr.sweep.collect import CollectError, collect

    kept = f"any previous {target.name} was kept and no partial file is left"
    try:  # another writer of the table: wait for it, saying whom (or exit 2 naming it after the wait)
        with named_write_errors(target, kept=kept), output_lock(target, on_wait=waiting_note):
            frame, report = collect([roots] if isinstance(roots, Path) else roots, **options)
            write_scores(frame, target)
    except (CollectError, ScoreTableError, OutputDirectoryError) as error:
        raise fail(str(error)) from error
    console.print(report.summary())
    console.print(f"[green]wrote[/] {target}")


def collect_command(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Sweep directories, lighteval --output-dir or lm-eval 0.4 --output_path folders/files."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Score table to write (.parquet).")] = Path("scores.parquet"),
    tokens_per_step: Annotated[int | None, typer.Option(help=TOKENS_PER_STEP_HELP)] = None,
    task_info: Annotated[
        Path | None, typer.Option(help="CSV task,benchmark,language,category,formulation,random_baseline.")
    ] = None,
    custom_tasks: Annotated[
        str | None, typer.Option(help="Custom tasks module whose TASK_INFO describes its tasks.")
    ] = None,
    skip_bad: Annotated[bool, typer.Option(help="Skip corrupt or partial results files (listed).")] = False,
    skip_unknown: Annotated[
        bool, typer.Option(help="Skip tasks without task info (listed) instead of failing.")
    ] = False,
) -> None:
    """Collect lighteval results (a sweep's or your own loop's) or lm-eval 0.4 results into the score table."""
    require_output_file(out, (".parquet", ".csv"))
    _collect_into(
        list(dirs), out, tokens_per_step=tokens_per_step, task_info=task_info, custom_tasks=custom_tasks,
        skip_bad=skip_bad, skip_unknown=skip_unknown,
    )  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)
    app.command("collect")(collect_command)
