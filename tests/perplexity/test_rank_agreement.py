"""Rank-biased overlap and Kendall's tau (finetasks_afr.perplexity.rank_agreement): hand-computed cases, the `rbo`
package as an independent implementation, and the properties RBO must have."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finetasks_afr.perplexity.rank_agreement import (
    ReferenceFileError,
    agreement,
    kendall_tau,
    match_names,
    overlaps,
    rbo_at_depth,
    rbo_ext,
    read_reference,
)

# ------------------------------------------------------------------------------------------ by hand


def test_equal_lengths_by_hand() -> None:
    # S = a b c, T = a c b, p = 0.5
    # X_1 = |{a} & {a}| = 1, X_2 = |{a,b} & {a,c}| = 1, X_3 = 3  ->  A = 1, 1/2, 1
    # RBO@3   = (1-p) * (A_1 + p A_2 + p^2 A_3) = 0.5 * (1 + 0.25 + 0.25) = 0.75
    # RBO_ext = (1-p)/p * (A_1 p + A_2 p^2 + A_3 p^3) + A_3 p^3 = 1 * (0.5 + 0.125 + 0.125) + 0.125 = 0.875
    S, T = list("abc"), list("acb")
    assert overlaps(S, T) == [1, 1, 3]
    assert rbo_at_depth(S, T, 0.5) == pytest.approx(0.75, abs=1e-15)
    assert rbo_ext(S, T, 0.5) == pytest.approx(0.875, abs=1e-15)


def test_uneven_lengths_by_hand() -> None:
    # short S = a b (s = 2), long L = b c a d (l = 4), p = 0.5
    # X_1 = |{a} & {b}| = 0, X_2 = |{a,b} & {b,c}| = 1 = X_s; beyond s the whole of S is compared:
    # X_3 = |{a,b} & {b,c,a}| = 2, X_4 = |{a,b} & {b,c,a,d}| = 2 = X_l
    # sum_{d=1..4} X_d/d p^d         = 0 + 1/2 * 1/4 + 2/3 * 1/8 + 2/4 * 1/16 = 1/8 + 1/12 + 1/32 = 23/96
    # sum_{d=3..4} X_s(d-s)/(s d) p^d = 1*1/(2*3) * 1/8 + 1*2/(2*4) * 1/16    = 1/48 + 1/64       = 7/192
    # (1-p)/p = 1;  tail = ((X_l - X_s)/l + X_s/s) p^l = (1/4 + 1/2) / 16 = 3/64
    # RBO_ext = 46/192 + 7/192 + 9/192 = 62/192 = 31/96
    # RBO@2 (the shorter length) = (1-p) * (A_1 + p A_2) = 0.5 * (0 + 0.5 * 0.5) = 0.125
    S, L = list("ab"), list("bcad")
    assert overlaps(S, L) == [0, 1, 2, 2]
    assert rbo_ext(S, L, 0.5) == pytest.approx(31 / 96, abs=1e-15)
    assert rbo_ext(L, S, 0.5) == pytest.approx(31 / 96, abs=1e-15)
    assert rbo_at_depth(S, L, 0.5) == pytest.approx(0.125, abs=1e-15)


def test_identical_disjoint_and_empty() -> None:
    S = list("abcdefg")
    assert rbo_ext(S, S, 0.9) == pytest.approx(1.0, abs=1e-12)
    # prefix RBO of identical lists of length k: (1-p) sum p^(d-1) = 1 - p^k
    assert rbo_at_depth(S, S, 0.9) == pytest.approx(1 - 0.9**7, abs=1e-12)
    assert rbo_ext(S, list("xyz"), 0.9) == 0.0
    assert rbo_at_depth(S, list("xyz"), 0.9) == 0.0
    assert rbo_ext([], [], 0.9) == 1.0 and rbo_ext(S, [], 0.9) == 0.0
    # a prefix of the other list: everything seen agrees, so the extrapolation gives 1
    assert rbo_ext(S[:3], S, 0.9) == pytest.approx(1.0, abs=1e-12)


def test_invalid_input_is_named() -> None:
    with pytest.raises(ValueError, match="lists 'a' twice"):
        rbo_ext(list("aba"), list("abc"))
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\)"):
        rbo_ext(list("ab"), list("ab"), p=1.0)


# --------------------------------------------------------------------------- the rbo package (PyPI)


def _random_lists(rng: random.Random) -> tuple[list[int], list[int], float]:
    pool = list(range(rng.randint(1, 40)))
    first = rng.sample(pool, rng.randint(1, len(pool)))
    second = rng.sample(pool, rng.randint(1, len(pool)))
    return first, second, rng.uniform(0.05, 0.99)


def test_matches_the_rbo_package_on_random_lists() -> None:
    """`rbo.RankingSimilarity.rbo_ext` implements eq. 32 (its `rbo(p=)` is the prefix sum at the shorter length):
    both must equal ours on random ranked lists of uneven lengths, partly overlapping, without duplicates."""
    try:  # never a skip: a missing reference would let CI pass without comparing ours with anything
        import rbo as rbo_pkg
    except ModuleNotFoundError as error:
        pytest.fail(f"the test-only dependency rbo is missing ({error}); run `make install` (rbo==0.1.3, --no-deps)")
    rng = random.Random(1234)
    cases: list[tuple[Sequence[Hashable], Sequence[Hashable], float]] = [_random_lists(rng) for _ in range(1500)]
    cases += [(list("abcde"), list("edcba"), 0.9), (list("abcdefghij"), list("ab"), 0.98), ([7], [7, 8, 9], 0.5)]
    uneven = 0
    for first, second, p in cases:
        reference = rbo_pkg.RankingSimilarity(first, second)
        assert rbo_ext(first, second, p) == pytest.approx(reference.rbo_ext(p=p), abs=1e-12), (first, second, p)
        assert rbo_at_depth(first, second, p) == pytest.approx(reference.rbo(p=p), abs=1e-12), (first, second, p)
        uneven += len(first) != len(second)
    assert uneven > 1000  # the uneven-length branch of eq. 32 was exercised


# ------------------------------------------------------------------------------------------ properties

rankings = st.lists(st.integers(0, 25), unique=True, max_size=20)


@settings(max_examples=200, deadline=None)
@given(rankings, rankings, st.floats(0.05, 0.99))
def test_properties(first: list[int], second: list[int], p: float) -> None:
    ext, prefix = rbo_ext(first, second, p), rbo_at_depth(first, second, p)
    assert -1e-12 <= ext <= 1 + 1e-12 and -1e-12 <= prefix <= 1 + 1e-12
    assert ext == pytest.approx(rbo_ext(second, first, p), abs=1e-12)
    assert prefix == pytest.approx(rbo_at_depth(second, first, p), abs=1e-12)
    if first and second:
        assert prefix <= ext + 1e-12  # the prefix sum ignores the (non-negative) rest
    if first and not set(first) & set(second):
        assert ext == 0.0
    assert rbo_ext(first, first, p) == pytest.approx(1.0, abs=1e-12)


def test_top_weighted() -> None:
    # the same swap costs more at the top than at the bottom
    base = list("abcdefghij")
    top_swap = list("bacdefghij")
    bottom_swap = list("abcdefghji")
    assert rbo_ext(base, top_swap, 0.9) < rbo_ext(base, bottom_swap, 0.9) < 1.0


# ---------------------------------------------------------------------------------------- Kendall tau


def test_kendall_tau_by_hand() -> None:
    # ours a > b > c, reference a > c > b: pairs (a,b) and (a,c) concordant, (b,c) discordant -> (2-1)/3
    result = kendall_tau({"a": 3.0, "b": 2.0, "c": 1.0, "only_ours": 0.0}, {"a": 3.0, "c": 2.0, "b": 1.0, "x": 9.0})
    assert result.n_shared == 3
    assert result.tau == pytest.approx(1 / 3)
    assert math.isnan(kendall_tau({"a": 1.0}, {"a": 2.0, "b": 1.0}).tau)


# ---------------------------------------------------------------------------------- reference files


def test_read_reference_csv_and_list(tmp_path: Path) -> None:
    csv_file = tmp_path / "ref.csv"
    csv_file.write_text("model,score,extra\nm1,0.5,x\nm2,0.9,y\nm3,0.5,z\n", encoding="utf-8")
    reference = read_reference(csv_file)
    assert reference.names == ["m2", "m1", "m3"]  # higher first; the tie keeps file order
    assert reference.scores == {"m1": 0.5, "m2": 0.9, "m3": 0.5}
    lower = read_reference(csv_file, higher_is_better=False)
    assert lower.names == ["m1", "m3", "m2"]

    listed = tmp_path / "ref.txt"
    listed.write_text("# best first\nm3\n\nm1\nm2\n", encoding="utf-8")
    reference = read_reference(listed)
    assert reference.names == ["m3", "m1", "m2"]
    assert reference.scores["m3"] > reference.scores["m1"] > reference.scores["m2"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("name,value\na,1\n", "needs a header with columns `model` and `score`"),
        ("model,score\na,high\n", "line 2: score 'high' is not a number"),
        ("model,score\na,1\na,2\n", "lists model 'a' twice"),
        ("a\nb\na\n", "lists model 'a' twice"),
        ("# nothing\n\n", "lists no model"),
    ],
)
def test_read_reference_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "ref.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReferenceFileError, match=message):
        read_reference(path)


def test_match_names_and_agreement(tmp_path: Path) -> None:
    mapping = match_names(
        ["/models/afriberta_large", "xlmr", "/a/dup", "/b/dup"], ["castorini/afriberta_large", "xlmr", "dup"]
    )
    assert mapping == {
        "/models/afriberta_large": "castorini/afriberta_large",
        "xlmr": "xlmr",
        "/a/dup": "/a/dup",
        "/b/dup": "/b/dup",
    }

    path = tmp_path / "ref.csv"
    path.write_text("model,score\nA,0.9\nB,0.8\nC,0.7\nD,0.1\n", encoding="utf-8")
    reference = read_reference(path)
    ours = ["A", "C", "B", "E"]
    result = agreement(ours, {"A": -1.0, "C": -2.0, "B": -3.0, "E": -4.0}, reference, p=0.9)
    assert result.rbo_ext == pytest.approx(rbo_ext(ours, ["A", "B", "C", "D"], 0.9))
    assert result.rbo == pytest.approx(rbo_at_depth(ours, ["A", "B", "C", "D"], 0.9))
    assert result.n_shared == 3 and result.kendall_tau == pytest.approx(1 / 3)
    assert result.ours_only == ["E"] and result.reference_only == ["D"]
    assert result.as_dict()["rbo_ext"] == result.rbo_ext
