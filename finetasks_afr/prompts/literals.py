"""In-language prompt words for lighteval's templates, with provenance and a native-speaker review flag.

lighteval 0.13 has prompt words ("question", "answer", yes/no, ...) only for Swahili among the African
languages; every other African ``Language`` entry is empty, so building a prompt fails with
``AttributeError: Translation for 'answer' is needed for Language.YORUBA``. :data:`LITERALS` supplies the
words and :func:`register_literals` installs them into lighteval's ``TRANSLATION_LITERALS``.

Provenance, honestly:

- ``confirmation_word``, ``yes``, ``also``, ``no`` for the 16 African AfriXNLI languages come from the
  human-written native verbalisers of lm-evaluation-harness (``lm_eval/tasks/afrixnli/utils.py``
  ``LANGUAGES``: QUESTION_WORD, ENTAILMENT_LABEL, NEUTRAL_LABEL, CONTRADICTION_LABEL), lower-cased as
  lighteval's own words are (its templates capitalise where a sentence starts). The Hausa ones are also
  quoted in ``shared/notes/hub-datasets.md``.
- Swahili keeps lighteval's own words; only its missing ``and_word`` is added.
- Moroccan, Egyptian and Tunisian Arabic reuse lighteval's (Modern Standard) Arabic entry.
- EVERYTHING ELSE is model-drafted and unreviewed. Each entry's ``needs_review`` names those fields: a
  native speaker must check them before in-language scores are trusted.
- Languages whose words could not be drafted with any confidence get no entry; :data:`NO_LITERALS_REASON`
  says why. Only English-word prompts are built for them.

Punctuation: Latin-script languages use lighteval's defaults. Amharic and Tigrinya use the Ethiopic full
stop "።", comma "፣" and semicolon "፤", but the ASCII "?" (the Ethiopic "፧" is rare in current text, and
lighteval rewrites a question's final "?" into the language's question mark) and the ASCII ":" after
"Question"/"Answer". The Arabic varieties copy lighteval's Arabic punctuation ("،", "؟") and letters.
"""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS, TranslationLiterals
from lighteval.utils.language import Language

from finetasks_afr.prompts.languages import LANGUAGES, language
from finetasks_afr.prompts.prompt_words import HUMAN_WORDS, REJECTED, SOURCE_ORDER

# Word fields of TranslationLiterals (every entry fills all of them).
WORD_FIELDS: tuple[str, ...] = (
    "question_word", "answer", "confirmation_word", "yes", "no", "also", "cause_word", "effect_word",
    "or_word", "and_word", "true", "false", "neither",
)  # fmt: skip
PUNCTUATION_FIELDS: tuple[str, ...] = (
    "full_stop", "comma", "question_mark", "exclamation_mark", "word_space", "sentence_space", "colon",
    "semicolon",
)  # fmt: skip

# Word fields each lighteval 0.13 template reads (lighteval/tasks/templates/*.py).
TEMPLATE_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "mcq": ("question_word", "answer"),  # multichoice.py; answer also for CF (unconditioned query)
        "qa": ("question_word", "answer"),  # qa.py -> mcq CF
        "nli_cf": ("confirmation_word", "yes", "no", "also"),  # nli.py natural (CF) form
        "nli_mcf": ("true", "false", "neither", "or_word", "question_word", "answer"),  # MCF and hybrid
        "copa": ("cause_word", "effect_word", "answer"),  # copa.py -> continuation (answer for MCF/hybrid)
        "boolq": ("yes", "no", "question_word", "answer"),
        "continuation": ("answer",),  # MCF/hybrid only
    }
)
REQUIRED_FIELDS: frozenset[str] = frozenset(f for needed in TEMPLATE_FIELDS.values() for f in needed)

_HARNESS = (
    "lm-evaluation-harness lm_eval/tasks/afrixnli/utils.py LANGUAGES @6a5cde6a (native-direct verbalisers "
    "QUESTION_WORD/ENTAILMENT_LABEL/NEUTRAL_LABEL/CONTRADICTION_LABEL -> confirmation_word/yes/also/no, "
    "lower-cased)"
)
_DRAFTED = "model-drafted, unreviewed (no human-written source found offline)"

# Verbatim from the harness file above: iso3 -> (QUESTION_WORD, ENTAILMENT_LABEL, NEUTRAL_LABEL,
# CONTRADICTION_LABEL). Swahili's (Sahihi, Ndiyo, Pia, Hapana) equal lighteval's own words.
_XNLI_VERBALISERS: dict[str, tuple[str, str, str, str]] = {
    "amh": ("ትክክል", "አዎ", "እንዲሁም", "አይ"),
    "ewe": ("Esɔ gbe", "Ɛ̃", "Hã", "Ao"),
    "hau": ("Daidai", "Ee", "Haka kuma", "A'a"),
    "ibo": ("Ziri ezi", "Éè", "Ọzọkwa", "Mba"),
    "kin": ("Nibyo", "Yego", "Na none", "Oya"),
    "lin": ("Malamu", "Iyo", "Lisusu", "Te"),
    "lug": ("Kituufu", "Yee", "N’ekirala", "Nedda"),
    "orm": ("Sirrii", "Eeyyee", "Akkasumas", "Lakki"),
    "sna": ("Chokwadi", "Hongu", "Uye", "Kwete"),
    "sot": ("Nepile", "E", "Hape", "Tjhe"),
    "twi": ("Nifa", "Aane", "Anaasɛ", "Daabi"),
    "wol": ("Dëgg", "Waaw", "Itam", "Déet"),
    "xho": ("Ichanekile", "Ewe", "Kananjalo", "Hayi"),
    "yor": ("Òótọ́", "Bẹ́ẹ̀ni", "Àti pé", "Rárá"),
    "zul": ("Kulungile", "Yebo", "Futhi", "Cha"),
}

# Model-drafted words, in WORD_FIELDS order (question_word, answer, confirmation_word, yes, no, also,
# cause_word, effect_word, or_word, and_word, true, false, neither). For the harness languages the four
# cited fields are filled from _XNLI_VERBALISERS instead of the placeholders "-" below.
_DRAFT: dict[str, tuple[str, ...]] = {
    "afr": ("vraag", "antwoord", "reg", "ja", "nee", "ook", "omdat", "daarom", "of", "en", "waar", "onwaar",
            "geeneen"),
    "aka": ("asɛmmisa", "mmuaeɛ", "nifa", "aane", "daabi", "anaasɛ", "ɛfiri sɛ", "enti", "anaasɛ", "ne",
            "nokware", "atoro", "ɛnyɛ baako biara"),
    "amh": ("ጥያቄ", "መልስ", "-", "-", "-", "-", "ምክንያቱም", "ስለዚህ", "ወይም", "እና", "እውነት", "ሐሰት",
            "አንዳቸውም"),
    "bam": ("ɲininkali", "jaabi", "tiɲɛ", "ɔwɔ", "ayi", "fana", "katuguni", "o de kosɔn", "walima", "ani",
            "tiɲɛ", "nkalon", "foyi"),
    "bem": ("icipusho", "icasuko", "cine", "ee", "awe", "kabili", "pantu", "eico", "nangu", "na", "cine",
            "bufi", "tapali"),
    "ewe": ("biabia", "ŋuɖoɖo", "-", "-", "-", "-", "elabena", "eya ta", "alo", "kple", "nyateƒe", "alakpa",
            "ɖeke o"),
    "hau": ("tambaya", "amsa", "-", "-", "-", "-", "saboda", "saboda haka", "ko", "da", "gaskiya", "ƙarya",
            "babu ɗaya"),
    "ibo": ("ajụjụ", "azịza", "-", "-", "-", "-", "n'ihi na", "ya mere", "ma ọ bụ", "na", "eziokwu", "ụgha",
            "ọ dịghị nke ọ bụla"),
    "kea": ("pergunta", "respósta", "é verdadi", "sin", "nãu", "tanbé", "pamodi", "purisu", "o", "i",
            "verdadi", "falsu", "nenhun"),
    "kin": ("ikibazo", "igisubizo", "-", "-", "-", "-", "kubera ko", "ni yo mpamvu", "cyangwa", "na", "ukuri",
            "ikinyoma", "nta na kimwe"),
    "lin": ("motuna", "eyano", "-", "-", "-", "-", "mpo", "yango wana", "to", "mpe", "solo", "lokuta",
            "moko te"),
    "lug": ("ekibuuzo", "eky'okuddamu", "-", "-", "-", "-", "kubanga", "n'olwekyo", "oba", "ne", "amazima",
            "bulimba", "tewali na kimu"),
    "luo": ("penjo", "dwoko", "adier", "ee", "ooyo", "bende", "nikech", "omiyo", "kata", "kod", "adier",
            "miriambo", "onge"),
    "nso": ("potšišo", "karabo", "go lokile", "ee", "aowa", "gape", "ka gobane", "ka gona", "goba", "le",
            "therešo", "maaka", "ga go le e tee"),
    "nya": ("funso", "yankho", "sichoncho", "inde", "ayi", "komanso", "chifukwa", "choncho", "kapena", "ndi",
            "zoona", "zabodza", "palibe"),
    "orm": ("gaaffii", "deebii", "-", "-", "-", "-", "sababni isaas", "kanaaf", "yookiin", "fi", "dhugaa",
            "soba", "tokkollee miti"),
    "plt": ("fanontaniana", "valiny", "marina", "eny", "tsia", "koa", "satria", "noho izany", "na", "sy",
            "marina", "diso", "tsy misy"),
    "run": ("ikibazo", "inyishu", "ni vyo", "ego", "oya", "kandi", "kubera", "ni co gituma", "canke", "na",
            "ukuri", "ikinyoma", "nta na kimwe"),
    "sna": ("mubvunzo", "mhinduro", "-", "-", "-", "-", "nokuti", "saka", "kana", "uye", "chokwadi", "nhema",
            "hapana kana chimwe"),
    "som": ("su'aal", "jawaab", "sax", "haa", "maya", "sidoo kale", "sababtoo ah", "sidaas darteed", "ama",
            "iyo", "run", "been", "midna"),
    "sot": ("potso", "karabo", "-", "-", "-", "-", "hobane", "ka hona", "kapa", "le", "nnete", "leshano",
            "ha ho le e nngwe"),
    "ssw": ("umbuto", "imphendvulo", "kulungile", "yebo", "cha", "futsi", "ngobe", "ngako-ke", "noma", "futsi",
            "liciniso", "emanga", "kute nalinye"),
    "tir": ("ሕቶ", "መልሲ", "ቅኑዕ", "እወ", "ኣይፋል", "ከምኡ'ውን", "ምኽንያቱ", "ስለዚ", "ወይ", "ከምኡ'ውን", "ሓቂ",
            "ሓሶት", "ክልቲኡ ኣይኮነን"),
    "tsn": ("potso", "karabo", "go siame", "ee", "nnyaa", "gape", "ka gonne", "ka jalo", "kgotsa", "le",
            "boammaaruri", "maaka", "ga go epe"),
    "tso": ("xivutiso", "nhlamulo", "swi lulamile", "ina", "e-e", "nakambe", "hikuva", "hikokwalaho", "kumbe",
            "na", "ntiyiso", "mavunwa", "a ku na xin'we"),
    "twi": ("asɛmmisa", "mmuaeɛ", "-", "-", "-", "-", "ɛfiri sɛ", "enti", "anaasɛ", "ne", "nokware", "atoro",
            "ɛnyɛ baako biara"),
    "wol": ("laaj", "tontu", "-", "-", "-", "-", "ndax", "kon", "walla", "ak", "dëgg", "fen", "du benn"),
    "xho": ("umbuzo", "impendulo", "-", "-", "-", "-", "kuba", "ngoko ke", "okanye", "kwaye", "inyani",
            "ubuxoki", "akukho nanye"),
    "yor": ("ìbéèrè", "ìdáhùn", "-", "-", "-", "-", "nítorí pé", "nítorí náà", "tàbí", "àti", "òótọ́", "irọ́",
            "kò sí ọ̀kankan"),
    "zul": ("umbuzo", "impendulo", "-", "-", "-", "-", "ngoba", "ngakho-ke", "noma", "futhi", "iqiniso",
            "amanga", "akukho neyodwa"),
}  # fmt: skip

_ETHIOPIC_PUNCT = {"full_stop": "።", "comma": "፣", "semicolon": "፤", "question_mark": "?", "colon": ":"}

# lighteval 0.13's Swahili words (TRANSLATION_LITERALS[Language.SWAHILI]); register_literals keeps them.
_SWAHILI = ("swali", "jibu", "sahihi", "ndiyo", "hapana", "pia", "kwa sababu", "kwa hiyo", "au", "na",
            "kweli", "uongo", "hakuna kati ya hizo")  # fmt: skip
# lighteval 0.13's Arabic (MSA) words and punctuation (TRANSLATION_LITERALS[Language.ARABIC]).
_ARABIC = ("سؤال", "إجابة", "صحيح", "نعم", "لا", "كذلك", "لأن", "لذلك", "أو", "و", "صحيح", "خاطئ",
           "لا هذا ولا ذاك")  # fmt: skip
_ARABIC_PUNCT = {"comma": "،", "question_mark": "؟"}
_ARABIC_INDICES = ["أ", "ب", "ج", "د", "هـ", "و", "ز", "ح"]


@dataclass(frozen=True)
class LiteralsEntry:
    """Prompt words for one language, where they come from, and which of them a native speaker must check."""

    literals: TranslationLiterals  # lighteval's dataclass, every WORD_FIELDS field filled
    source: str  # provenance of the words
    needs_review: frozenset[str]  # word fields NOT from a cited human source (or cited but doubtful)
    word_sources: Mapping[str, str] = field(default_factory=dict)  # word field -> where that word comes from


def _nfc(word: str) -> str:
    return unicodedata.normalize("NFC", word)


def _entry(
    iso3: str,
    words: tuple[str, ...],
    source: str,
    needs_review: frozenset[str] | set[str],
    punctuation: Mapping[str, str] | None = None,
    indices: list[str] | None = None,
) -> LiteralsEntry:
    member = LANGUAGES[iso3].lighteval
    if member is None:
        raise RuntimeError(f"{iso3}: literals need a lighteval Language member")
    if len(words) != len(WORD_FIELDS) or "-" in words:
        raise RuntimeError(f"{iso3}: expected {len(WORD_FIELDS)} words, got {words}")
    words, review, sources = _with_human_words(iso3, words, set(needs_review), source)
    kwargs: dict[str, Any] = {name: _nfc(word) for name, word in zip(WORD_FIELDS, words, strict=True)}
    kwargs.update(punctuation or {})
    if indices is not None:
        kwargs["indices"] = list(indices)
    return LiteralsEntry(TranslationLiterals(language=member, **kwargs), source, frozenset(review), sources)


_DOUBTFUL = {("twi", "confirmation_word"), ("twi", "also")}  # cited, but see the twi note in _build


def _with_human_words(
    iso3: str, words: tuple[str, ...], review: set[str], source: str
) -> tuple[tuple[str, ...], set[str], dict[str, str]]:
    """Every field with a human-made word (finetasks_afr.prompts.prompt_words, precedence IrokoBench > CLDR > MediaWiki
    >
    glibc) takes it and leaves needs_review; the others keep their word and flag. Swahili keeps lighteval's own
    words (register_literals never overwrites them), so only fields lighteval lacks are replaced there."""
    chosen = list(words)
    sources: dict[str, str] = {}
    for index, name in enumerate(WORD_FIELDS):
        human = HUMAN_WORDS.get((iso3, name))
        keep_lighteval = iso3 == "swa" and name not in review
        if human is not None and (iso3, name) not in REJECTED and not keep_lighteval:
            chosen[index] = human.word
            sources[name] = f"{human.source} ({human.location})"
            if (iso3, name) not in _DOUBTFUL:
                review.discard(name)
        else:
            sources[name] = "lighteval 0.13 built-in" if keep_lighteval else source
    return tuple(chosen), review, sources


def _build() -> dict[str, LiteralsEntry]:
    cited_fields = ("confirmation_word", "yes", "also", "no")
    entries: dict[str, LiteralsEntry] = {}
    for iso3, draft in _DRAFT.items():
        words = list(draft)
        punct = _ETHIOPIC_PUNCT if LANGUAGES[iso3].script == "Ethi" else None
        if iso3 in _XNLI_VERBALISERS:
            for name, cited in zip(cited_fields, _XNLI_VERBALISERS[iso3], strict=True):
                words[WORD_FIELDS.index(name)] = cited.lower()
            review = set(WORD_FIELDS) - set(cited_fields)
            source = f"confirmation_word, yes, also, no: {_HARNESS}; other words: {_DRAFTED}"
            if iso3 == "twi":
                # Cited, but "nifa" means "right" as in the right-hand side, and "anaasɛ" means "or".
                review |= {"confirmation_word", "also"}
                source += "; harness 'nifa' (right-hand side) and 'anaasɛ' ('or') look like literal glosses"
        else:
            review = set(WORD_FIELDS)
            source = _DRAFTED
            if iso3 == "aka":
                source += "; Twi words (Twi is a variety of Akan), fit to FLORES aka_Latn unchecked"
        entries[iso3] = _entry(iso3, tuple(words), source, review, punct)
    entries["swa"] = _entry(
        "swa",
        _SWAHILI,
        "lighteval 0.13 built-in Swahili words (kept as they are by register_literals; they agree with the "
        f"harness verbalisers Sahihi/Ndiyo/Pia/Hapana); and_word: {_DRAFTED}",
        {"and_word"},
    )
    for iso3 in ("ary", "arz", "aeb"):
        entries[iso3] = _entry(
            iso3,
            _ARABIC,
            f"lighteval 0.13 Language.ARABIC (Modern Standard Arabic) words and punctuation, reused for "
            f"{LANGUAGES[iso3].name}: whether MSA words suit a dialect prompt is unchecked",
            set(WORD_FIELDS),
            _ARABIC_PUNCT,
            _ARABIC_INDICES,
        )
    return dict(sorted(entries.items()))


LITERALS: dict[str, LiteralsEntry] = _build()

_TOO_THIN = (
    "no human-written prompt words for {name} were found offline (lighteval, lm-evaluation-harness and "
    "AfroBench have none) and the drafting model's knowledge of {name} is too thin to draft even candidates "
    "for review; English-word prompts only until a native speaker supplies the words"
)
# Languages with a lighteval member but no LITERALS entry, and why.
NO_LITERALS_REASON: dict[str, str] = {
    iso3: _TOO_THIN.format(name=LANGUAGES[iso3].name)
    for iso3 in (
        "cjk", "dik", "dyu", "fon", "fuv", "kab", "kam", "kbp", "kik", "kmb", "knc", "kon", "lua", "mos",
        "nus", "sag", "taq", "tum", "tzm", "umb",
    )
}  # fmt: skip


def _stored(literals: TranslationLiterals, name: str) -> object:
    """A field's raw value (TranslationLiterals raises on reading a None field through getattr)."""
    return vars(literals).get(name)


def _copy(literals: TranslationLiterals) -> TranslationLiterals:
    values: dict[str, Any] = {f.name: copy.copy(_stored(literals, f.name)) for f in fields(literals)}
    return TranslationLiterals(**values)


def register_literals() -> list[str]:
    """Install :data:`LITERALS` into lighteval's ``TRANSLATION_LITERALS``; returns the iso3 codes registered.

    Idempotent. A word lighteval (or an earlier call) already has is never overwritten: only missing words
    are filled, which for Swahili means only ``and_word``. Punctuation and letter indices are installed only
    into an entry that had no words at all. Existing entries are updated in place, so prompt functions built
    before this call (some templates look their literals up when they are created) see the words too.
    """
    registered = []
    for iso3, entry in LITERALS.items():
        member = entry.literals.language
        current = TRANSLATION_LITERALS.get(member)
        if current is None:
            TRANSLATION_LITERALS[member] = _copy(entry.literals)
        else:
            had_words = any(_stored(current, name) is not None for name in WORD_FIELDS)
            for name in WORD_FIELDS:
                if _stored(current, name) is None:
                    setattr(current, name, _stored(entry.literals, name))
            if not had_words:
                for name in PUNCTUATION_FIELDS:
                    setattr(current, name, _stored(entry.literals, name))
                current.indices = copy.copy(entry.literals.indices)
        registered.append(iso3)
    return registered


def native_prompt_available(iso3: str) -> bool:
    """Whether in-language prompt words exist for ``iso3`` (ours, or lighteval's own as for English)."""
    lang = language(iso3)
    if lang.lighteval is None:
        return False
    if iso3 in LITERALS:
        return True
    current = TRANSLATION_LITERALS.get(lang.lighteval)
    return current is not None and all(_stored(current, name) is not None for name in REQUIRED_FIELDS)


def prompt_language(iso3: str, prompt: str) -> Language:
    """The lighteval Language whose words build the prompt: ``"native"`` (in-language) or ``"en"`` (English).

    ``"native"`` registers the literals first, so the returned Language is ready for lighteval's templates.
    ValueError, naming the language, when it has no lighteval member or no words: only ``"en"`` works there.
    """
    lang = language(iso3)
    if prompt == "en":
        return Language.ENGLISH
    if prompt != "native":
        raise ValueError(f"prompt must be 'native' or 'en', got {prompt!r}")
    if lang.lighteval is None:
        raise ValueError(
            f"{lang.name} ({iso3}) has no lighteval Language member, so no in-language prompt words can be "
            "registered; only English-word prompts (prompt='en') are possible"
        )
    if not native_prompt_available(iso3):
        reason = NO_LITERALS_REASON.get(iso3, "no prompt words")
        raise ValueError(f"{lang.name} ({iso3}) has no in-language prompt words: {reason}")
    if iso3 in LITERALS:
        register_literals()
    return lang.lighteval


def _is_human(source: str) -> bool:
    return source == "lighteval 0.13 built-in" or any(source.startswith(name) for name in SOURCE_ORDER)


def prompt_word_counts() -> dict[str, tuple[int, int, int]]:
    """iso3 -> (human-sourced, drafted, missing) over the word fields, for every language with a lighteval member.

    Human-sourced: a word from a human source (finetasks_afr.prompts.prompt_words, or lighteval's own Swahili words),
    even where a doubt keeps it flagged; drafted: a model-drafted word, or for the Arabic varieties lighteval's Modern
    Standard Arabic word borrowed, flagged needs_review; missing: no word (languages without an entry, which get
    only English-word prompts).
    """
    counts = {}
    for iso3, lang in LANGUAGES.items():
        if lang.lighteval is None or iso3 == "eng":
            continue
        entry = LITERALS.get(iso3)
        if entry is None:
            counts[iso3] = (0, 0, len(WORD_FIELDS))
            continue
        human = sum(_is_human(entry.word_sources.get(name, "")) for name in WORD_FIELDS)
        counts[iso3] = (human, len(WORD_FIELDS) - human, 0)
    return counts
