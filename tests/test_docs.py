"""The README and the docs site say what is true: every command block runs, or its page says why it cannot.

A command block is a fenced block marked `bash`, `sh` or `shell` in README.md or any page under docs/. Each is run
here as a user would paste it (bash -euo pipefail, from the project root, the project's environment first on PATH,
offline), unless the line above it reads `_Not run by the docs tests: <why>_`, which readers see too. Synopses with
placeholders are `text` blocks, and the generated CLI reference (docs/hooks/cli_reference.py) lists every option.

The site itself: `mkdocs build --strict` passes, its CLI page names every command of the typer app, and a broken
link fails the build (so CI's `make docs` can fail). The README stays a ten-minute read: at most 250 lines.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from finetasks_afr.cli.application import app

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"
PAGES = (README, *sorted((PROJECT / "docs").rglob("*.md")))
COMMAND_LANGUAGES = frozenset({"bash", "sh", "shell"})
NOT_RUN = re.compile(r"^_Not run by the docs tests: (?P<why>.+)_$", re.DOTALL)
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>[\w-]*)")
README_MAX_LINES = 250
BLOCK_TIMEOUT_S = 600
VENV_BIN = Path(sys.executable).parent
MKDOCS = VENV_BIN / "mkdocs"


@dataclass(frozen=True)
class CommandBlock:
    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the page's reason, when it says the block is not run

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(PROJECT)}:{self.line}"


def _paragraph_above(lines: list[str], index: int) -> str:
    """The paragraph that ends just above line `index` (blank lines skipped), joined into one line."""
    end = index
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    start = end
    while start > 0 and lines[start - 1].strip() and not lines[start - 1].lstrip().startswith("```"):
        start -= 1
    return " ".join(line.strip() for line in lines[start:end])


def command_blocks(page: Path) -> list[CommandBlock]:
    """The command blocks of a Markdown page, each with the reason the page gives for not running it, if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[CommandBlock] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        if opening.group("language") in COMMAND_LANGUAGES:
            note = NOT_RUN.match(_paragraph_above(lines, index))
            indent = len(opening.group("indent"))
            code = "\n".join(line[indent:] for line in lines[index + 1 : end])
            blocks.append(CommandBlock(page, index + 1, code, note.group("why") if note else None))
        index = end + 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in command_blocks(page)]
RUNNABLE = [block for block in ALL_BLOCKS if block.not_run is None]


def test_the_pages_hold_command_blocks_and_each_one_not_run_says_why() -> None:
    assert len(ALL_BLOCKS) >= 5, [block.name for block in ALL_BLOCKS]
    assert RUNNABLE, "no command block is run: every page only explains"
    for block in ALL_BLOCKS:
        if block.not_run is not None:
            assert len(block.not_run.split()) >= 4, f"{block.name}: say why in words: {block.not_run!r}"


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.name for block in RUNNABLE])
def test_a_command_block_runs_as_written(block: CommandBlock) -> None:
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MPLBACKEND": "Agg",
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (
        f"{block.name} failed ({result.returncode}):\n{block.code}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )


def test_a_block_marked_not_run_is_found_with_its_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run this:\n\n```bash\necho ran\n```\n\n_Not run by the docs tests: it needs a GPU\nand a hub model._\n\n"
        "```bash\nlighteval accelerate ...\n```\n\n```text\nfinetasks-afr select [SCORES]\n```\n",
        encoding="utf-8",
    )
    blocks = command_blocks(page)
    assert [(block.code, block.not_run) for block in blocks] == [
        ("echo ran", None),
        ("lighteval accelerate ...", "it needs a GPU and a hub model."),
    ]


def test_the_readme_is_a_ten_minute_read() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to a docs/ page"


def test_every_relative_link_of_the_readme_exists() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target]
    assert targets, "the README links to no page"
    for target in targets:
        path = target.split("#", 1)[0]
        if path:
            assert (PROJECT / path).exists(), f"README.md links to {target}, which does not exist"


def _hook_module() -> object:
    spec = importlib.util.spec_from_file_location("cli_reference", PROJECT / "docs" / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _command_paths(command: Any, prefix: str) -> list[str]:
    """Every command path of a (typer-built) click command tree, groups included."""
    paths = [prefix]
    for name, sub in getattr(command, "commands", {}).items():
        paths += _command_paths(sub, f"{prefix} {name}")
    return paths


def test_the_cli_reference_is_generated_from_the_app_and_names_every_command() -> None:
    reference = _hook_module().cli_reference()  # type: ignore[attr-defined]
    commands = _command_paths(typer.main.get_command(app), "finetasks-afr")
    assert len(commands) > 10, commands
    for path in commands[1:]:
        assert f"`{path}`" in reference, f"the CLI reference lacks `{path}`"
    assert "--custom-tasks" in reference and "--tokens-per-step" in reference


def test_the_committed_cli_reference_equals_the_app() -> None:
    """The pages link to cli.md; on GitHub that link needs the page committed (issue 54: it existed only in the
    built site). The committed copy is the hook's text for the app as it is now."""
    committed = (PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")
    generated = _hook_module().cli_reference()  # type: ignore[attr-defined]
    # a default printed as this checkout's absolute path made the page differ in every other clone
    assert str(PROJECT) not in generated, "a --help default names this checkout's path: give it a show_default"
    assert committed == generated, (
        "docs/cli.md differs from the app: regenerate it with `.venv/bin/python docs/hooks/cli_reference.py`"
    )


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=config_dir, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_site_builds_strict_with_the_generated_cli_page(tmp_path: Path) -> None:
    result = _build(PROJECT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    page = (tmp_path / "site" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "finetasks-afr select" in page and "finetasks-afr sweep" in page


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    for name in ("mkdocs.yml", "README.md"):  # the home page is generated from the README
        shutil.copy(PROJECT / name, tmp_path / name)
    shutil.copytree(PROJECT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    page = tmp_path / "docs" / "sweeps.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the old page](no-such-page.md).\n", encoding="utf-8")
    result = _build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr
