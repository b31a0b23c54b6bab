"""``zoo list``: every registered component with its config fields, their allowed values and comments,
and the optional groups that offer a kind's components again (``cross_attention``). Read from the registry's cached
index (:mod:`zoo.registry.index`), so it answers without importing a plugin."""

from __future__ import annotations

import textwrap

from zoo.cli.args import CommandParser
from zoo.config.suggest import did_you_mean, with_hint
from zoo.registry.index import Component, Field, components
from zoo.registry.kinds import KINDS, Kind, kind

# Comments of one component start in the same column, unless a field is wider than this.
ALIGN_AT_MOST = 48
# Lines are wrapped to this width (a terminal's or a code review's), continued under their text.
WIDTH = 120


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo list", description=description)
    parser.add_argument("kind", nargs="?", help="only this kind (encoder, decoder, attention, posenc, ...)")
    parser.add_argument("--filter", default="", help="only names containing this text")
    opts = parser.parse_args(args)
    kinds = [kind(opts.kind)] if opts.kind else list(KINDS)
    registered = components()
    check_filter(opts.filter, kinds, registered)
    for shown_kind in kinds:
        shown = [c for c in registered if c.kind == shown_kind.name and opts.filter in c.name]
        if not shown:
            continue
        print(f"{shown_kind.name}: {shown_kind.role}")
        if shown_kind.optional_groups:
            offered = ", ".join(f"{group}=NAME" for group in shown_kind.optional_groups)
            print(f"  (also offered as {offered}; left null, those follow the {shown_kind.name} choice)")
        for component in shown:
            described = f"{component.description or '(no docstring)'}  [{component.module}]"
            print("\n".join(wrapped(f"  {component.name:<12} ", described)))
            if component.chooses:
                chosen = ", ".join(f"{k}={v}" for k, v in component.chooses.items())
                print(f"      (chooses, unless told otherwise: {chosen})")
            for line in field_lines(component.fields):
                print(line)
        print()


def check_filter(text: str, kinds: list[Kind], registered: list[Component]) -> None:
    """Refuse a ``--filter`` no component's name contains (an empty list would look like no components),
    naming the closest name."""
    listed = {k.name for k in kinds}
    known = [c.name for c in registered if c.kind in listed]
    if not any(text in name for name in known):
        from zoo.registry.entries import RegistryError

        listing = f"zoo list {kinds[0].name}" if len(kinds) == 1 else "zoo list"
        raise RegistryError(
            with_hint(
                f"--filter {text}: no component's name contains '{text}'",
                did_you_mean(text, known),
                f"`{listing}` shows them all",
            )
        )


def field_lines(fields: tuple[Field, ...]) -> list[str]:
    """``name: type = default  {choices}  # comment`` per field, comments aligned where that stays short."""
    heads = []
    for field in fields:
        head = f"{field.name}: {field.type_name} = {field.default}"
        if field.choices:
            head += f"  {{{', '.join(field.choices)}}}"
        heads.append(head)
    width = max((len(h) for h in heads if len(h) <= ALIGN_AT_MOST), default=0)
    lines = []
    for head, field in zip(heads, fields):
        lines += wrapped(f"      {head:<{width}}  # ", field.comment, "# ") if field.comment else [f"      {head}"]
    return lines


def wrapped(first: str, text: str, mark: str = "") -> list[str]:
    """``first`` and ``text`` in lines of at most :data:`WIDTH` columns (where words allow), the later ones
    starting under the text, after ``mark``."""
    later = " " * (len(first) - len(mark)) + mark
    options = {"break_long_words": False, "break_on_hyphens": False}
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=later, **options)
