"""A SIMULATED FineTasks-style checkpoint sweep: the embedded default score table.

Nothing here was trained or evaluated. The scores are drawn from a statistical model of what a real
sweep looks like, so that `make select-tasks` has something meaningful to analyse before a real
end-to-end demo exists, and so that the selection can be checked against a known truth. Every run name
starts with `sim-` (simulated), and the parquet file carries the key-value metadata
`finetasks_afr.simulated = "true"`.

The simulated world:

- 4 training runs, one per data mix, best to worst on African languages: `sim-mix-afr60`,
  `sim-mix-afr30`, `sim-mix-afr10`, `sim-mix-eng`; 4 seed replicas each (0..3).
- 20 checkpoints, steps 1500..30000 every 1500, `tokens = step * 1_048_576` (about 1M tokens per step),
  so the last 11 checkpoints are past 15B tokens.
- Languages yor, hau, swa, zul, amh; per language the tasks of the real suite where the benchmark
  covers the language (AfriMMLU, Belebele, AfriQA, Uhura-ARC-Easy, Winogrande, AfriMGSM, AfriXNLI,
  SIB-200, AfriSenti, MasakhaNER), with the real benchmark, category, formulation, few-shot count
  (0 for CF and generative, 5 for MCF) and random baseline.
- Each task has a known quality (`TaskKind`), recorded in the truth table:
    * `learnable`: a saturating curve, runs ordered by mix, low noise: kept.
    * `late_emerging`: at the baseline until ~40% of training, then rising steadily (MCF on small
      models): kept.
    * `noisy`: a small evaluation set (40 items): large seed-to-seed noise, seed SNR far below 20:
      dropped for SNR. Never a generative task (they are exempt from the SNR threshold).
    * `random_label`: labels shuffled: flat at the random baseline (a hair below it: the luck of the one
      fixed shuffle is set against the task, so that the outcome is not a coin toss): dropped as random.
      Never a generative task (baseline 0).
    * `non_monotone`: rises, then degrades over the second half: Spearman rho < 0.5: dropped for
      monotonicity.
  amh has no kept RES task, so a coverage check has a gap to report; the other languages have a kept
  task in each of GK, RC, RES, NLU and GEN in both suites (CF + generative tasks, MCF + generative).

Score model, per (task, metric, run, seed, step): a true accuracy `p = b + gain * quality(run) *
shape(step)` (b the random baseline, `shape` in [0, 1] given by the kind), plus a per-(task, run, seed)
offset (the seed effect), observed through binomial sampling noise `Binomial(n, p) / n` with a
task-specific n (the effective number of items). The metric variants of one task score the same
answers, so they are correlated: 60% of the items get one verdict under every metric (one shared
binomial draw), the rest are drawn per metric. For CF, `acc_norm` and `acc_norm_token` sit a little above
`acc`, `acc_norm_token` is a little less noisy (effective n x 1.3) and `acc_norm_pmi` lower and noisier
(n x 0.7); MCF variants are nearly identical; generative tasks report `f1` and `exact_match` (0.7 x the
f1 gain; AfriMGSM only `exact_match`). `stderr = sqrt(s (1 - s) / n)` with the task's n.

Regenerate the committed file with `python -m finetasks_afr.demo.simulate` (or `make simulate`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from analysis.base.io import atomic_write
from analysis.scores.schema import KEY, SCHEMA

TaskKind = Literal["learnable", "late_emerging", "noisy", "random_label", "non_monotone"]

SIMULATED_MARKER = "sim-"
"""Prefix of every simulated run name."""

SIMULATED_SWEEP_PATH = Path(__file__).resolve().parent.parent / "data" / "simulated_sweep.parquet"
"""The committed simulated sweep, `simulate_sweep(seed=0)` (the bundled default is the real demo sweep)."""

PARQUET_METADATA_KEY = "finetasks_afr.simulated"

RUNS: tuple[str, ...] = ("sim-mix-afr60", "sim-mix-afr30", "sim-mix-afr10", "sim-mix-eng")
# Fraction of a task's gain that each run reaches: more African-language data, more skill.
RUN_QUALITY: tuple[float, ...] = (1.0, 0.82, 0.64, 0.46)
SEEDS: tuple[int, ...] = (0, 1, 2, 3)
STEPS: tuple[int, ...] = tuple(range(1500, 30001, 1500))
TOKENS_PER_STEP = 1_048_576
LANGUAGES: tuple[str, ...] = ("yor", "hau", "swa", "zul", "amh")

TRUTH_COLUMNS: dict[str, pl.DataType] = {
    "task": pl.String(),
    "kind": pl.String(),
    "expected_kept": pl.Boolean(),
    "expected_reason": pl.String(),
}

# The criterion each kind is built to fail (the `require` names of analysis/default_config.toml).
# A random_label task also fails monotonicity (its curve is flat); the one named is the designed cause.
EXPECTED_REASON: dict[str, str] = {
    "learnable": "kept",
    "late_emerging": "kept",
    "noisy": "snr",
    "random_label": "non_random",
    "non_monotone": "monotonicity",
}

# Per metric: (multiplier of the gain above baseline, multiplier of the effective sample size).
_METRICS: dict[str, dict[str, tuple[float, float]]] = {
    "CF": {
        "acc": (1.0, 1.0),
        "acc_norm": (1.06, 1.0),
        "acc_norm_token": (1.1, 1.3),
        "acc_norm_pmi": (0.9, 0.7),
    },
    "MCF": {
        "acc": (1.0, 1.0),
        "acc_norm": (1.0, 1.0),
        "acc_norm_token": (1.0, 1.1),
        "acc_norm_pmi": (0.95, 0.8),
    },
    "GEN": {"f1": (1.0, 1.0), "exact_match": (0.7, 1.0)},
}
_SHARED_ITEMS = 0.6  # share of a task's items scored alike by all its metric variants (<= min n multiplier)


@dataclass(frozen=True)
class Benchmark:
    """One task family in one formulation."""

    benchmark: str
    category: str
    formulation: str
    baseline: float
    gain: float  # best run's final score minus the baseline, for a learnable task
    n: int  # simulated items scored (effective sample size of the noise)
    languages: tuple[str, ...] = LANGUAGES
    metrics: tuple[str, ...] | None = None  # default: all of the formulation's metrics

    def task(self, language: str) -> str:
        suffix = "" if self.formulation == "GEN" else f"_{self.formulation.lower()}"
        return f"{self.benchmark}_{language}{suffix}"


_BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("afrimmlu", "GK", "CF", 0.25, 0.16, 3000),
    Benchmark("afrimmlu", "GK", "MCF", 0.25, 0.20, 3000),
    Benchmark("belebele", "RC", "CF", 0.25, 0.24, 2400),
    Benchmark("belebele", "RC", "MCF", 0.25, 0.26, 2400),
    Benchmark("afriqa", "RC", "GEN", 0.0, 0.34, 600, languages=("yor", "hau", "swa", "zul")),
    Benchmark("uhura_arc_easy", "RES", "CF", 0.25, 0.30, 2000),
    Benchmark("uhura_arc_easy", "RES", "MCF", 0.25, 0.24, 2000),
    Benchmark("winogrande", "RES", "CF", 0.5, 0.13, 3000, languages=("zul", "amh")),
    Benchmark("afrimgsm", "RES", "GEN", 0.0, 0.20, 500, metrics=("exact_match",)),
    Benchmark("afrixnli", "NLU", "CF", 1 / 3, 0.22, 2400),
    Benchmark("afrixnli", "NLU", "MCF", 1 / 3, 0.22, 2400),
    Benchmark("sib200", "NLU", "CF", 1 / 7, 0.42, 1500),
    Benchmark("afrisenti", "NLU", "CF", 1 / 3, 0.26, 2400, languages=("yor", "hau", "swa", "amh")),
    Benchmark("masakhaner", "GEN", "GEN", 0.0, 0.40, 800),
)

# The known quality of each task. Unlisted tasks are learnable. Per language, each suite (CF + GEN
# tasks, MCF + GEN tasks) keeps a task in every category, except amh, which keeps no RES task.
_KINDS: dict[str, TaskKind] = {
    # yor
    "afrimmlu_yor_mcf": "late_emerging",
    "belebele_yor_mcf": "random_label",
    "uhura_arc_easy_yor_mcf": "late_emerging",
    "afrimgsm_yor": "late_emerging",
    "afrixnli_yor_cf": "random_label",
    "afrixnli_yor_mcf": "late_emerging",
    "afrisenti_yor_cf": "noisy",
    # hau
    "afrimmlu_hau_mcf": "late_emerging",
    "belebele_hau_cf": "non_monotone",
    "belebele_hau_mcf": "late_emerging",
    "afriqa_hau": "late_emerging",
    "uhura_arc_easy_hau_mcf": "late_emerging",
    "afrimgsm_hau": "non_monotone",
    "afrixnli_hau_mcf": "late_emerging",
    "sib200_hau_cf": "noisy",
    # swa
    "afrimmlu_swa_mcf": "late_emerging",
    "belebele_swa_mcf": "random_label",
    "uhura_arc_easy_swa_cf": "noisy",
    "uhura_arc_easy_swa_mcf": "non_monotone",
    "afrixnli_swa_cf": "non_monotone",
    "afrixnli_swa_mcf": "late_emerging",
    "masakhaner_swa": "late_emerging",
    # zul
    "afrimmlu_zul_mcf": "late_emerging",
    "belebele_zul_mcf": "random_label",
    "uhura_arc_easy_zul_mcf": "late_emerging",
    "winogrande_zul_cf": "random_label",
    "afrimgsm_zul": "late_emerging",
    "afrixnli_zul_cf": "noisy",
    "afrixnli_zul_mcf": "late_emerging",
    # amh: no kept RES task
    "afrimmlu_amh_mcf": "late_emerging",
    "belebele_amh_mcf": "late_emerging",
    "uhura_arc_easy_amh_cf": "random_label",
    "uhura_arc_easy_amh_mcf": "non_monotone",
    "winogrande_amh_cf": "non_monotone",
    "afrimgsm_amh": "non_monotone",
    "afrixnli_amh_mcf": "late_emerging",
    "sib200_amh_cf": "noisy",
    "masakhaner_amh": "late_emerging",
}

_NOISY_N = 40  # items in a noisy task's evaluation set
_SEED_OFFSET_SD = {"noisy": 0.02}  # sd of the per-(task, run, seed) offset; default below
_DEFAULT_SEED_OFFSET_SD = 0.003
_RANDOM_LABEL_DEFICIT = 2.0  # how far below the baseline, in binomial standard deviations


@dataclass(frozen=True)
class SimTask:
    """One simulated task: its table columns and its known quality."""

    name: str
    spec: Benchmark
    language: str
    kind: TaskKind

    @property
    def n(self) -> int:
        return _NOISY_N if self.kind == "noisy" else self.spec.n

    @property
    def fewshot(self) -> int:
        return 5 if self.spec.formulation == "MCF" else 0

    @property
    def metrics(self) -> tuple[str, ...]:
        return self.spec.metrics or tuple(_METRICS[self.spec.formulation])


def simulated_tasks() -> tuple[SimTask, ...]:
    """Every simulated task, in a fixed order (language, then benchmark)."""
    tasks = tuple(
        SimTask(spec.task(lang), spec, lang, _KINDS.get(spec.task(lang), "learnable"))
        for lang in LANGUAGES
        for spec in _BENCHMARKS
        if lang in spec.languages
    )
    unknown = set(_KINDS) - {t.name for t in tasks}
    if unknown:  # a typo in _KINDS would silently make a task learnable
        raise ValueError(f"_KINDS names tasks that are not simulated: {sorted(unknown)}")
    for task in tasks:
        if task.spec.formulation == "GEN" and task.kind in ("noisy", "random_label"):
            raise ValueError(f"{task.name}: a generative task cannot be {task.kind} (see module docstring)")
    return tasks


def _learnable(t: np.ndarray) -> np.ndarray:
    tau = 0.3
    return (1 - np.exp(-t / tau)) / (1 - np.exp(-1 / tau))


def _late_emerging(t: np.ndarray) -> np.ndarray:
    onset = 0.4
    return np.clip((t - onset) / (1 - onset), 0.0, 1.0)


def _non_monotone(t: np.ndarray) -> np.ndarray:
    peak, final = 0.4, 0.45
    rising = np.sin(0.5 * np.pi * np.minimum(t / peak, 1.0))
    falling = 1 - (1 - final) * np.clip((t - peak) / (1 - peak), 0.0, 1.0)
    return np.where(t <= peak, rising, falling)


_SHAPES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "learnable": _learnable,
    "noisy": _learnable,
    "late_emerging": _late_emerging,
    "non_monotone": _non_monotone,
    "random_label": np.zeros_like,
}


def simulate_sweep(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Simulate the sweep: (score table, truth table). Deterministic in `seed`.

    Args:
        seed: seed of the numpy generator; the same seed gives equal frames.

    Returns:
        The score table, with exactly `analysis.scores.schema.SCHEMA`'s columns and dtypes, one row per
        (run, seed, step, task, fewshot, metric), sorted by that key; and the truth table (task, kind,
        expected_kept, expected_reason), one row per task. SIMULATED data, see the module docstring.
    """
    if min(n_mult for metrics in _METRICS.values() for _, n_mult in metrics.values()) <= _SHARED_ITEMS:
        raise ValueError("every metric's effective n must exceed the shared items")
    rng = np.random.default_rng(seed)
    tasks = simulated_tasks()
    steps = np.asarray(STEPS, dtype=np.int64)
    t = steps / steps[-1]
    quality = np.asarray(RUN_QUALITY)
    R, S, T = len(RUNS), len(SEEDS), len(steps)

    task_index = {task.name: i for i, task in enumerate(tasks)}
    offset_sd = np.array([_SEED_OFFSET_SD.get(task.kind, _DEFAULT_SEED_OFFSET_SD) for task in tasks])
    offsets = rng.normal(size=(len(tasks), R, S)) * offset_sd[:, None, None]

    def true_score(task: SimTask, gain_mult: float, n: int) -> np.ndarray:
        """p per (run, seed, step) of one metric variant, seed offsets included."""
        b = task.spec.baseline
        curve = b + task.spec.gain * gain_mult * quality[:, None] * _SHAPES[task.kind](t)[None, :]
        if task.kind == "random_label":
            curve = curve - _RANDOM_LABEL_DEFICIT * np.sqrt(b * (1 - b) / n)
        offset = offsets[task_index[task.name]]
        return np.clip(curve[:, None, :] + offset[:, :, None], 0.0, 1.0)

    # The metric variants of a task score the same answers: a share of the items (the clear-cut ones)
    # gets one verdict under every metric (K_shared ~ Binomial(n_shared, p_task)), the other items are
    # scored per metric, with the success rate that makes the metric's mean p_metric.
    n_shared = np.array([round(_SHARED_ITEMS * task.n) for task in tasks], dtype=np.int64)
    p_task = np.stack([true_score(task, 1.0, task.n) for task in tasks])
    k_shared = rng.binomial(n_shared[:, None, None, None], p_task)

    rows: list[tuple[SimTask, str, int]] = []  # (task, metric, effective n)
    p_own = np.empty((sum(len(task.metrics) for task in tasks), R, S, T))
    for task in tasks:
        for metric in task.metrics:
            gain_mult, n_mult = _METRICS[task.spec.formulation][metric]
            n = round(task.n * n_mult)
            i = task_index[task.name]
            p_metric = true_score(task, gain_mult, n)
            p_own[len(rows)] = (n * p_metric - n_shared[i] * p_task[i]) / (n - n_shared[i])
            rows.append((task, metric, n))
    G = len(rows)
    idx = np.array([task_index[task.name] for task, *_ in rows])
    n_eff = np.array([n for *_, n in rows], dtype=np.int64)[:, None, None, None]
    n_own = n_eff - n_shared[idx][:, None, None, None]
    k_own = rng.binomial(n_own, np.clip(p_own, 0.0, 1.0))
    score = (k_shared[idx] + k_own) / n_eff

    n_items = np.array([task.n for task, *_ in rows], dtype=np.float64)
    stderr = np.sqrt(score * (1 - score) / n_items[:, None, None, None])

    shape = (G, R, S, T)
    g_ix, r_ix, s_ix, t_ix = (a.ravel() for a in np.indices(shape))
    groups = pl.DataFrame(
        {
            "task": [task.name for task, *_ in rows],
            "benchmark": [task.spec.benchmark for task, *_ in rows],
            "language": [task.language for task, *_ in rows],
            "category": [task.spec.category for task, *_ in rows],
            "formulation": [task.spec.formulation for task, *_ in rows],
            "fewshot": [task.fewshot for task, *_ in rows],
            "metric": [metric for _, metric, *_ in rows],
            "random_baseline": [task.spec.baseline for task, *_ in rows],
        }
    )
    table = pl.concat(
        [
            pl.DataFrame(
                {
                    "run": pl.Series(RUNS).gather(r_ix),
                    "seed": np.asarray(SEEDS, dtype=np.int64)[s_ix],
                    "step": steps[t_ix],
                    "tokens": steps[t_ix] * TOKENS_PER_STEP,
                    "score": score.ravel(),
                    "stderr": stderr.ravel(),
                }
            ),
            groups[g_ix],
        ],
        how="horizontal",
    )
    table = table.select(pl.col(name).cast(dtype) for name, dtype in SCHEMA.items()).sort(KEY)

    truth = pl.DataFrame(
        {
            "task": [task.name for task in tasks],
            "kind": [task.kind for task in tasks],
            "expected_kept": [EXPECTED_REASON[task.kind] == "kept" for task in tasks],
            "expected_reason": [EXPECTED_REASON[task.kind] for task in tasks],
        },
        schema=TRUTH_COLUMNS,
    )
    return table, truth


def truth_path(path: Path) -> Path:
    """Where the truth table of the sweep at `path` lives: `<stem>_truth.csv` next to it."""
    return path.with_name(f"{path.stem}_truth.csv")


def write_bundled_sweep(path: Path, seed: int = 0) -> None:
    """Simulate the sweep and write it: the score table as parquet, the truth as `<stem>_truth.csv`.

    Both files are written to a temporary file first and renamed into place, so a reader never sees a
    half-written file. The parquet carries the metadata `finetasks_afr.simulated = "true"` and the seed.
    """
    path = Path(path)
    table, truth = simulate_sweep(seed)
    metadata = {
        PARQUET_METADATA_KEY: "true",
        "finetasks_afr.generator": "finetasks_afr.demo.simulate.simulate_sweep",
        "finetasks_afr.seed": str(seed),
        "finetasks_afr.truth": truth_path(path).name,
    }
    atomic_write(path, lambda tmp: table.write_parquet(tmp, compression="zstd", metadata=metadata))
    atomic_write(truth_path(path), lambda tmp: truth.write_csv(tmp))


def main(argv: list[str] | None = None) -> None:
    """`python -m finetasks_afr.demo.simulate [--out PATH] [--seed N]`."""
    parser = argparse.ArgumentParser(description="Write the SIMULATED default sweep (score table + truth).")
    parser.add_argument("--out", type=Path, default=SIMULATED_SWEEP_PATH, help="parquet path to write")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_bundled_sweep(args.out, args.seed)
    print(f"wrote {args.out} and {truth_path(args.out)} (simulated, seed {args.seed})")


if __name__ == "__main__":
    main()
