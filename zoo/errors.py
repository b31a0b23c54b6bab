"""The base of every error zoo reports to a user as one line (no traceback), and how it is reported.

Raise a subclass with a message that says what is wrong and what to do. ``zoo --verbose ...``,
``ZOO_VERBOSE=1`` or Hydra's ``HYDRA_FULL_ERROR=1`` add the traceback (for a bug report).
"""

from __future__ import annotations

import os
import sys
import traceback

VERBOSE_VARIABLE = "ZOO_VERBOSE"


class ZooError(Exception):
    """A user-facing error: bad config, missing data, incompatible components, corrupt checkpoint."""


def first_line(error: BaseException) -> str:
    """The first line of an error's text (a library's message may go on for a page)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def one_line_reason(error: BaseException) -> str:
    """``Type: first line``: why a job failed, as a summary or a sweep's report records it."""
    return f"{type(error).__name__}: {first_line(error)}"


def verbose() -> bool:
    """Tracebacks wanted? An environment variable, so DDP ranks and sweep workers inherit the choice."""
    return os.environ.get(VERBOSE_VARIABLE, "0") not in ("", "0") or os.environ.get("HYDRA_FULL_ERROR") == "1"


def report(error: BaseException) -> None:
    """Print ``error`` for a user: one ``zoo: error:`` line, after its traceback when :func:`verbose`."""
    if verbose():
        traceback.print_exception(error)
    print(f"zoo: error: {folded(error)}", file=sys.stderr)


def folded(error: BaseException) -> str:
    """An error's text on one line: a library's message inside zoo's (an OmegaConf validation error in a plugin's
    config: value, key, class) may run over several."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
