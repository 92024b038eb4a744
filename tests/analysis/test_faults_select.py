"""Fault tests of the analysis commands' outputs (`select`, `report`, `aggregate`), issue 15.

Names from a score table never become paths outside `--out`; an output directory is replaced whole (never stale,
never half-new, never a user's own folder); a kill leaves all-old or all-new and no orphan figure worker; a
decisions file is read by one checked function; a bad `--out` is a named error before any work.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import analysis.pipeline as pipeline
from analysis.base.io import OUTPUT_MARKER, OutputDirectoryError
from analysis.config import load_config
from analysis.pipeline import check_inside, run_selection
from analysis.scores.read import read_scores
from analysis.scores.stream import ScoreScan, frame_scan
from analysis.select import DecisionsError, read_decisions, safe_file_name
from finetasks_afr.cli import app
from finetasks_afr.data.bundled import BUNDLED_CONFIG, BUNDLED_SWEEP
from tests.process_tools import alive, children
from tests.unprivileged import read_only_folder, run_cli_unprivileged

CLI = Path(sys.executable).parent / "finetasks-afr"
EVIL_LANGUAGE = "../../evil"  # suites/cf/../../evil.txt: cf and mcf lists on one file
ESCAPING_LANGUAGE = "../../../../escaped"  # suites/cf/../../../../escaped.txt: outside --out
EVIL_TASK = "a/../../b"


# --------------------------------------------------------------------------------------------- helpers


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _squeezed(text: str) -> str:
    """`text` without whitespace: rich wraps long lines (even inside paths) at the terminal width."""
    return "".join(text.split())


def _assert_named_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), result.exception
    for needle in needles:
        assert _squeezed(needle) in _squeezed(result.output), (needle, result.output)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _leftovers(parent: Path) -> list[str]:
    """Staging / old copies / temporary files anywhere under `parent`."""
    return [p.as_posix() for p in parent.rglob("*") if ".staging-" in p.name or ".old-" in p.name or p.suffix == ".tmp"]


@pytest.fixture(scope="module")
def demo_table() -> pl.DataFrame:
    return pl.read_parquet(BUNDLED_SWEEP)


def _write(table: pl.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(path)
    return path


def _evil_table(demo_table: pl.DataFrame) -> pl.DataFrame:
    """Two languages of the demo sweep renamed to path-like codes, and the kept task demofacts_qaa_cf renamed."""
    rows = demo_table.filter(pl.col("language").is_in(["qaa", "qab"]))
    languages = pl.col("language").replace({"qaa": EVIL_LANGUAGE, "qab": ESCAPING_LANGUAGE})
    renamed = pl.when(pl.col("task") == "demofacts_qaa_cf").then(pl.lit(EVIL_TASK)).otherwise(pl.col("task"))
    return rows.with_columns(languages.alias("language"), renamed.alias("task"))


def _keeps_nothing(demo_table: pl.DataFrame) -> pl.DataFrame:
    """Only the random-label controls: every task is dropped, so there is no suite and no ranking."""
    return demo_table.filter(pl.col("task").str.starts_with("demorandlabel"))


# ------------------------------------------------------------------------- 1. data names never become paths


def test_safe_file_name_is_safe_distinct_and_keeps_plain_names() -> None:
    assert safe_file_name("yor") == "yor"
    assert safe_file_name("demo_facts-1.2") == "demo_facts-1.2"
    names = [EVIL_LANGUAGE, EVIL_TASK, "a/b", "a_b", "a b", "..", ".", "", ".hidden", "x" * 300, "é"]
    safe = [safe_file_name(name) for name in names]
    assert len(set(safe)) == len(names), safe
    for name in safe:
        assert "/" not in name and "\\" not in name and not name.startswith(".") and name
        assert len(name) <= 120


def test_check_inside_refuses_an_escaping_or_shared_path(tmp_path: Path) -> None:
    check_inside(tmp_path, [tmp_path / "a.txt", tmp_path / "suites" / "cf" / "x.txt"])
    with pytest.raises(OutputDirectoryError, match="resolve outside"):
        check_inside(tmp_path, [tmp_path / "suites" / "cf" / ".." / ".." / ".." / "evil.txt"])
    with pytest.raises(OutputDirectoryError, match="same file"):
        check_inside(tmp_path, [tmp_path / "suites" / "a.txt", tmp_path / "suites" / "cf" / ".." / "a.txt"])


@pytest.mark.slow
def test_names_with_path_characters_stay_inside_out(tmp_path: Path, demo_table: pl.DataFrame) -> None:
    """Before the fix `../../evil` wrote its cf and mcf lists onto one out/evil.txt, and `../../../../escaped`
    wrote a/escaped.txt, outside --out (exit 0)."""
    scores = _write(_evil_table(demo_table), tmp_path / "in" / "evil.parquet")
    out = tmp_path / "a" / "b" / "out"
    result = _invoke("select", str(scores), "--out", str(out), "--config", str(BUNDLED_CONFIG))
    assert result.exit_code == 0, result.output
    assert _files(tmp_path) - {f"a/b/out/{name}" for name in _files(out)} == {"in/evil.parquet"}
    cf, mcf = (out / "suites" / suite / f"{safe_file_name(EVIL_LANGUAGE)}.txt" for suite in ("cf", "mcf"))
    assert cf != mcf and cf.is_file() and mcf.is_file()
    assert f"lighteval|{EVIL_TASK}|0" in cf.read_text().splitlines()
    assert "lighteval|demotext_qaa|0" in mcf.read_text().splitlines()
    assert f"lighteval|{EVIL_TASK}|0" not in mcf.read_text()
    assert (out / "figures" / "curves" / f"{safe_file_name(EVIL_TASK)}.png").is_file()
    page = f"report_{safe_file_name(EVIL_LANGUAGE)}.html"
    assert (out / page).is_file() and page in (out / "report.html").read_text()
    decisions = pl.read_csv(out / "decisions.csv")
    assert set(decisions.get_column("language")) == {EVIL_LANGUAGE, ESCAPING_LANGUAGE}
    assert EVIL_TASK in decisions["task"].to_list()
    assert (out / "suites" / "cf" / f"{safe_file_name(ESCAPING_LANGUAGE)}.txt").is_file()
    assert not _leftovers(tmp_path)


# ------------------------------------------------------------------------- 2. outputs never stale or mixed


def test_select_into_a_used_directory_leaves_nothing_stale(tmp_path: Path, demo_table: pl.DataFrame) -> None:
    """Before the fix suites/, ranking.csv and language_scores.csv of the first table stayed, and the CLI still
    said it wrote suites/."""
    out = tmp_path / "out"
    assert _invoke("select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures").exit_code == 0
    assert {"ranking.csv", "language_scores.csv"} <= _files(out) and (out / "suites").is_dir()
    scores = _write(_keeps_nothing(demo_table), tmp_path / "nothing.parquet")
    result = _invoke("select", str(scores), "--out", str(out), "--no-figures", "--config", str(BUNDLED_CONFIG))
    assert result.exit_code == 0, result.output
    assert _files(out) == {OUTPUT_MARKER, "decisions.csv", "report.md", "report.html"} | {
        f"report_{language}.html" for language in ("qaa", "qab", "qac")
    }
    assert not pl.read_csv(out / "decisions.csv").get_column("kept").any()
    assert "suites/" not in result.output and "ranking.csv" not in result.output
    assert "decisions.csv" in result.output
    assert not _leftovers(tmp_path)


def test_kept_tasks_scored_only_by_lower_is_better_metrics_give_suites_and_a_ranking(
    tmp_path: Path, demo_table: pl.DataFrame
) -> None:
    """The demo's perplexity tasks alone (bits per byte, perplexities): kept, and ranked (rescaled on the uniform
    byte model, or by win rate). Before the first fix: an AggregateError traceback, exit 1; before the second:
    no ranking."""
    scores = _write(demo_table.filter(pl.col("task").str.starts_with("demotext")), tmp_path / "ppl.parquet")
    out = tmp_path / "out"
    result = _invoke("select", str(scores), "--out", str(out), "--no-figures", "--config", str(BUNDLED_CONFIG))
    assert result.exit_code == 0, result.output
    decisions = pl.read_csv(out / "decisions.csv")
    kept = decisions.filter(pl.col("kept"))
    assert kept.height and set(kept["metric"]) <= {"bits_per_byte", "byte_perplexity", "word_perplexity"}
    assert (out / "suites").is_dir() and "ranking.csv" in _files(out)
    assert (pl.read_csv(out / "ranking.csv").get_column("n_languages") >= 1).all()
    assert not _leftovers(tmp_path)


AGGREGATE_FILES = {OUTPUT_MARKER, "ranking.csv", "language_scores.csv", "language_pairs.csv", "aggregated_tasks.csv"}


def test_aggregate_into_a_used_directory_replaces_it_whole(tmp_path: Path) -> None:
    out = tmp_path / "agg"
    out.mkdir()
    (out / "ranking.csv").write_text("run\nstale\n")
    (out / "language_scores.csv").write_text("stale\n")
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert _files(out) == AGGREGATE_FILES
    assert "stale" not in (out / "ranking.csv").read_text()
    assert not _leftovers(tmp_path)


def test_out_given_as_a_link_writes_into_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    """Formerly the link was replaced by a real folder and its target stayed empty."""
    target = tmp_path / "storage" / "agg"
    target.mkdir(parents=True)
    link = tmp_path / "agg"
    link.symlink_to(target, target_is_directory=True)
    for _ in range(2):  # a second run replaces the target's content whole, through the link
        result = _invoke("aggregate", str(BUNDLED_SWEEP), "--out", str(link))
        assert result.exit_code == 0, result.output
        assert link.is_symlink() and link.resolve() == target.resolve()
        assert _files(target) == AGGREGATE_FILES
        said = " ".join(result.output.split())
        assert f"is a link: writing into its target {target}" in said, said
    assert not _leftovers(tmp_path)


@pytest.mark.parametrize("command", ["select", "report", "aggregate"])
def test_a_folder_finetasks_did_not_make_is_refused(tmp_path: Path, command: str) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious\n")
    extra = ["--no-figures"] if command != "aggregate" else []
    result = _invoke(command, str(BUNDLED_SWEEP), "--out", str(out), *extra)
    _assert_named_error(result, str(out), "did not write", "choose a new or empty directory")
    assert _files(out) == {"thesis.tex"} and (out / "thesis.tex").read_text() == "precious\n"
    assert not _leftovers(tmp_path)


def test_a_folder_of_only_figures_is_not_taken_for_an_older_output(tmp_path: Path) -> None:
    """Adoption needs decisions.csv or ranking.csv: a user's own figures/ folder is never replaced."""
    out = tmp_path / "mine"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "poster.png").write_bytes(b"mine")
    result = _invoke("select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures")
    assert result.exit_code == 2, result.output
    assert "did not write" in " ".join(result.output.split())
    assert (out / "figures" / "poster.png").read_bytes() == b"mine"


def test_an_output_of_an_older_version_is_adopted(tmp_path: Path) -> None:
    """A directory with only names select writes (an older run, before the marker file) is replaced, not refused:
    a resumed demo has out/demo/selection from an older version."""
    out = tmp_path / "old"
    (out / "suites" / "cf").mkdir(parents=True)
    (out / "suites" / "cf" / "zzz.txt").write_text("stale\n")
    (out / "decisions.csv").write_text("old\n")
    (out / "report.md").write_text("old\n")
    result = _invoke("select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures")
    assert result.exit_code == 0, result.output
    assert not (out / "suites" / "cf" / "zzz.txt").exists() and (out / "decisions.csv").read_text() != "old\n"


def test_a_failing_run_leaves_the_previous_output_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(BUNDLED_CONFIG)
    out = tmp_path / "out"
    with ScoreScan.open(BUNDLED_SWEEP) as scan:
        first = run_selection(scan, config, out, figures=False)
        assert all(path.is_file() and path.is_relative_to(out) for path in first.written)
        before = {name: (out / name).read_bytes() for name in _files(out)}

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("disk full while writing the HTML report")

        monkeypatch.setattr(pipeline, "write_html_report", broken)
        with pytest.raises(RuntimeError, match="disk full"):
            run_selection(scan, config, out, figures=False)
    assert {name: (out / name).read_bytes() for name in _files(out)} == before
    assert not _leftovers(tmp_path)


def test_demo_pipeline_calls_still_work_twice(tmp_path: Path) -> None:
    """finetasks_afr/demo/run.py calls run_selection then run_aggregate with the decisions, into a resumed out."""
    config = load_config(BUNDLED_CONFIG)
    table, report = read_scores(BUNDLED_SWEEP)
    for _ in range(2):
        with frame_scan(table, report) as scan:
            selection = run_selection(scan, config, tmp_path / "selection", figures=False)
            ranking = pipeline.run_aggregate(scan, config, tmp_path / "aggregate", selection.selection.decisions)
    assert ranking.ranking.height == table.get_column("run").n_unique()
    assert (tmp_path / "aggregate" / "language_scores.csv").is_file()
    assert not _leftovers(tmp_path)


# ------------------------------------------------------------------------------ 3. a kill: all-old or all-new


@pytest.mark.slow
def test_figure_workers_are_started_to_die_with_their_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    class Recording:
        def __init__(self, *args: object, **kwargs: object) -> None:
            seen.update(kwargs)

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def map(self, function: Callable[[Any], Path], jobs: list[Any]) -> Iterator[Path]:
            return map(function, jobs)

    monkeypatch.setattr(pipeline, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(pipeline, "_curve_job", lambda job: job[3])
    config = load_config(BUNDLED_CONFIG)
    table, _ = read_scores(BUNDLED_SWEEP)
    selection = pipeline.analyse(table, config).selection
    with ScoreScan.open(BUNDLED_SWEEP) as scan:
        pipeline._figures(scan, selection, None, config, tmp_path, None, workers=2)
    from analysis.base.processes import die_with_parent

    assert seen.get("initializer") is die_with_parent


def test_plots_save_goes_through_the_one_atomic_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.plots as plots

    calls: list[Path] = []
    real = plots.atomic_write

    def recording(path: Path, write):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(path, write)

    monkeypatch.setattr(plots, "atomic_write", recording)
    fig = plots._new_figure(2, 2)
    assert plots._save(fig, tmp_path / "f.png").stat().st_size > 0
    assert calls == [tmp_path / "f.png"]
    with pytest.raises(ValueError, match=r"\.png"):
        plots._save(fig, tmp_path / "f.pdf")
    assert _files(tmp_path) == {"f.png"}


def _state(out: Path) -> tuple[frozenset[str], bytes]:
    return frozenset(_files(out)), (out / "decisions.csv").read_bytes()


def _kill_during(args: list[str], until: float, staging_glob: str, parent: Path, figures: bool) -> set[int]:
    """Start `finetasks-afr args`, SIGKILL it after `until` seconds (or once a figure is in its staging
    directory); return the pids of its children at the moment of the kill."""
    earlier = set(parent.glob(staging_glob))  # a previous kill's staging folder (with its figures) is not this run's
    process = subprocess.Popen([str(CLI), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start, seen = time.monotonic(), set()
    while time.monotonic() - start < until and process.poll() is None:
        seen |= children(process.pid)
        staging = set(parent.glob(staging_glob)) - earlier
        if figures and any(any(folder.glob("figures/curves/*.png")) for folder in staging):
            break
        time.sleep(0.05)
    seen |= children(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return seen


@pytest.mark.slow
def test_kill_leaves_all_old_or_all_new_and_no_orphan_workers(tmp_path: Path, demo_table: pl.DataFrame) -> None:
    """Before the fix a kill left new decisions.csv beside the old report, .tmp files, and two figure workers
    (parent pid 1) writing PNGs after the kill."""
    out = tmp_path / "D"
    config = ["--config", str(BUNDLED_CONFIG)]
    first = subprocess.run(
        [str(CLI), "select", str(BUNDLED_SWEEP), "--out", str(out), "--no-figures"], capture_output=True
    )
    assert first.returncode == 0, first.stderr
    old = _state(out)
    new_table = _write(demo_table.filter(pl.col("language") != "qac"), tmp_path / "new.parquet")
    args = ["select", str(new_table), "--out", str(out), *config]
    states = []
    for until, figures in ((1.0, False), (3.0, False), (60.0, True)):
        workers = _kill_during(args, until, ".D.staging-*", tmp_path, figures)
        if figures:  # killed while the figure workers draw: they are among the children
            assert len(workers) >= 2, workers
        deadline = time.monotonic() + 3.0
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if alive(pid)], f"workers outlived the kill at {until} s"
        states.append(_state(out))
        settled = _files(tmp_path)
        time.sleep(0.6)
        assert _files(tmp_path) == settled, f"something still writes after the kill at {until} s"
    rerun = subprocess.run([str(CLI), *args], capture_output=True)
    assert rerun.returncode == 0, rerun.stderr
    new = _state(out)
    assert new != old
    for state in states:
        assert state in (old, new)
    assert not _leftovers(tmp_path)


# ------------------------------------------------------------------------------- 4. aggregate --decisions


@pytest.fixture(scope="module")
def decisions_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("selection")
    result = _invoke("select", str(BUNDLED_SWEEP), "--out", str(out / "sel"), "--no-figures")
    assert result.exit_code == 0, result.output
    return out / "sel" / "decisions.csv"


def _edited(tmp_path: Path, frame: pl.DataFrame) -> Path:
    path = tmp_path / "edited.csv"
    frame.write_csv(path)
    return path


def test_capitalised_kept_is_read_as_true(decisions_csv: Path, tmp_path: Path) -> None:
    """Before the fix kept=True was read as false: "the selection is empty"."""
    lower = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(decisions_csv), "--out", str(tmp_path / "a"))
    assert lower.exit_code == 0, lower.output
    raw = pl.read_csv(decisions_csv, infer_schema_length=0)
    capital = raw.with_columns(pl.col("kept").str.replace("true", "True").str.replace("false", "FALSE"))
    path = _edited(tmp_path, capital)
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(path), "--out", str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a" / "ranking.csv").read_bytes() == (tmp_path / "b" / "ranking.csv").read_bytes()
    ones = raw.with_columns(pl.col("kept").replace({"true": "1", "false": "0"}))
    assert read_decisions(_edited(tmp_path, ones))["kept"].to_list() == [
        value == "true" for value in raw["kept"].to_list()
    ]


def test_kept_that_is_no_boolean_names_the_line(decisions_csv: Path, tmp_path: Path) -> None:
    raw = pl.read_csv(decisions_csv, infer_schema_length=0)
    bad = raw.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("yes")).otherwise("kept").alias("kept"))
    path = _edited(tmp_path, bad)
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(path), "--out", str(tmp_path / "o"))
    _assert_named_error(result, str(path), "line 4", "kept is 'yes'", "true/false")
    assert not (tmp_path / "o").exists()


def test_decisions_without_a_column_is_a_named_error(decisions_csv: Path, tmp_path: Path) -> None:
    path = _edited(tmp_path, pl.read_csv(decisions_csv, infer_schema_length=0).drop("kept"))
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(path), "--out", str(tmp_path / "o"))
    _assert_named_error(result, str(path), "lacks column(s) kept", "decisions.csv that `finetasks-afr select` wrote")


def test_decisions_with_an_unknown_task_is_a_named_error(decisions_csv: Path, tmp_path: Path) -> None:
    raw = pl.read_csv(decisions_csv, infer_schema_length=0)
    renamed = raw.with_columns(
        pl.when(pl.col("kept") == "true").then(pl.lit("nosuchtask_") + pl.col("task")).otherwise("task").alias("task")
    )
    path = _edited(tmp_path, renamed)
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(path), "--out", str(tmp_path / "o"))
    _assert_named_error(result, str(path), "keeps task(s) the score table lacks", "nosuchtask_", "for this score table")


def test_decisions_problems_are_named_by_the_one_reader(tmp_path: Path) -> None:
    with pytest.raises(DecisionsError, match="does not exist"):
        read_decisions(tmp_path / "absent.csv")
    path = tmp_path / "d.csv"
    path.write_text("task,fewshot,metric,kept\nt,0,acc,false\n")
    with pytest.raises(DecisionsError, match="keeps no task"):
        read_decisions(path)
    path.write_text("task,fewshot,metric,kept\nt,zero,acc,true\n")
    with pytest.raises(DecisionsError, match="line 2: fewshot is 'zero'"):
        read_decisions(path)
    path.write_text("task,fewshot,metric,kept\nt,0,acc,TRUE\n")
    frame = read_decisions(path, tasks={"t"})
    assert frame["kept"].to_list() == [True] and frame["fewshot"].dtype == pl.Int64


def test_decisions_whose_metric_the_table_lacks_is_a_named_error(decisions_csv: Path, tmp_path: Path) -> None:
    """An AggregateError (selected row absent from the table) used to end in a traceback."""
    raw = pl.read_csv(decisions_csv, infer_schema_length=0)
    metric = pl.when(pl.col("kept") == "true").then(pl.lit("f1")).otherwise("metric").alias("metric")
    path = _edited(tmp_path, raw.with_columns(metric))
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--decisions", str(path), "--out", str(tmp_path / "o"))
    _assert_named_error(result, "not found in the score table", "f1)", "make the selection from this table")


# ---------------------------------------------------------------------------------------- 5. a bad --out

COMMANDS = ["select", "report", "aggregate"]


@pytest.mark.parametrize("command", COMMANDS)
def test_out_that_is_a_file_is_refused_before_any_work(tmp_path: Path, command: str) -> None:
    out = tmp_path / "file.txt"
    out.write_text("mine\n")
    result = _invoke(command, str(tmp_path / "no-such-table.parquet"), "--out", str(out))
    _assert_named_error(result, f"--out {out} is a file", "choose a directory path")
    assert out.read_text() == "mine\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_out_under_a_file_is_refused_before_any_work(tmp_path: Path, command: str) -> None:
    (tmp_path / "file.txt").write_text("mine\n")
    out = tmp_path / "file.txt" / "sub"
    result = _invoke(command, str(tmp_path / "no-such-table.parquet"), "--out", str(out))
    _assert_named_error(result, f"{tmp_path / 'file.txt'} is a file", "choose another path")


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_out_is_refused_before_any_work(tmp_path: Path, command: str) -> None:
    """In a subprocess that obeys file modes even as root (tests/unprivileged.py), so it runs in CI too."""
    with read_only_folder(tmp_path) as parent:
        args: list[str | Path] = [command, tmp_path / "no-such-table.parquet", "--out", parent / "out"]
        result = run_cli_unprivileged(args, tmp_path / "home")
        output = result.stdout + result.stderr
        assert result.returncode == 2, output
        assert "Traceback" not in output
        for needle in (str(parent), "not writable", "choose a writable directory"):
            assert _squeezed(needle) in _squeezed(output), (needle, output)
        assert list(parent.iterdir()) == []


def test_a_small_ablation_under_finetasks_default_window_is_told_which_key_to_change(tmp_path: Path) -> None:
    """The demo's runs end at 1,638,400 tokens; FineTasks' window begins past 15B: a new user got "no pair of
    consecutive checkpoints past 15,000,000,000 tokens" on every task and nothing else (issue 40)."""
    from analysis.config import load_config
    from analysis.pipeline import consistency_window_note
    from analysis.scores.read import read_scores

    default_config = Path(__file__).resolve().parents[2] / "analysis" / "default_config.toml"
    result = _invoke("select", str(BUNDLED_SWEEP), "--out", str(tmp_path / "out"), "--no-figures",
                     "--config", str(default_config))  # fmt: skip
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "its window begins past 15,000,000,000 tokens ([consistency] min_tokens)" in said, said
    assert "last checkpoint has 1,638,400 tokens" in said and "[consistency] min_tokens = 819_200" in said, said
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "[consistency] min_tokens = 819_200" in report
    table, _ = read_scores(BUNDLED_SWEEP)
    assert consistency_window_note(table.lazy(), load_config(BUNDLED_CONFIG)) is None  # the demo's own window fits


def test_aggregate_with_nothing_kept_says_what_the_user_can_do(tmp_path: Path) -> None:
    """Before: `the selection is empty: select at least one (task, fewshot, metric)`, which names no way out."""
    strict = tmp_path / "strict.toml"
    strict.write_text("[snr]\nmin = 1e9\n", encoding="utf-8")
    result = _invoke("aggregate", str(BUNDLED_SWEEP), "--out", str(tmp_path / "agg"), "--config", str(strict))
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "keeps no task of this table" in said and "--decisions" in said and "--config" in said, said
    assert not (tmp_path / "agg" / "ranking.csv").exists()
