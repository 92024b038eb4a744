"""A selection's fine tasks as an lm-evaluation-harness 0.4 task folder (`finetasks-afr export lm-eval`).

Much of the African evaluation community runs lm-eval (AfroBench ships there); a selection should run there too.
The folder is self-contained: it runs with lm-eval and its own dependencies only (lm-eval 0.4.13 resolves
huggingface_hub 2.x, which lighteval 0.13 refuses, so the two rarely share an environment):

    DIR/README.md                 the `lm_eval --include_path DIR --tasks ...` command, what each file is, the licences
    DIR/utils.py                  `load_docs`: reads a task's documents from the JSON lines beside it (lm-eval's
                                  `custom_dataset` hook), so the folder can move; and the metrics lm-eval has not;
                                  imports lm-eval's own dependencies only
    DIR/<task>.yaml, <task>.jsonl one task of this suite: its documents exactly as this project's lighteval task shows
                                  them to a model (few-shot examples included, drawn at lighteval's seed), rendered
                                  here by lighteval's own PromptManager: every prompt has one implementation
    DIR/finetasks_afr_<lang>.yaml a group per language over its category groups (`finetasks_afr_<lang>_<category>`,
                                  each over its exported tasks and the kept lm-eval tasks of a selection made from
                                  lm-eval results), aggregated by lm-eval's plain mean over all the tasks under it

Per kept task, the metric: lm-eval's `acc` and `acc_norm` (by characters, as lighteval's `acc_norm`: both count the
choice's leading space) are always reported for a choice task; `acc_norm_token` (lm-eval has no token-normalised
accuracy: the token count depends on the model's tokenizer) and this project's PMI (`acc_norm_pmi`, conditioned on
the task's unconditioned query; lm-eval's `acc_mutual_info` conditions on nothing) are exported as the nearest
lm-eval metric, `acc_norm` and `acc_mutual_info`, and the README says so; `bits_per_byte` of a text as lm-eval's
rolling log-likelihood, of a reference given its prompt (translation) as a `loglikelihood` task whose
`process_results` in utils.py counts the reference's bytes. Partial scoring (Winogrande CF: a context per choice)
is one lm-eval `loglikelihood` request per (document, choice), each exactly the request lighteval's partial
scoring sends, folded back into an accuracy per document by utils.py (lm-eval's own multiple_input varies only the
contexts, and Winogrande's sentences that end at their blank vary the continuations instead). Generative tasks are
`generate_until` with the task's stop sequences and length, greedy, scored by utils.py's chrF++ or F1 and prefix
match (`finetasks_afr/export/lm_eval_utils.py`, copied as the folder's utils.py).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from analysis.base.io import atomic_write_text, check_output_directory, staged_directory
from analysis.base.write_errors import refused_write
from analysis.scores.lm_eval import FEWSHOT_IN_CONTEXT, afrobench_task_info
from analysis.scores.metrics import known_metric_help, metric_info
from analysis.scores.schema import problem
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
AGGREGATIONS = {"bits_per_byte": "bits_per_byte", "byte_perplexity": "weighted_perplexity",
                "word_perplexity": "weighted_perplexity"}  # fmt: skip
"""The aggregation lm-eval 0.4.13 registers for each perplexity metric (`lm_eval/api/metrics.py`: its
`register_metric` entries); a metric's own name is no registered aggregation (`byte_perplexity` is not one: lm-eval
warns at load, then fails in `_compute_task_aggregations` calling None). Every other exported metric is a `mean` or
a `!function` of the folder's utils.py."""
LM_EVAL_FILTERS = {"afrimgsm": "flexible-extract", "afriqa": "remove_whitespace", "masakhaner": "flexible-extract"}
"""The filter a kept AfroBench task of these benchmarks is scored under: the first by
`analysis.scores.lm_eval.FILTER_PREFERENCE` of those its lm-eval 0.4.13 task files define (afrimgsm: remove_whitespace
and flexible-extract), the one `collect`/`select` read; every other task reports under lm-eval's `none`. A group
names it in its aggregate_metric_list: without a filter_list lm-eval 0.4.12+ aggregates every filter its children
report, so the group would not report the selection's (metric, filter) alone."""
GENERATIVE_METRICS = ("chrf++",)
"""Generative metrics exported exactly through the folder's utils.py (besides F1 and prefix match, per language)."""
UTILS_SOURCE = Path(__file__).with_name("lm_eval_utils.py")
"""Copied into every export as its utils.py: the documents' loader and the metrics lm-eval has not."""
COMMAND = "export lm-eval"
"""The command its output marker names (`analysis.base.io.OUTPUT_MARKER`): no other command replaces the folder,
and it replaces no other command's."""
MAX_FEWSHOT = 100
"""The most few-shot examples a kept task may name: the suite's tasks use at most 25, and a larger count (a typo,
a unit error) would render contexts no model's window holds, or fail only after minutes of rendering."""


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
    kind: str = "choice"  # the rows' layout: choice, partial, rolling, reference, generation
    fewshot: int = 0  # the examples already in each context (lm-eval's own num_fewshot stays 0)
    filter: str = "none"  # the lm-eval filter its metrics are reported under (`LM_EVAL_FILTERS`)


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
    decisions = read_decisions(decisions_path)
    check_decisions(decisions, decisions_path)
    check_output_directory(Path(out), COMMAND, [Path(selection)])  # before the suite loads: it takes seconds
    kept = decisions.filter(pl.col("kept"))
    tasks, skipped = _kept_tasks(kept)
    if not tasks:
        reasons = "; ".join(f"{name}: {why}" for name, why in sorted(skipped.items())[:5])
        raise ExportError(f"{decisions_path}: no kept task can be exported to lm-eval ({reasons})")
    groups, scope = _groups(tasks)
    with staged_directory(Path(out), command=COMMAND, inputs=[Path(selection)]) as staging:
        for task in tasks:
            if task.rows:
                _write_task(staging, task)
        if any(task.rows for task in tasks):
            atomic_write_text(staging / "utils.py", UTILS_SOURCE.read_text(encoding="utf-8"))
        for group, members in groups.items():
            atomic_write_text(staging / f"{group}.yaml", _group_yaml(group, members, scope[group]))
        atomic_write_text(staging / "README.md", _readme(Path(out), tasks, groups, skipped))
    return Export(Path(out), tasks, groups, skipped)


def check_decisions(decisions: pl.DataFrame, path: Path) -> None:
    """`ExportError` naming every problem of a decisions file `read_decisions` accepted but an export cannot take,
    each with its lines and fix, as a score table's problems are worded: a task kept more than once (its files
    would be written twice, its group would list it twice), a few-shot count below 0 or above `MAX_FEWSHOT`
    (written into the task's metadata, it would file collected scores under `task|-1`), a metric the analysis does
    not know."""
    numbered = decisions.with_row_index("line", offset=2)  # line 1 is the header
    kept = numbered.filter(pl.col("kept"))
    twice = kept.filter(pl.col("task").is_duplicated())
    fewshot = numbered.filter((pl.col("fewshot") < 0) | (pl.col("fewshot") > MAX_FEWSHOT))
    metrics = numbered.get_column("metric").to_list()
    unknown = numbered.filter(pl.Series([m is None or metric_info(m) is None for m in metrics], dtype=pl.Boolean))
    problems = []
    if not twice.is_empty():
        problems.append(problem(("task", "kept"), twice.height, "kept row(s) keep a task more than once", _lines(twice),
                                "keep one (fewshot, metric) per task: set kept=false on the others, as `select` "
                                "writes it"))  # fmt: skip
    if not fewshot.is_empty():
        problems.append(problem(("fewshot",), fewshot.height, f"row(s) have a fewshot outside 0..{MAX_FEWSHOT}",
                                _lines(fewshot), "write the number of few-shot examples the task was scored with "
                                "(a whole number from 0)"))  # fmt: skip
    if not unknown.is_empty():
        fix = f"write the metric as the score table names it; {known_metric_help()}"
        problems.append(problem(("metric",), unknown.height, "row(s) name a metric the analysis does not know",
                                _lines(unknown), fix))  # fmt: skip
    if len(problems) == 1:
        raise ExportError(f"decisions file {path}: {problems[0]}")
    if problems:
        body = "\n".join(f"- {p}" for p in problems)
        raise ExportError(f"decisions file {path}: {len(problems)} problems:\n{body}")


def _lines(rows: pl.DataFrame) -> list[str]:
    return [f"line {r['line']}: task={r['task']} fewshot={r['fewshot']} metric={r['metric']} kept={r['kept']}"
            for r in rows.rows(named=True)]  # fmt: skip


def language_group(language: str) -> str:
    return f"finetasks_afr_{language}"


def _groups(tasks: list[ExportedTask]) -> tuple[dict[str, list[str]], dict[str, list[ExportedTask]]]:
    """group -> members, and group -> the tasks under it: per language a group of its category groups, per
    (language, category) a group of its tasks. lm-eval averages a group over all its leaf tasks, so a category
    group is the mean of its tasks and a language group the mean of all the language's tasks (not of its category
    means, as the selection's language score is)."""
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
        scored_under = LM_EVAL_FILTERS.get(info.benchmark, "none")
        tasks.append(
            ExportedTask(row["task"], info.language, info.category, [row["metric"]], row["metric"], filter=scored_under)
        )
    return sorted(tasks, key=lambda t: (t.language, t.name)), skipped


def _suite_tasks(rows: Iterable[Mapping[str, Any]]) -> tuple[list[ExportedTask], dict[str, str]]:
    """This suite's kept tasks rendered into documents, each exactly as its lighteval task shows it."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.data.sources import unreachable_tasks
    from finetasks_afr.tasks import TASK_INFO  # first: the suite's fixes and prompt words, which all_tasks needs

    # built anew, so the data come from the mirror $FINETASKS_AFR_DATA_DIR names now (--data-dir), not from where it
    # pointed when TASKS_TABLE was first built in this process
    configs = {config.name: config for config in all_tasks()}
    prompts = PromptManager(use_chat_template=False)
    tasks: list[ExportedTask] = []
    skipped: dict[str, str] = {}
    rows = list(rows)
    unreachable = unreachable_tasks({row["task"]: str(configs[row["task"]].hf_repo) for row in rows})
    if unreachable:  # the hub is off and no mirror has them: said before any document is read
        raise ExportError(f"the data of {len(unreachable)} kept task(s) cannot be read here: "
                          + "; ".join(unreachable) + f". Fix: {_DATA_FIX}")  # fmt: skip
    for row in rows:
        name, fewshot, metric = row["task"], int(row["fewshot"]), row["metric"]
        config = dataclasses.replace(configs[name], num_fewshots=fewshot)
        docs = _documents(LightevalTask(config), name, str(config.hf_repo), config.hf_subset)
        made = _render(name, TASK_INFO[name], metric, docs, prompts, [m.metric_name for m in config.metrics])
        if isinstance(made, str):
            skipped[name] = made
        else:
            tasks.append(dataclasses.replace(made, fewshot=fewshot))
    return tasks, skipped


_DATA_FIX = (
    "pass --data-dir with a mirror that holds these datasets and languages (`finetasks-afr --data-dir MIRROR "
    "export lm-eval ...`; build one with `finetasks-afr data import-raw` from the raw releases, or `finetasks-afr "
    "data mirror` where the hub is reachable), or set kept=false on those tasks"
)


def _documents(task: Any, name: str, location: str, subset: str | None) -> list[Any]:
    """The task's documents; a dataset that cannot be read (no network, the hub off, a mirror missing the
    language's files) is an `ExportError` naming the task, where its data was looked for and the fix. A write the
    system refused (a full disk under the datasets cache) passes on to the command's write-error message."""
    from finetasks_afr.data.sources import ScriptOnlyDatasetError, StaleMirrorError

    try:
        return list(task.get_docs())
    except (ScriptOnlyDatasetError, StaleMirrorError) as error:  # their messages say the fix already
        raise ExportError(f"{name}: {error}") from error
    except OSError as error:  # FileNotFoundError, ConnectionError (the hub's OfflineModeIsEnabled among them)
        if refused_write(error) is not None:
            raise
        where = f"{location}, config {subset}" if subset else location
        said = (str(error).splitlines() or ["no message"])[0]
        said = said.split(" with any supported extension")[0][:300]  # datasets lists ~150 extensions after it
        raise ExportError(
            f"{name}: its documents could not be read from {where} ({type(error).__name__}: {said}). Fix: {_DATA_FIX}"
        ) from error


def _render(name: str, info: Any, metric: str, docs: list[Any], prompts: Any, names: list[Any]) -> ExportedTask | str:
    """The lm-eval task of one suite task, or why it cannot be exported."""
    from finetasks_afr.scoring.partial_scoring import partial_contexts

    def task(rows: list[dict[str, Any]], output_type: str, metrics: list[str], kind: str) -> ExportedTask:
        return ExportedTask(name, info.language, info.category, metrics, metric, rows, output_type, info.dataset, kind)

    if info.formulation == "GEN":
        if metric not in GENERATIVE_METRICS and not _is_f1_or_prefix_match(metric):
            return f"its metric {metric} has no lm-eval counterpart this export writes"
        rows = [_generation_row(prompts, doc, names) for doc in docs]
        if len({(json.dumps(row["until"]), row["max_gen_toks"]) for row in rows}) > 1:
            return "its documents differ in stop sequences or length, which lm-eval sets once per task"
        return task(rows, "generate_until", _generation_metrics(names), "generation")
    if metric not in NEAREST and metric not in PERPLEXITY_METRICS:
        return f"its metric {metric} has no lm-eval counterpart this export writes"
    if metric in PERPLEXITY_METRICS:
        if any(doc.choices for doc in docs):
            rows = [_reference_row(prompts, doc, name) for doc in docs]
            return task(rows, "loglikelihood", [metric], "reference")
        return task([{"text": doc.query} for doc in docs], "loglikelihood_rolling", [metric], "rolling")
    contexts = [partial_contexts(doc) for doc in docs]
    if all(found is None for found in contexts):
        rows = [_choice_row(prompts, doc, name) for doc in docs]
        return task(rows, "multiple_choice", list(dict.fromkeys(["acc", "acc_norm", NEAREST[metric]])), "choice")
    if metric == "acc_norm_pmi":
        return "partial scoring with PMI: every option scores the same continuation, so PMI is not defined"
    pairs = enumerate(zip(docs, contexts, strict=True))
    rows = [request for number, (doc, found) in pairs for request in _per_choice(prompts, doc, found, name, number)]
    return task(rows, "loglikelihood", ["acc", "acc_norm"], "per_choice")


def _partial_doc(doc: Any, contexts: list[str] | None, index: int) -> Any:
    """The single request lighteval's partial scoring sends for choice `index`: the document with context `index`
    as its query (`finetasks_afr.scoring.partial_scoring`)."""
    assert contexts is not None
    return dataclasses.replace(doc, query=contexts[index])


def _choice_row(prompts: Any, doc: Any, name: str) -> dict[str, Any]:
    """One document as lm-eval's multiple_choice reads it: the context lighteval builds (few-shot examples
    included), the choices, the gold index; and the document's own query, which names it across harnesses."""
    return {"context": prompts.prepare_prompt(doc), "choices": list(doc.choices), "gold": _gold(doc, name),
            "query": doc.query}  # fmt: skip


def _per_choice(prompts: Any, doc: Any, contexts: list[str] | None, name: str, number: int) -> list[dict[str, Any]]:
    """A partial-scoring document as one lm-eval `loglikelihood` request per choice, exactly the request lighteval's
    partial scoring sends (the prompt of the document with choice i's context as its query, then choice i's
    continuation), each naming its document, choice and gold; utils.accuracy_over_choices folds them back."""
    gold = _gold(doc, name)
    return [
        {"context": prompts.prepare_prompt(_partial_doc(doc, contexts, i)), "continuation": choice, "document": number,
         "choice": i, "choices": len(doc.choices), "gold": gold, "query": doc.query}
        for i, choice in enumerate(doc.choices)
    ]  # fmt: skip


def _reference_row(prompts: Any, doc: Any, name: str) -> dict[str, Any]:
    """A reference scored given its prompt (a translation's log-likelihood form): the context and the gold
    continuation, leading space included, as lighteval scores it."""
    return {"context": prompts.prepare_prompt(doc), "continuation": doc.choices[_gold(doc, name)], "query": doc.query}


def _generation_row(prompts: Any, doc: Any, names: list[Any]) -> dict[str, Any]:
    """A generative document: the context, the golds, and (for F1 and prefix match) how lighteval normalises the
    language the answers are in."""
    row = {"context": prompts.prepare_prompt(doc), "golds": list(doc.get_golds()), "query": doc.query,
           "until": list(doc.stop_sequences or []), "max_gen_toks": doc.generation_size}  # fmt: skip
    language = next((n.removeprefix("f1_") for n in names if isinstance(n, str) and n.startswith("f1_")), None)
    if language is not None:
        row.update(_normaliser_of(language))
    return row


def _normaliser_of(language: str) -> dict[str, str]:
    """What lighteval's multilingual normaliser does for `language` (its article pattern, its word splitter)."""
    from lighteval.metrics.normalizations import _ARTICLE_PATTERNS
    from lighteval.metrics.utils.linguistic_tokenizers import TOKENIZER_FACTORY
    from lighteval.utils.language import Language

    member = Language(language)
    factory = TOKENIZER_FACTORY.get(member)
    splitter = factory() if factory is not None else None
    code = getattr(splitter, "spacy_language", None)
    word_split = f"spacy:{code}" if code else ("whitespace" if splitter is None else type(splitter).__name__)
    return {"answers_in": language, "articles": _ARTICLE_PATTERNS.get(member) or "", "word_split": word_split}


def _is_f1_or_prefix_match(metric: str) -> bool:
    return metric.startswith("f1_") or (metric.startswith("exact_match_") and metric.endswith("_prefix"))


def _generation_metrics(names: list[Any]) -> list[str]:
    return [n for n in names if isinstance(n, str) and (n in GENERATIVE_METRICS or _is_f1_or_prefix_match(n))]


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


def metric_aggregation(metric: str) -> str:
    """The aggregation lm-eval registers for an exported metric kind (`AGGREGATIONS`, else the mean)."""
    return AGGREGATIONS.get(metric, "mean")


def _metric_entry(metric: str, aggregation: str | None = None) -> str:
    higher = "false" if metric in PERPLEXITY_METRICS else "true"
    aggregation = aggregation or metric_aggregation(metric)
    return f"  - metric: {json.dumps(metric)}\n    aggregation: {aggregation}\n    higher_is_better: {higher}\n"


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
    metrics = "".join(_metric_entry(m) for m in task.metrics)
    if task.kind == "rolling":
        body = "doc_to_text: ''\ndoc_to_target: text\n"
    elif task.kind == "reference":
        body = ("doc_to_text: context\ndoc_to_target: continuation\ntarget_delimiter: ''\n"
                "process_results: !function utils.reference_bits_per_byte\n")  # fmt: skip
    elif task.kind == "per_choice":  # a request per (document, choice); the accuracy folds them per document
        body = ("# one request per (document, choice): partial scoring gives each choice its own context\n"
                "doc_to_text: context\ndoc_to_target: continuation\ntarget_delimiter: ''\n"
                "process_results: !function utils.choice_loglikelihood\n")  # fmt: skip
        metrics = _metric_entry("acc", "!function utils.accuracy_over_choices") + _metric_entry(
            "acc_norm", "!function utils.normalised_accuracy_over_choices"
        )
    elif task.kind == "generation":
        first = task.rows[0]
        until = json.dumps(first["until"], ensure_ascii=False)
        body = ("doc_to_text: context\ndoc_to_target: golds\ntarget_delimiter: ''\n"
                f"generation_kwargs:\n  until: {until}\n  max_gen_toks: {first['max_gen_toks']}\n"
                "  do_sample: false\n")  # fmt: skip
        if "chrf++" in task.metrics:
            body += "process_results: !function utils.chrf_plus_plus_results\n"
            metrics = _metric_entry("chrf++", "!function utils.chrf_plus_plus")
        else:
            body += "process_results: !function utils.f1_and_prefix_match\n"
    else:
        body = "doc_to_text: context\ndoc_to_choice: choices\ndoc_to_target: gold\ntarget_delimiter: ''\n"
    # read back by `finetasks-afr collect` as the task's few-shot count (lm-eval's n-shot says 0)
    metadata = f"metadata:\n  version: 1.0\n  {FEWSHOT_IN_CONTEXT}: {task.fewshot}\n"
    return head + body + "metric_list:\n" + metrics + metadata


def _group_yaml(group: str, members: list[str], tasks: list[ExportedTask]) -> str:
    """A group over `members` (category groups, or tasks); each metric is lm-eval's plain mean, without weighting by
    size, over the tasks under the group that report it: lm-eval 0.4.13 aggregates a group over all its leaf tasks
    (`Group.aggregate`), not over its subgroups' scores."""
    metrics = list(dict.fromkeys((m, t.filter) for t in tasks for m in t.metrics if m not in PERPLEXITY_METRICS))
    notes = sorted({f"# {t.name}: {DIFFERENCES[t.chosen]}\n" for t in tasks if t.chosen in DIFFERENCES})
    lines = [f"group: {group}\n", "task:\n", *(f"  - {member}\n" for member in members)]
    if metrics:
        lines.append("aggregate_metric_list:\n")
        lines += [f"  - metric: {json.dumps(m)}\n    filter_list: [{json.dumps(f)}]\n    aggregation: mean\n"
                  "    weight_by_size: false\n" for m, f in metrics]  # fmt: skip
    return (
        "# Written by finetasks-afr export lm-eval. lm-eval averages each metric over every task under the group that\n"
        "# reports it (lm-eval 0.4.13 aggregates over leaf tasks, so a language is the plain mean of all its tasks);\n"
        "# the selection's language score is a mean of category means, each task rescaled between its baseline and\n"
        "# a perfect score first: it weighs a category with few tasks more.\n" + "".join(notes) + "".join(lines)
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
        f"lm_eval --model hf --model_args pretrained=<model> --include_path {shlex.quote(str(out))} --tasks "
        f"{shlex.quote(names)} --log_samples --output_path <results>",
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
    spacy_languages = sorted({f"{t.rows[0]['answers_in']} ({t.rows[0]['word_split']})" for t in tasks
                              if t.kind == "generation" and t.rows and "word_split" in t.rows[0]
                              and t.rows[0]["word_split"] != "whitespace"})  # fmt: skip
    if spacy_languages:
        lines += ["", "F1 and prefix match split words as lighteval does for the answers' language: with spaCy's blank",
                  "tokenizer for " + ", ".join(spacy_languages) + " when spaCy is installed in the lm-eval",
                  "environment (`pip install spacy`), else on whitespace, which differs where spaCy splits inside a",
                  "word (`100km`)."]  # fmt: skip
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
