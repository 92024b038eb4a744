"""lm-evaluation-harness 0.4 results folders -> the score table, and what AfroBench's task names mean.

Teams that evaluate with lm-eval 0.4 (AfroBench, AfroBench-based leaderboards) hand over the folder lm-eval
wrote; `read_scores` (``finetasks-afr select DIR``) and `finetasks_afr.sweep.collect` (``finetasks-afr collect``)
both read it through this module, so one rule decides each row whichever door the folder came in by.

What lm-eval 0.4 writes (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163):

- ``<output_path>/<model_name_sanitized>/results_<datetime>.json`` (lm_eval/loggers/evaluation_tracker.py#L269-L281;
  an ``--output_path`` ending in ``.json`` gives ``<stem>_<datetime>.json`` beside it), per-task
  ``samples_<task>_<datetime>.jsonl`` next to it (#L336-L345, ignored here). ``model_name_sanitized`` is the
  model name with ``"<>:/|\\?*[]`` runs replaced by ``__`` (lm_eval/utils.py#L296-L300): the revision is not
  in it, so every checkpoint of a hub model lands in one folder and only ``config.model_args`` tells them apart.
- Top level (lm_eval/result_schema.py#L19-L107, assembled in lm_eval/evaluator_utils.py#L157-L166 and
  lm_eval/evaluator.py#L394-L420): ``results`` {task: {"alias", "name", "sample_len", "<metric>,<filter>": value,
  "<metric>_stderr,<filter>": value or "N/A" (evaluator_utils.py#L202-L217)}}; ``groups`` (group aggregates, only
  when a group aggregates) and ``group_subtasks`` {group: [children]}; group rows are ALSO in ``results``
  (evaluator_utils.py#L120-L132, #L293-L295), so they are skipped here or they would count their subtasks twice;
  ``configs`` {task: YAML config incl. num_fewshot, dataset_path, dataset_name}; ``versions``; ``n-shot``
  {task: int}; ``higher_is_better``; ``n-samples``; ``config`` {"model", "model_args" (the CLI string
  ``pretrained=...,revision=step1000`` or a dict), "model_revision" (HF models), ...}; ``date`` (start time,
  UNIX seconds); ``model_name`` (from model_args by the keys peft, delta, pretrained, model, path, engine:
  evaluation_tracker.py#L75-L93).

The checkpoint (run, seed, step) of a file comes from its model: a local checkpoint path (``pretrained=/ckpt/
runs/mix-a/seed-1/checkpoint-200``) by `analysis.scores.discover.identity_from_path`, a hub model by a
``step<N>`` revision (``revision=`` in model_args, else ``config.model_revision``), the run being the model's last
name component; `checkpoint_of` is the one rule, shared with the collection of lighteval results. When the model
says no step, the nearest folder above the file named like a checkpoint (``checkpoint-200``, ``step1000``) is
read by the same discovery rules. Re-runs: for one (run, seed, step, task, fewshot) the newest file wins (the
``<datetime>`` of its name, as lm-eval's own ``get_latest_filename``, then ``date``).

Filters: a metric reported under several filters keeps one, by `FILTER_PREFERENCE` (``none``, then
``flexible-extract``, which AfroBench's AfriMGSM scores report, then ``remove_whitespace``, then ``strict-match``);
the metric name stays lm-eval's (``exact_match``), since analysis.scores.metrics knows no filter suffix. The
filter used is
named in the load notes.

AfroBench task names (`afrobench_task_info`): rules on the family prefix, modifiers, language code and
``_prompt_<N>`` suffix of the YAML task names under lm_eval/tasks/afrobench/, lm_eval/tasks/afrimmlu, afrixnli and
afrimgsm (the families AfroBench's groups include); the list they were tested on is
tests/fixtures/lm_eval_04/afrobench_task_names.txt.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import langcodes
import polars as pl

from analysis.base.input_file import special_file_problem
from analysis.scores.discover import (
    Checkpoint,
    DiscoveryError,
    identity_from_path,
    is_checkpoint_dir,
    separate_models,
    token_conflicts,
    token_override_note,
    tokens_of,
    tokens_origin,
)
from analysis.scores.metrics import metric_info
from analysis.scores.schema import COLUMNS, OPTIONAL_SCHEMA, SCHEMA, ScoreTableError
from analysis.scores.task_info import LM_EVAL_TASK_INFO, TaskInfo, read_task_info
from analysis.scores.validate import LoadReport, validate


class LmEvalError(ScoreTableError):
    """An lm-eval 0.4 results file that cannot be read; the message names the file, the entry and the fix."""


FEWSHOT_IN_CONTEXT = "fewshot_in_context"
"""An exported task's `metadata` key: the few-shot examples its contexts already hold (lm-eval's n-shot is 0 there),
read as the task's few-shot count, so a collected score lands on the selection's `task|k`."""

FILTER_PREFERENCE: tuple[str, ...] = ("none", "flexible-extract", "remove_whitespace", "strict-match")
"""Which filter's value a metric keeps when lm-eval reports several; any other filter ranks after these, by name."""

RESULTS_GLOB = "results_*.json"
_STEP_REVISION = re.compile(r"step[-_]?(\d+)", re.IGNORECASE)
_ENTRY_FIELDS = frozenset({"alias", "name", "sample_len", "sample_count"})
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")  # evaluation_tracker.py#L84, in order


# --------------------------------------------------------------------------------------------------
# Recognising lm-eval 0.4 files


def is_lm_eval_04(data: object) -> bool:
    """Whether a parsed JSON object is an lm-eval 0.4 results file: `results` plus the per-task tables 0.4 added.

    v0 files (the Pythia evaluations) have `results`, `versions` and `config` only; lighteval's have
    `config_general`. `configs`, `n-shot` and `group_subtasks` appear from 0.4 on.
    """
    return (
        isinstance(data, dict)
        and isinstance(data.get("results"), dict)
        and any(key in data for key in ("configs", "n-shot", "group_subtasks"))
    )


def _mapping(data: dict, key: str) -> dict:
    """`data[key]` when it is an object, else an empty one (lm-eval leaves out keys it has nothing for)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _load(path: Path) -> Any:
    """A JSON file's content; unreadable files are an error naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise LmEvalError(
            f"{path}: not a readable JSON file ({error}); fix: re-run the evaluation or delete it"
        ) from error


NOT_RESULTS: frozenset[str] = frozenset(
    {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "added_tokens.json", "vocab.json", "trainer_state.json", "model.safetensors.index.json",
        "pytorch_model.bin.index.json", "adapter_config.json", "preprocessor_config.json", "part.json",
    }
)  # fmt: skip
"""JSON files of checkpoint folders and sweep parts that are never results: not opened when looking for results."""


def holds_lm_eval_04(path: Path) -> bool:
    """Whether a .json file's content is an lm-eval 0.4 results file, whatever its name; unreadable files are not."""
    try:
        return is_lm_eval_04(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def lm_eval_files(root: Path) -> list[Path]:
    """The lm-eval 0.4 results files at `root`: the file itself, or below a folder every `results_*.json` (by name:
    an unreadable one is reported by the reader) and every other .json whose content is lm-eval 0.4 results.

    By content too because lm-eval names its file after `--output_path` when that ends in `.json` (`x.json` ->
    `x_<datetime>.json`). Known checkpoint files (`NOT_RESULTS`) are not opened.
    """
    if root.is_file():
        return [root]
    candidates = sorted(p for p in root.rglob("*.json") if not p.is_dir())
    for path in candidates:  # a FIFO among them would block its read: named, never opened
        problem = special_file_problem(path, what="lm-eval results file")
        if problem is not None:
            raise LmEvalError(problem)
    return [
        p
        for p in candidates
        if p.is_file() and (p.match(RESULTS_GLOB) or (p.name not in NOT_RESULTS and holds_lm_eval_04(p)))
    ]


def looks_like_lm_eval_04(path: Path) -> bool:
    """Whether `path` (a .json file or a folder) holds lm-eval 0.4 results, so `read_scores` reads it with this module.

    A folder counts when one of its `results_*.json` files has the 0.4 shape; unreadable files do not decide
    (the reader that gets the folder names them).
    """
    for candidate in lm_eval_files(path) if path.is_dir() or path.suffix == ".json" else []:
        try:
            if is_lm_eval_04(json.loads(candidate.read_text(encoding="utf-8"))):
                return True
        except (OSError, UnicodeDecodeError, ValueError):
            continue
    return False


# --------------------------------------------------------------------------------------------------
# The checkpoint of a results file


def checkpoint_of(path: Path, model_name: str, revision: str | None, tokens_per_step: int | None) -> Checkpoint:
    """(run, seed, step, tokens) of the model a results file evaluated; shared by lighteval and lm-eval results.

    A local checkpoint (an absolute or existing path, or a relative one with more parts than a hub id's
    ``org/name``) is read by `identity_from_path` (``runs/mix-a/seed-1/checkpoint-200``: run mix-a, seed 1, step
    200), its tokens from its trainer_state.json when the folder is still there; a hub model needs a revision
    naming a step (``step3000``) and is run ``<name>``, seed empty.
    """
    local = Path(model_name)
    if local.is_absolute() or local.exists() or len(local.parts) > 2:
        run, seed, step = identity_from_path(model_name)
        if step is None:
            raise LmEvalError(
                f"{path}: cannot read a training step from model_name {model_name!r}; fix: evaluate checkpoint "
                "folders named checkpoint-<step> (or step-<step>)"
            )
        directory = local if local.is_dir() else None
        return Checkpoint(run, seed, step, tokens_of(directory, step, tokens_per_step), model_name, None)
    match = _STEP_REVISION.search(revision or "")
    if not match:
        raise LmEvalError(
            f"{path}: model {model_name!r} is neither a local checkpoint folder nor a hub revision naming a step "
            f"(revision {revision!r}); fix: evaluate revisions named step<N>"
        )
    step = int(match.group(1))
    tokens = None if tokens_per_step is None else tokens_per_step * step
    return Checkpoint(model_name.split("/")[-1], None, step, tokens, model_name, revision)


def parse_model_args(model_args: object) -> dict[str, str]:
    """lm-eval's model_args as a dict: the CLI string ``k=v,k=v`` (lm_eval.utils.simple_parse_args_string's syntax)
    or the dict the Python API accepts."""
    if isinstance(model_args, dict):
        return {str(k): str(v) for k, v in model_args.items()}
    if not isinstance(model_args, str):
        return {}
    pairs = (item.split("=", 1) for item in model_args.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def _checkpoint_folder(path: Path) -> Path | None:
    """The nearest folder above a results file named like a checkpoint (``checkpoint-200``, ``step1000``)."""
    return next((parent for parent in path.parents if is_checkpoint_dir(parent)), None)


def _model_checkpoint(path: Path, data: dict, tokens_per_step: int | None) -> Checkpoint:
    """The checkpoint of an lm-eval 0.4 file: model_args (model and revision), else the folder layout."""
    config = _mapping(data, "config")
    args = parse_model_args(config.get("model_args"))
    model_name = next((args[key] for key in _MODEL_KEYS if args.get(key)), None) or data.get("model_name")
    revision = args.get("revision") or config.get("model_revision")
    try:
        if not isinstance(model_name, str) or not model_name:
            raise LmEvalError(f"{path}: config.model_args names no model (pretrained=...) and there is no model_name")
        return checkpoint_of(path, model_name, revision if isinstance(revision, str) else None, tokens_per_step)
    except LmEvalError as error:
        folder = _checkpoint_folder(path)
        if folder is None:
            raise LmEvalError(
                f"{error}; lm-eval 0.4: config.model_args is {config.get('model_args')!r}, which gives no step, and "
                "no folder above the file is named like a checkpoint; fix: evaluate with model_args "
                "revision=step<N> or pretrained=<...>/checkpoint-<N>, or put the results under a checkpoint-<N> folder"
            ) from error
        run, seed, step = identity_from_path(str(folder))
        assert step is not None  # is_checkpoint_dir matched a step in the name
        return Checkpoint(run, seed, step, tokens_of(folder, step, tokens_per_step), str(folder), None)


# --------------------------------------------------------------------------------------------------
# Reading one file


@dataclass
class LmEvalFile:
    """One lm-eval 0.4 results file: its checkpoint and scores, and what was left out of it."""

    path: Path
    checkpoint: Checkpoint
    order: tuple[str, float]  # sorts older before newer
    scores: dict[tuple[str, int], dict[str, tuple[float | None, float | None]]]  # (task, fewshot) -> metric -> (v, se)
    groups: set[str] = field(default_factory=set)  # group aggregate rows skipped
    filters: set[str] = field(default_factory=set)  # "metric: filter (of a, b)" choices among several filters
    sampled: dict[tuple[str, int], int] = field(default_factory=dict)  # (task, fewshot) -> documents, under --limit

    def lighteval_results(self) -> dict[str, dict[str, float | None]]:
        """The scores in lighteval's results shape (``task|fewshot`` -> metric / metric_stderr), for collect."""
        return {
            f"{task}|{fewshot}": {
                key: value
                for metric, (score, stderr) in metrics.items()
                for key, value in ((metric, score), (f"{metric}_stderr", stderr))
            }
            for (task, fewshot), metrics in self.scores.items()
        }


def _value(value: object, path: Path, where: str, *, stderr: bool) -> float | None:
    """A metric value as float; None (a score: no number, a stderr: unknown) for null, "N/A" or NaN."""
    if value is None or (isinstance(value, str) and value.strip().upper() in {"N/A", "NAN", ""}):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        what = "stderr" if stderr else "score"
        raise LmEvalError(f"{path}: results.{where} is {value!r}, not a number ({what}); fix: re-run the evaluation")
    return None if math.isnan(value) else float(value)


def _group_names(data: dict) -> set[str]:
    """Names of group aggregate rows: keys of `groups`, and of `group_subtasks` with children (older 0.4 releases
    list plain tasks there too, with an empty list)."""
    subtasks = _mapping(data, "group_subtasks")
    return set(_mapping(data, "groups")) | {name for name, children in subtasks.items() if children}


def _fewshot(data: dict, task: str, path: Path) -> int:
    """The few-shot count of a task: `n-shot`, else `configs[task].num_fewshot`."""
    shots, configs = _mapping(data, "n-shot"), _mapping(data, "configs")
    metadata = configs[task].get("metadata") if isinstance(configs.get(task), dict) else None
    in_context = metadata.get(FEWSHOT_IN_CONTEXT) if isinstance(metadata, dict) else None
    if isinstance(in_context, int) and not isinstance(in_context, bool) and in_context >= 0:
        return in_context
    value = shots.get(task)
    if value is None and isinstance(configs.get(task), dict):
        value = configs[task].get("num_fewshot")
    if value is None and task in configs:
        value = 0  # lm-eval's own default (evaluator_utils.py#L262)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LmEvalError(
            f"{path}: task {task!r} has no few-shot count (n-shot[{task!r}] is {shots.get(task)!r}, and "
            "configs has no num_fewshot for it); fix: re-run the evaluation or delete the file"
        )
    return value


def _filter_rank(name: str) -> tuple[int, str]:
    return (FILTER_PREFERENCE.index(name) if name in FILTER_PREFERENCE else len(FILTER_PREFERENCE), name)


def _task_metrics(
    task: str, entry: dict, path: Path, filters: set[str]
) -> dict[str, tuple[float | None, float | None]]:
    """metric -> (score, stderr) of one results entry, one filter per metric (`FILTER_PREFERENCE`)."""
    by_metric: dict[str, dict[str, Any]] = {}
    for key, value in entry.items():
        if key in _ENTRY_FIELDS or "," not in key:
            continue
        metric, _, filter_name = key.partition(",")
        if not metric.endswith("_stderr"):
            by_metric.setdefault(metric, {})[filter_name] = value
    chosen: dict[str, tuple[float | None, float | None]] = {}
    for metric, values in by_metric.items():
        name = min(values, key=_filter_rank)
        if len(values) > 1:
            filters.add(f"{metric}: {name} (of {', '.join(sorted(values))})")
        score = _value(values[name], path, f"{task}.{metric},{name}", stderr=False)
        stderr_key = f"{metric}_stderr,{name}"
        chosen[metric] = (score, _value(entry.get(stderr_key), path, f"{task}.{stderr_key}", stderr=True))
    return chosen


def _order(path: Path, data: dict) -> tuple[str, float]:
    """The file's recency: the <datetime> of its name (lm_eval.utils.get_file_datetime), then `date`."""
    stem = path.stem
    stamp = stem[stem.rfind("_") + 1 :] if "_" in stem else ""
    date = data.get("date")
    return stamp, float(date) if isinstance(date, int | float) and not isinstance(date, bool) else 0.0


def read_results_file(path: Path, tokens_per_step: int | None = None, data: Any = None) -> LmEvalFile:
    """One lm-eval 0.4 results file; `data` is its parsed JSON when the caller already has it."""
    data = _load(path) if data is None else data
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or not data["results"]:
        raise LmEvalError(f"{path}: no 'results' object (a partial or interrupted write?); fix: re-run or delete it")
    if not is_lm_eval_04(data):
        raise LmEvalError(f"{path}: not an lm-eval 0.4 results file (no configs, n-shot or group_subtasks)")
    checkpoint = _model_checkpoint(path, data, tokens_per_step)
    result = LmEvalFile(path, checkpoint, _order(path, data), {}, groups=_group_names(data))
    for task, entry in data["results"].items():
        if task in result.groups:
            continue
        if not isinstance(entry, dict):
            raise LmEvalError(f"{path}: results[{task!r}] is {type(entry).__name__}, not a metrics object")
        fewshot = _fewshot(data, task, path)
        result.scores[(task, fewshot)] = _task_metrics(task, entry, path, result.filters)
        sampled = _sampled_documents(data, task)
        if sampled is not None:
            result.sampled[(task, fewshot)] = sampled
    result.groups &= set(data["results"])
    return result


def _sampled_documents(data: dict, task: str) -> int | None:
    """How many documents a `--limit` run scored of the task, when fewer than all: `n-samples[task].effective`
    below its `original`; a file without n-samples but with an integer `config.limit` gives the limit (at most
    that many)."""
    counts = _mapping(data, "n-samples").get(task)
    if isinstance(counts, dict):
        effective, original = counts.get("effective"), counts.get("original")
        if isinstance(effective, int) and isinstance(original, int) and 0 < effective < original:
            return effective
        return None
    limit = _mapping(data, "config").get("limit")
    if isinstance(limit, int | float) and not isinstance(limit, bool) and limit >= 1:
        return int(limit)
    return None


# --------------------------------------------------------------------------------------------------
# AfroBench task names


@dataclass(frozen=True)
class _Family:
    """What every task of one AfroBench family shares; `choices` None for generative tasks (chance score 0)."""

    benchmark: str
    category: str
    formulation: str
    choices: int | None = None
    modifiers: frozenset[str] = frozenset()  # tokens allowed between the prefix and the language code
    pair: bool = False  # translation: the code is `<source>-<target>`


_GEN = ("GEN", "GEN")
_FAMILIES: dict[str, _Family] = {
    # IrokoBench (lm_eval/tasks/afrimmlu, afrixnli, afrimgsm): option texts scored (doc_to_choice = the choices)
    "afrimmlu": _Family("afrimmlu", "GK", "CF", 4, frozenset({"direct", "translate"})),
    "afrixnli": _Family("afrixnli", "NLU", "CF", 3, frozenset({"en", "manual", "native", "direct", "translate"})),
    "afrimgsm": _Family("afrimgsm", *_GEN, modifiers=frozenset({"cot", "translate"})),
    # lm_eval/tasks/afrobench/<dir>: label words scored (CF) or the letters A-D (MCF), per doc_to_choice
    "afrisenti": _Family("afrisenti", "NLU", "CF", 3),
    "belebele": _Family("belebele", "RC", "MCF", 4),
    "injongointent": _Family("injongointent", "NLU", "CF", 40),
    "masakhanews": _Family("masakhanews", "NLU", "CF", 7),
    "naijarc": _Family("naijarc", "RC", "MCF", 4),
    "nollysenti": _Family("nollysenti", "NLU", "CF", 2),
    "openai_mmlu": _Family("openai_mmmlu", "GK", "MCF", 4),
    "sib": _Family("sib200", "NLU", "CF", 7),
    "uhura-arc-easy": _Family("uhura_arc_easy", "RES", "MCF", 4),
    "afriqa": _Family("afriqa", *_GEN),
    "afridiacritics": _Family("afridiacritics", *_GEN),
    "masakhaner": _Family("masakhaner", *_GEN),
    "masakhapos": _Family("masakhapos", *_GEN),
    "xlsum": _Family("xlsum", *_GEN),
    "flores": _Family("flores_mt", *_GEN, pair=True),
    "mafand": _Family("mafand", *_GEN, pair=True),
    "ntrex": _Family("ntrex", *_GEN, pair=True),
    "salt": _Family("salt", *_GEN, pair=True),
}
"""AfroBench's task families by lm-eval name prefix, mapped to our benchmark names where the dataset is ours."""

_PROMPT = re.compile(r"^(?P<base>.+)_prompt_\d+$")
_PIVOTS = frozenset({"eng", "fra"})  # the non-African side of a translation pair
_RENAMES = {"swh": "swa", "gaz": "orm", "mlg": "plt"}  # individual codes -> ours (flores_codes; Malagasy is plt)
_XLSUM_NAMES = {"pidgin": "pcm"}  # XL-Sum's "pidgin" is Nigerian Pidgin; langcodes would find Solomons Pijin


@cache
def iso3(code: str) -> str | None:
    """Our ISO 639-3 code for a dataset's language code (``sw``, ``swa``, ``swh_Latn``, ``hausa``), or None."""
    bare = code.split("_")[0]
    if bare in _XLSUM_NAMES:
        return _XLSUM_NAMES[bare]
    try:
        found = langcodes.Language.get(bare) if len(bare) in (2, 3) else langcodes.find(bare)
    except (LookupError, ValueError):
        found = None
    if found is None or not found.is_valid():
        return None
    alpha3 = found.to_alpha3()
    return _RENAMES.get(alpha3, alpha3)


def _pair_language(codes: str) -> str | None:
    """The language a translation pair ``hau_Latn-eng_Latn`` / ``en-amh`` is about: the side that is not the pivot."""
    sides = codes.split("-")
    if len(sides) != 2:
        return None
    languages = [iso3(side) for side in sides]
    if None in languages or languages[0] == languages[1]:
        return None
    african = [language for language in languages if language not in _PIVOTS]
    return (african or languages)[0]


def afrobench_task_info(task: str) -> TaskInfo | None:
    """The task info of an AfroBench lm-eval task name, by rule; None for a name the rules do not recognise.

    ``<family>[_<modifier>...]_<code>[_prompt_<N>]``: the family prefix gives benchmark, category, formulation and
    chance score (1/choices; 0 for generative tasks); translate-test variants (``afrimmlu_translate_hau``) are a
    benchmark of their own (``afrimmlu_translate``: another dataset, English input); the code is the language.
    Only afrixnli's prompt variants lack the ``_prompt_<N>`` suffix.
    """
    prompt = _PROMPT.match(task)
    base = prompt.group("base") if prompt else task
    family_name = next((name for name in sorted(_FAMILIES, key=len, reverse=True) if base.startswith(f"{name}_")), None)
    if family_name is None:
        return None
    family = _FAMILIES[family_name]
    rest = base[len(family_name) + 1 :]
    if family.pair:
        language = _pair_language(rest) if prompt else None
        modifiers: list[str] = []
    else:
        *modifiers, code = rest.split("_")
        if not (prompt or modifiers) or not set(modifiers) <= family.modifiers:
            return None
        language = iso3(code)
    if language is None:
        return None
    benchmark = f"{family.benchmark}_translate" if "translate" in modifiers else family.benchmark
    baseline = 0.0 if family.choices is None else 1.0 / family.choices
    return TaskInfo(benchmark, language, family.category, family.formulation, baseline)


def builtin_task_info(tasks: Iterable[str]) -> dict[str, TaskInfo]:
    """Task info the project knows for lm-eval task names: the Pythia (English) table, then AfroBench's rules."""
    known: dict[str, TaskInfo] = {}
    for task in tasks:
        info = LM_EVAL_TASK_INFO.get(task) or afrobench_task_info(task)
        if info is not None:
            known[task] = info
    return known


# --------------------------------------------------------------------------------------------------
# The score table


def newest(files: Sequence[LmEvalFile]) -> tuple[dict[tuple, LmEvalFile], list[str]]:
    """Which file owns each (run, seed, step, task, fewshot): the newest; and the superseded (file, task) pairs."""
    owner: dict[tuple, LmEvalFile] = {}
    superseded: list[str] = []
    for result in sorted(files, key=lambda f: (f.order, str(f.path))):
        c = result.checkpoint
        for task, fewshot in result.scores:
            slot = (c.run, c.seed, c.step, task, fewshot)
            if slot in owner:
                superseded.append(f"{owner[slot].path} ({task}|{fewshot})")
            owner[slot] = result
    return owner, superseded


def _notes(files: Sequence[LmEvalFile], superseded: Sequence[str], unknown_metrics: set[str]) -> list[str]:
    """What reading left out, for the load report."""
    notes = [f"read {len(files)} lm-evaluation-harness 0.4 results file(s)"]
    groups = sorted({g for f in files for g in f.groups})
    if groups:
        notes.append(f"skipped {len(groups)} group aggregate(s) (their subtasks are rows): {', '.join(groups[:5])}")
    filters = sorted({choice for f in files for choice in f.filters})
    if filters:
        notes.append(f"one filter per metric ({' > '.join(FILTER_PREFERENCE)}): {'; '.join(filters)}")
    if superseded:
        notes.append(f"{len(superseded)} result(s) superseded by newer re-runs, e.g. {superseded[0]}")
    if unknown_metrics:
        notes.append(f"skipped metrics unknown to the analysis: {', '.join(sorted(unknown_metrics))}")
    return notes


def unknown_tasks(unknown: Mapping[str, Path], source: str, skip_unknown: bool, also: str = "") -> list[str]:
    """Tasks without task info (task -> a results file holding it): an error naming each task's file and the fix
    (`also`: a further way out, e.g. collect's --custom-tasks), or a note under skip_unknown."""
    names = sorted(unknown)
    listing = ", ".join(f"{task} (in {unknown[task]})" for task in names[:10])
    listing += f" (+{len(names) - 10} more)" if len(names) > 10 else ""
    if unknown and not skip_unknown:
        raise LmEvalError(
            f"{source}: {len(unknown)} task(s) without task info (benchmark, language, category, formulation, "
            f"random_baseline): {listing}; fix: pass --task-info CSV (columns task,benchmark,language,category,"
            f"formulation,random_baseline){also}, or --skip-unknown to skip them (Python API: task_info=, "
            "skip_unknown=True)"
        )
    return [f"skipped {len(unknown)} task(s) without task info: {listing}"] if unknown else []


def check_token_counts(found: Iterable[tuple[Checkpoint, str, str]], source: str) -> None:
    """One (run, seed, step) with two token counts across files is an error naming the files and where each count
    came from (`analysis.scores.discover.token_conflicts`); seeds of one run may differ."""
    conflicts = token_conflicts(found)
    if conflicts:
        listing = "; ".join(conflicts[:5]) + (f" (+{len(conflicts) - 5} more)" if len(conflicts) > 5 else "")
        raise LmEvalError(
            f"{source}: {len(conflicts)} checkpoint(s) of one seed have two token counts: {listing}; fix: one "
            "checkpoint saw one number of tokens: delete the stale results file, or pass --tokens-per-step to set "
            "every count"
        )


def read_lm_eval_04(
    paths: Path | Sequence[Path],
    *,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    tokens_per_step: int | None = None,
    skip_unknown: bool = False,
) -> tuple[pl.DataFrame, LoadReport]:
    """Read lm-eval 0.4 results folders (or files) into a validated score table.

    Task info: the caller's (a mapping or a CSV path) overrides and extends `builtin_task_info`. Metrics unknown to
    analysis.scores.metrics (rougeL, ...) are
    skipped with a note; tasks without info are an error unless skip_unknown.
    """
    roots = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    source = ", ".join(map(str, roots))
    files = [read_results_file(path, tokens_per_step) for root in roots for path in lm_eval_files(root)]
    if not files:
        raise LmEvalError(f"{source}: no lm-eval results file (results_*.json); fix: point at lm-eval's --output_path")
    try:
        separated, separation_notes = separate_models([f.checkpoint for f in files])
    except DiscoveryError as error:
        raise LmEvalError(f"{source}: {error}") from error
    for file, checkpoint in zip(files, separated, strict=True):
        file.checkpoint = checkpoint
    owner, superseded = newest(files)
    extra = read_task_info(task_info) if isinstance(task_info, str | Path) else dict(task_info or {})
    info = {**builtin_task_info(slot[3] for slot in owner), **extra}
    columns: dict[str, list[Any]] = {c: [] for c in (*COLUMNS, "sampled_documents")}
    unknown: dict[str, Path] = {}
    unknown_metrics: set[str] = set()
    owners = sorted({id(f): f for f in owner.values()}.values(), key=lambda f: str(f.path))
    check_token_counts(
        ((f.checkpoint, str(f.path), tokens_origin(f.checkpoint, tokens_per_step)) for f in owners), source
    )
    for (run, seed, step, task, fewshot), result in owner.items():
        if task not in info:
            unknown.setdefault(task, result.path)
            continue
        ti = info[task]
        for metric, (score, stderr) in result.scores[(task, fewshot)].items():
            if metric_info(metric) is None:
                unknown_metrics.add(metric)
                continue
            row = {
                "run": run, "seed": seed, "step": step, "tokens": result.checkpoint.tokens, "task": task,
                "benchmark": ti.benchmark, "language": ti.language, "category": ti.category,
                "formulation": ti.formulation, "fewshot": fewshot, "metric": metric,
                "score": math.nan if score is None else score, "stderr": stderr,
                "random_baseline": ti.random_baseline, "sampled_documents": result.sampled.get((task, fewshot)),
            }  # fmt: skip
            for column, cells in columns.items():
                cells.append(row[column])
    notes = _notes(files, superseded, unknown_metrics) + separation_notes
    notes += unknown_tasks(unknown, source, skip_unknown)
    notes += token_override_note((f.checkpoint for f in files), tokens_per_step)
    frame = pl.DataFrame(columns, schema={**SCHEMA, "sampled_documents": OPTIONAL_SCHEMA["sampled_documents"]})
    if frame.get_column("sampled_documents").null_count() == frame.height:  # every score on every document
        frame = frame.drop("sampled_documents")
    frame, report = validate(frame, source=source)
    report.notes = notes + report.notes
    if not frame.height:
        what = "; ".join(notes[1:]) or "every score is NaN"
        fix = "pass --task-info CSV for the skipped tasks, or point at results with scores"
        raise LmEvalError(f"{source}: no usable score rows ({what}); fix: {fix}")
    return frame, report
