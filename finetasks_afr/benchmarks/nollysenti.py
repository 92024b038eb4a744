"""NollySenti: binary sentiment of Nollywood movie reviews in English, Hausa, Igbo, Nigerian Pidgin, Yoruba (NLU).

The prompt names the task and the two sentiments (as lm-evaluation-harness's nollysenti prompts do); the
instruction and sentiment names are English in both prompt variants. English (config `en`) is evaluated too, so
each African language's gap to English can be read off the same family. The reviews of the other configs are
translations of English reviews (NollySenti paper; not checked offline): English is a reference point.

The label is read as a name (`positive` / `negative`, lm-evaluation-harness's doc_to_choice) or as an index into
them in that order (what lm-eval's doc_to_target would do with an integer); the card's label dtype was not read.

Loading: at the pinned revision af58a542 (the second of three uploads of the loading script) the hub repository
`Davlan/nollysenti` holds only `nollysenti.py` and README.md (hub form `script`): datasets >= 4 refuses scripts, so
no task loads from the hub. Loading a task without a mirror raises `ScriptOnlyDatasetError` before any hub request,
naming the working alternative: a mirror built by `finetasks-afr data import-raw` from the raw release
(IyanuSh/NollySenti on GitHub, CC-BY-4.0); `finetasks-afr data mirror` refuses the key with the same message. With
the mirror configured the tasks read it. lm-evaluation-harness issue #3171 reports `Davlan/nollysenti` loading under
datasets 5.0 in July 2026, so a later hub revision may hold data files; no full commit id of it was seen offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, family_tasks, labelled_row, required_text
from finetasks_afr.data.raw import RawImporter, RowError, str_field, string_features, tsv_units
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by

SENTIMENTS = ("positive", "negative")  # lm-evaluation-harness order (prompt_1/nollysenti doc_to_choice)
INSTRUCTION = "Classify the sentiment of the movie review as one of: " + ", ".join(SENTIMENTS) + "."


# raw release (IyanuSh/NollySenti data/<lang>/{train,dev,test}.tsv) ---------------------------------------------


def _raw_columns(lang: str) -> tuple[str, ...]:
    """The header of a raw file: `<lang>_review` (the folder's name: en, ha, ig, pcm, yo) and `sentiment`."""
    return (f"{lang}_review", "sentiment")


def _raw_row(raw: dict[str, str], path: Path) -> dict[str, Any]:
    """A raw row as the hub config's row {review, label}: the folder name is the hub config (en/ha/ig/pcm/yo),
    `sentiment` (positive/negative) the label name. The files are pandas-written TSV: a review holding a double
    quote is wrapped in quotes with its own quotes doubled (197 of them), which the shared TSV reader undoes, as
    pandas does; splitting on the tab alone would keep `"...""93 Days""..."`. Every review is one line, so a row read
    over several lines (a quote left open) is refused as a bad file (`single_line`), not counted as one skip."""
    review = str_field(raw, _raw_columns(path.parent.name)[0]) or ""
    sentiment = (str_field(raw, "sentiment") or "").strip().lower()
    if sentiment not in SENTIMENTS:
        raise RowError("bad sentiment")
    return {"review": review, "label": sentiment}


SOURCES = (
    DatasetSource(
        key="nollysenti",
        hub_repo="Davlan/nollysenti",
        revision="af58a542bc063b219fee6157f0652353a647eecc",
        splits=("train", "validation", "test"),
        codes={"eng": "en", "hau": "ha", "ibo": "ig", "pcm": "pcm", "yor": "yo"},
        notes="Pinned to af58a542, the second of three uploads of the loading script nollysenti.py (the first, "
        "924ee5de2d6b16cf37a6aa1907ae43eec6d9e473, is the repository's initial commit); at the pin the repository "
        "holds only nollysenti.py and README.md (hub form 'script': datasets>=4 cannot load it; build the mirror from "
        "the raw release with `data import-raw`). Configs en/ha/ig/pcm/yo and "
        "fields `review`, `label` as lm-evaluation-harness's nollysenti YAMLs (dataset_name, doc_to_text, "
        "doc_to_target); label assumed a name (positive/negative), an integer read as an index in that order. "
        "Splits train/validation/test; few-shot from validation as lm-eval. The card itself was not read.",
        text_field=("review", "test"),
        hub_form="script",
        raw_release="IyanuSh/NollySenti on GitHub, CC-BY-4.0",
        raw=RawImporter(
            "nollysenti",
            tsv_units("nollysenti", _raw_row, _raw_columns, single_line=True),
            string_features("review", "label"),
        ),
    ),
)


def adapter(line: dict) -> dict:
    return labelled_row(INSTRUCTION, required_text(line, "review"), SENTIMENTS, line["label"])


FAMILY = Family(
    benchmark="nollysenti",
    dataset="nollysenti",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(SENTIMENTS),
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("train", "validation", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("nollysenti"))
