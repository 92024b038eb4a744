"""Fault tests of the score-table loader (`analysis.scores.read.read_scores`, `finetasks-afr select TABLE`),
issue 15.

Every bad table ends in a named error (exit code 2 from the CLI, no traceback, the message names the file, the
column or line, the offending rows and the fix) before anything is written; nothing appears outside `--out` and
no temporary file is left. Leading/trailing spaces in text columns are stripped with a note (a trailing space is
never a different task), unless stripping makes two rows one: then it is the duplicate-key error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import analysis.scores.write as writer
from analysis.scores.read import read_scores
from analysis.scores.schema import SCHEMA, ScoreTableError
from analysis.scores.write import write_scores
from finetasks_afr.cli import app

BASE: dict[str, Any] = {
    "run": "mixA",
    "seed": 1,
    "step": 1000,
    "tokens": 2_000_000,
    "task": "belebele_hau",
    "benchmark": "belebele",
    "language": "hau",
    "category": "RC",
    "formulation": "CF",
    "fewshot": 0,
    "metric": "acc",
    "score": 0.41,
    "stderr": 0.02,
    "random_baseline": 0.25,
}
PPL: dict[str, Any] = {"task": "flores_ppl_hau", "benchmark": "flores", "category": "GEN", "formulation": "PPL"}


def rows(*changes: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame([{**BASE, **c} for c in changes], schema=SCHEMA)


def _squeezed(text: str) -> str:
    """`text` without whitespace: rich wraps long lines (even inside paths) at the terminal width."""
    return "".join(text.split())


def _load_error(path: Path, *needles: str) -> str:
    """read_scores' message for `path`, which must name the file, the fix and every needle."""
    with pytest.raises(ScoreTableError) as caught:
        read_scores(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "fix:" in message, message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def _select_fails(path: Path, *needles: str) -> Result:
    """`finetasks-afr select path --out DIR`: exit 2, the named message, no traceback, nothing written."""
    before = set(path.parent.rglob("*"))
    out = path.parent / "selection"
    result = CliRunner().invoke(app, ["select", str(path), "--out", str(out), "--no-figures"])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for needle in (path.name, "fix:", *needles):
        assert _squeezed(needle) in _squeezed(result.output), (needle, result.output)
    assert set(path.parent.rglob("*")) == before  # no --out, no temporary file, nothing beside
    return result


def _csv(path: Path, frame: pl.DataFrame) -> Path:
    frame.write_csv(path)
    return path


# ------------------------------------------------------------------------------------- 1. zero usable rows


def test_all_nan_scores_are_no_usable_rows(tmp_path: Path) -> None:
    path = _csv(tmp_path / "nan.csv", rows({"score": float("nan")}, {"score": float("nan"), "seed": 2}))
    _load_error(path, "no usable score rows", "all 2 row(s) have a NaN score", "NaN policy", "re-run")
    _select_fails(path, "no usable score rows")


def test_header_only_csv_is_no_usable_rows(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text(",".join(SCHEMA) + "\n", encoding="utf-8")
    _load_error(path, "no usable score rows", "no data rows")
    _select_fails(path, "no usable score rows", "no data rows")


def test_collect_of_an_all_only_results_file_is_no_usable_rows(tmp_path: Path) -> None:
    """A lighteval results file holding only the "all" entry collects into a table without rows."""
    from finetasks_afr.sweep.collect import CollectError, collect

    results = tmp_path / "lighteval" / "results_2025-01-01T00-00-00.json"
    results.parent.mkdir()
    document = {
        "config_general": {"model_name": "org/model", "model_config": {"revision": "step1000"}},
        "results": {"all": {"acc": 0.5, "acc_stderr": 0.01}},
    }
    results.write_text(json.dumps(document), encoding="utf-8")
    try:
        frame, _ = collect([results.parent])
    except CollectError as error:  # collect may refuse it itself: then it must say why
        assert "all" in str(error) or "no" in str(error), error
        return
    assert frame.height == 0
    path = tmp_path / "scores.parquet"
    write_scores(frame, path)
    _load_error(path, "no usable score rows", "collect", '"all"')
    _select_fails(path, "no usable score rows")


def test_lm_eval_files_whose_tasks_are_all_skipped_are_no_usable_rows(tmp_path: Path) -> None:
    run = tmp_path / "pythia-70m"
    run.mkdir()
    document = {"results": {"my_task": {"acc": 0.5}}, "config": {"num_fewshot": 0}}
    (run / "pythia_step1000.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ScoreTableError, match="no usable score rows: the reader skipped everything"):
        read_scores(run, skip_unknown=True)


# ------------------------------------------------------------------------------------------ 2. ragged CSV


@pytest.mark.parametrize(("extra", "fields"), [(",extra", 15), ("", 12)])
def test_ragged_csv_line_names_file_and_line(tmp_path: Path, extra: str, fields: int) -> None:
    """polars rejects a long line without its number and pads a short one with nulls (stderr and random_baseline
    silently missing); both are named with their line number."""
    path = _csv(tmp_path / "scores.csv", rows({}, {"step": 2000, "tokens": 4_000_000}, {"step": 3000, "tokens": 6e6}))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = (lines[2] + extra) if extra else ",".join(lines[2].split(",")[:12])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _load_error(path, "line 3 has", f"line 3 has {fields}", "header's 14", "give every line exactly 14 fields")
    _select_fails(path, f"line 3 has {fields}")


def test_ragged_quoted_csv_names_the_line(tmp_path: Path) -> None:
    """With quotes (a comma inside a field) the csv module counts the fields."""
    path = _csv(tmp_path / "scores.csv", rows({"task": "a,b"}, {"task": "c", "step": 2000, "tokens": 4_000_000}))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('mixA,1,3000,6000000,"x,y",belebele\n')
    _load_error(path, "line 4 has 6")


def test_csv_with_an_empty_last_cell_is_not_ragged(tmp_path: Path) -> None:
    path = _csv(
        tmp_path / "scores.csv", rows({**PPL, "metric": "word_perplexity", "score": 1.2, "random_baseline": None})
    )
    frame, _ = read_scores(path)
    assert frame.height == 1 and frame["random_baseline"].to_list() == [None]


def test_an_empty_bits_per_byte_baseline_gets_the_uniform_byte_model_with_a_note(tmp_path: Path) -> None:
    # bits per byte and byte perplexity have a chance level without a model (8 bits, 256); word perplexity has none
    path = _csv(
        tmp_path / "scores.csv",
        rows(
            {**PPL, "task": "a", "metric": "bits_per_byte", "score": 1.2, "random_baseline": None},
            {**PPL, "task": "a", "metric": "byte_perplexity", "score": 2.3, "random_baseline": None},
            {**PPL, "task": "a", "metric": "word_perplexity", "score": 40.0, "random_baseline": None},
            {**PPL, "task": "b", "metric": "bits_per_byte", "score": 1.2, "random_baseline": 5.5},
        ),
    )
    frame, report = read_scores(path)
    baselines = {(t, m): b for t, m, b in frame.select("task", "metric", "random_baseline").iter_rows()}
    assert baselines == {("a", "bits_per_byte"): 8.0, ("a", "byte_perplexity"): 256.0,
                         ("a", "word_perplexity"): None, ("b", "bits_per_byte"): 5.5}  # fmt: skip
    assert any("gave 1 bits_per_byte row(s) without a random baseline the uniform byte model's score, 8" in n
               for n in report.notes)  # fmt: skip


# ---------------------------------------------------------------------------------- 3. the lm-eval hint


def test_unknown_lm_eval_task_hint_names_the_cli_flags(tmp_path: Path) -> None:
    run = tmp_path / "pythia-70m"
    run.mkdir()
    document = {"results": {"my_task": {"acc": 0.5}}, "config": {"num_fewshot": 0}}
    path = run / "pythia_step1000.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    message = _load_error(path, "my_task", "--task-info", "--skip-unknown")
    assert message.index("--task-info") < message.index("task_info=")  # the CLI flags first, the API in brackets
    _select_fails(path, "--task-info", "--skip-unknown")


# ------------------------------------------------------------------------------ 4. values the data cannot have


@pytest.mark.parametrize("metric", ["bits_per_byte", "word_perplexity", "nll", "bleu"])
def test_negative_value_of_a_non_negative_metric(tmp_path: Path, metric: str) -> None:
    """Error, not warning: perplexities, bits per byte, NLL and BLEU average non-negative quantities, so a negative
    value is a sign error upstream (a log-probability stored as NLL), never data."""
    frame = rows({**PPL, "metric": metric, "score": -0.7, "random_baseline": None if metric != "bleu" else 0.0})
    path = _csv(tmp_path / "scores.csv", frame)
    _load_error(path, "'metric', 'score'", "negative score", metric, "check the producer's sign")
    _select_fails(path, "negative score")


def test_signed_metric_may_be_negative(tmp_path: Path) -> None:
    path = _csv(tmp_path / "scores.csv", rows({**PPL, "metric": "ter_inverse", "score": -0.2, "random_baseline": 0}))
    assert read_scores(path)[0]["score"].to_list() == [-0.2]


@pytest.mark.parametrize("column", ["score", "stderr", "random_baseline"])
def test_absurd_magnitude_is_an_error(tmp_path: Path, column: str) -> None:
    """Scores scaled by 1e300 overflowed every variance (the SNR became 0); now the column and the rows are named."""
    values = {"score": 1e300, "stderr": 0.02, "random_baseline": 0.0}
    values[column] = 3e300
    frame = rows({**PPL, "metric": "word_perplexity", **values})
    path = _csv(tmp_path / "scores.csv", frame)
    _load_error(path, f"'{column}'", f"absurd {column}", "1e+100", "run=mixA")
    _select_fails(path, f"absurd {column}")


def test_infinite_score_stays_its_own_error(tmp_path: Path) -> None:
    message = _load_error(_csv(tmp_path / "scores.csv", rows({"score": float("inf")})), "infinite score")
    assert "absurd" not in message


def test_falling_token_counts_name_run_seed_and_steps(tmp_path: Path) -> None:
    frame = rows(
        {"step": 1000, "tokens": 2_000_000},
        {"step": 2000, "tokens": 1_000_000},
        {"step": 3000, "tokens": 6_000_000},
        {"step": 1000, "tokens": 2_000_000, "seed": 2},
        {"step": 2000, "tokens": 1_000_000, "seed": 2},
        {"run": "mixB", "step": 2000, "tokens": 9_000_000},
    )
    path = _csv(tmp_path / "scores.csv", frame)
    _load_error(
        path, "2 checkpoint(s) have fewer tokens", "run=mixA seed=1: step 1000 has tokens 2,000,000",
        "run=mixA seed=2: step 1000", "the later step 2000 only 1,000,000",
    )  # fmt: skip
    _select_fails(path, "fewer tokens")


def test_a_seed_is_compared_with_itself_only(tmp_path: Path) -> None:
    """Seed 2 saw more tokens at step 1000 than seed 1 at step 2000: no fall within either seed."""
    frame = rows(
        {"step": 1000, "tokens": 2_000_000},
        {"step": 2000, "tokens": 2_100_000},
        {"step": 1000, "tokens": 2_200_000, "seed": 2},
        {"step": 2000, "tokens": 4_000_000, "seed": 2},
    )
    assert read_scores(_csv(tmp_path / "scores.csv", frame))[0].height == 4


def test_null_tokens_are_not_a_fall(tmp_path: Path) -> None:
    frame = rows({"step": 1000, "tokens": 2_000_000}, {"step": 2000, "tokens": None}, {"step": 3000, "tokens": 6e6})
    assert read_scores(_csv(tmp_path / "scores.csv", frame))[0].height == 3


def test_spaces_around_names_are_stripped_with_a_note(tmp_path: Path) -> None:
    path = _csv(
        tmp_path / "scores.csv",
        rows({"task": "belebele_hau ", "step": 2000, "tokens": 4_000_000}, {"task": "belebele_hau"}, {"run": " mixB"}),
    )
    frame, report = read_scores(path)
    assert sorted(frame["task"].unique()) == ["belebele_hau"] and sorted(frame["run"].unique()) == ["mixA", "mixB"]
    assert "stripped leading/trailing spaces from 1 distinct 'run' value(s), e.g. ' mixB'" in report.notes
    assert "stripped leading/trailing spaces from 1 distinct 'task' value(s), e.g. 'belebele_hau '" in report.notes


def test_stripping_that_merges_two_rows_is_an_error(tmp_path: Path) -> None:
    path = _csv(tmp_path / "scores.csv", rows({"task": "belebele_hau "}, {"task": "belebele_hau", "score": 0.5}))
    _load_error(path, "repeat the key", "compared after stripping spaces from task", "differ only by spaces")
    _select_fails(path, "compared after stripping spaces")


# ------------------------------------------------------------------------------------ 5. the one writer


def test_write_scores_goes_through_the_one_atomic_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    real = writer.atomic_write

    def spy(path: Path, write: Any) -> Path:
        calls.append(path)
        return real(path, write)

    monkeypatch.setattr(writer, "atomic_write", spy)
    path = tmp_path / "deep" / "scores.parquet"
    write_scores(rows({}), path)
    assert calls == [path] and read_scores(path)[0].height == 1
    assert [p.name for p in path.parent.iterdir()] == ["scores.parquet"]


# ---------------------------------------------------------------------------------- 6. recommend --out


@pytest.mark.parametrize(("name", "needle"), [("ranking.txt", "must end in .csv or .json"), ("folder", "directory")])
def test_recommend_out_is_checked_before_any_model_is_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, needle: str
) -> None:
    from finetasks_afr.perplexity import recommend as rec

    def scored(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("models were scored before --out was checked")

    monkeypatch.setattr(rec, "recommend", scored)
    out = tmp_path / name
    if name == "folder":
        out = tmp_path / "folder.csv"
        out.mkdir()
    result = CliRunner().invoke(app, ["recommend", "--model", "no/such-model", "--text", "Sannu", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and _squeezed(needle) in _squeezed(result.output), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if name != "folder" else ["folder.csv"])


# ----------------------------------------------------------------------------- a null seed among seeded rows (53)


def test_a_null_seed_among_seeded_rows_of_a_task_is_named(tmp_path: Path) -> None:
    """One row without its seed among seeded rows became a seed of its own and changed the task's chosen metric
    (`demoagreement_qab_cf` of the bundled sweep) without a note: now an error naming the row, in memory (CSV) and
    streamed (parquet)."""
    table = rows({"seed": 1}, {"seed": 2}, {"seed": 1, "step": 2000}, {"seed": None, "step": 2000})
    needles = ("null seed beside rows with a seed", "run=mixA seed=null step=2000 task=belebele_hau", "seed(s) 1, 2")
    _load_error(_csv(tmp_path / "mixed.csv", table), *needles)
    table.write_parquet(tmp_path / "mixed.parquet")
    _select_fails(tmp_path / "mixed.parquet", "null seed", "seed=null")


def test_null_seeds_of_a_whole_task_or_run_pass(tmp_path: Path) -> None:
    """A run without replicas (null seed on every row of its tasks) beside seeded runs or tasks is no mix."""
    table = rows(
        {"seed": 1},
        {"seed": 2},
        {"seed": None, "run": "mixB"},
        {"seed": None, "task": "belebele_yor", "language": "yor"},
    )
    frame, _ = read_scores(_csv(tmp_path / "ok.csv", table))
    assert frame.height == 4
