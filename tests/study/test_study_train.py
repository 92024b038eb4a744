"""The study's training (issue 29): the real corpus, the shared tokenizer, the designed mixes and a real tiny run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from finetasks_afr.study.corpus import block_counts, mix_blocks, read_corpus, tokenizer_texts
from finetasks_afr.study.design import FILLER_FILES, LANGUAGES, MIXES, StudySizes, slice_sizes
from finetasks_afr.study.train import DONE, TOKENIZER_REPORT, train_study_run, train_study_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

CHARS = 100_000  # per language: a quick tokenizer on the real text


@pytest.fixture(scope="module")
def tokenizer_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("study") / "tokenizer"
    return train_study_tokenizer(shared_data, out, 1024, chars_per_language=CHARS)


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir: Path) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir))


@pytest.fixture(scope="module")
def paragraphs(shared_data: Path) -> dict[str, list[str]]:
    return {language: read_corpus(shared_data, language) for language in (*LANGUAGES, *FILLER_FILES)}


def test_the_shares_apportion_blocks_exactly_and_within_one_block() -> None:
    assert block_counts(MIXES["mix-N"], 12_800) == {
        "zul": 3840, "xho": 3840, "nso": 640, "tsn": 640, "som": 1280, "afr": 1280, "tso": 1280
    }  # fmt: skip
    assert block_counts(MIXES["mix-B"], 12_800) == {
        "zul": 1600, "xho": 1600, "nso": 1600, "tsn": 1600, "som": 1280, "afr": 2560, "tso": 2560
    }  # fmt: skip
    # 64 blocks: 19.2, 19.2, 3.2, 3.2, 6.4, 6.4, 6.4 -> floors 62; the two left go to the first of the tied largest
    # remainders (som and afr, before tso)
    assert block_counts(MIXES["mix-N"], 64) == {"zul": 19, "xho": 19, "nso": 3, "tsn": 3, "som": 7, "afr": 7, "tso": 6}
    for mix, shares in MIXES.items():
        for n in (1, 7, 64, 101, 12_800):
            counts = block_counts(shares, n)
            assert sum(counts.values()) == n, (mix, n)
            assert all(abs(counts[lang] - shares[lang] * n) < 1 for lang in shares), (mix, n, counts)
    with pytest.raises(ValueError, match="sum to 1"):
        block_counts({"zul": 0.5, "xho": 0.4}, 10)


@pytest.mark.slow
def test_a_mix_holds_its_designed_tokens_per_language(
    tokenizer: PreTrainedTokenizerBase, paragraphs: dict[str, list[str]]
) -> None:
    seq_len, tokens = 64, 64 * 100
    for mix, shares in MIXES.items():
        blocks, stats = mix_blocks(tokenizer, paragraphs, shares, tokens=tokens, seq_len=seq_len, seed=1)
        assert len(blocks) == 100 and all(len(block) == seq_len for block in blocks)
        assert stats.blocks == block_counts(shares, 100)
        assert stats.tokens == {language: count * seq_len for language, count in stats.blocks.items()}, mix
        assert sum(stats.tokens.values()) == tokens
        assert all(abs(stats.tokens[lang] - round(shares[lang] * tokens)) < seq_len for lang in shares)
        assert all(0 < stats.epochs[lang] < 1 for lang in shares)  # a small budget: part of one pass
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    flat = [token for block in blocks for token in block]
    assert flat.count(bos) > 0 and flat.count(eos) > 0
    again, _ = mix_blocks(tokenizer, paragraphs, MIXES["mix-S"], tokens=tokens, seq_len=seq_len, seed=1)
    other, _ = mix_blocks(tokenizer, paragraphs, MIXES["mix-S"], tokens=tokens, seq_len=seq_len, seed=2)
    assert again == blocks
    assert other != blocks


def test_a_budget_beyond_the_corpus_cycles_with_a_fresh_shuffle(tokenizer: PreTrainedTokenizerBase) -> None:
    few = {"zul": ["sawubona mngani wami", "ngiyabonga kakhulu", "unjani namuhla"]}
    blocks, stats = mix_blocks(tokenizer, few, {"zul": 1.0}, tokens=8 * 16, seq_len=16, seed=3)
    assert stats.tokens == {"zul": 128} and stats.epochs["zul"] > 2
    assert len(blocks) == 8 and all(len(block) == 16 for block in blocks)


def test_the_tokenizer_lower_cases_and_is_trained_on_equal_text(
    tokenizer: PreTrainedTokenizerBase, tokenizer_dir: Path, paragraphs: dict[str, list[str]]
) -> None:
    assert tokenizer("Sawubona Mngani")["input_ids"] == tokenizer("sawubona mngani")["input_ids"]
    assert tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == ("<s>", "</s>", "<pad>")
    report = json.loads((tokenizer_dir / TOKENIZER_REPORT).read_text())
    assert report["chars_per_language"] == dict.fromkeys(LANGUAGES, CHARS)
    assert set(report["tokens_per_word"]) == set(LANGUAGES)

    studied = {language: paragraphs[language] for language in LANGUAGES}  # the tokenizer never sees the filler
    texts = tokenizer_texts(studied)
    smallest = min(sum(map(len, p)) for p in studied.values())
    assert {language: sum(map(len, t)) for language, t in texts.items()} == dict.fromkeys(LANGUAGES, smallest)
    assert tokenizer_texts(studied, 5000) == tokenizer_texts(studied, 5000)
    assert tokenizer_texts(studied, 5000, seed=1) != tokenizer_texts(studied, 5000)
    with pytest.raises(ValueError, match="characters"):
        tokenizer_texts(studied, smallest + 1)
    # idempotent: an existing tokenizer is reused, not retrained
    stamp = (tokenizer_dir / "tokenizer.json").stat().st_mtime_ns
    assert train_study_tokenizer(Path("/nonexistent"), tokenizer_dir, 1024) == tokenizer_dir
    assert (tokenizer_dir / "tokenizer.json").stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_a_tiny_run_writes_checkpoints_then_done_and_an_interrupted_one_is_redone(
    tokenizer_dir: Path, shared_data: Path, tmp_path: Path
) -> None:
    sizes = slice_sizes()
    out = tmp_path / "mix-N-1"
    (out / "checkpoint-999").mkdir(parents=True)  # an interrupted run's stray checkpoint
    (out / "checkpoint-999" / "trainer_state.json").write_text("{}")
    train_study_run(tokenizer_dir, shared_data, "mix-N", 1, out, sizes)
    steps = sizes.steps
    expected = [f"checkpoint-{step}" for step in range(sizes.save_every, steps + 1, sizes.save_every)]
    assert {p.name for p in out.glob("checkpoint-*")} == set(expected)
    for name in expected:
        state = json.loads((out / name / "trainer_state.json").read_text())
        step = state["global_step"]
        assert name == f"checkpoint-{step}"
        assert state["num_input_tokens_seen"] == step * sizes.batch_size * sizes.seq_len
        assert (out / name / "model.safetensors").is_file() and (out / name / "tokenizer.json").is_file()
    done = json.loads((out / DONE).read_text())
    assert (done["mix"], done["seed"]) == ("mix-N", 1)
    assert done["sizes"]["tokens_per_run"] == sizes.tokens_per_run
    assert done["tokens"] == {lang: count * sizes.seq_len for lang, count in done["blocks"].items()}
    assert sum(done["tokens"].values()) == sizes.tokens_per_run

    # done: returned untouched
    stamp = (out / DONE).stat().st_mtime_ns
    train_study_run(tokenizer_dir, shared_data, "mix-N", 1, out, sizes)
    assert (out / DONE).stat().st_mtime_ns == stamp

    # interrupted after its last checkpoint (no DONE): cleaned and trained again, to the same weights
    from safetensors.torch import load_file

    last = out / expected[-1] / "model.safetensors"
    before = load_file(last)
    (out / DONE).unlink()
    shutil.rmtree(out / expected[0])
    train_study_run(tokenizer_dir, shared_data, "mix-N", 1, out, sizes)
    assert {p.name for p in out.glob("checkpoint-*")} == set(expected) and (out / DONE).is_file()
    after = load_file(last)
    assert before.keys() == after.keys() and all((before[k] == after[k]).all() for k in before)


def test_a_folder_that_is_not_a_run_is_not_removed(tokenizer_dir: Path, shared_data: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a study run folder"):
        train_study_run(tokenizer_dir, shared_data, "mix-N", 1, tmp_path, slice_sizes())
    assert (tmp_path / "notes.txt").is_file()


def test_a_missing_corpus_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"corpus/somwiki/som\.txt.*FINETASKS_AFR_SHARED_DATA.*--shared-data"):
        read_corpus(tmp_path, "som")


def test_the_default_sizes_fit_their_budget() -> None:
    sizes = StudySizes()
    assert sizes.steps * sizes.batch_size * sizes.seq_len == sizes.tokens_per_run
