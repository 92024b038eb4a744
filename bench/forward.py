"""The floor for evaluation time: plain batched forward passes over (context, continuation) pairs."""

from __future__ import annotations

import time
from pathlib import Path


def bare_forward_seconds(
    model_dir: Path, pairs: list[tuple[str, str]], batch_size: int, max_length: int | None = None, repeats: int = 2
) -> float:
    """Batched forward + log-softmax + gather of each continuation's log-probability (no lighteval code);
    longest sequences first, as lighteval batches; best of `repeats` after a warm-up."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    sequences = []
    for context, continuation in pairs:
        context_ids = tokenizer(context, add_special_tokens=True)["input_ids"]
        continuation_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"] or [tokenizer.eos_token_id]
        ids = context_ids + continuation_ids
        if max_length is not None:
            ids = ids[-max_length:]
        sequences.append((ids, len(ids) - len(continuation_ids), continuation_ids))
    sequences.sort(key=lambda item: -len(item[0]))
    batches = [sequences[i : i + batch_size] for i in range(0, len(sequences), batch_size)]

    def one_pass(selected: list[list[tuple[list[int], int, list[int]]]]) -> None:
        with torch.no_grad():
            for batch in selected:
                width = max(len(ids) for ids, _, _ in batch)
                input_ids = torch.full((len(batch), width), tokenizer.eos_token_id, dtype=torch.long)
                for row, (ids, _, _) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids)
                logprobs = torch.log_softmax(model(input_ids=input_ids).logits, dim=-1)
                for row, (_, n_context, continuation) in enumerate(batch):
                    positions = torch.arange(n_context - 1, n_context - 1 + len(continuation))
                    logprobs[row, positions, torch.tensor(continuation)].sum().item()

    one_pass(batches[:2])  # warm-up
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        one_pass(batches)
        timings.append(time.perf_counter() - start)
    return min(timings)
