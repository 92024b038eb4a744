"""Figures of the FineTasks analysis, written as PNG files.

Every function builds its own `matplotlib.figure.Figure` with an Agg canvas (pyplot is never imported, so
there is no global figure state: the functions are safe in loops and threads and need no display), and
writes the file atomically (`analysis.base.io.atomic_write`). The PNG carries
no timestamp or software version, so the same input gives the same bytes.

- `plot_training_curves`: score against tokens (or steps) for one task, one panel per metric.
- `plot_criteria_overview`: monotonicity x SNR scatter and consistency bars for one language.
- `plot_ranking`: mean rank per run and a heatmap of per-language scores.
- `plot_consistency_forest`: ordering consistency with its 95% CI for every task of one language.
- `plot_english_gap`: the gap to English of one benchmark, at the last checkpoint and over training.

The `*_figure` functions return the `Figure` instead of writing it (the notebook helpers of
`analysis.explore` show them inline; `figure_png` turns one into PNG bytes):

- `training_curves_figure`: what `plot_training_curves` writes, with a choice of seed band.
- `task_criteria_figure`: every FineTasks criterion of one task, per metric, with CIs and thresholds.
- `formulation_curves_figure`: the chosen metric of each formulation (CF against MCF) of one benchmark.
- `run_order_figure`: the rank of each run over training and Kendall's tau between consecutive checkpoints.
- `consistency_forest_figure`: what `plot_consistency_forest` writes, for any set of tasks.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import matplotlib
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogFormatter

from analysis.base.io import atomic_write
from analysis.report import consistency_order
from analysis.scores.metrics import metric_info
from analysis.scores.validate import checkpoint_tokens

__all__ = [
    "BAND_LABELS",
    "DPI",
    "METRIC_ORDER",
    "Band",
    "consistency_forest_figure",
    "figure_png",
    "formulation_curves_figure",
    "plot_consistency_forest",
    "plot_criteria_overview",
    "plot_english_gap",
    "plot_ranking",
    "plot_training_curves",
    "run_order_figure",
    "seed_curves",
    "task_criteria_figure",
    "training_curves_figure",
]

Band = Literal["minmax", "sd"]
# What the shaded band around each run's seed mean shows, as the legends say it.
BAND_LABELS: dict[str, str] = {"minmax": "seed min..max", "sd": "seed mean ± 1 sd"}

DPI = 110
# Panels of `plot_training_curves` come in this order; other metrics follow, alphabetically.
METRIC_ORDER: tuple[str, ...] = ("acc", "acc_norm", "acc_norm_token", "acc_norm_pmi", "acc_norm_char", "f1")

_KEPT_COLOR = "#2ca02c"
_DROPPED_COLOR = "#d62728"
_GREY = "#7f7f7f"
_MISSING_COLOR = "#d9d9d9"
# PNG text chunks matplotlib would otherwise write; None drops them (no version, no timestamp).
_TITLE_WIDTH = 46  # characters that fit above one 4.3-inch panel at 10 pt
_PNG_METADATA: dict[str, str | None] = {"Software": None}


# --------------------------------------------------------------------------------------------- helpers


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """The PNG bytes `_save` would write (no timestamp or version: the same figure gives the same bytes)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata=_PNG_METADATA, facecolor="white")
    return buffer.getvalue()


def _wrapped(title: str, width_in: float, fontsize: float) -> str:
    """`title` broken into lines that fit a figure `width_in` inches wide at `fontsize` points.

    A centred suptitle wider than its figure is cut at both edges (constrained layout does not shrink
    it); the notebook's titles name a task, a metric and a window, often longer than one line. The
    width of a character is taken as 0.6 of the font size, wide for DejaVu Sans, so a line fits.
    """
    chars = max(20, int(width_in * 72.0 / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in title.splitlines() or [""])


def _save(fig: Figure, out_path: Path) -> Path:
    """Write `fig` as PNG to `out_path` through the project's one atomic writer; returns the path.

    The suffix is checked first: matplotlib picks the format from the name, and every figure here is a PNG.
    """
    out_path = Path(out_path)
    if out_path.suffix.lower() != ".png":
        raise ValueError(f"out_path must end in .png (the figures are PNG files), got {str(out_path)!r}")
    return atomic_write(
        out_path,
        lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata=_PNG_METADATA, facecolor="white"),
    )


def _require_columns(df: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {df.columns}")


def _finite(value: Any) -> float | None:
    """`value` as a float, or None when null, NaN or infinite."""
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _finite_or_nan(value: Any) -> float:
    v = _finite(value)
    return math.nan if v is None else v


def _null_last(value: Any) -> tuple[bool, float]:
    """Sort key: finite values ascending, then null / NaN."""
    v = _finite(value)
    return (v is None, v if v is not None else 0.0)


def _higher_is_better(metric: str) -> bool:
    info = metric_info(metric)
    return True if info is None else info.higher_is_better


def _metric_sort_key(metric: str) -> tuple[int, str]:
    return (METRIC_ORDER.index(metric), "") if metric in METRIC_ORDER else (len(METRIC_ORDER), metric)


def _run_colors(runs: Sequence[str]) -> dict[str, Any]:
    cmap = matplotlib.colormaps["tab10" if len(runs) <= 10 else "tab20"]
    n = cmap.N
    return {run: cmap(i % n) for i, run in enumerate(runs)}


def _short_task(task: str, width: int = 24) -> str:
    """`community|afrixnli_yor_mcf|0` -> `afrixnli_yor_mcf`; long names are cut with an ellipsis."""
    parts = [p for p in task.split("|") if p and not p.isdigit()]
    name = (parts[1] if len(parts) >= 2 else parts[0]) if parts else task
    return name if len(name) <= width else name[: width - 1] + "…"


def _token_scale(max_tokens: float) -> tuple[float, str]:
    if max_tokens >= 1e9:
        return 1e9, "tokens seen (B)"
    if max_tokens >= 1e6:
        return 1e6, "tokens seen (M)"
    if max_tokens >= 1e4:  # tiny demo models: 655,360 tokens would crowd the axis as 600000
        return 1e3, "tokens seen (K)"
    return 1.0, "tokens seen"


# ---------------------------------------------------------------------------------- training curves


def seed_curves(
    rows: pl.DataFrame, by: Sequence[str] = ("metric",), *, band: Band = "minmax", ddof: int = 1
) -> pl.DataFrame:
    """Per (*by, run, step), sorted: `mean` score over seeds, the band `lo`..`hi`, `n_seeds`, `tokens` (the seed mean,
    `analysis.scores.validate.checkpoint_tokens`).

    The band is the seed minimum..maximum ("minmax") or mean ± one std across seeds ("sd", with `ddof`;
    0 wide for a single seed). `rows` need run, step and score (null and non-finite scores removed by
    the caller); without a tokens column, tokens are null.
    """
    if band not in BAND_LABELS:
        raise ValueError(f"band must be one of {sorted(BAND_LABELS)}, got {band!r}")
    tokens = pl.col("tokens").cast(pl.Float64) if "tokens" in rows.columns else pl.lit(None, dtype=pl.Float64)
    keys = [*by, "run", "step"]
    curves = (
        rows.with_columns(tokens.alias("tokens"))
        .group_by(keys)
        .agg(
            mean=pl.col("score").mean(),
            lo=pl.col("score").min(),
            hi=pl.col("score").max(),
            sd=pl.col("score").std(ddof=ddof).fill_null(0.0),
            n_seeds=pl.len().cast(pl.Int64),
            tokens=checkpoint_tokens(),
        )
        .sort(keys)
    )
    if band == "sd":
        curves = curves.with_columns(lo=pl.col("mean") - pl.col("sd"), hi=pl.col("mean") + pl.col("sd"))
    return curves.drop("sd")


def plot_training_curves(
    table: pl.DataFrame,
    task: str,
    fewshot: int,
    out_path: Path,
    *,
    metrics: Sequence[str] | None = None,
    highlight_metric: str | None = None,
    x: str = "tokens",
    band: Band = "minmax",
) -> Path:
    """Score over training for one `(task, fewshot)`: one panel per metric, one line per run.

    Each line is the mean over the run's seeds, with a band from the minimum to the maximum seed (drawn
    only for runs with more than one seed). The random baseline is a dashed grey line, or, when it lies
    further from the data than the data's span (a bits-per-byte task's 8 bits), a label with its value
    and an arrow at the axis edge, so the y axis keeps to the data. The x axis is
    tokens seen when `x="tokens"` and every plotted row has `tokens`, else the step. Panels follow
    `metrics` when given, else `METRIC_ORDER` and then the other metrics alphabetically; metrics without
    any score are left out. `highlight_metric`'s panel is titled "(selected)" and framed (no panel is
    marked when it is not plotted). Null and NaN scores are skipped. `band="sd"` draws mean ± one
    standard deviation across seeds instead (see `training_curves_figure`).

    Raises ValueError naming the task when nothing is left to plot.
    """
    fig = training_curves_figure(
        table, task, fewshot, metrics=metrics, highlight_metric=highlight_metric, x=x, band=band
    )
    return _save(fig, out_path)


def training_curves_figure(
    table: pl.DataFrame,
    task: str,
    fewshot: int,
    *,
    metrics: Sequence[str] | None = None,
    highlight_metric: str | None = None,
    x: str = "tokens",
    band: Band = "minmax",
    ddof: int = 1,
) -> Figure:
    """The figure of `plot_training_curves`, returned instead of written.

    `band` chooses what the shaded band around each run's seed mean shows: "minmax" (lowest to highest
    seed) or "sd" (mean ± one standard deviation across seeds, with `ddof`, as the SNR's seed std);
    the legend says which.
    """
    if x not in ("tokens", "step"):
        raise ValueError(f"x must be 'tokens' or 'step', got {x!r}")
    if band not in BAND_LABELS:
        raise ValueError(f"band must be one of {sorted(BAND_LABELS)}, got {band!r}")
    _require_columns(table, ("run", "seed", "step", "task", "fewshot", "metric", "score"), "score table")
    label = f"task {task!r} ({fewshot}-shot)"
    rows = table.filter(
        (pl.col("task") == task)
        & (pl.col("fewshot") == fewshot)
        & pl.col("score").is_not_null()
        & pl.col("score").is_finite()
        & pl.col("step").is_not_null()
        & pl.col("run").is_not_null()
    )
    if rows.is_empty():
        raise ValueError(f"nothing to plot for {label}: no non-null score in the table")

    present = set(rows.get_column("metric").drop_nulls().to_list())
    if metrics is not None:
        panels = list(dict.fromkeys(m for m in metrics if m in present))
        if not panels:
            raise ValueError(
                f"nothing to plot for {label}: none of the metrics {list(metrics)} has a score "
                f"(metrics present: {sorted(present)})"
            )
    else:
        panels = sorted(present, key=_metric_sort_key)
    rows = rows.filter(pl.col("metric").is_in(panels))

    has_tokens = "tokens" in rows.columns
    use_tokens = x == "tokens" and has_tokens and rows.get_column("tokens").null_count() == 0
    if not has_tokens:
        rows = rows.with_columns(tokens=pl.lit(None, dtype=pl.Int64))
    baseline_col = (
        pl.col("random_baseline").cast(pl.Float64)
        if "random_baseline" in rows.columns
        else pl.lit(None, dtype=pl.Float64)
    )
    curves = seed_curves(rows, ("metric",), band=band, ddof=ddof)
    n_seeds = rows.group_by("metric", "run").agg(n=pl.col("seed").n_unique())
    seeds_of = {(m, r): n for m, r, n in n_seeds.iter_rows()}
    baselines = {
        m: _finite(v)
        for m, v in rows.with_columns(baseline=baseline_col)
        .group_by("metric")
        .agg(pl.col("baseline").drop_nans().mean())
        .iter_rows()
    }
    runs = sorted(set(rows.get_column("run").drop_nulls().to_list()))
    colors = _run_colors(runs)

    if use_tokens:
        scale, xlabel = _token_scale(_finite(curves.get_column("tokens").max()) or 0.0)
    else:
        scale, xlabel = 1.0, "step"

    n = len(panels)
    ncols = min(n, 4)
    nrows = math.ceil(n / ncols)
    fig = _new_figure(4.3 * ncols, 3.4 * nrows + 0.5)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    any_band = False
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_visible(False)
            continue
        metric = panels[i]
        drawn: list[np.ndarray] = []
        for run in runs:
            c = curves.filter((pl.col("metric") == metric) & (pl.col("run") == run))
            if c.is_empty():
                continue
            xs = (
                c.get_column("tokens").to_numpy() / scale
                if use_tokens
                else c.get_column("step").to_numpy().astype(float)
            )
            ax.plot(xs, c.get_column("mean").to_numpy(), color=colors[run], lw=1.6, marker="o", ms=2.5)
            drawn.append(c.get_column("mean").to_numpy())
            if seeds_of.get((metric, run), 1) > 1:
                any_band = True
                drawn.extend((c.get_column("lo").to_numpy(), c.get_column("hi").to_numpy()))
                ax.fill_between(
                    xs,
                    c.get_column("lo").to_numpy(),
                    c.get_column("hi").to_numpy(),
                    color=colors[run],
                    alpha=0.2,
                    lw=0,
                )
        baseline = baselines.get(metric)
        if baseline is not None:
            _draw_baseline(ax, baseline, drawn, metric)
        selected = metric == highlight_metric
        title = f"{task} ({fewshot}-shot) — {metric}" + (" (selected)" if selected else "")
        if len(title) > _TITLE_WIDTH:  # long lighteval names: the metric goes on a second line
            title = title.replace(" — ", " —\n", 1)
        ax.set_title(title, fontsize=10)
        if selected:
            for spine in ax.spines.values():
                spine.set_color("#ff7f0e")
                spine.set_linewidth(2.0)
        ylabel = metric if _higher_is_better(metric) else f"{metric} (lower is better)"
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)

    handles: list[Any] = [Line2D([], [], color=colors[r], lw=1.6, label=r) for r in runs]
    if any_band:
        handles.append(Patch(color=_GREY, alpha=0.3, label=BAND_LABELS[band]))
    if any(v is not None for v in baselines.values()):
        handles.append(Line2D([], [], color=_GREY, ls="--", lw=1.2, label="random baseline"))
    legend_cols = min(len(handles), max(2, int(4.3 * ncols / 1.7)))
    fig.legend(handles=handles, loc="outside lower center", ncols=legend_cols, fontsize=8)
    return fig


def _draw_baseline(ax: Axes, baseline: float, drawn: Sequence[np.ndarray], metric: str) -> None:
    """The random baseline of one curve panel: a dashed line, or a mark at the axis edge when far away.

    A baseline further from the data than the data's own span (the 8-bit random baseline of a
    bits-per-byte task, against mixes at 1.0-1.2 bits) would squeeze the runs' differences into one
    flat band if drawn to scale. Then the y axis keeps to the data and the baseline is written at the
    top or bottom edge with its value and an arrow pointing to where it lies.
    """
    values = np.concatenate([np.asarray(v, dtype=float) for v in drawn]) if drawn else np.array([])
    values = values[np.isfinite(values)]
    if values.size == 0:
        ax.axhline(baseline, color=_GREY, ls="--", lw=1.2)
        return
    lo, hi = float(values.min()), float(values.max())
    span = max(hi - lo, 1e-9 + 0.05 * max(abs(lo), abs(hi)))
    if lo - span <= baseline <= hi + span:
        ax.axhline(baseline, color=_GREY, ls="--", lw=1.2)
        return
    above = baseline > hi
    unit = " bits" if "bits" in metric else ""
    ax.annotate(
        f"random: {baseline:.2f}{unit} {'↑' if above else '↓'}",
        xy=(0.99, 0.98 if above else 0.02),
        xycoords="axes fraction",
        ha="right",
        va="top" if above else "bottom",
        fontsize=8,
        color=_GREY,
        bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": _GREY, "lw": 0.6, "alpha": 0.85},
    )


# --------------------------------------------------------------------------------- criteria overview


def _pick_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chosen rows; for a task without a chosen row, its best row (kept, most monotone, highest SNR)."""

    def best_key(r: dict[str, Any]) -> tuple[Any, ...]:
        mono = _finite(r.get("monotonicity"))
        snr = _finite(r.get("snr"))
        return (
            not bool(r.get("kept")),
            mono is None,
            -(mono or 0.0),
            snr is None,
            -(snr or 0.0),
            str(r.get("metric")),
            r.get("fewshot") or 0,
        )

    picked = [r for r in rows if r.get("chosen") is True]
    covered = {r["task"] for r in picked}
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["task"] not in covered:
            by_task.setdefault(r["task"], []).append(r)
    picked += [min(candidates, key=best_key) for candidates in by_task.values()]
    counts: dict[str, int] = {}
    for r in picked:
        counts[r["task"]] = counts.get(r["task"], 0) + 1
    for r in picked:
        short = _short_task(str(r["task"]))
        r["_label"] = f"{short} {r.get('fewshot')}-shot" if counts[r["task"]] > 1 else short
    return sorted(picked, key=lambda r: (str(r["task"]), r.get("fewshot") or 0, str(r.get("metric"))))


def _place_labels(ax: Axes, labels: list[tuple[float, float, str]], x_mid: float) -> None:
    """Annotate points without overlapping labels: greedy, top to bottom, nudging a label up or down.

    The figure's layout is run first and the labels are kept out of it, so the positions measured here
    are the drawn ones (measured before the layout, the axes shrank afterwards and 40 labels overlapped),
    and the widths are the renderer's, not an estimate. Labels of points right of `x_mid` extend to the
    left so they stay inside the axes. A nudged label gets a leader; a label with no free place within
    twelve lines of its point is left out (crowded points: the consistency panel names every task).
    """
    fig = ax.get_figure()
    pixels_per_point = (fig.dpi if fig is not None else DPI) / 72.0
    renderer = None
    if isinstance(fig, Figure):
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    font = matplotlib.font_manager.FontProperties(size=7)
    char_w, line_h = 4.1, 8.5  # points, for 7-pt DejaVu Sans (the estimate without a renderer)
    placed: list[tuple[float, float, float, float]] = []  # boxes in points: x0, y0, x1, y1

    def free(box: tuple[float, float, float, float]) -> bool:
        return all(box[2] <= b[0] or box[0] >= b[2] or box[3] <= b[1] or box[1] >= b[3] for b in placed)

    def text_width(text: str) -> float:
        if renderer is None:
            return char_w * len(text)
        width, _, _ = renderer.get_text_width_height_descent(text, font, ismath=False)
        return float(width) / pixels_per_point + 1.0

    anchors = []
    for x, y, text in labels:
        dx, dy = ax.transData.transform((x, y)) / pixels_per_point
        anchors.append((float(dx), float(dy), x, y, text))
        placed.append((float(dx) - 3.5, float(dy) - 3.5, float(dx) + 3.5, float(dy) + 3.5))  # the marker
    for px, py, x, y, text in sorted(anchors, key=lambda a: (-a[1], a[0], a[4])):
        width = text_width(text)
        left = x > x_mid
        offset_x = -4.0 if left else 4.0
        x0 = px + offset_x - width if left else px + offset_x
        candidates = [2.0 + sign * line_h * k for k in range(12) for sign in ((1, -1) if k else (1,))]
        offset_y = next(
            (c for c in candidates if free((x0, py + c, x0 + width, py + c + line_h))),
            None,
        )
        if offset_y is None:
            continue
        placed.append((x0, py + offset_y, x0 + width, py + offset_y + line_h))
        ax.annotate(
            text,
            (x, y),
            xytext=(offset_x, offset_y),
            textcoords="offset points",
            ha="right" if left else "left",
            va="bottom",
            fontsize=7,
            arrowprops=(
                {"arrowstyle": "-", "color": _GREY, "lw": 0.5, "shrinkA": 0, "shrinkB": 2}
                if abs(offset_y) > line_h
                else None
            ),
        ).set_in_layout(False)


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers ("40", "200", "0.5"), not matplotlib's "4×10¹": an SNR axis read by people
    who compare it with a threshold of 20."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def _draw_scatter(
    ax: Axes, picked: list[dict[str, Any]], monotonicity_min: float, snr_min: float
) -> tuple[list[tuple[float, float, str]], float]:
    monos = [_finite(r.get("monotonicity")) for r in picked]
    snrs = [_finite(r.get("snr")) for r in picked]
    lows = [_finite(r.get("monotonicity_ci_low")) for r in picked]
    pos = [v for r in picked for k in ("snr", "snr_ci_low", "snr_ci_high") if (v := _finite(r.get(k))) and v > 0]
    if snr_min > 0:
        pos.append(snr_min)
    y_lo, y_hi = (min(pos) / 2.0, max(pos) * 2.0) if pos else (0.1, 100.0)
    y_edge = y_lo  # not measurable / non-positive SNR drawn here
    xs_known = [v for v in (*monos, *lows) if v is not None]
    x_lo = max(-1.05, min([*xs_known, monotonicity_min]) - 0.1)
    x_edge = x_lo
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_PlainLogFormatter())
    ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))
    ax.set_xlim(x_lo - 0.06, 1.06)
    ax.set_ylim(y_lo / 1.5, y_hi)

    any_unmeasurable = False
    any_clipped = False
    labels: list[tuple[float, float, str]] = []
    for r, mono, snr in zip(picked, monos, snrs, strict=True):
        color = _KEPT_COLOR if r.get("kept") else _DROPPED_COLOR
        px = mono if mono is not None else x_edge
        clipped = snr is not None and snr <= 0
        py = snr if snr is not None and snr > 0 else y_edge
        measurable = mono is not None and snr is not None
        any_unmeasurable |= not measurable
        any_clipped |= clipped and mono is not None
        # confidence intervals
        xl, xh = _finite(r.get("monotonicity_ci_low")), _finite(r.get("monotonicity_ci_high"))
        if mono is not None and xl is not None and xh is not None:
            ax.errorbar(
                px,
                py,
                xerr=[[max(px - xl, 0.0)], [max(xh - px, 0.0)]],
                color=color,
                alpha=0.45,
                lw=1,
                capsize=2,
            )
        yl, yh = _finite(r.get("snr_ci_low")), _finite(r.get("snr_ci_high"))
        if snr is not None and snr > 0 and yl is not None and yh is not None:
            yl = max(yl, y_edge)
            ax.errorbar(
                px,
                py,
                yerr=[[max(py - yl, 0.0)], [max(yh - py, 0.0)]],
                color=color,
                alpha=0.45,
                lw=1,
                capsize=2,
            )
        if not measurable:
            ax.scatter([px], [py], s=46, facecolors="none", edgecolors=color, linewidths=1.4, zorder=3)
        elif clipped:
            ax.scatter([px], [py], s=46, marker="v", facecolors="none", edgecolors=color, zorder=3)
        elif r.get("kept"):
            ax.scatter([px], [py], s=40, marker="o", color=color, zorder=3)
        else:
            ax.scatter([px], [py], s=46, marker="x", color=color, linewidths=1.6, zorder=3)
        labels.append((px, py, r["_label"]))
    ax.axvline(monotonicity_min, color=_GREY, ls="--", lw=1)
    if snr_min > 0:
        ax.axhline(snr_min, color=_GREY, ls="--", lw=1)
    ax.set_xlabel("monotonicity (mean Spearman ρ, step vs score)")
    ax.set_ylabel("SNR (log scale)")
    ax.set_title("chosen metric per task", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)

    handles: list[Any] = [
        Line2D([], [], ls="", marker="o", color=_KEPT_COLOR, label="kept"),
        Line2D([], [], ls="", marker="x", color=_DROPPED_COLOR, mew=1.6, label="dropped"),
        Line2D(
            [],
            [],
            color=_GREY,
            ls="--",
            lw=1,
            label=f"thresholds (ρ ≥ {monotonicity_min:g}, SNR ≥ {snr_min:g})",
        ),
    ]
    if any_unmeasurable:
        handles.append(Line2D([], [], ls="", marker="o", mfc="none", mec=_GREY, label="not measurable (at axis edge)"))
    if any_clipped:
        handles.append(Line2D([], [], ls="", marker="v", mfc="none", mec=_GREY, label="SNR ≤ 0 (clipped)"))
    ax.legend(handles=handles, fontsize=7, loc="best")
    # the labels are placed once the whole figure is drawn (`_place_labels` measures the final layout)
    return labels, (x_lo + 1.06) / 2


def _draw_consistency(ax: Axes, picked: list[dict[str, Any]]) -> None:
    order = sorted(
        picked,
        key=lambda r: (
            _finite(r.get("consistency")) is None,
            -(_finite(r.get("consistency")) or 0.0),
            r["_label"],
        ),
    )
    values = [_finite(r.get("consistency")) for r in order]
    ys = np.arange(len(order))
    known = [v for v in values if v is not None]
    x_lo = min([*known, 0.0]) - 0.08
    ax.set_xlim(x_lo, 1.08)
    for y, r, v in zip(ys.tolist(), order, values, strict=True):
        color = _KEPT_COLOR if r.get("kept") else _DROPPED_COLOR
        if v is None:
            ax.text(0.03, y, "not measurable", va="center", fontsize=7, color=_GREY, style="italic")
        else:
            ax.barh(y, v, color=color, alpha=0.85, height=0.7)
    ax.set_yticks(ys, [r["_label"] for r in order], fontsize=7)
    ax.set_ylim(len(order) - 0.5, -0.5)  # best at the top
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("ordering consistency (Kendall τ)")
    ax.set_title("consistency per task", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(
        handles=[Patch(color=_KEPT_COLOR, label="kept"), Patch(color=_DROPPED_COLOR, label="dropped")],
        fontsize=7,
        loc="lower right",
    )


def _draw_separation(ax: Axes, picked: list[dict[str, Any]], alpha: float) -> None:
    """Separation (run sd over seed sd) of each task with its interval, most significant at the top; a task whose
    seeds agree exactly while its runs differ (infinite) is a hollow marker at the right edge."""
    order = sorted(picked, key=lambda r: (*_null_last(r.get("separation_p")), r["_label"]))
    ys = np.arange(len(order))
    finite = [v for r in order for v in (_finite(r.get("separation")), _finite(r.get("separation_ci_high"))) if v]
    x_hi = max([*finite, 1.0]) * 1.12
    for y, r in zip(ys.tolist(), order, strict=True):
        color = _KEPT_COLOR if r.get("kept") else _DROPPED_COLOR
        p, value = r.get("separation_p"), r.get("separation")
        if p is None or value is None:
            ax.text(0.02 * x_hi, y, "not measurable", va="center", fontsize=7, color=_GREY, style="italic")
            continue
        low, high = _finite(r.get("separation_ci_low")), _finite(r.get("separation_ci_high"))
        if low is not None:
            ax.hlines(y, low, high if high is not None else x_hi, color=color, lw=1.2, alpha=0.7)
        x = _finite(value)
        ax.plot(x if x is not None else x_hi, y, "o", color=color, mfc=color if x is not None else "none", ms=5)
        ax.text(x_hi, y, f" p {p:.2g}", va="center", fontsize=6, color=color if p < alpha else _GREY)
    ax.set_xlim(0, x_hi)
    ax.set_yticks(ys, [r["_label"] for r in order], fontsize=7)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xlabel("separation: sd of the run means / seed sd")
    ax.set_title(f"runs told apart (p < {alpha:g} passes)", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)


def plot_criteria_overview(
    decisions: pl.DataFrame,
    language: str,
    out_path: Path,
    *,
    monotonicity_min: float,
    snr_min: float,
    separation_alpha: float = 0.05,
) -> Path:
    """The FineTasks criteria of one language's tasks.

    Left: monotonicity against SNR (log scale) of each task's chosen row (the best row, kept first, when
    no row of the task is chosen), with confidence intervals and the two thresholds; kept tasks are
    green dots, dropped ones red crosses; a value that is not measurable (null) is drawn at the axis edge
    with a hollow marker, a non-positive SNR at the bottom edge with a hollow triangle. Middle: ordering
    consistency per task, best at the top, coloured by kept. Right, when the decisions have it: separation (are
    the runs told apart beyond seed noise) with its interval and p-value.

    `decisions` needs task, fewshot, metric, language, monotonicity, snr, consistency and kept; the CI
    columns and `chosen` are used when present. Raises ValueError naming the language when it has no row.
    """
    _require_columns(
        decisions,
        ("task", "fewshot", "metric", "language", "monotonicity", "snr", "consistency", "kept"),
        "decisions",
    )
    sub = decisions.filter((pl.col("language") == language) & pl.col("task").is_not_null())
    if sub.is_empty():
        languages = sorted(decisions.get_column("language").drop_nulls().unique().to_list())
        raise ValueError(f"nothing to plot for language {language!r}: no decisions (languages: {languages})")
    picked = _pick_rows(sub.to_dicts())

    with_separation = "separation_p" in decisions.columns
    fig = _new_figure(17.0 if with_separation else 12.0, max(4.8, 0.28 * len(picked) + 2.0))
    axes = fig.subplots(1, 3 if with_separation else 2, width_ratios=[1.6, 1.0, 1.0][: 3 if with_separation else 2])
    labels, x_mid = _draw_scatter(axes[0], picked, monotonicity_min, snr_min)
    _draw_consistency(axes[1], picked)
    if with_separation:
        _draw_separation(axes[2], picked, separation_alpha)
    n_kept = sum(bool(r.get("kept")) for r in picked)
    fig.suptitle(f"{language}: FineTasks criteria ({n_kept} of {len(picked)} tasks kept)", fontsize=12)
    _place_labels(axes[0], labels, x_mid=x_mid)
    return _save(fig, out_path)


# -------------------------------------------------------------------------------- consistency forest


def consistency_forest_figure(rows: pl.DataFrame, *, title: str) -> Figure:
    """Ordering consistency (Kendall τ) of each task with its 95% CI, one line per task, highest at the top.

    `rows` has one row per task with task, consistency and kept; consistency_ci_low/high,
    consistency_n_pairs, consistency_reason and language are used when present (with more than one
    language, labels name it). Kept tasks are green dots, dropped ones red crosses; a task whose
    consistency is not measurable gets its reason in grey instead of a point. The value, interval and
    number of step pairs are written right of the axes.
    """
    _require_columns(rows, ("task", "consistency", "kept"), "consistency rows")
    if rows.is_empty():
        raise ValueError(f"nothing to plot for {title!r}: no task")
    ordered = consistency_order(rows).to_dicts()
    several = "language" in rows.columns and rows.get_column("language").n_unique() > 1
    labels = [_short_task(str(r["task"])) + (f" ({r['language']})" if several else "") for r in ordered]
    values = [_finite(r.get("consistency")) for r in ordered]
    lows = [_finite(r.get("consistency_ci_low")) for r in ordered]
    highs = [_finite(r.get("consistency_ci_high")) for r in ordered]
    known = [v for v in (*values, *lows) if v is not None]
    x_lo = max(-1.05, min([*known, 0.0]) - 0.1)
    n = len(ordered)
    fig = _new_figure(8.5, max(3.0, 0.3 * n + 1.7))
    ax = fig.subplots(1, 1)
    ax.set_xlim(x_lo, 1.05)
    text_at = ax.get_yaxis_transform()  # x in axes fraction, y in data: the value column right of the axes
    any_ci = False
    for y, (r, v, low, high) in enumerate(zip(ordered, values, lows, highs, strict=True)):
        kept = bool(r.get("kept"))
        color = _KEPT_COLOR if kept else _DROPPED_COLOR
        if v is None:
            reason = str(r.get("consistency_reason") or "not measurable").removeprefix("consistency: ")
            ax.text(x_lo + 0.02, y, f"not measurable: {reason}", va="center", fontsize=7, color=_GREY,
                    style="italic", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})  # fmt: skip
            continue
        if low is not None and high is not None:
            any_ci = True
            ax.plot([low, high], [y, y], color=color, lw=1.6, solid_capstyle="butt")
            ax.plot([low, high], [y, y], ls="", marker="|", ms=6, color=color)
        if kept:
            ax.scatter([v], [y], s=36, marker="o", color=color, zorder=3)
        else:
            ax.scatter([v], [y], s=42, marker="x", color=color, linewidths=1.6, zorder=3)
        text = f"{v:.2f}" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else "")
        pairs = r.get("consistency_n_pairs")
        if pairs is not None:
            text += f" · {pairs} pairs"
        ax.text(1.02, y, text, transform=text_at, va="center", fontsize=7)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(range(n), labels, fontsize=7)
    for label, r in zip(ax.get_yticklabels(), ordered, strict=True):
        label.set_color("black" if r.get("kept") else _DROPPED_COLOR)
    ax.set_ylim(n - 0.5, -0.5)  # highest consistency at the top
    ax.set_xlabel("ordering consistency (mean Kendall τ between consecutive checkpoints)")
    ax.grid(True, axis="x", alpha=0.3)
    handles: list[Any] = [
        Line2D([], [], ls="", marker="o", color=_KEPT_COLOR, label="kept"),
        Line2D([], [], ls="", marker="x", color=_DROPPED_COLOR, mew=1.6, label="dropped"),
    ]
    if any_ci:
        handles.append(Line2D([], [], color=_GREY, lw=1.6, label="95% CI"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    fig.suptitle(title, fontsize=11)
    return fig


def plot_consistency_forest(decisions: pl.DataFrame, language: str, out_path: Path) -> Path:
    """`consistency_forest_figure` of one language's tasks, each on its chosen row (`_pick_rows`), written.

    Raises ValueError naming the language when it has no row.
    """
    _require_columns(decisions, ("task", "fewshot", "metric", "language", "consistency", "kept"), "decisions")
    sub = decisions.filter((pl.col("language") == language) & pl.col("task").is_not_null())
    if sub.is_empty():
        languages = sorted(decisions.get_column("language").drop_nulls().unique().to_list())
        raise ValueError(f"nothing to plot for language {language!r}: no decisions (languages: {languages})")
    picked = pl.DataFrame([{c: r[c] for c in sub.columns} for r in _pick_rows(sub.to_dicts())], schema=sub.schema)
    n_kept = picked.filter(pl.col("kept")).height
    title = f"{language}: ordering consistency per task, 95% CI ({n_kept} of {picked.height} tasks kept)"
    return _save(consistency_forest_figure(picked, title=title), out_path)


# --------------------------------------------------------------------------------------------- ranking


def plot_ranking(ranking: pl.DataFrame, out_path: Path) -> Path:
    """Mean rank per run (bars, best at the top) and a heatmap of the `score_<lang>` columns.

    Runs without a mean rank go to the bottom, marked "missing"; a null or NaN language score is a grey
    cell marked "missing". Without `score_<lang>` columns only the bars are drawn. Raises ValueError
    when the ranking has no run.
    """
    _require_columns(ranking, ("run", "mean_rank"), "ranking")
    ranking = ranking.filter(pl.col("run").is_not_null())
    if ranking.is_empty():
        raise ValueError("nothing to plot: the ranking has no run (no language had a score)")
    score_cols = sorted(c for c in ranking.columns if c.startswith("score_"))
    rows = sorted(
        ranking.to_dicts(),
        key=lambda r: (*_null_last(r.get("mean_rank")), str(r["run"])),
    )
    n = len(rows)
    height = max(3.2, 0.36 * n + 1.6)
    width = 6.5 + (0.75 * len(score_cols) + 1.2 if score_cols else 0.0)
    fig = _new_figure(width, height)
    if score_cols:
        ax_bar, ax_heat = fig.subplots(1, 2, width_ratios=[6.5, 0.75 * len(score_cols) + 1.2])
    else:
        ax_bar, ax_heat = fig.subplots(1, 1), None

    ys = np.arange(n)
    ranks = [_finite(r.get("mean_rank")) for r in rows]
    known = [v for v in ranks if v is not None]
    highs = [h for r in rows if (h := _finite(r.get("mean_rank_ci_high"))) is not None]
    x_hi = max([*known, *highs]) if known else 1.0
    best = min(known) if known else None
    for y, r, v in zip(ys.tolist(), rows, ranks, strict=True):
        if v is None:
            ax_bar.text(0.02 * x_hi, y, "missing", va="center", fontsize=8, color=_GREY, style="italic")
            continue
        # every run at the best mean rank is coloured as a leader: a tie has no winner
        ax_bar.barh(y, v, color="#ff7f0e" if v == best else "#1f77b4", height=0.7)
        low, high = _finite(r.get("mean_rank_ci_low")), _finite(r.get("mean_rank_ci_high"))
        if low is not None and high is not None:
            ax_bar.errorbar(v, y, xerr=[[max(v - low, 0.0)], [max(high - v, 0.0)]], color="black", capsize=3, lw=1)
        extra = [f"{v:.2f}"]
        if (b := _finite(r.get("borda"))) is not None:
            extra.append(f"borda {b:g}")
        if (w := _finite(r.get("mean_win_rate"))) is not None:
            extra.append(f"win {w:.2f}")
        ax_bar.text(max(v, high or v) + 0.02 * x_hi, y, " · ".join(extra), va="center", fontsize=8)
    ax_bar.set_xlim(0, x_hi * 1.6)
    ax_bar.set_yticks(ys, [str(r["run"]) for r in rows], fontsize=8)
    ax_bar.set_ylim(n - 0.5, -0.5)
    ax_bar.set_xlabel("mean rank over languages (lower is better)")
    tied = sum(v == best for v in known) if best is not None else 0
    ax_bar.set_title(
        "runs by mean rank (best at top"
        + (f"; {tied} tied for first)" if tied > 1 else ")")
        + ("\nbars: 95% bootstrap interval over seeds" if highs else ""),
        fontsize=10,
    )
    ax_bar.grid(True, axis="x", alpha=0.3)

    if ax_heat is not None:
        values = np.array(
            [[_finite_or_nan(r.get(c)) for c in score_cols] for r in rows],
            dtype=float,
        )
        finite = values[np.isfinite(values)]
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if vmin == vmax:
            vmin, vmax = vmin - 0.5, vmax + 0.5
        norm = Normalize(vmin=vmin, vmax=vmax)
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad=_MISSING_COLOR)
        image = ax_heat.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                red, green, blue, _ = cmap(norm(v))
                text_color = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
                ax_heat.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color=text_color)
            else:
                ax_heat.text(j, i, "missing", ha="center", va="center", fontsize=6, color="#555555")
        languages = [c.removeprefix("score_") for c in score_cols]
        ax_heat.set_xticks(np.arange(len(score_cols)), languages, fontsize=8)
        ax_heat.set_yticks(ys, [])
        ax_heat.set_title("score per language", fontsize=10)
        fig.colorbar(image, ax=ax_heat, shrink=0.8, pad=0.02).ax.tick_params(labelsize=7)
    fig.suptitle("Ranking of runs", fontsize=12)
    return _save(fig, out_path)


# ------------------------------------------------------------------------------ one task, explored


def _x_axis(frame: pl.DataFrame, x: str) -> tuple[str, float, str]:
    """(column, scale, label) of the x axis: tokens when asked for and known everywhere, else step."""
    use_tokens = x == "tokens" and "tokens" in frame.columns and frame.get_column("tokens").null_count() == 0
    if not use_tokens:
        return "step", 1.0, "step"
    scale, label = _token_scale(_finite(frame.get_column("tokens").max()) or 0.0)
    return "tokens", scale, label


def _criterion_limits(values: list[float], extra: list[float]) -> tuple[float, float]:
    known = [v for v in (*values, *extra) if math.isfinite(v)]
    if not known:
        return -1.0, 1.0
    lo, hi = min(known), max(known)
    pad = 0.08 * (hi - lo) if hi > lo else max(abs(hi) * 0.1, 0.1)
    return lo - pad, hi + pad


def _draw_criterion(ax: Axes, rows: list[dict[str, Any]], metrics: list[str]) -> None:
    """One criterion: a point per metric with its CI, the threshold, pass/fail colours, ±inf at the edges."""
    values = [_finite(r.get("value")) for r in rows]
    bounds = [v for r in rows for k in ("ci_low", "ci_high") if (v := _finite(r.get(k))) is not None]
    thresholds = {t for r in rows if (t := _finite(r.get("threshold"))) is not None}
    x_lo, x_hi = _criterion_limits([v for v in values if v is not None], [*bounds, *thresholds])
    infinite = [raw for r in rows if isinstance(raw := r.get("value"), float) and math.isinf(raw)]
    if any(v > 0 for v in infinite):  # room for the arrow past every finite value and threshold
        x_hi += 0.2 * (x_hi - x_lo)
    if any(v < 0 for v in infinite):
        x_lo -= 0.2 * (x_hi - x_lo)
    ax.set_xlim(x_lo, x_hi)
    ys = {m: i for i, m in enumerate(metrics)}
    for r, v in zip(rows, values, strict=True):
        y = ys[r["metric"]]
        passed = r.get("passed")
        color = _GREY if passed is None else (_KEPT_COLOR if passed else _DROPPED_COLOR)
        raw = r.get("value")
        if v is None and isinstance(raw, float) and math.isinf(raw):  # e.g. infinitely many sigmas (zero std)
            edge = x_hi if raw > 0 else x_lo
            ax.scatter([edge], [y], marker=">" if raw > 0 else "<", s=60, color=color, zorder=3, clip_on=False)
            ax.annotate("∞" if raw > 0 else "-∞", (edge, y), xytext=(-10 if raw > 0 else 10, 5),
                        textcoords="offset points", ha="center", fontsize=8, color=color)  # fmt: skip
            continue
        if v is None:
            ax.text(x_lo, y, "  not measurable", va="center", fontsize=7, color=_GREY, style="italic")
            continue
        low, high = _finite(r.get("ci_low")), _finite(r.get("ci_high"))
        if low is not None and high is not None:
            ax.errorbar(v, y, xerr=[[max(v - low, 0.0)], [max(high - v, 0.0)]], color=color, lw=1.2, capsize=3)
        ax.scatter([v], [y], s=36, color=color, zorder=3)
    for threshold in sorted(thresholds):
        ax.axvline(threshold, color=_GREY, ls="--", lw=1)
    ax.set_yticks(range(len(metrics)), metrics, fontsize=8)
    for label, metric in zip(ax.get_yticklabels(), metrics, strict=True):
        if any(r["metric"] == metric and r.get("chosen") for r in rows):
            label.set_fontweight("bold")
    ax.set_ylim(len(metrics) - 0.5, -0.5)
    ax.grid(True, axis="x", alpha=0.3)


def task_criteria_figure(criteria: pl.DataFrame, *, title: str) -> Figure:
    """One panel per FineTasks criterion of one task: each metric's value with its CI and the threshold.

    `criteria` has one row per (criterion, metric) with the columns criterion, label, metric, value,
    ci_low, ci_high, threshold, passed, required and chosen (`analysis.explore.task_criteria` builds it
    from the selection's decisions). Green passes, red fails, grey is not measurable or has no threshold;
    ±inf values are drawn as arrows at the axis edge; the chosen metric's label is bold.
    """
    _require_columns(
        criteria,
        ("criterion", "label", "metric", "value", "ci_low", "ci_high", "threshold", "passed", "required", "chosen"),
        "criteria",
    )
    if criteria.is_empty():
        raise ValueError(f"nothing to plot for {title!r}: no criterion rows")
    names = list(dict.fromkeys(criteria.get_column("criterion").to_list()))
    metrics = sorted(set(criteria.get_column("metric").to_list()), key=_metric_sort_key)
    ncols = min(len(names), 3)
    nrows = math.ceil(len(names) / ncols)
    fig = _new_figure(4.2 * ncols, (0.35 * len(metrics) + 1.4) * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_visible(False)
            continue
        rows = criteria.filter(pl.col("criterion") == names[i]).to_dicts()
        _draw_criterion(ax, rows, metrics)
        required = bool(rows[0].get("required"))
        ax.set_title(f"{rows[0]['label']}" + ("" if required else " (not required)"), fontsize=9)
    handles: list[Any] = [
        Line2D([], [], ls="", marker="o", color=_KEPT_COLOR, label="passes"),
        Line2D([], [], ls="", marker="o", color=_DROPPED_COLOR, label="fails"),
        Line2D([], [], ls="", marker="o", color=_GREY, label="no threshold / not measurable"),
        Line2D([], [], color=_GREY, ls="--", lw=1, label="threshold"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(title + " — bold: chosen metric; bars: 95% CI", fontsize=10)
    return fig


def formulation_curves_figure(curves: pl.DataFrame, *, title: str, band: Band = "minmax", x: str = "tokens") -> Figure:
    """CF against MCF (or any formulations) of one benchmark and language: one panel per run.

    `curves` is `seed_curves` output grouped by `series` (a legend label per formulation, e.g. its task,
    metric and verdict) with a `baseline` column; each series is one colour with its seed band, and its
    random baseline a dotted line of the same colour.
    """
    _require_columns(curves, ("series", "run", "step", "mean", "lo", "hi", "n_seeds", "baseline"), "curves")
    if curves.is_empty():
        raise ValueError(f"nothing to plot for {title!r}: no curve")
    series = list(dict.fromkeys(curves.get_column("series").to_list()))
    runs = sorted(set(curves.get_column("run").to_list()))
    palette = matplotlib.colormaps["tab10"]
    colors = {name: palette(i % palette.N) for i, name in enumerate(series)}
    column, scale, xlabel = _x_axis(curves, x)
    ncols = min(len(runs), 3)
    nrows = math.ceil(len(runs) / ncols)
    fig = _new_figure(4.6 * ncols, 3.4 * nrows + 0.4 + 0.22 * len(series))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    any_band = False
    for i, ax in enumerate(axes.flat):
        if i >= len(runs):
            ax.set_visible(False)
            continue
        for name in series:
            c = curves.filter((pl.col("run") == runs[i]) & (pl.col("series") == name))
            if c.is_empty():
                continue
            xs = c.get_column(column).cast(pl.Float64).to_numpy() / scale
            ax.plot(xs, c.get_column("mean").to_numpy(), color=colors[name], lw=1.6, marker="o", ms=2.5)
            if int(c.get_column("n_seeds").to_numpy().max()) > 1:
                any_band = True
                ax.fill_between(xs, c.get_column("lo").to_numpy(), c.get_column("hi").to_numpy(),
                                color=colors[name], alpha=0.2, lw=0)  # fmt: skip
            baseline = _finite(c.get_column("baseline").drop_nulls().mean())
            if baseline is not None:
                ax.axhline(baseline, color=colors[name], ls=":", lw=1.2)
        ax.set_title(f"run {runs[i]}", fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("score")
    handles: list[Any] = [Line2D([], [], color=colors[n], lw=1.6, label=n) for n in series]
    if any_band:
        handles.append(Patch(color=_GREY, alpha=0.3, label=BAND_LABELS[band]))
    handles.append(Line2D([], [], color=_GREY, ls=":", lw=1.2, label="random baseline"))
    fig.legend(handles=handles, loc="outside lower center", ncols=1, fontsize=8)
    fig.suptitle(title, fontsize=11)
    return fig


def run_order_figure(
    ranks: pl.DataFrame,
    taus: pl.DataFrame,
    *,
    title: str,
    x: str = "tokens",
    window_start: float | None = None,
) -> Figure:
    """How the runs are ordered over training: each run's rank per checkpoint (1 = best) on the left,
    Kendall's tau between consecutive checkpoints on the right.

    `ranks` has run, step, tokens, rank; `taus` has step, tokens (of the later checkpoint of each pair)
    and tau (null when undefined, e.g. all runs tied). `window_start` (in the x column's units, before
    scaling) shades the checkpoints that the consistency criterion averages.
    """
    _require_columns(ranks, ("run", "step", "tokens", "rank"), "ranks")
    _require_columns(taus, ("step", "tokens", "tau"), "taus")
    if ranks.is_empty():
        raise ValueError(f"nothing to plot for {title!r}: no ranked checkpoint")
    column, scale, xlabel = _x_axis(ranks, x)
    runs = sorted(set(ranks.get_column("run").to_list()))
    colors = _run_colors(runs)
    fig = _new_figure(11.0, 3.8)
    left, right = fig.subplots(1, 2)
    for run in runs:
        r = ranks.filter(pl.col("run") == run).sort("step")
        xs = r.get_column(column).cast(pl.Float64).to_numpy() / scale
        left.plot(xs, r.get_column("rank").to_numpy(), color=colors[run], lw=1.6, marker="o", ms=3, label=run)
    left.set_ylim(len(runs) + 0.5, 0.5)
    left.set_yticks(range(1, len(runs) + 1))
    left.set_ylabel("rank of the run (1 = best)")
    left.set_title("rank per checkpoint (seed means)", fontsize=10)
    left.legend(fontsize=7, loc="best")
    defined = taus.filter(pl.col("tau").is_not_null())
    undefined = taus.filter(pl.col("tau").is_null())
    right.scatter(defined.get_column(column).cast(pl.Float64).to_numpy() / scale, defined.get_column("tau").to_numpy(),
                  color="#1f77b4", s=22, zorder=3, label="τ")  # fmt: skip
    if undefined.height:  # all runs tied at one checkpoint: tau is undefined, drawn on the zero line
        xs = undefined.get_column(column).cast(pl.Float64).to_numpy() / scale
        right.scatter(xs, np.zeros(len(xs)), marker="x", color=_GREY, s=28, zorder=3, label="undefined (ties)")
    right.axhline(0.0, color="black", lw=0.8)
    right.set_ylim(-1.1, 1.1)
    right.set_ylabel("Kendall τ with the previous checkpoint")
    right.set_title("ordering stability between consecutive checkpoints", fontsize=10)
    if window_start is not None:
        x_max = _finite(ranks.get_column(column).cast(pl.Float64).max()) or 0.0
        if window_start <= x_max:
            right.axvspan(window_start / scale, x_max / scale, color=_KEPT_COLOR, alpha=0.08, lw=0,
                          label="consistency window")  # fmt: skip
    right.legend(fontsize=7, loc="lower right")
    for ax in (left, right):
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    fig.suptitle(_wrapped(title, 11.0, 11), fontsize=11)
    return fig


# ---------------------------------------------------------------------------------------- gap to English


def plot_english_gap(shown: pl.DataFrame, gaps: pl.DataFrame, benchmark: str, out_path: Path) -> Path:
    """The gap to English of one benchmark: at the last checkpoint per language, then its curve per language.

    `shown` are `analysis.english_gap.display_rows` (one variant per benchmark, one task per language and
    run), `gaps` the gap curves. The first panel has one point per (language, run) with its interval; each following
    panel is one language, one line per run over tokens (steps when a row lacks tokens) with its interval as a
    band. A dashed line marks no gap. Raises ValueError naming the benchmark when it has no shown row.
    """
    rows = shown.filter(pl.col("benchmark") == benchmark)
    if rows.is_empty():
        raise ValueError(f"nothing to plot: no gap-to-English rows for benchmark {benchmark!r}")
    keys = ["task", "english_task", "fewshot", "metric"]
    curves = gaps.join(rows.select(keys).unique(), on=keys).sort(["language", "run", "step"])
    languages = sorted(rows.get_column("language").unique().to_list())
    runs = sorted(rows.get_column("run").unique().to_list())
    colors = _run_colors(runs)
    columns = min(4, len(languages) + 1)
    panels = len(languages) + 1
    fig = _new_figure(3.6 * columns, 2.9 * math.ceil(panels / columns))
    axes = np.atleast_1d(fig.subplots(math.ceil(panels / columns), columns, squeeze=False)).ravel()
    first = rows.row(0, named=True)
    fig.suptitle(
        f"{benchmark}: English minus language, {first['metric']} ({first['formulation']}, {first['fewshot']}-shot)",
        fontsize=10,
    )
    _last_gap_panel(axes[0], rows, languages, runs, colors)
    use_tokens = curves.get_column("tokens").null_count() == 0 and curves.height > 0
    scale, label = _token_scale(_finite(curves.get_column("tokens").max()) or 0.0) if use_tokens else (1.0, "step")
    for ax, language in zip(axes[1:], languages, strict=False):
        _gap_curve_panel(ax, curves.filter(pl.col("language") == language), language, runs, colors, scale, label)
    for ax in axes[panels:]:
        ax.set_visible(False)
    return _save(fig, out_path)


def _last_gap_panel(ax: Axes, rows: pl.DataFrame, languages: list[str], runs: list[str], colors: dict) -> None:
    width = 0.8 / max(len(runs), 1)
    for i, run in enumerate(runs):
        for r in rows.filter(pl.col("run") == run).iter_rows(named=True):
            x = languages.index(r["language"]) - 0.4 + width * (i + 0.5)
            gap, low, high = _finite(r["gap"]), _finite(r["ci_low"]), _finite(r["ci_high"])
            if gap is None:
                continue
            error = [[gap - low], [high - gap]] if low is not None and high is not None else None
            ax.errorbar(x, gap, yerr=error, fmt="o", color=colors[run], markersize=4, capsize=2,
                        label=run if r["language"] == languages[0] else None)  # fmt: skip
    ax.axhline(0.0, color=_GREY, linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(languages)), languages, fontsize=8)
    ax.set_title("last checkpoint", fontsize=9)
    ax.set_ylabel("gap to English", fontsize=8)
    ax.legend(fontsize=7, frameon=False)


def _gap_curve_panel(
    ax: Axes, rows: pl.DataFrame, language: str, runs: list[str], colors: dict, scale: float, label: str
) -> None:
    for run in runs:
        run_rows = rows.filter(pl.col("run") == run)
        if run_rows.is_empty():
            continue
        x = run_rows.get_column("tokens") if scale != 1.0 or label != "step" else run_rows.get_column("step")
        xs = x.cast(pl.Float64).to_numpy() / scale
        ax.plot(xs, run_rows.get_column("gap").to_numpy(), color=colors[run], linewidth=1.2, label=run)
        low = run_rows.get_column("ci_low").cast(pl.Float64).fill_null(float("nan")).to_numpy()
        high = run_rows.get_column("ci_high").cast(pl.Float64).fill_null(float("nan")).to_numpy()
        ax.fill_between(xs, low, high, color=colors[run], alpha=0.18, linewidth=0)
    ax.axhline(0.0, color=_GREY, linestyle="--", linewidth=0.8)
    ax.set_title(language, fontsize=9)
    ax.set_xlabel(label, fontsize=8)
    ax.tick_params(labelsize=7)
