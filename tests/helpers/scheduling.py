"""How pytest-xdist deals the tests to its workers: one at a time to whichever is free, except that the tests of a
file that share a module-scoped fixture (a run, a browser) go to one worker together, so the fixture is made once.

pytest-xdist's own ``--dist loadgroup`` would do this from ``xdist_group`` marks, but it renames the tests to carry
their group and pytest 9 no longer takes a new name, so nothing is grouped. Here the workers write each grouped
test's group to a file named in ``$ZOO_TEST_GROUPS`` while they collect (:func:`write_groups`), and the scheduler
(:class:`SharedFixtureScheduling`, from conftest.py's ``pytest_xdist_make_scheduler``) reads it when it deals.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

#: The environment variable naming the file of groups (set by the controller, inherited by its workers).
GROUPS = "ZOO_TEST_GROUPS"


def fixture_groups(items: list[pytest.Item]) -> dict[str, str]:
    """Each grouped test's group: an ``xdist_group`` mark's name, else ``FILE:FIXTURE`` for the tests of a file
    joined by the module- or class-scoped fixtures they share (a union over each file's such fixtures)."""
    owner: dict[tuple[str, str], tuple[str, str]] = {}

    def root(key: tuple[str, str]) -> tuple[str, str]:
        while owner.setdefault(key, key) != key:
            key = owner[key]
        return key

    groups, shared = {}, {}
    for item in items:
        marks = sorted(str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args)
        if marks:
            groups[item.nodeid] = "_".join(marks)
            continue
        definitions = item._fixtureinfo.name2fixturedefs if hasattr(item, "_fixtureinfo") else {}
        keys = [
            (str(item.path), name)
            for name in getattr(item, "fixturenames", ())
            if name in definitions and definitions[name][-1].scope in ("module", "class")
        ]
        for key in keys[1:]:
            owner[root(key)] = root(keys[0])
        if keys:
            shared[item.nodeid] = keys[0]
    groups |= {nodeid: "{}:{}".format(*root(key)) for nodeid, key in shared.items()}
    return groups


def write_groups(items: list[pytest.Item]) -> None:
    """Write the groups of ``items`` to the file ``$ZOO_TEST_GROUPS`` names, if it names one (whole or not at all:
    every worker writes the same groups)."""
    path = os.environ.get(GROUPS)
    if path:
        partial = Path(f"{path}.{os.getpid()}")
        partial.write_text(json.dumps(fixture_groups(items)))
        partial.replace(path)


class SharedFixtureScheduling(LoadScopeScheduling):
    """pytest-xdist's scheduling by scope, a group being a scope and every other test a scope of its own: the largest
    groups are dealt first, then the tests one by one in their order, each to a worker that runs short of work."""

    _groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:  # first asked once every worker has collected (and written the file)
            path = Path(os.environ[GROUPS])
            self._groups = json.loads(path.read_text()) if path.exists() else {}
        return self._groups.get(nodeid, nodeid)
