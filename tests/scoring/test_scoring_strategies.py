"""Every strategy of `scoring.score_choices` (packed rows, shared keys/values, whole rows) against full logits.

The strategies differ in what they feed the model (a block attention mask with restarted positions, copied
caches, one row per choice) and must not differ in a value: each is forced on documents that exercise its edges
(shared contexts across documents, single-token choices, long and short continuations in one batch, padding, a
context shared by more continuations than a packed row holds, a truncated request) and compared with one plain
unpadded forward pass per request, to 1e-6 in float32. The rule (`scoring._strategy`) and its probe are checked
too: a model that ignores a custom 4-D mask must be caught and scored by sharing.
"""

from __future__ import annotations

import array
import random
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from finetasks_afr.scoring import core as scoring

MAX_LENGTH = 48
VOCAB = 101


@pytest.fixture(scope="module")
def model() -> LlamaForCausalLM:
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)  # fmt: skip
    return LlamaForCausalLM(config).eval()


@pytest.fixture
def restore() -> Iterator[None]:
    before = dict(scoring._PACKS_CACHE)
    yield
    scoring.FORCE_STRATEGY = None
    scoring._PACKS_CACHE.clear()
    scoring._PACKS_CACHE.update(before)


def direct(model: Any, context: list[int], continuation: list[int]) -> tuple[float, bool]:
    with torch.no_grad():
        logits = model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(context) - 1, len(context) + len(continuation) - 1)
    total = sum(float(logprobs[p, t]) for p, t in zip(positions, continuation, strict=True))
    greedy = all(int(logprobs[p].argmax()) == t for p, t in zip(positions, continuation, strict=True))
    return total, greedy


def documents(seed: int) -> list[tuple[list[int], list[list[int]]]]:
    rng = random.Random(seed)
    docs: list[tuple[list[int], list[list[int]]]] = []
    for d in range(12):
        context = [rng.randrange(1, VOCAB) for _ in range(rng.randrange(1, 30))]
        n_choices = rng.randrange(1, 8)
        longest = 1 if d % 4 == 0 else rng.randrange(2, 12)  # every fourth document: MCF letters only
        docs.append((context, [[rng.randrange(1, VOCAB) for _ in range(rng.randint(1, longest))] for _ in
                               range(n_choices)]))  # fmt: skip
        if d % 5 == 0:  # the same context in another "task": one group
            docs.append((list(context), [[rng.randrange(1, VOCAB) for _ in range(3)] for _ in range(2)]))
    docs.append(([7] * 44, [[5, 6, 7, 8, 9, 10], [11]]))  # 44 + 6 > MAX_LENGTH: lighteval's truncated row
    return docs


def assert_equal_to_direct(model: Any, docs: list[tuple[list[int], list[list[int]]]], scored: Any) -> None:
    for (context, choices), results in zip(docs, scored, strict=True):
        assert len(results) == len(choices)
        for continuation, result in zip(choices, results, strict=True):
            row, n = scoring._lighteval_row(context, continuation, MAX_LENGTH)
            expected, greedy = direct(model, list(row[:-n]), list(row[-n:]))
            assert result.logprob == pytest.approx(expected, rel=1e-6, abs=1e-6)
            assert result.greedy == greedy


@pytest.mark.parametrize("batch_size", [1, 3, 64])
@pytest.mark.parametrize("strategy", scoring.STRATEGIES)
def test_every_strategy_equals_full_logits(model, restore, strategy, batch_size):
    docs = documents(batch_size)
    scoring.FORCE_STRATEGY = strategy
    scoring.reset_stats()
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=batch_size)
    assert_equal_to_direct(model, docs, scored)
    assert scoring.STATS.fallback_rows == 1
    assert (scoring.STATS.packed_rows > 0) == (strategy == "packed")
    if strategy == "packed" and batch_size == 64:
        # one pass for the truncated row, and one per packed batch: no per-continuation passes
        assert scoring.STATS.forward_passes <= 1 + scoring.STATS.packed_rows
    compact = [(array.array("i", context), choices) for context, choices in docs]  # the engine's memo form
    assert scoring.score_choices(model, compact, max_length=MAX_LENGTH, batch_size=batch_size) == scored


def test_a_context_with_more_continuations_than_a_packed_row_holds(model, restore, monkeypatch):
    """PMI's case: one short context under every choice of a run; the group is cut into rows of bounded width."""
    rng = random.Random(7)
    context = [3, 4, 5]
    docs = [(context, [[rng.randrange(1, VOCAB) for _ in range(rng.randint(1, 6))] for _ in range(4)])
            for _ in range(9)]  # fmt: skip
    monkeypatch.setattr(scoring, "PACK_ROW_MIN", 12)
    scoring.FORCE_STRATEGY = "packed"
    scoring.reset_stats()
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4)
    assert_equal_to_direct(model, docs, scored)
    assert scoring.STATS.packed_rows > 3  # 36 continuations split over several rows of at most 12 tokens
    conts = [tuple(c) for _, choices in docs for c in choices]
    rows = scoring._pack([scoring._Group(context, [(j, c) for j, c in enumerate(conts)])])
    assert all(row.width <= 12 or len(row.members) == 1 for row in rows)
    assert sorted(index for row in rows for index, _ in row.members) == list(range(36))


def test_the_rule_packs_a_llama(model, restore):
    scoring._PACKS_CACHE.clear()
    assert scoring._strategy(model) == "packed"
    scoring.FORCE_STRATEGY = "nonsense"
    with pytest.raises(scoring.ScoringError, match="FORCE_STRATEGY"):
        scoring._strategy(model)


class MaskIgnoringLlama(LlamaForCausalLM):
    """A Llama that drops a custom 4-D mask (as a flash-attention kernel would): plain causal attention."""

    def forward(self, input_ids: Any = None, attention_mask: Any = None, **kwargs: Any) -> Any:
        if attention_mask is not None and attention_mask.dim() == 4:
            attention_mask = None
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)


def test_a_model_that_ignores_the_mask_is_scored_by_sharing(model, restore):
    leaky = MaskIgnoringLlama(model.config).eval()
    leaky.load_state_dict(model.state_dict())
    assert not scoring._packs(leaky)
    assert scoring._strategy(leaky) == "shared"
    docs = documents(5)
    assert_equal_to_direct(leaky, docs, scoring.score_choices(leaky, docs, max_length=MAX_LENGTH, batch_size=4))


def test_the_probe_leaves_the_counters_alone(model, restore):
    scoring._PACKS_CACHE.clear()
    scoring.reset_stats()
    scoring.score_choices(model, [([1, 2, 3, 4, 5], [[10], [11, 12]])], max_length=MAX_LENGTH, batch_size=8)
    assert scoring.STATS.forward_passes == 1 and scoring.STATS.tokens_fed == 6  # context + one continuation token


def test_a_sliding_window_model_is_scored_as_whole_rows(restore):
    """A custom 4-D mask would replace the window transformers builds per layer, and a windowed layer's cache of a
    right-padded context keeps pads instead of the context's last tokens: such models are scored as whole rows
    (the forced strategies show both faults)."""
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(2)
    config = MistralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                           sliding_window=8)  # fmt: skip
    windowed = MistralForCausalLM(config).eval()
    assert scoring._strategy(windowed) == "rows"
    docs = documents(11)  # contexts up to 29 tokens, of different lengths: longer than the window, padded
    assert_equal_to_direct(windowed, docs, scoring.score_choices(windowed, docs, max_length=MAX_LENGTH, batch_size=4))
    for wrong in ("packed", "shared"):
        scoring.FORCE_STRATEGY = wrong
        with pytest.raises(AssertionError):
            assert_equal_to_direct(
                windowed, docs, scoring.score_choices(windowed, docs, max_length=MAX_LENGTH, batch_size=4)
            )
