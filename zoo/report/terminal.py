"""A leaderboard drawn for the terminal: rich tables that fit its width, never wrapping inside a number.

Settings and costs alike in every row are already folded into one line above the table (:class:`View`). A
table still too wide wraps its headings between words (``bleu_by_length`` over ``bleu 1-10``) where that makes
it fit, else goes on below in further tables that repeat the first column, as a wide data frame prints: a
number is never cut or broken over lines, and no line is longer than the terminal.
"""

from __future__ import annotations

import io
import textwrap

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from zoo.report.columns import Column, View

#: What a table adds around its columns: a border and one space each side of every cell.
_EDGE, _AROUND = 1, 3
#: The least width a text column folds its words to in a terminal too narrow for them.
_FOLDED = 4


def terminal_width() -> int:
    """The terminal's width as rich reads it ($COLUMNS first, else the terminal's size, else 80)."""
    return Console().width


def _full_width(column: Column) -> int:
    return max([cell_len(column.name), *(cell_len(cell.text) for cell in column.cells)])


def _narrow_width(column: Column) -> int:
    """The least width that breaks nothing: a number's whole cell, a text's or a heading's longest word."""
    heading = [cell_len(word) for word in column.name.split()]
    if column.numeric:
        cells = [cell_len(cell.text) for cell in column.cells]
    else:
        cells = [cell_len(word) for cell in column.cells for word in cell.text.split()]
    return max([1, *heading, *cells])


def _span(widths: list[int]) -> int:
    return _EDGE + sum(width + _AROUND for width in widths)


def _fit(columns: list[Column], width: int) -> list[int]:
    """Each column's width: its narrow width, widened to its full width while the table still fits ``width``,
    the first column (the row's name) first, then the columns that need least, so most headings stay whole. In
    a terminal too narrow even for that, texts give way (their words folded), never numbers."""
    narrow, full = [_narrow_width(c) for c in columns], [_full_width(c) for c in columns]
    widths, spare = list(narrow), width - _span(narrow)
    for k in [0, *sorted(range(1, len(columns)), key=lambda k: full[k] - narrow[k])]:
        grow = max(0, min(spare, full[k] - widths[k]))
        widths[k] += grow
        spare -= grow
    for k, column in enumerate(columns):
        give = 0 if column.numeric else max(0, min(-spare, widths[k] - _FOLDED))
        widths[k] -= give
        spare += give
    return widths


def _blocks(columns: list[Column], width: int) -> list[tuple[list[Column], list[int]]]:
    """The columns in one table when their headings wrapped make it fit ``width``; else split into tables of
    whole headings, each led by the first column (the row's name)."""
    if _span([_narrow_width(c) for c in columns]) <= width:
        return [(columns, _fit(columns, width))]
    first, rest = columns[0], columns[1:]
    blocks: list[list[Column]] = [[]]
    for column in rest:
        if blocks[-1] and _span([_full_width(c) for c in (first, *blocks[-1], column)]) > width:
            blocks.append([])
        blocks[-1].append(column)
    return [([first, *block], _fit([first, *block], width)) for block in blocks]


def _table(columns: list[Column], widths: list[int]) -> Table:
    table = Table()
    for column, width in zip(columns, widths):
        heading = "\n".join(textwrap.wrap(column.name, width, break_long_words=False)) or column.name
        table.add_column(
            Text(heading),
            width=width,
            justify="right" if column.numeric else "left",
            no_wrap=column.numeric,
            overflow="fold",
        )
    for k in range(len(columns[0].cells)):
        table.add_row(*(Text(column.cells[k].text) for column in columns))
    return table


def _between_items(line: str, width: int) -> str:
    """A comma-separated line broken only between its items (``train s=12`` stays whole) to fit ``width``."""
    lines = [""]
    for item in line.split(", "):
        joined = f"{lines[-1]}, {item}" if lines[-1] else item
        if lines[-1] and cell_len(joined) + 1 > width:
            lines[-1] += ","
            lines.append(item)
        else:
            lines[-1] = joined
    return "\n".join(lines)


def draw(view: View, footnote: str, width: int | None = None) -> str:
    """The view as text no wider than ``width`` (default: the terminal's): the shared settings, the table in as
    many blocks as it takes, the footnote."""
    width = width or terminal_width()
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, soft_wrap=False)
    if view.shared:
        console.print(Text(_between_items(view.shared_line(), width)))
    for k, (columns, widths) in enumerate(_blocks(view.columns, width)):
        if k:
            console.print()
        console.print(_table(columns, widths))
    console.print(Text(footnote))
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip().splitlines())
