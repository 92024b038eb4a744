"""The score table's schema: one row per measurement, the contract between evaluation and analysis.

Columns and types are those of DESIGN.md; the key (run, seed, step, task, fewshot, metric) is unique.

Every problem raises `ScoreTableError` naming the input, the column(s), a few offending rows, their
count and the fix. One documented exception: a NaN score means the evaluation produced no number (a
crashed task, an empty split); such rows are dropped, counted and shown in the `LoadReport`.

A module of its own because every producer (the sweeps, the demo, the study) and every reader names these
columns, and every stage words a problem alike (`problem`, `raise_problems`): they import the contract and how a
breach of it is reported without importing validation or a reader. It imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import polars as pl

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
MAX_EXAMPLES = 5


# --------------------------------------------------------------------------------------------------
# Error rendering


def fmt(value: object) -> str:
    """A cell as text; None as `null` so a null seed is visible."""
    return "null" if value is None else str(value)


def render_rows(frame: pl.DataFrame, columns: Sequence[str]) -> list[str]:
    """Up to five rows as `run=.. seed=.. ..` plus `columns`; only key columns that exist are shown."""
    shown = [c for c in KEY if c in frame.columns] + [c for c in columns if c not in KEY]
    rows = frame.head(MAX_EXAMPLES).select(shown).rows(named=True)
    return [" ".join(f"{c}={fmt(row[c])}" for c in shown) for row in rows]


def problem(columns: Sequence[str], count: int, what: str, examples: Sequence[str], fix: str) -> str:
    """One problem paragraph: column(s), count, what is wrong, examples, fix."""
    names = ", ".join(f"'{c}'" for c in columns)
    lines = [f"column {names}: {count:,} {what}, e.g."]
    lines += [f"    {e}" for e in examples[:MAX_EXAMPLES]]
    lines.append(f"  fix: {fix}")
    return "\n".join(lines)


def raise_problems(source: str, problems: Sequence[str]) -> NoReturn:
    """Raise one error carrying every problem found at the same stage."""
    if len(problems) == 1:
        raise ScoreTableError(f"{source}: {problems[0]}")
    body = "\n".join(f"- {p}" for p in problems)
    raise ScoreTableError(f"{source}: {len(problems)} problems in the score table:\n{body}")


def schema_help() -> str:
    """The expected schema, for messages about missing columns."""
    return ", ".join(f"{c} ({SCHEMA[c]}{', nullable' if c in NULLABLE else ''})" for c in COLUMNS)
