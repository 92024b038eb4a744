"""Integer codes against polars' own sort and rank of the columns they stand for, on any row order."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.base import ordinal
from analysis.base.ordinal import dense_ids, distinct, ordinal_key, sorted_distinct, text_codes

NAMES = st.sampled_from(["a", "b", "b ", "mix-é", "mix-e\u0301", "Z", ""])
ROWS = st.lists(
    st.tuples(NAMES, st.one_of(st.none(), st.integers(-3, 3)), st.integers(0, 10**12), NAMES),
    min_size=0,
    max_size=60,
)


def frame_of(rows: list[tuple[str, int | None, int, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"run": pl.String, "seed": pl.Int64, "step": pl.Int64, "task": pl.String},
                        orient="row")  # fmt: skip


def coded(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    text = sorted_distinct(frame, ["run", "task"])
    return frame.with_columns(text_codes(frame, c, v) for c, v in text.items()), {c: v.len() for c, v in text.items()}


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_the_key_orders_and_equals_like_the_columns(rows: list[tuple[str, int | None, int, str]]) -> None:
    frame = frame_of(rows)
    codes, sizes = coded(frame)
    key = ordinal_key(codes, frame.columns, sizes)
    assert key is not None
    columns = frame.columns
    expected = frame.with_row_index("i").sort([*columns, "i"], nulls_last=False).get_column("i")
    assert frame.with_row_index("i").with_columns(key).sort("key", "i").get_column("i").equals(expected)
    # equal keys exactly where the rows are equal
    assert key.n_unique() == frame.unique().height
    assert dense_ids(frame, columns).equals(
        (frame.select(pl.struct(columns).rank("dense")).to_series() - 1).cast(pl.UInt32), check_names=False
    )


def test_text_codes_are_positions_among_the_sorted_values() -> None:
    frame = pl.DataFrame({"task": ["b", "b", "a", "c", "c", "a", "b"]})
    values = pl.Series(["a", "b", "c"])
    assert text_codes(frame, "task", values).to_list() == [1, 1, 0, 2, 2, 0, 1]
    assert sorted(frame.select(distinct("task")).to_series().to_list()) == ["a", "b", "c"]


def test_a_key_past_the_int64_range_is_refused_and_dense_ids_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = frame_of([("b", 1, 5, "x"), ("a", None, 5, "x"), ("b", 1, 5, "x")])
    monkeypatch.setattr(ordinal, "MAX_KEY", 4)
    codes, sizes = coded(frame)
    assert ordinal_key(codes, frame.columns, sizes) is None
    assert dense_ids(frame, frame.columns).to_list() == [1, 0, 1]


def test_wide_integer_ranges_use_positions_among_their_values() -> None:
    frame = pl.DataFrame({"step": [10**15, None, 3, 10**15, -(10**15)]})
    key = ordinal_key(frame, ["step"], {})
    assert key is not None and key.to_list() == [3, 0, 2, 3, 1]


def test_empty_frames_have_empty_codes() -> None:
    frame = frame_of([])
    codes, sizes = coded(frame)
    key = ordinal_key(codes, frame.columns, sizes)
    assert key is not None and key.len() == 0
    assert dense_ids(frame, ["task"]).len() == 0
