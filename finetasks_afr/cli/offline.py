"""The hub switched off for the whole process when it cannot be reached: the same offline behaviour from the CLI
as from make (which exports HF_HUB_OFFLINE=1, HF_DATASETS_OFFLINE=1, TRANSFORMERS_OFFLINE=1), decided once at
start-up by `finetasks_afr.cli.main`.

Why: with the hub unreachable but not declared off, `datasets` and `huggingface_hub` try the network and fail deep
inside their loaders (a raw `ConnectionError ... LocalEntryNotFoundError` instead of the suite's one-line "hub-only
... and the hub is off" message; 5 DNS retries, 37 s, before `recommend` names a missing dataset). Declared off,
every check that names unreachable data (`finetasks_afr.data.sources.unreachable_reason`) answers at once.

A choice the user made is kept: any of the three variables already set (to any value, `0` included) means no check
and no change, except that HF_HUB_OFFLINE set to a true value switches the other two off as well (as make does).
The check is one TCP connection to the hub's host and port (HF_ENDPOINT's when set), bounded as a whole (name
lookup included, which a socket timeout does not bound) by `CHECK_SECONDS`. Only the standard library is imported:
this runs before the application loads.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, MutableMapping
from urllib.parse import urlsplit

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
DEFAULT_ENDPOINT = "https://huggingface.co"
CHECK_SECONDS = 1.0
"""Long enough for a TCP handshake to any reachable hub, short enough that an offline start stays quick."""

Connector = Callable[[tuple[str, int], float], object]
"""`socket.create_connection`'s shape: (host, port), timeout -> a connection (closed when it has `close`)."""


def hub_address(environ: MutableMapping[str, str]) -> tuple[str, int]:
    """The (host, port) the hub is reached at: HF_ENDPOINT's when set (a mirror of the hub), else huggingface.co."""
    parts = urlsplit(environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    port = parts.port or (80 if parts.scheme == "http" else 443)
    return parts.hostname or "huggingface.co", port


def hub_reachable(
    address: tuple[str, int], connect: Connector = socket.create_connection, timeout: float = CHECK_SECONDS
) -> bool:
    """Whether a connection to `address` opens within `timeout` seconds, name lookup included.

    The attempt runs in a daemon thread joined with the timeout: `getaddrinfo` ignores socket timeouts, and a
    resolver that retries (5 times, 37 s, on a machine without DNS) would otherwise hold up every command."""
    answer: list[bool] = []

    def attempt() -> None:
        try:
            connection = connect(address, timeout)
        except (OSError, ValueError):
            answer.append(False)
            return
        close = getattr(connection, "close", None)
        if callable(close):
            close()
        answer.append(True)

    thread = threading.Thread(target=attempt, name="hub-reachable", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def _true(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def decide_offline(
    environ: MutableMapping[str, str],
    connect: Connector = socket.create_connection,
    timeout: float = CHECK_SECONDS,
) -> str | None:
    """Switch the hub off in `environ` (the process's, so children inherit it) when it is unreachable; the note to
    show when this call switched it off, else None (the user's setting kept, or the hub reachable)."""
    chosen = [name for name in OFFLINE_VARIABLES if name in environ]
    if chosen:
        if _true(environ.get("HF_HUB_OFFLINE", "")):
            for name in OFFLINE_VARIABLES:
                environ.setdefault(name, "1")
        return None
    host, port = hub_address(environ)
    if hub_reachable((host, port), connect, timeout):
        return None
    for name in OFFLINE_VARIABLES:
        environ[name] = "1"
    return (
        f"offline: {host}:{port} not reachable within {timeout:g} s, so {'=1, '.join(OFFLINE_VARIABLES)}=1 for this "
        "run (data from local mirrors and the hub cache only); set HF_HUB_OFFLINE=0 to use the hub anyway"
    )


def _skips_check(arguments: list[str]) -> bool:
    """Help and shell completion read no data: they are not held up by the check."""
    return (
        not arguments
        or any(argument in ("--help", "-h") for argument in arguments)
        or any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)
    )


def apply_at_start_up(arguments: list[str], connect: Connector = socket.create_connection) -> None:
    """`decide_offline` on the process environment, its note as one dim line on stderr (plain when not a
    terminal or NO_COLOR is set); called once by `main` before the command, and any supervised child, starts."""
    if _skips_check(arguments):
        return
    note = decide_offline(os.environ, connect)
    if note is None:
        return
    dim = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    print(f"\033[2m{note}\033[0m" if dim else note, file=sys.stderr)
