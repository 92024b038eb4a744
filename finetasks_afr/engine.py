"""The sweep engine: lighteval's transformers backend with shared-prefix scoring and tokenisation built once.

`SharedPrefixModel` is a `TransformersModel` (lighteval's own class, loaded through its own config) that overrides
two methods and nothing else:

- `_loglikelihood_tokens`: lighteval's requests (`prompt_manager.prepare_prompt(doc)` then
  `tok_encode_pair(context, doc.choices, pairwise=True)`, exactly as lighteval builds them) are scored by the one
  scoring core (`finetasks_afr.scoring.score_continuations`): each distinct context runs once and every choice is
  scored on its keys/values, sorted and batched by length across all tasks of the run. PMI's unconditioned
  requests (`finetasks_afr.compat`) and Winogrande's per-choice partial-scoring requests
  (`finetasks_afr.partial_scoring`) reach the model through this method as well, so they are shared the same way
  (every PMI choice of a run shares the one "Answer:" context). The rolling (perplexity) branch goes to
  `finetasks_afr.compat.rolling_loglikelihood`, the core's windowing rule. lighteval's `@cached` wrappers,
  the compat fixes and partial scoring sit above this method and are untouched.
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

from finetasks_afr import scoring
from finetasks_afr.sweep import phases

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
    """lighteval's transformers model, scoring log-likelihoods through `finetasks_afr.scoring` (module docstring)."""

    def __init__(self, config: TransformersModelConfig, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.tokenizer_digest = tokenizer_digest(self.tokenizer, config.tokenizer or config.model_name)
        self.tokenisation_hits = 0
        self.tokenisation_misses = 0

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

    # ------------------------------------------------------------------------------------------ scoring
    def _data_parallel(self) -> bool:
        accelerator = getattr(self, "accelerator", None)
        return accelerator is not None and getattr(accelerator, "num_processes", 1) > 1

    def _loglikelihood_tokens(self, docs: list[Any], rolling: bool = False) -> list[ModelResponse]:
        if self._data_parallel():
            return super()._loglikelihood_tokens(docs, rolling=rolling)
        if rolling:
            from finetasks_afr import compat

            with phases.phase(phases.SCORING):
                return compat.rolling_loglikelihood(self, docs)
        with phases.phase(phases.REQUESTS):
            requests = []
            for doc in docs:
                contexts, continuations = self._encoded_pair(
                    self.prompt_manager.prepare_prompt(doc), doc.choices, pairwise=True
                )
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
