"""The scoring core against whole rows and a lighteval-like path, on the three workloads of issue 27.

Synthetic documents (random token ids, seeded) scored by a random-initialised Llama (`--model`: `cpu` is small
enough for 2 cores; `0.5b` and `1.2b` are the issue's GPU sizes). Methods, each timed over the same documents in
the same run (best of `--repeats` after a warm-up):

- `core`: `scoring.score_choices`, what the engine calls, with the strategy its rule picks (`scoring._strategy`);
- `core:<strategy>`: the same with each strategy forced (`--strategies`), to show what the rule chose between;
- `rows`: the same requests as whole rows through `scoring.score_rows`;
- `lighteval`: lighteval's own layout: whole rows, right-padded, no mask, full logits and a float32 `log_softmax`
  over every position of every row.

Every method's per-choice log-probabilities are compared with the lighteval-like path's; in float32 a difference
over `TOLERANCE` (relative + absolute, float32 noise of sums of a few dozen log-probabilities) exits 1, because a
speed-up that changes a score is a bug. In bfloat16 the differences are reported, not checked, together with how
often the bf16 core picks another choice per document (argmax of the log-probabilities: `acc`) than a float32
recomputation with the same weights (`bf16_flips`). `--demo out/demo` counts the same flips on real (if tiny)
trained models: the demo checkpoints of seed 1, over the engine's own requests of every demo task. Writes `--out`
(out/bench/core.json).

The CUDA path (`--device cuda`) synchronises before reading each clock; it was written without a GPU to run it on.
The lighteval-like path holds float32 log-probabilities of every position: at `--model 0.5b` (vocabulary 152k)
a batch of 128 rows of 450 tokens is 35 GB, so an 80 GB card needs `--batch-size 32`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finetasks_afr.scoring import core as scoring

Docs = list[tuple[list[int], list[list[int]]]]

# name -> (description, context length range, number of choices, continuation length range)
WORKLOADS: dict[str, tuple[str, tuple[int, int], int, tuple[int, int]]] = {
    "mcf": ("MCF, 250-450-token passage, 4 one-token letters", (250, 450), 4, (1, 1)),
    "cf_labels": ("CF, 40-90-token sentence, 7 labels of 1-4 tokens", (40, 90), 7, (1, 4)),
    "cf_answers": ("CF, 80-200-token context, 4 answers of 8-30 tokens", (80, 200), 4, (8, 30)),
}


# name -> LlamaConfig fields. `cpu`: about 13M parameters (mostly embeddings: a 16k vocabulary keeps the full-logits
# path's cost visible); `0.5b` / `1.2b`: Qwen2.5-0.5B- and Llama-3.2-1B-shaped.
def _llama(vocab: int, hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int) -> dict[str, Any]:
    return {
        "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": intermediate, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads,
    }  # fmt: skip


MODELS: dict[str, dict[str, Any]] = {
    "smoke": _llama(512, 64, 128, 2, 2, 2),
    "cpu": _llama(16384, 256, 768, 4, 4, 2),
    "0.5b": _llama(151936, 896, 4864, 24, 14, 2),
    "1.2b": _llama(128256, 2048, 8192, 16, 32, 8),
}

TOLERANCE = 1e-5  # float32: |a - b| <= TOLERANCE * (1 + |b|)
MAX_LENGTH = 2048  # longer than every workload's rows: no truncation, every request reaches the core's strategy


def make_docs(workload: str, n_docs: int, vocab: int, seed: int) -> Docs:
    """Random documents of a workload (token 0 is the pad, never drawn; choices of a document differ)."""
    _, (c_lo, c_hi), n_choices, (k_lo, k_hi) = WORKLOADS[workload]
    rng = random.Random(f"{workload}-{seed}")
    docs: Docs = []
    for _ in range(n_docs):
        context = [rng.randrange(1, vocab) for _ in range(rng.randint(c_lo, c_hi))]
        choices: list[list[int]] = []
        while len(choices) < n_choices:
            choice = [rng.randrange(1, vocab) for _ in range(rng.randint(k_lo, k_hi))]
            if choice not in choices:
                choices.append(choice)
        docs.append((context, choices))
    return docs


def lighteval_like(model: Any, docs: Docs, batch_size: int) -> list[list[float]]:
    """lighteval's `_loglikelihood_tokens` in miniature: one row per choice, longest first, right-padded, no mask,
    full logits, float32 `log_softmax` over every position, then the continuation's positions gathered."""
    import torch

    device = scoring._device(model)
    rows = [
        (d, c, context + cont, len(cont)) for d, (context, conts) in enumerate(docs) for c, cont in enumerate(conts)
    ]
    rows.sort(key=lambda row: -len(row[2]))
    out = [[0.0] * len(conts) for _, conts in docs]
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            width = len(batch[0][2]) - 1
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            for r, (_, _, tokens, _) in enumerate(batch):
                ids[r, : len(tokens) - 1] = torch.as_tensor(tokens[:-1])
            logprobs = torch.log_softmax(model(input_ids=ids.to(device)).logits.float(), dim=-1)
            for r, (d, c, tokens, n) in enumerate(batch):
                at = torch.arange(len(tokens) - 1 - n, len(tokens) - 1, device=logprobs.device)
                target = torch.as_tensor(tokens[-n:], device=logprobs.device)
                out[d][c] = float(logprobs[r, at, target].sum())
    return out


def core(model: Any, docs: Docs, batch_size: int) -> list[list[float]]:
    scored = scoring.score_choices(model, docs, max_length=MAX_LENGTH, batch_size=batch_size)
    return [[result.logprob for result in results] for results in scored]


def rows(model: Any, docs: Docs, batch_size: int) -> list[list[float]]:
    requests = [(context + cont, len(cont)) for context, conts in docs for cont in conts]
    flat = iter(scoring.score_rows(model, requests, batch_size=batch_size))
    return [[next(flat).logprob for _ in conts] for _, conts in docs]


def forced(strategy: str) -> Callable[[Any, Docs, int], list[list[float]]]:
    def run(model: Any, docs: Docs, batch_size: int) -> list[list[float]]:
        scoring.FORCE_STRATEGY = strategy
        try:
            return core(model, docs, batch_size)
        finally:
            scoring.FORCE_STRATEGY = None

    return run


def timed(
    method: Callable[[Any, Docs, int], list[list[float]]], model: Any, docs: Docs, batch_size: int, repeats: int,
    device: str,
) -> tuple[float, list[list[float]]]:  # fmt: skip
    """Best of `repeats` seconds after a warm-up on the first few documents, and the last run's scores."""
    import torch

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    method(model, docs[: max(1, min(len(docs), batch_size // 4 or 1))], batch_size)
    best, scores = float("inf"), []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        scores = method(model, docs, batch_size)
        sync()
        best = min(best, time.perf_counter() - start)
    return best, scores


def worst_difference(got: list[list[float]], expected: list[list[float]]) -> float:
    """The largest |a - b| / (1 + |b|) over every choice."""
    return max(
        abs(a - b) / (1.0 + abs(b)) for xs, ys in zip(got, expected, strict=True) for a, b in zip(xs, ys, strict=True)
    )


def choices(scores: list[list[float]]) -> list[int]:
    return [max(range(len(row)), key=row.__getitem__) for row in scores]


def demo_requests(demo: Path, checkpoint: Path) -> list[Docs]:
    """The engine's log-likelihood requests for every demo task (0-shot, all documents), as token ids: one lighteval
    Pipeline with the engine on `checkpoint`, recording each `scoring.score_choices` call (the conditioned
    requests, then PMI's unconditioned ones where a task asks for them)."""
    import tempfile

    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
    from finetasks_afr.demo.world import World
    from finetasks_afr.scoring.engine import SharedPrefixModel, model_config
    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only

    world = World.load(demo / "world")
    os.environ[WORLD_ENV] = str(world.root.resolve())
    calls: list[Docs] = []
    original = scoring.score_choices

    def recorded(model: Any, docs: Any, **kwargs: Any) -> Any:
        calls.append([([int(t) for t in context], [[int(t) for t in c] for c in conts]) for context, conts in docs])
        return original(model, docs, **kwargs)

    scoring.score_choices = recorded
    try:
        with tempfile.TemporaryDirectory() as out, custom_tasks_only():
            pipeline = Pipeline(
                tasks=",".join(f"{task.name}|0" for task in world.tasks),
                pipeline_parameters=PipelineParameters(
                    launcher_type=ParallelismManager.ACCELERATE, custom_tasks_directory=DEMO_TASKS_MODULE
                ),
                evaluation_tracker=EvaluationTracker(output_dir=out, save_details=False),
                model=SharedPrefixModel(model_config(str(checkpoint), max_length=512, dtype="float32")),
            )
            pipeline.model._cache = None
            pipeline.evaluate()
    finally:
        scoring.score_choices = original
    return calls


def demo_flips(demo: Path, batch_size: int) -> dict[str, Any]:
    """How often a bf16 copy of each demo checkpoint picks another choice than the float32 checkpoint, per
    document with two choices or more, on the engine's own requests of every demo task (`demo_requests`)."""
    import torch
    from transformers import AutoModelForCausalLM

    def step(path: Path) -> tuple[str, int]:
        return path.parent.parent.name, int(path.name.split("-")[1])

    checkpoints = sorted((demo / "checkpoints").glob("*/seed-1/checkpoint-*"), key=step)
    calls = demo_requests(demo, checkpoints[-1])
    docs = [doc for doc in calls[0] if len(doc[1]) > 1]  # the conditioned requests: the choices metrics compare
    out: dict[str, Any] = {"documents": len(docs), "checkpoints": {}}
    for checkpoint in checkpoints:
        model = AutoModelForCausalLM.from_pretrained(checkpoint, **scoring.weights_dtype(torch.float32)).eval()
        exact = core(model, docs, batch_size)
        low = core(model.to(torch.bfloat16), docs, batch_size)
        flips = sum(a != b for a, b in zip(choices(low), choices(exact), strict=True))
        label = f"{checkpoint.parent.parent.name}/{checkpoint.name}"
        out["checkpoints"][label] = flips
        print(f"demo {label}: bf16 flips {flips} of {len(docs)} documents")
    total = sum(out["checkpoints"].values())
    out["flip_rate"] = total / (len(docs) * len(checkpoints))
    return out


def build_model(name: str, dtype: str, device: str, seed: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(**MODELS[name], max_position_embeddings=MAX_LENGTH, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    return model.to(device=device, dtype=getattr(torch, dtype))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--model", choices=sorted(MODELS), default="cpu")
    parser.add_argument("--docs", type=int, default=32, help="documents per workload")
    parser.add_argument("--batch-size", type=int, default=16, help="rows per batch, as the engine's batch_size")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--strategies", default="", help="also time the core with these forced (comma-separated)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on CPU")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="CI slice: tiny model, 6 documents, 1 repeat")
    parser.add_argument(
        "--demo", type=Path, help="also count bf16 choice flips on the demo checkpoints (seed 1 of each mix) over "
        "the engine's requests of every demo task, e.g. out/demo",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("out/bench/core.json"))
    args = parser.parse_args(argv)
    if args.smoke:
        args.model, args.docs, args.repeats, args.batch_size = "smoke", 6, 1, 8
        args.strategies = args.strategies or ",".join(scoring.STRATEGIES)
    import torch

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    model = build_model(args.model, args.dtype, args.device, args.seed)
    reference = build_model(args.model, "float32", args.device, args.seed) if args.dtype != "float32" else model
    chosen = scoring._strategy(model)
    methods: dict[str, Callable[[Any, Docs, int], list[list[float]]]] = {"core": core}
    methods |= {f"core:{s}": forced(s) for s in args.strategies.split(",") if s}
    methods |= {"rows": rows, "lighteval": lighteval_like}
    report: dict[str, Any] = {
        "device": args.device, "dtype": args.dtype, "model": args.model, "model_config": MODELS[args.model],
        "parameters": sum(p.numel() for p in model.parameters()), "docs_per_workload": args.docs,
        "batch_size": args.batch_size, "repeats": args.repeats, "threads": torch.get_num_threads(),
        "strategy_chosen": chosen, "torch": torch.__version__, "transformers": __import__("transformers").__version__,
        "platform": platform.platform(), "load_average": os.getloadavg(), "workloads": {},
    }  # fmt: skip
    failed = []
    print(f"model {args.model} ({report['parameters'] / 1e6:.1f}M parameters), {args.device} {args.dtype}, "
          f"{args.docs} docs/workload, batch {args.batch_size}; the core's rule picks '{chosen}'")  # fmt: skip
    for workload in args.workloads.split(","):
        docs = make_docs(workload, args.docs, MODELS[args.model]["vocab_size"], args.seed)
        seconds, scores = {}, {}
        for name, method in methods.items():
            seconds[name], scores[name] = timed(method, model, docs, args.batch_size, args.repeats, args.device)
        entry: dict[str, Any] = {
            "description": WORKLOADS[workload][0],
            "seconds": seconds,
            "vs_lighteval": {name: seconds["lighteval"] / seconds[name] for name in seconds},
            "max_rel_difference_vs_lighteval": {
                name: worst_difference(scores[name], scores["lighteval"]) for name in scores
            },
        }
        if args.dtype == "float32":
            bad = [name for name, worst in entry["max_rel_difference_vs_lighteval"].items() if worst > TOLERANCE]
            failed += [f"{workload}:{name}" for name in bad]
        else:
            exact = lighteval_like(reference, docs, args.batch_size)
            truth = choices(exact)
            entry["bf16_flips"] = {
                name: sum(a != b for a, b in zip(choices(s), truth, strict=True)) for name, s in scores.items()
            }
            entry["documents"] = len(docs)
            entry["max_rel_difference_vs_float32"] = {name: worst_difference(s, exact) for name, s in scores.items()}
        report["workloads"][workload] = entry
        line = "  ".join(f"{name} {seconds[name]:.3f}s ({entry['vs_lighteval'][name]:.2f}x)" for name in seconds)
        print(f"{workload:11s} {line}")
        if "bf16_flips" in entry:
            print(f"{'':11s} bf16 choice flips vs float32 over {len(docs)} docs: {entry['bf16_flips']}")
    if args.demo is not None:
        report["demo_bf16_flips"] = demo_flips(args.demo, args.batch_size)
        print(f"demo bf16 flip rate: {report['demo_bf16_flips']['flip_rate']:.4f}")
    report["load_average_after"] = os.getloadavg()
    report["agree"] = not failed
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    if failed:
        print(f"SCORES DIFFER beyond {TOLERANCE} (relative to 1 + |score|): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
