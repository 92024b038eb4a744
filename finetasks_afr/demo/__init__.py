"""The embedded default: what `make select-tasks` analyses when no score table is given.

Until a real end-to-end demo sweep exists, the default is a SIMULATED FineTasks-style checkpoint sweep
(`finetasks_afr.demo.simulate`): no model was trained or evaluated to produce it. Every run name in it
starts with `sim-` (`simulate.SIMULATED_MARKER`) and the parquet file carries the metadata
`finetasks_afr.simulated = "true"`.

`simulate_sweep`, `write_bundled_sweep`, `truth_path`, `SIMULATED_SWEEP_PATH` and `SIMULATED_MARKER` are
re-exported from `finetasks_afr.demo.simulate` (imported on first use, so that
`python -m finetasks_afr.demo.simulate` runs cleanly).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SIMULATED_MARKER", "SIMULATED_SWEEP_PATH", "simulate_sweep", "truth_path", "write_bundled_sweep"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from finetasks_afr.demo import simulate

        return getattr(simulate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
