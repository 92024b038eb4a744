"""Inputs are regular files (or folders of them), issue 53: a FIFO, a symlink loop, a link to nothing, a folder
named like a table, and the same for a task-info CSV and a `--config` file, each refused by name before anything
opens it (`analysis.base.input_file`), never a hang and never a traceback.

A FIFO test cannot be allowed to hang the suite when the refusal regresses: every call that might open a FIFO runs
in a daemon thread with a deadline; past it the test opens the pipe's other end itself (so the blocked open
returns) and fails, naming the hang.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from analysis.config import ConfigError, load_config
from analysis.scores.read import read_scores
from analysis.scores.schema import ScoreTableError
from analysis.scores.stream import open_scores
from analysis.scores.task_info import read_task_info
from finetasks_afr.cli import app
from tests.analysis.scores.test_faults_table import _select_fails, rows

DEADLINE_S = 5.0


def _release(fifo: Path) -> None:
    """Let an open() blocked on `fifo` return: open the other end without blocking and close it (EOF follows)."""
    for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
        try:
            os.close(os.open(fifo, flags))
        except OSError:  # ENXIO: no reader to pair a writer with
            continue


def _within_deadline(call: Callable[[], Any], fifos: list[Path]) -> Any:
    """`call()`'s value (or its exception, raised here), failing the test if it has not returned by the deadline."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        for _ in range(20):  # a reader that opens twice blocks twice
            for fifo in fifos:
                _release(fifo)
            thread.join(0.1)
            if not thread.is_alive():
                break
        pytest.fail(f"still blocked after {DEADLINE_S} s: a FIFO was opened instead of refused by name")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


@pytest.fixture
def csv_writer() -> Iterator[Callable[[Path, bytes], None]]:
    """Start a writer on a FIFO (as `cat table.csv > fifo &` would); it is released at the end of the test."""
    started: list[tuple[Path, threading.Thread]] = []

    def start(fifo: Path, data: bytes) -> None:
        def write() -> None:
            try:
                with fifo.open("wb") as handle:  # blocks until a reader opens the pipe
                    handle.write(data)
            except OSError:  # the reader went away: a broken pipe
                pass

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        started.append((fifo, thread))

    yield start
    for fifo, thread in started:
        if thread.is_alive():
            _release(fifo)
            thread.join(1)


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _select(path: Path, *extra: str) -> Result:
    out = path.parent / "selection"
    return CliRunner().invoke(app, ["select", str(path), "--out", str(out), "--no-figures", *extra])


# ------------------------------------------------------------------------------------------ FIFOs, never opened


@pytest.mark.parametrize("name", ["t.parquet", "t.csv"])
def test_a_fifo_score_table_is_refused_by_name_without_opening_it(tmp_path: Path, name: str) -> None:
    """`mkfifo t.parquet; finetasks-afr select t.parquet --out X` blocked in open(), past Ctrl-C and SIGTERM."""
    fifo = _fifo(tmp_path / name)
    with pytest.raises(ScoreTableError) as caught:
        _within_deadline(lambda: read_scores(fifo), [fifo])
    message = str(caught.value)
    assert message.startswith(str(fifo)) and "named pipe (FIFO)" in message and "fix:" in message, message
    with pytest.raises(ScoreTableError, match="named pipe"):
        _within_deadline(lambda: open_scores(fifo).__enter__(), [fifo])
    result = _within_deadline(lambda: _select(fifo), [fifo])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert _squeezed("is a named pipe (FIFO), not a regular file") in _squeezed(result.output)
    assert not (tmp_path / "selection").exists()


def test_a_csv_fifo_with_a_writer_is_refused_not_drained(tmp_path: Path, csv_writer: Any) -> None:
    """With a writer on a CSV FIFO the first open (the encoding check) drained it and the second blocked forever."""
    fifo = _fifo(tmp_path / "live.csv")
    buffer = tmp_path / "rows.csv"
    rows({}).write_csv(buffer)
    csv_writer(fifo, buffer.read_bytes())
    result = _within_deadline(lambda: _select(fifo), [fifo])
    assert result.exit_code == 2, result.output
    assert _squeezed("named pipe (FIFO)") in _squeezed(result.output)


def test_a_fifo_among_result_files_is_refused_by_name(tmp_path: Path) -> None:
    """A folder of lm-evaluation-harness results holding a FIFO named like a results file: its read blocked."""
    folder = tmp_path / "results"
    folder.mkdir()
    fifo = _fifo(folder / "model_step1000.json")
    with pytest.raises(ScoreTableError) as caught:
        _within_deadline(lambda: read_scores(folder), [fifo])
    assert str(caught.value).startswith(str(fifo)) and "named pipe" in str(caught.value)


def test_a_fifo_task_info_and_config_are_refused_by_name(tmp_path: Path) -> None:
    info = _fifo(tmp_path / "info.csv")
    with pytest.raises(ScoreTableError, match=r"info\.csv is a named pipe"):
        _within_deadline(lambda: read_task_info(info), [info])
    config = _fifo(tmp_path / "config.toml")  # was "does not exist"
    with pytest.raises(ConfigError, match=r"config\.toml is a named pipe"):
        _within_deadline(lambda: load_config(config), [config])


def test_a_device_is_refused_by_name() -> None:
    """/dev/zero never ends: read as a CSV it would fill the memory."""
    with pytest.raises(ScoreTableError, match="character device"):
        read_task_info(Path("/dev/zero"))


# ------------------------------------------------------------------------------------------------ links, folders


def test_a_symlink_loop_is_named(tmp_path: Path) -> None:
    """Was "RuntimeError: Symlink loop from ..." (pathlib's resolve in the bundled-config lookup)."""
    loop = tmp_path / "loop.parquet"
    loop.symlink_to(loop.name)
    with pytest.raises(ScoreTableError, match="symlink loop") as caught:
        read_scores(loop)
    assert str(caught.value).startswith(str(loop)) and "fix:" in str(caught.value)
    _select_fails(loop, "symlink loop")
    config = tmp_path / "config.toml"
    config.symlink_to("other.toml")
    (tmp_path / "other.toml").symlink_to(config.name)
    with pytest.raises(ConfigError, match="symlink loop"):
        load_config(config)


def test_a_link_to_nothing_names_its_target(tmp_path: Path) -> None:
    link = tmp_path / "scores.parquet"
    link.symlink_to(tmp_path / "moved" / "scores.parquet")
    with pytest.raises(ScoreTableError, match=r"a link to .*moved/scores\.parquet, which does not exist"):
        read_scores(link)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_folder_named_like_a_table_is_named(tmp_path: Path, suffix: str) -> None:
    """A dataset written in parts (`x.parquet/part-0.parquet`) was searched for lm-eval JSON ("none found")."""
    folder = tmp_path / f"x{suffix}"
    folder.mkdir()
    part = folder / f"part-0{suffix}"
    if suffix == ".parquet":
        rows({}).write_parquet(part)
    else:
        rows({}).write_csv(part)
    with pytest.raises(ScoreTableError, match=f"is a directory .*not one \\{suffix} file") as caught:
        read_scores(folder)
    assert "merged" in str(caught.value) and "fix:" in str(caught.value)
    _select_fails(folder, "is a directory")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_merge_command_of_the_message_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """The fix the message prints (its Python, run here in-process) makes one table of the parts."""
    folder = tmp_path / f"x{suffix}"
    folder.mkdir()
    for seed in (1, 2):
        part = rows({"seed": seed})
        (part.write_parquet if suffix == ".parquet" else part.write_csv)(folder / f"part-{seed}{suffix}")
    with pytest.raises(ScoreTableError) as caught:
        read_scores(folder)
    code = str(caught.value).split('python -c "', 1)[1].split('"`', 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(code, {})  # the project's own message
    assert read_scores(tmp_path / f"merged{suffix}")[0].height == 2


def test_a_config_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    """`--config DIR` said "does not exist"."""
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert "is a directory, not a TOML config file" in message and "default_config.toml" in message, message
    result = CliRunner().invoke(
        app, ["select", "--config", str(tmp_path), "--out", str(tmp_path / "out"), "--no-figures"]
    )
    assert result.exit_code == 2 and "is a directory" in result.output, result.output
