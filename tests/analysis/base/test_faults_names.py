"""Fault tests of names (issue 25, parts 1 and 2): names are data, and different models never merge.

- Control characters (C0, C1, NUL, newline, tab) in any name are refused where the name enters, with an error
  naming the column or source, the character and the fix: a newline would split a suite file's line or a report's
  ranking row, a NUL gave a phantom run in ranking.csv.
- The sweep store records each run's original name beside its folder.
- `collect` tells checkpoints apart by the model they come from (its folder, or hub repository and revision), not by
  the tail of its path: two models whose paths both end in `mix-a/seed-1/checkpoint-2` become two runs named by what
  tells them apart, and only a re-run of the same model supersedes an older result.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.base.names import BadNameError, check_name
from analysis.scores.discover import Checkpoint, DiscoveryError, discover
from analysis.scores.read import read_scores
from analysis.scores.schema import ScoreTableError
from analysis.scores.validate import validate
from finetasks_afr.cli import app
from finetasks_afr.sweep.collect import CollectError, collect
from finetasks_afr.sweep.store import PART_MANIFEST, SweepStore
from finetasks_afr.sweep.task_list import TaskListError, parse_tasks
from tests.sweep.test_sweep import INFO_CSV, lighteval_results, make_checkpoint, write_results

# --------------------------------------------------------------------------------------------------
# 1. Control characters


@pytest.mark.parametrize(
    ("name", "shown"),
    [("mix\nz", "U+000A"), ("mix\x00", "U+0000"), ("a\tb", "U+0009"), ("x\x85y", "U+0085"), ("\x1bq", "U+001B")],
)
def test_check_name_refuses_control_characters_and_names_them(name: str, shown: str) -> None:
    with pytest.raises(BadNameError, match=re.escape(shown)) as raised:
        check_name(name, "run name", "--runs")
    assert "run name" in str(raised.value) and "--runs" in str(raised.value) and "fix" in str(raised.value)


@pytest.mark.parametrize("name", ["mix-α", "ìsọ̀rí", "a b", "mix-a/seed 1", "☃", "\u200dzwj"])
def test_check_name_keeps_printable_names_of_any_script(name: str) -> None:
    assert check_name(name, "run name", "x") == unicodedata.normalize("NFC", name)


def _table(**overrides: object) -> pl.DataFrame:
    row = {
        "run": "mix-a", "seed": 1, "step": 100, "tokens": 1000, "task": "toy_yor_cf", "benchmark": "toy",
        "language": "yor", "category": "NLU", "formulation": "CF", "fewshot": 0, "metric": "acc", "score": 0.5,
        "stderr": 0.01, "random_baseline": 0.25,
    }  # fmt: skip
    return pl.DataFrame([{**row, **overrides}])


@pytest.mark.parametrize(
    ("column", "value"),
    [("task", "toy\nyor_cf"), ("run", "mix\na"), ("run", "mix\x00a"), ("language", "yo\tr"), ("metric", "acc\x7f")],
)
def test_score_table_refuses_control_characters_naming_column_and_character(column: str, value: str) -> None:
    with pytest.raises(ScoreTableError, match=column) as raised:
        validate(_table(**{column: value}), source="scores.csv")
    message = str(raised.value)
    assert "control character" in message and "scores.csv" in message and "U+00" in message, message


def test_select_on_a_table_with_a_newline_in_a_run_is_a_named_error_not_a_split_row(tmp_path: Path) -> None:
    table = tmp_path / "scores.parquet"
    _table(run="mix\nz").write_parquet(table)
    result = CliRunner().invoke(app, ["select", str(table), "--out", str(tmp_path / "sel")])
    assert result.exit_code == 2, result.output
    assert "control character" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "sel").exists()


def test_a_nul_in_a_csv_run_name_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "scores.csv"
    _table(run="mix-a").write_csv(table)
    table.write_bytes(table.read_bytes().replace(b"mix-a", b"mix\x00a"))
    with pytest.raises(ScoreTableError, match="U\\+0000"):
        read_scores(table)


def test_sweep_run_names_with_control_characters_are_refused(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "r" / "checkpoint-1")
    with pytest.raises(DiscoveryError, match="U\\+0009"):
        discover([f"mix\tz={tmp_path / 'r'}"])
    odd = tmp_path / "odd\nrun"
    make_checkpoint(odd / "checkpoint-1")
    with pytest.raises(DiscoveryError, match="U\\+000A"):
        discover([str(odd)])


def test_task_list_with_a_control_character_is_refused(tmp_path: Path) -> None:
    listing = tmp_path / "tasks.txt"
    listing.write_text("good_cf|0\nbad\x0b_cf|0\n", encoding="utf-8")
    with pytest.raises(TaskListError, match="U\\+000B"):
        parse_tasks(listing)
    with pytest.raises(TaskListError, match="U\\+0007"):
        parse_tasks("a|0,b\x07|0")


def test_task_info_csv_with_a_control_character_is_refused(tmp_path: Path) -> None:
    from analysis.scores.task_info import read_task_info

    path = tmp_path / "info.csv"
    path.write_text(INFO_CSV.replace("toy_cf", "toy\x01cf"), encoding="utf-8")
    with pytest.raises(ScoreTableError, match="U\\+0001"):
        read_task_info(path)


# --------------------------------------------------------------------------------------------------
# 1b. The sweep store records original names


def test_the_store_records_each_runs_original_name_beside_its_folder(tmp_path: Path) -> None:
    store = SweepStore(tmp_path / "sweep")
    for run in ("mix-α", "mix-β"):
        checkpoint = Checkpoint(run, 1, 5, None, str(tmp_path / run / "checkpoint-5"))
        staged = tmp_path / f"staged-{run}"
        staged.mkdir()
        (staged / PART_MANIFEST).write_text(json.dumps({"checkpoint": checkpoint.to_json(), "tasks": ["t|0"]}))
        store.commit(staged, checkpoint, "part-1")
    folders = sorted(p for p in (tmp_path / "sweep" / "results").iterdir() if p.is_dir())
    assert len(folders) == 2
    recorded = {json.loads((folder / "run.json").read_text(encoding="utf-8"))["run"] for folder in folders}
    assert recorded == {"mix-α", "mix-β"}


# --------------------------------------------------------------------------------------------------
# 2. Different models never merge


def _info(tmp_path: Path) -> Path:
    info = tmp_path / "info.csv"
    info.write_text(INFO_CSV)
    return info


def _results_of(tmp_path: Path, models: dict[str, float], stamp: str = "2026-01-01T00") -> Path:
    out = tmp_path / "lighteval-out"
    for index, (model, score) in enumerate(models.items()):
        write_results(out / f"m{index}", stamp, lighteval_results(model, {"acc": score}))
    return out


def test_two_models_ending_in_the_same_path_become_two_runs_named_by_what_differs(tmp_path: Path) -> None:
    models = {
        str(make_checkpoint(tmp_path / "llama-1b" / "mix-a" / "seed-1" / "checkpoint-2")): 0.31,
        str(make_checkpoint(tmp_path / "llama-1b" / "mix-a" / "seed-2" / "checkpoint-2")): 0.32,
        str(make_checkpoint(tmp_path / "gemma-2b" / "mix-a" / "seed-1" / "checkpoint-2")): 0.71,
    }
    frame, report = collect([_results_of(tmp_path, models)], task_info=_info(tmp_path))
    rows = sorted(frame.select("run", "seed", "score").rows())
    assert rows == [("gemma-2b/mix-a", 1, 0.71), ("llama-1b/mix-a", 1, 0.31), ("llama-1b/mix-a", 2, 0.32)]
    assert report.superseded == []
    note = next(n for n in report.notes if "different models" in n)
    assert "gemma-2b/mix-a" in note and "llama-1b/mix-a" in note and str(tmp_path / "gemma-2b") in note


def test_two_hub_repositories_with_the_same_name_become_two_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_results(out / "a", "t", lighteval_results("org-one/pythia-160m", {"acc": 0.4}, revision="step3000"))
    write_results(out / "b", "t", lighteval_results("org-two/pythia-160m", {"acc": 0.6}, revision="step3000"))
    frame, report = collect([out], task_info=_info(tmp_path), tokens_per_step=2)
    assert sorted(frame.select("run", "score").rows()) == [("org-one/pythia-160m", 0.4), ("org-two/pythia-160m", 0.6)]
    assert report.superseded == []


def test_a_rerun_of_the_same_model_still_supersedes(tmp_path: Path) -> None:
    model = str(make_checkpoint(tmp_path / "llama-1b" / "mix-a" / "seed-1" / "checkpoint-2"))
    out = tmp_path / "out"
    write_results(out / "first", "2026-01-01T00", lighteval_results(model, {"acc": 0.1}))
    write_results(out / "second", "2026-02-01T00", lighteval_results(model, {"acc": 0.9}))
    frame, report = collect([out], task_info=_info(tmp_path))
    assert frame.select("run", "score").rows() == [("mix-a", 0.9)]
    assert len(report.superseded) == 1


def test_seeds_of_one_run_kept_in_two_places_stay_one_run(tmp_path: Path) -> None:
    models = {
        str(make_checkpoint(tmp_path / "disk-1" / "mix-a" / "seed-1" / "checkpoint-2")): 0.3,
        str(make_checkpoint(tmp_path / "disk-2" / "mix-a" / "seed-2" / "checkpoint-2")): 0.4,
    }
    frame, report = collect([_results_of(tmp_path, models)], task_info=_info(tmp_path))
    assert sorted(frame.select("run", "seed").rows()) == [("mix-a", 1), ("mix-a", 2)]
    assert not any("different models" in n for n in report.notes)


def test_models_that_cannot_be_told_apart_by_one_folder_are_a_named_error(tmp_path: Path) -> None:
    models = {
        str(make_checkpoint(tmp_path / "x" / "mix-a" / "seed-1" / "checkpoint-2")): 0.3,
        str(make_checkpoint(tmp_path / "y" / "mix-a" / "seed-1" / "checkpoint-2")): 0.4,
        str(make_checkpoint(tmp_path / "y" / "mix-a-seed1" / "checkpoint-2")): 0.5,
    }
    with pytest.raises(CollectError, match="mix-a") as raised:
        collect([_results_of(tmp_path, models)], task_info=_info(tmp_path))
    message = str(raised.value)
    assert str(tmp_path / "y" / "mix-a-seed1") in message and "fix:" in message.lower()


def _sweep_part(root: Path, checkpoint: Checkpoint, score: float) -> None:
    part = root / "results" / checkpoint.key / "part-1"
    part.mkdir(parents=True)
    info = {"benchmark": "toy", "language": "yor", "category": "NLU", "formulation": "CF", "random_baseline": 0.25}
    manifest = {"checkpoint": checkpoint.to_json(), "tasks": ["toy_cf|0"], "task_info": {"toy_cf": info}}
    (part / PART_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    (part / "results.json").write_text(json.dumps({"results": {"toy_cf|0": {"acc": score}}}), encoding="utf-8")


def test_a_sweeps_named_run_kept_in_two_folders_stays_one_run(tmp_path: Path) -> None:
    """`mix-a:1=/fast/ckpts` and `mix-a:1=/archive/ckpts` (disjoint steps): the sweep named the run; one run."""
    for folder, step in (("fast", 2), ("archive", 1)):
        path = str(make_checkpoint(tmp_path / folder / "ckpts" / f"checkpoint-{step}"))
        _sweep_part(tmp_path / "sweep", Checkpoint("mix-a", 1, step, None, path), 0.1 * step)
    frame, report = collect([tmp_path / "sweep"])
    assert sorted(frame.select("run", "step").rows()) == [("mix-a", 1), ("mix-a", 2)]
    assert not any("different models" in n for n in report.notes)


def test_two_sweeps_naming_different_models_alike_become_two_runs(tmp_path: Path) -> None:
    for model, score in (("llama-1b", 0.3), ("gemma-2b", 0.7)):
        path = str(make_checkpoint(tmp_path / model / "ckpts" / "checkpoint-2"))
        _sweep_part(tmp_path / f"sweep-{model}", Checkpoint("mix-a", 1, 2, None, path), score)
    frame, _ = collect([tmp_path / "sweep-llama-1b", tmp_path / "sweep-gemma-2b"])
    assert sorted(frame.select("run", "score").rows()) == [("gemma-2b/mix-a", 0.7), ("llama-1b/mix-a", 0.3)]


# --------------------------------------------------------------------------------------------------
# 3. One name in two Unicode forms is one name (issue 41, cases 2 and 3); look-alikes are said

COMPOSED, DECOMPOSED = "mix-\u00e9", "mix-e\u0301"  # what Linux and macOS file names give for "mix-é"


def test_a_table_with_one_run_name_in_two_forms_pools_them_and_says_so() -> None:
    table = pl.concat([_table(run=COMPOSED, seed=1), _table(run=DECOMPOSED, seed=2), _table(run="mix-b")])
    frame, report = validate(table, source="scores.csv")
    assert sorted(frame["run"].unique()) == ["mix-b", COMPOSED]
    assert sorted(frame.filter(pl.col("run") == COMPOSED)["seed"]) == [1, 2]
    assert "Unicode NFC" in report.summary() and "mix-e\\u0301" in report.summary()


def test_the_same_key_in_two_forms_is_a_duplicate_that_says_why() -> None:
    with pytest.raises(ScoreTableError, match="Unicode NFC") as raised:
        validate(pl.concat([_table(run=COMPOSED), _table(run=DECOMPOSED)]), source="scores.csv")
    assert "repeat the key" in str(raised.value)


def test_aggregate_ranks_one_run_for_a_name_in_two_forms(tmp_path: Path) -> None:
    rows = [
        _table(run=run, seed=seed, step=step, tokens=step * 10, score=0.3 + step / 1000 + bonus)
        for run, bonus in ((COMPOSED, 0.05), (DECOMPOSED, 0.05), ("mix-b", 0.0))
        for seed in (1, 2) for step in (100, 200, 300, 400)
    ]  # fmt: skip
    table = pl.concat(rows)
    table = table.filter(~((pl.col("run") == DECOMPOSED) & (pl.col("seed") == 1)))
    table = table.filter(~((pl.col("run") == COMPOSED) & (pl.col("seed") == 2)))
    path = tmp_path / "scores.parquet"
    table.write_parquet(path)
    decisions = tmp_path / "decisions.csv"
    decisions.write_text("task,fewshot,metric,kept\ntoy_yor_cf,0,acc,true\n", encoding="utf-8")
    out = tmp_path / "aggregate"
    result = CliRunner().invoke(app, ["aggregate", str(path), "--out", str(out), "--decisions", str(decisions)])
    assert result.exit_code == 0, result.output
    ranking = pl.read_csv(out / "ranking.csv")
    assert sorted(ranking["run"]) == ["mix-b", COMPOSED]


def test_distinct_names_that_print_alike_are_noted() -> None:
    table = pl.concat([_table(run="mix-a"), _table(run="mix-a\u200b"), _table(run="ｍix-a")])
    frame, report = validate(table, source="scores.csv")
    assert frame["run"].n_unique() == 3  # distinct names stay distinct
    assert "print alike" in report.summary() and "mix-a\\u200b" in report.summary()


def test_run_folders_named_alike_in_two_forms_are_one_run(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "runs" / COMPOSED / "seed-1" / "checkpoint-1")
    make_checkpoint(tmp_path / "runs" / DECOMPOSED / "seed-2" / "checkpoint-1")
    found = discover([str(tmp_path / "runs")]).checkpoints
    assert [(c.run, c.seed) for c in found] == [(COMPOSED, 1), (COMPOSED, 2)]
    make_checkpoint(tmp_path / "runs" / DECOMPOSED / "seed-1" / "checkpoint-1")
    with pytest.raises(DiscoveryError, match="two Unicode forms"):
        discover([str(tmp_path / "runs")])


def test_task_list_entries_are_read_in_nfc(tmp_path: Path) -> None:
    assert parse_tasks("belebele_e\u0301|0") == ["belebele_\u00e9|0"]


def test_a_run_given_twice_through_a_symlink_says_so(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "runs" / "mix-a" / "seed-1" / "checkpoint-1")
    (tmp_path / "runs" / "mix-b").symlink_to(tmp_path / "runs" / "mix-a")  # a run folder linked to another
    with pytest.raises(DiscoveryError, match="given twice") as raised:
        discover([str(tmp_path / "runs")])
    assert "symbolic link" in str(raised.value)


def test_a_run_name_with_a_path_separator_is_a_bad_name_not_a_missing_directory(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "runs" / "checkpoint-1")
    with pytest.raises(DiscoveryError, match=r"the run name '\.\./\.\./evil' holds a path separator") as raised:
        discover([f"../../evil={tmp_path / 'runs'}"])
    assert "not a directory" not in str(raised.value)
    assert [c.run for c in discover([f"mix-a={tmp_path / 'runs'}"]).checkpoints] == ["mix-a"]


def test_a_run_whose_every_score_is_nan_is_named_not_only_counted() -> None:
    table = pl.concat([_table(run="mix-a"), _table(run="mix-c", score=float("nan")), _table(run="mix-b")])
    frame, report = validate(table, source="scores.csv")
    assert sorted(frame["run"]) == ["mix-a", "mix-b"]
    assert "1 run(s) have no score that is a number ('mix-c'" in report.summary()
    partly = pl.concat([_table(run="mix-a"), _table(run="mix-a", step=200, score=float("nan"))])
    assert "no score that is a number" not in validate(partly, source="t")[1].summary()
