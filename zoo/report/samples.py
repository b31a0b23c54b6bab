"""The report's sample outputs: test items side by side, every seed of every configuration, each with its score.

One table, one row per test item: its source (a captioning item's image as a small
JPEG inside the page, from the ``thumbnail`` its run recorded or its ``image`` file
read again), its references, and under each configuration every seed's output with
that item's score (the metric plugins' per-item scores in ``test_items.jsonl``, for
the leaderboard's metric). The table is shown in one of two orders, switched in the
page: the first test items, or the items on which the configurations disagree most,
the largest spread (highest minus lowest) of their scores, each configuration's score
being the mean over its seeds. With one configuration the spread is over its seeds.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from zoo.data.images import ImageError, as_image, read_rgb
from zoo.data.thumbnails import THUMBNAIL_SIDE, data_uri
from zoo.report.aggregate import Group, run_order
from zoo.report.compare import Leaderboard
from zoo.report.runs import Run
from zoo.report.stats import read_items

#: Items shown in each order.
SAMPLES = 8
#: References shown of an item; the rest are counted.
REFERENCES = 3


@dataclass
class Outputs:
    """What one configuration's finished runs wrote for the test items: per run, its items by id."""

    group: Group
    runs: list[tuple[Run, dict[str, dict]]]

    def scores(self, item: str, metric: str) -> list[float]:
        """Each run's score of ``item`` on ``metric``, where it has one."""
        found = (items[item].get("scores", {}).get(metric) for _, items in self.runs)
        return [float(score) for score in found if isinstance(score, (int, float))]


def spread(values: list[float]) -> float | None:
    """Highest minus lowest of some scores; None with fewer than two."""
    return max(values) - min(values) if len(values) > 1 else None


def by_disagreement(spreads: dict[str, float | None]) -> list[str]:
    """Item ids, largest spread first; ties, and the items without a spread (last), keep their order."""
    return sorted(spreads, key=lambda item: (spreads[item] is None, -(spreads[item] or 0.0)))


def item_spreads(outputs: list[Outputs], items: list[str], metric: str) -> dict[str, float | None]:
    """Each item's spread of scores across the configurations (means over seeds); across the seeds when there
    is one configuration."""
    spreads = {}
    for item in items:
        if len(outputs) == 1:
            spreads[item] = spread(outputs[0].scores(item, metric))
        else:
            means = [sum(s) / len(s) for config in outputs if (s := config.scores(item, metric))]
            spreads[item] = spread(means)
    return spreads


def collect(board: Leaderboard) -> list[Outputs]:
    """The finished runs that wrote test items, by configuration (seed order); configurations without any left out."""
    outputs = []
    for group in board.groups:
        runs = [(run, items) for run in sorted(group.finished, key=run_order) if (items := read_items(run))]
        if runs:
            outputs.append(Outputs(group, runs))
    return outputs


def common_items(outputs: list[Outputs]) -> list[str]:
    """The ids every run decoded, in the first run's order."""
    first = outputs[0].runs[0][1]
    every = [items for config in outputs for _, items in config.runs]
    return [item for item in first if all(item in items for items in every)]


def score_metric(board: Leaderboard, row: dict) -> str | None:
    """The metric whose per-item scores are shown and sorted by: the leaderboard's when the items carry it,
    else the first they carry; None when they carry none."""
    scores = row.get("scores") or {}
    return board.sort if board.sort in scores else next(iter(scores), None)


def thumbnail(row: dict) -> str | None:
    """A ``data:`` URI of the item's image: the thumbnail the run recorded, else its image file made small."""
    recorded = row.get("thumbnail")
    if isinstance(recorded, str) and recorded.startswith("data:image/"):
        return recorded
    if isinstance(row.get("image"), str):
        try:
            return data_uri(read_rgb(as_image(row["image"])), THUMBNAIL_SIDE)
        except ImageError:
            return None  # moved or deleted since the run: the item's id is shown instead
    return None


def sample_outputs(board: Leaderboard) -> str:
    """The section: the switch between the two orders and the table of items."""
    outputs = collect(board)
    items = common_items(outputs) if outputs else []
    if not items:
        return '<p class="note">No test outputs to show (test_items.jsonl).</p>'
    first_row = outputs[0].runs[0][1][items[0]]
    metric = score_metric(board, first_row)
    first = items[:SAMPLES]
    spreads = item_spreads(outputs, items, metric) if metric else {}
    disagreeing = [item for item in by_disagreement(spreads) if spreads[item] is not None][:SAMPLES]
    shown = first + [item for item in disagreeing if item not in first]
    header = ["item", "references", *(config.group.label for config in outputs)]
    header += [f"{metric} spread"] if metric else []
    head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
    body = "".join(_row(item, outputs, metric, spreads, first, disagreeing) for item in shown)
    table = f'<table class="samples"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    across = "configurations' mean" if len(outputs) > 1 else "seeds'"
    # A form of its own: its radio buttons are one group even when the page holds several sets of runs.
    return f'<form class="samples-view">{_switch(metric, across if disagreeing else None)}{table}</form>'


def _switch(metric: str | None, across: str | None) -> str:
    """Radio buttons that reorder the table (``orderSamples`` in assets/samples.js), sorting by the spread
    ``across`` configurations or seeds; a note instead when there is nothing to sort by."""
    if not metric:
        return '<p class="note">The first test items. The runs recorded no per-item scores to compare them by.</p>'
    if not across:
        return '<p class="note">The first test items: no item has scores from two configurations (or seeds).</p>'
    return (
        '<fieldset class="sample-order"><legend>Show</legend>'
        '<label><input type="radio" name="sample-order" value="first" checked onchange="orderSamples(this)"> '
        "the first test items</label> "
        '<label><input type="radio" name="sample-order" value="spread" onchange="orderSamples(this)"> '
        f"where the systems disagree most (largest spread of the {across} per-item {html.escape(metric)})</label>"
        "</fieldset>"
    )


def _row(
    item: str, outputs: list[Outputs], metric: str | None, spreads: dict, first: list[str], disagreeing: list[str]
) -> str:
    row = outputs[0].runs[0][1][item]
    ranks = ""
    if item in first:
        ranks += f' data-first="{first.index(item)}"'
    if item in disagreeing:
        ranks += f' data-spread="{disagreeing.index(item)}"'
    hidden = "" if item in first else " hidden"
    cells = [_source_cell(item, row), _references_cell(row["references"])]
    cells += [_outputs_cell(config, item, metric) for config in outputs]
    if metric:
        value = spreads.get(item)
        cells.append(f"<td>{'' if value is None else f'{value:.1f}'}</td>")
    return f"<tr{ranks}{hidden}>{''.join(cells)}</tr>"


def _source_cell(item: str, row: dict) -> str:
    image = thumbnail(row)
    name = html.escape(item)
    if image:
        return f'<td class="source"><img class="thumb" alt="image {name}" src="{image}"><br><small>{name}</small></td>'
    source = html.escape(str(row.get("source", "")))
    return f'<td class="source">{source}<br><small class="note">{name}</small></td>'


def _references_cell(references: list[str]) -> str:
    shown = "".join(f"<li>{html.escape(reference)}</li>" for reference in references[:REFERENCES])
    more = len(references) - REFERENCES
    extra = f'<li class="note">and {more} more</li>' if more > 0 else ""
    return f'<td><ul class="references">{shown}{extra}</ul></td>'


def _outputs_cell(config: Outputs, item: str, metric: str | None) -> str:
    """Every seed's output of ``item``, each with its score on ``metric`` (all its scores on hover)."""
    lines = []
    for run, items in config.runs:
        row = items[item]
        scores = row.get("scores") or {}
        every = ", ".join(f"{name} {value:.1f}" for name, value in scores.items() if isinstance(value, (int, float)))
        score = scores.get(metric) if metric else None
        badge = f'<span class="score">{score:.1f}</span>' if isinstance(score, (int, float)) else ""
        lines.append(
            f'<div class="output" title="{html.escape(run.path.name)}: {html.escape(every)}">'
            f'<span class="seed">seed {html.escape(str(run.seed))}</span>{badge} '
            f"{html.escape(row.get('hypothesis', ''))}</div>"
        )
    return f"<td>{''.join(lines)}</td>"
