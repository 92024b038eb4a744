"""The installed lighteval release and its series: what the version guards of the suite's lighteval fixes read.

`finetasks_afr.prompts.fewshot`, `finetasks_afr.scoring.compat` and `finetasks_afr.scoring.partial_scoring` each fix
bugs of one lighteval series and step aside on any other release. Prompts and scoring are independent layers, so the
one reading of the version sits here, below both.
"""

from __future__ import annotations

import importlib.metadata


def lighteval_version() -> str | None:
    """The installed lighteval's version; None when lighteval is not installed."""
    try:
        return importlib.metadata.version("lighteval")
    except importlib.metadata.PackageNotFoundError:
        return None


def in_series(version: str | None, series: tuple[int, int]) -> bool:
    """True when `version` is a release of `series` (major, minor): "0.13.2" of (0, 13). False for None and for a
    version that does not parse."""
    if version is None:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).release[:2] == series
    except InvalidVersion:
        return False
