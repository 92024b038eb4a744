"""The one atomic writer (analysis/base/io.py): files and whole output directories are all-old or all-new."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.base.io import (
    OUTPUT_MARKER,
    OutputDirectoryError,
    OutputLockedError,
    atomic_write,
    atomic_write_text,
    holder_name,
    lock_file,
    lock_holder,
    output_lock,
    recover_directory,
    remove_stale_temporaries,
    staged_directory,
    try_lock,
)


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.txt"
    atomic_write_text(target, "one\n")
    atomic_write_text(target, "two\n")
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["b.txt"]


def test_a_link_stays_a_link_and_its_target_gets_the_content(tmp_path: Path) -> None:
    target = tmp_path / "store" / "scores.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "scores.csv"
    link.symlink_to(target)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "b.txt"
    atomic_write_text(target, "old\n")

    def broken(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["b.txt"]


def test_permissions_follow_the_umask_not_mkstemp_s_0600(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        path = atomic_write_text(tmp_path / "x.txt", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_stale_temporaries_are_removed_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / ".scores.parquet.abc.tmp").write_text("x")
    (tmp_path / "keep.tmp").write_text("visible, not ours")
    (tmp_path / "scores.parquet").write_text("x")
    removed = remove_stale_temporaries(tmp_path)
    assert [p.name for p in removed] == [".scores.parquet.abc.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.tmp", "scores.parquet"]


def test_staged_directory_swaps_in_all_new_content(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_directory(out, command="test") as staging:
        (staging / "old.txt").write_text("old")
    with staged_directory(out, command="test") as staging:
        (staging / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == sorted([OUTPUT_MARKER, "new.txt"])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_build_leaves_the_old_directory_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_directory(out, command="test") as staging:
        (staging / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), staged_directory(out, command="test") as staging:
        (staging / "new.txt").write_text("new")
        raise RuntimeError("killed half way")
    assert sorted(p.name for p in out.iterdir()) == sorted([OUTPUT_MARKER, "old.txt"])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_kill_between_the_two_renames_is_repaired_to_all_old(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with staged_directory(out, command="test") as staging:
        (staging / "old.txt").write_text("old")
    out.replace(tmp_path / ".out.old-123-abcd")  # the first rename happened, the second did not
    (tmp_path / ".out.staging-123-abcd").mkdir()
    recover_directory(out)
    assert sorted(p.name for p in out.iterdir()) == sorted([OUTPUT_MARKER, "old.txt"])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_user_s_own_folder_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputDirectoryError, match="did not write"), staged_directory(tmp_path, command="test"):
        pass
    assert (tmp_path / "thesis.tex").read_text() == "years of work"


def test_an_empty_existing_directory_and_a_file_target(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with staged_directory(empty, command="test") as staging:
        (staging / "a").write_text("a")
    assert (empty / "a").is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputDirectoryError, match="is a file"), staged_directory(tmp_path / "file", command="test"):
        pass


# ---------------------------------------------------------------------------------------- one lock per output

HOLDER = """
import sys, time
from pathlib import Path
from analysis.base.io import output_lock
with output_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(300)
"""


def test_the_output_lock_sits_beside_the_output_names_its_holder_and_goes_with_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    link = tmp_path / "link"
    link.symlink_to(out)
    assert lock_file(out) == lock_file(link) == lock_file(tmp_path / "." / "out") == tmp_path / ".out.lock"
    with output_lock(out) as path:
        assert path == tmp_path / ".out.lock"
        assert (lock_holder(path) or "").startswith(holder_name() + " (")
        with output_lock(link), staged_directory(out, command="test") as staging:  # re-entrant within the process
            (staging / "a").write_text("a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "out"], "the lock file was left"


def test_a_held_output_is_refused_naming_the_holder_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        notes: list[str] = []
        named = f"{holder.pid}@{os.uname().nodename}"
        with pytest.raises(OutputLockedError, match=named) as caught, output_lock(out, wait=1, on_wait=notes.append):
            pass
        assert "waited 1 s" in str(caught.value) and isinstance(caught.value, OutputDirectoryError)  # exit 2
        assert len(notes) == 1 and f"{holder.pid}@" in notes[0] and "waiting" in notes[0], notes
        monkeypatch.setenv("FINETASKS_AFR_LOCK_WAIT", "0")
        with pytest.raises(OutputLockedError, match="nothing was written"), staged_directory(out, command="test"):
            pass  # staged_directory takes the same lock
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    with output_lock(out, wait=0):  # the kernel let go of the dead holder's lock: no stale lock blocks
        pass
    assert list(tmp_path.iterdir()) == []


def test_try_lock_records_its_holder_for_those_who_find_it_taken(tmp_path: Path) -> None:
    path = tmp_path / "claim.lock"
    with try_lock(path, record=True) as held:
        assert held
        with try_lock(path) as again:
            assert not again  # flock: per open file, so a second open in one process is refused too
        assert (lock_holder(path) or "").startswith(holder_name())


def test_a_lock_whose_holder_record_hits_a_full_disk_still_goes_with_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41, case 6: collect and aggregate left a 0-byte `.NAME.lock` after a full-disk failure: writing the
    holder's name failed (ENOSPC) after the file was made and truncated, before the lock was in force."""
    import errno

    import analysis.base.io as io

    def full(fd: int) -> None:
        os.ftruncate(fd, 0)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io, "_record", full)
    target = tmp_path / "aggregate"
    with output_lock(target) as lock:
        assert lock.exists() and lock.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == []
