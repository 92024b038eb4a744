"""The HTML selection report: its content, escaping and self-containment; `finetasks-afr report`; and the
pages as headless Chromium renders them (screenshot pixels, the DOM the browser built, images loaded).
The "Ordering consistency" section, in report.md and in the HTML pages, lists every task with its interval
or the reason it has none.

Without chromium the browser tests skip, except under FINETASKS_AFR_REQUIRE_BROWSER=1 (CI, after
`bash .ci/browser.sh`), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from matplotlib.image import imread
from typer.testing import CliRunner

from analysis.config import Config, load_config
from analysis.pipeline import Analysis, analyse
from analysis.report import (
    CONSISTENCY_HEADER,
    HTML_TITLE,
    consistency_cells,
    format_ci,
    html_page_name,
    render_html_report,
    render_report,
    write_html_report,
)
from analysis.scores.read import read_scores
from analysis.scores.validate import LoadReport
from finetasks_afr.cli.report import report_command
from finetasks_afr.data.bundled import BUNDLED_CONFIG, BUNDLED_SWEEP

SIMULATED = Path(__file__).resolve().parents[2] / "finetasks_afr" / "data" / "simulated_sweep.parquet"
CI_CELL = re.compile(r"^-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]$")  # "0.97 [0.90, 1.00]"
BROWSER_TIMEOUT_S = 120
WINDOW = (1280, 2000)


@pytest.fixture(scope="module")
def demo() -> tuple:
    table, load_report = read_scores(BUNDLED_SWEEP)
    config = load_config()
    return table, load_report, config, analyse(table, config)


@pytest.fixture(scope="module")
def simulated() -> tuple:
    """The simulated sweep: 4 runs, so ordering consistency is measurable."""
    table, load_report = read_scores(SIMULATED)
    config = load_config()
    return table, load_report, config, analyse(table, config)


def _pages(demo: tuple, out_dir: Path) -> dict[str, str]:
    _, load_report, config, result = demo
    return render_html_report(result.selection, config, load_report, result.ranking, {}, out_dir)


class _Tables(HTMLParser):
    """Rows of every <table id=...>: {id: [[cell text, ...], ...]}; and every <img src>."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.in_head = False
        self.title = ""
        self.h1 = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(a.get("src") or "")
        elif tag in ("title", "h1"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._table is not None and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in == "title":
            self.title += data
        elif self._in == "h1":
            self.h1 += data


def _parse(text: str) -> _Tables:
    parser = _Tables()
    parser.feed(text)
    return parser


def _expected(demo: tuple, language: str, kept: bool) -> set[str]:
    chosen = demo[3].selection.decisions.filter(pl.col("chosen") & (pl.col("language") == language))
    return set(chosen.filter(pl.col("kept") == kept).get_column("task").to_list())


# --------------------------------------------------------------------------------------------- content


def test_index_links_every_language_and_ranks_runs(demo: tuple, tmp_path: Path) -> None:
    pages = _pages(demo, tmp_path)
    assert set(pages) == {"report.html", "report_qaa.html", "report_qab.html", "report_qac.html"}
    index = _parse(pages["report.html"])
    assert index.h1 == HTML_TITLE == "finetasks-afr selection report"
    assert index.title == HTML_TITLE
    assert [row[0] for row in index.tables["summary"][1:]] == ["qaa", "qab", "qac"]
    for language in ("qaa", "qab", "qac"):
        assert f'href="{html_page_name(language)}"' in pages["report.html"]
    runs = [row[0] for row in index.tables["ranking"][1:]]
    assert sorted(runs) == ["mix-a", "mix-b", "mix-c"]


@pytest.mark.parametrize("language", ["qaa", "qab", "qac"])
def test_language_page_has_kept_and_dropped_with_reason_and_margin(demo: tuple, tmp_path: Path, language: str) -> None:
    page = _parse(_pages(demo, tmp_path)[html_page_name(language)])
    kept, dropped = page.tables["kept"], page.tables["dropped"]
    assert {row[0] for row in kept[1:]} == _expected(demo, language, kept=True)
    assert {row[0] for row in dropped[1:]} == _expected(demo, language, kept=False)
    assert kept[0][-2:] == ["margin", "reason"] and dropped[0][3:] == ["margin", "reason"]
    decisions = demo[3].selection.decisions.filter(pl.col("chosen"))
    for row in dropped[1:]:
        decision = decisions.filter(pl.col("task") == row[0]).row(0, named=True)
        assert row[3] == f"{decision['margin']:.2f}"
        assert row[4] == decision["reason"] and row[4].startswith("dropped: ")
    assert all(row[-1].startswith("kept: ") for row in kept[1:])
    assert "ranking" in page.tables and "language-runs" in page.tables


def test_code_spans_in_prose_are_code_not_backticks(demo: tuple, tmp_path: Path) -> None:
    # a new user saw "defined in `docs/statistics.md`" with its backticks on the HTML page (issue 40)
    index = _pages(demo, tmp_path)["report.html"]
    assert "<code>docs/statistics.md</code>" in index
    paragraphs = re.findall(r'<p class="note">(.*?)</p>', index, flags=re.S)
    assert paragraphs and not any("`" in paragraph for paragraph in paragraphs)


def test_language_runs_show_intervals_and_ties_within_noise(demo: tuple, tmp_path: Path) -> None:
    page = _parse(_pages(demo, tmp_path)[html_page_name("qab")])
    header, *rows = page.tables["language-runs"]
    assert header == ["run", "score (qab) [95% CI]", "scale", "rank (1 = best)", "tied within noise with"]
    assert all(re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", row[1]) for row in rows), rows
    pairs = demo[3].ranking.language_pairs.filter(pl.col("language") == "qab")
    tied = {(a, b) for a, b, resolved in pairs.select("run_a", "run_b", "resolved").iter_rows() if not resolved}
    shown = {(row[0], other) for row in rows for other in row[4].split(",") if row[4] != "none"}
    assert shown == tied | {(b, a) for a, b in tied}


def test_text_is_escaped(demo: tuple, tmp_path: Path) -> None:
    table, load_report, config, _ = demo
    evil = "demo<b>facts</b>&_qab_cf"
    renamed = table.with_columns(pl.col("task").str.replace("^demofacts_qab_cf$", evil))
    result = analyse(renamed, config)
    pages = render_html_report(result.selection, config, load_report, result.ranking, {}, tmp_path)
    page = pages["report_qab.html"]
    assert "demo&lt;b&gt;facts&lt;/b&gt;&amp;_qab_cf" in page
    assert "<b>facts" not in page
    assert evil in {row[0] for row in _parse(page).tables["kept"][1:]}


def test_pages_are_static_and_self_contained(demo: tuple, tmp_path: Path) -> None:
    for name, text in _pages(demo, tmp_path).items():
        lowered = text.lower()
        for forbidden in ("<script", "<link", "http://", "https://", "@import", "url("):
            assert forbidden not in lowered, f"{name} contains {forbidden!r}"
        assert lowered.startswith("<!doctype html>") and "<style>" in lowered


def test_written_atomically_and_deterministic(demo: tuple, tmp_path: Path) -> None:
    _, load_report, config, result = demo
    figure = tmp_path / "figures" / "criteria_qab.png"
    figure.parent.mkdir()
    figure.write_bytes(b"\x89PNG")
    figures = {"criteria_qab": figure}
    written = write_html_report(result.selection, config, load_report, result.ranking, figures, tmp_path)
    assert set(written) == {"index", "qaa", "qab", "qac"}
    first = {p.name: p.read_bytes() for p in written.values()}
    write_html_report(result.selection, config, load_report, result.ranking, figures, tmp_path)
    assert {p.name: p.read_bytes() for p in written.values()} == first
    assert not list(tmp_path.glob(".*.tmp")), "temporary files left behind"
    assert all(p.stat().st_mode & 0o044 for p in written.values()), "pages left private by the temporary file"
    assert _parse(first["report_qab.html"].decode()).images == ["figures/criteria_qab.png"]


def test_page_names_are_safe_and_distinct() -> None:
    assert html_page_name("yor") == "report_yor.html"
    assert html_page_name("a/b c").startswith("report_a_b_c-")  # + a hash of the original name: distinct
    assert html_page_name("a/b c") != html_page_name("a_b_c")


# ------------------------------------------------------------------------------ ordering consistency


def _md_consistency_tables(markdown: str) -> dict[str, list[list[str]]]:
    """{language: rows, header first} of each language's "### Ordering consistency" table in report.md."""
    tables = {}
    for section in markdown.split("\n## ")[1:]:
        language, _, body = section.partition("\n")
        if "### Ordering consistency\n" not in body:
            continue
        part = body.split("### Ordering consistency\n", 1)[1].split("\n### ", 1)[0]
        lines = [line for line in part.splitlines() if line.startswith("| ")]
        tables[language] = [[cell.strip("`") for cell in line[2:-2].split(" | ")] for line in lines]
    return tables


def _consistency_sections(
    result: Analysis, config: Config, load_report: LoadReport, out_dir: Path
) -> tuple[dict, dict]:
    """({language: rows} of report.md, {language: rows} of the HTML pages) of the consistency section."""
    no_figures: dict[str, Path] = {}
    args = (result.selection, config, load_report, result.ranking, no_figures, out_dir)
    markdown, pages = render_report(*args), render_html_report(*args)
    languages = sorted(result.selection.decisions.get_column("language").unique().to_list())
    html = {language: _parse(pages[html_page_name(language)]).tables["consistency"] for language in languages}
    return _md_consistency_tables(markdown), html


def test_consistency_section_lists_every_task_with_its_interval(simulated: tuple, tmp_path: Path) -> None:
    table, load_report, config, result = simulated
    assert table.get_column("run").n_unique() == 4
    chosen = result.selection.decisions.filter(pl.col("chosen"))
    markdown_tables, html_tables = _consistency_sections(result, config, load_report, tmp_path)
    languages = sorted(chosen.get_column("language").unique().to_list())
    assert sorted(markdown_tables) == sorted(html_tables) == languages
    for language in languages:
        expected = chosen.filter(pl.col("language") == language)
        for rows in (markdown_tables[language], html_tables[language]):
            assert tuple(rows[0]) == CONSISTENCY_HEADER
            assert rows[0] == ["task", "metric", "consistency [95% CI]", "step pairs", "decision acc.", "verdict"]
            body = rows[1:]
            # every task of the language, kept and dropped, once
            assert sorted(r[0] for r in body) == sorted(expected.get_column("task").to_list())
            assert {r[5] for r in body} == {"kept", "dropped"}
            values = []
            for task, metric, consistency, pairs, accuracy, verdict in body:
                decision = expected.filter(pl.col("task") == task).row(0, named=True)
                signal = result.signal.filter(
                    (pl.col("task") == task) & (pl.col("fewshot") == decision["fewshot"]) & (pl.col("metric") == metric)
                ).row(0, named=True)
                assert metric == decision["metric"]
                assert CI_CELL.match(consistency), (task, consistency)
                assert consistency == format_ci(decision, "consistency")
                assert pairs == str(signal["consistency_n_pairs"]) and signal["consistency_n_pairs"] > 0
                assert accuracy == f"{decision['decision_accuracy']:.2f}"
                assert verdict == ("kept" if decision["kept"] else "dropped")
                values.append(decision["consistency"])
            assert values == sorted(values, reverse=True), f"{language}: not highest consistency first"
    # the least consistent dropped task (e.g. a reshuffling one) is listed with its interval
    worst = chosen.filter(~pl.col("kept")).sort("consistency").row(0, named=True)
    assert worst["consistency"] < 0.3
    row = [worst["task"], worst["metric"], format_ci(worst, "consistency")]
    assert row in [r[:3] for r in markdown_tables[worst["language"]]]
    assert row in [r[:3] for r in html_tables[worst["language"]]]


def test_consistency_section_says_why_with_two_runs(simulated: tuple, tmp_path: Path) -> None:
    table, load_report, config, _ = simulated
    runs = sorted(table.get_column("run").unique().to_list())[:2]
    result = analyse(table.filter(pl.col("run").is_in(runs)), config)
    chosen = result.selection.decisions.filter(pl.col("chosen"))
    assert chosen.filter(~pl.col("kept")).height > 0
    markdown_tables, html_tables = _consistency_sections(result, config, load_report, tmp_path)
    for language, rows in [*markdown_tables.items(), *html_tables.items()]:
        expected = chosen.filter(pl.col("language") == language)
        assert sorted(r[0] for r in rows[1:]) == sorted(expected.get_column("task").to_list())
        for task, _, consistency, pairs, accuracy, verdict in rows[1:]:
            assert consistency == "consistency: needs >= 3 runs", (task, consistency)
            assert pairs == "n/a"
            assert re.fullmatch(r"\d\.\d\d", accuracy)  # two runs suffice for decision accuracy
            assert verdict in ("kept", "dropped")


def test_consistency_cells_never_leave_a_blank() -> None:
    row = {"task": "t", "metric": "acc", "kept": False, "consistency": None, "decision_accuracy": None}
    assert consistency_cells(row) == ["t", "acc", "consistency: not measurable", "n/a", "n/a", "dropped"]
    row |= {
        "consistency_reason": "consistency: tokens unknown",
        "decision_reason": "decision accuracy: needs >= 2 runs",
    }
    assert consistency_cells(row)[2:5] == ["consistency: tokens unknown", "n/a", "n/a (needs >= 2 runs)"]
    row |= {"consistency": 0.5, "consistency_ci_low": 0.25, "consistency_ci_high": 0.75, "consistency_n_pairs": 4}
    assert consistency_cells(row)[2:4] == ["0.50 [0.25, 0.75]", "4"]


def test_consistency_figure_is_linked(simulated: tuple, tmp_path: Path) -> None:
    _, load_report, config, result = simulated
    figures = {"consistency_amh": tmp_path / "figures" / "consistency_amh.png"}
    args = (result.selection, config, load_report, result.ranking, figures, tmp_path)
    assert "![ordering consistency amh](figures/consistency_amh.png)" in render_report(*args)
    assert _parse(render_html_report(*args)["report_amh.html"]).images == ["figures/consistency_amh.png"]


# ----------------------------------------------------------------------------------------------- CLI


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(report_command)

    @app.callback()
    def main() -> None:
        """Test app: `report` as a sub-command, as finetasks_afr/cli/report.py registers it."""

    return app


def test_report_command_writes_markdown_and_html(tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["report", str(BUNDLED_SWEEP), "--out", str(tmp_path), "--no-figures"])
    assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html", "report_qab.html", "decisions.csv", "ranking.csv"):
        assert (tmp_path / name).is_file(), name
    assert "12 of 24 tasks kept" in result.output
    assert (tmp_path / "report.md").read_text().startswith("# FineTasks selection report")


def test_report_command_names_a_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "nope.parquet"
    result = CliRunner().invoke(_app(), ["report", str(missing), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "nope.parquet" in result.output
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text("[monotonicity]\nminimum = 1\n")
    result = CliRunner().invoke(_app(), ["report", "--config", str(bad_config), "--out", str(tmp_path / "o2")])
    assert result.exit_code == 2 and "minimum" in result.output


# ------------------------------------------------------------------------------------------- browser


def _chromium() -> str:
    found = os.environ.get("FINETASKS_AFR_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        message = "chromium not found (install it with `bash .ci/browser.sh`)"
        if os.environ.get("FINETASKS_AFR_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _browse(browser: str, page: Path, tmp_path: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    """One headless chromium call with a fresh profile and a timeout; fails the test on an error."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}", *mode,
        page.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`finetasks-afr report` on the bundled sweep, figures included."""
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(_app(), ["report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _screenshot(browser: str, page: Path, tmp_path: Path) -> np.ndarray:
    png = tmp_path / f"{page.stem}.png"
    _browse(browser, page, tmp_path, f"--screenshot={png}")
    assert png.is_file() and png.stat().st_size > 10_000
    pixels = imread(png)[..., :3]
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    return pixels


@pytest.mark.slow  # the report with figures (~20 s) and four chromium runs
@pytest.mark.parametrize("page", ["report.html", "report_qab.html"])
def test_chromium_renders_the_report(rendered: Path, tmp_path: Path, page: str) -> None:
    browser = _chromium()
    pixels = _screenshot(browser, rendered / page, tmp_path)
    assert pixels.std() > 0.05, "the screenshot is one flat colour"
    banner = pixels[:60]  # the title banner: dark blue with the title in white
    assert banner.mean() < 0.5, "no title banner at the top"
    assert (banner.min(axis=2) > 0.9).mean() > 0.005, "the title banner has no (white) text"
    assert (pixels[100:700].std(axis=(1, 2)) > 0.02).mean() > 0.2, "the area under the title is blank"

    dom = _browse(browser, rendered / page, tmp_path, "--dump-dom").stdout
    parsed = _parse(dom)
    assert parsed.h1 == HTML_TITLE
    if page == "report.html":
        assert [row[0] for row in parsed.tables["summary"][1:]] == ["qaa", "qab", "qac"]
    else:
        demo_table, _ = read_scores(BUNDLED_SWEEP)
        result = analyse(demo_table, load_config(BUNDLED_CONFIG))
        chosen = result.selection.decisions.filter(pl.col("chosen") & (pl.col("language") == "qab"))
        kept = set(chosen.filter(pl.col("kept")).get_column("task").to_list())
        expected = {"demofacts_qab_cf", "demoagreement_qab_cf", "democommon_qab_cf", "demotext_qab"}
        assert {row[0] for row in parsed.tables["kept"][1:]} == kept == expected
        dropped = {row[0] for row in parsed.tables["dropped"][1:]}
        assert dropped == set(chosen.get_column("task").to_list()) - kept


@pytest.mark.slow
def test_chromium_loads_every_figure(rendered: Path, tmp_path: Path) -> None:
    """A copy of the language page with a probe script (the page itself has none) reports, after the
    load event, every image's natural width: a broken relative link would be 0."""
    browser = _chromium()
    page = (rendered / "report_qab.html").read_text(encoding="utf-8")
    n_images = len(_parse(page).images)
    assert n_images >= 1 + 8  # the criteria overview and the eight tasks' curves
    probe_script = (
        "<script>window.addEventListener('load', () => { document.body.setAttribute('data-widths', "
        "Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1).join(',')); });</script>"
    )
    probe = rendered / "probe_qab.html"
    probe.write_text(page.replace("</body>", probe_script + "</body>"), encoding="utf-8")
    try:
        dom = _browse(browser, probe, tmp_path, "--dump-dom", "--virtual-time-budget=5000").stdout
    finally:
        probe.unlink()
    match = re.search(r'data-widths="([^"]*)"', dom)
    assert match, "the probe did not run (no data-widths in the DOM)"
    widths = [int(w) for w in match.group(1).split(",")]
    assert len(widths) == n_images and min(widths) > 100, widths
