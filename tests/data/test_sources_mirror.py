"""Dataset sources and local mirrors: hf_location, import_raw on the real raw data, mirror_from_hub, the CLI.

The mirror must load with `datasets.load_dataset(<dir>, name=<config>)` exactly as lighteval calls it, offline,
with the hub's config names, split names and fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
import yaml
from typer.testing import CliRunner

from finetasks_afr.cli.data import data_app
from finetasks_afr.data import mirror as mirror_mod
from finetasks_afr.data.mirror import HubUnreachableError, MirrorError, MirrorReport, import_raw, mirror_from_hub
from finetasks_afr.data.sources import DATA_DIR_ENV, SOURCES, data_dir, hf_location

datasets.disable_progress_bars()
REAL_LOAD_DATASET = datasets.load_dataset
RealMirror = tuple[Path, MirrorReport]  # the mirror built from shared/data, and its import report


def load(path: Path, config: str, split: str, cache: Path) -> datasets.Dataset:
    return REAL_LOAD_DATASET(str(path), name=config, split=split, cache_dir=str(cache))


def front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


# --------------------------------------------------------------------------------------------- sources


def test_sources_cover_every_key() -> None:
    expected = {
        "winogrande_afr",
        "mmlu_clinical_afr",
        "mmlu_en",
        "belebele",
        "afrimmlu",
        "afrixnli",
        "afrimgsm",
        "sib200",
        "masakhanews",
        "afrisenti",
        "afriqa",
        "naijarc",
        "uhura_arc_easy",
        "openai_mmmlu",
        "global_mmlu",
        "uhura_truthfulqa",
        "injongointent",
        "nollysenti",
        "afrihate",
        "mafand",
        "ntrex",
        "salt",
        "xlsum",
        "afridiacritics",
    }
    assert set(SOURCES) == expected
    assert SOURCES["afrimmlu"].revision == "refs/pr/1"
    assert SOURCES["afriqa"].hub_repo == "masakhane/afriqa-gold-passages"
    for key, src in SOURCES.items():
        assert src.key == key and src.splits and src.notes
        if src.revision is None:
            assert "unpinned" in src.notes.lower(), key


def test_hf_location_switches_between_hub_and_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    assert data_dir() is None
    assert hf_location("afrimmlu") == ("masakhane/afrimmlu", "refs/pr/1")
    assert hf_location("sib200") == ("Davlan/sib200", None)

    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    (tmp_path / "sib200" / "hau_Latn").mkdir(parents=True)  # half-built: no README yet
    assert hf_location("sib200") == ("Davlan/sib200", None)
    (tmp_path / "sib200" / "README.md").write_text("---\nconfigs: []\n---\n")
    assert hf_location("sib200") == (str(tmp_path / "sib200"), None)
    assert hf_location("afrimmlu") == ("masakhane/afrimmlu", "refs/pr/1")  # no mirror for it: hub

    monkeypatch.setenv(DATA_DIR_ENV, "")
    assert hf_location("sib200") == ("Davlan/sib200", None)


def test_hf_location_unknown_key() -> None:
    with pytest.raises(KeyError, match="no_such_dataset"):
        hf_location("no_such_dataset")


# -------------------------------------------------------------------------------- real raw data import

EXPECTED_TOTALS = {  # dataset: (configs, rows, skipped) on shared/data
    "winogrande_afr": (11, 40414, 0),  # 11 x 3674 (the English-only file has no hub config)
    "mmlu_clinical_afr": (33, 7568, 0),  # 3 subjects x 11 languages x (5 + val + test)
    "mmlu_en": (3, 688, 0),  # the English originals, as cais/mmlu configs
    "belebele": (12, 10800, 0),
    "sib200": (59, 59236, 0),
    "masakhanews": (16, 9354, 0),
    "afrisenti": (14, 48033, 0),
    "afriqa": (9, 7206, 4),
    "nollysenti": (5, 6430, 2),  # 2 blank pcm dev reviews (tests/data/test_raw_releases.py has every split)
    "mafand": (21, 54795, 0),  # dev + test of 21 pairs (no train files in shared/data)
    "ntrex": (25, 49925, 1997),  # 25 x 1997; Pulaar (fuc) has no config of masakhane/ntrex_african
}


@pytest.fixture(scope="module")
def real_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> RealMirror:
    out = tmp_path_factory.mktemp("mirror")
    report = import_raw(shared_data, out)
    return out, report


@pytest.mark.slow
@pytest.mark.shared_data
def test_import_raw_real_totals(real_mirror: RealMirror) -> None:
    out, report = real_mirror
    assert {name: (c, r, s) for name, c, r, s in report.per_dataset()} == EXPECTED_TOTALS
    assert not report.errors
    assert not list(out.rglob("*.tmp"))
    for key in EXPECTED_TOTALS:
        assert (out / key / "README.md").is_file()
    # the 4 afriqa rows without a usable question or answer
    assert report.skipped("afriqa", "kin", "test") == 2
    assert report.skipped("afriqa", "twi", "validation") == 1
    assert report.skipped("afriqa", "twi", "train") == 1
    summary = report.summary()
    assert "afriqa: 9 configs, 7206 rows, 4 skipped" in summary
    assert "bad answer_pivot" in summary


FIELDS = {
    "winogrande_afr": [
        "qID",
        *(f"{lang} {field}" for lang in ("English", "Zulu") for field in ("Sentence", "Option 1", "Option 2")),
        "Answer",
        "Split",
    ],
    "mmlu_clinical_afr": ["Question", "OptionA", "OptionB", "OptionC", "OptionD", "Answer"],
    "mmlu_en": ["question", "subject", "choices", "answer"],
    "belebele": [
        "link",
        "question_number",
        "flores_passage",
        "question",
        "mc_answer1",
        "mc_answer2",
        "mc_answer3",
        "mc_answer4",
        "correct_answer_num",
        "dialect",
        "ds",
    ],
    "sib200": ["index_id", "category", "text"],
    "masakhanews": ["category", "headline", "text", "url"],
    "afrisenti": ["tweet", "label"],
    "afriqa": ["answer_pivot", "context", "id", "question_lang", "question_translated", "title", "answer_lang"],
}

LOAD_CASES = [
    ("sib200", "hau_Latn", "test", 204),
    ("sib200", "zul_Latn", "validation", 99),
    ("sib200", "eng_Latn", "train", 701),
    ("winogrande_afr", "winogrande_zu", "test", 1767),
    ("winogrande_afr", "winogrande_zu", "train_s", 640),
    ("winogrande_afr", "winogrande_zu", "dev", 1267),
    ("mmlu_clinical_afr", "mmlu_virology_zu", "test", 166),
    ("mmlu_en", "clinical_knowledge", "validation", 29),
    ("mmlu_en", "clinical_knowledge", "test", 265),
    ("mmlu_clinical_afr", "mmlu_college_medicine_am", "dev", 5),
    ("belebele", "zul_Latn", "test", 900),
    ("belebele", "eng_Latn", "test", 900),
    ("masakhanews", "hau", "test", 637),
    ("masakhanews", "eng", "validation", 472),  # multi-line quoted fields
    ("afrisenti", "hau", "test", 5303),
    ("afrisenti", "orm", "validation", 396),  # raw file has an extra ID column
    ("afriqa", "hau", "test", 300),
    ("afriqa", "swa", "test", 295),
    ("afriqa", "yor", "train", 248),
]


@pytest.mark.shared_data
@pytest.mark.parametrize(("key", "config", "split", "rows"), LOAD_CASES)
def test_mirror_loads_offline_like_lighteval(
    real_mirror: RealMirror, tmp_path: Path, offline: None, key: str, config: str, split: str, rows: int
) -> None:
    out, report = real_mirror
    dataset = load(out / key, config, split, tmp_path)
    assert dataset.num_rows == rows == report.rows(key, config, split)
    assert list(dataset.features) == FIELDS[key]


@pytest.mark.shared_data
def test_mirror_values_and_types(real_mirror: RealMirror, tmp_path: Path, offline: None) -> None:
    out, _ = real_mirror
    sib = load(out / "sib200", "hau_Latn", "test", tmp_path)[0]
    assert sib["index_id"] == 1523 and sib["category"] == "science/technology"
    assert sib["text"].startswith("Maye gurbi yana")

    wino = load(out / "winogrande_afr", "winogrande_zu", "test", tmp_path)
    assert wino[0]["qID"] == "302U8RURJ1F4PRVV7VD96AIODKDVNB-2"
    assert wino[0]["Zulu Sentence"].startswith("URandy") and "_" in wino[0]["Zulu Sentence"]
    assert (wino[0]["Zulu Option 1"], wino[0]["Answer"]) == ("Randy ", 2)  # as a CSV loader types the hub CSVs
    assert set(wino["Answer"]) == {1, 2} and set(wino["Split"]) == {"test"}
    assert wino[0]["English Sentence"].startswith("Randy did not like")

    mmlu = load(out / "mmlu_en", "virology", "dev", tmp_path)[0]
    assert mmlu["question"] == "Why are parvoviruses a highly impactful parasite?" and mmlu["answer"] == 0
    assert mmlu["subject"] == "virology" and len(mmlu["choices"]) == 4
    zulu = load(out / "mmlu_clinical_afr", "mmlu_virology_zu", "dev", tmp_path)[0]
    assert zulu["Question"].startswith("Kungani amagciwane") and zulu["Answer"] == "A"

    bele = load(out / "belebele", "zul_Latn", "test", tmp_path)
    assert bele.features["question_number"].dtype == "int64"
    assert set(bele["correct_answer_num"]) == {"1", "2", "3", "4"} and set(bele["dialect"]) == {"zul_Latn"}

    news = load(out / "masakhanews", "eng", "test", tmp_path)
    assert set(news["category"]) == {"business", "entertainment", "health", "politics", "sports", "technology"}
    senti = load(out / "afrisenti", "orm", "test", tmp_path)
    assert set(senti["label"]) == {"negative", "positive", "neutral"}

    qa = load(out / "afriqa", "hau", "test", tmp_path)[0]
    assert qa["answer_pivot"] == {"answer_start": [51], "text": ["southeastern"]}
    assert qa["question_lang"] == "Awane yanki jahar Anambra take a Nijeriya?" and qa["answer_lang"] == "gabas ta kudu"


@pytest.mark.shared_data
def test_mirror_config_names(real_mirror: RealMirror, offline: None) -> None:
    out, _ = real_mirror
    assert len(datasets.get_dataset_config_names(str(out / "sib200"))) == 59
    assert set(datasets.get_dataset_config_names(str(out / "winogrande_afr"))) == {
        f"winogrande_{code}" for code in ("af", "am", "bm", "ig", "nso", "sn", "st", "tn", "ts", "xh", "zu")
    }
    assert set(datasets.get_dataset_config_names(str(out / "mmlu_en"))) == {
        "clinical_knowledge", "college_medicine", "virology",
    }  # fmt: skip
    assert set(datasets.get_dataset_config_names(str(out / "afriqa"))) == {
        "bem", "fon", "hau", "ibo", "kin", "swa", "twi", "yor", "zul",
    }  # fmt: skip
    layout = front_matter(out / "afriqa" / "README.md")
    splits = {c["config_name"]: [f["split"] for f in c["data_files"]] for c in layout["configs"]}
    assert splits["swa"] == ["test"] and splits["yor"] == ["train", "test"]
    assert splits["hau"] == ["train", "validation", "test"]


@pytest.mark.shared_data
def test_import_raw_config_filter_and_progress(shared_data: Path, tmp_path: Path) -> None:
    calls = []
    report = import_raw(
        shared_data,
        tmp_path,
        datasets=["sib200", "afrisenti"],
        configs=["hau_Latn", "zul_Latn", "hau", "yor"],
        progress=lambda done, total, label: calls.append((done, total, label)),
    )
    assert report.configs("sib200") == ["hau_Latn", "zul_Latn"]
    assert report.configs("afrisenti") == ["hau", "yor"]
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afrisenti", "sib200"]


@pytest.mark.slow
@pytest.mark.shared_data
def test_lighteval_task_reads_the_mirror(
    real_mirror: RealMirror, monkeypatch: pytest.MonkeyPatch, offline: None
) -> None:
    lighteval_task = pytest.importorskip("lighteval.tasks.lighteval_task")
    from lighteval.metrics.metrics import Metrics
    from lighteval.tasks.requests import Doc

    out, _ = real_mirror
    monkeypatch.setenv(DATA_DIR_ENV, str(out))
    repo, revision = hf_location("sib200")
    assert repo == str(out / "sib200") and revision is None

    def prompt(line, task_name=None):
        return Doc(task_name=task_name, query=line["text"], choices=["a", "b"], gold_index=0)

    config = lighteval_task.LightevalTaskConfig(
        name="mirror_probe_sib200",
        prompt_function=prompt,
        hf_repo=repo,
        hf_subset="hau_Latn",
        hf_revision=revision,
        hf_avail_splits=["train", "validation", "test"],
        evaluation_splits=["test"],
        few_shots_split="validation",
        metrics=[Metrics.loglikelihood_acc],
    )
    assert len(lighteval_task.LightevalTask(config).eval_docs()) == 204


# ----------------------------------------------------------------------------- tiny raw tree, bad rows


def write_tiny_raw(root: Path) -> Path:
    """A raw tree like shared/data with one unconvertible row per dataset."""
    sib = root / "sib200" / "hau_Latn"
    sib.mkdir(parents=True)
    (sib / "labels.txt").write_text("health\nsports\n")
    (sib / "train.tsv").write_text("index_id\tcategory\ttext\n1\thealth\tLafiya\n2\tsports\tWasanni\n")
    (sib / "dev.tsv").write_text("index_id\tcategory\ttext\n3\thealth\tA\nxx\tsports\tbad index\n")
    (sib / "test.tsv").write_text('index_id\tcategory\ttext\n4\tweather\tbad label\n5\tsports\t"quoted ""x"" text"\n')
    senti = root / "afrisenti" / "hau"
    senti.mkdir(parents=True)
    (senti / "dev.tsv").write_text("tweet\tlabel\nkai\tpositive\nwai\tangry\n\tneutral\n")
    (senti / "test.tsv").write_text("tweet\tlabel\nto\tnegative\n")
    news = root / "masakhanews" / "hau"
    news.mkdir(parents=True)
    (news / "test.tsv").write_text("category\theadline\ttext\turl\nsports\tH\tT\t/u\nweather\tH\tT\t/u\n")
    btg = root / "bridging_the_gap"
    (btg / "winogrande_s").mkdir(parents=True)
    (btg / "winogrande_s" / "winogrande_zu.csv").write_text(
        "qID,English Sentence,English Option 1,English Option 2,"
        "Zulu Sentence,Zulu Option 1,Zulu Option 2,Answer,Split\n"
        "q1,A _ b,x,y,U _ b,x ,y ,1,test\n"
        "q2,A _ c,x,y,U _ c,x ,y ,3,test\n"
        "q3,A _ d,x,y,U _ d,x ,y ,2,dev\n"
    )
    (btg / "mmlu_cm_ck_vir").mkdir()
    (btg / "mmlu_cm_ck_vir" / "virology_test_zu.csv").write_text("Q1,a,b,c,d,B\nQ2,a,b,c,E\n")
    (btg / "belebele").mkdir()
    good = {
        "link": "l",
        "question_number": 1,
        "flores_passage": "p",
        "question": "q",
        "mc_answer1": "1",
        "mc_answer2": "2",
        "mc_answer3": "3",
        "mc_answer4": "4",
        "correct_answer_num": "2",
        "dialect": "zul_Latn",
        "ds": "2023-07-21",
    }
    bad = {**good, "question_number": 2, "correct_answer_num": "5"}
    (btg / "belebele" / "belebele_zu.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    qa = root / "afriqa" / "gold_passages" / "hau"
    qa.mkdir(parents=True)
    row = {
        "answer_pivot": {"answer_start": [0], "text": ["Abuja"]},
        "context": "Abuja is the capital.",
        "id": "0",
        "question_lang": "Ina babban birni?",
        "question_translated": "Where is the capital?",
        "title": None,
        "answer_lang": "Abuja",
    }
    (qa / "gold_span_passages.afriqa.hau.en.test.json").write_text(
        json.dumps(row) + "\n" + json.dumps({**row, "id": "1", "answer_lang": float("nan")}) + "\n"
        '{"answer_pivot": {"answer_start": [], "text": [NaN]}, "id": "2", "question_lang": NaN}\n'
    )
    (qa / "gold_span_passages.afriqa.hau.en.dev.json").write_text(json.dumps({**row, "id": "3"}) + "\n{broken\n")
    return root


def test_bad_rows_are_skipped_and_counted(tmp_path: Path, offline: None) -> None:
    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    report = import_raw(src, out)
    expected = {
        ("sib200", "hau_Latn", "train"): (2, 0),
        ("sib200", "hau_Latn", "validation"): (1, 1),
        ("sib200", "hau_Latn", "test"): (1, 1),
        ("afrisenti", "hau", "validation"): (1, 2),
        ("afrisenti", "hau", "test"): (1, 0),
        ("masakhanews", "hau", "test"): (1, 1),
        ("winogrande_afr", "winogrande_zu", "test"): (1, 1),
        ("winogrande_afr", "winogrande_zu", "dev"): (1, 0),
        ("mmlu_clinical_afr", "mmlu_virology_zu", "test"): (1, 1),
        ("belebele", "zul_Latn", "test"): (1, 1),
        ("afriqa", "hau", "test"): (2, 1),
        ("afriqa", "hau", "validation"): (1, 1),
    }
    got = {
        (name, config, split): (count.rows, count.skipped)
        for name, configs in report.counts.items()
        for config, splits in configs.items()
        for split, count in splits.items()
    }
    assert got == expected
    assert report.counts["sib200"]["hau_Latn"]["validation"].reasons == {"bad index_id": 1}
    assert report.counts["afrisenti"]["hau"]["validation"].reasons == {"bad label": 1, "missing tweet": 1}
    assert report.counts["afriqa"]["hau"]["validation"].reasons == {"invalid JSON": 1}
    assert "skipped sib200" not in report.summary()  # skips are listed per config/split
    assert "skipped hau_Latn/validation: 1 (bad index_id x1)" in report.summary()

    cache = tmp_path / "cache"
    assert load(out / "sib200", "hau_Latn", "test", cache)[0]["text"] == 'quoted "x" text'
    qa = load(out / "afriqa", "hau", "test", cache)
    assert qa["answer_lang"] == ["Abuja", None] and qa["title"] == [None, None]
    assert load(out / "winogrande_afr", "winogrande_zu", "test", cache)[0] == {
        "qID": "q1",
        "English Sentence": "A _ b",
        "English Option 1": "x",
        "English Option 2": "y",
        "Zulu Sentence": "U _ b",
        "Zulu Option 1": "x ",
        "Zulu Option 2": "y ",
        "Answer": 1,
        "Split": "test",
    }


def test_a_mirror_of_an_older_layout_is_refused_with_the_rebuild_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Bridging-the-Gap mirror built before the hub's config names (layout 1, no marker) must not be silently
    bypassed for the hub (offline: a DNS error naming neither): it is refused with the command that rebuilds it."""
    from finetasks_afr.data.sources import StaleMirrorError, mirror_layout

    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    import_raw(src, out, datasets=["winogrande_afr", "sib200"])
    monkeypatch.setenv(DATA_DIR_ENV, str(out))
    assert mirror_layout(out / "winogrande_afr") == SOURCES["winogrande_afr"].layout == 2
    assert hf_location("winogrande_afr", "winogrande_zu") == (str(out / "winogrande_afr"), None)
    old = out / "winogrande_afr" / "README.md"
    old.write_text(old.read_text().replace("- finetasks-afr mirror layout: 2\n", ""))
    assert mirror_layout(out / "winogrande_afr") == 1
    with pytest.raises(StaleMirrorError, match=r"layout 1.*layout 2.*import-raw.*-d winogrande_afr"):
        hf_location("winogrande_afr", "winogrande_zu")
    assert hf_location("sib200", "hau_Latn") == (str(out / "sib200"), None)  # layout 1 is current for sib200


def test_import_raw_input_errors(tmp_path: Path) -> None:
    src = write_tiny_raw(tmp_path / "raw")
    with pytest.raises(MirrorError, match="nowhere"):
        import_raw(tmp_path / "nowhere", tmp_path / "out")
    with pytest.raises(KeyError, match="bogus"):
        import_raw(src, tmp_path / "out", datasets=["bogus"])
    with pytest.raises(MirrorError, match="afrimmlu"):
        import_raw(src, tmp_path / "out", datasets=["afrimmlu"])
    (src / "afrisenti" / "hau" / "dev.tsv").unlink()
    (src / "afrisenti" / "hau" / "test.tsv").unlink()
    (src / "afrisenti" / "hau").rmdir()
    (src / "afrisenti").rmdir()
    with pytest.raises(MirrorError, match="afrisenti"):
        import_raw(src, tmp_path / "out", datasets=["afrisenti"])
    report = import_raw(src, tmp_path / "out")  # default: datasets without raw files are noted, not fatal
    assert any("afrisenti" in note for note in report.notes)


# ----------------------------------------------------------------------------------------- atomicity


def test_readme_written_last_and_no_temp_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    replaced: list[Path] = []
    real_replace = Path.replace

    def spy(self: Path, target: str | Path) -> Path:
        replaced.append(Path(target))
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", spy)
    import_raw(src, out)
    monkeypatch.undo()
    by_dataset: dict[str, list[str]] = {}
    for path in replaced:
        by_dataset.setdefault(path.relative_to(out).parts[0], []).append(path.name)
    assert len(by_dataset) == 7
    for names in by_dataset.values():
        assert names[-1] == "README.md" and names.count("README.md") == 1
        assert all(name.endswith(".jsonl") for name in names[:-1])
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_failed_rebuild_keeps_the_previous_dataset_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild that fails half-way (disk full) leaves the previous README and the files it lists, no new data file
    and no temporary: the mirror is all-old, and re-running builds it all-new."""
    from finetasks_afr.data import local_dataset

    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    import_raw(src, out, datasets=["sib200"])
    before = {p: p.read_bytes() for p in (out / "sib200").rglob("*") if p.is_file()}
    monkeypatch.setenv(DATA_DIR_ENV, str(out))
    assert hf_location("sib200")[0] == str(out / "sib200")
    (src / "sib200" / "hau_Latn" / "train.tsv").write_text("index_id\tcategory\ttext\n1\thealth\tChanged\n")
    (src / "sib200" / "hau_Latn" / "test.tsv").write_text("index_id\tcategory\ttext\n9\tsports\tChanged too\n")

    real_write = local_dataset.atomic_write_text
    calls = {"n": 0}

    def failing(path, text):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real_write(path, text)

    monkeypatch.setattr(local_dataset, "atomic_write_text", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        import_raw(src, out, datasets=["sib200"])
    assert {p: p.read_bytes() for p in (out / "sib200").rglob("*") if p.is_file()} == before
    assert hf_location("sib200")[0] == str(out / "sib200")

    monkeypatch.setattr(local_dataset, "atomic_write_text", real_write)
    import_raw(src, out, datasets=["sib200"])  # re-running builds the new one
    texts = "".join(p.read_text() for p in (out / "sib200").rglob("*.jsonl"))
    assert "Changed" in texts and "Lafiya" not in texts


def test_rerun_replaces_and_drops_stale_files(tmp_path: Path, offline: None) -> None:
    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    import_raw(src, out, datasets=["sib200"])
    first = {p: p.read_bytes() for p in (out / "sib200").rglob("*.jsonl")}
    stale = out / "sib200" / "old_Latn" / "test.jsonl"
    stale.parent.mkdir()
    stale.write_text('{"index_id": 1, "category": "x", "text": "y"}\n')
    import_raw(src, out, datasets=["sib200"])
    assert {p: p.read_bytes() for p in (out / "sib200").rglob("*.jsonl")} == first
    assert not stale.parent.exists()
    assert [c["config_name"] for c in front_matter(out / "sib200" / "README.md")["configs"]] == ["hau_Latn"]


# ---------------------------------------------------------------------------------------------- hub


def fake_hub(
    monkeypatch: pytest.MonkeyPatch,
    repos: dict[str, dict[str, datasets.DatasetDict]],
    calls: list[tuple[str | None, ...]],
) -> None:
    def get_dataset_config_names(path, revision=None, **kwargs):
        calls.append(("configs", path, revision))
        if path not in repos:
            raise FileNotFoundError(f"Dataset '{path}' doesn't exist on the Hub")
        return list(repos[path])

    def load_dataset(path, name=None, revision=None, **kwargs):
        calls.append(("load", path, name, revision))
        return repos[path][name]

    monkeypatch.setattr(mirror_mod, "_check_hub_reachable", lambda: None)
    monkeypatch.setattr(datasets, "get_dataset_config_names", get_dataset_config_names)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def test_mirror_from_hub_writes_the_same_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: None) -> None:
    xnli_features = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"]),
        }
    )
    xnli = datasets.DatasetDict(
        {
            "validation": datasets.Dataset.from_dict(
                {"premise": ["p1"], "hypothesis": ["h1"], "label": [2]}, features=xnli_features
            ),
            "test": datasets.Dataset.from_dict(
                {"premise": ["p2", "p3"], "hypothesis": ["h2", "h3"], "label": [0, 1]}, features=xnli_features
            ),
        }
    )
    mmlu = datasets.DatasetDict(
        {
            split: datasets.Dataset.from_dict(
                {"question": [f"{split}?"], "choices": ["['a', 'b']"], "answer": ["B"], "subject": ["global_facts"]}
            )
            for split in ("dev", "test")
        }
    )
    qa = datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_dict(
                {"answer_pivot": [{"answer_start": [3], "text": ["x"]}], "title": [None], "score": [float("nan")]}
            )
        }
    )
    repos = {
        "masakhane/afrixnli": {"hau": xnli, "yor": xnli},
        "masakhane/afrimmlu": {"swa": mmlu},
        "masakhane/afriqa-gold-passages": {"hau": qa},
    }
    calls: list = []
    fake_hub(monkeypatch, repos, calls)
    out = tmp_path / "mirror"
    progress = []
    report = mirror_from_hub(out, datasets=["afrixnli", "afrimmlu", "afriqa"], progress=lambda *a: progress.append(a))
    monkeypatch.undo()
    assert not report.errors
    assert ("configs", "masakhane/afrimmlu", "refs/pr/1") in calls
    assert ("load", "masakhane/afrimmlu", "swa", "refs/pr/1") in calls
    assert ("load", "masakhane/afrixnli", "yor", None) in calls
    assert report.configs("afrixnli") == ["hau", "yor"] and report.rows("afrixnli") == 6
    assert progress[-1][:2] == (4, 4)

    cache = tmp_path / "cache"
    test = load(out / "afrixnli", "yor", "test", cache)
    assert test.features == xnli_features and test["label"] == [0, 1]
    assert load(out / "afrimmlu", "swa", "dev", cache)[0]["answer"] == "B"
    layout = front_matter(out / "afrixnli" / "README.md")
    assert [f["split"] for f in layout["configs"][0]["data_files"]] == ["validation", "test"]
    assert "refs/pr/1" in (out / "afrimmlu" / "README.md").read_text()
    row = load(out / "afriqa", "hau", "test", cache)[0]
    assert row == {"answer_pivot": {"answer_start": [3], "text": ["x"]}, "title": None, "score": None}
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_mirror_from_hub_records_a_failing_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sib = datasets.DatasetDict(
        {"test": datasets.Dataset.from_dict({"index_id": [1], "category": ["x"], "text": ["y"]})}
    )
    fake_hub(monkeypatch, {"Davlan/sib200": {"hau_Latn": sib}}, [])
    report = mirror_from_hub(tmp_path, datasets=["naijarc", "sib200"], configs=["hau_Latn"])
    assert len(report.errors) == 1 and "Davlan/NaijaRC" in report.errors[0]
    assert (tmp_path / "sib200" / "README.md").is_file() and not (tmp_path / "naijarc").exists()


def test_mirror_from_hub_explains_loading_scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hub(monkeypatch, {"masakhane/afriqa-gold-passages": {"hau": None}}, [])

    def script(*args, **kwargs):
        raise RuntimeError("Dataset scripts are no longer supported, but found afriqa-gold-passages.py")

    monkeypatch.setattr(datasets, "load_dataset", script)
    report = mirror_from_hub(tmp_path, datasets=["afriqa"])
    assert len(report.errors) == 1 and "refs/convert/parquet" in report.errors[0]
    assert not (tmp_path / "afriqa" / "README.md").exists()


def test_mirror_from_hub_fails_fast_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda *a, **k: calls.append(a))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnreachableError, match="hub is unreachable; use `finetasks-afr data import-raw`"):
        mirror_from_hub(tmp_path)
    assert not calls

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'Davlan/sib200' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(mirror_mod, "_check_hub_reachable", lambda: None)
    monkeypatch.setattr(datasets, "get_dataset_config_names", unreachable)
    with pytest.raises(HubUnreachableError, match="copy a mirror"):
        mirror_from_hub(tmp_path, datasets=["sib200"])
    with pytest.raises(KeyError, match="bogus"):
        mirror_from_hub(tmp_path, datasets=["bogus"])


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_import_raw(tmp_path: Path, offline: None) -> None:
    src = write_tiny_raw(tmp_path / "raw")
    out = tmp_path / "mirror"
    runner = CliRunner()
    result = runner.invoke(data_app, ["import-raw", str(src), "--out", str(out), "--dataset", "sib200"])
    assert result.exit_code == 0, result.output
    assert "sib200" in result.output and "bad index_id" in result.output
    assert (out / "sib200" / "README.md").is_file() and not (out / "afrisenti").exists()

    result = runner.invoke(data_app, ["import-raw", str(tmp_path / "missing"), "--out", str(out)])
    assert result.exit_code == 2 and "missing" in result.output
    result = runner.invoke(data_app, ["import-raw", str(src), "--out", str(out), "-d", "nope"])
    assert result.exit_code == 2 and "'nope'" in result.output
    result = runner.invoke(data_app, ["import-raw", str(src), "--out", str(out), "-d", "naijarc"])
    assert result.exit_code == 2 and "naijarc" in result.output


def test_cli_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = runner.invoke(data_app, ["mirror", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "hub is unreachable" in result.output
    result = runner.invoke(data_app, ["mirror", "--out", str(tmp_path), "--dataset", "nope"])
    assert result.exit_code == 2 and "'nope'" in result.output

    monkeypatch.delenv("HF_HUB_OFFLINE")
    sib = datasets.DatasetDict(
        {"test": datasets.Dataset.from_dict({"index_id": [1], "category": ["x"], "text": ["y"]})}
    )
    fake_hub(monkeypatch, {"Davlan/sib200": {"hau_Latn": sib, "yor_Latn": sib}}, [])
    result = runner.invoke(data_app, ["mirror", "--out", str(tmp_path), "-d", "sib200", "-c", "yor_Latn"])
    assert result.exit_code == 0, result.output
    assert [c["config_name"] for c in front_matter(tmp_path / "sib200" / "README.md")["configs"]] == ["yor_Latn"]


def test_cli_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    result = CliRunner().invoke(data_app, ["sources"])
    assert result.exit_code == 0 and "refs/pr/1" in result.output


def test_every_source_has_its_licence_recorded_as_the_docs_table_says() -> None:
    """What an exported copy of a dataset's documents carries (`finetasks-afr export lm-eval`'s README)."""
    from finetasks_afr.data.sources import LICENCES, SOURCES

    assert set(LICENCES) == set(SOURCES)
    table = (Path(__file__).resolve().parents[2] / "docs" / "tasks-and-data.md").read_text(encoding="utf-8")
    for key in ("sib200", "belebele", "afrisenti", "mafand", "xlsum", "openai_mmmlu"):
        assert LICENCES[key].split(":")[0] in table, key
