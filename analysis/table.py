"""The score table: one row per measurement, the contract between evaluation and analysis.

Columns and types are those of DESIGN.md; the key (run, seed, step, task, fewshot, metric) is unique.
"""

from __future__ import annotations

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
NULLABLE: frozenset[str] = frozenset({"seed", "tokens", "stderr"})
KEY: tuple[str, ...] = ("run", "seed", "step", "task", "fewshot", "metric")
CATEGORIES: tuple[str, ...] = ("GK", "RC", "RES", "NLU", "GEN")
FORMULATIONS: tuple[str, ...] = ("CF", "MCF", "HYBRID", "GEN", "PPL")


class ScoreTableError(ValueError):
    """A score table that cannot be analysed; the message names the input at fault and the fix."""
