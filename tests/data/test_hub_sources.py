"""Hub sources that load: every task's repository, revision, config and split names against its dataset source,
the Bridging-the-Gap sources against the published dataset card, and label orders and splits against
lm-evaluation-harness's own task definitions.

The published facts live in fixtures, each entry with its citation: `tests/fixtures/hub_cards.json` (viewer and
file-tree pages of the Hugging Face Hub) and `tests/fixtures/lm_eval_definitions.json` (lm-evaluation-harness task
YAML files at a commit, with line numbers). The suite's tasks are built without a mirror, so they name the hub
exactly as a machine with hub access would.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def hub_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """Every task built with no mirror configured: hf_repo / hf_revision / hf_subset as the hub sees them."""
    mp = pytest.MonkeyPatch()
    mp.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    import finetasks_afr.tasks  # noqa: F401  (literals registered, fixes applied)
    from finetasks_afr.benchmarks import all_tasks

    try:
        return [config for config in all_tasks() if not config.name.startswith("longppl_")]
    finally:
        mp.undo()


def test_every_task_reads_splits_its_source_has(hub_tasks: list[Any]) -> None:
    """Evaluation and few-shot splits are among the task's available splits, which its dataset source has."""
    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.data.sources import SOURCES

    for config in hub_tasks:
        src = SOURCES[TASK_INFO[config.name].dataset]
        assert (config.hf_repo, config.hf_revision) == (src.hub_repo, src.revision), config.name
        available = set(config.hf_avail_splits)
        assert set(config.evaluation_splits) <= available, config.name
        assert config.few_shots_split is None or config.few_shots_split in available, config.name
        assert available <= set(src.splits), (config.name, available, src.splits)


def test_every_task_config_is_a_config_its_source_declares(hub_tasks: list[Any]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.data.sources import SOURCES

    for config in hub_tasks:
        src = SOURCES[TASK_INFO[config.name].dataset]
        declared = set(src.config_names) or set(src.codes.values())
        assert config.hf_subset in declared, (config.name, config.hf_subset)


def _cards() -> dict[str, Any]:
    """`hub_cards.json`, plus one `hub_cards/<owner>+<name>.json` per dataset added later (one file per card, so
    that adding a benchmark adds a file); a repository described twice is an error."""
    path = FIXTURES / "hub_cards.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: it holds the published dataset cards the sources are checked against")
    cards: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for extra in sorted((FIXTURES / "hub_cards").glob("*.json")):
        repo = extra.stem.replace("+", "/", 1)
        assert repo not in cards, f"{repo} is described in hub_cards.json and in {extra.name}"
        cards[repo] = json.loads(extra.read_text(encoding="utf-8"))
    return cards


def test_bridging_the_gap_has_the_44_published_configs_and_the_tasks_use_them(hub_tasks: list[Any]) -> None:
    from finetasks_afr.benchmarks import bridging
    from finetasks_afr.data.sources import SOURCES

    card = _cards()[bridging.HUB_REPO]
    assert card["cited"], "cite the card"
    published = set(card["configs"])
    assert len(published) == 44
    codes = ("af", "am", "bm", "ig", "nso", "sn", "st", "tn", "ts", "xh", "zu")
    expected = {f"mmlu_{s}_{c}" for s in ("clinical_knowledge", "college_medicine", "virology") for c in codes}
    expected |= {f"winogrande_{c}" for c in codes}
    assert published == expected
    declared = set(SOURCES["winogrande_afr"].config_names) | set(SOURCES["mmlu_clinical_afr"].config_names)
    assert declared == published
    used = {config.hf_subset for config in hub_tasks if config.hf_repo == bridging.HUB_REPO}
    assert used == published  # every published config is evaluated, and nothing else is asked for
    assert not card["english_config"]  # English comes from cais/mmlu and the English columns
    assert SOURCES["winogrande_afr"].revision == SOURCES["mmlu_clinical_afr"].revision == card["revision"]
    assert tuple(card["features"]["winogrande_*"])[1:4] == bridging.HUB_WINOGRANDE_FIELDS
    assert tuple(card["features"]["mmlu_*"]) == bridging.MMLU_COLUMNS
    for name, config in card["configs"].items():
        if name.startswith("mmlu_"):
            assert set(config["splits"]) == set(SOURCES["mmlu_clinical_afr"].splits), name
        elif config["splits"] is not None:  # winogrande split names: see the fixture's note
            assert set(config["splits"]) == set(SOURCES["winogrande_afr"].splits), name


@pytest.mark.shared_data
def test_bridging_the_gap_row_counts_match_the_published_configs(shared_data: Path) -> None:
    """The raw release the mirror is built from has exactly the rows the hub's viewer counts per config."""
    from finetasks_afr.benchmarks import bridging

    card = _cards()[bridging.HUB_REPO]
    counts: dict[str, int] = {}
    for unit_source in (bridging.SOURCES[0], bridging.SOURCES[1]):
        assert unit_source.raw is not None
        root = shared_data / unit_source.raw.subdir
        for unit in unit_source.raw.units(root):
            for config, _split, row in unit.read():
                if isinstance(row, dict):
                    counts[config] = counts.get(config, 0) + 1
    assert counts == {name: config["rows"] for name, config in card["configs"].items()}


# ------------------------------------------------------------------- lm-evaluation-harness's definitions


def _lm_eval() -> dict[str, Any]:
    return json.loads((FIXTURES / "lm_eval_definitions.json").read_text(encoding="utf-8"))


def test_label_orders_equal_lm_evaluation_harness() -> None:
    """The index a dataset's label means is lm-evaluation-harness's (doc_to_choice order, cited per entry)."""
    from finetasks_afr.benchmarks import afrisenti, afrixnli, masakhanews, sib200

    definitions = _lm_eval()
    assert list(sib200.TOPICS) == definitions["sib200"]["labels"]
    assert list(masakhanews.TOPICS) == definitions["masakhanews"]["labels"]
    assert list(afrisenti.SENTIMENTS) == definitions["afrisenti"]["labels"]
    assert list(afrixnli.LABELS) == definitions["afrixnli"]["labels"]
    for name, entry in definitions.items():
        if not name.startswith("_"):
            assert re.fullmatch(
                r"EleutherAI/lm-evaluation-harness@[0-9a-f]{40}:lm_eval/tasks/\S+#L\d+-L\d+", entry["source"]
            )


def test_letter_and_number_answers_decode_as_lm_evaluation_harness() -> None:
    """AfriMMLU's answer letter and Belebele's correct_answer_num index the choices as lm-eval's doc_to_target."""
    from finetasks_afr.benchmarks import afrimmlu, belebele

    definitions = _lm_eval()
    for index, letter in enumerate(definitions["afrimmlu"]["labels"]):
        row = {"question": "q", "choices": ["a", "b", "c", "d"], "answer": letter}
        assert afrimmlu.adapter(row)["gold_idx"] == index
    for index, number in enumerate(definitions["belebele"]["labels"]):
        row = {"flores_passage": "p", "question": "q", "correct_answer_num": number,
               **{f"mc_answer{i}": str(i) for i in range(1, 5)}}  # fmt: skip
        assert belebele.adapter(row)["gold_idx"] == index


def test_splits_equal_lm_evaluation_harness_or_the_difference_is_stated(hub_tasks: list[Any]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO

    definitions = _lm_eval()
    seen = set()
    for config in hub_tasks:
        benchmark = TASK_INFO[config.name].benchmark
        entry = definitions.get(benchmark)
        if entry is None:
            continue
        seen.add(benchmark)
        assert list(config.evaluation_splits) == [entry["test_split"]], config.name
        if config.few_shots_split != entry["fewshot_split"]:
            assert entry["ours"] != "same" and "few-shot from" in entry["ours"], config.name
    assert seen == {"sib200", "masakhanews", "afrisenti", "afrixnli", "afrimmlu", "belebele"}


def _card_splits(card: dict[str, Any], config: str, revision: str | None) -> set[str] | None:
    if revision and "revisions" in card:  # per-revision facts (AfriMMLU): those of the pinned revision
        [entry] = [value for key, value in card["revisions"].items() if key.startswith(revision)]
        return set(entry["splits"])
    splits = card.get("splits")
    if isinstance(splits, dict):
        return set(splits[config] if config in splits else splits.get("default", []))
    if isinstance(splits, list):
        return set(splits)
    per_config = (card.get("configs") or {}).get(config)
    return set(per_config["splits"]) if isinstance(per_config, dict) and per_config.get("splits") else None


def _card_has_config(card: dict[str, Any], config: str) -> bool:
    if "config_names" in card:
        return config in card["config_names"]
    if "config_pattern" in card:  # FLORES-style codes, described in words on the card fixture
        assert card["config_pattern"].startswith("<iso639-3>_<Script>")
        return re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", config) is not None
    return config in (card.get("configs") or {})


def test_every_task_names_a_published_repository_config_and_splits(hub_tasks: list[Any]) -> None:
    """Every task's repository has a card fixture; its config is published there, and the splits it reads (test and
    few-shot) are among the published ones; a revision the card pins is the one the source pins."""
    from finetasks_afr.benchmarks.common import TASK_INFO
    from finetasks_afr.data.sources import SOURCES

    cards = _cards()
    for config in hub_tasks:
        if (
            TASK_INFO[config.name].dataset == "winogrande_afr"
            and config.hf_subset == "winogrande_am"
            and (TASK_INFO[config.name].language == "eng")
        ):
            continue  # English Winogrande: the mirror's English columns (no hub config has them; README)
        card = cards.get(config.hf_repo)
        assert card is not None and card["cited"], config.hf_repo
        assert _card_has_config(card, config.hf_subset), (config.name, config.hf_subset)
        published = _card_splits(card, config.hf_subset, config.hf_revision)
        assert published is not None, (config.name, "no published splits")
        used = set(config.evaluation_splits) | ({config.few_shots_split} if config.few_shots_split else set())
        assert used <= published, (config.name, used, published)
        if card.get("revision"):
            assert SOURCES[TASK_INFO[config.name].dataset].revision == card["revision"], config.name


@pytest.mark.slow
def test_data_sources_printed_to_a_pipe_is_not_cut() -> None:
    """Piped to a file or `less`, rich assumed 80 columns and printed "afridiacriti…" (issue 40): every key, repo and
    revision must come out whole."""
    import subprocess
    import sys
    from pathlib import Path

    from finetasks_afr.data.sources import SOURCES

    cli = str(Path(sys.executable).parent / "finetasks-afr")
    done = subprocess.run([cli, "data", "sources"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "", "TERM": "dumb"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout + done.stderr
    assert "…" not in printed
    for key, source in SOURCES.items():
        assert f" {key} " in printed and source.hub_repo in printed and (source.revision or "-") in printed
