"""The registry's own behaviour: unknown names and kinds, duplicate registrations, and what ``register`` checks."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass

import pytest
import torch

from zoo import registry
from zoo.contracts import Attention, Encoder
from zoo.registry import discovery

discovery.discover()
D = 32


def test_unknown_name_lists_registered_names():
    with pytest.raises(registry.RegistryError) as error:
        registry.get("attention", "no_such_scorer")
    for name in registry.names("attention"):
        assert name in str(error.value)


def test_build_with_unknown_name_is_rejected():
    with pytest.raises(registry.RegistryError, match="no_such_encoder"):
        registry.build("encoder", {"name": "no_such_encoder"}, input_dim=D)


def test_duplicate_registration_from_another_module_names_both_modules():
    original = registry.get("encoder", "gru")

    class Impostor(Encoder):
        """Pretends to be the GRU encoder."""

        @dataclass
        class Config:
            pass

    Impostor.__module__ = "somebody_elses_plugin"
    with pytest.raises(registry.RegistryError) as error:
        registry.register("encoder", "gru")(Impostor)
    assert "somebody_elses_plugin" in str(error.value)
    assert original.module in str(error.value)
    assert registry.get("encoder", "gru") is original


TWICE_SEEN = '''
from dataclasses import dataclass

from zoo.api import Attention, register


@register("attention", "twice_seen")
class TwiceSeen(Attention):
    """Scores every key alike."""

    @dataclass
    class Config:
        pass
'''


def test_the_same_plugin_from_a_folder_and_a_package_is_registered_once(tmp_path, monkeypatch):
    """A run trained from a plugin folder, loaded where that plugin is also installed as a package."""
    entries = sys.modules["zoo.registry.entries"]  # the module (zoo.registry.entries is also a function)
    monkeypatch.setattr(entries, "_ENTRIES", dict(entries._ENTRIES))  # the registry as it was, afterwards
    first, second = tmp_path / "folder" / "twice.py", tmp_path / "package" / "twice.py"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(TWICE_SEEN)
    kept = import_file(first, "zoo_test_folder_twice").TwiceSeen
    assert import_file(second, "zoo_test_package_twice").TwiceSeen is kept
    second.write_text(TWICE_SEEN.replace("alike", "the same"))
    with pytest.raises(registry.RegistryError, match="their code differs; keep one"):
        import_file(second, "zoo_test_package_twice_changed")


def import_file(path, module_name: str):
    """Import ``path`` as module ``module_name``, as a plugin folder or an installed package would."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "declaration,complaint",
    [
        ("class Loose(torch.nn.Module): pass", "does not subclass zoo.api.Attention"),
        ("class Loose(Attention):\n    Config = dict", "needs a nested @dataclass named Config"),
        ("class Loose(Attention):\n    @dataclass\n    class Config:\n        width: int", "width have no default"),
    ],
)
def test_register_checks_the_base_class_and_the_config(declaration, complaint):
    namespace = {"torch": torch, "Attention": Attention, "dataclass": dataclass}
    exec(declaration, namespace)
    with pytest.raises(registry.RegistryError, match=complaint):
        registry.register("attention", "loose")(namespace["Loose"])
    assert "loose" not in registry.names("attention")


def test_config_with_unknown_field_is_rejected():
    cfg = registry.default_config("attention", "dot", no_such_field=3)
    with pytest.raises(registry.RegistryError, match="no_such_field"):
        registry.build("attention", cfg, query_dim=8, key_dim=8, heads=1)


def test_config_without_name_is_rejected():
    with pytest.raises(registry.RegistryError, match="no 'name'"):
        registry.build("attention", {}, query_dim=8, key_dim=8, heads=1)


def test_unknown_kind_is_rejected():
    with pytest.raises(registry.RegistryError, match="unknown component kind"):
        registry.register("no_such_kind", "x")


def test_a_plugin_folder_is_discovered_once_per_process(tmp_path, monkeypatch):
    """The command line's discovery serves the job in the same process; another process discovers for itself."""
    monkeypatch.setenv(discovery.ENV_VAR, os.environ.get(discovery.ENV_VAR, ""))  # discovery exports the folder
    folder = tmp_path / "discovered_once"
    folder.mkdir()
    (folder / "nothing.py").write_text('"""A plugin file that registers nothing."""\n')
    discovery.discover([str(folder)])
    loaded = []
    monkeypatch.setattr(discovery, "load_folder", loaded.append)
    discovery.discover([str(folder)])
    assert loaded == []


def test_zoo_check_reads_a_bare_name_as_every_kind_registered_under_it():
    from zoo.cli.check import resolve

    discovery.discover()
    assert resolve("s4d") == [("decoder", "s4d"), ("encoder", "s4d")]  # a family is an encoder and a decoder
    assert resolve("encoder/s4d") == [("encoder", "s4d")]
    with pytest.raises(registry.RegistryError, match=r"did you mean s4d\?"):
        resolve("s4dd")
