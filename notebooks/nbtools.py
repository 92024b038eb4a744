"""Run the project's notebooks headless, and keep the committed copies free of outputs.

    python notebooks/nbtools.py run notebooks/*.ipynb --out out/notebooks   # executed copies, sources untouched
    python notebooks/nbtools.py strip notebooks/*.ipynb                       # remove outputs in place
    python notebooks/nbtools.py check notebooks/*.ipynb                       # exit 1 when one has outputs

The kernel is the interpreter running this script (a kernel spec written to a temporary directory points
at `sys.executable`), so a notebook always runs in the project's virtual environment, whatever
"python3" kernel Jupyter would otherwise find. Headless runs send `allow_stdin=False`, which
`analysis.explore.is_live_frontend` reads: the notebooks then draw static figures instead of widgets.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

KERNEL_NAME = "finetasks-afr-venv"
# Metadata that executing or editing adds and that must not be committed.
_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")
_NOTEBOOK_METADATA = ("widgets",)


def venv_kernel_manager(spec_root: Path) -> KernelManager:
    """A kernel manager whose kernel is `sys.executable -m ipykernel_launcher` (this environment)."""
    spec_dir = spec_root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.prefix})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    # Unix sockets in the temporary directory instead of localhost TCP: nothing to eavesdrop on, no port.
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs, transport="ipc", ip=str(spec_root / "ipc"))


def execute(notebook: nbformat.NotebookNode, cwd: Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute `notebook` in place with the venv kernel, in `cwd`; raises CellExecutionError on an error."""
    with tempfile.TemporaryDirectory(prefix="nbkernel-") as spec_root:
        client = NotebookClient(
            notebook,
            km=venv_kernel_manager(Path(spec_root)),
            timeout=timeout,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.execute()
    return notebook


def strip(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove outputs, execution counts and run-time metadata (in place); returns the notebook."""
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in _CELL_METADATA:
            cell.metadata.pop(key, None)
    for key in _NOTEBOOK_METADATA:
        notebook.metadata.pop(key, None)
    return notebook


def unstripped(notebook: nbformat.NotebookNode) -> list[str]:
    """What keeps `notebook` from being stripped, one line per problem (empty when it is clean)."""
    problems = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and cell.get("outputs"):
            problems.append(f"cell {index}: {len(cell.outputs)} output(s)")
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            problems.append(f"cell {index}: execution count {cell.execution_count}")
        problems += [f"cell {index}: metadata {key!r}" for key in _CELL_METADATA if key in cell.metadata]
    problems += [f"notebook metadata {key!r}" for key in _NOTEBOOK_METADATA if key in notebook.metadata]
    return problems


def _write(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Write atomically (analysis.base.io), so an interrupted run never leaves half a notebook."""
    from analysis.base.io import atomic_write_text

    atomic_write_text(path, nbformat.writes(notebook) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "strip", "check"))
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("out/notebooks"), help="run: folder for executed copies")
    parser.add_argument("--timeout", type=int, default=600, help="run: seconds per cell")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.notebooks:
        notebook = nbformat.read(path, as_version=4)
        if args.action == "run":
            target = args.out / path.name
            execute(notebook, path.resolve().parent, args.timeout)
            _write(notebook, target)
            print(f"executed {path} -> {target}")
        elif args.action == "strip":
            _write(strip(notebook), path)
            print(f"stripped {path}")
        elif problems := unstripped(notebook):
            failed += 1
            print(f"{path} is not stripped (run: python notebooks/nbtools.py strip {path}):", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
