"""Configuration values are validated one by one: every bad value is a ConfigError naming the file,
`[section] key`, the allowed range and the value; the CLI prints it with the section name intact (rich markup
would read "[monotonicity]" as a style tag) and exits 2 without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[monotonicity]\nmin = 5", r"\[monotonicity\] min must be in \[-1, 1\], got 5\.0"),
        ("[monotonicity]\nmin_checkpoints = 1", r"\[monotonicity\] min_checkpoints must be >= 2, got 1"),
        ("[monotonicity]\nstep_min = 10\nstep_max = 5", r"\[monotonicity\] step_min \(10\) must be <= step_max \(5\)"),
        ("[non_random]\nsigma = -3", r"\[non_random\] sigma must be >= 0, got -3\.0"),
        ("[snr]\nddof = 5", r"\[snr\] ddof must be in \[0, 1\], got 5"),
        ("[snr]\nmin = nan", r"\[snr\] min must be >= 0, got nan"),
        ("[bootstrap]\nn = 0", r"\[bootstrap\] n must be in \[1, 10,000\], got 0"),
        ("[bootstrap]\nconfidence = 1.5", r"\[bootstrap\] confidence must be in \(0, 1\), got 1\.5"),
        ("[decision]\nearly_fraction = 1", r"\[decision\] early_fraction must be in \(0, 1\), got 1\.0"),
        ("[consistency]\nmin_runs = 1", r"\[consistency\] min_runs must be >= 2, got 1"),
        ("[selection]\nrequire = []", r"\[selection\] require must name at least one value, got \[\]"),
    ],
)
def test_each_bad_value_names_section_key_and_range(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert str(path) in str(caught.value)


def test_values_inside_their_ranges_load(tmp_path: Path) -> None:
    text = (
        "[monotonicity]\nmin = -1\n[snr]\nddof = 0\n[bootstrap]\nn = 1\nconfidence = 0.5\n"
        "[decision]\nearly_fraction = 0.9"
    )
    config = load_config(write(tmp_path, text))
    assert (config.monotonicity.min, config.snr.ddof, config.bootstrap.n) == (-1.0, 0, 1)


def test_a_non_utf8_config_is_a_named_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes("# r\xe9glages\n[snr]\nmin = 10\n".encode("latin-1"))
    with pytest.raises(
        ConfigError, match=r"latin1\.toml: not UTF-8 text \(byte 0xe9 at line 1, byte offset 3\); fix: save it as UTF-8"
    ):
        load_config(path)


def test_the_cli_prints_the_section_name(tmp_path: Path) -> None:
    """Before the fix rich swallowed "[monotonicity]" as markup: "unknown key  minimum"."""
    from typer.testing import CliRunner

    from finetasks_afr.cli import app

    path = write(tmp_path, "[monotonicity]\nminimum = 0.9\n")
    result = CliRunner().invoke(app, ["select", "--config", str(path), "--out", str(tmp_path / "out"), "--no-figures"])
    assert result.exit_code == 2, result.output
    assert "unknown key [monotonicity] minimum" in " ".join(result.output.split())
    path = write(tmp_path, "[snr]\nddof = 5\n")
    result = CliRunner().invoke(app, ["select", "--config", str(path), "--out", str(tmp_path / "out"), "--no-figures"])
    assert result.exit_code == 2
    assert "[snr] ddof must be in [0, 1], got 5" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # an out-of-memory message that did not name the key (issue 53)
        ("[bootstrap]\nn = 1_000_000_000", ["[bootstrap] n", "got 1000000000", "10,000", "memory and time"]),
        # a traceback inside numpy
        ("[bootstrap]\nn = 9223372036854775807", ["[bootstrap] n", "got 9223372036854775807", "10,000"]),
        # a polars traceback: the steps and tokens it is compared with are 64-bit
        ("[consistency]\nmin_tokens = 100_000_000_000_000_000_000", ["min_tokens", "9,223,372,036,854,775,807"]),
        ("[monotonicity]\nstep_max = 9223372036854775808", ["step_max", "64-bit"]),
        ("[separation]\nlast_checkpoints = 9223372036854775808", ["last_checkpoints", "64-bit"]),
        ("[bootstrap]\nseed = 18446744073709551616", ["[bootstrap] seed", "64-bit"]),
    ],
)
def test_values_past_their_upper_bound_name_key_value_bound_and_fix(
    tmp_path: Path, text: str, needles: list[str]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "fix: set a value in [" in message and "omit the key" in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_every_integer_key_has_an_upper_bound() -> None:
    """A key added later without a bound would let a huge value through to numpy or polars."""
    from dataclasses import fields

    from analysis.config import _RANGES, Config

    config = Config()
    integers = [
        f"{section.name}.{key.name}"
        for section in fields(config)
        for key in fields(getattr(config, section.name))
        if key.type in ("int", "int | None")
    ]
    assert integers and all(_RANGES[name].high is not None for name in integers), integers


def test_the_largest_bootstrap_draw_count_loads(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "[bootstrap]\nn = 10_000\n")).bootstrap.n == 10_000
