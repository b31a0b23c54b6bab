"""One contract check: what it checks, which components it builds, and the function that checks it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class ContractViolation(AssertionError):
    """A component broke its kind's contract; the message says what was expected."""


class Refused(Exception):
    """The components of a case refuse to work together, with a one-line reason (a Transformer decoder refusing
    a scorer that needs equal widths): not a violation, the case does not apply."""


def expect(condition: bool, message: str) -> None:
    """Raise :class:`ContractViolation` with ``message`` unless ``condition`` holds (unlike ``assert``, never
    skipped under ``python -O``)."""
    if not condition:
        raise ContractViolation(message)


@dataclass(frozen=True)
class Case:
    """A check of one combination of components. ``components`` lists the (kind, name) pairs it builds, the
    component under test first; ``run(tmp_dir)`` raises :class:`ContractViolation` on a broken contract and
    :class:`Refused` when the combination does not apply."""

    check: str
    components: tuple[tuple[str, str], ...]
    run: Callable[[Path], None]
    detail: str = ""

    @property
    def id(self) -> str:
        """``kind/name check (detail)``: how ``zoo check`` and the tests name the case."""
        kind, name = self.components[0]
        return f"{kind}/{name} {self.check}" + (f" ({self.detail})" if self.detail else "")

    def involves(self, kind: str, name: str) -> bool:
        return (kind, name) in self.components
