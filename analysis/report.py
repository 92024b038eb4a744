"""The selection report: what was kept and dropped per language, why, and how sure we are.

`render_report` writes it as Markdown (report.md); `render_html_report` as static HTML pages (report.html
and one report_<language>.html per language: inline CSS, no script, no network asset, every text
escaped), which `write_html_report` writes atomically. Both show the same numbers, from the same rows.
Per language, the section "Ordering consistency" lists every task, kept and dropped, with its consistency
and 95% interval (or the reason it is not measurable), the step pairs averaged and the decision accuracy.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import polars as pl

from analysis.aggregate import AggregateResult
from analysis.base.io import atomic_write_text
from analysis.config import Config
from analysis.english_gap import GAP_FILE, SUMMARY_FILE, EnglishGap, display_rows
from analysis.scores.validate import LoadReport
from analysis.select import Selection, safe_file_name


def format_number(value: object, digits: int = 2) -> str:
    """A statistic as the reports show it: "n/a" for null/NaN, "inf", yes/no, fixed digits."""
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


def format_ci(row: dict, name: str, digits: int = 2) -> str:
    """`row[name]` with its `[low, high]` interval when the row has `<name>_ci_low/high`."""
    value, low, high = row.get(name), row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    text = format_number(value, digits)
    if value is not None and low is not None and high is not None:
        text += f" [{format_number(low, digits)}, {format_number(high, digits)}]"
    return text


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _thresholds(config: Config) -> str:
    rows = [
        [section, key, format_number(value) if isinstance(value, float) else str(value)]
        for section, values in config.as_dict().items()
        for key, value in values.items()
    ]
    return _table(["section", "parameter", "value"], rows)


KEPT_HEADER = ("task", "shots", "metric", "cat.", "monotonicity [95% CI]", "SNR [CI]", "sigmas",
               "separation [CI] (p)", "consistency [CI]", "decision acc.", "margin")  # fmt: skip
DROPPED_HEADER = ("task", "best metric", "cat.", "reason")


def _kept_cells(r: dict) -> list[str]:
    return [
        r["task"],
        str(r["fewshot"]),
        r["metric"],
        r["category"],
        format_ci(r, "monotonicity"),
        format_ci(r, "snr", 1) + (f" ({r['snr_kind']})" if r.get("snr_kind") else ""),
        format_number(r["non_random_sigmas"], 1),
        _separation_cell(r),
        format_ci(r, "consistency"),
        format_number(r["decision_accuracy"]),
        format_number(r["margin"]),
    ]


def _separation_cell(r: dict) -> str:
    """Separation (run sd over seed sd) with its interval and the F-test's p-value; n/a when not measured."""
    p = r.get("separation_p")
    return format_ci(r, "separation") + (f" (p {p:.2g})" if p is not None else "")


def _dropped_cells(r: dict) -> list[str]:
    return [r["task"], r["metric"], r["category"], r["reason"]]


def _by_category(rows: pl.DataFrame) -> list[dict]:
    return list(rows.sort(["category", "task"]).iter_rows(named=True))


def _code_first(cells: list[str]) -> list[str]:
    return [f"`{cells[0]}`", *cells[1:]]


def _kept_table(kept: pl.DataFrame) -> str:
    return _table(KEPT_HEADER, [_code_first(_kept_cells(r)) for r in _by_category(kept)])


def _dropped_table(dropped: pl.DataFrame) -> str:
    return _table(DROPPED_HEADER, [_code_first(_dropped_cells(r)) for r in _by_category(dropped)])


CONSISTENCY_TITLE = "Ordering consistency"
CONSISTENCY_HEADER = ("task", "metric", "consistency [95% CI]", "step pairs", "decision acc.", "verdict")


def consistency_text(config: Config) -> str:
    """What the ordering-consistency section shows, and whether the selection requires it."""
    cfg = config.consistency
    window = f"past {cfg.min_tokens:,} tokens" + (
        f" (step {cfg.min_step} without token counts)" if cfg.min_step else ""
    )
    role = (
        "It is a required criterion here."
        if "consistency" in config.selection.require
        else "It is reported, not required: between metrics of one task it only breaks ties of margin."
    )
    return (
        "Ordering consistency (FineTasks): the mean Kendall tau between the runs' scores at consecutive "
        f"checkpoints {window}, on each task's chosen metric; 1 = the runs keep their order from one "
        "checkpoint to the next, 0 = it is reshuffled, below 0 = it flips. In brackets its 95% bootstrap "
        'interval over the step pairs it averaged (column "step pairs"); decision accuracy is the share of '
        "run pairs ordered at the early checkpoint as at the final one. Every task is listed, kept or dropped, "
        f"highest consistency first; a task without a value says why. {role}"
    )


def consistency_order(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` in the order the reports list consistency: highest first (ties: the higher CI lower bound,
    then the task name), not measurable (null) last. Only the columns present are used as keys."""
    keys = [
        (c, d) for c, d in (("consistency", True), ("consistency_ci_low", True), ("task", False)) if c in rows.columns
    ]
    return rows.sort([c for c, _ in keys], descending=[d for _, d in keys], nulls_last=True)


def consistency_cells(r: dict) -> list[str]:
    """One task's row of the consistency section: a value with its interval, or the reason there is none."""
    measured = r.get("consistency") is not None
    if measured:
        consistency = format_ci(r, "consistency")
    else:
        consistency = r.get("consistency_reason") or "consistency: not measurable"
    accuracy = format_number(r.get("decision_accuracy"))
    if r.get("decision_accuracy") is None and r.get("decision_reason"):
        accuracy = f"n/a ({str(r['decision_reason']).removeprefix('decision accuracy: ')})"
    return [
        r["task"],
        r["metric"],
        consistency,
        format_number(r.get("consistency_n_pairs")) if measured else "n/a",
        accuracy,
        "kept" if r["kept"] else "dropped",
    ]


def _consistency_table(rows: pl.DataFrame) -> str:
    return _table(
        CONSISTENCY_HEADER, [_code_first(consistency_cells(r)) for r in consistency_order(rows).iter_rows(named=True)]
    )


RANKING_TEXT = (
    "Scores rescaled between the random baseline and a perfect score ((s - b) / (1 - b) for accuracy, "
    "1 - s / 8 for bits per byte against the uniform byte model; clipped at 0), averaged per category, "
    "then over categories per language; a language with a task without a baseline is scored by win rate instead. "
    "Runs ranked per language and the ranks averaged (FineTasks), with a 95% bootstrap interval over seeds. "
    "Borda and HELM mean win rate are shown as alternatives. Per language, runs whose seed-paired difference "
    "has a 95% interval containing 0 are tied within noise (docs/statistics.md)."
)


def _ranking_rows(ranking: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    score_cols = [c for c in ranking.columns if c.startswith("score_")]
    header = ["run", *[c.removeprefix("score_") for c in score_cols], "mean rank", "Borda", "win rate", "missing"]
    rows = [
        [
            r["run"],
            *[format_number(r[c], 3) for c in score_cols],
            format_number(r["mean_rank"]) + _interval_text(r.get("mean_rank_ci_low"), r.get("mean_rank_ci_high")),
            format_number(r["borda"], 1),
            format_number(r["mean_win_rate"]),
            r["missing_languages"] or "",
        ]
        for r in ranking.iter_rows(named=True)
    ]
    return header, rows


def _interval_text(low: object, high: object, digits: int = 2) -> str:
    """ " [low, high]" when both ends are known, else nothing."""
    if low is None or high is None:
        return ""
    return f" [{format_number(low, digits)}, {format_number(high, digits)}]"


def language_run_rows(result: AggregateResult, language: str) -> list[list[str]]:
    """Per run in `language`, best first: run, score [95% CI], kind, rank, runs tied with it within seed noise."""
    scores = result.language_scores.filter(pl.col("language") == language).sort("rank", "run")
    return [
        [
            r["run"],
            format_number(r["score"], 3) + _interval_text(r.get("ci_low"), r.get("ci_high"), 3),
            (r.get("kind") or "rescaled").replace("_", " "),
            format_number(r["rank"], 1),
            r.get("tied_with") or "none",
        ]
        for r in scores.iter_rows(named=True)
    ]


LANGUAGE_RUN_HEADER = ["run", "score [95% CI]", "scale", "rank (1 = best)", "tied within noise with"]


def _language_runs_section(result: AggregateResult) -> list[str]:
    """Markdown: per language, each run's score with its interval and the runs the seeds cannot tell from it."""
    lines = ["### Runs per language", ""]
    for language in sorted(result.language_scores.get_column("language").unique().to_list()):
        rows = [_code_first(row) for row in language_run_rows(result, language)]
        lines += [f"**{language}**", "", _table(LANGUAGE_RUN_HEADER, rows), ""]
    return lines


def _ranking_section(result: AggregateResult) -> list[str]:
    header, rows = _ranking_rows(result.ranking)
    rows = [_code_first(row) for row in rows]
    lines = [
        "## Multilingual ranking",
        "",
        RANKING_TEXT,
        "",
        _table(header, rows),
        "",
        *_language_runs_section(result),
    ]
    if result.notes:
        lines += ["Notes:", "", *[f"- {note}" for note in result.notes], ""]
    return lines


def _method_text(config: Config) -> str:
    return (
        "Statistics are defined in `docs/statistics.md`. A task is kept when its best metric passes every "
        f"required criterion ({', '.join(config.selection.require)}); a criterion that cannot be measured "
        "fails it. Margins are normalised (0 at the threshold, 1 = comfortably past it) and the weakest "
        "criterion sets a metric's margin. Intervals are 95% percentile bootstrap intervals "
        "(monotonicity over series, SNR over checkpoints, consistency over checkpoint pairs)."
    )


SUMMARY_HEADER = ("language", "kept/tasks", "kept per category", "coverage gaps")


def _summary_rows(selection: Selection, config: Config, languages: list[str]) -> list[list[str]]:
    chosen = selection.decisions.filter(pl.col("chosen"))
    out = []
    for language in languages:
        rows = chosen.filter(pl.col("language") == language)
        kept = rows.filter(pl.col("kept"))
        counts = ", ".join(f"{c} {kept.filter(pl.col('category') == c).height}" for c in config.selection.categories)
        flags = [f for f in selection.coverage if f.language == language]
        out.append(
            [language, f"{kept.height}/{rows.height}", counts, "; ".join(f"{f.suite}: no {f.category}" for f in flags)]
        )
    return out


GAP_TITLE = "Gap to English"
GAP_HEADER = ("benchmark", "language", "metric", "run", "last step", "gap [CI]", "narrowing (run)",
              "narrowing, all runs [CI]")  # fmt: skip


def gap_text(config: Config) -> str:
    """What the gap-to-English numbers mean, for both reports."""
    level = round(100 * config.bootstrap.confidence)
    return (
        "English score minus the language's score, for every task with an English counterpart (same benchmark, "
        "formulation, few-shot count and metric), at each run's last checkpoint; shown per benchmark for one "
        "variant (the one most often chosen) and the task with English prompt words where there is one. "
        "Positive: English ahead (for bits per byte, negative). "
        f"Interval: {level}% from the scores' standard errors (conservative for parallel test sets). "
        "Narrowing: Spearman's rho between step and the English lead, negated, mean over (run, seed) series "
        f"(+1: the gap closes at every checkpoint; -1: it opens), with a {level}% bootstrap interval over series, "
        "like monotonicity. "
        f"Every pair and checkpoint: {GAP_FILE}; every pair's last checkpoint and narrowing: {SUMMARY_FILE}."
    )


def gap_cells(r: dict) -> list[str]:
    """One displayed gap row as table cells (GAP_HEADER)."""
    return [
        r["benchmark"], r["language"], f"{r['metric']} ({r['formulation']}, {r['fewshot']}-shot)", r["run"],
        format_number(r["last_step"]), format_ci(r, "gap", 3), format_number(r["run_narrowing"]),
        format_ci(r, "narrowing"),
    ]  # fmt: skip


def _gap_section(gap: EnglishGap, decisions: pl.DataFrame, config: Config, figures: dict[str, Path],
                 out_dir: Path) -> list[str]:  # fmt: skip
    shown = display_rows(gap, decisions)
    lines = [f"## {GAP_TITLE}", "", gap_text(config), "", _table(GAP_HEADER, [gap_cells(r) for r in shown.to_dicts()])]
    lines.append("")
    for key in sorted(k for k in figures if k.startswith("english_gap_")):
        lines += [f"![gap to English, {key.removeprefix('english_gap_')}]"
                  f"({figures[key].relative_to(out_dir).as_posix()})", ""]  # fmt: skip
    return lines


def render_report(
    selection: Selection,
    config: Config,
    load_report: LoadReport,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
    *,
    english_gap: EnglishGap | None = None,
) -> str:
    """The whole report as Markdown; figure paths are written relative to `out_dir`. The gap-to-English section
    is there when `english_gap` pairs any task."""

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
        _method_text(config),
        "",
        "## Summary",
        "",
    ]
    summary_rows = _summary_rows(selection, config, languages)
    lines += [_table(SUMMARY_HEADER, summary_rows), ""]
    if aggregate is not None:
        lines += _ranking_section(aggregate) + link("ranking", "final ranking")
    if english_gap is not None and not english_gap.empty:
        lines += _gap_section(english_gap, decisions, config, figures, out_dir)
    for language in languages:
        rows = chosen.filter(pl.col("language") == language)
        lines += [f"## {language}", ""]
        lines += link(f"criteria_{language}", f"criteria overview {language}")
        kept, dropped = rows.filter(pl.col("kept")), rows.filter(~pl.col("kept"))
        lines += ["### Kept", "", _kept_table(kept) if kept.height else "No task passed the criteria.", ""]
        if dropped.height:
            lines += ["### Dropped", "", _dropped_table(dropped), ""]
        lines += [f"### {CONSISTENCY_TITLE}", "", consistency_text(config), "", _consistency_table(rows), ""]
        lines += link(f"consistency_{language}", f"ordering consistency {language}")
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


# ---------------------------------------------------------------------------------------------- HTML

HTML_TITLE = "finetasks-afr selection report"
INDEX_PAGE = "report.html"

_CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 0; color: #1b1b1b; background: #fff; }
header { background: #1f3a5f; color: #fff; padding: 18px 32px; }
header h1 { margin: 0; font-size: 28px; }
header p { margin: 6px 0 0; font-size: 15px; color: #d7e3f4; }
main { padding: 8px 32px 32px; max-width: 1400px; }
nav { margin: 12px 0; font-size: 14px; }
nav a { margin-right: 12px; }
h2 { border-bottom: 2px solid #1f3a5f; padding-bottom: 4px; margin-top: 28px; font-size: 20px; }
table { border-collapse: collapse; margin: 10px 0; font-size: 13px; }
th, td { border: 1px solid #c8ccd2; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #e8edf3; }
tr.kept td:first-child { border-left: 5px solid #2ca02c; }
tr.dropped td:first-child { border-left: 5px solid #d62728; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
figure { margin: 12px 0; }
figure img { max-width: 100%; border: 1px solid #dde1e6; }
figcaption { font-size: 13px; color: #444; }
.note { color: #444; font-size: 14px; max-width: 1000px; }
"""


_NUM_CELL = '<td class="num">'


class _Raw(str):
    """HTML that is already escaped (links, code spans); every other cell text is escaped."""


def _esc(text: object) -> str:
    return text if isinstance(text, _Raw) else html.escape(str(text), quote=True)


def _prose(text: str) -> _Raw:
    """Report prose as HTML: escaped, its Markdown code spans (`x`) as <code>, as the Markdown report shows them."""
    parts = _esc(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code span
        return _Raw(_esc(text))
    return _Raw("".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts)))


def _code(text: str) -> _Raw:
    return _Raw(f"<code>{_esc(text)}</code>")


def _link(href: str, text: str) -> _Raw:
    return _Raw(f'<a href="{_esc(quote(href))}">{_esc(text)}</a>')


def html_page_name(language: str) -> str:
    """The file name of a language's page, e.g. `report_yor.html`; `safe_file_name` keeps it inside the output."""
    return f"report_{safe_file_name(language)}.html"


def _html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    table_id: str | None = None,
    row_classes: Sequence[str] | None = None,
    numeric: Sequence[int] = (),
) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{_esc(row_classes[i])}"' if row_classes else ""
        cells = "".join((_NUM_CELL if j in numeric else "<td>") + _esc(cell) + "</td>" for j, cell in enumerate(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    ident = f' id="{_esc(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>"


def _figure(figures: dict[str, Path], key: str, out_dir: Path, caption: str) -> str:
    path = figures.get(key)
    if path is None:
        return ""
    src = quote(path.relative_to(out_dir).as_posix())
    return f'<figure><img src="{_esc(src)}" alt="{_esc(caption)}"><figcaption>{_esc(caption)}</figcaption></figure>'


def _html_page(title: str, subtitle: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_esc(title)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<header><h1>{_esc(HTML_TITLE)}</h1><p>{_esc(subtitle)}</p></header>",
            "<main>",
            *body,
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )


def _html_ranking(result: AggregateResult, figures: dict[str, Path], out_dir: Path, *, figure: bool) -> list[str]:
    header, rows = _ranking_rows(result.ranking)
    numeric = range(1, len(header) - 1)
    parts = [
        '<h2 id="ranking-section">Multilingual ranking</h2>',
        f'<p class="note">{_prose(RANKING_TEXT)}</p>',
        _html_table(header, [[_code(r[0]), *r[1:]] for r in rows], table_id="ranking", numeric=numeric),
        _figure(figures, "ranking", out_dir, "final ranking: mean rank per run and score per language")
        if figure
        else "",
    ]
    if result.notes:
        parts += ["<p>Notes:</p><ul>", *[f"<li>{_esc(note)}</li>" for note in result.notes], "</ul>"]
    return parts


def _html_language_runs(result: AggregateResult, language: str) -> list[str]:
    rows = language_run_rows(result, language)
    if not rows:
        return [f"<p>No run has a score in {_esc(language)} (no kept task, or runs missing some of them).</p>"]
    header = ["run", f"score ({language}) [95% CI]", *LANGUAGE_RUN_HEADER[2:]]
    cells = [[_code(row[0]), *row[1:]] for row in rows]
    return [_html_table(header, cells, table_id="language-runs", numeric=(1, 3))]


def _html_gap(gap: EnglishGap, decisions: pl.DataFrame, config: Config, figures: dict[str, Path],
              out_dir: Path) -> list[str]:  # fmt: skip
    rows = [[_code(r["benchmark"]), *gap_cells(r)[1:]] for r in display_rows(gap, decisions).to_dicts()]
    parts = [
        f'<h2 id="english-gap-section">{_esc(GAP_TITLE)}</h2>',
        f'<p class="note">{_prose(gap_text(config))}</p>',
        _html_table(GAP_HEADER, rows, table_id="english-gap", numeric=(4, 5, 6, 7)),
    ]
    for key in sorted(k for k in figures if k.startswith("english_gap_")):
        benchmark = key.removeprefix("english_gap_")
        parts.append(_figure(figures, key, out_dir, f"{benchmark}: gap to English at the last checkpoint and "
                                                      "over training, per run, with intervals"))  # fmt: skip
    return parts


def _html_index(
    selection: Selection,
    config: Config,
    load_report: LoadReport,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
    languages: list[str],
    english_gap: EnglishGap | None = None,
) -> str:
    decisions = selection.decisions
    chosen = decisions.filter(pl.col("chosen"))
    summary = [[_link(html_page_name(row[0]), row[0]), *row[1:]] for row in _summary_rows(selection, config, languages)]
    body = [
        f"<p>Source: {_esc(load_report.summary())}</p>",
        f"<p>{chosen.height} tasks, {decisions.height} (task, metric) candidates, {len(languages)} languages; "
        f"<strong>{selection.kept.height} tasks kept</strong>.</p>",
        f'<p class="note">{_prose(_method_text(config))}</p>',
        "<h2>Languages</h2>",
        "<p>Each language has its own page: kept and dropped tasks with their reason and margin, criteria "
        "and training-curve figures.</p>",
        _html_table(SUMMARY_HEADER, summary, table_id="summary"),
    ]
    if aggregate is not None:
        body += _html_ranking(aggregate, figures, out_dir, figure=True)
    if english_gap is not None and not english_gap.empty:
        body += _html_gap(english_gap, decisions, config, figures, out_dir)
    params = [
        [section, key, format_number(value) if isinstance(value, float) else str(value)]
        for section, values in config.as_dict().items()
        for key, value in values.items()
    ]
    body += ["<h2>Parameters used</h2>", _html_table(["section", "parameter", "value"], params, table_id="parameters")]
    if load_report.notes:
        body += ["<h2>Input notes</h2>", "<ul>", *[f"<li>{_esc(note)}</li>" for note in load_report.notes], "</ul>"]
    return _html_page(
        HTML_TITLE, f"{selection.kept.height} of {chosen.height} tasks kept in {len(languages)} languages", body
    )


def _html_consistency(
    rows: pl.DataFrame, config: Config, figures: dict[str, Path], out_dir: Path, language: str
) -> list[str]:
    ordered = list(consistency_order(rows).iter_rows(named=True))
    cells = [[_code(r["task"]), *consistency_cells(r)[1:]] for r in ordered]
    classes = ["kept" if r["kept"] else "dropped" for r in ordered]
    return [
        f'<h2 id="consistency-section">{_esc(CONSISTENCY_TITLE)}</h2>',
        f'<p class="note">{_prose(consistency_text(config))}</p>',
        _html_table(CONSISTENCY_HEADER, cells, table_id="consistency", row_classes=classes, numeric=(3,)),
        _figure(
            figures,
            f"consistency_{language}",
            out_dir,
            f"ordering consistency {language}: Kendall tau per task with its 95% CI",
        ),
    ]


def _html_language(
    selection: Selection,
    config: Config,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
    language: str,
    languages: list[str],
) -> str:
    rows = selection.decisions.filter(pl.col("chosen") & (pl.col("language") == language))
    kept, dropped = rows.filter(pl.col("kept")), rows.filter(~pl.col("kept"))
    others = [_link(html_page_name(other), other) for other in languages if other != language]
    body = [
        "<nav>" + _link(INDEX_PAGE, "← all languages") + "".join(f" {link}" for link in others) + "</nav>",
        f"<p><strong>{kept.height} of {rows.height} tasks kept</strong> in {_esc(language)}.</p>",
        _figure(figures, f"criteria_{language}", out_dir, f"criteria overview {language}"),
        "<h2>Kept tasks</h2>",
    ]
    if kept.height:
        kept_rows = [[_code(r["task"]), *_kept_cells(r)[1:], r["reason"]] for r in _by_category(kept)]
        body.append(
            _html_table(
                [*KEPT_HEADER, "reason"],
                kept_rows,
                table_id="kept",
                row_classes=["kept"] * kept.height,
                numeric=range(4, 11),
            )
        )
    else:
        body.append('<p id="kept">No task passed the criteria.</p>')
    body.append("<h2>Dropped tasks</h2>")
    if dropped.height:
        dropped_rows = [
            [_code(r["task"]), r["metric"], r["category"], format_number(r["margin"]), r["reason"]]
            for r in _by_category(dropped)
        ]
        header = ["task", "best metric", "cat.", "margin", "reason"]
        body.append(
            _html_table(
                header, dropped_rows, table_id="dropped", row_classes=["dropped"] * dropped.height, numeric=(3,)
            )
        )
    else:
        body.append('<p id="dropped">No task was dropped.</p>')
    body += _html_consistency(rows, config, figures, out_dir, language)
    flags = [f for f in selection.coverage if f.language == language]
    if flags:
        body += ["<h2>Coverage</h2>", "<ul>", *[f"<li>{_esc(f.describe())}</li>" for f in flags], "</ul>"]
    if aggregate is not None:
        body += [f"<h2>Runs in {_esc(language)}</h2>", *_html_language_runs(aggregate, language)]
        body += _html_ranking(aggregate, figures, out_dir, figure=False)
    curves = [
        _figure(
            figures,
            f"curves_{r['task']}",
            out_dir,
            f"{r['task']}: {'kept' if r['kept'] else 'dropped'} ({r['metric']}, {r['fewshot']}-shot)",
        )
        for r in rows.sort(["kept", "task"], descending=[True, False]).iter_rows(named=True)
    ]
    if any(curves):
        body += ["<h2>Training curves</h2>", *[c for c in curves if c]]
    return _html_page(f"{HTML_TITLE} — {language}", f"language {language}", body)


def render_html_report(
    selection: Selection,
    config: Config,
    load_report: LoadReport,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
    *,
    english_gap: EnglishGap | None = None,
) -> dict[str, str]:
    """{file name: HTML} for `out_dir`: `report.html` (summary, ranking, parameters, links) and one
    `report_<language>.html` per language; figure links are relative to `out_dir`.

    Raises ValueError when two languages would share a page name (codes differing only in odd characters).
    """
    languages = sorted(selection.decisions.get_column("language").unique().to_list())
    names = {language: html_page_name(language) for language in languages}
    if len(set(names.values())) != len(names) or INDEX_PAGE in names.values():
        raise ValueError(f"language codes {languages} do not give distinct page names: {names}")
    pages = {
        INDEX_PAGE: _html_index(selection, config, load_report, aggregate, figures, out_dir, languages, english_gap)
    }
    for language in languages:
        pages[names[language]] = _html_language(selection, config, aggregate, figures, out_dir, language, languages)
    return pages


def write_html_report(
    selection: Selection,
    config: Config,
    load_report: LoadReport,
    aggregate: AggregateResult | None,
    figures: dict[str, Path],
    out_dir: Path,
    *,
    english_gap: EnglishGap | None = None,
) -> dict[str, Path]:
    """Write the HTML report into `out_dir` atomically, language pages first and the index last.

    Returns {"index": report.html, <language>: its page}.
    """
    pages = render_html_report(selection, config, load_report, aggregate, figures, out_dir, english_gap=english_gap)
    languages = sorted(selection.decisions.get_column("language").unique().to_list())
    written = {language: atomic_write_text(Path(out_dir) / html_page_name(language), pages[html_page_name(language)])
               for language in languages}  # fmt: skip
    written["index"] = atomic_write_text(Path(out_dir) / INDEX_PAGE, pages[INDEX_PAGE])
    return written
