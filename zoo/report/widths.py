"""Where each family breaks: the test score against the model's width, one line per family, one panel per data set.

Zoology's figure (Arora et al., 2023): multi-query recall accuracy against model width, one curve per family, at
growing lengths and pair counts. Runs that set ``network.width`` are placed by family (the ``model`` recipe, else
the encoder: :func:`zoo.report.frontier.family`), panel (the dataset settings that differ between the runs, e.g.
``length=128 pairs=8``) and width. Within a cell the runs may differ in learning rate (``optim.lr``) and seed:
Zoology tunes the learning rate per cell, so the cell takes the rate whose best validation score, averaged over
its seeds, is highest (the test split chooses nothing), and its score is that rate's test score, the mean over
seeds with their standard deviation. The number a reader takes away is, per family and panel, the smallest width
whose cell reaches :data:`THRESHOLD`, with what one of its runs cost to train (FLOPs, processor-seconds).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from zoo.report.aggregate import Group, Stat, run_order
from zoo.report.frontier import family
from zoo.report.runs import Run

#: The score a cell must reach for its width to count as solving the panel (Zoology reads its figure at 90 %).
THRESHOLD = 90.0
#: The setting that places a run on the width axis.
WIDTH = "network.width"
#: The setting a cell's runs are tuned over on validation.
LR = "optim.lr"
#: Dataset settings that never tell panels apart (how many items, which draw).
NOT_PANELS = ("dataset.train_size", "dataset.val_size", "dataset.test_size", "dataset.seed")


@dataclass
class Cell:
    """One family at one width in one panel, at the learning rate validation chose: its runs (by seed), the test
    score over seeds, and one run's mean cost."""

    family: str
    panel: str
    width: int
    lr: float | None
    rates: int  # learning rates tried
    group: Group
    score: Stat
    flops: float
    processor_seconds: float

    @property
    def seeds(self) -> list[list[Run]]:
        return self.group.clusters


@dataclass
class WidthMap:
    """The cells of a width study, and for each family and panel the smallest width that reaches the threshold."""

    metric: str
    cells: list[Cell]

    @property
    def panels(self) -> list[str]:
        return list(dict.fromkeys(cell.panel for cell in self.cells))

    @property
    def families(self) -> list[str]:
        return sorted({cell.family for cell in self.cells})

    def line(self, name: str, panel: str) -> list[Cell]:
        """One family's cells in one panel, by width."""
        return sorted((c for c in self.cells if c.family == name and c.panel == panel), key=lambda c: c.width)

    def threshold(self, name: str, panel: str) -> Cell | None:
        """The narrowest cell of the family in the panel whose mean score reaches :data:`THRESHOLD`."""
        return next((cell for cell in self.line(name, panel) if cell.score.mean >= THRESHOLD), None)

    def table(self) -> str:
        """The smallest width reaching the threshold per family (rows) and panel (columns), with its cost; ``>W``
        where no width tried reaches it (W the widest), with the best score it reached."""
        header = ["family", *self.panels]
        rows = [[name, *(self._entry(name, panel) for panel in self.panels)] for name in self.families]
        widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
        lines = ["  ".join(text.ljust(width) for text, width in zip(row, widths)) for row in [header, *rows]]
        note = (
            f"smallest network.width whose test {self.metric} reaches {THRESHOLD:g} (mean over seeds, at the "
            "learning rate chosen on validation), with one run's training TFLOPs and processor-seconds"
        )
        return "\n".join([note, *lines])

    def _entry(self, name: str, panel: str) -> str:
        line = self.line(name, panel)
        if not line:
            return ""
        cell = self.threshold(name, panel)
        if cell is None:
            best = max(line, key=lambda c: c.score.mean)
            return f">{line[-1].width} (best {best.score.mean:.1f} at {best.width})"
        return f"{cell.width} ({cell.flops / 1e12:.3g} TFLOPs, {cell.processor_seconds:.0f} proc-s)"


def panel_keys(runs: list[Run]) -> list[str]:
    """The dataset settings whose values differ between the runs: what tells the panels apart."""
    keys = sorted({key for run in runs for key in run.settings if key.startswith("dataset.")} - set(NOT_PANELS))
    return [key for key in keys if len({str(run.setting(key)) for run in runs}) > 1]


def panel_name(run: Run, keys: list[str]) -> str:
    return " ".join(f"{key.removeprefix('dataset.')}={run.setting(key)}" for key in keys) or "all runs"


def cell(name: str, panel: str, width: int, runs: list[Run], metric: str) -> Cell:
    """The runs of one family, width and panel: the learning rate with the best mean validation score over seeds,
    and its runs' test score over seeds (each seed's runs averaged first)."""
    by_rate: dict[float | None, list[Run]] = {}
    for run in runs:
        by_rate.setdefault(run.setting(LR), []).append(run)

    def validation(rate: float | None) -> float:
        return statistics.fmean(run.summary["best_val"] for run in by_rate[rate])

    rate = max(by_rate, key=validation)
    group = Group(f"{name} {panel} width={width}", by_rate[rate])
    score = Stat.of([statistics.fmean(run.score(metric) for run in seed) for seed in group.clusters])
    compute = [run.summary.get("compute", {}) for run in group.runs]
    flops = statistics.fmean(c.get("flops") or math.nan for c in compute)
    seconds = statistics.fmean(c.get("processor_seconds") or math.nan for c in compute)
    return Cell(name, panel, int(width), rate, len(by_rate), group, score, flops, seconds)


def _usable(run: Run, metric: str) -> bool:
    score, best = run.score(metric), run.summary.get("best_val")
    finite = all(isinstance(v, (int, float)) and math.isfinite(v) for v in (score, best))
    return run.status == "finished" and run.setting(WIDTH) is not None and finite


def width_map(runs: list[Run], metric: str) -> WidthMap | None:
    """The width study among ``runs`` (finished, with ``network.width``, a test and a best validation score of
    ``metric``); None when they tried neither two widths nor two learning rates (a study at one width still
    chooses each family's rate, as experiment=listops_long's)."""
    usable = sorted((run for run in runs if _usable(run, metric)), key=run_order)
    if all(len({run.setting(key) for run in usable}) < 2 for key in (WIDTH, LR)):
        return None
    keys = panel_keys(usable)
    members: dict[tuple[str, str, int], list[Run]] = {}
    places: dict[str, tuple] = {}  # each panel's values, to order the panels by (length 64 before 128)
    for run in usable:
        panel = panel_name(run, keys)
        places.setdefault(panel, tuple(run.setting(key) for key in keys))
        members.setdefault((family(run), panel, int(run.setting(WIDTH))), []).append(run)
    order = sorted(members, key=lambda k: (places[k[1]], k[0], k[2]))
    return WidthMap(metric, [cell(*key, members[key], metric) for key in order])
