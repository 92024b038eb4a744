"""notebooks/nbtools.py, the runner of `make notebooks` (issue 53): a cell raising one of the project's named errors
ends the run with that message alone (exit 2), never nbclient's coloured traceback; and the kernel's files (its
connection file holds the session's HMAC key) lie in a private folder that is removed, so `$TMPDIR` is left as found.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NBTOOLS = ROOT / "notebooks" / "nbtools.py"
NOTEBOOK = ROOT / "notebooks" / "training_curves.ipynb"
COLOURED = "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"


def _nbtools() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nbtools", NBTOOLS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raising(ename: str, evalue: str) -> object:
    """An `execute` whose fourth cell raised `ename` as IPython reports it (a coloured traceback, an error output)."""

    def execute(notebook: nbformat.NotebookNode, cwd: Path, timeout: int = 600) -> nbformat.NotebookNode:
        error = nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[COLOURED])
        notebook.cells[3].outputs = [error]
        raise CellExecutionError(COLOURED * 70 + f"\x1b[0;31m{ename}\x1b[0m: {evalue}", ename, evalue)

    return execute


def test_a_named_error_in_a_cell_is_its_message_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = _nbtools()
    message = f"{tmp_path / 'bad.parquet'}: no such file or directory; expected a .parquet or .csv score table"
    monkeypatch.setattr(tools, "execute", _raising("ScoreTableError", message))
    code = tools.main(["run", str(NOTEBOOK), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"error: {message} ({NOTEBOOK}, cell 3)"]
    assert not (tmp_path / "out").exists()


def test_a_bug_in_a_cell_keeps_its_traceback_without_colour_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = _nbtools()
    monkeypatch.setattr(tools, "execute", _raising("NameError", "name 'ex' is not defined"))
    code = tools.main(["run", str(NOTEBOOK), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "\x1b" not in err
    assert err.splitlines()[-1] == f"{NOTEBOOK}, cell 3 raised NameError: name 'ex' is not defined"


def test_a_missing_notebook_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _nbtools().main(["check", str(tmp_path / "nothing.ipynb")])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'nothing.ipynb'} could not be read")


def test_the_kernel_connection_file_lies_in_the_private_folder(tmp_path: Path) -> None:
    """Left to jupyter_client, the connection file (with the session's HMAC key) is a mkstemp file in $TMPDIR."""
    manager = _nbtools().venv_kernel_manager(tmp_path)
    assert Path(manager.connection_file).parent == tmp_path


@pytest.mark.slow  # a kernel starts: about 3 s
def test_make_notebooks_with_a_bad_table_prints_one_line_and_leaves_tmpdir_as_found(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    bad = tmp_path / "bad.parquet"
    env = {**os.environ, "TMPDIR": str(temporary), "FINETASKS_AFR_SCORES": str(bad), "MPLBACKEND": "Agg"}
    command = [sys.executable, str(NBTOOLS), "run", str(NOTEBOOK), "--out", str(tmp_path / "out")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # the named error alone: no traceback, no colour code
    assert lines[0].startswith(f"error: {bad}: no such file") and lines[0].endswith(f"({NOTEBOOK}, cell 3)")
    assert list(temporary.iterdir()) == []
