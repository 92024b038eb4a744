"""What every `finetasks-afr` command shares: the stderr console, the one error printer, and the `--out` check.

A user error is a red line on stderr and exit code 2, never a traceback. Messages are escaped for rich, so text
such as "[monotonicity] min" (a config section) is printed as written instead of being read as a style tag.
"""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from analysis.base.io import OutputDirectoryError
from analysis.base.memory import is_out_of_memory, memory_limits, out_of_memory_message
from analysis.base.write_errors import ANYWHERE_ERRNOS, os_error_behind, refused_write, too_many_open_files

console = Console(stderr=True)
TOKENS_PER_STEP_HELP = (
    "Tokens per training step: every checkpoint's tokens = this x step, overriding the num_input_tokens_seen "
    "of trainer_state.json (the output says so). Default: the counts the trainer recorded (none for hub revisions)."
)


def print_table(table: Table) -> None:
    """A table on the console, whole: on a terminal as rich lays it out, and in a file or pipe (where rich would
    assume 80 columns and cut cells with "…") as wide as its longest row."""
    if console.is_terminal:
        console.print(table)
        return
    width = Console(width=1_000_000).measure(table).maximum
    Console(file=console.file, width=max(width, 80), no_color=console.no_color).print(table)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` as an error on the stderr console and return the Exit to raise."""
    console.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code=code)


def require_device(device: str, option: str = "--device") -> str:
    """`device` when this machine has that torch device, else the named error, before any model loads.

    Only for work that runs here: a Slurm sweep's device is on the compute nodes, not on the submitting host.
    """
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as error:
        raise fail(f"{option} {device!r} is not a torch device ({error}); use cpu, cuda or cuda:<index>") from None
    if parsed.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise fail(
                f"{option} {device}: this machine has no CUDA device (torch {torch.__version__}, CUDA "
                f"{torch.version.cuda or 'not built in'}); use {option} cpu, or run where a GPU is"
            )
        if parsed.index is not None and parsed.index >= count:
            raise fail(f"{option} {device}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise fail(f"{option} {device}: Apple's MPS is not available here; use {option} cpu")
    return device


def require_model_location(value: str, option: str) -> str:
    """`value` when it can name a model (an existing folder with a config.json, or a hub id `org/name`), else the
    named error, before any model loads: a mistyped path would otherwise reach the hub as an invalid repo id."""
    path = Path(value).expanduser()
    looks_local = path.is_absolute() or value.startswith((".", "~")) or len(path.parts) > 2
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise fail(f"{option} {value}: this folder holds no config.json, so it is not a saved model; give a model "
                       "folder (with config.json and weights) or a hub id org/name")  # fmt: skip
    elif path.exists():
        raise fail(f"{option} {value} is a file, not a model folder or a hub id org/name")
    elif looks_local:
        raise fail(f"{option} {value}: no such folder; give a model folder (with config.json) or a hub id org/name")
    return value


def require_scores_input(scores: Path | None) -> None:
    """The named error (exit 2) unless `scores` is a regular file or a folder, found by stat before anything opens or
    resolves it: a FIFO would block open() past Ctrl-C, a symlink loop would raise pathlib's RuntimeError in the
    first `resolve()` (`analysis.scores.read.check_score_path`). None (the bundled sweep) passes."""
    from analysis.scores.read import check_score_path
    from analysis.scores.schema import ScoreTableError

    if scores is None:
        return
    try:
        check_score_path(scores)
    except ScoreTableError as error:
        raise fail(str(error)) from None


def output_dir_problem(path: Path, option: str = "--out") -> str | None:
    """Why `path` cannot be (or become) a writable output directory, or None when it can.

    Checked before any work starts, so a mistyped `--out` costs nothing: a path that is a file, a parent that is a
    file, or a directory (or its nearest existing ancestor) that this user cannot write.
    """
    if path.exists() and not path.is_dir():
        return f"{option} {path} is a file, not a directory; choose a directory path"
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        return f"{option} {path}: {ancestor} is a file, so no directory can be made under it; choose another path"
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{option} {path}: {ancestor} is not writable by this user; choose a writable directory"
    return None


def require_output_dir(path: Path, option: str = "--out") -> Path:
    """`path` when it can be an output directory, else the named error (exit 2) saying why."""
    problem = output_dir_problem(path, option)
    if problem is not None:
        raise fail(problem)
    return path


def require_output_file(path: Path, suffixes: tuple[str, ...], option: str = "--out") -> Path:
    """`path` when it names a writable file with one of `suffixes`, else the named error, before any work."""
    if path.suffix.lower() not in suffixes:
        raise fail(f"{option} {path}: the file name must end in {' or '.join(suffixes)} (the format is chosen by it)")
    if path.is_dir():
        raise fail(f"{option} {path} is a directory; give a file name ending in {' or '.join(suffixes)}")
    problem = output_dir_problem(path.parent, option=f"{option} {path}: its folder")
    if problem is not None:
        raise fail(problem)
    return path


def require_analysis_out(out: Path) -> Path:
    """`out` when an analysis output can be built beside it and swapped in, else the named error, before any work.

    Beyond `require_output_dir` (not a file, not under a file, writable), the folder that holds `out` must be
    writable too: the new output is built there as a hidden sibling and renamed over `out`. A link is followed (and
    said so): its target is what gets written, the link itself stays.
    """
    if out.is_symlink():
        console.print(
            f"note: --out {escape(str(out))} is a link: writing into its target {escape(os.path.realpath(out))}"
        )
        out = Path(os.path.realpath(out))
    require_output_dir(out)
    parent = out.absolute().parent
    problem = output_dir_problem(parent, option=f"--out {out}: its parent folder")
    if problem is not None:
        raise fail(f"{problem} (the new output is built there, then swapped in)")
    return out


def output_failure(out: Path, error: OSError | OutputDirectoryError) -> typer.Exit:
    """The named error for an output directory that could not be written (refused, or the disk said no).

    An allocation that failed inside a write (polars reports ENOMEM as an OSError, "Cannot allocate memory (os error
    12)", when a memory limit is reached while it writes) is the memory's fault, not the folder's: it gets the
    out-of-memory message (`analysis.base.memory`), which names the limit and the fix."""
    if isinstance(error, OutputDirectoryError):
        return fail(f"--out: {error}")
    if is_out_of_memory(error) or getattr(os_error_behind(error), "errno", None) == errno.ENOMEM:
        return fail(out_of_memory_message(f"raised {type(error).__name__} ({error})", memory_limits()))
    if (files := too_many_open_files(error)) is not None:  # the process's limit, not the folder: say so
        return fail(f"--out {out} could not be written: {files}; nothing was replaced")
    return fail(f"--out {out} could not be written ({error}); nothing was replaced; choose a writable directory")


def waiting_note(line: str) -> None:
    """The one line a command prints while another process holds its output (`analysis.base.io.output_lock`)."""
    console.print(f"[yellow]note:[/] {escape(line)}")


def _mount_point(path: Path) -> Path:
    """The mount point of the file system that holds `path` (or would hold it: its nearest existing folder)."""
    current = Path(path).resolve()
    while not current.exists() and current.parent != current:
        current = current.parent
    while not current.is_mount() and current.parent != current:
        current = current.parent
    return current


def _inside(path: Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def write_failure(error: OSError, out: Path, *, kept: str, option: str = "--out") -> typer.Exit:
    """The named error (exit 2) for a write the system refused mid-run: the file, what the system said, what was
    kept, and the fix for that errno (free space on the mount, raise the file-size limit, ...).

    Every writer ends on such an error with this one message, whatever it was writing: a full disk is no bug of
    the command, a traceback would hide the one thing to act on (which file system, which folder), and the
    writers already guarantee that nothing half-written replaced an old output, which `kept` says in the words of
    the command. Another `option` is suggested only when the failed file lies under `out`.
    """
    path = Path(str(error.filename)) if error.filename else out
    named = str(path) if error.filename else f"a file in {out}"  # a buffered write failing at close names none
    number = error.errno or 0
    meaning = f"{os.strerror(number)} ({errno.errorcode.get(number, number)})"
    mount = _mount_point(path)
    elsewhere = f", or choose another {option}" if _inside(path, out) else ""
    if number in (errno.ENOSPC, errno.EDQUOT):
        what = "space" if number == errno.ENOSPC else "space in your disk quota"
        fix = f"free {what} on {mount}{elsewhere}"
    elif number == errno.EFBIG:
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        limit = (f"this process's file-size limit of {soft} bytes (`ulimit -f`)" if soft != resource.RLIM_INFINITY
                 else f"the largest file the file system on {mount} holds (`ulimit -f` is unlimited)")  # fmt: skip
        fix = f"the file outgrew {limit}: raise the limit with `ulimit -f unlimited`{elsewhere}"
    elif number == errno.EROFS:
        fix = f"{mount} is mounted read-only: remount it writable{elsewhere}"
    elif number in (errno.EACCES, errno.EPERM):
        folder = path if path.is_dir() else path.parent
        fix = f"this user may not write in {folder}: make it writable (chmod u+w {folder}){elsewhere}"
    else:
        fix = f"check {path.parent}{elsewhere}"
    return fail(f"could not write {named}: {meaning}; {kept}; fix: {fix}")


@contextmanager
def named_write_errors(out: Path, *, kept: str, option: str = "--out") -> Iterator[None]:
    """Turn a write the system refused in the block (an OSError, or polars' wrapping of one) into `write_failure`.

    A permission error is taken for a refused write only under `out` (or naming no file): elsewhere it is a file
    the command could not read (a model, a raw file), which is no write and is left to its own handling.
    """
    import polars as pl

    try:
        yield
    except (OSError, pl.exceptions.PolarsError) as error:
        cause = refused_write(error)
        if cause is None:
            raise
        if cause.errno not in ANYWHERE_ERRNOS and cause.filename and not _inside(Path(str(cause.filename)), out):
            raise
        raise write_failure(cause, out, kept=kept, option=option) from None


def wrote_line(out: Path, written: list[Path]) -> str:
    """What a command wrote, top level only (`suites/`, `figures/` for folders), from the paths it returned."""
    names: dict[str, None] = {}
    for path in written:
        parts = path.relative_to(out).parts
        names[parts[0] + ("/" if len(parts) > 1 else "")] = None
    return f"[green]wrote[/] {escape(str(out))}: " + escape(", ".join(names))


__all__ = [
    "console",
    "fail",
    "named_write_errors",
    "output_dir_problem",
    "output_failure",
    "require_analysis_out",
    "require_output_dir",
    "require_output_file",
    "require_scores_input",
    "waiting_note",
    "write_failure",
    "wrote_line",
]
