"""Processes of a command: workers that die with their parent, and Ctrl-C, SIGTERM or SIGHUP as one line, not
tracebacks.

**Dying with the parent.** `kill -9` of a command gives its pool workers no chance to be told; they are re-parented
(to init or a subreaper) and, left alone, run their queue to the end, writing figures or evaluating checkpoints
nobody will collect. `die_with_parent` (a pool initializer) starts a daemon thread in the worker that watches the
parent's pid and ends the worker within `POLL_SECONDS` of the parent's death. A thread and not Linux's
`PR_SET_PDEATHSIG`: that signal fires when the *thread* that forked the worker exits, which in a
`ProcessPoolExecutor` is not the process's lifetime, and it exists only on Linux.

**Interrupts.** A terminal sends Ctrl-C's SIGINT to the whole process group: every worker used to raise its own
KeyboardInterrupt and print a traceback, and a second Ctrl-C during the parent's shutdown added the parent's. So a
worker is the parent's to stop: `quiet_child` (the first line of a worker; `die_with_parent` calls it too) ignores
SIGINT, and `starting_children` keeps SIGINT blocked while workers are spawned, so that a Ctrl-C during a worker's
start-up (seconds of imports) waits unseen and is then discarded. A closed terminal sends SIGHUP to the same group:
a worker ignores it too, and the parent treats it as SIGTERM (unless SIGHUP was already ignored when the command
started, as under `nohup`: then it stays ignored). The parent runs `handle_interrupts`: the first
SIGINT, SIGTERM or SIGHUP raises `Interrupted` (a KeyboardInterrupt, so every `finally` and staged write unwinds as for
Ctrl-C, and the code that started workers stops them: `stop_processes`); a second is noted and ignored while that
shutdown runs; a third ends the process at once (its workers follow within `POLL_SECONDS`). An `Interrupted` that
Python could not raise (the handler ran inside a destructor or a weakref callback, which print "Exception ignored"
and go on) is not lost: the unraisable hook sends the signal again, to be raised outside.

`run_interruptible` (around the CLI) turns the interrupt into one line on stderr and the shell's exit code,
128 + the signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP. What the line says beyond the signal is the command's
(`set_interrupt_note`): a sweep says that its store is consistent and a rerun resumes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TypeVar

POLL_SECONDS = 0.5
SIGNALS = (signal.SIGINT, signal.SIGTERM)
HANGUP = (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()  # a closed terminal (POSIX only)
FORCE_AFTER = 3  # the third signal ends the process without waiting for its shutdown
REDELIVER_SECONDS = 0.05  # an interrupt dropped inside a destructor is sent again after this
DEFAULT_NOTE = "stopped before it finished; rerun the same command"
T = TypeVar("T")


def _watch(parent: int) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)  # no cleanup handlers: the parent that would use the results is gone


def die_with_parent() -> None:
    """Make the current (child) process exit once its parent process is gone; call it first thing in the child.

    It also makes the child quiet on Ctrl-C (`quiet_child`): its parent stops it.
    """
    quiet_child()
    watch_parent()


def watch_parent() -> None:
    """Exit within `POLL_SECONDS` once the parent process is gone (the thread of `die_with_parent`, alone)."""
    parent = os.getppid()
    if parent <= 1:  # already orphaned before the watch could start
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()


CRASH_SIGNALS = frozenset({signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS})
"""How a process ends when memory runs out below Python: the OOM killer, a Rust or C allocator's abort."""


def supervise(command: Sequence[str], env: dict[str, str], on_crash: Callable[[str], str]) -> int:
    """Run `command` (the same program, as a child that `watch_parent`s) and return the exit code to end with.

    The terminal's Ctrl-C and hangup reach the child in the same process group, and the child reports them (its own
    `handle_interrupts`), so this process ignores them while it waits; a SIGTERM sent to this process alone (`kill`)
    is passed on. A child ended by a signal of `CRASH_SIGNALS` gets `on_crash("was killed by SIGABRT")` printed as
    the error and exit code 2; one ended by another signal, 128 + the signal, as a shell says.
    """
    import subprocess

    child = subprocess.Popen(list(command), env=env)
    for signum in (signal.SIGINT, *HANGUP):  # after the start: the child must not inherit them ignored
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    if code >= 0:
        return code
    if -code in CRASH_SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            print(f"error: {on_crash(f'was killed by {signal_name(-code)}')}", file=sys.stderr, flush=True)
        return 2
    return 128 - code


# --------------------------------------------------------------------------------------------------
# Interrupts


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP received by a command that runs `handle_interrupts`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


class _State:
    """What the handler has seen. Module state: a process has one set of signal handlers."""

    def __init__(self) -> None:
        self.installed = False
        self.received: list[int] = []
        self.raised = False  # an Interrupted is on its way up
        self.deferring = 0  # inside `starting_children`: note, raise at its end
        self.reported = False
        self.note = DEFAULT_NOTE


_state = _State()


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def set_interrupt_note(note: str) -> None:
    """What the interrupt line says after the signal's name: the state the command leaves and how to go on."""
    _state.note = note


def interrupt_received() -> int | None:
    """The first SIGINT or SIGTERM this process received since `handle_interrupts`, or None."""
    return _state.received[0] if _state.received else None


def interrupt_exit_code() -> int:
    """The shell's code for a command ended by the first signal received: 128 + its number."""
    return 128 + (interrupt_received() or signal.SIGINT)


def _report() -> None:
    """Print the interrupt's one line on stderr, once."""
    if _state.reported:
        return
    _state.reported = True
    line = f"interrupted ({signal_name(interrupt_received() or signal.SIGINT)}): {_state.note}"
    with contextlib.suppress(OSError, ValueError):  # stderr closed or gone: the exit code still tells
        print(line, file=sys.stderr, flush=True)


def _interrupt(signum: int) -> None:
    _state.raised = True
    raise Interrupted(signum)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _state.received.append(signum)
    if len(_state.received) >= FORCE_AFTER:  # the user insists: no more waiting for the shutdown
        _report()
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os._exit(interrupt_exit_code())
    if _state.raised or _state.deferring:
        return  # a shutdown is under way (or children are being started): not again, not there
    _interrupt(signum)


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """An interrupt raised inside a destructor or callback, where Python prints and drops it: send it again."""
    error = unraisable.exc_value
    if isinstance(error, Interrupted) and _state.raised and not _state.reported:
        _state.raised = False
        _state.received.pop()
        _send_again(error.signum)
    elif isinstance(error, Stopped):
        _send_again(signal.SIGTERM)
    else:
        _default_unraisable(unraisable)


def _send_again(signum: int) -> None:
    """Not now (a signal sent from here would be handled here, inside the destructor again): in a moment, to the
    main thread, so that a system call it waits in returns and the handler runs."""
    again = threading.Timer(REDELIVER_SECONDS, signal.pthread_kill, (threading.main_thread().ident, signum))
    again.daemon = True
    again.start()


_default_unraisable = sys.unraisablehook


def handle_interrupts() -> None:
    """Route SIGINT, SIGTERM and SIGHUP of this process to `Interrupted` (see the module's docstring); a SIGHUP
    ignored when the command started (`nohup`) stays ignored. Idempotent.

    Only from the main thread (Python runs signal handlers there); elsewhere it does nothing.
    """
    if _state.installed or threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)
    for signum in HANGUP:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    _spare_the_resource_tracker()
    sys.unraisablehook = _unraisable
    _state.installed = True


def _spare_the_resource_tracker() -> None:
    """multiprocessing's resource tracker (one helper process per command that uses semaphores or shared memory)
    ignores SIGINT and SIGTERM but dies of the SIGHUP a closing terminal sends the whole group: its parent then
    relaunches it and the new one prints a KeyError traceback per semaphore it never saw, plus "leaked semaphore"
    warnings. The tracker is spawned with the signals of `resource_tracker._IGNORED_SIGNALS` blocked and unblocks
    only SIGINT and SIGTERM itself, so adding SIGHUP there keeps it blocked in the tracker: it outlives the hangup
    and ends with its parent, as after Ctrl-C. (A CPython detail: where the name is missing, nothing changes.)"""
    from multiprocessing import resource_tracker

    ignored = getattr(resource_tracker, "_IGNORED_SIGNALS", None)
    if isinstance(ignored, tuple) and HANGUP and not set(HANGUP) <= set(ignored):
        resource_tracker._IGNORED_SIGNALS = (*ignored, *HANGUP)  # type: ignore[attr-defined]


def run_interruptible(command: Callable[[], T]) -> T:
    """Run `command` with `handle_interrupts`; an interrupt ends the process with its one line and exit code.

    An interrupt reaches here as `Interrupted` (or any KeyboardInterrupt), or as SystemExit(130), which is what
    click and typer make of a KeyboardInterrupt inside a command. Either way the line is printed once and the exit
    code is that of the first signal: 130 for SIGINT, 143 for SIGTERM. A SystemExit with another code (the command
    ended on its own, with an error of its own) stays as it is.
    """
    handle_interrupts()
    try:
        return command()
    except KeyboardInterrupt:
        if not _state.received:  # a KeyboardInterrupt without a signal (raised by code): it still means Ctrl-C
            _state.received.append(signal.SIGINT)
        _state.raised = True
        _report()
        raise SystemExit(interrupt_exit_code()) from None
    except SystemExit as exit_:
        if exit_.code == 128 + signal.SIGINT and _state.raised:
            _report()
            raise SystemExit(interrupt_exit_code()) from None
        raise
    finally:
        _state.raised = True  # the command is over: a late Ctrl-C must not raise into interpreter shutdown


@contextlib.contextmanager
def starting_children() -> Iterator[None]:
    """Start worker processes inside this: they begin with SIGINT blocked (the mask is inherited through spawn's
    fork and exec), until `quiet_child` ignores it; a signal to this process meanwhile is held and raised after.

    Without it, a Ctrl-C while a spawned worker imports its modules is that worker's KeyboardInterrupt traceback,
    and a parent interrupted inside `Process.start` may lose the handle of a worker it has already forked.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.deferring += 1
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *HANGUP})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a SIGINT held meanwhile is handled now: noted
        _state.deferring -= 1
        if _state.received and not _state.raised and not _state.deferring:
            _interrupt(_state.received[0])


def quiet_child() -> None:
    """In a worker process: ignore SIGINT and SIGHUP (the terminal's Ctrl-C, or its closing, reaches the whole
    group; the parent stops its workers), and unblock SIGINT, discarding one held since `starting_children`. SIGTERM
    keeps its default: it ends the worker at once, with nothing printed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in HANGUP:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, *HANGUP})


class Stopped(SystemExit):
    """A worker's SIGTERM (`sigterm_exits`): its parent stops it."""


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Stopped(128 + signum)


def sigterm_exits() -> None:
    """In a worker process: SIGTERM (its parent stopping it) unwinds it as an exit, not a kill.

    Its `finally` blocks run (the staging folder of the checkpoint in flight is removed, its locks freed), and so do
    multiprocessing's exit handlers: a worker killed outright leaves the semaphores it made (tqdm's lock) to the
    resource tracker, which then warns on stderr of "leaked semaphore objects". `SystemExit` with a number ends a
    multiprocessing worker with that exit code and prints nothing; one raised inside a destructor or a weakref
    callback (Python prints "Exception ignored" and drops it) is sent again, as the parent's interrupts are.
    """
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.unraisablehook = _unraisable  # a SIGTERM that lands in a destructor is sent again, not dropped


def stop_processes(processes: Sequence[BaseProcess], grace: float = 10.0) -> None:
    """Terminate the started processes still running, wait up to `grace` seconds for them, then kill the rest.

    For a parent leaving early (interrupted, or failing): no worker may outlive it, and none is left a zombie. The
    grace is long enough for a sweep worker to unwind and exit (`sigterm_exits`: two seconds on a busy two-core
    machine, most of it the interpreter's shutdown with torch loaded); a worker stuck in one long native call is
    killed after it.
    """
    started = [p for p in processes if p.pid is not None]
    for process in started:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace
    for process in started:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in started:
        if process.is_alive():
            process.kill()
            process.join()


__all__ = [
    "DEFAULT_NOTE",
    "POLL_SECONDS",
    "Interrupted",
    "Stopped",
    "die_with_parent",
    "handle_interrupts",
    "interrupt_exit_code",
    "interrupt_received",
    "quiet_child",
    "run_interruptible",
    "set_interrupt_note",
    "signal_name",
    "sigterm_exits",
    "starting_children",
    "stop_processes",
]
