"""The one causal-LM scoring core: log P(target tokens | preceding tokens) for the sweep, the perplexity tasks,
`finetasks-afr recommend` and the LongPPL teacher.

Everything that asks a causal LM for log-probabilities goes through three functions here, so the same text gives
the same numbers wherever it is scored:

- `score_rows`: the primitive. A row is a token sequence whose last `n_targets` tokens are scored; the model is fed
  the row without its last token (which no position needs), right-padded with an attention mask (a real token
  never attends to a pad, causal attention never looks right), and only the positions that predict a target go
  through `log_softmax`, in float32 (lighteval runs the full-vocabulary `log_softmax` over every position of every
  row; the values at the positions used are the same).
- `score_texts` / `score_token_texts`: a whole text, every token scored exactly once under THE windowing rule
  (`rolling_windows`): the first token is conditioned on a prefix token (BOS, else EOS: `prefix_token_id`); a text
  that fits in `max_length` inputs is one window; a longer one is scored with sliding windows of `max_length`
  inputs advancing by `stride = max(1, max_length // 2)` tokens, each token scored in the first window that holds
  it, so every token after the first window sees at least `max_length - stride` tokens of context. Perplexity tasks,
  `recommend` and the LongPPL teacher all use this rule; a text shorter than `max_length` is scored with its whole
  left context by all of them.
- `score_choices` / `score_continuations`: (context, [continuations]) documents, lighteval's log-likelihood
  requests. Documents with the same context tokens (across tasks) form one group, and a group is scored by one of
  three strategies chosen by `_strategy` (all equal to full logits in float32,
  tests/scoring/test_scoring_strategies.py):
  - "packed" (the default wherever the model passes `_packs`'s probe): the context and every continuation without
    its last token in one row, under a block attention mask (a continuation sees the context and its own earlier
    tokens) with position ids restarting at the context's length for each continuation; the context's last
    position scores every continuation's first token. One forward pass per batch of documents, each context and
    continuation token fed once, no key/value copies. A single-token continuation (MCF letters) adds nothing to
    the row, so MCF packs to its bare contexts. A row holds at most max(`PACK_ROW_MIN`, 2 x context) tokens.
  - "rows": one whole row per continuation through `score_rows`, for models with sliding or chunked attention
    layers (`_windowed`), where neither a custom mask nor a padded cache keeps the window.
  - "shared" (any other model that fails the probe, e.g. one that ignores a 4-D mask): the context once with
    `use_cache=True`, its last logits score every first token, and the rest of each continuation runs on a copy
    of the context's keys/values (`batch_select_indices`) with explicit `position_ids`.
  Pairs whose context plus continuation exceed `max_length` are scored as lighteval scores them
  (`context + continuation` cut from the left to `max_length`, each choice a row of its own, because each then
  sees a different prefix), and so are pairs without a context token.

Batching: rows (contexts, packed rows) are sorted by length, longest first, across everything passed in one call
(all tasks of a pipeline run), and batched by `batch_size` rows; a batch of packed rows also holds no more padded
tokens than `batch_size` of its whole rows (context + longest continuation), the memory the engine sized
`batch_size` for. `STATS` counts the tokens actually fed to the model.

Planning: all of that depends on the requests only, not on the model, so `plan_choices` builds it once (an
immutable `ChoicePlan`: groups, fallback rows, each packed batch's tensors) and `score_plan` runs it;
`score_choices(..., plans=memo)` reuses a plan for byte-identical requests (`requests_digest`), which is what a
sweep's checkpoints 2..N ask.
"""

from __future__ import annotations

import array
import copy
import dataclasses
import hashlib
import inspect
import itertools
import math
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

Row = tuple[Sequence[int], int]  # (tokens, number of trailing tokens to score)


@dataclasses.dataclass(frozen=True)
class Scored:
    """The log-probability of a row's targets: summed (float32 sum, as lighteval), whether each target was the
    model's greedy choice, and per token when asked for."""

    logprob: float
    greedy: bool
    token_logprobs: tuple[float, ...] | None = None


@dataclasses.dataclass
class ScoringStats:
    """Tokens fed to the model since the last `reset_stats()` (what prefix sharing saves is read off these)."""

    forward_passes: int = 0
    tokens_fed: int = 0  # real (non-pad) input tokens
    padded_tokens_fed: int = 0  # including padding
    shared_contexts: int = 0  # contexts run once for several continuations
    continuations: int = 0  # continuations scored on a shared context
    fallback_rows: int = 0  # continuation rows scored whole (truncated or context-less)
    packed_rows: int = 0  # rows holding a context and its continuations under a block mask


STATS = ScoringStats()


def reset_stats() -> None:
    for field in dataclasses.fields(STATS):
        setattr(STATS, field.name, 0)


class ScoringError(ValueError):
    """A request the core cannot score (named, with the fix)."""


# ------------------------------------------------------------------------------------------------ windows


def prefix_token_id(tokenizer: Any) -> int:
    """The token the first text token is conditioned on: BOS, else EOS (lm-evaluation-harness's rule)."""
    for name in ("bos_token_id", "eos_token_id"):
        token = getattr(tokenizer, name, None)
        if token is not None:
            return int(token)
    raise ScoringError(
        "scoring a whole text needs a BOS or EOS token to condition the first token on, and this tokenizer has "
        "neither; fix: set tokenizer.bos_token (or eos_token) in the model's tokenizer_config.json"
    )


def window_stride(max_length: int) -> int:
    """How far a window advances past the previous one: half the window (at least one token)."""
    return max(1, max_length // 2)


def rolling_windows(n_tokens: int, max_length: int) -> list[tuple[int, int, int]]:
    """THE windowing rule, as `(begin, end, first)` over `sequence = [prefix, *tokens]`.

    Feed `sequence[begin:end]` (at most `max_length` tokens; position j predicts `tokens[j]`) and score
    `tokens[first:end]`. The first window starts at 0 and scores everything it holds; each later one scores the
    next `stride` tokens (`window_stride`) and is filled to `max_length` inputs with the tokens before them.
    Every token is scored exactly once.
    """
    if max_length < 1:
        raise ScoringError(f"max_length must be >= 1, got {max_length}")
    if n_tokens <= 0:
        return []
    stride = window_stride(max_length)
    end = min(max_length, n_tokens)
    windows = [(0, end, 0)]
    while end < n_tokens:
        first, end = end, min(end + stride, n_tokens)
        windows.append((max(0, end - max_length), end, first))
    return windows


def text_rows(tokens: Sequence[int], prefix: int, max_length: int) -> list[Row]:
    """The rows (`score_rows` input) that score `tokens` after `prefix` under the windowing rule."""
    sequence = [prefix, *tokens]
    return [(sequence[begin : end + 1], end - first) for begin, end, first in rolling_windows(len(tokens), max_length)]


# ------------------------------------------------------------------------------------------- model calls


def _accepts(module: Any, argument: str) -> bool:
    try:
        return argument in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def _device(model: Any) -> Any:
    device = getattr(model, "device", None)
    if device is not None:
        return device

    return next(model.parameters()).device


# How a model is asked for the logits of some positions per row (`_logits`), found once per model class by
# `_keep_path`: "native" (the model slices a 2-D `logits_to_keep` per row: transformers >= 5.21), "hook" (a
# forward pre-hook on the output embeddings gathers each row's hidden states before the projection) or "full" (every
# position's logits, then gathered). Tests force a path through `FORCE_KEEP_PATH`.
KEEP_PATHS = ("native", "hook", "full")
FORCE_KEEP_PATH: str | None = None
_KEEP_PATH_CACHE: dict[type, str] = {}


def _gather_hook(keep: Any, shape: tuple[int, int]) -> Callable[[Any, tuple[Any, ...]], tuple[Any, ...]]:
    """A forward pre-hook for the output embeddings: their input `(batch, width, hidden)` becomes the hidden
    states of the kept positions `(batch, k, hidden)`, so the projection (and any scaling or soft-capping the
    model applies to its logits afterwards) runs on `k` positions per row, as the native 2-D `logits_to_keep`."""
    import torch

    def gather(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        hidden = args[0]
        if hidden.dim() != 3 or tuple(hidden.shape[:2]) != shape:
            raise ScoringError(
                f"the output embeddings received hidden states of shape {tuple(hidden.shape)}, not (batch, width, "
                f"hidden) = {shape}: this model cannot be scored through the gathering hook"
            )
        return (torch.take_along_dim(hidden, keep.unsqueeze(-1).to(hidden.device), dim=1), *args[1:])

    return gather


def _call(model: Any, path: str, keep: Any, inputs: dict[str, Any]) -> Any:
    """One forward pass returning the logits of positions `keep` (a (batch, k) index tensor) per row, by `path`."""
    import torch

    if path == "native":
        return model(**inputs, logits_to_keep=keep)
    if path == "hook":
        embeddings = model.get_output_embeddings()
        shape = (int(inputs["input_ids"].shape[0]), int(inputs["input_ids"].shape[1]))
        handle = embeddings.register_forward_pre_hook(_gather_hook(keep, shape))
        try:
            extra = {"logits_to_keep": 0} if _accepts(model, "logits_to_keep") else {}
            return model(**inputs, **extra)
        finally:
            handle.remove()
    output = model(**inputs)
    logits = output.logits
    index = keep.to(logits.device).unsqueeze(-1).expand(-1, -1, logits.shape[-1])
    output.logits = torch.gather(logits, 1, index)
    return output


def _keep_path(model: Any) -> str:
    """The cheapest way this model's class gives per-row positions' logits, probed once per class and cached.

    transformers before 5.21 indexes a 2-D `logits_to_keep` as `hidden_states[:, index, :]` (every row at
    every row's positions), which gives a wrong shape or an out-of-range index (on CUDA a device-side assert that
    poisons the process), so the version number alone is not trusted: the model itself is run on two rows of four
    tokens with in-range indices whose correct answer is known (the full logits, gathered), and the first path
    that reproduces it is kept: native, then the gathering hook (same cost as native), then full logits (always
    right, costs a `(batch, width, vocab)` tensor). Probing the class, not the version, also covers remote-code
    models that slice their own way.
    """
    if FORCE_KEEP_PATH is not None:
        if FORCE_KEEP_PATH not in KEEP_PATHS:
            raise ScoringError(f"FORCE_KEEP_PATH must be one of {KEEP_PATHS}, got {FORCE_KEEP_PATH!r}")
        return FORCE_KEEP_PATH
    cached = _KEEP_PATH_CACHE.get(type(model))
    if cached is not None:
        return cached
    import torch

    device = _device(model)
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 2)
    ids = (torch.arange(8, dtype=torch.long).reshape(2, 4) * 7 + 1) % vocab
    inputs = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device)}
    keep = torch.as_tensor([[3, 0], [1, 2]], dtype=torch.long, device=device)
    with torch.inference_mode():
        full = _call(model, "full", keep, inputs).logits
        expected = full.float()
        # Wrong positions differ by about the logits' own scale; the right ones by rounding (bf16 included).
        tolerance = 16 * torch.finfo(full.dtype).eps * float(expected.abs().max()) + 1e-6
        path = "full"
        candidates = (["native"] if _accepts(model, "logits_to_keep") else []) + (
            ["hook"] if callable(getattr(model, "get_output_embeddings", None)) else []
        )
        for candidate in candidates:
            try:
                got = _call(model, candidate, keep, inputs).logits.float()
            except (IndexError, RuntimeError, ValueError, TypeError, AttributeError):
                continue
            if got.shape == expected.shape and float((got - expected).abs().max()) <= tolerance:
                path = candidate
                break
    _KEEP_PATH_CACHE[type(model)] = path
    return path


def _logits(model: Any, keep: Any = None, **inputs: Any) -> Any:
    """The model's logits; with `keep` (a (batch, k) index tensor), only those positions of each row, by the
    cheapest path this model supports (`_keep_path`)."""
    if keep is None:
        STATS.forward_passes += 1
        return model(**inputs)
    path = _keep_path(model)
    STATS.forward_passes += 1
    return _call(model, path, keep, inputs)


def _scored(logits: Any, targets: Any, keep_tokens: bool) -> Scored:
    """Score `targets` (1-D) from the float logits predicting them (rows aligned)."""
    import torch

    logprobs = torch.log_softmax(logits.float(), dim=-1)
    picked = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    greedy = bool((logprobs.argmax(dim=-1) == targets).all())
    tokens = tuple(float(value) for value in picked.tolist()) if keep_tokens else None
    return Scored(float(picked.sum()), greedy, tokens)


def score_rows(
    model: Any, rows: Sequence[Row], *, batch_size: int, pad_id: int = 0, keep_tokens: bool = False
) -> list[Scored]:
    """Score the last `n` tokens of each row `(tokens, n)`, `1 <= n < len(tokens)`, in the order given."""
    import torch

    for tokens, n in rows:
        if not 1 <= n < len(tokens):
            raise ScoringError(f"a row of {len(tokens)} tokens cannot score its last {n} (needs 1 <= n < length)")
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i][0]))
    device = _device(model)
    out: list[Scored | None] = [None] * len(rows)
    with torch.inference_mode():
        for start in range(0, len(order), max(1, batch_size)):
            batch = order[start : start + max(1, batch_size)]
            width = len(rows[batch[0]][0]) - 1
            targets_width = max(rows[i][1] for i in batch)
            ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            keep = torch.zeros((len(batch), targets_width), dtype=torch.long)
            for row, i in enumerate(batch):
                tokens, n = rows[i]
                fed = len(tokens) - 1
                ids[row, :fed] = torch.as_tensor(list(tokens[:-1]), dtype=torch.long)
                mask[row, :fed] = 1
                keep[row, :n] = torch.arange(fed - n, fed)
                keep[row, n:] = fed - 1  # padding of the index: repeats a real position, never read
            STATS.tokens_fed += int(mask.sum())
            STATS.padded_tokens_fed += ids.numel()
            logits = _logits(model, keep.to(device), input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            for row, i in enumerate(batch):
                tokens, n = rows[i]
                target = torch.as_tensor(list(tokens[-n:]), dtype=torch.long, device=logits.device)
                out[i] = _scored(logits[row, :n], target, keep_tokens)
    return [scored for scored in out if scored is not None]


def score_token_texts(
    model: Any, texts: Sequence[Sequence[int]], *, prefix: int, max_length: int, batch_size: int, pad_id: int = 0,
    keep_tokens: bool = False,
) -> list[Scored]:  # fmt: skip
    """Each token sequence scored whole after `prefix` under the windowing rule (summed over its windows)."""
    rows: list[Row] = []
    owners: list[int] = []
    for index, tokens in enumerate(texts):
        text_windows = text_rows(tokens, prefix, max_length)
        rows += text_windows
        owners += [index] * len(text_windows)
    scored = score_rows(model, rows, batch_size=batch_size, pad_id=pad_id, keep_tokens=keep_tokens)
    sums = [0.0] * len(texts)
    greedy = [True] * len(texts)
    tokens_out: list[list[float]] = [[] for _ in texts]
    for owner, result in zip(owners, scored, strict=True):
        sums[owner] += result.logprob
        greedy[owner] = greedy[owner] and result.greedy
        if keep_tokens and result.token_logprobs is not None:
            tokens_out[owner] += result.token_logprobs
    return [Scored(sums[i], greedy[i], tuple(tokens_out[i]) if keep_tokens else None) for i in range(len(texts))]


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """A text's tokens as the core scores them: no special tokens (the prefix token is added by the core)."""
    return [int(token) for token in tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]]


def score_texts(
    model: Any, tokenizer: Any, texts: Sequence[str], *, max_length: int, batch_size: int, keep_tokens: bool = False
) -> list[tuple[Scored, int]]:
    """(score, number of tokens) of each text, tokenised without special tokens, after the tokenizer's prefix."""
    encoded = [encode_text(tokenizer, text) for text in texts]
    scores = score_token_texts(
        model, encoded, prefix=prefix_token_id(tokenizer), max_length=max_length, batch_size=batch_size,
        pad_id=pad_token_id(tokenizer), keep_tokens=keep_tokens,
    )  # fmt: skip
    return [(scored, len(tokens)) for scored, tokens in zip(scores, encoded, strict=True)]


def weights_dtype(dtype: Any) -> dict[str, Any]:
    """`from_pretrained`'s keyword for the weights' dtype in the installed transformers: `dtype` from 4.56 (which
    deprecated `torch_dtype`, transformers PR #39782), `torch_dtype` before it (4.54 and 4.55 pass an unknown
    `dtype` on to the model's constructor, which refuses it). pyproject.toml allows 4.54, so every loader of the
    project passes `**weights_dtype(...)`; `make test-transformers-oldest` runs the loaders on 4.54."""
    import transformers
    from packaging.version import Version

    keyword = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    return {keyword: dtype}


def pad_token_id(tokenizer: Any) -> int:
    """Any id works (pads sit right of every real token and are masked); the tokenizer's pad, else eos, else 0."""
    for name in ("pad_token_id", "eos_token_id"):
        token = getattr(tokenizer, name, None)
        if token is not None:
            return int(token)
    return 0


# -------------------------------------------------------------------------------- shared-prefix scoring


@dataclasses.dataclass
class _Group:
    context: Sequence[int]  # a tuple, or an int32 array (the engine's compact memo)
    members: list[tuple[Any, tuple[int, ...]]]  # (where the score goes, continuation)


def _batches(groups: list[_Group], batch_size: int) -> Iterator[list[_Group]]:
    """Groups in order, each batch holding at most `batch_size` contexts and at most `batch_size` continuations
    that need a pass of their own (two tokens or more; a single-token continuation is scored by its context's
    pass alone). A group with more such continuations is split (its context then runs once per piece)."""
    batch: list[_Group] = []
    rows = 0
    for whole in groups:
        pieces: list[list[tuple[Any, tuple[int, ...]]]] = []
        piece: list[tuple[Any, tuple[int, ...]]] = []
        piece_rows = 0
        for member in whole.members:
            if len(member[1]) > 1 and piece_rows == batch_size:
                pieces.append(piece)
                piece, piece_rows = [], 0
            piece.append(member)
            piece_rows += len(member[1]) > 1
        pieces.append(piece)
        for members in pieces:
            group = _Group(whole.context, members)
            needing = sum(len(cont) > 1 for _, cont in members)
            too_short = batch and 2 * len(group.context) < len(batch[0].context)  # at most 2x padding
            if batch and (len(batch) == batch_size or rows + needing > batch_size or too_short):
                yield batch
                batch, rows = [], 0
            batch.append(group)
            rows += needing
    if batch:
        yield batch


@dataclasses.dataclass(frozen=True)
class ChoicePlan:
    """How `score_choices` scores a list of documents, everything that depends on the requests and not on the model:
    the groups, the fallback rows and, for the packed strategy, each batch's tensors. A sweep asks every
    checkpoint the same requests (same tokenizer), so the engine plans once and scores every checkpoint with the
    plan (`plans=` of `score_choices`). Immutable: nothing in it is written after `plan_choices`."""

    shape: tuple[int, ...]  # continuations per document
    whole: tuple[tuple[int, int], ...]  # (document, choice) scored as lighteval's rows
    whole_rows: tuple[Row, ...]
    strategy: str | None  # the strategy the groups are laid out for; None without groups
    groups: tuple[_Group, ...]  # "shared" and "rows": the groups in document order
    packed: tuple[_PackedBatch, ...]  # "packed": the batches, ready to run
    max_length: int
    batch_size: int
    pad_id: int

    @property
    def nbytes(self) -> int:
        """The memory its tensors hold (what a memo of plans budgets)."""
        return sum(
            tensor.element_size() * tensor.numel()
            for batch in self.packed
            for tensor in (batch.ids, batch.segment, batch.position, batch.padding_mask, batch.keep, batch.select,
                           batch.at, batch.target, batch.owner)
            if tensor is not None
        )  # fmt: skip


def plan_choices(
    docs: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]],
    *,
    max_length: int,
    batch_size: int,
    pad_id: int = 0,
    strategy: str | Callable[[], str],
) -> ChoicePlan:
    """The plan of `score_choices` for these documents under `strategy` (or a callable naming it, asked only when
    some group needs one: the probe of `_strategy` runs only then)."""
    shape = tuple(len(continuations) for _, continuations in docs)
    groups: dict[Any, _Group] = {}
    whole: list[tuple[int, int]] = []
    for doc_index, (context, continuations) in enumerate(docs):
        key: Any = _context_key(context)
        group = None
        for choice, continuation in enumerate(continuations):
            if not continuation:
                raise ScoringError(
                    f"document {doc_index}, choice {choice}: an empty continuation has no log-probability"
                )
            if not len(context) or len(context) + len(continuation) > max_length:
                whole.append((doc_index, choice))
                continue
            if group is None:
                group = groups.get(key)
                if group is None:
                    group = groups[key] = _Group(context, [])
            group.members.append(((doc_index, choice), tuple(continuation)))
    whole_rows = tuple(_lighteval_row(docs[d][0], docs[d][1][c], max_length) for d, c in whole)
    chosen = (strategy if isinstance(strategy, str) else strategy()) if groups else None
    if chosen is not None and chosen not in STRATEGIES:
        raise ScoringError(f"a plan's strategy must be one of {STRATEGIES}, got {chosen!r}")
    packed: tuple[_PackedBatch, ...] = ()
    if chosen == "packed":
        packed = tuple(
            _plan_packed_batch(batch, pad_id) for batch in _packed_batches(_pack(list(groups.values())), batch_size)
        )
    return ChoicePlan(
        shape, tuple(whole), whole_rows, chosen, tuple(groups.values()) if chosen != "packed" else (), packed,
        max_length, max(1, batch_size), pad_id,
    )  # fmt: skip


def score_plan(model: Any, plan: ChoicePlan) -> list[list[Scored]]:
    """Score a plan on `model` (`score_choices`' results). The plan's strategy must be the model's (`_strategy`)."""
    if plan.strategy is not None and plan.strategy != _strategy(model):
        raise ScoringError(f"a plan for the {plan.strategy!r} strategy cannot score a {_strategy(model)!r} model")
    out: list[list[Scored | None]] = [[None] * n for n in plan.shape]
    if plan.whole:
        STATS.fallback_rows += len(plan.whole)
        scores = score_rows(model, plan.whole_rows, batch_size=plan.batch_size, pad_id=plan.pad_id)
        for (d, c), scored in zip(plan.whole, scores, strict=True):
            out[d][c] = scored
    if plan.strategy == "rows":
        members = [(index, group.context, cont) for group in plan.groups for index, cont in group.members]
        rows = [_lighteval_row(context, cont, plan.max_length) for _, context, cont in members]
        scores = score_rows(model, rows, batch_size=plan.batch_size, pad_id=plan.pad_id)
        for (index, _, _), scored in zip(members, scores, strict=True):
            out[index[0]][index[1]] = scored
    elif plan.strategy == "packed":
        for batch in plan.packed:
            for (d, c), scored in _score_planned_batch(model, batch):
                out[d][c] = scored
    elif plan.strategy == "shared":
        ordered = sorted(plan.groups, key=lambda group: -len(group.context))
        for shared in _batches(ordered, plan.batch_size):
            for (d, c), scored in _score_shared_batch(model, shared, plan.pad_id):
                out[d][c] = scored
    return [[scored for scored in scores if scored is not None] for scores in out]


def requests_digest(docs: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]]) -> str | None:
    """A digest of the documents' tokens (and how they split into contexts and continuations): a plan is reused
    only for byte-identical requests. None when a token does not fit an int32 (then nothing is reused)."""
    lengths = array.array("i")
    contexts: list[bytes] = []
    try:
        for context, continuations in docs:
            lengths.append(len(context))
            lengths.append(len(continuations))
            lengths.extend(map(len, continuations))
            compact = context if isinstance(context, array.array) and context.typecode == "i" else None
            contexts.append((compact if compact is not None else array.array("i", context)).tobytes())
        tokens = array.array("i", itertools.chain.from_iterable(itertools.chain.from_iterable(c for _, c in docs)))
    except (OverflowError, TypeError):
        return None
    digest = hashlib.blake2b(lengths.tobytes(), digest_size=20)
    digest.update(b"".join(contexts))
    digest.update(tokens.tobytes())
    return digest.hexdigest()


def score_choices(
    model: Any,
    docs: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]],
    *,
    max_length: int,
    batch_size: int,
    pad_id: int = 0,
    plans: MutableMapping[Any, ChoicePlan] | None = None,
) -> list[list[Scored]]:
    """log P(continuation | context) for each `(context tokens, [continuation tokens, ...])` document, in order.

    Documents (of any tasks) with identical context tokens share one forward pass of the context (module
    docstring). A continuation whose context + continuation exceed `max_length`, or whose context is empty, is
    scored as lighteval scores it. With `plans` (a mapping the caller keeps across models), the plan of these
    exact requests (`requests_digest`, with the same lengths, pad and strategy) is reused instead of rebuilt.
    """
    key = None
    if plans is not None:
        digest = requests_digest(docs)
        key = None if digest is None else (digest, max_length, max(1, batch_size), pad_id)
    plan = plans.get(key) if plans is not None and key is not None else None
    if plan is not None and plan.strategy is not None and plan.strategy != _strategy(model):
        plan = None  # another model class: its strategy lays the groups out otherwise
    if plan is None:
        plan = plan_choices(
            docs, max_length=max_length, batch_size=max(1, batch_size), pad_id=pad_id,
            strategy=lambda: _strategy(model),
        )  # fmt: skip
        if plans is not None and key is not None:
            plans[key] = plan
    return score_plan(model, plan)


def score_continuations(
    model: Any,
    requests: Sequence[tuple[Sequence[int], Sequence[int]]],
    *,
    max_length: int,
    batch_size: int,
    pad_id: int = 0,
) -> list[Scored]:
    """log P(continuation | context) for each `(context tokens, continuation tokens)` request, in order
    (`score_choices` with one continuation per document; identical contexts are still shared)."""
    scores = score_choices(
        model, [(context, [continuation]) for context, continuation in requests], max_length=max_length,
        batch_size=batch_size, pad_id=pad_id,
    )  # fmt: skip
    return [scored[0] for scored in scores]


def _context_key(context: Sequence[int]) -> Any:
    """A hashable key with the identity of the context's tokens (an int32 array's bytes: cheap to hash)."""
    if isinstance(context, array.array):
        return (context.typecode, context.tobytes())
    return context if isinstance(context, tuple) else tuple(context)


def _long_tensor(tokens: Sequence[int]) -> Any:
    import torch

    if isinstance(tokens, array.array) and tokens.typecode == "i" and len(tokens):
        return torch.frombuffer(tokens, dtype=torch.int32).long()
    return torch.as_tensor(list(tokens) if isinstance(tokens, array.array) else tokens, dtype=torch.long)


def _lighteval_row(context: Sequence[int], continuation: Sequence[int], max_length: int) -> Row:
    """lighteval's row: context + continuation cut from the left to `max_length` tokens; the continuation's tokens
    that remain are scored (all of them unless the continuation alone is longer than the window)."""
    row = [*context, *continuation][-max_length:] if max_length > 0 else [*context, *continuation]
    n = min(len(continuation), len(row) - 1)
    if n < 1:
        raise ScoringError(
            f"a continuation of {len(continuation)} tokens with {len(context)} context tokens leaves nothing to "
            f"score in max_length {max_length}; fix: raise max_length"
        )
    return row, n


def _score_shared_batch(model: Any, batch: list[_Group], pad_id: int) -> Iterator[tuple[Any, Scored]]:
    import torch

    device = _device(model)
    lengths = [len(group.context) for group in batch]
    width = max(lengths)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, group in enumerate(batch):
        ids[row, : lengths[row]] = _long_tensor(group.context)
        mask[row, : lengths[row]] = 1
    last = torch.as_tensor([[length - 1] for length in lengths], dtype=torch.long)
    members = [(row, index, cont) for row, group in enumerate(batch) for index, cont in group.members]
    STATS.tokens_fed += sum(lengths)
    STATS.padded_tokens_fed += ids.numel()
    STATS.shared_contexts += len(batch)
    STATS.continuations += len(members)
    with torch.inference_mode():
        output = _logits(
            model, last.to(device), input_ids=ids.to(device), attention_mask=mask.to(device), use_cache=True
        )
        # The first token of every continuation, predicted by its context's last position.
        context_logprobs = torch.log_softmax(output.logits[:, 0].float(), dim=-1)  # (groups, vocab)
        owner = torch.as_tensor([row for row, _, _ in members], dtype=torch.long, device=context_logprobs.device)
        first = torch.as_tensor([cont[0] for _, _, cont in members], dtype=torch.long, device=owner.device)
        first_logprob = context_logprobs[owner, first]
        first_greedy = context_logprobs.argmax(dim=-1)[owner] == first
        rest_logprob = torch.zeros_like(first_logprob)
        rest_greedy = torch.ones_like(first_greedy)
        # The rest of each longer continuation runs on a copy of its context's keys/values, in passes of rows of
        # similar length (at most 2x padding per pass).
        longer = sorted(
            (k for k, (_, _, cont) in enumerate(members) if len(cont) > 1), key=lambda k: -len(members[k][2])
        )
        for piece in _similar_lengths(longer, lambda k: len(members[k][2]) - 1):
            logprob, greedy_rest = _score_rest(model, output.past_key_values, piece, members, mask, lengths, pad_id)
            index = torch.as_tensor(piece, dtype=torch.long, device=rest_logprob.device)
            rest_logprob[index] = logprob.to(rest_logprob.device)
            rest_greedy[index] = greedy_rest.to(rest_greedy.device)
        totals = (first_logprob + rest_logprob).tolist()
        greedy = (first_greedy & rest_greedy).tolist()
    for (_, index, _), total, is_greedy in zip(members, totals, greedy, strict=True):
        yield index, Scored(float(total), bool(is_greedy))


def _similar_lengths(items: list[Any], length: Callable[[Any], int]) -> Iterator[list[Any]]:
    """Consecutive pieces of `items` (sorted longest first) in which no item is shorter than half the first."""
    piece: list[Any] = []
    for item in items:
        if piece and 2 * length(item) < length(piece[0]):
            yield piece
            piece = []
        piece.append(item)
    if piece:
        yield piece


def _selected_cache(cache: Any, indices: Any) -> Any:
    """A cache holding rows `indices` of `cache`, leaving `cache` intact (its layers' `batch_select_indices`
    reassigns new tensors, so a shallow copy of the cache and of each layer is enough)."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        selected = copy.deepcopy(cache)
    else:
        selected = copy.copy(cache)
        selected.layers = [copy.copy(layer) for layer in layers]
    selected.batch_select_indices(indices)
    return selected


def _score_rest(
    model: Any, cache: Any, piece: list[int], members: list[tuple[int, Any, tuple[int, ...]]], mask: Any,
    lengths: list[int], pad_id: int,
) -> tuple[Any, Any]:  # fmt: skip
    """Sum of log P(token j | context + continuation[:j]) for j >= 1, and whether all were greedy, for the
    continuations `members[k]` (k in `piece`), run on their contexts' cached keys/values."""
    import torch

    device = _device(model)
    owners = torch.as_tensor([members[k][0] for k in piece], dtype=torch.long)
    width = max(len(members[k][2]) - 1 for k in piece)
    ids = torch.full((len(piece), width), pad_id, dtype=torch.long)
    targets = torch.zeros((len(piece), width), dtype=torch.long)
    rest_mask = torch.zeros_like(ids)
    for j, k in enumerate(piece):
        cont = members[k][2]
        ids[j, : len(cont) - 1] = torch.as_tensor(cont[:-1], dtype=torch.long)
        targets[j, : len(cont) - 1] = torch.as_tensor(cont[1:], dtype=torch.long)
        rest_mask[j, : len(cont) - 1] = 1
    positions = torch.as_tensor([lengths[members[k][0]] for k in piece]).unsqueeze(1) + torch.arange(width)
    attention = torch.cat([mask[owners], rest_mask], dim=1)
    STATS.tokens_fed += int(rest_mask.sum())
    STATS.padded_tokens_fed += ids.numel()
    logits = _logits(
        model, None, input_ids=ids.to(device), attention_mask=attention.to(device), position_ids=positions.to(device),
        past_key_values=_selected_cache(cache, owners.to(device)), use_cache=True,
    ).logits  # fmt: skip
    valid = rest_mask.to(logits.device).bool()
    flat = torch.log_softmax(logits[valid].float(), dim=-1)  # only real positions: no pads through softmax
    flat_targets = targets.to(logits.device)[valid]
    picked = flat.gather(-1, flat_targets.unsqueeze(-1)).squeeze(-1)
    missed = (flat.argmax(dim=-1) != flat_targets).to(torch.long)
    row_of = torch.arange(len(piece), device=logits.device).unsqueeze(1).expand_as(valid)[valid]
    logprob = torch.zeros(len(piece), device=logits.device).index_add_(0, row_of, picked)
    misses = torch.zeros(len(piece), dtype=torch.long, device=logits.device).index_add_(0, row_of, missed)
    return logprob, misses == 0


# ------------------------------------------------------------------------------------------ strategies

# How `score_choices` scores the documents whose context + continuation fit in `max_length` (`_strategy`):
# "packed" (each document's context and its continuations in one row under a block attention mask), "shared" (the
# context once with its keys/values cached, then the continuations on copies of that cache) or "rows" (one whole
# row per continuation, lighteval's layout). All three give the same numbers; tests force each through
# `FORCE_STRATEGY`.
STRATEGIES = ("packed", "shared", "rows")
FORCE_STRATEGY: str | None = None
_PACKS_CACHE: dict[tuple[type, str | None], bool] = {}
# A packed row holds at most max(PACK_ROW_MIN, 2 x its context) tokens: a context shared by many continuations
# (PMI's one "Answer:" for every choice of a run) is split into rows of that size, each repeating the context, so
# the attention mask (quadratic in the row) stays bounded.
PACK_ROW_MIN = 256


def _strategy(model: Any) -> str:
    """THE rule: pack wherever the model takes a custom 4-D attention mask with explicit positions (probed once,
    `_packs`), on every device and workload; a model with windowed attention gets whole rows (a windowed layer's
    cache keeps the last `window` positions of a right-padded context, pads included, so sharing it is wrong
    there); any other model shares the context's keys/values.

    Why packing everywhere (`bench/bench_core.py`, out/bench/core.json): it feeds each context once and each
    continuation token once, like sharing, but in one forward pass per batch with no key/value copies and no
    per-length passes, which is what made sharing launch-bound on a GPU; and it feeds fewer tokens than whole rows
    (`n x context` fewer) with one extra (n+1)-block mask. A document whose continuations are all single tokens
    (MCF letters) packs to its bare context, the same pass sharing made. Whole rows remain the fallback for
    truncated or context-less requests (lighteval's rows) and a forced strategy.
    """
    if FORCE_STRATEGY is not None:
        if FORCE_STRATEGY not in STRATEGIES:
            raise ScoringError(f"FORCE_STRATEGY must be one of {STRATEGIES}, got {FORCE_STRATEGY!r}")
        return FORCE_STRATEGY
    if _packs(model):
        return "packed"
    return "rows" if _windowed(model) else "shared"


def _model_dtype(model: Any) -> Any:
    dtype = getattr(model, "dtype", None)
    if dtype is not None:
        return dtype
    return next(model.parameters()).dtype


def _packs(model: Any) -> bool:
    """Whether this model (class and attention implementation) scores a packed row as separate rows would be
    scored, probed once and cached.

    A model may not take `position_ids`, may ignore a 4-D mask (flash-attention kernels take none) or build its
    own from it; rather than trusting names or versions, two documents (one padded) are packed and checked twice:
    each continuation against its own unpadded pass (within rounding of the model's dtype, at least 1e-5
    relative), and the other continuations of a row against the same row with one continuation's tokens changed
    (bit for bit: masked keys weigh exactly 0, so only a leak moves them, however little the leak weighs in a
    random or low-precision model). A model that fails, or raises, is scored by sharing.
    """
    key = (type(model), getattr(getattr(model, "config", None), "_attn_implementation", None))
    cached = _PACKS_CACHE.get(key)
    if cached is not None:
        return cached
    import torch

    packs = False
    if _accepts(model, "position_ids") and _accepts(model, "attention_mask") and not _windowed(model):
        device = _device(model)
        vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 2)
        docs = [((1, 5, 9, 13), [(2, 7, 3), (4,), (6, 8)]), ((11, 3), [(5, 12), (7, 1, 9, 2)])]
        changed = [((1, 5, 9, 13), [(8, 10, 3), (4,), (6, 8)]), docs[1]]  # doc 0, choice 0: other tokens

        def groups(documents: list[tuple[tuple[int, ...], list[tuple[int, ...]]]]) -> list[_Group]:
            return [
                _Group(tuple(t % vocab for t in context), [((d, j), tuple(t % vocab for t in c)) for j, c in
                                                           enumerate(conts)])
                for d, (context, conts) in enumerate(documents)
            ]  # fmt: skip

        counted = dataclasses.replace(STATS)  # the probe's passes are not the caller's
        try:
            with torch.inference_mode():
                got = dict(_score_packed_batch(model, groups(docs), 0))
                other = dict(_score_packed_batch(model, groups(changed), 0))
                worst = 0.0
                for group in groups(docs):
                    for index, cont in group.members:
                        ids = torch.as_tensor([[*group.context, *cont]], dtype=torch.long, device=device)
                        logprobs = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
                        at = torch.arange(len(group.context) - 1, ids.shape[1] - 1, device=logprobs.device)
                        expected = float(logprobs[at, ids[0, len(group.context) :].to(logprobs.device)].sum())
                        worst = max(worst, abs(got[index].logprob - expected) / (1.0 + abs(expected)))
            tolerance = max(1e-5, 4 * float(torch.finfo(_model_dtype(model)).eps))
            isolated = all(other[index] == got[index] for index in got if index != (0, 0))
            packs = isolated and worst <= tolerance
        except (IndexError, RuntimeError, ValueError, TypeError, AttributeError, KeyError):
            packs = False
        finally:
            for field in dataclasses.fields(STATS):
                setattr(STATS, field.name, getattr(counted, field.name))
    _PACKS_CACHE[key] = packs
    return packs


def _windowed(model: Any) -> bool:
    """Whether some layers attend through a window (sliding or chunked: Mistral, Gemma 2/3, Llama 4). A custom 4-D
    mask replaces the window transformers would build, and the probe's rows are too short to show it, so such
    models are scored as whole rows (a 2-D mask, from which transformers builds each layer's own)."""
    config = getattr(model, "config", None)
    config = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    layer_types = getattr(config, "layer_types", None) or ()
    if any(kind in ("sliding_attention", "chunked_attention") for kind in layer_types):
        return True
    return (
        getattr(config, "sliding_window", None) is not None and getattr(config, "use_sliding_window", True) is not False
    )


@dataclasses.dataclass
class _Packed:
    """One packed row: a context and the continuations scored on it (a whole group, or a piece of one)."""

    context: Sequence[int]
    members: list[tuple[Any, tuple[int, ...]]]
    rest: int  # tokens after the context: each continuation without its last token

    @property
    def width(self) -> int:
        return len(self.context) + self.rest


def _pack(groups: list[_Group]) -> list[_Packed]:
    """Each group as packed rows of at most max(PACK_ROW_MIN, 2 x context) tokens (split in member order)."""
    rows: list[_Packed] = []
    for group in groups:
        limit = max(PACK_ROW_MIN, 2 * len(group.context))
        row = _Packed(group.context, [], 0)
        for member in group.members:
            extra = len(member[1]) - 1
            if row.members and row.width + extra > limit:
                rows.append(row)
                row = _Packed(group.context, [], 0)
            row.members.append(member)
            row.rest += extra
        rows.append(row)
    return rows


def _packed_batches(rows: list[_Packed], batch_size: int) -> Iterator[list[_Packed]]:
    """Rows sorted widest first, in batches of at most `batch_size` rows whose padded tokens stay within
    `batch_size` whole rows (context + longest continuation) of the batch, at most 2x padding per batch."""
    batch: list[_Packed] = []
    whole = 0  # the longest whole row (context + continuation) of the batch: the engine's batch unit
    for row in sorted(rows, key=lambda r: -r.width):
        row_whole = len(row.context) + max(len(cont) for _, cont in row.members)
        if batch:
            budget = batch_size * max(whole, row_whole)
            if len(batch) == batch_size or (len(batch) + 1) * batch[0].width > budget or 2 * row.width < batch[0].width:
                yield batch
                batch, whole = [], 0
        batch.append(row)
        whole = max(whole, row_whole)
    if batch:
        yield batch


@dataclasses.dataclass(frozen=True)
class _PackedBatch:
    """One batch of packed rows as the model is fed it and its logits are read (`_plan_packed_batch`): built from
    the requests alone, so a plan runs it on any number of models."""

    ids: Any  # (rows, width) input ids, right-padded
    segment: Any  # (rows, width): 0 context, k continuation k, -1 pad; None when no row has continuation tokens
    position: Any  # (rows, width) position ids
    padding_mask: Any  # (rows, width) 2-D mask, for contexts alone (no continuation tokens in any row)
    keep: Any  # (rows, kept) the positions whose logits are computed
    select: Any  # indices of the real kept positions in the flattened (rows x kept); None when none is padding
    at: Any  # for each scored token: its kept position among the selected ones
    target: Any  # for each scored token: its id
    owner: Any  # for each scored token: which continuation (index into `indices`) it belongs to
    indices: tuple[Any, ...]  # where each continuation's score goes
    real: int  # non-pad tokens
    members: int  # continuations


def _plan_packed_batch(batch: Sequence[_Group | _Packed], pad_id: int) -> _PackedBatch:
    """Lay out a batch of packed rows (`_score_planned_batch` says how they are read).

    Row layout: the context, then each continuation without its last token (which no position needs). Position
    ids run 0..C-1 over the context and restart at C for each continuation, so each continuation token sits where
    it would in `context + continuation`; the 4-D mask lets a continuation token see the context and the tokens of
    its own continuation before it, nothing else (pads see only pads, so no row of the mask is empty). A
    continuation's first token is predicted by the context's last position, shared by all of them; token j by its
    own (j-1)-th token. Only those positions' logits are computed (`_logits` with `keep`).
    """
    import torch

    widths = [len(row.context) + sum(len(cont) - 1 for _, cont in row.members) for row in batch]
    kept_counts = [1 + width - len(row.context) for row, width in zip(batch, widths, strict=True)]
    width = max(widths)
    keep_width = max(kept_counts)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    segment = torch.full((len(batch), width), -1, dtype=torch.long)
    position = torch.zeros((len(batch), width), dtype=torch.long)
    keep = torch.zeros((len(batch), keep_width), dtype=torch.long)
    at: list[int] = []
    targets: list[int] = []
    owners: list[int] = []
    indices: list[Any] = []
    selected = 0  # kept positions of the rows before this one (the select order)
    for r, row in enumerate(batch):
        context_length = len(row.context)
        length = widths[r]
        ids[r, :context_length] = _long_tensor(row.context)
        segment[r, :context_length] = 0
        position[r, :context_length] = torch.arange(context_length)
        position[r, length:] = torch.arange(width - length)
        keep[r, 0] = context_length - 1
        keep[r, 1 : kept_counts[r]] = torch.arange(context_length, length)
        keep[r, kept_counts[r] :] = context_length - 1  # padding of the index: repeats a real position, never read
        start = context_length
        for number, (index, cont) in enumerate(row.members, start=1):
            rest = len(cont) - 1
            if rest:
                ids[r, start : start + rest] = torch.as_tensor(cont[:-1], dtype=torch.long)
                segment[r, start : start + rest] = number
                position[r, start : start + rest] = torch.arange(context_length, context_length + rest)
            column = start - context_length + 1  # the kept column of the continuation's second token
            at.append(selected)
            at += range(selected + column, selected + column + rest)
            targets += cont
            owners += [len(indices)] * len(cont)
            indices.append(index)
            start += rest
        selected += kept_counts[r]
    rests = any(len(cont) > 1 for row in batch for _, cont in row.members)
    padded = any(count != keep_width for count in kept_counts)
    select = (
        torch.as_tensor([r * keep_width + j for r, count in enumerate(kept_counts) for j in range(count)])
        if padded
        else None
    )
    return _PackedBatch(
        ids=ids, segment=segment if rests else None, position=position,
        padding_mask=None if rests else (segment >= 0).to(torch.long), keep=keep, select=select,
        at=torch.as_tensor(at, dtype=torch.long), target=torch.as_tensor(targets, dtype=torch.long),
        owner=torch.as_tensor(owners, dtype=torch.long), indices=tuple(indices), real=sum(widths),
        members=len(indices),
    )  # fmt: skip


def _score_planned_batch(model: Any, batch: _PackedBatch) -> list[tuple[Any, Scored]]:
    """One forward pass of a planned batch; `log_softmax` and the greedy check run over the kept positions that
    score a token, not over the kept index's padding (each position's values are those of the whole tensor)."""
    import torch

    device = _device(model)
    rows, width = batch.ids.shape
    STATS.tokens_fed += batch.real
    STATS.padded_tokens_fed += rows * width
    STATS.shared_contexts += rows
    STATS.continuations += batch.members
    STATS.packed_rows += rows
    with torch.inference_mode():
        if batch.segment is None:
            # Single-token continuations only: the bare contexts, right-padded, with the usual padding mask.
            inputs: dict[str, Any] = {"attention_mask": batch.padding_mask.to(device)}
        else:
            # Built where the model runs: (rows, width, width) is the one tensor here that grows with the square.
            on_device = batch.segment.to(device)
            query, key = on_device.unsqueeze(2), on_device.unsqueeze(1)
            causal = torch.ones((width, width), dtype=torch.bool, device=device).tril()
            allowed = causal & ((key == 0) & (query >= 0) | (key == query))
            dtype = _model_dtype(model)
            mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, torch.finfo(dtype).min)
            inputs = {"attention_mask": mask.unsqueeze(1), "position_ids": batch.position.to(device)}
        logits = _logits(model, batch.keep.to(device), input_ids=batch.ids.to(device), **inputs).logits
        flat = logits.reshape(-1, logits.shape[-1])
        if batch.select is not None:
            flat = flat[batch.select.to(flat.device)]
        logprobs = torch.log_softmax(flat.float(), dim=-1)  # (scoring positions, vocab)
        at = batch.at.to(logprobs.device)
        target = batch.target.to(logprobs.device)
        owner = batch.owner.to(logprobs.device)
        picked = logprobs[at, target]
        missed = _missed(logprobs, at, target, picked)
        totals = torch.zeros(batch.members, dtype=picked.dtype, device=picked.device).index_add_(0, owner, picked)
        misses = torch.zeros(batch.members, dtype=torch.long, device=picked.device).index_add_(0, owner, missed)
        return list(zip(batch.indices, map(Scored, totals.tolist(), (misses == 0).tolist()), strict=True))


def _missed(logprobs: Any, at: Any, target: Any, picked: Any) -> Any:
    """1 where `target` is not `logprobs[at].argmax()` (the first maximum), else 0, as a long tensor.

    `amax` is a plain vectorised reduction, about 18x cheaper than `argmax` on a CPU: a target whose value is below
    its row's maximum is missed outright, and only the rows where it holds the maximum (or a NaN makes the
    maximum NaN) go through `argmax`, which settles ties (the first index wins) exactly as before."""
    import torch

    best = logprobs.amax(dim=-1)[at]
    missed = torch.ones_like(target)
    candidate = ((picked == best) | best.isnan()).nonzero().squeeze(-1)
    if candidate.numel():
        missed[candidate] = (logprobs[at[candidate]].argmax(dim=-1) != target[candidate]).to(torch.long)
    return missed


def _score_packed_batch(model: Any, batch: Sequence[_Group | _Packed], pad_id: int) -> list[tuple[Any, Scored]]:
    """Score a batch of packed rows in one forward pass (`_plan_packed_batch`, then `_score_planned_batch`)."""
    return _score_planned_batch(model, _plan_packed_batch(batch, pad_id))


def bits_per_byte(logprob_nats: float, n_bytes: int) -> float:
    """-log2 P(text) per UTF-8 byte."""
    return -logprob_nats / (n_bytes * math.log(2))
