"""Synthetic score tables: a large realistic sweep for benchmarks, and small ragged ones for tests.

`make_synthetic_table` builds a full factorial sweep (task x metric x run x seed x step) with numpy in one
vectorised pass; the default size is 1,000,000 rows. `make_small_random_table` builds tiny, irregular
tables (missing steps, ties, constant series, null seeds, null tokens, a lower-is-better metric) for
property and equivalence tests of the signal statistics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from analysis.scores.schema import SCHEMA

LANGUAGES: tuple[str, ...] = ("yor", "hau", "swa", "zul", "amh")
TOKENS_PER_STEP = 1_048_576  # 1M-token batches: 15B tokens is reached at step ~14,305

# (benchmark, number of answer choices); generative benchmarks have 0 (random baseline 0).
BENCHMARKS: dict[str, tuple[tuple[str, int], ...]] = {
    "GK": (("afrimmlu", 4), ("arc_afr", 4), ("sciq_afr", 4)),
    "RC": (("belebele", 4), ("naijarc", 4), ("afrirc", 3)),
    "RES": (("hellaswag_afr", 4), ("xcopa_afr", 2), ("xstorycloze_afr", 2)),
    "NLU": (("afrixnli", 3), ("afrisenti", 3), ("pawsx_afr", 2)),
    "GEN": (("afriqa", 0), ("tydiqa_afr", 0), ("mkqa_afr", 0)),
}
MC_METRICS: tuple[str, ...] = ("acc", "acc_norm", "acc_norm_token", "acc_norm_pmi")
GEN_METRICS: tuple[str, ...] = ("f1", "exact_match", "exact_match_prefix", "exact_match_suffix")


def _task_catalogue(n_tasks: int) -> list[tuple[str, str, str, str, str, float]]:
    """(task, benchmark, language, category, formulation, baseline) for `n_tasks` tasks.

    Ordered so that any prefix spreads evenly over languages (innermost) and categories.
    """
    tasks: list[tuple[str, str, str, str, str, float]] = []
    repeat = 0
    while len(tasks) < n_tasks:
        suffix = "" if repeat == 0 else str(repeat + 1)
        for j in range(3):
            for form in ("CF", "MCF"):
                for category, benches in BENCHMARKS.items():
                    if category == "GEN" and form == "MCF":
                        continue
                    bench, n_choices = benches[j]
                    bench = bench + suffix
                    formulation = "GEN" if category == "GEN" else form
                    baseline = 0.0 if n_choices == 0 else 1.0 / n_choices
                    for lang in LANGUAGES:
                        name = f"{bench}_{lang}_{formulation.lower()}"
                        tasks.append((name, bench, lang, category, formulation, baseline))
        repeat += 1
    return tasks[:n_tasks]


def make_synthetic_table(
    n_tasks: int = 125,
    n_metrics: int = 4,
    n_runs: int = 10,
    n_seeds: int = 4,
    n_steps: int = 50,
    seed: int = 0,
) -> pl.DataFrame:
    """A realistic sweep of n_tasks x n_metrics x n_runs x n_seeds x n_steps rows (default 1,000,000).

    Per (task, metric, run) a saturating learning curve from the random baseline towards a task ceiling;
    run quality is shared across tasks (with a small per-task perturbation), so run orderings are mostly
    consistent. About 15% of tasks stay flat at the baseline (random), about 15% oscillate (non-monotone).
    Scores get a per-seed offset and binomial-like per-checkpoint noise, and are rounded to a multiple of
    1 / n_items (an accuracy over n_items questions); stderr = sqrt(p (1 - p) / n_items).
    Steps run from 1000 to 50000, tokens = step * 1,048,576.
    """
    _check_shape(n_tasks, n_metrics, n_runs, n_seeds, n_steps)
    rng = np.random.default_rng(seed)
    return _sweep(_task_catalogue(n_tasks), rng, n_metrics, n_runs, n_seeds, n_steps)


def write_synthetic_parquet(
    path: Path,
    n_tasks: int,
    n_metrics: int = 4,
    n_runs: int = 10,
    n_seeds: int = 4,
    n_steps: int = 50,
    seed: int = 0,
    chunk_rows: int = 2_000_000,
) -> int:
    """Write the same kind of sweep as `make_synthetic_table` to parquet, a chunk of tasks at a time.

    Memory stays at one chunk (a 100M-row table would need ~30 GB at once). Tasks are written in name order,
    so each row group spans a narrow range of task names and a reader filtering on a range of names skips the
    rest. Run quality is drawn once and shared by every chunk, as in the one-frame table; the task-level
    draws come from one generator per chunk. Returns the number of rows written.
    """
    _check_shape(n_tasks, n_metrics, n_runs, n_seeds, n_steps)
    catalogue = sorted(_task_catalogue(n_tasks))
    quality = np.random.default_rng([seed, 1]).permutation(np.linspace(-1.0, 1.0, n_runs))
    per_chunk = max(1, chunk_rows // (n_metrics * n_runs * n_seeds * n_steps))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    writer: pq.ParquetWriter | None = None
    try:
        for i, start in enumerate(range(0, n_tasks, per_chunk)):
            rng = np.random.default_rng([seed, 2, i])
            chunk = _sweep(catalogue[start : start + per_chunk], rng, n_metrics, n_runs, n_seeds, n_steps, quality)
            arrow = chunk.to_arrow(compat_level=pl.CompatLevel.oldest())
            if writer is None:
                writer = pq.ParquetWriter(path, arrow.schema)
            writer.write_table(arrow, row_group_size=100_000)  # small: a task range reads little else
            written += chunk.height
    finally:
        if writer is not None:
            writer.close()
    return written


def _check_shape(n_tasks: int, n_metrics: int, n_runs: int, n_seeds: int, n_steps: int) -> None:
    if not 1 <= n_metrics <= len(MC_METRICS):
        raise ValueError(f"n_metrics must be between 1 and {len(MC_METRICS)}, got {n_metrics}")
    if min(n_tasks, n_runs, n_seeds, n_steps) < 1:
        raise ValueError("n_tasks, n_runs, n_seeds and n_steps must be >= 1")


def _sweep(
    catalogue: list[tuple[str, str, str, str, str, float]],
    rng: np.random.Generator,
    n_metrics: int,
    n_runs: int,
    n_seeds: int,
    n_steps: int,
    quality: np.ndarray | None = None,
) -> pl.DataFrame:
    """The rows of `catalogue`'s tasks; `quality` (per run) is drawn here unless given (a chunked table)."""
    T, M, R, S, K = len(catalogue), n_metrics, n_runs, n_seeds, n_steps
    baseline = np.array([t[5] for t in catalogue])
    is_gen = np.array([t[4] == "GEN" for t in catalogue])

    steps = np.unique(np.round(np.linspace(1000, 50000, K)).astype(np.int64))
    if len(steps) != K:
        raise ValueError(f"n_steps={K} gives repeated steps between 1000 and 50000")

    # Task-level parameters.
    kind = rng.choice(3, size=T, p=[0.7, 0.15, 0.15])  # 0 learnable, 1 random (flat), 2 non-monotone
    ceiling = np.where(is_gen, rng.uniform(0.2, 0.6, T), baseline + (1 - baseline) * rng.uniform(0.15, 0.55, T))
    gain_t = np.where(kind == 1, 0.0, ceiling - baseline)
    tau = rng.uniform(4000, 25000, T)
    n_items = rng.integers(300, 2001, T)
    wobble_amp = np.where(kind == 2, rng.uniform(0.2, 0.5, T), 0.0) * np.maximum(gain_t, 0.05)
    wobble_period = rng.uniform(8000, 20000, T)
    wobble_phase = rng.uniform(0, 2 * np.pi, T)

    # Metric and run parameters.
    gain_tm = gain_t[:, None] * rng.uniform(0.75, 1.1, (T, M))
    if quality is None:
        quality = rng.permutation(np.linspace(-1.0, 1.0, R))
    q_tr = quality[None, :] + rng.normal(0.0, 0.3, (T, R))

    b5 = baseline[:, None, None, None, None]
    step5 = steps[None, None, None, None, :].astype(np.float64)
    gain5 = gain_tm[:, :, None, None, None] * (1 + 0.12 * q_tr[:, None, :, None, None])
    tau5 = (tau[:, None] * (1 - 0.1 * q_tr))[:, None, :, None, None]
    mu = b5 + gain5 * (1 - np.exp(-step5 / tau5))
    mu = mu + wobble_amp[:, None, None, None, None] * np.sin(
        2 * np.pi * step5 / wobble_period[:, None, None, None, None] + wobble_phase[:, None, None, None, None]
    )
    mu = np.clip(mu, 0.0, 1.0)
    n5 = n_items[:, None, None, None, None].astype(np.float64)
    seed_offset = rng.normal(0.0, 0.004, (T, M, R, S, 1))
    sampling = 0.6 * np.sqrt(mu * (1 - mu) / n5) * rng.standard_normal((T, M, R, S, K))
    p = np.clip(mu + seed_offset + sampling, 0.0, 1.0)
    score = np.round(p * n5) / n5
    stderr = np.sqrt(score * (1 - score) / n5)

    shape = (T, M, R, S, K)
    n_rows = T * M * R * S * K

    def index(axis: int) -> np.ndarray:
        sizes = [1] * 5
        sizes[axis] = shape[axis]
        return np.broadcast_to(np.arange(shape[axis]).reshape(sizes), shape).reshape(n_rows)

    task_i, metric_i, run_i, seed_i, step_i = (index(a) for a in range(5))
    metric_names = pl.Series("metric", list(MC_METRICS[:M]) + list(GEN_METRICS[:M]))
    metric_code = metric_i + M * is_gen[task_i].astype(np.int64)
    run_names = pl.Series("run", [f"mix-{r:02d}" for r in range(R)])
    step_col = steps[step_i]

    def task_attr(name: str, position: int) -> pl.Series:
        return pl.Series(name, [t[position] for t in catalogue]).gather(task_i)

    frame = pl.DataFrame(
        {
            "run": run_names.gather(run_i),
            "seed": pl.Series("seed", seed_i, dtype=pl.Int64),
            "step": pl.Series("step", step_col, dtype=pl.Int64),
            "tokens": pl.Series("tokens", step_col * TOKENS_PER_STEP, dtype=pl.Int64),
            "task": task_attr("task", 0),
            "benchmark": task_attr("benchmark", 1),
            "language": task_attr("language", 2),
            "category": task_attr("category", 3),
            "formulation": task_attr("formulation", 4),
            "fewshot": pl.Series("fewshot", np.where(is_gen, 0, 5)[task_i], dtype=pl.Int64),
            "metric": metric_names.gather(metric_code),
            "score": pl.Series("score", score.reshape(n_rows)),
            "stderr": pl.Series("stderr", stderr.reshape(n_rows)),
            "random_baseline": pl.Series("random_baseline", baseline[task_i]),
        }
    )
    return frame.cast(pl.Schema(SCHEMA))


def make_small_random_table(
    rng_seed: int,
    n_tasks: int = 3,
    max_runs: int = 5,
    max_seeds: int = 3,
    n_step_grid: int = 12,
) -> pl.DataFrame:
    """A tiny irregular table for property and equivalence tests.

    Contains, depending on `rng_seed`: runs missing some steps, a single run, single-seed runs with a
    null seed (never a null seed among numbered ones: the loader refuses that mix), scores rounded to a coarse
    grid (ties), constant series and constant metrics, `bits_per_byte` (lower is better, baseline 8.0, unbounded,
    null stderr), and tasks whose tokens are all null. Steps are multiples of 2000 (tokens = step * 1,048,576, so
    the 15B token threshold falls in the middle of a 12-step grid).
    """
    rng = np.random.default_rng(rng_seed)
    grid = 2000 * np.arange(1, n_step_grid + 1)
    rows: list[dict[str, object]] = []
    for t in range(n_tasks):
        lang = LANGUAGES[int(rng.integers(len(LANGUAGES)))]
        formulation = str(rng.choice(["CF", "MCF", "GEN", "PPL"]))
        metrics: list[str]
        if formulation == "GEN":
            category, bench, metrics, baseline = "GEN", "afriqa", ["f1", "exact_match"], 0.0
        elif formulation == "PPL":
            category, bench, metrics, baseline = "GEN", "flores_ppl", ["bits_per_byte"], 8.0
        else:
            category = str(rng.choice(["GK", "RC", "RES", "NLU"]))
            bench = "belebele" if category == "RC" else "afrixnli"
            baseline = 0.25 if category == "RC" else 1.0 / 3.0
            k = int(rng.integers(1, 4))
            metrics = [str(m) for m in rng.choice(["acc", "acc_norm", "acc_norm_token"], k, replace=False)]
            if rng.random() < 0.3:
                metrics.append("bits_per_byte")
        task = f"{bench}{t}_{lang}_{formulation.lower()}"
        null_tokens = rng.random() < 0.25
        fewshot = int(rng.choice([0, 5]))
        task_steps = np.sort(rng.choice(grid, size=int(rng.integers(2, n_step_grid + 1)), replace=False))
        n_runs = int(rng.integers(1, max_runs + 1))
        quality = rng.normal(0.0, 1.0, n_runs)
        tau = rng.uniform(3000, 20000)
        # Per metric: "curve" (noisy learning curve), "coarse" (rounded to 0.1: many ties), "constant".
        modes = {m: str(rng.choice(["curve", "coarse", "constant"], p=[0.6, 0.3, 0.1])) for m in metrics}
        for r in range(n_runs):
            n_seeds = int(rng.integers(1, max_seeds + 1))
            seeds: list[int | None] = list(range(n_seeds))
            if rng.random() < (0.5 if n_seeds == 1 else 0.2) and n_seeds == 1:  # the draw kept: same tables else
                seeds[0] = None
            for seed in seeds:
                keep = rng.random(len(task_steps)) > 0.2
                if not keep.any():
                    keep[int(rng.integers(len(task_steps)))] = True
                constant_series = rng.random() < 0.1
                for step in task_steps[keep]:
                    for metric in metrics:
                        progress = 1 - np.exp(-step / tau)
                        lower_better = metric == "bits_per_byte"
                        if lower_better:
                            score = 3.0 - 1.5 * progress * (1 + 0.2 * quality[r])
                            score += rng.normal(0.0, 0.05)
                        else:
                            gain = 0.4 * (1 - baseline)
                            score = baseline + gain * progress * (1 + 0.2 * quality[r])
                            score = float(np.clip(score + rng.normal(0.0, 0.02), 0.0, 1.0))
                        if modes[metric] == "coarse":
                            score = round(score * (2 if lower_better else 10)) / (2 if lower_better else 10)
                        if modes[metric] == "constant":
                            score = 2.5 if lower_better else baseline
                        elif constant_series:
                            score = 2.0 if lower_better else 0.5
                        stderr = None if lower_better else float(np.sqrt(score * (1 - score) / 500))
                        rows.append(
                            {
                                "run": f"run{r}",
                                "seed": seed,
                                "step": int(step),
                                "tokens": None if null_tokens else int(step) * TOKENS_PER_STEP,
                                "task": task,
                                "benchmark": bench,
                                "language": lang,
                                "category": category,
                                "formulation": formulation,
                                "fewshot": fewshot,
                                "metric": metric,
                                "score": float(score),
                                "stderr": stderr,
                                "random_baseline": 8.0 if lower_better else baseline,
                            }
                        )
    return pl.DataFrame(rows, schema=SCHEMA)
