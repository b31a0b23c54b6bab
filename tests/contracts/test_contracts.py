"""Every registered component against the contract of its kind (the registry's own behaviour: unit/test_registry.py).

The cases come from :mod:`zoo.checks`, the suite ``zoo check NAME`` runs on an installed plugin: generated
from the registry after plugin discovery, so a new plugin is checked the moment it registers, with no new
test. A case whose components refuse to work together (with a one-line reason) is skipped.
"""

from __future__ import annotations

import pytest

from zoo.checks import all_cases, run_case
from zoo.registry import discovery

discovery.discover()


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.id)
def test_contract(case):
    outcome = run_case(case)
    if outcome.status == "not applicable":
        pytest.skip(outcome.reason)
    assert outcome.status == "ok", f"{case.id}: {outcome.reason}"
