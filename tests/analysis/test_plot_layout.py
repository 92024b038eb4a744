"""Readability of the figures: axis limits that fit the data, labels that don't overlap, titles inside.

These check the drawn geometry (axis limits, text extents on an Agg canvas) rather than pixels, so
they catch the layout regressions a reader sees without comparing images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from analysis import plots
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


def _overview_figure(monkeypatch: pytest.MonkeyPatch, n: int) -> Figure:
    """The figure `plot_criteria_overview` would write, for `n` tasks on one diagonal of the scatter."""
    rows = [
        {
            "task": f"community|benchmark_number_{i}_xho_mcf|0",
            "fewshot": 0,
            "metric": "acc_norm",
            "language": "xho",
            "monotonicity": 0.5 + 0.01 * i,
            "snr": 10.0 + i,
            "consistency": 0.3 + 0.01 * i,
            "kept": i % 2 == 0,
            "chosen": True,
        }
        for i in range(n)
    ]
    captured: dict[str, Figure] = {}

    def keep(fig: Figure, out_path: Path) -> Path:
        captured["fig"] = fig
        return out_path

    monkeypatch.setattr(plots, "_save", keep)
    plots.plot_criteria_overview(pl.DataFrame(rows), "xho", Path("unused.png"), monotonicity_min=0.5, snr_min=20.0)
    return captured["fig"]


@pytest.mark.slow  # two full draws of a 40-task figure
def test_the_scatter_labels_of_40_tasks_do_not_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    fig = _overview_figure(monkeypatch, 40)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for ax in fig.axes:
        texts = [t for t in [*ax.texts, *ax.get_yticklabels()] if t.get_text()]
        boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the text alone, not a leader line
        clashes = [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
        assert not clashes, f"{len(clashes)} overlapping labels in {ax.get_title()!r}"


def test_a_long_run_order_title_stays_inside_the_figure() -> None:
    ranks = pl.DataFrame(
        {"run": ["a", "b", "a", "b"], "step": [1, 1, 2, 2], "tokens": [4, 4, 8, 8], "rank": [1, 2, 2, 1]}
    )
    taus = pl.DataFrame({"step": [2], "tokens": [8], "tau": [-1.0]})
    title = "community|flores_ppl_xho|0 (0-shot) bits_per_byte: how the runs are ordered over training, " * 2
    fig = plots.run_order_figure(ranks, taus, title=title.strip())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    suptitle = fig.get_suptitle()
    box = next(t for t in fig.texts if t.get_text() == suptitle).get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox)
