"""`bench/bench_suite.py`'s comparison of lighteval's path and ours: a rounding tie is told apart from a real
difference only by the documents' own log-probabilities (the case `make bench-suite` failed on:
`winogrande_afr_tsn_cf` document 518)."""

from __future__ import annotations

from bench.bench_suite import compare_results, tie_flips

TASK = "winogrande_afr_tsn_cf:0"


def _documents(first: tuple[float, float], acc_first: float) -> dict:
    return {
        TASK: {
            "518": {"logprobs": list(first), "unconditioned": [], "metric": {"acc": acc_first}},
            "1510": {"logprobs": [-142.18, -141.22], "unconditioned": [], "metric": {"acc": 1.0}},
        }
    }


def _results(acc: float, stderr: float) -> dict:
    return {TASK: {"acc": acc, "acc_stderr": stderr}, "all": {"acc": acc, "acc_stderr": stderr}}


def test_a_choice_decided_by_rounding_is_a_tie_listed_apart() -> None:
    theirs = _documents((-122.31942749023438, -122.3194351196289), 1.0)
    ours = _documents((-122.31944274902344, -122.3194351196289), 0.0)
    differences, _, ties = compare_results(_results(1.0, 0.0), _results(0.5, 0.5), theirs, ours)
    assert differences == []
    assert [line.split(":")[0].split()[0] for line in ties] == [
        "winogrande_afr_tsn_cf",
        "winogrande_afr_tsn_cf",
        "all",
        "all",
    ]
    assert "['518']" in ties[0]


def test_a_flip_with_log_probabilities_apart_is_a_difference() -> None:
    theirs = _documents((-122.30, -122.31), 1.0)
    ours = _documents((-122.33, -122.31), 0.0)  # 2.5e-4 relative apart: not rounding
    assert tie_flips(theirs, ours, TASK, "acc") is None
    differences, _, ties = compare_results(_results(1.0, 0.0), _results(0.5, 0.5), theirs, ours)
    assert ties == []
    assert len(differences) == 4 and differences[-1].startswith("all acc")


def test_without_documents_every_difference_counts() -> None:
    differences, compared, ties = compare_results(_results(1.0, 0.0), _results(0.5, 0.5))
    assert ties == [] and len(differences) == 4
    assert compared["exact"] == 4


def test_a_differing_aggregate_that_no_document_explains_is_a_difference() -> None:
    same = _documents((-1.0, -2.0), 1.0)
    differences, _, ties = compare_results(_results(1.0, 0.0), _results(0.5, 0.5), same, same)
    assert ties == [] and len(differences) == 4
