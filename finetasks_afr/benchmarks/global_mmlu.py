"""Global-MMLU: MMLU translated into 42 languages, nine of them African, with English alongside (GK).

Configs, fields and splits as lm-evaluation-harness's `global_mmlu_full_<lang>` tasks read them: config = the
language's two-letter code, fields `question`, `option_a`-`option_d`, `answer` (a letter), `subject`; test split
evaluated, few-shot examples from `dev` (285 rows, 5 per subject). One task per language covers all 57 subjects, as
AfriMMLU's tasks do. English (`en`) is built too, so the gap between each African language and the same questions in
English can be computed.

lighteval's own `global_mmlu` tasks are not a guide to which languages exist: their list names Zulu, which the
dataset does not publish, and omits Hausa, Igbo, Malagasy, Chichewa, Shona and Somali, which it does. The languages
here are the dataset's published configs (the hub tree at the pinned revision, and lm-eval's `full/` folders).

A row with an empty or missing option is skipped and counted (lighteval filters such rows out silently with its
`hf_filter`). The repository moved from CohereForAI/ to CohereLabs/ (the hub redirects the old name, which lm-eval
and lighteval still use); the current name is the one read here, at the same pinned commit.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, lettered_row
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by

HUB_REPO = "CohereLabs/Global-MMLU"
REVISION = "c17ce281eb44393304c86bd291c9a7d8203a212f"
OPTION_FIELDS = ("option_a", "option_b", "option_c", "option_d")
# ISO 639-3 -> the dataset's config. Malagasy is published as `mg` (the macrolanguage); its text is the standard
# (Merina-based) Malagasy, which this suite files under Plateau Malagasy `plt`, as Belebele's plt_Latn.
CODES = {
    "amh": "am",
    "eng": "en",
    "hau": "ha",
    "ibo": "ig",
    "nya": "ny",
    "plt": "mg",
    "sna": "sn",
    "som": "so",
    "swa": "sw",
    "yor": "yo",
}

SOURCES = (
    DatasetSource(
        key="global_mmlu",
        hub_repo=HUB_REPO,
        revision=REVISION,
        splits=("dev", "test"),
        codes=CODES,
        config_names=tuple(CODES.values()),
        notes="Pinned to c17ce281 ('Update README.md'; every config's last change before it is 'uploading dev "
        "split data for <lang>', so dev and test exist there); main has moved on (ba1ad5e). Repository renamed "
        "CohereForAI/Global-MMLU -> CohereLabs/Global-MMLU (old name redirected). Fields from the card's "
        "dataset_info (question, option_a-d, answer letter, subject, ...), splits dev (285) and test (14,042). "
        "The other 32 non-African configs are not used. `mg` is filed as plt (Plateau Malagasy); whether the "
        "translation follows a regional variety was not checked. No raw source here: hub only.",
    ),
)


def adapter(line: dict) -> dict:
    """One Global-MMLU row; an empty option (lighteval drops those rows) makes the row skipped and counted."""
    choices = [clean(line[field] or "") for field in OPTION_FIELDS]
    if not all(choices):
        raise ValueError("an option is empty")
    return lettered_row(clean(line["question"]), choices, line["answer"])


FAMILY = Family(
    benchmark="global_mmlu",
    dataset="global_mmlu",
    category="GK",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=0.25,
    evaluation_splits=("test",),
    few_shots_split="dev",
    hf_avail_splits=("dev", "test"),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("global_mmlu"))
