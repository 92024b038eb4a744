"""MAFAND-MT: news translation between English or French and 21 African languages (masakhane/mafand).

Configs `en-<xx>` (15 languages) and `fr-<xx>` (bam, bbj, ewe, fon, mos, wol: French-paired, translated French
<-> X here, as AfroBench does); each row is `{"translation": {"en"|"fr": ..., "<xx>": ...}}` (a datasets
`Translation` feature whose keys are the two halves of the config name). Splits train/validation/test, except amh,
kin, nya, sna and xho, which have validation and test only; evaluation on test, few-shot examples from validation
for every language, as lm-evaluation-harness's AfroBench (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d
38394bafbb52b117163:lm_eval/tasks/afrobench/mafand/prompt_1/african-english/mafand#L6-L11, utils.py
`get_target` / `get_target_reverse`).

Tasks: `mafand_mt_{en2xx,xx2en}_{ll,gen}_<xx>` for the English-paired languages, `mafand_mt_{fr2xx,xx2fr}_{ll,gen}
_<xx>` for the French-paired ones (forms and metrics: :mod:`finetasks_afr.benchmarks.translation`).

Licence: CC-BY-NC-4.0 (dataset card): NON-COMMERCIAL use only.

Loading: the repository at its pinned revision 7028115028b104388af7ec2eb7b7888fc736a106 is a loading script
(`mafand.py`), which datasets>=4 refuses; the tasks read the hub's parquet export of it (revision
`refs/convert/parquet`, `<config>/<split>/*.parquet`, hub form `parquet-branch`), which is not a pinned commit.
That branch carries no README listing the configs, and datasets 5 turns such a tree into one `default` config, so
each task reads its config's folder (`data_dir=<config>`; :mod:`finetasks_afr.data.sources`, "Hub forms";
tests/data/test_published_layouts.py loads a replica of that layout). Generation size 512 tokens
(not measured on the references: no MAFAND rows are available offline; FLORES' longest sentence is 490 characters).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.translation import ENGLISH, FRENCH, Direction, pair_tasks, texts
from finetasks_afr.data.raw import RawImporter, RowError, Unit, Yielded, converted, lang_dirs, read_jsonl, str_field
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by

DATASET = "mafand"
PREFIX = "mafand_mt"
SCRIPT_REVISION = "7028115028b104388af7ec2eb7b7888fc736a106"
PARQUET_REVISION = "refs/convert/parquet"
ENGLISH_PAIRED = "amh hau ibo kin lug luo nya pcm sna swa tsn twi xho yor zul"
FRENCH_PAIRED = "bam bbj ewe fon mos wol"
NO_TRAIN = frozenset({"amh", "kin", "nya", "sna", "xho"})  # validation and test only (dataset card)
GENERATION_SIZE = 512


# raw release (masakhane-io/lafand-mt data/json_files/<pair>/{train,dev,test}.json) ------------------------------

_RAW_PAIR = re.compile(r"^(?P<pivot>en|fr)-(?P<own>[a-z]{3})$")
_RAW_SPLITS = {"train.json": "train", "dev.json": "validation", "test.json": "test"}


def _raw_units(root: Path) -> list[Unit]:
    """`<pair>/{train,dev,test}.json`: the folder is the hub config (`en-hau`, `fr-bam`), raw `dev` the hub
    `validation`; a split whose file is absent is not in the mirror (train files may be left out, and amh, kin,
    nya, sna, xho have none on the hub either)."""
    units = []
    for pair_dir in lang_dirs(root):
        match = _RAW_PAIR.match(pair_dir.name)
        if match is None:
            continue
        for file_name, split in _RAW_SPLITS.items():
            path = pair_dir / file_name
            if path.is_file():
                read = partial(_raw_rows, path, pair_dir.name, split, (match["pivot"], match["own"]))
                units.append(Unit(f"{DATASET}/{pair_dir.name}/{split}", read))
    return units


def _raw_rows(path: Path, config: str, split: str, keys: tuple[str, str]) -> Iterator[Yielded]:
    yield from converted(config, split, read_jsonl(path), lambda raw: _raw_row(raw, keys))


def _raw_row(raw: dict[str, Any], keys: tuple[str, str]) -> dict[str, Any]:
    """`{"translation": {<pivot>: ..., <xx>: ...}}` with exactly the two keys of the config name, both non-blank."""
    translation = raw.get("translation")
    if not isinstance(translation, dict):
        raise RowError("missing translation")
    if set(translation) != set(keys):
        raise RowError(f"translation keys {'/'.join(sorted(translation))}, not {'/'.join(keys)}")
    return {"translation": {key: str_field(translation, key) for key in keys}}


def _raw_features(config: str) -> Any:
    from datasets import Features, Translation

    return Features({"translation": Translation(languages=config.split("-"))})


SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="masakhane/mafand",
        revision=PARQUET_REVISION,
        splits=("train", "validation", "test"),
        codes={iso3: f"en-{iso3}" for iso3 in ENGLISH_PAIRED.split()}
        | {iso3: f"fr-{iso3}" for iso3 in FRENCH_PAIRED.split()},
        notes=f"Licence CC-BY-NC-4.0: non-commercial. Revision {SCRIPT_REVISION} is a loading script (refused by "
        "datasets>=4); read from its parquet export refs/convert/parquet (a moving ref, not a pin), laid out "
        "<config>/<split>/*.parquet without a README, so each config is read as its folder (data_dir=<config>: "
        "datasets sees one 'default' config there). amh, kin, nya, sna, xho have no train split.",
        hub_form="parquet-branch",
        raw=RawImporter("mafand", _raw_units, _raw_features),
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
