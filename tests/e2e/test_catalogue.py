"""``zoo list``: each field's allowed values and comment, and each kind's role, in a real subprocess."""

from __future__ import annotations

import re

import pytest
from helpers import fork_zoo

from zoo import registry
from zoo.registry.discovery import discover
from zoo.registry.kinds import KINDS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def listing(tmp_path_factory) -> list[str]:
    return fork_zoo("list", cwd=tmp_path_factory.mktemp("list")).stdout.splitlines()


def field_line(listing: list[str], kind: str, component: str, field: str) -> str:
    """The line of ``field`` in the listing of ``kind`` ``component``, stripped."""
    start = next(i for i, line in enumerate(listing) if line.startswith(f"{kind}: "))
    start = next(i for i in range(start, len(listing)) if listing[i].startswith(f"  {component} "))
    return next(line.strip() for line in listing[start + 1 :] if line.strip().startswith(f"{field}:"))


def test_a_choice_field_shows_its_allowed_values(listing):
    line = field_line(listing, "decoder", "rnn", "cell")
    assert re.fullmatch(r"cell: Cell = 'gru'  \{gru, lstm, rnn\} +# recurrent cell; rnn: Elman, tanh", line)


def test_a_field_shows_the_comment_from_its_line_even_when_inherited(listing):
    temperature = field_line(listing, "attention", "cosine", "temperature")
    assert re.fullmatch(r"temperature: float = 10\.0 +# initial tau; cosine scores lie in \[-tau, tau\]", temperature)
    norm = field_line(listing, "decoder", "transformer", "norm")  # declared in zoo.nn.transformer.TransformerLayout
    assert re.match(r"norm: Norm = 'layernorm'  \{layernorm, rmsnorm, dyt\} +# layernorm \(Ba et al\., 2016\) \|", norm)


def test_no_line_is_wider_than_120_columns(listing):
    assert max(len(line) for line in listing) <= 120  # long descriptions and comments go on, under their text


def test_each_kind_is_headed_by_its_role(listing):
    discover()
    for kind in KINDS:
        assert (f"{kind.name}: {kind.role}" in listing) == bool(registry.names(kind.name))


def test_filter_keeps_only_matching_names(tmp_path):
    out = fork_zoo("list", "attention", "--filter", "dot", cwd=tmp_path).stdout
    assert out.startswith("attention: ") and "  dot " in out and "  scaled_dot " in out and "additive" not in out


def test_a_kinds_optional_groups_are_listed_under_it(listing):
    start = listing.index(next(line for line in listing if line.startswith("attention: ")))
    assert listing[start + 1].strip().startswith("(also offered as self_attention=NAME, cross_attention=NAME;")


def test_a_task_shows_the_components_it_chooses(listing):
    start = listing.index(next(line for line in listing if line.startswith("  captioning ")))
    heading = [line.strip() for line in listing[start + 1 : start + 3]]  # after its description, wrapped or not
    assert "(chooses, unless told otherwise: dataset=scenes, frontend=cnn, encoder=identity)" in heading


def test_a_plugin_without_a_docstring_says_so_and_zoo_check_asks_for_one(tmp_path):
    """Its base's docstring would describe every plugin of the kind: zoo list shows its own, or says it has none."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "plain.py").write_text(
        "from dataclasses import dataclass\n\nimport torch\n\nfrom zoo.api import Attention, register\n\n\n"
        '@register("attention", "plain")\nclass Plain(Attention):\n    @dataclass\n    class Config:\n        pass\n\n'
        "    def __init__(self, cfg, query_dim, key_dim, heads=1):\n        super().__init__()\n\n"
        "    def forward(self, q, k):\n        return q @ k.transpose(-1, -2)\n"
    )
    out = fork_zoo("list", "attention", "--filter", "plain", cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": "plain"}).stdout
    assert "  plain        (no docstring)  [" in out
    checked = fork_zoo("check", "attention/plain", cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": "plain"}, check=False)
    assert checked.returncode != 0 and "needs a class docstring" in checked.stdout + checked.stderr
