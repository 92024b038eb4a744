"""Running out of memory is a named error (issue 41, case 1), never a Rust abort or a hang.

Before: `prlimit --as=1000000000 finetasks-afr select big.parquet --out out/mem --no-figures` exited 134 (SIGABRT)
with `thread 'async-executor-1' panicked at .../zstd-safe-7.2.4/src/lib.rs:920:14` and a stack backtrace; under
`ulimit -v 1200000` it ended `memory allocation of 640 bytes failed`. The limits here are real (RLIMIT_AS set on the
child process, as `ulimit -v` and `prlimit --as` do); the abort is polars' own.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from analysis.base.memory import (
    ADDRESS_SPACE_FLOOR,
    cgroup_memory_limit,
    how_it_ended,
    is_out_of_memory,
    out_of_memory_message,
)
from analysis.base.processes import supervise
from finetasks_afr.data.bundled import BUNDLED_SWEEP

CLI = str(Path(sys.executable).parent / "finetasks-afr")
ENV = {"HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}


def limited(address_space: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return apply


def run_limited(args: list[str], address_space: int, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], env=ENV, preexec_fn=limited(address_space), capture_output=True, text=True, timeout=timeout
    )


def assert_named(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr[-3000:]
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr[-3000:])
    assert "Traceback" not in result.stderr and "panicked" not in result.stderr, result.stderr[-3000:]


def test_an_address_space_limit_below_the_floor_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = run_limited(["select", str(BUNDLED_SWEEP), "--out", str(tmp_path / "mem"), "--no-figures"], 1_000_000_000)
    assert_named(result, "address-space limit of 1.0 GB", "nothing was started", "ulimit -v unlimited")
    assert not (tmp_path / "mem").exists()
    assert ADDRESS_SPACE_FLOOR == 2_000_000_000


@pytest.mark.slow
def test_a_polars_abort_under_a_memory_limit_is_named_and_the_old_output_stays(tmp_path: Path) -> None:
    from bench.synthetic import make_synthetic_table

    table = tmp_path / "big.parquet"
    make_synthetic_table(n_tasks=1000, n_runs=5, n_seeds=5, n_steps=40).write_parquet(table)  # 4M rows
    out = tmp_path / "mem"
    first = subprocess.run([CLI, "select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures"], env=ENV,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    result = run_limited(["select", str(table), "--out", str(out), "--no-figures"], 2_100_000_000)
    assert_named(result, "out of memory: the command", "address-space limit of 2.1 GB", "nothing is half-written")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet", "mem"]  # no staging folder or lock


def test_the_supervisor_names_a_crash_and_passes_every_other_ending_on(capfd: pytest.CaptureFixture[str]) -> None:
    def child(code: str) -> list[str]:
        return [sys.executable, "-c", textwrap.dedent(code)]

    def named(ended: str) -> str:
        return out_of_memory_message(ended, [])

    env = {"PATH": "/usr/bin:/bin"}
    assert supervise(child("import os; os.abort()"), env, named) == 2
    assert "out of memory: the command was killed by SIGABRT" in capfd.readouterr().err
    assert supervise(child("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"), env, named) == 2
    assert "killed by SIGKILL" in capfd.readouterr().err
    assert supervise(child("raise SystemExit(3)"), env, named) == 3
    assert supervise(child("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), env, named) == 143
    assert "out of memory" not in capfd.readouterr().err


def test_a_memory_error_inside_a_command_is_named(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import finetasks_afr.cli.application as application
        from finetasks_afr.cli import main

        def app():
            raise MemoryError()

        application.app = app
        main()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=120)
    assert_named(result, "out of memory: the command raised MemoryError")


@pytest.mark.slow
def test_an_allocation_refused_while_writing_is_named_as_memory_not_as_the_folder(tmp_path: Path) -> None:
    """Found by CI: under a 2.1 GB address-space limit polars may fail in the write itself, with ENOMEM in its own
    words; that read "--out ... could not be written (Cannot allocate memory (os error 12)) ... choose a writable
    directory", blaming the folder."""
    script = textwrap.dedent(
        f"""
        import analysis.pipeline
        from finetasks_afr.cli import main

        def run_selection(*args, **kwargs):
            raise OSError("failed to write: Cannot allocate memory (os error 12)")

        analysis.pipeline.run_selection = run_selection
        import sys
        sys.argv = ["finetasks-afr", "select", {str(BUNDLED_SWEEP)!r}, "--out", {str(tmp_path / "mem")!r},
                    "--no-figures"]
        main()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=120)
    assert_named(result, "out of memory: the command raised OSError", "nothing is half-written")
    assert "choose a writable directory" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no staging folder or lock


def test_the_cgroup_limit_is_read_from_v2_or_v1_and_unlimited_is_none(tmp_path: Path) -> None:
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    v2.write_text("max\n")
    assert cgroup_memory_limit((v2, v1)) is None
    v2.write_text("1073741824\n")
    assert cgroup_memory_limit((v2, v1)) == 1073741824
    v1.write_text("9223372036854771712\n")  # cgroup v1's "unlimited"
    assert cgroup_memory_limit((tmp_path / "absent", v1)) is None
    assert cgroup_memory_limit((tmp_path / "absent",)) is None


MAPPING_FAILURE = (
    "/work/main/.venv/lib/python3.11/site-packages/regex/_regex.cpython-311-x86_64-linux-gnu.so: failed to map "
    "segment from shared object"
)


def test_an_import_whose_library_cannot_be_mapped_is_out_of_memory() -> None:
    """Under `ulimit -v 2500000`, `export` ended with "ImportError: ..._regex...so: failed to map segment from shared
    object" (issue 53): the loader's mmap failed, which is the address-space limit, not a broken install."""
    assert is_out_of_memory(ImportError(MAPPING_FAILURE))
    try:  # transformers re-raises a failed import in its own words
        try:
            raise ImportError(MAPPING_FAILURE)
        except ImportError as error:
            raise RuntimeError("Failed to import transformers.models.auto") from error
    except RuntimeError as wrapped:
        assert is_out_of_memory(wrapped)
        assert "_regex.cpython-311-x86_64-linux-gnu.so into memory" in how_it_ended(wrapped)
    assert not is_out_of_memory(ImportError("No module named 'regex'"))  # a missing package stays what it is
    assert how_it_ended(ValueError("x")) == "raised ValueError"


@pytest.mark.slow  # a Python that loads the command line: about 3 s
def test_an_import_that_cannot_map_its_library_inside_a_command_is_named() -> None:
    script = textwrap.dedent(
        f"""
        import finetasks_afr.cli.application as application
        from finetasks_afr.cli import main

        def app():  # a command's import under the limit
            raise ImportError({MAPPING_FAILURE!r})

        application.app = app
        main()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=120)
    assert_named(result, "out of memory: the command raised ImportError: it could not map the shared library")
    assert "ImportError:" not in result.stderr.replace("raised ImportError:", "")
