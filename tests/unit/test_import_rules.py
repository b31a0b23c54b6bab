"""zoo's import rules, read from the source of every module in zoo/ (every import statement, those inside functions
and under ``TYPE_CHECKING`` too).

The packages form layers, bottom to top: the foundation (what a run is made of: errors, disk, registry, config,
contracts, api, nn, reservoir, decoding, metrics, data, model, checks), run (the run folder's books), training
(Lightning), the readers of finished runs (inference, report, search, viz), and cli. A module imports only from its
own layer and those below, so each layer can be read, tested and changed without the ones above it. The package root
(zoo/__init__.py: ``zoo.register``, ``zoo.build``, ``zoo.load``) is the front door: Python runs it for every zoo
module, so what it imports as it loads is the foundation; its functions may reach any layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

#: Each package (or top-level module) of zoo/ with its layer, bottom (0) to top.
LAYERS = {
    **dict.fromkeys(
        (
            "errors",
            "disk",
            "registry",
            "config",
            "contracts",
            "api",
            "nn",
            "reservoir",
            "decoding",
            "metrics",
            "data",
            "model",
            "checks",
        ),
        0,
    ),
    "run": 1,
    "training": 2,
    **dict.fromkeys(("inference", "report", "search", "viz"), 3),
    "cli": 4,
}
LAYER_NAMES = ("foundation", "run", "training", "readers", "cli")
PLUGINS = "zoo_plugins"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted((ROOT / "zoo").rglob("*.py"))}


def imported(module: str, statements: list[ast.stmt] | None = None) -> list[tuple[str, int]]:
    """Every name ``module``'s import statements import (``from a import b``: ``a`` and ``a.b``), with its line; only
    those in ``statements`` when given (default: every statement, at any depth)."""
    tree = ast.parse(MODULES[module].read_text())
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    nodes = ast.walk(tree) if statements is None else statements
    names = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parents, *([node.module] if node.module else [])])
            names += [(base, node.lineno), *((f"{base}.{alias.name}", node.lineno) for alias in node.names)]
    return names


def layer(name: str) -> int | None:
    """The layer of the zoo module ``name`` (None: not zoo's, or the package root)."""
    parts = name.split(".")
    return LAYERS.get(parts[1]) if parts[0] == "zoo" and len(parts) > 1 else None


def test_every_package_of_zoo_has_a_layer():
    unplaced = {name.split(".")[1] for name in MODULES if name != "zoo"} - set(LAYERS)
    assert not unplaced, f"place {sorted(unplaced)} in a layer of LAYERS"


def test_a_module_imports_only_from_its_own_layer_and_below():
    above = [
        f"{module}:{line} imports {name} ({LAYER_NAMES[layer(name)]}, above {LAYER_NAMES[layer(module)]})"
        for module in MODULES
        if module != "zoo"
        for name, line in imported(module)
        if layer(name) is not None and layer(name) > layer(module)
    ]
    assert not above, "\n".join(above)


def test_the_package_root_imports_only_the_foundation_as_it_loads():
    tree = ast.parse(MODULES["zoo"].read_text())
    at_load = [(name, line) for name, line in imported("zoo", tree.body) if layer(name)]
    assert all(layer(name) == 0 for name, _ in at_load), at_load


def test_nothing_in_zoo_imports_the_built_in_plugins():
    found = [
        f"{module}:{line} imports {name}"
        for module in MODULES
        for name, line in imported(module)
        if name.split(".")[0] == PLUGINS
    ]
    assert not found, "\n".join(found)  # they arrive through the zoo.plugins entry points, as a third party's would


def import_time_graph() -> dict[str, set[str]]:
    """Which zoo modules each module imports as it loads (its top-level statements, outside ``TYPE_CHECKING``), with
    the packages whose ``__init__`` runs on the way there."""
    graph = {}
    for module in MODULES:
        statements = []
        for node in ast.parse(MODULES[module].read_text()).body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            statements += list(ast.walk(node)) if isinstance(node, (ast.If, ast.Try)) else [node]
        targets = set()
        for name, _ in imported(module, statements):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("zoo.") and name != module:
                parts = name.split(".")
                packages = {".".join(parts[:k]) for k in range(2, len(parts))}
                targets |= {name, *(p for p in packages if not (module == p or module.startswith(p + ".")))}
        graph[module] = targets
    return graph


def test_no_two_modules_import_each_other_as_they_load():
    """A cycle at import time leaves one of its modules half-loaded when the other reads it (within a layer too: report
    and search read each other, from inside functions where needed)."""
    graph = import_time_graph()
    cycles = []
    for start in graph:
        path, seen = [start], set()
        while path:  # depth-first, one path at a time: the first way back to ``start``
            here = path[-1]
            step = next((m for m in sorted(graph[here]) if m not in seen), None)
            if step is None:
                path.pop()
                continue
            seen.add(step)
            if step == start:
                cycles.append(" -> ".join([*path, start]))
                break
            path.append(step)
    assert not cycles, "\n".join(cycles)
