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


def _foreign(path: Path, encoding: str) -> TextEncodingError:
    return TextEncodingError(
        f"{path}: {encoding} text (it starts with the {encoding} byte order mark), not UTF-8; fix: save it as UTF-8, "
        f"e.g. `iconv -f {encoding} -t UTF-8 {path} > converted && mv converted {path}`"
    )


def decode_user_text(path: Path, data: bytes) -> str:
    """`data` (the content of `path`) as text: UTF-8 with its byte order mark removed; TextEncodingError else."""
    foreign = foreign_encoding(data[:4])
    if foreign is not None:
        raise _foreign(path, foreign)
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
    """TextEncodingError when a file handed to another reader (polars' CSV reader) is UTF-16 or UTF-32; that reader
    handles UTF-8 with or without its mark itself and names other bad bytes."""
    with Path(path).open("rb") as handle:
        foreign = foreign_encoding(handle.read(4))
    if foreign is not None:
        raise _foreign(path, foreign)
