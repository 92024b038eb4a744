"""Validation of a score table: any producer's frame checked against the schema, returned typed and sorted by KEY,
with a `LoadReport` of what loading changed.

Usage::

    frame, report = read_scores("scores.parquet")          # analysis.scores.read: or .csv, or lm-eval JSON
    print(report.summary())
    frame, report = validate(my_frame, source="my sweep")  # any producer's frame

`random_baseline` may be empty (null; a NaN is stored as null) only for lower-is-better metrics: a word
perplexity has no chance level independent of the model's tokenizer and the text's words, and the non-randomness
criterion is then not applicable. A per-byte metric left empty gets its chance level, the uniform byte model's
8 bits per byte (`analysis.scores.metrics.chance_levels`), so every table records it, however it was made. Every
higher-is-better metric needs its chance score.

Nothing loops over rows or groups in Python: rules about single values are masks counted in one
pass, rules across rows are lazy group-bys collected together, and the sort goes through one int64
key. On a busy 2-core machine a million rows validate in about 0.3 s when already in KEY order
(a table `analysis.scores.write` wrote) and 0.6-0.7 s when shuffled.

A module of its own because every reader (the table file, both lm-evaluation-harness readers, the streamed scan)
and the writer validate through it, so one set of rules decides each row whichever door it came in by; whole tasks
are validated at a time (`validate_partition`), and the rules across tasks run once on the summed `PartialReport`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from analysis.base.names import CONTROL_PATTERN, describe_control_characters, lookalike_note, non_nfc
from analysis.base.ordinal import distinct, ordinal_key, starts_run, text_codes
from analysis.scores.metrics import chance_levels, known_metric_help, metric_info
from analysis.scores.schema import (
    CATEGORIES,
    COLUMNS,
    FORMULATIONS,
    KEY,
    MAX_EXAMPLES,
    NO_BASELINE_NOTE,
    NULLABLE,
    OPTIONAL_SCHEMA,
    SCHEMA,
    ScoreTableError,
    fmt,
    problem,
    raise_problems,
    render_rows,
    schema_help,
)

_TYPES: dict[str, pl.DataType] = {**SCHEMA, **OPTIONAL_SCHEMA}
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
# Validation stages


def _select_columns(frame: pl.DataFrame, source: str) -> tuple[pl.DataFrame, list[str]]:
    """Require every schema column; drop extras (producers often add their own), returning their names for the
    load report's note."""
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ScoreTableError(
            f"{source}: missing column(s) {', '.join(missing)}; the score table needs {schema_help()}. "
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
            problem(
                [c],
                lost[c],
                f"value(s) cannot be read as {_TYPES[c]} (bad values: {values})",
                render_rows(bad, [c]),
                f"write {'whole numbers' if _TYPES[c] == pl.Int64() else 'numbers'} in '{c}'"
                + (" or leave the cell empty" if c in NULLABLE else ""),
            )
        )
    if problems:
        raise_problems(source, problems)
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
        raise_problems(source, problems)


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
        problem(
            [c],
            counts[c],
            "row(s) are null (empty)",
            render_rows(frame.filter(pl.col(c).is_null()), [c]),
            f"fill '{c}'; only {', '.join(sorted(NULLABLE))} may be empty"
            + ("; a score the evaluation did not produce should be NaN" if c == "score" else ""),
        )
        for c in required
        if counts[c]
    ]
    if problems:
        raise_problems(source, problems)


def _check_seed_nulls(frame: pl.DataFrame, source: str) -> None:
    """Within one (run, task), either every row has a seed or none has.

    A null seed is one replica of its own (docs/statistics.md), so one row without its seed among seeded rows is
    not a gap but one more seed with one checkpoint: it changes the task's seed noise, hence its SNR and the metric
    chosen for it, without a sign (a merged table, a producer that lost one value). Which seed the row belongs to
    cannot be guessed, so it is an error naming the rows. A table whose run has no replicas has a null seed on
    every row, which passes; the check costs nothing unless the seed column holds both nulls and values.
    """
    nulls = frame.get_column("seed").null_count()
    if nulls in (0, frame.height):
        return
    mixed = (
        frame.group_by("run", "task")
        .agg(
            pl.col("seed").is_null().any().alias("has_null"),
            pl.col("seed").drop_nulls().unique().sort().alias("seeds"),
        )
        .filter(pl.col("has_null") & (pl.col("seeds").list.len() > 0))
        .sort("run", "task")
    )
    if not mixed.height:
        return
    rows = frame.join(mixed.select("run", "task"), on=["run", "task"], how="semi").filter(pl.col("seed").is_null())
    rows = rows.sort("run", "task", "step", "fewshot", "metric")
    seeds = {(r, t): ", ".join(map(str, s)) for r, t, s in mixed.select("run", "task", "seeds").iter_rows()}
    examples = [
        f"{line} (its run and task have seed(s) {seeds[(row['run'], row['task'])]})"
        for line, row in zip(render_rows(rows, ["step"]), rows.head(MAX_EXAMPLES).iter_rows(named=True), strict=True)
    ]
    what = (
        f"(run, task) pair(s) have row(s) with a null seed beside rows with a seed ({rows.height:,} such row(s)): a "
        "null seed is a replica of its own, so these rows would be one more seed and change the task's seed noise "
        "(SNR) and the metric chosen for it"
    )
    fix = (
        "give each of these rows the seed it was evaluated with, or remove it; a run without seed replicas has an "
        "empty seed on every row of a task"
    )
    raise_problems(source, [problem(("run", "task", "seed"), mixed.height, what, examples, fix)])


def _drop_nan_scores(frame: pl.DataFrame) -> tuple[pl.DataFrame, int, list[str]]:
    """Apply the NaN policy: drop rows whose score is NaN, returning how many and a few keys."""
    nan = pl.col("score").is_nan()
    count = int(frame.select(nan.sum()).item())
    if not count:
        return frame, 0, []
    return frame.filter(~nan), count, render_rows(frame.filter(nan), [])


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
        problem(check.columns, count, check.what, render_rows(frame.filter(check.mask), check.columns), check.fix)
        for check, count in zip(checks, counts, strict=True)
        if count
    ]
    if problems:
        raise_problems(source, problems)


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
    groups = groups.select(rule.by).sort(rule.by).head(MAX_EXAMPLES)
    rows = frame.join(groups, on=rule.by, how="semi", nulls_equal=True)
    seen = rows.group_by(rule.by).agg(pl.col(c).drop_nulls().unique().sort() for c in rule.values)
    return [
        " ".join(f"{c}={fmt(row[c])}" for c in rule.by)
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
            problems.append(problem((*rule.by, *rule.values), groups.height, rule.what, examples, rule.fix))
    if problems:
        raise_problems(source, problems)


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
        f"run={row['run']} seed={fmt(row['seed'])}: step {row['previous_step']} has tokens "
        f"{row['previous_tokens']:,}, the later step {row['step']} only {row['tokens']:,}"
        for row in order.head(MAX_EXAMPLES).rows(named=True)
    ]
    what = "checkpoint(s) have fewer tokens than the step before them in the same run and seed"
    fix = "tokens count the training tokens seen so far: correct the token counts (or the steps) of the rows shown"
    raise_problems(source, [problem(("run", "seed", "step", "tokens"), order.height, what, examples, fix)])


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
    groups = ordered.filter(repeat).group_by(KEY).len().sort(KEY).head(MAX_EXAMPLES)
    examples = [
        " ".join(f"{c}={fmt(row[c])}" for c in KEY) + f" ({row['len'] + 1} rows)" for row in groups.rows(named=True)
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
    raise_problems(source, [problem(KEY, repeats, what, examples, fix)])


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
            [example for part in parts for example in part.dropped_nan_examples][:MAX_EXAMPLES],
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
    _check_seed_nulls(frame, source)
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
            f"run={row['run']} seed={fmt(row['seed'])} step={row['step']} has tokens "
            f"from {row['tokens_low']:,} to {row['tokens_high']:,}"
            for row in conflicts.head(MAX_EXAMPLES).rows(named=True)
        ]
        raise_problems(source, [problem((*rule.by, *rule.values), conflicts.height, rule.what, examples, rule.fix)])
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
    shown = ", ".join(f"run={r['run']} seed={fmt(r['seed'])} step={r['step']}" for r in mixed.head(3).rows(named=True))
    return [
        f"tokens: {mixed.height:,} checkpoint(s) have no token count while other checkpoints of their run and seed "
        f"have one ({shown}): they are left out of token windows (consistency) and token axes; fix: re-collect them "
        "once their trainer_state.json is written, or pass --tokens-per-step"
    ]


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
