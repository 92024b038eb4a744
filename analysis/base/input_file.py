"""User inputs are regular files (or folders of them): what a path is, told by `os.stat` alone, before any open.

Opening a named pipe (FIFO) blocks until a writer comes, inside a system call that neither Ctrl-C nor SIGTERM
interrupts from Python, and reading one consumes what the writer sent, so a reader that opens its input twice
(to sniff the encoding, then to parse) drains it first and then waits forever. A device may never end (/dev/zero)
and a socket cannot be opened at all. A symlink loop makes pathlib raise RuntimeError ("Symlink loop") rather than
an OSError. So every reader of a user path asks `input_problem` first: it never opens the path, and says by name
what the path is and what to give instead. A missing path is left to the caller, whose message says what it
expected there.
"""

from __future__ import annotations

import errno
import stat
from collections.abc import Callable
from pathlib import Path

_SPECIAL: tuple[tuple[Callable[[int], bool], str, str], ...] = (
    (
        stat.S_ISFIFO,
        "a named pipe (FIFO)",
        "reading a pipe waits for a writer and consumes what it sends, so a second read would wait forever",
    ),
    (stat.S_ISCHR, "a character device", "a device is no file of data: it may never end, or block"),
    (stat.S_ISBLK, "a block device", "a device is no file of data: it may never end, or block"),
    (stat.S_ISSOCK, "a socket", "a socket cannot be read as a file"),
)


def _copy_name(path: Path | str) -> Path:
    """Where the fix suggests saving what a special file gives: beside it, its suffix kept (the format is read from
    the suffix)."""
    path = Path(path)
    return path.with_name(f"{path.stem}-copy{path.suffix}")


def _special_problem(path: Path | str, mode: int, what: str) -> str | None:
    """The named refusal of a FIFO, device or socket (`mode` from stat), None for a regular file or a folder."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind, why = next(
        ((k, w) for test, k, w in _SPECIAL if test(mode)), ("a special file", "only regular files are read")
    )
    return (
        f"{path} is {kind}, not a regular file, so it was not opened ({why}); "
        f"fix: save the {what} to a regular file (e.g. `cat {path} > {_copy_name(path)}`) and give that file's path"
    )


def input_problem(path: Path | str, *, what: str, folders: bool = False) -> str | None:
    """Why `path` cannot be read as a `what` (a regular file, or a folder when `folders`), or None when it can or
    does not exist (the caller names a missing path in its own words).

    Found by `Path.stat` (os.stat), which follows links and opens nothing: a FIFO, device or socket is named and
    never opened, a symlink loop and a link to nothing are named, a folder where a file is needed is named.
    """
    try:
        info = Path(path).stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            return (
                f"{path}: symlink loop (its links lead back to a link already followed), so it names no file; "
                f"fix: point the link at the real {what} (`ls -l {path}` shows where it leads)"
            )
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            if Path(path).is_symlink():
                return (
                    f"{path}: a link to {Path(path).readlink()}, which does not exist; "
                    f"fix: point the link at the {what}, or give the {what}'s own path"
                )
            return None
        return (
            f"{path}: cannot be examined ({error.strerror}); "
            "fix: check the path and that this user may enter its folders"
        )
    if stat.S_ISDIR(info.st_mode) and not folders:
        return f"{path} is a directory, not a {what} file; fix: give the path of a {what} file"
    return _special_problem(path, info.st_mode, what)


def special_file_problem(path: Path | str, *, what: str) -> str | None:
    """The named refusal of a FIFO, device or socket found in a folder the reader walks, else None.

    Unlike `input_problem`, a link to nothing (or in a loop) is no problem here: a folder walk skips what is not a
    file, as it always has (a checkpoint folder may hold stale links); only what would block an open is refused.
    """
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return None
    return _special_problem(path, mode, what)


__all__ = ["input_problem", "special_file_problem"]
