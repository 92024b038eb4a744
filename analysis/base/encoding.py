"""User text files (score tables, task-info CSVs, configs, task lists, raw releases): UTF-8, with or without a byte
order mark, and a named error for anything else, in one place.

Spreadsheet programs save "UTF-8" with a byte order mark and "Unicode text" as UTF-16; read as UTF-8, the first
gives a column name with an invisible prefix and the second "invalid utf8" or a header with one mangled column,
neither of which says what to do. Here a UTF-8 mark is dropped, a UTF-16 or UTF-32 mark is named with the
conversion that fixes it, and any other undecodable byte is named with its line and offset.
"""

from __future__ import annotations

import codecs
from pathlib import Path

# UTF-32 first: its little-endian mark begins with UTF-16's
_FOREIGN_MARKS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class TextEncodingError(ValueError):
    """A user text file that is not UTF-8; the message names the file, what it is and the command that fixes it."""


def foreign_encoding(head: bytes) -> str | None:
    """ "UTF-16" or "UTF-32" when `head` (a file's first bytes) starts with that encoding's byte order mark."""
    return next((name for mark, name in _FOREIGN_MARKS if head.startswith(mark)), None)


HEAD_BYTES = 4096  # what is read to tell a wide encoding without a mark


def unmarked_wide_encoding(head: bytes) -> str | None:
    """ "UTF-16LE", "UTF-16BE" or "UTF-32" for text saved without a byte order mark, told by its zero bytes: the
    high byte of every ASCII character (a CSV's digits, commas and names) is 0 in UTF-16, three of four in UTF-32.
    UTF-8 text holds no zero byte but a NUL character, which the name rules refuse by name."""
    if len(head) < 8:
        return None
    zeros = head.count(0) / len(head)
    if zeros >= 0.6:
        return "UTF-32"
    odd, even = head[1::2], head[0::2]
    if odd.count(0) >= 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
        return "UTF-16LE"
    if even.count(0) >= 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "UTF-16BE"
    return None


def _foreign(path: Path, encoding: str, marked: bool = True) -> TextEncodingError:
    how = f"it starts with the {encoding} byte order mark" if marked else "no byte order mark; its zero bytes say so"
    return TextEncodingError(
        f"{path}: {encoding} text ({how}), not UTF-8; fix: save it as UTF-8, "
        f"e.g. `iconv -f {encoding} -t UTF-8 {path} > converted && mv converted {path}`"
    )


def _check_head(path: Path, head: bytes) -> None:
    """TextEncodingError when `head` (the file's first bytes) is UTF-16 or UTF-32, with or without a mark."""
    foreign = foreign_encoding(head[:4])
    if foreign is not None:
        raise _foreign(path, foreign)
    unmarked = unmarked_wide_encoding(head[:HEAD_BYTES])
    if unmarked is not None:
        raise _foreign(path, unmarked, marked=False)


def decode_user_text(path: Path, data: bytes) -> str:
    """`data` (the content of `path`) as text: UTF-8 with its byte order mark removed; TextEncodingError else."""
    _check_head(path, data[:HEAD_BYTES])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise TextEncodingError(
            f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, byte offset {error.start}); "
            "fix: save it as UTF-8 (e.g. `iconv -f <its encoding> -t UTF-8`)"
        ) from None


def read_user_text(path: Path) -> str:
    """The whole of a user text file, decoded by `decode_user_text`."""
    return decode_user_text(path, Path(path).read_bytes())


def check_user_text_file(path: Path) -> None:
    """TextEncodingError when a file handed to another reader (polars' CSV reader) is UTF-16 or UTF-32 (with or
    without a byte order mark: polars reads UTF-16 without one as one field per line); that reader
    handles UTF-8 with or without its mark itself and names other bad bytes."""
    with Path(path).open("rb") as handle:
        _check_head(path, handle.read(HEAD_BYTES))
