"""The CLI reference page of the docs site, generated from the typer app at every build, never copied by hand.

mkdocs calls `on_files` before it renders anything; the page is (re)generated as `cli.md` (in the nav), so a renamed
option or a new command reaches the site with the code that made it, and `mkdocs build --strict` fails on a link to
a command that no longer exists. The same text is committed as docs/cli.md, so that the pages' links to it work on
GitHub too (the README's promise); tests/test_docs.py keeps that copy equal to the app. Regenerate it with
`.venv/bin/python docs/hooks/cli_reference.py`.
"""

from __future__ import annotations

from typing import Any

import typer
from mkdocs.structure.files import File, Files
from typer.cli import get_docs_for_click

CLI_PAGE = "cli.md"
COMMAND_NAME = "finetasks-afr"


def cli_reference() -> str:
    """The reference of every command and option of `finetasks-afr`, as Markdown (typer's own renderer)."""
    from finetasks_afr.cli.application import app

    command = typer.main.get_command(app)
    context = typer.Context(command, info_name=COMMAND_NAME)
    body = get_docs_for_click(obj=command, ctx=context, name=COMMAND_NAME, title="CLI reference")
    return (
        body.strip()
        + "\n\n---\n\n_Generated from the typer app (`finetasks_afr/cli/`) by `docs/hooks/cli_reference.py` at every"
        " `mkdocs build`; `finetasks-afr COMMAND --help` prints the same text._\n"
    )


def on_files(files: Files, config: Any) -> Files:
    committed = files.get_file_from_path(CLI_PAGE)
    if committed is not None:  # the committed copy (for GitHub) is replaced by the text of the app being built
        files.remove(committed)
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    return files


if __name__ == "__main__":
    from pathlib import Path

    (Path(__file__).resolve().parent.parent / CLI_PAGE).write_text(cli_reference(), encoding="utf-8")
