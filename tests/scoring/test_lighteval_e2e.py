"""End to end: the plain `lighteval accelerate` CLI on a tiny local model over the local mirror, one task of each
formulation (CF, MCF, hybrid, generative) and an `_enprompt` variant; the results file holds every metric."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "sib200_yor_cf|0": {"acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"},
    "sib200_yor_cf_enprompt|0": {"acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"},
    "belebele_zul_mcf|5": {"acc"},
    "mmlu_afr_virology_zul_hybrid|5": {"acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"},
    "winogrande_afr_zul_cf|0": {"acc", "acc_norm", "acc_norm_token"},  # partial scoring: no PMI
    "afriqa_hau|0": {"f1_eng", "exact_match_eng_prefix"},  # answers are English passage spans
}

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]


@pytest.fixture(scope="module")
def setup(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.demo.tiny import make_tiny_causal_lm
    from finetasks_afr.scoring.lighteval_runtime import ensure_tiny_benchmarks_file

    root = tmp_path_factory.mktemp("e2e")
    mirror = root / "mirror"
    import_raw(shared_data, mirror, datasets=["sib200", "belebele", "mmlu_clinical_afr", "winogrande_afr", "afriqa"])
    corpus = [line.strip() for line in (shared_data / "sib200" / "yor_Latn" / "train.tsv").open(encoding="utf-8")]
    model = make_tiny_causal_lm(root / "model", corpus[:300])
    ensure_tiny_benchmarks_file()
    return mirror, model


def test_lighteval_accelerate_cli_reports_every_metric(setup: tuple[Path, Path], tmp_path: Path) -> None:
    mirror, model = setup
    env = os.environ | {
        "FINETASKS_AFR_DATA_DIR": str(mirror),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    lighteval = shutil.which("lighteval", path=str(Path(sys.executable).parent)) or "lighteval"
    command = [
        lighteval,
        "accelerate",
        f"model_name={model},device=cpu,batch_size=64,max_length=512,cache_dir={tmp_path / 'lighteval-cache'}",
        ",".join(EXPECTED),
        "--custom-tasks",
        str(PROJECT / "finetasks_afr" / "tasks.py"),
        "--output-dir",
        str(tmp_path / "out"),
        "--max-samples",
        "6",
    ]
    before = sorted(p.name for p in model.iterdir())
    run = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # the prediction cache (compat fix 7) is under cache_dir, never in the model's folder (stock: model/<hash>/)
    assert sorted(p.name for p in model.iterdir()) == before
    cached = tmp_path / "lighteval-cache" / "local" / Path(*model.resolve().parts[1:])
    assert any(cached.rglob("*.parquet")), sorted(map(str, (tmp_path / "lighteval-cache").rglob("*")))[:10]
    results_files = list((tmp_path / "out" / "results").rglob("results_*.json"))
    assert len(results_files) == 1
    results = json.loads(results_files[0].read_text())["results"]
    for task, metrics in EXPECTED.items():
        key = task  # the results file keys tasks as "name|fewshot"
        assert key in results, (task, sorted(results))
        for metric in metrics:
            value = results[key][metric]
            assert 0.0 <= value <= 1.0, (task, metric, value)
            assert f"{metric}_stderr" in results[key]
    # acc_norm_pmi exists at all only because finetasks_afr.scoring.compat is applied in the plain CLI (stock 0.13
    # raises)


def test_no_task_name_collides_with_lighteval_builtins(setup):
    """lighteval raises when a custom task shares a built-in name; load every built-in suite, multilingual too."""
    from lighteval.tasks.registry import Registry

    configs = Registry.load_all_task_configs(
        custom_tasks=str(PROJECT / "finetasks_afr" / "tasks.py"), load_multilingual=True
    )
    from finetasks_afr.benchmarks.common import TASK_INFO

    assert set(TASK_INFO) <= set(configs)


def test_python_api_runs_the_suite_module(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same tasks through lighteval's Python API (Pipeline), as the sweeps will call it."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    mirror, model = setup
    monkeypatch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    pipeline = Pipeline(
        tasks="sib200_zul_hybrid|0,mmlu_afr_virology_zul_mcf_enprompt|2",
        pipeline_parameters=PipelineParameters(
            launcher_type=ParallelismManager.ACCELERATE,
            custom_tasks_directory=str(PROJECT / "finetasks_afr" / "tasks.py"),
            max_samples=4,
        ),
        evaluation_tracker=EvaluationTracker(output_dir=str(tmp_path), save_details=False),
        model_config=TransformersModelConfig(model_name=str(model), device="cpu", batch_size=64, max_length=512),
    )
    pipeline.evaluate()
    results = pipeline.get_results()["results"]
    assert set(results["sib200_zul_hybrid:0"]) >= {"acc", "acc_norm", "acc_norm_token", "acc_norm_pmi"}
    assert "acc" in results["mmlu_afr_virology_zul_mcf_enprompt:2"]


def test_plain_lighteval_names_a_task_without_reachable_data_in_one_line(tmp_path: Path) -> None:
    """The command of docs/tasks-and-data.md with a hub-only task, offline: before, 36.6 s and a 138-line traceback
    ending in `ConnectionError: Couldn't reach 'masakhane/afrixnli' on the Hub` (issue 40). Now one line naming the
    task, before any model loads (the model path here does not exist), and the mirrored task is not named."""
    from finetasks_afr.data.local_dataset import write_dataset_folder
    from finetasks_afr.data.sources import LAYOUT_MARKER, SOURCES

    mirror = tmp_path / "mirror"
    rows = [{"index_id": 1, "category": "science/technology", "text": "Ọ̀rọ̀ kan."}]
    write_dataset_folder(mirror / "sib200", {"yor_Latn": {"train": rows, "dev": rows, "test": rows}},
                         card=f"Hand-made rows.\n\n- {LAYOUT_MARKER} {SOURCES['sib200'].layout}\n")  # fmt: skip
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env = os.environ | offline | {"HF_HUB_CACHE": str(tmp_path / "empty-cache"), "FINETASKS_AFR_DATA_DIR": str(mirror)}
    lighteval = str(Path(sys.executable).parent / "lighteval")
    done = subprocess.run(
        [lighteval, "accelerate", f"model_name={tmp_path / 'no-model'},device=cpu,batch_size=64,max_length=512",
         "sib200_yor_cf|0,afrixnli_hau_mcf|5", "--custom-tasks", str(PROJECT / "finetasks_afr" / "tasks.py"),
         "--output-dir", str(tmp_path / "le")],
        env=env, capture_output=True, text=True, timeout=600, cwd=PROJECT,
    )  # fmt: skip
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: afrixnli_hau_mcf: hub-only (masakhane/afrixnli), not in the mirror at {mirror}, and the hub is off "
        "(HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); run online once (the hub cache then serves it offline) or drop it"
    ], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
