"""The public plugin API: the built-in plugins import from ``zoo.api`` and its helper modules alone and from no
other plugin; everything the API lists is there; names that moved still work, with a warning naming the new place."""

from __future__ import annotations

import ast
import importlib
import inspect
import logging
import warnings

import pytest
from helpers import ROOT

import zoo.api
from zoo.api._moved import MOVED

API_MODULES = ("zoo.api", "zoo.api.layers", "zoo.api.text", "zoo.api.vision", "zoo.api.metrics")

PLUGIN_FILES = sorted((ROOT / "plugins").rglob("*.py"))


def zoo_imports(path) -> list[str]:
    """The modules of zoo and of the built-in plugins that a file imports, wherever in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        found += [m for m in modules if m.split(".")[0] in ("zoo", "zoo_plugins", "plugins")]
    return found


def test_the_builtin_plugins_import_only_the_public_api():
    offenders = {str(p.relative_to(ROOT)): bad for p in PLUGIN_FILES if (bad := set(zoo_imports(p)) - set(API_MODULES))}
    assert PLUGIN_FILES and not offenders, f"plugins import from zoo.api only: {offenders}"


@pytest.mark.parametrize("name", API_MODULES)
def test_each_api_module_holds_what_it_lists(name):
    module = importlib.import_module(name)
    missing = [listed for listed in module.__all__ if not hasattr(module, listed)]  # the bases: on first use
    assert not missing and len(set(module.__all__)) == len(module.__all__)


@pytest.mark.parametrize("name", API_MODULES)
def test_every_function_and_class_of_the_api_says_what_it_does(name):
    module = importlib.import_module(name)
    listed = [getattr(module, listed) for listed in module.__all__]
    bare = [f.__name__ for f in listed if (inspect.isfunction(f) or inspect.isclass(f)) and not f.__doc__]
    assert not bare, f"{name}: give {', '.join(bare)} a docstring (the API reference shows it)"


def test_the_core_stays_narrow():
    assert len(zoo.api.__all__) <= 41


@pytest.mark.parametrize("old", ["Scorer", "JavaScorer"])
def test_a_moved_name_still_works_and_says_where_it_is_now(old):
    module, new = MOVED[old]
    with pytest.warns(DeprecationWarning, match=rf"zoo\.api\.{old} is now {module}\.{new}"):
        found = getattr(zoo.api, old)
    assert found is getattr(importlib.import_module(module), new)


def test_a_moved_name_is_told_once_as_zoos_own_warning(caplog, monkeypatch):
    """Python shows a DeprecationWarning only in __main__, which a plugin's import never is."""
    monkeypatch.setattr(zoo.api._moved, "told", set())
    with caplog.at_level(logging.WARNING), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as Python's default filters do outside __main__
        first, again = zoo.api.Scorer, zoo.api.Scorer
    (told,) = caplog.records
    assert first is again
    assert told.getMessage() == "zoo.api.Scorer is now zoo.api.Attention: import it from there (the old name will go)"
