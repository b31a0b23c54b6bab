"""The documentation site builds as ``./run docs build`` builds it (``mkdocs build --strict``: a broken link, a
missing anchor or a page left out of the navigation fails it), needs nothing from the network to be read, and its
generated references are whole: every registered component with every field, every plain section, every config
group's choice, every public name of the plugin API. The build sees the documentation's own plugin examples as a
user's plugins (ZOO_PLUGIN_DIRS), so a component registered after the pages were written appears with no page
edited."""

from __future__ import annotations

import dataclasses
import html
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.readme import marked_blocks

import zoo.conf
from zoo import registry
from zoo.config.schema import PLAIN_SECTIONS
from zoo.registry.discovery import discover

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs_site")]

API_MODULES = ["zoo.api", "zoo.api.layers", "zoo.api.text", "zoo.api.vision", "zoo.api.metrics"]
#: Names griffe cannot see: tuple-assigned constants, which the zoo.api page names in its text instead.
TUPLE_ASSIGNED = {"PAD", "BOS", "EOS", "UNK"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built into a temporary folder with the documentation's plugin examples in ZOO_PLUGIN_DIRS."""
    work = tmp_path_factory.mktemp("docs")
    plugins = work / "my_plugins"
    plugins.mkdir()
    for _, what, source in marked_blocks():
        if what.startswith("plugin "):
            (plugins / Path(what.split()[1]).name).write_text(source)
    env = {**os.environ, "ZOO_PLUGIN_DIRS": str(plugins), "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(work / "site")]
    built = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-4000:]
    discover()  # the built-in components: this process's registry stays without the examples
    return work / "site"


def examples() -> list[tuple[str, str]]:
    """(kind, name) of each plugin example of the pages."""
    sources = [source for _, what, source in marked_blocks() if what.startswith("plugin ")]
    return sorted({pair for source in sources for pair in re.findall(r'@register\("(\w+)", "(\w+)"\)', source)})


def plain(fragment: str) -> str:
    """The text a reader sees of an HTML fragment, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text()


def section(text: str, anchor: str) -> str:
    """The HTML from the element with ``id=anchor`` to the next heading of the same or a higher level."""
    start = re.search(rf'<h(\d) id="{re.escape(anchor)}"', text)
    assert start, f"no heading with id {anchor}"
    end = re.compile(rf"<h[1-{start.group(1)}][ >]").search(text, start.end())
    return text[start.start() : end.start() if end else len(text)]


def test_every_page_is_built_and_loads_nothing_from_the_network(site: Path):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    remote = re.compile(r'<(?:script|link|img)\b[^>]*(?:src|href)="(?:https?:)?//', re.I)
    assert [str(p.relative_to(site)) for p in pages if remote.search(p.read_text())] == []
    assert (site / "search" / "search_index.json").is_file()


def test_search_splits_option_names_at_dots_and_underscores(site: Path):
    """Searching budget_flops finds the guides that write trainer.budget_flops (mkdocs.yml's separator)."""
    separator = json.loads((site / "search" / "search_index.json").read_text())["config"]["separator"]
    assert re.split(separator, "trainer.budget_flops=2e12") == ["trainer", "budget", "flops", "2e12"]


def test_configuration_reference_lists_every_component_with_every_field(site: Path):
    text = page(site, "reference/configuration")
    for kind in registry.KINDS:
        assert f'id="kind-{kind.name}"' in text
    for entry in registry.entries():
        part = section(text, f"{entry.kind}-{entry.name}")
        for field in entry.fields():
            row = re.search(rf"<td><code>{field.name}</code></td>(.*?)</tr>", part, re.S)
            assert row, f"{entry.kind}={entry.name} lacks its field {field.name}"
            assert " ".join(field.comment.replace("`", "").split()) in plain(row.group(1))
    for kind, name in examples():  # registered only where the site was built: by the pages' own examples
        assert f'id="{kind}-{name}"' in text, f"{kind}={name}, a plugin of a user's, is missing"


def test_configuration_reference_shows_types_defaults_choices_and_ranges(site: Path):
    trainer = section(page(site, "reference/configuration"), "section-trainer")
    assert re.search(r"<code>max_epochs</code></td>\s*<td><code>int</code></td>\s*<td><code>6</code></td>", trainer)
    assert "≥ 1 unless max_steps == -1" in trainer  # a range with the condition it is checked under
    optim = section(page(site, "reference/configuration"), "section-optim")
    assert re.search(r"<code>schedule</code>.*?inverse_sqrt, cosine, constant", optim, re.S)  # an Enum's choices
    distance = section(page(site, "reference/configuration"), "attention-distance")
    assert re.search(r"<code>scale</code>.*?&gt; 0", distance, re.S)  # the plugin's own range check


def test_configuration_reference_lists_the_sections_and_the_config_groups(site: Path):
    text = page(site, "reference/configuration")
    for name, config in PLAIN_SECTIONS.items():
        part = section(text, f"section-{name}")
        assert all(f"<code>{f.name}</code>" in part for f in dataclasses.fields(config)), name
    root = Path(zoo.conf.__file__).parent
    for group in ("model", "experiment", "search", "trainer", "logger", "paths", "hydra/launcher", "hydra/sweeper"):
        for choice in (root / group).glob("*.yaml"):
            assert f'id="{group.replace("/", "-")}-{choice.stem}"' in text, f"{group}={choice.stem}"
    assert 'id="top-level"' in text and "<code>init_from</code>" in text
    assert "kv_layout=gqa" in section(text, "group-presets")


def test_each_plugin_page_lists_the_components_of_its_kind(site: Path):
    for kind in registry.KIND_NAMES:
        text = page(site, f"plugins/{kind}")
        for name in registry.names(kind) + [n for k, n in examples() if k == kind]:
            assert f'href="../../reference/configuration/#{kind}-{name}"' in text, f"{kind}={name}"


@pytest.mark.parametrize("module", API_MODULES)
def test_api_reference_documents_every_public_name(site: Path, module: str):
    path = "reference/api" if module == "zoo.api" else f"reference/api/{module.split('.')[-1]}"
    text = page(site, path)
    names = importlib.import_module(module).__all__
    missing = [name for name in names if f'id="{module}.{name}"' not in text]
    assert set(missing) <= TUPLE_ASSIGNED
    assert all(name in text for name in missing)
    assert ":class:" not in text and ":func:" not in text  # Sphinx roles are shown as the code they name


def test_a_docs_build_that_fails_its_strict_check_leaves_no_partial_site(tmp_path):
    """``./run docs build`` builds aside and moves the site into place only once the strict build passes."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# broken\n\n[a page that is not there](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: broken\n")
    site = ROOT / "site"
    before = site.stat().st_mtime_ns if site.exists() else None
    built = subprocess.run(
        [str(ROOT / "run"), "docs", "build", "-f", str(tmp_path / "mkdocs.yml")], capture_output=True, text=True
    )
    assert built.returncode != 0 and "missing.md" in built.stderr
    assert not (tmp_path / "site").exists() and not list(ROOT.glob(".site-building.*"))
    assert (site.stat().st_mtime_ns if site.exists() else None) == before
