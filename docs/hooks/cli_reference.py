"""The CLI reference page of the docs site, generated from the typer app at every build, never copied by hand.

mkdocs calls `on_files` before it renders anything; the page is added as a generated file (`cli.md`, in the nav), so
a renamed option or a new command reaches the site with the code that made it, and `mkdocs build --strict` fails on
a link to a command that no longer exists.
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
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    return files
