"""`finetasks-afr export lm-eval` deletes nothing it did not write, and says every problem before any work: --out
the selection itself, inside it, another command's output or a user's folder; a decisions.csv an export cannot take
(a task kept twice, an impossible few-shot count, an unknown metric); data no mirror or hub can serve. The README's
command pastes into a shell whatever the folder's name."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.base.io import OUTPUT_MARKER, staged_directory

AFROBENCH = "sib_hau_prompt_1"  # an lm-eval task of a selection made from lm-eval results: named, nothing to render


def _selection(folder: Path, *rows: str) -> Path:
    """A `select` output (marked by `select`) whose decisions.csv holds `rows` (task,fewshot,metric,kept)."""
    with staged_directory(folder, command="select") as staging:
        lines = ["task,fewshot,metric,kept", *(rows or (f"{AFROBENCH},0,acc,true",))]
        (staging / "decisions.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (staging / "report.md").write_text("# the report\n", encoding="utf-8")
    return folder


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any export work (the suite's tasks loaded, documents rendered) fails the test: the checks come first."""

    def started(*_: object) -> None:
        raise AssertionError("the export started its work before refusing")

    monkeypatch.setattr("finetasks_afr.export.lm_eval._kept_tasks", started)
    yield


def _export(selection: Path, out: Path, *before: str) -> tuple[int, str]:
    from finetasks_afr.cli import app

    result = CliRunner().invoke(app, [*before, "export", "lm-eval", str(selection), "--out", str(out)])
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def test_export_into_its_own_selection_is_refused_and_deletes_nothing(tmp_path: Path, no_work: None) -> None:
    selection = _selection(tmp_path / "sel")
    before = sorted(p.name for p in selection.iterdir())
    code, output = _export(selection, selection)
    assert code == 2, output
    assert "is the input" in output and "Traceback" not in output
    assert sorted(p.name for p in selection.iterdir()) == before
    code, output = _export(selection, selection / "lm-eval")  # inside it: the next `select` would delete it
    assert code == 2 and "lies inside the input" in output, output
    assert not (selection / "lm-eval").exists()


def test_export_never_replaces_another_command_s_output_or_a_user_s_folder(tmp_path: Path, no_work: None) -> None:
    selection = _selection(tmp_path / "sel")
    other = _selection(tmp_path / "other-selection")
    code, output = _export(selection, other)
    assert code == 2 and "output of `finetasks-afr select`" in output and "Traceback" not in output, output
    assert (other / "decisions.csv").is_file() and (other / "report.md").is_file()
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("years of work")
    code, output = _export(selection, mine)
    assert code == 2 and "did not write" in output and "Traceback" not in output, output
    assert (mine / "chapter1.tex").read_text() == "years of work" and not (mine / OUTPUT_MARKER).exists()


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ((f"{AFROBENCH},0,acc,true", f"{AFROBENCH},5,acc,true"), "keep a task more than once"),
        ((f"{AFROBENCH},-1,acc,true",), "fewshot outside 0..100"),
        ((f"{AFROBENCH},1000000,acc,true",), "fewshot outside 0..100"),
        ((f"{AFROBENCH},0,accuracy,true",), "metric the analysis does not know"),
    ],
    ids=["kept-twice", "negative-fewshot", "absurd-fewshot", "unknown-metric"],
)
def test_a_decisions_file_an_export_cannot_take_is_named_before_any_work(
    tmp_path: Path, no_work: None, rows: tuple[str, ...], said: str
) -> None:
    selection = _selection(tmp_path / "sel", *rows)
    code, output = _export(selection, tmp_path / "lm-eval")
    assert code == 2, output
    assert said in output and str(selection / "decisions.csv") in output and "line 2" in output, output
    assert "fix:" in output and "Traceback" not in output
    assert not (tmp_path / "lm-eval").exists()


def test_the_readme_command_pastes_into_a_shell_whatever_the_folder_s_name(tmp_path: Path) -> None:
    from finetasks_afr.export.lm_eval import ExportedTask, _readme

    out = tmp_path / "my tasks" / "line\nbreak; rm -rf x"
    task = ExportedTask(AFROBENCH, "hau", "NLU", ["acc"], "acc")
    readme = _readme(out, [task], {}, {})
    block = readme.split("```text\n", 1)[1].split("\n```", 1)[0]
    words = shlex.split(block)
    assert words[words.index("--include_path") + 1] == str(out)
    assert words[words.index("--tasks") + 1] == "finetasks_afr_hau"


@pytest.mark.slow  # loads the suite's tasks (lighteval): seconds
def test_data_that_no_mirror_holds_while_the_hub_is_off_is_named_with_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finetasks_afr.data.sources import DATA_DIR_ENV

    monkeypatch.delenv(DATA_DIR_ENV, raising=False)  # restored after: --data-dir sets it for the process
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    selection = _selection(tmp_path / "sel", "sib200_yor_cf,0,acc,true")
    code, output = _export(selection, tmp_path / "lm-eval")
    assert code == 2, output
    assert "sib200_yor_cf" in output and "--data-dir" in output and "Traceback" not in output
    empty = tmp_path / "mirror"
    empty.mkdir()
    code, output = _export(selection, tmp_path / "lm-eval", "--data-dir", str(empty))
    assert code == 2 and "sib200_yor_cf" in output and f"not in the mirror at {empty}" in output, output
    assert "--data-dir" in output and not (tmp_path / "lm-eval").exists()


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_mirror_missing_a_language_s_files_is_named_with_the_fix(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.data.sources import DATA_DIR_ENV

    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    mirror = tmp_path / "mirror"
    import_raw(shared_data, mirror, datasets=["sib200"])
    for leftover in (mirror / "sib200" / "yor_Latn").iterdir():  # the README still lists the language
        leftover.unlink()
    selection = _selection(tmp_path / "sel", "sib200_yor_cf,0,acc,true")
    code, output = _export(selection, tmp_path / "lm-eval", "--data-dir", str(mirror))
    assert code == 2, output
    assert "sib200_yor_cf" in output and "could not be read from" in output and "--data-dir" in output, output
    assert "Traceback" not in output and "'.geoparquet'" not in output
