"""One colour per configuration, the same on every chart of a page, in the live dashboard and in every report.

A colour taken by order of listing (the first configuration blue, the next red) changes as soon as the runs listed
change: the same configuration was blue in one chart and red in the next. Here a configuration's colour is derived
from its key: the key's 32-bit FNV-1a hash (Fowler, Noll and Vo) picks a slot of a fixed palette, and a key whose
slot is taken gets the next free one (linear probing); past :data:`PALETTE` keys, slots repeat.

Who gets a contested slot is decided in one of two ways. The configurations of runs (:func:`first_come`) take
slots in the order their first runs started (:func:`started_order`: the folders Hydra names by date, time and job
number, in that order), so a colour once drawn never changes: the dashboard, which sees a
sweep's runs as they start, draws each configuration as the finished report of the same runs does, and a sweep
added tomorrow leaves today's colours alone. The groups a reader makes in the page (:func:`palette`, computed
alike by ``assets/palette.js``) have no start; their keys take slots in order of their hashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

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
    return first_come(sorted(set(keys), key=lambda key: (fnv1a(key), key)))


def first_come(keys: Iterable[str]) -> dict[str, str]:
    """Each distinct key's colour, the keys placed in the order given: its hash's slot of :data:`PALETTE`, else the
    next free slot. A key's colour depends on the keys before it alone, so keys added at the end recolour none."""
    colours: dict[str, str] = {}
    taken: set[int] = set()
    for key in dict.fromkeys(keys):
        slot = fnv1a(key) % len(PALETTE)
        free = next((s % len(PALETTE) for s in range(slot, slot + len(PALETTE)) if s % len(PALETTE) not in taken), slot)
        taken.add(free)
        if len(taken) == len(PALETTE):  # every colour used: the next keys share them, each at its own slot
            taken.clear()
        colours[key] = PALETTE[free]
    return colours


def started_order(path: Path) -> list:
    """Where a run's folder sorts among others in the order runs start: its path with each number compared as a
    number, so a sweep's job 10 comes after job 9 (Hydra names folders by date, time and job number)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]
