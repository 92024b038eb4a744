"""Run the project's notebooks headless, and keep the committed copies free of outputs.

    python notebooks/nbtools.py run notebooks/*.ipynb --out out/notebooks   # executed copies, sources untouched
    python notebooks/nbtools.py strip notebooks/*.ipynb                       # remove outputs in place
    python notebooks/nbtools.py check notebooks/*.ipynb                       # exit 1 when one has outputs

The kernel is the interpreter running this script (a kernel spec written to a temporary directory points
at `sys.executable`), so a notebook always runs in the project's virtual environment, whatever
"python3" kernel Jupyter would otherwise find. Headless runs send `allow_stdin=False`, which
`analysis.explore.is_live_frontend` reads: the notebooks then draw static figures instead of widgets.

Everything the kernel needs on disk (its spec, its connection file with the session's HMAC key, its sockets) lies in
one private temporary folder that is removed after the run, so `$TMPDIR` is left as found. A cell that raises one
of the project's named errors (a score table that cannot be read, a bad configuration: `NAMED_ERRORS`) ends the run
with that message alone on stderr and exit code 2, as every `finetasks-afr` command does; any other error is a bug
of the notebook, shown with its traceback (exit 1).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

KERNEL_NAME = "finetasks-afr-venv"
# Metadata that executing or editing adds and that must not be committed.
_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")
_NOTEBOOK_METADATA = ("widgets",)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the colour codes of IPython's tracebacks


def named_errors() -> frozenset[str]:
    """The class names of the errors the project raises for what a notebook is given (the table, the
    configuration, an output folder), each with a message that names the file and the fix (the CLI prints them
    alone): a notebook cell raising one ends the run with its message only. Imported only once a cell failed."""
    from analysis.base.io import OutputDirectoryError
    from analysis.config import ConfigError
    from analysis.scores.schema import ScoreTableError

    errors = (ScoreTableError, ConfigError, OutputDirectoryError)
    return frozenset(error.__name__ for error in errors)


class NotebookError(Exception):
    """A notebook could not be run; `code` is the exit status (2: a named error of the user's input, 1: a bug)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


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
    # Unix sockets in the temporary directory instead of localhost TCP: nothing to eavesdrop on, no port. The
    # connection file (the sockets and the HMAC key of the session) goes there too: left to jupyter_client, it is a
    # mkstemp file in $TMPDIR that outlives the run.
    return KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=specs,
        transport="ipc",
        ip=str(spec_root / "ipc"),
        connection_file=str(spec_root / "connection.json"),
    )


def execute(notebook: nbformat.NotebookNode, cwd: Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute `notebook` in place with the venv kernel, in `cwd`; raises CellExecutionError on an error. The
    kernel's files live in a private temporary folder, removed when the kernel has ended."""
    with tempfile.TemporaryDirectory(prefix="nbkernel-") as spec_root:
        client = NotebookClient(
            notebook,
            km=venv_kernel_manager(Path(spec_root)),
            timeout=timeout,
            resources={"metadata": {"path": str(cwd)}},
        )
        # nbclient shuts down only a kernel whose manager it made: ours it would leave running until this process
        # ends (it then says "Parent appears to have exited" on stderr), still using the folder removed below.
        client.execute(cleanup_kc=True)
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


def cell_failure(path: Path, notebook: nbformat.NotebookNode, error: CellExecutionError) -> NotebookError:
    """The error to end with for a cell that raised: a named error's message alone (exit 2), else the traceback,
    without its colour codes off a terminal, then the cell and the exception (exit 1)."""
    cell = next(
        (index for index, cell in enumerate(notebook.cells)
         if any(output.get("output_type") == "error" for output in cell.get("outputs", []))),
        None,
    )  # fmt: skip
    where = f"{path}" + (f", cell {cell}" if cell is not None else "")
    if error.ename in named_errors():
        return NotebookError(f"{error.evalue} ({where})", code=2)
    traceback = str(error) if sys.stderr.isatty() else _ANSI.sub("", str(error))
    return NotebookError(f"{traceback.rstrip()}\n{where} raised {error.ename}: {error.evalue}", code=1)


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
    try:
        return _act(args)
    except NotebookError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.code


def _act(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.notebooks:
        try:
            notebook = nbformat.read(path, as_version=4)
        except OSError as error:
            raise NotebookError(
                f"{path} could not be read ({error.strerror or error}); give a notebook file", 2
            ) from None
        if args.action == "run":
            target = args.out / path.name
            try:
                execute(notebook, path.resolve().parent, args.timeout)
            except CellExecutionError as error:
                raise cell_failure(path, notebook, error) from None
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
