"""lm-evaluation-harness 0.4 results folders: `read_scores`, `collect`, `finetasks-afr select`/`collect`, and
`make select-tasks SCORES=DIR` read them; AfroBench's task names get their task info by rule.

The fixture (tests/fixtures/lm_eval_04/leaderboard, see its README.md) is lm-eval 0.4's output schema with
invented numbers; expectations are recomputed here from its JSON by a plain loop, not copied from the reader.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.scores.lm_eval import (
    FEWSHOT_IN_CONTEXT,
    FILTER_PREFERENCE,
    LmEvalError,
    afrobench_task_info,
    read_lm_eval_04,
    read_results_file,
)
from analysis.scores.read import read_scores
from analysis.scores.schema import ScoreTableError
from analysis.scores.task_info import TaskInfo
from analysis.scores.validate import LoadReport
from finetasks_afr.cli import app
from finetasks_afr.sweep.collect import CollectError, collect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lm_eval_04"
LEADERBOARD = FIXTURES / "leaderboard"
TASK_NAMES = FIXTURES / "afrobench_task_names.txt"
REPO = Path(__file__).resolve().parents[3]
Loaded = tuple[pl.DataFrame, LoadReport]

# folder of lm_eval/tasks -> the benchmark names its tasks may get (translate-test variants are their own)
FOLDER_BENCHMARKS = {
    "afrimgsm": {"afrimgsm", "afrimgsm_translate"},
    "afrimmlu": {"afrimmlu", "afrimmlu_translate"},
    "afrixnli": {"afrixnli", "afrixnli_translate"},
    "afrobench/adr": {"afridiacritics"},
    "afrobench/afriqa": {"afriqa"},
    "afrobench/afrisenti": {"afrisenti"},
    "afrobench/belebele": {"belebele"},
    "afrobench/flores": {"flores_mt"},
    "afrobench/injongointent": {"injongointent"},
    "afrobench/mafand": {"mafand"},
    "afrobench/masakhaner": {"masakhaner"},
    "afrobench/masakhanews": {"masakhanews"},
    "afrobench/masakhapos": {"masakhapos"},
    "afrobench/naijarc": {"naijarc"},
    "afrobench/nollysenti": {"nollysenti"},
    "afrobench/ntrex": {"ntrex"},
    "afrobench/openai_mmlu": {"openai_mmmlu"},
    "afrobench/salt": {"salt"},
    "afrobench/sib": {"sib200"},
    "afrobench/uhura-arc-easy": {"uhura_arc_easy"},
    "afrobench/xlsum": {"xlsum"},
}


def task_names() -> dict[str, list[str]]:
    """folder -> task names, from the committed list (read from lm-eval at the commit its header names)."""
    names: dict[str, list[str]] = {}
    folder = ""
    for line in TASK_NAMES.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            folder = line[3:]
            names[folder] = []
        elif line and not line.startswith("#"):
            names[folder].append(line)
    return names


# --------------------------------------------------------------------------------------------------
# AfroBench task names


def test_every_afrobench_task_name_in_lm_eval_is_recognised() -> None:
    names = task_names()
    assert set(names) == set(FOLDER_BENCHMARKS) and sum(map(len, names.values())) == 2601
    for folder, tasks in names.items():
        for task in tasks:
            info = afrobench_task_info(task)
            assert info is not None, task
            assert info.benchmark in FOLDER_BENCHMARKS[folder], (task, info.benchmark)
            assert len(info.language) == 3 and info.language.islower(), (task, info.language)
            generative = info.formulation == "GEN"
            assert (info.category == "GEN") == generative and (info.random_baseline == 0) == generative, task


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("afrimmlu_direct_orm_prompt_1", ("afrimmlu", "orm", "GK", "CF", 0.25)),
        ("afrimmlu_translate_swa_prompt_3", ("afrimmlu_translate", "swa", "GK", "CF", 0.25)),
        ("afrixnli_en_direct_amh", ("afrixnli", "amh", "NLU", "CF", 1 / 3)),
        ("afrimgsm_cot_yor_prompt_2", ("afrimgsm", "yor", "GEN", "GEN", 0.0)),
        ("belebele_hau_prompt_2", ("belebele", "hau", "RC", "MCF", 0.25)),
        ("uhura-arc-easy_sw_prompt_1", ("uhura_arc_easy", "swa", "RES", "MCF", 0.25)),
        ("sib_orm_prompt_4", ("sib200", "orm", "NLU", "CF", 1 / 7)),
        ("injongointent_zul_prompt_5", ("injongointent", "zul", "NLU", "CF", 1 / 40)),
        ("nollysenti_pcm_prompt_1", ("nollysenti", "pcm", "NLU", "CF", 0.5)),
        ("openai_mmlu_swa_prompt_1", ("openai_mmmlu", "swa", "GK", "MCF", 0.25)),
        ("flores_gaz_Latn-eng_Latn_prompt_1", ("flores_mt", "orm", "GEN", "GEN", 0.0)),
        ("flores_eng_Latn-swh_Latn_prompt_2", ("flores_mt", "swa", "GEN", "GEN", 0.0)),
        ("mafand_en-amh_prompt_1", ("mafand", "amh", "GEN", "GEN", 0.0)),
        ("xlsum_pidgin_prompt_1", ("xlsum", "pcm", "GEN", "GEN", 0.0)),
        ("masakhaner_sw_prompt_3", ("masakhaner", "swa", "GEN", "GEN", 0.0)),
        # our own suite's names and near misses are not guessed
        ("belebele_hau_mcf", None),
        ("afrimmlu_yor_cf", None),
        ("sib200_hau_cf", None),
        ("sib_zz_prompt_1", None),
        ("afrimmlu_bogus_hau_prompt_1", None),
    ],
)
def test_afrobench_rules(task: str, expected: tuple | None) -> None:
    info = afrobench_task_info(task)
    if expected is None:
        assert info is None, info
        return
    assert info is not None
    *fields, baseline = expected
    assert [info.benchmark, info.language, info.category, info.formulation] == fields
    assert math.isclose(info.random_baseline, baseline)


# --------------------------------------------------------------------------------------------------
# The fixture, recomputed independently


def fixture_files() -> list[tuple[Path, dict[str, Any]]]:
    return [(path, json.loads(path.read_text())) for path in sorted(LEADERBOARD.rglob("results_*.json"))]


def identity(data: dict[str, Any]) -> tuple[str, int | None, int]:
    """(run, seed, step) as the fixture's README says: revision=step<N> of a hub model, or seed-<s>/checkpoint-<N>."""
    args = data["config"]["model_args"]
    if isinstance(args, str):
        pairs = dict(item.split("=", 1) for item in args.split(","))
        return pairs["pretrained"].split("/")[-1], None, int(pairs["revision"].removeprefix("step"))
    parts = args["pretrained"].split("/")
    return parts[-3], int(parts[-2].removeprefix("seed-")), int(parts[-1].removeprefix("checkpoint-"))


def expected_scores() -> dict[tuple, tuple[float, float | None]]:
    """(run, seed, step, task, fewshot, metric) -> (score, stderr): newest file per key, groups and rougeL out,
    the first filter of FILTER_PREFERENCE present."""
    out: dict[tuple, tuple[float, float | None]] = {}
    for _, data in sorted(fixture_files(), key=lambda item: item[0].name):  # names carry the datetime
        run, seed, step = identity(data)
        for task, entry in data["results"].items():
            if data["group_subtasks"].get(task):
                continue
            metrics = {key.split(",")[0] for key in entry if "," in key and "_stderr" not in key}
            for metric in metrics - {"rougeL"}:
                name = next(f for f in FILTER_PREFERENCE if f"{metric},{f}" in entry)
                stderr = entry[f"{metric}_stderr,{name}"]
                key = (run, seed, step, task, data["n-shot"][task], metric)
                out[key] = (entry[f"{metric},{name}"], None if stderr == "N/A" else stderr)
    return out


@pytest.fixture(scope="module")
def leaderboard() -> Loaded:
    return read_scores(LEADERBOARD)


def test_the_folder_reads_into_the_expected_rows(leaderboard: Loaded) -> None:
    frame, report = leaderboard
    expected = expected_scores()
    got = {
        (r["run"], r["seed"], r["step"], r["task"], r["fewshot"], r["metric"]): (r["score"], r["stderr"])
        for r in frame.iter_rows(named=True)
    }
    assert got == expected and frame.height == len(expected)
    assert {(r, s) for r, s, *_ in got} == {("afro-160m", None), ("mix-b", 2)}
    assert sorted({k[2] for k in got if k[0] == "mix-b"}) == [500, 1000, 1500, 2000]
    assert "sib" not in frame["task"].to_list() and "rougeL" not in frame["metric"].to_list()
    summary = report.summary()
    assert "group aggregate" in summary and "flexible-extract" in summary and "superseded" in summary
    assert "rougeL" in summary


def test_a_rerun_keeps_the_newest_file(leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    rerun = json.loads((LEADERBOARD / "afro-lab__afro-160m" / "results_2026-03-05T09-30-00.000000.json").read_text())
    older = json.loads((LEADERBOARD / "afro-lab__afro-160m" / "results_2026-03-04T10-00-00.000000.json").read_text())
    row = frame.filter((pl.col("step") == 4000) & (pl.col("task") == "sib_hau_prompt_1") & (pl.col("metric") == "acc"))
    assert row["score"].item() == rerun["results"]["sib_hau_prompt_1"]["acc,none"]
    assert row["score"].item() != older["results"]["sib_hau_prompt_1"]["acc,none"]


def test_task_info_columns_come_from_the_afrobench_rules(leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    for row in (
        frame.select("task", "benchmark", "language", "category", "formulation", "random_baseline").unique().rows()
    ):
        info = afrobench_task_info(row[0])
        assert info is not None and row[1:] == (info.benchmark, info.language, info.category, info.formulation,
                                                info.random_baseline)  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Same table as the equivalent lighteval results, and through both entry points


def lighteval_equivalent(out: Path) -> Path:
    """One lighteval results file per lm-eval file, with the same checkpoint, numbers and stamp order."""
    for path, data in fixture_files():
        run, seed, step = identity(data)
        model = f"/ckpt/runs/{run}/seed-{seed}/checkpoint-{step}" if seed is not None else "afro-lab/afro-160m"
        results: dict[str, dict[str, float]] = {}
        for task, entry in data["results"].items():
            if data["group_subtasks"].get(task):
                continue
            metrics: dict[str, float] = {}
            for key, value in entry.items():
                metric, _, name = key.partition(",")
                base = metric.removesuffix("_stderr")
                if not name or base == "rougeL" or name != next(f for f in FILTER_PREFERENCE if f"{base},{f}" in entry):
                    continue
                if value != "N/A":
                    metrics[metric] = value
            if metrics:  # xlsum reports rougeL only, which the analysis does not know
                results[f"{task}|{data['n-shot'][task]}"] = metrics
        payload = {
            "config_general": {"model_name": model, "model_config": {"model_name": model, "revision": f"step{step}"}},
            "results": {**results, "all": {}},
            "versions": {},
        }
        folder = out / "results" / model.strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"results_{path.stem.removeprefix('results_')}.json").write_text(json.dumps(payload))
    return out


def test_same_table_as_the_equivalent_lighteval_results(tmp_path: Path, leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    info = {task: afrobench_task_info(task) for task in frame["task"].unique()}
    csv = tmp_path / "info.csv"
    csv.write_text("task,benchmark,language,category,formulation,random_baseline\n" + "".join(
        f"{t},{i.benchmark},{i.language},{i.category},{i.formulation},{i.random_baseline!r}\n"
        for t, i in info.items() if i is not None))  # fmt: skip
    lighteval, report = collect([lighteval_equivalent(tmp_path / "lighteval")], task_info=csv)
    assert len(report.superseded) == 2  # the re-run of two sib tasks at step 4000
    assert lighteval.equals(frame)


def test_collect_reads_the_folder_like_read_scores(leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    collected, report = collect([LEADERBOARD])
    assert collected.equals(frame)
    assert report.files == 9 and len(report.superseded) == 2
    assert any("group aggregate" in note for note in report.notes)


def test_task_info_csv_overrides_and_unknown_tasks_name_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "out" / "afro-lab__afro-160m"
    folder.mkdir(parents=True)
    data = json.loads(next(LEADERBOARD.glob("afro-lab__afro-160m/results_*.json")).read_text())
    data["results"]["mystery_task"] = {"alias": "mystery_task", "acc,none": 0.5, "acc_stderr,none": 0.01}
    data["n-shot"]["mystery_task"] = 0
    (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps(data))
    with pytest.raises(ScoreTableError, match=r"mystery_task.*--task-info.*--skip-unknown"):
        read_scores(tmp_path / "out")
    with pytest.raises(CollectError, match=r"mystery_task.*--task-info"):
        collect([tmp_path / "out"])
    frame, report = read_scores(tmp_path / "out", skip_unknown=True)
    assert "mystery_task" not in frame["task"].to_list() and "mystery_task" in report.summary()
    csv = tmp_path / "info.csv"
    csv.write_text("task,benchmark,language,category,formulation,random_baseline\n"
                   "mystery_task,mystery,hau,RC,MCF,0.25\nsib_hau_prompt_1,sib_custom,hau,NLU,CF,0.2\n")  # fmt: skip
    for table in (read_scores(tmp_path / "out", task_info=csv)[0], collect([tmp_path / "out"], task_info=csv)[0]):
        assert table.filter(pl.col("task") == "mystery_task")["benchmark"].unique().to_list() == ["mystery"]
        assert table.filter(pl.col("task") == "sib_hau_prompt_1")["benchmark"].unique().to_list() == ["sib_custom"]
        assert table.filter(pl.col("task") == "sib_yor_prompt_1")["benchmark"].unique().to_list() == ["sib200"]


def test_the_step_may_come_from_a_checkpoint_folder_above_the_results(tmp_path: Path) -> None:
    data = json.loads(next(LEADERBOARD.glob("afro-lab__afro-160m/results_*.json")).read_text())
    data["config"]["model_args"] = "pretrained=final-model,dtype=bfloat16"
    data["config"].pop("model_revision", None)
    folder = tmp_path / "runs" / "mix-c" / "seed-3" / "checkpoint-300" / "lm_eval" / "final-model"
    folder.mkdir(parents=True)
    (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps(data))
    frame, _ = read_scores(folder.parent)
    assert frame.select("run", "seed", "step").unique().rows() == [("mix-c", 3, 300)]


# --------------------------------------------------------------------------------------------------
# Malformed files


def broken(tmp_path: Path, change: Callable[[dict], None]) -> Path:
    data = json.loads(next(LEADERBOARD.glob("afro-lab__afro-160m/results_*.json")).read_text())
    change(data)
    folder = tmp_path / "out" / "afro-lab__afro-160m"
    folder.mkdir(parents=True)
    path = folder / "results_2026-01-01T00-00-00.json"
    path.write_text(json.dumps(data))
    return path


def _no_results(data: dict) -> None:
    data["results"] = {}


def _text_score(data: dict) -> None:
    data["results"]["belebele_hau_prompt_1"]["acc,none"] = "high"


def _no_step(data: dict) -> None:
    data["config"]["model_args"] = "pretrained=afro-lab/afro-160m,dtype=bfloat16"


def _no_fewshot(data: dict) -> None:
    del data["n-shot"]["belebele_hau_prompt_1"]  # a config without num_fewshot would be lm-eval's default, 0
    del data["configs"]["belebele_hau_prompt_1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_no_results, "no 'results' object"),
        (_text_score, r"belebele_hau_prompt_1\.acc,none is 'high', not a number"),
        (_no_step, r"gives no step.*revision=step<N>"),
        (_no_fewshot, "belebele_hau_prompt_1' has no few-shot count"),
    ],
)
def test_malformed_files_are_named_errors(tmp_path: Path, change: Callable[[dict], None], message: str) -> None:
    path = broken(tmp_path, change)
    with pytest.raises(LmEvalError, match=message) as error:
        read_lm_eval_04(tmp_path / "out")
    assert str(path) in str(error.value)
    with pytest.raises(CollectError, match=message) as collected:
        collect([tmp_path / "out"])
    assert str(path) in str(collected.value) and "--skip-bad" in str(collected.value)


def test_a_json_file_that_is_not_lm_eval_04_still_goes_to_the_v0_reader(tmp_path: Path) -> None:
    v0 = tmp_path / "pythia" / "zero-shot" / "model_step100.json"
    v0.parent.mkdir(parents=True)
    v0.write_text(json.dumps({"results": {"piqa": {"acc": 0.6, "acc_stderr": 0.01}}, "versions": {},
                              "config": {"num_fewshot": 0}}))  # fmt: skip
    frame, report = read_scores(tmp_path / "pythia")
    assert frame.select("run", "step", "task").rows() == [("pythia", 100, "piqa")]
    assert "0.4" not in report.summary()


# --------------------------------------------------------------------------------------------------
# Command line and Makefile


def test_select_cli_on_the_folder(tmp_path: Path, leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    out = tmp_path / "selection"
    result = CliRunner().invoke(app, ["select", str(LEADERBOARD), "--out", str(out), "--no-figures"])
    assert result.exit_code == 0, result.output
    assert "lm-evaluation-harness 0.4" in result.output
    decisions = pl.read_csv(out / "decisions.csv")
    assert set(decisions["task"]) == set(frame["task"])
    assert set(decisions["language"]) == {"hau", "yor", "swa"}


def test_scores_under_limit_are_flagged_in_the_table_select_decisions_and_report(tmp_path: Path) -> None:
    folder = tmp_path / "leaderboard"
    shutil.copytree(LEADERBOARD, folder)
    path = folder / "afro-lab__afro-160m" / "results_2026-03-05T09-30-00.000000.json"
    data = json.loads(path.read_text())
    data["config"]["limit"] = 50.0  # lm-eval records --limit as given; n-samples says what it cut
    data["n-samples"]["sib_hau_prompt_1"]["effective"] = 50
    path.write_text(json.dumps(data))
    frame, _ = read_scores(folder)
    sampled = frame.filter(pl.col("sampled_documents").is_not_null())
    assert sampled.select("run", "step", "task").unique().rows() == [("afro-160m", 4000, "sib_hau_prompt_1")]
    assert sampled.get_column("sampled_documents").unique().to_list() == [50]
    collected, _ = collect([folder])
    assert collected.sort(list(frame.columns[:6])).equals(frame.sort(list(frame.columns[:6])))
    out = tmp_path / "selection"
    result = CliRunner().invoke(app, ["select", str(folder), "--out", str(out), "--no-figures"])
    assert result.exit_code == 0, result.output
    assert "sampled scores: 1 task(s)" in result.output and "sib_hau_prompt_1 (50)" in result.output
    decisions = pl.read_csv(out / "decisions.csv")
    flagged = decisions.filter(pl.col("sampled_documents").is_not_null())
    assert flagged.get_column("task").unique().to_list() == ["sib_hau_prompt_1"]
    assert "sampled scores: 1 task(s)" in (out / "report.md").read_text()
    assert "sampled scores: 1 task(s)" in (out / "report.html").read_text()


def test_collect_cli_on_the_folder(tmp_path: Path, leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    target = tmp_path / "scores.parquet"
    result = CliRunner().invoke(app, ["collect", str(LEADERBOARD), "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(target).equals(frame)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_select_tasks_passes_the_folder_to_select(tmp_path: Path) -> None:
    """`make -n` prints the recipe without running it: the folder reaches `finetasks-afr select` unchanged."""
    out = tmp_path / "sel"
    shown = subprocess.run(
        ["make", "-n", "select-tasks", f"SCORES={LEADERBOARD}", f"OUT={out}"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"finetasks-afr select {LEADERBOARD} --out {out}" in shown


def test_task_info_mapping_is_accepted_by_the_python_api(leaderboard: Loaded) -> None:
    frame, _ = leaderboard
    info = {"afrimgsm_swa_prompt_1": TaskInfo("afrimgsm_lm_eval", "swa", "GEN", "GEN", 0.0)}
    table, _ = read_lm_eval_04(LEADERBOARD, task_info=info)
    assert table.filter(pl.col("task") == "afrimgsm_swa_prompt_1")["benchmark"].unique().to_list() == [
        "afrimgsm_lm_eval"
    ]
    assert table.drop("benchmark").equals(frame.drop("benchmark"))


def test_an_exported_task_s_few_shot_count_comes_from_its_metadata(tmp_path: Path) -> None:
    """`finetasks-afr export lm-eval` puts the examples in each context (lm-eval's n-shot says 0) and the count in
    the task's metadata: collect reads that, so an exported belebele_zul_mcf|5 comes back as |5, not |0."""
    path, data = fixture_files()[0]
    task = next(name for name in data["results"] if not data["group_subtasks"].get(name))
    data["n-shot"][task] = 0
    data["configs"].setdefault(task, {})["metadata"] = {"version": 1.0, FEWSHOT_IN_CONTEXT: 5}
    copy = tmp_path / path.name
    copy.write_text(json.dumps(data), encoding="utf-8")
    assert {fewshot for name, fewshot in read_results_file(copy).scores if name == task} == {5}
    for wrong in (True, -1, "5"):  # not a count: lm-eval's own n-shot stands
        data["configs"][task]["metadata"][FEWSHOT_IN_CONTEXT] = wrong
        copy.write_text(json.dumps(data), encoding="utf-8")
        assert {fewshot for name, fewshot in read_results_file(copy).scores if name == task} == {0}
