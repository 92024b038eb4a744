"""The study's training text: reading each language's corpus, the tokenizer's sample and each run's mix of blocks.

A mix is only a design if every run really trains on its designed shares: `mix_blocks` gives each language an
exact number of `seq_len` blocks (apportioned from the shares by largest remainder, so the counts add up to the
budget), filled from that language's own stream of `<s> paragraph </s>` in a seeded order, and only then shuffles
the blocks of all languages together. The tokenizer is trained on the same number of characters from every
language (`tokenizer_texts`), so that no mix's languages are favoured by a better vocabulary.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from finetasks_afr.study.design import corpus_path

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_ENCODE_CHUNK = 256  # paragraphs encoded at a time (a run needs only part of a large corpus)


def read_corpus(shared_data: Path, language: str) -> list[str]:
    """The paragraphs (non-empty lines, stripped) of `language`'s training text under the shared data root."""
    path = corpus_path(shared_data, language)
    if not path.is_file():
        raise FileNotFoundError(
            f"the {language} training corpus {path} is missing: set FINETASKS_AFR_SHARED_DATA (or pass "
            f"--shared-data) to the shared data root that holds {path.relative_to(Path(shared_data))}"
        )
    with path.open(encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def tokenizer_texts(
    paragraphs_by_language: Mapping[str, Sequence[str]], chars_per_language: int | None = None, *, seed: int = 0
) -> dict[str, list[str]]:
    """Per language, exactly `chars_per_language` characters of its paragraphs, for training the shared tokenizer.

    The paragraphs are taken in a seeded order (a spread over the whole corpus, not its first articles) until the
    amount is reached, the last one cut to fit. The default amount is the smallest corpus's total, so every
    language gives as much text as the smallest one has. Deterministic given its arguments.
    """
    if not paragraphs_by_language:
        raise ValueError("no languages to sample")
    totals = {language: sum(map(len, paragraphs)) for language, paragraphs in paragraphs_by_language.items()}
    amount = min(totals.values()) if chars_per_language is None else chars_per_language
    if amount > min(totals.values()):
        short = min(totals, key=lambda language: totals[language])
        raise ValueError(f"{short} has only {totals[short]} characters; {amount} were asked of every language")
    texts: dict[str, list[str]] = {}
    for language, paragraphs in paragraphs_by_language.items():
        order = list(range(len(paragraphs)))
        random.Random(f"tokenizer:{seed}:{language}").shuffle(order)
        chosen: list[str] = []
        left = amount
        for index in order:
            if left <= 0:
                break
            text = paragraphs[index][:left]
            chosen.append(text)
            left -= len(text)
        texts[language] = chosen
    return texts


def block_counts(shares: Mapping[str, float], n_blocks: int) -> dict[str, int]:
    """`n_blocks` apportioned to the languages by their `shares` (largest remainder, ties in the mapping's order).

    Each language gets floor(share x n_blocks) blocks, and the blocks left over go one each to the largest
    remainders; the shares are read as exact decimals (0.35 is 7/20), so the counts never depend on float noise.
    Every count is within one block of share x n_blocks, and they sum to `n_blocks`.
    """
    exact = {language: Fraction(str(share)) * n_blocks for language, share in shares.items()}
    if any(value < 0 for value in exact.values()) or sum(Fraction(str(s)) for s in shares.values()) != 1:
        raise ValueError(f"the shares must be non-negative and sum to 1, got {dict(shares)}")
    counts = {language: math.floor(value) for language, value in exact.items()}
    order = sorted(exact, key=lambda language: -(exact[language] - counts[language]))  # stable: ties keep order
    for language in order[: n_blocks - sum(counts.values())]:
        counts[language] += 1
    return counts


@dataclass(frozen=True)
class MixStats:
    """What a run's mix really holds, per language: blocks, tokens and passes over its corpus."""

    blocks: dict[str, int]
    tokens: dict[str, int]
    epochs: dict[str, float]  # paragraphs started / paragraphs in the corpus (2.5: two full passes and a half)


def _language_stream(
    tokenizer: PreTrainedTokenizerBase, paragraphs: Sequence[str], needed: int, seed: int, language: str
) -> tuple[list[int], float]:
    """The first `needed` tokens of `<s> paragraph </s>` in a seeded order (a fresh shuffle per pass), and the
    passes over the corpus that took."""
    if not paragraphs:
        raise ValueError(f"no {language} paragraphs to train on")
    rng = random.Random(f"mix:{seed}:{language}")
    stream: list[int] = []
    started = 0
    while len(stream) < needed:
        order = list(range(len(paragraphs)))
        rng.shuffle(order)
        for begin in range(0, len(order), _ENCODE_CHUNK):
            chunk = [paragraphs[index] for index in order[begin : begin + _ENCODE_CHUNK]]
            encoded = tokenizer(chunk, add_special_tokens=True, verbose=False)["input_ids"]  # prepends <s>
            for ids in encoded:
                stream += ids
                stream.append(tokenizer.eos_token_id)
                started += 1
                if len(stream) >= needed:
                    return stream[:needed], started / len(paragraphs)
    return stream[:needed], started / len(paragraphs)


def mix_blocks(
    tokenizer: PreTrainedTokenizerBase,
    paragraphs_by_language: Mapping[str, Sequence[str]],
    shares: Mapping[str, float],
    *,
    tokens: int,
    seq_len: int,
    seed: int,
) -> tuple[list[list[int]], MixStats]:
    """A run's training blocks: `tokens // seq_len` blocks of `seq_len` ids, and what each language holds.

    Each language with a share gets `block_counts(shares, tokens // seq_len)` blocks, cut from its own stream of
    `<s> paragraph </s>` (paragraphs in an order shuffled by `seed`, reshuffled for every further pass when the
    budget needs more than one); so it contributes exactly blocks x `seq_len` tokens, within one block of
    share x `tokens`. All the blocks are then shuffled together by `seed`. `tokens` must be a multiple of `seq_len`.
    """
    if tokens <= 0 or seq_len <= 0 or tokens % seq_len:
        raise ValueError(f"tokens ({tokens}) must be a positive multiple of seq_len ({seq_len})")
    counts = block_counts(shares, tokens // seq_len)
    blocks: list[list[int]] = []
    token_counts: dict[str, int] = {}
    epochs: dict[str, float] = {}
    for language, count in counts.items():
        if count == 0:
            token_counts[language], epochs[language] = 0, 0.0
            continue
        if language not in paragraphs_by_language:
            raise KeyError(f"the mix gives {language} a share but no {language} paragraphs were given")
        stream, epochs[language] = _language_stream(
            tokenizer, paragraphs_by_language[language], count * seq_len, seed, language
        )
        token_counts[language] = len(stream)
        blocks += [stream[i * seq_len : (i + 1) * seq_len] for i in range(count)]
    random.Random(f"blocks:{seed}").shuffle(blocks)
    return blocks, MixStats(blocks=counts, tokens=token_counts, epochs=epochs)
