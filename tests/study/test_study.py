"""The micro-scale study's path (`finetasks_afr.study.run`): the CI slice end to end on the real corpus and the real
suite (one mix, one seed, two checkpoints, three tasks), its resumption, `publish`, the task list and the analysis
configuration. The study's own results are checked by tests/study/test_study_results.py once they are committed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

from analysis.config import load_config  # noqa: E402
from finetasks_afr.benchmarks.common import TASK_INFO  # noqa: E402
from finetasks_afr.study.design import (  # noqa: E402
    LANGUAGES,
    STUDY_FORMULATIONS,
    STUDY_LEFT_OUT_CATEGORIES,
    STUDY_PROMPTS,
    StudySizes,
    slice_sizes,
)
from finetasks_afr.study.folder import recorded_sizes  # noqa: E402
from finetasks_afr.study.run import (  # noqa: E402
    STUDY_CONFIG,
    prepare_mirror,
    publish,
    run_study,
    study_config,
    study_tasks,
)


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_mirror(shared_data, tmp_path_factory.mktemp("study"))


def test_a_published_study_is_reanalysed_with_its_own_sizes() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "study"
    round_1 = recorded_sizes(json.loads((docs / "round-1" / "study.json").read_text(encoding="utf-8")))
    assert (round_1.steps, round_1.checkpoints, round_1.lr_scheduler) == (300, 10, "constant_with_warmup")
    assert study_config(round_1).consistency.min_tokens == 614_400  # half of its 1,228,800 tokens
    current = recorded_sizes(json.loads((docs / "study.json").read_text(encoding="utf-8")))
    assert current == StudySizes()


def test_the_config_measures_consistency_over_the_second_half_of_training() -> None:
    sizes = StudySizes()
    assert load_config(STUDY_CONFIG).consistency.min_tokens == sizes.steps * sizes.batch_size * sizes.seq_len // 2
    small = slice_sizes()
    assert study_config(small).consistency.min_tokens == small.steps * small.batch_size * small.seq_len // 2


@pytest.mark.slow
def test_the_study_evaluates_the_designed_formulations_of_its_languages(mirror: Path) -> None:
    tasks = study_tasks(mirror, StudySizes())
    assert len(tasks) == len(set(tasks))
    assert {TASK_INFO[task].language for task in tasks} == set(LANGUAGES)
    assert {TASK_INFO[task].formulation for task in tasks} == set(STUDY_FORMULATIONS)
    assert {TASK_INFO[task].prompt for task in tasks} == set(STUDY_PROMPTS)
    assert not {TASK_INFO[task].category for task in tasks} & set(STUDY_LEFT_OUT_CATEGORIES)
    for expected in ("flores_ppl_som", "belebele_ppl_tsn", "winogrande_afr_nso_cf", "mafand_mt_en2xx_ll_zul",
                     "ntrex_mt_xx2en_ll_nso", "masakhanews_xho_cf", "sib200_som_cf"):  # fmt: skip
        assert expected in tasks
    for left_out in ("belebele_tsn_mcf", "sib200_xho_hybrid_enprompt", "sib200_zul_cf_enprompt",
                     "mmlu_afr_virology_zul_cf"):  # fmt: skip
        assert left_out not in tasks
    # every lower-is-better task of the languages: round 1's 35 (each language's bits-per-byte family)
    assert sum(TASK_INFO[task].formulation == "PPL" for task in tasks) == 35
    with pytest.raises(ValueError, match="afrixnli_zul_cf"):
        study_tasks(mirror, StudySizes(tasks=("flores_ppl_zul", "afrixnli_zul_cf")))


@pytest.mark.slow
def test_the_ci_slice_runs_end_to_end_resumes_and_publishes(shared_data: Path, tmp_path: Path) -> None:
    out, sizes = tmp_path / "study", slice_sizes()
    lines: list[str] = []
    paths = run_study(out, shared_data, sizes, workers=1, log=lines.append)
    table = pl.read_parquet(paths["scores"])
    assert sorted(table["task"].unique()) == sorted(sizes.tasks or ())
    assert sorted(table["step"].unique()) == [sizes.save_every, sizes.steps]
    assert table["run"].unique().to_list() == ["mix-N"] and table["seed"].unique().to_list() == [1]
    record = json.loads(paths["study"].read_text(encoding="utf-8"))
    assert record["tasks"] == list(sizes.tasks or ()) and record["sizes"]["steps"] == sizes.steps
    assert set(record["seconds"]) == {"mirror and tasks", "tokenizer", "training", "evaluation", "analysis"}
    truth = pl.read_csv(paths["truth"])
    assert set(truth.filter(pl.col("check") == "task_order")["subject"]) == set(sizes.tasks or ())

    done = out / "checkpoints" / "mix-N" / "seed-1" / "DONE"
    trained_at = done.stat().st_mtime_ns
    lines.clear()
    run_study(out, shared_data, sizes, workers=1, log=lines.append)
    resumed = json.loads(paths["study"].read_text(encoding="utf-8"))["seconds"]
    for stage in ("tokenizer", "training", "evaluation"):  # the work done before is still counted
        assert resumed[stage] >= record["seconds"][stage], (stage, resumed, record["seconds"])
    assert done.stat().st_mtime_ns == trained_at
    assert "training: every run is already trained" in lines
    assert pl.read_parquet(paths["scores"]).equals(table)

    copied = publish(out, tmp_path / "docs")
    assert (tmp_path / "docs" / "selection" / "decisions.csv").read_bytes() == (
        out / "selection" / "decisions.csv"
    ).read_bytes()
    assert all(path.exists() for path in copied)
    report = (tmp_path / "docs" / "selection" / "report.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((figures/[^)]+\.png)\)", report)
    assert linked, "the published report links no figure"
    assert all((tmp_path / "docs" / "selection" / link).is_file() for link in linked)  # no dead link
    kept = set(pl.read_csv(out / "selection" / "decisions.csv").filter(pl.col("kept"))["task"])
    curves = {path.stem for path in (tmp_path / "docs" / "selection" / "figures").glob("curves/*.png")}
    assert curves == kept  # the kept tasks' curves, and only theirs
    with pytest.raises(FileNotFoundError, match="not finished"):
        publish(tmp_path / "nothing", tmp_path / "docs")


@pytest.mark.slow
def test_an_in_process_sweep_reads_the_mirror_its_spec_names(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The custom tasks module built under another data directory (an earlier sweep in this process) is not reused
    (before the fix: sib200_zul_cf still pointed at the hub and the CI slice's checkpoints failed offline)."""
    from finetasks_afr.sweep.task_list import DEFAULT_CUSTOM_TASKS, custom_tasks_module

    monkeypatch.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    custom_tasks_module(DEFAULT_CUSTOM_TASKS)
    monkeypatch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    configs = {config.name: config for config in custom_tasks_module(DEFAULT_CUSTOM_TASKS).TASKS_TABLE}
    assert Path(configs["sib200_zul_cf"].hf_repo).resolve() == (mirror / "sib200").resolve()
