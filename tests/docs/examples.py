"""The fenced Python blocks of the documentation (and of README.md), and how each one runs.

A block runs unless the comment line right above its fence says otherwise:

- ``<!-- docs-example: pytest -->``: a test module, run by pytest (with Weir's plugin) in a child process;
- ``<!-- docs-example: not run (why) -->``: not run; the reason is required, and such blocks are few.

The other blocks of a page run in order, in one namespace, against one broker started for the
page: ``127.0.0.1:9092`` in a block (the address ``weir`` serves by default) is replaced by that
broker's address. A block may ``await`` at top level, as in an asyncio REPL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DEFAULT_ADDRESS = "127.0.0.1:9092"

_BLOCK = re.compile(r"(?:^<!-- docs-example: (?P<marker>[^\n]*?) -->\n)?^```python\n(?P<code>.*?)^```$",
                    re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository's root
    line: int
    code: str
    marker: str | None  # None (runs), "pytest", or "not run (...)"

    @property
    def runs_in_page(self) -> bool:
        return self.marker is None


def examples(page: Path) -> list[Example]:
    text = page.read_text()
    name = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
    return [Example(name, text.count("\n", 0, match.start("code")) + 1, match["code"],
                    match["marker"]) for match in _BLOCK.finditer(text)]


def pages() -> list[Path]:
    """The documentation's pages, and the README (its example is the first a visitor runs)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
