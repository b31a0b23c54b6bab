"""The README's fenced blocks, found by the HTML comment that marks each one (``<!-- readme-test: ... -->``)."""

from __future__ import annotations

import re

from helpers.paths import ROOT

README = (ROOT / "README.md").read_text()


def fenced_block_after(marker: str) -> str:
    """The text of the first fenced block after ``marker`` in the README."""
    match = re.search(re.escape(marker) + r"\s*```\w*\n(.*?)```", README, re.S)
    assert match, f"README lost its block after {marker!r}"
    return match.group(1)
