"""`--help` in an 80-column terminal shows every option name whole.

rich's table in typer's help shares the width between the option names, their metavars and the help
text; with long help words it shrank every column and cut names (`--tokens-per-st…`), exactly what a
reader needs to copy. Every command of the app is checked, groups included; besides looking for each
name, the output is searched for a cut name (`--name…`), as a name may also appear in another help text.
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from finetasks_afr.cli.application import app


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under `group` with its argument path; duck-typed, as typer carries its own click."""
    found = [(path, group)]
    if isinstance(getattr(group, "commands", None), dict):
        for name, sub in group.commands.items():
            if not sub.hidden:
                found.extend(_commands(sub, (*path, name)))
    return found


def test_every_option_name_is_whole_in_80_columns() -> None:
    runner = CliRunner()
    root = typer.main.get_command(app)
    cut: list[str] = []
    commands = _commands(root)
    assert len(commands) > 10, "every command group is walked"
    for path, command in commands:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        assert max(len(line) for line in result.output.splitlines()) <= 80, path
        # a name may also appear in another option's help text, so look for the ellipsis of a cut name too
        cut.extend(f"{' '.join(path)} {m}" for m in re.findall(r"--[\w-]*…", result.output))
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                for name in [*param.opts, *param.secondary_opts]:
                    if name not in result.output:
                        cut.append(f"{' '.join(path)} {name}")
    assert not cut, cut
