"""Processes seen through /proc, for the tests that kill a command and look for orphans (Linux only)."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> set[int]:
    """Processes whose parent is `pid`, recorded before a kill re-parents them."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie or a dead process waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
