"""The examples of the README and the documentation pages (docs/), each a fenced block marked by the HTML comment
before it, ``<!-- docs-test: WHAT -->``, which a reader never sees:

``plugin my_plugins/NAME.py``
    a plugin's whole source, as a reader saves it at that path;
``run``
    shell commands, run one by one in a folder holding every ``plugin`` example (each must succeed); a line
    ending in ``\\`` goes on on the next;
``compose``
    ``zoo train`` command lines, each checked as ``zoo train`` checks it before anything trains;
``search``
    the searching guide's searches on one machine, each run by a test of e2e/test_search_parallel.py on tiny
    settings (:func:`search_command`).
"""

from __future__ import annotations

import re

from helpers.paths import ROOT

README = (ROOT / "README.md").read_text()
#: The README and every page of the documentation site, by path from the checkout's root.
PAGES = {"README.md": README} | {
    str(path.relative_to(ROOT)): path.read_text() for path in sorted((ROOT / "docs").rglob("*.md"))
}
MARKED = re.compile(r"<!-- docs-test: (.+?) -->\s*```\w*\n(.*?)```", re.S)


def marked_blocks() -> list[tuple[str, str, str]]:
    """(page, what the marker says, the block's text) of every marked block, page by page in order."""
    return [(page, *match.groups()) for page, text in PAGES.items() for match in MARKED.finditer(text)]


def fenced_block_after(marker: str, page: str | None = None) -> str:
    """The text of the first fenced block after ``marker`` in the README or a page (or in ``page`` alone)."""
    for name, text in PAGES.items():
        match = re.search(re.escape(marker) + r"\s*```\w*\n(.*?)```", text, re.S)
        if match and page in (None, name):
            return match.group(1)
    raise AssertionError(f"{page or 'no page'} has a block after {marker!r}")


def search_command(naming: str) -> list[str]:
    """The words after ``zoo`` of the one ``search`` example whose line holds ``naming`` (its comment dropped)."""
    blocks = [block for _, what, block in marked_blocks() if what == "search"]
    lines = [line.split("  #")[0] for block in blocks for line in block.splitlines()]
    (line,) = [line for line in lines if naming in line]
    return line.split()[1:]
