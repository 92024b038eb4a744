"""Training tiny Llama causal LMs on the demo world's data mixes, with HF Trainer checkpoints.

One byte-level BPE tokenizer (`train_tokenizer`) is shared by every run, so the runs differ only in their data
mix and seed. `train_run` packs the mix's documents (`<s> doc </s>`, lines joined by newlines) into fixed-length
blocks and trains a small `LlamaForCausalLM` with `transformers.Trainer` on the CPU, saving standard
`checkpoint-<step>/` folders (weights, config, tokenizer, `trainer_state.json` with `num_input_tokens_seen`),
including an early one so the learning curves start near chance.

Defaults are sized for the embedded demo: 9 runs (3 mixes x 3 seeds), 2 at a time with 1 torch thread each, in
about 5 minutes on a 2-core machine. The learning rate stays constant after its warmup: with a decaying one the
last checkpoints freeze whatever order the seeds' luck gave runs of equal data, and the noise-ordered tasks would
look as consistent as the learnable ones. The demo's analysis configuration (finetasks_afr/data/demo_config.toml)
scales the FineTasks consistency threshold to these defaults' training length (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from finetasks_afr.demo.world import World, corpus_for_mix, read_documents

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
from finetasks_afr.demo.tiny import causal_tokenizer, save_steps, train_blocks, train_byte_level_bpe

TOKENIZER_DIR = "tokenizer"
VOCAB_SIZE = 1536
TOKENIZER_DOCS_PER_LANGUAGE = 4000


@dataclass(frozen=True)
class ModelShape:
    """The tiny Llama's shape (about 0.3M parameters with the default vocabulary)."""

    hidden_size: int = 64
    layers: int = 2
    heads: int = 2  # head size 32: with 4 heads of 16 the facts were learnt later and less reliably
    intermediate_size: int = 256
    max_position_embeddings: int = 512
    initializer_range: float = 0.02


DEFAULT_SHAPE = ModelShape()


def train_tokenizer(world: World, *, vocab_size: int = VOCAB_SIZE) -> Path:
    """Train (once, deterministically) the BPE shared by all runs and save it under `world.root/tokenizer`.

    Trained on an equal number of documents per language, so no mix's language gets a better tokenizer.
    """
    out = world.root / TOKENIZER_DIR
    texts: list[str] = []
    for language in world.languages:
        texts += read_documents(world.corpus_path(language))[:TOKENIZER_DOCS_PER_LANGUAGE]
    tokenizer = causal_tokenizer(train_byte_level_bpe(texts, vocab_size), DEFAULT_SHAPE.max_position_embeddings)
    tokenizer.save_pretrained(out)
    return out


def load_tokenizer(world: World) -> PreTrainedTokenizerBase:
    """The shared tokenizer (trained by `train_tokenizer`)."""
    from transformers import AutoTokenizer

    path = world.root / TOKENIZER_DIR
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"no tokenizer at {path}: call train_tokenizer(world) first")
    return AutoTokenizer.from_pretrained(str(path))


def pack_blocks(
    tokenizer: PreTrainedTokenizerBase, docs: Sequence[str], seq_len: int, n_blocks: int
) -> list[list[int]]:
    """`n_blocks` blocks of `seq_len` token ids from `<s> doc </s>` documents laid end to end (cycling if short)."""
    if not docs:
        raise ValueError("no documents to train on")
    encoded = tokenizer(list(docs), add_special_tokens=True)["input_ids"]  # prepends <s>
    stream: list[int] = []
    needed = seq_len * n_blocks
    while len(stream) < needed:
        for ids in encoded:
            stream += ids
            stream.append(tokenizer.eos_token_id)
            if len(stream) >= needed:
                break
    return [stream[i * seq_len : (i + 1) * seq_len] for i in range(n_blocks)]


def docs_needed(tokens: int, tokens_per_doc: float = 27.0) -> int:
    """How many documents give `tokens` tokens (documents average ~27 tokens with `<s>`/`</s>`; 10% margin)."""
    return int(tokens / tokens_per_doc * 1.1) + 100


def train_run(
    world: World,
    mix: str,
    seed: int,
    out_dir: Path,
    *,
    steps: int = 800,
    save_every: int = 100,
    first_save: int | None = 25,
    seq_len: int = 64,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    warmup_steps: int = 20,
    lr_scheduler: str = "constant_with_warmup",
    min_lr_rate: float = 0.1,  # for lr_scheduler="cosine_with_min_lr"
    shape: ModelShape | dict = DEFAULT_SHAPE,
    threads: int = 1,
    quiet: bool = False,
) -> Path:
    """Train one tiny Llama on `mix` (seeded) and write `out_dir/checkpoint-<step>/` folders; returns `out_dir`.

    Deterministic given (world, mix, seed, settings): the documents, their order, the initial weights and the
    batches all derive from `seed`. Checkpoints hold only the model (`save_only_model=True`), the tokenizer and
    `trainer_state.json`, whose `num_input_tokens_seen` counts the tokens trained on so far.
    """
    if mix not in world.mixes:
        raise KeyError(f"unknown mix {mix!r}; the world has {sorted(world.mixes)}")
    shape = ModelShape(**shape) if isinstance(shape, dict) else shape
    tokenizer = load_tokenizer(world)
    n_blocks = steps * batch_size
    docs = corpus_for_mix(world, mix, docs_needed(n_blocks * seq_len), seed)
    return train_blocks(
        pack_blocks(tokenizer, docs, seq_len, n_blocks),
        tokenizer,
        shape,
        Path(out_dir),
        seed=seed,
        steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_steps=warmup_steps,
        save_at=save_steps(steps, save_every, first_save),
        logging_steps=max(1, save_every),
        lr_scheduler=lr_scheduler,
        min_lr_rate=min_lr_rate,
        threads=threads,
        quiet=quiet,
    )
