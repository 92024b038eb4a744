"""SIB-200: topic classification of FLORES sentences, 7 topics, every African variant (NLU).

The prompt names the task and the 7 topics (as lm-evaluation-harness's sib200 prompt does); instruction and
topic names are English in both prompt variants (no human translations of them exist here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, labelled_row
from finetasks_afr.data.raw import RawImporter, RowError, read_text, str_field, tsv_units
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, flores_codes

TOPICS = ("science/technology", "travel", "politics", "sports", "health", "entertainment", "geography")
INSTRUCTION = "Classify the topic of the sentence as one of: " + ", ".join(TOPICS) + "."

_LABELS_TXT: dict[Path, frozenset[str] | None] = {}


def _release_labels(folder: Path) -> frozenset[str] | None:
    """The labels.txt a raw language folder may carry (read once per folder)."""
    if folder not in _LABELS_TXT:
        labels = folder / "labels.txt"
        _LABELS_TXT[folder] = (
            frozenset(line.strip() for line in read_text(labels).splitlines() if line.strip())
            if labels.is_file()
            else None
        )
    return _LABELS_TXT[folder]


def _raw_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    index = (raw.get("index_id") or "").strip()
    if not index.lstrip("-").isdigit():
        raise RowError("bad index_id")
    category = (str_field(raw, "category") or "").strip()
    labels = _release_labels(path.parent)
    if labels is not None and category not in labels:
        raise RowError("bad category")
    return {"index_id": int(index), "category": category, "text": str_field(raw, "text")}


def _raw_features(config: str) -> Any:
    from datasets import Features, Value

    return Features({"index_id": Value("int64"), "category": Value("string"), "text": Value("string")})


SOURCES = (
    DatasetSource(
        key="sib200",
        hub_repo="Davlan/sib200",
        revision=None,
        splits=("train", "validation", "test"),
        # hub-datasets.md 7a (53) + tsn_Latn (in shared/data/sib200, missing from lm-eval's list) + English.
        codes=flores_codes(
            "aeb_Arab afr_Latn aka_Latn amh_Ethi ary_Arab arz_Arab bam_Latn bem_Latn cjk_Latn dik_Latn "
            "dyu_Latn ewe_Latn fon_Latn fuv_Latn gaz_Latn hau_Latn ibo_Latn kab_Latn kam_Latn kbp_Latn "
            "kea_Latn kik_Latn kin_Latn kmb_Latn knc_Latn kon_Latn lin_Latn lua_Latn lug_Latn luo_Latn "
            "mos_Latn nso_Latn nus_Latn nya_Latn plt_Latn run_Latn sag_Latn sna_Latn som_Latn sot_Latn "
            "ssw_Latn swh_Latn taq_Latn tir_Ethi tsn_Latn tso_Latn tum_Latn twi_Latn tzm_Tfng umb_Latn "
            "wol_Latn xho_Latn yor_Latn zul_Latn eng_Latn"
        ),
        excluded={
            "fra_Latn": "French: not African and not the English reference",
            "por_Latn": "Portuguese: not African and not the English reference",
            "knc_Arab": "second script of Central Kanuri; knc_Latn is the mapped variant (one code per language)",
            "taq_Tfng": "second script of Tamasheq; taq_Latn is the mapped variant (one code per language)",
        },
        notes="Unpinned. Raw dev.tsv maps to hub `validation` (per lm-eval/lighteval usage); whether the hub "
        "repo is a parquet/data-files repo or a loading script (refused by datasets>=4) is unverified.",
        text_field=("text", "test"),
        raw=RawImporter("sib200", tsv_units("sib200", _raw_row, ("index_id", "category", "text")), _raw_features),
    ),
)


def adapter(line: dict) -> dict:
    return labelled_row(INSTRUCTION, clean(line["text"]), TOPICS, line["category"])


FAMILY = Family(
    benchmark="sib200",
    dataset="sib200",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(TOPICS),
    evaluation_splits=("test",),
    few_shots_split="train",
    hf_avail_splits=("train", "validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("sib200"))
