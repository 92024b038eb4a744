"""Integer codes that order like a frame's columns: how the score table is sorted and grouped by its text.

Sorting or grouping a quarter of a million rows by string columns hashes or compares every string; the same rows
coded as integers that order like the strings sort and group several times faster, and a whole key
(run, seed, step, task, fewshot, metric) folds into one int64 whose order is the key's order. Consecutive rows of
a score table mostly repeat their text (a task's rows sit together; a checkpoint's rows sit together in KEY
order), so each text column is read once per run of equal values: its distinct values and its codes come from the
first row of each run, and the codes spread back to the rows by run. Any row order gives the same result; the
runs only make it cheaper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

MAX_KEY = 2**62
"""The largest number of distinct values one int64 key may span (beyond it, sort or rank the columns themselves)."""


def starts_run(column: str) -> pl.Expr:
    """True on the first row of each run of equal consecutive values of `column` (two nulls are equal)."""
    col = pl.col(column)
    return col.ne_missing(col.shift(1)) | (pl.int_range(pl.len()) == 0)


def distinct(column: str) -> pl.Expr:
    """The distinct values of `column`, nulls included, in no particular order; each run of equal consecutive
    values is hashed once."""
    return pl.col(column).filter(starts_run(column)).unique()


def text_codes(frame: pl.DataFrame, column: str, values: pl.Series) -> pl.Series:
    """Each row's position in `values`, the sorted distinct values of the non-null text `column` (all present).

    UInt32 codes that order like the strings: a stand-in for the column in sorts and group-bys.
    """
    runs = frame.get_column(column).rle_id()
    firsts = frame.select(pl.col(column).filter(starts_run(column))).to_series()
    return values.search_sorted(firsts).gather(runs).alias(column)


def int_codes(frame: pl.DataFrame, column: str) -> tuple[pl.Expr, int]:
    """An int64 expression ordering like integer `column`, nulls first (0), and how many values it can take.

    Offsets from the minimum when the range is small (cheap), else positions among the distinct values.
    """
    col = pl.col(column)
    low, high = frame.select(col.min().alias("low"), col.max().alias("high")).row(0)
    if low is None:
        return pl.lit(0, dtype=pl.Int64), 1
    if high - low < 2**16:
        index, size = col - low, high - low + 2
    else:
        values = frame.get_column(column).drop_nulls().unique().sort()
        index, size = pl.lit(values).search_sorted(col), values.len() + 1
    return pl.when(col.is_null()).then(0).otherwise(index.cast(pl.Int64) + 1), size


def ordinal_key(coded: pl.DataFrame, columns: Sequence[str], text_sizes: Mapping[str, int]) -> pl.Series | None:
    """One int64 per row whose order is the order of `columns` (nulls first), equal where the rows are equal.

    `coded` holds each text column named in `text_sizes` as its `text_codes` (the size: how many distinct values
    it has) and the integer columns as they are. None when the columns span `MAX_KEY` or more combinations.
    """
    key, total = pl.lit(0, dtype=pl.Int64), 1
    for name in columns:
        if name in text_sizes:
            rank, size = pl.col(name).cast(pl.Int64), text_sizes[name]
        else:
            rank, size = int_codes(coded, name)
        key, total = key * size + rank, total * size
        if total >= MAX_KEY:
            return None
    return coded.select(key.alias("key")).to_series()


def sorted_distinct(frame: pl.DataFrame, columns: Sequence[str]) -> dict[str, pl.Series]:
    """The sorted distinct values of each of `columns`, nulls included, from one eager select (on a partition of
    a streamed table, a lazy query per column cost more to plan than to run)."""
    found = frame.select(distinct(c).sort().implode() for c in columns)
    return {c: found.get_column(c).explode(empty_as_null=False) for c in columns}


def dense_ids(frame: pl.DataFrame, columns: Sequence[str]) -> pl.Series:
    """0, 1, 2, ... for the distinct rows of `columns` in their sorted order (nulls first), as UInt32: their dense
    rank, computed on one int64 key (text columns must not be null)."""
    text = sorted_distinct(frame, [c for c in columns if frame.schema[c] == pl.String()])
    coded = frame.select(columns).with_columns(text_codes(frame, c, values) for c, values in text.items())
    key = ordinal_key(coded, columns, {c: values.len() for c, values in text.items()})
    if key is None:
        return frame.select((pl.struct(columns).rank("dense") - 1).cast(pl.UInt32)).to_series()
    return key.unique().sort().search_sorted(key).cast(pl.UInt32)
