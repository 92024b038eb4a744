"""The one atomic writer of the project: nothing it produces is ever half-written, and no directory is half-new.

Files: the content goes to a temporary file beside the target, is flushed and fsynced, gets the permissions a plain
`open()` would give (0666 minus the umask, where `mkstemp` would leave 0600), and is renamed over the target; the
directory is then fsynced so that the rename itself survives a power cut. A failure or an interrupt removes the
temporary file and leaves the previous target untouched.

Directories: `staged_directory` builds a whole output directory in a hidden sibling and swaps it in only when the
build succeeded, so `select --out DIR` after a `kill -9` shows DIR exactly as the previous run left it, or exactly
as the new run made it; never new `decisions.csv` beside an old report, never stale `suites/` from an older table.
Leftovers of a killed run (`.<name>.staging-*`, `.<name>.old-*`, `.<name>.*.tmp`) are removed by the next run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

TMP_SUFFIX = ".tmp"
OUTPUT_MARKER = ".finetasks-afr-output"
"""The file that marks a directory as made by `staged_directory`: only such a directory is ever replaced."""


class OutputDirectoryError(ValueError):
    """`--out` names a directory that must not be replaced (it holds files this project did not write)."""


_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")
_MAX_NAME = 100  # characters of a sanitised name before it is cut (file systems allow 255 bytes)


def safe_file_name(name: str) -> str:
    """`name` (a run, task or language from the user or the data) as one safe path component, distinct for distinct
    names: the one rule by which names become paths (analysis outputs, the sweep store).

    Names come from score tables and command lines, so they may hold `/`, `..`, spaces, control characters, a
    leading dot or non-ASCII letters; written as they are, a language `../../evil` puts its suite outside `--out`;
    replaced without more, `mix-α` and `mix-β` become one folder. Every character outside `[A-Za-z0-9_.+-]` becomes
    `_` and leading dots are replaced (no hidden file, no `..`). When that changed the name, a short hash of the
    original is appended, so `a/b` and `a_b` stay two paths.
    """
    cleaned = _UNSAFE.sub("_", name)
    cleaned = "_" * (len(cleaned) - len(cleaned.lstrip("."))) + cleaned.lstrip(".")
    if cleaned == name and 0 < len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[:_MAX_NAME] or '_'}-{digest}"


def umask() -> int:
    """The process umask (read without changing it for longer than two calls)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in `directory` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """Call `write(tmp)` on a temporary file beside `path`, then fsync it and rename it over `path`.

    `write` receives the temporary path and may open it in any mode (polars, matplotlib and shutil all write by
    path). Parent folders are created. A `path` that is a symbolic link stays one: the file it points to is
    replaced (the temporary file is made beside that file).
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        tmp.chmod(0o666 & ~umask())
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        tmp.replace(path)  # atomic within one file system (os.replace)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    """UTF-8 text with `\\n` line ends, atomically."""

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)

    return atomic_write(path, write)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def write_csv_atomic(frame: pl.DataFrame, path: Path) -> Path:
    """CSV with empty cells for nulls (a not-measurable statistic is an empty cell)."""
    return atomic_write(path, lambda tmp: frame.write_csv(tmp, null_value=""))


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Delete `.*.tmp` files a killed writer left in `directory` (not recursive); returns what was removed.

    Only hidden names ending in `.tmp`, the pattern this module creates, are touched.
    """
    removed = []
    if directory.is_dir():
        for leftover in directory.glob(f".*{TMP_SUFFIX}"):
            if leftover.is_file():
                leftover.unlink(missing_ok=True)
                removed.append(leftover)
    return removed


def _leftovers(target: Path) -> list[Path]:
    parent = target.parent
    if not parent.is_dir():
        return []
    prefixes = (f".{target.name}.staging-", f".{target.name}.old-")
    return [entry for entry in parent.iterdir() if entry.name.startswith(prefixes)]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def recover_directory(target: Path) -> None:
    """Finish or undo a swap that a kill interrupted, and remove the staging leftovers.

    If `target` is missing but an `.old-*` copy exists, the kill came between the two renames of the swap: the old
    directory is put back (all-old). Everything else (`.staging-*`, further `.old-*`) is deleted.
    """
    leftovers = _leftovers(target)
    olds = sorted((p for p in leftovers if p.name.startswith(f".{target.name}.old-")), key=lambda p: p.stat().st_mtime)
    if not target.exists() and olds:
        olds[-1].replace(target)
        leftovers.remove(olds[-1])
    for leftover in leftovers:
        _remove(leftover)


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """Yield an empty staging directory; on success it replaces `target` whole, on failure it is deleted.

    The swap is two renames (old target aside, staging in), then the old copy is deleted; `recover_directory` at
    the start of the next run repairs a kill between the renames. `target` must be absent, empty, or a directory this
    function made (it holds `OUTPUT_MARKER`): a user's own folder is never replaced. A `target` that is a symbolic
    link stays one: its target directory is the one built and swapped.
    """
    target = Path(target)
    if target.is_symlink():  # write into the link's target: replacing the link would leave its target untouched
        target = Path(os.path.realpath(target))
    if target.exists() and not target.is_dir():
        raise OutputDirectoryError(f"{target} is a file, not a directory; choose a directory path")
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_directory(target)
    if target.is_dir() and any(target.iterdir()) and not (target / OUTPUT_MARKER).is_file():
        raise OutputDirectoryError(
            f"{target} already holds files that finetasks-afr did not write (no {OUTPUT_MARKER} in it), and the "
            "output directory is replaced whole; choose a new or empty directory"
        )
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    staging = target.parent / f".{target.name}.staging-{token}"
    staging.mkdir()
    staging.chmod(0o777 & ~umask())
    try:
        (staging / OUTPUT_MARKER).write_text("written by finetasks-afr; this directory is replaced whole\n")
        yield staging
    except BaseException:
        _remove(staging)
        raise
    old = target.parent / f".{target.name}.old-{token}"
    if target.exists():
        target.replace(old)
    staging.replace(target)
    fsync_directory(target.parent)
    if old.exists():
        _remove(old)


__all__ = [
    "OUTPUT_MARKER",
    "OutputDirectoryError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "fsync_directory",
    "recover_directory",
    "remove_stale_temporaries",
    "safe_file_name",
    "staged_directory",
    "umask",
    "write_csv_atomic",
]
