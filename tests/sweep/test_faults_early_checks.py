"""What a command can check before any model loads, it checks: the torch device of work that runs here, a model
location that cannot be one (a mistyped path reached the hub as `Repo id must be ...`, after 11 s of scoring), and a
reference ranking that names none of the models (a file of sentences gave RBO 0.000, shared 0, exit 0). Each is
exit 2 with the named error; none was before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner, Result

from finetasks_afr.cli import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def flat(result: Result) -> str:
    return " ".join(result.output.split())


def absent_cuda() -> tuple[str, str]:
    """A CUDA device this machine lacks, and what the error says about it (no CUDA here, or too few devices)."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    said = "this machine has no CUDA device" if count == 0 else f"this machine has {count} CUDA device(s)"
    return f"cuda:{count}", said


def test_sweep_refuses_a_device_this_machine_lacks_before_discovery(tmp_path: Path) -> None:
    device, said = absent_cuda()
    out = tmp_path / "sweep"
    result = invoke("sweep", str(tmp_path / "runs"), "--tasks", "sib200_hau_cf", "--out", str(out), "--device", device)
    assert result.exit_code == 2 and f"--device {device}: {said}" in flat(result), result.output
    assert "Traceback" not in result.output and not out.exists()


def test_a_slurm_sweep_leaves_the_device_to_its_nodes(tmp_path: Path) -> None:
    device, said = absent_cuda()
    args = ("sweep", str(tmp_path / "runs"), "--tasks", "sib200_hau_cf", "--out", str(tmp_path / "o"))
    result = invoke(*args, "--device", device, "--executor", "slurm")
    assert result.exit_code == 2 and said not in flat(result) and "not a directory" in flat(result), result.output


def test_not_a_device_at_all(tmp_path: Path) -> None:
    result = invoke(
        "sweep", str(tmp_path), "--tasks", "sib200_hau_cf", "--out", str(tmp_path / "o"), "--device", "gpu0"
    )
    assert result.exit_code == 2 and "--device 'gpu0' is not a torch device" in flat(result), result.output


def test_recommend_refuses_the_device_and_a_reference_without_the_models(tmp_path: Path) -> None:
    device, said = absent_cuda()
    result = invoke("recommend", "-m", "org/model-a", "--text", "Sannu", "--device", device)
    assert result.exit_code == 2 and said in flat(result), result.output
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Ina son karatu sosai.\nYaya kake yau?\n", encoding="utf-8")
    result = invoke(
        "recommend", "-m", "org/model-a", "-m", "org/model-b", "--text", "Sannu", "--reference", str(sentences)
    )
    said_now = flat(result)
    assert result.exit_code == 2 and "none of its 2 names is one of the models ranked" in said_now, result.output
    assert "org/model-a, org/model-b" in said_now and "'Ina son karatu sosai.'" in said_now and "fix:" in said_now


def test_longppl_names_a_missing_teacher_a_data_folder_and_the_device(tmp_path: Path) -> None:
    documents = tmp_path / "docs.jsonl"
    row = {"id": "d1", "source_lang": "eng", "target_lang": "hau", "source": "A. B.", "target": "A. B."}
    documents.write_text(json.dumps(row) + "\n", encoding="utf-8")
    model = tmp_path / "embedder"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("{}\n", encoding="utf-8")
    base = ("longppl", "prepare", str(documents), "--out", str(tmp_path / "out"), "--top-k", "1")
    missing = invoke(*base, "--teacher", str(tmp_path / "no-such-model"), "--embedder", str(model))
    assert missing.exit_code == 2 and f"--teacher {tmp_path / 'no-such-model'}: no such folder" in flat(missing)
    folder = invoke(*base, "--teacher", str(model), "--embedder", str(data))
    assert folder.exit_code == 2 and "holds no config.json, so it is not a saved model" in flat(folder), folder.output
    device, said = absent_cuda()
    wrong = invoke(*base, "--teacher", str(model), "--embedder", str(model), "--device", device)
    assert wrong.exit_code == 2 and said in flat(wrong), wrong.output
    for result in (missing, folder, wrong):
        assert "Traceback" not in result.output


def test_a_task_whose_data_is_in_no_mirror_is_named_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented `afrixnli_hau_mcf` run, offline: exit 1 after 36.6 s and a 138-line traceback ending in
    `ConnectionError: Couldn't reach 'masakhane/afrixnli' on the Hub` (issue 40). The sweep's data check (before the
    model loads; the checkpoint's other tasks would be evaluated) names it in one line. The checkpoint here is not
    a model at all: a load would fail with another reason."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    checkpoint = tmp_path / "runs" / "mix-a" / "seed-1" / "checkpoint-1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text(json.dumps({"model_type": "not-a-model"}), encoding="utf-8")
    (checkpoint / "model.safetensors").write_bytes(b"not weights")
    (checkpoint / "tokenizer.json").write_text("{}", encoding="utf-8")  # not a tokenizer either
    out = tmp_path / "sweep"
    result = invoke("sweep", str(tmp_path / "runs"), "--tasks", "afrixnli_hau_mcf|5", "--out", str(out))
    said = flat(result)
    assert result.exit_code == 1, result.output  # a failed checkpoint, as for any broken task
    assert "afrixnli_hau_mcf|5: hub-only (masakhane/afrixnli), no mirror configured" in said, said
    assert "run online once" in said and "Traceback" not in result.output


def test_checkpoints_saved_without_a_tokenizer_are_named_with_the_tokenizer_option(tmp_path: Path) -> None:
    """Issue 41, case 6: before, each checkpoint loaded and then failed with transformers' raw `ValueError: Couldn't
    instantiate the backend tokenizer`, without the --tokenizer hint."""
    for step in (1, 2):
        checkpoint = tmp_path / "runs" / "mix-a" / "seed-1" / f"checkpoint-{step}"
        checkpoint.mkdir(parents=True)
        (checkpoint / "config.json").write_text("{}", encoding="utf-8")
        (checkpoint / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "sweep"
    result = invoke("sweep", str(tmp_path / "runs"), "--tasks", "sib200_yor_cf|0", "--out", str(out))
    said = flat(result)
    assert result.exit_code == 2, said
    assert "2 checkpoint(s) hold no tokenizer" in said and "fix: pass --tokenizer" in said, said
    assert "Traceback" not in result.output and not (out / "results").exists()
