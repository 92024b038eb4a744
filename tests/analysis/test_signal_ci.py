"""Bootstrap confidence intervals of the selection statistics (monotonicity, seed SNR, consistency).

Three layers:
- hand-computed intervals: with two bootstrapped values every resample mean is min, midpoint or max, so the
  95% interval is exactly [min, max] whatever the random draws;
- a property test on random score tables: wherever a value and both bounds exist, low <= value <= high,
  and a bound is never present without the other;
- a loop-based reference that goes from the raw rows to each group's interval with scipy and explicit
  per-group loops, reproducing `bootstrap_mean_ci`'s resampling convention exactly, compared to
  `compute_signal` to 1e-12: it checks the wiring (which values are bootstrapped, orientation, the SNR
  inversion, null handling), not the resampling arithmetic alone.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.config import BootstrapConfig, Config, load_config
from analysis.scores.metrics import metric_info
from analysis.scores.schema import SCHEMA
from analysis.signal import compute_signal

T = 1_000_000_000  # tokens per step: tokens = step * T
BASE = load_config()
# consistency from step 3 on: steps 1 and 2 of every table are before the threshold and must not count
CONFIG = replace(BASE, consistency=replace(BASE.consistency, min_tokens=3 * T))

# (value, low, high) columns of the intervals under test
CI_COLUMNS = (
    ("monotonicity", "monotonicity_ci_low", "monotonicity_ci_high"),
    ("snr_seed", "snr_seed_ci_low", "snr_seed_ci_high"),
    ("snr", "snr_ci_low", "snr_ci_high"),
    ("consistency", "consistency_ci_low", "consistency_ci_high"),
)

# The point value is a polars mean (of rho, of the std cells, of tau) while each bootstrap mean is a row of a
# matrix product divided by the group size. When the interval collapses onto the value (every rho = 1, equal
# std cells, all taus tied) the two roundings can differ in the last bits, so the bracket allows 1e-9,
# relative for the SNR (signal / a possibly small std can be large).
SLACK = 1e-9


# --------------------------------------------------------------------------------------------- tables

_META: dict[str, dict[str, Any]] = {
    "acc": {"formulation": "CF", "random_baseline": 0.25},
    "acc_norm": {"formulation": "CF", "random_baseline": 0.25},
    "bits_per_byte": {"formulation": "PPL", "random_baseline": None},  # lower is better: oriented scores
}


def rows_to_table(rows: list[dict]) -> pl.DataFrame:
    """Fill the metadata columns of hand-written rows and give them the score-table schema."""
    defaults = {
        "seed": None, "tokens": None, "task": "t", "benchmark": "b", "language": "yor", "category": "GK",
        "fewshot": 0, "metric": "acc", "stderr": None,
    }  # fmt: skip
    full = [{**defaults, **_META[row.get("metric", "acc")], **row} for row in rows]
    return pl.DataFrame(full, schema=SCHEMA)


def series(run: str, scores: list[float], *, seed: int | None = 0, start: int = 1, **extra: Any) -> list[dict]:
    return [
        {"run": run, "seed": seed, "step": start + i, "tokens": (start + i) * T, "score": s, **extra}
        for i, s in enumerate(scores)
    ]


def _shape(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "rising":
        return np.sort(rng.uniform(0.1, 0.9, n))
    if kind == "falling":
        return np.sort(rng.uniform(0.1, 0.9, n))[::-1]
    if kind == "flat":
        return np.full(n, rng.uniform(0.2, 0.8))
    if kind == "ties":
        return rng.choice([0.25, 0.5, 0.75], n)
    return rng.uniform(0.0, 1.0, n)  # noisy


def random_table(
    seed: int,
    *,
    n_runs: int = 4,
    n_seeds: int = 3,
    n_steps: int = 8,
    drop: float = 0.0,
    grid: int | None = 1024,
) -> pl.DataFrame:
    """Two tasks x three metrics; per run a curve shape (rising, falling, flat, ties, noisy), per group a seed
    noise (0 included: identical replicas), scores clipped to [0, 1] and rounded to 1/grid (a power of two
    keeps seed means exact, so ties between runs survive any summation order); `drop` removes that share of
    rows (a seed missing at some steps, a final step without every seed)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("t1", "t2"):
        for metric in _META:
            noise = rng.choice([0.0, 0.01, 0.05, 0.2])
            for r in range(n_runs):
                base = _shape(rng, rng.choice(["rising", "falling", "flat", "ties", "noisy"]), n_steps)
                for e in range(n_seeds):
                    scores = np.clip(base + rng.normal(0.0, noise, n_steps), 0.0, 1.0)
                    if grid is not None:
                        scores = np.round(scores * grid) / grid
                    kept = rng.random(n_steps) >= drop
                    one = series(f"r{r}", scores.tolist(), seed=e, task=task, metric=metric)
                    rows += [row for row, keep in zip(one, kept, strict=True) if keep]
    return rows_to_table(rows)


# ---------------------------------------------------------------------------------------- hand-computed


def test_monotonicity_ci_of_two_series_is_min_max_of_rho():
    # rho 1.0 and rho 0.8 ([0.1, 0.3, 0.2, 0.4] ranks [1, 3, 2, 4]): mean 0.9, interval [0.8, 1.0]
    rows = series("a", [0.1, 0.2, 0.3, 0.4]) + series("b", [0.1, 0.3, 0.2, 0.4])
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    assert row["monotonicity"] == pytest.approx(0.9)
    assert row["monotonicity_ci_low"] == pytest.approx(0.8, abs=1e-12)
    assert row["monotonicity_ci_high"] == pytest.approx(1.0, abs=1e-12)


def test_monotonicity_ci_uses_oriented_scores():
    # bits per byte falling = improving: the same two series as above, negated
    rows = series("a", [0.4, 0.3, 0.2, 0.1], metric="bits_per_byte")
    rows += series("b", [0.4, 0.2, 0.3, 0.1], metric="bits_per_byte")
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    assert (row["monotonicity_ci_low"], row["monotonicity_ci_high"]) == pytest.approx((0.8, 1.0), abs=1e-12)


def test_seed_snr_ci_inverts_the_avg_std_interval():
    # std cells (ddof 1) 0.125/sqrt2 and 0.25/sqrt2 -> avg-std interval [0.125/sqrt2, 0.25/sqrt2];
    # signal = final mean 0.875 -> SNR interval [0.875 / (0.25/sqrt2), 0.875 / (0.125/sqrt2)] = [4.95, 9.90]
    rows = series("a", [0.5, 0.75], seed=0) + series("a", [0.625, 1.0], seed=1)
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    small, large = 0.125 / math.sqrt(2), 0.25 / math.sqrt(2)
    assert row["snr_seed"] == pytest.approx(0.875 / ((small + large) / 2), rel=1e-12)
    assert (row["avg_std_ci_low"], row["avg_std_ci_high"]) == pytest.approx((small, large), rel=1e-12)
    assert row["snr_seed_ci_low"] == pytest.approx(0.875 / large, rel=1e-12)
    assert row["snr_seed_ci_high"] == pytest.approx(0.875 / small, rel=1e-12)
    assert (row["snr_ci_low"], row["snr_ci_high"]) == (row["snr_seed_ci_low"], row["snr_seed_ci_high"])


def test_seed_snr_ci_is_unbounded_when_a_resample_has_zero_noise():
    # std cells 0 and 0.25/sqrt2: a resample of the zero cell twice has no noise -> the upper bound is inf
    rows = series("a", [0.5, 0.75], seed=0) + series("a", [0.5, 1.0], seed=1)
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    assert row["snr_seed_ci_low"] == pytest.approx(0.875 / (0.25 / math.sqrt(2)), rel=1e-12)
    assert row["snr_seed_ci_high"] == math.inf


def test_seed_snr_with_one_std_cell_has_no_interval():
    # Regression: with a single replicated (run, step) cell there is no avg-std interval, and the SNR
    # interval used to read (null, inf); both bounds must be null.
    rows = series("a", [0.5, 0.6, 0.7], seed=0) + series("a", [0.55], seed=1) + series("b", [0.4, 0.5, 0.6])
    row = compute_signal(rows_to_table(rows), CONFIG).row(0, named=True)
    assert row["snr_seed"] is not None
    assert row["avg_std_ci_low"] is None and row["avg_std_ci_high"] is None
    assert row["snr_seed_ci_low"] is None and row["snr_seed_ci_high"] is None
    assert row["snr_ci_low"] is None and row["snr_ci_high"] is None


def test_consistency_ci_ignores_pairs_before_the_token_threshold():
    # steps 1..4 with min_tokens 2T: steps 2, 3, 4 count. Pair (1, 2) reverses the order (tau -1) and must
    # not enter; (2, 3) keeps it (tau 1); (3, 4) swaps a and b (tau 1/3): consistency 2/3, interval [1/3, 1].
    values = {"a": [0.1, 0.3, 0.4, 0.5], "b": [0.2, 0.2, 0.3, 0.6], "c": [0.3, 0.1, 0.2, 0.45]}
    rows = [r for run, v in values.items() for r in series(run, v)]
    config = replace(CONFIG, consistency=replace(CONFIG.consistency, min_tokens=2 * T))
    row = compute_signal(rows_to_table(rows), config).row(0, named=True)
    assert row["consistency_n_pairs"] == 2
    assert row["consistency"] == pytest.approx(2 / 3)
    assert row["consistency_ci_low"] == pytest.approx(1 / 3, abs=1e-12)
    assert row["consistency_ci_high"] == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------------------------------ property


def assert_intervals_bracket(out: pl.DataFrame) -> int:
    """low <= value <= high wherever all three exist; a bound never without the other, nor without a value.

    Returns how many intervals were checked."""
    checked = 0
    for row in out.iter_rows(named=True):
        for value_col, low_col, high_col in CI_COLUMNS:
            value, low, high = row[value_col], row[low_col], row[high_col]
            where = (row["task"], row["metric"], value_col, low, value, high)
            assert (low is None) == (high is None), where
            if low is None:
                continue
            assert value is not None, where
            slack = SLACK * max(1.0, abs(value))
            assert low - slack <= value <= high + slack, where
            checked += 1
    return checked


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_runs=st.integers(3, 5),
    n_seeds=st.integers(2, 4),
    n_steps=st.integers(4, 10),
    drop=st.sampled_from([0.0, 0.15]),
    grid=st.sampled_from([None, 8, 1000]),
    ddof=st.sampled_from([0, 1]),
)
@pytest.mark.slow
def test_intervals_bracket_the_value_on_random_tables(seed, n_runs, n_seeds, n_steps, drop, grid, ddof):
    table = random_table(seed, n_runs=n_runs, n_seeds=n_seeds, n_steps=n_steps, drop=drop, grid=grid)
    config = replace(CONFIG, snr=replace(CONFIG.snr, ddof=ddof))
    assert assert_intervals_bracket(compute_signal(table, config)) > 0


# ----------------------------------------------------------------------------------------- reference


def reference_bootstrap(values: list[float], cfg: BootstrapConfig) -> tuple[float | None, float | None]:
    """`bootstrap_mean_ci` for one group, with loops: the values sorted, the multinomial counts drawn from
    `default_rng([seed, size])`, each resample mean summed by hand, linear-interpolated percentiles."""
    if len(values) < 2:
        return None, None
    xs = sorted(values)
    size = len(xs)
    draws = np.random.default_rng([cfg.seed, size]).multinomial(size, [1.0 / size] * size, cfg.n)
    means = sorted(sum(x * int(c) for x, c in zip(xs, counts, strict=True)) / size for counts in draws)
    alpha = (1 - cfg.confidence) / 2
    return _percentile(means, alpha), _percentile(means, 1 - alpha)


def _percentile(ordered: list[float], q: float) -> float:
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def _mean(values: list[float]) -> float | None:
    return _mean_of(values) if values else None


def _mean_of(values: list[float]) -> float:
    """The mean of a non-empty list (`_mean` without its None for no values)."""
    return sum(values) / len(values)


def reference_monotonicity(rows: list[dict], sign: float, config: Config) -> dict:
    cfg = config.monotonicity
    points: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if (cfg.step_min is None or r["step"] >= cfg.step_min) and (cfg.step_max is None or r["step"] <= cfg.step_max):
            points[(r["run"], r["seed"])].append((r["step"], sign * r["score"]))
    rhos = []
    for series_points in points.values():
        series_points.sort()
        steps = [s for s, _ in series_points]
        scores = [v for _, v in series_points]
        if len(steps) >= cfg.min_checkpoints and len(set(scores)) > 1:
            rhos.append(float(scipy.stats.spearmanr(steps, scores).statistic))
    low, high = reference_bootstrap(rhos, config.bootstrap)
    return {"monotonicity": _mean(rhos), "monotonicity_ci_low": low, "monotonicity_ci_high": high}


def reference_seed_snr(rows: list[dict], config: Config) -> dict:
    cells: dict[tuple, list[float]] = defaultdict(list)  # (run, step) -> raw scores of its seeds
    run_seeds: dict[str, set] = defaultdict(set)
    for r in rows:
        cells[(r["run"], r["step"])].append(r["score"])
        run_seeds[r["run"]].add(r["seed"])
    stds = [float(np.std(v, ddof=config.snr.ddof)) for v in cells.values() if len(v) >= 2]
    finals = []
    for run, seeds in run_seeds.items():
        complete = [step for (rn, step), v in cells.items() if rn == run and len(v) == len(seeds)]
        if len(seeds) >= 2 and complete:
            finals.append(_mean_of(cells[(run, max(complete))]))
    signal, avg_std = _mean(finals), _mean(stds)
    snr = signal / avg_std if signal is not None and avg_std is not None and avg_std > 0 else None
    std_low, std_high = reference_bootstrap(stds, config.bootstrap)
    low = high = None
    if signal is not None and snr is not None and std_low is not None and std_high is not None:
        # SNR = signal / avg-std is decreasing in avg-std: the high std bound gives the low SNR bound
        low = signal / std_high if std_high > 0 else None
        high = signal / std_low if std_low > 0 else math.inf
    return {"snr_seed": snr, "snr_seed_ci_low": low, "snr_seed_ci_high": high}


def reference_consistency(rows: list[dict], sign: float, config: Config) -> dict:
    cfg = config.consistency
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        cells[(r["run"], r["step"])].append(r)
    curve = {key: sign * _mean_of([r["score"] for r in rs]) for key, rs in cells.items()}
    tokens = {key: max((r["tokens"] for r in rs if r["tokens"] is not None), default=None) for key, rs in cells.items()}
    if all(t is not None for t in tokens.values()):
        eligible = {key for key, t in tokens.items() if t is not None and t >= cfg.min_tokens}
    elif cfg.min_step is not None:
        eligible = {key for key in cells if key[1] >= cfg.min_step}
    elif cfg.min_tokens <= 0:
        eligible = {key for key in cells if key[1] >= 0}
    else:
        eligible = set()
    runs = sorted({run for run, _ in cells})
    taus = []
    for a, b in pairwise(sorted({step for _, step in eligible})):
        both = [run for run in runs if (run, a) in eligible and (run, b) in eligible]
        if len(both) < 2:
            continue
        tau = scipy.stats.kendalltau([curve[(r, a)] for r in both], [curve[(r, b)] for r in both]).statistic
        if not math.isnan(tau):
            taus.append(float(tau))
    value = _mean(taus) if len(runs) >= cfg.min_runs else None
    low, high = reference_bootstrap(taus, config.bootstrap) if value is not None else (None, None)
    return {"consistency": value, "consistency_ci_low": low, "consistency_ci_high": high}


def reference_intervals(table: pl.DataFrame, config: Config) -> dict[tuple, dict]:
    """Per (task, fewshot, metric): monotonicity, seed SNR, consistency and their intervals, from the rows."""
    assert config.consistency.variant == "tau_b"  # scipy's kendalltau; tau-a is not referenced here
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in table.iter_rows(named=True):
        groups[(r["task"], r["fewshot"], r["metric"])].append(r)
    out = {}
    for key, rows in groups.items():
        info = metric_info(key[2])
        assert info is not None
        sign = 1.0 if info.higher_is_better else -1.0
        expected = {
            **reference_monotonicity(rows, sign, config),
            **reference_seed_snr(rows, config),
            **reference_consistency(rows, sign, config),
        }
        # fallback "none": the snr columns are the seed SNR's
        expected |= {"snr": expected["snr_seed"], "snr_ci_low": expected["snr_seed_ci_low"]}
        expected["snr_ci_high"] = expected["snr_seed_ci_high"]
        out[key] = expected
    return out


def assert_matches_reference(table: pl.DataFrame, config: Config) -> dict[str, int]:
    """compute_signal == the reference to 1e-12 (relative for large values); returns non-null bounds per column."""
    expected = reference_intervals(table, config)
    out = compute_signal(table, config)
    assert out.height == len(expected)
    present: dict[str, int] = defaultdict(int)
    for row in out.iter_rows(named=True):
        want = expected[(row["task"], row["fewshot"], row["metric"])]
        for column, value in want.items():
            got = row[column]
            where = (row["task"], row["metric"], column, got, value)
            if value is None or math.isinf(value):
                assert got == value, where
            else:
                assert got is not None, where
                assert got == pytest.approx(value, rel=1e-12, abs=1e-12), where
                present[column] += 1
    return present


HAND_TABLES = {
    "mixed": (
        series("a", [0.5, 0.75, 0.625, 0.875], seed=0)
        + series("a", [0.5, 0.625, 0.75, 1.0], seed=1)
        + series("b", [0.25, 0.5, 0.5, 0.75], seed=0)
        + series("b", [0.375, 0.5, 0.625], seed=1)  # seed 1 lacks the last step: b's final common step is 3
        + series("c", [0.75, 0.5, 0.25, 0.5], seed=0)
        + series("c", [0.75, 0.5, 0.25, 0.5], seed=1)  # identical replicas: zero-noise cells
    ),
    "lower_is_better": (
        series("a", [0.9, 0.5, 0.625, 0.25], seed=0, metric="bits_per_byte")
        + series("a", [0.875, 0.5, 0.5, 0.375], seed=1, metric="bits_per_byte")
        + series("b", [0.75, 0.75, 0.5, 0.5], seed=0, metric="bits_per_byte")
        + series("b", [0.75, 0.625, 0.5, 0.5], seed=1, metric="bits_per_byte")
        + series("c", [0.5, 0.25, 0.375, 0.125], seed=0, metric="bits_per_byte")
        + series("c", [0.5, 0.375, 0.25, 0.125], seed=1, metric="bits_per_byte")
    ),
    "null_seeds_two_runs": (  # no replicas: no SNR; 2 runs: no consistency; one monotonicity interval
        series("a", [0.25, 0.5, 0.75, 0.5], seed=None) + series("b", [0.5, 0.25, 0.75, 1.0], seed=None)
    ),
    "one_std_cell": (  # SNR measurable but with one std cell: no interval
        series("a", [0.5, 0.6, 0.7], seed=0)
        + series("a", [0.55], seed=1)
        + series("b", [0.4, 0.5, 0.6])
        + series("c", [0.1, 0.7, 0.2])
    ),
}


@pytest.mark.parametrize("name", list(HAND_TABLES))
def test_hand_tables_match_reference(name):
    assert_matches_reference(rows_to_table(HAND_TABLES[name]), CONFIG)


def test_no_tokens_with_min_step_matches_reference():
    # without token counts consistency starts at min_step: steps 2, 3, 4 -> two pairs, one interval
    rows = HAND_TABLES["mixed"] + series("d", [0.5, 0.25, 0.75, 0.625]) + series("d", [0.5, 0.375, 0.75, 0.75], seed=1)
    config = replace(CONFIG, consistency=replace(CONFIG.consistency, min_step=2))
    present = assert_matches_reference(rows_to_table([{**r, "tokens": None} for r in rows]), config)
    assert present["consistency_ci_low"] == 1


VARIANTS = {
    "default": CONFIG,
    "ddof0_window": replace(
        CONFIG,
        snr=replace(CONFIG.snr, ddof=0),
        monotonicity=replace(CONFIG.monotonicity, step_min=2, step_max=7),
    ),
    "bootstrap": replace(CONFIG, bootstrap=BootstrapConfig(n=500, seed=7, confidence=0.9)),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("seed", range(3))
def test_random_tables_match_reference(seed, variant):
    table = random_table(1000 + seed, n_runs=3 + seed, n_seeds=2 + seed, n_steps=8, drop=0.1 * seed)
    present = assert_matches_reference(table, VARIANTS[variant])
    for column in ("monotonicity_ci_low", "snr_seed_ci_low", "consistency_ci_low"):
        assert present[column] > 0, column  # the comparison covered real intervals of every statistic
