"""The README's claim about dataset revisions is the one `finetasks-afr data sources` shows (issue 54, item 4: it said
every dataset was at a pinned revision while the command showed 13 of 24 unpinned)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finetasks_afr.cli.application import app

README = Path(__file__).resolve().parents[1] / "README.md"
COMMIT = re.compile(r"[0-9a-f]{40}")


def shown_revisions() -> dict[str, str]:
    """key -> revision, read from the table `finetasks-afr data sources` prints ("-" for none)."""
    result = CliRunner().invoke(app, ["data", "sources"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    rows = [[cell.strip() for cell in line.strip("│ ").split("│")] for line in result.output.splitlines()]
    return {row[0]: row[2] for row in rows if len(row) >= 5 and row[0] and row[0] != "key"}


@pytest.mark.slow  # `data sources` imports every benchmark module (7 s on 2 cores)
def test_the_readme_counts_and_names_the_unpinned_datasets_as_data_sources_shows_them() -> None:
    revisions = shown_revisions()
    unpinned = sorted(key for key, revision in revisions.items() if revision == "-")
    commits = [key for key, revision in revisions.items() if COMMIT.fullmatch(revision)]
    refs = len(revisions) - len(unpinned) - len(commits)
    text = " ".join(README.read_text(encoding="utf-8").split())
    claim = (
        f"Of the {len(revisions)} hub sources, {len(commits)} are pinned to a commit, {refs} to a named ref "
        f"(a pull request, the hub's parquet conversion) and {len(unpinned)} are unpinned"
    )
    assert claim in text, f"README.md should say: {claim}"
    listed = re.search(r"could be seen where the suite was built \(offline\): ([a-z0-9_, ]+)\.", text)
    assert listed is not None and sorted(listed.group(1).split(", ")) == unpinned, (listed, unpinned)
    assert "at a pinned revision" not in text
