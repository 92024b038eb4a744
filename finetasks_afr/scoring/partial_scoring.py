"""Partial scoring for cloze (CF) tasks with one context per choice, on lighteval 0.13 (`apply()` / `restore()`).

Partial scoring (Trinh & Le 2018; lm-evaluation-harness `winogrande`): the option fills the blank and the model
scores only the rest of the sentence. For option i the context is "sentence before the blank + option i" and the
continuation is the rest of the sentence, the same for every option; the score of option i is
log P(rest | context_i). A lighteval `Doc` has one query, so the per-choice contexts travel in
`Doc.specific["partial_scoring_contexts"]` (see `get_partial_scoring_prompt_function`):

    query    = the gold option's context (prefix + gold option). A few-shot example is rendered by lighteval as
               query + " " + gold choice: the complete, correct sentence. Logs show the gold-filled prefix.
    choices  = the continuation after each context (" rest of the sentence", normally identical). An adapter
               may give one continuation per context instead (`continuations`): Winogrande scores a sentence with
               no letter after its blank in full, one shared context (the text before the blank) and the option
               plus the rest as each continuation, lighteval's own `winogrande` scoring.
    specific = {"partial_scoring_contexts": [context_1, context_2, ...]}.
    unconditioned_query = None (PMI is meaningless here: every option scores the same continuation).

What is patched (the originals are kept; `restore()` puts them back):
    - `lighteval.models.transformers.transformers_model.TransformersModel.loglikelihood` (the `@cached` public
      method; subclasses inherit it). A document carrying `partial_scoring_contexts` is replaced, for the model
      call, by one single-choice request per choice: a copy of the document whose query is context_i and whose
      only choice is choice_i, same few-shot examples, instruction, task and sampling method. lighteval then
      scores these requests exactly as any document (`prompt_manager.prepare_prompt`, `tok_encode_pair`,
      `_loglikelihood_tokens`, batched together with every other document of the call), and the wrapper folds
      them back into one `ModelResponse` per original document: `logprobs[i]` = log P(choice_i | few-shot
      examples + context_i), `output_tokens[i]` = choice_i's own tokens (so char and token normalisations are
      consistent), `argmax_logits_eq_gold[i]` from request i, `input_tokens` those of the gold context.
      Documents without `partial_scoring_contexts` pass through untouched, in the same call.
    - `lighteval.pipeline.Pipeline._run_model`: a guard. If a run sends partial-scoring documents to a model whose
      `loglikelihood` is not this wrapper (vLLM, endpoints, ..., or the patch switched off), it raises instead of
      letting the backend score every choice after the gold query (identical choices: acc = share of gold
      option 1, silently).

Cache: lighteval's prediction cache sits inside `loglikelihood`, keyed by task (config hash) and `Doc.id`. The
original documents never reach it: only the per-choice requests do, under their own ids
`<doc id>:partial<i>:<sha256 of the rendered prompt and the choice>`. A value cached by a run without this patch
(under the plain doc id, i.e. the choices scored after the gold query) can therefore never be read back as a
partial score, and a cached partial score is only reused for exactly the same prompt text and continuation.

Guards: the scoring patch is applied only on lighteval 0.13.x (`SUPPORTED_SERIES`) whose transformers backend
still scores each document as `prompt_manager.prepare_prompt(doc)` followed by `doc.choices` (checked in the
source of `_loglikelihood_tokens`). Otherwise it steps aside, says so in the log, and the pipeline guard makes
partial-scoring tasks fail loudly. `FINETASKS_AFR_PARTIAL_SCORING=off` (or `0`) applies only the guard,
`force` skips the version check. `apply()` is idempotent and works whether it runs before or after
`finetasks_afr.scoring.compat.apply()` (each wrapper passes through what it does not handle).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from finetasks_afr.data.lighteval_release import in_series
from finetasks_afr.scoring import compat

if TYPE_CHECKING:
    from lighteval.tasks.requests import Doc
    from lighteval.tasks.templates.continuation import ContinuationInput

logger = logging.getLogger(__name__)

SPECIFIC_KEY = "partial_scoring_contexts"
ENV_SWITCH = "FINETASKS_AFR_PARTIAL_SCORING"
SUPPORTED_SERIES = (0, 13)
FIX = "partial_scoring"

# (owner class, attribute name) -> (original attribute, our wrapper), for every attribute we installed.
_INSTALLED: dict[tuple[type, str], tuple[Any, Any]] = {}
_WRAPPERS: set[Callable] = set()  # every wrapper we ever made, kept alive (a buried one stays recognisable)
_STATE = {"scoring": False, "guard": False}


@dataclasses.dataclass
class PartialScoringStats:
    """Counters since the last `reset_stats()`."""

    calls: int = 0  # loglikelihood calls that held partial-scoring documents
    docs: int = 0  # partial-scoring documents
    requests: int = 0  # single-choice requests sent to the model for them


STATS = PartialScoringStats()


def reset_stats() -> None:
    for field in dataclasses.fields(STATS):
        setattr(STATS, field.name, 0)


# ------------------------------------------------------------------------------------------- prompt function


class PartialScoringInput(TypedDict):
    """What a partial-scoring adapter returns for one dataset row."""

    contexts: list[str]  # per option: the text up to and including the option (whitespace-normalised)
    continuation: NotRequired[str]  # the text after the blank, shared by all options (no leading space)
    continuations: NotRequired[list[str]]  # or one per context (full scoring: the option and the rest)
    gold_idx: int
    instruction: NotRequired[str]


def partial_contexts(doc: Any) -> list[str] | None:
    """The per-choice contexts of a partial-scoring document, or None for any other document."""
    specific = getattr(doc, "specific", None)
    if not isinstance(specific, dict):
        return None
    contexts = specific.get(SPECIFIC_KEY)
    if contexts is None:
        return None
    if len(contexts) != len(doc.choices):
        raise ValueError(f"{len(contexts)} partial-scoring contexts for {len(doc.choices)} choices")
    return list(contexts)


def get_partial_scoring_prompt_function(
    language: Any,
    adapter: Callable[[dict], PartialScoringInput | None],
    formulation: Any = None,
    **template_kwargs: Any,
) -> Callable[[dict, str], Any]:
    """A CF prompt function (like lighteval's continuation template) whose Doc carries per-choice contexts.

    Each context goes through lighteval's own CF continuation template (`get_continuation_prompt_function`,
    with `template_kwargs` such as `fix_formatting`), so the query of context i and the spacing in front of
    choice i are exactly what that template would build for context i alone.
    """
    from lighteval.tasks.templates.continuation import get_continuation_prompt_function
    from lighteval.tasks.templates.utils.formulation import CFFormulation

    formulation = formulation if formulation is not None else CFFormulation()
    if not isinstance(formulation, CFFormulation):
        raise ValueError("partial scoring is a cloze (CF) formulation")
    template = get_continuation_prompt_function(language, _identity, formulation=formulation, **template_kwargs)

    def prompt_fn_partial(line: dict, task_name: str) -> Doc | None:
        item = adapter(line)
        if item is None:
            return None
        gold = item["gold_idx"]
        continuations = item.get("continuations") or [item["continuation"]] * len(item["contexts"])
        if len(continuations) != len(item["contexts"]):
            raise ValueError(f"{len(continuations)} continuations for {len(item['contexts'])} contexts")
        per_context = [
            template(
                {
                    "context": context,
                    "continuations": [continuation],
                    "gold_idx": 0,
                    "instruction": item.get("instruction"),
                },
                task_name,
            )
            for context, continuation in zip(item["contexts"], continuations, strict=True)
        ]
        if any(doc is None for doc in per_context):
            return None
        doc = per_context[gold]
        doc.choices = [single.choices[0] for single in per_context]
        doc.gold_index = [gold]
        doc.specific = {**(doc.specific or {}), SPECIFIC_KEY: [single.query for single in per_context]}
        doc.unconditioned_query = None
        return doc

    return prompt_fn_partial


def _identity(item: dict) -> ContinuationInput:
    """The continuation template's adapter: `prompt_fn_partial` already builds each line as a ContinuationInput."""
    return cast("ContinuationInput", item)


# ------------------------------------------------------------------------------------------------ guards


def version_is_supported(version: str | None) -> bool:
    return in_series(version, SUPPORTED_SERIES)


def backend_scores_query_then_choices() -> bool:
    """`_loglikelihood_tokens` still tokenises every document as prepare_prompt(doc) + doc.choices."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    # lighteval's own method, whatever compat (or a spy) has put around it
    source = compat._source(inspect.unwrap(compat._original(TransformersModel, "_loglikelihood_tokens")))
    if source is None:  # no source to read: trust the version guard
        return True
    compact = "".join(source.split())
    return "prepare_prompt(doc)fordocinbatch" in compact and "tok_encode_pair(context,doc.choices" in compact


# ------------------------------------------------------------------------------------------ apply / restore


def _chain(function: Any) -> list[Any]:
    """The function and everything it wraps (`__wrapped__`), outermost first."""
    chain: list[Any] = []
    while function is not None and len(chain) < 32:
        chain.append(function)
        function = getattr(function, "__wrapped__", None)
    return chain


def _ours_in_chain(function: Any) -> bool:
    return any(link in _WRAPPERS for link in _chain(function))


def _install(owner: type, name: str, make_wrapper: Callable[[Any], Any]) -> None:
    current = owner.__dict__[name]
    if _ours_in_chain(current):  # already there (possibly under compat's wrapper): it reads _STATE
        return
    wrapper = make_wrapper(current)
    _WRAPPERS.add(wrapper)
    _INSTALLED[(owner, name)] = (current, wrapper)
    setattr(owner, name, wrapper)


def applied() -> bool:
    """True when partial-scoring documents are scored correctly by `TransformersModel`."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    return _STATE["scoring"] and _ours_in_chain(TransformersModel.__dict__["loglikelihood"])


def model_is_aware(model: Any) -> bool:
    """The model's `loglikelihood` goes through an active partial-scoring wrapper."""
    return _STATE["scoring"] and _ours_in_chain(getattr(type(model), "loglikelihood", None))


def apply() -> dict[str, str]:
    """Install partial scoring for the transformers backend and the pipeline guard (idempotent)."""
    from lighteval.models.transformers.transformers_model import TransformersModel
    from lighteval.pipeline import Pipeline

    _install(Pipeline, "_run_model", _wrap_run_model)
    _STATE["guard"] = True

    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    version = compat.lighteval_version()
    if switch in {"0", "off", "false", "no"}:
        outcome = f"disabled by {ENV_SWITCH}={switch} (partial-scoring tasks will raise)"
    elif not version_is_supported(version) and switch != "force":
        outcome = f"skipped: lighteval {version} is not a 0.13.x release (partial-scoring tasks will raise)"
    elif not backend_scores_query_then_choices():
        outcome = "skipped: TransformersModel._loglikelihood_tokens changed (partial-scoring tasks will raise)"
    else:
        _install(TransformersModel, "loglikelihood", _wrap_loglikelihood)
        _STATE["scoring"] = True
        outcome = "applied"
    (logger.info if outcome == "applied" else logger.warning)("finetasks_afr.scoring.partial_scoring: %s", outcome)
    return {FIX: outcome}


def restore() -> None:
    """Deactivate every wrapper and put back the originals where our wrapper is still the outermost one."""
    for (owner, name), (original, wrapper) in list(_INSTALLED.items()):
        if owner.__dict__.get(name) is wrapper:
            setattr(owner, name, original)
        elif compat._ORIGINALS.get((owner, name)) is wrapper:
            # compat wrapped ours: ours passes everything through from now on, and compat.restore() will put
            # back what was there before us.
            compat._ORIGINALS[(owner, name)] = original
        # else: something removed ours already.
    _INSTALLED.clear()
    _STATE["scoring"] = _STATE["guard"] = False


# ------------------------------------------------------------------------------------------------ wrappers


def _wrap_loglikelihood(original: Callable) -> Callable:
    @functools.wraps(original)
    def loglikelihood(self, docs, *args, **kwargs):
        docs = list(docs) if isinstance(docs, list | tuple) else [docs]
        if not _STATE["scoring"] or not any(partial_contexts(doc) is not None for doc in docs):
            return original(self, docs, *args, **kwargs)
        requests, plan = expand_requests(self, docs)
        responses = original(self, requests, *args, **kwargs)
        if len(responses) != len(requests):
            raise RuntimeError(
                f"finetasks_afr.scoring.partial_scoring: {len(responses)} responses for {len(requests)} requests "
                "(lighteval's cache dropped some): cannot pair partial scores with their documents"
            )
        return fold_responses(self, docs, requests, responses, plan)

    return loglikelihood


def _wrap_run_model(original: Callable) -> Callable:
    @functools.wraps(original)
    def _run_model(self, *args, **kwargs):
        if _STATE["guard"]:
            check_pipeline(self)
        return original(self, *args, **kwargs)

    return _run_model


def check_pipeline(pipeline: Any) -> None:
    """Raise when partial-scoring documents would reach a model that scores them as plain documents."""
    from lighteval.tasks.requests import SamplingMethod

    docs = (getattr(pipeline, "sampling_docs", None) or {}).get(SamplingMethod.LOGPROBS, [])
    partial = {doc.task_name for doc in docs if partial_contexts(doc) is not None}
    model = getattr(pipeline, "model", None)
    if partial and not model_is_aware(model):
        raise RuntimeError(
            f"finetasks_afr.scoring.partial_scoring: tasks {sorted(partial)} need partial scoring, which only the "
            f"transformers backend supports with finetasks_afr.scoring.partial_scoring.apply() in force "
            f"(model: {type(model).__name__}; scoring patch active: {_STATE['scoring']})"
        )


# ----------------------------------------------------------------------------------------- expand and fold


def request_id(model: Any, request: Any, doc_id: str, index: int) -> str:
    """Cache id of one per-choice request: the document id, the choice, and a digest of the exact text."""
    prompt = model.prompt_manager.prepare_prompt(request)
    digest = hashlib.sha256(f"{prompt}\x1f{request.choices[0]}".encode()).hexdigest()[:16]
    return f"{doc_id}:partial{index}:{digest}"


def expand_requests(model: Any, docs: list[Any]) -> tuple[list[Any], list[int | list[int]]]:
    """The documents to send to the model, and for each original document its request index (or indices)."""
    requests: list[Any] = []
    plan: list[int | list[int]] = []
    for doc in docs:
        contexts = partial_contexts(doc)
        if contexts is None:
            plan.append(len(requests))
            requests.append(doc)
            continue
        indices = []
        for index, (context, choice) in enumerate(zip(contexts, doc.choices, strict=True)):
            request = dataclasses.replace(
                doc,
                query=context,
                choices=[choice],
                gold_index=0,
                specific=None,
                unconditioned_query=None,
                sampling_methods=list(doc.sampling_methods),
            )
            request.id = request_id(model, request, doc.id, index)
            indices.append(len(requests))
            requests.append(request)
        plan.append(indices)
    STATS.calls += 1
    STATS.docs += sum(isinstance(entry, list) for entry in plan)
    STATS.requests += sum(len(entry) for entry in plan if isinstance(entry, list))
    return requests, plan


def fold_responses(
    model: Any, docs: list[Any], requests: list[Any], responses: list[Any], plan: list[int | list[int]]
) -> list:
    """One ModelResponse per original document; partial ones assembled from their per-choice responses."""
    folded = []
    for doc, entry in zip(docs, plan, strict=True):
        if not isinstance(entry, list):
            folded.append(responses[entry])
            continue
        parts = [responses[index] for index in entry]
        tokens = [compat.choice_tokens(model, requests[index], responses[index].output_tokens)[0] for index in entry]
        gold = _first_gold(doc)  # its input tokens are shown: the doc's query is the gold context
        folded.append(
            dataclasses.replace(
                parts[gold],
                logprobs=[float(part.logprobs[0]) for part in parts],
                argmax_logits_eq_gold=[bool(part.argmax_logits_eq_gold[0]) for part in parts],
                output_tokens=tokens,
                unconditioned_logprobs=None,
            )
        )
    return folded


def _first_gold(doc: Any) -> int:
    gold = doc.gold_index
    return int(gold[0] if isinstance(gold, list | tuple) else gold)


__all__ = [
    "ENV_SWITCH",
    "SPECIFIC_KEY",
    "STATS",
    "PartialScoringInput",
    "applied",
    "apply",
    "get_partial_scoring_prompt_function",
    "model_is_aware",
    "partial_contexts",
    "restore",
]
