"""The leaderboard as a reader scans it: columns of cells, each number written at a precision that tells the
rows apart and carrying the true value it sorts by.

One decimal made three rows of 0.41, 0.43 and 0.38 all read ``0.4``; four decimals everywhere bury BLEU's
tenths in noise. So each score column takes the fewest decimals, from the score's natural precision up to
:data:`MAX_DECIMALS`, at which its distinct means read differently (:func:`decimals`), its standard deviations
at the same precision. Settings and costs alike in every row are said once above the table instead
(:attr:`View.shared`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zoo.report.aggregate import Stat

#: Most decimals chosen to tell rows apart: means closer than this differ by less than any test set resolves.
MAX_DECIMALS = 4
#: Most decimals ``--digits`` may ask for.
MAX_DIGITS = 10


def decimals(means: Iterable[float], natural: int = 1, cap: int = MAX_DECIMALS) -> int:
    """The fewest decimals, from ``natural`` up to ``cap``, at which the distinct ``means`` read differently."""
    distinct = set(means)
    for digits in range(natural, cap + 1):
        if len({f"{mean:,.{digits}f}" for mean in distinct}) == len(distinct):
            return digits
    return max(natural, cap)


#: The prefixes of a column in SI units (:func:`si_unit`), largest first.
PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
#: The smallest magnitude a column needs to be written in SI units: below it, its numbers are short already.
COMPACT_FROM = 1e4
#: A column written as it is.
PLAIN = (1.0, "")


def si_unit(means: Iterable[float]) -> tuple[float, str]:
    """The unit of a column of large numbers, from its largest mean (``1.27M``, and ``0.5M`` beside it), so every
    row is read in one unit; :data:`PLAIN` below ten thousand."""
    largest = max((float(f"{abs(mean):.3g}") for mean in means), default=0.0)  # as written: 999,999 is 1.00M
    return next(((scale, prefix) for scale, prefix in PREFIXES if largest >= max(scale, COMPACT_FROM)), PLAIN)


def stat_text(stat: Stat | None, digits: int, unit: tuple[float, str] = PLAIN) -> str:
    """``32.05 ± 2.83``, the mean alone for one seed, empty for no value; in an SI ``unit`` (:func:`si_unit`),
    three significant digits (``1.27M ± 0.03M``), so a narrow column holds it."""
    if stat is None:
        return ""
    scale, prefix = unit
    if prefix:
        mean = f"{stat.mean / scale:.3g}{prefix}"
        std = f"{stat.std / scale:.3g}{prefix}" if stat.std else "0"
    else:
        mean, std = f"{stat.mean:,.{digits}f}", f"{stat.std:,.{digits}f}"
    return mean if stat.n == 1 else f"{mean} ± {std}"


@dataclass
class Cell:
    """What a row shows in one column and, in a column of numbers, the true number it sorts by (None: missing,
    sorted last either way); a text sorts by its text."""

    text: str
    value: float | None = None
    best: bool = False
    std: float | None = None  # a mean's standard deviation over seeds (what a CSV of the shown table keeps)


@dataclass
class Column:
    """A heading and one cell per row; numbers are right-aligned and never wrapped."""

    name: str
    cells: list[Cell]
    numeric: bool = True


def stat_column(name: str, stats: list[Stat | None], digits: int, short: bool = False) -> Column:
    """A column of means ± stds, each cell sorting by its mean; ``short``: large numbers in an SI unit."""
    unit = si_unit(s.mean for s in stats if s) if short else PLAIN
    return Column(
        name, [Cell(stat_text(s, digits, unit), s.mean if s else None, std=s.std if s else None) for s in stats]
    )


def mark_best(column: Column, higher_is_better: bool) -> None:
    """Mark the cells holding the column's best mean, where the rows' means differ at all."""
    values = [cell.value for cell in column.cells if cell.value is not None]
    if len(set(values)) < 2:
        return
    best = max(values) if higher_is_better else min(values)
    for cell in column.cells:
        cell.best = cell.value == best


@dataclass
class View:
    """The columns of a leaderboard as shown, what every row shares, and which rows differ significantly from
    the baseline."""

    columns: list[Column]
    shared: dict[str, str] = field(default_factory=dict)
    significant: list[bool] = field(default_factory=list)

    def shared_line(self) -> str:
        """``same in every run: encoder=gru, frozen=0``; empty when nothing is folded."""
        if not self.shared:
            return ""
        return "same in every run: " + ", ".join(f"{key}={value}" for key, value in self.shared.items())

    @property
    def header(self) -> list[str]:
        return [column.name for column in self.columns]

    @property
    def rows(self) -> list[list[str]]:
        return [list(texts) for texts in zip(*([cell.text for cell in c.cells] for c in self.columns))]
