"""NollySenti: binary sentiment of Nollywood movie reviews in English, Hausa, Igbo, Nigerian Pidgin, Yoruba (NLU).

The prompt names the task and the two sentiments (as lm-evaluation-harness's nollysenti prompts do); the
instruction and sentiment names are English in both prompt variants. English (config `en`) is evaluated too, so
each African language's gap to English can be read off the same family. The reviews of the other configs are
translations of English reviews (NollySenti paper; not checked offline): English is a reference point.

The label is read as a name (`positive` / `negative`, lm-evaluation-harness's doc_to_choice) or as an index into
them in that order (what lm-eval's doc_to_target would do with an integer); the card's label dtype was not read.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, family_tasks, label_index, required_text
from finetasks_afr.languages import covered_by
from finetasks_afr.sources import DatasetSource

SENTIMENTS = ("positive", "negative")  # lm-evaluation-harness order (prompt_1/nollysenti doc_to_choice)
INSTRUCTION = "Classify the sentiment of the movie review as one of: " + ", ".join(SENTIMENTS) + "."

SOURCES = (
    DatasetSource(
        key="nollysenti",
        hub_repo="Davlan/nollysenti",
        revision="af58a542bc063b219fee6157f0652353a647eecc",
        splits=("train", "validation", "test"),
        codes={"eng": "en", "hau": "ha", "ibo": "ig", "pcm": "pcm", "yor": "yo"},
        notes="Pinned (initial commit 924ee5de2d6b16cf37a6aa1907ae43eec6d9e473). Configs en/ha/ig/pcm/yo and "
        "fields `review`, `label` as lm-evaluation-harness's nollysenti YAMLs (dataset_name, doc_to_text, "
        "doc_to_target); label assumed a name (positive/negative), an integer read as an index in that order. "
        "Splits train/validation/test; few-shot from validation as lm-eval. The card itself was not read.",
        text_field=("review", "test"),
    ),
)


def adapter(line: dict) -> dict:
    return {
        "instruction": INSTRUCTION,
        "question": required_text(line, "review"),
        "choices": list(SENTIMENTS),
        "gold_idx": label_index(line["label"], SENTIMENTS),
    }


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
