"""The analysis runs without the evaluation stack: `finetasks-afr select`, `aggregate` and `report` on the bundled
sweep, on an lm-evaluation-harness 0.4 folder and on a CSV, in processes where importing lighteval, torch,
transformers, datasets or vllm raises.

`.importlinter` forbids those imports in the source of `analysis`; this proves it at run time, where a lazy import
(inside a function, through the CLI's own modules, in a figure worker) would otherwise hide. The block is a
`sitecustomize` module on PYTHONPATH, so that every Python process of the command has it from its first line:
the console script, and the `spawn`ed partition and figure workers. Each command must exit 0, write its outputs,
and the block must have been installed (a marker the hook writes) without ever refusing an import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from finetasks_afr.data.bundled import BUNDLED_CONFIG, BUNDLED_SWEEP

CLI = Path(sys.executable).with_name("finetasks-afr")
LEADERBOARD = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_04" / "leaderboard"
BLOCKED = ("lighteval", "torch", "transformers", "datasets", "vllm")

SITECUSTOMIZE = f"""
import importlib.machinery, os, sys

BLOCKED = {BLOCKED!r}


class Refusing:
    \"\"\"The loader of a blocked module: executing (importing) it raises, and records the refusal.\"\"\"

    def create_module(self, spec):
        with open(os.environ["BLOCK_LOG"], "a", encoding="utf-8") as log:
            log.write(f"refused {{spec.name}} in pid {{os.getpid()}}\\n")
        raise ImportError(f"{{spec.name}} is blocked: the analysis must run without the evaluation stack")

    def exec_module(self, module):
        raise ImportError(module.__name__)


class EvaluationStackBlocked:
    \"\"\"A meta path finder that finds the evaluation stack with a loader that refuses it. Found, not absent:
    libraries that only probe for an optional package (polars looks for torch with find_spec) go on as with
    the package installed; importing it raises.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(name, Refusing())
        return None


sys.meta_path.insert(0, EvaluationStackBlocked())
with open(os.environ["BLOCK_MARK"], "a", encoding="utf-8") as mark:
    mark.write(f"{{os.getpid()}}\\n")
"""


@pytest.fixture(scope="module")
def blocked_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("blocked")
    (root / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        "BLOCK_LOG": str(root / "refused.log"),
        "BLOCK_MARK": str(root / "installed.log"),
        "MPLBACKEND": "Agg",
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=600, check=False)


def _sources(tmp: Path) -> dict[str, Path]:
    csv = tmp / "sweep.csv"
    pl.read_parquet(BUNDLED_SWEEP).write_csv(csv)
    return {"bundled": BUNDLED_SWEEP, "lm-eval": LEADERBOARD, "csv": csv}


@pytest.mark.slow
@pytest.mark.parametrize("source", ["bundled", "lm-eval", "csv"])
def test_select_aggregate_report_run_without_the_evaluation_stack(
    tmp_path: Path, blocked_env: dict[str, str], source: str
) -> None:
    scores = str(_sources(tmp_path)[source])
    config = [] if source == "lm-eval" else ["--config", str(BUNDLED_CONFIG)]  # the demo sweep's own thresholds
    selected = _run(blocked_env, "select", scores, "--out", str(tmp_path / "sel"), "--no-figures", *config)
    assert selected.returncode == 0, selected.stdout + selected.stderr
    assert (tmp_path / "sel" / "decisions.csv").is_file()
    # the figures too (a pool of spawned workers, each with the block), once: after the reader, the figure path is
    # the same whatever the source (the other two sources report without figures, 11 s each)
    figures = [] if source == "bundled" else ["--no-figures"]
    reported = _run(blocked_env, "report", scores, "--out", str(tmp_path / "rep"), *config, *figures)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert (tmp_path / "rep" / "report.html").is_file()
    assert any((tmp_path / "rep" / "figures").rglob("*.png")) == (source == "bundled")
    decisions = tmp_path / "sel" / "decisions.csv"
    aggregated = _run(blocked_env, "aggregate", scores, "--out", str(tmp_path / "agg"), "--decisions", str(decisions),
                      *config)  # fmt: skip
    kept = pl.read_csv(decisions).filter(pl.col("kept")).height
    if kept:
        assert aggregated.returncode == 0, aggregated.stdout + aggregated.stderr
        assert (tmp_path / "agg" / "ranking.csv").is_file()
    else:  # nothing to rank: the named error, not an ImportError
        assert aggregated.returncode == 2 and "Traceback" not in aggregated.stderr, aggregated.stderr
    refused = Path(blocked_env["BLOCK_LOG"])
    assert not refused.exists(), refused.read_text(encoding="utf-8")
    assert len(Path(blocked_env["BLOCK_MARK"]).read_text(encoding="utf-8").split()) >= 3  # the hook was live


def test_the_block_refuses_what_it_names(blocked_env: dict[str, str], tmp_path: Path) -> None:
    """The hook itself works: a process that imports torch under it fails with the block's message (so a
    passing command above is evidence, not a hook that never ran)."""
    env = {**blocked_env, "BLOCK_LOG": str(tmp_path / "refused.log")}
    result = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True,
                            timeout=120, check=False)  # fmt: skip
    assert result.returncode == 1 and "torch is blocked" in result.stderr, result.stderr
    assert "refused torch" in (tmp_path / "refused.log").read_text(encoding="utf-8")


def test_loading_the_cli_imports_no_evaluation_stack() -> None:
    """`finetasks_afr.cli`'s application (every command registered) imports none of the stack until a command
    that needs it runs."""
    code = (
        "import sys\nfrom finetasks_afr.cli.application import app\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({BLOCKED!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]", result.stdout
