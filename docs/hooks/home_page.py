"""The site's home page is the README, generated at every build: one text, two places to read it.

The README links to the docs pages as `docs/<page>.md` (right on GitHub); on the site the same pages sit at the
root, so those links lose their `docs/` prefix. Anything else the README links to must exist in the site too, or
`mkdocs build --strict` fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

HOME_PAGE = "index.md"
README = Path(__file__).resolve().parents[2] / "README.md"


def home_page(readme: str) -> str:
    """The README with its links into docs/ made relative to the site's root."""
    return re.sub(r"\]\(docs/", "](", readme)


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, HOME_PAGE, content=home_page(README.read_text(encoding="utf-8"))))
    return files
