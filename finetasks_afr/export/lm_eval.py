"""A selection's fine tasks as an lm-evaluation-harness 0.4 task folder (`finetasks-afr export lm-eval`).

Much of the African evaluation community runs lm-eval (AfroBench ships there); a selection should run there too.
The folder is self-contained: it runs with lm-eval and its own dependencies only (lm-eval 0.4.13 resolves
huggingface_hub 2.x, which lighteval 0.13 refuses, so the two rarely share an environment):

    DIR/README.md                 the `lm_eval --include_path DIR --tasks ...` command, what each file is, the licences
    DIR/utils.py                  `load_docs`: reads a task's documents from the JSON lines beside it (lm-eval's
                                  `custom_dataset` hook), so the folder can move; imports `datasets` only
    DIR/<task>.yaml, <task>.jsonl one task of this suite: its documents exactly as this project's lighteval task shows
                                  them to a model (few-shot examples included, drawn at lighteval's seed), rendered
                                  here by lighteval's own PromptManager: every prompt has one implementation
    DIR/finetasks_afr_<lang>.yaml a group per language over its category groups (`finetasks_afr_<lang>_<category>`,
                                  each over its exported tasks and the kept lm-eval tasks of a selection made from
                                  lm-eval results), aggregated by lm-eval's mean: a mean of category means

Per kept task, the metric: lm-eval's `acc` and `acc_norm` (by characters, as lighteval's `acc_norm`: both count the
choice's leading space) are always reported for a choice task; `acc_norm_token` (lm-eval has no token-normalised
accuracy: the token count depends on the model's tokenizer) and this project's PMI (`acc_norm_pmi`, conditioned on
the task's own unconditioned query; lm-eval's `acc_mutual_info` conditions on nothing) are exported as the nearest
lm-eval metric, `acc_norm` and `acc_mutual_info`, and the README says so; `bits_per_byte` as lm-eval's rolling
log-likelihood. A task this module cannot express exactly (generative tasks, partial scoring, conditioned
perplexities) is left out and listed with the reason.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from analysis.base.io import atomic_write_text, staged_directory
from analysis.scores.lm_eval import afrobench_task_info
from analysis.select import read_decisions

NEAREST = {"acc": "acc", "acc_norm": "acc_norm", "acc_norm_token": "acc_norm", "acc_norm_pmi": "acc_mutual_info"}
"""The lm-eval multiple-choice metric a kept choice metric is exported as (exact for acc and acc_norm)."""
DIFFERENCES = {
    "acc_norm_token": "lm-eval has no token-normalised accuracy (the token count depends on the model's tokenizer); "
    "exported as acc_norm (by characters)",
    "acc_norm_pmi": "this project's PMI conditions each choice on the task's unconditioned query; lm-eval's "
    "acc_mutual_info conditions on nothing",
}
PERPLEXITY_METRICS = ("bits_per_byte", "byte_perplexity", "word_perplexity")
UTILS = '''"""Written by `finetasks-afr export lm-eval`: a task's documents, from the JSON lines beside this file."""

import json
from pathlib import Path

import datasets


def load_docs(data_file, **_):
    """lm-eval's `custom_dataset` hook: the documents of `data_file` (a name in this folder) as the test split."""
    path = Path(__file__).resolve().parent / data_file
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
'''


class ExportError(ValueError):
    """A selection that cannot be exported; the message names the file or task and the fix."""


@dataclass
class ExportedTask:
    """One task of the folder: its name, language, metrics and (for this suite's tasks) its documents."""

    name: str
    language: str
    category: str
    metrics: list[str]
    chosen: str  # the selection's metric
    rows: list[dict[str, Any]] = field(default_factory=list)  # empty for a kept lm-eval task (lm-eval has it)
    output_type: str = "multiple_choice"
    dataset: str = ""  # SOURCES key, for the licence


@dataclass
class Export:
    """What `export_lm_eval` wrote: the folder, its tasks and groups, what was left out and why."""

    out: Path
    tasks: list[ExportedTask]
    groups: dict[str, list[str]]
    skipped: dict[str, str]


def export_lm_eval(selection: Path, out: Path) -> Export:
    """Export the kept tasks of the `select` output `selection` into the lm-eval task folder `out`, built aside
    and swapped in whole. The documents are read as this project's tasks read them (the mirror
    $FINETASKS_AFR_DATA_DIR names, or the hub)."""
    decisions_path = Path(selection) / "decisions.csv"
    kept = read_decisions(decisions_path).filter(pl.col("kept"))
    tasks, skipped = _kept_tasks(kept)
    if not tasks:
        reasons = "; ".join(f"{name}: {why}" for name, why in sorted(skipped.items())[:5])
        raise ExportError(f"{decisions_path}: no kept task can be exported to lm-eval ({reasons})")
    groups, scope = _groups(tasks)
    with staged_directory(Path(out)) as staging:
        for task in tasks:
            if task.rows:
                _write_task(staging, task)
        if any(task.rows for task in tasks):
            atomic_write_text(staging / "utils.py", UTILS)
        for group, members in groups.items():
            atomic_write_text(staging / f"{group}.yaml", _group_yaml(group, members, scope[group]))
        atomic_write_text(staging / "README.md", _readme(Path(out), tasks, groups, skipped))
    return Export(Path(out), tasks, groups, skipped)


def language_group(language: str) -> str:
    return f"finetasks_afr_{language}"


def _groups(tasks: list[ExportedTask]) -> tuple[dict[str, list[str]], dict[str, list[ExportedTask]]]:
    """group -> members, and group -> the tasks under it: per language a group of its category groups, per
    (language, category) a group of its tasks, so that lm-eval's mean of means is the selection's mean of category
    means (without its rescaling)."""
    members: dict[str, list[str]] = {}
    scope: dict[str, list[ExportedTask]] = {}
    for task in tasks:
        language, category = language_group(task.language), f"{language_group(task.language)}_{task.category.lower()}"
        if category not in members:
            members.setdefault(language, []).append(category)
        members.setdefault(category, []).append(task.name)
        for group in (language, category):
            scope.setdefault(group, []).append(task)
    return members, scope


def _kept_tasks(kept: pl.DataFrame) -> tuple[list[ExportedTask], dict[str, str]]:
    """The exported tasks (this suite's rendered, lm-eval's named) and the kept tasks left out, with why."""
    from finetasks_afr.tasks import TASK_INFO

    suite_rows = kept.filter(pl.col("task").is_in(list(TASK_INFO)))
    tasks, skipped = _suite_tasks(suite_rows.rows(named=True))
    for row in kept.filter(~pl.col("task").is_in(list(TASK_INFO))).rows(named=True):
        info = afrobench_task_info(row["task"])
        if info is None:
            skipped[row["task"]] = "neither a task of this suite nor an lm-eval (AfroBench) task name"
            continue
        tasks.append(ExportedTask(row["task"], info.language, info.category, [row["metric"]], row["metric"]))
    return sorted(tasks, key=lambda t: (t.language, t.name)), skipped


def _suite_tasks(rows: Iterable[Mapping[str, Any]]) -> tuple[list[ExportedTask], dict[str, str]]:
    """This suite's kept tasks rendered into documents, each exactly as its lighteval task shows it."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.scoring.partial_scoring import partial_contexts
    from finetasks_afr.tasks import TASK_INFO  # first: the suite's fixes and prompt words, which all_tasks needs

    # built anew, so the data come from the mirror $FINETASKS_AFR_DATA_DIR names now (--data-dir), not from where it
    # pointed when TASKS_TABLE was first built in this process
    configs = {config.name: config for config in all_tasks()}
    prompts = PromptManager(use_chat_template=False)
    tasks: list[ExportedTask] = []
    skipped: dict[str, str] = {}
    for row in rows:
        name, fewshot, metric = row["task"], int(row["fewshot"]), row["metric"]
        info = TASK_INFO[name]
        if info.formulation == "GEN":
            skipped[name] = "generative: not exported yet (lm-eval's generate_until with this project's metrics)"
            continue
        if metric not in NEAREST and metric not in PERPLEXITY_METRICS:
            skipped[name] = f"its metric {metric} has no lm-eval counterpart this export writes"
            continue
        docs = LightevalTask(dataclasses.replace(configs[name], num_fewshots=fewshot)).get_docs()
        if metric in PERPLEXITY_METRICS:
            if any(doc.choices for doc in docs):
                skipped[name] = "a perplexity of a text given a context: lm-eval's rolling log-likelihood has none"
                continue
            rows_out = [{"text": doc.query} for doc in docs]
            tasks.append(ExportedTask(name, info.language, info.category, [metric], metric, rows_out,
                                      "loglikelihood_rolling", info.dataset))  # fmt: skip
            continue
        if any(partial_contexts(doc) is not None for doc in docs):
            skipped[name] = "partial scoring (one context per choice): not exported yet (lm-eval's multiple_input)"
            continue
        rendered = [_choice_row(prompts, doc, name) for doc in docs]
        metrics = list(dict.fromkeys(["acc", "acc_norm", NEAREST[metric]]))
        tasks.append(ExportedTask(name, info.language, info.category, metrics, metric, rendered, dataset=info.dataset))
    return tasks, skipped


def _choice_row(prompts: Any, doc: Any, name: str) -> dict[str, Any]:
    """One document as lm-eval's multiple_choice reads it: the context lighteval builds (few-shot examples
    included), the choices, the gold index; and the document's own query, which names it across harnesses."""
    return {"context": prompts.prepare_prompt(doc), "choices": list(doc.choices), "gold": _gold(doc, name),
            "query": doc.query}  # fmt: skip


def _gold(doc: Any, name: str) -> int:
    gold = doc.gold_index
    gold = gold[0] if isinstance(gold, list) and len(gold) == 1 else gold
    if not isinstance(gold, int):
        raise ExportError(f"{name}: a document has gold {doc.gold_index!r}; lm-eval's multiple_choice needs one index")
    return gold


def _write_task(folder: Path, task: ExportedTask) -> None:
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in task.rows)
    atomic_write_text(folder / f"{task.name}.jsonl", lines)
    atomic_write_text(folder / f"{task.name}.yaml", _task_yaml(task))


def _metric_entry(metric: str) -> str:
    higher = "false" if metric in PERPLEXITY_METRICS else "true"
    aggregation = {"bits_per_byte": "bits_per_byte", "byte_perplexity": "byte_perplexity",
                   "word_perplexity": "weighted_perplexity"}.get(metric, "mean")  # fmt: skip
    return f"  - metric: {metric}\n    aggregation: {aggregation}\n    higher_is_better: {higher}\n"


def _task_yaml(task: ExportedTask) -> str:
    """The task's YAML: documents from utils.load_docs; the fields named so lm-eval reads them as they are."""
    head = (
        f"# Written by finetasks-afr export lm-eval: {task.name}, the selection's metric {task.chosen}.\n"
        f"task: {task.name}\n"
        "custom_dataset: !function utils.load_docs\n"
        f"dataset_kwargs:\n  data_file: {task.name}.jsonl\n"
        "test_split: test\n"
        f"output_type: {task.output_type}\n"
        "num_fewshot: 0  # the few-shot examples are in each document's context already\n"
    )
    if task.output_type == "loglikelihood_rolling":
        body = "doc_to_text: ''\ndoc_to_target: text\n"
    else:
        body = "doc_to_text: context\ndoc_to_choice: choices\ndoc_to_target: gold\ntarget_delimiter: ''\n"
    return head + body + "metric_list:\n" + "".join(_metric_entry(m) for m in task.metrics)


def _group_yaml(group: str, members: list[str], tasks: list[ExportedTask]) -> str:
    """A group over `members` (category groups, or tasks); each metric a task under it reports is aggregated by
    lm-eval's plain mean, without weighting by size."""
    metrics = list(dict.fromkeys(m for t in tasks for m in t.metrics if m not in PERPLEXITY_METRICS))
    notes = sorted({f"# {t.name}: {DIFFERENCES[t.chosen]}\n" for t in tasks if t.chosen in DIFFERENCES})
    lines = [f"group: {group}\n", "task:\n", *(f"  - {member}\n" for member in members)]
    if metrics:
        lines.append("aggregate_metric_list:\n")
        lines += [f"  - metric: {m}\n    aggregation: mean\n    weight_by_size: false\n" for m in metrics]
    return (
        "# Written by finetasks-afr export lm-eval. lm-eval averages each metric over the members reporting it (a\n"
        "# language: the mean of its category means); the selection's language score rescales each task between\n"
        "# its baseline and a perfect score first.\n" + "".join(notes) + "".join(lines)
    )


def _readme(out: Path, tasks: list[ExportedTask], groups: Mapping[str, list[str]], skipped: Mapping[str, str]) -> str:
    from finetasks_afr.data.sources import LICENCES, SOURCES

    names = ",".join(sorted({language_group(task.language) for task in tasks}))
    lines = [
        "# The selection's fine tasks for lm-evaluation-harness",
        "",
        "Written by `finetasks-afr export lm-eval`. Run with lm-eval 0.4 (this project need not be installed):",
        "",
        "```text",
        f"lm_eval --model hf --model_args pretrained=<model> --include_path {out} --tasks {names} --log_samples "
        "--output_path <results>",
        "```",
        "",
        "`finetasks-afr collect <results>` reads the output back into a score table.",
        "",
        "| task | language | lm-eval metrics | the selection's metric | documents |",
        "|---|---|---|---|---|",
    ]
    for task in tasks:
        count = str(len(task.rows)) if task.rows else "lm-eval's own task"
        lines.append(f"| `{task.name}` | {task.language} | {', '.join(task.metrics)} | {task.chosen} | {count} |")
    different = [(t.name, DIFFERENCES[t.chosen]) for t in tasks if t.chosen in DIFFERENCES]
    if different:
        lines += ["", "Metrics exported as the nearest lm-eval metric:", ""]
        lines += [f"- `{name}`: {why}" for name, why in different]
    if skipped:
        lines += ["", "Kept tasks not exported:", ""]
        lines += [f"- `{name}`: {why}" for name, why in sorted(skipped.items())]
    datasets = sorted({t.dataset for t in tasks if t.dataset})
    if datasets:
        lines += ["", "The documents come from these datasets; their licences bind the JSON lines here:", ""]
        for key in datasets:
            source = SOURCES.get(key)
            where = f"`{source.hub_repo}`" if source is not None else key
            licence = LICENCES.get(key, "not recorded: see the dataset's card")
            lines.append(f"- {key} ({where}): {licence}")
    return "\n".join(lines) + "\n"
