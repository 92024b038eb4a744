"""Polars aggregates as plain numbers, for the tests that compare them.

Polars types `Series.min()`, `.max()`, `.mean()`, `.std()` and `.item()` as any Python literal or None (the
column's dtype is not known statically), so `series.min() >= 3` does not type-check. `number()` states what the
test already assumes, that the value is a number, and fails naming the value when it is not (an empty or all-null
column gives None).
"""

from __future__ import annotations

from numbers import Real


def number(value: object) -> float:
    """`value` (a polars or numpy aggregate) as a float; fails, naming it, when it is None or not a number."""
    assert isinstance(value, Real), f"expected a number, got {value!r}"
    return float(value)
