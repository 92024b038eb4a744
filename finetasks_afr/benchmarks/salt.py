"""SALT: translation English <-> seven languages of Uganda and East Africa (Sunbird/salt, config `text-all`).

One config holds every language: each row is one sentence in all of them (multi-way parallel), fields
`eng_source_text`, `eng_target_text` and `<xx>_text` for ach, ibo, lgg, lug, nyn, swa, teo. As
lm-evaluation-harness's AfroBench, English -> X reads `eng_source_text` and X -> English is scored against
`eng_target_text`; evaluation on `test`, few-shot examples from `dev`
(EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/salt/prompt_1/
salt#L5-L9; fields from salt_eng-teo.yaml#L2-L4 and salt_teo-eng.yaml#L2-L4).

Tasks: `salt_mt_{en2xx,xx2en}_{ll,gen}_<xx>` (:mod:`finetasks_afr.translation`); every task reads `text-all`
(the only config mirrored, `config_names`); a language's code here is the prefix of its field (`teo` in
`teo_text`), not a config.
Unpinned; licence not verified offline. Generation size 512 tokens (not measured: no rows offline).
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.languages import covered_by, same_codes
from finetasks_afr.sources import DatasetSource
from finetasks_afr.translation import field_pair, pair_tasks

DATASET = "salt"
PREFIX = "salt_mt"
CONFIG = "text-all"
LANGUAGES = ("ach", "ibo", "lgg", "lug", "nyn", "swa", "teo")
ENGLISH_SOURCE, ENGLISH_TARGET = "eng_source_text", "eng_target_text"
GENERATION_SIZE = 512

SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="Sunbird/salt",
        revision=None,
        splits=("train", "dev", "test"),
        codes=same_codes(" ".join(LANGUAGES)),  # the dataset's name for a language: its `<code>_text` field
        config_names=(CONFIG,),
        notes="Unpinned. Licence not verified. Multi-way parallel: one config (text-all) for every language; "
        "fields and splits from lm-evaluation-harness's AfroBench salt YAMLs.",
    ),
)


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for language in covered_by(DATASET):
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=CONFIG,
            language=language,
            pair=field_pair(f"{language.codes[DATASET]}_text", ENGLISH_SOURCE, ENGLISH_TARGET),
            evaluation_splits=("test",),
            few_shots_split="dev",
            hf_avail_splits=("train", "dev", "test"),
            generation_size=GENERATION_SIZE,
        )
    return configs
