"""The score table contract: validation messages, the NaN policy, readers and the atomic writer."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from analysis.base import ordinal
from analysis.scores.harness_json import read_lm_eval_harness
from analysis.scores.read import read_scores
from analysis.scores.schema import COLUMNS, KEY, SCHEMA, ScoreTableError
from analysis.scores.task_info import LM_EVAL_TASK_INFO, TaskInfo
from analysis.scores.validate import LoadReport, checkpoint_tokens, validate, validate_partition
from analysis.scores.write import write_scores

BASE: dict[str, Any] = {
    "run": "mixA",
    "seed": 1,
    "step": 1000,
    "tokens": 2_000_000,
    "task": "afrixnli_yor_cf",
    "benchmark": "afrixnli",
    "language": "yor",
    "category": "NLU",
    "formulation": "CF",
    "fewshot": 0,
    "metric": "acc",
    "score": 0.41,
    "stderr": 0.02,
    "random_baseline": 1 / 3,
}


def rows(*changes: dict[str, Any]) -> pl.DataFrame:
    """One row per `changes` dict: BASE with those values, typed as the schema."""
    return pl.DataFrame([{**BASE, **c} for c in changes], schema=SCHEMA)


def good() -> pl.DataFrame:
    """A small valid table: two runs, seeds (null for every row of one task of mixA, which sorts them first), steps,
    metrics, in no particular order."""
    return rows(
        {"run": "mixB", "step": 2000, "tokens": 4_000_000},
        {"seed": None, "metric": "acc_norm", "score": 0.5, "task": "afrixnli_yor_mcf", "formulation": "MCF"},
        {"seed": 2},
        {},
        {"metric": "acc_norm"},
        {"seed": None, "task": "afrixnli_yor_mcf", "formulation": "MCF"},
        {"run": "mixB", "step": 0, "tokens": 0, "stderr": None},
    )


def error_of(frame: pl.DataFrame) -> str:
    """The message validate raises for `frame`."""
    with pytest.raises(ScoreTableError) as caught:
        validate(frame, source="unit.parquet")
    message = str(caught.value)
    assert message.startswith("unit.parquet"), message
    assert "fix" in message, message
    return message


# --- the valid path ----------------------------------------------------------------------------


def test_valid_table_is_typed_sorted_and_reported() -> None:
    out, report = validate(good(), source="unit.parquet")
    assert out.columns == list(COLUMNS)
    assert out.schema == pl.Schema(SCHEMA)
    assert out.equals(good().sort(KEY))  # KEY order, nulls first, like frame.sort(KEY)
    assert report == LoadReport("unit.parquet", 7)
    assert report.summary() == "unit.parquet: 7 rows"


def test_empty_table_is_valid() -> None:
    out, report = validate(pl.DataFrame(schema=SCHEMA), source="empty")
    assert out.height == 0 and out.schema == pl.Schema(SCHEMA) and report.n_rows == 0


def test_extra_columns_are_dropped_with_a_note() -> None:
    out, report = validate(good().with_columns(pl.lit("x").alias("model_path")), source="s")
    assert out.columns == list(COLUMNS)
    assert any("model_path" in note for note in report.notes)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "ab", "B", "é", ""]),
            st.one_of(st.none(), st.integers(-3, 3), st.integers(2**40, 2**40 + 2)),
            st.integers(0, 10**12),
            st.sampled_from(["t1", "t10", "t2", "T"]),
            st.integers(0, 5),
            st.sampled_from(["acc", "acc_norm", "f1", "bits_per_byte"]),
        ),
        min_size=1,
        max_size=30,
        unique=True,
    )
)
def test_sort_matches_polars_sort_on_key(keys: list[tuple[Any, ...]]) -> None:
    keys = [k for k in keys if (k[1] is None) == (k[3] == "T")]  # null seeds, but never beside seeds in a task
    assume(keys)
    frame = rows(*({**dict(zip(KEY, k, strict=True)), "tokens": None} for k in keys))
    out, _ = validate(frame, source="s")
    assert out.equals(frame.sort(KEY))


def test_sort_falls_back_to_columns_when_the_key_would_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ordinal, "MAX_KEY", 1)
    out, _ = validate(good(), source="s")
    assert out.equals(good().sort(KEY))
    message = error_of(pl.concat([good(), good().head(1)]))
    assert "1 extra row(s) repeat the key" in message


def test_an_unsorted_partition_keeps_the_input_order_and_still_refuses_repeated_keys() -> None:
    frame = good()
    assert not frame.equals(frame.sort(KEY))
    out, report = validate_partition(frame, source="s", sort=False)
    assert out.equals(frame.select(COLUMNS))
    assert validate_partition(frame, source="s")[0].equals(frame.sort(KEY))
    assert report.n_rows == frame.height
    repeated = pl.concat([frame, frame.tail(1).with_columns(pl.col("run") + " ")])
    with pytest.raises(ScoreTableError) as caught:
        validate_partition(repeated, source="unit.parquet", sort=False)
    assert str(caught.value) == error_of(repeated)
    assert "1 extra row(s) repeat the key" in str(caught.value)


def test_ints_as_floats_or_text_are_accepted_when_whole() -> None:
    frame = good().with_columns(pl.col("step").cast(pl.Float64), pl.col("seed").cast(pl.Float64).fill_null(math.nan))
    out, _ = validate(frame, source="s")
    assert out.equals(good().sort(KEY))
    text = good().with_columns(pl.col("step").cast(pl.String) + ".0")
    assert validate(text, source="s")[0].equals(good().sort(KEY))


# --- one test per error -------------------------------------------------------------------------


def test_missing_columns_are_named_with_the_schema() -> None:
    message = error_of(good().drop("random_baseline", "fewshot"))
    assert "missing column(s) fewshot, random_baseline" in message
    assert "run (String)" in message and "seed (Int64, nullable)" in message


def test_uncastable_column_names_type_values_and_rows() -> None:
    frame = good().with_columns(pl.col("step").cast(pl.String))
    frame = frame.with_columns(pl.when(pl.col("run") == "mixB").then(pl.lit("ten")).otherwise("step").alias("step"))
    message = error_of(frame)
    assert "column 'step': 2 value(s) cannot be read as Int64" in message
    assert "'ten'" in message and "run=mixB" in message
    assert "whole numbers" in message


def test_fractional_integer_is_an_error() -> None:
    message = error_of(good().with_columns(pl.col("fewshot").cast(pl.Float64) + 0.5))
    assert "column 'fewshot'" in message and "Int64" in message and "0.5" in message


def test_unsupported_dtype_is_an_error() -> None:
    message = error_of(good().with_columns(pl.col("score").cast(pl.String).str.split("")))
    assert "'score' has type List" in message


def test_null_in_required_column_names_column_and_rows() -> None:
    message = error_of(rows({}, {"task": None, "step": 5}))
    assert "column 'task': 1 row(s) are null" in message
    assert "step=5" in message and "task=null" in message


def test_null_score_points_to_nan_for_missing_numbers() -> None:
    assert "should be NaN" in error_of(rows({"score": None}))


def test_nan_scores_are_dropped_counted_and_shown() -> None:
    frame = pl.concat([good(), rows({"step": 7, "score": math.nan}, {"step": 8, "score": math.nan})])
    out, report = validate(frame, source="s")
    assert out.equals(good().sort(KEY))
    assert report.dropped_nan == 2
    assert len(report.dropped_nan_examples) == 2
    assert "step=7" in report.dropped_nan_examples[0] or "step=7" in report.dropped_nan_examples[1]
    assert "dropped 2 row(s) with a NaN score" in report.summary()


def test_infinite_score_is_an_error() -> None:
    message = error_of(rows({}, {"step": 3, "score": math.inf}))
    assert "column 'score': 1 row(s) have an infinite score" in message and "step=3" in message


def test_nan_stderr_becomes_null_with_a_note() -> None:
    out, report = validate(rows({"stderr": math.nan}), source="s")
    assert out["stderr"].to_list() == [None]
    assert report.notes == ["set 1 NaN stderr values to null (unknown)"]


@pytest.mark.parametrize("bad", [math.inf, -0.1])
def test_infinite_or_negative_stderr_is_an_error(bad: float) -> None:
    assert "column 'stderr': 1 row(s) have an infinite or negative stderr" in error_of(rows({"stderr": bad}))


def test_unknown_metric_lists_names_and_known_metrics() -> None:
    message = error_of(rows({}, {"metric": "pct_stereotype"}, {"metric": "accuracy", "step": 9}))
    assert "column 'metric': 2 row(s)" in message and "accuracy, pct_stereotype" in message
    assert "known metrics:" in message and "step=9" in message


def test_bounded_metric_outside_unit_interval_is_an_error() -> None:
    message = error_of(rows({"score": 41.0}, {"metric": "bits_per_byte", "score": 1.7}))
    assert "column 'metric', 'score': 1 row(s) have a score outside [0, 1]" in message
    assert "score=41.0" in message and "percentages" in message


@pytest.mark.parametrize(("column", "value"), [("category", "gk"), ("formulation", "cloze")])
def test_unknown_category_or_formulation(column: str, value: str) -> None:
    message = error_of(rows({column: value, "task": "t2"}))
    assert f"column '{column}': 1 row(s)" in message and f"{column}={value}" in message


@pytest.mark.parametrize("column", ["step", "fewshot", "tokens"])
def test_negative_counts_are_errors(column: str) -> None:
    message = error_of(rows({}, {column: -1, "run": "neg"}))
    assert f"column '{column}': 1 row(s) have a negative {column}" in message and "run=neg" in message


def test_non_finite_random_baseline_is_an_error() -> None:
    assert "random_baseline that is not finite" in error_of(rows({"random_baseline": math.nan}))


def test_duplicate_keys_with_null_seeds_are_an_error() -> None:
    null_seeded = {"seed": None, "task": "afrixnli_yor_mcf", "formulation": "MCF"}  # a task of good() without seeds
    message = error_of(pl.concat([good(), rows(null_seeded, null_seeded)]))
    assert "column 'run', 'seed', 'step', 'task', 'fewshot', 'metric': 2 extra row(s)" in message
    assert "seed=null" in message and "(3 rows)" in message
    assert "deduplicate or give the replicas distinct seeds" in message


def test_replicas_with_distinct_seeds_are_fine() -> None:
    """Seeds 1, 2 and 3; a null seed beside them in one (run, task) is an error (test_faults_table.py, issue 53)."""
    assert validate(rows({"seed": 1}, {"seed": 2}, {"seed": 3}), source="s")[0].height == 3


def test_two_token_counts_for_one_checkpoint_of_one_seed() -> None:
    message = error_of(rows({}, {"metric": "acc_norm", "tokens": 3_000_000}, {"seed": 2, "tokens": None}))
    assert "column 'run', 'seed', 'step', 'tokens': 1 (run, seed, step) checkpoint(s)" in message
    assert "run=mixA seed=1 step=1000 has tokens [2000000, 3000000]" in message


def test_seeds_may_see_different_token_counts_at_one_step() -> None:
    """Unpacked HF Trainer runs: each seed counts its own batches' tokens; aligned by step, noted, not refused."""
    frame, report = validate(
        rows(
            {"tokens": 49_496},
            {"seed": 2, "tokens": 50_352},
            {"step": 2000, "tokens": 99_000},
            {"step": 2000, "seed": 2, "tokens": 99_000},
        ),
        source="s",
    )
    assert frame.height == 4
    (note,) = [n for n in report.notes if "different token counts" in n]
    # widest spread: (50,352 - 49,496) / mean 49,924 = 1.7%
    assert "at 1 of 2 (run, step) checkpoint(s)" in note
    assert "run=mixA step=1000, 49,496..50,352, 1.7% of the mean" in note
    assert "seed mean" in note


def test_checkpoint_tokens_is_the_rounded_seed_mean() -> None:
    frame = rows({"tokens": 49_496}, {"seed": 2, "tokens": 50_352}, {"seed": 3, "tokens": 50_353}, {"seed": 4})
    frame = frame.with_columns(pl.when(pl.col("seed") == 4).then(None).otherwise(pl.col("tokens")).alias("tokens"))
    got = frame.group_by("run", "step").agg(checkpoint_tokens()).get_column("tokens").to_list()
    assert got == [50_067]  # (49,496 + 50,352 + 50,353) / 3 = 50,067.0; the null seed is left out


@pytest.mark.parametrize(
    ("column", "other"), [("benchmark", "xnli"), ("language", "hau"), ("category", "RC"), ("formulation", "MCF")]
)
def test_task_attributes_must_be_constant(column: str, other: str) -> None:
    message = error_of(rows({}, {column: other, "step": 2000}))
    assert "1 task(s) have more than one" in message
    assert f"task=afrixnli_yor_cf has {column} [" in message and other in message


def test_random_baseline_must_be_constant_per_task_fewshot_metric() -> None:
    message = error_of(rows({}, {"step": 2000, "random_baseline": 0.25}, {"fewshot": 5, "random_baseline": 0.5}))
    assert "1 (task, fewshot, metric) group(s)" in message
    assert "task=afrixnli_yor_cf fewshot=0 metric=acc has random_baseline [0.25, 0.333" in message


def test_several_problems_are_reported_together_with_at_most_five_examples() -> None:
    frame = rows(*({"step": -s, "category": "X", "task": f"t{s}"} for s in range(1, 9)))
    message = error_of(frame)
    assert "2 problems" in message
    assert "8 row(s) have a negative step" in message and "8 row(s) have a category outside" in message
    assert message.count("step=-") == 10  # five examples each


# --- writing and reading tables -----------------------------------------------------------------


def tricky() -> pl.DataFrame:
    """A valid table with nulls, awkward text and floats that must survive a round trip."""
    return rows(
        {"run": 'mix "A", v2', "tokens": None},
        {"seed": None, "stderr": None, "score": 0.1 + 0.2},
        {"task": "t\u00e9", "score": 1 / 3, "metric": "bits_per_byte", "random_baseline": 0.0},
    )


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "deep" / "dir" / f"scores{suffix}"
    expected, _ = validate(tricky(), source="s")
    write_scores(tricky(), path)
    back, report = read_scores(path)
    assert back.equals(expected)
    assert report.source == str(path) and report.notes == []
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_written_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "scores.parquet"
    write_scores(good(), path)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "scores.parquet"
    write_scores(good(), path)
    before = path.read_bytes()

    def broken(self: pl.DataFrame, file: Path, *args: Any, **kwargs: Any) -> None:
        Path(file).write_bytes(b"half a parquet")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        write_scores(tricky(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["scores.parquet"]


def test_invalid_table_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    with pytest.raises(ScoreTableError, match="writing"):
        write_scores(rows({"score": 2.0}), path)
    assert not path.exists()


def test_write_rejects_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(ScoreTableError, match=r"\.xlsx.*\.parquet or \.csv"):
        write_scores(good(), tmp_path / "scores.xlsx")


def test_csv_type_error_names_file_column_and_value(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    write_scores(good(), path)
    text = path.read_text().replace(",1000,", ",1k,", 1)
    path.write_text(text)
    with pytest.raises(ScoreTableError) as caught:
        read_scores(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert "column 'step': 1 value(s) cannot be read as Int64 (bad values: '1k')" in message


def test_csv_empty_cells_are_null(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    header = ",".join(COLUMNS)
    path.write_text(f"{header}\nr,,10,,t,b,yor,GK,CF,0,acc,0.5,,0.25\n")
    out, _ = read_scores(path)
    assert out.select("seed", "tokens", "stderr").row(0) == (None, None, None)


@pytest.mark.parametrize("name", ["missing.parquet", "scores.xlsx"])
def test_read_scores_rejects_missing_paths_and_unknown_formats(tmp_path: Path, name: str) -> None:
    (tmp_path / "scores.xlsx").write_text("")
    with pytest.raises(ScoreTableError, match=r"\.parquet or \.csv score table, an lm-evaluation-harness"):
        read_scores(tmp_path / name)


def test_read_scores_names_a_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "scores.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(ScoreTableError, match=r"scores\.parquet: cannot read it as parquet"):
        read_scores(path)


# --- lm-evaluation-harness ----------------------------------------------------------------------


def harness_file(path: Path, results: dict[str, dict[str, Any]], fewshot: int = 0) -> Path:
    """Write a minimal lm-evaluation-harness v0 result file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {"model": "hf-causal", "num_fewshot": fewshot}
    path.write_text(json.dumps({"results": results, "versions": dict.fromkeys(results, 0), "config": config}))
    return path


@pytest.fixture(scope="module")
def pythia(shared_data: Path) -> tuple[pl.DataFrame, LoadReport]:
    """The whole real pythia-v1 tree, read once."""
    return read_scores(shared_data / "pythia" / "evals" / "pythia-v1", skip_unknown=True)


@pytest.mark.slow
@pytest.mark.shared_data
def test_pythia_tree_matches_the_tidy_csv(pythia: tuple[pl.DataFrame, LoadReport], shared_data: Path) -> None:
    frame, report = pythia
    tidy = (
        pl.read_csv(shared_data / "pythia" / "pythia_v1_tidy.csv")
        .filter(pl.col("task").is_in(list(LM_EVAL_TASK_INFO)))
        .select(
            pl.col("model").alias("run"),
            pl.col("shots").replace_strict({"zero-shot": 0, "five-shot": 5}, return_dtype=pl.Int64).alias("fewshot"),
            "step",
            "task",
            "metric",
            "value",
            pl.col("stderr").alias("tidy_stderr"),
        )
    )
    assert frame.height == tidy.height == 89_728
    joined = frame.join(tidy, on=["run", "fewshot", "step", "task", "metric"], how="inner")
    assert joined.height == frame.height
    assert (joined["score"] - joined["value"]).abs().max() == pytest.approx(0, abs=1e-12)
    assert (joined["stderr"] - joined["tidy_stderr"]).abs().max() == pytest.approx(0, abs=1e-12)
    assert frame["seed"].null_count() == frame.height and frame["tokens"].null_count() == frame.height
    assert set(frame["metric"]) == {"acc", "acc_norm", "ppl"}
    assert report.dropped_nan == 0
    assert any("bias-probe" in note and "crows_pairs_english" in note for note in report.notes)


@pytest.mark.shared_data
def test_pythia_runs_fewshots_and_task_info(pythia: tuple[pl.DataFrame, LoadReport]) -> None:
    frame, _ = pythia
    assert frame["run"].n_unique() == 18 and "pythia-160m-deduped" in set(frame["run"])
    assert set(frame["fewshot"]) == {0, 5}
    mmlu = frame.filter(pl.col("task") == "hendrycksTest-virology").row(0, named=True)
    assert (mmlu["benchmark"], mmlu["category"], mmlu["formulation"], mmlu["random_baseline"]) == (
        "mmlu",
        "GK",
        "CF",
        0.25,
    )


@pytest.mark.shared_data
def test_tokens_per_step(shared_data: Path) -> None:
    model = shared_data / "pythia" / "evals" / "pythia-v1" / "pythia-70m"
    frame, _ = read_lm_eval_harness(model, tokens_per_step=2_097_152)
    assert (frame["tokens"] == frame["step"] * 2_097_152).all()
    assert frame.filter(pl.col("step") == 143_000)["tokens"][0] == 299_892_736_000


def test_run_names_skip_shot_folders_and_can_be_given(tmp_path: Path) -> None:
    results = {"piqa": {"acc": 0.6, "acc_stderr": 0.01, "acc_norm": 0.62}}
    harness_file(tmp_path / "modelX" / "3-shot" / "x_step10.json", results, fewshot=3)
    harness_file(tmp_path / "modelY" / "x_step20.json", results)
    frame, _ = read_lm_eval_harness(tmp_path)
    assert frame.select("run", "step", "fewshot").unique().sort("run").rows() == [
        ("modelX", 10, 3),
        ("modelY", 20, 0),
    ]
    assert frame.filter(pl.col("metric") == "acc_norm")["stderr"].null_count() == 2  # no acc_norm_stderr
    named, _ = read_lm_eval_harness([tmp_path / "modelY" / "x_step20.json"], run="mine")
    assert set(named["run"]) == {"mine"}


def test_unknown_task_is_an_error_unless_skipped(tmp_path: Path) -> None:
    harness_file(tmp_path / "m" / "r_step1.json", {"mystery_task": {"acc": 0.3}, "piqa": {"acc": 0.5}})
    with pytest.raises(ScoreTableError) as caught:
        read_scores(tmp_path)
    message = str(caught.value)
    assert str(tmp_path) in message and "mystery_task" in message
    assert "task_info" in message and "skip_unknown=True" in message
    frame, report = read_scores(tmp_path, skip_unknown=True)
    assert set(frame["task"]) == {"piqa"}
    assert any("mystery_task" in note for note in report.notes)


def test_task_info_mapping_and_csv(tmp_path: Path) -> None:
    harness_file(tmp_path / "m" / "r_step1.json", {"mystery_task": {"acc": 0.3, "likelihood_difference": 4.0}})
    info = {"mystery_task": TaskInfo("myst", "yor", "NLU", "MCF", 0.2)}
    frame, report = read_lm_eval_harness(tmp_path, task_info=info)
    assert frame.select("benchmark", "language", "formulation", "random_baseline").row(0) == (
        "myst",
        "yor",
        "MCF",
        0.2,
    )
    assert any("likelihood_difference" in note for note in report.notes)
    csv = tmp_path / "info.csv"
    csv.write_text("task,benchmark,language,category,formulation,random_baseline\nmystery_task,b,hau,RES,CF,0.5\n")
    from_csv, _ = read_scores(tmp_path / "m", task_info=csv)
    assert from_csv.select("language", "category", "random_baseline").row(0) == ("hau", "RES", 0.5)


def test_bad_task_info_csv_is_named(tmp_path: Path) -> None:
    csv = tmp_path / "info.csv"
    csv.write_text("task,benchmark\nx,y\n")
    harness_file(tmp_path / "m" / "r_step1.json", {"piqa": {"acc": 0.5}})
    with pytest.raises(ScoreTableError, match=r"info.csv: task-info CSV lacks column\(s\) language"):
        read_lm_eval_harness(tmp_path / "m", task_info=csv)


def test_corrupt_json_names_the_file(tmp_path: Path) -> None:
    harness_file(tmp_path / "m" / "ok_step1.json", {"piqa": {"acc": 0.5}})
    bad = tmp_path / "m" / "bad_step2.json"
    bad.write_text('{"results": {"piqa": ')
    with pytest.raises(ScoreTableError, match=r"bad_step2\.json: not a readable JSON file"):
        read_scores(tmp_path)


def test_json_without_results_or_step_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a_step1.json").write_text('{"config": {}}')
    with pytest.raises(ScoreTableError, match=r"a_step1\.json: not an lm-evaluation-harness result file"):
        read_lm_eval_harness(tmp_path / "a_step1.json")
    nostep = harness_file(tmp_path / "final.json", {"piqa": {"acc": 0.5}})
    with pytest.raises(ScoreTableError, match=r"final\.json: no `_step<N>` in the file name"):
        read_lm_eval_harness(nostep)


def test_null_metric_value_is_a_nan_score_and_dropped(tmp_path: Path) -> None:
    harness_file(tmp_path / "m" / "r_step1.json", {"piqa": {"acc": None, "acc_norm": 0.5, "acc_norm_stderr": "N/A"}})
    frame, report = read_lm_eval_harness(tmp_path)
    assert frame.select("metric", "stderr").rows() == [("acc_norm", None)]
    assert report.dropped_nan == 1 and "metric=acc" in report.dropped_nan_examples[0]


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScoreTableError, match="no lm-evaluation-harness"):
        read_scores(tmp_path)
