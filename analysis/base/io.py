"""The one atomic writer of the project: nothing it produces is ever half-written, and no directory is half-new.

Files: the content goes to a temporary file beside the target, is flushed and fsynced, gets the permissions a plain
`open()` would give (0666 minus the umask, where `mkstemp` would leave 0600), and is renamed over the target; the
directory is then fsynced so that the rename itself survives a power cut. A failure or an interrupt removes the
temporary file and leaves the previous target untouched.

Directories: `staged_directory` builds a whole output directory in a hidden sibling and swaps it in only when the
build succeeded, so `select --out DIR` after a `kill -9` shows DIR exactly as the previous run left it, or exactly
as the new run made it; never new `decisions.csv` beside an old report, never stale `suites/` from an older table.
Leftovers of a killed run (`.<name>.staging-*`, `.<name>.old-*`, `.<name>.*.tmp`) are removed by the next run.

Owners: the marker of a staged directory (`OUTPUT_MARKER`) names the command that wrote it (`command: select`), and
a directory is replaced only by that command: `export lm-eval --out SEL` never deletes the selection it reads, nor
`aggregate --out` a `select` output. `check_output_directory` says why a target may not be replaced (a file, a
user's folder, another command's output, the command's own input or a folder holding it) before any work starts,
and `staged_directory` checks again under the lock.

Writers: `output_lock` is the one lock of an output (a directory or a file), a `flock` on `.<name>.lock` beside it
that records who holds it. Every writer of an analysis output holds it, and staging recovery runs only under it,
so a second writer never deletes the staging folder of a live one: it waits, saying who it waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

import polars as pl

from analysis.base.memory import LOCK_LEDGER_ENV

TMP_SUFFIX = ".tmp"
OUTPUT_MARKER = ".finetasks-afr-output"
"""The file that marks a directory as made by `staged_directory`, naming the command that made it on a line
`command: <name>`: only such a directory is ever replaced, and only by that command."""
_COMMAND_LINE = re.compile(r"^command: (.+)$", re.MULTILINE)
LEGACY_OUTPUTS: tuple[tuple[str, str], ...] = (
    ("select", "decisions.csv"),
    ("aggregate", "ranking.csv"),
    ("export lm-eval", "README.md"),
)
"""How the owner of a directory is told when its marker names no command (written by a finetasks-afr before
markers named one, or adopted as an older output): the command of the first of these files it holds. Order
matters: a `select` output holds a ranking.csv too, and only `select` writes decisions.csv."""


ANALYSIS_OUTPUT_NAMES = ("decisions.csv", "suites", "ranking.csv", "language_scores.csv", "language_pairs.csv",
                         "aggregated_tasks.csv", "english_gap.csv", "english_gap_summary.csv",
                         "report.md", "report.html", "report_*.html", "figures", f".*{TMP_SUFFIX}")  # fmt: skip
"""The names `select`, `report` and `aggregate` write into their --out (patterns)."""


def older_analysis_output(directory: Path) -> bool:
    """`directory` has no marker and holds `decisions.csv` or `ranking.csv` and nothing but names the analysis
    commands write: an output of a finetasks-afr older than the marker (a resumed demo has one), adopted as theirs.
    A lone `figures/` is not enough: it may be the user's own."""
    directory = Path(directory)
    if not directory.is_dir() or (directory / OUTPUT_MARKER).exists():
        return False
    names = {entry.name for entry in directory.iterdir()}
    ours = all(any(fnmatch(name, pattern) for pattern in ANALYSIS_OUTPUT_NAMES) for name in names)
    return ours and bool(names & {"decisions.csv", "ranking.csv"})


class OutputDirectoryError(ValueError):
    """`--out` names a directory that must not be replaced (it holds files this project did not write)."""


class OutputLockedError(OutputDirectoryError):
    """Another live process writes the output; the message names it (pid@host and its command) and the fix."""

    def __init__(self, target: Path, holder: str, waited: float) -> None:
        self.target, self.holder = target, holder
        waiting = f"waited {waited:.0f} s ({LOCK_WAIT_ENV}); " if waited > 0 else ""
        super().__init__(
            f"{target} is being written by another finetasks-afr process, {holder}; {waiting}nothing was written. "
            f"Fix: rerun when that process has finished (or set {LOCK_WAIT_ENV} to wait longer, in seconds), or "
            "choose another output path"
        )


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


LOCK_WAIT_ENV = "FINETASKS_AFR_LOCK_WAIT"
DEFAULT_LOCK_WAIT = 600.0
"""Seconds a writer waits for another to release its output before it gives up (named error, exit 2)."""
_POLL_SECONDS = 0.1
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_held: dict[str, tuple[int, int]] = {}  # lock file -> (pid, depth) of the output locks this process holds


def holder_name() -> str:
    """This process as a lock records it, `pid@host`: enough to find it with `ps` or `kill` on that machine."""
    return f"{os.getpid()}@{os.uname().nodename}"


def _this_command() -> str:
    """The command line of this process, shortened: `finetasks-afr select ... --out x` (one line, at most 300)."""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    name = program.parent.name if program.name == "__main__.py" else program.name  # python -m package
    return _CONTROL.sub("?", " ".join([name, *sys.argv[1:]]))[:300]


def _record(fd: int) -> None:
    """Write `pid@host (command)` into a lock file this process has just locked (its previous record replaced)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{holder_name()} ({_this_command()})\n".encode())


def lock_holder(path: Path) -> str | None:
    """Who holds (or last held) the lock file `path`, as it recorded itself; None when it records nothing.

    One line, control characters replaced: a command line may hold a newline, and the name goes into messages.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return _CONTROL.sub("?", text)[:400] or None


@contextlib.contextmanager
def try_lock(path: Path, record: bool = False) -> Iterator[bool]:
    """Try to take the exclusive lock of `path` without waiting; yields whether it is held (released after).

    With `record`, the holder writes `pid@host (command)` into the file, so that one who finds it taken can say by
    whom (`lock_holder`). The file stays: these are lock files of a folder of locks (a sweep's `locks/`).
    """
    with Path(path).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            if record:
                _record(handle.fileno())
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def lock_file(target: Path) -> Path:
    """The lock file of the output `target` (a directory or a file): `.<name>.lock` beside it.

    Links and relative spellings are resolved first, so every way of naming one output finds one lock. Beside, not
    inside: a staged directory is replaced whole, and a lock inside it would be swapped away with it. Only an
    existing directory whose own folder this user cannot write (a sweep directory made by someone else under a
    read-only folder) keeps its lock inside, as `.finetasks-afr.lock`.
    """
    target = Path(os.path.realpath(target))
    if target.is_dir() and target.parent.is_dir() and not os.access(target.parent, os.W_OK | os.X_OK):
        return target / ".finetasks-afr.lock"
    return target.parent / f".{target.name}.lock"


def _note_in_ledger(path: Path) -> None:
    """Note a lock taken in the file a supervising parent named (`analysis.base.memory.LOCK_LEDGER_ENV`), so that
    after a crash it can release what this process could not (`release_after_crash`)."""
    ledger = os.environ.get(LOCK_LEDGER_ENV)
    if ledger:
        with contextlib.suppress(OSError), open(ledger, "a", encoding="utf-8") as handle:  # noqa: PTH123
            handle.write(f"{path}\n")


def target_of_lock(path: Path) -> Path:
    """The output a lock file (`lock_file`) belongs to."""
    if path.name == ".finetasks-afr.lock":
        return path.parent
    return path.parent / path.name.removeprefix(".").removesuffix(".lock")


def release_after_crash(ledger: Path) -> list[Path]:
    """After a command noted in `ledger` crashed (an abort, the OOM killer): for each output it had locked that no
    one holds now, finish or undo an interrupted swap and remove its staging folders (`recover_directory`), and the
    lock file. Returns the outputs cleaned. An output another process holds is left to it."""
    try:
        paths = dict.fromkeys(ledger.read_text(encoding="utf-8").splitlines())
    except OSError:
        return []
    cleaned = []
    for line in filter(None, paths):
        path = Path(line)
        if not path.exists():
            continue
        target = target_of_lock(path)
        try:
            with output_lock(target, wait=0):
                if target.is_dir() or _leftovers(target):
                    recover_directory(target)
        except (OSError, OutputDirectoryError):
            continue  # held by another writer, or not ours to clean
        cleaned.append(target)
    return cleaned


def lock_wait() -> float:
    """Seconds to wait for the lock of an output: `$FINETASKS_AFR_LOCK_WAIT`, else `DEFAULT_LOCK_WAIT`."""
    try:
        return max(0.0, float(os.environ.get(LOCK_WAIT_ENV, DEFAULT_LOCK_WAIT)))
    except ValueError:
        return DEFAULT_LOCK_WAIT


def _acquire(path: Path, target: Path, wait: float, on_wait: Callable[[str], None] | None) -> int:
    """Lock `path` (waiting up to `wait` s) and record this process in it; the locked descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    noted = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = lock_holder(path)
            waited = time.monotonic() - start
            if waited >= wait:
                raise OutputLockedError(target, holder or "which has not named itself", wait) from None
            if on_wait is not None and not noted and (holder or waited > 1):  # its name comes a moment after its lock
                on_wait(f"{target} is being written by {holder or 'another process'}; waiting for it to finish "
                        f"(at most {wait:.0f} s, {LOCK_WAIT_ENV})")  # fmt: skip
                noted = True
            time.sleep(_POLL_SECONDS)
            continue
        except BaseException:
            os.close(fd)
            raise
        try:
            on_disk, locked = path.stat(), os.fstat(fd)
            same = (on_disk.st_dev, on_disk.st_ino) == (locked.st_dev, locked.st_ino)
        except FileNotFoundError:
            same = False
        if same:
            with contextlib.suppress(OSError):  # the record only names the holder; a full disk must not keep the
                _record(fd)  # lock file (0 bytes) after the command: it is removed on release like any other
            return fd
        os.close(fd)  # the holder removed the file as it let go: whoever locks the new one is next


@contextlib.contextmanager
def output_lock(
    target: Path, *, wait: float | None = None, on_wait: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Hold the one lock of the output `target` (a directory or a file) for the block; yields the lock file.

    Every writer of an analysis output holds it (`select`, `aggregate`, `report`, `collect`, and a sweep for its
    directory-level files), and staging recovery runs only under it: without it, two runs into one `--out` each
    deleted the other's staging folder, and one swapped in a directory without its files. It is a `flock` of
    `lock_file(target)`, released by the kernel when its process dies (so a killed holder never leaves it taken),
    recording `pid@host (command)` so that a waiter can say whom it waits for.

    A second writer waits rather than fails at once: two commands started together (a script, a Makefile with
    -j) then both succeed, one after the other, as if run in turn. It says so once through `on_wait` and waits at
    most `wait` seconds (default `lock_wait()`, 600 s or `$FINETASKS_AFR_LOCK_WAIT`), then raises
    `OutputLockedError` naming the holder, a `OutputDirectoryError` the commands already turn into exit 2: a holder
    stuck for ten minutes is worth a person's look, not an endless wait. The lock is re-entrant within a process
    (the command holds it, and `staged_directory` inside takes it again), and the lock file is removed on release,
    while still locked; a waiter that then wins the old file sees it is gone and locks the new one.
    """
    path = lock_file(target)
    key = str(path)
    pid, depth = _held.get(key, (0, 0))
    if pid == os.getpid():  # this process holds it already (a forked child does not)
        _held[key] = (pid, depth + 1)
        try:
            yield path
        finally:
            _held[key] = (pid, depth)
        return
    fd = _acquire(path, Path(target), lock_wait() if wait is None else wait, on_wait)
    _held[key] = (os.getpid(), 1)
    _note_in_ledger(path)
    try:
        yield path
    finally:
        del _held[key]
        with contextlib.suppress(OSError):
            path.unlink()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _leftovers(target: Path) -> list[Path]:
    parent = target.parent
    if not parent.is_dir():
        return []
    prefixes = (f".{target.name}.staging-", f".{target.name}.old-")
    return [entry for entry in parent.iterdir() if entry.name.startswith(prefixes)]


_RESERVED_FDS = 8
"""Descriptors held aside while a directory is staged and let go just before its removal: removing a tree takes
about two per level, and a run that failed for want of descriptors (EMFILE under a low `ulimit -n`, its files
still held by the traceback) would otherwise leave its staging folder behind."""


def _reserve_descriptors() -> list[int]:
    """`_RESERVED_FDS` descriptors on /dev/null; the EMFILE of an opening that fails (after closing the others), so
    that a run without room to clean up fails before it writes anything."""
    reserved: list[int] = []
    try:
        for _ in range(_RESERVED_FDS):
            reserved.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        _release(reserved)
        raise
    return reserved


def _release(reserved: list[int]) -> None:
    while reserved:
        with contextlib.suppress(OSError):
            os.close(reserved.pop())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def recover_directory(target: Path) -> None:
    """Finish or undo a swap that a kill interrupted, and remove the staging leftovers; only under `output_lock`.

    If `target` is missing but an `.old-*` copy exists, the kill came between the two renames of the swap: the old
    directory is put back (all-old). Everything else (`.staging-*`, further `.old-*`) is deleted. That is safe only
    when no live process writes `target`: a staging folder is a leftover only if its writer is dead. So the lock is
    held here (re-entered inside `staged_directory`, taken without waiting otherwise); when another live process
    holds it, nothing is touched, since the staging folder there is that writer's, and the next writer to hold the
    lock recovers whatever a dead one left.
    """
    if not Path(target).parent.is_dir():
        return
    try:
        with output_lock(target, wait=0):
            _recover(target)
    except OutputLockedError:
        return


def _recover(target: Path) -> None:
    leftovers = _leftovers(target)
    olds = sorted((p for p in leftovers if p.name.startswith(f".{target.name}.old-")), key=lambda p: p.stat().st_mtime)
    if not target.exists() and olds:
        olds[-1].replace(target)
        leftovers.remove(olds[-1])
    for leftover in leftovers:
        _remove(leftover)


def output_owner(directory: Path) -> str | None:
    """The command that wrote `directory`, as its marker names it; for a marker that names none (an older
    finetasks-afr, or an adopted older output), the command whose files it holds (`LEGACY_OUTPUTS`). None when it
    has no marker, or an unnamed one over files no command is known to write."""
    marker = Path(directory) / OUTPUT_MARKER
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if found := _COMMAND_LINE.search(text):
        return found.group(1).strip()
    return _legacy_owner(directory)


def _legacy_owner(directory: Path) -> str | None:
    return next((command for command, sign in LEGACY_OUTPUTS if (Path(directory) / sign).exists()), None)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_output_directory(target: Path, command: str, inputs: Iterable[Path] = ()) -> None:
    """Raise `OutputDirectoryError` when `command` may not replace `target` whole; a check without side effects.

    Refused, each with the fix: a file; a folder holding files finetasks-afr did not write (no marker); another
    command's output (`output_owner`), which that command alone replaces; a target equal to one of `inputs`, inside
    one (the next run of the command that owns the input would delete it), or holding one (replacing it deletes
    the input). A marker naming no command and no known files (an older output's marker over unknown files) is
    refused too: its owner cannot be told. Commands call it before any work, and `staged_directory` under the lock.
    """
    target = _real(target) if Path(target).is_symlink() else Path(target)
    if target.exists() and not target.is_dir():
        raise OutputDirectoryError(f"{target} is a file, not a directory; choose a directory path")
    real = _real(target)
    for given in inputs:
        source = _real(given)
        if real == source:
            relation = f"is the input {given} itself"
        elif real.is_relative_to(source):
            relation = f"lies inside the input {given}"
        elif source.is_relative_to(real):
            relation = f"holds the input {given}, and the output directory is replaced whole"
        else:
            continue
        raise OutputDirectoryError(
            f"{target} {relation}; nothing was written. Choose an --out that neither is, lies in, nor holds an input"
        )
    if not target.is_dir() or not any(target.iterdir()):
        return
    if not (target / OUTPUT_MARKER).is_file() and not older_analysis_output(target):
        raise OutputDirectoryError(
            f"{target} already holds files that finetasks-afr did not write (no {OUTPUT_MARKER} in it), and "
            "the output directory is replaced whole; choose a new or empty directory"
        )
    owner = output_owner(target) if (target / OUTPUT_MARKER).is_file() else _legacy_owner(target)
    if owner is None:
        raise OutputDirectoryError(
            f"{target} was written by an older finetasks-afr whose marker ({OUTPUT_MARKER}) does not say which "
            f"command wrote it, and it holds none of the files that tell; `finetasks-afr {command}` replaces only "
            f"its own outputs. Choose another --out, or remove {target} yourself if nothing in it is needed"
        )
    if owner != command:
        raise OutputDirectoryError(
            f"{target} is the output of `finetasks-afr {owner}`, which only `finetasks-afr {owner}` replaces; "
            f"`finetasks-afr {command}` would delete it. Choose another --out (a new or empty directory)"
        )


@contextlib.contextmanager
def staged_directory(target: Path, *, command: str, inputs: Iterable[Path] = ()) -> Iterator[Path]:
    """Yield an empty staging directory; on success it replaces `target` whole, on failure it is deleted.

    The swap is two renames (old target aside, staging in), then the old copy is deleted; `recover_directory` at
    the start of the next run repairs a kill between the renames. All of it, recovery included, holds
    `output_lock(target)` (waiting for another writer of `target` first), so two runs into one directory replace
    it one after the other instead of deleting each other's staging folders.

    `target` must be absent, empty, or a directory `command` made (its `OUTPUT_MARKER` names `command`), and apart
    from `inputs` (`check_output_directory`): a user's own folder, another command's output and the command's own
    input are never replaced. The new marker names `command`. A `target` that is a symbolic link stays one: its
    target directory is the one built and swapped.
    """
    target = Path(target)
    if target.is_symlink():  # write into the link's target: replacing the link would leave its target untouched
        target = Path(os.path.realpath(target))
    inputs = list(inputs)
    check_output_directory(target, command, inputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(target):  # from recovery to swap: no other writer's recovery can delete the staging folder
        recover_directory(target)
        check_output_directory(target, command, inputs)  # again: another writer may have written it meanwhile
        token = f"{os.getpid()}-{secrets.token_hex(4)}"
        staging = target.parent / f".{target.name}.staging-{token}"
        reserved = _reserve_descriptors()  # room to remove the staging folder after a run that ran out of them
        try:
            staging.mkdir()
            staging.chmod(0o777 & ~umask())
            (staging / OUTPUT_MARKER).write_text(
                f"written by finetasks-afr {command}; this directory is replaced whole, by that command only\n"
                f"command: {command}\n",
                encoding="utf-8",
            )
            yield staging
        except BaseException:
            _release(reserved)
            _remove(staging)
            raise
        finally:
            _release(reserved)
        old = target.parent / f".{target.name}.old-{token}"
        if target.exists():
            target.replace(old)
        staging.replace(target)
        fsync_directory(target.parent)
        if old.exists():
            _remove(old)


__all__ = [
    "ANALYSIS_OUTPUT_NAMES",
    "DEFAULT_LOCK_WAIT",
    "LEGACY_OUTPUTS",
    "LOCK_WAIT_ENV",
    "OUTPUT_MARKER",
    "OutputDirectoryError",
    "OutputLockedError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_directory",
    "fsync_directory",
    "holder_name",
    "lock_file",
    "lock_holder",
    "lock_wait",
    "older_analysis_output",
    "output_lock",
    "output_owner",
    "recover_directory",
    "remove_stale_temporaries",
    "safe_file_name",
    "staged_directory",
    "try_lock",
    "umask",
    "write_csv_atomic",
]
