"""`finetasks-afr data`: build local mirrors of the task datasets (layout: finetasks_afr/data/sources.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from finetasks_afr.cli.common import console, fail, named_write_errors, print_table, require_output_dir
from finetasks_afr.data.sources import DATA_DIR_ENV, SOURCES

if TYPE_CHECKING:
    from finetasks_afr.data.mirror import MirrorReport

data_app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

OutOpt = Annotated[Path, typer.Option("--out", help=f"Mirror root (point ${DATA_DIR_ENV} at it).")]
DatasetOpt = Annotated[
    list[str] | None,
    typer.Option("--dataset", "-d", help="Dataset key (repeatable); `finetasks-afr data sources` lists them."),
]
ConfigOpt = Annotated[
    list[str] | None, typer.Option("--config", "-c", help="Only this config name (repeatable), e.g. hau_Latn.")
]


MIRROR_KEPT = (
    "the dataset being written kept its previous files (those written before it are complete and new), and no "
    "partial file or empty folder is left"
)


def _check_keys(keys: list[str] | None) -> None:
    for key in keys or []:
        if key not in SOURCES:
            raise fail(f"unknown dataset key {key!r}; known keys: {', '.join(sorted(SOURCES))}")


def _run(build: Callable[..., MirrorReport], **kwargs: Any) -> MirrorReport:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total or None, description=label or "planning")

        return build(progress=progress, **kwargs)


def _show(report: MirrorReport) -> None:
    table = Table(title=f"mirror at {report.out}")
    for column in ("dataset", "configs", "rows", "skipped"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for name, n_configs, n_rows, n_skipped in report.per_dataset():
        table.add_row(name, str(n_configs), str(n_rows), str(n_skipped))
    table.add_row("total", "", str(report.rows()), str(report.skipped()), style="bold")
    print_table(table)
    for name, configs in report.counts.items():
        for config, splits in configs.items():
            for split, count in splits.items():
                if count.skipped:
                    reasons = "; ".join(f"{reason} x{n}" for reason, n in count.reasons.most_common())
                    console.print(f"[yellow]skipped[/] {name}/{config}/{split}: {count.skipped} ({reasons})")
    for note in report.notes:
        console.print(f"[dim]note:[/] {note}")
    for error in report.errors:
        console.print(f"[bold red]error:[/] {error}")
    if report.rows():
        console.print(f"done in {report.seconds:.1f} s; use it with [bold]{DATA_DIR_ENV}={report.out}[/]")
    else:
        console.print(f"done in {report.seconds:.1f} s; [yellow]no rows were written[/]")


@data_app.command("import-raw")
def import_raw_command(
    src: Annotated[Path, typer.Argument(help="Raw data folder laid out like shared/data.")],
    out: OutOpt,
    dataset: DatasetOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Build the mirror from the raw GitHub releases (no hub access needed)."""
    from finetasks_afr.data.local_dataset import LocalDatasetError
    from finetasks_afr.data.mirror import MirrorError, import_raw
    from finetasks_afr.data.raw import RawFileError

    require_output_dir(out)
    if not src.is_dir():
        raise fail(f"raw data folder not found: {src}")
    _check_keys(dataset)
    try:
        with named_write_errors(out, kept=MIRROR_KEPT):
            report = _run(import_raw, src=src, out=out, datasets=dataset, configs=config)
    except (MirrorError, RawFileError, LocalDatasetError, KeyError) as error:
        raise fail(str(error).strip("'\"")) from error
    _show(report)


@data_app.command("mirror")
def mirror_command(out: OutOpt, dataset: DatasetOpt = None, config: ConfigOpt = None) -> None:
    """Mirror the datasets from the Hugging Face Hub (pinned revisions; needs hub access)."""
    from finetasks_afr.data.mirror import HubUnreachableError, mirror_from_hub

    require_output_dir(out)
    _check_keys(dataset)
    try:
        with named_write_errors(out, kept=MIRROR_KEPT):
            report = _run(mirror_from_hub, out=out, datasets=dataset, configs=config)
    except HubUnreachableError as error:
        raise fail(str(error), code=1) from error
    _show(report)
    if report.errors:
        raise typer.Exit(code=1)


@data_app.command("sources")
def sources_command() -> None:
    """List the dataset keys, their hub repositories, pinned revisions and where tasks will load them from."""
    from finetasks_afr.data.sources import hf_location

    table = Table()
    for column in ("key", "hub repo", "revision", "splits", "loads from"):
        table.add_column(column)
    for key, src in SOURCES.items():
        repo, _ = hf_location(key)
        table.add_row(key, src.hub_repo, src.revision or "-", " ".join(src.splits), repo)
    print_table(table)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data", help="Prepare the local dataset mirror (from the hub or raw files).")
