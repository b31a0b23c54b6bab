"""The comparison report: one self-contained HTML file (no network request) of a set of runs.

A sortable leaderboard; every run with its status; curves of anything the runs logged (training loss,
learning rate, gradient norm, validation scores: one select per chart, smoothing, log scale, one line per run
or each configuration's mean ± std over its seeds); the settings that vary against the monitored metric
(parallel coordinates) and a config diff of any two runs; quality against cost with the Pareto front, the
task's breakdowns (scores by bucket), sample outputs side by side, and the attention pictures the runs hold.

The leaderboard and the sections after the charts are drawn here (Plotly figures as JSON, which
``assets/charts.js`` plots); the runs, curves and settings are drawn in the browser from the runs' data the page
embeds (:mod:`zoo.report.live`), so the dashboard (:mod:`zoo.report.serve`) can update them in place. Plotly's
JavaScript is inlined once (the dashboard serves it beside the page instead), so the file opens offline. The
page's skeleton, CSS and scripts are package data (``zoo/report/assets/``), inlined into the page too.
"""

from __future__ import annotations

import html
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from string import Template

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from zoo import __version__
from zoo.report.bands import band_traces, error_bars, metric_bounds
from zoo.report.columns import Cell
from zoo.report.compare import SIGNIFICANCE, Leaderboard
from zoo.report.frontier import frontier
from zoo.report.live import as_script, page_data
from zoo.report.pictures import attention_pictures
from zoo.report.runs import Run
from zoo.report.samples import sample_outputs
from zoo.search.report import Family, expected_best_figure, format_search

#: The page's scripts and styles (``assets/``), inlined in this order: the leaderboard's, then the charts',
#: then the dashboard's updates (which do nothing in a written report).
SCRIPTS = ("report.js", "charts.js", "live.js", "samples.js")
STYLES = ("report.css", "charts.css", "samples.css")

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")

#: An end tag that would close the inline ``<style>`` or ``<script>`` early.
_CLOSES_INLINE = re.compile(r"</(style|script)", re.IGNORECASE)


@cache
def asset(name: str) -> str:
    """The text of ``assets/<name>`` (package data: the page's skeleton, CSS and script), read once.

    CSS and script are checked to be safe to inline in a style or script element. The skeletons
    (``report.html``; ``error.html``, the dashboard's error page) are ``string.Template`` text.
    """
    text = files(__package__).joinpath("assets", name).read_text(encoding="utf-8")
    if not name.endswith(".html") and _CLOSES_INLINE.search(text):
        raise ValueError(f"zoo/report/assets/{name} holds an end tag that would cut the inlined element short")
    return text


def _table(header: list[str], rows: list[list[str]], css_class: str = "leaderboard") -> str:
    head = "".join(f'<th onclick="sortTable(this)">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def leaderboard_table(board: Leaderboard) -> str:
    """The leaderboard (:meth:`Leaderboard.view`): each number's true value in ``data-value``, which its column
    sorts by (report.js); each metric's best in bold; the rows that differ significantly from the baseline
    tinted; the settings alike in every row said once above. The table scrolls sideways rather than wrap a value."""
    view = board.view()
    head = "".join(f'<th onclick="sortTable(this)">{html.escape(column.name)}</th>' for column in view.columns)
    rows = []
    for k, significant in enumerate(view.significant):
        cells = "".join(_cell(column.cells[k], column.numeric) for column in view.columns)
        rows.append(('<tr class="significant">' if significant else "<tr>") + cells + "</tr>")
    shared = f'<p class="shared">{html.escape(view.shared_line())}</p>' if view.shared else ""
    legend = "bold: the best mean of each metric"
    if board.baseline:
        legend += f"; tinted: the rows that differ from the baseline (Holm-adjusted p &lt; {SIGNIFICANCE})"
    return (
        f'{shared}<div class="leaderboard-scroll"><table class="leaderboard"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div><p class="note">{legend}</p>'
    )


def _cell(cell: Cell, numeric: bool) -> str:
    """A leaderboard cell; a number's carries its true value (empty: missing, sorted last)."""
    value = "" if cell.value is None else cell.value
    attributes = (f' data-value="{value}"' if numeric else "") + (' class="best"' if cell.best else "")
    return f"<td{attributes}>{html.escape(cell.text)}</td>"


def _figure(fig: go.Figure) -> str:
    """A chart as a placeholder holding its Plotly JSON, which ``charts.js`` plots: a dashboard's update of the
    section swaps the JSON and keeps the plotted chart, and with it the reader's zoom."""
    fig.update_layout(template="plotly_white", margin={"t": 40, "b": 40}, height=380, uirevision="kept")
    spec = fig.to_json().replace("</", "<\\/")
    return f'<div class="zoo-figure plotly-graph-div"><script type="application/json">{spec}</script></div>'


def _colour(k: int) -> str:
    return COLOURS[k % len(COLOURS)]


def pareto_front(points: list[tuple[float, float]], higher_is_better: bool) -> list[tuple[float, float]]:
    """The points no other point beats on both cost (lower) and quality, in order of cost."""
    front, best = [], None
    for cost, quality in sorted(points, key=lambda p: (p[0], -p[1] if higher_is_better else p[1])):
        if best is None or (quality > best if higher_is_better else quality < best):
            front.append((cost, quality))
            best = quality
    return front


def quality_against_cost(board: Leaderboard) -> str:
    """The sorted metric against parameters, train time and latency, each with its Pareto front."""
    costs = [c for c in ("params", "train TFLOPs", "train s", "ms/item greedy") if c in board.costs]
    if not costs or not board.sort:
        return '<p class="note">No finished run to place.</p>'
    fig = make_subplots(rows=1, cols=len(costs), subplot_titles=[f"{board.sort} vs {c}" for c in costs])
    bounds = metric_bounds(board.sort, [g.metrics[board.sort].mean for g in board.groups if board.sort in g.metrics])
    for col, cost in enumerate(costs, start=1):
        points = []
        for k, group in enumerate(board.groups):
            quality, spend = group.metrics.get(board.sort), group.costs.get(cost)
            if quality is None or spend is None:
                continue
            points.append((spend.mean, quality.mean))
            fig.add_trace(
                go.Scatter(
                    x=[spend.mean],
                    y=[quality.mean],
                    mode="markers",
                    name=group.label,
                    marker={"color": _colour(k), "size": 11},
                    legendgroup=group.label,
                    error_y={**error_bars([quality.mean], [quality.std], bounds), "visible": quality.n > 1},
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
        front = pareto_front(points, board.higher_is_better)
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in front],
                y=[p[1] for p in front],
                mode="lines",
                name="Pareto front",
                line={"dash": "dot", "color": "#888"},
                showlegend=col == 1,
            ),
            row=1,
            col=col,
        )
        scale = "log" if cost in ("params", "train TFLOPs") else "linear"
        fig.update_xaxes(title_text=cost, type=scale, row=1, col=col)
        fig.update_yaxes(title_text=f"test {board.sort}", row=1, col=col)
    return _figure(fig)


def score_against_compute(board: Leaderboard) -> list[str]:
    """Each family's test score against the FLOPs it trained for (log axis), mean with the seeds' ± std as a band,
    and the table naming who leads at each budget (:mod:`zoo.report.frontier`); nothing without budgeted runs."""
    found = frontier(board.runs, board.sort, board.higher_is_better) if board.sort else None
    if found is None:
        return []
    fig = go.Figure()
    bounds = metric_bounds(board.sort, [p.score.mean for p in found.points])
    for k, name in enumerate(found.families):
        line = [p for p in found.points if p.family == name]
        fig.add_traces(
            band_traces(
                [p.flops for p in line],
                [p.score.mean for p in line],
                [p.score.std for p in line],
                bounds,
                name,
                _colour(k),
            )
        )
    budgets = [amount for unit, amount in found.budgets if unit == "flops"]  # ticks at the budgets, as 4e+12
    fig.update_xaxes(
        title_text="training FLOPs (recorded)", type="log", tickvals=budgets, ticktext=[f"{b:.3g}" for b in budgets]
    )
    fig.update_yaxes(title_text=f"test {board.sort}")
    return [
        "<h2>Score against compute</h2>",
        _figure(fig),
        f"<pre>{html.escape(found.table())}</pre>",
    ]


def breakdowns(board: Leaderboard) -> str:
    """One bar chart per breakdown the task reported and score in it (BLEU by source length), one bar per
    configuration, titled with the task's own names."""
    charts: dict[tuple[str, str], list[str]] = {}  # (breakdown, score) -> its buckets
    for name, bucket, score in board.breakdowns:
        charts.setdefault((name, score), []).append(bucket)
    if not charts:
        return '<p class="note">The runs report no breakdown.</p>'
    figures = []
    for (name, score), buckets in charts.items():
        fig = go.Figure()
        found = [s.mean for g in board.groups for key, s in g.breakdowns.items() if key[0] == name and key[2] == score]
        bounds = metric_bounds(score, found)
        for k, group in enumerate(board.groups):
            stats = [group.breakdowns.get((name, bucket, score)) for bucket in buckets]
            means = [s.mean if s else None for s in stats]
            fig.add_trace(
                go.Bar(
                    x=buckets,
                    y=means,
                    name=group.label,
                    marker_color=_colour(k),
                    error_y=error_bars(means, [s.std if s else 0.0 for s in stats], bounds),
                )
            )
        fig.update_layout(barmode="group", title=name.replace("_", " "), xaxis_title="bucket", yaxis_title=score)
        figures.append(_figure(fig))
    return "\n".join(figures)


def search_curves(families: list[Family]) -> list[str]:
    """A search's section: each family's expected best validation score against the number of trials (Dodge et
    al., 2019), the table of the same numbers, and each family's best trial with its re-seeded test score."""
    if not families:
        return []
    return [
        "<h2>Search: expected best validation score after n trials</h2>",
        _figure(expected_best_figure(families)),
        f"<pre>{html.escape(format_search(families))}</pre>",
        '<p class="note">A curve still rising at its last trial says the family was not tuned to its best with '
        "this budget; curves that cross say the ranking depends on the budget.</p>",
    ]


def sections(
    boards: list[tuple[str, Leaderboard]], report: Path, families: list[Family] | None = None
) -> tuple[str, str]:
    """The parts of the page drawn here, before and after the charts drawn in the browser: the searches and each
    board's leaderboard; then each board's quality and cost, breakdowns, samples and attention pictures."""
    top, bottom = search_curves(families or []), []
    for note, board in boards:
        heading = [f"<h2>{html.escape(note)}</h2>"] if note else []
        footnote = html.escape(board.footnote()).replace("\n", "<br>")
        top += [
            *heading,
            "<h2>Leaderboard</h2>",
            leaderboard_table(board),
            f'<p class="note">{footnote}</p>',
            *score_against_compute(board),
        ]
        bottom += [
            *heading,
            "<h2>Quality and cost</h2>",
            quality_against_cost(board),
            "<h2>Breakdowns</h2>",
            breakdowns(board),
            "<h2>Sample outputs</h2>",
            sample_outputs(board),
            "<h2>Attention</h2>",
            attention_pictures(board, report),
        ]
    return "\n".join(top), "\n".join(bottom)


def render(
    boards: list[tuple[str, Leaderboard]],
    title: str,
    report: Path,
    families: list[Family] | None = None,
    charts: dict | None = None,
    live: dict | None = None,
    plotly_url: str | None = None,
) -> str:
    """The whole page for one or more sets of comparable runs, and the searches among them (``families``).

    ``charts``: the runs' data the browser draws (:func:`zoo.report.live.page_data` of the boards' and searches'
    runs unless given); ``live``: the dashboard's terms for updating the page (None: a written report, which asks
    for nothing); ``plotly_url``: where the page loads Plotly from (None: inlined, so the file opens offline).
    """
    families = families or []
    if charts is None:
        charts = page_data(runs_of(boards, families), boards)
    top, bottom = sections(boards, report, families)
    body = [
        '<p id="zoo-live" class="note" hidden></p>',
        f'<div id="zoo-top">{top}</div>',
        "<h2>Runs</h2>",
        '<div id="zoo-runs"></div>',
        "<h2>Curves</h2>",
        '<div id="zoo-curves"></div>',
        "<h2>Settings</h2>",
        '<div id="zoo-settings"></div>',
        f'<div id="zoo-bottom">{bottom}</div>',
        as_script(charts, "zoo-data"),
        as_script(live, "zoo-live-terms") if live else "",
    ]
    inlined = plotly_url is None
    plotly = f"<script>{get_plotlyjs()}</script>" if inlined else f'<script src="{html.escape(plotly_url)}"></script>'
    return Template(asset("report.html")).substitute(
        version=__version__,  # the generator mark: a later report replaces only a page zoo wrote
        title=html.escape(title),
        style="\n".join(asset(name).rstrip("\n") for name in STYLES),
        plotly=plotly,
        script="\n".join(asset(name).rstrip("\n") for name in SCRIPTS),
        sections="\n".join(body),
    )


def runs_of(boards: list[tuple[str, Leaderboard]], families: list[Family]) -> list[Run]:
    """Every run the boards and searches hold (the runs skipped from a table, and the trials that did not finish,
    too), in path order."""
    runs = [run for _, board in boards for run in (*board.runs, *board.skipped)]
    runs += [run for family in families for run in (*family.trials.values(), *family.unscored, *family.reseeds)]
    return sorted({run.path: run for run in runs}.values(), key=lambda run: str(run.path))
