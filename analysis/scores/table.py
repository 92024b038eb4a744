"""The score table: one row per measurement, the contract between evaluation and analysis.

Columns and types are those of DESIGN.md; the key (run, seed, step, task, fewshot, metric) is unique.

Usage::

    frame, report = read_scores("scores.parquet")          # analysis.scores.read: or .csv, or lm-eval JSON
    print(report.summary())
    frame, report = validate(my_frame, source="my sweep")  # any producer's frame
    write_scores(frame, "out/scores.parquet")              # atomic (analysis.base.io.atomic_write)

Every problem raises `ScoreTableError` naming the input, the column(s), a few offending rows, their
count and the fix. One documented exception: a NaN score means the evaluation produced no number (a
crashed task, an empty split); such rows are dropped, counted and shown in the `LoadReport`.

`random_baseline` may be empty (null; a NaN is stored as null) only for lower-is-better metrics: a word
perplexity has no chance level independent of the model's tokenizer and the text's words, and the non-randomness
criterion is then not applicable. A per-byte metric left empty gets its chance level, the uniform byte model's
8 bits per byte (`analysis.scores.metrics.chance_levels`), so every table records it, however it was made. Every
higher-is-better metric needs its chance score.

Nothing loops over rows or groups in Python: rules about single values are masks counted in one
pass, rules across rows are lazy group-bys collected together, and the sort goes through one int64
key. On a busy 2-core machine a million rows validate in about 0.3 s when already in KEY order
(a table this module wrote) and 0.6-0.7 s when shuffled.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

from analysis.base.encoding import TextEncodingError, check_user_text_file
from analysis.base.io import atomic_write
from analysis.base.names import (
    CONTROL_PATTERN,
    control_character_problem,
    describe_control_characters,
    lookalike_note,
    non_nfc,
)
from analysis.base.ordinal import distinct, ordinal_key, starts_run, text_codes
from analysis.base.write_errors import writing
from analysis.scores.metrics import chance_levels, known_metric_help, metric_info

SCHEMA: dict[str, pl.DataType] = {
    "run": pl.String(),
    "seed": pl.Int64(),
    "step": pl.Int64(),
    "tokens": pl.Int64(),
    "task": pl.String(),
    "benchmark": pl.String(),
    "language": pl.String(),
    "category": pl.String(),
    "formulation": pl.String(),
    "fewshot": pl.Int64(),
    "metric": pl.String(),
    "score": pl.Float64(),
    "stderr": pl.Float64(),
    "random_baseline": pl.Float64(),
}
COLUMNS: tuple[str, ...] = tuple(SCHEMA)
OPTIONAL_SCHEMA: dict[str, pl.DataType] = {"majority_baseline": pl.Float64(), "sampled_documents": pl.Int64()}
"""Columns a table may have and keeps when it has them. `majority_baseline`: the share of the evaluated documents
whose gold is the most common answer (what a model giving one answer to every document scores), recorded by a
sweep for multiple-choice tasks; non-randomness tests accuracy against the larger of it and random_baseline.
`sampled_documents`: the number of documents a score was computed on when that is a sample of the task's documents
(lighteval's --max-samples, lm-eval's --limit), empty when every document was scored; a plain lighteval results
file records only its cap, so there the number is an upper bound. The analysis flags such scores (the decisions'
`sampled_documents`, the load notes of select and the report): a score on a sample is another estimate."""
_TYPES: dict[str, pl.DataType] = {**SCHEMA, **OPTIONAL_SCHEMA}
NULLABLE: frozenset[str] = frozenset({"seed", "tokens", "stderr", "random_baseline", *OPTIONAL_SCHEMA})
NO_BASELINE_NOTE = "random_baseline may be empty only for lower-is-better metrics (perplexities)"
KEY: tuple[str, ...] = ("run", "seed", "step", "task", "fewshot", "metric")
CATEGORIES: tuple[str, ...] = ("GK", "RC", "RES", "NLU", "GEN")
FORMULATIONS: tuple[str, ...] = ("CF", "MCF", "HYBRID", "GEN", "PPL")
ENGLISH_PROMPT_SUFFIX = "_enprompt"
"""Suffix of a task that shows English prompt words over in-language content (finetasks_afr's task names; the gap
to English pairs a task with its English-prompt twin by it)."""


class ScoreTableError(ValueError):
    """A score table that cannot be analysed; the message names the input at fault and the fix."""


NAN_POLICY = (
    "a NaN score means the evaluation produced no number (e.g. a crashed task); "
    "such rows are dropped and counted in the load report"
)
ACCEPTED_FORMATS = (
    "a .parquet or .csv score table, an lm-evaluation-harness result .json file (v0, or 0.4's results_*.json), "
    "or a directory of them"
)
_MAX_EXAMPLES = 5
MAX_MAGNITUDE = 1e100
"""Largest |score|, |stderr| or |random_baseline| accepted. Far above any real metric (a random model's word
perplexity is ~1e25), and small enough that squares and sums of squares over millions of rows stay finite: a
score scaled by 1e300 would make every variance overflow to inf and every signal-to-noise ratio 0."""
SIGNED_METRICS: frozenset[str] = frozenset({"ter_inverse"})
"""Known unbounded metrics that may be negative; every other known metric (accuracies, F1, BLEU, chrF,
perplexities, bits per byte, NLL) counts or averages non-negative quantities, so a negative value is a bug."""


# --------------------------------------------------------------------------------------------------
# Load report


@dataclass
class LoadReport:
    """What loading did besides returning rows: dropped NaN scores and other notes, for the log."""

    source: str
    n_rows: int
    dropped_nan: int = 0
    dropped_nan_examples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One or two human lines: rows kept, rows dropped for NaN, notes."""
        line = f"{self.source}: {self.n_rows:,} rows"
        if self.dropped_nan:
            line += (
                f"; dropped {self.dropped_nan:,} row(s) with a NaN score (no number produced), "
                f"e.g. {self.dropped_nan_examples[0]}"
            )
        if not self.notes:
            return line
        return f"{line}\nnotes: {'; '.join(self.notes)}"


# --------------------------------------------------------------------------------------------------
# Error rendering


def _fmt(value: object) -> str:
    """A cell as text; None as `null` so a null seed is visible."""
    return "null" if value is None else str(value)


def _render_rows(frame: pl.DataFrame, columns: Sequence[str]) -> list[str]:
    """Up to five rows as `run=.. seed=.. ..` plus `columns`; only key columns that exist are shown."""
    shown = [c for c in KEY if c in frame.columns] + [c for c in columns if c not in KEY]
    rows = frame.head(_MAX_EXAMPLES).select(shown).rows(named=True)
    return [" ".join(f"{c}={_fmt(row[c])}" for c in shown) for row in rows]


def _problem(columns: Sequence[str], count: int, what: str, examples: Sequence[str], fix: str) -> str:
    """One problem paragraph: column(s), count, what is wrong, examples, fix."""
    names = ", ".join(f"'{c}'" for c in columns)
    lines = [f"column {names}: {count:,} {what}, e.g."]
    lines += [f"    {e}" for e in examples[:_MAX_EXAMPLES]]
    lines.append(f"  fix: {fix}")
    return "\n".join(lines)


def _raise(source: str, problems: Sequence[str]) -> NoReturn:
    """Raise one error carrying every problem found at the same stage."""
    if len(problems) == 1:
        raise ScoreTableError(f"{source}: {problems[0]}")
    body = "\n".join(f"- {p}" for p in problems)
    raise ScoreTableError(f"{source}: {len(problems)} problems in the score table:\n{body}")


def _schema_help() -> str:
    """The expected schema, for messages about missing columns."""
    return ", ".join(f"{c} ({SCHEMA[c]}{', nullable' if c in NULLABLE else ''})" for c in COLUMNS)


# --------------------------------------------------------------------------------------------------
# Validation stages


def _select_columns(frame: pl.DataFrame, source: str) -> tuple[pl.DataFrame, list[str]]:
    """Require every schema column; drop extras (producers often add their own), returning their names for the
    load report's note."""
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ScoreTableError(
            f"{source}: missing column(s) {', '.join(missing)}; the score table needs {_schema_help()}. "
            "fix: add the missing columns (nullable ones may be left empty)"
        )
    optional = [c for c in OPTIONAL_SCHEMA if c in frame.columns]
    return frame.select(*COLUMNS, *optional), [c for c in frame.columns if c not in _TYPES]


def _castable(dtype: pl.DataType) -> bool:
    """Types a schema column may arrive as: text, numbers, categoricals, all-null."""
    return dtype.is_numeric() or isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Null)


def _cast_expr(name: str, source_dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """(cast value, mask of values the cast would lose) for one column; strict in effect, lenient in form.

    Integers may arrive as text `3.0` or as floats (what pandas writes for a nullable int column);
    they are accepted when whole. A NaN in a nullable integer column is pandas' null.
    """
    col, target = pl.col(name), _TYPES[name]
    if source_dtype == target:
        return col, pl.lit(False)
    if target == pl.Int64() and (source_dtype.is_float() or source_dtype == pl.String()):
        as_float = col.cast(pl.Float64, strict=False)
        if name in NULLABLE:
            as_float = as_float.fill_nan(None)
        whole = as_float.is_finite() & (as_float == as_float.floor()) & (as_float.abs() < 2.0**63)
        from_float = pl.when(whole).then(as_float.cast(pl.Int64, strict=False))
        direct = col.cast(pl.Int64, strict=False) if source_dtype == pl.String() else pl.lit(None)
        value = pl.coalesce(direct, from_float)
        lost = col.is_not_null() & value.is_null()
        if name in NULLABLE and source_dtype.is_float():
            lost = lost & ~col.is_nan()
        return value, lost
    value = col.cast(target, strict=False)
    return value, col.is_not_null() & value.is_null()


def _cast(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    """Cast every column to its schema type; values that would be lost are an error, not a null."""
    wrong = [c for c in frame.columns if not _castable(frame.schema[c])]
    if wrong:
        raise ScoreTableError(
            f"{source}: column(s) {', '.join(f'{c!r} has type {frame.schema[c]}' for c in wrong)}; "
            f"expected {', '.join(f'{c}: {_TYPES[c]}' for c in wrong)}. fix: store plain values"
        )
    exprs = {c: _cast_expr(c, frame.schema[c]) for c in frame.columns}
    lost = frame.select(*(mask.sum().alias(c) for c, (_, mask) in exprs.items())).row(0, named=True)
    problems = []
    for c in (c for c in frame.columns if lost[c]):
        bad = frame.filter(exprs[c][1])
        values = ", ".join(repr(v) for v in bad.get_column(c).unique(maintain_order=True).head(5))
        problems.append(
            _problem(
                [c],
                lost[c],
                f"value(s) cannot be read as {_TYPES[c]} (bad values: {values})",
                _render_rows(bad, [c]),
                f"write {'whole numbers' if _TYPES[c] == pl.Int64() else 'numbers'} in '{c}'"
                + (" or leave the cell empty" if c in NULLABLE else ""),
            )
        )
    if problems:
        _raise(source, problems)
    return frame.select(*(value.alias(c) for c, (value, _) in exprs.items()))


_TEXT_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if SCHEMA[c] == pl.String())
LOOKALIKE_COLUMNS: tuple[str, ...] = ("run", "task", "language", "benchmark")
"""The names a reader tells apart on sight (ranking rows, report sections); distinct ones that print alike are noted."""


def _refuse_control_characters(distinct_values: Mapping[str, pl.Series], source: str) -> None:
    """Names with control characters inside them (after the ends are stripped) are refused
    (`analysis.base.names`): a
    newline in a run would split the report's ranking row, a NUL gave a phantom run in ranking.csv."""
    problems = []
    for column, values in distinct_values.items():
        bad = values.filter(values.str.strip_chars().str.contains(CONTROL_PATTERN)).sort()
        if bad.len():
            shown = "; ".join(f"{v!r}: {describe_control_characters(v.strip())}" for v in bad.head(5))
            problems.append(
                f"column '{column}': {bad.len():,} distinct value(s) hold control characters ({shown}); names "
                "become file names, suite-file lines and report rows; fix: rename them without control characters"
            )
    if problems:
        _raise(source, problems)


def _distinct_text(frame: pl.DataFrame) -> dict[str, pl.Series]:
    """The sorted distinct non-null values of each text column (`analysis.base.ordinal.distinct`), found in one
    eager select (a lazy query per column cost more to plan than to run on a partition)."""
    found = frame.select(distinct(c).drop_nulls().sort().implode() for c in _TEXT_COLUMNS)
    return {c: found.get_column(c).explode(empty_as_null=False) for c in _TEXT_COLUMNS}


def _strip_text(
    frame: pl.DataFrame, source: str
) -> tuple[pl.DataFrame, dict[str, list[str]], dict[str, list[str]], dict[str, pl.Series]]:
    """Strip leading/trailing whitespace from the text columns and put every name in Unicode NFC; returns the frame,
    the distinct padded values of each changed column and the distinct values not in NFC (for the load report's
    notes), and the sorted distinct values of every text column after both.

    NFC (`analysis.base.names.nfc`): one run name typed on Linux and one copied from macOS (`mix-é` composed and
    decomposed) print alike and must not be two runs whose seeds are never pooled.

    A trailing space makes "belebele_hau " a task of its own that no suite file, config or plot would ever name,
    and it is never what a producer meant (task, metric and run names have no spaces at their ends), so it is
    removed with a note instead of failing. Rows that become identical in their key are not merged: the
    duplicate-key check then reports them, saying the key was compared after stripping. Only the distinct
    values are inspected (a few hundred, not a million), and only changed columns are rewritten.
    """
    raw = _distinct_text(frame)
    _refuse_control_characters(raw, source)
    padded = {c: values.filter(values != values.str.strip_chars()) for c, values in raw.items()}
    changed = [c for c in _TEXT_COLUMNS if padded[c].len()]
    stripped = frame.with_columns(pl.col(c).str.strip_chars() for c in changed)
    values = {c: raw[c].str.strip_chars().unique().sort() if c in changed else raw[c] for c in _TEXT_COLUMNS}
    renamed = {c: non_nfc(values[c].to_list()) for c in _TEXT_COLUMNS}
    renamed = {c: mapping for c, mapping in renamed.items() if mapping}
    stripped = stripped.with_columns(pl.col(c).replace(mapping) for c, mapping in renamed.items())
    values.update({c: values[c].replace(mapping).unique().sort() for c, mapping in renamed.items()})
    return stripped, {c: padded[c].to_list() for c in changed}, {c: sorted(m) for c, m in renamed.items()}, values


def _check_nulls(frame: pl.DataFrame, source: str) -> None:
    """Only seed, tokens and stderr may be missing; a missing key or score is a broken producer."""
    required = [c for c in COLUMNS if c not in NULLABLE]
    counts = frame.select(pl.col(required).null_count()).row(0, named=True)
    problems = [
        _problem(
            [c],
            counts[c],
            "row(s) are null (empty)",
            _render_rows(frame.filter(pl.col(c).is_null()), [c]),
            f"fill '{c}'; only {', '.join(sorted(NULLABLE))} may be empty"
            + ("; a score the evaluation did not produce should be NaN" if c == "score" else ""),
        )
        for c in required
        if counts[c]
    ]
    if problems:
        _raise(source, problems)


def _drop_nan_scores(frame: pl.DataFrame) -> tuple[pl.DataFrame, int, list[str]]:
    """Apply the NaN policy: drop rows whose score is NaN, returning how many and a few keys."""
    nan = pl.col("score").is_nan()
    count = int(frame.select(nan.sum()).item())
    if not count:
        return frame, 0, []
    return frame.filter(~nan), count, _render_rows(frame.filter(nan), [])


def _null_nan_stderr(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """A NaN stderr is an unknown stderr, a NaN random_baseline no baseline: store them as null, counting them for
    the load report's note."""
    counts = {}
    if "majority_baseline" in frame.columns:  # an unknown majority rate is no majority rate: not counted
        frame = frame.with_columns(pl.col("majority_baseline").fill_nan(None))
    for column in ("stderr", "random_baseline"):
        counts[column] = int(frame.select(pl.col(column).is_nan().sum()).item())
        if counts[column]:
            frame = frame.with_columns(pl.col(column).fill_nan(None))
    return frame, counts


def _fill_chance_baselines(frame: pl.DataFrame, metrics: pl.Series) -> tuple[pl.DataFrame, dict[str, int]]:
    """Give a per-byte metric's rows without a random baseline the metric's chance level; count them per metric."""
    levels = chance_levels(metrics.to_list())
    if not levels:
        return frame, {}
    empty = pl.col("random_baseline").is_null() & pl.col("metric").is_in(list(levels))
    counts = frame.filter(empty).group_by("metric").len()
    if counts.is_empty():
        return frame, {}
    chance = pl.col("metric").replace_strict(levels, default=None, return_dtype=pl.Float64)
    return frame.with_columns(pl.col("random_baseline").fill_null(chance)), dict(counts.iter_rows())


# --------------------------------------------------------------------------------------------------
# Content checks. Rules about single values are masks counted in one pass; rules across rows are lazy
# group-bys run together; the sort goes through one int64 key (sorting six columns, three of them
# strings, would cost seconds on a million rows).


@dataclass(frozen=True)
class _Check:
    """One rule about single values: the rows it flags, what is wrong with them, how to fix it."""

    columns: tuple[str, ...]
    mask: pl.Expr
    what: str
    fix: str
    text: str | None = None  # the one text column the rule reads: decided on its distinct values first


def _metric_checks(metrics: Iterable[str]) -> list[_Check]:
    """Unknown metric names, and bounded metrics outside [0, 1]."""
    names = sorted(set(metrics))
    unknown = [m for m in names if metric_info(m) is None]
    bounded = [m for m in names if (info := metric_info(m)) is not None and info.bounded]
    higher = [m for m in names if (info := metric_info(m)) is not None and info.higher_is_better]
    non_negative = [m for m in names if m not in unknown and m not in bounded and m not in SIGNED_METRICS]
    score = pl.col("score")
    return [
        _Check(
            ("metric", "random_baseline"),
            pl.col("metric").is_in(higher) & pl.col("random_baseline").is_null(),
            "row(s) have a random_baseline that is not finite (empty or NaN) for a higher-is-better metric",
            f"store the expected score of random guessing; {NO_BASELINE_NOTE}",
        ),
        _Check(
            ("metric",),
            pl.col("metric").is_in(unknown),
            f"row(s) have a metric the analysis does not know ({', '.join(unknown)})",
            f"rename to a known metric or drop those rows; {known_metric_help()}",
            text="metric",
        ),
        _Check(
            ("metric", "score"),
            pl.col("metric").is_in(bounded) & ((score < 0) | (score > 1)),
            "row(s) have a score outside [0, 1] for a metric bounded to [0, 1]",
            "store accuracies and F1 as fractions in [0, 1], not percentages",
        ),
        _Check(
            ("metric", "score"),
            pl.col("metric").is_in(non_negative) & (score < 0),
            f"row(s) have a negative score for a metric that cannot be negative ({', '.join(non_negative)})",
            "store the metric itself (a perplexity, bits per byte or NLL is >= 0), not a log-probability or a "
            "difference; check the producer's sign",
        ),
    ]


def _optional_checks(columns: Sequence[str]) -> list[_Check]:
    """Rules about the optional columns the frame has."""
    checks = []
    if "majority_baseline" in columns:
        majority = pl.col("majority_baseline")
        checks.append(
            _Check(
                ("majority_baseline",),
                ~majority.is_finite() | (majority < 0) | (majority > 1),
                "row(s) have a majority_baseline outside [0, 1]",
                "store the share of evaluated documents the most common answer gets right, or leave it empty",
            )
        )
    if "sampled_documents" in columns:
        checks.append(
            _Check(
                ("sampled_documents",),
                pl.col("sampled_documents") < 1,
                "row(s) have a sampled_documents below 1",
                "store how many documents the score was computed on when that was a sample, or leave it empty",
            )
        )
    return checks


def _row_checks() -> list[_Check]:
    """Rules about single values."""
    stderr = pl.col("stderr")
    checks = [
        _Check(
            ("score",),
            pl.col("score").is_infinite(),
            "row(s) have an infinite score",
            "store the finite value, or NaN when the evaluation produced no number",
        ),
        _Check(
            ("stderr",),
            stderr.is_infinite() | (stderr < 0),
            "row(s) have an infinite or negative stderr",
            "store a finite stderr >= 0, or leave it empty when unknown",
        ),
        _Check(
            ("category",),
            ~pl.col("category").is_in(CATEGORIES),
            f"row(s) have a category outside {', '.join(CATEGORIES)}",
            "use one of the categories (upper case)",
            text="category",
        ),
        _Check(
            ("formulation",),
            ~pl.col("formulation").is_in(FORMULATIONS),
            f"row(s) have a formulation outside {', '.join(FORMULATIONS)}",
            "use one of the formulations (upper case)",
            text="formulation",
        ),
        _Check(
            ("random_baseline",),
            ~pl.col("random_baseline").is_finite(),
            "row(s) have a random_baseline that is not finite",
            f"store the expected score of random guessing (a finite number); {NO_BASELINE_NOTE}",
        ),
    ]
    checks += [
        _Check((c,), pl.col(c) < 0, f"row(s) have a negative {c}", f"'{c}' counts from 0")
        for c in ("step", "fewshot", "tokens")
    ]
    checks += [
        _Check(
            (c,),
            pl.col(c).is_finite() & (pl.col(c).abs() > MAX_MAGNITUDE),  # infinities have their own rule
            f"row(s) have an absurd {c} (|{c}| > {MAX_MAGNITUDE:g}: statistics over it would overflow)",
            f"store '{c}' in the metric's own unit (a scaling or unit error upstream?)",
        )
        for c in ("score", "stderr", "random_baseline")
    ]
    return checks


def _run_checks(frame: pl.DataFrame, source: str, checks: Sequence[_Check], values: Mapping[str, pl.Series]) -> None:
    """Count every rule's rows in one pass; report every failing rule with examples. A rule about one text column
    is first tried on that column's distinct `values` (a few, not a partition's 250,000 rows) and skipped when
    none fails."""
    checks = [c for c in checks if c.text is None or values[c.text].to_frame().select(c.mask.any()).item()]
    counts = frame.select(*(c.mask.sum().alias(str(i)) for i, c in enumerate(checks))).row(0)
    problems = [
        _problem(check.columns, count, check.what, _render_rows(frame.filter(check.mask), check.columns), check.fix)
        for check, count in zip(checks, counts, strict=True)
        if count
    ]
    if problems:
        _raise(source, problems)


@dataclass(frozen=True)
class _GroupRule:
    """Columns that must take one value within each group of `by`."""

    by: tuple[str, ...]
    values: tuple[str, ...]
    what: str
    fix: str
    carry: tuple[str, ...] = ()  # columns whose (first) value per group the summary keeps for later checks


_GROUP_RULES: tuple[_GroupRule, ...] = (
    _GroupRule(
        ("run", "seed", "step"),
        ("tokens",),
        "(run, seed, step) checkpoint(s) have more than one token count",
        "one checkpoint of one seed saw one number of tokens: correct the tokens of the rows shown (seeds of a run "
        "may differ at the same step; one seed's checkpoint may not)",
        carry=("tokens",),
    ),
    _GroupRule(
        ("task",),
        ("benchmark", "language", "category", "formulation"),
        "task(s) have more than one benchmark, language, category or formulation",
        "give each task one value of each (or rename one of the tasks)",
    ),
    _GroupRule(
        ("task", "fewshot", "metric"),
        ("random_baseline",),
        "(task, fewshot, metric) group(s) have more than one random_baseline",
        "give each (task, fewshot, metric) one random_baseline",
    ),
)


def _summaries(coded: pl.DataFrame, values: Mapping[str, pl.Series]) -> list[pl.DataFrame]:
    """Per rule, one row per group with whether its values differ; computed together.

    `coded` holds run, task and metric as codes (`_coded_key`), so the group-bys hash integers; rows that repeat
    the previous row in a rule's columns are skipped first (a task's rows sit together), which changes no
    group's values nor its first token count. The groups come back with their names. Eager: on a partition of a
    streamed table, planning lazy queries cost more than running them.
    """

    def summary(rule: _GroupRule) -> pl.DataFrame:
        columns = list(dict.fromkeys((*rule.by, *rule.values, *rule.carry)))
        differs = pl.any_horizontal(*(pl.col(c).min() != pl.col(c).max() for c in rule.values))
        carried = (pl.col(c).drop_nulls().first() for c in rule.carry)
        rows = coded.select(columns).filter(pl.any_horizontal(starts_run(c) for c in columns))
        groups = rows.group_by(rule.by).agg(differs.fill_null(False).alias("differs"), *carried)
        return groups.with_columns(values[c].gather(groups.get_column(c)).alias(c) for c in rule.by if c in _TEXT_KEY)

    return [summary(rule) for rule in _GROUP_RULES]


def _describe_conflicts(frame: pl.DataFrame, rule: _GroupRule, groups: pl.DataFrame) -> list[str]:
    """Up to five conflicting groups, each with the values that conflict."""
    groups = groups.select(rule.by).sort(rule.by).head(_MAX_EXAMPLES)
    rows = frame.join(groups, on=rule.by, how="semi", nulls_equal=True)
    seen = rows.group_by(rule.by).agg(pl.col(c).drop_nulls().unique().sort() for c in rule.values)
    return [
        " ".join(f"{c}={_fmt(row[c])}" for c in rule.by)
        + " has "
        + ", ".join(f"{c} {row[c]}" for c in rule.values if len(row[c]) > 1)
        for row in seen.sort(rule.by).rows(named=True)
    ]


def _check_groups(frame: pl.DataFrame, source: str, summaries: Sequence[pl.DataFrame]) -> None:
    """One token count per checkpoint; task attributes per task and random_baseline constant."""
    problems = []
    for rule, summary in zip(_GROUP_RULES, summaries, strict=True):
        groups = summary.filter("differs")
        if groups.height:
            examples = _describe_conflicts(frame, rule, groups)
            problems.append(_problem((*rule.by, *rule.values), groups.height, rule.what, examples, rule.fix))
    if problems:
        _raise(source, problems)


def _check_token_order(source: str, checkpoints: pl.DataFrame) -> None:
    """Tokens seen never fall as the step rises within one seed of a run: training only adds tokens.

    Runs on the small (run, seed, step) summary, whose one token count per checkpoint `finish_report` guaranteed.
    Seeds are compared with themselves only: unpacked batches make seeds see different counts at one step.
    """
    order = (
        checkpoints.lazy()
        .filter(pl.col("tokens").is_not_null())
        .sort("run", "seed", "step", nulls_last=False)
        .with_columns(
            pl.col("step").shift(1).over("run", "seed").alias("previous_step"),
            pl.col("tokens").shift(1).over("run", "seed").alias("previous_tokens"),
        )
        .filter(pl.col("tokens") < pl.col("previous_tokens"))
        .collect()
    )
    if not order.height:
        return
    examples = [
        f"run={row['run']} seed={_fmt(row['seed'])}: step {row['previous_step']} has tokens "
        f"{row['previous_tokens']:,}, the later step {row['step']} only {row['tokens']:,}"
        for row in order.head(_MAX_EXAMPLES).rows(named=True)
    ]
    what = "checkpoint(s) have fewer tokens than the step before them in the same run and seed"
    fix = "tokens count the training tokens seen so far: correct the token counts (or the steps) of the rows shown"
    _raise(source, [_problem(("run", "seed", "step", "tokens"), order.height, what, examples, fix)])


def checkpoint_tokens() -> pl.Expr:
    """The one token count of a (run, step) checkpoint, as an aggregation over its seeds' rows: their mean, rounded.

    HF Trainer runs on unpacked data count the real tokens of each batch, so the seeds of one run see different
    counts at the same step (1-2% apart in practice). Checkpoints are aligned by step; wherever the analysis needs
    one count per (run, step) (the consistency window, figure axes, the gap to English) it uses this rule, which
    docs/statistics.md states. Aggregated over rows with one row per seed, so each seed weighs the same.
    """
    return pl.col("tokens").mean().round(0).cast(pl.Int64)


def _token_spread_note(checkpoints: pl.DataFrame) -> list[str]:
    """A load note when seeds of one (run, step) saw different token counts: how many, and the widest spread."""
    spread = (
        checkpoints.lazy()
        .filter(pl.col("tokens").is_not_null())
        .group_by("run", "step")
        .agg(pl.col("tokens").min().alias("low"), pl.col("tokens").max().alias("high"), checkpoint_tokens())
        .collect()
    )
    differ = spread.filter(pl.col("low") != pl.col("high"))
    if not differ.height:
        return []
    widest = (
        differ.with_columns(
            ((pl.col("high") - pl.col("low")) / pl.col("tokens").cast(pl.Float64).clip(lower_bound=1)).alias("relative")
        )
        .sort("relative", "run", "step", descending=[True, False, False])
        .row(0, named=True)
    )
    return [
        f"seeds saw different token counts at {differ.height:,} of {spread.height:,} (run, step) checkpoint(s) "
        f"(widest: run={widest['run']} step={widest['step']}, {widest['low']:,}..{widest['high']:,}, "
        f"{widest['relative']:.1%} of the mean); checkpoints are aligned by step, and one count per (run, step) "
        "is the seed mean (docs/statistics.md)"
    ]


_TEXT_KEY: tuple[str, ...] = ("run", "task", "metric")  # the string columns of KEY


def _coded_key(frame: pl.DataFrame, values: Mapping[str, pl.Series]) -> pl.DataFrame:
    """The frame with run, task and metric as UInt32 codes of their sorted distinct `values`
    (`analysis.base.ordinal.text_codes`): they order like the strings and group as fast as integers."""
    return frame.with_columns(text_codes(frame, c, values[c]) for c in _TEXT_KEY)


def _sort(
    frame: pl.DataFrame, coded: pl.DataFrame, values: Mapping[str, pl.Series]
) -> tuple[pl.DataFrame, pl.Series | None]:
    """Sort by KEY, nulls first (as `frame.sort(KEY)`), through one int64 key; return it sorted too.

    The strings of KEY travel as their codes (`coded`) and come back from `values` by code: compact strings
    (gathered string views would scatter in memory and slow every later group-by). None for the key when KEY has
    too many values for it.
    """
    sort_key = ordinal_key(coded, KEY, {c: values[c].len() for c in _TEXT_KEY})
    if sort_key is None:
        return frame.lazy().sort(KEY).collect(), None
    if sort_key.is_sorted():
        return frame, sort_key
    order = sort_key.arg_sort()
    ordered = coded[order]
    text = (values[c].gather(ordered.get_column(c)).alias(c) for c in _TEXT_KEY)
    return ordered.with_columns(text), sort_key.gather(order)


def _key_unique(coded: pl.DataFrame, values: Mapping[str, pl.Series]) -> bool:
    """Whether KEY is unique, in one hash pass over its int64 key (False when there is no such key)."""
    key = ordinal_key(coded, KEY, {c: values[c].len() for c in _TEXT_KEY})
    return key is not None and key.n_unique() == key.len()


def _check_duplicates(
    ordered: pl.DataFrame,
    sort_key: pl.Series | None,
    source: str,
    stripped: Sequence[str] = (),
    renamed: Sequence[str] = (),
) -> None:
    """KEY must be unique (a null seed counts as a value); once sorted, repeats are adjacent."""
    if sort_key is not None:
        repeat = pl.lit(sort_key.diff().fill_null(1) == 0)
    else:
        repeat = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in KEY)
    repeats = int(ordered.select(repeat.sum()).item())
    if not repeats:
        return
    groups = ordered.filter(repeat).group_by(KEY).len().sort(KEY).head(_MAX_EXAMPLES)
    examples = [
        " ".join(f"{c}={_fmt(row[c])}" for c in KEY) + f" ({row['len'] + 1} rows)" for row in groups.rows(named=True)
    ]
    what = "extra row(s) repeat the key (run, seed, step, task, fewshot, metric) of another row"
    fix = "deduplicate or give the replicas distinct seeds"
    stripped_key = [c for c in stripped if c in KEY]
    if stripped_key:
        what += f" (compared after stripping spaces from {', '.join(stripped_key)}: 'x ' and 'x' are one name)"
        fix = "keep one of the rows that differ only by spaces around the name, or " + fix
    renamed_key = [c for c in renamed if c in KEY]
    if renamed_key:
        what += (
            f" (compared in Unicode NFC, as {', '.join(renamed_key)} held names in two forms, composed and "
            "decomposed, that print alike and are one name)"
        )
        fix = "keep one of the rows whose names differ only in their Unicode form, or " + fix
    _raise(source, [_problem(KEY, repeats, what, examples, fix)])


def validate(frame: pl.DataFrame, *, source: str) -> tuple[pl.DataFrame, LoadReport]:
    """Check a score table against the contract; return it typed, sorted by KEY, in COLUMNS order.

    Args:
        frame: any producer's table with at least the schema columns (extra ones are dropped).
        source: what the frame came from (a path, a run name), used in every message.

    Returns:
        The table (NaN scores dropped, see `NAN_POLICY`) and a report of what loading changed.

    Raises:
        ScoreTableError: naming the source, column(s), up to five offending rows, the count and the fix.
    """
    frame, partial = validate_partition(frame, source=source)
    return frame, finish_report(partial)


_CHECKPOINT_SCHEMA = {"run": pl.String(), "seed": pl.Int64(), "step": pl.Int64(),
                      "tokens_low": pl.Int64(), "tokens_high": pl.Int64()}  # fmt: skip


@dataclass
class PartialReport:
    """What validating some whole tasks of a table found, summable over the partitions of a streamed table
    (`analysis.streaming`): `finish_report` renders the same LoadReport from the sum as `validate` from one frame.

    `checkpoints` holds one row per (run, seed, step) with the lowest and highest token count its rows give;
    the rules across tasks (one count per checkpoint, counts never fall, the seed-spread note) run on the sum.
    """

    source: str
    n_rows: int = 0
    dropped_nan: int = 0
    dropped_nan_examples: list[str] = field(default_factory=list)
    extra_columns: list[str] = field(default_factory=list)
    padded: dict[str, list[str]] = field(default_factory=dict)  # text column -> its distinct padded values
    nan_counts: dict[str, int] = field(default_factory=dict)  # stderr / random_baseline -> NaN values nulled
    chance_filled: dict[str, int] = field(default_factory=dict)  # metric -> rows given its chance level
    checkpoints: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_CHECKPOINT_SCHEMA))
    renamed: dict[str, list[str]] = field(default_factory=dict)  # text column -> its distinct values not in NFC
    names: dict[str, list[str]] = field(default_factory=dict)  # LOOKALIKE_COLUMNS -> distinct values (NFC)
    unscored_runs: list[str] = field(default_factory=list)  # runs whose every row here had a NaN score

    @staticmethod
    def combine(parts: Sequence[PartialReport], source: str) -> PartialReport:
        """The report of all the partitions' rows (disjoint sets of whole tasks of one table)."""
        padded = {c: sorted({v for part in parts for v in part.padded.get(c, [])}) for c in _TEXT_COLUMNS}
        checkpoints = (
            pl.concat([pl.DataFrame(schema=_CHECKPOINT_SCHEMA), *(part.checkpoints for part in parts)])
            .group_by("run", "seed", "step")
            .agg(pl.col("tokens_low").min(), pl.col("tokens_high").max())
        )
        return PartialReport(
            source,
            sum(part.n_rows for part in parts),
            sum(part.dropped_nan for part in parts),
            [example for part in parts for example in part.dropped_nan_examples][:_MAX_EXAMPLES],
            next((part.extra_columns for part in parts if part.extra_columns), []),
            {c: values for c, values in padded.items() if values},
            {c: sum(part.nan_counts.get(c, 0) for part in parts) for c in ("stderr", "random_baseline")},
            {
                m: sum(part.chance_filled.get(m, 0) for part in parts)
                for m in {m for p in parts for m in p.chance_filled}
            },
            checkpoints,
            {c: sorted({v for p in parts for v in p.renamed.get(c, [])}) for c in _TEXT_COLUMNS},
            {c: sorted({v for p in parts for v in p.names.get(c, [])}) for c in LOOKALIKE_COLUMNS},
            sorted({r for p in parts for r in p.unscored_runs} - {r for p in parts for r in p.names.get("run", [])}),
        )


def validate_partition(frame: pl.DataFrame, *, source: str, sort: bool = True) -> tuple[pl.DataFrame, PartialReport]:
    """`validate` of whole tasks of a table, without the rules across tasks that need every row
    (`finish_report` runs those on the summed PartialReport). Every rule inside a task is checked here:
    types, nulls, names, values, one task description, one baseline, unique keys, and one token count per
    checkpoint among these rows.

    `sort=False` leaves the rows in the input's order (the key's uniqueness is still checked): for a reader whose
    results do not depend on row order, such as the statistics of a streamed table.
    """
    frame, extra = _select_columns(frame, source)
    frame = _cast(frame, source)
    _check_nulls(frame, source)
    frame, padded, renamed, values = _strip_text(frame, source)
    frame, dropped, dropped_examples = _drop_nan_scores(frame)
    frame, nan_counts = _null_nan_stderr(frame)
    frame, chance_filled = _fill_chance_baselines(frame, values["metric"])
    partial = PartialReport(source, frame.height, dropped, dropped_examples, extra, padded, nan_counts, chance_filled)
    partial.renamed = renamed
    seen_runs = values["run"].to_list()
    if dropped and frame.height:  # names only in the dropped rows are no longer the table's
        values = _distinct_text(frame)
    partial.names = {c: values[c].to_list() if frame.height else [] for c in LOOKALIKE_COLUMNS}
    partial.unscored_runs = sorted(set(seen_runs) - set(partial.names["run"]))
    if not frame.height:
        return frame, partial
    coded = _coded_key(frame, values)
    summaries = _summaries(coded, values)
    _run_checks(
        frame, source, _metric_checks(values["metric"]) + _row_checks() + _optional_checks(frame.columns), values
    )
    _check_groups(frame, source, summaries)
    partial.checkpoints = (
        next(s for s in summaries if "tokens" in s.columns)
        .select("run", "seed", "step", pl.col("tokens").alias("tokens_low"), pl.col("tokens").alias("tokens_high"))
    )  # fmt: skip
    if sort or not _key_unique(coded, values):
        ordered, sort_key = _sort(frame, coded, values)
        _check_duplicates(ordered, sort_key, source, list(padded), list(renamed))
        frame = ordered if sort else frame
    return frame, partial


def finish_report(partial: PartialReport) -> LoadReport:
    """The rules across tasks on the summed checkpoints, then the LoadReport of the whole table.

    Raises ScoreTableError when a checkpoint has two token counts in rows of different tasks, or when counts
    fall as steps rise (a frame validated whole has the first rule checked by `validate_partition` already).
    """
    source, checkpoints = partial.source, partial.checkpoints
    conflicts = checkpoints.filter(pl.col("tokens_low") != pl.col("tokens_high")).sort("run", "seed", "step")
    if conflicts.height:
        rule = _GROUP_RULES[0]
        examples = [
            f"run={row['run']} seed={_fmt(row['seed'])} step={row['step']} has tokens "
            f"from {row['tokens_low']:,} to {row['tokens_high']:,}"
            for row in conflicts.head(_MAX_EXAMPLES).rows(named=True)
        ]
        _raise(source, [_problem((*rule.by, *rule.values), conflicts.height, rule.what, examples, rule.fix)])
    checkpoints = checkpoints.select("run", "seed", "step", pl.col("tokens_low").alias("tokens"))
    notes = [f"dropped extra columns not in the schema: {', '.join(partial.extra_columns)}"] * bool(
        partial.extra_columns
    )
    notes += [
        f"stripped leading/trailing spaces from {len(values):,} distinct '{c}' value(s), e.g. "
        + ", ".join(repr(v) for v in values[:3])
        for c, values in ((c, partial.padded[c]) for c in _TEXT_COLUMNS if c in partial.padded)
    ]
    notes += [
        f"read {len(values):,} distinct '{c}' value(s) in Unicode NFC, so that one name in two forms (composed and "
        f"decomposed, e.g. copied from macOS) is one name: " + ", ".join(ascii(v) for v in values[:3])
        for c, values in ((c, partial.renamed[c]) for c in _TEXT_COLUMNS if partial.renamed.get(c))
    ]
    notes += [note for c in LOOKALIKE_COLUMNS if (note := lookalike_note(c, partial.names.get(c, []))) is not None]
    if partial.unscored_runs:
        shown = ", ".join(repr(run) for run in partial.unscored_runs[:5])
        notes.append(
            f"{len(partial.unscored_runs)} run(s) have no score that is a number ({shown}: every one of their rows "
            "had a NaN score and was dropped), so they are in no statistic and no ranking; fix: re-evaluate them"
        )
    notes += [
        f"set {partial.nan_counts[column]:,} NaN {column} values to null ({meaning})"
        for column, meaning in (("stderr", "unknown"), ("random_baseline", "no random baseline"))
        if partial.nan_counts.get(column)
    ]
    notes += [
        f"gave {count:,} {metric} row(s) without a random baseline the uniform byte model's score, "
        f"{chance_levels([metric])[metric]:g} (docs/statistics.md)"
        for metric, count in sorted(partial.chance_filled.items())
    ]
    report = LoadReport(source, partial.n_rows, partial.dropped_nan, partial.dropped_nan_examples, notes)
    if partial.n_rows:
        _check_token_order(source, checkpoints)
        report.notes += _token_spread_note(checkpoints)
        report.notes += _partial_tokens_note(checkpoints)
    return report


def _partial_tokens_note(checkpoints: pl.DataFrame) -> list[str]:
    """A note naming the checkpoints without a token count beside others of their run and seed that have one (a
    checkpoint evaluated while its trainer was still writing it, a results file from elsewhere): they drop out of
    every token window (consistency) and token axis, which must not go unsaid."""
    seed = pl.col("seed").fill_null(-1)
    mixed = checkpoints.filter(
        pl.col("tokens").is_null() & pl.col("tokens").is_not_null().any().over("run", seed)
    ).sort("run", "seed", "step")
    if mixed.is_empty():
        return []
    shown = ", ".join(f"run={r['run']} seed={_fmt(r['seed'])} step={r['step']}" for r in mixed.head(3).rows(named=True))
    return [
        f"tokens: {mixed.height:,} checkpoint(s) have no token count while other checkpoints of their run and seed "
        f"have one ({shown}): they are left out of token windows (consistency) and token axes; fix: re-collect them "
        "once their trainer_state.json is written, or pass --tokens-per-step"
    ]


# --------------------------------------------------------------------------------------------------
# lm-evaluation-harness (v0) result files


@dataclass(frozen=True)
class TaskInfo:
    """What the result files do not say about a task: its family, language, category and chance score.

    The one task-metadata record of the project: the suite's `TASK_INFO` (finetasks_afr.benchmarks.common) fills
    the last three fields too (which prompt words, which dataset and config the task reads); the score table
    needs only the first five.
    """

    benchmark: str
    language: str
    category: str
    formulation: str
    random_baseline: float
    prompt: str = "native"  # "native" (in-language prompt words) or "en" (English words)
    dataset: str = ""  # key of finetasks_afr.data.sources.SOURCES ("" for tasks outside the suite)
    subset: str = ""  # the dataset config the task reads


MMLU_SUBJECTS: tuple[str, ...] = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics", "econometrics",
    "electrical_engineering", "elementary_mathematics", "formal_logic", "global_facts",
    "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics",
    "high_school_physics", "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law", "jurisprudence",
    "logical_fallacies", "machine_learning", "management", "marketing", "medical_genetics",
    "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition", "philosophy", "prehistory",
    "professional_accounting", "professional_law", "professional_medicine", "professional_psychology",
    "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology",
    "world_religions",
)  # fmt: skip

LM_EVAL_TASK_INFO: dict[str, TaskInfo] = {
    **{f"hendrycksTest-{s}": TaskInfo("mmlu", "eng", "GK", "CF", 0.25) for s in MMLU_SUBJECTS},
    "arc_easy": TaskInfo("arc", "eng", "GK", "CF", 0.25),
    "arc_challenge": TaskInfo("arc", "eng", "GK", "CF", 0.25),
    "sciq": TaskInfo("sciq", "eng", "GK", "CF", 0.25),
    "logiqa": TaskInfo("logiqa", "eng", "RES", "CF", 0.25),
    "piqa": TaskInfo("piqa", "eng", "RES", "CF", 0.5),
    "winogrande": TaskInfo("winogrande", "eng", "RES", "CF", 0.5),
    "wsc": TaskInfo("wsc", "eng", "RES", "CF", 0.5),
    # acc is greedy last-word match; ppl (lower is better) gets the same, meaningless, 0.0 baseline.
    "lambada_openai": TaskInfo("lambada", "eng", "RC", "GEN", 0.0),
}
"""Task info for the lm-evaluation-harness tasks of the Pythia evaluations (English, v0 names)."""

BIAS_PROBE_PREFIXES: tuple[str, ...] = ("crows_pairs",)
"""Tasks measuring bias, not skill: skipped with a note unless the caller's task_info names them."""

_SHOT_DIR = re.compile(r"(zero|one|two|three|four|five|six|seven|eight|nine|ten|few)-shot|\d+-?shot", re.I)
_STEP = re.compile(r"_step(\d+)")
_TASK_INFO_COLUMNS = ("task", "benchmark", "language", "category", "formulation", "random_baseline")


def read_task_info(path: Path) -> dict[str, TaskInfo]:
    """Task info from a CSV with columns task,benchmark,language,category,formulation,random_baseline."""
    try:
        check_user_text_file(path)
        frame = pl.read_csv(path, infer_schema=False)
    except TextEncodingError as error:
        raise ScoreTableError(str(error)) from None
    except (OSError, pl.exceptions.PolarsError) as error:
        raise ScoreTableError(f"{path}: cannot read the task-info CSV ({error})") from error
    missing = [c for c in _TASK_INFO_COLUMNS if c not in frame.columns]
    if missing:
        raise ScoreTableError(
            f"{path}: task-info CSV lacks column(s) {', '.join(missing)}; "
            f"fix: give it the header {','.join(_TASK_INFO_COLUMNS)}"
        )
    frame = frame.with_columns(pl.col(*_TASK_INFO_COLUMNS[:5]).str.normalize("NFC"))  # as the table's names
    # An empty random_baseline (or NaN) is "no baseline" (NaN here, null in the table), which validation
    # accepts for lower-is-better metrics only.
    text = pl.col("random_baseline").str.strip_chars()
    empty = text.is_null() | (text == "")
    baseline = pl.when(empty).then(float("nan")).otherwise(text.cast(pl.Float64, strict=False))
    other = pl.any_horizontal(pl.all().exclude("random_baseline").is_null())
    bad = frame.filter(baseline.is_null() | baseline.is_infinite() | other)
    if bad.height:
        raise ScoreTableError(
            f"{path}: {bad.height} task-info row(s) have an empty cell or a random_baseline that is not "
            f"a finite number, e.g. tasks {', '.join(map(_fmt, bad['task'].head(5)))}; fix: fill every cell "
            f"({NO_BASELINE_NOTE}: leave it empty for them)"
        )
    dupes = frame.filter(pl.col("task").is_duplicated())["task"].unique().sort()
    if dupes.len():
        raise ScoreTableError(f"{path}: task(s) listed twice: {', '.join(dupes.head(5))}; fix: one row per task")
    rows = frame.with_columns(baseline.alias("random_baseline")).rows(named=True)
    for row in rows:
        for column in _TASK_INFO_COLUMNS[:5]:
            problem = control_character_problem(row[column], column, f"{path} (task {row['task']!r})")
            if problem:
                raise ScoreTableError(problem)
    return {r["task"]: TaskInfo(*(r[c] for c in _TASK_INFO_COLUMNS[1:])) for r in rows}


def _merged_task_info(task_info: Mapping[str, TaskInfo] | Path | None) -> dict[str, TaskInfo]:
    """The builtin Pythia task info, overridden and extended by the caller's."""
    if task_info is None:
        return dict(LM_EVAL_TASK_INFO)
    extra = read_task_info(Path(task_info)) if isinstance(task_info, str | Path) else task_info
    return {**LM_EVAL_TASK_INFO, **extra}


def _json_files(paths: Path | Sequence[Path]) -> list[Path]:
    """Every result file named or found (recursively) under a named directory, in a stable order."""
    roots = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    files: list[Path] = []
    for root in roots:
        if root.is_dir():
            files += sorted(root.rglob("*.json"))
        elif root.is_file():
            files.append(root)
        else:
            raise ScoreTableError(f"{root}: no such file or directory; expected {ACCEPTED_FORMATS}")
    if not files:
        raise ScoreTableError(
            f"{', '.join(map(str, roots))}: no lm-evaluation-harness *.json result files found; "
            f"expected {ACCEPTED_FORMATS}"
        )
    return files


def run_name(path: Path) -> str:
    """The run a result file belongs to: the nearest ancestor folder that is not a shot folder."""
    for parent in path.resolve().parents:
        if parent.name and not _SHOT_DIR.fullmatch(parent.name):
            return parent.name
    raise ScoreTableError(f"{path}: cannot name its run from its folders; fix: pass run=")


def _load_result_file(path: Path) -> tuple[int, int, dict[str, dict[str, Any]]]:
    """(step, fewshot, results) of one harness file; anything unreadable names the file."""
    steps = _STEP.findall(path.name)
    if not steps:
        raise ScoreTableError(
            f"{path}: no `_step<N>` in the file name, so the checkpoint is unknown; "
            "fix: name result files like <model>_step<N>.json"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ScoreTableError(f"{path}: not a readable JSON file ({error}); fix: re-run or delete it") from error
    results = data.get("results") if isinstance(data, dict) else None
    config = data.get("config") if isinstance(data, dict) else None
    fewshot = config.get("num_fewshot") if isinstance(config, dict) else None
    if not isinstance(results, dict) or not isinstance(fewshot, int):
        raise ScoreTableError(
            f"{path}: not an lm-evaluation-harness result file (needs `results` and `config.num_fewshot`); "
            "fix: remove it from the input or re-run the evaluation"
        )
    return int(steps[-1]), fewshot, results


def _number(value: object, *, what: str, path: Path) -> float | None:
    """A JSON metric value as float; null means no number (NaN for a score, null for a stderr)."""
    if value is None or (isinstance(value, str) and value.strip().upper() in {"N/A", "NAN", ""}):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoreTableError(f"{path}: {what} is {value!r}, not a number; fix: re-run the evaluation")
    return float(value)


@dataclass
class _HarnessRows:
    """Rows gathered column-wise from the result files, with what was skipped and why."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in COLUMNS})
    unknown_tasks: set[str] = field(default_factory=set)
    bias_probes: set[str] = field(default_factory=set)
    unknown_metrics: set[str] = field(default_factory=set)

    def add(self, **values: Any) -> None:
        """Append one row."""
        for column, cells in self.columns.items():
            cells.append(values[column])


def _add_file(rows: _HarnessRows, path: Path, info: Mapping[str, TaskInfo], run: str, tokens: int | None) -> None:
    """Append the rows of one result file; remember tasks and metrics that are skipped."""
    step, fewshot, results = _load_result_file(path)
    for task, metrics in results.items():
        if task not in info:
            is_probe = task.startswith(BIAS_PROBE_PREFIXES)
            (rows.bias_probes if is_probe else rows.unknown_tasks).add(task)
            continue
        ti = info[task]
        for metric, value in metrics.items():
            if metric.endswith("_stderr"):
                continue
            if metric_info(metric) is None:
                rows.unknown_metrics.add(metric)
                continue
            score = _number(value, what=f"{task} {metric}", path=path)
            stderr = _number(metrics.get(f"{metric}_stderr"), what=f"{task} {metric}_stderr", path=path)
            rows.add(
                run=run, seed=None, step=step, tokens=None if tokens is None else step * tokens,
                task=task, benchmark=ti.benchmark, language=ti.language, category=ti.category,
                formulation=ti.formulation, fewshot=fewshot, metric=metric,
                score=float("nan") if score is None else score, stderr=stderr,
                random_baseline=ti.random_baseline,
            )  # fmt: skip


def _listing(names: Iterable[str], limit: int = 10) -> str:
    """Sorted names, the first `limit` spelled out."""
    ordered = sorted(names)
    more = f" (+{len(ordered) - limit} more)" if len(ordered) > limit else ""
    return ", ".join(ordered[:limit]) + more


def _harness_notes(rows: _HarnessRows, source: str, skip_unknown: bool) -> list[str]:
    """Notes on what was skipped; an unknown task is an error unless skip_unknown."""
    if rows.unknown_tasks and not skip_unknown:
        raise ScoreTableError(
            f"{source}: {len(rows.unknown_tasks)} task(s) without task info (benchmark, language, "
            f"category, formulation, random_baseline): {_listing(rows.unknown_tasks)}; fix: pass "
            "--task-info CSV (columns task,benchmark,language,category,formulation,random_baseline) or "
            "--skip-unknown to skip them (Python API: task_info=, skip_unknown=True)"
        )
    notes = []
    if rows.unknown_tasks:
        notes.append(f"skipped {len(rows.unknown_tasks)} tasks without task info: {_listing(rows.unknown_tasks)}")
    if rows.bias_probes:
        notes.append(f"skipped {len(rows.bias_probes)} bias-probe tasks (not skill measures): "
                     f"{_listing(rows.bias_probes, 3)}")  # fmt: skip
    if rows.unknown_metrics:
        notes.append(f"skipped metrics unknown to the analysis: {_listing(rows.unknown_metrics)}")
    return notes


def read_lm_eval_harness(
    paths: Path | Sequence[Path],
    *,
    task_info: Mapping[str, TaskInfo] | Path | None = None,
    tokens_per_step: int | None = None,
    run: str | None = None,
    skip_unknown: bool = False,
) -> tuple[pl.DataFrame, LoadReport]:
    """Read lm-evaluation-harness (v0) result JSON files into a validated score table.

    Args:
        paths: result files, or directories searched recursively for `*.json`.
        task_info: per-task attributes the files lack; a mapping or a CSV path, overriding and
            extending `LM_EVAL_TASK_INFO`.
        tokens_per_step: tokens = step * tokens_per_step; tokens stay null without it.
        run: the run name for every file; default: each file's nearest non-shot ancestor folder.
        skip_unknown: skip tasks without task info (with a note) instead of raising.

    The step comes from `_step<N>` in the file name, fewshot from `config.num_fewshot`, seed is null.
    Metrics unknown to `analysis.scores.metrics` and bias probes (crows_pairs_*) are skipped with a note.
    """
    files = _json_files(paths)
    roots = [paths] if isinstance(paths, str | Path) else list(paths)
    source = ", ".join(map(str, roots[:3])) + (f" (+{len(roots) - 3} more)" if len(roots) > 3 else "")
    info = _merged_task_info(task_info)
    rows = _HarnessRows()
    for path in files:
        _add_file(rows, path, info, run or run_name(path), tokens_per_step)
    notes = [f"read {len(files)} lm-evaluation-harness result files"]
    notes += _harness_notes(rows, source, skip_unknown)
    raw = pl.DataFrame(rows.columns, schema=SCHEMA)
    frame, report = validate(raw, source=source)
    report.notes = notes + report.notes
    require_rows(frame.height, report, raw.height, notes[1:])
    return frame, report


# --------------------------------------------------------------------------------------------------
# Reading and writing score tables


def _csv_field_counts(path: Path) -> pl.DataFrame:
    """(line number, fields) of every non-empty record, by Python's csv module (quotes may hide commas)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle)
        counted = [(reader.line_num, len(row)) for row in reader if row]
    return pl.DataFrame(counted, schema={"number": pl.Int64, "fields": pl.Int64}, orient="row")


def _comma_field_counts(data: bytes) -> pl.DataFrame:
    """(line number, fields) of every non-empty line of a file without quotes: its commas + 1, in polars."""
    lines = pl.Series("line", [data]).cast(pl.String, strict=False).str.split("\n").explode()
    return (
        lines.to_frame()
        .with_row_index("number", offset=1)
        .filter(pl.col("line").str.strip_suffix("\r") != "")
        .select(
            pl.col("number").cast(pl.Int64), (pl.col("line").str.count_matches(",", literal=True) + 1).alias("fields")
        )
    )


def _ragged_lines(path: Path) -> tuple[int, list[tuple[int, int]]]:
    """(fields of the header, [(line number, fields)] of the data lines that have another number of fields).

    polars pads a short line with nulls (a missing stderr or random_baseline would pass as "unknown") and
    rejects a long one without saying where, so the field count of every line is checked first: in polars when
    the file has no quote character (0.3 s per million lines), else with the csv module (a quoted field may
    hold a comma or a line break).
    """
    data = path.read_bytes()
    counted = _csv_field_counts(path) if b'"' in data else _comma_field_counts(data)
    if not counted.height:
        return 0, []
    header = int(counted.item(0, "fields"))
    ragged = counted.slice(1).filter(pl.col("fields") != header)
    return header, [(int(line), int(n)) for line, n in ragged.iter_rows()]


def _check_csv_shape(path: Path) -> None:
    """Every data line has the header's number of fields; else the error names the file and the lines."""
    try:
        header, ragged = _ragged_lines(path)
    except OSError as error:
        raise ScoreTableError(f"{path}: cannot read it ({error})") from error
    if not ragged:
        return
    shown = "; ".join(f"line {line} has {n}" for line, n in ragged[:_MAX_EXAMPLES])
    more = f" (+{len(ragged) - _MAX_EXAMPLES} more lines)" if len(ragged) > _MAX_EXAMPLES else ""
    raise ScoreTableError(
        f"{path}: {len(ragged):,} line(s) do not have the header's {header} comma-separated fields: {shown}{more}; "
        f"fix: give every line exactly {header} fields (an empty cell is an empty field between two commas; "
        "quote a value that contains a comma)"
    )


def _read_csv(path: Path) -> pl.DataFrame:
    """A CSV as text, with the field count of its lines checked where polars may have hidden a ragged line.

    polars rejects a line with too many fields without naming it, and pads one with too few with nulls, which
    always land in the last column. So the lines are counted (`_check_csv_shape`) only when the read failed or
    the last column holds a null: a well-formed table pays nothing.
    """
    try:
        frame = pl.read_csv(path, infer_schema=False)
    except pl.exceptions.ComputeError:
        _check_csv_shape(path)
        raise
    if frame.width and frame.get_column(frame.columns[-1]).null_count():
        _check_csv_shape(path)
    return frame


def _read_table(path: Path) -> pl.DataFrame:
    """A parquet or CSV file as a frame; CSV as text so that validate's messages explain bad cells."""
    try:
        if path.suffix.lower() == ".parquet":
            return pl.read_parquet(path)
        check_user_text_file(path)
        return _read_csv(path)
    except TextEncodingError as error:
        raise ScoreTableError(str(error)) from None
    except (OSError, pl.exceptions.PolarsError) as error:
        raise ScoreTableError(f"{path}: cannot read it as {path.suffix[1:]} ({error})") from error


def require_rows(rows: int, report: LoadReport, read: int, skipped: Sequence[str] = ()) -> None:
    """A table left with no row to analyse is an error at load time, saying which step removed the rows.

    Without this an empty table travelled on into the statistics and crashed there (an all-null column has no
    type the arithmetic accepts). `read` is the number of rows before the NaN policy; `skipped` says what the
    reader left out before (lm-evaluation-harness tasks without task info, unknown metrics). `rows`: the rows
    left after loading.
    """
    if rows:
        return
    if report.dropped_nan:
        why = (
            f"all {report.dropped_nan:,} row(s) have a NaN score (the evaluation produced no number) and were "
            f"dropped by the NaN policy, e.g. {report.dropped_nan_examples[0]}"
        )
        fix = "re-run the evaluations that produced no number (see their logs), or point at a table with scores"
    elif skipped:
        why = f"the reader skipped everything it found ({'; '.join(skipped)})"
        fix = "pass --task-info CSV for the skipped tasks, or point at results of tasks the analysis knows"
    elif read == 0:
        why = "the table has no data rows (only a header, or an empty file)"
        fix = (
            "point at a score table with at least one scored row; `finetasks-afr collect` writes such an empty "
            'table from lighteval results files that hold only the "all" entry (no task was evaluated): '
            "evaluate the tasks, then collect again"
        )
    else:
        why = f"none of its {read:,} rows is left"
        fix = "point at a table with scores"
    raise ScoreTableError(f"{report.source}: no usable score rows: {why}; fix: {fix}")


def read_table_file(path: Path) -> tuple[pl.DataFrame, LoadReport]:
    """Read a .parquet or .csv score table and validate it (`analysis.scores.read.read_scores` reads every
    supported source, lm-evaluation-harness output included)."""
    if path.suffix.lower() not in {".parquet", ".csv"}:
        raise ScoreTableError(f"{path}: unknown format '{path.suffix}'; expected {ACCEPTED_FORMATS}")
    raw = _read_table(path)
    frame, report = validate(raw, source=str(path))
    require_rows(frame.height, report, raw.height)
    return frame, report


def write_scores(frame: pl.DataFrame, path: str | Path) -> LoadReport:
    """Validate and write a score table through the project's one atomic writer (`analysis.base.io.atomic_write`).

    The suffix picks the format (.parquet or .csv); parent folders are created. A failed write leaves any previous
    file untouched and no temporary file behind, and the file gets the permissions of a plain `open()`: all of that
    is `atomic_write`'s job, so this function only validates and chooses the format. A write the system refuses
    (full disk, file-size limit, ...) is raised as an OSError naming `path`, not as the ComputeError polars wraps
    it in, so that callers name it (`analysis.base.write_errors`). Returns validate's report.
    """
    path = Path(path)
    writers: dict[str, Callable[[pl.DataFrame, Path], None]] = {
        ".parquet": lambda f, p: f.write_parquet(p),
        ".csv": lambda f, p: f.write_csv(p),
    }
    suffix = path.suffix.lower()
    if suffix not in writers:
        raise ScoreTableError(f"{path}: cannot write '{path.suffix}'; fix: use a .parquet or .csv path")
    frame, report = validate(frame, source=f"{path} (writing)")
    with writing(path):  # polars' ComputeError on a full disk becomes the OSError it wraps, naming `path`
        atomic_write(path, lambda tmp: writers[suffix](frame, tmp))
    return report
