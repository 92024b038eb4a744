"""Data artefacts of the real releases that reach prompts or scores (issue 26, item 6), checked on the real rows.

- FLORES (SIB-200 rows): in five languages a sentence of the language stands for two FLORES ids whose English
  sentences differ (a copy of a neighbouring sentence's translation in the release). A few-shot example holding
  such a row could show the evaluated document's source with another translation (xx2en), or its reference under
  another English source (en2xx). The rows are found from the data (`flores_mt.source_conflicts`), compared here
  with a list found by hand, and the few-shot pools of every flores_mt task of those languages hold none of them;
  the evaluation rows of such pairs are flagged (kept, listed).
- Winogrande CF (Bridging the Gap, partial scoring): a sentence whose blank is followed only by punctuation would
  score nothing but that punctuation mark after each option. Every CF document of every language scores a
  continuation with at least one letter; the documents that moved to full scoring are counted per language.
"""

from __future__ import annotations

import csv
import os
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

import finetasks_afr.tasks  # noqa: E402,F401  (lighteval fixes applied, literals registered, as the CLI does)
from finetasks_afr.benchmarks import bridging, flores_mt  # noqa: E402
from finetasks_afr.benchmarks.common import clean  # noqa: E402
from finetasks_afr.prompts.languages import covered_by, language  # noqa: E402

# ------------------------------------------------------------------------------------------------- FLORES

# Found by hand in shared/data/sib200 (dadelani/sib-200 @ 593cea88): (split, row index in the split file, index_id)
# of every row whose text in the language is also the text of another row (up to case, Unicode form, punctuation and
# spacing: bam test 22 differs from train 395 by "cƐn"/"cɛn", a final stop and a double space) with a different
# English sentence. Language -> groups; each group shares one source sentence. No English sentence is shared.
FLORES_CONFLICTS: dict[str, list[list[tuple[str, int, int]]]] = {
    "ary": [[("train", 105, 1787), ("train", 627, 1786)], [("train", 244, 365), ("test", 13, 1354)]],
    "bam": [[("train", 395, 1427), ("test", 22, 1428)], [("train", 638, 1183), ("validation", 54, 1181)]],
    "dyu": [[("train", 67, 637), ("test", 21, 1679)], [("train", 391, 565), ("train", 531, 862)]],
    "kbp": [[("train", 365, 663), ("test", 87, 662)]],
    "lin": [[("train", 165, 1297), ("train", 347, 1294)]],
    "lua": [[("train", 105, 1787), ("train", 627, 1786)], [("train", 121, 1930), ("test", 84, 1932)]],
}
RAW_SPLITS = {"train": "train", "validation": "dev", "test": "test"}  # mirror/hub split -> raw file


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _sib_rows(shared_data: Path, config: str) -> dict[str, list[dict[str, str]]]:
    return {split: _read_tsv(shared_data / "sib200" / config / f"{raw}.tsv") for split, raw in RAW_SPLITS.items()}


@pytest.fixture(scope="module")
def sib_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("artefacts_sib")
    configs = [language(iso3).codes["sib200"] for iso3 in FLORES_CONFLICTS] + ["eng_Latn", "hau_Latn"]
    import_raw(shared_data, out, datasets=["sib200"], configs=configs)
    return out


def _flores_configs(mirror: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        return {config.name: config for config in flores_mt.tasks()}


@pytest.mark.slow
@pytest.mark.shared_data
def test_flores_source_conflicts_found_from_the_real_rows(shared_data: Path) -> None:
    """The module's finder, run over every African language of the release, gives exactly the hand-found list."""
    english = {
        int(row["index_id"]): clean(row["text"]) for rows in _sib_rows(shared_data, "eng_Latn").values() for row in rows
    }
    found: dict[str, list[list[tuple[str, int, int]]]] = {}
    for lang in covered_by("sib200"):
        if lang.iso3 == "eng":
            continue
        groups = flores_mt.source_conflicts(_sib_rows(shared_data, lang.codes["sib200"]), english)
        if groups:
            found[lang.iso3] = [[(row.split, row.position, row.index_id) for row in group] for group in groups]
    assert found == FLORES_CONFLICTS
    evaluation = {iso3: [r for g in groups for r in g if r[0] == "test"] for iso3, groups in found.items()}
    assert {iso3: [r[1] for r in rows] for iso3, rows in evaluation.items()} == {
        "ary": [13], "bam": [22], "dyu": [21], "kbp": [87], "lin": [], "lua": [84]
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.shared_data
def test_flores_fewshot_pools_hold_no_row_whose_source_another_row_translates_differently(
    sib_mirror: Path, shared_data: Path
) -> None:
    """Every flores_mt task of the five languages (both directions, both forms): no few-shot example shares its
    source with an evaluated document (or another example) under another reference, nor (en2xx) its reference
    under another source; the pool is the train split less exactly the listed train rows."""
    from lighteval.tasks.lighteval_task import LightevalTask

    configs = _flores_configs(sib_mirror)
    for iso3, groups in FLORES_CONFLICTS.items():
        left_out = {row[1] for group in groups for row in group if row[0] == "train"}
        for direction in ("en2xx", "xx2en"):
            for form in ("ll", "gen"):
                name = f"flores_mt_{direction}_{form}_{iso3}"
                task = LightevalTask(configs[name])
                pool, docs = task.fewshot_docs(), task.eval_docs()
                assert len(pool) == 701 - len(left_out), name
                assert sorted(int(doc.id) for doc in pool) == sorted(set(range(701)) - left_out), name
                pairs = [(_loose(doc.query), _loose(doc.choices[0])) for doc in pool + docs]
                by_source: dict[str, set[str]] = {}
                by_reference: dict[str, set[str]] = {}
                for query, choice in pairs:
                    by_source.setdefault(query, set()).add(choice)
                    by_reference.setdefault(choice, set()).add(query)
                pool_pairs = {(_loose(doc.query), _loose(doc.choices[0])) for doc in pool}
                for query, choice in pool_pairs:
                    assert by_source[query] == {choice}, (name, query)
                    assert by_reference[choice] == {query}, (name, choice)
    # a language without conflicts keeps its whole train split
    assert len(LightevalTask(configs["flores_mt_xx2en_ll_hau"]).fewshot_docs()) == 701


# --------------------------------------------------------------------------------------------- Winogrande

# CF test documents whose text after the blank has no letter (punctuation only or nothing), per language, counted by
# hand in shared/data/bridging_the_gap/winogrande_s (test split): (punctuation only, nothing at all).
WINOGRANDE_NO_LETTER_AFTER_BLANK = {
    "afr": (22, 0), "amh": (0, 0), "bam": (3, 0), "ibo": (79, 4), "nso": (86, 1), "sna": (78, 0),
    "sot": (83, 0), "tsn": (73, 0), "tso": (71, 11), "xho": (75, 2), "zul": (77, 0), "eng": (72, 0),
}  # fmt: skip


def _loose(text: str) -> str:
    """Letters, marks and digits only, NFKC and case-folded: texts equal up to case, punctuation and spacing."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(character for character in folded if unicodedata.category(character)[0] in "LMN")


def _has_letter(text: str) -> bool:
    return any(character.isalpha() for character in text)


@pytest.fixture(scope="module")
def wino_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("artefacts_wino")
    import_raw(shared_data, out, datasets=["winogrande_afr"])
    return out


def _raw_test_rows(shared_data: Path, iso3: str) -> list[dict[str, str]]:
    code = bridging.ENGLISH_FROM if iso3 == "eng" else bridging.SUFFIX[iso3]
    path = shared_data / "bridging_the_gap" / "winogrande_s" / f"winogrande_{code}.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = [{key.strip(): value for key, value in row.items()} for row in csv.DictReader(handle)]
    return [row for row in rows if row["Split"].strip() == "test"]


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_winogrande_cf_document_scores_a_continuation_with_a_letter(wino_mirror: Path, shared_data: Path) -> None:
    """All 12 languages, every test row: every choice scored holds a letter; sentences with only punctuation after
    the blank are scored in full (option + rest after the text before the blank), and they are exactly the counted
    ones; every other document keeps its partial score (gold context = text before the blank + gold option); a
    sentence with nothing after the blank is skipped, as before."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from finetasks_afr.scoring.partial_scoring import SPECIFIC_KEY

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(wino_mirror))
        configs = {config.name: config for config in bridging.tasks()}
    counted: dict[str, tuple[int, int]] = {}
    for lang in covered_by("winogrande_afr"):
        name = f"winogrande_afr_{lang.iso3}_cf"
        docs = LightevalTask(configs[name]).eval_docs()
        rows = _raw_test_rows(shared_data, lang.iso3)
        field = "English" if lang.iso3 == "eng" else bridging.LANGUAGE_NAME[bridging.SUFFIX[lang.iso3]]
        by_position = {int(doc.id): doc for doc in docs}
        kinds: Counter[str] = Counter()
        skipped = 0
        for position, row in enumerate(rows):
            sentence = clean(row[f"{field} Sentence"])
            before, _, after = sentence.partition("_")
            if sentence.count("_") != 1 or not after.strip():  # not one blank, or nothing after it: skipped
                kinds["nothing"] += sentence.count("_") == 1
                skipped += 1
                assert position not in by_position, (name, position)
                continue
            doc = by_position[position]
            assert all(_has_letter(choice) for choice in doc.choices), (name, position, doc.choices)
            contexts = (doc.specific or {})[SPECIFIC_KEY]
            gold = doc.gold_index[0] if isinstance(doc.gold_index, list) else doc.gold_index
            option = clean(row[f"{field} Option {gold + 1}"])
            if _has_letter(after):  # partial scoring, unchanged
                assert contexts[gold] == doc.query == clean(before + option), (name, position)
                assert len(set(doc.choices)) == 1, (name, position)
                continue
            kinds["punctuation"] += 1  # full scoring: one context, the text before the blank
            assert len(set(contexts)) == 1 and contexts[gold] == doc.query, (name, position)
            assert clean(doc.query + doc.choices[gold]) == clean(before + option + after), (name, position)
        assert len(docs) == len(rows) - skipped, name
        counted[lang.iso3] = (kinds["punctuation"], kinds["nothing"])
    assert counted == WINOGRANDE_NO_LETTER_AFTER_BLANK
