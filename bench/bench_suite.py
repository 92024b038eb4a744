"""The whole log-likelihood suite on one checkpoint, evaluated by lighteval's path and by ours, against bare
forward passes over the token sequences the suite actually needs. Writes `out/bench/suite.json`.

Run: `python bench/bench_suite.py [--max-samples 4] [--raw ../shared/data] [--out out/bench/suite.json]
[--tasks PATTERNS]`
(offline; `make bench-suite`; about 10 minutes on 2 cores).

Set-up. A mirror is built from the raw files (`finetasks_afr.data.mirror.import_raw`); the suite is every task of
`finetasks_afr.tasks` whose formulation is not GEN and whose config the mirror holds (CF, MCF, HYBRID and the
perplexity tasks: all log-likelihood), 0-shot, at `--max-samples` documents per task. The checkpoint is a
randomly initialised Llama (`finetasks_afr.demo.tiny.make_tiny_causal_lm`, `train_steps=0`): hidden 256, 4 heads (head
size 64), 4 layers, intermediate 1024, a byte-level BPE vocabulary of 4096 trained on text of the mirror itself
(every language), untied embeddings, float32: 6.3 million parameters, 2.1 million of them the embeddings and the
LM head. Evaluated with max_length 512 and batch_size 64 on the CPU, with as many torch threads as the machine has.
The machine may be shared: each run records the 1-minute load average before and after it.

Three subprocesses, one after the other (each reports its own peak resident memory, `ru_maxrss`):
- `finetasks`: `finetasks_afr.scoring.engine.SharedPrefixModel` (each distinct context once, with every choice packed
  after it in the same row under a block mask, `finetasks_afr.scoring.core`'s strategy rule); one `Pipeline.evaluate()`,
  prediction cache off (`model._cache = None`).
- `bare`: the floor. Plain batched `model(input_ids, attention_mask, logits_to_keep=...)` calls (no lighteval, no
  scoring core), then `log_softmax` + gather at the positions that predict a scored token, and nothing else, over
  exactly "the unique token sequences actually needed", recorded from what the finetasks run asked the scoring
  core for (`scoring.score_choices` / `scoring.score_rows`):
    * every distinct context token sequence once (its last position predicts every choice's first token);
    * for every distinct (context, continuation) pair with a continuation of two tokens or more, the
      continuation without its last token (its positions predict the continuation's remaining tokens);
    * every row the core scores whole, once: lighteval's truncated rows (context + continuation longer than
      max_length, or no context) and the perplexity tasks' rolling windows, without their last token.
  That is what the packed rows feed, minus anything fed twice, so its real tokens are at most our
  `tokens_forwarded`. The continuation pieces are run as sequences of their own (a plain call has no keys/values
  to attend to), which makes them slightly cheaper than in the real computation: the baseline is a lower bound.
  Batches of batch_size rows, right-padded with a mask, longest sequences first: all sequences sorted together,
  or each kind (contexts / continuation pieces / whole rows) sorted and batched on its own, whichever pads
  fewer tokens. After a warm-up of two batches, the best of `--bare-repeats` passes is taken.
- `lighteval`: lighteval's own `TransformersModel` (with the project's run-time fixes of `finetasks_afr.scoring.compat`,
  applied when the task module loads; their rolling branch uses the same scoring core as ours, so the perplexity
  tasks cost the same on both paths); one `Pipeline.evaluate()`, prediction cache off.

suite.json: `suite_ratio_vs_bare_forward` = our `Pipeline.evaluate()` wall seconds / bare seconds (goal <= 1.5);
`lighteval_ratio_vs_bare_forward` the same for lighteval's path; `speedup_vs_lighteval` = lighteval's evaluate
seconds / ours; `tokens_forwarded` = our real (unpadded) input tokens (`scoring.STATS.tokens_fed`);
`tokens_forwarded_lighteval` = lighteval's real input tokens (the sum over the rows it builds of
len(context + continuation) cut to max_length, read off `prepare_batch_logprob`'s `input_lengths`, plus the
rolling windows its patched rolling branch feeds through the scoring core); per run also the padded tokens, the
seconds spent inside the model's forward passes, Pipeline construction and model load, and the peak memory. The
metrics of both runs must be identical: exactly, except perplexity and bits-per-byte scores (1e-6 relative) and
their `_stderr` (1e-6 relative, or within 1e-6 x the score); every worker runs with PYTHONHASHSEED=0, so
lighteval sums its "all" averages in the same task order. `results_identical` says so and the differences are
listed; the script exits 1 when they differ.

Why a tolerance, and why this one for the stderrs. The translation log-likelihood tasks (`*_ll_*`, one
continuation per document, lighteval's loglikelihood path) get each document's log-probability from a different
float32 computation on each path: ours scores the reference in a packed row under a block mask (or, for a model
that fails the packing probe, on the cached keys/values of the prompt), lighteval forwards prompt + reference as
one plain row. The same attention and matmuls in another shape round
differently: per-document sums differ by up to about 2e-7 relative (on a random Llama, the same pairs forwarded as
whole rows agree with a plain full-logits pass to the bit). Nothing downstream differs (the bytes are the same
integers; the metric and the bootstrap draws are the same code, fix 4 of `finetasks_afr.scoring.compat` in both
processes), so making them identical would mean giving up sharing the prompt for these tasks, not changing a sum's
order or dtype. The score, sum(log-probs) / sum(bytes), keeps its 1e-6 relative tolerance. Its bootstrap stderr is
the standard deviation of that statistic over 1000 resamples: a shift of at most d in each resample's value moves
the standard deviation by at most d, so per-document values equal to 1e-6 relative bound the stderr's difference
by about 1e-6 x the score, not by 1e-6 x the stderr. On a random model the documents' bits per byte are nearly
equal, the stderr is about 1e-3 of the score, and the same rounding shows as 1e-6 to 3e-6 of the stderr
(`make bench-suite` failed on exactly this: 45 `bits_per_byte_stderr`). A difference that size cannot change a
decision: the analysis compares stderr-based statistics (SNR, non-randomness sigmas, intervals) with thresholds,
and a change of 1e-6 of the score moves a verdict only for a statistic sitting on its threshold to that
precision. A real bug in the stderr (another resampling, another estimator) moves it by percents.

Rounding ties. On a random model two choices can score within 1e-7 relative of each other (Winogrande's partial
scoring: the two contexts differ by one name, and `winogrande_afr_tsn_cf` document 518 scores -122.319427 vs
-122.319435 on lighteval's path, -122.319443 vs -122.319435 on ours), and the same rounding then picks the other
choice: acc 0.75 vs 0.5 at 4 documents. Each worker records every document's log-probabilities and per-sample
metrics (lighteval's `DetailsLogger`); a differing metric is a tie, listed apart in `rounding_tie_flips` and not
failing the run, only when every document whose per-sample value differs has all its log-probabilities equal
between the paths to 1e-6 relative. Any other per-document difference stays a failure.

`--tasks PATTERNS` (comma-separated fnmatch patterns) takes a slice of the suite: `make bench-smoke` runs one in
CI that includes translation log-likelihood tasks, so that a result difference fails there first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")
PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
TASKS_MODULE = str(PROJECT / "finetasks_afr" / "tasks.py")

MODEL_SHAPE = {"hidden_size": 256, "heads": 4, "layers": 4, "vocab_size": 4096}  # intermediate = 4 x hidden
NEEDED_KINDS = ("context", "continuation", "row")
FUZZY_METRICS = ("perplexity", "bits_per_byte")  # compared to 1e-6 relative (float sums over many tokens)
FUZZY_TOLERANCE = 1e-6  # a fuzzy score's relative tolerance; its stderr's, in absolute terms: 1e-6 x the score


def suite_tasks(mirror: Path) -> list[str]:
    """Names of the log-likelihood tasks whose config the mirror holds (the task configs read the mirror named by
    FINETASKS_AFR_DATA_DIR, so it is set before the suite is imported)."""
    os.environ["FINETASKS_AFR_DATA_DIR"] = str(mirror)
    from finetasks_afr import tasks

    return tasks.tasks_with_local_data(mirror)


def select_tasks(names: list[str], patterns: str | None) -> list[str]:
    """The names matching one of the comma-separated fnmatch `patterns` (all of them when None), suite order kept."""
    import fnmatch

    if patterns is None:
        return names
    wanted = [pattern.strip() for pattern in patterns.split(",") if pattern.strip()]
    return [name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in wanted)]


def mirror_corpus(mirror: Path, rows_per_file: int = 40, min_chars: int = 20) -> list[str]:
    """The string fields (at least `min_chars` long) of the first rows of every file of the mirror."""
    corpus = []
    for path in sorted(mirror.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for _, line in zip(range(rows_per_file), handle, strict=False):
                values = json.loads(line).values()
                corpus += [value for value in values if isinstance(value, str) and len(value) >= min_chars]
    return corpus


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ------------------------------------------------------------------------------------------- workers


def _evaluate(spec: dict, engine: str) -> dict:
    """One Pipeline.evaluate() of the suite by `engine` in this process; the measurements as a dict."""
    import torch

    torch.set_num_threads(spec["threads"])
    os.environ["FINETASKS_AFR_DATA_DIR"] = spec["mirror"]
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from finetasks_afr.scoring import core as scoring
    from finetasks_afr.scoring.engine import SharedPrefixModel
    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only, prediction_cache_in, quiet_progress_bars
    from finetasks_afr.sweep.evaluate import ForwardTimer

    work = Path(spec["work"]) / engine
    config = TransformersModelConfig(
        model_name=spec["model"], device="cpu", batch_size=spec["batch_size"], max_length=spec["max_length"],
        dtype="float32",
    )  # fmt: skip
    started = time.perf_counter()
    with prediction_cache_in(work / "cache"):
        model = (SharedPrefixModel if engine == "finetasks" else TransformersModel)(config)
    load_seconds = time.perf_counter() - started

    lighteval_tokens = {"real": 0, "padded": 0}
    original_prepare = TransformersModel.prepare_batch_logprob

    def counted_prepare(self, *args, **kwargs):
        batch = original_prepare(self, *args, **kwargs)
        lighteval_tokens["real"] += int(sum(batch.input_lengths))
        lighteval_tokens["padded"] += int(batch.input_ids.numel())
        return batch

    choices_calls: list[tuple[list, int]] = []
    rows_calls: list[list] = []
    original_choices, original_rows = scoring.score_choices, scoring.score_rows

    def recorded_choices(model, docs, **kwargs):
        choices_calls.append((docs, kwargs["max_length"]))
        return original_choices(model, docs, **kwargs)

    def recorded_rows(model, rows, **kwargs):
        rows_calls.append(rows)
        return original_rows(model, rows, **kwargs)

    scoring.score_choices, scoring.score_rows = recorded_choices, recorded_rows
    try:
        with (
            mock.patch.object(TransformersModel, "prepare_batch_logprob", counted_prepare),
            custom_tasks_only(),
            quiet_progress_bars(),
        ):
            started = time.perf_counter()
            pipeline = Pipeline(
                tasks=",".join(f"{name}|0" for name in spec["tasks"]),
                pipeline_parameters=PipelineParameters(
                    launcher_type=ParallelismManager.ACCELERATE,
                    custom_tasks_directory=TASKS_MODULE,
                    max_samples=spec["max_samples"],
                ),
                evaluation_tracker=EvaluationTracker(output_dir=str(work / "lighteval"), save_details=False),
                model=model,
            )
            pipeline.model._cache = None
            build_seconds = time.perf_counter() - started
            timer = ForwardTimer(model.model)
            scoring.reset_stats()
            started = time.perf_counter()
            pipeline.evaluate()
            evaluate_seconds = time.perf_counter() - started
            timer.remove()
    finally:
        scoring.score_choices, scoring.score_rows = original_choices, original_rows
    stats = dict(vars(scoring.STATS))
    results = pipeline.get_results()["results"]
    documents = document_records(pipeline.evaluation_tracker.details_logger.details)
    out = {
        "engine": engine,
        "evaluate_seconds": evaluate_seconds,
        "forward_seconds": timer.seconds,
        "pipeline_build_seconds": build_seconds,
        "model_load_seconds": load_seconds,
        "peak_rss_mib": peak_rss_mib(),
        "scoring_stats": stats,
        "results": results,
        "documents": documents,
    }
    if engine == "finetasks":
        out["tokens_forwarded"] = stats["tokens_fed"]
        out["padded_tokens_forwarded"] = stats["padded_tokens_fed"]
        needed = needed_sequences(choices_calls, rows_calls)
        Path(spec["needed"]).write_text(json.dumps(needed), encoding="utf-8")
        out["needed_sequences"] = len(needed)
    else:  # lighteval's multiple-choice rows + the rolling windows its patched rolling branch feeds
        out["tokens_forwarded"] = lighteval_tokens["real"] + stats["tokens_fed"]
        out["padded_tokens_forwarded"] = lighteval_tokens["padded"] + stats["padded_tokens_fed"]
        out["rolling_tokens_forwarded"] = stats["tokens_fed"]
    return out


def needed_sequences(choices_calls: list[tuple[list, int]], rows_calls: list[list]) -> list[tuple[str, list, list]]:
    """The unique token sequences the suite needs (module docstring), as (kind, input tokens, targets): the
    targets are predicted by the last len(targets) input positions; kind is one of NEEDED_KINDS."""
    needed: dict[tuple, tuple[str, list, list]] = {}
    for docs, max_length in choices_calls:
        for context, continuations in docs:
            key = tuple(context)
            for continuation in continuations:
                if not key or len(key) + len(continuation) > max_length:
                    continue  # scored whole by score_rows: recorded there
                needed.setdefault(("context", key), ("context", list(key), [int(continuation[0])]))
                if len(continuation) > 1:
                    pair = ("continuation", key, tuple(continuation))
                    needed.setdefault(pair, ("continuation", list(continuation[:-1]), list(continuation[1:])))
    for rows in rows_calls:
        for tokens, n in rows:
            needed.setdefault(("row", tuple(tokens), n), ("row", list(tokens[:-1]), list(tokens[-n:])))
    return list(needed.values())


def _bare(spec: dict) -> dict:
    """Plain batched forward passes over the needed sequences (module docstring)."""
    import torch
    from transformers import AutoModelForCausalLM

    from finetasks_afr.scoring.core import weights_dtype

    torch.set_num_threads(spec["threads"])
    model = AutoModelForCausalLM.from_pretrained(spec["model"], **weights_dtype(torch.float32)).eval()
    needed = json.loads(Path(spec["needed"]).read_text(encoding="utf-8"))
    size = spec["batch_size"]
    layouts = {"all kinds together": [needed], "each kind on its own": [[s for s in needed if s[0] == kind]
                                                                       for kind in NEEDED_KINDS]}  # fmt: skip
    groups = {name: [sorted(sequences, key=lambda s: -len(s[1])) for sequences in kinds]
              for name, kinds in layouts.items()}  # fmt: skip
    chunks = {name: [group[i : i + size] for group in kinds for i in range(0, len(group), size)]
              for name, kinds in groups.items()}  # fmt: skip
    padded = {name: sum(len(chunk) * len(chunk[0][1]) for chunk in batches) for name, batches in chunks.items()}
    layout = min(padded, key=padded.__getitem__)
    batches = []
    for batch in chunks[layout]:
        width, keep_width = len(batch[0][1]), max(len(targets) for _, _, targets in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        keep = torch.zeros((len(batch), keep_width), dtype=torch.long)
        targets = torch.zeros_like(keep)
        valid = torch.zeros_like(keep, dtype=torch.bool)
        for row, (_, tokens, wanted) in enumerate(batch):
            ids[row, : len(tokens)] = torch.as_tensor(tokens)
            mask[row, : len(tokens)] = 1
            keep[row, : len(wanted)] = torch.arange(len(tokens) - len(wanted), len(tokens))
            keep[row, len(wanted) :] = len(tokens) - 1
            targets[row, : len(wanted)] = torch.as_tensor(wanted)
            valid[row, : len(wanted)] = True
        batches.append((ids, mask, keep, targets, valid))

    def one_pass(selected: Sequence[tuple[torch.Tensor, ...]]) -> float:
        total = 0.0
        with torch.inference_mode():
            for ids, mask, keep, targets, valid in selected:
                logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=keep).logits
                logprobs = torch.log_softmax(logits[valid], dim=-1)
                total += float(logprobs.gather(-1, targets[valid].unsqueeze(-1)).sum())
        return total

    one_pass(batches[:2])  # warm-up
    timings = []
    for _ in range(spec["bare_repeats"]):
        started = time.perf_counter()
        one_pass(batches)
        timings.append(time.perf_counter() - started)
    return {
        "seconds": min(timings),
        "all_seconds": timings,
        "sequences": len(needed),
        "sequences_by_kind": {kind: sum(s[0] == kind for s in needed) for kind in NEEDED_KINDS},
        "batches": len(batches),
        "batching": layout,
        "tokens": sum(len(tokens) for _, tokens, _ in needed),
        "padded_tokens": padded[layout],
        "padded_tokens_other_batching": max(padded.values()),
        "peak_rss_mib": peak_rss_mib(),
    }


def worker(kind: str, spec_path: Path, out_path: Path) -> int:
    import logging

    logging.disable(logging.WARNING)
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    result = _bare(spec) if kind == "bare" else _evaluate(spec, kind)
    out_path.write_text(json.dumps(result), encoding="utf-8")
    return 0


# ------------------------------------------------------------------------------------------- main


def document_records(details: dict[str, list[Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per task and document (lighteval's `DetailsLogger.details`): the log-probabilities the model returned and
    the per-sample metric values, the evidence `tie_flips` reads. Keyed by the document's id, in order."""
    records: dict[str, dict[str, dict[str, Any]]] = {}
    for task, entries in details.items():
        per_doc: dict[str, dict[str, Any]] = {}
        for position, detail in enumerate(entries):
            response = detail.model_response
            key = str(detail.doc.id) if str(detail.doc.id) not in per_doc else f"{detail.doc.id}#{position}"
            per_doc[key] = {
                "logprobs": [float(x) for x in response.logprobs or []],
                "unconditioned": [float(x) for x in response.unconditioned_logprobs or []],
                "metric": {
                    name: float(value)
                    for name, value in detail.metric.items()
                    if isinstance(value, int | float) and not isinstance(value, complex)
                },
            }
        records[task.replace("|", ":")] = per_doc
    return records


def tie_flips(theirs: dict, mine: dict, task: str, metric: str) -> list[str] | None:
    """The documents whose per-sample `metric` (a `_stderr` reads its score's) differs between the two paths, when
    every one of them is a rounding tie: each log-probability (conditioned and unconditioned) of the document
    agrees between the paths within `FUZZY_TOLERANCE` relative, so only float rounding decided which choice won.
    None when any differing document is not such a tie (a real difference), or when no document explains it."""
    import math

    base = metric.removesuffix("_stderr")
    left, right = theirs.get(task, {}), mine.get(task, {})
    if not left or set(left) != set(right):
        return None
    flipped = []
    for doc, record in left.items():
        other = right[doc]
        a, b = record["metric"].get(base), other["metric"].get(base)
        if a == b:
            continue
        fields = ("logprobs", "unconditioned")
        if a is None or b is None or any(len(record[field]) != len(other[field]) for field in fields):
            return None
        values = [(x, y) for field in fields for x, y in zip(record[field], other[field], strict=True)]
        if not all(math.isclose(x, y, rel_tol=FUZZY_TOLERANCE) for x, y in values):
            return None
        flipped.append(doc)
    return flipped or None


def compare_results(
    theirs: dict, mine: dict, their_documents: dict | None = None, my_documents: dict | None = None
) -> tuple[list[str], dict[str, int], list[str]]:
    """Every metric that differs, how many values were compared under each rule (`FUZZY_METRICS`, module
    docstring): exactly; 1e-6 relative for a perplexity or bits-per-byte score; and for its `_stderr`, 1e-6
    relative or within 1e-6 x the score itself (the score's own tolerance carried over in the score's units, the
    bound a stderr inherits from per-document values that agree to 1e-6 relative); and the differences that are
    rounding ties (`tie_flips`, with the documents), listed apart. The "all" averages' difference in a metric is a
    tie when every task's difference in that metric is one."""
    import math

    differences: list[str] = []
    ties: list[str] = []
    tied_metrics: set[str] = set()
    untied_metrics: set[str] = set()
    compared = {"exact": 0, "rel_1e-6": 0, "stderr_1e-6_of_score": 0}
    averages: list[tuple[str, object, object]] = []
    for task in sorted(set(theirs) | set(mine)):
        if task not in theirs or task not in mine:
            differences.append(f"{task}: only in {'ours' if task in mine else 'lighteval'}")
            continue
        for metric in sorted(set(theirs[task]) | set(mine[task])):
            a, b = theirs[task].get(metric), mine[task].get(metric)
            fuzzy = any(name in metric for name in FUZZY_METRICS)
            score = theirs[task].get(metric.removesuffix("_stderr")) if metric.endswith("_stderr") else None
            stderr_rule = fuzzy and isinstance(score, float) and math.isfinite(score)
            compared["stderr_1e-6_of_score" if stderr_rule else "rel_1e-6" if fuzzy else "exact"] += 1
            if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
                continue
            floats = isinstance(a, float) and isinstance(b, float)
            absolute = FUZZY_TOLERANCE * abs(score) if stderr_rule and isinstance(score, float) else 0.0
            same = (a == b) or (fuzzy and floats and math.isclose(a, b, rel_tol=FUZZY_TOLERANCE, abs_tol=absolute))
            if same:
                continue
            if task == "all":
                averages.append((metric, a, b))
                continue
            flipped = tie_flips(their_documents or {}, my_documents or {}, task, metric)
            if flipped is None:
                untied_metrics.add(metric)
                differences.append(f"{task} {metric}: lighteval {a!r}, ours {b!r}")
            else:
                tied_metrics.add(metric)
                ties.append(f"{task} {metric}: lighteval {a!r}, ours {b!r}; rounding ties in documents {flipped}")
    for metric, a, b in averages:
        if metric in tied_metrics and metric not in untied_metrics:
            ties.append(f"all {metric}: lighteval {a!r}, ours {b!r}; the average of tasks with rounding ties")
        else:
            differences.append(f"all {metric}: lighteval {a!r}, ours {b!r}")
    return differences, compared, ties


def _subprocess(kind: str, spec_path: Path, work: Path) -> tuple[dict, float]:
    out_path = work / f"{kind}.json"
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--spec", str(spec_path)]
    # One hash seed for every worker: lighteval sums the "all" averages over tasks in an order that follows set
    # iteration (string hashes), and a different order changes their last bits.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([*command, "--worker-out", str(out_path)], check=True, env=env)
    wall = time.perf_counter() - started
    result = json.loads(out_path.read_text(encoding="utf-8"))
    result["load_average_1min"] = {"before": load_before, "after": os.getloadavg()[0]}  # other jobs on the machine
    return result, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-samples", type=int, default=4)
    parser.add_argument("--raw", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "bench" / "suite.json")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: all)")
    parser.add_argument("--bare-repeats", type=int, default=2)
    parser.add_argument("--limit-tasks", type=int, default=None, help="only the first N tasks (quick checks)")
    parser.add_argument(
        "--tasks", default=None, help="comma-separated fnmatch patterns: only the suite's tasks matching one (a slice)"
    )
    parser.add_argument("--worker", choices=("finetasks", "bare", "lighteval"), help=argparse.SUPPRESS)
    parser.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.spec, args.worker_out)

    import logging

    logging.disable(logging.WARNING)
    from finetasks_afr.data.mirror import import_raw
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_suite_") as tmp:
        work = Path(tmp)
        import_raw(args.raw, work / "mirror")
        suite = suite_tasks(work / "mirror")
        patterns = [pattern for pattern in (args.tasks or "").split(",") if pattern.strip()]
        unmatched = [pattern for pattern in patterns if not select_tasks(suite, pattern)]
        if unmatched:  # a slice must not shrink silently when a task is renamed
            print(f"error: no task of the suite matches {unmatched} (--tasks {args.tasks!r})", file=sys.stderr)
            return 2
        names = select_tasks(suite, args.tasks)[: args.limit_tasks]
        shape = MODEL_SHAPE
        model_dir = make_tiny_causal_lm(
            work / "model", mirror_corpus(work / "mirror"), vocab_size=shape["vocab_size"],
            hidden_size=shape["hidden_size"], layers=shape["layers"], heads=shape["heads"],
            max_position_embeddings=args.max_length, train_steps=0,
        )  # fmt: skip
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        from finetasks_afr import tasks

        formulations: dict[str, int] = {}
        for name in names:
            formulation = tasks.TASK_INFO[name].formulation
            formulations[formulation] = formulations.get(formulation, 0) + 1
        print(f"suite: {len(names)} log-likelihood tasks ({formulations}), 0-shot, --max-samples {args.max_samples}")
        spec = {
            "mirror": str(work / "mirror"), "model": str(model_dir), "tasks": names, "work": str(work),
            "needed": str(work / "needed.json"), "max_samples": args.max_samples, "batch_size": args.batch_size,
            "max_length": args.max_length, "threads": args.threads, "bare_repeats": args.bare_repeats,
        }  # fmt: skip
        spec_path = work / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        ours, ours_wall = _subprocess("finetasks", spec_path, work)
        print(f"finetasks: evaluate {ours['evaluate_seconds']:.1f} s")
        bare, bare_wall = _subprocess("bare", spec_path, work)
        print(f"bare forward: {bare['seconds']:.1f} s")
        theirs, theirs_wall = _subprocess("lighteval", spec_path, work)
        print(f"lighteval: evaluate {theirs['evaluate_seconds']:.1f} s")
        from transformers import AutoModelForCausalLM

        parameters = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(model_dir).parameters())

    differences, compared, ties = compare_results(
        theirs.pop("results"), ours.pop("results"), theirs.pop("documents"), ours.pop("documents")
    )
    report = {
        "suite_ratio_vs_bare_forward": ours["evaluate_seconds"] / bare["seconds"],
        "lighteval_ratio_vs_bare_forward": theirs["evaluate_seconds"] / bare["seconds"],
        "speedup_vs_lighteval": theirs["evaluate_seconds"] / ours["evaluate_seconds"],
        "tokens_forwarded": ours["tokens_forwarded"],
        "tokens_forwarded_lighteval": theirs["tokens_forwarded"],
        "tokens_bare": bare["tokens"],
        "evaluate_seconds": ours["evaluate_seconds"],
        "evaluate_seconds_lighteval": theirs["evaluate_seconds"],
        "bare_forward_seconds": bare["seconds"],
        "peak_rss_mib": ours["peak_rss_mib"],
        "peak_rss_mib_lighteval": theirs["peak_rss_mib"],
        "peak_rss_mib_bare": bare["peak_rss_mib"],
        "results_identical": not differences,
        "result_differences": differences,
        "rounding_tie_flips": ties,
        "metric_values_compared": compared,
        "runs": {"finetasks": ours, "lighteval": theirs, "bare": bare},
        "process_wall_seconds": {"finetasks": ours_wall, "bare": bare_wall, "lighteval": theirs_wall},
        "suite": {
            "tasks": len(names),
            "formulations": formulations,
            "fewshot": 0,
            "max_samples": args.max_samples,
        },
        "model": {
            "architecture": "LlamaForCausalLM, random init (finetasks_afr.demo.tiny, train_steps=0)",
            "parameters": parameters,
            "hidden_size": config["hidden_size"],
            "num_attention_heads": config["num_attention_heads"],
            "head_dim": config["hidden_size"] // config["num_attention_heads"],
            "num_hidden_layers": config["num_hidden_layers"],
            "intermediate_size": config["intermediate_size"],
            "vocab_size": config["vocab_size"],
            "dtype": "float32",
            "max_length": args.max_length,
            "batch_size": args.batch_size,
            "torch_threads": args.threads,
        },
        "total_wall_seconds": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        f"ours / bare {report['suite_ratio_vs_bare_forward']:.2f}, lighteval / bare "
        f"{report['lighteval_ratio_vs_bare_forward']:.2f}, speedup {report['speedup_vs_lighteval']:.2f}x, tokens "
        f"{report['tokens_forwarded']} vs {report['tokens_forwarded_lighteval']} (bare {report['tokens_bare']})"
    )
    print(f"wrote {args.out}")
    if ties:
        print(f"{len(ties)} metric(s) differ only by rounding ties (logprobs within 1e-6):", *ties[:20], sep="\n  ")
    if differences:
        print(f"RESULTS DIFFER in {len(differences)} metric(s):", *differences[:20], sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
