"""`finetasks-afr longppl`: prepare cross-lingual LongPPL key paragraphs for the `longppl_<iso3>` tasks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from finetasks_afr.cli.common import (
    console,
    fail,
    named_write_errors,
    print_table,
    require_device,
    require_model_location,
    require_output_dir,
)
from finetasks_afr.perplexity.longppl import (
    DIR_ENV,
    LongPPLFile,
    LongPPLFileError,
    LongPPLInputError,
    load_longppl_file,
)


@contextmanager
def quiet_model_loading() -> Iterator[None]:
    """transformers at error level while the teacher and the embedder load and run.

    transformers 5 logs a load report as a warning (an encoder loaded with AutoModel leaves a pooler or
    head unused), with raw ANSI escape codes that break the command's progress bar; the weights a LongPPL
    run needs are checked by its own results. Errors still show, and the verbosity is restored after.
    """
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)


longppl_app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


@longppl_app.callback()
def main() -> None:
    """Cross-lingual LongPPL (key paragraphs found by a teacher in the source language, aligned to the target)."""


@longppl_app.command("prepare")
def prepare_command(
    documents: Annotated[
        Path, typer.Argument(help="JSONL of parallel documents: id, source_lang, target_lang, source, target.")
    ],
    teacher: Annotated[str, typer.Option("--teacher", help="Causal LM (path or hub id) scoring source paragraphs.")],
    embedder: Annotated[
        str, typer.Option("--embedder", help="Encoder (path or hub id, AutoModel) whose mean-pooled states align.")
    ],
    out: Annotated[Path, typer.Option("--out", help=f"Output root (point ${DIR_ENV} at it); writes OUT/<iso3>/.")],
    top_k: Annotated[int, typer.Option("--top-k", min=1, help="Key paragraphs per document (highest perplexity).")],
    threshold: Annotated[
        float, typer.Option("--threshold", min=-1.0, max=1.0, help="Minimum cosine of an alignment.")
    ] = 0.5,
    teacher_max_length: Annotated[
        int | None, typer.Option("--teacher-max-length", min=2, help="Teacher window (default: the model's).")
    ] = None,
    embedder_max_length: Annotated[int, typer.Option("--embedder-max-length", min=1)] = 512,
    device: Annotated[str, typer.Option("--device")] = "cpu",
) -> None:
    """Score, select and align key paragraphs; write OUT/<iso3>/longppl.json and the task's dataset folder."""
    from finetasks_afr.perplexity.longppl import prepare

    require_output_dir(out)
    if not documents.is_file():
        raise fail(f"documents file not found: {documents}")
    require_model_location(teacher, "--teacher")
    require_model_location(embedder, "--embedder")
    require_device(device)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    kept = (
        "the previous longppl.json and dataset of that language were kept, and no partial file or empty folder is left"
    )
    try:
        with (
            named_write_errors(out, kept=kept),
            Progress(*columns, console=console, transient=True) as bar,
            quiet_model_loading(),
        ):
            task = bar.add_task("loading models", total=None)

            def progress(done: int, total: int, label: str) -> None:
                bar.update(task, completed=done, total=total, description=label)

            path = prepare(
                documents,
                teacher,
                embedder,
                top_k,
                threshold,
                out=out,
                teacher_max_length=teacher_max_length,
                embedder_max_length=embedder_max_length,
                device=device,
                progress=progress,
            )
    except (LongPPLInputError, LongPPLFileError, ValueError) as error:
        raise fail(str(error)) from error
    _summary(load_longppl_file(path), out)


def _summary(prepared: LongPPLFile, out: Path) -> None:
    payload = prepared.payload
    stats = payload["stats"]
    table = Table(title=f"LongPPL {prepared.language}: {prepared.path}")
    table.add_column("")
    table.add_column("count", justify="right")
    table.add_row("documents read", str(stats["documents_read"]))
    table.add_row("documents kept", str(stats["documents_kept"]))
    table.add_row("key paragraphs (target)", str(prepared.n_key_paragraphs()))
    for reason, count in payload["skipped"].items():
        table.add_row(f"skipped: {reason}", str(count))
    for name in ("key_source_paragraphs", "below_threshold", "aligned_to_first_paragraph", "shared_target_paragraph",
                 "source_paragraphs_too_long"):  # fmt: skip
        table.add_row(name.replace("_", " "), str(stats[name]))
    print_table(table)
    console.print(
        f"evaluate with [bold]{DIR_ENV}={out.resolve()}[/] and the task [bold]longppl_{prepared.language}|0[/]"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(longppl_app, name="longppl", help="Cross-lingual LongPPL: prepare key paragraphs.")
