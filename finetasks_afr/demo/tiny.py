"""Tiny, fully offline causal language models for end-to-end tests, benchmarks and demos.

`make_tiny_causal_lm` trains a byte-level BPE tokenizer on a small corpus with the `tokenizers` library, wraps it
as a `transformers.PreTrainedTokenizerFast` (bos `<s>`, eos `</s>`, pad `<pad>`; encoding with special tokens
prepends `<s>`, like Llama), builds a seeded, randomly initialised `LlamaForCausalLM`, optionally trains it for a
few plain next-token steps on the corpus (so that two models differ in more than their seed), and saves both with
`save_pretrained` into one directory. The directory loads with `AutoTokenizer` / `AutoModelForCausalLM` and
with lighteval's `TransformersModelConfig(model_name=<dir>, device="cpu", max_length=...)`.

Nothing touches the network, and the same arguments give the same tokenizer and the same weights.

`train_blocks` is the one `transformers.Trainer` loop (seeded `tiny_llama`, checkpoints at chosen steps) that the
demo's and the study's runs share, so the two cannot drift apart.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # heavy imports, only for the annotations; the functions import them when called
    import torch
    from tokenizers import Tokenizer
    from tokenizers.normalizers import Normalizer
    from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase, PreTrainedTokenizerFast

BOS, EOS, PAD = "<s>", "</s>", "<pad>"
SPECIAL_TOKENS = [PAD, BOS, EOS]  # ids 0, 1, 2


def _trained_bpe(
    corpus: Sequence[str], vocab_size: int, special_tokens: list[str], normalizer: Normalizer | None = None
) -> Tokenizer:
    """A byte-level BPE `tokenizers.Tokenizer` trained on `corpus` (no post-processor yet).

    A `normalizer` (e.g. NFC + Lowercase) is applied before training and before every encoding.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(corpus), trainer=trainer)
    return tokenizer


def train_byte_level_bpe(corpus: Sequence[str], vocab_size: int, *, normalizer: Normalizer | None = None) -> Tokenizer:
    """A byte-level BPE `tokenizers.Tokenizer` trained on `corpus`; its post-processor prepends `<s>`."""
    from tokenizers import processors

    tokenizer = _trained_bpe(corpus, vocab_size, SPECIAL_TOKENS, normalizer)
    bos_id = tokenizer.token_to_id(BOS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, bos_id)]
    )
    return tokenizer


def causal_tokenizer(backend: Tokenizer, max_length: int) -> PreTrainedTokenizerFast:
    """`backend` (from `train_byte_level_bpe`) as the transformers tokenizer of a tiny causal LM: bos `<s>`, eos
    `</s>`, pad `<pad>`, `model_max_length` = `max_length`, decoding without clean-up of spaces."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        model_max_length=max_length,
        clean_up_tokenization_spaces=False,
    )


class LlamaShape(Protocol):
    """What `tiny_llama` needs of a model shape (the demo's and the study's `ModelShape` both fit)."""

    @property
    def hidden_size(self) -> int: ...
    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def intermediate_size(self) -> int: ...
    @property
    def max_position_embeddings(self) -> int: ...
    @property
    def initializer_range(self) -> float: ...


@dataclass(frozen=True)
class TinyShape:
    """A `LlamaShape` given field by field, as `make_tiny_causal_lm`'s arguments describe it."""

    hidden_size: int
    layers: int
    heads: int
    intermediate_size: int
    max_position_embeddings: int
    initializer_range: float = 0.02  # LlamaConfig's default


def tiny_llama(tokenizer: PreTrainedTokenizerBase, shape: LlamaShape, seed: int) -> LlamaForCausalLM:
    """A randomly initialised `LlamaForCausalLM` of `shape` over `tokenizer`'s vocabulary, seeded by `seed`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        max_position_embeddings=shape.max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        initializer_range=shape.initializer_range,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


class _BlockDataset:
    """Packed blocks as a map-style dataset of {input_ids, labels} tensors (what the default collator stacks)."""

    def __init__(self, blocks: list[list[int]]) -> None:
        import torch

        self.data = torch.tensor(blocks, dtype=torch.long)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> dict:
        ids = self.data[index]
        return {"input_ids": ids, "labels": ids}


def save_steps(steps: int, save_every: int, first_save: int | None) -> list[int]:
    """The steps with a checkpoint: every `save_every`, the last step, and an early `first_save`."""
    chosen = set(range(save_every, steps + 1, save_every)) | {steps}
    if first_save:
        chosen.add(min(first_save, steps))
    return sorted(chosen)


def train_blocks(
    blocks: list[list[int]],
    tokenizer: PreTrainedTokenizerBase,
    shape: LlamaShape,
    out_dir: Path,
    *,
    seed: int,
    steps: int,
    batch_size: int,
    learning_rate: float,
    warmup_steps: int,
    save_at: Iterable[int],
    logging_steps: int,
    lr_scheduler: str = "constant_with_warmup",
    min_lr_rate: float = 0.1,  # for lr_scheduler="cosine_with_min_lr"
    threads: int = 1,
    quiet: bool = False,
) -> Path:
    """Train a seeded `tiny_llama` on packed `blocks` with `transformers.Trainer` on the CPU; returns `out_dir`.

    The one training loop of the demo and the study: standard `out_dir/checkpoint-<step>/` folders at exactly the
    `save_at` steps, holding only the model (`save_only_model=True`), the tokenizer and `trainer_state.json`, whose
    `num_input_tokens_seen` counts the tokens trained on so far. Deterministic given its arguments: the initial
    weights and the batch order derive from `seed`.
    """
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed

    torch.set_num_threads(threads)
    dataset = _BlockDataset(blocks)
    set_seed(seed)
    model = tiny_llama(tokenizer, shape, seed)
    wanted = set(save_at)

    class SaveAt(TrainerCallback):
        """Checkpoints exactly at the chosen steps (uneven spacing allowed)."""

        def on_step_end(self, args, state, control, **kwargs):
            control.should_save = state.global_step in wanted
            return control

    args = TrainingArguments(
        output_dir=str(out_dir),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_steps=warmup_steps,
        lr_scheduler_type=lr_scheduler,
        lr_scheduler_kwargs={"min_lr_rate": min_lr_rate} if lr_scheduler == "cosine_with_min_lr" else {},
        weight_decay=0.01,
        save_strategy="no",  # the callback decides
        save_only_model=True,
        logging_strategy="steps",
        logging_steps=logging_steps,
        report_to=[],
        include_num_input_tokens_seen="all",
        seed=seed,
        data_seed=seed,
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[SaveAt()],
    )
    if quiet:  # the loss stays in trainer_state.json's log_history; only the console printing goes
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
    with torch.enable_grad():  # importing lighteval's transformers backend switches gradients off process-wide
        trainer.train()
    return Path(out_dir)


def _training_batches(
    token_ids: list[int], seq_len: int, batch_size: int, steps: int, seed: int
) -> Iterator[torch.Tensor]:
    import torch

    if len(token_ids) < seq_len + 1:
        repeats = (seq_len + 1) // max(len(token_ids), 1) + 1
        token_ids = token_ids * repeats
    starts = list(range(0, len(token_ids) - seq_len, max(seq_len // 2, 1))) or [0]
    rng = random.Random(seed)
    for _ in range(steps):
        chosen = [rng.choice(starts) for _ in range(batch_size)]
        yield torch.tensor([token_ids[s : s + seq_len] for s in chosen], dtype=torch.long)


def _fit(
    model: PreTrainedModel,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    *,
    seed: int,
    learning_rate: float,
) -> None:
    """AdamW over `(input_ids, labels)` batches, under a torch seed of its own (the caller's RNG state is kept)."""
    import torch

    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    with torch.enable_grad():
        for inputs, labels in batches:
            loss = model(input_ids=inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    torch.random.set_rng_state(generator_state)


def make_tiny_causal_lm(
    out_dir: Path,
    corpus: Sequence[str],
    *,
    vocab_size: int = 512,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 2,
    max_position_embeddings: int = 512,
    seed: int = 0,
    train_steps: int = 0,
    train_seq_len: int = 64,
    train_batch_size: int = 8,
    learning_rate: float = 3e-3,
) -> Path:
    """Build (and optionally train) a tiny Llama with its own BPE tokenizer and save both into `out_dir`.

    Args:
        out_dir: where `save_pretrained` writes tokenizer and model (created if needed).
        corpus: texts to train the tokenizer on (and the model, when `train_steps > 0`).
        vocab_size: BPE vocabulary size (the special tokens included); a small corpus may give fewer.
        hidden_size, layers, heads, max_position_embeddings: the `LlamaConfig` shape.
        seed: seeds the weight initialisation and the training batches.
        train_steps: steps of plain next-token training (AdamW) on the concatenated corpus; 0 keeps the
            random initialisation.
        train_seq_len, train_batch_size, learning_rate: the training set-up.

    Returns:
        `out_dir`, for `TransformersModelConfig(model_name=str(out_dir), ...)`.
    """
    if not corpus:
        raise ValueError("corpus must hold at least one text")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    tokenizer = causal_tokenizer(train_byte_level_bpe(corpus, vocab_size), max_position_embeddings)
    model = tiny_llama(tokenizer, TinyShape(hidden_size, layers, heads, hidden_size * 4, max_position_embeddings), seed)

    if train_steps > 0:
        token_ids: list[int] = []
        for text in corpus:
            token_ids.extend(tokenizer(text, add_special_tokens=True)["input_ids"])
            token_ids.append(tokenizer.eos_token_id)
        seq_len = min(train_seq_len, max_position_embeddings)
        batches = _training_batches(token_ids, seq_len, train_batch_size, train_steps, seed)
        _fit(model, ((batch, batch) for batch in batches), seed=seed, learning_rate=learning_rate)
    model.eval()

    tokenizer.save_pretrained(out_dir)
    model.save_pretrained(out_dir)
    return out_dir


MASK = "<mask>"
MASKED_SPECIAL_TOKENS = [PAD, BOS, EOS, MASK]  # ids 0, 1, 2, 3


def train_masked_byte_level_bpe(corpus: Sequence[str], vocab_size: int) -> Tokenizer:
    """A byte-level BPE `tokenizers.Tokenizer` for a BERT-style masked LM: `<s> text </s>`, with a `<mask>` token
    (RoBERTa's conventions: `<s>` is the classifier token, `</s>` the separator)."""
    from tokenizers import processors

    tokenizer = _trained_bpe(corpus, vocab_size, MASKED_SPECIAL_TOKENS)
    bos_id, eos_id = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A {EOS}", pair=f"{BOS} $A {EOS} $B {EOS}", special_tokens=[(BOS, bos_id), (EOS, eos_id)]
    )
    return tokenizer


def _mlm_batches(
    token_ids: list[int], *, seq_len: int, batch_size: int, steps: int, seed: int, special: tuple[int, int, int]
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(input_ids, labels) batches of `<s> chunk </s>` with 15% of the chunk masked (80% `<mask>`, 10% random
    token, 10% unchanged, as BERT); labels are -100 everywhere else."""
    import torch

    bos_id, eos_id, mask_id = special
    generator = torch.Generator().manual_seed(seed)
    for chunk in _training_batches(token_ids, seq_len - 2, batch_size, steps, seed):
        labels = chunk.clone()
        chosen = torch.rand(chunk.shape, generator=generator) < 0.15
        chosen[:, 0] |= ~chosen.any(dim=1)  # at least one prediction per row
        labels[~chosen] = -100
        inputs = chunk.clone()
        roll = torch.rand(chunk.shape, generator=generator)
        inputs[chosen & (roll < 0.8)] = mask_id
        random_tokens = torch.randint(mask_id + 1, int(chunk.max()) + 1, chunk.shape, generator=generator)
        swap = chosen & (roll >= 0.8) & (roll < 0.9)
        inputs[swap] = random_tokens[swap]
        column = torch.full((chunk.shape[0], 1), -100, dtype=torch.long)
        yield (
            torch.cat([torch.full_like(column, bos_id), inputs, torch.full_like(column, eos_id)], dim=1),
            torch.cat([column, labels, column], dim=1),
        )


def make_tiny_masked_lm(
    out_dir: Path,
    corpus: Sequence[str],
    *,
    vocab_size: int = 512,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 2,
    max_position_embeddings: int = 128,
    seed: int = 0,
    train_steps: int = 0,
    train_seq_len: int = 64,
    train_batch_size: int = 16,
    learning_rate: float = 3e-3,
    tokenizer_corpus: Sequence[str] | None = None,
) -> Path:
    """Build (and optionally train with masked-LM steps) a tiny `BertForMaskedLM` with its own byte-level BPE
    tokenizer (`<s> ... </s>`, `<mask>`), saved with `save_pretrained` into `out_dir`.

    The counterpart of `make_tiny_causal_lm` for pseudo-perplexity tests: the directory loads with `AutoTokenizer`
    / `AutoModelForMaskedLM`, nothing touches the network, and the same arguments give the same weights.
    `train_steps > 0` runs BERT-style masking (15%; 80/10/10) on chunks of the concatenated corpus.
    `tokenizer_corpus` (default: `corpus`) trains the tokenizer: give two models the same one to share a
    vocabulary (pseudo-perplexities of models with different tokenizers are not comparable).
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    if not corpus:
        raise ValueError("corpus must hold at least one text")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    backend = train_masked_byte_level_bpe(corpus if tokenizer_corpus is None else tokenizer_corpus, vocab_size)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        cls_token=BOS,
        sep_token=EOS,
        pad_token=PAD,
        mask_token=MASK,
        model_max_length=max_position_embeddings,
        clean_up_tokenization_spaces=False,
    )
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        max_position_embeddings=max_position_embeddings,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)

    if train_steps > 0:
        token_ids: list[int] = []
        for text in corpus:
            token_ids.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
        special = (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.mask_token_id)
        seq_len = min(train_seq_len, max_position_embeddings)
        batches = _mlm_batches(
            token_ids, seq_len=seq_len, batch_size=train_batch_size, steps=train_steps, seed=seed, special=special
        )
        _fit(model, batches, seed=seed, learning_rate=learning_rate)
    model.eval()

    tokenizer.save_pretrained(out_dir)
    model.save_pretrained(out_dir)
    return out_dir
