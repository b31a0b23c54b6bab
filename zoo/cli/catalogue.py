"""``zoo list``: every registered component with its config fields, their allowed values and comments,
and the optional groups that offer a kind's components again (``cross_attention``)."""

from __future__ import annotations

from zoo.cli.args import CommandParser
from zoo.config.suggest import did_you_mean, with_hint
from zoo.registry.entries import FieldInfo
from zoo.registry.kinds import Kind

# Comments of one component start in the same column, unless a field is wider than this.
ALIGN_AT_MOST = 48


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo list", description=description)
    parser.add_argument("kind", nargs="?", help="only this kind (encoder, decoder, attention, posenc, ...)")
    parser.add_argument("--filter", default="", help="only names containing this text")
    opts = parser.parse_args(args)
    from zoo import registry
    from zoo.registry.discovery import discover

    discover()
    kinds = [registry.kind(opts.kind)] if opts.kind else list(registry.KINDS)
    check_filter(opts.filter, kinds)
    for kind in kinds:
        shown = [e for e in registry.entries(kind.name) if opts.filter in e.name]
        if not shown:
            continue
        print(f"{kind.name}: {kind.role}")
        if kind.optional_groups:
            offered = ", ".join(f"{group}=NAME" for group in kind.optional_groups)
            print(f"  (also offered as {offered}; left null, those follow the {kind.name} choice)")
        for entry in shown:
            print(f"  {entry.name:<12} {entry.description or '(no docstring)'}  [{entry.module}]")
            chosen = getattr(entry.cls, "component_defaults", {})
            if chosen:
                print(f"      (chooses, unless told otherwise: {', '.join(f'{k}={v}' for k, v in chosen.items())})")
            for line in field_lines(entry.fields()):
                print(line)
        print()


def check_filter(text: str, kinds: list[Kind]) -> None:
    """Refuse a ``--filter`` no component's name contains (an empty list would look like no components),
    naming the closest name."""
    from zoo import registry

    known = [entry.name for kind in kinds for entry in registry.entries(kind.name)]
    if not any(text in name for name in known):
        listing = f"zoo list {kinds[0].name}" if len(kinds) == 1 else "zoo list"
        raise registry.RegistryError(
            with_hint(
                f"--filter {text}: no component's name contains '{text}'",
                did_you_mean(text, known),
                f"`{listing}` shows them all",
            )
        )


def field_lines(fields: list[FieldInfo]) -> list[str]:
    """``name: type = default  {choices}  # comment`` per field, comments aligned where that stays short."""
    heads = []
    for field in fields:
        head = f"{field.name}: {field.type_name} = {field.default!r}"
        if field.choices:
            head += f"  {{{', '.join(field.choices)}}}"
        heads.append(head)
    width = max((len(h) for h in heads if len(h) <= ALIGN_AT_MOST), default=0)
    return [
        f"      {head:<{width}}  # {field.comment}" if field.comment else f"      {head}"
        for head, field in zip(heads, fields)
    ]
