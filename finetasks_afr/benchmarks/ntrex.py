"""NTREX-128, African subset: news translation English <-> X (masakhane/ntrex_african).

One config per language, named by its FLORES-style code (`hau_Latn`, `mey_Arab`, `orm_Ethi`); each row holds the
English sentence in `sentence_eng_Latn` and the translation in `sentence_<config>`. A single split, `test`: the
few-shot examples come from it too, through the suite's sampler (a document is never among its own examples, nor
a same-text copy), as lm-evaluation-harness's AfroBench takes them from test
(EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/ntrex/prompt_1/
african-english/ntrex#L6-L10; fields from ntrex_mey_Arab-eng_Latn.yaml#L2-L4 and gen_utils.py#L41-L73).

Tasks: `ntrex_mt_{en2xx,xx2en}_{ll,gen}_<xx>` (:mod:`finetasks_afr.translation`). NTREX-128 was translated FROM
English; its authors recommend scoring the English-sourced direction only (paper abstract, quoted in AfroBench's
ntrex/README.md): xx2en tasks are built as AfroBench builds them, but en2xx is the direction the data supports.

Mapping: `mlg_Latn` (Malagasy, macrolanguage) is our Plateau Malagasy `plt`, as in FLORES; `orm_Ethi` is the
config's own name for Oromo (the script suffix is the repository's). Non-African configs are excluded. Licence not
verified offline (NTREX-128 upstream: CC-BY-SA-4.0). Unpinned. Generation size 512 tokens (not measured: no rows
offline).
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig

from finetasks_afr.languages import covered_by, flores_codes
from finetasks_afr.sources import DatasetSource
from finetasks_afr.translation import field_pair, pair_tasks

DATASET = "ntrex"
PREFIX = "ntrex_mt"
ENGLISH_FIELD = "sentence_eng_Latn"
GENERATION_SIZE = 512

_CODES = flores_codes(
    "afr_Latn amh_Ethi bem_Latn ewe_Latn hau_Latn ibo_Latn kin_Latn mey_Arab nde_Latn nso_Latn nya_Latn "
    "orm_Ethi shi_Arab sna_Latn som_Latn ssw_Latn swa_Latn tir_Ethi tsn_Latn ven_Latn wol_Latn xho_Latn "
    "yor_Latn zul_Latn"
) | {"plt": "mlg_Latn"}

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
