"""The majority answer's share of a task's evaluated documents (the score table's `majority_baseline`): by hand, and
on the real rows the micro-scale study's round 1 evaluated, where a model that always gave the same answer scored
it."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from lighteval.tasks.requests import Doc

from finetasks_afr.benchmarks.common import majority_share

STUDY_SCORES = Path(__file__).resolve().parents[2] / "docs" / "study" / "round-1" / "scores.parquet"  # 32 documents


def doc(gold: int | list[int]) -> Doc:
    return Doc(query="q", choices=["a", "b", "c", "d"], gold_index=gold)


def test_majority_share_by_hand() -> None:
    assert majority_share([doc(0), doc(0), doc(1), doc(2)]) == 0.5
    assert majority_share([doc(3)] * 3) == 1.0
    # several golds: a constant answer c is right wherever c is one of them
    assert majority_share([doc([0, 1]), doc(1), doc(2), doc([1, 2])]) == 0.75
    assert majority_share([]) is None


@pytest.fixture(scope="module")
def mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.raw_mirror import raw_mirror

    return raw_mirror(shared_data, tmp_path_factory)[0]


def test_the_study_task_answered_by_one_label_scores_exactly_its_majority_share(
    mirror: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`winogrande_afr_tsn_mcf_enprompt` scored 17/32 for every run, seed and its last checkpoint in the study's round
    1 (its 32 documents: lighteval's shuffle of the Bridging-the-Gap Setswana test rows): the share of the majority
    gold among the same 32 documents, which `evaluated_majority` finds from the real rows."""
    monkeypatch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    from finetasks_afr.tasks import evaluated_majority

    task = "winogrande_afr_tsn_mcf_enprompt"
    shares = evaluated_majority([f"{task}|0", "flores_ppl_zul|0"], 32)
    assert shares == {f"{task}|0": 17 / 32}  # flores_ppl_zul: no choices, so no majority answer
    scores = pl.read_parquet(STUDY_SCORES).filter(pl.col("task") == task, pl.col("metric") == "acc")
    last = scores.filter(pl.col("step") == pl.col("step").max())
    assert last.get_column("score").unique().to_list() == [17 / 32]
    if "majority_baseline" in scores.columns:
        assert scores.get_column("majority_baseline").unique().to_list() == [17 / 32]
