"""The scoring core on whatever transformers is installed: per-row positions' logits, natively or by the fallbacks.

The core asks a model for the logits of a few positions per row (`logits_to_keep` as a (batch, k) index tensor).
transformers before 5.21 indexes a 2-D `logits_to_keep` as `hidden_states[:, index, :]` and the core
crashed there; `scoring._keep_path` probes each model class once and falls back to a pre-hook that gathers each
row's hidden states before the output projection, or to full logits. Every path, and every scoring strategy
(packed rows under a custom 4-D mask, shared caches, whole rows: `scoring.STRATEGIES`), is forced here on the
installed transformers and checked against a plain full-logits recomputation (one unpadded, uncached forward pass
per request) to 1e-6 in float32, and a model that slices the old way is shown to be routed to the hook. The same file
runs under the oldest transformers `pyproject.toml` allows (`make test-transformers-oldest`, its own
`.venv-tf-oldest`), so it imports nothing but the core, the tiny-model builder, torch and transformers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaForCausalLM, PreTrainedTokenizerFast

from finetasks_afr.demo.tiny import make_tiny_causal_lm
from finetasks_afr.scoring import core as scoring

MAX_LENGTH = 40
CORPUS = [
    "Habari ya asubuhi, rafiki yangu. Leo tunasoma kitabu kipya pamoja.",
    "Ẹ kú àárọ̀, ọ̀rẹ́ mi. Lónìí a ó ka ìwé tuntun papọ̀.",
    "Sannu da safe, abokina. Yau za mu karanta sabon littafi tare.",
    "Good morning, my friend. Today we read a new book together.",
] * 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[LlamaForCausalLM, Any]:
    path = make_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"), CORPUS, vocab_size=160, layers=1, seed=3)
    model = AutoModelForCausalLM.from_pretrained(path, **scoring.weights_dtype(torch.float32)).eval()
    return model, PreTrainedTokenizerFast.from_pretrained(path)


@pytest.fixture
def forced() -> Iterator[None]:
    """Restore the core's path selection and its per-class cache after a test that forces or probes a path."""
    before, packs = dict(scoring._KEEP_PATH_CACHE), dict(scoring._PACKS_CACHE)
    yield
    scoring.FORCE_KEEP_PATH = None
    scoring.FORCE_STRATEGY = None
    scoring._KEEP_PATH_CACHE.clear()
    scoring._KEEP_PATH_CACHE.update(before)
    scoring._PACKS_CACHE.clear()
    scoring._PACKS_CACHE.update(packs)


def direct(model: Any, context: list[int], continuation: list[int]) -> tuple[float, bool, list[float]]:
    """log P(continuation | context) from the full logits of one unpadded, uncached pass."""
    with torch.no_grad():
        logits = model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(context) - 1, len(context) + len(continuation) - 1)
    picked = [float(logprobs[p, t]) for p, t in zip(positions, continuation, strict=True)]
    greedy = all(int(logprobs[p].argmax()) == t for p, t in zip(positions, continuation, strict=True))
    return sum(picked), greedy, picked


def random_docs(vocab: int, seed: int = 0) -> list[tuple[list[int], list[list[int]]]]:
    rng = random.Random(seed)
    docs = []
    for _ in range(9):
        context = [rng.randrange(3, vocab) for _ in range(rng.randrange(1, 25))]
        choices = [[rng.randrange(3, vocab) for _ in range(rng.randrange(1, 6))] for _ in range(rng.randrange(1, 5))]
        docs.append((context, choices))
    docs.append(([5] * 36, [[6, 7, 8, 9, 10, 11], [12]]))  # 36 + 6 > MAX_LENGTH: lighteval's truncated row
    return docs


@pytest.mark.parametrize("path", scoring.KEEP_PATHS)
def test_every_path_equals_full_logits(tiny, forced, path):
    model, tokenizer = tiny
    if path == "native":
        scoring._KEEP_PATH_CACHE.pop(type(model), None)
        if scoring._keep_path(model) != "native":  # transformers < 5.21: the probe routes Llama to the hook
            pytest.skip(f"transformers {transformers.__version__} does not slice a 2-D logits_to_keep per row")
    scoring.FORCE_KEEP_PATH = path
    docs = random_docs(len(tokenizer))
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=3)
    for (context, choices), results in zip(docs, scored, strict=True):
        for continuation, result in zip(choices, results, strict=True):
            row = [*context, *continuation][-MAX_LENGTH:]
            cut = len(context) + len(continuation) - len(row)
            total, greedy, _ = direct(model, row[: len(context) - cut], row[len(context) - cut :])
            assert result.logprob == pytest.approx(total, rel=1e-6, abs=1e-6)
            assert result.greedy == greedy
    texts = [CORPUS[0], CORPUS[1] * 3, CORPUS[2][:9]]  # the second needs several windows of 16 tokens
    for (result, n_tokens), text in zip(
        scoring.score_texts(model, tokenizer, texts, max_length=16, batch_size=2, keep_tokens=True), texts, strict=True
    ):
        tokens = scoring.encode_text(tokenizer, text)
        assert n_tokens == len(tokens)
        expected = []
        for begin, end, first in scoring.rolling_windows(len(tokens), 16):
            sequence = [scoring.prefix_token_id(tokenizer), *tokens][begin : end + 1]
            expected += direct(model, sequence[: first - begin + 1], sequence[first - begin + 1 :])[2]
        assert result.token_logprobs == pytest.approx(expected, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("strategy", scoring.STRATEGIES)
def test_every_strategy_equals_full_logits(tiny, forced, strategy):
    """Packed rows (a 4-D float mask and explicit positions), shared caches and whole rows, each on this
    transformers' own mask handling and cache classes."""
    model, tokenizer = tiny
    if strategy == "packed":
        scoring._PACKS_CACHE.clear()
        assert scoring._packs(model), transformers.__version__  # a Llama takes a custom 4-D mask on every version
    scoring.FORCE_STRATEGY = strategy
    docs = random_docs(len(tokenizer), seed=1)
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=4)
    for (context, choices), results in zip(docs, scored, strict=True):
        for continuation, result in zip(choices, results, strict=True):
            row = [*context, *continuation][-MAX_LENGTH:]
            cut = len(context) + len(continuation) - len(row)
            total, greedy, _ = direct(model, row[: len(context) - cut], row[len(context) - cut :])
            assert result.logprob == pytest.approx(total, rel=1e-6, abs=1e-6)
            assert result.greedy == greedy


def test_probe_picks_a_cheap_path_for_llama(tiny, forced):
    model, _ = tiny
    scoring._KEEP_PATH_CACHE.clear()
    path = scoring._keep_path(model)
    # The full-logits path is the last resort; a Llama on any transformers the project allows slices per row
    # natively or through the gathering hook.
    assert path in ("native", "hook"), (transformers.__version__, path)
    assert scoring._KEEP_PATH_CACHE[type(model)] == path


class OldSlicingLlama(LlamaForCausalLM):
    """A Llama whose forward slices a tensor `logits_to_keep` as transformers 5.17 did: `hidden[:, index, :]`."""

    def forward(self, input_ids: Any = None, attention_mask: Any = None, logits_to_keep: Any = 0, **kwargs: Any) -> Any:
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        index = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        return transformers.modeling_outputs.CausalLMOutputWithPast(logits=self.lm_head(hidden[:, index, :]))


def test_old_slicing_is_detected_and_routed_to_the_hook(tiny, forced):
    model, _ = tiny
    old = OldSlicingLlama(model.config).eval()
    old.load_state_dict(model.state_dict())
    scoring._KEEP_PATH_CACHE.pop(OldSlicingLlama, None)
    with torch.inference_mode(), pytest.raises((IndexError, RuntimeError)):  # the crash the issue reports
        old(input_ids=torch.tensor([[4, 5, 6]] * 2), logits_to_keep=torch.tensor([[2], [7]]))
    assert scoring._keep_path(old) == "hook"
    rows: list[scoring.Row] = [([4, 9, 17, 30, 8, 11], 3), ([4, 22, 5], 1), ([4, 6, 7, 8, 9, 10, 11, 12, 13], 8)]
    got = scoring.score_rows(old, rows, batch_size=3, keep_tokens=True)
    for (tokens, n), result in zip(rows, got, strict=True):
        expected = direct(model, list(tokens[:-n]), list(tokens[-n:]))[2]
        assert result.token_logprobs == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_hook_refuses_an_unexpected_shape(tiny, forced):
    model, _ = tiny
    hook = scoring._gather_hook(torch.zeros((2, 1), dtype=torch.long), (2, 5))
    with pytest.raises(scoring.ScoringError, match="gathering hook"):
        hook(model.lm_head, (torch.zeros(2, 1, model.config.hidden_size),))


def test_weights_dtype_loads_bfloat16_weights_as_requested(tmp_path: Any) -> None:
    """`scoring.weights_dtype` names the keyword the installed transformers takes: weights saved in bfloat16 load
    as float32 and as bfloat16 on request. On 4.54 a bare `dtype=` is refused (the LongPPL teacher's crash)."""
    path = make_tiny_causal_lm(tmp_path / "tiny", CORPUS, vocab_size=160, layers=1, seed=5)
    bf16 = AutoModelForCausalLM.from_pretrained(path).to(torch.bfloat16)  # type: ignore[arg-type]  # .to typed as unbound
    bf16.save_pretrained(tmp_path / "bf16")
    for dtype in (torch.float32, torch.bfloat16):
        model = AutoModelForCausalLM.from_pretrained(tmp_path / "bf16", **scoring.weights_dtype(dtype))
        assert {parameter.dtype for parameter in model.parameters()} == {dtype}
    if scoring.weights_dtype(torch.float32) == {"torch_dtype": torch.float32}:
        with pytest.raises(TypeError, match="dtype"):
            AutoModelForCausalLM.from_pretrained(tmp_path / "bf16", dtype=torch.float32)
