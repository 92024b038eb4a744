"""The bundled default analysis input: the real end-to-end demo's sweep and what goes with it.

`select`, `aggregate`, `report` and the notebook analyse this sweep when no score table is given. It comes with
the demo's own configuration (`demo_config.toml`: the FineTasks consistency threshold scaled to the demo's
training length), which they use unless `--config` names another, and with the design it must recover: the mixes'
language shares (`demo_sweep_mixes.json`) and each task's designed kind with the check of the analysis against
it (`demo_sweep_truth.csv`). `make demo` (`finetasks-afr demo --bundle`) refreshes all four.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent
BUNDLED_SWEEP = DATA / "demo_sweep.parquet"
BUNDLED_CONFIG = DATA / "demo_config.toml"
BUNDLED_TRUTH = DATA / "demo_sweep_truth.csv"
BUNDLED_MIXES = DATA / "demo_sweep_mixes.json"


def config_for(scores: Path | str | None, config: Path | str | None) -> Path | None:
    """The configuration file to analyse `scores` with: `config` when given; the demo's own for the bundled sweep
    (no `scores`, or the bundled file itself); else None (analysis/default_config.toml, the FineTasks
    values)."""
    if config is not None:
        return Path(config)
    if scores is None or Path(scores).resolve() == BUNDLED_SWEEP:
        return BUNDLED_CONFIG
    return None


__all__ = ["BUNDLED_CONFIG", "BUNDLED_MIXES", "BUNDLED_SWEEP", "BUNDLED_TRUTH", "config_for"]
