"""SALT: translation English <-> seven languages of Uganda and East Africa (Sunbird/salt, config `text-all`).

One config holds every language: each row is one sentence in all of them (multi-way parallel), fields
`eng_source_text`, `eng_target_text` and `<xx>_text` for ach, ibo, lgg, lug, nyn, swa, teo. As
lm-evaluation-harness's AfroBench, English -> X reads `eng_source_text` and X -> English is scored against
`eng_target_text`; evaluation on `test`, few-shot examples from `dev`
(EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/salt/prompt_1/
salt#L5-L9; fields from salt_eng-teo.yaml#L2-L4 and salt_teo-eng.yaml#L2-L4).

Tasks: `salt_mt_{en2xx,xx2en}_{ll,gen}_<xx>` (:mod:`finetasks_afr.benchmarks.translation`); every task reads `text-all`
(the only config mirrored, `config_names`); a language's code here is the prefix of its field (`teo` in
`teo_text`), not a config.

Unpinned: no full commit id of `Sunbird/salt` was found offline, and which columns `text-all` has depends on the
revision (the English ones in particular). A task whose rows lack a column it reads does not skip them one by one:
it stops with :class:`SaltColumnsError`, which names the missing `<lang>_text` / `eng_*_text` column, the columns
the rows have and where they were read, and the fix (pin a revision that has them, or mirror one). The repository
is gated on the hub: accept its terms and log in (`hf auth login`) before a hub load or `data mirror`.
Licence not verified offline. Generation size 512 tokens (not measured: no rows offline).
"""

from __future__ import annotations

from collections.abc import Callable

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.translation import ENGLISH, Direction, field_pair, pair_tasks
from finetasks_afr.data.sources import DatasetSource, hf_location
from finetasks_afr.prompts.languages import covered_by, same_codes

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
        notes="Unpinned (no full commit id seen offline); the columns of text-all depend on the revision, so a "
        "task whose rows lack its <lang>_text or eng_source_text/eng_target_text column stops with "
        "SaltColumnsError naming it. Gated on the hub (log in first). Licence not verified. Multi-way parallel: "
        "one config (text-all) for every language; fields and splits from lm-evaluation-harness's AfroBench salt "
        "YAMLs.",
    ),
)


class SaltColumnsError(RuntimeError):
    """SALT rows without a column a task reads (a revision of `text-all` with other columns); not a skipped row: the
    message names the column and the fix."""


def columns_for(code: str, direction: Direction) -> tuple[str, str]:
    """The (source, reference) columns a direction reads: English -> X reads `eng_source_text` and `<x>_text`;
    X -> English reads `<x>_text` and is scored against `eng_target_text` (AfroBench's choice)."""
    own = f"{code}_text"
    return (ENGLISH_SOURCE, own) if direction.source.iso3 == ENGLISH.iso3 else (own, ENGLISH_TARGET)


def checked_pair(code: str, where: str) -> Callable[[Direction], Callable[[dict], tuple[str, str]]]:
    """`field_pair` for language `code`, refusing rows that lack a column the direction reads (SaltColumnsError),
    so a revision without the column stops the task by name instead of skipping every row as unreadable."""
    pairs = field_pair(f"{code}_text", ENGLISH_SOURCE, ENGLISH_TARGET)

    def for_direction(direction: Direction) -> Callable[[dict], tuple[str, str]]:
        pair = pairs(direction)
        needed = columns_for(code, direction)

        def checked(line: dict) -> tuple[str, str]:
            missing = [column for column in needed if column not in line]
            if missing:
                raise SaltColumnsError(
                    f"SALT ({CONFIG} at {where}) has no column {missing[0]!r}, which {direction.code} translation "
                    f"of {code} reads (the rows have: {', '.join(sorted(line))}). Which columns text-all has depends "
                    "on the revision; fix: set the revision of Sunbird/salt in finetasks_afr/benchmarks/salt.py "
                    f"(DatasetSource.revision) to a commit whose text-all has {' and '.join(needed)}, or build a "
                    "mirror (`finetasks-afr data mirror -d salt`) from such a revision"
                )
            return pair(line)

        return checked

    return for_direction


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    repo, revision = hf_location(DATASET, CONFIG)
    where = f"{repo}@{revision}" if revision else f"{repo} (unpinned)" if repo == SOURCES[0].hub_repo else repo
    for language in covered_by(DATASET):
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=CONFIG,
            language=language,
            pair=checked_pair(language.codes[DATASET], where),
            evaluation_splits=("test",),
            few_shots_split="dev",
            hf_avail_splits=("train", "dev", "test"),
            generation_size=GENERATION_SIZE,
        )
    return configs
