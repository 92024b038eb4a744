"""Fault tests of `finetasks-afr data import-raw`, `data mirror` and `longppl prepare`'s output (issue 15).

Every bad input ends in a named error (exit 2, no traceback, the message names the file / column / config and the
fix, nothing written, no `.tmp` left) or is handled as a user wants (a byte order mark is just removed). The raw
tree is tiny: two AfriSenti languages and one SIB-200 language, laid out as in shared/data.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from typer.testing import CliRunner

from finetasks_afr.cli import app
from tests.unprivileged import read_only_folder, run_cli_unprivileged

datasets.disable_progress_bars()

TWEETS = "tweet\tlabel\nkai\tpositive\nwai\tnegative\n"


pytestmark = pytest.mark.usefixtures("offline")  # tests/data/conftest.py


def raw_tree(root: Path) -> Path:
    for lang in ("hau", "yor"):
        folder = root / "afrisenti" / lang
        folder.mkdir(parents=True)
        (folder / "dev.tsv").write_text(TWEETS, encoding="utf-8")
        (folder / "test.tsv").write_text(TWEETS, encoding="utf-8")
    sib = root / "sib200" / "hau_Latn"
    sib.mkdir(parents=True)
    (sib / "test.tsv").write_text("index_id\tcategory\ttext\n1\thealth\tLafiya\n2\tsports\tWasanni\n")
    return root


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


def flat(text: str) -> str:
    """Without whitespace: rich wraps long lines (and folds long paths) at the terminal width."""
    return "".join(text.split())


def assert_named_error(code: int, output: str, *needles: str | Path) -> None:
    assert code == 2, output
    assert "Traceback" not in output and "error:" in output
    for needle in needles:
        assert flat(str(needle)) in flat(output), (needle, output)


def written(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) if out.exists() else []


def readme_configs(folder: Path) -> str:
    return (folder / "README.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------- raw files


def test_a_byte_order_mark_before_the_header_is_removed_and_the_rows_import(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    (src / "afrisenti" / "hau" / "dev.tsv").write_text("\ufeff" + TWEETS, encoding="utf-8")  # Excel's UTF-8
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out, "-d", "afrisenti")
    assert code == 0, output
    assert "missing tweet" not in output
    assert "config_name: hau" in readme_configs(out / "afrisenti")
    rows = datasets.load_dataset(str(out / "afrisenti"), "hau", split="validation", cache_dir=str(tmp_path / "c"))
    assert rows["tweet"] == ["kai", "wai"]


def test_a_tsv_without_its_label_column_is_a_named_error(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    bad = src / "afrisenti" / "yor" / "test.tsv"
    bad.write_text("ID\ttweet\n1\tkai\n")
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out)
    assert_named_error(code, output, bad, "no column label", "columns found: ID, tweet", "restore the header")
    assert written(out) == []


@pytest.mark.slow
def test_an_empty_raw_file_is_a_named_error(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    empty = src / "afrisenti" / "hau" / "test.tsv"
    empty.write_text("")
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out, "-d", "afrisenti")
    assert_named_error(code, output, empty, "is empty", "copy it again", "delete it if that split does not exist")
    assert written(out) == []


def test_a_non_utf8_byte_names_file_and_line_and_nothing_is_half_written(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    bad = src / "sib200" / "hau_Latn" / "test.tsv"
    bad.write_bytes(b"index_id\tcategory\ttext\n1\thealth\tLafiya\n2\tsports\tWasanni caf\xe9\n")  # Latin-1
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out)
    assert_named_error(code, output, bad, "not UTF-8", "byte 0xe9 at line 3", "save it as UTF-8")
    assert written(out) == []  # afrisenti (read first, fine) was not written either


def test_a_wino_csv_without_its_columns_is_a_named_error(tmp_path: Path) -> None:
    src = tmp_path / "raw"
    wino = src / "bridging_the_gap" / "winogrande_s"
    wino.mkdir(parents=True)
    (wino / "winogrande_zu.csv").write_text("qID,English Sentence,Answer,Split\nq1,A _ b,1,test\n")
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out, "-d", "winogrande_afr")
    assert_named_error(code, output, wino / "winogrande_zu.csv", "no column English Option 1", "columns found: qID")
    assert written(out) == []


def test_a_config_matching_nothing_is_a_named_error_with_close_matches(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out, "-c", "hau_Latm")
    assert_named_error(code, output, "'hau_Latm'", "close matches: hau_Latn", "nothing was written", "hau, hau_Latn")
    assert "FINETASKS_AFR_DATA_DIR" not in output
    assert written(out) == []


def test_a_config_found_in_one_dataset_builds_only_that_one(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    out = tmp_path / "mirror"
    code, output = invoke("data", "import-raw", src, "--out", out, "-c", "yor")
    assert code == 0, output
    assert sorted(p.name for p in out.iterdir()) == ["afrisenti"]
    assert "config_name: yor" in readme_configs(out / "afrisenti")


def test_stale_temporaries_of_a_killed_run_are_removed(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    out = tmp_path / "mirror"
    assert invoke("data", "import-raw", src, "--out", out)[0] == 0
    leftovers = [out / "afrisenti" / "hau" / ".test-0123.jsonl.x1y2.tmp", out / "afrisenti" / ".README.md.z9.tmp"]
    for leftover in leftovers:
        leftover.write_text("half")
    assert invoke("data", "import-raw", src, "--out", out)[0] == 0
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_a_reimported_mirror_is_not_served_stale_rows_by_the_datasets_cache(tmp_path: Path) -> None:
    """`datasets` caches a local folder by name, config and README YAML: a fingerprint in the README's prose (the
    old guard) did not reach its cache key, so a re-import loaded the first import's rows."""
    src = raw_tree(tmp_path / "raw")
    out, cache = tmp_path / "mirror", str(tmp_path / "cache")
    assert invoke("data", "import-raw", src, "--out", out, "-d", "afrisenti")[0] == 0
    assert datasets.load_dataset(str(out / "afrisenti"), "hau", split="test", cache_dir=cache)["tweet"] == [
        "kai",
        "wai",
    ]
    (src / "afrisenti" / "hau" / "test.tsv").write_text("tweet\tlabel\nsabo\tneutral\n")
    assert invoke("data", "import-raw", src, "--out", out, "-d", "afrisenti")[0] == 0
    assert datasets.load_dataset(str(out / "afrisenti"), "hau", split="test", cache_dir=cache)["tweet"] == ["sabo"]


# ------------------------------------------------------------------------------------------------ --out

LONGPPL = ["longppl", "prepare", "DOCS", "--teacher", "t", "--embedder", "e", "--top-k", "1", "--out"]


def commands(tmp_path: Path) -> dict[str, list[str | Path]]:
    src = raw_tree(tmp_path / "raw")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("")
    return {
        "import-raw": ["data", "import-raw", src, "--out"],
        "mirror": ["data", "mirror", "--out"],
        "longppl": [docs if arg == "DOCS" else arg for arg in LONGPPL],
    }


@pytest.mark.parametrize("command", ["import-raw", "mirror", "longppl"])
def test_an_out_that_is_a_file_or_under_a_file_is_refused_first(tmp_path: Path, command: str) -> None:
    args = commands(tmp_path)[command]
    afile = tmp_path / "afile"
    afile.write_text("keep")
    for out in (afile, afile / "sub"):
        code, output = invoke(*args, out)
        assert_named_error(code, output, "--out", afile, "is a file")
    assert afile.read_text() == "keep"
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["import-raw", "mirror", "longppl"])
def test_a_read_only_out_is_refused_first(tmp_path: Path, command: str) -> None:
    """In a subprocess that obeys file modes even as root (tests/unprivileged.py), so it runs in CI too."""
    args = commands(tmp_path)[command]
    with read_only_folder(tmp_path) as locked:
        result = run_cli_unprivileged([*args, locked / "mirror"], tmp_path / "home")
        assert_named_error(result.returncode, result.stdout + result.stderr, "--out", locked, "not writable")
        assert list(locked.iterdir()) == []


# ------------------------------------------------------------------------------- cases that already worked


def test_unknown_dataset_key_hub_only_key_and_missing_raw_folder_are_named_errors(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    out = tmp_path / "mirror"
    assert_named_error(*invoke("data", "import-raw", src, "--out", out, "-d", "bogus"), "bogus", "known keys")
    assert_named_error(*invoke("data", "import-raw", src, "--out", out, "-d", "afrimmlu"), "afrimmlu", "data mirror")
    assert_named_error(*invoke("data", "import-raw", src, "--out", out, "-d", "masakhanews"), "masakhanews")
    assert_named_error(*invoke("data", "import-raw", tmp_path / "nowhere", "--out", out), "nowhere")
    assert written(out) == []


def test_bad_rows_are_skipped_counted_and_listed(tmp_path: Path) -> None:
    src = raw_tree(tmp_path / "raw")
    (src / "afrisenti" / "hau" / "test.tsv").write_text(TWEETS + "x\tangry\n\tneutral\n")
    code, output = invoke("data", "import-raw", src, "--out", tmp_path / "mirror", "-d", "afrisenti")
    assert code == 0, output
    assert "skipped afrisenti/hau/test: 2" in " ".join(output.split())


def test_mirror_without_hub_access_says_so(tmp_path: Path) -> None:
    code, output = invoke("data", "mirror", "--out", tmp_path / "mirror", "-d", "sib200")
    assert code == 1 and "Traceback" not in output and "import-raw" in output
    assert written(tmp_path / "mirror") == []
