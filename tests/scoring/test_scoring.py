"""The one scoring core (`finetasks_afr.scoring.core`) against direct forward passes, on a random float32 Llama.

Every log-probability is recomputed with one plain forward pass per (context, continuation) or per token, no
batching, no cache, no padding: the core's batching, right padding, shared prefixes (cached keys/values, explicit
positions), split groups, truncation fallback and windows must not change a value beyond float32 noise.
"""

from __future__ import annotations

import array
import random

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from finetasks_afr.scoring import core as scoring
from finetasks_afr.scoring.compat import bootstrap_draws

MAX_LENGTH = 48


@pytest.fixture(scope="module")
def model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)  # fmt: skip
    return LlamaForCausalLM(config).eval()


def direct(model: LlamaForCausalLM, context: list[int], continuation: list[int]) -> tuple[float, bool]:
    with torch.no_grad():
        logits = model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(context) - 1, len(context) + len(continuation) - 1)
    total = sum(float(logprobs[p, t]) for p, t in zip(positions, continuation, strict=True))
    greedy = all(int(logprobs[p].argmax()) == t for p, t in zip(positions, continuation, strict=True))
    return total, greedy


def random_docs(seed: int, n_docs: int = 14) -> list[tuple[list[int], list[list[int]]]]:
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        context = [rng.randrange(97) for _ in range(rng.randrange(1, 30))]
        choices = [[rng.randrange(97) for _ in range(rng.randrange(1, 7))] for _ in range(rng.randrange(1, 6))]
        docs.append((context, choices))
        if d % 5 == 0:  # another document with the same context (across "tasks"): shared too
            docs.append((list(context), [[rng.randrange(97)] for _ in range(4)]))
    docs.append(([3] * 44, [[5, 6, 7, 8, 9, 10], [11]]))  # 44 + 6 > MAX_LENGTH: lighteval's truncated row
    return docs


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_score_choices_equals_direct_forward_passes(model, batch_size):
    docs = random_docs(batch_size)
    scoring.reset_stats()
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=batch_size)
    for (context, choices), results in zip(docs, scored, strict=True):
        for continuation, result in zip(choices, results, strict=True):
            row, n = scoring._lighteval_row(context, continuation, MAX_LENGTH)
            expected, greedy = direct(model, list(row[:-n]), list(row[-n:]))
            assert result.logprob == pytest.approx(expected, rel=1e-5, abs=1e-5)
            assert result.greedy == greedy
    assert scoring.STATS.fallback_rows == 1  # only the over-long request
    assert scoring.STATS.shared_contexts < sum(len(c) for _, c in docs)  # contexts were shared
    # the engine's compact memo passes contexts as int32 arrays: the same groups, the same values
    compact = [(array.array("i", context), choices) for context, choices in docs]
    assert scoring.score_choices(model, compact, max_length=MAX_LENGTH, batch_size=batch_size) == scored


def test_the_truncated_row_is_lighteval_s():
    assert scoring._lighteval_row([1, 2, 3, 4], [5, 6], 4) == ([3, 4, 5, 6], 2)
    assert scoring._lighteval_row([1, 2], [5, 6, 7, 8, 9], 4) == ([6, 7, 8, 9], 3)  # only what the window holds
    with pytest.raises(scoring.ScoringError, match="max_length"):
        scoring._lighteval_row([1], [5, 6], 1)


def test_single_token_continuations_need_no_pass_of_their_own(model):
    docs = [([1, 2, 3, 4, 5], [[10], [11], [12], [13]]) for _ in range(3)]
    scoring.reset_stats()
    scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=64)
    assert scoring.STATS.forward_passes == 1 and scoring.STATS.tokens_fed == 5  # one context, run once


def test_score_rows_and_windows_equal_direct_per_token_passes(model):
    rng = random.Random(1)
    texts = [[rng.randrange(97) for _ in range(n)] for n in (1, 5, 16, 17, 40)]
    max_length = 8
    scored = scoring.score_token_texts(model, texts, prefix=1, max_length=max_length, batch_size=2, keep_tokens=True)
    stride = max(1, max_length // 2)
    for tokens, result in zip(texts, scored, strict=True):
        sequence = [1, *tokens]
        expected = []
        for i in range(len(tokens)):  # the rule, stated per token
            begin = (
                0
                if i < max_length
                else min(max_length + ((i - max_length) // stride + 1) * stride, len(tokens)) - max_length
            )
            value, _ = direct(model, sequence[begin : i + 1], [tokens[i]])
            expected.append(value)
        assert result.token_logprobs == pytest.approx(expected, rel=1e-5, abs=1e-5)
        assert result.logprob == pytest.approx(sum(expected), rel=1e-5, abs=1e-5)


def test_rows_must_score_something(model):
    with pytest.raises(scoring.ScoringError, match="cannot score"):
        scoring.score_rows(model, [([1, 2], 2)], batch_size=4)
    with pytest.raises(scoring.ScoringError, match="empty continuation"):
        scoring.score_choices(model, [([1], [[]])], max_length=8, batch_size=4)


def test_bootstrap_draws_are_python_s_random_choices():
    for seed in (0, 1, 41):
        for population in ([2.5], [1, 2, 3], list(range(204)), [("x", i) for i in range(57)]):
            rnd = random.Random()
            rnd.seed(seed)
            expected = [rnd.choices(population, k=len(population)) for _ in range(30)]
            assert bootstrap_draws(population, seed, 30) == expected
