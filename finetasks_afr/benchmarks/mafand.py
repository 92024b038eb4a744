"""MAFAND-MT: news translation between English or French and 21 African languages (masakhane/mafand).

Configs `en-<xx>` (15 languages) and `fr-<xx>` (bam, bbj, ewe, fon, mos, wol: French-paired, translated French
<-> X here, as AfroBench does); each row is `{"translation": {"en"|"fr": ..., "<xx>": ...}}` (a datasets
`Translation` feature whose keys are the two halves of the config name). Splits train/validation/test, except amh,
kin, nya, sna and xho, which have validation and test only; evaluation on test, few-shot examples from validation
for every language, as lm-evaluation-harness's AfroBench (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d
38394bafbb52b117163:lm_eval/tasks/afrobench/mafand/prompt_1/african-english/mafand#L6-L11, utils.py
`get_target` / `get_target_reverse`).

Tasks: `mafand_mt_{en2xx,xx2en}_{ll,gen}_<xx>` for the English-paired languages, `mafand_mt_{fr2xx,xx2fr}_{ll,gen}
_<xx>` for the French-paired ones (forms and metrics: :mod:`finetasks_afr.translation`).

Licence: CC-BY-NC-4.0 (dataset card): NON-COMMERCIAL use only.

Loading: the repository at its pinned revision 7028115028b104388af7ec2eb7b7888fc736a106 is a loading script
(`mafand.py`), which datasets>=4 refuses; the tasks read the hub's parquet export of it (revision
`refs/convert/parquet`, `<config>/<split>/*.parquet`), which is not a pinned commit. Whether datasets resolves the
config names on that branch (it carries no README listing them) was not verifiable offline; if it does not, build a
mirror (`finetasks-afr data mirror`) or load with datasets<4 at the pinned revision. Generation size 512 tokens
(not measured on the references: no MAFAND rows are available offline; FLORES' longest sentence is 490 characters).
"""

from __future__ import annotations

from collections.abc import Callable

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.languages import AfricanLanguage, covered_by
from finetasks_afr.sources import DatasetSource
from finetasks_afr.translation import ENGLISH, FRENCH, Direction, pair_tasks, texts

DATASET = "mafand"
PREFIX = "mafand_mt"
SCRIPT_REVISION = "7028115028b104388af7ec2eb7b7888fc736a106"
PARQUET_REVISION = "refs/convert/parquet"
ENGLISH_PAIRED = "amh hau ibo kin lug luo nya pcm sna swa tsn twi xho yor zul"
FRENCH_PAIRED = "bam bbj ewe fon mos wol"
NO_TRAIN = frozenset({"amh", "kin", "nya", "sna", "xho"})  # validation and test only (dataset card)
GENERATION_SIZE = 512

SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="masakhane/mafand",
        revision=PARQUET_REVISION,
        splits=("train", "validation", "test"),
        codes={iso3: f"en-{iso3}" for iso3 in ENGLISH_PAIRED.split()}
        | {iso3: f"fr-{iso3}" for iso3 in FRENCH_PAIRED.split()},
        notes=f"Licence CC-BY-NC-4.0: non-commercial. Revision {SCRIPT_REVISION} is a loading script (refused by "
        "datasets>=4); read from its parquet export refs/convert/parquet (a moving ref, not a pin; config-name "
        "resolution on that branch unverified offline). amh, kin, nya, sna, xho have no train split.",
    ),
)


def pivot_of(language: AfricanLanguage) -> str:
    """The translation key of the language's partner: "en" or "fr" (the first half of its config name)."""
    return language.codes[DATASET].split("-", 1)[0]


def pair_for(language: AfricanLanguage) -> Callable[[Direction], Callable[[dict], tuple[str, str]]]:
    """Row -> (source, reference): `translation[<pivot>]` and `translation[<xx>]` in the direction's order."""
    pivot, own = language.codes[DATASET].split("-", 1)

    def for_direction(direction: Direction) -> Callable[[dict], tuple[str, str]]:
        def pair(line: dict) -> tuple[str, str]:
            translation = line["translation"]
            if direction.target.iso3 == language.iso3:
                return texts(translation[pivot], translation[own])
            return texts(translation[own], translation[pivot])

        return pair

    return for_direction


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for language in covered_by(DATASET):
        splits = ("validation", "test") if language.iso3 in NO_TRAIN else ("train", "validation", "test")
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=language.codes[DATASET],
            language=language,
            pivot=ENGLISH if pivot_of(language) == "en" else FRENCH,
            pair=pair_for(language),
            evaluation_splits=("test",),
            few_shots_split="validation",
            hf_avail_splits=splits,
            generation_size=GENERATION_SIZE,
        )
    return configs
