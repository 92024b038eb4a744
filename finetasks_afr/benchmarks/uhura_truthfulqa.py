"""Uhura-TruthfulQA: TruthfulQA's MC1 questions translated by people into six African languages, plus English (GK).

Configs `<xx>_multiple_choice` (am, en, ha, nso, sw, yo, zu) with splits `train` (a few rows: few-shot examples)
and `test`, as the hub's parquet conversion lists them; rows in TruthfulQA's `multiple_choice` schema: `question`,
`mc1_targets` and `mc2_targets`, each `{choices: [str], labels: [int]}`. Only MC1 is built: exactly one label is 1,
so it is a plain multiple-choice item that lighteval's templates express in every formulation (MC2, the probability
mass over several true answers, is not an accuracy over one gold answer).

Category GK rather than RES: an item asks for a fact that a popular misconception contradicts, and no inference
over given premises is needed, as lighteval tags TruthfulQA ("factuality") and the Uhura paper describes it (a
truthfulness benchmark on health, law, finance and politics).

Option order. TruthfulQA's MC1 lists the correct answer first (lm-evaluation-harness's truthfulqa_mc1 task is
`doc_to_target: 0`), so in letter formulations every gold answer, and every few-shot example's answer, would be "A",
which a model can learn from the examples without reading the question. The options are therefore put in a fixed
order per question: a permutation seeded by the SHA-256 of the question text (not Python's `hash()`), the same in
every run and process whatever the row's position. The gold index follows the correct option; CF
scores the option texts and is unaffected by the order. lighteval's `mlmm_truthfulqa` keeps the published order.

Random baseline. MC1 items have a variable number of options, so chance is the mean of 1/k over the evaluated rows,
which cannot be read offline. TruthfulQA's authors describe MC1 as one correct answer with 4-5 incorrect ones (k = 5
or 6, chance 1/6 to 1/5); the baseline here is 1/5, the upper end, so that "above chance" is never claimed too
easily. The number of options in the Uhura files themselves is unverified.

Loading at the pin (1867a893, 'Upload 9 files', the last data upload): the files are
`<xx>_multiple_choice_{train,test}.json`, but English's are `en_multiple_choice_{train,test}.jsonl`, while the card
(README YAML `configs:`) of that commit lists `.json` for English too, so `load_dataset(..., "en_multiple_choice")`
at the pin fails ("Unable to find ... en_multiple_choice_train.json"). The source declares English's real files
(`DatasetSource.data_files`), which the suite's loader passes as `data_files` for that config only
(:mod:`finetasks_afr.data.sources`, "Hub forms"; tests/data/test_published_layouts.py loads a replica of that
commit). The pin stays: it is the last data upload seen, and no later commit with a corrected card was seen offline.

Licence: the card says MIT now, but hub pages captured in September 2024, around the pinned upload, showed
cc-by-nc-4.0, most likely the card of the pinned commit: treat it as POSSIBLY NON-COMMERCIAL until that card is read.

Unverified offline: the exact JSON schema of the files at the pinned revision (the field names come from TruthfulQA
and from third-party code that reads these configs as `record["mc1_targets"]["choices"/"labels"]`), and how many
rows `train` holds per language (at least 5 are needed for 5-shot prompts).
"""

from __future__ import annotations

import hashlib
import random

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by

HUB_REPO = "masakhane/uhura-truthfulqa"
REVISION = "1867a89351420f53688283fdb2100b93c5166c7c"
CODES = {
    "amh": "am_multiple_choice",
    "eng": "en_multiple_choice",
    "hau": "ha_multiple_choice",
    "nso": "nso_multiple_choice",
    "swa": "sw_multiple_choice",
    "yor": "yo_multiple_choice",
    "zul": "zu_multiple_choice",
}
MC1_BASELINE = 0.2  # 1/5: see the module docstring
ENGLISH_DATA_FILES = {"train": "en_multiple_choice_train.jsonl", "test": "en_multiple_choice_test.jsonl"}
"""English's files at the pin (`.jsonl`; the card of that commit lists `.json`)."""

SOURCES = (
    DatasetSource(
        key="uhura_truthfulqa",
        hub_repo=HUB_REPO,
        revision=REVISION,
        splits=("train", "test"),
        codes=CODES,
        config_names=tuple(CODES.values()),
        excluded={
            f"{code}_generation": "generation configs (open answers judged by a model): no log-likelihood task"
            for code in ("am", "en", "ha", "nso", "sw", "yo", "zu")
        },
        data_files={"en_multiple_choice": ENGLISH_DATA_FILES},
        notes="Pinned to 1867a89 ('Upload 9 files', the last data upload: <xx>_multiple_choice_{train,test}.json, "
        "English as .jsonl while the card of that commit lists .json for English too: English is read from its "
        ".jsonl files, declared in data_files). Config names and splits from the hub's parquet conversion "
        "(refs/convert/parquet: "
        "<xx>_multiple_choice/{train,test}); the row schema (question, mc1_targets {choices, labels}, mc2_targets) "
        "is TruthfulQA's and third-party code's reading of these configs, not read from the card: unverified. "
        "Row counts of train unverified. Licence: POSSIBLY NON-COMMERCIAL: the card says MIT now, but hub pages "
        "seen in Sep 2024, around the pinned upload, showed cc-by-nc-4.0 (most likely the card at the pin; "
        "unverified): treat as non-commercial. Options reordered per question (SHA-256 of the question) so the "
        "gold is not always A. "
        "No raw source here: hub only.",
    ),
)


def _permutation(question: str, n: int) -> list[int]:
    """A fixed order of `n` options for this question: seeded by SHA-256 of its text, never by position or hash()."""
    seed = int.from_bytes(hashlib.sha256(question.encode("utf-8")).digest()[:8], "big")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def adapter(line: dict) -> dict:
    """MC1: the options of `mc1_targets` in a fixed per-question order; exactly one label must be 1."""
    targets = line["mc1_targets"]
    choices = [clean(choice) for choice in targets["choices"]]
    labels = [int(label) for label in targets["labels"]]
    if len(choices) != len(labels) or len(choices) < 2:
        raise ValueError(f"mc1_targets has {len(choices)} choices and {len(labels)} labels")
    if sorted(labels) != [0] * (len(labels) - 1) + [1]:
        raise ValueError(f"mc1_targets labels {labels} do not mark exactly one correct option")
    if not all(choices):
        raise ValueError("an option is empty")
    question = clean(line["question"])
    order = _permutation(question, len(choices))
    return {
        "question": question,
        "choices": [choices[i] for i in order],
        "gold_idx": order.index(labels.index(1)),
    }


FAMILY = Family(
    benchmark="uhura_truthfulqa",
    dataset="uhura_truthfulqa",
    category="GK",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=MC1_BASELINE,
    evaluation_splits=("test",),
    few_shots_split="train",
    hf_avail_splits=("train", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("uhura_truthfulqa"))
