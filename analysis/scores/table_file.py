"""A score table stored as a file: .parquet, or .csv read as text so that validation's messages explain bad cells.

A CSV's lines are counted only where polars may have hidden a ragged one (it pads a short line with nulls, so a
missing stderr or random_baseline would pass as "unknown"), and the error names the lines: a well-formed table pays
nothing.

A module of its own because reading a file is one door among several: `analysis.scores.read` picks it for any path
that is not lm-evaluation-harness output, and it shares with the other readers only the schema and the validation
below them; the writer of the same formats is `analysis.scores.write`.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from analysis.base.encoding import TextEncodingError, check_user_text_file
from analysis.base.input_file import input_problem
from analysis.scores.schema import ACCEPTED_FORMATS, MAX_EXAMPLES, ScoreTableError
from analysis.scores.validate import LoadReport, require_rows, validate


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
    shown = "; ".join(f"line {line} has {n}" for line, n in ragged[:MAX_EXAMPLES])
    more = f" (+{len(ragged) - MAX_EXAMPLES} more lines)" if len(ragged) > MAX_EXAMPLES else ""
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


def read_table_file(path: Path) -> tuple[pl.DataFrame, LoadReport]:
    """Read a .parquet or .csv score table and validate it (`analysis.scores.read.read_scores` reads every
    supported source, lm-evaluation-harness output included)."""
    if path.suffix.lower() not in {".parquet", ".csv"}:
        raise ScoreTableError(f"{path}: unknown format '{path.suffix}'; expected {ACCEPTED_FORMATS}")
    problem = input_problem(path, what="score table")  # a FIFO blocks in open(), a CSV one is drained by the first
    if problem is not None:
        raise ScoreTableError(problem)
    raw = _read_table(path)
    frame, report = validate(raw, source=str(path))
    require_rows(frame.height, report, raw.height)
    return frame, report
