"""The comparison report: one self-contained HTML file (no network request) of a set of runs.

A sortable leaderboard, learning curves (the monitored validation metric against
steps and against wall time; one line per configuration, its seeds as a band),
quality against cost with the Pareto front, the task's breakdowns (scores by bucket), sample
outputs side by side, and the attention pictures the runs hold. Charts are Plotly
figures; Plotly's JavaScript is inlined once, so the file opens offline. The page's
skeleton, CSS and table-sorting script are package data (``zoo/report/assets/``),
inlined into the page too.
"""

from __future__ import annotations

import base64
import html
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from string import Template

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from zoo.report.aggregate import Group, Stat
from zoo.report.compare import Leaderboard
from zoo.report.stats import read_items
from zoo.search.report import Family, expected_best_figure, format_search

#: Sample outputs shown side by side, and attention pictures shown per run.
SAMPLES = 8
PICTURES = 6
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


def _figure(fig: go.Figure) -> str:
    fig.update_layout(template="plotly_white", margin={"t": 40, "b": 40}, height=380)
    return fig.to_html(full_html=False, include_plotlyjs=False)


def _colour(k: int) -> str:
    return COLOURS[k % len(COLOURS)]


def _band(fig: go.Figure, x: list[float], stats: list[Stat], name: str, colour: str, col: int, show: bool) -> None:
    """A line for the mean and, when there are several seeds, a shaded band of ± one standard deviation."""
    means = [s.mean for s in stats]
    if any(s.n > 1 for s in stats):
        upper = [s.mean + s.std for s in stats]
        lower = [s.mean - s.std for s in stats]
        fig.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=upper + lower[::-1],
                fill="toself",
                fillcolor=colour,
                opacity=0.2,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=name,
            ),
            row=1,
            col=col,
        )
    fig.add_trace(
        go.Scatter(
            x=x, y=means, name=name, mode="lines+markers", line={"color": colour}, legendgroup=name, showlegend=show
        ),
        row=1,
        col=col,
    )


def learning_curves(groups: list[Group], metric: str) -> str:
    """The validation metric against steps and against seconds, averaged over seeds validation by validation."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"val {metric} by step", f"val {metric} by wall time (s)"))
    drawn = False
    for k, group in enumerate(groups):
        curves = [run.summary.get("validations", []) for run in group.runs]
        curves = [[v for v in curve if metric in v] for curve in curves if curve]
        if not curves:
            continue
        length = min(len(curve) for curve in curves)
        stats = [Stat.of([curve[i][metric] for curve in curves]) for i in range(length)]
        steps = [curves[0][i]["step"] for i in range(length)]
        seconds = [Stat.of([curve[i]["seconds"] for curve in curves]).mean for i in range(length)]
        _band(fig, steps, stats, group.label, _colour(k), 1, True)
        _band(fig, seconds, stats, group.label, _colour(k), 2, False)
        drawn = True
    return _figure(fig) if drawn else '<p class="note">No run has recorded validations yet.</p>'


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
    costs = [c for c in ("params", "train s", "ms/item greedy") if c in board.costs]
    if not costs or not board.sort:
        return '<p class="note">No finished run to place.</p>'
    fig = make_subplots(rows=1, cols=len(costs), subplot_titles=[f"{board.sort} vs {c}" for c in costs])
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
                    error_y={"type": "data", "array": [quality.std], "visible": quality.n > 1},
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
        if cost == "params":
            fig.update_xaxes(type="log", row=1, col=col)
    return _figure(fig)


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
        for k, group in enumerate(board.groups):
            stats = [group.breakdowns.get((name, bucket, score)) for bucket in buckets]
            fig.add_trace(
                go.Bar(
                    x=buckets,
                    y=[s.mean if s else None for s in stats],
                    name=group.label,
                    marker_color=_colour(k),
                    error_y={"type": "data", "array": [s.std if s else 0 for s in stats]},
                )
            )
        fig.update_layout(barmode="group", title=name.replace("_", " "), yaxis_title=score)
        figures.append(_figure(fig))
    return "\n".join(figures)


def samples(board: Leaderboard) -> str:
    """The first test items every configuration decoded, with each one's output (its first finished seed)."""
    shown = [g for g in board.groups if g.finished]
    items = [read_items(g.finished[0]) for g in shown]
    common = [i for i in items[0] if all(i in other for other in items[1:])][:SAMPLES] if items else []
    if not common:
        return '<p class="note">No test outputs to show (test_items.jsonl).</p>'
    rows = []
    for item_id in common:
        first = items[0][item_id]
        rows.append(
            [
                item_id,
                first.get("source", ""),
                " / ".join(first["references"]),
                *[outputs[item_id]["hypothesis"] for outputs in items],
            ]
        )
    return _table(["item", "source", "references", *[g.label for g in shown]], rows, "samples")


def attention_pictures(board: Leaderboard, report: Path) -> str:
    """Attention pictures and explorers the runs hold: pictures embedded, explorers linked."""
    parts = []
    for group in board.groups:
        for run in group.finished:
            folder = Path(run.path) / "attention"
            pictures = sorted(folder.glob("*/*.png"))[:PICTURES]
            explorers = sorted(folder.glob("*/explorer.html"))
            if not pictures and not explorers:
                continue
            images = "".join(
                f'<img alt="{html.escape(p.stem)}" title="{html.escape(p.parent.name)}: {html.escape(p.stem)}" '
                f'src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
                for p in pictures
            )
            links = "".join(
                f'<li><a href="{html.escape(_relative(e, report))}">{html.escape(e.parent.name)}</a></li>'
                for e in explorers
            )
            parts.append(
                f"<h3>{html.escape(group.label)} ({html.escape(Path(run.path).name)})</h3>"
                f'<div class="pictures">{images}</div>' + (f"<p>Explorers:</p><ul>{links}</ul>" if links else "")
            )
    return (
        "".join(parts)
        or '<p class="note">No attention pictures yet: <code>zoo attention RUN "sentence"</code> draws them.</p>'
    )


def _relative(path: Path, report: Path) -> str:
    try:
        return str(path.resolve().relative_to(report.resolve().parent))
    except ValueError:
        return path.resolve().as_uri()


def in_progress(board: Leaderboard) -> str:
    """Runs still going: where they are and their latest validation metrics."""
    rows = []
    for group in board.groups:
        for run in group.runs:
            if run.status != "running":
                continue
            summary = run.summary
            epoch = summary.get("epoch")
            progress = f"epoch {epoch + 1} of {summary.get('max_epochs', '?')}" if epoch is not None else "starting"
            latest = ", ".join(f"{k} {v:.2f}" for k, v in summary.get("latest_val", {}).items())
            rows.append([group.label, Path(run.path).name, progress, summary.get("step", ""), latest])
    if not rows:
        return ""
    return "<h2>Running</h2>" + _table(
        ["configuration", "run", "progress", "step", "latest validation"], rows, "running"
    )


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


def render(
    boards: list[tuple[str, Leaderboard]],
    title: str,
    report: Path,
    refresh_seconds: int = 0,
    families: list[Family] | None = None,
) -> str:
    """The whole page for one or more sets of comparable runs, and the searches among them (``families``)."""
    sections = search_curves(families or [])
    for note, board in boards:
        if note:
            sections.append(f"<h2>{html.escape(note)}</h2>")
        footnote = html.escape(board.footnote()).replace("\n", "<br>")
        sections += [
            "<h2>Leaderboard</h2>",
            _table(board.header(), board.rows()),
            f'<p class="note">{footnote}</p>',
            in_progress(board),
            "<h2>Learning curves</h2>",
            learning_curves(board.groups, board.sort or ""),
            "<h2>Quality and cost</h2>",
            quality_against_cost(board),
            "<h2>Breakdowns</h2>",
            breakdowns(board),
            "<h2>Sample outputs</h2>",
            samples(board),
            "<h2>Attention</h2>",
            attention_pictures(board, report),
        ]
    refresh = f'<meta http-equiv="refresh" content="{refresh_seconds}">' if refresh_seconds else ""
    return Template(asset("report.html")).substitute(
        title=html.escape(title),
        style=asset("report.css").rstrip("\n"),
        plotly=get_plotlyjs(),
        script=asset("report.js").rstrip("\n"),
        refresh=refresh,
        sections="\n".join(sections),
    )
