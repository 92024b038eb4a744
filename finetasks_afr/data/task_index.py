"""The suite's task index: every task's metadata read from one JSON file, without building the suite.

Building the suite (`finetasks_afr/tasks.py`) imports lighteval and builds 2,000+ LightevalTaskConfig objects:
17-60 s. Listing the tasks, checking a name or showing where a task's data come from needs none of that, so the
metadata the suite records (`TASK_INFO`, each config's metrics, splits and hub location, the prompt words of each
prompt language) is written once to `task_index.json` beside this module by `python -m finetasks_afr.task_catalog`,
and read here with the standard library only (`finetasks-afr tasks`). `tests/tasks/test_tasks_cli.py` builds the
suite and fails when the file differs from it, naming the command that rewrites it.

Whether a task's data are reachable here is decided from the index as `finetasks_afr.data.sources` decides it
(`hf_location`, then `unreachable_reason`), with the dataset facts those read from `SOURCES` (hub repository,
revision, hub form, mirror layout) taken from the index: reading `SOURCES` imports every benchmark module, and so
lighteval. A test checks both answers agree for every dataset, with and without a mirror, online and offline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from finetasks_afr.data.sources import DATA_DIR_ENV, README_NAME, data_dir, hub_offline, mirror_configs, mirror_layout

INDEX_FILE = Path(__file__).with_name("task_index.json")
REBUILD_COMMAND = "make task-index"


@dataclass(frozen=True)
class DatasetFacts:
    """What the index keeps of a dataset's `DatasetSource`: where the hub serves it and how a mirror is checked."""

    key: str
    hub_repo: str
    revision: str | None
    hub_form: str
    layout: int


@dataclass(frozen=True)
class TaskEntry:
    """One task of the suite as the index records it (the fields of `TaskInfo` and of its LightevalTaskConfig)."""

    name: str
    benchmark: str
    language: str
    category: str
    formulation: str
    prompt: str  # "native" (in-language prompt words) or "en" (English words)
    random_baseline: float
    dataset: str
    subset: str
    metrics: tuple[str, ...]
    evaluation_splits: tuple[str, ...]
    few_shots_split: str | None
    hf_avail_splits: tuple[str, ...]
    generation_size: int | None
    words: str  # key of TaskIndex.words: the language whose prompt words build the prompt ("" for none)
    hf_repo: str  # the hub location the config reads when no mirror serves it
    hf_revision: str | None


@dataclass(frozen=True)
class TaskIndex:
    """The whole index: tasks in suite order, the datasets they read, the prompt words by language."""

    tasks: tuple[TaskEntry, ...]
    datasets: dict[str, DatasetFacts]
    words: dict[str, dict[str, str]]

    def by_name(self) -> dict[str, TaskEntry]:
        """Name -> entry."""
        return {task.name: task for task in self.tasks}


def index_from_json(data: dict[str, Any]) -> TaskIndex:
    """The index from its JSON form (`finetasks_afr.task_catalog.render` writes it: the field names once in
    `columns`, one list of values per task): each task's hub location is its dataset's unless the task names
    another (a trailing `{"repo", "revision"}`)."""
    datasets = {key: DatasetFacts(key=key, **facts) for key, facts in data["datasets"].items()}
    tasks = []
    columns = data["columns"]
    for values in data["tasks"]:
        row = dict(zip(columns, values, strict=False))
        row.update(values[len(columns)] if len(values) > len(columns) else {})  # another dataset's location
        facts = datasets[row["dataset"]]
        fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value for key, value in row.items()}
        fields["hf_repo"] = fields.pop("repo", facts.hub_repo)
        fields["hf_revision"] = fields.pop("revision", facts.revision)
        tasks.append(TaskEntry(**fields))
    return TaskIndex(tasks=tuple(tasks), datasets=datasets, words=data["words"])


@cache
def read_index(path: Path = INDEX_FILE) -> TaskIndex:
    """The committed index (read once per process)."""
    return index_from_json(json.loads(path.read_text(encoding="utf-8")))


def data_location(task: TaskEntry, index: TaskIndex) -> tuple[str, str | None]:
    """`(hf_repo, hf_revision)` the task's config would read here: the mirror under $FINETASKS_AFR_DATA_DIR when it
    holds the task's config (`sources.hf_location`'s rule), else the hub. A task whose location was fixed to
    another config's (FLORES translation) keeps it, as its config does. A mirror older than its dataset's layout
    is named, as `sources.check_layout` would refuse it."""
    facts = index.datasets[task.dataset]
    if task.hf_repo != facts.hub_repo:
        return task.hf_repo, task.hf_revision
    root = data_dir()
    path = root / task.dataset if root is not None else None
    if path is not None and (path / README_NAME).is_file():
        if mirror_layout(path) < facts.layout:
            raise ValueError(
                f"the mirror {path} of {task.dataset!r} has layout {mirror_layout(path)}, the suite now reads "
                f"layout {facts.layout}; rebuild it with `finetasks-afr data import-raw SRC {root} -d {task.dataset}`"
            )
        if task.subset in mirror_configs(path):
            return str(path), None
    return facts.hub_repo, facts.revision


def unreachable_reason(repo: str, index: TaskIndex) -> str | None:
    """Why data at `repo` cannot be read here, or None: `sources.unreachable_reason`'s rule and words, with the
    script-only check read from the index (that function reads `SOURCES`, which imports lighteval);
    tests/tasks/test_tasks_cli.py checks the two agree on every dataset."""
    if Path(repo).is_dir() or not hub_offline():
        return None
    if any(facts.hub_repo == repo and facts.hub_form == "script" for facts in index.datasets.values()):
        return None
    from huggingface_hub import constants

    if (Path(constants.HF_HUB_CACHE) / f"datasets--{repo.replace('/', '--')}").is_dir():
        return None
    mirror = data_dir()
    where = f"not in the mirror at {mirror}" if mirror else f"no mirror configured (${DATA_DIR_ENV} unset)"
    return (
        f"hub-only ({repo}), {where}, and the hub is off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); run online "
        "once (the hub cache then serves it offline) or drop it"
    )


def reachability(task: TaskEntry, index: TaskIndex) -> str:
    """One line: where the task's data come from here and whether they can be read."""
    try:
        repo, revision = data_location(task, index)
    except ValueError as error:
        return f"no: {error}"
    if Path(repo).is_dir():
        return f"yes: local mirror {repo} (config {task.subset})"
    reason = unreachable_reason(repo, index)
    if reason is not None:
        return f"no: {reason}"
    facts = index.datasets[task.dataset]
    at = f"@{revision[:12]}" if revision else " (unpinned)"
    if facts.hub_form == "script":
        return (
            f"no: the hub repository {repo}{at} holds only a loading script (datasets >= 4 refuses it); build a "
            f"mirror with `finetasks-afr data import-raw ... -d {task.dataset}` and set ${DATA_DIR_ENV}"
        )
    if hub_offline():
        return f"yes: the local hub cache of {repo}{at}"
    mirror = data_dir()
    where = f"not in the mirror at {mirror}" if mirror else f"${DATA_DIR_ENV} unset"
    return f"from the hub only: {repo}{at} ({where}; the hub is on, so it is downloaded when first read)"
