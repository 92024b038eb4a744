"""`study --reanalyse DIR` (issue 53): the folder is checked whole before anything is copied (both files, a parseable
record with its `sizes` and `tasks`, a readable table named by its own path, the table's runs, seeds and tasks the
study's), `--out` and `--publish` are checked before any work, and a failure leaves no copy in `--out`.

The study folders here are built by hand from the committed study (docs/study) cut to two tasks, so that the checks
run in milliseconds and the one real analysis in a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import finetasks_afr.study.run as study_run
from finetasks_afr.cli import app
from finetasks_afr.data.bundled import BUNDLED_SWEEP
from finetasks_afr.study.folder import StudyFolderError, check_study_folder, read_record
from finetasks_afr.study.run import reanalyse_study

DOCS_STUDY = Path(__file__).resolve().parents[2] / "docs" / "study"
TASKS = ("flores_ppl_zul", "sib200_nso_cf")


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """A finished study's folder: the committed table cut to two tasks, and the committed record."""
    folder = tmp_path / "study"
    folder.mkdir()
    table = pl.read_parquet(DOCS_STUDY / "scores.parquet").filter(pl.col("task").is_in(TASKS))
    table.write_parquet(folder / "scores.parquet")
    shutil.copyfile(DOCS_STUDY / "study.json", folder / "study.json")
    return folder


def _invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["study", *map(str, args)])


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _assert_named_error(result: Result, *needles: str | Path) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.exception
    for needle in needles:
        assert _squeezed(str(needle)) in _squeezed(result.output), (needle, result.output)


def _record(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "study.json").read_text(encoding="utf-8"))


def _write_record(folder: Path, record: object) -> None:
    (folder / "study.json").write_text(json.dumps(record), encoding="utf-8")


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record any analysis started: a check that must come first leaves this list empty."""
    started: list[str] = []
    monkeypatch.setattr(study_run, "analyse_study", lambda *args, **kwargs: started.append("analysis"))
    return started


def _leftovers(parent: Path) -> list[str]:
    return sorted(entry.name for entry in parent.iterdir() if ".reanalyse-" in entry.name)


# ------------------------------------------------------------------------------ the folder, checked first


def test_a_truncated_record_is_named_and_nothing_is_copied(study: Path, tmp_path: Path) -> None:
    text = (study / "study.json").read_text(encoding="utf-8")
    (study / "study.json").write_text(text[:100], encoding="utf-8")
    out = tmp_path / "out"
    _assert_named_error(_invoke("--reanalyse", study, "--out", out), study / "study.json", "not valid JSON")
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda record: record.pop("sizes"), "sizes is missing"),
        (lambda record: record["sizes"].pop("steps") and record["sizes"].pop("seq_len"), "sizes lacks seq_len"),
        (lambda record: record["sizes"].update(mixes="mix-N"), 'sizes.mixes is "mix-N", not a list of strings'),
        (lambda record: record["sizes"].update(batch_size=0), "sizes.batch_size is 0"),
        (lambda record: record["sizes"]["shape"].pop("layers"), "sizes.shape lacks layers"),
        (lambda record: record.pop("tasks"), "tasks is missing"),
    ],
)
def test_a_record_without_its_fields_is_named(study: Path, tmp_path: Path, change: Any, needle: str) -> None:
    record = _record(study)
    change(record)
    _write_record(study, record)
    out = tmp_path / "out"
    _assert_named_error(_invoke("--reanalyse", study, "--out", out), study / "study.json", needle)
    assert not out.exists()


def test_a_record_that_is_no_object_is_named(study: Path) -> None:
    _write_record(study, [1, 2])
    with pytest.raises(StudyFolderError, match="a JSON list, not a study's record"):
        read_record(study / "study.json")


def test_a_missing_file_is_named(study: Path, tmp_path: Path) -> None:
    (study / "scores.parquet").unlink()
    _assert_named_error(_invoke("--reanalyse", study, "--out", tmp_path / "out"), study / "scores.parquet", "missing")
    _assert_named_error(_invoke("--reanalyse", tmp_path / "nowhere", "--out", tmp_path / "out"), "does not exist")


def test_a_fifo_or_a_loop_of_links_is_named_without_a_hang(study: Path, tmp_path: Path) -> None:
    (study / "study.json").unlink()
    os.mkfifo(study / "study.json")  # opening it would block until a writer came
    _assert_named_error(_invoke("--reanalyse", study, "--out", tmp_path / "out"), "is a named pipe (FIFO)")
    (study / "study.json").unlink()
    (study / "study.json").symlink_to(study / "loop.json")
    (study / "loop.json").symlink_to(study / "study.json")
    _assert_named_error(_invoke("--reanalyse", study, "--out", tmp_path / "out"), "symlink loop")
    assert not (tmp_path / "out").exists()


def test_a_truncated_table_is_named_by_its_own_path_not_a_copy(study: Path, tmp_path: Path) -> None:
    data = (study / "scores.parquet").read_bytes()
    (study / "scores.parquet").write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    result = _invoke("--reanalyse", study, "--out", out)
    _assert_named_error(result, study / "scores.parquet", "cannot read it as parquet")
    assert _squeezed(str(out / "scores.parquet")) not in _squeezed(result.output)
    assert not out.exists()


def test_another_table_beside_the_record_is_not_the_studys(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's runs beside the study's record: named, not analysed into "0 of 4" designed orders."""
    started = _no_analysis(monkeypatch)
    shutil.copyfile(BUNDLED_SWEEP, study / "scores.parquet")
    out = tmp_path / "out"
    result = _invoke("--reanalyse", study, "--out", out)
    _assert_named_error(result, "are not one study's", "are not the study's mixes (mix-N, mix-B, mix-S)")
    assert not started and not out.exists()


def test_tasks_and_seeds_the_record_lacks_are_named(study: Path) -> None:
    record = _record(study)
    record["tasks"] = [TASKS[0]]
    record["sizes"]["seeds"] = [1, 2]
    _write_record(study, record)
    with pytest.raises(StudyFolderError, match=r"seed\(s\) 3 are not the study's.*1 of the table's 2 task"):
        check_study_folder(study)


def test_a_table_without_one_of_the_mixes_is_named(study: Path) -> None:
    table = pl.read_parquet(study / "scores.parquet")
    table.filter(pl.col("run") != "mix-B").write_parquet(study / "scores.parquet")
    with pytest.raises(StudyFolderError, match=r"lacks the study's mix\(es\) mix-B"):
        check_study_folder(study)


# ------------------------------------------------------------------------------ --out and --publish, first


@pytest.mark.parametrize("option", ["--out", "--publish"])
def test_an_output_that_is_a_file_is_refused_before_any_work(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    started = _no_analysis(monkeypatch)
    checked: list[Path] = []
    monkeypatch.setattr(study_run, "check_study_folder", lambda folder: checked.append(folder), raising=False)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine\n", encoding="utf-8")
    args = {"--out": tmp_path / "out", "--publish": tmp_path / "docs", option: a_file}
    result = _invoke("--reanalyse", study, *[str(part) for pair in args.items() for part in pair])
    _assert_named_error(result, f"{option} {a_file} is a file")
    assert not started and not checked
    assert not (tmp_path / "out").exists() and a_file.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("inside", ["", "analysis"], ids=["the-folder", "inside-it"])
def test_an_out_that_is_the_reanalysed_folder_or_inside_it_is_refused_before_any_work(
    study: Path, monkeypatch: pytest.MonkeyPatch, inside: str
) -> None:
    started = _no_analysis(monkeypatch)
    before = {path: path.read_bytes() for path in study.iterdir()}
    _assert_named_error(
        _invoke("--reanalyse", study, "--out", study / inside), "is the --reanalyse folder", "--publish"
    )
    assert not started
    assert {path: path.read_bytes() for path in study.iterdir()} == before


def test_publish_into_out_itself_is_refused(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _assert_named_error(_invoke("--reanalyse", study, "--out", out, "--publish", out), "is --out itself")


# ------------------------------------------------------------------------------ nothing left after a failure


def _fail(*args: object, **kwargs: object) -> None:
    raise RuntimeError("the analysis failed")


def test_a_failed_analysis_leaves_no_copy_in_a_new_out(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_run, "analyse_study", _fail)
    out = tmp_path / "new" / "out"
    with pytest.raises(RuntimeError, match="the analysis failed"):
        reanalyse_study(study, out, log=lambda line: None)
    assert not out.exists() and not _leftovers(out.parent)


def test_a_failed_analysis_leaves_an_existing_out_as_it_was(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_run, "analyse_study", _fail)
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "truth.md").write_text("the previous truth\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="the analysis failed"):
        reanalyse_study(study, out, log=lambda line: None)
    assert sorted(path.name for path in out.iterdir()) == ["checkpoints", "truth.md"]
    assert (out / "truth.md").read_text(encoding="utf-8") == "the previous truth\n"
    assert not _leftovers(tmp_path)


def test_a_staging_folder_of_a_killed_run_is_removed_by_the_next(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    dead = tmp_path / ".out.reanalyse-999999999-abc"  # no process has this pid
    (dead / "selection").mkdir(parents=True)
    with pytest.raises(StudyFolderError):
        reanalyse_study(tmp_path / "nothing", out, log=lambda line: None)
    assert dead.exists()  # the checks come first: a wrong folder touches nothing
    monkeypatch.setattr(study_run, "analyse_study", _fail)
    with pytest.raises(RuntimeError):
        reanalyse_study(study, out, log=lambda line: None)
    assert not _leftovers(tmp_path)
    (out / ".reanalyse-999999999-abc").mkdir(parents=True)  # inside an existing --out, where it stages
    with pytest.raises(RuntimeError):
        reanalyse_study(study, out, log=lambda line: None)
    assert not _leftovers(out)


# ------------------------------------------------------------------------------ the real analysis, staged


@pytest.mark.slow  # the selection, ranking and truth check of two tasks: about 3 s
def test_a_study_is_reanalysed_into_out_and_replaces_its_previous_analysis(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "aggregate").mkdir()
    (out / "aggregate" / "ranking.csv").write_text("a stale ranking\n", encoding="utf-8")
    (out / "truth.md").write_text("the previous truth\n", encoding="utf-8")
    result = _invoke("--reanalyse", study, "--out", out)
    assert result.exit_code == 0, result.output
    assert (out / "checkpoints").is_dir()  # what the reanalysis does not write stays
    assert (out / "scores.parquet").read_bytes() == (study / "scores.parquet").read_bytes()
    assert (out / "study.json").read_bytes() == (study / "study.json").read_bytes()
    assert (out / "truth.md").read_text(encoding="utf-8") != "the previous truth\n"
    assert (out / "truth_check.csv").is_file() and (out / "selection" / "decisions.csv").is_file()
    report = (out / "selection" / "report.md").read_text(encoding="utf-8")
    assert f"{out / 'scores.parquet'}:" in report  # the table where it stays, not the staging copy
    ranked = (out / "aggregate" / "ranking.csv").is_file()
    assert not ranked or (out / "aggregate" / "ranking.csv").read_text(encoding="utf-8") != "a stale ranking\n"
    assert not _leftovers(tmp_path) and not _leftovers(out)
