"""The contract checks, shipped with zoo: every registered component against the contract of its kind.

``zoo check NAME...`` runs the cases that build a named component, on an installed plugin or one in a
plugin folder, without a checkout or pytest; ``tests/contracts/test_contracts.py`` runs every case, so a new plugin
is checked the moment it registers.
"""

from __future__ import annotations

import inspect
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from zoo import registry
from zoo.checks.case import Case, ContractViolation, Refused, expect
from zoo.checks.data import data_cases
from zoo.checks.model import model_cases

__all__ = ["Case", "ContractViolation", "Outcome", "Refused", "all_cases", "cases_for", "expect", "run_case"]


def all_cases() -> list[Case]:
    """Every check of every registered component (plugins discovered first)."""
    return data_cases() + model_cases()


def cases_for(kind: str, name: str) -> list[Case]:
    """The cases that build ``kind``/``name``: its own, and those of the components it is combined with."""
    registry.get(kind, name)  # an unknown component is an error naming the registered ones
    return [case for case in all_cases() if case.involves(kind, name)]


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: str  # "ok", "failed" or "not applicable"
    reason: str = ""  # for a failure: the broken contract, or the error with the line that raised it


def run_case(case: Case) -> Outcome:
    """Run one case in a fresh temporary folder; any error but :class:`Refused` is a failure."""
    with tempfile.TemporaryDirectory(prefix="zoo-check-") as tmp:
        try:
            case.run(Path(tmp))
        except Refused as refused:
            return Outcome(case, "not applicable", str(refused))
        except ContractViolation as violation:
            return Outcome(case, "failed", str(violation))
        except Exception as error:  # a crash inside the plugin is a failure too, named where it happened
            return Outcome(case, "failed", f"{type(error).__name__}: {error} ({where(error, case)})")
    return Outcome(case, "ok")


def where(error: Exception, case: Case) -> str:
    """``file:line`` of the deepest frame in one of the case's components' files (else the deepest of all)."""
    files = {inspect.getsourcefile(registry.get(kind, name).cls) for kind, name in case.components}
    frames = traceback.extract_tb(error.__traceback__)
    frame = next((f for f in reversed(frames) if f.filename in files), frames[-1])
    return f"{frame.filename}:{frame.lineno}"
