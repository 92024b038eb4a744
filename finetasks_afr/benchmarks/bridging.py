"""The human-translated sets of "Bridging the Gap" (af am bm ig nso sn st tn ts xh zu, and English as `eng`):
Winogrande (RES) and the MMLU clinical subjects clinical_knowledge, college_medicine, virology (GK).

Hub sources (published viewer of Institute-Disease-Modeling/mmlu-winogrande-afr): 44 configs,
`mmlu_{subject}_{code}` (splits dev, val, test; Question, OptionA-D, Answer) and `winogrande_{code}` (train_s,
dev, test). The authors' release script gives the hub's Winogrande rows the columns qID, Sentence, Option1,
Option2, Answer: the English columns are dropped. The mirror keeps the raw release's columns (`<Language>
Sentence`, ..., with the English ones), and the adapters read either. There is no English config: English MMLU
comes from its own home, `cais/mmlu` (same test rows); English Winogrande is read from the English columns of
the mirror's `winogrande_am`, which equal the released English file for all 3,674 rows (as do bm ig nso sn st tn
ts; af, xh and zu differ from it in 40 rows). The English test split exists only in the GitHub release, so
`winogrande_afr_eng_*` needs a mirror built with `finetasks-afr data import-raw`.

Winogrande CF is partial scoring (Trinh & Le 2018; lm-evaluation-harness `winogrande`): the option fills the
blank and the model scores only the rest of the sentence, log P(rest | sentence before the blank + option), with
one context per option (`finetasks_afr.scoring.partial_scoring`, which `finetasks_afr/tasks.py` applies). Its metrics
are acc, acc_norm and acc_norm_token: PMI is meaningless when every option scores the same continuation. A sentence
with the blank first is scored too (context = the option alone).

Sentences with no letter after the blank ("... for the _.", about 4% of the test rows, English included, as the
translations often end on the blank) are scored in full instead. Partial scoring needs words after the option that
resolve the reference: with only "." left it compares P(" ." | before + option), how likely the sentence is to end
there, which says next to nothing about which option fits, and the document is close to a coin toss for every
model. Trinh & Le's full score, log P(sentence with option i), differs between options only by log P(option i +
rest | text before the blank), the probability of the sentence's end from the blank on, so the document is scored
on that: one context, the text before the blank (cut at the last space before it, so a prefix glued to the blank,
Zulu "u_", travels with the option), and "option + rest" as each continuation. This is exactly lighteval's own
`winogrande` (query = sentence up to the blank, choices = option + rest). On these documents acc favours the
shorter option as it does in lighteval's task; acc_norm (per character) and acc_norm_token correct for length. A
sentence with nothing at all after the blank is still skipped, as before, and one with nothing before the blank
either would have no context to condition on. tests/data/test_data_artefacts.py counts both kinds per language.
Winogrande MCF: the sentence with its blank as the question and the two options as lettered choices.
MMLU takes its 5 few-shot examples from the dev split.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.metrics.normalizations import LogProbCharNorm, LogProbTokenNorm
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index, lettered_row
from finetasks_afr.data.raw import RawImporter, RowError, Unit, Yielded, read_text, require_columns, str_field
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by
from finetasks_afr.scoring.partial_scoring import PartialScoringInput, get_partial_scoring_prompt_function

HUB_REPO = "Institute-Disease-Modeling/mmlu-winogrande-afr"
HUB_REVISION: str | None = "ffb0cc0f7e388e1bd0795b9566ade39a6a1f0fce"  # main, "Update README.md"
SUBJECTS = ("clinical_knowledge", "college_medicine", "virology")
# ISO 639-3 -> the file/config suffix of Bridging the Gap
SUFFIX = {
    "afr": "af", "amh": "am", "bam": "bm", "ibo": "ig", "nso": "nso", "sna": "sn",
    "sot": "st", "tsn": "tn", "tso": "ts", "xho": "xh", "zul": "zu",
}  # fmt: skip
LANGUAGE_NAME = {
    "af": "Afrikaans", "am": "Amharic", "bm": "Bambara", "ig": "Igbo", "nso": "Sepedi", "sn": "Shona",
    "st": "Sesotho", "tn": "Setswana", "ts": "Tsonga", "xh": "Xhosa", "zu": "Zulu",
}  # fmt: skip
ENGLISH_FROM = "am"  # the config whose English columns are the English Winogrande rows
WINOGRANDE_SPLITS = ("train_s", "dev", "test")
MMLU_SPLITS = ("dev", "val", "test")
MMLU_COLUMNS = ("Question", "OptionA", "OptionB", "OptionC", "OptionD", "Answer")
EN_MMLU_SPLITS = {"dev": "dev", "val": "validation", "test": "test"}  # raw file split -> cais/mmlu split


def winogrande_config(code: str) -> str:
    return f"winogrande_{code}"


def mmlu_config(subject: str, code: str) -> str:
    return f"mmlu_{subject}_{code}"


# raw release (InstituteforDiseaseModeling/Bridging-the-Gap-Low-Resource-African-Languages) ------------------

_WINO_FILE = re.compile(r"^winogrande_(?P<code>[a-z]+)\.csv$")
_MMLU_FILE = re.compile(rf"^(?P<subject>{'|'.join(SUBJECTS)})_(?P<split>dev|val|test)(?:_(?P<code>[a-z]+))?\.csv$")


def _wino_units(root: Path) -> list[Unit]:
    """`winogrande_<code>.csv` (the English-only `winogrande.csv` has no hub config: not imported)."""
    units = []
    for path in sorted(root.glob("winogrande_*.csv")):
        match = _WINO_FILE.match(path.name)
        if match and match["code"] in LANGUAGE_NAME:
            config = winogrande_config(match["code"])
            units.append(Unit(f"winogrande_afr/{config}", partial(_wino_rows, path, config)))
    return units


def _wino_columns(code: str) -> tuple[str, ...]:
    name = LANGUAGE_NAME[code]
    return ("qID", "English Sentence", "English Option 1", "English Option 2",
            f"{name} Sentence", f"{name} Option 1", f"{name} Option 2", "Answer", "Split")  # fmt: skip


def _wino_rows(path: Path, config: str) -> Iterator[Yielded]:
    columns = _wino_columns(config.removeprefix("winogrande_"))
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    require_columns(path, [name.strip() for name in reader.fieldnames or []], tuple(columns), "CSV")
    for raw in reader:
        split = (raw.get("Split") or "").strip()
        if split not in WINOGRANDE_SPLITS:
            yield config, split or "<missing>", "bad Split"
            continue
        try:
            answer = (str_field(raw, "Answer") or "").strip()
            if answer not in ("1", "2"):
                raise RowError("bad Answer")
            row: dict[str, Any] = {name: str_field(raw, name) for name in columns if name != "Answer"}
        except RowError as skip:
            yield config, split, str(skip)
            continue
        yield config, split, {**row, "Answer": int(answer)}


def _wino_features(config: str) -> Any:
    from datasets import Features, Value

    columns = _wino_columns(config.removeprefix("winogrande_"))
    return Features({name: Value("int64" if name == "Answer" else "string") for name in columns})


def _mmlu_units(root: Path, english: bool) -> list[Unit]:
    units = []
    for path in sorted(root.glob("*.csv")):
        match = _MMLU_FILE.match(path.name)
        if not match or (match["code"] is None) != english:
            continue
        subject, split = match["subject"], match["split"]
        if english:
            config, split = subject, EN_MMLU_SPLITS[split]
            read: Callable[..., Iterator[Yielded]] = _mmlu_en_rows
        else:
            config = mmlu_config(subject, match["code"])
            read = _mmlu_rows
        units.append(Unit(f"{config}/{split}", partial(read, path, config, split)))
    return units


def _headerless(path: Path, config: str, split: str) -> Iterator[tuple[list[str], str] | str]:
    """Rows of a headerless MMLU CSV (question, A, B, C, D, answer letter) or the reason one is skipped."""
    for values in csv.reader(io.StringIO(read_text(path), newline="")):
        if not values or values == [""]:
            continue
        if len(values) != 6:
            yield f"expected 6 columns, got {len(values)}"
            continue
        answer = values[5].strip().upper()
        if answer not in ("A", "B", "C", "D"):
            yield "bad Answer"
        elif not values[0].strip():
            yield "missing Question"
        else:
            yield values[:5], answer


def _mmlu_rows(path: Path, config: str, split: str) -> Iterator[Yielded]:
    for item in _headerless(path, config, split):
        if isinstance(item, str):
            yield config, split, item
        else:
            yield config, split, dict(zip(MMLU_COLUMNS, [*item[0], item[1]], strict=True))


def _mmlu_en_rows(path: Path, config: str, split: str) -> Iterator[Yielded]:
    """The English originals in cais/mmlu's schema: question, subject, choices, answer (0-3)."""
    for item in _headerless(path, config, split):
        if isinstance(item, str):
            yield config, split, item
        else:
            values, answer = item
            row = {"question": values[0], "subject": config, "choices": values[1:5], "answer": "ABCD".index(answer)}
            yield config, split, row


def _mmlu_features(config: str) -> Any:
    from datasets import Features, Value

    return Features({name: Value("string") for name in MMLU_COLUMNS})


def _mmlu_en_features(config: str) -> Any:
    from datasets import Features, List, Value

    text = Value("string")
    return Features({"question": text, "subject": text, "choices": List(text), "answer": Value("int64")})


_BTG_NOTES = (
    "Configs, splits and row counts from the published viewer and file trees, columns from the authors' release "
    "script (tests/fixtures/hub_cards.json); pinned to main ffb0cc0f (full SHA from its commit page). A raw import "
    "builds the same configs from the GitHub CSVs, keeping their column names (the adapters read both)."
)
SOURCES = (
    DatasetSource(
        key="winogrande_afr",
        hub_repo=HUB_REPO,
        revision=HUB_REVISION,
        splits=WINOGRANDE_SPLITS,
        codes={iso3: winogrande_config(code) for iso3, code in {**SUFFIX, "eng": ENGLISH_FROM}.items()},
        config_names=tuple(winogrande_config(code) for code in SUFFIX.values()),
        notes=_BTG_NOTES + " Fields: qID, English Sentence/Option 1/Option 2, <Language> Sentence/Option 1/Option 2, "
        "Answer (1/2), Split. English = the English columns of winogrande_am.",
        raw=RawImporter("bridging_the_gap/winogrande_s", _wino_units, _wino_features),
        layout=2,
    ),
    DatasetSource(
        key="mmlu_clinical_afr",
        hub_repo=HUB_REPO,
        revision=HUB_REVISION,
        splits=MMLU_SPLITS,
        codes=dict(SUFFIX),
        config_names=tuple(mmlu_config(subject, code) for subject in SUBJECTS for code in SUFFIX.values()),
        notes=_BTG_NOTES + " Configs mmlu_<subject>_<code>. Fields " + ", ".join(MMLU_COLUMNS) + " (Answer a letter).",
        raw=RawImporter("bridging_the_gap/mmlu_cm_ck_vir", lambda root: _mmlu_units(root, False), _mmlu_features),
        layout=2,
    ),
    DatasetSource(
        key="mmlu_en",
        hub_repo="cais/mmlu",
        revision=None,
        splits=("dev", "validation", "test"),
        codes={"eng": "en"},
        config_names=SUBJECTS,
        notes="Unpinned. The English originals of Bridging the Gap's MMLU subjects: cais/mmlu configs "
        "clinical_knowledge, college_medicine, virology (fields question, subject, choices, answer 0-3). A raw "
        "import builds them from Bridging the Gap's English CSVs (same rows).",
        raw=RawImporter("bridging_the_gap/mmlu_cm_ck_vir", lambda root: _mmlu_units(root, True), _mmlu_en_features),
    ),
)


# adapters -------------------------------------------------------------------------------------------------


HUB_WINOGRANDE_FIELDS = ("Sentence", "Option1", "Option2")
"""The hub's winogrande_<xx> columns: the authors' release script (data/create_parquet_ready_release.py) drops the
English columns and renames the language's to these, so the hub has no English text at all."""


def _winogrande_fields(language: AfricanLanguage, line: dict) -> tuple[str, str, str]:
    """The hub's column names when the row has them (translations only), else the raw release's (the mirror)."""
    if language.iso3 != "eng" and all(name in line for name in HUB_WINOGRANDE_FIELDS):
        return HUB_WINOGRANDE_FIELDS
    name = "English" if language.iso3 == "eng" else LANGUAGE_NAME[SUFFIX[language.iso3]]
    return f"{name} Sentence", f"{name} Option 1", f"{name} Option 2"


def winogrande_mcq_adapter(language: AfricanLanguage) -> Callable[[dict], dict]:
    """MCF: the sentence with its blank is the question and the two options are lettered choices, so blank-first
    sentences (7% of Amharic) and blanks attached to a prefix (Zulu "u_") render as written."""

    def adapter(line: dict) -> dict:
        sentence_field, *option_fields = _winogrande_fields(language, line)
        sentence = clean(line[sentence_field])
        if sentence.count("_") != 1:
            raise ValueError("the sentence must hold exactly one blank")
        options = [clean(line[field]) for field in option_fields]
        if not all(options):
            raise ValueError("empty option")
        return {"question": sentence, "choices": options, "gold_idx": letter_index(line["Answer"], 2)}

    return adapter


def has_letter(text: str) -> bool:
    return any(character.isalpha() for character in text)


def split_at_word(before: str) -> tuple[str, str]:
    """The text before a blank as (context up to the last space, the part glued to the blank, e.g. Zulu "u")."""
    if not before or before[-1].isspace():
        return clean(before), ""
    cut = max(before.rfind(" "), 0)
    return clean(before[:cut]), before[cut:].strip()


def winogrande_partial_adapter(language: AfricanLanguage) -> Callable[[dict], PartialScoringInput]:
    """CF, partial scoring: context i = text before the blank + option i (joined as written, so "u_" gives
    "uNatalie"); continuation = the text after the blank. The blank may come first, not last. With no letter after
    the blank: full scoring, context = the text before the blank up to its last space, continuation i = the rest
    of that word + option i + what follows the blank (see the module docstring)."""

    def adapter(line: dict) -> PartialScoringInput:
        sentence_field, *option_fields = _winogrande_fields(language, line)
        sentence = clean(line[sentence_field])
        if sentence.count("_") != 1:
            raise ValueError("the sentence must hold exactly one blank")
        before, after = sentence.split("_")
        options = [clean(line[field]) for field in option_fields]
        if not all(options):
            raise ValueError("empty option")
        gold = letter_index(line["Answer"], 2)
        if not after.strip():
            raise ValueError("nothing after the blank: no continuation to score")
        if has_letter(after):
            return {"contexts": [clean(before + option) for option in options], "continuation": after.strip(),
                    "gold_idx": gold}  # fmt: skip
        context, glued = split_at_word(before)
        if not context:
            raise ValueError("no letter after the blank and no text before it: nothing to condition on")
        return {
            "contexts": [context] * len(options),
            "continuations": [clean(glued + option + after) for option in options],
            "gold_idx": gold,
        }

    return adapter


def mmlu_adapter(line: dict) -> dict:
    choices = [clean(line[f"Option{letter}"]) for letter in "ABCD"]
    return lettered_row(clean(line["Question"]), choices, line["Answer"])


def mmlu_en_adapter(line: dict) -> dict:
    """cais/mmlu rows: `choices` a list of 4, `answer` its 0-based index."""
    choices = [clean(choice) for choice in line["choices"]]
    answer = line["answer"]
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
        raise ValueError(f"answer {answer!r} out of range")
    return {"question": clean(line["question"]), "choices": choices, "gold_idx": answer}


WINOGRANDE = Family(
    benchmark="winogrande_afr",
    dataset="winogrande_afr",
    category="RES",
    template=get_mcq_prompt_function,
    adapter_for=winogrande_mcq_adapter,
    random_baseline=0.5,
    evaluation_splits=("test",),
    few_shots_split="dev",
    hf_avail_splits=WINOGRANDE_SPLITS,
    formulations=("mcf",),
)
WINOGRANDE_CF = dataclasses.replace(
    WINOGRANDE,
    template=get_partial_scoring_prompt_function,
    adapter_for=winogrande_partial_adapter,
    formulations=("cf",),
    template_kwargs=(("fix_formatting", False),),  # keep the sentence as written: no re-capitalised names
)


def winogrande_cf_metrics() -> list:
    """acc, acc_norm (characters), acc_norm_token; no acc_norm_pmi (the continuation is shared)."""
    return [
        LogLikelihoodAccMetric(normalization=None),
        LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
        LogLikelihoodAccMetric(normalization=LogProbTokenNorm()),
    ]


def winogrande_tasks(languages: list[AfricanLanguage]) -> list[LightevalTaskConfig]:
    """Per language: CF (partial scoring, its own metrics) then MCF, in both prompt languages."""
    configs = []
    for language in languages:
        configs += [
            dataclasses.replace(config, metrics=winogrande_cf_metrics())
            for config in family_tasks(WINOGRANDE_CF, [language])
        ]
        configs += family_tasks(WINOGRANDE, [language])
    return configs


def mmlu_family(subject: str, english: bool = False) -> Family:
    """One subject: the translations from Bridging the Gap, or (english) the originals from cais/mmlu."""
    return Family(
        benchmark=f"mmlu_afr_{subject}",
        dataset="mmlu_en" if english else "mmlu_clinical_afr",
        category="GK",
        template=get_mcq_prompt_function,
        adapter=mmlu_en_adapter if english else mmlu_adapter,
        random_baseline=0.25,
        evaluation_splits=("test",),
        few_shots_split="dev",
        hf_avail_splits=("dev", "validation", "test") if english else MMLU_SPLITS,
        subset=(lambda language: subject)
        if english
        else (lambda language: mmlu_config(subject, language.codes["mmlu_clinical_afr"])),
    )


def tasks() -> list[LightevalTaskConfig]:
    configs = winogrande_tasks(covered_by("winogrande_afr"))
    for subject in SUBJECTS:
        configs += family_tasks(mmlu_family(subject), covered_by("mmlu_clinical_afr"))
        configs += family_tasks(mmlu_family(subject, english=True), covered_by("mmlu_en"))
    return configs
