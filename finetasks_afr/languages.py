"""Every language our African benchmarks cover, with each dataset's own code for it.

One :class:`AfricanLanguage` per ISO 639-3 code (the code our task names use). ``codes`` maps a dataset key
(one of :data:`DATASETS`) to that dataset's own name for the language: a hub config name (``hau``,
``swh_Latn``, ``yo_multiple_choice``) or, for the Bridging-the-Gap files, the file suffix (``zu``).

The per-dataset tables below (:data:`DATASET_CODES`) are the single source of truth; they follow
``shared/notes/hub-datasets.md`` and the folder names in ``shared/data``. Codes deliberately left out of a
dataset (non-African languages other than English, and a second script of a language already mapped) are
listed, with the reason, in :data:`EXCLUDED_CONFIGS`.

Oddities to remember:

- Oromo is ``orm`` here and in IrokoBench/MasakhaNEWS/AfriSenti, ``gaz_Latn`` in FLORES-based datasets, and
  lighteval's member is ``Language.WEST_CENTRAL_OROMO`` (value ``"gaz"``): there is no ``Language.OROMO``.
- Swahili is ``swa`` here, ``swh_Latn`` in FLORES-based datasets, ``sw_multiple_choice`` in Uhura.
- Luganda is ``Language.GANDA``, Sesotho ``Language.SOUTHERN_SOTHO``, Sepedi ``Language.NORTHERN_SOTHO``.
- Nigerian Pidgin (``pcm``), Vai (``vai``) and Algerian Arabic (``arq``) have no lighteval member: only
  English-word prompts can be built for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from lighteval.utils.language import Language


@dataclass(frozen=True)
class AfricanLanguage:
    """One language: identity, classification, lighteval member, and its code in each dataset."""

    iso3: str  # ISO 639-3, as in our task names ("yor"; Oromo "orm", Swahili "swa")
    name: str  # English name ("Yoruba")
    script: str  # ISO 15924 code of the script the datasets use ("Latn", "Ethi", "Arab", "Tfng")
    family: str  # "Niger-Congo (Volta-Niger)", "Afro-Asiatic (Chadic)", ...
    lighteval: Language | None  # lighteval's Language member; None when lighteval has none
    codes: Mapping[str, str] = field(hash=False)  # dataset key -> that dataset's code for this language


# (iso3, name, script, family, lighteval member)
_INFO: tuple[tuple[str, str, str, str, Language | None], ...] = (
    ("aeb", "Tunisian Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.TUNISIAN_ARABIC),
    ("afr", "Afrikaans", "Latn", "Indo-European (Germanic)", Language.AFRIKAANS),
    ("aka", "Akan", "Latn", "Niger-Congo (Kwa)", Language.AKAN),
    ("amh", "Amharic", "Ethi", "Afro-Asiatic (Semitic)", Language.AMHARIC),
    ("arq", "Algerian Arabic", "Arab", "Afro-Asiatic (Semitic)", None),
    ("ary", "Moroccan Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.MOROCCAN_ARABIC),
    ("arz", "Egyptian Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.EGYPTIAN_ARABIC),
    ("bam", "Bambara", "Latn", "Niger-Congo (Mande)", Language.BAMBARA),
    ("bem", "Bemba", "Latn", "Niger-Congo (Bantu)", Language.BEMBA),
    ("cjk", "Chokwe", "Latn", "Niger-Congo (Bantu)", Language.CHOKWE),
    ("dik", "Southwestern Dinka", "Latn", "Nilo-Saharan (Nilotic)", Language.SOUTHWESTERN_DINKA),
    ("dyu", "Dyula", "Latn", "Niger-Congo (Mande)", Language.DYULA),
    ("eng", "English", "Latn", "Indo-European (Germanic)", Language.ENGLISH),
    ("ewe", "Ewe", "Latn", "Niger-Congo (Kwa)", Language.EWE),
    ("fon", "Fon", "Latn", "Niger-Congo (Kwa)", Language.FON),
    ("fuv", "Nigerian Fulfulde", "Latn", "Niger-Congo (Atlantic)", Language.NIGERIAN_FULFULDE),
    ("hau", "Hausa", "Latn", "Afro-Asiatic (Chadic)", Language.HAUSA),
    ("ibo", "Igbo", "Latn", "Niger-Congo (Volta-Niger)", Language.IGBO),
    ("kab", "Kabyle", "Latn", "Afro-Asiatic (Berber)", Language.KABYLE),
    ("kam", "Kamba", "Latn", "Niger-Congo (Bantu)", Language.KAMBA),
    ("kbp", "Kabiye", "Latn", "Niger-Congo (Gur)", Language.KABIYE),
    ("kea", "Kabuverdianu", "Latn", "Creole (Portuguese-based)", Language.KABUVERDIANU),
    ("kik", "Kikuyu", "Latn", "Niger-Congo (Bantu)", Language.KIKUYU),
    ("kin", "Kinyarwanda", "Latn", "Niger-Congo (Bantu)", Language.KINYARWANDA),
    ("kmb", "Kimbundu", "Latn", "Niger-Congo (Bantu)", Language.KIMBUNDU),
    ("knc", "Central Kanuri", "Latn", "Nilo-Saharan (Saharan)", Language.CENTRAL_KANURI),
    ("kon", "Kikongo", "Latn", "Niger-Congo (Bantu)", Language.KIKONGO),
    ("lin", "Lingala", "Latn", "Niger-Congo (Bantu)", Language.LINGALA),
    ("lua", "Luba-Kasai", "Latn", "Niger-Congo (Bantu)", Language.LUBA_KASAI),
    ("lug", "Luganda", "Latn", "Niger-Congo (Bantu)", Language.GANDA),
    ("luo", "Luo (Dholuo)", "Latn", "Nilo-Saharan (Nilotic)", Language.LUO),
    ("mos", "Mossi", "Latn", "Niger-Congo (Gur)", Language.MOSSI),
    ("nso", "Sepedi (Northern Sotho)", "Latn", "Niger-Congo (Bantu)", Language.NORTHERN_SOTHO),
    ("nus", "Nuer", "Latn", "Nilo-Saharan (Nilotic)", Language.NUER),
    ("nya", "Chichewa (Nyanja)", "Latn", "Niger-Congo (Bantu)", Language.NYANJA),
    ("orm", "Oromo", "Latn", "Afro-Asiatic (Cushitic)", Language.WEST_CENTRAL_OROMO),
    ("pcm", "Nigerian Pidgin", "Latn", "Creole (English-based)", None),
    ("plt", "Plateau Malagasy", "Latn", "Austronesian (Malayo-Polynesian)", Language.PLATEAU_MALAGASY),
    ("run", "Kirundi", "Latn", "Niger-Congo (Bantu)", Language.RUNDI),
    ("sag", "Sango", "Latn", "Creole (Ngbandi-based)", Language.SANGO),
    ("sna", "Shona", "Latn", "Niger-Congo (Bantu)", Language.SHONA),
    ("som", "Somali", "Latn", "Afro-Asiatic (Cushitic)", Language.SOMALI),
    ("sot", "Sesotho (Southern Sotho)", "Latn", "Niger-Congo (Bantu)", Language.SOUTHERN_SOTHO),
    ("ssw", "Swati", "Latn", "Niger-Congo (Bantu)", Language.SWATI),
    ("swa", "Swahili", "Latn", "Niger-Congo (Bantu)", Language.SWAHILI),
    ("taq", "Tamasheq", "Latn", "Afro-Asiatic (Berber)", Language.TAMASHEQ),
    ("tir", "Tigrinya", "Ethi", "Afro-Asiatic (Semitic)", Language.TIGRINYA),
    ("tsn", "Setswana", "Latn", "Niger-Congo (Bantu)", Language.TSWANA),
    ("tso", "Xitsonga", "Latn", "Niger-Congo (Bantu)", Language.TSONGA),
    ("tum", "Tumbuka", "Latn", "Niger-Congo (Bantu)", Language.TUMBUKA),
    ("twi", "Twi", "Latn", "Niger-Congo (Kwa)", Language.TWI),
    ("tzm", "Central Atlas Tamazight", "Tfng", "Afro-Asiatic (Berber)", Language.CENTRAL_ATLAS_TAMAZIGHT),
    ("umb", "Umbundu", "Latn", "Niger-Congo (Bantu)", Language.UMBUNDU),
    # Script of the AfriMGSM vai config not verified offline (Vai syllabary assumed).
    ("vai", "Vai", "Vaii", "Niger-Congo (Mande)", None),
    ("wol", "Wolof", "Latn", "Niger-Congo (Atlantic)", Language.WOLOF),
    ("xho", "Xhosa", "Latn", "Niger-Congo (Bantu)", Language.XHOSA),
    ("yor", "Yoruba", "Latn", "Niger-Congo (Volta-Niger)", Language.YORUBA),
    ("zul", "Zulu", "Latn", "Niger-Congo (Bantu)", Language.ZULU),
)


def _same(codes: str) -> dict[str, str]:
    """Datasets whose config names are the ISO 639-3 codes themselves."""
    return {code: code for code in codes.split()}


def _flores(codes: str) -> dict[str, str]:
    """FLORES-style configs ("hau_Latn"); Swahili is swh_Latn and Oromo gaz_Latn there."""
    rename = {"swh": "swa", "gaz": "orm"}
    return {rename.get(code.split("_")[0], code.split("_")[0]): code for code in codes.split()}


# Bridging the Gap (Winogrande and MMLU clinical/medicine/virology): file suffix per language, "en" = English.
_BRIDGING = {
    "afr": "af", "amh": "am", "bam": "bm", "ibo": "ig", "nso": "nso", "sna": "sn",
    "sot": "st", "tsn": "tn", "tso": "ts", "xho": "xh", "zul": "zu", "eng": "en",
}  # fmt: skip

_IROKO = "amh eng ewe hau ibo kin lin lug orm sna sot swa twi wol xho yor zul"

# dataset key -> {iso3: that dataset's code}. The order of this dict is the order of DATASETS.
DATASET_CODES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "winogrande_afr": _BRIDGING,
        "mmlu_clinical_afr": _BRIDGING,
        # The 29 African variants of facebook/belebele (hub-datasets.md section 6) + English.
        "belebele": _flores(
            "afr_Latn amh_Ethi ary_Arab arz_Arab bam_Latn fuv_Latn gaz_Latn hau_Latn ibo_Latn kea_Latn "
            "kin_Latn lin_Latn lug_Latn luo_Latn nso_Latn nya_Latn plt_Latn sna_Latn som_Latn sot_Latn "
            "ssw_Latn swh_Latn tir_Ethi tsn_Latn tso_Latn wol_Latn xho_Latn yor_Latn zul_Latn eng_Latn"
        ),
        "afrimmlu": _same(_IROKO),
        "afrixnli": _same(_IROKO),
        "afrimgsm": _same(_IROKO + " vai"),
        # hub-datasets.md 7a (53) + tsn_Latn (in shared/data/sib200, missing from lm-eval's list) + English.
        "sib200": _flores(
            "aeb_Arab afr_Latn aka_Latn amh_Ethi ary_Arab arz_Arab bam_Latn bem_Latn cjk_Latn dik_Latn "
            "dyu_Latn ewe_Latn fon_Latn fuv_Latn gaz_Latn hau_Latn ibo_Latn kab_Latn kam_Latn kbp_Latn "
            "kea_Latn kik_Latn kin_Latn kmb_Latn knc_Latn kon_Latn lin_Latn lua_Latn lug_Latn luo_Latn "
            "mos_Latn nso_Latn nus_Latn nya_Latn plt_Latn run_Latn sag_Latn sna_Latn som_Latn sot_Latn "
            "ssw_Latn swh_Latn taq_Latn tir_Ethi tsn_Latn tso_Latn tum_Latn twi_Latn tzm_Tfng umb_Latn "
            "wol_Latn xho_Latn yor_Latn zul_Latn eng_Latn"
        ),
        "masakhanews": _same("amh eng hau ibo lin lug orm pcm run sna som swa tir xho yor"),
        "afrisenti": _same("amh arq ary hau ibo kin orm pcm swa tir tso twi yor"),
        # Query configs of masakhane/afriqa; masakhane/afriqa-gold-passages lacks wol (see DATASET_NOTES).
        "afriqa": _same("bem fon hau ibo kin swa twi wol yor zul"),
        "naijarc": _same("hau ibo yor"),
        "uhura_arc_easy": {
            "amh": "am_multiple_choice",
            "eng": "en_multiple_choice",
            "hau": "ha_multiple_choice",
            "nso": "nso_multiple_choice",
            "swa": "sw_multiple_choice",
            "yor": "yo_multiple_choice",
            "zul": "zu_multiple_choice",
        },
    }
)

DATASETS: tuple[str, ...] = tuple(DATASET_CODES)

# Published configs that are deliberately NOT mapped to a language, with the reason.
EXCLUDED_CONFIGS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "afrimmlu": {"fra": "French: not African and not the English reference"},
        "afrixnli": {"fra": "French: not African and not the English reference"},
        "afrimgsm": {"fra": "French: not African and not the English reference"},
        "masakhanews": {"fra": "French: not African and not the English reference"},
        "afrisenti": {"por": "Portuguese (Mozambican tweets): not an African language"},
        "sib200": {
            "fra_Latn": "French: not African and not the English reference",
            "por_Latn": "Portuguese: not African and not the English reference",
            "knc_Arab": "second script of Central Kanuri; knc_Latn is the mapped variant (one code per language)",
            "taq_Tfng": "second script of Tamasheq; taq_Latn is the mapped variant (one code per language)",
        },
    }
)

DATASET_NOTES: Mapping[str, str] = MappingProxyType(
    {
        "winogrande_afr": "Bridging the Gap Winogrande; code = file suffix (en = the English originals).",
        "mmlu_clinical_afr": "Bridging the Gap MMLU clinical_knowledge/college_medicine/virology; code = file suffix.",
        "belebele": "facebook/belebele FLORES codes: every African variant + eng_Latn.",
        "afrimmlu": "IrokoBench configs (fra excluded).",
        "afrixnli": "IrokoBench configs (fra excluded).",
        "afrimgsm": "IrokoBench configs + vai (fra excluded).",
        "sib200": "Davlan/sib200 FLORES codes: African variants (one script per language) + eng_Latn.",
        "masakhanews": "masakhane/masakhanews configs (fra excluded).",
        "afrisenti": "masakhane/afrisenti configs of African languages (por excluded).",
        "afriqa": "masakhane/afriqa configs; masakhane/afriqa-gold-passages has no wol config.",
        "naijarc": "Davlan/NaijaRC configs.",
        "uhura_arc_easy": "masakhane/uhura-arc-easy configs <prefix>_multiple_choice (nso: nso_multiple_choice).",
    }
)


def _build() -> dict[str, AfricanLanguage]:
    info = {row[0]: row for row in _INFO}
    codes: dict[str, dict[str, str]] = {iso3: {} for iso3 in info}
    for dataset, table in DATASET_CODES.items():
        for iso3, code in table.items():
            if iso3 not in info:
                raise RuntimeError(f"dataset {dataset!r} maps code {code!r} to unknown language {iso3!r}")
            codes[iso3][dataset] = code
    unused = sorted(iso3 for iso3, per_dataset in codes.items() if not per_dataset)
    if unused:
        raise RuntimeError(f"languages in no dataset: {unused}")
    return {
        iso3: AfricanLanguage(iso3, name, script, family, member, MappingProxyType(codes[iso3]))
        for iso3, name, script, family, member in sorted(info.values())
    }


LANGUAGES: dict[str, AfricanLanguage] = _build()


def language(iso3: str) -> AfricanLanguage:
    """The language with ISO 639-3 code ``iso3``; KeyError naming the code and listing the known ones."""
    try:
        return LANGUAGES[iso3]
    except KeyError:
        raise KeyError(f"unknown language code {iso3!r}; known codes: {', '.join(LANGUAGES)}") from None


def covered_by(dataset: str) -> list[AfricanLanguage]:
    """Languages with a code for dataset key ``dataset``, sorted by iso3; ValueError for an unknown key."""
    if dataset not in DATASET_CODES:
        raise ValueError(f"unknown dataset key {dataset!r}; known keys: {', '.join(DATASETS)}")
    return [lang for iso3, lang in LANGUAGES.items() if dataset in lang.codes]
