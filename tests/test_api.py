"""The public plugin API: the built-in plugins import from ``zoo.api`` alone and from no other plugin, and
everything ``zoo.api`` lists is there."""

from __future__ import annotations

import ast

from conftest import ROOT

import zoo.api

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
    offenders = {str(p.relative_to(ROOT)): bad for p in PLUGIN_FILES if (bad := set(zoo_imports(p)) - {"zoo.api"})}
    assert PLUGIN_FILES and not offenders, f"plugins import from zoo.api only: {offenders}"


def test_the_public_api_holds_what_it_lists():
    missing = [name for name in zoo.api.__all__ if not hasattr(zoo.api, name)]
    assert not missing and len(set(zoo.api.__all__)) == len(zoo.api.__all__)
