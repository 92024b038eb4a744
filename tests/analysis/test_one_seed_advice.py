"""A table with one seed per run (lm-eval leaderboard results, the Pythia evaluations) has no seed SNR: the reason a
task is dropped for it must say the way forward, `[snr] fallback = "checkpoint"`, not only what is missing."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.config import load_config
from analysis.scores.read import read_scores
from analysis.select import select
from analysis.signal import compute_signal

LEADERBOARD = Path(__file__).parents[1] / "fixtures" / "lm_eval_04" / "leaderboard"


def test_no_seed_replicas_reason_names_the_checkpoint_fallback() -> None:
    table, _ = read_scores(LEADERBOARD)
    config = load_config()
    decisions = select(compute_signal(table, config, with_ci=False), config).decisions
    no_seeds = decisions.filter(pl.col("reason").str.contains("no seed replicas (no run", literal=True))
    assert no_seeds.height > 0
    for reason in no_seeds.get_column("reason"):
        assert '[snr] fallback = "checkpoint"' in reason and "--config" in reason, reason
