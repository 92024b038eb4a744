"""Every language our African benchmarks cover, with each dataset's own code for it.

One :class:`AfricanLanguage` per ISO 639-3 code (the code our task names use). ``codes`` maps a dataset key
(a key of :data:`DATASET_CODES`) to that dataset's own name for the language: a hub config name (``hau``,
``swh_Latn``, ``yo_multiple_choice``) or, for the Bridging-the-Gap files, the file suffix (``zu``).

Each dataset's table of codes lives in its benchmark module (``DatasetSource.codes`` in the module's
``SOURCES``, following ``shared/notes/hub-datasets.md`` and the folder names in ``shared/data``); this module
holds the languages themselves and reads the codes from there (:data:`DATASET_CODES`, built on first use).
Codes deliberately left out of a dataset (non-African languages other than English, and a second script of
a language already mapped) are listed with the reason in ``DatasetSource.excluded`` (:data:`EXCLUDED_CONFIGS`).

Oddities to remember:

- Oromo is ``orm`` here and in IrokoBench/MasakhaNEWS/AfriSenti, ``gaz_Latn`` in FLORES-based datasets, and
  lighteval's member is ``Language.WEST_CENTRAL_OROMO`` (value ``"gaz"``): there is no ``Language.OROMO``.
- Swahili is ``swa`` here, ``swh_Latn`` in FLORES-based datasets, ``sw_multiple_choice`` in Uhura.
- Luganda is ``Language.GANDA``, Sesotho ``Language.SOUTHERN_SOTHO``, Sepedi ``Language.NORTHERN_SOTHO``.
- Nigerian Pidgin (``pcm``), Vai (``vai``) and Algerian Arabic (``arq``) have no lighteval member: only
  English-word prompts can be built for them. Neither have the languages only the translation and diacritics
  sets cover (``ach bbj lgg mey nde nyn shi teo ven``), whose tasks have no prompt words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from lighteval.utils.language import Language

from finetasks_afr.data.sources import SOURCES, LazyMapping


@dataclass(frozen=True)
class AfricanLanguage:
    """One language: identity, classification, lighteval member, and its code in each dataset."""

    iso3: str  # ISO 639-3, as in our task names ("yor"; Oromo "orm", Swahili "swa")
    name: str  # English name ("Yoruba")
    script: str  # ISO 15924 code of the script the datasets use ("Latn", "Ethi", "Arab", "Tfng")
    family: str  # "Niger-Congo (Volta-Niger)", "Afro-Asiatic (Chadic)", ...
    lighteval: Language | None  # lighteval's Language member; None when lighteval has none

    @property
    def codes(self) -> Mapping[str, str]:
        """Dataset key -> that dataset's code for this language (from the benchmark modules' sources)."""
        return MappingProxyType({key: table[self.iso3] for key, table in DATASET_CODES.items() if self.iso3 in table})


# (iso3, name, script, family, lighteval member)
_INFO: tuple[tuple[str, str, str, str, Language | None], ...] = (
    ("ach", "Acholi", "Latn", "Nilo-Saharan (Nilotic)", None),
    ("aeb", "Tunisian Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.TUNISIAN_ARABIC),
    ("afr", "Afrikaans", "Latn", "Indo-European (Germanic)", Language.AFRIKAANS),
    ("aka", "Akan", "Latn", "Niger-Congo (Kwa)", Language.AKAN),
    ("amh", "Amharic", "Ethi", "Afro-Asiatic (Semitic)", Language.AMHARIC),
    ("arq", "Algerian Arabic", "Arab", "Afro-Asiatic (Semitic)", None),
    ("ary", "Moroccan Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.MOROCCAN_ARABIC),
    ("arz", "Egyptian Arabic", "Arab", "Afro-Asiatic (Semitic)", Language.EGYPTIAN_ARABIC),
    ("bam", "Bambara", "Latn", "Niger-Congo (Mande)", Language.BAMBARA),
    ("bbj", "Ghomala'", "Latn", "Niger-Congo (Grassfields Bantu)", None),
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
    ("lgg", "Lugbara", "Latn", "Nilo-Saharan (Central Sudanic)", None),
    ("lin", "Lingala", "Latn", "Niger-Congo (Bantu)", Language.LINGALA),
    ("lua", "Luba-Kasai", "Latn", "Niger-Congo (Bantu)", Language.LUBA_KASAI),
    ("lug", "Luganda", "Latn", "Niger-Congo (Bantu)", Language.GANDA),
    ("luo", "Luo (Dholuo)", "Latn", "Nilo-Saharan (Nilotic)", Language.LUO),
    ("mey", "Hassaniya Arabic", "Arab", "Afro-Asiatic (Semitic)", None),
    ("mos", "Mossi", "Latn", "Niger-Congo (Gur)", Language.MOSSI),
    ("nde", "North Ndebele", "Latn", "Niger-Congo (Bantu)", None),
    ("nso", "Sepedi (Northern Sotho)", "Latn", "Niger-Congo (Bantu)", Language.NORTHERN_SOTHO),
    ("nus", "Nuer", "Latn", "Nilo-Saharan (Nilotic)", Language.NUER),
    ("nya", "Chichewa (Nyanja)", "Latn", "Niger-Congo (Bantu)", Language.NYANJA),
    ("nyn", "Runyankole (Nyankore)", "Latn", "Niger-Congo (Bantu)", None),
    ("orm", "Oromo", "Latn", "Afro-Asiatic (Cushitic)", Language.WEST_CENTRAL_OROMO),
    ("pcm", "Nigerian Pidgin", "Latn", "Creole (English-based)", None),
    ("plt", "Plateau Malagasy", "Latn", "Austronesian (Malayo-Polynesian)", Language.PLATEAU_MALAGASY),
    ("run", "Kirundi", "Latn", "Niger-Congo (Bantu)", Language.RUNDI),
    ("sag", "Sango", "Latn", "Creole (Ngbandi-based)", Language.SANGO),
    ("shi", "Tachelhit", "Arab", "Afro-Asiatic (Berber)", None),
    ("sna", "Shona", "Latn", "Niger-Congo (Bantu)", Language.SHONA),
    ("som", "Somali", "Latn", "Afro-Asiatic (Cushitic)", Language.SOMALI),
    ("sot", "Sesotho (Southern Sotho)", "Latn", "Niger-Congo (Bantu)", Language.SOUTHERN_SOTHO),
    ("ssw", "Swati", "Latn", "Niger-Congo (Bantu)", Language.SWATI),
    ("swa", "Swahili", "Latn", "Niger-Congo (Bantu)", Language.SWAHILI),
    ("taq", "Tamasheq", "Latn", "Afro-Asiatic (Berber)", Language.TAMASHEQ),
    ("teo", "Ateso (Teso)", "Latn", "Nilo-Saharan (Nilotic)", None),
    ("tir", "Tigrinya", "Ethi", "Afro-Asiatic (Semitic)", Language.TIGRINYA),
    ("tsn", "Setswana", "Latn", "Niger-Congo (Bantu)", Language.TSWANA),
    ("tso", "Xitsonga", "Latn", "Niger-Congo (Bantu)", Language.TSONGA),
    ("tum", "Tumbuka", "Latn", "Niger-Congo (Bantu)", Language.TUMBUKA),
    ("twi", "Twi", "Latn", "Niger-Congo (Kwa)", Language.TWI),
    ("tzm", "Central Atlas Tamazight", "Tfng", "Afro-Asiatic (Berber)", Language.CENTRAL_ATLAS_TAMAZIGHT),
    ("umb", "Umbundu", "Latn", "Niger-Congo (Bantu)", Language.UMBUNDU),
    # Script of the AfriMGSM vai config not verified offline (Vai syllabary assumed).
    ("vai", "Vai", "Vaii", "Niger-Congo (Mande)", None),
    ("ven", "Tshivenda (Venda)", "Latn", "Niger-Congo (Bantu)", None),
    ("wol", "Wolof", "Latn", "Niger-Congo (Atlantic)", Language.WOLOF),
    ("xho", "Xhosa", "Latn", "Niger-Congo (Bantu)", Language.XHOSA),
    ("yor", "Yoruba", "Latn", "Niger-Congo (Volta-Niger)", Language.YORUBA),
    ("zul", "Zulu", "Latn", "Niger-Congo (Bantu)", Language.ZULU),
)


def same_codes(codes: str) -> dict[str, str]:
    """Datasets whose config names are the ISO 639-3 codes themselves."""
    return {code: code for code in codes.split()}


def flores_codes(codes: str) -> dict[str, str]:
    """FLORES-style configs ("hau_Latn"); Swahili is swh_Latn and Oromo gaz_Latn there."""
    rename = {"swh": "swa", "gaz": "orm"}
    return {rename.get(code.split("_")[0], code.split("_")[0]): code for code in codes.split()}


IROKOBENCH = "amh eng ewe hau ibo kin lin lug orm sna sot swa twi wol xho yor zul"
"""The languages of IrokoBench's AfriMMLU, AfriXNLI and AfriMGSM (ISO 639-3 = their config names; fra left out)."""


def _codes() -> dict[str, Mapping[str, str]]:
    tables: dict[str, Mapping[str, str]] = {}
    for key, src in SOURCES.items():
        unknown = sorted(set(src.codes) - set(LANGUAGES))
        if unknown:
            raise RuntimeError(f"dataset {key!r} maps codes to unknown language(s) {unknown}; add them to _INFO")
        if src.codes:
            tables[key] = MappingProxyType(dict(src.codes))
    return tables


# dataset key -> {iso3: that dataset's code}, in benchmark-module order
DATASET_CODES: Mapping[str, Mapping[str, str]] = LazyMapping(_codes)
# dataset key -> {published config deliberately not mapped to a language: why}
EXCLUDED_CONFIGS: Mapping[str, Mapping[str, str]] = LazyMapping(
    lambda: {key: src.excluded for key, src in SOURCES.items() if src.excluded}
)
# dataset key -> what is known and unverified about it
DATASET_NOTES: Mapping[str, str] = LazyMapping(lambda: {key: SOURCES[key].notes for key in DATASET_CODES})


def dataset_keys() -> tuple[str, ...]:
    """The keys of every dataset that maps languages, in benchmark-module order."""
    return tuple(DATASET_CODES)


LANGUAGES: dict[str, AfricanLanguage] = {
    iso3: AfricanLanguage(iso3, name, script, family, member) for iso3, name, script, family, member in sorted(_INFO)
}


def language(iso3: str) -> AfricanLanguage:
    """The language with ISO 639-3 code ``iso3``; KeyError naming the code and listing the known ones."""
    try:
        return LANGUAGES[iso3]
    except KeyError:
        raise KeyError(f"unknown language code {iso3!r}; known codes: {', '.join(LANGUAGES)}") from None


def covered_by(dataset: str) -> list[AfricanLanguage]:
    """Languages with a code for dataset key ``dataset``, sorted by iso3; ValueError for an unknown key."""
    if dataset not in DATASET_CODES:
        raise ValueError(f"unknown dataset key {dataset!r}; known keys: {', '.join(DATASET_CODES)}")
    return [lang for iso3, lang in LANGUAGES.items() if iso3 in DATASET_CODES[dataset]]
