"""The task suite for LightEval: what `lighteval accelerate ... --custom-tasks finetasks_afr/tasks.py` loads.

Importing this module (1) applies the fixes for lighteval's acc_norm_token and acc_norm_pmi
(finetasks_afr.scoring.compat), the few-shot sampler that never shows a document (or a same-text duplicate) among its
own examples and draws each document's examples with its own seed (finetasks_afr.prompts.fewshot), and partial scoring
with one context per choice for Winogrande CF (finetasks_afr.scoring.partial_scoring), (2) registers in-language prompt
words for every covered language (finetasks_afr.prompts.literals), then (3) builds TASKS_TABLE: every benchmark family
in every language its dataset covers, in CF / MCF / hybrid (or generative) form, with in-language and `_enprompt`
English prompt words, and (4) makes lighteval 0.13's `tasks list` show them (finetasks_afr.scoring.compat_listing).
Data come from the hub (pinned revisions) or from the mirror named by $FINETASKS_AFR_DATA_DIR.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from finetasks_afr.benchmarks import all_tasks
from finetasks_afr.benchmarks.common import SKIPPED_ROWS, TASK_INFO, TaskInfo
from finetasks_afr.prompts import fewshot
from finetasks_afr.prompts.literals import register_literals
from finetasks_afr.scoring import compat, compat_listing, partial_scoring
from finetasks_afr.scoring.lighteval_runtime import one_line_data_errors, silence_torch_dtype_deprecation

compat.apply()
silence_torch_dtype_deprecation()
one_line_data_errors()
fewshot.apply()
partial_scoring.apply()
register_literals()
TASKS_TABLE = all_tasks()
compat_listing.apply([config.name for config in TASKS_TABLE])  # `lighteval tasks list --custom-tasks` shows them


def tasks_with_local_data(
    mirror: Path, languages: Collection[str] | None = None, *, generative: bool = False
) -> list[str]:
    """The names of the suite's tasks whose dataset config the local mirror holds, in suite order: only the
    log-likelihood ones unless `generative`, only those of `languages` when given. What a whole-suite run on local
    data evaluates (`bench/bench_suite.py`, the micro-scale study)."""
    import datasets

    folders = [key for key in Path(mirror).iterdir() if key.is_dir()]
    available = {key.name: set(datasets.get_dataset_config_names(str(key))) for key in folders}
    return [
        config.name
        for config in TASKS_TABLE
        if (generative or TASK_INFO[config.name].formulation != "GEN")
        and (languages is None or TASK_INFO[config.name].language in languages)
        and config.hf_subset in available.get(TASK_INFO[config.name].dataset, set())
    ]


def evaluated_majority(entries: Collection[str], max_samples: int | None) -> dict[str, float]:
    """`task|fewshot` -> the majority answer's share of the documents lighteval evaluates for it with
    `max_samples` (`LightevalTask.get_docs`: the same shuffle and cut as a sweep's pipeline), for the choice tasks
    (CF, MCF, HYBRID): the score table's `majority_baseline`, for a table made before a sweep recorded it.

    The configs are built anew, so the data come from the mirror $FINETASKS_AFR_DATA_DIR names now; the documents
    do not depend on the few-shot count (lighteval shuffles and cuts them before drawing examples)."""
    import dataclasses

    from lighteval.tasks.lighteval_task import LightevalTask

    from finetasks_afr.benchmarks.common import CHOICE_FORMULATIONS, majority_share

    wanted = {entry.split("|")[0] for entry in entries}
    configs = {config.name: config for config in all_tasks() if config.name in wanted}
    out = {}
    for entry in entries:
        name = entry.split("|")[0]
        if name not in configs or TASK_INFO[name].formulation not in CHOICE_FORMULATIONS:
            continue
        docs = LightevalTask(dataclasses.replace(configs[name], num_fewshots=0)).get_docs(max_samples)
        share = majority_share(docs)
        if share is not None:
            out[entry] = share
    return out


__all__ = ["SKIPPED_ROWS", "TASKS_TABLE", "TASK_INFO", "TaskInfo", "evaluated_majority", "tasks_with_local_data"]
