"""One colour per configuration, the same on every chart of a page and in every report.

A colour taken by order (the first configuration blue, the next red) changes as soon as the runs listed change:
the same configuration was blue in one chart and red in the next. Here a configuration's colour is derived from
its key alone: the key's 32-bit FNV-1a hash (Fowler, Noll and Vo) picks a slot of a fixed palette. Two keys that
pick the same slot are resolved without regard to order: the keys are placed in order of their hashes, each in
its slot or, when that is taken, the next free one (linear probing); past :data:`PALETTE` keys, slots repeat.

``assets/charts.js`` computes the same colours for the groups a reader makes in the page (``Zoo.palette``).
"""

from __future__ import annotations

from collections.abc import Iterable

#: Colours that read on white and stay apart: D3's category10 less its grey, its olive darker, then navy,
#: goldenrod and teal.
PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#808000",
    "#000080",
    "#b8860b",
    "#008080",
)
_OFFSET, _PRIME = 0x811C9DC5, 0x01000193


def fnv1a(text: str) -> int:
    """The 32-bit FNV-1a hash of ``text``'s UTF-8 bytes."""
    value = _OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _PRIME) & 0xFFFFFFFF
    return value


def palette(keys: Iterable[str]) -> dict[str, str]:
    """Each distinct key's colour: its hash's slot of :data:`PALETTE`, else the next free slot, keys placed in
    order of (hash, key); a function of the set of keys, never of their order."""
    colours: dict[str, str] = {}
    taken: set[int] = set()
    for key in sorted(set(keys), key=lambda key: (fnv1a(key), key)):
        slot = fnv1a(key) % len(PALETTE)
        free = next((s % len(PALETTE) for s in range(slot, slot + len(PALETTE)) if s % len(PALETTE) not in taken), slot)
        taken.add(free)
        if len(taken) == len(PALETTE):  # every colour used: the next keys share them, each at its own slot
            taken.clear()
        colours[key] = PALETTE[free]
    return colours
