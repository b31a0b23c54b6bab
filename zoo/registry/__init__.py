"""The registry: kinds, components keyed by kind and name, and plugin discovery."""
from zoo.registry.entries import (
    KINDS,
    Entry,
    RegistryError,
    build,
    default_config,
    entries,
    get,
    names,
    register,
)

__all__ = ["KINDS", "Entry", "RegistryError", "build", "default_config", "entries", "get", "names", "register"]
