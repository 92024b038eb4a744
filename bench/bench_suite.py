"""The whole multiple-choice suite on one checkpoint: model requests with and without the PMI dedup, and
lighteval's evaluation time against bare forward passes on the same sequences.

Run: `python bench/bench_suite.py [--max-samples 4] [--raw ../shared/data]` (offline; a few minutes on 2 cores).

One tiny Llama (finetasks_afr.tiny) stands in for a checkpoint. The suite is every log-likelihood task of
finetasks_afr.tasks whose data is in a mirror built from the raw files (`import_raw`); generative tasks are
left out (they generate, PMI does not apply). Each variant is one `Pipeline.evaluate()` at --max-samples with a
fresh prediction cache. "bare forward" = batched forward + log-softmax + gather over exactly the (context,
continuation) pairs lighteval scored (contexts rendered by lighteval's own prompt manager), without lighteval:
evaluate / bare is lighteval's overhead factor (1.0 = none).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.forward import bare_forward_seconds  # noqa: E402
from finetasks_afr.lighteval_runtime import clear_prediction_cache, custom_tasks_only  # noqa: E402


def suite_tasks(mirror: Path) -> list[str]:
    """Names of the log-likelihood tasks whose config the mirror holds."""
    import datasets

    os.environ["FINETASKS_AFR_DATA_DIR"] = str(mirror)
    from finetasks_afr import tasks

    available = {key.name: set(datasets.get_dataset_config_names(str(key))) for key in mirror.iterdir() if key.is_dir()}
    return [
        config.name
        for config in tasks.TASKS_TABLE
        if tasks.TASK_INFO[config.name].formulation != "GEN"
        and config.hf_subset in available.get(tasks.TASK_INFO[config.name].dataset, set())
    ]


def run(model_dir: Path, names: list[str], out: Path, max_samples: int, batch_size: int, max_length: int):
    """One Pipeline.evaluate(); returns (wall seconds, seconds in _loglikelihood_tokens, scored pairs)."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModel, TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    clear_prediction_cache(model_dir)
    pairs: list[tuple[str, str]] = []
    inside = [0.0]
    original = TransformersModel._loglikelihood_tokens

    def recorded(self, docs, *args, **kwargs):
        for doc in docs:
            context = self.prompt_manager.prepare_prompt(doc)
            pairs.extend((context, choice) for choice in doc.choices)
        start = time.perf_counter()
        result = original(self, docs, *args, **kwargs)
        inside[0] += time.perf_counter() - start
        return result

    with (
        custom_tasks_only(),
        mock.patch.object(TransformersModel, "_loglikelihood_tokens", recorded),
    ):
        pipeline = Pipeline(
            tasks=",".join(f"{name}|0" for name in names),
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                custom_tasks_directory=str(Path(__file__).resolve().parent.parent / "finetasks_afr" / "tasks.py"),
                max_samples=max_samples,
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(out), save_details=False),
            model_config=TransformersModelConfig(
                model_name=str(model_dir), device="cpu", batch_size=batch_size, max_length=max_length
            ),
        )
        start = time.perf_counter()
        pipeline.evaluate()
        wall = time.perf_counter() - start
    return wall, inside[0], pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-samples", type=int, default=4)
    parser.add_argument("--raw", type=Path, default=Path("../shared/data"))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=512)
    args = parser.parse_args(argv)

    import logging

    logging.disable(logging.WARNING)
    from finetasks_afr import compat
    from finetasks_afr.mirror import import_raw
    from finetasks_afr.tiny import make_tiny_causal_lm

    with tempfile.TemporaryDirectory(prefix="bench_suite_") as tmp:
        root = Path(tmp)
        import_raw(args.raw, root / "mirror")
        names = suite_tasks(root / "mirror")
        corpus = [line.strip() for line in (args.raw / "sib200" / "yor_Latn" / "train.tsv").open(encoding="utf-8")]
        model_dir = make_tiny_causal_lm(root / "model", corpus[:300], max_position_embeddings=args.max_length)
        print(f"suite: {len(names)} log-likelihood tasks with data in the mirror, --max-samples {args.max_samples}")
        rows = []
        for label, dedup in (("PMI dedup on", True), ("PMI dedup off", False)):
            compat.UNCONDITIONED_DEDUP = dedup
            compat.reset_stats()
            wall, inside, pairs = run(model_dir, names, root / f"out_{dedup}", args.max_samples, args.batch_size,
                                      args.max_length)  # fmt: skip
            stats = compat.STATS
            bare = bare_forward_seconds(model_dir, pairs, args.batch_size, args.max_length)
            rows.append((label, stats.docs, len(pairs), stats.continuations_needed, stats.continuations_scored, wall,
                         inside, bare))  # fmt: skip
        compat.UNCONDITIONED_DEDUP = True
    header = f"{'variant':15} {'PMI docs':>8} {'scored pairs':>12} {'uncond. needed':>14} {'uncond. scored':>14}"
    header += f" {'evaluate s':>10} {'model s':>8} {'bare s':>7} {'eval/bare':>9}"
    print(header)
    for label, docs, n_pairs, needed, scored, wall, inside, bare in rows:
        print(f"{label:15} {docs:8d} {n_pairs:12d} {needed:14d} {scored:14d} {wall:10.1f} {inside:8.1f} {bare:7.1f}"
              f" {wall / bare:9.2f}")  # fmt: skip
    print("scored pairs = every (context, continuation) lighteval scored, conditioned and unconditioned")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
