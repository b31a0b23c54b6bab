"""What a user gives a finished run, checked one input at a time.

An input that cannot be used (text that is not UTF-8, a sentence far longer than the run was
trained on, an image that cannot be decoded) is an :class:`InputError` for that input alone:
the others are still used, and the caller says where it was (``stdin line 3: ...``).
"""

from __future__ import annotations

import re
from typing import Any

from zoo.errors import ZooError

#: A source may have this many times ``data.max_len`` tokens. Evaluation decodes test sources longer
#: than any training source, so the limit is not data.max_len itself; but a line of thousands of tokens
#: is a document or a file without line breaks, and would decode for minutes without a word.
LENGTH_FACTOR = 4

_SURROGATE = re.compile("[\ud800-\udfff]")


class InputError(ZooError, ValueError):
    """One input (a sentence, an image) cannot be used; the message says why and what to do."""


def undecodable(text: str) -> str | None:
    """Where ``text`` holds a byte that is not UTF-8, as ``byte 0xff at column 5``; None if it holds none.

    Python reads stdin and arguments with ``errors="surrogateescape"``: each such byte becomes a
    lone surrogate, which no tokenizer can encode.
    """
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
    return f"{what} at column {found.start() + 1}"


def source_limit(cfg: dict[str, Any]) -> tuple[int, str]:
    """The most tokens a source of a run with config ``cfg`` may have, and where that number comes from:
    :data:`LENGTH_FACTOR` x ``data.max_len``, or fewer where the positional encoding has fewer positions."""
    max_len = cfg["data"]["max_len"]
    limit, why = LENGTH_FACTOR * max_len, f"{LENGTH_FACTOR} x data.max_len={max_len}"
    positions = (cfg.get("posenc") or {}).get("max_len")
    if positions is not None and positions < limit:
        limit, why = positions, f"posenc.max_len={positions}"
    return limit, why
