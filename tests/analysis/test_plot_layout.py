"""Readability of the figures: axis limits that fit the data, labels that don't overlap, titles inside.

These check the drawn geometry (axis limits, text extents on an Agg canvas) rather than pixels, so
they catch the layout regressions a reader sees without comparing images.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.plots import training_curves_figure

TASK = "community|flores_ppl_xho|0"


def _bpb_table(baseline: float, level: float = 1.0) -> pl.DataFrame:
    rows: list[dict[str, object]] = []
    for k, run in enumerate(("mix-a", "mix-b", "mix-c")):
        for i, step in enumerate((1000, 2000, 3000)):
            rows.append(
                {
                    "run": run,
                    "seed": 1,
                    "step": step,
                    "tokens": step * 4_000_000,
                    "task": TASK,
                    "fewshot": 0,
                    "metric": "bits_per_byte",
                    "score": level + 0.2 - 0.05 * i - 0.05 * k,
                    "random_baseline": baseline,
                }
            )
    return pl.DataFrame(rows)


def _texts(ax: object) -> list[str]:
    return [t.get_text() for t in ax.texts]  # type: ignore[attr-defined]


def test_a_baseline_far_above_the_data_is_marked_at_the_edge_not_drawn_to_scale() -> None:
    fig = training_curves_figure(_bpb_table(8.0), TASK, 0)
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    assert high < 2.0, "the y axis must fit the data (~0.9-1.2), not stretch to the baseline 8"
    assert low > 0.5
    assert any("random" in t and "8.00" in t for t in _texts(ax)), _texts(ax)


def test_a_baseline_near_the_data_is_still_a_line() -> None:
    fig = training_curves_figure(_bpb_table(1.3), TASK, 0)
    ax = fig.axes[0]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert dashed and np.allclose(np.asarray(dashed[0].get_ydata(), dtype=float), 1.3)
    assert ax.get_ylim()[1] >= 1.3
    assert not any("random" in t for t in _texts(ax))
