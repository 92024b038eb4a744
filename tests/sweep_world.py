"""A tiny sweep world for the tests that start `finetasks-afr sweep` as a real process and signal it.

Four checkpoints of one run (two per worker with `--workers 2`), one toy multiple-choice task over a local dataset,
and a custom tasks module that defines it: enough for a sweep to have work in flight when a signal arrives and work
left for the rerun, small enough that lighteval's start-up dominates. Kept apart from the test modules so that the
signal tests do not depend on another test module's fixtures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ITEMS = [
    ("The sun rises in the", ["east", "west", "sea", "night"], 0),
    ("Water is", ["wet", "dry", "loud", "square"], 0),
    ("Birds can", ["fly", "read", "melt", "vote"], 0),
]
TASK = "good_eng_cf|0"
STEPS = (1, 2, 3, 4)
TASK_MODULE = """
from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from analysis.scores.task_info import TaskInfo


def prompt(line, task_name):
    return Doc(task_name=task_name, query=line["query"], choices=[" " + c for c in line["choices"]],
               gold_index=line["gold"])


TASKS_TABLE = [
    LightevalTaskConfig(name="good_eng_cf", prompt_function=prompt, hf_repo={repo!r}, hf_subset="default",
                        hf_avail_splits=["test"], evaluation_splits=["test"],
                        metrics=[LogLikelihoodAccMetric(normalization=None)])
]
TASK_INFO = {{"good_eng_cf": TaskInfo("good", "eng", "GK", "CF", 0.25)}}
"""
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def build_world(root: Path) -> dict[str, Path]:
    """Write the dataset, the tasks module and the tiny checkpoints under `root`; return their paths."""
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    data = root / "mirror" / "good"
    data.mkdir(parents=True)
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ITEMS]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (data / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: test.jsonl\n---\n",
        encoding="utf-8",
    )
    module = root / "signal_tasks.py"
    module.write_text(TASK_MODULE.format(repo=str(data)), encoding="utf-8")
    corpus = [f"{q} {c[g]}." for q, c, g in ITEMS] * 10
    runs = root / "runs"
    for step in STEPS:
        make_tiny_causal_lm(runs / "mix" / f"checkpoint-{step}", corpus, seed=step, vocab_size=300, hidden_size=32)
    return {"root": root, "runs": runs, "module": module}


def cli() -> str:
    """The installed `finetasks-afr` console script of this environment, as a user runs it."""
    return str(Path(sys.executable).parent / "finetasks-afr")


def sweep_command(world: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [cli(), "sweep", str(world["runs"]), "--tasks", TASK, "--out", str(out),
            "--custom-tasks", str(world["module"]), "--max-length", "128", *extra]  # fmt: skip


def _as_from_a_terminal() -> None:
    """A job a terminal's shell starts has SIGHUP at its default: undo a `nohup` this test run may sit under."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start(command: list[str]) -> subprocess.Popen[str]:
    """Start `command` in a process group of its own (its pid is the group id), as a shell starts a job."""
    return subprocess.Popen(
        command,
        env=os.environ | OFFLINE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
    )


def group_members(group: int) -> set[int]:
    """Live processes of process group `group` (workers, their children, multiprocessing's resource tracker)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            found.add(int(stat.parent.name))
    return found
