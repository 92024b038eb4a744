"""The layer contract of `.importlinter` (run by `make lint`) holds on the package, and fails on what it forbids.

Each breaking case copies the package into a temporary folder, adds one import the contract forbids, and runs the
real `lint-imports` with the project's own `.importlinter` on the copy: an upward import between stages, a circle
between two modules of one package (the `scores/table.py` <-> `scores/lm_eval.py` circle this layout removed),
and a function-level upward import (the contract sees imports inside functions too).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contract, on the package found first under `root`."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(PROJECT / ".importlinter")],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package whose `module` (a path under finetasks_afr/) gets `line` appended."""
    root = tmp_path / "copy"
    shutil.copytree(PROJECT / "finetasks_afr", root / "finetasks_afr", ignore=shutil.ignore_patterns("__pycache__"))
    target = root / "finetasks_afr" / module
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    return root


def test_the_package_keeps_both_contracts(tmp_path: Path) -> None:
    result = _lint(_copy_with(tmp_path, "__init__.py", "# unchanged"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "needle"),
    [
        ("base/io.py", "import finetasks_afr.analysis.select", "finetasks_afr.base is not allowed to import"),
        (
            "scores/table.py",
            "from finetasks_afr.scores import lm_eval",
            "No cycles are allowed in finetasks_afr.scores",
        ),
        (
            "data/sources.py",
            "def _upward() -> None:\n    from finetasks_afr.benchmarks import common",
            "finetasks_afr.data is not allowed to import finetasks_afr.benchmarks",
        ),
    ],
    ids=["upward", "circle", "function-level"],
)
def test_a_forbidden_import_breaks_the_contract(tmp_path: Path, module: str, line: str, needle: str) -> None:
    result = _lint(_copy_with(tmp_path, module, line))
    assert result.returncode == 1, result.stdout + result.stderr
    assert needle in result.stdout, result.stdout
