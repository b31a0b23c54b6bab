"""Every registered component against the contract of its kind (the registry's own behaviour: unit/test_registry.py).

The cases come from :mod:`zoo.checks`, the suite ``zoo check NAME`` runs on an installed plugin: generated
from the registry after plugin discovery, so a new plugin is checked the moment it registers, with no new
test. A case whose components refuse to work together (with a one-line reason) is skipped.
"""

from __future__ import annotations

import pytest

from zoo import registry
from zoo.api.metrics import JavaScorer
from zoo.checks import all_cases, run_case
from zoo.registry import discovery

discovery.discover()


def runs_java(case) -> bool:
    """Whether a component of ``case`` scores through a Java program (pycocoevalcap's): a JVM starts, seconds."""
    return any(issubclass(registry.get(kind, name).cls, JavaScorer) for kind, name in case.components)


CASES = [pytest.param(case, marks=pytest.mark.slow) if runs_java(case) else case for case in all_cases()]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_contract(case):
    outcome = run_case(case)
    if outcome.status == "not applicable":
        pytest.skip(outcome.reason)
    assert outcome.status == "ok", f"{case.id}: {outcome.reason}"


def test_a_decoder_that_uses_no_scorer_is_checked_once_not_per_scorer():
    """``uses_scorer = False`` (mamba) gives one case per check and posenc, naming no scorer, where it places no
    attention layer; where a layout places some (``hybrid``), every scorer; rnn, every scorer."""

    def scorers(name: str, layout: str | None) -> set:
        return {
            dict(case.components).get("attention")
            for case in all_cases()
            if case.check == "steps equal teacher forcing"
            and ("decoder", name) in case.components
            and (
                layout in case.detail.split(", ")
                if layout
                else not {"hybrid", "encoder-decoder", "gqa", "mqa", "mla"} & set(case.detail.split(", "))
            )
        }

    everyone = set(registry.names("attention"))
    assert (scorers("mamba", None), scorers("mamba", "hybrid"), scorers("rnn", None)) == ({None}, everyone, everyone)
