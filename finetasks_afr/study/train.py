"""Training the study's tiny Llamas: one shared tokenizer, then one run per (mix, seed).

The tokenizer is a byte-level BPE over an equal amount of text per language, with an NFC + lower-casing
normaliser: the NCHLT training text is lower-cased, and the evaluation prompts (cased, punctuated) must map into
that same distribution. Each run packs its mix with `corpus.mix_blocks` and trains with the one training loop the
demo also uses (`tiny.train_blocks`): a constant learning rate after the warmup (as the demo, so the last
checkpoints do not freeze whichever order the seeds' luck gave) and a checkpoint every `sizes.save_every` steps.
A run counts as done only once its `DONE` file is written after the last checkpoint; anything else in its folder
is an interrupted run, removed and trained again.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finetasks_afr.demo.tiny import causal_tokenizer, save_steps, train_blocks, train_byte_level_bpe
from finetasks_afr.study.corpus import mix_blocks, read_corpus, tokenizer_texts
from finetasks_afr.study.design import LANGUAGES, MIXES, StudySizes

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

DONE = "DONE"
TOKENIZER_REPORT = "study_tokenizer.json"
SAMPLE_PARAGRAPHS = 500  # per language, for tokens per word
# What a run folder may hold besides its checkpoints (an interrupted run's leftovers); anything else is refused.
_RUN_LEFTOVERS = ("checkpoint-", "runs", DONE)


def tokens_per_word(
    tokenizer: PreTrainedTokenizerBase, paragraphs_by_language: Mapping[str, Sequence[str]], sample: int
) -> dict[str, float]:
    """Per language, tokens (without special tokens) per whitespace word over the last `sample` paragraphs."""
    ratios: dict[str, float] = {}
    for language, paragraphs in paragraphs_by_language.items():
        chosen = list(paragraphs[-sample:])
        ids = tokenizer(chosen, add_special_tokens=False, verbose=False)["input_ids"]
        words = sum(len(text.split()) for text in chosen)
        ratios[language] = round(sum(map(len, ids)) / max(words, 1), 3)
    return ratios


def train_study_tokenizer(
    shared_data: Path,
    out_dir: Path,
    vocab_size: int,
    *,
    max_position_embeddings: int = StudySizes().shape.max_position_embeddings,
    chars_per_language: int | None = None,
    quiet: bool = True,
) -> Path:
    """Train (once) the BPE every run shares and save it under `out_dir`; returns `out_dir`.

    Reused as it is when `out_dir/tokenizer.json` exists. Trained on `tokenizer_texts` (equal characters per
    language; by default as many as the smallest corpus holds). `out_dir/study_tokenizer.json` records the
    characters per language and the tokens per word measured on each corpus's last paragraphs.
    """
    from tokenizers import normalizers

    out_dir = Path(out_dir)
    if (out_dir / "tokenizer.json").is_file():
        return out_dir
    paragraphs = {language: read_corpus(shared_data, language) for language in LANGUAGES}
    texts = tokenizer_texts(paragraphs, chars_per_language)
    normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    corpus = [text for language in LANGUAGES for text in texts[language]]
    backend = train_byte_level_bpe(corpus, vocab_size, normalizer=normalizer)
    tokenizer = causal_tokenizer(backend, max_position_embeddings)
    report = {
        "vocab_size": vocab_size,
        "chars_per_language": {language: sum(map(len, texts[language])) for language in LANGUAGES},
        "tokens_per_word": tokens_per_word(tokenizer, paragraphs, SAMPLE_PARAGRAPHS),
    }
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    tokenizer.save_pretrained(staging)
    (staging / TOKENIZER_REPORT).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    staging.rename(out_dir)  # tokenizer.json appears only complete
    if not quiet:
        print(f"tokenizer {out_dir}: tokens per word {report['tokens_per_word']}")
    return out_dir


def _clear_interrupted(out_dir: Path) -> None:
    """Remove an interrupted run's folder (refusing one that holds anything a run does not write)."""
    if not out_dir.exists():
        return
    strangers = [p.name for p in out_dir.iterdir() if not p.name.startswith(_RUN_LEFTOVERS)]
    if strangers:
        raise FileExistsError(f"{out_dir} is not a study run folder (it holds {sorted(strangers)}); not removing it")
    shutil.rmtree(out_dir)


def train_study_run(
    tokenizer_dir: Path,
    shared_data: Path,
    mix: str,
    seed: int,
    out_dir: Path,
    sizes: StudySizes,
    threads: int = 1,
    quiet: bool = True,
    shares: Mapping[str, float] | None = None,
) -> Path:
    """Train one tiny Llama on `mix` (or, named `mix`, on `shares`: the pilot's mixes) with `seed`, writing
    `out_dir/checkpoint-<step>/` and then `out_dir/DONE`.

    A folder with `DONE` is returned untouched; one without it (an interrupted run) is removed and the run trained
    from scratch. Deterministic given the arguments. `DONE` holds the mix, seed, sizes, the per-language blocks,
    tokens and passes over each corpus (`corpus.MixStats`), and the seconds the run took.
    """
    from transformers import AutoTokenizer

    if shares is None and mix not in MIXES:
        raise KeyError(f"unknown mix {mix!r}; the study has {sorted(MIXES)}")
    steps = sizes.steps
    if steps * sizes.batch_size * sizes.seq_len != sizes.tokens_per_run:
        raise ValueError(
            f"tokens_per_run ({sizes.tokens_per_run}) must be a multiple of batch_size x seq_len "
            f"({sizes.batch_size} x {sizes.seq_len})"
        )
    out_dir = Path(out_dir)
    if (out_dir / DONE).is_file():
        return out_dir
    _clear_interrupted(out_dir)
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    mix_shares = MIXES[mix] if shares is None else shares
    paragraphs = {language: read_corpus(shared_data, language) for language, share in mix_shares.items() if share > 0}
    blocks, stats = mix_blocks(
        tokenizer, paragraphs, mix_shares, tokens=sizes.tokens_per_run, seq_len=sizes.seq_len, seed=seed
    )
    train_blocks(
        blocks,
        tokenizer,
        sizes.shape,
        out_dir,
        seed=seed,
        steps=steps,
        batch_size=sizes.batch_size,
        learning_rate=sizes.learning_rate,
        warmup_steps=sizes.warmup_steps,
        lr_scheduler=sizes.lr_scheduler,
        save_at=save_steps(steps, sizes.save_every, None),
        logging_steps=sizes.save_every,
        threads=threads,
        quiet=quiet,
    )
    done: dict[str, Any] = {
        "mix": mix,
        "seed": seed,
        "sizes": dataclasses.asdict(sizes),
        "blocks": stats.blocks,
        "tokens": stats.tokens,
        "epochs": {language: round(value, 4) for language, value in stats.epochs.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out_dir / (DONE + ".tmp")).write_text(json.dumps(done, indent=2) + "\n", encoding="utf-8")
    (out_dir / (DONE + ".tmp")).rename(out_dir / DONE)
    return out_dir
