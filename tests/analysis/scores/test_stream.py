"""A score table streamed some tasks at a time (`analysis.scores.stream`) is accepted or refused as `validate` would
accept or refuse it whole: the same rows, the same load report, and the rules across tasks (one token count per
checkpoint, counts that never fall) caught when the rows that break them sit in different partitions."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from analysis.config import load_config
from analysis.scores.read import IGNORED_OPTIONS_NOTE
from analysis.scores.schema import KEY, ScoreTableError
from analysis.scores.stream import ScoreScan, merge_reports, open_scores
from analysis.scores.validate import validate
from analysis.streaming import analyse_scan


def _row(task: str, step: int, score: float, **values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "run": "mix-a", "seed": 1, "step": step, "tokens": step * 1_000, "task": task, "benchmark": task.strip(),
        "language": "yor", "category": "NLU", "formulation": "CF", "fewshot": 0, "metric": "acc", "score": score,
        "stderr": 0.01, "random_baseline": 0.25,
    }  # fmt: skip
    return row | values


def _table(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema_overrides={"seed": pl.Int64, "tokens": pl.Int64}, infer_schema_length=None)


def _streamed(path: Path, partition_rows: int = 1) -> tuple[pl.DataFrame, object]:
    """Every partition read and validated, and the whole table's report; one task per partition by default."""
    with ScoreScan.open(path) as scan:
        parts = [scan.read(tasks) for tasks in scan.partitions(partition_rows)]
    report = merge_reports([report for _, report in parts], str(path))
    return pl.concat([frame for frame, _ in parts]).sort(KEY), report


def test_the_streamed_rows_and_load_report_are_validates(tmp_path: Path) -> None:
    """Spaces around names, NaN scores, NaN stderr, an extra column and seeds that saw different
    token counts, spread over tasks in different partitions: the notes, counts and rows are the same."""
    rows = []
    for task in ("belebele_yor ", "naijarc_yor", "sib_yor", "afrixnli_yor"):
        for seed, extra_tokens in ((1, 0), (2, 7)):
            for step in (1, 2, 3):
                rows.append(_row(task, step, 0.3 + step / 10, seed=seed, tokens=step * 1_000 + extra_tokens))
    rows[0]["score"] = float("nan")
    rows[7]["stderr"] = float("nan")
    rows[13]["stderr"] = float("nan")
    rows[20] |= {"run": " mix-a"}
    table = _table(rows).with_columns(pl.lit("x").alias("producer"))
    path = tmp_path / "t.parquet"
    table.sort("task").write_parquet(path)
    expected_rows, expected = validate(table.sort("task"), source=str(path))
    frame, report = _streamed(path)
    assert frame.equals(expected_rows.sort(KEY))
    assert report == expected
    assert any("stripped" in note for note in report.notes) and any("token counts" in note for note in report.notes)
    assert report.dropped_nan == 1 and "set 2 NaN stderr" in " ".join(report.notes)


@pytest.mark.parametrize(
    ("second", "needle"),
    [
        ({"tokens": 1_500}, "more than one token count"),  # step 1 of mix-a seed 1: 1,000 in task a, 1,500 in b
        ({"step": 3, "tokens": 1_500}, "fewer tokens than the step before"),  # step 2 had 2,000
    ],
    ids=["one-count-per-checkpoint", "counts-never-fall"],
)
def test_a_rule_across_tasks_is_caught_across_partitions(tmp_path: Path, second: dict, needle: str) -> None:
    rows = [_row("task_a", 1, 0.3), _row("task_a", 2, 0.4), _row("task_b", 1, 0.5) | second]
    path = tmp_path / "t.parquet"
    _table(rows).write_parquet(path)
    with pytest.raises(ScoreTableError, match=needle) as whole:
        validate(_table(rows), source=str(path))
    with pytest.raises(ScoreTableError, match=needle) as streamed:
        _streamed(path)
    assert str(path) in str(streamed.value) and str(whole.value).split(":")[0] == str(streamed.value).split(":")[0]
    with ScoreScan.open(path) as scan:
        assert len(scan.partitions(1)) == 2  # the two rows are in different partitions indeed
        with pytest.raises(ScoreTableError, match=needle):
            analyse_scan(scan, load_config(), partition_rows=1)


def test_a_name_with_spaces_is_read_with_its_stripped_twin(tmp_path: Path) -> None:
    """'x ' and 'x' are one task to `validate`: one partition reads both, so the duplicate key is found."""
    rows = [_row("x", 1, 0.3), _row("x ", 1, 0.4), _row("m", 1, 0.5), _row("y", 1, 0.6)]
    path = tmp_path / "t.parquet"
    _table(rows).write_parquet(path)
    with ScoreScan.open(path) as scan:
        assert scan.tasks == ["m", "x", "y"]
        groups = [set(tasks.names) for tasks in scan.partitions(1)]
        assert {"x", "x "} in groups
        with pytest.raises(ScoreTableError, match="after stripping spaces"):
            [scan.read(tasks) for tasks in scan.partitions(1)]


def test_rows_without_a_task_are_refused_when_indexed(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _table([_row("a", 1, 0.3), _row("a", 2, 0.4) | {"task": None}]).write_parquet(path)
    with pytest.raises(ScoreTableError, match=r"column 'task': 1 row\(s\) are null"), ScoreScan.open(path):
        pass


def test_an_empty_table_and_a_missing_column_are_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    _table([_row("a", 1, 0.3)]).clear().write_parquet(empty)
    with (
        pytest.raises(ScoreTableError, match="no usable score rows: the table has no data rows"),
        ScoreScan.open(empty),
    ):
        pass
    missing = tmp_path / "missing.parquet"
    _table([_row("a", 1, 0.3)]).drop("tokens").write_parquet(missing)
    with pytest.raises(ScoreTableError, match="missing column"), ScoreScan.open(missing):
        pass
    nan_only = tmp_path / "nan.parquet"  # every partition is empty once NaN scores are dropped
    _table([_row("a", 1, float("nan")), _row("b", 1, float("nan"))]).write_parquet(nan_only)
    with ScoreScan.open(nan_only) as scan, pytest.raises(ScoreTableError, match="have a NaN score"):
        analyse_scan(scan, load_config(), partition_rows=1)


def test_categorical_task_names_are_read_in_memory_once(tmp_path: Path) -> None:
    """A parquet whose task column is categorical (what pandas writes for a category) cannot be range-read:
    ScoreScan names it; open_scores, which the commands use, converts it instead."""
    table = _table([_row("a", 1, 0.3), _row("a", 2, 0.4), _row("b", 1, 0.5)])
    path = tmp_path / "t.parquet"
    table.with_columns(pl.col("task").cast(pl.Categorical)).write_parquet(path)
    with pytest.raises(ScoreTableError, match="column 'task' has type Categorical"), ScoreScan.open(path):
        pass
    with open_scores(path) as scan:
        assert scan.tasks == ["a", "b"] and scan.known_report is not None
        workdir = scan.path.parent
        assert pl.concat([scan.read(t)[0] for t in scan.partitions()]).sort(KEY).equals(validate(table, source="t")[0])
    assert not workdir.exists()


def test_options_for_lm_eval_input_are_noted_as_ignored_on_a_parquet(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _table([_row("a", 1, 0.3), _row("a", 2, 0.4)]).write_parquet(path)
    with open_scores(path, tokens_per_step=10) as scan:
        report = analyse_scan(scan, load_config()).load_report
    assert IGNORED_OPTIONS_NOTE in report.notes
