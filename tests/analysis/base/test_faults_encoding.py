"""Text files as spreadsheet programs and editors save them: UTF-8 with a byte order mark is read everywhere (score
tables, task-info CSVs, configs, task lists, raw releases); UTF-16 and UTF-32 are named by their mark with the
conversion that fixes them (they read as "invalid utf8" or as a header with a mangled column before); suffixes are
matched in any case; `--workers 0` is refused before any work. One reader decides: `analysis.base.encoding`.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analysis.base.encoding import TextEncodingError, decode_user_text, foreign_encoding, unmarked_wide_encoding
from analysis.config import ConfigError, load_config
from analysis.scores.read import read_scores
from analysis.scores.schema import SCHEMA, ScoreTableError
from analysis.scores.task_info import read_task_info
from analysis.scores.write import write_scores
from finetasks_afr.cli import app
from finetasks_afr.data.raw import RawFileError, read_text
from finetasks_afr.sweep.task_list import TaskListError, parse_tasks

ROW = {
    "run": "mixA", "seed": 1, "step": 1000, "tokens": 2_000_000, "task": "afrixnli_yor_cf", "benchmark": "afrixnli",
    "language": "yor", "category": "NLU", "formulation": "CF", "fewshot": 0, "metric": "acc", "score": 0.41,
    "stderr": 0.02, "random_baseline": 1 / 3,
}  # fmt: skip


def table_csv() -> str:
    return pl.DataFrame([ROW, {**ROW, "step": 2000, "tokens": 4_000_000}], schema=SCHEMA).write_csv()


@pytest.mark.parametrize(
    ("mark", "name"),
    [(codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"), (codecs.BOM_UTF32_LE, "UTF-32"),
     (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF8, None), (b"ab", None)],
)  # fmt: skip
def test_foreign_marks(mark: bytes, name: str | None) -> None:
    assert foreign_encoding(mark + b"a\x00") == name  # (an UTF-16 mark then two NULs would be UTF-32's)


def test_utf8_mark_removed_and_bad_bytes_located(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    assert decode_user_text(path, codecs.BOM_UTF8 + b"a\nb") == "a\nb"
    with pytest.raises(TextEncodingError, match=r"f\.txt: not UTF-8 text \(byte 0xe9 at line 2, byte offset 2\)"):
        decode_user_text(path, b"a\n\xe9")


def test_a_utf8_csv_with_a_mark_reads_and_a_utf16_one_is_named(tmp_path: Path) -> None:
    plain = tmp_path / "plain.csv"
    plain.write_bytes(codecs.BOM_UTF8 + table_csv().encode())
    assert read_scores(plain)[0].height == 2
    wide = tmp_path / "wide.csv"
    wide.write_text(table_csv(), encoding="utf-16")
    with pytest.raises(
        ScoreTableError, match=r"wide\.csv: UTF-16 text .*fix: save it as UTF-8, e\.g\. `iconv -f UTF-16"
    ):
        read_scores(wide)
    result = CliRunner().invoke(app, ["select", str(wide), "--out", str(tmp_path / "sel"), "--no-figures"])
    assert result.exit_code == 2 and "UTF-16 text" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("encoding", "expected"), [("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"), ("utf-32-le", "UTF-32")]
)
def test_a_wide_csv_without_a_mark_is_named_not_read_as_one_field_per_line(
    tmp_path: Path, encoding: str, expected: str
) -> None:
    """Issue 41, case 6: before, polars read it and the error was "line 6077 has 1 field"."""
    wide = tmp_path / "wide.csv"
    wide.write_bytes(table_csv().encode(encoding))
    with pytest.raises(
        ScoreTableError, match=rf"wide\.csv: {expected} text \(no byte order mark; .*iconv -f {expected}"
    ):
        read_scores(wide)
    for text in (table_csv(), "ìsọ̀rí,Ọ̀rọ̀ kan\n" * 50, "a,b\n"):  # UTF-8, non-ASCII UTF-8, tiny: never flagged
        assert unmarked_wide_encoding(text.encode("utf-8")) is None


def test_task_info_csv(tmp_path: Path) -> None:
    text = "task,benchmark,language,category,formulation,random_baseline\nmine,b,yor,NLU,CF,0.5\n"
    path = tmp_path / "info.csv"
    path.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert set(read_task_info(path)) == {"mine"}
    path.write_text(text, encoding="utf-16")
    with pytest.raises(ScoreTableError, match="UTF-16 text"):
        read_task_info(path)


def test_config_with_a_mark_reads_and_utf16_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(codecs.BOM_UTF8 + b"[snr]\nmin = 10\n")
    assert load_config(path).snr.min == 10
    path.write_text("[snr]\nmin = 10\n", encoding="utf-16")
    with pytest.raises(ConfigError, match=r"c\.toml: UTF-16 text"):
        load_config(path)


def test_task_list_with_a_mark_reads_and_utf16_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tasks.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"sib200_hau_cf|0\n")
    assert parse_tasks(str(path)) == ["sib200_hau_cf|0"]
    path.write_text("sib200_hau_cf|0\n", encoding="utf-16")
    with pytest.raises(TaskListError, match=r"tasks\.txt: UTF-16 text"):
        parse_tasks(str(path))


def test_raw_file_utf16_is_named(tmp_path: Path) -> None:
    path = tmp_path / "dev.tsv"
    path.write_text("tweet\tlabel\nx\tpositive\n", encoding="utf-16")
    with pytest.raises(RawFileError, match=r"dev\.tsv: UTF-16 text"):
        read_text(path)


def test_suffixes_in_any_case(tmp_path: Path) -> None:
    frame, _ = read_scores(_write(tmp_path / "a.csv"))
    upper = tmp_path / "B.PARQUET"
    write_scores(frame, upper)
    assert read_scores(upper)[0].height == 2
    write_scores(frame, tmp_path / "c.CSV")
    assert read_scores(tmp_path / "c.CSV")[0].height == 2


def test_zero_workers_refused_before_any_work(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "sweep",
            str(tmp_path / "nowhere"),
            "--tasks",
            "sib200_hau_cf",
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "0",
        ],
    )
    assert result.exit_code == 2 and "--workers" in result.output
    assert not (tmp_path / "o").exists()


def _write(path: Path) -> Path:
    path.write_text(table_csv(), encoding="utf-8")
    return path


def test_longppl_documents_in_latin1_are_named(tmp_path: Path) -> None:
    """Formerly a bare UnicodeDecodeError that named neither the file nor the fix."""
    from finetasks_afr.perplexity.longppl import LongPPLInputError, read_documents

    path = tmp_path / "docs.jsonl"
    path.write_bytes(
        '{"id": "d1", "source_lang": "eng", "target_lang": "hau", "source": "caf\xe9", "target": "x"}\n'.encode(
            "latin-1"
        )
    )
    with pytest.raises(
        LongPPLInputError, match=r"docs\.jsonl: not UTF-8 text \(byte 0xe9 at line 1, byte offset \d+\); fix"
    ):
        read_documents(path)
