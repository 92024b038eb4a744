"""Model recommendation by (pseudo-)perplexity (finetasks_afr.perplexity.recommend and its CLI), on tiny models built
here.

Proofs against independent computations: causal perplexity and bits per byte from a plain forward pass with a
hand-written log-softmax; the sliding window token by token; KPPPL at fraction 1 against a one-mask-per-forward
loop; the bootstrap against a loop over the same resampled indices. Then the end-to-end claim on real text: the
model trained on a language ranks first on that language's held-out sentences.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
import torch
import typer
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from typer.testing import CliRunner

from finetasks_afr.cli.recommend import recommend_command
from finetasks_afr.demo.tiny import make_tiny_causal_lm, make_tiny_masked_lm
from finetasks_afr.perplexity import recommend as rec

CORPUS = [
    "the river runs past the market and the school",
    "a child carries water from the river to the farm",
    "the teacher reads a letter to the village",
    "rain falls on the field and the goats run home",
    "the king and the queen dance to the drum",
    "bread and rice are sold at the market every day",
]
TEXTS = ["the child reads a letter at the school", "goats and cows drink water from the river every day"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")


@contextmanager
def one_thread() -> Iterator[None]:
    """Train tiny models on one thread: a second one only adds contention on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def masked_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with one_thread():
        return make_tiny_masked_lm(tmp_path_factory.mktemp("masked"), CORPUS, vocab_size=320, train_steps=10, seed=3)


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with one_thread():
        return make_tiny_causal_lm(tmp_path_factory.mktemp("causal"), CORPUS, vocab_size=320, train_steps=10, seed=4)


# ------------------------------------------------------------------------------------ causal: by hand


def _manual_target_logprobs(model: PreTrainedModel, ids: list[int]) -> torch.Tensor:
    """log P(ids[t] | ids[:t]) for t >= 1 from one forward pass, log-softmax written out."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    log_norm = logits.logsumexp(dim=-1, keepdim=True)
    log_probs = logits - log_norm
    return torch.stack([log_probs[t - 1, ids[t]] for t in range(1, len(ids))])


def test_causal_perplexity_and_bits_per_byte_by_hand(causal_dir: Path) -> None:
    lm = rec.load_model(str(causal_dir))
    assert lm.kind == rec.CAUSAL
    scores = rec.score_causal(lm, TEXTS, batch_size=2)  # both texts in one padded batch

    total_nll, total_tokens, total_bytes = 0.0, 0, 0
    for index, text in enumerate(TEXTS):
        ids = [lm.tokenizer.bos_token_id, *lm.tokenizer(text, add_special_tokens=False)["input_ids"]]
        sentence_nll = -float(_manual_target_logprobs(lm.model, ids).sum())
        assert scores.nll[index, 0] == pytest.approx(sentence_nll, rel=1e-5)
        assert scores.scored[index] == len(ids) - 1
        total_nll += sentence_nll
        total_tokens += len(ids) - 1
        total_bytes += len(text.encode("utf-8"))
    assert rec.corpus_score(scores, rec.PERPLEXITY) == pytest.approx(math.exp(total_nll / total_tokens), rel=1e-5)
    assert rec.corpus_score(scores, rec.BITS_PER_BYTE) == pytest.approx(total_nll / math.log(2) / total_bytes, rel=1e-5)


def test_causal_sliding_window_token_by_token(causal_dir: Path) -> None:
    lm = rec.load_model(str(causal_dir), max_length=8)
    text = " ".join(CORPUS[:2])
    ids = [lm.tokenizer.bos_token_id, *lm.tokenizer(text, add_special_tokens=False)["input_ids"]]
    assert len(ids) > 20
    scores = rec.score_causal(lm, [text], batch_size=3)
    assert scores.n_windowed == 1 and scores.scored[0] == len(ids) - 1

    # independently, the rule per token: text token i (= ids[i + 1]) sees [BOS] + text[:i] while i < 8; later
    # ones are scored in sliding windows of 8 inputs advancing by 4, ending at 8 + 4k (or the text's end)
    expected = 0.0
    n = len(ids) - 1
    for i in range(n):
        begin = 0 if i < 8 else min(8 + 4 * ((i - 8) // 4 + 1), n) - 8
        assert begin <= i < begin + 8
        expected -= float(_manual_target_logprobs(lm.model, ids[begin : i + 2])[-1])
    assert scores.nll[0, 0] == pytest.approx(expected, rel=1e-5)


# ------------------------------------------------------------------------------------- masked: by hand


def _independent_pppl_terms(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, text: str) -> list[float]:
    """log P(w_i | text with w_i masked) for every non-special position, one forward pass each."""
    ids = tokenizer(text)["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    terms = []
    for position in range(1, len(ids) - 1):
        masked = list(ids)
        masked[position] = tokenizer.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, position].double()
        terms.append(float(logits[ids[position]] - logits.logsumexp(dim=-1)))
    return terms


def test_kpppl_at_fraction_one_is_the_full_pseudo_perplexity(masked_dir: Path) -> None:
    lm = rec.load_model(str(masked_dir))
    assert lm.kind == rec.MASKED
    scores = rec.score_masked(lm, TEXTS, fraction=1.0, mask_draws=4)
    assert scores.draws == 1  # identical draws at fraction 1 are made once
    all_terms = []
    for index, text in enumerate(TEXTS):
        terms = _independent_pppl_terms(lm.model, lm.tokenizer, text)
        assert scores.scored[index] == scores.n_tokens[index] == len(terms)
        assert scores.nll[index, 0] == pytest.approx(-sum(terms), rel=1e-5)
        all_terms += terms
    # corpus KPPPL is token-weighted: exp(mean NLL over every masked position of every sentence)
    assert rec.corpus_score(scores, rec.KPPPL) == pytest.approx(math.exp(-np.mean(all_terms)), rel=1e-5)
    # at fraction 1 pseudo bits per byte is the total pseudo-log-likelihood per byte
    n_bytes = sum(len(text.encode()) for text in TEXTS)
    assert rec.corpus_score(scores, rec.PSEUDO_BITS_PER_BYTE) == pytest.approx(
        -sum(all_terms) / math.log(2) / n_bytes, rel=1e-5
    )


def test_mask_positions_count_and_seed() -> None:
    # k = ceil(0.15 * 20) = 3 (0.15 * 20 is 3.0000000000000004 in floating point: not 4)
    first = rec.mask_positions(20, 0.15, seed=0, draw=0, index=0)
    assert len(first) == 3 and len(set(first.tolist())) == 3 and list(first) == sorted(first)
    assert all(0 <= p < 20 for p in first)
    assert rec.n_masked(7, 0.15) == 2 and rec.n_masked(3, 0.01) == 1 and rec.n_masked(0, 0.5) == 0
    assert np.array_equal(first, rec.mask_positions(20, 0.15, seed=0, draw=0, index=0))
    other_seed = [rec.mask_positions(20, 0.15, seed=1, draw=0, index=i) for i in range(5)]
    same_seed = [rec.mask_positions(20, 0.15, seed=0, draw=0, index=i) for i in range(5)]
    assert any(not np.array_equal(a, b) for a, b in zip(other_seed, same_seed, strict=True))
    other_draw = [rec.mask_positions(20, 0.15, seed=0, draw=1, index=i) for i in range(5)]
    assert any(not np.array_equal(a, b) for a, b in zip(other_draw, same_seed, strict=True))
    assert np.array_equal(rec.mask_positions(5, 1.0, seed=9, draw=3, index=2), np.arange(5))


def test_kpppl_fraction_scores_exactly_the_drawn_positions(masked_dir: Path) -> None:
    lm = rec.load_model(str(masked_dir))
    fraction = 0.3
    scores = rec.score_masked(lm, TEXTS, fraction=fraction, mask_draws=2, seed=5)
    assert scores.nll.shape == (2, 2)
    for index, text in enumerate(TEXTS):
        terms = _independent_pppl_terms(lm.model, lm.tokenizer, text)  # term i = candidate position i
        k = math.ceil(fraction * len(terms))
        assert scores.scored[index] == k
        for draw in range(2):
            chosen = rec.mask_positions(len(terms), fraction, seed=5, draw=draw, index=index)
            assert len(chosen) == k
            assert scores.nll[index, draw] == pytest.approx(-sum(terms[i] for i in chosen), rel=1e-5)
    again = rec.score_masked(lm, TEXTS, fraction=fraction, mask_draws=2, seed=5)
    assert np.array_equal(again.nll, scores.nll)
    other = rec.score_masked(lm, TEXTS, fraction=fraction, mask_draws=2, seed=6)
    assert not np.array_equal(other.nll, scores.nll)


def test_batched_equals_unbatched(masked_dir: Path) -> None:
    lm = rec.load_model(str(masked_dir))
    ids = lm.tokenizer(TEXTS[1])["input_ids"]
    positions = list(range(1, len(ids) - 1))
    batched = rec.masked_token_logprobs(lm.model, ids, positions, lm.tokenizer.mask_token_id, max_batch_rows=3)
    single = rec.masked_token_logprobs(lm.model, ids, positions, lm.tokenizer.mask_token_id, batched=False)
    assert batched.shape == (len(positions),)
    np.testing.assert_allclose(batched, single, rtol=1e-5, atol=1e-6)
    whole = rec.score_masked(lm, TEXTS, fraction=0.5, batched=True, max_batch_rows=4)
    one_by_one = rec.score_masked(lm, TEXTS, fraction=0.5, batched=False)
    np.testing.assert_allclose(whole.nll, one_by_one.nll, rtol=1e-5)


def test_masked_truncation_is_counted(masked_dir: Path) -> None:
    lm = rec.load_model(str(masked_dir), max_length=6)
    scores = rec.score_masked(lm, TEXTS, fraction=1.0)
    assert scores.n_truncated == 2 and list(scores.n_tokens) == [4, 4]  # 6 minus <s> and </s>
    assert all(0 < b < len(t.encode()) for b, t in zip(scores.n_bytes, TEXTS, strict=True))


# ------------------------------------------------------------------------------- corpus scores, bootstrap


def test_corpus_scores_by_hand() -> None:
    scores = rec.SentenceScores(
        nll=np.array([[2.0], [4.0]]), scored=np.array([1, 3]), n_tokens=np.array([2, 3]), n_bytes=np.array([4, 4])
    )
    assert rec.corpus_score(scores, rec.KPPPL) == pytest.approx(math.exp(6 / 4))
    assert rec.corpus_score(scores, rec.PERPLEXITY) == pytest.approx(math.exp(6 / 4))
    assert rec.corpus_score(scores, rec.BITS_PER_BYTE) == pytest.approx(6 / math.log(2) / 8)
    # sentence 1: 2 nats on 1 of 2 tokens -> 4 for the sentence; sentence 2: all 3 tokens scored -> 4
    assert rec.corpus_score(scores, rec.PSEUDO_BITS_PER_BYTE) == pytest.approx(8 / math.log(2) / 8)
    two_draws = rec.SentenceScores(
        nll=np.array([[2.0, 4.0], [6.0, 8.0]]), scored=np.array([1, 2]), n_tokens=np.array([2, 2]), n_bytes=np.ones(2)
    )
    assert rec.corpus_score(two_draws, rec.KPPPL) == pytest.approx(math.exp(20 / 6))


def test_bootstrap_against_a_loop() -> None:
    rng = np.random.default_rng(0)
    n, draws, n_boot = 7, 3, 50
    family = [
        rec.SentenceScores(
            nll=rng.uniform(1, 9, size=(n, draws)),
            scored=rng.integers(1, 6, size=n),
            n_tokens=rng.integers(6, 9, size=n),
            n_bytes=rng.integers(10, 40, size=n),
        )
        for _ in range(2)
    ]
    for metric in (rec.KPPPL, rec.PSEUDO_BITS_PER_BYTE):
        replicates = rec.bootstrap_replicates(family, metric, n_boot, seed=11)
        # the same random stream, consumed as bootstrap_replicates does (one block here)
        stream = np.random.default_rng(11)
        rows = stream.integers(0, n, size=(n_boot, n))
        picks = stream.integers(0, draws, size=(n_boot, n, draws))
        for m, scores in enumerate(family):
            for b in range(n_boot):
                numerator = denominator = 0.0
                for i, row in enumerate(rows[b]):
                    for j in range(draws):
                        nll = scores.nll[row, picks[b, i, j]]
                        if metric == rec.KPPPL:
                            numerator += nll
                            denominator += scores.scored[row]
                        else:
                            numerator += nll * scores.n_tokens[row] / scores.scored[row]
                            denominator += scores.n_bytes[row]
                expected = (
                    math.exp(numerator / denominator) if metric == rec.KPPPL else numerator / denominator / math.log(2)
                )
                assert replicates[m, b] == pytest.approx(expected, rel=1e-12)


def test_interval_and_p_best_by_hand() -> None:
    assert rec.interval(np.arange(101.0)) == pytest.approx((2.5, 97.5))
    # replicate columns: (1 vs 2) -> model 0, (2 vs 1) -> model 1, (3 vs 4) -> model 0
    np.testing.assert_allclose(rec.p_best(np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 4.0]])), [2 / 3, 1 / 3])
    one = rec.SentenceScores(nll=np.array([[3.0]]), scored=np.array([2]), n_tokens=np.array([2]), n_bytes=np.array([5]))
    replicates = rec.bootstrap_replicates([one], rec.KPPPL, 20, seed=0)
    assert rec.interval(replicates[0]) == pytest.approx((math.exp(1.5), math.exp(1.5)))


# ------------------------------------------------------------------------------------- kinds, loading


def test_detect_kind() -> None:
    from transformers import BertConfig, LlamaConfig, T5Config

    assert rec.detect_kind(BertConfig(architectures=["BertForMaskedLM"])) == rec.MASKED
    assert rec.detect_kind(BertConfig()) == rec.MASKED
    assert rec.detect_kind(BertConfig(is_decoder=True)) == rec.CAUSAL
    assert rec.detect_kind(LlamaConfig(architectures=["LlamaForCausalLM"])) == rec.CAUSAL
    assert rec.detect_kind(LlamaConfig()) == rec.CAUSAL
    with pytest.raises(rec.RecommendError, match="encoder-decoder"):
        rec.detect_kind(T5Config())


def test_load_model_errors(tmp_path: Path, causal_dir: Path) -> None:
    with pytest.raises(rec.RecommendError, match="cannot load model"):
        rec.load_model(str(tmp_path))  # a directory without config.json
    with pytest.raises(rec.RecommendError, match=r"cannot load model .* AutoModelForMaskedLM"):
        rec.load_model(str(causal_dir), kind="masked")  # a Llama forced to be a masked LM
    assert rec.offline()


# ---------------------------------------------------------------------------------------- texts, output


def test_text_inputs(tmp_path: Path) -> None:
    path = tmp_path / "texts.txt"
    path.write_text("  one \n\n two\n   \nthree\n", encoding="utf-8")
    assert rec.read_text_file(path) == ["one", "two", "three"]
    texts = [f"t{i}" for i in range(50)]
    sample = rec.sample_texts(texts, 10, seed=3)
    assert len(sample) == 10 and sample == sorted(sample, key=texts.index)
    assert sample == rec.sample_texts(texts, 10, seed=3) != rec.sample_texts(texts, 10, seed=4)
    assert rec.parse_dataset_spec("sib200:hau_Latn") == ("sib200", "hau_Latn", "test")
    assert rec.parse_dataset_spec("belebele:zul_Latn:test") == ("belebele", "zul_Latn", "test")
    with pytest.raises(rec.RecommendError, match="DATASET:CONFIG"):
        rec.parse_dataset_spec("sib200")
    with pytest.raises(rec.RecommendError, match="no text field known for 'afrimmlu'"):
        rec.parse_dataset_spec("afrimmlu:hau")


@pytest.mark.shared_data
def test_dataset_texts_from_a_mirror(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.data.sources import DATA_DIR_ENV

    import_raw(shared_data, tmp_path / "mirror", datasets=["sib200", "belebele"], configs=["hau_Latn", "zul_Latn"])
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    raw_dev = (shared_data / "sib200" / "hau_Latn" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    expected = list(dict.fromkeys(line.split("\t")[2].strip() for line in raw_dev))
    assert rec.load_dataset_texts("sib200:hau_Latn:validation") == expected

    raw = [json.loads(line) for line in (shared_data / "bridging_the_gap" / "belebele" / "belebele_zu.jsonl").open()]
    passages = list(dict.fromkeys(row["flores_passage"].strip() for row in raw))
    assert len(passages) < len(raw)  # Belebele repeats a passage for each of its questions
    assert rec.load_dataset_texts("belebele:zul_Latn") == passages
    with pytest.raises(rec.RecommendError, match="cannot load sib200 config 'xxx_Latn'"):
        rec.load_dataset_texts("sib200:xxx_Latn")


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """test app"""

    app.command("recommend")(recommend_command)
    return app


@pytest.mark.slow
def test_cli_end_to_end(tmp_path: Path, masked_dir: Path, causal_dir: Path) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")
    reference = tmp_path / "ref.csv"
    reference.write_text("model,score\nother,0.9\nmlm,0.8\nclm,0.5\n", encoding="utf-8")
    out = tmp_path / "ranking.json"
    args = ["recommend", "-m", f"mlm={masked_dir}", "-m", f"clm={causal_dir}", "--file", str(texts)]
    args += ["--text", CORPUS[0], "--mask-draws", "2", "--bootstrap", "50", "--out", str(out)]
    result = CliRunner().invoke(_app(), [*args, "--reference", str(reference)])
    assert result.exit_code == 0, result.output
    assert "masked LMs ranked by kpppl" in result.output and "not comparable" in result.output
    document = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["model"]: row for row in document["models"]}
    assert rows["mlm"]["metric"] == "kpppl" and rows["clm"]["metric"] == "bits_per_byte"
    assert rows["mlm"]["rank"] == rows["clm"]["rank"] == 1 and rows["mlm"]["direction"] == "lower"
    for row in rows.values():
        assert row["n_sentences"] == 3 and 0 < row["ci_low"] <= row["ci_high"] and row["p_best"] == 1.0
    assert rows["mlm"]["mask_draws"] == 2 and rows["mlm"]["n_scored"] > 0 and rows["clm"]["perplexity"] > 1
    agreement = document["agreement"]["masked"]
    assert agreement["n_shared"] == 1 and agreement["reference_only"] == ["other", "clm"]

    csv_out = tmp_path / "ranking.csv"
    result = CliRunner().invoke(_app(), [*args[:-2], "--out", str(csv_out)])
    assert result.exit_code == 0, result.output
    assert csv_out.read_text(encoding="utf-8").splitlines()[0].startswith("model,source,kind,metric,score")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "no text to score"),
        (["--text", "a b", "--out", "x.txt"], "must end in .csv or .json"),
        (["--text", "a b", "--fraction", "0"], "mask fraction must lie in"),
        (["--text", "a b", "--texts", "nope:x"], "no text field known"),
        (["--text", "a b", "--reference", "missing.csv"], "cannot read reference file"),
    ],
)
def test_cli_errors(tmp_path: Path, masked_dir: Path, extra: list[str], message: str) -> None:
    extra = [str(tmp_path / e) if e.endswith((".txt", ".csv")) else e for e in extra]
    result = CliRunner().invoke(_app(), ["recommend", "-m", str(masked_dir), *extra])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


# ------------------------------------------------------------------ end to end on real text (SIB-200)

LANGS = ("hau_Latn", "yor_Latn")


def _sentences(shared_data: Path, lang: str, split: str) -> list[str]:
    lines = (shared_data / "sib200" / lang / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [line.split("\t")[2] for line in lines]


class _Shape(TypedDict):
    """The model shape the language models share (keyword arguments of both tiny-model builders)."""

    vocab_size: int
    hidden_size: int
    train_steps: int
    max_position_embeddings: int


@pytest.fixture(scope="module")
def language_models(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per language: a masked LM with a tokenizer shared by both languages, one with its own tokenizer, and a
    causal LM with its own tokenizer, each trained on that language's SIB-200 train sentences only."""
    root = tmp_path_factory.mktemp("language_models")
    both = _sentences(shared_data, LANGS[0], "train") + _sentences(shared_data, LANGS[1], "train")
    shape: _Shape = {"vocab_size": 384, "hidden_size": 32, "train_steps": 60, "max_position_embeddings": 256}
    with one_thread():
        models = {}
        for lang in LANGS:
            train = _sentences(shared_data, lang, "train")
            models[f"mlm-shared-{lang}"] = make_tiny_masked_lm(
                root / f"ms-{lang}", train, tokenizer_corpus=both, **shape
            )
            models[f"mlm-own-{lang}"] = make_tiny_masked_lm(root / f"mo-{lang}", train, **shape)
            models[f"clm-{lang}"] = make_tiny_causal_lm(root / f"c-{lang}", train, **shape)
        return models


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("lang", LANGS)
def test_the_model_trained_on_the_language_ranks_first(
    language_models: dict[str, Path], shared_data: Path, lang: str
) -> None:
    dev = _sentences(shared_data, lang, "dev")[:16]

    def best(prefix: str, masked_metric: str = rec.KPPPL) -> str:
        specs = [rec.ModelSpec(name, str(path)) for name, path in language_models.items() if name.startswith(prefix)]
        result = rec.recommend(specs, dev, rec.Settings(n_boot=100, masked_metric=masked_metric))
        assert {r.rank for r in result.results} == {1, 2}
        return next(r.model for r in result.results if r.rank == 1)

    assert best("mlm-shared-") == f"mlm-shared-{lang}"  # Koya's KPPPL, one tokenizer for both models
    assert best("mlm-own-", rec.PSEUDO_BITS_PER_BYTE) == f"mlm-own-{lang}"  # each model with its own tokenizer
    assert best("clm-") == f"clm-{lang}"  # bits per byte, each model with its own tokenizer
