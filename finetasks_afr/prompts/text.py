"""The one text-cleaning step, applied to every text before it is scored or shown (no lighteval import: the
`recommend` CLI uses it too, so a text gets the same tokens, hence the same bits per byte, in a perplexity task
and in `finetasks-afr recommend`).

Invisible characters are removed by Unicode category, not by a hand list: every format character (Cf: bidi marks,
embeddings and isolates, zero-width space, word joiner, BOM, soft hyphen, invisible separators, tag characters, ...)
and every private-use character (Co: a font's own glyph, meaningless to a tokenizer), plus the variation selectors
(category Mn, but invisible presentation hints). A hand list misses what nobody thought of, and the released data
holds bidi marks, isolates and private-use glyphs that a list of zero-width characters did not name; these reach a
prompt as tokens the model never sees in its training text and that the reader cannot see at all.

The one exception is a script's own use of the joiners: ZERO WIDTH NON-JOINER (U+200C) and ZERO WIDTH JOINER
(U+200D) change the spelling or the shape of a word in the joining and Brahmic scripts (Persian "mi-xaham" in
Arabic script, the Sinhala "shri" conjunct), so they are kept where both neighbours are letters or marks of such a
script (`JOINING_SCRIPTS`, by the first word of the Unicode character name), and removed elsewhere: between Latin
letters, at a word's edge, and inside emoji sequences, whose parts stay (a joined family emoji becomes its members,
as before this rule). The joiners are rare, so the neighbour test runs only where one occurs; everything else is one
precompiled character class, built at import from `unicodedata` (the categories of the running Python's Unicode).

The removal comes before NFC, so that a character removed from between a letter and its combining mark cannot leave
a decomposed pair behind.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_SPACES = re.compile(r"\s+")
_LITERAL_BREAKS = re.compile(r"\\[nrt]")  # the two characters backslash + n (r, t): escaped line breaks

ZWNJ = "\u200c"
ZWJ = "\u200d"
JOINING_SCRIPTS = frozenset(
    {
        # joining scripts: ZWJ/ZWNJ select a letter's joined or unjoined form (Persian, Urdu, Pashto spelling)
        "ARABIC", "SYRIAC", "NKO", "MANDAIC", "MONGOLIAN", "ADLAM", "HANIFI",
        # Brahmic scripts: ZWJ/ZWNJ select or block conjuncts and half forms
        "DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA", "MALAYALAM",
        "SINHALA", "MYANMAR", "KHMER", "TIBETAN",
    }
)  # fmt: skip
"""Scripts that use ZWJ/ZWNJ inside words (the Unicode Standard, ch. 23.2 and the script chapters); a script is
recognised by the first word of its characters' names ("ARABIC LETTER NOON", "SINHALA SIGN AL-LAKUNA")."""

# Co: the private-use blocks (Unicode has kept them fixed since 2.0); Cf: scanned in the planes that have any
# (0-3 and 14), so the import costs a third of a full scan. tests/prompts/test_prompt_cleaning.py compares with a full
# scan.
_PRIVATE_USE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))


def _format_ranges() -> list[tuple[int, int]]:
    points = [
        code
        for plane in (range(0x0000, 0x40000), range(0xE0000, 0xF0000))
        for code in plane
        if unicodedata.category(chr(code)) == "Cf" and chr(code) not in (ZWNJ, ZWJ)
    ]
    ranges: list[tuple[int, int]] = []
    for code in points:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return ranges


def _character_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in sorted(ranges)
    )


INVISIBLE = re.compile(f"[{_character_class([*_format_ranges(), *_PRIVATE_USE, *_VARIATION_SELECTORS])}]")
"""Every character `clean` removes unconditionally: Cf and Co (ZWJ and ZWNJ aside) and the variation selectors."""
_JOINERS = re.compile(f"[{ZWNJ}{ZWJ}]")


def _in_joining_script(char: str) -> bool:
    return unicodedata.category(char)[0] in "LM" and unicodedata.name(char, "").split(" ", 1)[0] in JOINING_SCRIPTS


def _joiner(match: re.Match[str]) -> str:
    """The joiner itself inside a word of a joining script, else nothing."""
    text, start = match.string, match.start()
    inside = 0 < start < len(text) - 1 and _in_joining_script(text[start - 1]) and _in_joining_script(text[start + 1])
    return match.group() if inside else ""


def remove_invisible(text: str) -> str:
    """`text` without its format, private-use and variation-selector characters, joiners of joining scripts kept."""
    text = INVISIBLE.sub("", text)
    if ZWNJ in text or ZWJ in text:
        text = _JOINERS.sub(_joiner, text)
    return text


def clean(text: Any) -> str:
    """No invisible characters, then NFC, escaped line breaks as spaces, one line, single spaces, trimmed."""
    if text is None:
        raise ValueError("missing field")
    value = unicodedata.normalize("NFC", remove_invisible(str(text)))
    value = _LITERAL_BREAKS.sub(" ", value)
    return _SPACES.sub(" ", value).strip()
