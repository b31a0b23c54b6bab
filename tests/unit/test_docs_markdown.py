"""The Markdown the site and the repository show: every fenced code block names its language, so the site
highlights it (a bare fence is shown as plain text)."""

from __future__ import annotations

import re

from helpers import ROOT

PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md", ROOT / "tests" / "README.md"])
FENCE = re.compile(r"^\s*```(.*)$")


def bare_fences(text: str) -> list[int]:
    """The lines (1-based) of the opening fences that name no language."""
    bare, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence and not inside and not fence.group(1).strip():
            bare.append(number)
        inside ^= bool(fence)
    return bare


def test_every_code_block_names_its_language():
    found = [f"{page.relative_to(ROOT)}:{n}" for page in PAGES for n in bare_fences(page.read_text())]
    assert not found, f"give these code blocks a language (```bash, ```text, ...): {', '.join(found)}"
