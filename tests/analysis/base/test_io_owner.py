"""Outputs know their owner (analysis/base/io.py): the marker names the command that wrote a directory, and no
command replaces another command's output, its own input, or a folder holding its input."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.base.io import (
    OUTPUT_MARKER,
    OutputDirectoryError,
    check_output_directory,
    output_owner,
    staged_directory,
)


def _written_by(folder: Path, command: str, *files: str) -> Path:
    with staged_directory(folder, command=command) as staging:
        for name in files:
            (staging / name).write_text(name)
    return folder


def test_the_marker_names_the_command_and_that_command_replaces_its_own_output(tmp_path: Path) -> None:
    out = _written_by(tmp_path / "sel", "select", "decisions.csv")
    assert output_owner(out) == "select"
    assert "command: select" in (out / OUTPUT_MARKER).read_text()
    _written_by(out, "select", "decisions.csv", "report.md")
    assert sorted(p.name for p in out.iterdir()) == sorted([OUTPUT_MARKER, "decisions.csv", "report.md"])


def test_another_command_s_output_is_never_replaced(tmp_path: Path) -> None:
    out = _written_by(tmp_path / "sel", "select", "decisions.csv")
    with pytest.raises(OutputDirectoryError, match=r"output of `finetasks-afr select`.*Choose another --out"):
        _written_by(out, "export lm-eval", "README.md")
    assert (out / "decisions.csv").read_text() == "decisions.csv"
    assert [p.name for p in tmp_path.iterdir()] == ["sel"]  # no staging folder, no lock left


@pytest.mark.parametrize(
    ("files", "owner"),
    [
        (("decisions.csv", "ranking.csv"), "select"),
        (("ranking.csv", "language_scores.csv"), "aggregate"),
        (("README.md", "finetasks_afr_yor.yaml"), "export lm-eval"),
        (("notes.txt",), None),
    ],
)
def test_an_older_marker_that_names_no_command_is_owned_by_the_command_whose_files_it_holds(
    tmp_path: Path, files: tuple[str, ...], owner: str | None
) -> None:
    out = tmp_path / "old"
    out.mkdir()
    (out / OUTPUT_MARKER).write_text("written by finetasks-afr; this directory is replaced whole\n")
    for name in files:
        (out / name).write_text(name)
    assert output_owner(out) == owner
    if owner is None:
        with pytest.raises(OutputDirectoryError, match=r"does not say which command.*remove"):
            check_output_directory(out, "select")
        return
    check_output_directory(out, owner)
    other = "aggregate" if owner == "select" else "select"
    with pytest.raises(OutputDirectoryError, match=f"output of `finetasks-afr {owner}`"):
        check_output_directory(out, other)


def test_an_output_equal_to_inside_or_holding_its_input_is_refused(tmp_path: Path) -> None:
    selection = _written_by(tmp_path / "sel", "select", "decisions.csv")
    with pytest.raises(OutputDirectoryError, match="is the input"):
        check_output_directory(selection, "select", [selection])
    with pytest.raises(OutputDirectoryError, match="lies inside the input"):
        check_output_directory(selection / "lm-eval", "export lm-eval", [selection])
    with pytest.raises(OutputDirectoryError, match="holds the input"):
        check_output_directory(tmp_path, "export lm-eval", [selection / "decisions.csv"])
    check_output_directory(tmp_path / "elsewhere", "export lm-eval", [selection])  # beside it: fine


@pytest.mark.slow  # the CLI app's imports: seconds on 2 shared cores
def test_select_and_aggregate_refuse_their_input_and_another_command_s_output_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from finetasks_afr.cli import app

    results = tmp_path / "lm-eval-results"  # never read: --out is refused first
    results.mkdir()
    (results / "results.json").write_text("{}")
    ran = CliRunner().invoke(app, ["select", str(results), "--out", str(results / "selection")])
    assert ran.exit_code == 2 and "lies inside the input" in " ".join(ran.output.split()), ran.output
    assert sorted(p.name for p in results.iterdir()) == ["results.json"]
    selection = _written_by(tmp_path / "sel", "select", "decisions.csv")
    decisions = selection / "decisions.csv"
    ran = CliRunner().invoke(app, ["aggregate", str(results), "--decisions", str(decisions), "--out", str(selection)])
    assert ran.exit_code == 2 and "holds the input" in " ".join(ran.output.split()), ran.output
    ran = CliRunner().invoke(app, ["aggregate", str(results), "--out", str(selection)])
    assert ran.exit_code == 2 and "output of `finetasks-afr select`" in " ".join(ran.output.split()), ran.output
    assert decisions.read_text() == "decisions.csv"
