"""Run-time fixes for three log-likelihood bugs of lighteval 0.13 (`apply()` / `restore()`).

The task module (`finetasks_afr/tasks.py`) calls `apply()` when it is imported, so the plain
`lighteval accelerate ... --custom-tasks finetasks_afr/tasks.py` command gets the fixes as well as the Python API.
`apply()` is idempotent; `restore()` puts every original back (for tests).

Bug 1: `acc_norm_token` (upstream issue huggingface/lighteval#1170, open).
    `TransformersModel._loglikelihood_tokens` stores each document's continuation tokens as one tensor padded
    with -1 to the longest choice (`pad_sequence(..., padding_value=-1)`), and, on the accelerate path (always
    taken by `TransformersModel(config)`), slices it as `gathered_continuations[i][:num_choices][:len_choice]`:
    the first dimension twice, so when the longest choice has fewer tokens than there are choices, rows are
    dropped. `LogProbTokenNorm` then divides every choice by the padded length (so `acc_norm_token` silently
    equals `acc`), or raises IndexError on the dropped rows.
    Fix: `ModelResponse.output_tokens` becomes one list per choice holding that choice's own continuation
    tokens: the -1 padding is stripped, and when rows were dropped the continuations are re-tokenised exactly as
    `_loglikelihood_tokens` tokenises them (`prompt_manager.prepare_prompt(doc)` then
    `tok_encode_pair(context, doc.choices, pairwise=True)`). Log-probabilities are untouched (they were right).

Bug 2: `acc_norm_pmi` (upstream issue huggingface/lighteval#997, open).
    `LogProbPMINorm` needs log P(choice | Doc.unconditioned_query) for every choice, and `LoglikelihoodAcc` /
    `NormalizedMultiChoiceProbability` only look for them as a second half of `ModelResponse.logprobs`
    (2 x n_choices entries). No backend scores `unconditioned_query` (the multiple-choice templates set it, to
    "<Answer>:"), so every PMI metric fails: `AssertionError: unconditioned_logprob must be provided for PMI
    normalization`.
    Fix: after the (cached) conditioned scoring, the transformers backend scores `unconditioned_query` + choice
    and stores the results in `ModelResponse.unconditioned_logprobs` (the field lighteval documents for this).
    Each distinct (unconditioned prompt, choice) pair is scored once per `loglikelihood` call, and the pipeline
    sends all documents of all tasks of a run in one call: for a 4-letter MCF task whose documents all share
    "Answer:", that is 4 continuations per model, not 4 x n_docs. The unconditioned prompt goes through the
    model's own `prompt_manager` (system prompt / chat template, as for the real prompt; no instruction, no
    few-shot examples). `logprobs` keeps n_choices entries, so the metrics that read all of `logprobs` (recall@k,
    MRR, mcc, probability, ...) are unaffected; the two PMI-aware metrics get the unconditioned values appended
    to a copy of the response, only when their normalisation is `LogProbPMINorm`.
    Only documents of tasks with a PMI metric are scored: the pipeline run names those tasks; a
    `loglikelihood` call from outside a pipeline scores every document that has an `unconditioned_query`.

Bug 3: rolling log-likelihood, i.e. every perplexity metric (`word_perplexity`, `byte_perplexity`,
    `bits_per_byte`; upstream issue huggingface/lighteval#1299, open; fixed after 0.13 by pull request #1252).
    `TransformersModel.loglikelihood_rolling` calls `_loglikelihood_tokens(docs, rolling=True)`, which
    (a) iterates `doc.choices`, so the perplexity Doc lighteval's own tasks build (`wikitext`:
    `Doc(query=text, choices=None)`) raises `TypeError: 'NoneType' object is not iterable`;
    (b) gathers continuation token i from the logits at position i, which predict token i+1: with any context
    token (a BOS) the greedy check then raises a shape error, and with none every token is scored by the
    wrong logits (and the first by itself); (c) cuts texts longer than `max_length` from the left, which shifts
    the alignment again; and (d) with the prediction cache on, its `@cached` wrapper returns nothing: it keeps
    only cached samples whose `SampleCache.get_sampling_method` is PERPLEXITY, which classifies any sample with
    log-probabilities as LOGPROBS (read in the source; item 3 of pull request #1252).
    Fix: the rolling branch of `TransformersModel._loglikelihood_tokens` is routed to `rolling_loglikelihood`
    (the non-rolling branch stays lighteval's), so `loglikelihood_rolling` keeps lighteval's `@cached` wrapper and
    any subclass's or mock's `_loglikelihood_tokens` (lighteval's `tests/unit/utils/test_caching.py` relies on
    both); and, while `loglikelihood_rolling` runs, `SampleCache.get_sampling_method` classifies a response with
    log-probabilities as PERPLEXITY, so the cache returns what it stored (d). `rolling_loglikelihood`: the text
    scored is the document's prompt as the model's `prompt_manager` renders it (for a 0-shot document without
    system prompt: `doc.query`), followed by its single choice when it has one; it is tokenised without special
    tokens and scored by the one scoring core (`finetasks_afr.scoring.core`): the first token conditioned on the
    tokenizer's BOS token, else its EOS token (lm-evaluation-harness's `prefix_token_id` rule; a tokenizer with
    neither is an error, so no token goes unscored and the byte and word counts of the metrics always match the
    scored text), every token scored exactly once under the core's windowing rule (a text longer than
    `max_length` in sliding windows advancing by half a window, each token with at least half a window of
    context; nothing is truncated). `recommend` and the LongPPL teacher use the same rule, so a text gets the
    same bits per byte everywhere. Each process scores every document (no data-parallel split).
    `ModelResponse.logprobs` holds the one sum, `output_tokens` the scored tokens, `input_tokens` the prefix and
    the tokens, `argmax_logits_eq_gold` whether every token was the model's greedy choice.

Fix 5: 0-shot-only tasks asked with k > 0 (issue 26, item 4).
    A perplexity task (`flores_ppl_*`, `belebele_ppl_*`) has no few-shot examples: its documents are texts without
    choices or gold, and the perplexity metrics count the words and bytes of the query only. Asked as `task|5`,
    lighteval 0.13 takes its few-shot pool from another split (or the evaluation split) and its balanced sampler
    dies on the first document, `as_list(instance.get_golds())[0]` on `choices=None`: `TypeError: 'NoneType' object
    is not subscriptable`, after the datasets are loaded, with nothing naming the task. The task definition marks
    such a task once (`limit_fewshot(config, 0, reason)`, kept in `FEWSHOT_LIMITS` by task name, so a copy made by
    `dataclasses.replace` or lighteval's registry keeps it); the sweep's task check asks `fewshot_limit_problem`,
    and, for the plain lighteval CLI and Python API, `LightevalTask.__init__` raises `FewShotLimitError` (a
    ValueError naming the task, its maximum few-shot count and the fix) when the config asks for more. lighteval
    builds every task before it loads the model, so the error comes before any model loads.

Fix 6: option case (issue 26, item 5). lighteval's templates pass every option, question and context through
    `formatting_utils.capitalize` (and continuations through `fix_capitalization`, which may `decapitalize`), which
    changes the first character whatever it is: "mRNA, tRNA and ribosomes" becomes "MRNA, tRNA and ribosomes", "pH
    of the muscle" "PH of the muscle", "p = 4" "P = 4", and a continuation "DNA ..." "dNA ...". The fix replaces
    `capitalize` and `decapitalize` in `formatting_utils` and in every template module that imported them by name
    (their prompt functions look the names up at call time, so prompt functions built before `apply()` get the fix
    too) with versions that leave the text unchanged when its case carries meaning (`case_carries_meaning`): the
    first word holds an upper-case letter after its first character (mRNA, pH, acetyl-CoA, i-pH, kwe-DNA), or it is
    a single letter used as a symbol (followed by punctuation, by a token that is not a word, or by nothing: "p = 4",
    "a. and c."). A plain lower-case word ("strength.", "book flight") is still capitalised as lighteval does: its
    case says nothing, and the prompts stay lighteval's. On the Bridging-the-Gap MMLU test files this keeps the case
    of 7-19 options per language (tests/scoring/test_option_case.py).

Fix 7: the prediction cache of a local model (issue 40). lighteval keeps every prediction in
    `Path(cache_dir) / model_name / <hash of the model config>`; a local model is named by its path, and Path joins
    drop `cache_dir` before an absolute one, so `lighteval accelerate model_name=/abs/checkpoint-800` writes
    `checkpoint-800/8057d472a34c8165/...` into the user's checkpoint folder; the hash reads only the config, so the
    same path after its weights changed in place returns the OLD predictions (from any cache directory). The fix:
    for a model_name that is a local directory, the cache goes to `<cache_dir>/local/<the directory's absolute
    path, its root dropped>/<hash>` (lighteval's `cache_dir`, `~/.cache/huggingface/lighteval` by default, which
    the model argument `cache_dir=` moves) and the hash also reads the name, size and modification time of every
    weights file (`*.safetensors`, `*.bin`, `*.pt`, `*.pth`); hub names keep lighteval's layout. A sweep
    evaluates with a fresh cache under its own staging folder (`lighteval_runtime.prediction_cache_in`).

What is patched (originals kept in `_ORIGINALS`; the wrappers carry the `_COMPAT_MARK` attribute):
    - `lighteval.models.transformers.transformers_model.TransformersModel.loglikelihood` (the `@cached` public
      method; wrapping outside the cache also repairs responses read back from a cache written before the fix):
      bug 1 (`output_tokens`) and bug 2 (`unconditioned_logprobs`). Subclasses (adapter, delta models) inherit it.
    - `lighteval.pipeline.Pipeline._run_model`: sets, for the duration of the run, which tasks have a PMI metric.
    - `lighteval.metrics.metrics_sample.LoglikelihoodAcc.compute` and
      `lighteval.metrics.metrics_sample.NormalizedMultiChoiceProbability.compute`: under `LogProbPMINorm` only,
      read `ModelResponse.unconditioned_logprobs`.
    - `TransformersModel._loglikelihood_tokens` (rolling branch only), `TransformersModel.loglikelihood_rolling`
      (marks the call) and `lighteval.utils.cache_management.SampleCache.get_sampling_method` (PERPLEXITY inside
      that call): bug 3, inside lighteval's prediction cache.
    - `lighteval.metrics.utils.stderr._bootstrap_internal.__call__`: fix 4, speed only. The stderr of a corpus
      metric (perplexities, longppl, F1 corpus, ...) is bootstrapped over 1000 resamples, and lighteval recomputes
      them in a new `multiprocessing.Pool(cpu_count())` per metric, forking the whole evaluating process (model,
      datasets, torch threads): 20-40 s per perplexity metric in a demo sweep worker on 2 cores, about 4 minutes
      per checkpoint for 9 trivial sums. The replacement draws the same resamples (`random.Random(seed).choices`,
      same order) and evaluates them in-process: the identical stderr in milliseconds.
    - `lighteval.tasks.lighteval_task.LightevalTask.__init__`: fix 5, refuses a config asking for more few-shot
      examples than its task allows.
    - `capitalize` / `decapitalize` of `lighteval.tasks.templates.utils.formatting_utils` and of the template
      modules multichoice, continuation, hellaswag, nli, copa, translation (where they import them): fix 6.
    Nothing else: `_loglikelihood_tokens`, batching, truncation and the log-probabilities of the multiple-choice
    path stay lighteval's. Other backends (vLLM, endpoints, ...) are not patched: their PMI metrics still raise
    and their perplexities are what they are.

Guards: each fix is applied only when (1) `importlib.metadata.version("lighteval")` is a 0.13.x release (the
series known broken; `AFFECTED_SERIES`), and (2) a cheap check finds the bug: for bug 1 the source of
`_loglikelihood_tokens` still holds the -1 padding or the double slice; for bug 2 the transformers backend's
source never mentions `unconditioned_query`, and `LoglikelihoodAcc(LogProbPMINorm()).compute` still raises on a
response that carries `unconditioned_logprobs`; for bug 3 the rolling branch of `_loglikelihood_tokens` still
gathers from the unshifted logits; for fix 4 `_bootstrap_internal.__call__` still opens `mp.Pool(`; for fix 5
lighteval's balanced few-shot sampler still raises TypeError on a pool of documents without gold; for fix 6
`capitalize("mRNA")` is still "MRNA" and the multiple-choice template still capitalises every answer. Otherwise
the fix steps aside and says so in the log. The
environment variable `FINETASKS_AFR_LIGHTEVAL_COMPAT` overrides: `off` (or `0`) applies nothing, `force` skips
the version guard (the behavioural checks still run).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import inspect
import logging
import math
import os
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finetasks_afr.data.lighteval_release import in_series, lighteval_version

if TYPE_CHECKING:
    from lighteval.tasks.requests import Doc

logger = logging.getLogger(__name__)

AFFECTED_SERIES = (0, 13)
ENV_SWITCH = "FINETASKS_AFR_LIGHTEVAL_COMPAT"
FIX_TOKEN_NORM = "acc_norm_token"
FIX_PMI = "acc_norm_pmi"
FIX_ROLLING = "loglikelihood_rolling"
FIX_BOOTSTRAP = "stderr_bootstrap_pool"
FIX_FEWSHOT_LIMIT = "fewshot_limit"
FIX_OPTION_CASE = "option_case"
FIX_CACHE_LOCATION = "local_model_cache"
FIXES = (FIX_TOKEN_NORM, FIX_PMI, FIX_ROLLING, FIX_BOOTSTRAP, FIX_FEWSHOT_LIMIT, FIX_OPTION_CASE, FIX_CACHE_LOCATION)
# The modules whose `capitalize` / `decapitalize` fix 6 replaces (each only where it has the name).
CASE_MODULES = (
    "lighteval.tasks.templates.utils.formatting_utils",
    "lighteval.tasks.templates.multichoice",
    "lighteval.tasks.templates.continuation",
    "lighteval.tasks.templates.hellaswag",
    "lighteval.tasks.templates.nli",
    "lighteval.tasks.templates.copa",
    "lighteval.tasks.templates.translation",
)
_COMPAT_MARK = "__finetasks_afr_compat__"

# Score each distinct (unconditioned prompt, choice) once per call. False: once per document (benchmarks only).
UNCONDITIONED_DEDUP = True

# (owner class, attribute name) -> original attribute, for every attribute currently patched.
_ORIGINALS: dict[tuple[Any, str], Any] = {}  # owner: a class, or a module (fix 6)
_ACTIVE: set[str] = set()
# Task names with a PMI metric in the pipeline run under way; None outside a pipeline run (= score every doc).
_PMI_TASKS: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "finetasks_afr_pmi_tasks", default=None
)


@dataclasses.dataclass
class CompatStats:
    """Counters of the unconditioned (PMI) scoring, since the last `reset_stats()`."""

    calls: int = 0  # loglikelihood calls that needed unconditioned scores
    docs: int = 0  # documents that received unconditioned_logprobs
    continuations_needed: int = 0  # sum over those documents of their number of choices
    continuations_scored: int = 0  # (prompt, choice) continuations actually sent to the model
    rolling_docs: int = 0  # documents scored by rolling_loglikelihood (perplexity)
    rolling_windows: int = 0  # model inputs they needed (more than one per text longer than max_length)
    rolling_tokens: int = 0  # text tokens scored


STATS = CompatStats()


def reset_stats() -> None:
    for field in dataclasses.fields(STATS):
        setattr(STATS, field.name, 0)


# ----------------------------------------------------------------------------------------------- guards


def version_is_affected(version: str | None) -> bool:
    """True for the lighteval releases known to carry both bugs: the 0.13 series."""
    return in_series(version, AFFECTED_SERIES)


def _source(obj: Any) -> str | None:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return None


def token_norm_bug_present() -> bool:
    """The transformers backend still pads continuation tokens with -1 or double-slices them (issue 1170)."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    source = _source(_original(TransformersModel, "_loglikelihood_tokens"))
    if source is None:  # no source to read: trust the version guard
        return True
    compact = "".join(source.split())
    return "[:num_choices][:len_choice]" in compact or "padding_value=-1" in compact


def pmi_backend_bug_present() -> bool:
    """The transformers backend never scores Doc.unconditioned_query (issue 997)."""
    from lighteval.models.transformers import transformers_model

    source = _source(transformers_model)
    return source is None or "unconditioned_query" not in source


def rolling_bug_present() -> bool:
    """The rolling branch of `_loglikelihood_tokens` gathers token i from the logits at position i (issue 1299)."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    source = _source(_original(TransformersModel, "_loglikelihood_tokens"))
    if source is None:  # no source to read: trust the version guard
        return True
    return "ifrolling:choice_logits=choice_logits.unsqueeze(0)" in "".join(source.split())


def bootstrap_pool_present() -> bool:
    """lighteval's stderr bootstrap of corpus metrics forks a `multiprocessing.Pool` per metric (fix 4)."""
    from lighteval.metrics.utils.stderr import _bootstrap_internal

    source = _source(_original(_bootstrap_internal, "__call__"))
    return source is not None and "mp.Pool(" in source


def cache_location_bug_present() -> bool:
    """lighteval's prediction cache still lives at `Path(cache_dir) / model_name / hash`: inside the folder of a
    local model named by its absolute path (fix 7)."""
    from lighteval.utils.cache_management import SampleCache

    source = _source(_original(SampleCache, "__init__"))
    if source is None:  # no source to read: trust the version guard
        return True
    return "/self.model_config.model_name/self.model_hash" in "".join(source.split())


def zero_shot_sampler_bug_present() -> bool:
    """lighteval's balanced few-shot sampler raises TypeError on a pool of documents without choices or gold (what
    a perplexity task's splits give it when asked for k > 0)."""
    from types import SimpleNamespace

    from lighteval.tasks.prompt_manager import FewShotSampler, FewShotSelection
    from lighteval.tasks.requests import Doc

    pool = [Doc(query=f"text {i}", choices=None, gold_index=None) for i in range(3)]  # type: ignore[arg-type]
    sampler = FewShotSampler.__new__(FewShotSampler)
    sampler.task = SimpleNamespace(fewshot_docs=lambda: list(pool), name="probe")  # type: ignore[assignment]
    sampler.few_shots_select = FewShotSelection.balanced
    sampler.few_shots_split = None
    sampler._fewshot_cache = {}
    state = random.getstate()  # the balanced sampler seeds the global generator
    try:
        FewShotSampler._init_fewshot_sampling_balanced(sampler, num_fewshot=1, variance_seed=0)
    except TypeError:
        return True
    finally:
        random.setstate(state)
    return False


def option_case_bug_present() -> bool:
    """lighteval's `capitalize` upper-cases any first character, and the multiple-choice template applies it to
    every answer."""
    import importlib

    formatting_utils = importlib.import_module(CASE_MODULES[0])
    multichoice = importlib.import_module("lighteval.tasks.templates.multichoice")
    if _original(formatting_utils, "capitalize")("mRNA") != "MRNA":
        return False
    source = _source(multichoice.get_mcq_prompt_function)
    return source is None or "capitalize(fix_ending_punct(str(answer)" in "".join(source.split())


def pmi_metric_bug_present() -> bool:
    """LoglikelihoodAcc under LogProbPMINorm ignores ModelResponse.unconditioned_logprobs (it raises)."""
    from lighteval.metrics.metrics_sample import LoglikelihoodAcc
    from lighteval.metrics.normalizations import LogProbPMINorm
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    doc = Doc(query="q", choices=["a", "b"], gold_index=1)
    response = ModelResponse(logprobs=[-1.0, -2.0], output_tokens=[[1], [2]], unconditioned_logprobs=[-0.5, -4.0])
    compute = _original(LoglikelihoodAcc, "compute")
    try:
        return compute(LoglikelihoodAcc(logprob_normalization=LogProbPMINorm()), doc=doc, model_response=response) != 1
    except (AssertionError, IndexError, ValueError, TypeError):
        return True


# ------------------------------------------------------------------------------------------ apply / restore


def _original(owner: Any, name: str) -> Any:
    return _ORIGINALS.get((owner, name), owner.__dict__.get(name, getattr(owner, name)))


def _wraps_ours(function: Any) -> bool:
    """`function` is one of our wrappers, or wraps one (`__wrapped__` chain)."""
    for _ in range(32):
        if function is None:
            return False
        if getattr(function, _COMPAT_MARK, False):
            return True
        function = getattr(function, "__wrapped__", None)
    return False


def _patch(owner: Any, name: str, make_wrapper: Callable[[Any], Any]) -> None:
    """Wrap `owner.name`, once. The first original is kept for `restore()` even when something else (a test's
    spy, another library) has since wrapped or replaced our wrapper and `apply()` runs again: then our wrapper
    goes on top of theirs, and the recorded original stays lighteval's own."""
    current = owner.__dict__[name]
    if _wraps_ours(current):  # already ours (e.g. this module imported twice)
        return
    wrapper = make_wrapper(current)
    setattr(wrapper, _COMPAT_MARK, True)
    _ORIGINALS.setdefault((owner, name), current)
    setattr(owner, name, wrapper)


def applied() -> frozenset[str]:
    """The fixes currently in force."""
    return frozenset(_ACTIVE)


def _pmi_bug_present() -> bool:
    return pmi_backend_bug_present() and pmi_metric_bug_present()


# Per fix: the probe that finds the bug (looked up at call time, so tests can replace it) and what apply()
# reports when the bug is gone.
_PROBES: tuple[tuple[str, Callable[[], bool], str], ...] = (
    (
        FIX_TOKEN_NORM,
        lambda: token_norm_bug_present(),
        "_loglikelihood_tokens no longer pads/double-slices continuations",
    ),
    (
        FIX_PMI,
        lambda: _pmi_bug_present(),
        "the transformers backend scores unconditioned_query, or LoglikelihoodAcc reads it",
    ),
    (
        FIX_ROLLING,
        lambda: rolling_bug_present(),
        "_loglikelihood_tokens no longer scores rolling tokens with unshifted logits",
    ),
    (FIX_BOOTSTRAP, lambda: bootstrap_pool_present(), "_bootstrap_internal no longer starts a process pool"),
    (
        FIX_FEWSHOT_LIMIT,
        lambda: zero_shot_sampler_bug_present(),
        "the few-shot sampler no longer raises TypeError on documents without gold",
    ),
    (FIX_OPTION_CASE, lambda: option_case_bug_present(), "the templates no longer capitalise every option"),
    (
        FIX_CACHE_LOCATION,
        lambda: cache_location_bug_present(),
        "SampleCache no longer joins cache_dir and model_name into its directory",
    ),
)


def _activate(fix: str, probe: Callable[[], bool], skipped: str) -> str:
    """Mark `fix` active when it already is or its probe still finds the bug; the outcome for apply()'s status."""
    if fix in _ACTIVE or probe():
        _ACTIVE.add(fix)
        return "applied"
    return f"skipped: {skipped}"


def apply() -> dict[str, str]:
    """Install the fixes this lighteval needs (idempotent). Returns, per fix, 'applied' or why not."""
    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    if switch in {"0", "off", "false", "no"}:
        logger.warning("finetasks_afr.scoring.compat: %s=%s, lighteval fixes not applied", ENV_SWITCH, switch)
        return dict.fromkeys(FIXES, f"disabled by {ENV_SWITCH}")
    version = lighteval_version()
    if not version_is_affected(version) and switch != "force":
        message = f"lighteval {version} is not a {AFFECTED_SERIES[0]}.{AFFECTED_SERIES[1]}.x release"
        logger.warning(
            "finetasks_afr.scoring.compat steps aside: %s (fixes for issues 1170, 997, 1299 not applied)", message
        )
        return dict.fromkeys(FIXES, f"skipped: {message}")

    status = {fix: _activate(fix, probe, skipped) for fix, probe, skipped in _PROBES}
    if _ACTIVE:
        _install()
    for fix, outcome in status.items():
        (logger.info if outcome == "applied" else logger.warning)("finetasks_afr.scoring.compat %s: %s", fix, outcome)
    return status


def _install() -> None:
    from lighteval.metrics.metrics_sample import LoglikelihoodAcc, NormalizedMultiChoiceProbability
    from lighteval.models.transformers.transformers_model import TransformersModel

    if _ACTIVE & {FIX_TOKEN_NORM, FIX_PMI}:
        _patch(TransformersModel, "loglikelihood", _wrap_loglikelihood)
    if FIX_ROLLING in _ACTIVE:
        from lighteval.utils.cache_management import SampleCache

        _patch(TransformersModel, "_loglikelihood_tokens", _wrap_loglikelihood_tokens)
        _patch(TransformersModel, "loglikelihood_rolling", _wrap_loglikelihood_rolling)
        _patch(SampleCache, "get_sampling_method", _wrap_get_sampling_method)
    if FIX_BOOTSTRAP in _ACTIVE:
        from lighteval.metrics.utils.stderr import _bootstrap_internal

        _patch(_bootstrap_internal, "__call__", _replace_bootstrap_call)
    if FIX_FEWSHOT_LIMIT in _ACTIVE:
        from lighteval.tasks.lighteval_task import LightevalTask

        _patch(LightevalTask, "__init__", _wrap_task_init)
    if FIX_OPTION_CASE in _ACTIVE:
        import importlib

        for module_name in CASE_MODULES:
            module = importlib.import_module(module_name)
            for name in ("capitalize", "decapitalize"):
                if name in module.__dict__:
                    _patch(module, name, _wrap_case_change)
    if FIX_CACHE_LOCATION in _ACTIVE:
        from lighteval.utils.cache_management import SampleCache

        _patch(SampleCache, "__init__", _wrap_cache_init)
    if FIX_PMI in _ACTIVE:
        from lighteval.pipeline import Pipeline

        _patch(Pipeline, "_run_model", _wrap_run_model)
        _patch(LoglikelihoodAcc, "compute", _wrap_pmi_compute)
        _patch(NormalizedMultiChoiceProbability, "compute", _wrap_pmi_compute)


def restore() -> None:
    """Put every patched attribute back and deactivate the fixes."""
    for (owner, name), original in list(_ORIGINALS.items()):
        setattr(owner, name, original)
    _ORIGINALS.clear()
    _ACTIVE.clear()


# ------------------------------------------------------------------------------------------------ wrappers


def _wrap_loglikelihood(original: Callable) -> Callable:
    @functools.wraps(original)
    def loglikelihood(self, docs, *args, **kwargs):
        docs = list(docs) if isinstance(docs, list | tuple) else [docs]
        responses = original(self, docs, *args, **kwargs)
        if len(responses) != len(docs):  # lighteval's cache drops responses without logprobs: cannot pair them
            logger.warning(
                "finetasks_afr.scoring.compat: %d responses for %d docs, left as is", len(responses), len(docs)
            )
            return responses
        if FIX_TOKEN_NORM in _ACTIVE:
            for doc, response in zip(docs, responses, strict=True):
                response.output_tokens = choice_tokens(self, doc, response.output_tokens)
        if FIX_PMI in _ACTIVE:
            add_unconditioned_logprobs(self, docs, responses)
        return responses

    return loglikelihood


def _wrap_run_model(original: Callable) -> Callable:
    @functools.wraps(original)
    def _run_model(self, *args, **kwargs):
        token = _PMI_TASKS.set(pmi_task_names(self.tasks_dict))
        try:
            return original(self, *args, **kwargs)
        finally:
            _PMI_TASKS.reset(token)

    return _run_model


def _wrap_pmi_compute(original: Callable) -> Callable:
    from lighteval.metrics.normalizations import LogProbPMINorm

    @functools.wraps(original)
    def compute(self, doc, model_response, **kwargs):
        if isinstance(_normalization(self), LogProbPMINorm):
            n_choices = len(doc.choices)
            unconditioned = model_response.unconditioned_logprobs
            if (
                unconditioned is not None
                and len(unconditioned) == n_choices
                and len(model_response.logprobs) == n_choices
            ):
                logprobs = [*model_response.logprobs, *unconditioned]
                model_response = dataclasses.replace(model_response, logprobs=logprobs)
        return original(self, doc=doc, model_response=model_response, **kwargs)

    return compute


def _normalization(sample_level_fn: Any) -> Any:
    for attribute in ("logprob_normalization", "log_prob_normalization", "normalization"):
        value = getattr(sample_level_fn, attribute, None)
        if value is not None:
            return value
    return None


def pmi_task_names(tasks_dict: dict[str, Any]) -> frozenset[str]:
    """Names (as in Doc.task_name) of the tasks with at least one LogProbPMINorm metric."""
    from lighteval.metrics.normalizations import LogProbPMINorm

    return frozenset(
        name
        for name, task in tasks_dict.items()
        if any(isinstance(_normalization(metric.sample_level_fn), LogProbPMINorm) for metric in task.metrics)
    )


# ------------------------------------------------------------------------------------------ fix 1: tokens


def _rows(tokens: Any) -> list[list[int]] | None:
    if hasattr(tokens, "tolist"):
        tokens = tokens.tolist()
    rows = []
    for row in tokens or []:
        if hasattr(row, "tolist"):
            row = row.tolist()
        if not isinstance(row, list | tuple):
            return None
        rows.append([int(token) for token in row])
    return rows


def choice_tokens(model: Any, doc: Any, output_tokens: Any) -> list[list[int]]:
    """One list per choice with exactly that choice's continuation tokens (no -1 padding, no dropped rows)."""
    rows = _rows(output_tokens)
    if rows is not None and len(rows) == len(doc.choices):
        stripped = [[token for token in row if token != -1] for row in rows]
        if all(stripped):
            return stripped
    context = model.prompt_manager.prepare_prompt(doc)
    _, continuations = model.tok_encode_pair(context, doc.choices, pairwise=True)
    return [[int(token) for token in continuation] for continuation in continuations]


# --------------------------------------------------------------------------------------------- fix 2: PMI


def _wants_unconditioned(doc: Any, response: Any, scope: frozenset[str] | None) -> bool:
    if doc.unconditioned_query is None or not doc.choices:
        return False
    if scope is not None and doc.task_name not in scope:
        return False
    # Not when the response already has them (or the 2 x n_choices layout).
    return response.unconditioned_logprobs is None and len(response.logprobs) == len(doc.choices)


def _unconditioned_query_text(model: Any, query: str) -> str | None:
    """The query to score the choices after; a causal LM needs at least one context token."""
    contexts, _ = model.tok_encode_pair(model.prompt_manager.prepare_prompt(_bare_doc(query, ["x"])), ["x"], True)
    if len(contexts[0]) > 0:
        return query
    bos = getattr(model.tokenizer, "bos_token", None)
    if bos:
        return bos + query
    logger.warning("unconditioned_query %r gives no context token and the tokenizer has no bos: not scored", query)
    return None


def _bare_doc(query: str, choices: list[str]) -> Doc:
    from lighteval.tasks.requests import Doc, SamplingMethod

    return Doc(
        query=query,
        choices=choices,
        gold_index=0,
        task_name="finetasks_afr_compat|unconditioned",
        sampling_methods=[SamplingMethod.LOGPROBS],
    )


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def add_unconditioned_logprobs(model: Any, docs: list[Any], responses: list[Any]) -> None:
    """Set `response.unconditioned_logprobs` = log P(choice | unconditioned_query) for the documents needing it."""
    scope = _PMI_TASKS.get()
    wanted = [
        (doc, response)
        for doc, response in zip(docs, responses, strict=True)
        if _wants_unconditioned(doc, response, scope)
    ]
    if not wanted:
        return

    queries: dict[str, str | None] = {}
    for doc, _ in wanted:
        if doc.unconditioned_query not in queries:
            queries[doc.unconditioned_query] = _unconditioned_query_text(model, doc.unconditioned_query)
    texts = {query: text for query, text in queries.items() if text is not None}  # the scorable ones
    wanted = [(doc, response) for doc, response in wanted if doc.unconditioned_query in texts]
    if not wanted:
        return

    # The requests: per distinct query, its distinct choices (or, without dedup, every document's choices),
    # in documents of at most as many choices as the real documents have, to keep lighteval's batch sizes.
    width = max(len(doc.choices) for doc, _ in wanted)
    request_docs: list[tuple[str, list[str]]] = []
    if UNCONDITIONED_DEDUP:
        choices_per_query: dict[str, dict[str, None]] = {}  # an ordered set of choices per query
        for doc, _ in wanted:
            choices_per_query.setdefault(doc.unconditioned_query, {}).update(dict.fromkeys(doc.choices))
        for query, distinct in choices_per_query.items():
            request_docs += [(query, chunk) for chunk in _chunks(list(distinct), width)]
    else:
        request_docs = [(doc.unconditioned_query, list(doc.choices)) for doc, _ in wanted]

    bare = [_bare_doc(texts[query], choices) for query, choices in request_docs]
    # Through the uncached scorer: these are not documents of a registered task.
    scored = model._loglikelihood_tokens(bare)
    table: dict[tuple[str, str], float] = {}
    per_doc: list[list[float]] = []
    for (query, choices), response in zip(request_docs, scored, strict=True):
        values = [float(value) for value in response.logprobs[: len(choices)]]
        per_doc.append(values)
        table.update({(query, choice): value for choice, value in zip(choices, values, strict=True)})

    if UNCONDITIONED_DEDUP:
        for doc, response in wanted:
            response.unconditioned_logprobs = [table[(doc.unconditioned_query, choice)] for choice in doc.choices]
    else:
        for (_, response), values in zip(wanted, per_doc, strict=True):
            response.unconditioned_logprobs = values

    STATS.calls += 1
    STATS.docs += len(wanted)
    STATS.continuations_needed += sum(len(doc.choices) for doc, _ in wanted)
    STATS.continuations_scored += sum(len(choices) for _, choices in request_docs)


# ----------------------------------------------------------------------------------- fix 3: rolling (perplexity)


# Set while TransformersModel.loglikelihood_rolling (lighteval's @cached(PERPLEXITY) method) runs.
_IN_ROLLING: contextvars.ContextVar[bool] = contextvars.ContextVar("finetasks_afr_in_rolling", default=False)


def _wrap_loglikelihood_tokens(original: Callable) -> Callable:
    """Bug 3: the rolling branch of `_loglikelihood_tokens` scores through `rolling_loglikelihood`; the other
    branch is lighteval's, untouched. A subclass or mock overriding `_loglikelihood_tokens` keeps its own."""

    @functools.wraps(original)
    def _loglikelihood_tokens(self, docs, rolling=False, *args, **kwargs):
        if rolling:
            return rolling_loglikelihood(self, list(docs) if isinstance(docs, list | tuple) else [docs])
        return original(self, docs, rolling, *args, **kwargs)

    return _loglikelihood_tokens


def _wrap_loglikelihood_rolling(original: Callable) -> Callable:
    """Bug 3 (d): mark the call, so that lighteval's cache keeps the perplexity responses it just stored."""

    @functools.wraps(original)
    def loglikelihood_rolling(self, docs, *args, **kwargs):
        token = _IN_ROLLING.set(True)
        try:
            return original(self, docs, *args, **kwargs)
        finally:
            _IN_ROLLING.reset(token)

    return loglikelihood_rolling


def _wrap_get_sampling_method(original: Callable) -> Callable:
    """Bug 3 (d): within `loglikelihood_rolling`, a cached response with log-probabilities is a PERPLEXITY sample
    (lighteval 0.13 classifies it as LOGPROBS, and its `@cached` wrapper then drops every perplexity response)."""
    from lighteval.tasks.requests import SamplingMethod

    @functools.wraps(original)
    def get_sampling_method(self, sample):
        method = original(self, sample)
        if method == SamplingMethod.LOGPROBS and _IN_ROLLING.get():
            return SamplingMethod.PERPLEXITY
        return method

    return get_sampling_method


_WARNED_PROMPT_DIFFERS: set[str] = set()


def rolling_text(model: Any, doc: Any) -> str:
    """The text a perplexity document stands for: its rendered prompt, then its one choice if it has one."""
    choices = list(doc.choices or [])
    if len(choices) > 1:
        raise ValueError(
            f"task {doc.task_name}: a rolling log-likelihood (perplexity) document scores one text, but this one has "
            f"{len(choices)} choices; fix: put the text in Doc.query with choices=None"
        )
    text = model.prompt_manager.prepare_prompt(doc) + "".join(choices)
    if text != doc.query and doc.task_name not in _WARNED_PROMPT_DIFFERS:
        _WARNED_PROMPT_DIFFERS.add(doc.task_name)
        logger.warning(
            "%s: the scored text differs from Doc.query (system prompt, instruction, few-shot examples or a "
            "choice were added); lighteval's perplexity metrics count the words and bytes of the query only",
            doc.task_name,
        )
    return text


def rolling_loglikelihood(model: Any, docs: list[Any]) -> list[Any]:
    """log P(text) of each document's text, every token scored once under the scoring core's windowing rule
    (`finetasks_afr.scoring.core.rolling_windows`; see the module docstring, bug 3)."""
    from lighteval.models.model_output import ModelResponse

    from finetasks_afr.scoring import core as scoring

    prefix = scoring.prefix_token_id(model.tokenizer)
    tokens = [[int(t) for t in model.tok_encode(rolling_text(model, doc), add_special_tokens=False)] for doc in docs]
    longest = max((len(text) for text in tokens), default=1)
    batch_size = model._get_batch_size(
        max_input_length=min(longest, model.max_length), override_bs=model.config.batch_size
    )
    scores = scoring.score_token_texts(
        model.model, tokens, prefix=prefix, max_length=model.max_length, batch_size=batch_size,
        pad_id=scoring.pad_token_id(model.tokenizer),
    )  # fmt: skip
    STATS.rolling_docs += len(docs)
    STATS.rolling_windows += sum(len(scoring.rolling_windows(len(text), model.max_length)) for text in tokens)
    STATS.rolling_tokens += sum(len(text) for text in tokens)
    return [
        ModelResponse(
            logprobs=[score.logprob],
            argmax_logits_eq_gold=[score.greedy],
            input_tokens=[prefix, *text],
            output_tokens=[text],
        )
        for score, text in zip(scores, tokens, strict=True)
    ]


def bootstrap_indices(n: int, seed: int, number_draws: int) -> Any:
    """The indices `random.Random(seed).choices(range(n), k=n)` picks, `number_draws` times in a row, as one
    (number_draws, n) int64 array, generated by numpy from the same Mersenne Twister state.

    `Random.choices` picks `population[floor(random() * n)]`, and `random()` is 53 bits from two 32-bit outputs,
    the formula numpy's legacy `RandomState.random_sample` uses; handing Python's seeded state to a
    `RandomState` yields the same stream (a test compares every draw).
    """
    import numpy as np

    rnd = random.Random()
    rnd.seed(seed)
    _, internal, _ = rnd.getstate()
    state = np.random.RandomState()
    state.set_state(("MT19937", np.asarray(internal[:-1], dtype=np.uint32), int(internal[-1]), 0, 0.0))
    return np.floor(state.random_sample((number_draws, n)) * n).astype(np.int64)


def bootstrap_draws(population: list, seed: int, number_draws: int) -> list[list]:
    """Exactly `[random.Random(seed).choices(population, k=len(population)) for _ in range(number_draws)]`
    (the draws of lighteval's `_bootstrap_internal`; `bootstrap_indices`)."""
    if not population:
        return [[] for _ in range(number_draws)]
    indices = bootstrap_indices(len(population), seed, number_draws)
    return [[population[i] for i in row] for row in indices.tolist()]


def _perplexity_inputs(metric: Any, population: list) -> tuple[Any, Any, str] | None:
    """(log-probabilities, weights, metric type) as arrays when `metric` is lighteval's own
    `CorpusLevelPerplexityMetric.compute_corpus` over `PerplexityCorpusMetricInput`s holding one number each (what
    its preparators make: an `np.sum` and an int count), else None."""
    import numbers

    import numpy as np
    from lighteval.metrics.metrics_corpus import CorpusLevelPerplexityMetric
    from lighteval.metrics.sample_preparator import PerplexityCorpusMetricInput

    owner = getattr(metric, "__self__", None)
    if not isinstance(owner, CorpusLevelPerplexityMetric):
        return None
    if getattr(metric, "__func__", None) is not CorpusLevelPerplexityMetric.compute_corpus:
        return None  # a subclass computing something else
    logprobs: list[float] = []
    weights: list[int] = []
    for item in population:
        if not isinstance(item, PerplexityCorpusMetricInput):
            return None
        logprob, weight = item.logprobs, item.weights
        # np.float64 only (numpy's additions, as `sum` makes them); a Python float would meet sum()'s compensated
        # summation on Python >= 3.12, which the arrays do not replicate
        if not isinstance(logprob, np.float64) or isinstance(weight, bool) or not isinstance(weight, numbers.Integral):
            return None
        logprobs.append(logprob)
        weights.append(int(weight))
    if not population or max(weights) > 2**31 or min(weights) < -(2**31):
        return None
    return np.asarray(logprobs, dtype=np.float64), np.asarray(weights, dtype=np.int64), owner.metric_type


def bootstrap_perplexities(metric: Any, population: list, seed: int, number_draws: int) -> list | None:
    """lighteval's 1000 resampled corpus perplexities (`[metric(draw) for draw in bootstrap_draws(...)]`), bit for
    bit, from index arrays instead of 1000 lists of inputs; None where `metric` is not one it replicates
    (`_perplexity_inputs`): the caller then runs the loop.

    Bit for bit because every operation is the one lighteval makes, in its order: `sum` adds numpy float64s left
    to right starting from the int 0 (a cumulative sum along each draw, after adding 0.0 to its first term), and
    sums ints exactly (int64, bounded by 2^31 per item); the divisions are the same IEEE operations elementwise;
    `math.exp` and `np.mean` are called per draw on the same values (np.mean of a contiguous float64 row is
    np.mean of the list). tests/scoring/test_compat_metrics.py compares the two on random populations.
    """
    import numpy as np

    inputs = _perplexity_inputs(metric, population)
    if inputs is None:
        return None
    logprobs, weights, metric_type = inputs
    indices = bootstrap_indices(len(population), seed, number_draws)
    drawn = logprobs[indices]
    if metric_type == "perplexity":
        return [math.exp(-np.mean(row)) for row in drawn]
    drawn[:, 0] += 0.0  # sum() starts from 0: 0 + (-0.0) is 0.0
    total = np.cumsum(drawn, axis=1)[:, -1]
    units = weights[indices].sum(axis=1)
    if metric_type == "weighted_perplexity":
        return [math.exp(value) for value in (-total / units)]
    if metric_type == "bits_per_byte":
        return list(-total / units * 1 / math.log(2))
    return None


def _replace_bootstrap_call(original: Callable) -> Callable:
    """Fix 4: the same draws as lighteval's `_bootstrap_internal.__call__`, computed in this process (perplexities
    vectorised, `bootstrap_perplexities`)."""

    @functools.wraps(original)
    def call(self, cur_experiment):
        from finetasks_afr.scoring import phases

        population, seed = cur_experiment
        with phases.phase(phases.STDERR):
            fast = bootstrap_perplexities(self.metric, population, seed, self.number_draws)
            if fast is not None:
                return fast
            return [self.metric(draw) for draw in bootstrap_draws(population, seed, self.number_draws)]

    return call


# ------------------------------------------------------------------------- fix 5: 0-shot-only tasks, k > 0


class FewShotLimitError(ValueError):
    """A task asked with more few-shot examples than it allows (a 0-shot-only task with k > 0)."""


@dataclasses.dataclass(frozen=True)
class FewShotLimit:
    """How many few-shot examples a task allows, and why no more."""

    maximum: int
    reason: str


# Task name -> its limit; filled by the task definitions (`limit_fewshot`), read by the sweep and by fix 5.
FEWSHOT_LIMITS: dict[str, FewShotLimit] = {}


def limit_fewshot(config: Any, maximum: int, reason: str) -> Any:
    """Mark `config`'s task as allowing at most `maximum` few-shot examples (0: 0-shot only); returns `config`."""
    FEWSHOT_LIMITS[config.name] = FewShotLimit(maximum, reason)
    return config


def fewshot_limit(name: str) -> FewShotLimit | None:
    """The limit of task `name` (None: as many as its few-shot split holds)."""
    return FEWSHOT_LIMITS.get(name)


def fewshot_limit_problem(name: str, requested: int) -> str | None:
    """Why `name|requested` cannot run, or None when it can."""
    limit = fewshot_limit(name)
    if limit is None or requested <= limit.maximum:
        return None
    allowed = "0-shot only" if limit.maximum == 0 else f"at most {limit.maximum}-shot"
    return (
        f"task {name} asked with {requested} few-shot examples, but it is {allowed} (maximum few-shot count "
        f"{limit.maximum}): {limit.reason}; fix: ask for {name}|{limit.maximum}"
    )


def _wrap_task_init(original: Callable) -> Callable:
    """Fix 5: refuse the config before lighteval builds the task (and so before any dataset or model loads)."""

    @functools.wraps(original)
    def __init__(self, config, *args, **kwargs):  # noqa: N807 (it replaces LightevalTask.__init__)
        problem = fewshot_limit_problem(config.name, int(getattr(config, "num_fewshots", 0) or 0))
        if problem is not None:
            raise FewShotLimitError(problem)
        return original(self, config, *args, **kwargs)

    return __init__


# ------------------------------------------------------------------------------------- fix 6: option case


def case_carries_meaning(text: str) -> bool:
    """Changing the case of `text`'s first character could change what it says: its first word has an upper-case
    letter after its first character (mRNA, pH, acetyl-CoA, i-pH), or is a single letter used as a symbol (followed
    by punctuation, by a token that is not a word, or by nothing: "p = 4", "x", "a. and c. above")."""
    words = text.split(maxsplit=2)  # the first two words decide; an option can be a paragraph
    if not words:
        return False
    first = words[0]
    if any(character.isupper() for character in first[1:]):
        return True
    if not first[0].isalpha():
        return False
    if len(first) > 1:  # one letter and marks or digits only: "a.", "b)", "x²", "p=4"
        return not any(character.isalpha() for character in first[1:])
    return len(words) == 1 or not words[1][0].isalpha()


def _wrap_case_change(original: Callable) -> Callable:
    """Fix 6: lighteval's capitalize / decapitalize, except where the text's case carries meaning."""

    @functools.wraps(original)
    def change_case(word):
        if isinstance(word, str) and case_carries_meaning(word):
            return word
        return original(word)

    return change_case


# ------------------------------------------------------------------------ fix 7: the cache of a local model

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def init_sample_cache(cache: Any, model_config: Any, directory: Path, model_hash: str) -> None:
    """What lighteval's `SampleCache.__init__` sets, with the cache at `directory / model_hash`: the one place
    that knows those attributes (fix 7 and the sweep's `prediction_cache_in` both build their caches here)."""
    cache.model_config = model_config
    cache.model_hash = model_hash
    cache.cache_dir = Path(directory) / model_hash
    cache.cache_dir.mkdir(parents=True, exist_ok=True)
    cache.registry = None
    cache.existing_indices = cache._load_cached_indices()
    cache._task_hashes = {}


def weights_fingerprint(folder: Path) -> str:
    """Name, size and modification time of every weights file directly in `folder`: what changes when a checkpoint
    is overwritten in place, read without hashing gigabytes."""
    entries = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name.endswith(WEIGHT_SUFFIXES):
            info = path.stat()
            entries.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    return ";".join(entries)


def local_cache_directory(cache_dir: str, model_name: str) -> Path:
    """`<cache_dir>/local/<the model folder's absolute path without its root>`: never inside the model folder."""
    folder = Path(model_name).expanduser().resolve()
    return Path(cache_dir).expanduser() / "local" / Path(*folder.parts[1:])


def _wrap_cache_init(original: Callable) -> Callable:
    @functools.wraps(original)
    def __init__(self: Any, model_config: Any) -> None:  # noqa: N807 (the method it replaces)
        folder = Path(str(model_config.model_name)).expanduser()
        if not folder.is_dir():  # a hub name: lighteval's layout is right
            original(self, model_config)
            return
        config_hash = self.get_model_hash(model_config)
        digest = hashlib.sha256(f"{config_hash}|{weights_fingerprint(folder)}".encode()).hexdigest()[:16]
        init_sample_cache(self, model_config, local_cache_directory(model_config.cache_dir, str(folder)), digest)

    return __init__
