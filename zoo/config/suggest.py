"""Close matches for a mistyped name: the "did you mean" of a one-line error.

Every place that refuses a name it does not know (a config key, a group's option, a command,
a flag, a metric, a ``zoo compare`` key) asks here for the known names closest to it, so a
typo is answered with its fix rather than only with a list to search.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(word: str, known: Iterable[str], n: int = 1) -> list[str]:
    """The (at most ``n``) names of ``known`` closest to ``word``, closest first; case is ignored, and so are a
    flag's leading dashes (every flag shares them: ``--bogus`` is not close to ``--verbose``)."""
    by_folded: dict[str, str] = {}
    for name in known:
        by_folded.setdefault(_folded(str(name)), str(name))
    return [by_folded[folded] for folded in difflib.get_close_matches(_folded(word), list(by_folded), n=n)]


def _folded(name: str) -> str:
    return name.lower().lstrip("-")


def did_you_mean(word: str, known: Iterable[str], n: int = 1) -> str:
    """``did you mean X?`` (``X or Y`` for ``n`` > 1) naming the closest known names; empty when none is close."""
    close = close_matches(word, known, n)
    return f"did you mean {' or '.join(close)}?" if close else ""


def with_hint(message: str, hint: str, rest: str = "") -> str:
    """``message; hint rest`` (the hint a question, ``rest`` what follows it), or ``message; rest`` when no
    name was close."""
    if hint:
        return f"{message}; {hint} {rest}".rstrip()
    return f"{message}; {rest}" if rest else message
