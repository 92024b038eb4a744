"""Agreement between two ranked lists of models: rank-biased overlap (RBO) and Kendall's tau.

RBO (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite rankings", TOIS 28(4)) compares two
rankings that may have different lengths and different items, weighting agreement at the top more heavily:
with persistence ``p`` the weight of depth ``d`` is ``(1 - p) p^(d-1)``. Notation: ``X_d`` is the size of the
overlap of the two lists' prefixes of length ``d`` and ``A_d = X_d / d`` their agreement.

* :func:`rbo_at_depth` is the prefix sum ``(1 - p) sum_{d=1..k} p^(d-1) A_d`` (the paper's eq. 7 cut at the
  evaluation depth ``k``; default ``k`` = the shorter length). It is a lower bound: it ignores everything
  beyond depth ``k``, so identical lists of length k score ``1 - p^k``, not 1.
* :func:`rbo_ext` is the extrapolated RBO of eq. 32 (eq. 30 when the lengths are equal): it assumes that the
  agreement seen at the end of the lists continues indefinitely, so identical lists score 1. For a short list
  S (length s) and a long list L (length l), with ``X_d`` for ``d > s`` the overlap of the whole of S with the
  first ``d`` items of L::

      RBO_ext = (1-p)/p * ( sum_{d=1..l} X_d/d p^d + sum_{d=s+1..l} X_s (d-s)/(s d) p^d )
                + ( (X_l - X_s)/l + X_s/s ) p^l

  This is exactly what the `rbo` package (PyPI 0.1.3, ``RankingSimilarity.rbo_ext``) computes on lists without
  duplicates; ``tests/perplexity/test_rank_agreement.py`` checks the two agree on random lists.

Both lists must be rankings without ties and without duplicates (a duplicate is an error naming it); two empty
lists score 1, one empty list 0 (the `rbo` package's convention). Kendall's tau (:func:`kendall_tau`) uses
``scipy.stats.kendalltau`` (tau-b, so tied scores are handled) on the items both lists share.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_P = 0.9


def _check(S: Sequence[Hashable], T: Sequence[Hashable], p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"RBO persistence p must lie in (0, 1), got {p}")
    for name, items in (("first", S), ("second", T)):
        seen: set[Hashable] = set()
        for item in items:
            if item in seen:
                raise ValueError(f"the {name} ranking lists {item!r} twice; RBO needs each item once")
            seen.add(item)


def overlaps(short: Sequence[Hashable], long: Sequence[Hashable]) -> list[int]:
    """``[X_1, ..., X_l]``: the overlap of the prefixes at each depth up to the longer length ``l``; beyond the
    shorter list's end, the whole shorter list is compared with the longer list's prefix."""
    seen_short: set[Hashable] = set()
    seen_long: set[Hashable] = set()
    result: list[int] = []
    x = 0
    for depth in range(len(long)):
        item_long = long[depth]
        item_short = short[depth] if depth < len(short) else None
        if depth < len(short) and item_short == item_long:
            x += 1
        else:
            x += item_long in seen_short
            if depth < len(short):
                x += item_short in seen_long
        seen_long.add(item_long)
        if depth < len(short):
            seen_short.add(item_short)
        result.append(x)
    return result


def _ordered(S: Sequence[Hashable], T: Sequence[Hashable]) -> tuple[Sequence[Hashable], Sequence[Hashable]]:
    return (S, T) if len(S) <= len(T) else (T, S)


def rbo_at_depth(S: Sequence[Hashable], T: Sequence[Hashable], p: float = DEFAULT_P, depth: int | None = None) -> float:
    """Prefix RBO ``(1 - p) sum_{d=1..k} p^(d-1) A_d`` with ``k = depth`` (default: the shorter length)."""
    _check(S, T, p)
    if not S and not T:
        return 1.0
    if not S or not T:
        return 0.0
    short, long = _ordered(S, T)
    k = len(short) if depth is None else min(depth, len(long))
    if k < 1:
        raise ValueError(f"RBO depth must be at least 1, got {depth}")
    x = overlaps(short, long)
    return (1.0 - p) * sum(p ** (d - 1) * x[d - 1] / d for d in range(1, k + 1))


def rbo_ext(S: Sequence[Hashable], T: Sequence[Hashable], p: float = DEFAULT_P) -> float:
    """Extrapolated RBO (Webber et al. 2010, eq. 32): lists of possibly different lengths, 1 when identical."""
    _check(S, T, p)
    if not S and not T:
        return 1.0
    if not S or not T:
        return 0.0
    short, long = _ordered(S, T)
    s, l = len(short), len(long)  # noqa: E741 (the paper's names)
    x = overlaps(short, long)
    x_s, x_l = x[s - 1], x[l - 1]
    seen = sum(x[d - 1] / d * p**d for d in range(1, l + 1))
    unseen = sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    tail = ((x_l - x_s) / l + x_s / s) * p**l
    return (1.0 - p) / p * (seen + unseen) + tail


@dataclass(frozen=True)
class KendallResult:
    """Kendall's tau-b on the shared items; NaN (with `n_shared`) when fewer than two are shared."""

    tau: float
    p_value: float
    n_shared: int


def kendall_tau(ours: Mapping[str, float], reference: Mapping[str, float]) -> KendallResult:
    """Kendall's tau-b between two scorings (higher = better in both) on the names both contain."""
    from scipy.stats import kendalltau

    shared = [name for name in ours if name in reference]
    if len(shared) < 2:
        return KendallResult(math.nan, math.nan, len(shared))
    result = kendalltau([ours[name] for name in shared], [reference[name] for name in shared])
    return KendallResult(float(result.statistic), float(result.pvalue), len(shared))


@dataclass(frozen=True)
class Reference:
    """A reference ranking, best first; `scores` holds the "higher is better" value used for Kendall's tau
    (the given score, negated for lower-is-better scores; minus the position for a plain ordered list)."""

    names: list[str]
    scores: dict[str, float]
    source: str


class ReferenceFileError(ValueError):
    """A reference file that cannot be read as a ranking (the message names the file and the fix)."""


def read_reference(path: Path, *, higher_is_better: bool = True) -> Reference:
    """Read a reference ranking: a CSV with a header holding `model` and `score` columns (sorted here, ties kept
    in file order), or a text file with one model per line, best first (blank lines and `#` comments skipped).

    A file is read as CSV when its name ends in `.csv` or its first line contains a comma."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ReferenceFileError(f"cannot read reference file {path}: {error}") from error
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        raise ReferenceFileError(f"reference file {path} lists no model")
    if path.suffix.lower() == ".csv" or "," in lines[0]:
        return _read_reference_csv(path, lines, higher_is_better)
    names = lines
    _no_duplicates(path, names)
    return Reference(names, {name: -float(i) for i, name in enumerate(names)}, str(path))


def _no_duplicates(path: Path, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ReferenceFileError(f"reference file {path} lists model {name!r} twice; keep one line per model")
        seen.add(name)


def _read_reference_csv(path: Path, lines: list[str], higher_is_better: bool) -> Reference:
    rows = list(csv.DictReader(lines))
    header = [column.strip().lower() for column in (csv.DictReader(lines).fieldnames or [])]
    if "model" not in header or "score" not in header:
        raise ReferenceFileError(
            f"reference CSV {path} needs a header with columns `model` and `score` (found: {', '.join(header)}); "
            "or give a text file with one model per line, best first"
        )
    entries: list[tuple[str, float]] = []
    for number, row in enumerate(rows, start=2):
        clean = {key.strip().lower(): (value or "").strip() for key, value in row.items() if key is not None}
        try:
            score = float(clean["score"])
        except ValueError:
            raise ReferenceFileError(
                f"reference CSV {path}, line {number}: score {clean['score']!r} is not a number"
            ) from None
        if not clean["model"]:
            raise ReferenceFileError(f"reference CSV {path}, line {number}: empty model name")
        entries.append((clean["model"], score if higher_is_better else -score))
    _no_duplicates(path, [name for name, _ in entries])
    ordered = sorted(entries, key=lambda entry: -entry[1])  # stable: ties keep file order
    return Reference([name for name, _ in ordered], dict(entries), str(path))


@dataclass(frozen=True)
class Agreement:
    """How a ranking agrees with a reference ranking."""

    p: float
    rbo: float  # prefix RBO at the shorter list's length
    rbo_ext: float
    kendall_tau: float
    kendall_p_value: float
    n_shared: int
    ours_only: list[str]
    reference_only: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "p": self.p,
            "rbo": self.rbo,
            "rbo_ext": self.rbo_ext,
            "kendall_tau": None if math.isnan(self.kendall_tau) else self.kendall_tau,
            "kendall_p_value": None if math.isnan(self.kendall_p_value) else self.kendall_p_value,
            "n_shared": self.n_shared,
            "ours_only": self.ours_only,
            "reference_only": self.reference_only,
        }


def agreement(
    ours: Sequence[str], our_scores: Mapping[str, float], reference: Reference, p: float = DEFAULT_P
) -> Agreement:
    """RBO, RBO_ext and Kendall's tau of `ours` (best first; `our_scores` higher = better) against `reference`.
    Names must already be in the reference's namespace (see :func:`match_names`)."""
    kendall = kendall_tau(our_scores, reference.scores)
    return Agreement(
        p=p,
        rbo=rbo_at_depth(list(ours), reference.names, p),
        rbo_ext=rbo_ext(list(ours), reference.names, p),
        kendall_tau=kendall.tau,
        kendall_p_value=kendall.p_value,
        n_shared=kendall.n_shared,
        ours_only=[name for name in ours if name not in reference.scores],
        reference_only=[name for name in reference.names if name not in set(ours)],
    )


def _tail(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]


def match_names(ours: Sequence[str], reference_names: Sequence[str]) -> dict[str, str]:
    """Map each of our model names to a reference name: the same string, else the same last path component
    (`/models/afriberta_large` matches `castorini/afriberta_large`) when that is unambiguous on both sides.
    Unmatched names map to themselves (they count as non-overlapping)."""
    exact = set(reference_names)
    by_tail: dict[str, list[str]] = {}
    for name in reference_names:
        by_tail.setdefault(_tail(name), []).append(name)
    our_tails = [_tail(name) for name in ours]
    mapping: dict[str, str] = {}
    for name, tail in zip(ours, our_tails, strict=True):
        if name in exact:
            mapping[name] = name
        elif len(by_tail.get(tail, [])) == 1 and our_tails.count(tail) == 1:
            mapping[name] = by_tail[tail][0]
        else:
            mapping[name] = name
    return mapping
