"""The comparison report: one self-contained HTML file (no network request) of a set of runs.

A sortable leaderboard that fits the page; every run with its status and progress; curves of anything the runs
logged (training loss, learning rate, gradient norm, validation scores: one select per chart, smoothing, log
scale, one line per run or each group's mean ± std); the settings that vary against the monitored metric (parallel
coordinates) and a config diff of any two runs; quality against cost with the Pareto front, the task's breakdowns
(scores by bucket), sample outputs side by side, the attention pictures the runs hold, and a search's expected
best score and hyperparameter importance. A configuration has one colour on every chart
(:mod:`zoo.report.colours`). In the page, the reader chooses runs (words, checkboxes, brushes on the parallel
coordinates), groups them by any setting (the leaderboard regrouped as ``--by`` would) and downloads the
leaderboard and the curves as CSV.

The leaderboard and the sections after the charts are drawn here (Plotly figures as JSON, which
``assets/charts.js`` plots); the runs, curves and settings are drawn in the browser from the runs' data the page
embeds (:mod:`zoo.report.live`), so the dashboard (:mod:`zoo.report.serve`) can update them in place. Plotly's
JavaScript is inlined once (the dashboard serves it beside the page instead), so the file opens offline. The
page's skeleton, CSS and scripts are package data (``zoo/report/assets/``), inlined into the page too.
"""

from __future__ import annotations

import html
import json
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
from zoo.report.colours import PALETTE, first_come
from zoo.report.columns import Cell
from zoo.report.compare import SIGNIFICANCE, Leaderboard, map_of
from zoo.report.frontier import frontier
from zoo.report.importance import NO_OPTUNA, TOO_FEW, importance_figure, importance_note, importances
from zoo.report.live import as_script, colours_of, page_data
from zoo.report.pictures import attention_pictures
from zoo.report.runs import Run
from zoo.report.samples import sample_outputs
from zoo.report.widths import THRESHOLD
from zoo.search.report import Family, expected_best_figure, format_search

#: The page's scripts and styles (``assets/``), inlined in this order: the leaderboard's sorting, the colours and
#: the leaderboard of the groups the reader makes, then the charts', then the dashboard's updates (which do nothing
#: in a written report).
SCRIPTS = ("report.js", "palette.js", "board.js", "charts.js", "live.js", "samples.js")
STYLES = ("report.css", "charts.css", "samples.css")

#: A chart's height in pixels, unless it sets its own.
FIGURE_HEIGHT = 380
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


def leaderboard_table(board: Leaderboard, colours: dict[str, str]) -> str:
    """The leaderboard (:meth:`Leaderboard.view`, costs in SI units): each number's true value in ``data-value``,
    which its column sorts by (report.js), and its std's in ``data-std``, both of which its CSV keeps; each
    metric's best in bold; the rows that differ significantly from the baseline tinted; the settings alike in
    every row said once above; each row's colour, as its charts draw it, and its runs (``data-runs``), which the
    page's choice of runs shows or hides. Headings wrap, so the columns fit the page without scrolling."""
    view = board.view(short=True)
    head = "".join(f'<th onclick="sortTable(this)">{html.escape(column.name)}</th>' for column in view.columns)
    rows = []
    for k, (group, significant) in enumerate(zip(board.groups, view.significant)):
        cells = "".join(_cell(column.cells[k], column.numeric) for column in view.columns)
        runs = html.escape(json.dumps([str(run.path) for run in group.runs]))
        colour = f' style="--swatch:{colours.get(group.key, PALETTE[0])}"'  # drawn before its name (report.css)
        tint = ' class="significant"' if significant else ""
        rows.append(f'<tr data-runs="{runs}"{colour}{tint}>{cells}</tr>')
    shared = f'<p class="shared">{html.escape(view.shared_line())}</p>' if view.shared else ""
    legend = "bold: the best mean of each metric"
    if board.baseline:
        legend += f"; tinted: the rows that differ from the baseline (Holm-adjusted p &lt; {SIGNIFICANCE})"
    return (
        f'{shared}<table class="leaderboard"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table><p class="note">{legend}</p>'
    )


def _cell(cell: Cell, numeric: bool) -> str:
    """A leaderboard cell; a number's carries its true value (empty: missing, sorted last), and a mean's ± std is
    a span holding the std's true value, which wraps under the mean as a whole."""
    value = "" if cell.value is None else cell.value
    attributes = (f' data-value="{value}"' if numeric else "") + (' class="best"' if cell.best else "")
    mean, spread, std = cell.text.partition(" ± ")
    if spread and cell.std is not None:
        std = f' <span class="spread" data-std="{cell.std}">± {html.escape(std)}</span>'
    return f"<td{attributes}>{html.escape(mean)}{std}</td>"


def _figure(fig: go.Figure) -> str:
    """A chart as a placeholder holding its Plotly JSON, which ``charts.js`` plots: a dashboard's update of the
    section swaps the JSON and keeps the plotted chart, and with it the reader's zoom. Its height is its layout's,
    else :data:`FIGURE_HEIGHT`."""
    fig.update_layout(template="plotly_white", margin={"t": 40, "b": 40}, uirevision="kept")
    height = fig.layout.height or FIGURE_HEIGHT
    fig.update_layout(height=height)
    spec = fig.to_json().replace("</", "<\\/")
    return (  # its height reserved before Plotly draws it: nothing below it moves then
        f'<div class="zoo-figure plotly-graph-div" style="min-height:{height}px">'
        f'<script type="application/json">{spec}</script></div>'
    )


def pareto_front(points: list[tuple[float, float]], higher_is_better: bool) -> list[tuple[float, float]]:
    """The points no other point beats on both cost (lower) and quality, in order of cost."""
    front, best = [], None
    for cost, quality in sorted(points, key=lambda p: (p[0], -p[1] if higher_is_better else p[1])):
        if best is None or (quality > best if higher_is_better else quality < best):
            front.append((cost, quality))
            best = quality
    return front


def quality_against_cost(board: Leaderboard, colours: dict[str, str]) -> str:
    """The sorted metric against parameters, train time and latency, each with its Pareto front."""
    costs = [c for c in ("params", "train TFLOPs", "train s", "ms/item greedy") if c in board.costs]
    if not costs or not board.sort:
        return '<p class="note">No finished run to place.</p>'
    fig = make_subplots(rows=1, cols=len(costs), subplot_titles=[f"{board.sort} vs {c}" for c in costs])
    bounds = metric_bounds(board.sort, [g.metrics[board.sort].mean for g in board.groups if board.sort in g.metrics])
    for col, cost in enumerate(costs, start=1):
        points = []
        for group in board.groups:
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
                    marker={"color": colours.get(group.key), "size": 11},
                    legendgroup=group.label,
                    meta={"runs": [str(run.path) for run in group.runs]},
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


def score_against_compute(board: Leaderboard, colours: dict[str, str]) -> list[str]:
    """Each family's test score against the FLOPs it trained for (log axis), mean with the seeds' ± std as a band,
    and the table naming who leads at each budget (:mod:`zoo.report.frontier`); nothing without budgeted runs."""
    found = frontier(board.runs, board.sort, board.higher_is_better) if board.sort else None
    if found is None:
        return []
    fig = go.Figure()
    bounds = metric_bounds(board.sort, [p.score.mean for p in found.points])
    for name in found.families:
        line = [p for p in found.points if p.family == name]
        traces = band_traces(
            [p.flops for p in line],
            [p.score.mean for p in line],
            [p.score.std for p in line],
            bounds,
            name,
            colours[name],
        )
        for trace in traces:
            trace.meta = {"runs": [str(run.path) for p in line for run in p.runs]}
        fig.add_traces(traces)
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


def score_against_width(boards: list[tuple[str, Leaderboard]]) -> list[str]:
    """Where each family breaks (:mod:`zoo.report.widths`): the test score against width (log axis, ticked at the
    widths tried), one line per family with the seeds' ± std as a band, one panel per data set, a dotted line at
    the threshold; then the table of the smallest width that reaches it. Nothing without runs at two widths or
    more. The families take colours of their own: among a map's many configurations the page's colours repeat,
    and two lines alike would be one family to the reader."""
    found = map_of(boards)
    if found is None:
        return []
    colours = first_come(found.families)
    widths = sorted({cell.width for cell in found.cells})
    panels = found.panels
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels, shared_yaxes=True)
    bounds = metric_bounds(found.metric, [cell.score.mean for cell in found.cells])
    for col, panel in enumerate(panels, start=1):
        for name in found.families:
            line = found.line(name, panel)
            if not line:
                continue
            means, stds = [c.score.mean for c in line], [c.score.std for c in line]
            traces = band_traces([c.width for c in line], means, stds, bounds, name, colours[name])
            for trace in traces:
                trace.meta = {"runs": [str(run.path) for c in line for run in c.group.runs]}
                trace.showlegend = trace.showlegend is not False and col == 1
            fig.add_traces(traces, rows=1, cols=col)
        fig.update_xaxes(title_text="network.width", type="log", tickvals=widths, row=1, col=col)
    fig.update_yaxes(title_text=f"test {found.metric}", row=1, col=1)
    fig.add_hline(y=THRESHOLD, line_dash="dot", line_color="grey", row="all", col="all")  # the table's bar
    return [
        "<h2>Score against width</h2>",
        _figure(fig),
        f"<pre>{html.escape(found.table())}</pre>",
    ]


def breakdowns(board: Leaderboard, colours: dict[str, str]) -> str:
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
        for group in board.groups:
            stats = [group.breakdowns.get((name, bucket, score)) for bucket in buckets]
            means = [s.mean if s else None for s in stats]
            fig.add_trace(
                go.Bar(
                    x=buckets,
                    y=means,
                    name=group.label,
                    marker_color=colours.get(group.key),
                    error_y=error_bars(means, [s.std if s else 0.0 for s in stats], bounds),
                    meta={"runs": [str(run.path) for run in group.runs]},
                )
            )
        fig.update_layout(barmode="group", title=name.replace("_", " "), xaxis_title="bucket", yaxis_title=score)
        figures.append(_figure(fig))
    return "\n".join(figures)


def section(key: str, *parts: str) -> str:
    """A part of the page drawn here, which the dashboard replaces whole when it changes and finds again by
    ``key``: the part the reader looks at keeps its place on the screen (charts.js)."""
    return f'<section class="zoo-section" data-key="{key}">{"".join(parts)}</section>'


def search_curves(families: list[Family], colours: dict[str, str]) -> list[str]:
    """A search's section: each family's expected best validation score against the number of trials (Dodge et
    al., 2019), the table of the same numbers, each family's best trial with its re-seeded test score, and which
    tuned settings mattered (:mod:`zoo.report.importance`)."""
    if not families:
        return []
    return [
        section(
            "search",
            "<h2>Search: expected best validation score after n trials</h2>",
            _figure(recoloured(expected_best_figure(families), colours)),
            f"<pre>{html.escape(format_search(families))}</pre>",
            '<p class="note">A curve still rising at its last trial says the family was not tuned to its best with '
            "this budget; curves that cross say the ranking depends on the budget.</p>",
            *importance_part(families, colours),
        )
    ]


def recoloured(fig: go.Figure, colours: dict[str, str]) -> go.Figure:
    """A figure drawn elsewhere in the page's colours: each trace of a legend group (a family) in its colour."""
    for trace in fig.data:
        if (colour := colours.get(trace.legendgroup)) is not None:
            trace.line.color = colour
            if trace.fill:
                trace.fillcolor = colour
    return fig


def importance_part(families: list[Family], colours: dict[str, str]) -> list[str]:
    """Each family's tuned settings by their share of its trials' score variation; a note without Optuna."""
    found = importances(families)
    if found is None:
        return [f'<p class="note">{html.escape(NO_OPTUNA)}</p>']
    if not found:
        return [f'<p class="note">{html.escape(TOO_FEW)}</p>']
    undefined = [f'<p class="note">{html.escape(item.summary())}</p>' for item in found if item.tied is not None]
    figure = [_figure(importance_figure(found, colours))] if len(undefined) < len(found) else []
    return [
        "<h3>Hyperparameter importance</h3>",
        *figure,
        *undefined,
        f'<p class="note">{html.escape(importance_note(found))}</p>',
    ]


def sections(
    boards: list[tuple[str, Leaderboard]], report: Path, families: list[Family] | None = None
) -> tuple[str, str]:
    """The parts of the page drawn here, before and after the charts drawn in the browser: the searches and each
    board's leaderboard; then each board's quality and cost, breakdowns, samples and attention pictures. Each is
    a :func:`section`; a board's leaderboard is in ``.zoo-board``, which the page regroups (charts.js)."""
    families = families or []
    colours = colours_of(boards, families)
    top, bottom = search_curves(families, colours), []
    if widths := score_against_width(boards):
        top.append(section("widths", *widths))
    for k, (note, board) in enumerate(boards):
        heading = [f"<h2>{html.escape(note[:1].upper() + note[1:])}</h2>"] if note else []
        footnote = html.escape(board.footnote()).replace("\n", "<br>")
        top.append(
            section(
                f"board{k}",
                *heading,
                "<h2>Leaderboard</h2>",
                f'<div class="zoo-board" data-board="{k}"><div class="zoo-board-server">',
                leaderboard_table(board, colours),
                f'<p class="note">{footnote}</p></div></div>',
            )
        )
        if compute := score_against_compute(board, colours):
            top.append(section(f"board{k}-compute", *compute))
        bottom += [
            section(f"board{k}-cost", *heading, "<h2>Quality and cost</h2>", quality_against_cost(board, colours)),
            section(f"board{k}-breakdowns", "<h2>Breakdowns</h2>", breakdowns(board, colours)),
            section(f"board{k}-samples", "<h2>Sample outputs</h2>", sample_outputs(board)),
            section(f"board{k}-attention", "<h2>Attention</h2>", attention_pictures(board, report)),
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
        charts = page_data(runs_of(boards, families), boards, families)
    top, bottom = sections(boards, report, families)
    body = [
        '<div id="zoo-bar"><div id="zoo-choose"></div><p id="zoo-live" class="note" hidden></p></div>',
        f'<div id="zoo-top">{top}</div>',
        section("runs", "<h2>Runs</h2>", '<div id="zoo-runs"></div>'),
        section("curves", "<h2>Curves</h2>", '<div id="zoo-curves"></div>'),
        section("settings", "<h2>Settings</h2>", '<div id="zoo-settings"></div>'),
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
