"""The one text-cleaning step, applied to every text before it is scored or shown (no lighteval import: the
`recommend` CLI uses it too, so a text gets the same tokens, hence the same bits per byte, in a perplexity task
and in `finetasks-afr recommend`)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_SPACES = re.compile(r"\s+")
# zero-width space/joiners, word joiner, BOM, soft hyphen, Mongolian vowel separator; variation selectors
INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u180e\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_LITERAL_BREAKS = re.compile(r"\\[nrt]")  # the two characters backslash + n (r, t): escaped line breaks


def clean(text: Any) -> str:
    """NFC, no invisible characters, escaped line breaks as spaces, one line, single spaces, trimmed."""
    if text is None:
        raise ValueError("missing field")
    value = unicodedata.normalize("NFC", str(text))
    value = _LITERAL_BREAKS.sub(" ", INVISIBLE.sub("", value))
    return _SPACES.sub(" ", value).strip()
