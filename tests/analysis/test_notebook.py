"""notebooks/training_curves.ipynb: committed without outputs, and runs headless without an error cell in
the project's virtual environment, on the bundled sweep and on another table by changing one variable."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "training_curves.ipynb"
SIMULATED = ROOT / "finetasks_afr" / "data" / "simulated_sweep.parquet"
BUNDLED = ROOT / "finetasks_afr" / "data" / "demo_sweep.parquet"
PROBE = """import sys, json
from analysis import explore
print(json.dumps({"prefix": sys.prefix, "live": explore.is_live_frontend()}))"""


def _nbtools() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nbtools", ROOT / "notebooks" / "nbtools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(notebook: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, dict]:
    """Execute with the probe cell appended; returns the notebook and what the probe printed."""
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    _nbtools().execute(notebook, NOTEBOOK.parent, timeout=300)
    probe = "".join(o.get("text", "") for o in notebook.cells[-1].outputs if o.output_type == "stream")
    return notebook, json.loads(probe)


def _outputs(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]


def _consistency_outputs(notebook: nbformat.NotebookNode) -> tuple[str, int]:
    """(HTML of the table, number of figures) that the ordering-consistency cell displayed."""
    cell = next(c for c in notebook.cells if c.cell_type == "code" and "explore.consistency_overview(ex)" in c.source)
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
    return html, sum("image/png" in o.get("data", {}) for o in cell.outputs)


def _tasks(scores: Path) -> set[str]:
    import polars as pl

    return set(pl.read_parquet(scores, columns=["task"]).get_column("task").unique().to_list())


def test_committed_notebook_is_stripped() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cell"
    assert all(cell.outputs == [] for cell in code), "outputs committed: run `make notebooks-strip`"
    assert all(cell.execution_count is None for cell in code), "execution counts committed"
    assert _nbtools().unstripped(notebook) == []


def test_one_variable_picks_the_table() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    assert sum(line.startswith("SCORES = ") for s in sources for line in s.splitlines()) == 1
    assert 'SCORES = os.environ.get("FINETASKS_AFR_SCORES") or None' in "\n".join(sources)  # make notebooks SCORES=
    assert "explore.explore(SCORES or BUNDLED_SWEEP, config_for(SCORES, CONFIG))" in "\n".join(sources)


def test_strip_removes_what_execution_adds() -> None:
    tools = _nbtools()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    dirty = nbformat.from_dict(json.loads(json.dumps(notebook)))
    cell = next(c for c in dirty.cells if c.cell_type == "code")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x")]
    cell.execution_count = 3
    cell.metadata["execution"] = {"iopub.status.busy": "2024-01-01"}
    dirty.metadata["widgets"] = {"state": {}}
    assert len(tools.unstripped(dirty)) == 4
    assert tools.strip(dirty) == notebook


@pytest.mark.slow  # a kernel and about ten figures: ~20 s on 2 cores
def test_notebook_runs_headless_in_the_venv() -> None:
    notebook, probe = _run(nbformat.read(NOTEBOOK, as_version=4))
    outputs = _outputs(notebook)
    assert [o for o in outputs if o.output_type == "error"] == []
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr" and "Traceback" in o.text]
    # the kernel is this interpreter's virtual environment, not some other "python3"
    assert probe["prefix"] == sys.prefix
    assert sys.prefix != sys.base_prefix, "the tests must run in the project's .venv"
    # headless: static figures, no widget
    assert probe["live"] is False
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4 + 2 * 4  # the default task's views, then two more tasks of the showcase
    assert not [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "showing demofacts_qab_cf (qab)" in printed  # the default focus: the best kept task
    # ordering consistency: every task listed (the demo's three mixes: measured), a figure per language
    html, figures = _consistency_outputs(notebook)
    assert all(f"&quot;{task}&quot;" in html for task in _tasks(BUNDLED)), (
        "a task is missing from the consistency table"
    )
    assert "consistency_ci_low" in html and "needs &gt;= 3 runs" not in html and figures == 3


@pytest.mark.slow
def test_notebook_runs_on_another_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pointed at the user's own table without editing the notebook (issue 40: a copy had to be edited by hand):
    `make notebooks SCORES=...` sets FINETASKS_AFR_SCORES, which the kernel inherits."""
    monkeypatch.setenv("FINETASKS_AFR_SCORES", str(SIMULATED))
    notebook, _ = _run(nbformat.read(NOTEBOOK, as_version=4))
    outputs = _outputs(notebook)
    assert [o for o in outputs if o.output_type == "error"] == []
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "simulated_sweep.parquet" in printed
    html, figures = _consistency_outputs(notebook)
    assert all(f"&quot;{task}&quot;" in html for task in _tasks(SIMULATED)), (
        "a task is missing from the consistency table"
    )
    assert "needs &gt;= 3 runs" not in html and figures == 5  # four runs: measurable, one figure per language
