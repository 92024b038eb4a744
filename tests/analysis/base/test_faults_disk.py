"""Fault tests of a full disk and of limits met mid-run, in every writer (issue 25, part 4).

ENOSPC (no space left), EFBIG (file too large), EACCES (permission denied) met while `data import-raw`, `data
mirror`, `sweep`, `collect`, `recommend` or `longppl prepare` writes are a named error: exit 2, one red line naming
the file, the errno's meaning, that the old outputs were kept and the fix; no traceback, the previous output byte
for byte, no empty folder, no partial or temporary file.

How each fault is made:

- EFBIG is real: the soft RLIMIT_FSIZE of this process is lowered around one in-process command (CPython ignores
  SIGXFSZ, so a write past the limit fails with EFBIG instead of killing the process), then raised again.
- EACCES is real: a folder of mode 0o555, in a subprocess that obeys file modes even as root (tests/unprivileged.py).
- ENOSPC is simulated (a tiny tmpfs needs root and a mount namespace, which CI lacks): the project's one atomic
  writer (`analysis.base.io.atomic_write`)
  is wrapped so that a chosen write puts a few bytes in its temporary file and
  then fails as a full disk does (an OSError without a file name, as a buffered write reports it at close); for
  polars' own writers, `write_parquet` raises the ComputeError polars raises on a full disk.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import analysis.base.io
from finetasks_afr.cli import app
from tests.unprivileged import run_cli_unprivileged

TWEETS = "tweet\tlabel\nkai\tpositive\nwai\tnegative\n"
ITEMS = [
    ("The sun rises in the", ["east", "west", "sea", "night"], 0),
    ("Water is", ["wet", "dry", "loud", "square"], 0),
    ("Birds can", ["fly", "read", "melt", "vote"], 0),
]
TASK = "disk_eng_cf|0"
TASK_MODULE = """
from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from analysis.scores.task_info import TaskInfo


def prompt(line, task_name):
    return Doc(task_name=task_name, query=line["query"], choices=[" " + c for c in line["choices"]],
               gold_index=line["gold"])


TASKS_TABLE = [
    LightevalTaskConfig(name="disk_eng_cf", prompt_function=prompt, hf_repo={repo!r}, hf_subset="default",
                        hf_avail_splits=["test"], evaluation_splits=["test"],
                        metrics=[LogLikelihoodAccMetric(normalization=None)])
]
TASK_INFO = {{"disk_eng_cf": TaskInfo("disk", "eng", "GK", "CF", 0.25)}}
"""
CORPUS = [f"{q} {c[g]}." for q, c, g in ITEMS] * 10 + [
    f"Paragraph {i} tells of the river and the town." for i in range(20)
]
ENOSPC = ("No space left on device", "ENOSPC", "free space on")
EFBIG = ("File too large", "EFBIG", "ulimit")
EACCES = ("Permission denied", "EACCES")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("COLUMNS", "1000")


# --------------------------------------------------------------------------------------------- helpers


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def flat(text: str) -> str:
    """Without whitespace: rich wraps long lines (and folds long paths) at the terminal width."""
    return "".join(text.split())


def assert_refused(code: int, output: str, *needles: str | Path) -> None:
    """A named write error: exit 2, one `error:` line, no traceback, what failed, that the old output was kept."""
    assert code == 2, output
    assert "Traceback" not in output and "error:" in output, output
    for needle in (*needles, "kept", "fix:"):
        assert flat(str(needle)) in flat(output), (needle, output)


def assert_result_refused(result: Result, *needles: str | Path) -> None:
    assert isinstance(result.exception, SystemExit), result.exception
    assert_refused(result.exit_code, result.output, *needles)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `root`: equal snapshots mean nothing changed or was added."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """A real EFBIG for every write of this process past `limit` bytes, for the block (soft limit only)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def full_disk(monkeypatch: pytest.MonkeyPatch, when: Callable[[Path], bool], number: int = errno.ENOSPC) -> list[Path]:
    """Writes through `analysis.base.io.atomic_write` to a path for which `when` holds fail as a full disk does: a
    few bytes reach the temporary file, then an OSError without a file name. Returns the paths refused."""
    original = analysis.base.io.atomic_write
    refused: list[Path] = []

    def failing(path: Path, write: Callable[[Path], object]) -> Path:
        if not when(Path(path)):
            return original(path, write)
        refused.append(Path(path))

        def half(tmp: Path) -> None:
            tmp.write_bytes(b"half a fi")
            raise OSError(number, os.strerror(number))

        return original(path, half)

    monkeypatch.setattr(analysis.base.io, "atomic_write", failing)
    return refused


def full_disk_for_parquet(monkeypatch: pytest.MonkeyPatch) -> None:
    """`DataFrame.write_parquet` fails as polars 2 does on a full disk: a ComputeError, the errno only in words."""

    def failing(self: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> None:
        Path(file).write_bytes(b"PAR1 half")
        raise pl.exceptions.ComputeError(
            "parquet: File out of specification: underlying IO error: No space left on device (os error 28)"
        )

    monkeypatch.setattr(pl.DataFrame, "write_parquet", failing)


def leftovers(root: Path) -> list[str]:
    return [p.as_posix() for p in root.rglob("*") if p.suffix == ".tmp" or (p.is_dir() and not any(p.iterdir()))]


# ------------------------------------------------------------------------------------------ data import-raw


def raw_tree(root: Path) -> Path:
    for lang in ("hau", "yor"):
        folder = root / "afrisenti" / lang
        folder.mkdir(parents=True)
        (folder / "dev.tsv").write_text(TWEETS, encoding="utf-8")
        (folder / "test.tsv").write_text(TWEETS, encoding="utf-8")
    return root


def import_raw(src: Path, out: Path) -> Result:
    return invoke("data", "import-raw", src, "--out", out, "-d", "afrisenti")


def test_import_raw_on_a_full_disk_leaves_no_folder_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a traceback (rc 1), and the empty folders mirror/afrisenti/hau/ stayed."""
    src, out = raw_tree(tmp_path / "raw"), tmp_path / "mirror"
    refused = full_disk(monkeypatch, lambda path: path.name.startswith("test-"))
    result = import_raw(src, out)
    assert refused, "the simulated full disk was never reached"
    assert_result_refused(result, *ENOSPC, out / "afrisenti" / "hau" / refused[0].name)
    assert not out.exists(), snapshot(out)


def test_import_raw_past_the_file_size_limit_keeps_the_old_mirror(tmp_path: Path) -> None:
    """Real EFBIG at the README, after the new data files (and a new config folder) were written; before: a
    traceback, the new folder afrisenti/ibo/ left empty."""
    src, out = raw_tree(tmp_path / "raw"), tmp_path / "mirror"
    assert import_raw(src, out).exit_code == 0
    old = snapshot(out)
    (src / "afrisenti" / "hau" / "dev.tsv").write_text(TWEETS + "sannu\tpositive\n", encoding="utf-8")
    shutil.copytree(src / "afrisenti" / "yor", src / "afrisenti" / "ibo")
    readme = len((out / "afrisenti" / "README.md").read_bytes())
    with file_size_limit(readme // 2):  # the data files fit, the README does not
        result = import_raw(src, out)
    assert_result_refused(result, *EFBIG, out / "afrisenti" / "README.md")
    assert snapshot(out) == old


@pytest.mark.slow
def test_import_raw_into_a_read_only_dataset_folder_keeps_it(tmp_path: Path) -> None:
    """Real EACCES, in a subprocess that obeys file modes; before: a PermissionError traceback (rc 1)."""
    src, out = raw_tree(tmp_path / "raw"), tmp_path / "mirror"
    assert import_raw(src, out).exit_code == 0
    (src / "afrisenti" / "hau" / "dev.tsv").write_text(TWEETS + "sannu\tpositive\n", encoding="utf-8")
    locked = out / "afrisenti" / "hau"
    old = snapshot(out)
    locked.chmod(0o555)
    try:
        result = run_cli_unprivileged(["data", "import-raw", src, "--out", out, "-d", "afrisenti"], tmp_path / "home")
    finally:
        locked.chmod(0o755)
    assert_refused(result.returncode, result.stdout + result.stderr, *EACCES, locked, "chmod")
    assert snapshot(out) == old


# ------------------------------------------------------------------------------------------------ data mirror


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """`data mirror` of sib200 against a hub that serves one config of two rows (no network)."""
    import datasets

    import finetasks_afr.data.mirror as mirror
    from finetasks_afr.data.sources import SOURCES

    config = SOURCES["sib200"].config_names[0] if SOURCES["sib200"].config_names else "hau_Latn"
    rows = [{"index_id": 1, "category": "health", "text": "Lafiya"}, {"index_id": 2, "category": "sports", "text": "W"}]
    monkeypatch.setattr(mirror, "_check_hub_reachable", lambda timeout=5.0: None)
    monkeypatch.setattr(mirror, "_hub_config_names", lambda src: [config])
    monkeypatch.setattr(
        mirror,
        "load_dataset",
        lambda repo, name, revision: datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}),
    )


def test_mirror_on_a_full_disk_is_a_named_error(
    tmp_path: Path, fake_hub: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a traceback (rc 1) and an empty mirror/sib200/<config>/ folder."""
    out = tmp_path / "mirror"
    full_disk(monkeypatch, lambda path: path.name == "README.md")
    result = invoke("data", "mirror", "--out", out, "-d", "sib200")
    assert_result_refused(result, *ENOSPC, out / "sib200" / "README.md")
    assert not out.exists(), snapshot(out)


def test_mirror_past_the_file_size_limit_keeps_the_old_mirror(tmp_path: Path, fake_hub: None) -> None:
    out = tmp_path / "mirror"
    assert invoke("data", "mirror", "--out", out, "-d", "sib200").exit_code == 0
    old = snapshot(out)
    with file_size_limit(64):
        result = invoke("data", "mirror", "--out", out, "-d", "sib200")
    assert_result_refused(result, *EFBIG, out / "sib200" / "README.md")
    assert snapshot(out) == old


# ------------------------------------------------------------------------------------------ sweep and collect


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two tiny checkpoints of one run, a one-task module over a local dataset, and a finished sweep of them."""
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("disk-world")
    data = root / "data"
    data.mkdir()
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ITEMS]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (data / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: test.jsonl\n---\n",
        encoding="utf-8",
    )
    module = root / "disk_tasks.py"
    module.write_text(TASK_MODULE.format(repo=str(data)), encoding="utf-8")
    for step in (1, 2):
        make_tiny_causal_lm(root / "runs" / "mix" / f"checkpoint-{step}", CORPUS, seed=step, vocab_size=300,
                            hidden_size=32)  # fmt: skip
    world = {"root": root, "runs": root / "runs", "module": module, "done": root / "done"}
    result = sweep(world, world["done"])
    assert result.exit_code == 0, result.output
    return world


def sweep_args(world: dict[str, Path], out: Path) -> list[str | Path]:
    return ["sweep", world["runs"], "--tasks", TASK, "--out", out, "--custom-tasks", world["module"],
            "--max-length", "128"]  # fmt: skip


def sweep(world: dict[str, Path], out: Path) -> Result:
    return invoke(*sweep_args(world, out))


def parts(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in (out / "results").glob("*/*/*/part-*"))


def test_sweep_on_a_full_disk_stops_at_the_first_part_and_resumes(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every checkpoint "failed" in turn with the same error (rc 1), a traceback in each log."""
    out = tmp_path / "sweep"
    refused = full_disk(monkeypatch, lambda path: path.name == "part.json")
    result = sweep(world, out)
    assert len(refused) == 1, "the sweep went on after the disk was full"
    assert_result_refused(result, *ENOSPC, "part.json", "rerun")
    assert parts(out) == [] and list((out / "staging").iterdir()) == []
    assert not (out / "summary.json").exists() and not (out / "scores.parquet").exists()
    monkeypatch.undo()
    result = sweep(world, out)
    assert result.exit_code == 0, result.output
    assert len(parts(out)) == 2 and (out / "scores.parquet").is_file()


def test_sweep_past_the_file_size_limit_keeps_the_finished_store(world: dict[str, Path], tmp_path: Path) -> None:
    """Real EFBIG on the rerun of a finished sweep (sweep.json, summary.json, scores.parquet are rewritten)."""
    out = tmp_path / "sweep"
    shutil.copytree(world["done"], out)
    old = snapshot(out)
    with file_size_limit(64):
        result = sweep(world, out)
    assert_result_refused(result, *EFBIG)
    assert snapshot(out) == old


@pytest.mark.parametrize("name", ["summary.json", "scores.parquet"])
def test_sweep_on_a_full_disk_at_its_summary_or_table_keeps_the_old_one(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Before: an OSError traceback (summary), a polars ComputeError traceback (table), rc 1."""
    out = tmp_path / "sweep"
    shutil.copytree(world["done"], out)
    old, empty = (out / name).read_bytes(), leftovers(out)  # the finished sweep's staging/ is empty
    if name == "scores.parquet":
        full_disk_for_parquet(monkeypatch)
    else:
        full_disk(monkeypatch, lambda path: path.name == name)
    result = sweep(world, out)
    assert_result_refused(result, *ENOSPC, out / name)
    assert "ComputeError" not in result.output
    assert (out / name).read_bytes() == old and leftovers(out) == empty


@pytest.mark.slow
def test_sweep_with_workers_into_a_read_only_results_folder_names_it(world: dict[str, Path], tmp_path: Path) -> None:
    """Real EACCES at the commit of each worker's part; before: each checkpoint "failed" (rc 1)."""
    out = tmp_path / "sweep"
    results = out / "results"
    results.mkdir(parents=True)
    results.chmod(0o555)
    try:
        run = run_cli_unprivileged([*sweep_args(world, out), "--workers", "2"], tmp_path / "home")
    finally:
        results.chmod(0o755)
    assert_refused(run.returncode, run.stdout + run.stderr, *EACCES, results, "rerun")
    assert list(results.iterdir()) == [] and list((out / "staging").iterdir()) == []
    assert not list(out.rglob("*.tmp")) and "warn" not in run.stderr.lower()


@pytest.mark.parametrize("fault", ["ENOSPC", "EFBIG"])
def test_collect_on_a_full_disk_or_past_the_size_limit_keeps_the_old_table(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """Before: a polars ComputeError traceback (rc 1)."""
    table = tmp_path / "scores.parquet"
    table.write_bytes(b"the previous table")
    if fault == "ENOSPC":
        full_disk_for_parquet(monkeypatch)
        result = invoke("collect", world["done"], "--out", table)
    else:
        with file_size_limit(64):
            result = invoke("collect", world["done"], "--out", table)
    assert_result_refused(result, *(ENOSPC if fault == "ENOSPC" else EFBIG), table)
    assert "ComputeError" not in result.output
    assert table.read_bytes() == b"the previous table" and sorted(p.name for p in tmp_path.iterdir()) == [table.name]


# --------------------------------------------------------------------------------------------------- recommend


@pytest.fixture(scope="module")
def causal_lm(world: dict[str, Path]) -> Path:
    return world["runs"] / "mix" / "checkpoint-1"


@pytest.mark.parametrize(("fault", "suffix"), [("ENOSPC", ".csv"), ("EFBIG", ".json")])
def test_recommend_on_a_full_disk_or_past_the_size_limit_keeps_the_old_ranking(
    causal_lm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, suffix: str
) -> None:
    """Before: an OSError traceback (rc 1) after the models were scored."""
    out = tmp_path / f"ranking{suffix}"
    out.write_text("the previous ranking\n")
    args: list[str | Path] = ["recommend", "-m", f"tiny={causal_lm}", "--text", ITEMS[0][0], "--text", ITEMS[1][0],
            "--bootstrap", "0", "--out", out]  # fmt: skip
    if fault == "ENOSPC":
        full_disk(monkeypatch, lambda path: path == out)
        result = invoke(*args)
    else:
        with file_size_limit(16):
            result = invoke(*args)
    assert_result_refused(result, *(ENOSPC if fault == "ENOSPC" else EFBIG), out)
    assert out.read_text() == "the previous ranking\n" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


# ----------------------------------------------------------------------------------------------------- longppl


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BertModel with a byte-level BPE tokenizer (as tests/perplexity/test_longppl.py's)."""
    import torch
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from finetasks_afr.demo.tiny import BOS, EOS, PAD, train_byte_level_bpe

    out = tmp_path_factory.mktemp("embedder")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_byte_level_bpe(CORPUS, 320), bos_token=BOS, eos_token=EOS, pad_token=PAD
    )
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def longppl_args(tmp_path: Path, teacher: Path, embedder: Path, out: Path) -> list[str | Path]:
    documents = tmp_path / "docs.jsonl"
    paragraphs = CORPUS[-4:]
    row = {"id": "d", "source_lang": "eng", "target_lang": "hau", "source": paragraphs, "target": paragraphs}
    documents.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return ["longppl", "prepare", documents, "--teacher", teacher, "--embedder", embedder, "--top-k", "2",
            "--out", out]  # fmt: skip


def test_longppl_on_a_full_disk_keeps_the_old_json_and_dataset(
    causal_lm: Path, embedder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC at the dataset's README, after longppl.json; before: a traceback (rc 1), and a new longppl.json beside
    the old dataset."""
    out = tmp_path / "out"
    args = longppl_args(tmp_path, causal_lm, embedder, out)
    assert invoke(*args).exit_code == 0
    old = snapshot(out)
    full_disk(monkeypatch, lambda path: path.name == "README.md")
    result = invoke(*args, "--threshold", "0.4")
    assert_result_refused(result, *ENOSPC, out / "hau" / "README.md")
    assert snapshot(out) == old


def test_longppl_past_the_file_size_limit_leaves_no_folder(causal_lm: Path, embedder: Path, tmp_path: Path) -> None:
    """Real EFBIG at longppl.json; before: a traceback (rc 1) and an empty out/hau/ folder."""
    out = tmp_path / "out"
    args = longppl_args(tmp_path, causal_lm, embedder, out)
    with file_size_limit(64):
        result = invoke(*args)
    assert_result_refused(result, *EFBIG, out / "hau")
    assert not out.exists(), snapshot(out)
