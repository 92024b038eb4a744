"""Memory limits, and running out of memory as a named error rather than a crash.

A cluster job runs under a memory limit: an address-space limit (`ulimit -v`, `prlimit --as`, some schedulers'
`--mem` enforcement) or a cgroup's (Slurm's `--mem` with cgroups, `docker --memory`). Past it, Python raises
`MemoryError` only where Python allocates; polars (Rust) aborts the process (`memory allocation of 640 bytes failed`,
or a panic such as `zstd returned null pointer when creating new context`, exit 134), and the kernel's OOM killer
ends it with SIGKILL (exit 137): a crash that says nothing about memory. polars, numpy and torch also reserve far more
address space than they touch (thread pools, allocator arenas): on the 2-core machine `select` on the bundled demo
table aborts under a 1.5 GB address-space limit and runs under 2.0 GB.

So the command line runs a command as a child process whenever a limit is set (`finetasks_afr.cli.main`,
`analysis.base.processes.supervise`): a child that aborts or is killed is then reported by its parent with the limit,
what ran out and what to do; every output is written aside and swapped in whole, so nothing is half-written. Without
a limit the command runs in-process, as before. A `MemoryError` (or torch's "can't allocate memory") inside the
command is reported the same way by the command itself (`is_out_of_memory`).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

CGROUP_FILES = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
NO_CGROUP_LIMIT = 1 << 60  # cgroup v1 writes "unlimited" as a page-rounded 2**63 - 1
ADDRESS_SPACE_FLOOR = 2_000_000_000
"""Below this address-space limit nothing runs: the bundled demo's select panics at 1.0 GB, hangs at 1.2 GB (polars
waits for threads it could not start), aborts at 1.5 and 1.8 GB, and runs at 2.0 GB (2-core machine, polars 1.x)."""
MEASURED_FLOOR = "select on a small table needs about 2 GB of address space (polars reserves it for its threads)"
SUPERVISED_ENV = "FINETASKS_AFR_SUPERVISED"  # set in the child a supervising parent runs
LOCK_LEDGER_ENV = "FINETASKS_AFR_LOCK_LEDGER"  # where that child notes the output locks it takes


@dataclass(frozen=True)
class MemoryLimit:
    """One limit on this process's memory: what kind, how many bytes, and the switch that sets it."""

    kind: str
    limit: int
    switch: str

    def describe(self) -> str:
        return f"{self.kind} limit of {gigabytes(self.limit)} ({self.switch})"


def gigabytes(count: int) -> str:
    return f"{count / 1e9:.1f} GB"


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS in bytes, or None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def cgroup_memory_limit(files: tuple[Path, ...] = CGROUP_FILES) -> int | None:
    """The memory limit of this process's cgroup (v2 `memory.max`, else v1 `memory.limit_in_bytes`), or None."""
    for path in files:
        try:
            text = path.read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text == "max" or not text.isdigit():
            return None
        value = int(text)
        return None if value >= NO_CGROUP_LIMIT else value
    return None


def memory_limits() -> list[MemoryLimit]:
    """Every memory limit set on this process (none on an unconstrained machine)."""
    limits = []
    address = address_space_limit()
    if address is not None:
        limits.append(MemoryLimit("address-space", address, "ulimit -v / prlimit --as"))
    group = cgroup_memory_limit()
    if group is not None:
        limits.append(MemoryLimit("cgroup memory", group, "Slurm --mem, docker --memory"))
    return limits


OUT_OF_MEMORY_TEXTS = (
    "OutOfMemoryError",  # torch (CUDA and CPU)
    "can't allocate memory",  # torch's DefaultCPUAllocator
    "out of memory",
    "memory allocation",  # Rust's allocator, when it panics instead of aborting
    "could not spawn threads",  # polars' thread pool: each thread reserves its stack in the address space
    "Cannot allocate memory",  # ENOMEM
)
MAPPING_TEXTS = (
    "failed to map segment",  # the dynamic loader could not map a shared library (an ImportError at import time)
    "cannot map zero-fill pages",  # the same, for the library's zero-filled data
)
"""An address-space limit reached while an import loads a compiled module (`regex`, torch, polars): the loader's
mmap fails and Python raises ImportError, which reads like a broken install; it is memory (`export` under `ulimit -v
2500000`, issue 53)."""
_CHAIN_DEPTH = 5  # causes followed: transformers re-raises a failed import as RuntimeError("Failed to import ...")


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and the exceptions it was raised from or while handling, nearest first (at most `_CHAIN_DEPTH`)."""
    chain = [error]
    while len(chain) < _CHAIN_DEPTH:
        behind = chain[-1].__cause__ or chain[-1].__context__
        if behind is None or behind in chain:
            break
        chain.append(behind)
    return chain


def _failed_mapping(error: BaseException) -> BaseException | None:
    """The ImportError (or OSError) in `error`'s chain that says a shared library could not be mapped, or None."""
    for link in _chain(error):
        if isinstance(link, ImportError | OSError) and any(text in str(link) for text in MAPPING_TEXTS):
            return link
    return None


def is_out_of_memory(error: BaseException) -> bool:
    """An exception that means an allocation failed: MemoryError, torch's CPU or CUDA out-of-memory errors, a
    polars panic (`pyo3_runtime.PanicException`, a BaseException) that could not allocate or start its threads, and
    an import whose shared library could not be mapped (`MAPPING_TEXTS`, also behind a re-raise)."""
    if isinstance(error, MemoryError) or _failed_mapping(error) is not None:
        return True
    text = f"{type(error).__name__}: {error}"
    return any(needle.lower() in text.lower() for needle in OUT_OF_MEMORY_TEXTS)


def how_it_ended(error: BaseException) -> str:
    """How a command that ran out of memory ended, for `out_of_memory_message`: an import that could not map its
    library says which library, since "raised ImportError" alone reads like a broken install."""
    mapping = _failed_mapping(error)
    if mapping is not None:
        library = str(mapping).strip().split(":", 1)[0]
        return f"raised {type(error).__name__}: it could not map the shared library {library} into memory"
    return f"raised {type(error).__name__}"


def out_of_memory_message(ended: str, limits: list[MemoryLimit]) -> str:
    """The named error of a command that ran out of memory: how it ended, under which limits, and what to do."""
    under = "; ".join(limit.describe() for limit in limits) if limits else "no limit set on this process"
    return (
        f"out of memory: the command {ended} under {under}. Its outputs are written aside and swapped in whole, so "
        f"nothing is half-written and an earlier output is as it was. Fix: raise the limit ({MEASURED_FLOOR}; a "
        "100M-row table streams in about 1.2 GB of resident memory), prefer a resident-memory limit (Slurm --mem) "
        "to an address-space one, or lower the load (fewer --workers)"
    )


def below_floor(limits: list[MemoryLimit]) -> str | None:
    """The named error for an address-space limit below `ADDRESS_SPACE_FLOOR` (refused before anything starts: under
    it a command may hang rather than fail), or None."""
    for limit in limits:
        if limit.kind == "address-space" and limit.limit < ADDRESS_SPACE_FLOOR:
            return (
                f"the {limit.describe()} is below the {gigabytes(ADDRESS_SPACE_FLOOR)} of address space polars, numpy "
                f"and torch reserve to start (measured: {MEASURED_FLOOR}; at 1.2 GB it hung instead of "
                "failing), so nothing was started; fix: raise it (ulimit -v unlimited, or at least 2000000 KB), or "
                "limit resident memory instead (Slurm --mem, cgroups)"
            )
    return None


def supervised() -> bool:
    """Whether this process is the child a supervising parent runs (see the module's docstring)."""
    return os.environ.get(SUPERVISED_ENV) == "1"
