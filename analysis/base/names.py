"""The rule for user-given names (runs, seeds, tasks, languages, benchmarks, metrics): printable text only.

Names travel into file names, suite files (one task per line), report rows, CSV cells and terminal output. A
newline in a task name splits its suite file line in two; one in a run name splits the report's ranking row; a NUL
ends the name early for C-based readers and gave a phantom run in ranking.csv; a tab or an escape sequence garbles
the TSV and the terminal. None of them is ever part of a name a person chose, so they are refused where a name
enters (score tables, task-info CSVs, task lists, run sources), with the character and the fix named, rather than
replaced: a silent replacement could merge two names. Letters of every script, spaces and joiners stay valid
(`mix-α`, `ìsọ̀rí`), and `analysis.base.io.safe_file_name` turns any valid name into a distinct path.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0 controls (NUL, tab, newline, carriage return, escape, ...), DEL and the C1 controls."""
CONTROL_PATTERN = CONTROL_CHARACTERS.pattern
"""The same class as a regex string, for polars' `str.contains` over a whole column at once."""


class BadNameError(ValueError):
    """A name holds control characters; the message names the name, where it came from and the fix."""


def describe_control_characters(name: str) -> str:
    """`U+000A (LINE FEED)`-style list of the distinct control characters in `name`, in order of appearance."""
    found = dict.fromkeys(CONTROL_CHARACTERS.findall(name))
    return ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, _CONTROL_NAMES.get(c, 'control'))})" for c in found)


_CONTROL_NAMES = {"\x00": "NUL", "\t": "TAB", "\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\x1b": "ESCAPE",
                  "\x7f": "DELETE", "\x85": "NEXT LINE"}  # fmt: skip


def control_character_problem(name: str, what: str, where: str) -> str | None:
    """Why `name` cannot be used (its control characters, with the fix), or None when it is printable."""
    if not CONTROL_CHARACTERS.search(name):
        return None
    return (
        f"{where}: {what} {name!r} holds control character(s) {describe_control_characters(name)}; names become "
        f"file names, suite-file lines and report rows, so they must be printable; fix: rename it without them"
    )


def check_name(name: str, what: str, where: str) -> str:
    """`name` in NFC (`nfc`) when it is printable, else `BadNameError` naming `what` (e.g. "run name") and `where`
    it came from."""
    problem = control_character_problem(name, what, where)
    if problem is not None:
        raise BadNameError(problem)
    return nfc(name)


def nfc(name: str) -> str:
    """`name` in Unicode normal form C. The same name typed on Linux and copied from macOS arrives composed (é as
    U+00E9) or decomposed (e + U+0301): two strings that print alike. Every name is compared in NFC, wherever it
    enters (folders, score tables, task lists), so one name in two forms is one name."""
    return name if unicodedata.is_normalized("NFC", name) else unicodedata.normalize("NFC", name)


def non_nfc(names: Iterable[str]) -> dict[str, str]:
    """name -> its NFC form, for the names not already in it."""
    return {name: unicodedata.normalize("NFC", name) for name in names if not unicodedata.is_normalized("NFC", name)}


def _skeleton(name: str) -> str:
    """What a name looks like: its compatibility form (NFKC: a full-width or ligature letter as the plain one) without
    the invisible format characters (zero-width space, joiners, soft hyphen, bidi marks)."""
    return "".join(c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c) != "Cf")


def lookalikes(names: Iterable[str]) -> list[list[str]]:
    """Groups of distinct (NFC) names that print alike (`_skeleton`), each sorted; they stay distinct names, but a
    reader cannot tell them apart, so the caller says so."""
    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        groups.setdefault(_skeleton(name), []).append(name)
    return [group for group in groups.values() if len(group) > 1]


def lookalike_note(column: str, names: Iterable[str]) -> str | None:
    """One note naming the `column`'s distinct names that print alike, or None when there are none."""
    groups = lookalikes(names)
    if not groups:
        return None
    shown = "; ".join(" and ".join(ascii(name) for name in group) for group in groups[:3])
    return (
        f"{len(groups)} group(s) of distinct '{column}' names print alike ({shown}): they differ only in invisible "
        "or compatibility characters and stay distinct; fix: rename one of each group if they are the same"
    )


__all__ = [
    "CONTROL_PATTERN",
    "BadNameError",
    "check_name",
    "control_character_problem",
    "describe_control_characters",
    "lookalike_note",
    "lookalikes",
    "nfc",
    "non_nfc",
]
