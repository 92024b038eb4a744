"""A two-task lighteval custom-tasks module over a local toy dataset, for the sweep's end-to-end tests.

The dataset directory comes from $FINETASKS_AFR_TOY_DATA (written by `write_toy_dataset`); each task carries its
score-table metadata in TASK_INFO, as the sweep expects of a custom module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from analysis.scores.task_info import TaskInfo

ENV = "FINETASKS_AFR_TOY_DATA"
ITEMS = [
    ("The sun rises in the", ["east", "west", "sea", "night"], 0),
    ("Water is", ["wet", "dry", "loud", "square"], 0),
    ("A week has seven", ["days", "cats", "trees", "songs"], 0),
    ("Birds can", ["fly", "read", "melt", "vote"], 0),
    ("Ice is", ["cold", "hot", "sweet", "tall"], 0),
    ("Fish live in", ["water", "fire", "books", "clouds"], 0),
]


def write_toy_dataset(directory: Path) -> Path:
    """A local dataset dir lighteval loads offline: README.md with one config, a jsonl test split."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = [{"query": q, "choices": c, "gold": g} for q, c, g in ITEMS]
    (directory / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (directory / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: test.jsonl\n---\n",
        encoding="utf-8",
    )
    return directory


def _tasks():
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
    from lighteval.metrics.normalizations import LogProbCharNorm
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import Doc

    def prompt(line: dict[str, Any], task_name: str) -> Doc:
        return Doc(task_name=task_name, query=line["query"], choices=[" " + c for c in line["choices"]],
                   gold_index=line["gold"])  # fmt: skip

    data = os.environ.get(ENV)
    if not data:
        return []
    return [
        LightevalTaskConfig(
            name=name,
            prompt_function=prompt,
            hf_repo=str(Path(data)),
            hf_subset="default",
            hf_avail_splits=["test"],
            evaluation_splits=["test"],
            metrics=[
                LogLikelihoodAccMetric(normalization=None),
                LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
            ],
        )
        for name in ("toyfacts_eng_cf", "toyfacts2_eng_cf")
    ]


TASKS_TABLE = _tasks()
TASK_INFO = {
    "toyfacts_eng_cf": TaskInfo("toyfacts", "eng", "GK", "CF", 0.25),
    "toyfacts2_eng_cf": TaskInfo("toyfacts2", "eng", "GK", "CF", 0.25),
}
