"""Worker processes that die with their parent: no orphan keeps writing after its command was killed.

`kill -9` of a command gives its pool workers no chance to be told; they are re-parented (to init or a
subreaper) and, left alone, run their queue to the end, writing figures or evaluating checkpoints nobody will
collect. `die_with_parent` (a pool initializer) starts a daemon thread in the worker that watches the parent's pid
and ends the worker within `POLL_SECONDS` of the parent's death. A thread and not Linux's `PR_SET_PDEATHSIG`:
that signal fires when the *thread* that forked the worker exits, which in a `ProcessPoolExecutor` is not the
process's lifetime, and it exists only on Linux.
"""

from __future__ import annotations

import os
import threading
import time

POLL_SECONDS = 0.5


def _watch(parent: int) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)  # no cleanup handlers: the parent that would use the results is gone


def die_with_parent() -> None:
    """Make the current (child) process exit once its parent process is gone; call it first thing in the child."""
    parent = os.getppid()
    if parent <= 1:  # already orphaned before the watch could start
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()


__all__ = ["POLL_SECONDS", "die_with_parent"]
