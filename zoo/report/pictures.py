"""The report's attention pictures: the same sources across the compared configurations, side by side.

``zoo attention RUN SOURCE`` writes a run's pictures of one source into
``RUN/attention/<source>/``. The report takes one run per configuration (its first
seed that drew any), and lines up the sources that every one of them drew, in the
order of their folder names: a row per source, a column per configuration, so
the same sentence or image is compared across models. When no source is shared,
each configuration shows its own first few. A cell shows the source's main
picture (:func:`main_picture`), embedded in the page; a click on it (or Space on
its focus) shows it at full size, a second click puts it back. An explorer page
beside the pictures is linked.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from zoo.report.aggregate import Group, run_order
from zoo.report.compare import Leaderboard
from zoo.report.runs import Run
from zoo.run.layout import ATTENTION_DIR, EXPLORER_FILE

#: Sources shown (rows).
SOURCES = 4
#: Attention kinds, most telling first: what the output looked at before what the source looked at.
KIND_ORDER = ("cross", "decoder_self", "encoder_self")
_LAYER = re.compile(r"_layer(\d+)_")


def main_picture(folder: Path) -> Path | None:
    """The picture that says most about a source: a caption's overview (``caption.png``), else the last layer's
    cross-attention (all its heads, else its one head), else the other kinds' likewise, else any picture."""
    if (folder / "caption.png").is_file():
        return folder / "caption.png"
    for kind in KIND_ORDER:
        for pattern in (f"{kind}_layer*_heads.png", f"{kind}_layer*_head1.png"):
            found = sorted(folder.glob(pattern), key=lambda p: int(m.group(1)) if (m := _LAYER.search(p.name)) else 0)
            if found:
                return found[-1]
    return next(iter(sorted(folder.glob("*.png"))), None)


def drawn_sources(run: Run) -> dict[str, Path]:
    """The sources a run has pictures of: folder name -> that folder."""
    root = Path(run.path) / ATTENTION_DIR
    if not root.is_dir():
        return {}
    return {folder.name: folder for folder in sorted(root.iterdir()) if folder.is_dir() and any(folder.glob("*.png"))}


def chosen_runs(board: Leaderboard) -> list[tuple[Group, Run, dict[str, Path]]]:
    """Per configuration, its first finished run (in seed order) that drew any source, with those sources."""
    chosen = []
    for group in board.groups:
        for run in sorted(group.finished, key=run_order):
            if sources := drawn_sources(run):
                chosen.append((group, run, sources))
                break
    return chosen


def shared_sources(chosen: list[tuple[Group, Run, dict[str, Path]]]) -> list[str]:
    """The sources every chosen run drew, by name: the same items across the configurations."""
    names = set.intersection(*(set(sources) for _, _, sources in chosen))
    return sorted(names)[:SOURCES]


def attention_pictures(board: Leaderboard, report: Path) -> str:
    """The section: a table of sources by configuration, or a note saying how to draw pictures."""
    chosen = chosen_runs(board)
    if not chosen:
        return '<p class="note">No attention pictures yet: <code>zoo attention RUN "sentence"</code> draws them.</p>'
    shared = shared_sources(chosen)
    if shared:
        note = (
            f"The {len(shared)} source{'s' if len(shared) > 1 else ''} drawn by every configuration "
            "(from its first seed that drew any). Click a picture to see it at full size; click again to close."
        )
        rows = [(name, [sources.get(name) for _, _, sources in chosen]) for name in shared]
    else:
        note = (
            "No source was drawn by every configuration, so each shows its own; run "
            '<code>zoo attention RUN "the same sentence"</code> on each to line them up. '
            "Click a picture to see it at full size."
        )
        rows = [
            ("", [list(sources.values())[k] if k < len(sources) else None for _, _, sources in chosen])
            for k in range(min(SOURCES, max(len(sources) for _, _, sources in chosen)))
        ]
    head = "<th>source</th>" + "".join(
        f'<th>{html.escape(group.label)}<br><small class="note">{html.escape(run.path.name)}</small></th>'
        for group, run, _ in chosen
    )
    body = "".join(
        f"<tr><td>{html.escape(name)}</td>{''.join(_cell(folder, report, not name) for folder in folders)}</tr>"
        for name, folders in rows
    )
    return (
        f'<p class="note">{note}</p><table class="pictures"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _cell(folder: Path | None, report: Path, named: bool) -> str:
    """A source's main picture, enlargeable (a checkbox the CSS turns into a full-size view), and its explorer;
    ``named``: with the source's name (when the row is not one source)."""
    picture = main_picture(folder) if folder else None
    if picture is None:
        return "<td></td>"
    encoded = base64.b64encode(picture.read_bytes()).decode("ascii")
    title = f"{folder.name}: {picture.stem}"
    parts = [
        f'<label class="zoom" title="{html.escape(title)} (click to enlarge)">'
        f'<input type="checkbox" aria-label="show {html.escape(title)} at full size">'
        f'<img alt="{html.escape(title)}" src="data:image/png;base64,{encoded}"></label>'
    ]
    if named:
        parts.append(f"<small>{html.escape(folder.name)}</small>")
    others = len(list(folder.glob("*.png"))) - 1
    links = [f"{others} more in {html.escape(_relative(folder, report))}/"] if others else []
    if (folder / EXPLORER_FILE).is_file():
        links.append(f'<a href="{html.escape(_relative(folder / EXPLORER_FILE, report))}">explorer</a>')
    if links:
        parts.append(f'<br><small class="note">{" · ".join(links)}</small>')
    return f"<td>{''.join(parts)}</td>"


def _relative(path: Path, report: Path) -> str:
    """``path`` as the report links it: relative to the report's folder, else as a file URI."""
    try:
        return str(path.resolve().relative_to(report.resolve().parent))
    except ValueError:
        return path.resolve().as_uri()
