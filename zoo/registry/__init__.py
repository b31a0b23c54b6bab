"""The registry: kinds, components keyed by kind and name, and plugin discovery."""

from zoo.registry.entries import Entry, RegistryError, build, default_config, entries, get, names, register
from zoo.registry.kinds import GROUP_KINDS, KIND_NAMES, KINDS, MODEL_KINDS, OPTIONAL_GROUPS, Kind, kind

__all__ = [
    "Entry",
    "RegistryError",
    "build",
    "default_config",
    "entries",
    "get",
    "names",
    "register",
    "GROUP_KINDS",
    "KIND_NAMES",
    "KINDS",
    "MODEL_KINDS",
    "OPTIONAL_GROUPS",
    "Kind",
    "kind",
]
