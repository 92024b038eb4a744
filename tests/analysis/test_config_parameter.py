"""`CONFIG=` for the make targets that analyse (select-tasks, report, notebooks) and the notebook's `CONFIG`
parameter: `select` tells users of short ablations to pass `--config` with a smaller `[consistency] min_tokens`,
so every way of running the analysis must take one, and pass nothing when none is given (each command then
keeps its own default: the demo's configuration for the bundled sweep)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from analysis import explore
from analysis.config import Config, load_config

REPO = Path(__file__).parents[2]
NOTEBOOK = REPO / "notebooks" / "training_curves.ipynb"


def _dry_run(target: str, *variables: str) -> list[str]:
    """The command lines `make -n` prints for `target` (nothing runs)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    result = subprocess.run(
        [make, "-n", "--no-print-directory", "-C", str(REPO), target, *variables],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return result.stdout.splitlines()


@pytest.mark.parametrize(
    ("target", "command"), [("select-tasks", "finetasks-afr select"), ("report", "finetasks-afr report")]
)
def test_make_target_passes_config_only_when_given(target: str, command: str) -> None:
    given = [line for line in _dry_run(target, "CONFIG=x.toml") if command in line]
    assert given and all(line.endswith(" --config x.toml") for line in given), given
    default = [line for line in _dry_run(target) if command in line]
    assert default and not any("--config" in line for line in default), default


def test_make_notebooks_hands_config_to_the_kernel() -> None:
    given = "\n".join(_dry_run("notebooks", "CONFIG=x.toml"))
    assert f'FINETASKS_AFR_CONFIG="{REPO / "x.toml"}"' in given, given  # absolute: the kernel runs elsewhere
    assert 'FINETASKS_AFR_CONFIG=""' in "\n".join(_dry_run("notebooks"))


class _LoadedError(Exception):
    """Stops the notebook once its configuration is loaded: the analysis itself is not under test."""


def test_notebook_config_parameter_reaches_load_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ablation = tmp_path / "ablation.toml"
    ablation.write_text("[consistency]\nmin_tokens = 1000\n")
    monkeypatch.setenv("FINETASKS_AFR_CONFIG", str(ablation))  # what `make notebooks CONFIG=` sets
    monkeypatch.delenv("FINETASKS_AFR_SCORES", raising=False)
    loaded: list[Config] = []

    def load_and_stop(path: str | Path | None = None) -> Config:
        loaded.append(load_config(path))
        raise _LoadedError

    monkeypatch.setattr(explore, "read_scores", lambda path: (None, None))  # the table is not under test
    monkeypatch.setattr(explore, "load_config", load_and_stop)
    cells = [cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == "code"]
    namespace: dict[str, object] = {}
    with pytest.raises(_LoadedError):
        for source in cells:  # the parameters, then the cell that loads the table and its configuration
            exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    assert namespace["CONFIG"] == str(ablation)
    assert loaded[0].consistency.min_tokens == 1000
