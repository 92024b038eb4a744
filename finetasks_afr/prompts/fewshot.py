"""Few-shot examples for lighteval 0.13: never the document itself, one seeded draw per document (`apply()`).

The task module (`finetasks_afr/tasks.py`) calls `apply()` when it is imported, so the plain
`lighteval accelerate ... --custom-tasks finetasks_afr/tasks.py` command gets this sampler as well as the Python
API. `apply()` is idempotent; `restore()` puts lighteval's own sampler back (for tests).

Problem 1, self-exclusion (a leak of the gold answer).
    `FewShotSampler.sample_fewshot_examples` drops the evaluated document from its candidates with
    `x != formatted_doc` (`Doc` dataclass equality, every field). But `LightevalTask.get_docs` sets
    `doc.task_name = self.full_name` ("name|k") on each evaluated document *before* sampling, while the few-shot
    documents keep the task name "name" their prompt function gave them: the two never compare equal, nothing
    is excluded. When the few-shot split is the evaluation split (Belebele and NaijaRC have only a test split),
    a document can be shown as one of its own examples, gold answer included: with the default "balanced"
    selection the pool is k + 1 documents, every document takes the first k of them, so exactly the k documents
    at the head of the pool see themselves (5 of 900 in belebele_zul_mcf|5). A second, milder leak: the same
    text in two splits (AfriSenti has tweets in both validation and test) is never compared at all.
    Fix: for each evaluated document, every candidate with the same *text* is removed before drawing, where the
    text is `text_key(doc)`: what the document asks without its answer. That is the query without its instruction
    prefix (what the prompt shows of an example, see `PromptManager._extract_query`: the passage and question, or
    the sentence), plus, for a multiple-choice document, the set of its options (the choices, unordered, when some
    choice is not a gold answer); a generative document's choices are its reference answers and are left out. Each
    part is reduced to its letters, combining marks and digits after NFKC and case folding: punctuation, quotes,
    symbols and emoji (categories P*, S*), format characters, variation selectors and all whitespace are dropped,
    because the copies the data holds differ in exactly these (a tweet with and without a trailing emoji or an
    inserted `""`, a passage and question whose two rows answer "Prince Edward" and "Prince Edward,"), while the
    diacritics that tell two Yoruba words apart stay. No answer is part of the key: a copy with another answer
    (a duplicated tweet with a different label in the other split, a question answered with different
    punctuation) still reveals the evaluated text. The options are compared, unordered, so that items sharing a
    stem but not their options (COPA-like premises, an NLI premise under three hypotheses) are not thrown away,
    while a copy with its options reordered is. Each removal is counted in `EXCLUDED[(task "name|k", kind)]`,
    kind `SELF` when the candidate is the evaluated row itself (few-shot docs read from an evaluation split, same
    row id and same content: query, choices, gold, instruction; the task name ignored) and `DUPLICATE` otherwise
    (another row with the same key: a near-copy). The counts are logged once per task (info level) after its
    `get_docs`.

Problem 2, one pool for every document.
    lighteval builds ONE list of examples per variance seed (`_init_fewshot_sampling_balanced` /
    `_init_fewshot_sampling_random`) and gives it to every document; the "balanced" mode walks the labels in
    order of training frequency. Every document then sees the same examples with the same answer sequence
    (SIB-200 MCF 5-shot: A,B,C,D,E for all; Winogrande MCF: B,A,B,A,B), which a model can learn to continue
    and which makes a benchmark's score hinge on one lucky or unlucky set of examples.
    Fix: each document gets its own `random.Random`, seeded from the SHA-256 digest of (variance seed, task
    name without the `|k` suffix, the document's query, choices and gold indices) in canonical JSON. The draw
    depends on nothing else (not the document's position, `--max-samples`, the process or PYTHONHASHSEED: Python's
    `hash()` is never used), so prompts are byte-reproducible across runs and machines. The selection modes keep
    their meaning:
      - balanced: as balanced over labels (`fewshot_sorting_class`, else the first gold) as the candidates
        allow: the labels are shuffled per document, slots go round-robin over them (so with more labels than
        k, a per-document choice of k labels, and with k not a multiple of the label count, a per-document
        choice of which labels get one more), one random candidate per slot, and the chosen examples are then
        shuffled (round-robin order alone would give a strict alternation A,B,A,B,... with two labels);
      - random, random_sampling, random_sampling_from_train: a random sample of k per document (lighteval's
        `sampler` argument, one generator shared by all documents in shuffled order, is not used);
      - sequential: unchanged meaning, the first k of the few-shot split rotated by k x variance seed, the same
        for every document, minus the excluded candidates.
    Exactly k examples are returned whenever at least k candidates remain after the exclusions (the draw takes
    k + the number of excluded candidates, then drops the excluded ones), else every remaining candidate.

What is patched (originals kept in `_ORIGINALS`; the replacements carry `_MARK`):
    - `lighteval.tasks.prompt_manager.FewShotSampler.sample_fewshot_examples`, same signature
      `(num_fewshot, variance_seed, sampler=None, formatted_doc=None)`; a call without `formatted_doc` (nothing
      to exclude, nothing to seed on) goes to lighteval's original.
    - `lighteval.tasks.lighteval_task.LightevalTask.get_docs`: unchanged, then the one log line per task.

Guards, as in `finetasks_afr.scoring.compat`: applied only on a lighteval 0.13.x release (`AFFECTED_SERIES`) and when
`probe()` still finds a problem: it evaluates a 6-document in-memory task (few-shot split = evaluation split,
2-shot) through lighteval's real `LightevalTask.get_docs` and the sampler currently installed, and reports how
many documents were shown themselves and how many distinct example lists there were (1 = one shared pool).
`FINETASKS_AFR_FEWSHOT_FIX=0` (or `off`) applies nothing; `force` skips the version guard (the probe still runs).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import json
import logging
import os
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from finetasks_afr.data.lighteval_release import in_series, lighteval_version

logger = logging.getLogger(__name__)

AFFECTED_SERIES = (0, 13)
ENV_SWITCH = "FINETASKS_AFR_FEWSHOT_FIX"
FIX = "fewshot_sampler"
SELF = "self"  # the evaluated row itself, found among its own few-shot candidates
DUPLICATE = "duplicate"  # another row (same or other split) with the same text
_MARK = "__finetasks_afr_fewshot__"

# (task "name|k", SELF or DUPLICATE) -> candidates removed, summed over the task's documents, since reset_counters().
EXCLUDED: Counter[tuple[str, str]] = Counter()
# task "name|k" -> documents that received few-shot examples from the replacement sampler.
SAMPLED: Counter[str] = Counter()

_ORIGINALS: dict[tuple[type, str], Any] = {}
_ACTIVE: set[str] = set()
_LOGGED: set[str] = set()
_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("finetasks_afr_fewshot_quiet", default=False)
_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u20dd-\u20e4]")  # variation selectors; enclosing marks


def reset_counters() -> None:
    """Forget the exclusion counts and which tasks were logged."""
    EXCLUDED.clear()
    SAMPLED.clear()
    _LOGGED.clear()


# ------------------------------------------------------------------------------------------- document keys


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


class _KeptCharacters(dict[int, int | None]):
    """`str.translate` table of `normalise`, filled on first sight of each code point: the character itself when it
    is a letter, combining mark or digit (and not a variation selector or enclosing mark), else None (dropped).

    The few-shot sampler keys every document of a pool (tens of thousands per task): a per-character Python test
    was 60% of the time lighteval took to build a task's documents; `translate` runs this table in C."""

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        kept = unicodedata.category(char)[0] in "LMN" and not _SELECTOR.match(char)
        self[code] = code if kept else None
        return self[code]


_KEPT = _KeptCharacters()


def normalise(text: str) -> str:
    """The letters, combining marks and digits of `text` after NFKC and case folding, without variation selectors:
    equal for texts that differ only in case, Unicode form, whitespace, punctuation, quotes, symbols or emoji."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).translate(_KEPT)


def shown_query(doc: Any) -> str:
    """The query as the prompt shows it for an example: without the instruction prefix (PromptManager's rule)."""
    query = doc.query or ""
    instruction = doc.instruction
    if instruction is not None and query.startswith(instruction):
        return query[len(instruction) :].strip()
    return query


def options(doc: Any) -> list[str]:
    """A multiple-choice document's choices (some choice is not a gold answer); none for a generative document,
    whose choices are its reference answers."""
    choices = [str(choice) for choice in doc.choices or []]
    golds = {int(gold) for gold in _as_list(doc.gold_index) if gold is not None}
    return choices if set(range(len(choices))) - golds else []


def text_key(doc: Any) -> tuple[str, tuple[str, ...]]:
    """What makes two documents near-copies: the normalised instruction-free query and the normalised set of options;
    no answer."""
    return normalise(shown_query(doc)), tuple(sorted({normalise(option) for option in options(doc)}))


def content_key(doc: Any) -> tuple[Any, ...]:
    """The document's content as written: query, choices, gold indices, instruction (not task name, id, ...)."""
    golds = tuple(int(gold) for gold in _as_list(doc.gold_index))
    return doc.query, tuple(doc.choices or []), golds, doc.instruction


def doc_seed(variance_seed: int, task_name: str, doc: Any) -> int:
    """The seed of one document's draw: SHA-256 of (variance seed, task name without `|k`, query, choices, gold)."""
    base_name = task_name.split("|", 1)[0]
    golds = [int(gold) for gold in _as_list(doc.gold_index)]
    material = json.dumps(
        [int(variance_seed), base_name, doc.query, list(doc.choices or []), golds],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:16], "big")


def _label(doc: Any) -> Any:
    """lighteval's balancing class: `fewshot_sorting_class`, else the first gold answer."""
    return doc.fewshot_sorting_class or _as_list(doc.get_golds())[0]


# ----------------------------------------------------------------------------------------------- the sampler


@dataclasses.dataclass
class _PoolIndex:
    """Per sampler: the few-shot documents with their keys, so that each document's exclusions cost O(1)."""

    pool: list[Any]
    by_text: dict[tuple[str, tuple[str, ...]], list[int]]
    labels: list[Any]  # sorted
    by_label: dict[Any, list[int]]
    label_of: list[Any]  # per pool position (balanced mode only; else empty)
    from_evaluation_split: bool  # the few-shot documents are rows of an evaluation split


def _pool_index(sampler: Any) -> _PoolIndex:
    pool = sampler.task.fewshot_docs()
    index: _PoolIndex | None = getattr(sampler, "_finetasks_afr_pool_index", None)
    if index is not None and index.pool is pool:
        return index
    by_text: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    by_label: dict[Any, list[int]] = {}
    label_of: list[Any] = []
    balanced = sampler.few_shots_select.value.sorting == "balanced"
    for position, doc in enumerate(pool):
        by_text.setdefault(text_key(doc), []).append(position)
        if balanced:
            label_of.append(_label(doc))
            by_label.setdefault(label_of[-1], []).append(position)
    split = sampler.task.fewshot_split
    index = _PoolIndex(
        pool=pool,
        by_text=by_text,
        labels=sorted(by_label, key=lambda label: (type(label).__name__, str(label))),
        by_label=by_label,
        label_of=label_of,
        from_evaluation_split=split is None or split in tuple(sampler.task.evaluation_split),
    )
    sampler._finetasks_afr_pool_index = index
    return index


def exclusions(index: _PoolIndex, doc: Any) -> dict[int, str]:
    """Pool positions that must not be examples of `doc`, each with its kind (SELF or DUPLICATE)."""
    matches = index.by_text.get(text_key(doc), [])
    content = content_key(doc)
    excluded = {}
    for position in matches:
        candidate = index.pool[position]
        is_self = index.from_evaluation_split and candidate.id == doc.id and content_key(candidate) == content
        excluded[position] = SELF if is_self else DUPLICATE
    return excluded


def _draw(rng: random.Random, population: Sequence[int], k: int, excluded: dict[int, str], blocked: int) -> list[int]:
    """k members of `population` not in `excluded` (fewer if there are not enough), in random order; `blocked` is
    how many members of `population` are excluded (so the draw takes k + blocked and drops them)."""
    drawn = rng.sample(population, min(len(population), k + blocked))
    return [member for member in drawn if member not in excluded][:k]


def _balanced(index: _PoolIndex, k: int, rng: random.Random, excluded: dict[int, str]) -> list[int]:
    labels = list(index.labels)
    rng.shuffle(labels)
    blocked = Counter(index.label_of[position] for position in excluded)
    available = {label: len(index.by_label[label]) - blocked[label] for label in labels}
    quota: Counter[Any] = Counter()
    remaining = k
    while remaining > 0:
        progress = False
        for label in labels:
            if remaining and quota[label] < available[label]:
                quota[label] += 1
                remaining -= 1
                progress = True
        if not progress:
            break
    picked = [
        member
        for label in labels
        if quota[label]
        for member in _draw(rng, index.by_label[label], quota[label], excluded, blocked[label])
    ]
    rng.shuffle(picked)
    return picked


def _sequential(index: _PoolIndex, k: int, variance_seed: int, excluded: dict[int, str]) -> list[int]:
    size = len(index.pool)
    start = (k * variance_seed) % size if size else 0
    order = [(start + offset) % size for offset in range(size)]
    return [member for member in order if member not in excluded][:k]


def select_examples(sampler: Any, num_fewshot: int, variance_seed: int, doc: Any) -> tuple[list[Any], dict[int, str]]:
    """The few-shot documents for `doc` (and the excluded pool positions), without counting anything."""
    index = _pool_index(sampler)
    excluded = exclusions(index, doc)
    method = sampler.few_shots_select.value
    rng = random.Random(doc_seed(variance_seed, sampler.task.name, doc))
    if method.sorting == "sequential" and not method.with_sampling:
        picked = _sequential(index, num_fewshot, variance_seed, excluded)
    elif method.sorting == "balanced" and not method.with_sampling:
        picked = _balanced(index, num_fewshot, rng, excluded)
    else:
        picked = _draw(rng, range(len(index.pool)), num_fewshot, excluded, len(excluded))
    return [index.pool[position] for position in picked], excluded


def _replace_sample_fewshot_examples(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    @functools.wraps(original)
    def sample_fewshot_examples(
        self: Any,
        num_fewshot: int,
        variance_seed: int,
        sampler: random.Random | None = None,
        formatted_doc: Any = None,
    ) -> list[Any]:
        if num_fewshot == 0:
            return []
        if formatted_doc is None:
            return original(self, num_fewshot, variance_seed, sampler=sampler, formatted_doc=formatted_doc)
        examples, excluded = select_examples(self, num_fewshot, variance_seed, formatted_doc)
        if not _QUIET.get():
            task = self.task.full_name
            SAMPLED[task] += 1
            for kind in excluded.values():
                EXCLUDED[(task, kind)] += 1
        return examples

    return sample_fewshot_examples


def _wrap_get_docs(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    @functools.wraps(original)
    def get_docs(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        docs = original(self, *args, **kwargs)
        task = self.full_name
        if FIX in _ACTIVE and not _QUIET.get() and SAMPLED[task] and task not in _LOGGED:
            _LOGGED.add(task)
            logger.info(
                "finetasks_afr.prompts.fewshot %s: %d documents got per-document seeded examples; "
                "excluded %d candidates "
                "that were the document itself and %d near-copies (other rows with its text up to case, punctuation, "
                "symbols and spacing, answers aside)",
                task,
                SAMPLED[task],
                EXCLUDED[(task, SELF)],
                EXCLUDED[(task, DUPLICATE)],
            )
        return docs

    return get_docs


# ----------------------------------------------------------------------------------------------------- probe


@dataclasses.dataclass(frozen=True)
class ProbeReport:
    """What the installed sampler did to the probe task's documents."""

    documents: int
    leaked: int  # documents shown themselves among their own examples
    distinct_example_lists: int  # 1: every document got the same examples in the same order

    @property
    def self_leak(self) -> bool:
        return self.leaked > 0

    @property
    def shared_pool(self) -> bool:
        return self.documents > 1 and self.distinct_example_lists == 1

    @property
    def needs_fix(self) -> bool:
        return self.self_leak or self.shared_pool


PROBE_TASK = "finetasks_afr_fewshot_probe"
PROBE_ROWS = tuple({"query": f"Probe question {i}?", "gold": i % 2} for i in range(6))


def probe() -> ProbeReport:
    """Run a 6-document task (few-shot split = evaluation split, 2-shot) through `LightevalTask.get_docs` with
    whatever sampler is installed; counts neither in `EXCLUDED` nor in the log, and keeps the global `random` state
    (lighteval's balanced sampler reseeds it)."""
    import datasets
    from lighteval.tasks.lighteval_task import LightevalTask, LightevalTaskConfig
    from lighteval.tasks.requests import Doc

    def prompt(line: dict[str, Any], task_name: str) -> Any:
        return Doc(task_name=task_name, query=line["query"], choices=[" yes", " no"], gold_index=line["gold"])

    config = LightevalTaskConfig(
        name=PROBE_TASK,
        prompt_function=prompt,
        hf_repo="in-memory",
        hf_subset="default",
        metrics=[],
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split="test",  # named, as Belebele's: None would make lighteval warn on every apply()
        num_fewshots=2,
    )
    task = LightevalTask(config)
    task.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list([dict(row) for row in PROBE_ROWS])})
    state = random.getstate()
    token = _QUIET.set(True)
    try:
        docs = task.get_docs()
    finally:
        _QUIET.reset(token)
        random.setstate(state)
    leaked = sum(any(content_key(example) == content_key(doc) for example in doc.fewshot_samples) for doc in docs)
    lists = {tuple(example.query for example in doc.fewshot_samples) for doc in docs}
    return ProbeReport(documents=len(docs), leaked=leaked, distinct_example_lists=len(lists))


# ------------------------------------------------------------------------------------------ apply / restore


def version_is_affected(version: str | None) -> bool:
    """True for the lighteval releases known to share one pool and leak the document: the 0.13 series."""
    return in_series(version, AFFECTED_SERIES)


def applied() -> bool:
    return FIX in _ACTIVE


def _patch(owner: type, name: str, make: Callable[[Any], Any]) -> None:
    current = owner.__dict__[name]
    if getattr(current, _MARK, False):
        return
    replacement = make(current)
    setattr(replacement, _MARK, True)
    _ORIGINALS[(owner, name)] = current
    setattr(owner, name, replacement)


def apply() -> dict[str, str]:
    """Install the per-document sampler when this lighteval needs it (idempotent). Returns {FIX: outcome}."""
    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    if switch in {"0", "off", "false", "no"}:
        logger.warning(
            "finetasks_afr.prompts.fewshot: %s=%s, lighteval's few-shot sampler left as is", ENV_SWITCH, switch
        )
        return {FIX: f"disabled by {ENV_SWITCH}"}
    if FIX in _ACTIVE:
        return {FIX: "applied"}
    version = lighteval_version()
    if not version_is_affected(version) and switch != "force":
        message = f"lighteval {version} is not a {AFFECTED_SERIES[0]}.{AFFECTED_SERIES[1]}.x release"
        logger.warning("finetasks_afr.prompts.fewshot steps aside: %s (few-shot sampler not replaced)", message)
        return {FIX: f"skipped: {message}"}
    try:
        report = probe()
    except Exception as error:  # an API this module does not know: do not patch it blindly
        logger.warning("finetasks_afr.prompts.fewshot steps aside: the probe failed (%r)", error)
        return {FIX: f"skipped: probe failed ({error!r})"}
    if not report.needs_fix:
        message = "lighteval's sampler already excludes the document and varies the examples per document"
        logger.warning("finetasks_afr.prompts.fewshot steps aside: %s", message)
        return {FIX: f"skipped: {message}"}

    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import FewShotSampler

    _patch(FewShotSampler, "sample_fewshot_examples", _replace_sample_fewshot_examples)
    _patch(LightevalTask, "get_docs", _wrap_get_docs)
    _ACTIVE.add(FIX)
    logger.info(
        "finetasks_afr.prompts.fewshot applied: lighteval's sampler showed %d of %d probe documents themselves "
        "among their "
        "examples and gave %d distinct example list(s); now self and same-text candidates are excluded and each "
        "document draws its own examples",
        report.leaked,
        report.documents,
        report.distinct_example_lists,
    )
    return {FIX: "applied"}


def restore() -> None:
    """Put lighteval's sampler and get_docs back."""
    for (owner, name), original in list(_ORIGINALS.items()):
        setattr(owner, name, original)
    _ORIGINALS.clear()
    _ACTIVE.clear()
