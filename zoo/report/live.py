"""What the report's charts are drawn from: each run's logged curves, status and settings, as JSON.

The page embeds it whole once; the dashboard's page then asks only for what changed (``GET /api/state?since=N``).
:class:`Watch` answers both from the run folders: each reading of the runs gets the next number, every point
carries the number of the reading that first saw it, so a page holding everything up to reading N is sent the
points read after N, the runs first seen after N (with their settings) and the status of every run. A run whose
``metrics.csv`` was rewritten rather than extended (a resumed run cutting its last rows) is sent whole again.
Each run comes with its configuration's colour (:func:`colours_of`), its leaderboard and its test scores and costs,
from which the page regroups the leaderboards the way the reader chooses (:func:`boards_of`), and its progress from
its first logged step. ``assets/charts.js`` draws the answer; ``assets/live.js`` asks for it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.report.aggregate import COSTS, cost
from zoo.report.bands import metric_bounds
from zoo.report.colours import PALETTE, first_come, palette, started_order
from zoo.report.compare import COST_DECIMALS, Leaderboard
from zoo.report.frontier import family as compute_family
from zoo.report.runs import Curve, Run, logged_place
from zoo.run.identity import NOT_IN_CONFIG_KEY
from zoo.run.layout import METRICS_FILE, SUMMARY_FILE, TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR
from zoo.search.report import Family, search_record

#: Significant digits kept of a logged value: float32's, the precision Lightning logs in.
SIGNIFICANT = 7
#: The curves a page opens with (those the runs have), after each monitored validation score: the rest of what
#: the runs logged is one select away.
SUGGESTED = (TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM)


def run_labels(boards: list[tuple[str, Leaderboard]], runs: list[Run]) -> dict[str, str]:
    """Each run's name in the charts: its configuration's row in the leaderboard, a search trial's study and
    number, else its folder's name."""
    labels = {str(run.path): run.path.name for run in runs}
    for run in runs:
        record = search_record(run)
        if record is not None and record.role == "trial":
            labels[str(run.path)] = f"{record.study} trial {record.trial}"
    for _, board in boards:
        for group in board.groups:
            labels.update({str(run.path): group.label for run in group.runs})
    return labels


def colours_of(boards: list[tuple[str, Leaderboard]], families: list[Family]) -> dict[str, str]:
    """The page's colours (:func:`zoo.report.colours.first_come`): of every configuration its runs' curves pool
    (:func:`chart_group`), every row of the leaderboards and every family of a compute comparison or search, each
    placed when its first run started, so the dashboard of a sweep under way colours as the finished report."""
    family_runs = {family.label: [*family.trials.values(), *family.unscored, *family.reseeds] for family in families}
    runs = [run for _, board in boards for run in (*board.runs, *board.skipped)]
    runs += [run for members in family_runs.values() for run in members]
    members = [(key, run) for run in runs for key in (chart_group(run), compute_family(run))]
    members += [(group.key, run) for _, board in boards for group in board.groups for run in group.runs]
    members += [(label, run) for label, family in family_runs.items() for run in family]
    return first_come(key for key, _ in sorted(members, key=lambda member: started_order(member[1].path)))


def boards_of(boards: list[tuple[str, Leaderboard]]) -> list[dict[str, Any]]:
    """What the page needs to regroup each leaderboard itself: its note, sorted metric and each metric's direction,
    its costs' decimals; the runs' own numbers come with them (:func:`results`)."""
    return [
        {
            "note": note,
            "by": board.by,
            "sort": board.sort,
            "directions": board.directions,
            "costs": board.costs,
            "decimals": {column: COST_DECIMALS.get(column, 1) for column in board.costs},
        }
        for note, board in boards
    ]


def run_boards(boards: list[tuple[str, Leaderboard]]) -> dict[str, int]:
    """The leaderboard each run is on, by its path (a trial and an unreadable run are on none)."""
    return {str(run.path): k for k, (_, board) in enumerate(boards) for run in board.runs}


def results(run: Run) -> dict[str, Any]:
    """A finished run's numbers as the leaderboard's columns hold them: test scores and costs."""
    if run.status != "finished":
        return {}
    costs = {column: value for path, column in COSTS.items() if (value := cost(run, path, column)) is not None}
    return {"test": {name: run.score(name) for name in run.summary.get("test", {})}, "costs": costs}


def run_info(run: Run, label: str, updated: float, place: dict[str, float], colour: str, board: int | None) -> dict:
    """What the page shows of a run besides its curves, sent on every update: small, and all of it may change.
    A running run's progress is the later of its summary's (written at each validation) and its ``metrics.csv``'s
    last row (``place``), so it moves from the first logged step."""
    summary = run.summary
    step, epoch = summary.get("step", summary.get("steps")), summary.get("epoch")
    if run.status == "running" and place.get("step", -1) > (step if isinstance(step, (int, float)) else -1):
        step, epoch = int(place["step"]), int(place["epoch"]) if "epoch" in place else epoch
    return _plain(
        {
            "id": str(run.path),
            "label": label,
            "group": chart_group(run),
            "colour": colour,
            "board": board,
            "seed": run.seed,
            "status": run.status,
            "phase": summary.get("phase"),
            "epoch": epoch,
            "max_epochs": summary.get("max_epochs") or run.settings.get("trainer.max_epochs"),
            "step": step,
            "monitor": summary.get("monitor"),
            "latest": summary.get("latest_val", {}),
            "best": summary.get("best_val"),
            "results": results(run),
            "flops_per_step": flops_per_step(summary),
            "updated": updated,
        }
    )


def flops_per_step(summary: dict) -> float | None:
    """The training FLOPs of an optimiser step as the run recorded them so far (the curves' compute axis)."""
    flops = summary.get("compute", {}).get("flops")
    steps = sum(s.get("to_step", 0) - s.get("from_step", 0) for s in summary.get("segments", []))
    return flops / steps if isinstance(flops, (int, float)) and flops > 0 and steps > 0 else None


def chart_group(run: Run) -> str:
    """The runs one mean ± std curve pools: a configuration's seeds; a search's trial alone, apart from its re-runs
    with the test split, which share its configuration."""
    record = search_record(run)
    if record is not None and record.role == "trial":
        return str(run.path)
    return run.summary.get("config_key") or str(run.path)


def settings_of(run: Run) -> dict[str, Any]:
    """Every setting of the run by dotted key and the choice of each config group it has no setting for
    (``model``, ``experiment``): what the page groups, filters and draws runs by, as ``Run.setting`` reads it."""
    return {**{group: choice for group, choice in run.choices.items() if group not in run.settings}, **run.settings}


@dataclass
class _Tracked:
    """One run as read so far; ``first`` and ``whole`` are reading numbers (first seen; curves last read anew)."""

    first: int
    whole: int
    settings: dict[str, Any]
    info: dict[str, Any] = field(default_factory=dict)
    stamp: tuple = ()
    place: dict[str, float] = field(default_factory=dict)  # metrics.csv's last epoch and step
    curves: dict[str, list[tuple[int, float, float]]] = field(default_factory=dict)  # name -> (reading, step, value)
    clock: list[tuple[int, float, float]] = field(default_factory=list)  # (reading, step, seconds)
    extent: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (lowest, highest) value


class Watch:
    """Runs as last read, their points numbered by the reading that first saw them (see the module's note)."""

    def __init__(self) -> None:
        self.reading = 0
        self.runs: dict[str, _Tracked] = {}
        self.order: list[str] = []

    def update(
        self,
        runs: list[Run],
        labels: dict[str, str],
        colours: dict[str, str] | None = None,
        boards: dict[str, int] | None = None,
    ) -> None:
        """Read ``runs`` again: a run's files are parsed again only when they changed on disk. ``labels``,
        ``colours`` and ``boards`` name each run, colour its configuration and place it on a leaderboard
        (:func:`run_labels`, :func:`colours_of`, :func:`run_boards`; colours default to the runs' alone)."""
        self.reading += 1
        self.order = [str(run.path) for run in runs]
        colours = colours or palette(chart_group(run) for run in runs)
        for run in runs:
            key = str(run.path)
            tracked = self.runs.get(key)
            if tracked is None:
                tracked = self.runs[key] = _Tracked(self.reading, self.reading, _plain(settings_of(run)))
            stamp = _stamp(run.path)
            if stamp != tracked.stamp:
                tracked.stamp = stamp
                self._read(tracked, run.curves(), run.clock())
                tracked.place = logged_place(run.path)
            updated = max((s[0] for s in stamp), default=0) / 1e9
            label, colour = labels.get(key, run.path.name), colours.get(chart_group(run), PALETTE[0])
            tracked.info = run_info(run, label, updated, tracked.place, colour, (boards or {}).get(key))
            if tracked.info["best"] is None:  # a running run's summary has no best yet: its best validation so far
                tracked.info["best"] = _best(
                    tracked.curves.get(f"val/{tracked.info['monitor']}"), tracked.info["monitor"]
                )

    def _read(self, tracked: _Tracked, curves: dict[str, Curve], clock: Curve) -> None:
        """Number the points not held yet; start the run afresh when what it held is no longer what it logged."""
        curves = {name: [(step, _rounded(value)) for step, value in points] for name, points in curves.items()}
        held = {name: [(step, value) for _, step, value in points] for name, points in tracked.curves.items()}
        held_clock = [(step, seconds) for _, step, seconds in tracked.clock]
        extends = clock[: len(held_clock)] == held_clock and all(
            curves.get(name, [])[: len(points)] == points for name, points in held.items()
        )
        if not extends:
            tracked.whole, tracked.curves, tracked.clock, tracked.extent = self.reading, {}, [], {}
            held, held_clock = {}, []
        for name, points in curves.items():
            tracked.curves.setdefault(name, []).extend(
                (self.reading, s, v) for s, v in points[len(held.get(name, [])) :]
            )
            values = [v for _, _, v in tracked.curves[name]]
            tracked.extent[name] = (min(values), max(values))
        tracked.clock.extend((self.reading, s, t) for s, t in clock[len(held_clock) :])

    def state(self, since: int = 0) -> dict[str, Any]:
        """What a page holding every reading up to ``since`` lacks (0: everything), as the page's script takes it."""
        points, clock, new, whole = {}, {}, {}, []
        extents: dict[str, list[float]] = {}
        for key in self.order:
            tracked = self.runs[key]
            if tracked.first > since:
                new[key] = {"settings": tracked.settings}
            if tracked.whole > since:
                whole.append(key)
            fresh = {
                name: [[s, v] for reading, s, v in curve if reading > since] for name, curve in tracked.curves.items()
            }
            if fresh := {name: curve for name, curve in fresh.items() if curve}:
                points[key] = fresh
            if ticks := [[s, t] for reading, s, t in tracked.clock if reading > since]:
                clock[key] = ticks
            for name, extent in tracked.extent.items():
                extents.setdefault(name, []).extend(extent)
        monitors = Counter(self.runs[key].info.get("monitor") for key in self.order)
        return {
            "cursor": self.reading,
            "suggested": [f"val/{name}" for name, _ in monitors.most_common() if name] + list(SUGGESTED),
            "ignored": list(NOT_IN_CONFIG_KEY),  # settings the parallel coordinates leave out: seeds, paths, logging
            "palette": list(PALETTE),  # the colours of the groups the page makes (zoo.report.colours' rule)
            "runs": [self.runs[key].info for key in self.order],
            "new": new,
            "whole": whole,
            "points": points,
            "clock": clock,
            "bounds": {name: list(metric_bounds(name, values)) for name, values in sorted(extents.items())},
        }


def page_data(
    runs: list[Run], boards: list[tuple[str, Leaderboard]], families: list[Family] | None = None
) -> dict[str, Any]:
    """Everything the charts of a written report draw: one reading of ``runs``, whole, and the leaderboards'
    terms for regrouping them in the page."""
    watch = Watch()
    watch.update(runs, run_labels(boards, runs), colours_of(boards, families or []), run_boards(boards))
    return {**watch.state(), "boards": boards_of(boards)}


def as_script(data: Any, element_id: str) -> str:
    """``data`` as a JSON script element the page reads (``</`` escaped, so no value can close the element)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _stamp(folder: Path) -> tuple:
    """When and how big the files the curves come from are: unchanged, they are not parsed again."""
    stamps = []
    for name in (METRICS_FILE, SUMMARY_FILE):
        try:
            stat = (folder / name).stat()
        except OSError:
            continue
        stamps.append((stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def _best(curve: list[tuple[int, float, float]] | None, metric: str | None) -> float | None:
    """The best value of a validation curve, in the direction its metric plugin declares (higher, if unknown)."""
    if not curve:
        return None
    from zoo import registry

    higher = registry.get("metric", metric).cls.higher_is_better if metric in registry.names("metric") else True
    values = [value for _, _, value in curve]
    return max(values) if higher else min(values)


def _rounded(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}")


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: a number that is not finite, or anything else JSON has no type for, as text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
