"""A scoring plan (`scoring.plan_choices`), built once from the requests and reused on other models.

A sweep scores the same requests on every checkpoint, so the engine keeps each call's plan (`plans=` of
`scoring.score_choices`) and checkpoints 2..N skip the planning. A reused plan must score exactly as planning
afresh does, and a plan must never be reused for other requests (another token, another split between context
and continuation, another batch size), nor for a model scored by another strategy.
"""

from __future__ import annotations

import array
from typing import Any

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from finetasks_afr.scoring import core as scoring
from finetasks_afr.scoring.engine import PlanMemo
from tests.scoring.test_scoring_strategies import MAX_LENGTH, VOCAB, documents


def llama(seed: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)  # fmt: skip
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def models() -> tuple[LlamaForCausalLM, LlamaForCausalLM]:
    return llama(1), llama(2)


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every plan `score_choices` builds (the ones it reuses are not built again)."""
    built: list[Any] = []
    original = scoring.plan_choices

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(scoring, "plan_choices", counting)
    return built


@pytest.fixture
def forced() -> Any:
    yield
    scoring.FORCE_STRATEGY = None


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_a_plan_reused_on_another_model_scores_as_planning_afresh(models, planned, batch_size):
    first, second = models
    docs = [(array.array("i", context), choices) for context, choices in documents(batch_size)]
    plans: dict[Any, Any] = {}
    got_first = scoring.score_choices(first, docs, max_length=MAX_LENGTH, batch_size=batch_size, plans=plans)
    got_second = scoring.score_choices(second, docs, max_length=MAX_LENGTH, batch_size=batch_size, plans=plans)
    assert len(planned) == 1 and len(plans) == 1  # the second model reused the first one's plan
    fresh = [scoring.score_choices(m, docs, max_length=MAX_LENGTH, batch_size=batch_size) for m in models]
    assert [got_first, got_second] == fresh
    assert got_first != got_second  # two models indeed
    plan = scoring.plan_choices(docs, max_length=MAX_LENGTH, batch_size=batch_size, strategy="packed")
    assert scoring.score_plan(second, plan) == fresh[1]


def test_a_plan_is_never_reused_for_other_requests(models, planned):
    model = models[0]
    docs = documents(3)
    plans: dict[Any, Any] = {}
    scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4, plans=plans)
    other_token = [(context, [list(c) for c in choices]) for context, choices in docs]
    other_token[2][1][0][-1] = (other_token[2][1][0][-1] + 1) % VOCAB or 1
    moved = list(docs)  # document 1's first choice starts one token later: the same tokens, split otherwise
    moved[1] = (docs[1][0] + docs[1][1][0][:1], [docs[1][1][0][1:] or [5], *docs[1][1][1:]])
    for variant, batch_size in ((other_token, 4), (moved, 4), (docs, 5)):
        before = len(planned)
        got = scoring.score_choices(model, variant, max_length=MAX_LENGTH, batch_size=batch_size, plans=plans)
        assert len(planned) == before + 1  # planned afresh
        assert got == scoring.score_choices(model, variant, max_length=MAX_LENGTH, batch_size=batch_size)
    assert scoring.requests_digest(docs) != scoring.requests_digest(other_token)
    # The same tokens split otherwise between context and continuation are other requests.
    assert scoring.requests_digest([([1, 2], [[3]])]) != scoring.requests_digest([([1], [[2, 3]])])
    assert scoring.requests_digest([([1, 2], [[3]])]) == scoring.requests_digest([(array.array("i", [1, 2]), [(3,)])])


def test_a_plan_for_another_strategy_is_not_reused(models, planned, forced):
    model = models[0]
    docs = documents(5)
    plans: dict[Any, Any] = {}
    scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4, plans=plans)
    packed_plan = planned[-1]
    assert packed_plan.strategy == "packed"
    scoring.FORCE_STRATEGY = "shared"
    with pytest.raises(scoring.ScoringError, match="strategy"):
        scoring.score_plan(model, packed_plan)
    got = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4, plans=plans)
    assert len(planned) == 2 and planned[-1].strategy == "shared"
    assert got == scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4)


def test_the_engine_s_memo_keeps_the_latest_plans_within_its_budget():
    small = scoring.plan_choices(documents(1), max_length=MAX_LENGTH, batch_size=4, strategy="packed")
    memo = PlanMemo(keep=2, max_bytes=3 * small.nbytes)
    for key in "abc":
        memo[key] = small
    assert list(memo) == ["b", "c"]
    assert memo.get("b") is small and list(memo) == ["c", "b"] and memo.hits == 1
    tiny = PlanMemo(keep=8, max_bytes=small.nbytes - 1)
    tiny["a"] = small
    assert not tiny  # larger than the budget: not kept


def test_the_greedy_check_is_argmax_s_on_ties_and_nans():
    """`_missed` runs `argmax` only where the target holds its row's maximum; ties (the first index wins) and NaN
    rows must come out as `argmax` alone says."""
    generator = torch.Generator().manual_seed(0)
    for trial in range(100):
        logprobs = torch.randint(0, 4, (30, 9), generator=generator).float()  # many ties
        if trial % 3 == 0:
            logprobs[trial % 30, trial % 9] = float("nan")
        at = torch.randint(0, 30, (60,), generator=generator)
        target = torch.randint(0, 9, (60,), generator=generator)
        expected = (logprobs.argmax(dim=-1)[at] != target).to(torch.long)
        assert torch.equal(scoring._missed(logprobs, at, target, logprobs[at, target]), expected)
