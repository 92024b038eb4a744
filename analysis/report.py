"""The selection report (Markdown): what was kept and dropped per language, why, and how sure we are."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from analysis.aggregate import AggregateResult
from analysis.config import Config
from analysis.select import Selection
from analysis.table import LoadReport


def _num(value: object, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}f}"
    return str(value)


def _ci(row: dict, name: str, digits: int = 2) -> str:
    value, low, high = row.get(name), row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    text = _num(value, digits)
    if value is not None and low is not None and high is not None:
        text += f" [{_num(low, digits)}, {_num(high, digits)}]"
    return text


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _thresholds(config: Config) -> str:
    rows = [
        [section, key, _num(value) if isinstance(value, float) else str(value)]
        for section, values in config.as_dict().items()
        for key, value in values.items()
    ]
    return _table(["section", "parameter", "value"], rows)


def _kept_table(kept: pl.DataFrame) -> str:
    rows = [
        [
            f"`{r['task']}`",
            str(r["fewshot"]),
            r["metric"],
            r["category"],
            _ci(r, "monotonicity"),
            _ci(r, "snr", 1) + (f" ({r['snr_kind']})" if r.get("snr_kind") else ""),
            _num(r["non_random_sigmas"], 1),
            _ci(r, "consistency"),
            _num(r["decision_accuracy"]),
            _num(r["margin"]),
        ]
        for r in kept.sort(["category", "task"]).iter_rows(named=True)
    ]
    header = ["task", "shots", "metric", "cat.", "monotonicity [95% CI]", "SNR [CI]", "sigmas", "consistency [CI]",
              "decision acc.", "margin"]  # fmt: skip
    return _table(header, rows)


def _dropped_table(dropped: pl.DataFrame) -> str:
    rows = [
        [f"`{r['task']}`", r["metric"], r["category"], r["reason"]]
        for r in dropped.sort(["category", "task"]).iter_rows(named=True)
    ]
    return _table(["task", "best metric", "cat.", "reason"], rows)


def _ranking_section(result: AggregateResult) -> list[str]:
    ranking = result.ranking
    score_cols = [c for c in ranking.columns if c.startswith("score_")]
    header = [
        "run",
        *[c.removeprefix("score_") for c in score_cols],
        "mean rank",
        "Borda",
        "win rate",
        "missing",
    ]
    rows = [
        [
            f"`{r['run']}`",
            *[_num(r[c], 3) for c in score_cols],
            _num(r["mean_rank"]),
            _num(r["borda"], 1),
            _num(r["mean_win_rate"]),
            r["missing_languages"] or "",
        ]
        for r in ranking.iter_rows(named=True)
    ]
    lines = [
        "## Multilingual ranking",
        "",
        "Scores rescaled to the random baseline ((s - b) / (1 - b), clipped at 0), averaged per category, "
        "then over categories per language; runs ranked per language and the ranks averaged "
        "(FineTasks). Borda and HELM mean win rate are shown as alternatives.",
        "",
        _table(header, rows),
        "",
    ]
    if result.notes:
        lines += ["Notes:", "", *[f"- {note}" for note in result.notes], ""]
    return lines


def render_report(
    selection: Selection,
    config: Config,
    load_report: LoadReport,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
) -> str:
    """The whole report as Markdown; figure paths are written relative to `out_dir`."""

    def link(key: str, alt: str) -> list[str]:
        path = figures.get(key)
        return [f"![{alt}]({path.relative_to(out_dir).as_posix()})", ""] if path else []

    decisions = selection.decisions
    chosen = decisions.filter(pl.col("chosen"))
    languages = sorted(decisions.get_column("language").unique().to_list())
    lines = [
        "# FineTasks selection report",
        "",
        f"Source: {load_report.summary()}",
        "",
        f"{chosen.height} tasks, {decisions.height} (task, metric) candidates, {len(languages)} languages; "
        f"{selection.kept.height} tasks kept.",
        "",
        "Statistics are defined in `docs/statistics.md`. A task is kept when its best metric passes every "
        f"required criterion ({', '.join(config.selection.require)}); a criterion that cannot be measured "
        "fails it. Margins are normalised (0 at the threshold, 1 = comfortably past it) and the weakest "
        "criterion sets a metric's margin. Intervals are 95% percentile bootstrap intervals "
        "(monotonicity over series, SNR over checkpoints, consistency over checkpoint pairs).",
        "",
        "## Summary",
        "",
    ]
    summary_rows = []
    for language in languages:
        rows = chosen.filter(pl.col("language") == language)
        kept = rows.filter(pl.col("kept"))
        counts = ", ".join(f"{c} {kept.filter(pl.col('category') == c).height}" for c in config.selection.categories)
        flags = [f for f in selection.coverage if f.language == language]
        summary_rows.append(
            [
                language,
                f"{kept.height}/{rows.height}",
                counts,
                "; ".join(f"{f.suite}: no {f.category}" for f in flags),
            ]
        )
    lines += [_table(["language", "kept/tasks", "kept per category", "coverage gaps"], summary_rows), ""]
    if aggregate is not None:
        lines += _ranking_section(aggregate) + link("ranking", "final ranking")
    for language in languages:
        rows = chosen.filter(pl.col("language") == language)
        lines += [f"## {language}", ""]
        lines += link(f"criteria_{language}", f"criteria overview {language}")
        kept, dropped = rows.filter(pl.col("kept")), rows.filter(~pl.col("kept"))
        lines += ["### Kept", "", _kept_table(kept) if kept.height else "No task passed the criteria.", ""]
        if dropped.height:
            lines += ["### Dropped", "", _dropped_table(dropped), ""]
        flags = [f for f in selection.coverage if f.language == language]
        if flags:
            lines += ["### Coverage", "", *[f"- {f.describe()}" for f in flags], ""]
        curves = [
            (task, figures[f"curves_{task}"])
            for task in rows.get_column("task").to_list()
            if f"curves_{task}" in figures
        ]
        if curves:
            lines += ["### Training curves", ""]
            lines += [f"- [{task}]({path.relative_to(out_dir).as_posix()})" for task, path in curves]
            lines += [""]
    lines += ["## Parameters used", "", _thresholds(config), ""]
    if load_report.notes:
        lines += ["## Input notes", "", *[f"- {note}" for note in load_report.notes], ""]
    return "\n".join(lines)
