"""PMI scoring cost: lighteval 0.13 + finetasks_afr.scoring.compat on an MCF task, with and without the dedup.

Run: `python bench/bench_pmi.py [--docs 256] [--batch-size 64] [--repeats 3]` (offline; 1-2 minutes on 2 cores).

A tiny Llama (finetasks_afr.demo.tiny) and N synthetic letter-answer (MCF) documents that all share the
unconditioned query "Answer:" and the choices " A", " B", " C", " D". Each variant is one `Pipeline.evaluate()`
with a fresh prediction cache, in rounds (times: the best round; the machine is shared, wall times are noisy):

- `stock acc,acc_norm`: lighteval as released, the two metrics that still run (baseline);
- `fixed, dedup`: `compat.apply()`, the four metrics acc, acc_norm, acc_norm_token, acc_norm_pmi;
- `fixed, no dedup`: the same, one unconditioned request per document (`compat.UNCONDITIONED_DEDUP = False`).

Columns: continuations scored (conditioned / unconditioned), calls to `_loglikelihood_tokens`, the time spent
inside it (model: tokenising, batching, forward), and the wall time of `evaluate()` (model + metrics + the
prediction cache, which lighteval writes to parquet and reads back). `bare forward` is the time of plain batched
forward passes + log-softmax + gather on the same token sequences (no lighteval), as the floor.

The dedup must not change a score: the run fails (exit 1) when the two fixed variants' scores differ, so the
small slice `make bench-smoke` runs in CI (`--docs 32 --repeats 1`) guards that.

The built-in task registry is replaced by the custom task alone (it downloads a file at import when offline and
costs ~10 s); that happens before the timed part.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
import types
from pathlib import Path
from unittest import mock

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.forward import bare_forward_seconds  # noqa: E402
from bench.probe_tasks import probe_task_module  # noqa: E402
from finetasks_afr.scoring.lighteval_runtime import clear_prediction_cache, custom_tasks_only  # noqa: E402

LETTERS = [" A", " B", " C", " D"]
UNCONDITIONED = "Answer:"
WORDS = [
    "water", "fire", "river", "mountain", "city", "market", "school", "teacher", "child", "mother", "father",
    "bread", "rice", "maize", "goat", "cow", "rain", "sun", "moon", "star", "road", "car", "bus", "train", "book",
    "letter", "song", "drum", "dance", "king", "queen", "village", "farm", "field", "tree",
]  # fmt: skip
TASK = "bench_pmi_mcf"


def make_docs(n_docs: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for index in range(n_docs):
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12)))
        options = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in LETTERS]
        lines = [f"Question {index}: {question.capitalize()}?"]
        lines += [f"{letter.strip()}. {option}" for letter, option in zip(LETTERS, options, strict=True)]
        docs.append(
            {
                "query": "\n".join([*lines, UNCONDITIONED]),
                "choices": LETTERS,
                "gold": rng.randrange(len(LETTERS)),
                "uq": UNCONDITIONED,
            }
        )
    return docs


def write_dataset(parent: Path, docs: list[dict]) -> Path:
    """A local dataset directory named after its content: `datasets` caches local directories under their
    basename (not their content or path), so a reused name would serve stale rows."""
    lines = "".join(json.dumps(doc) + "\n" for doc in docs)
    root = parent / f"bench_pmi_{hashlib.sha256(lines.encode()).hexdigest()[:16]}"
    root.mkdir(parents=True, exist_ok=True)
    (root / "test.jsonl").write_text(lines, encoding="utf-8")
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: test.jsonl\n---\n"
    )
    return root


def task_module(data_dir: Path, metric_names: tuple[str, ...]) -> types.ModuleType:
    return probe_task_module(data_dir, TASK, metric_names, "bench_pmi_tasks")


def run_variant(
    model_dir: Path, data_dir: Path, out_dir: Path, metric_names: tuple[str, ...], batch_size: int, max_length: int
) -> tuple[list[tuple[int, int, float]], float, dict[str, float]]:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    clear_prediction_cache(model_dir)

    calls: list[tuple[int, int, float]] = []  # (documents, continuations, seconds)
    original = TransformersModel._loglikelihood_tokens

    def timed(self, docs, *args, **kwargs):
        start = time.perf_counter()
        result = original(self, docs, *args, **kwargs)
        calls.append((len(docs), sum(len(doc.choices) for doc in docs), time.perf_counter() - start))
        return result

    with (
        custom_tasks_only(),
        mock.patch.object(TransformersModel, "_loglikelihood_tokens", timed),
    ):
        pipeline = Pipeline(
            tasks=f"{TASK}|0",
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                # declared str | None; lighteval's Registry takes a module too
                custom_tasks_directory=task_module(data_dir, metric_names),  # type: ignore[arg-type]
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(out_dir), save_details=False),
            model_config=TransformersModelConfig(
                model_name=str(model_dir), device="cpu", batch_size=batch_size, max_length=max_length
            ),
        )
        start = time.perf_counter()
        pipeline.evaluate()
        wall = time.perf_counter() - start
    results = pipeline.get_results()["results"][f"{TASK}:0"]
    return calls, wall, {name: float(results[name]) for name in metric_names}


def bare_pairs(docs: list[dict], dedup: bool) -> list[tuple[str, str]]:
    """The (context, continuation) pairs lighteval scores: every choice, then the unconditioned ones."""
    pairs = [(doc["query"], choice) for doc in docs for choice in doc["choices"]]
    unconditioned = [(doc["uq"], choice) for doc in docs for choice in doc["choices"]]
    return pairs + (list(dict.fromkeys(unconditioned)) if dedup else unconditioned)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64, help="lighteval batch_size (continuations)")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the variants; times are the best round")
    args = parser.parse_args(argv)

    import logging

    logging.disable(logging.WARNING)

    from finetasks_afr.demo.tiny import make_tiny_causal_lm
    from finetasks_afr.scoring import compat

    docs = make_docs(args.docs)
    four = ("acc", "acc_norm", "acc_norm_token", "acc_norm_pmi")
    variants = [
        ("stock acc,acc_norm", False, True, ("acc", "acc_norm")),
        ("fixed, dedup", True, True, four),
        ("fixed, no dedup", True, False, four),
    ]
    best: dict[str, list] = {}
    was_applied = compat.applied()
    with tempfile.TemporaryDirectory(prefix="bench_pmi_") as tmp:
        root = Path(tmp)
        corpus = [doc["query"] + doc["choices"][doc["gold"]] for doc in docs[:200]]
        model_dir = make_tiny_causal_lm(
            root / "model", corpus, vocab_size=512, hidden_size=64, layers=2, heads=2,
            max_position_embeddings=args.max_length, seed=0, train_steps=20,
        )  # fmt: skip
        data_dir = write_dataset(root / "data", docs)
        # Untimed warm-up (first dataset load, first forward passes) on a few documents.
        warm_dir = write_dataset(root / "warm", docs[:16])
        compat.restore()
        run_variant(model_dir, warm_dir, root / "out_warm", ("acc",), args.batch_size, args.max_length)
        bare_dedup = bare_naive = float("inf")
        for round_ in range(args.repeats):
            for label, fixed, dedup, metric_names in variants:
                compat.restore()
                if fixed:
                    compat.apply()
                compat.UNCONDITIONED_DEDUP = dedup
                try:
                    calls, wall, scores = run_variant(
                        model_dir, data_dir, root / f"out_{round_}_{label}", metric_names, args.batch_size,
                        args.max_length,
                    )  # fmt: skip
                finally:
                    compat.restore()
                    compat.UNCONDITIONED_DEDUP = True
                row = [
                    calls[0][1],
                    sum(continuations for _, continuations, _ in calls[1:]),
                    len(calls),
                    sum(seconds for *_, seconds in calls),
                    wall,
                    scores,
                ]
                if label in best:
                    row[3], row[4] = min(row[3], best[label][3]), min(row[4], best[label][4])
                best[label] = row
            pairs_dedup, pairs_naive = bare_pairs(docs, True), bare_pairs(docs, False)
            bare_dedup = min(bare_forward_seconds(model_dir, pairs_dedup, args.batch_size, repeats=1), bare_dedup)
            bare_naive = min(bare_forward_seconds(model_dir, pairs_naive, args.batch_size, repeats=1), bare_naive)
            n_dedup, n_naive = len(pairs_dedup), len(pairs_naive)
    if was_applied:
        compat.apply()

    print(f"\nPMI scoring on a tiny Llama: {args.docs} MCF documents sharing {UNCONDITIONED!r} + {LETTERS}")
    print(
        f"lighteval batch_size={args.batch_size} (continuations), max_length={args.max_length}; "
        f"times: best of {args.repeats} rounds\n"
    )
    header = f"{'variant':<23}{'cond.':>7}{'uncond.':>9}{'calls':>7}{'model s':>10}{'evaluate s':>12}  scores"
    print(header)
    print("-" * len(header))
    for label, (conditioned, unconditioned, n_calls, model_seconds, wall, scores) in best.items():
        shown = " ".join(f"{name}={value:.3f}" for name, value in scores.items())
        print(f"{label:<23}{conditioned:>7}{unconditioned:>9}{n_calls:>7}{model_seconds:>10.2f}{wall:>12.2f}  {shown}")
    print(f"{'bare forward, dedup':<23}{n_dedup - len(LETTERS):>7}{len(LETTERS):>9}{'':>7}{bare_dedup:>10.2f}")
    print(f"{'bare forward, no dedup':<23}{n_naive // 2:>7}{n_naive // 2:>9}{'':>7}{bare_naive:>10.2f}")
    dedup_row, naive_row = best["fixed, dedup"], best["fixed, no dedup"]
    print(
        f"\nunconditioned continuations: {dedup_row[1]} with dedup vs {naive_row[1]} without "
        f"({naive_row[1] / max(dedup_row[1], 1):.0f}x fewer); same scores: {dedup_row[5] == naive_row[5]}"
    )
    if dedup_row[5] != naive_row[5]:
        print(f"RESULTS DIFFER: dedup {dedup_row[5]} vs no dedup {naive_row[5]}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
