"""KPPPL cost per sentence: the masked copies of a sentence in one batch vs one forward pass per copy.

Run: `python bench/bench_kpppl.py [--lengths 16,32,64,128] [--repeats 7] [--fractions 1.0,0.15] [--device cpu]`
(offline; about a minute on 2 cores).

A tiny BERT masked LM (`finetasks_afr.demo.tiny.make_tiny_masked_lm`, hidden 64, 2 layers, untrained: the cost does not
depend on the weights) is built in a temporary directory. For each sentence length (tokens between `<s>` and
`</s>`) and mask fraction, one synthetic sentence of exactly that many tokens is scored with
`finetasks_afr.perplexity.recommend.masked_token_logprobs`: `batched` runs the k masked copies through the model
together (up to `--batch-rows` per pass), `unbatched` runs one pass per copy. Each variant is timed `--repeats` times,
alternating, in the same process; the table shows the median seconds per sentence and the ratio
unbatched / batched (the speed-up of batching). Both variants return the same log-probabilities (checked here
too, to 1e-5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from finetasks_afr.demo.tiny import make_tiny_masked_lm  # noqa: E402
from finetasks_afr.perplexity import recommend as rec  # noqa: E402

WORDS = [
    "water", "fire", "river", "mountain", "city", "market", "school", "teacher", "child", "mother", "father",
    "bread", "rice", "maize", "goat", "cow", "rain", "sun", "moon", "star", "road", "car", "bus", "train", "book",
]  # fmt: skip


def sentence_ids(lm: rec.LoadedModel, n_tokens: int, seed: int = 0) -> list[int]:
    """`<s>` + exactly `n_tokens` content tokens + `</s>` (a long random text, cut at n_tokens tokens)."""
    rng = np.random.default_rng(seed)
    text = " ".join(rng.choice(WORDS, size=n_tokens))
    content = lm.tokenizer(text, add_special_tokens=False)["input_ids"][:n_tokens]
    assert len(content) == n_tokens, "the synthetic text is too short"
    return [lm.tokenizer.cls_token_id, *content, lm.tokenizer.sep_token_id]


def time_once(
    lm: rec.LoadedModel, ids: list[int], positions: list[int], batched: bool, rows: int
) -> tuple[float, np.ndarray]:
    """Seconds for one sentence's masked positions (the result comes back to the CPU, so CUDA is synchronised)."""
    start = time.perf_counter()
    log_probs = rec.masked_token_logprobs(
        lm.model, ids, positions, lm.tokenizer.mask_token_id, batched=batched, max_batch_rows=rows, device=lm.device
    )
    return time.perf_counter() - start, log_probs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16,32,64,128", help="content tokens per sentence")
    parser.add_argument("--fractions", default="1.0,0.15", help="mask fractions (1.0 = classic pseudo-perplexity)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    parser.add_argument("--batch-rows", type=int, default=64, help="masked copies per forward pass when batched")
    args = parser.parse_args(argv)
    lengths = [int(value) for value in args.lengths.split(",")]
    fractions = [float(value) for value in args.fractions.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        corpus = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))]
        model_dir = make_tiny_masked_lm(Path(tmp) / "mlm", corpus, vocab_size=320, max_position_embeddings=512)
        lm = rec.load_model(str(model_dir), device=args.device)
        import torch

        print(f"\nKPPPL on a tiny BERT (hidden 64, 2 layers, vocab {lm.model.config.vocab_size}) on {args.device}, "
              f"torch threads {torch.get_num_threads()}, median of {args.repeats}, seconds per sentence")  # fmt: skip
        header = f"{'tokens':>7}{'fraction':>10}{'k':>5}{'batched':>11}{'unbatched':>11}{'unbatched/batched':>19}"
        print(header)
        print("-" * len(header))
        for n_tokens in lengths:
            ids = sentence_ids(lm, n_tokens)
            for fraction in fractions:
                chosen = rec.mask_positions(n_tokens, fraction, seed=0, draw=0, index=0)
                positions = [int(p) + 1 for p in chosen]  # skip <s>
                time_once(lm, ids, positions, True, args.batch_rows)  # warm-up
                times: dict[bool, list[float]] = {True: [], False: []}
                outputs = {}
                for _ in range(args.repeats):
                    for batched in (True, False):
                        seconds, outputs[batched] = time_once(lm, ids, positions, batched, args.batch_rows)
                        times[batched].append(seconds)
                np.testing.assert_allclose(outputs[True], outputs[False], rtol=1e-5, atol=1e-6)
                fast, slow = statistics.median(times[True]), statistics.median(times[False])
                print(f"{n_tokens:>7}{fraction:>10g}{len(positions):>5}{fast:>11.4f}{slow:>11.4f}{slow / fast:>19.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
