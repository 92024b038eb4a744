"""NTREX-128, African subset: news translation English <-> X (masakhane/ntrex_african).

One config per language, named by its FLORES-style code (`hau_Latn`, `mey_Arab`, `orm_Ethi`); each row holds the
English sentence in `sentence_eng_Latn` and the translation in `sentence_<config>`. A single split, `test`: the
few-shot examples come from it too, through the suite's sampler (a document is never among its own examples, nor
a same-text copy), as lm-evaluation-harness's AfroBench takes them from test
(EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/ntrex/prompt_1/
african-english/ntrex#L6-L10; fields from ntrex_mey_Arab-eng_Latn.yaml#L2-L4 and gen_utils.py#L41-L73).

Tasks: `ntrex_mt_{en2xx,xx2en}_{ll,gen}_<xx>` (:mod:`finetasks_afr.benchmarks.translation`). NTREX-128 was translated
FROM English; its authors recommend scoring the English-sourced direction only (paper abstract, quoted in AfroBench's
ntrex/README.md): xx2en tasks are built as AfroBench builds them, but en2xx is the direction the data supports.

Mapping: `mlg_Latn` (Malagasy, macrolanguage) is our Plateau Malagasy `plt`, as in FLORES; `orm_Ethi` is the
config's own name for Oromo (the script suffix is the repository's). Non-African configs are excluded. Licence not
verified offline (NTREX-128 upstream: CC-BY-SA-4.0). Unpinned. Generation size 512 tokens (not measured: no rows
offline).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.benchmarks.translation import field_pair, pair_tasks
from finetasks_afr.data.raw import RawFileError, RawImporter, RowError, Unit, Yielded, read_lines, str_field
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, flores_codes

DATASET = "ntrex"
PREFIX = "ntrex_mt"
ENGLISH_FIELD = "sentence_eng_Latn"
GENERATION_SIZE = 512

_CODES = flores_codes(
    "afr_Latn amh_Ethi bem_Latn ewe_Latn hau_Latn ibo_Latn kin_Latn mey_Arab nde_Latn nso_Latn nya_Latn "
    "orm_Ethi shi_Arab sna_Latn som_Latn ssw_Latn swa_Latn tir_Ethi tsn_Latn ven_Latn wol_Latn xho_Latn "
    "yor_Latn zul_Latn"
) | {"plt": "mlg_Latn"}


# raw release (MicrosoftTranslator/NTREX NTREX-128/newstest2019-{src.eng,ref.<name>}.txt) ------------------------

RAW_SOURCE = "newstest2019-src.eng.txt"
_RAW_REFERENCE = re.compile(r"^newstest2019-ref\.(?P<name>[A-Za-z]+(?:-[A-Za-z]+)?)\.txt$")
RAW_NAME_EXCEPTIONS = {"sna_Latn": "sna-Latn"}
"""Hub config -> NTREX-128 file name where the file is not named by the config's language code alone. The
script suffix of a hub config is the repository's, not a fact about the text: `orm_Ethi` reads `ref.orm`, which is
Latin script (Qubee), as AfroBench's ntrex_orm_Ethi YAMLs read it; `mey_Arab` and `shi_Arab` are Arabic script
as named. The tasks read the hub config names, so the mirror keeps them."""


def raw_names() -> dict[str, str]:
    """NTREX-128 file name (`ref.<name>`) -> hub config of masakhane/ntrex_african (the suite's 25 African configs
    and the ones it excludes). A file named by no hub config (Pulaar `fuc`, and most of NTREX-128's 128) has no
    config to go to: its rows are skipped and counted."""
    configs = [*_CODES.values(), *SOURCES[0].excluded]
    return {RAW_NAME_EXCEPTIONS.get(config, config.split("_")[0]): config for config in configs}


def _raw_units(root: Path) -> list[Unit]:
    """One unit per reference file, each read beside the English source it is line-aligned with."""
    names = raw_names()
    units = []
    for path in sorted(root.glob("newstest2019-ref.*.txt")):
        match = _RAW_REFERENCE.match(path.name)
        if match is None:
            continue
        config = names.get(match["name"])
        label = f"{DATASET}/{config or match['name']}/test"
        units.append(Unit(label, partial(_raw_rows, root / RAW_SOURCE, path, match["name"], config)))
    return units


def _raw_rows(source: Path, reference: Path, name: str, config: str | None) -> Iterator[Yielded]:
    if not source.is_file():
        raise RawFileError(
            f"{source} not found: every NTREX-128 reference is paired line by line with this English source; "
            "copy it from the release beside the references"
        )
    english, references = read_lines(source), read_lines(reference)
    if len(english) != len(references):
        raise RawFileError(
            f"{reference}: {len(references)} lines, but the English source {source.name} has {len(english)}: the "
            "files are paired line by line, so a line added or lost would pair every later sentence with the wrong "
            "one; copy both files again from the release"
        )
    if config is None:
        reason = f"no config of masakhane/ntrex_african for NTREX-128's {name!r}"
        for _ in references:
            yield name, "test", reason
        return
    field = f"sentence_{config}"
    for line in zip(english, references, strict=True):
        row = dict(zip((ENGLISH_FIELD, field), line, strict=True))
        try:
            yield config, "test", {name: str_field(row, name) for name in row}
        except RowError as skip:  # a blank line: its partner is skipped with it, and no line shifts
            yield config, "test", str(skip)


def _raw_features(config: str) -> Any:
    from datasets import Features, Value

    return Features({ENGLISH_FIELD: Value("string"), f"sentence_{config}": Value("string")})


SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="masakhane/ntrex_african",
        revision=None,
        splits=("test",),
        codes=_CODES,
        excluded={
            "arb_Arab": "Modern Standard Arabic: not one of the suite's African varieties",
            "fra_Latn": "French: not African",
            "msa_Latn": "Malay: not African",
            "tam_Taml": "Tamil: not African",
            "tel_Telu": "Telugu: not African",
            "ton_Latn": "Tongan: not African",
            "urd_Arab": "Urdu: not African",
        },
        notes="Unpinned. Licence not verified (NTREX-128 upstream CC-BY-SA-4.0). Single test split: few-shot "
        "examples are drawn from test. Configs and fields from lm-evaluation-harness's AfroBench ntrex YAMLs; "
        "mlg_Latn mapped to plt.",
        raw=RawImporter("ntrex/NTREX-128", _raw_units, _raw_features),
    ),
)


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for language in covered_by(DATASET):
        configs += pair_tasks(
            prefix=PREFIX,
            dataset=DATASET,
            subset=language.codes[DATASET],
            language=language,
            pair=field_pair(f"sentence_{language.codes[DATASET]}", ENGLISH_FIELD),
            evaluation_splits=("test",),
            few_shots_split="test",
            hf_avail_splits=("test",),
            generation_size=GENERATION_SIZE,
        )
    return configs
