"""The README and the documentation pages work as written: the README opens with its two commands and stays a
landing page; every example marked ``<!-- docs-test: ... -->`` (helpers.readme) runs: each plugin passes
``zoo check``, each ``run`` command succeeds in a folder holding the plugins, each ``compose`` command line is one
``zoo train`` accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from helpers import README, ROOT, fork_zoo
from helpers.readme import PAGES, marked_blocks

from zoo import registry
from zoo.cli.train import checked
from zoo.registry.discovery import discover

pytestmark = pytest.mark.slow

#: my_plugins/NAME.py -> its source, once however many pages show it.
PLUGINS = {what.split()[1]: block for page, what, block in marked_blocks() if what.startswith("plugin ")}
#: The registration of a plugin example: ("attention", "distance").
REGISTERED = re.compile(r'@register\("(\w+)", "(\w+)"\)')


def commands(kind: str) -> list[str]:
    """Each distinct command of the blocks marked ``kind``, continued lines joined and comments dropped, in the
    pages' order."""
    blocks = [block.replace("\\\n", " ") for _, what, block in marked_blocks() if what == kind]
    lines = [" ".join(line.split("  #")[0].split()) for block in blocks for line in block.splitlines()]
    return list(dict.fromkeys(line for line in lines if line))


def test_readme_opens_with_exactly_two_commands():
    first = re.search(r"```\w*\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first.splitlines() if line.strip()]
    assert commands == ["./run train", "./run test"]
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("./run test")


def test_readme_is_a_landing_page_whose_links_and_picture_exist():
    assert len(README.splitlines()) <= 200
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [target for target in targets if not target.startswith("http")]
    assert any(target.endswith(".png") for target in local), "the README shows no picture"
    assert [target for target in local if not (ROOT / target).is_file()] == []
    in_site = set(nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))
    assert {target.removeprefix("docs/") for target in local if target.endswith(".md")} <= in_site


def test_every_kind_has_an_example_and_every_copy_is_the_same():
    copies = {}
    for page, what, block in marked_blocks():
        if what.startswith("plugin "):
            copies.setdefault(what.split()[1], {})[page] = block
    differing = {path: sorted(pages) for path, pages in copies.items() if len(set(pages.values())) > 1}
    assert differing == {}, "the same example differs between pages"
    kinds = {REGISTERED.search(source).group(1) for source in PLUGINS.values()}
    assert kinds == set(registry.KIND_NAMES)


def test_every_plugin_example_passes_zoo_check(tmp_path: Path):
    folder = write_plugins(tmp_path)
    components = [f"{kind}/{name}" for source in PLUGINS.values() for kind, name in REGISTERED.findall(source)]
    checked_lines = fork_zoo("check", *components, "--plugin-dir", str(folder), cwd=tmp_path).stdout.splitlines()
    assert [line.split(" [")[0] for line in checked_lines] == components
    assert all(" ok" in line and "failed" not in line for line in checked_lines), "\n".join(checked_lines)


@pytest.mark.parametrize("command", commands("compose"))
def test_compose_command_is_accepted_by_zoo_train(command: str):
    words = shlex.split(command)
    assert words[:2] == ["zoo", "train"], f"a compose block holds only zoo train lines: {command}"
    discover()
    checked(words[2:])  # every job of a sweep composed and checked, its model built on a tiny batch


@pytest.mark.parametrize("command", commands("run"))
def test_run_command_succeeds(command: str, tmp_path: Path):
    write_plugins(tmp_path)
    words = shlex.split(command)
    settings = {}  # VARIABLE=value words before the command, as the shell reads them
    while "=" in words[0] and words[0].split("=")[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        settings[name] = value
    assert words[0] == "zoo", f"a run block holds only zoo commands: {command}"
    trains = words[1] == "train" and not any(word.startswith("--") for word in words)  # not --help, --cfg
    if trains:  # into a folder of its own, with no progress bar in the log
        words += ["hydra.run.dir=run", "trainer.enable_progress_bar=false"]
    done = fork_zoo(*words[1:], cwd=tmp_path, env=settings)
    assert "failed" not in done.stdout, done.stdout
    if trains:
        assert (tmp_path / "run" / "summary.json").is_file()


def test_every_marker_marks_a_block_the_tests_know():
    """A marker with no fenced block right after it, or one saying what no test reads, would be skipped unseen."""
    for page, text in PAGES.items():
        markers = re.findall(r"<!-- docs-test: (.+?) -->", text)
        assert len(markers) == sum(1 for name, *_ in marked_blocks() if name == page), page
        known = ("run", "compose", "search")
        assert all(m in known or re.fullmatch(r"plugin my_plugins/\w+\.py", m) for m in markers), page


def nav_pages(nav) -> list[str]:
    """The pages of mkdocs.yml's navigation: a page, {title: page} or {title: [entries]}, nested."""
    if isinstance(nav, str):
        return [nav]
    entries = nav.values() if isinstance(nav, dict) else nav
    return [page for entry in entries for page in nav_pages(entry)]


def write_plugins(folder: Path) -> Path:
    """Every plugin example, saved where its page says: ``folder/my_plugins/NAME.py``."""
    for path, source in PLUGINS.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(source)
    return folder / "my_plugins"
