"""Recommend a pretrained model for a language without fine-tuning: rank models by how well they model its text.

Following Koya (Owodunni & Emezue 2023), a model that assigns the language's text a low (pseudo-)perplexity is
the one to pick. Two model families, two measures, never mixed:

* **Masked LMs** (AfriBERTa, XLM-R, ...: ``AutoModelForMaskedLM``) get the Koya pseudo-perplexity **KPPPL**. For a
  sentence of ``n`` scored tokens (special tokens are never chosen), ``k = ceil(fraction * n)`` (at least 1)
  positions are drawn without replacement by ``numpy.random.default_rng([seed, draw, sentence_index])``; each
  is replaced by the mask token in its own copy of the sentence and ``log P(w_r | sentence with w_r masked)``
  is read at that position. The ``k`` copies go through the model in one batch (chunked to bound memory);
  ``batched=False`` runs one forward per copy (same numbers; the benchmark's baseline). ``fraction = 1`` masks
  every position once: the classic pseudo-perplexity of Salazar et al. (2020).
  **Corpus KPPPL is token-weighted**: ``exp(sum of NLL over all masked positions of all sentences and all mask
  draws / number of those positions)``, i.e. one perplexity over every prediction made, so long sentences weigh
  by their length (the per-sentence mean of Koya's formula would let one short sentence weigh as much as a
  paragraph). Sentences longer than the model's positions are truncated (``n_truncated`` counts them).
* **Causal LMs** (``AutoModelForCausalLM``) get token perplexity ``exp(NLL / tokens)`` and **bits per byte**
  ``NLL / ln 2 / UTF-8 bytes`` over every text token, each predicted from a BOS (else EOS) prefix and its left
  context; no EOS is appended. Perplexity depends on the tokenizer (fewer, longer tokens mean higher
  perplexity for the same text), bits per byte does not, so causal models are **ranked by bits per byte** by
  default. Causal LMs are scored by the one scoring core (`finetasks_afr.scoring.core`), with its windowing rule for
  texts longer than the model's positions (sliding windows advancing by half a window: every token is scored
  exactly once, with at least half a window of context), as the perplexity tasks are.

**KPPPL depends on the tokenizer too**: a tokenizer that cuts a text into smaller pieces makes each masked piece
easier to guess. With two tiny masked LMs, one trained on Hausa and one on Yoruba (SIB-200 train), each with its
own BPE tokenizer, the Yoruba model got the LOWER KPPPL on 30 Hausa dev sentences (115 vs 122 after 200 training
steps; its tokenizer cuts them into 45% more tokens), while with one shared tokenizer the Hausa model wins by a
factor of 3. For masked LMs with different tokenizers, ``masked_metric="pseudo_bits_per_byte"`` ranks by the pseudo-log-
likelihood per UTF-8 byte: ``sum_i (n_i / k_i) NLL_i / ln 2 / sum_i bytes_i`` (each sentence's masked NLL scaled
up to all its ``n_i`` tokens; exactly the total pseudo-log-likelihood per byte at ``fraction = 1``), which
ranked the two models correctly in both languages. KPPPL stays the default (it is the Koya method); both are
reported.

Masked and causal scores are not comparable (different objectives): a call with both families ranks each
family on its own and says so. Lower is better for every metric.

**Confidence intervals** (95%, percentile bootstrap, seeded): each replicate resamples the sentences with
replacement (the same resampled sentences for every model of the family, so ``p_best``, the fraction of
replicates in which a model ranks first, is a paired comparison) and, for KPPPL with ``mask_draws = D > 1``,
also resamples, for each drawn sentence, ``D`` of its ``D`` mask draws with replacement; the statistic is the
corpus score of the replicate (a ratio of sums, as the point estimate). The interval thus covers sentence and
mask-draw variance. With ``fraction = 1`` the draws would be identical, so one is made.
"""

from __future__ import annotations

import gc
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finetasks_afr.data.sources import LazyMapping
from finetasks_afr.prompts.text import clean

LOG = logging.getLogger(__name__)

MASKED, CAUSAL = "masked", "causal"
KINDS = (MASKED, CAUSAL)
KPPPL, BITS_PER_BYTE, PERPLEXITY = "kpppl", "bits_per_byte", "perplexity"
PSEUDO_BITS_PER_BYTE = "pseudo_bits_per_byte"
MASKED_METRICS = (KPPPL, PSEUDO_BITS_PER_BYTE)
CAUSAL_METRICS = (BITS_PER_BYTE, PERPLEXITY)
BYTE_METRICS = (BITS_PER_BYTE, PSEUDO_BITS_PER_BYTE)
DIRECTION = "lower"
DEFAULT_FRACTION = 0.15  # a project default (BERT's masking rate), not a value taken from the Koya paper
DEFAULT_MAX_LENGTH = 2048  # when neither the config nor the tokenizer states one
MAX_LOGITS = 1 << 26  # logits per forward pass (64M floats = 256 MB): bounds memory for big vocabularies


def _text_fields() -> dict[str, tuple[str, str]]:
    from finetasks_afr.data.sources import SOURCES

    return {key: src.text_field for key, src in SOURCES.items() if src.text_field is not None}


# dataset key -> (text field, default split), declared by each benchmark module (`DatasetSource.text_field`);
# texts are deduplicated (Belebele repeats each passage per question)
DATASET_TEXT_FIELDS: Mapping[str, tuple[str, str]] = LazyMapping(_text_fields)


class RecommendError(ValueError):
    """A model, text source or setting that cannot be used; the message names it and the fix."""


# ------------------------------------------------------------------------------------------------ models


def offline() -> bool:
    """True when the environment forbids the hub (then models load with ``local_files_only``)."""
    return any(
        os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def detect_kind(config: Any) -> str:
    """`masked` or `causal` from a transformers config: its `architectures`, else `is_decoder`, else which auto
    mapping knows its `model_type` (encoders such as BERT sit in both, as masked LMs unless `is_decoder`)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    name = getattr(config, "_name_or_path", "") or getattr(config, "model_type", "?")
    if getattr(config, "is_encoder_decoder", False):
        raise RecommendError(f"{name}: encoder-decoder models are not supported (only masked or causal LMs)")
    for architecture in getattr(config, "architectures", None) or []:
        if architecture.endswith("ForMaskedLM"):
            return MASKED
        if architecture.endswith(("ForCausalLM", "LMHeadModel")):
            return CAUSAL
    if getattr(config, "is_decoder", False):
        return CAUSAL
    model_type = getattr(config, "model_type", None)
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return MASKED
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return CAUSAL
    raise RecommendError(f"{name}: cannot tell whether model type {model_type!r} is masked or causal; pass --kind")


@dataclass
class LoadedModel:
    """A model ready for scoring: eval mode, on its device, with its tokenizer and usable length."""

    name: str
    kind: str
    model: Any
    tokenizer: Any
    max_length: int
    device: str


def _position_offset(model: Any) -> int:
    """Positions a model reserves before the first token (RoBERTa/XLM-R start at padding_idx + 1)."""
    embeddings = getattr(getattr(model, "base_model", model), "embeddings", None)
    padding_idx = getattr(getattr(embeddings, "position_embeddings", None), "padding_idx", None)
    return padding_idx + 1 if isinstance(padding_idx, int) else 0


def usable_length(model: Any, tokenizer: Any) -> int:
    """Longest token sequence the model takes: its position table (less RoBERTa's offset) and the tokenizer's
    `model_max_length` when set; `DEFAULT_MAX_LENGTH` with a warning when neither says."""
    limits: list[int] = []
    for attribute in ("max_position_embeddings", "n_positions"):
        value = getattr(model.config, attribute, None)
        if isinstance(value, int) and value > 0:
            limits.append(value - _position_offset(model))
            break
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:
        limits.append(tokenizer_limit)
    if not limits:
        LOG.warning("no maximum length known for %s; using %d", model.config._name_or_path, DEFAULT_MAX_LENGTH)
        return DEFAULT_MAX_LENGTH
    return min(limits)


def load_model(
    name_or_path: str,
    *,
    kind: str = "auto",
    device: str = "cpu",
    local_files_only: bool | None = None,
    max_length: int | None = None,
) -> LoadedModel:
    """Load a local directory or hub id with AutoConfig / AutoTokenizer / AutoModelFor{MaskedLM,CausalLM}.

    `local_files_only` defaults to the offline environment variables; `kind` "auto" detects it from the config.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    if kind not in ("auto", *KINDS):
        raise RecommendError(f"--kind must be auto, masked or causal, got {kind!r}")
    local_only = offline() if local_files_only is None else local_files_only
    try:
        config = AutoConfig.from_pretrained(name_or_path, local_files_only=local_only)
        kind = detect_kind(config) if kind == "auto" else kind
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=local_only)
        model_class = AutoModelForMaskedLM if kind == MASKED else AutoModelForCausalLM
        model = model_class.from_pretrained(name_or_path, local_files_only=local_only)
    except (OSError, ValueError) as error:
        if isinstance(error, RecommendError):
            raise
        where = (
            "a local directory with config.json, tokenizer and weights"
            if Path(name_or_path).exists()
            else ("a hub id (needs the hub, or its files in the local cache when offline)")
        )
        raise RecommendError(f"cannot load model {name_or_path!r} as {where}: {error}") from error
    if kind == MASKED and tokenizer.mask_token_id is None:
        raise RecommendError(f"{name_or_path}: the tokenizer has no mask token, so KPPPL cannot be computed")
    model.to(device)  # type: ignore[arg-type]  # transformers types .to as unbound
    model.eval()
    length = max_length or usable_length(model, tokenizer)
    if length < 2:
        raise RecommendError(f"{name_or_path}: maximum length {length} is too short to score anything")
    return LoadedModel(name_or_path, kind, model, tokenizer, length, device)


# ---------------------------------------------------------------------------------------- sentence scores


@dataclass
class SentenceScores:
    """Per-sentence sums, kept for the corpus score and the bootstrap.

    `nll[i, j]`: summed negative log-likelihood (nats) of the tokens scored in sentence i at mask draw j (one
    column for causal LMs); `scored[i]`: tokens scored per draw; `n_tokens[i]`: scorable tokens of the sentence
    (after truncation); `n_bytes[i]`: UTF-8 bytes of the part of the text those tokens cover.
    """

    nll: np.ndarray
    scored: np.ndarray
    n_tokens: np.ndarray
    n_bytes: np.ndarray
    n_truncated: int = 0
    n_windowed: int = 0

    @property
    def draws(self) -> int:
        return int(self.nll.shape[1])


def n_masked(n_candidates: int, fraction: float) -> int:
    """k = ceil(fraction * n), at least 1 (0 for an empty sentence); rounding noise (0.15 * 20) is ignored."""
    if n_candidates <= 0:
        return 0
    return min(n_candidates, max(1, math.ceil(round(fraction * n_candidates, 9))))


def mask_positions(n_candidates: int, fraction: float, *, seed: int, draw: int, index: int) -> np.ndarray:
    """The k candidate indices (sorted) masked in sentence `index` at mask draw `draw`: reproducible from
    `(seed, draw, index)` alone, so a sentence's positions do not depend on the other sentences."""
    k = n_masked(n_candidates, fraction)
    if k >= n_candidates:
        return np.arange(n_candidates)
    rng = np.random.default_rng([seed, draw, index])
    return np.sort(rng.choice(n_candidates, size=k, replace=False))


def _rows_per_pass(length: int, vocab: int, max_rows: int) -> int:
    return max(1, min(max_rows, MAX_LOGITS // max(1, length * vocab)))


def masked_token_logprobs(
    model: Any,
    input_ids: Sequence[int],
    positions: Sequence[int],
    mask_id: int,
    *,
    batched: bool = True,
    max_batch_rows: int = 64,
    device: str = "cpu",
) -> np.ndarray:
    """log P(input_ids[p] | input_ids with position p masked) for each p in `positions`.

    Batched: the copies (one mask each) go through the model together, `max_batch_rows` at a time (fewer when
    rows x length x vocabulary would exceed `MAX_LOGITS`). Unbatched: one forward pass per copy."""
    import torch

    if len(positions) == 0:
        return np.zeros(0)
    ids = torch.tensor(list(input_ids), dtype=torch.long, device=device)
    vocab = int(model.config.vocab_size)
    rows = _rows_per_pass(len(ids), vocab, max_batch_rows) if batched else 1
    position_tensor = torch.tensor(list(positions), dtype=torch.long, device=device)
    result = []
    with torch.inference_mode():
        for start in range(0, len(position_tensor), rows):
            chunk = position_tensor[start : start + rows]
            arange = torch.arange(len(chunk), device=device)
            batch = ids.repeat(len(chunk), 1)
            batch[arange, chunk] = mask_id
            logits = model(input_ids=batch, attention_mask=torch.ones_like(batch)).logits[arange, chunk]
            log_probs = torch.log_softmax(logits.float(), dim=-1)
            result.append(log_probs[arange, ids[chunk]].double().cpu())
    return torch.cat(result).numpy()


def _encode_masked(lm: LoadedModel, text: str) -> tuple[list[int], np.ndarray, bool, int]:
    """Token ids with the model's special tokens, the indices that may be masked, whether the text was cut, and
    the UTF-8 bytes the kept tokens cover (a cut text: up to the last kept token's offset; a slow tokenizer has no
    offsets, so all of its bytes, which makes its pseudo bits per byte too low)."""
    encoding = lm.tokenizer(text, add_special_tokens=True, return_special_tokens_mask=True, verbose=False)
    n_bytes = len(text.encode("utf-8"))
    truncated = len(encoding["input_ids"]) > lm.max_length
    if truncated:
        fast = bool(getattr(lm.tokenizer, "is_fast", False))
        encoding = lm.tokenizer(
            text,
            add_special_tokens=True,
            return_special_tokens_mask=True,
            return_offsets_mapping=fast,
            truncation=True,
            max_length=lm.max_length,
        )
        if fast:
            end = max((stop for _, stop in encoding["offset_mapping"]), default=0)
            n_bytes = len(text[:end].encode("utf-8"))
    special = np.asarray(encoding["special_tokens_mask"], dtype=bool)
    return list(encoding["input_ids"]), np.flatnonzero(~special), truncated, n_bytes


def score_masked(
    lm: LoadedModel,
    texts: Sequence[str],
    *,
    fraction: float = DEFAULT_FRACTION,
    mask_draws: int = 1,
    seed: int = 0,
    batched: bool = True,
    max_batch_rows: int = 64,
    progress: Callable[[int], None] | None = None,
) -> SentenceScores:
    """KPPPL sums of each sentence for each mask draw. A position drawn in several draws is scored once (its
    log-probability does not depend on the draw)."""
    _check_fraction(fraction)
    draws = 1 if fraction >= 1.0 else mask_draws
    n = len(texts)
    nll = np.zeros((n, draws))
    scored = np.zeros(n, dtype=np.int64)
    n_tokens = np.zeros(n, dtype=np.int64)
    n_bytes = np.zeros(n, dtype=np.int64)
    truncated_count = 0
    mask_id = int(lm.tokenizer.mask_token_id)
    for index, text in enumerate(texts):
        ids, candidates, truncated, n_bytes[index] = _encode_masked(lm, text)
        truncated_count += truncated
        n_tokens[index] = len(candidates)
        chosen = [
            candidates[mask_positions(len(candidates), fraction, seed=seed, draw=j, index=index)] for j in range(draws)
        ]
        union = np.unique(np.concatenate(chosen))
        log_probs = masked_token_logprobs(
            lm.model, ids, union.tolist(), mask_id, batched=batched, max_batch_rows=max_batch_rows, device=lm.device
        )
        by_position = dict(zip(union.tolist(), log_probs.tolist(), strict=True))
        for j, positions in enumerate(chosen):
            nll[index, j] = -sum(by_position[p] for p in positions.tolist())
        scored[index] = len(chosen[0])
        if progress:
            progress(index + 1)
    if truncated_count:
        LOG.warning(
            "%s: %d of %d texts longer than %d tokens were truncated", lm.name, truncated_count, n, lm.max_length
        )
    return SentenceScores(nll, scored, n_tokens, n_bytes, n_truncated=truncated_count)


def score_causal(
    lm: LoadedModel,
    texts: Sequence[str],
    *,
    batch_size: int = 16,
    progress: Callable[[int], None] | None = None,
) -> SentenceScores:
    """Summed NLL of every text token after the BOS (else EOS) prefix, by the one scoring core
    (`finetasks_afr.scoring.core.score_texts`: its windowing rule for texts longer than `lm.max_length`), so a text gets
    the same bits per byte here as in the `flores_ppl` / `belebele_ppl` tasks."""
    from finetasks_afr.scoring import core as scoring

    n = len(texts)
    try:
        prefix = scoring.prefix_token_id(lm.tokenizer)
    except scoring.ScoringError as error:
        raise RecommendError(f"{lm.name}: {error}") from error
    encoded = [scoring.encode_text(lm.tokenizer, text) for text in texts]
    scored = scoring.score_token_texts(
        lm.model, encoded, prefix=prefix, max_length=lm.max_length, batch_size=batch_size,
        pad_id=scoring.pad_token_id(lm.tokenizer),
    )  # fmt: skip
    if progress:
        progress(n)
    nll = np.asarray([[-result.logprob] for result in scored], dtype=np.float64).reshape(n, 1)
    counts = np.asarray([len(tokens) for tokens in encoded], dtype=np.int64)
    n_bytes = np.asarray([len(text.encode("utf-8")) for text in texts], dtype=np.int64)
    windowed = sum(len(tokens) > lm.max_length for tokens in encoded)
    if windowed:
        LOG.info("%s: %d of %d texts longer than %d tokens scored in sliding windows", lm.name, windowed, n,
                 lm.max_length)  # fmt: skip
    return SentenceScores(nll, counts, counts.copy(), n_bytes, n_windowed=windowed)


# ------------------------------------------------------------------------------------ corpus scores, CI


def _check_fraction(fraction: float) -> None:
    if not 0.0 < fraction <= 1.0:
        raise RecommendError(f"mask fraction must lie in (0, 1], got {fraction}")


def _numerators(scores: SentenceScores, metric: str) -> np.ndarray:
    """`(n, draws)` summed NLL; for pseudo bits per byte scaled from the k masked tokens to all n tokens."""
    if metric != PSEUDO_BITS_PER_BYTE:
        return scores.nll
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(scores.scored > 0, scores.n_tokens / np.maximum(scores.scored, 1), 0.0)
    return scores.nll * scale[:, None]


def _denominators(scores: SentenceScores, metric: str) -> np.ndarray:
    """Per sentence and draw: bytes for the per-byte metrics, tokens scored for the perplexities."""
    return (scores.n_bytes if metric in BYTE_METRICS else scores.scored).astype(np.float64)


def _statistic(metric: str, nll: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric in BYTE_METRICS:
            return nll / denominator / math.log(2)
        return np.exp(nll / denominator)


def corpus_score(scores: SentenceScores, metric: str) -> float:
    """The corpus metric: a ratio of sums over all sentences and mask draws, ``stat(sum_ij num_ij, D sum_i den_i)``
    (see the module docstring); NaN when nothing was scored."""
    if metric not in (*MASKED_METRICS, *CAUSAL_METRICS):
        raise RecommendError(f"unknown metric {metric!r}")
    numerator = _numerators(scores, metric).sum()
    denominator = _denominators(scores, metric).sum() * scores.draws
    return float(_statistic(metric, np.asarray(numerator), np.asarray(denominator))) if denominator > 0 else math.nan


def bootstrap_replicates(family: Sequence[SentenceScores], metric: str, n_boot: int, seed: int) -> np.ndarray:
    """`(n_models, n_boot)` replicate scores; every model sees the same resampled sentences (and draw choices)."""
    if not family or n_boot <= 0:
        return np.zeros((len(family), 0))
    n, draws = family[0].nll.shape
    if any(s.nll.shape != (n, draws) for s in family):
        raise RecommendError("every model of a family must be scored on the same texts with the same mask draws")
    rng = np.random.default_rng(seed)
    out = np.empty((len(family), n_boot))
    block = max(1, 4_000_000 // max(1, n * draws))
    numerators = [_numerators(scores, metric) for scores in family]
    for begin in range(0, n_boot, block):
        size = min(block, n_boot - begin)
        rows = rng.integers(0, n, size=(size, n))
        picks = rng.integers(0, draws, size=(size, n, draws)) if draws > 1 else None
        for m, scores in enumerate(family):
            if picks is None:
                nll = numerators[m][rows, 0].sum(axis=1)
            else:
                nll = numerators[m][rows[:, :, None], picks].sum(axis=(1, 2))
            denominator = _denominators(scores, metric)[rows].sum(axis=1) * draws
            out[m, begin : begin + size] = _statistic(metric, nll, denominator)
    return out


def interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN, NaN without replicates)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def p_best(replicates: np.ndarray) -> np.ndarray:
    """Per model, the fraction of replicates in which it has the lowest score (ties: the first listed)."""
    if replicates.shape[1] == 0:
        return np.full(replicates.shape[0], math.nan)
    filled = np.where(np.isfinite(replicates), replicates, np.inf)
    winners = np.argmin(filled, axis=0)
    return np.bincount(winners, minlength=replicates.shape[0]) / replicates.shape[1]


# -------------------------------------------------------------------------------------------- recommend


@dataclass(frozen=True)
class ModelSpec:
    """A model to rank: `label` (as shown and matched against a reference), where to load it from, its kind."""

    label: str
    source: str
    kind: str = "auto"

    @classmethod
    def parse(cls, spec: str, kind: str = "auto") -> ModelSpec:
        """`PATH_OR_ID` or `LABEL=PATH_OR_ID` (split at the first `=` when the label has no `/`)."""
        label, sep, source = spec.partition("=")
        if sep and label and "/" not in label and source:
            return cls(label, source, kind)
        return cls(spec, spec, kind)


@dataclass
class Settings:
    """Scoring options (the CLI's flags)."""

    fraction: float = DEFAULT_FRACTION
    mask_draws: int = 1
    seed: int = 0
    n_boot: int = 1000
    ci_level: float = 0.95
    causal_metric: str = BITS_PER_BYTE
    masked_metric: str = KPPPL
    device: str = "cpu"
    batch_size: int = 64
    max_length: int | None = None
    batched: bool = True
    local_files_only: bool | None = None

    def validate(self) -> None:
        _check_fraction(self.fraction)
        if self.mask_draws < 1:
            raise RecommendError(f"--mask-draws must be at least 1, got {self.mask_draws}")
        if self.seed < 0:
            raise RecommendError(f"--seed must be >= 0, got {self.seed}")
        if self.n_boot < 0:
            raise RecommendError(f"--bootstrap must be >= 0, got {self.n_boot}")
        if self.causal_metric not in CAUSAL_METRICS:
            raise RecommendError(
                f"--causal-metric must be one of {', '.join(CAUSAL_METRICS)}, got {self.causal_metric!r}"
            )
        if self.masked_metric not in MASKED_METRICS:
            raise RecommendError(
                f"--masked-metric must be one of {', '.join(MASKED_METRICS)}, got {self.masked_metric!r}"
            )
        if self.batch_size < 1:
            raise RecommendError(f"--batch-size must be at least 1, got {self.batch_size}")


@dataclass
class ModelResult:
    """One model's row of the ranking (lower score = better; rank is within its family)."""

    model: str
    source: str
    kind: str
    metric: str
    score: float
    ci_low: float
    ci_high: float
    p_best: float
    rank: int
    n_sentences: int
    n_tokens: int  # scorable tokens of the texts (after truncation), this model's tokenizer
    n_scored: int  # token predictions that entered the score (all mask draws)
    n_bytes: int
    kpppl: float | None  # masked
    pseudo_bits_per_byte: float | None  # masked
    perplexity: float | None  # causal
    bits_per_byte: float | None  # causal
    mask_fraction: float | None
    mask_draws: int | None
    n_truncated: int
    n_windowed: int
    direction: str = DIRECTION


@dataclass
class Recommendation:
    """The ranked models (masked family first, each family by rank) and what the reader must know."""

    results: list[ModelResult]
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    def family(self, kind: str) -> list[ModelResult]:
        return [result for result in self.results if result.kind == kind]


def score_model(
    lm: LoadedModel, texts: Sequence[str], settings: Settings, progress: Callable[[int], None] | None = None
) -> SentenceScores:
    """Per-sentence sums for one loaded model (KPPPL for masked, NLL per token and byte for causal)."""
    if lm.kind == MASKED:
        return score_masked(
            lm,
            texts,
            fraction=settings.fraction,
            mask_draws=settings.mask_draws,
            seed=settings.seed,
            batched=settings.batched,
            max_batch_rows=settings.batch_size,
            progress=progress,
        )
    return score_causal(lm, texts, batch_size=settings.batch_size, progress=progress)


def _family_results(
    kind: str, entries: list[tuple[ModelSpec, SentenceScores]], settings: Settings
) -> list[ModelResult]:
    metric = settings.masked_metric if kind == MASKED else settings.causal_metric
    replicates = bootstrap_replicates([scores for _, scores in entries], metric, settings.n_boot, settings.seed)
    best = p_best(replicates)
    results = []
    for m, (spec, scores) in enumerate(entries):
        low, high = interval(replicates[m], settings.ci_level)
        results.append(
            ModelResult(
                model=spec.label,
                source=spec.source,
                kind=kind,
                metric=metric,
                score=corpus_score(scores, metric),
                ci_low=low,
                ci_high=high,
                p_best=float(best[m]),
                rank=0,
                n_sentences=int(scores.nll.shape[0]),
                n_tokens=int(scores.n_tokens.sum()),
                n_scored=int(scores.scored.sum() * scores.draws),
                n_bytes=int(scores.n_bytes.sum()),
                kpppl=corpus_score(scores, KPPPL) if kind == MASKED else None,
                pseudo_bits_per_byte=corpus_score(scores, PSEUDO_BITS_PER_BYTE) if kind == MASKED else None,
                perplexity=corpus_score(scores, PERPLEXITY) if kind == CAUSAL else None,
                bits_per_byte=corpus_score(scores, BITS_PER_BYTE) if kind == CAUSAL else None,
                mask_fraction=settings.fraction if kind == MASKED else None,
                mask_draws=scores.draws if kind == MASKED else None,
                n_truncated=scores.n_truncated,
                n_windowed=scores.n_windowed,
            )
        )
    results.sort(key=lambda r: (math.isnan(r.score), r.score, r.model))  # ties: by name, NaN last
    for rank, result in enumerate(results, start=1):
        result.rank = rank
    return results


def recommend(
    models: Sequence[ModelSpec],
    texts: Sequence[str],
    settings: Settings | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> Recommendation:
    """Score every model on `texts` (loaded one at a time), rank each family, attach CIs and notes."""
    settings = settings or Settings()
    settings.validate()
    if not models:
        raise RecommendError("no model given; pass --model NAME_OR_PATH (repeatable)")
    texts = [cleaned for cleaned in (clean(text) for text in texts) if cleaned]  # as the perplexity tasks clean them
    if not texts:
        raise RecommendError("no text to score: every input was empty")
    labels = [spec.label for spec in models]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise RecommendError(f"model label(s) given twice: {', '.join(duplicates)}; use LABEL=PATH to tell them apart")
    by_kind: dict[str, list[tuple[ModelSpec, SentenceScores]]] = {MASKED: [], CAUSAL: []}
    for spec in models:
        lm = load_model(
            spec.source,
            kind=spec.kind,
            device=settings.device,
            local_files_only=settings.local_files_only,
            max_length=settings.max_length,
        )
        callback = (lambda done, label=spec.label: progress(label, done, len(texts))) if progress else None
        by_kind[lm.kind].append((spec, score_model(lm, texts, settings, callback)))
        del lm
        gc.collect()
    results = [r for kind in KINDS if by_kind[kind] for r in _family_results(kind, by_kind[kind], settings)]
    return Recommendation(results, _notes(by_kind, settings), _settings_record(settings, len(texts)))


def _notes(by_kind: dict[str, list[tuple[ModelSpec, SentenceScores]]], settings: Settings) -> list[str]:
    """What a reader of the ranking must know: direction, CI, family split, tokenizer caveats, truncation."""
    level = round(settings.ci_level * 100)
    notes = [f"lower is better; {level}% CI: seeded bootstrap over sentences ({settings.n_boot} replicates)"]
    masked, causal = by_kind[MASKED], by_kind[CAUSAL]
    if masked and causal:
        notes.append(
            f"masked LMs ({settings.masked_metric}) and causal LMs ({settings.causal_metric}) are ranked "
            "separately: the scores of the two families are not comparable"
        )
    if masked:
        draws = 1 if settings.fraction >= 1 else settings.mask_draws
        resampled = "; the CI also resamples mask draws" if draws > 1 else ""
        notes.append(f"masked LMs: {settings.fraction:g} of each text's tokens masked, {draws} mask draw(s){resampled}")
        tokenizations = {scores.n_tokens.tobytes() for _, scores in masked}
        if settings.masked_metric == KPPPL and len(tokenizations) > 1:
            notes.append(
                "the masked LMs tokenize the texts differently: KPPPL favours finer tokenizers; "
                "compare with pseudo_bits_per_byte (--masked-metric pseudo_bits_per_byte)"
            )
    if causal and settings.causal_metric == PERPLEXITY:
        notes.append("causal LMs ranked by perplexity, which is NOT comparable across tokenizers: prefer bits_per_byte")
    for kind in KINDS:
        for spec, scores in by_kind[kind]:
            if scores.n_truncated:
                notes.append(f"{spec.label}: {scores.n_truncated} text(s) truncated to the model's maximum length")
            if scores.n_windowed:
                notes.append(f"{spec.label}: {scores.n_windowed} text(s) longer than the model scored in windows")
    return notes


def _settings_record(settings: Settings, n_texts: int) -> dict[str, Any]:
    record = asdict(settings)
    record["n_texts"] = n_texts
    return record


# ---------------------------------------------------------------------------------------------- texts


def read_text_file(path: Path) -> list[str]:
    """One text per line (stripped); blank lines skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise RecommendError(f"cannot read text file {path}: {error}") from error
    return [line.strip() for line in lines if line.strip()]


def parse_dataset_spec(spec: str) -> tuple[str, str, str]:
    """`DATASET:CONFIG[:SPLIT]` -> (key, config, split); the split defaults per dataset."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise RecommendError(f"--texts {spec!r}: expected DATASET:CONFIG[:SPLIT], e.g. sib200:hau_Latn")
    key = parts[0]
    if key not in DATASET_TEXT_FIELDS:
        raise RecommendError(
            f"--texts {spec!r}: no text field known for {key!r}; known: {', '.join(DATASET_TEXT_FIELDS)}"
        )
    split = parts[2] if len(parts) == 3 else DATASET_TEXT_FIELDS[key][1]
    return key, parts[1], split


def load_dataset_texts(spec: str) -> list[str]:
    """The deduplicated, non-empty texts of a dataset config, from the local mirror when configured
    ($FINETASKS_AFR_DATA_DIR / --data-dir) else the hub (`finetasks_afr.data.sources.hf_location`), through the
    suite's one loader (`finetasks_afr.data.sources.load_dataset`)."""
    from finetasks_afr.data.sources import DATA_DIR_ENV, hf_location, load_dataset

    key, config, split = parse_dataset_spec(spec)
    text_field = DATASET_TEXT_FIELDS[key][0]
    repo, revision = hf_location(key, config)
    try:  # as the tasks read it: per config on a parquet branch, a named error for a script-only repository
        rows = load_dataset(repo, config, revision, split=split)
    except Exception as error:  # datasets raises many types (ConnectionError, ValueError, FileNotFoundError...)
        raise RecommendError(
            f"--texts {spec}: cannot load {key} config {config!r} split {split!r} from {repo}: {error}. Offline, build "
            f"a mirror (`finetasks-afr data import-raw ../shared/data --out DIR`) and pass --data-dir DIR or set "
            f"${DATA_DIR_ENV}"
        ) from error
    if text_field not in rows.column_names:
        raise RecommendError(
            f"--texts {spec}: {repo} has no field {text_field!r} (fields: {', '.join(rows.column_names)})"
        )
    texts = (str(value).strip() for value in rows[text_field] if value is not None)
    return list(dict.fromkeys(text for text in texts if text))


def sample_texts(texts: Sequence[str], max_texts: int | None, seed: int = 0) -> list[str]:
    """At most `max_texts` texts drawn without replacement with `seed`, kept in their original order."""
    if max_texts is None or max_texts >= len(texts):
        return list(texts)
    if max_texts < 1:
        raise RecommendError(f"--max-texts must be at least 1, got {max_texts}")
    chosen = np.sort(np.random.default_rng(seed).choice(len(texts), size=max_texts, replace=False))
    return [texts[i] for i in chosen]


# ---------------------------------------------------------------------------------------------- output

OUTPUT_SUFFIXES: tuple[str, ...] = (".csv", ".json")
"""The formats `write_output` writes, chosen by the file name's suffix."""


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def result_rows(recommendation: Recommendation) -> list[dict[str, Any]]:
    """One JSON-safe dict per model (NaN -> None)."""
    return [{key: _clean(value) for key, value in asdict(result).items()} for result in recommendation.results]


def write_output(
    path: Path, recommendation: Recommendation, agreements: dict[str, dict[str, Any]] | None = None
) -> Path:
    """Write the ranking atomically: `.csv` (one row per model) or `.json` (rows, notes, settings, agreement)."""
    import json

    import polars as pl

    from analysis.base.io import atomic_write_text, write_csv_atomic
    from analysis.base.write_errors import writing

    path = Path(path)
    rows = result_rows(recommendation)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with writing(path):  # polars reports a full disk as an OSError without an errno: this names both
            return write_csv_atomic(pl.DataFrame(rows, infer_schema_length=None), path)
    if suffix == ".json":
        document = {
            "direction": DIRECTION,
            "models": rows,
            "notes": recommendation.notes,
            "settings": recommendation.settings,
            "agreement": agreements or {},
        }
        with writing(path):
            return atomic_write_text(path, json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    raise RecommendError(
        f"--out {path}: unknown format {path.suffix!r}; use a {' or '.join(OUTPUT_SUFFIXES)} file name"
    )
