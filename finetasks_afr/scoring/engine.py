"""The sweep engine: lighteval's transformers backend with shared-prefix scoring and tokenisation built once.

`SharedPrefixModel` is a `TransformersModel` (lighteval's own class, loaded through its own config) that overrides
two methods and nothing else:

- `_loglikelihood_tokens`: lighteval's requests (`prompt_manager.prepare_prompt(doc)` then
  `tok_encode_pair(context, doc.choices, pairwise=True)`, exactly as lighteval builds them) are scored by the one
  scoring core (`finetasks_afr.scoring.core.score_choices`): each distinct context runs once, its choices packed after
  it in the same row under a block mask (or on its keys/values, or as whole rows: the core's strategy rule, per
  model class), sorted and batched by length across all tasks of the run. PMI's unconditioned
  requests (`finetasks_afr.scoring.compat`) and Winogrande's per-choice partial-scoring requests
  (`finetasks_afr.scoring.partial_scoring`) reach the model through this method as well, so they are shared the same way
  (every PMI choice of a run shares the one "Answer:" context). Each call's plan (groups, packed batches' tensors:
  `scoring.plan_choices`) is kept in `_PLANS` and reused by the next checkpoints asking the same request tokens.
  The rolling (perplexity) branch goes to `finetasks_afr.scoring.compat.rolling_loglikelihood`, the core's windowing
  rule. lighteval's `@cached` wrappers, the compat fixes and partial scoring sit above this method and are untouched.
- `tok_encode_pair`: memoised per process, keyed by a digest of the tokenizer's files (`tokenizer_digest`), so a
  sweep tokenises each request once per worker and re-tokenises only when a checkpoint's tokenizer differs.

With several accelerate processes (data parallelism), the override steps aside and lighteval's own path runs:
the shared path scores every document in the calling process. Responses carry plain lists for `input_tokens` and
`output_tokens` (lighteval stores tensors), so the per-sample hashes in detail files differ in form from
lighteval's; the scores and metrics are the same.

`lighteval custom MODEL finetasks_afr/lighteval_model.py TASKS --custom-tasks finetasks_afr/tasks.py` runs this
class from lighteval's own CLI (see that module).
"""

from __future__ import annotations

import array
import hashlib
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any

from lighteval.models.model_output import ModelResponse
from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig

from finetasks_afr.scoring import core as scoring
from finetasks_afr.scoring import phases

logger = logging.getLogger(__name__)

ENGINES = ("finetasks", "lighteval")
DEFAULT_ENGINE = "finetasks"

# Files that define a tokenizer's behaviour (transformers' save_pretrained names).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "chat_template.jinja",
)

# digest -> {(add_special_tokens, context, continuations, pairwise): (contexts, continuations)}; a few tokenizers.
_TOKENISATIONS: OrderedDict[str, dict[tuple, tuple[tuple[array.array, ...], tuple[tuple[int, ...], ...]]]] = (
    OrderedDict()
)
_KEEP_TOKENIZERS = 4
PREFETCH_MIN = 16  # fewer requests to tokenise than this: one by one (a batch call's set-up is not worth it)


class PlanMemo(OrderedDict):
    """`scoring.score_choices`' plans (keyed there by a digest of the requests' tokens, lengths, pad id), kept for
    the next checkpoints of a sweep, which ask the same requests: the most recent `keep` calls' plans (a pipeline
    makes a few calls: conditioned, PMI's unconditioned, partial scoring), at most `max_bytes` of tensors."""

    def __init__(self, keep: int = 8, max_bytes: int = 512 << 20) -> None:
        super().__init__()
        self.keep, self.max_bytes = keep, max_bytes
        self.hits = 0

    def get(self, key: Any, default: Any = None) -> Any:
        found = super().get(key, default)
        if found is not default:
            self.move_to_end(key)
            self.hits += 1
        return found

    def __setitem__(self, key: Any, plan: scoring.ChoicePlan) -> None:
        if plan.nbytes > self.max_bytes:
            return  # too large to keep: planned again next time
        super().__setitem__(key, plan)
        self.move_to_end(key)
        while len(self) > self.keep or sum(kept.nbytes for kept in self.values()) > self.max_bytes:
            self.popitem(last=False)


_PLANS = PlanMemo()


def lighteval_series() -> str:
    """lighteval's major.minor ("0.13"), or "" when unknown."""
    import importlib.metadata

    try:
        return ".".join(importlib.metadata.version("lighteval").split(".")[:2])
    except importlib.metadata.PackageNotFoundError:
        return ""


def tokenizer_digest(tokenizer: Any, source: str | None = None) -> str:
    """sha256 of the tokenizer's files in `source` (a local directory), else of its serialised form.

    Two checkpoints share tokenisation only when these bytes are identical. A hub id without local files is
    digested from the loaded tokenizer (`backend_tokenizer.to_str()`, special tokens, class), which is what
    `from_pretrained` built from those files.
    """
    digest = hashlib.sha256()
    directory = Path(source) if source else None
    files = [directory / name for name in TOKENIZER_FILES] if directory and directory.is_dir() else []
    present = [path for path in files if path.is_file()]
    if present:
        for path in present:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return "files:" + digest.hexdigest()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    digest.update(type(tokenizer).__name__.encode())
    digest.update(repr(sorted(getattr(tokenizer, "special_tokens_map", {}).items())).encode())
    digest.update((backend.to_str() if backend is not None else repr(tokenizer.get_vocab())).encode())
    return "loaded:" + digest.hexdigest()


def tokenisation_memo(digest: str) -> dict[tuple, tuple[tuple[array.array, ...], tuple[tuple[int, ...], ...]]]:
    """The memo of one tokenizer (most recently used kept; older tokenizers' memos dropped)."""
    memo = _TOKENISATIONS.get(digest)
    if memo is None:
        memo = _TOKENISATIONS[digest] = {}
        while len(_TOKENISATIONS) > _KEEP_TOKENIZERS:
            _TOKENISATIONS.popitem(last=False)
    _TOKENISATIONS.move_to_end(digest)
    return memo


class SharedPrefixModel(TransformersModel):
    """lighteval's transformers model, scoring log-likelihoods through `finetasks_afr.scoring.core` (module
    docstring)."""

    def __init__(self, config: TransformersModelConfig, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.tokenizer_digest = tokenizer_digest(self.tokenizer, config.tokenizer or config.model_name)
        self.tokenisation_hits = 0
        self.tokenisation_misses = 0
        self.tokenisation_prefetched = 0  # requests memoised by `_prefetch_pairs`
        self._batched_pairs: bool | None = None

    # ------------------------------------------------------------------------------------------ tokens
    def tok_encode_pair(
        self, context: str, continuations: list[str], pairwise: bool = False
    ) -> tuple[list[list[int]], list[list[int]]]:
        contexts, encoded = self._encoded_pair(context, continuations, pairwise)
        return [list(c) for c in contexts], [list(c) for c in encoded]

    def _encoded_pair(
        self, context: str, continuations: list[str], pairwise: bool
    ) -> tuple[tuple[array.array, ...], tuple[tuple[int, ...], ...]]:
        """lighteval's `tok_encode_pair`, memoised by tokenizer digest: the context as one int32 array (4 bytes a
        token: a sweep of the whole suite holds every document's context), continuations as tuples; never
        mutated, shared by every checkpoint with this tokenizer."""
        key = (self.add_special_tokens, context, tuple(continuations), bool(pairwise))
        memo = tokenisation_memo(self.tokenizer_digest)
        found = memo.get(key)
        if found is None:
            self.tokenisation_misses += 1
            contexts, encoded = super().tok_encode_pair(context, continuations, pairwise=pairwise)
            context_tokens = array.array("i", (int(t) for t in contexts[0])) if contexts else array.array("i")
            found = memo[key] = (
                (context_tokens,) * len(contexts),  # lighteval's contexts are one list repeated per choice
                tuple(tuple(int(t) for t in c) for c in encoded),
            )
        else:
            self.tokenisation_hits += 1
        return found

    def _batched_pairs_allowed(self) -> bool:
        """Whether `_prefetch_pairs` may replicate `tok_encode_pair`: lighteval 0.13's pairwise rule (read in its
        source), through this class's `tok_encode_pair` and lighteval's own `tok_encode`; anything else (another
        lighteval, a subclass tokenising differently) keeps the one-by-one path."""
        from lighteval.models.abstract_model import LightevalModel

        if self._batched_pairs is None:
            self._batched_pairs = (
                lighteval_series() == "0.13"
                and type(self).tok_encode_pair is SharedPrefixModel.tok_encode_pair
                and type(self).tok_encode is LightevalModel.tok_encode
            )
        return self._batched_pairs

    def _prefetch_pairs(self, prompts: list[str], docs: list[Any]) -> None:
        """Memoise the pairwise tokenisation of the requests not memoised yet in two batched tokenizer calls (all
        contexts, all continuations) instead of one call per text: the requests' first checkpoint tokenises
        every document (a demo checkpoint: 23,000 texts, 2 s one by one).

        It is lighteval 0.13's `tok_encode_pair(context, continuations, pairwise=True)`: the context's trailing
        whitespace moves to each continuation, the context is encoded with the model's special tokens and loses a
        final EOS, continuations without special tokens; a batched call encodes each text as `encode` does. The
        first request of each call is also tokenised one by one, and any difference turns batching off for this
        model, with a warning (tests/scoring/test_engine.py compares every request of its tasks).
        """
        if not self._batched_pairs_allowed():
            return
        memo = tokenisation_memo(self.tokenizer_digest)
        todo: dict[tuple, tuple[str, list[str]]] = {}
        for prompt, doc in zip(prompts, docs, strict=True):
            key = (self.add_special_tokens, prompt, tuple(doc.choices), True)
            if key not in memo and key not in todo and doc.choices:
                spaces = len(prompt) - len(prompt.rstrip())
                context = prompt[:-spaces] if spaces else prompt
                todo[key] = (context, [prompt[len(context) :] + choice for choice in doc.choices])
        if len(todo) < PREFETCH_MIN:
            return
        contexts = list(dict.fromkeys(context for context, _ in todo.values()))
        continuations = list(dict.fromkeys(text for _, texts in todo.values() for text in texts))
        context_ids = self.tokenizer(contexts, add_special_tokens=self.add_special_tokens)["input_ids"]
        continuation_ids = self.tokenizer(continuations, add_special_tokens=False)["input_ids"]
        eos = self.tokenizer.eos_token_id
        context_of = {}
        for text, ids in zip(contexts, context_ids, strict=True):
            tokens = array.array("i", ids)
            if len(tokens) > 0 and tokens[-1] == eos:
                tokens = tokens[:-1]
            context_of[text] = tokens
        continuation_of = {text: tuple(ids) for text, ids in zip(continuations, continuation_ids, strict=True)}
        filled = {
            key: ((context_of[context],) * len(texts), tuple(continuation_of[text] for text in texts))
            for key, (context, texts) in todo.items()
        }
        first = next(iter(filled))
        expected = super().tok_encode_pair(first[1], list(first[2]), pairwise=True)
        got = filled[first]
        if [list(c) for c in got[0]] != [list(c) for c in expected[0]] or [list(c) for c in got[1]] != [
            list(c) for c in expected[1]
        ]:
            logger.warning("batched tokenisation differs from tok_encode_pair for %r: tokenising one by one", first)
            self._batched_pairs = False
            return
        memo.update(filled)
        self.tokenisation_prefetched += len(filled)

    # ------------------------------------------------------------------------------------------ scoring
    def _data_parallel(self) -> bool:
        accelerator = getattr(self, "accelerator", None)
        return accelerator is not None and getattr(accelerator, "num_processes", 1) > 1

    def _loglikelihood_tokens(self, docs: list[Any], rolling: bool = False) -> list[ModelResponse]:
        if self._data_parallel():
            return super()._loglikelihood_tokens(docs, rolling=rolling)
        if rolling:
            from finetasks_afr.scoring import compat

            with phases.phase(phases.SCORING):
                return compat.rolling_loglikelihood(self, docs)
        with phases.phase(phases.REQUESTS):
            prompts = [self.prompt_manager.prepare_prompt(doc) for doc in docs]
            self._prefetch_pairs(prompts, docs)
            requests = []
            for prompt, doc in zip(prompts, docs, strict=True):
                contexts, continuations = self._encoded_pair(prompt, doc.choices, pairwise=True)
                requests.append((contexts[0] if contexts else array.array("i"), continuations))
            longest = max((len(c) + max(map(len, k), default=0) for c, k in requests), default=1)
            batch_size = self._get_batch_size(
                max_input_length=min(self.max_length, longest), override_bs=self.config.batch_size
            )
        with phases.phase(phases.SCORING):
            scored = scoring.score_choices(
                self.model,
                requests,
                max_length=self.max_length,
                batch_size=batch_size,
                pad_id=scoring.pad_token_id(self.tokenizer),
                plans=_PLANS,
            )
        with phases.phase(phases.RESPONSES):
            return [
                ModelResponse(
                    logprobs=[result.logprob for result in results],
                    argmax_logits_eq_gold=[result.greedy for result in results],
                    input_tokens=list(context),
                    output_tokens=[list(cont) for cont in continuations],
                )
                for (context, continuations), results in zip(requests, scored, strict=True)
            ]


def model_config(
    model_name: str,
    *,
    device: str = "cpu",
    batch_size: int | None = 64,
    max_length: int | None = None,
    dtype: str | None = None,
    tokenizer: str | None = None,
    revision: str | None = None,
) -> TransformersModelConfig:
    """lighteval's TransformersModelConfig with only the given fields set (its defaults otherwise)."""
    fields: dict[str, Any] = {"model_name": model_name, "device": device, "batch_size": batch_size}
    optional = {"max_length": max_length, "dtype": dtype, "tokenizer": tokenizer, "revision": revision}
    fields |= {name: value for name, value in optional.items() if value is not None}
    return TransformersModelConfig(**fields)
