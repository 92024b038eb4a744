"""The raw releases of NollySenti, MAFAND-MT and NTREX-128 in ../shared/data, through `data import-raw`.

Each benchmark module declares its importer (`DatasetSource.raw`); these tests read the session's raw mirror
(tests/raw_mirror.py: one `import_raw` of the whole of ../shared/data) and check it against the raw files, read
here independently (pandas for the TSVs, as the authors' own training code reads them; `json` line by line; the
NTREX text files split on line feeds):

* the counts: every config and split, the rows skipped and why;
* the rows: the mirror's rows are the release's, in its order, text unchanged (NFC or not);
* NTREX-128's file names -> hub configs, and the scripts the texts are written in against the configs' suffixes;
* the translation direction on every row of every MAFAND and NTREX task (both forms, both directions): the prompt
  is `<SRC>: <the release's source line> <TGT>:` with the pivot's tag on the pivot's side, and the one gold is the
  release's other line of the same pair. `test_direction_check_catches_*` break the pairing on purpose (sides
  swapped in a task, a reference file shifted by one line, the two sides of MAFAND rows exchanged) and require
  the check to report every row.

The gold-answer and prompt-hygiene tests (tests/benchmarks/test_gold_answers.py, tests/prompts/test_prompt_hygiene.py)
run on every row of these releases too.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

from finetasks_afr.data.mirror import MirrorReport, import_raw  # noqa: E402
from tests.raw_mirror import EMPTY_RELEASE_ROWS, mirror_files, raw_mirror, read_jsonl  # noqa: E402

NOLLYSENTI_ROWS = {  # config -> split -> (rows, skipped), counted in the raw files
    "en": {"train": (1302, 0), "validation": (100, 0), "test": (500, 0)},
    "ha": {"train": (410, 0), "validation": (100, 0), "test": (500, 0)},
    "ig": {"train": (410, 0), "validation": (100, 0), "test": (500, 0)},
    "pcm": {"train": (410, 0), "validation": (98, 2), "test": (500, 0)},  # dev lines 25 and 34: no review
    "yo": {"train": (900, 0), "validation": (100, 0), "test": (500, 0)},
}
MAFAND_ROWS = {  # pair -> (validation, test) rows: dev.json and test.json, one JSON object a line; no train here
    "en-amh": (899, 1037), "en-hau": (1300, 1500), "en-ibo": (1500, 1500), "en-kin": (460, 1006),
    "en-lug": (1500, 1500), "en-luo": (1500, 1500), "en-nya": (483, 1004), "en-pcm": (1484, 1564),
    "en-sna": (556, 1005), "en-swa": (1791, 1835), "en-tsn": (1342, 1500), "en-twi": (1284, 1500),
    "en-xho": (486, 1002), "en-yor": (1544, 1558), "en-zul": (1239, 998), "fr-bam": (1500, 1500),
    "fr-bbj": (1133, 1430), "fr-ewe": (1414, 1563), "fr-fon": (1227, 1579), "fr-mos": (1492, 1574),
    "fr-wol": (1506, 1500),
}  # fmt: skip
_NTREX = (
    "afr_Latn amh_Ethi bem_Latn ewe_Latn hau_Latn ibo_Latn kin_Latn mey_Arab mlg_Latn nde_Latn nso_Latn nya_Latn "
    "orm_Ethi shi_Arab sna_Latn som_Latn ssw_Latn swa_Latn tir_Ethi tsn_Latn ven_Latn wol_Latn xho_Latn yor_Latn "
    "zul_Latn"
)
NTREX_CONFIGS = _NTREX.split()
NTREX_FILES = {config: config.split("_")[0] for config in NTREX_CONFIGS} | {"sna_Latn": "sna-Latn"}
"""Hub config -> the `newstest2019-ref.<name>.txt` it is read from (written here, not taken from ntrex.py)."""
NTREX_LINES = 1997
SCRIPTS = {"Latn": "LATIN", "Ethi": "ETHIOPIC", "Arab": "ARABIC"}
TEXT_SCRIPT_DIFFERS = {"orm_Ethi": "LATIN"}  # the hub's config name says Ethiopic; the text is Qubee (Latin)


@pytest.fixture(scope="module")
def imported(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MirrorReport]:
    return raw_mirror(shared_data, tmp_path_factory)


# ------------------------------------------------------------------------------------------ counts


def counts(report: MirrorReport, dataset: str) -> dict[str, dict[str, tuple[int, int]]]:
    """config -> split -> (rows, skipped) of one dataset in an import report."""
    return {config: {split: (count.rows, count.skipped) for split, count in splits.items()}
            for config, splits in report.counts[dataset].items()}  # fmt: skip


@pytest.mark.shared_data
def test_counts_of_every_config_and_split(imported: tuple[Path, MirrorReport]) -> None:
    """The full test sets (NollySenti 500 a language, MAFAND en-hau 1,500, NTREX-128 1,997 a language), every
    other split, and the only rows left out: two blank Nigerian Pidgin dev reviews and Pulaar, which has no hub
    config. MAFAND has no train split here (the release's train files were left out of ../shared/data)."""
    _, report = imported
    assert not report.errors
    assert counts(report, "nollysenti") == NOLLYSENTI_ROWS
    assert dict(report.counts["nollysenti"]["pcm"]["validation"].reasons) == {"missing pcm_review": 2}

    expected = {pair: {"validation": (dev, 0), "test": (test, 0)} for pair, (dev, test) in MAFAND_ROWS.items()}
    assert counts(report, "mafand") == expected
    assert report.rows("mafand", "en-hau", "test") == 1500
    assert report.rows("mafand") == 54_795 and report.rows("mafand", split="test") == 29_155

    expected_ntrex = {config: {"test": (NTREX_LINES, 0)} for config in NTREX_CONFIGS}
    assert counts(report, "ntrex") == expected_ntrex | {"fuc": {"test": (0, NTREX_LINES)}}
    assert dict(report.counts["ntrex"]["fuc"]["test"].reasons) == {
        "no config of masakhane/ntrex_african for NTREX-128's 'fuc'": NTREX_LINES
    }
    summary = report.summary()
    assert "nollysenti: 5 configs, 6430 rows, 2 skipped" in summary
    assert "mafand: 21 configs, 54795 rows, 0 skipped" in summary
    assert "ntrex: 25 configs, 49925 rows, 1997 skipped" in summary


@pytest.mark.shared_data
def test_the_mirror_loads_with_the_hub_schema(imported: tuple[Path, MirrorReport], tmp_path: Path) -> None:
    """Through `datasets`, offline, as lighteval loads it: configs, splits and features of the hub's schema."""
    import datasets

    mirror, _ = imported
    load = datasets.load_dataset
    nolly = load(str(mirror / "nollysenti"), name="yo", split="test", cache_dir=str(tmp_path))
    assert (nolly.num_rows, list(nolly.features)) == (500, ["review", "label"])
    assert set(nolly["label"]) == {"positive", "negative"}
    mafand = load(str(mirror / "mafand"), name="en-hau", cache_dir=str(tmp_path))
    assert set(mafand) == {"validation", "test"} and mafand["test"].num_rows == 1500
    assert mafand["test"].features["translation"] == datasets.Translation(languages=["en", "hau"])
    ntrex = load(str(mirror / "ntrex"), name="orm_Ethi", split="test", cache_dir=str(tmp_path))
    assert (ntrex.num_rows, list(ntrex.features)) == (NTREX_LINES, ["sentence_eng_Latn", "sentence_orm_Ethi"])
    assert datasets.get_dataset_config_names(str(mirror / "ntrex")) == sorted(NTREX_CONFIGS)


# ------------------------------------------------------------------------------------ the rows themselves


def raw_nollysenti(shared_data: Path, lang: str, file: str) -> list[dict[str, str]]:
    """A raw NollySenti file as pandas reads it (the authors' tooling), blank reviews dropped."""
    import pandas as pd

    frame = pd.read_csv(shared_data / "nollysenti" / lang / file, sep="\t", dtype=str, keep_default_na=False)
    return [{"review": review, "label": label} for review, label in zip(frame[f"{lang}_review"], frame["sentiment"],
            strict=True) if review.strip()]  # fmt: skip


def raw_mafand(shared_data: Path, pair: str, file: str) -> list[tuple[str, str]]:
    """(pivot text, language text) of every line of a raw MAFAND file, in order."""
    pivot, own = pair.split("-")
    lines = (shared_data / "mafand" / pair / file).read_text(encoding="utf-8").split("\n")
    return [(row["translation"][pivot], row["translation"][own]) for row in map(json.loads, filter(str.strip, lines))]


def _text_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]


def raw_ntrex(shared_data: Path, config: str) -> list[tuple[str, str]]:
    """(English line, reference line) of NTREX-128, paired by line number."""
    folder = shared_data / "ntrex" / "NTREX-128"
    english = _text_lines(folder / "newstest2019-src.eng.txt")
    reference = _text_lines(folder / f"newstest2019-ref.{NTREX_FILES[config]}.txt")
    assert len(english) == len(reference) == NTREX_LINES
    return list(zip(english, reference, strict=True))


def release_pairs(shared_data: Path, dataset: str, config: str) -> list[tuple[str, str]]:
    """(pivot text, language text) of every test row as the release pairs them."""
    return raw_mafand(shared_data, config, "test.json") if dataset == "mafand" else raw_ntrex(shared_data, config)


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_mirror_rows_are_the_release_rows(imported: tuple[Path, MirrorReport], shared_data: Path) -> None:
    """Row for row, in order, the text as released: CSV quoting undone in NollySenti (the files are pandas-written:
    197 reviews holding a double quote are wrapped in quotes, their own doubled), not NFC-normalised (338 of 500
    Yoruba test reviews are not NFC, and stay so in the mirror: the prompts normalise), the NTREX carriage
    returns dropped."""
    files = mirror_files(imported[0])
    for lang in NOLLYSENTI_ROWS:
        for file, split in (("train.tsv", "train"), ("dev.tsv", "validation"), ("test.tsv", "test")):
            assert read_jsonl(files["nollysenti"][lang][split]) == raw_nollysenti(shared_data, lang, file), lang
    english = read_jsonl(files["nollysenti"]["en"]["test"])
    assert english[0]["review"].endswith('offering no resolutions, "93 Days" has a really good resolution.')
    yoruba = read_jsonl(files["nollysenti"]["yo"]["test"])
    assert sum(unicodedata.normalize("NFC", row["review"]) != row["review"] for row in yoruba) == 338

    for pair in MAFAND_ROWS:
        pivot, own = pair.split("-")
        for file, split in (("dev.json", "validation"), ("test.json", "test")):
            rows = read_jsonl(files["mafand"][pair][split])
            assert [(row["translation"][pivot], row["translation"][own]) for row in rows] == raw_mafand(
                shared_data, pair, file
            ), (pair, split)
            assert all(set(row) == {"translation"} and set(row["translation"]) == {pivot, own} for row in rows)

    for config in NTREX_CONFIGS:
        rows = read_jsonl(files["ntrex"][config]["test"])
        assert [(row["sentence_eng_Latn"], row[f"sentence_{config}"]) for row in rows] == raw_ntrex(shared_data, config)
        assert all(len(row) == 2 and "\r" not in row[f"sentence_{config}"] for row in rows)


def _script(texts: list[str]) -> str:
    letters = Counter(unicodedata.name(char, "?").split()[0] for text in texts for char in text if char.isalpha())
    return letters.most_common(1)[0][0]


@pytest.mark.slow
@pytest.mark.shared_data
def test_ntrex_file_names_and_scripts_against_the_hub_configs(shared_data: Path) -> None:
    """Each hub config's text is in the script its suffix names, except `orm_Ethi`: the Oromo file is Latin
    (Qubee), the config keeps the hub's name because the tasks read it. `sna_Latn` is the file `sna-Latn`, mey and
    shi are Arabic script, and Pulaar (`fuc`) is the one African file without a hub config."""
    for config in NTREX_CONFIGS:
        script = _script([reference for _, reference in raw_ntrex(shared_data, config)])
        assert script == TEXT_SCRIPT_DIFFERS.get(config, SCRIPTS[config.split("_")[1]]), (config, script)
    names = {path.name.split(".")[1] for path in (shared_data / "ntrex" / "NTREX-128").glob("newstest2019-ref.*.txt")}
    assert names - set(NTREX_FILES.values()) == {"fuc"}


# ------------------------------------------------------------------------------------------ direction

_QUERY = re.compile(r"(?P<source_tag>[A-Z]+): (?P<source>.*) (?P<target_tag>[A-Z]+):", flags=re.DOTALL)
_VARIATION_SELECTORS = re.compile("[\ufe00-\ufe0f]")
PIVOT_TAGS = {"en": "EN", "fr": "FR"}


def normalise(text: str) -> str:
    """What the suite's cleaning and lighteval's translation template may do to a release's text, and nothing more:
    NFC, no format (Cf) or private-use (Co) characters / variation selectors, escaped line breaks as spaces, single
    spaces, trimmed (the suite's `clean`); the first letter upper-cased and the final punctuation mark replaced by
    the language's own (the template: `com` -> `Com`, Amharic `2ኛ.` -> `2ኛ።`), so both are forgiven."""
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Co"))  # by category, joiners too
    text = unicodedata.normalize("NFC", _VARIATION_SELECTORS.sub("", text))
    text = " ".join(re.sub(r"\\[nrt]", " ", text).split())
    while text and unicodedata.category(text[-1]).startswith("P"):
        text = text[:-1].rstrip()
    return text[:1].upper() + text[1:]


def direction_problems(config: Any, pairs: list[tuple[str, str]], rows: list[dict[str, Any]]) -> list[str]:
    """Every row whose document is not `<pivot tag>: <pivot line> <TAG>:` -> the language line (pivot -> X), or
    `<TAG>: <language line> <pivot tag>:` -> the pivot line (X -> pivot), the lines being the release's row i."""
    from finetasks_afr.benchmarks.common import TASK_INFO

    benchmark = TASK_INFO[config.name].benchmark
    direction = benchmark.rsplit("_", 1)[1]  # en2xx, xx2en, fr2xx, xx2fr
    pivot_first = not direction.startswith("xx")
    pivot_tag = PIVOT_TAGS[direction.replace("xx", "").replace("2", "")]
    assert len(pairs) == len(rows), config.name
    problems = []
    for index, ((pivot_text, own_text), row) in enumerate(zip(pairs, rows, strict=True)):
        source, reference = (pivot_text, own_text) if pivot_first else (own_text, pivot_text)
        doc = config.prompt_function(dict(row), config.name)
        empty = index in EMPTY_RELEASE_ROWS.get((TASK_INFO[config.name].dataset, config.hf_subset), ())
        if empty != (doc is None):
            what = "turned down" if doc is None else "has no visible text, yet was not turned down"
            problems.append(f"{config.name} row {index}: {what}")
        if doc is None or empty:
            continue
        match = _QUERY.fullmatch(doc.query)
        golds = [normalise(gold) for gold in doc.get_golds()]
        if match is None:
            problems.append(f"{config.name} row {index}: query {doc.query[:60]!r} is not `<SRC>: <source> <TGT>:`")
        elif (match["source_tag"] == pivot_tag) != pivot_first or (match["target_tag"] == pivot_tag) == pivot_first:
            problems.append(f"{config.name} row {index}: tags {match['source_tag']} -> {match['target_tag']}")
        elif normalise(match["source"]) != normalise(source):
            problems.append(f"{config.name} row {index}: source {match['source'][:50]!r} != {source[:50]!r}")
        elif golds != [normalise(reference)]:
            problems.append(f"{config.name} row {index}: gold {golds[0][:50]!r} != {reference[:50]!r}")
    return problems


def translation_tasks(mirror: Path, modules: tuple[str, ...] = ("mafand", "ntrex")) -> list[Any]:
    """The tasks of the translation families, both forms (ll, gen), built reading `mirror`."""
    import importlib

    import finetasks_afr.tasks  # noqa: F401  (the suite's lighteval fixes, as the CLI applies them)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        configs = [c for name in modules for c in importlib.import_module(f"finetasks_afr.benchmarks.{name}").tasks()]
    return configs


def check_directions(
    mirror: Path, shared_data: Path, configs: list[Any], dataset_of: Callable[[Any], str]
) -> tuple[list[str], Counter[str]]:
    """Problems of every task on every row of its mirror config, and rows checked per dataset."""
    files = mirror_files(mirror)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    problems: list[str] = []
    checked: Counter[str] = Counter()
    for config in configs:
        key = (dataset_of(config), config.hf_subset)
        if key not in rows:
            assert config.hf_repo == str(mirror / key[0]), f"{config.name} does not read the mirror"
            rows[key] = read_jsonl(files[key[0]][config.hf_subset][config.evaluation_splits[0]])
            pairs[key] = release_pairs(shared_data, *key)
        problems += direction_problems(config, pairs[key], rows[key])
        checked[key[0]] += len(rows[key])
    return problems, checked


def _dataset_of(config: Any) -> str:
    from finetasks_afr.benchmarks.common import TASK_INFO

    return TASK_INFO[config.name].dataset


@pytest.mark.slow
@pytest.mark.shared_data
def test_translation_direction_on_every_row(imported: tuple[Path, MirrorReport], shared_data: Path) -> None:
    """Every MAFAND and NTREX task, log-likelihood and generation forms, both directions, on every test row: source
    and reference as the release pairs them, the pivot's tag on the pivot's side."""
    mirror, _ = imported
    configs = translation_tasks(mirror)
    assert len(configs) == 84 + 100
    problems, checked = check_directions(mirror, shared_data, configs, _dataset_of)
    assert not problems, f"{len(problems)} rows, first: {problems[:10]}"
    assert checked == {"mafand": 4 * sum(test for _, test in MAFAND_ROWS.values()), "ntrex": 4 * 25 * NTREX_LINES}


# ------------------------------------------------------------------------------------ the check can fail


def _differing(pairs: list[tuple[str, str]]) -> int:
    """Rows whose two sides differ once normalised (a row with the same text on both sides cannot show a swap)."""
    return sum(normalise(pivot) != normalise(own) for pivot, own in pairs)


@pytest.mark.slow
@pytest.mark.shared_data
def test_direction_check_catches_swapped_sides(
    imported: tuple[Path, MirrorReport], shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tasks whose pair function exchanges source and reference (MAFAND's `texts`, NTREX's `field_pair` fields):
    every row whose two sides differ is reported, in every task."""
    from finetasks_afr.benchmarks import mafand, ntrex

    texts, field_pair = mafand.texts, ntrex.field_pair
    monkeypatch.setattr(mafand, "texts", lambda source, target: texts(target, source))
    monkeypatch.setattr(ntrex, "field_pair", lambda own, english: field_pair(english, own))
    mirror, _ = imported
    configs = [c for c in translation_tasks(mirror) if c.hf_subset in {"en-hau", "fr-bam", "hau_Latn", "orm_Ethi"}]
    assert len(configs) == 16
    for config in configs:
        pairs = release_pairs(shared_data, _dataset_of(config), config.hf_subset)
        problems, _ = check_directions(mirror, shared_data, [config], _dataset_of)
        assert len(problems) == _differing(pairs) > 0.9 * len(pairs), (config.name, len(problems))


@pytest.mark.shared_data
def test_direction_check_catches_a_reference_file_shifted_by_one_line(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An importer that pairs English line i with reference line i+1 (a lost first line): every row is reported."""
    from finetasks_afr.benchmarks import ntrex

    read_lines = ntrex.read_lines

    def shifted(path: Path) -> list[str]:
        lines = read_lines(path)
        return lines if path.name == ntrex.RAW_SOURCE else lines[1:] + lines[:1]

    monkeypatch.setattr(ntrex, "read_lines", shifted)
    import_raw(shared_data, tmp_path, datasets=["ntrex"], configs=["hau_Latn"])
    configs = [config for config in translation_tasks(tmp_path, ("ntrex",)) if config.hf_subset == "hau_Latn"]
    assert len(configs) == 4
    problems, checked = check_directions(tmp_path, shared_data, configs, _dataset_of)
    assert len(problems) == checked["ntrex"] == 4 * NTREX_LINES


@pytest.mark.shared_data
def test_direction_check_catches_mafand_rows_with_their_sides_exchanged(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An importer that files the English text under the language's key and the reverse: every row whose sides
    differ is reported, in all four tasks."""
    from finetasks_afr.benchmarks import mafand

    raw_row = mafand._raw_row

    def exchanged(raw: dict[str, Any], keys: tuple[str, str]) -> dict[str, Any]:
        row = raw_row(raw, keys)
        return {"translation": dict(zip(keys, reversed([row["translation"][key] for key in keys]), strict=True))}

    monkeypatch.setattr(mafand, "_raw_row", exchanged)
    import_raw(shared_data, tmp_path, datasets=["mafand"], configs=["en-yor"])
    configs = [config for config in translation_tasks(tmp_path, ("mafand",)) if config.hf_subset == "en-yor"]
    assert len(configs) == 4
    problems, _ = check_directions(tmp_path, shared_data, configs, _dataset_of)
    assert len(problems) == 4 * _differing(raw_mafand(shared_data, "en-yor", "test.json")) > 4 * 1500


# ---------------------------------------------------------------------------- bad files and bad rows


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")


def test_bad_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    """Rows that cannot become hub rows are counted by reason; the rows around them are kept, in order."""
    src = tmp_path / "raw"
    _write(src / "nollysenti/ha/test.tsv", 'ha_review\tsentiment\nFim mai kyau\tpositive\n\tnegative\n'
           'Ba kyau ba\tneutral\n"Ya ce ""a\'a"" kawai"\tNegative \nwani\tpositive\textra\n')  # fmt: skip
    mafand_lines = [
        '{"translation": {"en": "Good.", "hau": "Da kyau."}}', '{"translation": {"en": "Bad.", "hau": " "}}',
        '{"translation": {"en": "x", "yor": "y"}}', '{"translation": "x"}', "not json", "[1]", "",
        '{"translation": {"hau": "Na gode.", "en": "Thanks."}}',
    ]  # fmt: skip
    _write(src / "mafand/en-hau/test.json", "\n".join(mafand_lines) + "\n")
    folder = src / "ntrex/NTREX-128"
    _write(folder / "newstest2019-src.eng.txt", "One.\r\n\r\nThree.\r\nFour\u2028still four.\r\n")
    _write(folder / "newstest2019-ref.hau.txt", "Daya.\r\nBiyu.\r\n  \r\nHudu.\r\n")
    _write(folder / "newstest2019-ref.xyz.txt", "a\nb\nc\nd\n")
    _write(folder / "notes.txt", "not a reference file\n")
    out = tmp_path / "mirror"
    report = import_raw(src, out, datasets=["nollysenti", "mafand", "ntrex"])
    assert counts(report, "nollysenti") == {"ha": {"test": (2, 3)}}
    assert dict(report.counts["nollysenti"]["ha"]["test"].reasons) == {
        "missing ha_review": 1, "bad sentiment": 1, "expected 2 columns, got 3": 1,
    }  # fmt: skip
    files = mirror_files(out)
    assert read_jsonl(files["nollysenti"]["ha"]["test"]) == [
        {"review": "Fim mai kyau", "label": "positive"}, {"review": 'Ya ce "a\'a" kawai', "label": "negative"},
    ]  # fmt: skip
    assert counts(report, "mafand") == {"en-hau": {"test": (2, 5)}}
    assert dict(report.counts["mafand"]["en-hau"]["test"].reasons) == {
        "missing hau": 1, "translation keys en/yor, not en/hau": 1, "missing translation": 1, "invalid JSON": 1,
        "not a JSON object": 1,
    }  # fmt: skip
    assert read_jsonl(files["mafand"]["en-hau"]["test"]) == [
        {"translation": {"en": "Good.", "hau": "Da kyau."}}, {"translation": {"en": "Thanks.", "hau": "Na gode."}},
    ]  # fmt: skip
    # line i pairs with line i: the blank English line 2 and the blank reference line 3 are skipped, no line shifts,
    # and U+2028 inside a line is text, not a line break
    assert counts(report, "ntrex") == {"hau_Latn": {"test": (2, 2)}, "xyz": {"test": (0, 4)}}
    assert read_jsonl(files["ntrex"]["hau_Latn"]["test"]) == [
        {"sentence_eng_Latn": "One.", "sentence_hau_Latn": "Daya."},
        {"sentence_eng_Latn": "Four\u2028still four.", "sentence_hau_Latn": "Hudu."},
    ]
    assert dict(report.counts["ntrex"]["hau_Latn"]["test"].reasons) == {
        "missing sentence_eng_Latn": 1, "missing sentence_hau_Latn": 1,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        ("nollysenti/yo/dev.tsv", "review\tsentiment\nO dara\tpositive\n", r"no column yo_review in its header"),
        ("nollysenti/yo/dev.tsv", 'yo_review\tsentiment\n"O dara\tpositive\nKo dara\tnegative\n',
         r"dev\.tsv: the row at line 2 runs on to line 3: a double quote"),
        ("nollysenti/yo/dev.tsv", b"yo_review\tsentiment\n\xe0 dara\tpositive\n", r"not UTF-8 text"),
        ("mafand/en-yor/dev.json", "", r"dev\.json is empty"),
        ("ntrex/NTREX-128/newstest2019-ref.yor.txt", "a\nb\n",
         r"ref\.yor\.txt: 2 lines, but the English source newstest2019-src\.eng\.txt has 3: the files are paired"),
        ("ntrex/NTREX-128/newstest2019-src.eng.txt", None, r"newstest2019-src\.eng\.txt not found"),
    ],
)  # fmt: skip
def test_bad_files_are_named_errors_and_nothing_is_written(
    tmp_path: Path, path: str, text: str | bytes | None, message: str
) -> None:
    from finetasks_afr.data.raw import RawFileError

    src = tmp_path / "raw"
    _write(src / "nollysenti/yo/test.tsv", "yo_review\tsentiment\nO dara\tpositive\n")
    _write(src / "mafand/en-yor/test.json", '{"translation": {"en": "Good.", "yor": "O dara."}}\n')
    _write(src / "ntrex/NTREX-128/newstest2019-src.eng.txt", "One.\nTwo.\nThree.\n")
    _write(src / "ntrex/NTREX-128/newstest2019-ref.hau.txt", "Daya.\nBiyu.\nUku.\n")
    if text is None:
        (src / path).unlink()
    else:
        _write(src / path, text)
    with pytest.raises(RawFileError, match=message):
        import_raw(src, tmp_path / "mirror", datasets=["nollysenti", "mafand", "ntrex"])
    assert not (tmp_path / "mirror").exists() or not list((tmp_path / "mirror").rglob("*.jsonl"))
