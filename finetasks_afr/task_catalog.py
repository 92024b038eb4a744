"""Writes the suite's task index (`finetasks_afr/data/task_index.json`) from the suite itself.

`python -m finetasks_afr.task_catalog` builds the suite (`finetasks_afr/tasks.py`: lighteval, every config) and
writes what `finetasks-afr tasks` shows, so that listing tasks costs a JSON read instead of the suite's 17-60 s
import. Run it after changing a benchmark; `tests/tasks/test_tasks_cli.py` builds the suite and fails while the
committed file differs from what this writes.

The index records each config's hub location, so it is built with no mirror configured ($FINETASKS_AFR_DATA_DIR
removed before the suite is built): where a task reads from on a given machine is decided when it is shown
(`finetasks_afr.data.task_index.data_location`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from finetasks_afr.data.sources import DATA_DIR_ENV
from finetasks_afr.data.task_index import INDEX_FILE


def _metric_names(metrics: Iterable[Any]) -> list[str]:
    """Every metric name a config reports (a metric may report several, named by a list)."""
    names: list[str] = []
    for metric in metrics:
        name = metric.metric_name
        names.extend(name if isinstance(name, list) else [name])
    return names


def catalog() -> dict[str, Any]:
    """The index's JSON form, from the suite as `finetasks_afr/tasks.py` builds it in this process. Raises when a
    mirror is configured: the index records hub locations."""
    from finetasks_afr.data.sources import SOURCES, data_dir

    if data_dir() is not None:
        raise RuntimeError(f"build the task index with ${DATA_DIR_ENV} unset: it records hub locations")
    from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS
    from lighteval.utils.language import Language

    from finetasks_afr.benchmarks.common import words_language
    from finetasks_afr.prompts.languages import language
    from finetasks_afr.prompts.literals import WORD_FIELDS
    from finetasks_afr.tasks import TASK_INFO, TASKS_TABLE

    used = {TASK_INFO[config.name].dataset for config in TASKS_TABLE}
    datasets = {
        key: {"hub_repo": src.hub_repo, "revision": src.revision, "hub_form": src.hub_form, "layout": src.layout}
        for key, src in sorted(SOURCES.items())
        if key in used
    }
    words: dict[str, dict[str, str]] = {}
    tasks = []
    for config in TASKS_TABLE:
        info = TASK_INFO[config.name]
        try:
            words_in = words_language(language(info.language), info.prompt).value
        except ValueError:  # a language without prompt words whose task shows none (a bits-per-byte text)
            words_in = ""
        if words_in and words_in not in words:
            stored = vars(TRANSLATION_LITERALS.get(Language(words_in)) or object())
            words[words_in] = {name: stored[name] for name in WORD_FIELDS if stored.get(name) is not None}
        row: dict[str, Any] = {
            "name": config.name,
            "benchmark": info.benchmark,
            "language": info.language,
            "category": info.category,
            "formulation": info.formulation,
            "prompt": info.prompt,
            "random_baseline": info.random_baseline,
            "dataset": info.dataset,
            "subset": info.subset,
            "metrics": _metric_names(config.metrics),
            "evaluation_splits": list(config.evaluation_splits),
            "few_shots_split": config.few_shots_split,
            "hf_avail_splits": list(config.hf_avail_splits or ()),
            "generation_size": config.generation_size,
            "words": words_in,
        }
        facts = datasets[info.dataset]
        if (config.hf_repo, config.hf_revision) != (facts["hub_repo"], facts["revision"]):
            row["repo"], row["revision"] = config.hf_repo, config.hf_revision
        tasks.append(row)
    return {"datasets": datasets, "words": dict(sorted(words.items())), "tasks": tasks}


def render(data: dict[str, Any]) -> str:
    """The file's text: the task fields named once (`columns`), then one task a line as a list of values (a
    `repo`/`revision` pair only where a task reads another dataset's location), so a change to the suite reads as
    a short diff and the file stays a third of its keyed size."""
    columns = [key for key in data["tasks"][0] if key not in ("repo", "revision")]
    head = json.dumps(
        {"datasets": data["datasets"], "words": data["words"], "columns": columns}, ensure_ascii=False, indent=1
    )
    rows = []
    for row in data["tasks"]:
        values = [row[key] for key in columns]
        if "repo" in row:
            values.append({"repo": row["repo"], "revision": row["revision"]})
        rows.append(" " + json.dumps(values, ensure_ascii=False, separators=(",", ":")))
    return head[:-2] + ',\n "tasks": [\n' + ",\n".join(rows) + "\n ]\n}\n"


def write(path: Path = INDEX_FILE) -> int:
    """Rebuild the suite and write its index to `path`; the number of tasks."""
    data = catalog()
    path.write_text(render(data), encoding="utf-8")
    return len(data["tasks"])


if __name__ == "__main__":
    os.environ.pop(DATA_DIR_ENV, None)
    print(f"wrote {write()} tasks to {INDEX_FILE}")
