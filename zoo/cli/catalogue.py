"""``zoo list``: every registered component with its config fields."""
from __future__ import annotations

import argparse


def run(args: list[str], description: str) -> None:
    parser = argparse.ArgumentParser(prog="zoo list", description=description)
    parser.add_argument("kind", nargs="?", help="only this kind (encoder, decoder, attention, posenc, ...)")
    parser.add_argument("--filter", default="", help="only names containing this text")
    opts = parser.parse_args(args)
    from zoo import registry
    from zoo.registry.discovery import discover

    discover()
    if opts.kind and opts.kind not in registry.KIND_NAMES:
        raise registry.RegistryError(f"unknown kind '{opts.kind}'; kinds are: {', '.join(registry.KIND_NAMES)}")
    for kind in registry.KIND_NAMES:
        if opts.kind and kind != opts.kind:
            continue
        shown = [e for e in registry.entries(kind) if opts.filter in e.name]
        if not shown:
            continue
        print(f"{kind}:")
        for entry in shown:
            print(f"  {entry.name:<12} {entry.description}  [{entry.module}]")
            for field, type_name, default in entry.fields():
                print(f"      {field}: {type_name} = {default!r}")
        print()
