"""The contracts of `.importlinter` (run by `make lint`) hold on both packages, and fail on what they forbid.

Each breaking case copies `finetasks_afr` and `analysis` into a temporary folder, adds one import a contract forbids,
and runs the real `lint-imports` with the project's own `.importlinter` on the copy: `analysis` importing
`finetasks_afr` or any of the evaluation stack (lighteval, torch, transformers, datasets, vllm; at module level, in
a function, or through a sub-module), an upward import between stages, a circle between two modules of one package
(a `scores/validate.py` <-> `scores/lm_eval.py` circle, the kind an earlier layout removed), and a function-level upward
import (the contracts see imports inside functions too).
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
    """A copy of both packages whose `module` (a path under the copy's root, e.g. `analysis/signal.py`) gets `line`
    appended."""
    root = tmp_path / "copy"
    for package in ("finetasks_afr", "analysis"):
        shutil.copytree(PROJECT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = root / module
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    return root


def test_the_packages_keep_every_contract(tmp_path: Path) -> None:
    result = _lint(_copy_with(tmp_path, "finetasks_afr/__init__.py", "# unchanged"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


STANDALONE = "analysis is not allowed to import"


@pytest.mark.parametrize(
    ("module", "line", "forbidden"),
    [
        ("analysis/signal.py", "import finetasks_afr.data.bundled", "finetasks_afr"),
        ("analysis/scores/schema.py", "from finetasks_afr.prompts import text", "finetasks_afr"),
        ("analysis/pipeline.py", "def _model() -> None:\n    import torch", "torch"),
        ("analysis/base/io.py", "import lighteval.metrics", "lighteval"),
        ("analysis/plots.py", "def _tok() -> None:\n    from transformers import AutoTokenizer", "transformers"),
        ("analysis/scores/read.py", "import datasets", "datasets"),
        ("analysis/streaming.py", "def _engine() -> None:\n    import vllm", "vllm"),
    ],
    ids=["finetasks_afr", "finetasks_afr-deep", "torch-in-function", "lighteval", "transformers-in-function",
         "datasets", "vllm-in-function"],
)  # fmt: skip
def test_analysis_importing_the_evaluation_half_breaks_the_contract(
    tmp_path: Path, module: str, line: str, forbidden: str
) -> None:
    result = _lint(_copy_with(tmp_path, module, line))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{STANDALONE} {forbidden}" in result.stdout.replace("\n", " "), result.stdout


@pytest.mark.parametrize(
    ("module", "line", "needle"),
    [
        ("analysis/base/io.py", "import analysis.select", "analysis.base is not allowed to import"),
        (
            "analysis/scores/validate.py",
            "from analysis.scores import lm_eval",
            "No cycles are allowed in analysis.scores",
        ),
        (
            "finetasks_afr/data/sources.py",
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
