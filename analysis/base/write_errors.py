"""Writes the system refused (a full disk, a quota, a file-size limit, a read-only mount, no permission), found
behind whatever a library wrapped them in, and tied to the file they were for.

Every writer of the project ends a run on such an error with one named message (`finetasks_afr.cli.common.
write_failure`), not a traceback. Two things stand in the way, and this module removes both, in one place:

- polars reports the operating system's error in its own words: `write_parquet` raises a `ComputeError`
  ("... underlying IO error: No space left on device (os error 28)") and `write_csv` an `OSError` without an errno,
  so neither `except OSError` nor `error.errno` sees the full disk. The number in "(os error N)" is the errno.
- a buffered write that fails when its file is closed raises an OSError without a file name, and one that fails
  in `analysis.base.io.atomic_write` names its hidden temporary file (`.scores.parquet.x1y2z3a4.tmp`), which is
  removed before anyone reads the message. `writing(path)` names the file that was being written instead.
"""

from __future__ import annotations

import errno
import os
import re
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REFUSED_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM})
"""What the system answers when it will not take a write: the device or the quota is full, the file outgrew a
limit, the mount is read-only, or the user may not write there. Not bugs of the data or the code: the fix is
always the user's (free space, another place), so they become named errors."""

ANYWHERE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""Of those, the ones that only a write can meet (a read never fills a disk); EACCES and EPERM may be a read."""

OPEN_FILES_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})
"""The system refused to open one more file: this process's limit (`ulimit -n`) or the system's table is full. No
fault of the folder written to, so "choose a writable directory" would send the user the wrong way."""

_ENOUGH_FILES = 4096  # the open-file limit a fix suggests: ample for every command, workers' pipes included
_OS_ERROR_IN_WORDS = re.compile(r"\(os error (\d+)\)")


def os_error_behind(error: BaseException, path: str | Path | None = None) -> OSError | None:
    """The operating system's error behind `error` (itself, a cause or context, or an errno in polars' words),
    with a file name (`path` where it named none); None when no errno is found."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        number = current.errno if isinstance(current, OSError) else None
        if number is None and (match := _OS_ERROR_IN_WORDS.search(str(current))):
            number = int(match.group(1))
        if number is not None:
            filename = getattr(current, "filename", None) or (None if path is None else str(path))
            if isinstance(current, OSError) and current.errno == number and current.filename == filename:
                return current
            return OSError(number, os.strerror(number), filename)
        current = current.__cause__ or current.__context__
    return None


def refused_write(error: BaseException, path: str | Path | None = None) -> OSError | None:
    """The OSError behind `error` when it is a write the system refused (`REFUSED_WRITE_ERRNOS`), else None."""
    cause = os_error_behind(error, path)
    return cause if cause is not None and cause.errno in REFUSED_WRITE_ERRNOS else None


def too_many_open_files(error: BaseException) -> str | None:
    """The cause and fix when `error` is (or wraps) EMFILE or ENFILE, else None: the process may hold no more open
    files, a limit a command that writes many files (figures, suites, workers' pipes) can reach."""
    cause = os_error_behind(error)
    if cause is None or cause.errno not in OPEN_FILES_ERRNOS:
        return None
    if cause.errno == errno.ENFILE:
        return "the system's table of open files is full (ENFILE); fix: close other programs, or raise fs.file-max"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard >= _ENOUGH_FILES:
        how = f"`ulimit -n {_ENOUGH_FILES}`"
    else:  # the hard limit is below: this shell cannot raise the soft one past it
        how = f"`ulimit -n {hard}` at most in this shell (its hard limit), or a shell started with a higher one"
    return (
        f"too many open files (EMFILE): this process may hold {soft} (`ulimit -n`); fix: raise the limit, {how}, "
        "and rerun"
    )


def _is_temporary_of(filename: object, path: Path) -> bool:
    name = Path(str(filename)).name
    return name.startswith(f".{path.name}.") and name.endswith(".tmp")


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Re-raise a refused write of the block as an OSError naming `path`, where it named no file or only the
    atomic writer's temporary file beside `path`; other errors pass unchanged."""
    path = Path(path)
    try:
        yield
    except Exception as error:
        cause = refused_write(error)
        if cause is None:
            raise
        if cause.filename is None or _is_temporary_of(cause.filename, path):
            raise OSError(cause.errno, cause.strerror, str(path)) from error
        if cause is not error:
            raise cause from error
        raise


__all__ = [
    "ANYWHERE_ERRNOS",
    "OPEN_FILES_ERRNOS",
    "REFUSED_WRITE_ERRNOS",
    "os_error_behind",
    "refused_write",
    "too_many_open_files",
    "writing",
]
