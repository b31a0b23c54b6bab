"""What a search found, read back from its run directories alone (no Optuna needed).

Every job of a search records its place in it as overrides (``+search.study``, ``+search.trial``,
``+search.role``, ``+search.direction``; :mod:`zoo.search.sweeper`), which ``summary.json`` keeps. Per
family (one study of one sweep directory) this gives:

- the expected best validation score against the number of trials n, with its standard deviation
  (Dodge et al., 2019; :mod:`zoo.search.expected_max`), from each finished trial's best validation score;
- the best trial on validation and its tuned values;
- the monitored test score of that trial's re-runs with other seeds (mean, std, n).

API: :func:`search_families` (the data), :func:`format_search` (a terminal or markdown table) and
:func:`expected_best_figure` (a Plotly figure, one line and ±1 std band per family; needs ``zoo[report]``).
:func:`search_record` tells a trial (no test scores) from a re-run, for a leaderboard that should show only
the re-runs, which :func:`mark_tuned` names as tuned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.report.aggregate import Group, Stat
from zoo.report.bands import band_traces
from zoo.report.runs import Run
from zoo.search.expected_max import ExpectedBest, expected_best
from zoo.search.space import SINGLE_STUDY, flat_space

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: A search job's record: the override keys it was given (``+search.KEY=VALUE``).
RECORD_KEYS = ("study", "trial", "role", "direction")


@dataclass(frozen=True)
class SearchRecord:
    """A job's place in a search: its study (family), trial number, role (``trial`` or ``reseed``: the best
    trial run again with another seed), the direction of the monitored metric, and the attempt (from 2: the trial
    ran again after the worker that ran it stopped)."""

    study: str
    trial: int
    role: str
    higher_is_better: bool
    attempt: int = 1


def search_record(run: Run) -> SearchRecord | None:
    """The search record of ``run``, or None for a run outside any search."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [o for o in run.summary.get("overrides", []) if o.startswith("+search.")]
    values = {o.key_or_group.split(".", 1)[1]: o.value() for o in OverridesParser.create().parse_overrides(given)}
    if not all(key in values for key in RECORD_KEYS):
        return None
    return SearchRecord(
        str(values["study"]),
        int(values["trial"]),
        str(values["role"]),
        values["direction"] == "maximize",
        int(values.get("attempt", 1)),
    )


def mark_tuned(groups: list[Group]) -> list[Group]:
    """Name each group of one trial's re-runs as tuned (``model=gru (tuned, trial 3)``): it is named by the choices
    it shares with the recipe's own runs, yet holds the trial's values. A group named by no setting (alone on its
    board) is named by its family instead."""
    for group in groups:
        records = {search_record(run) for run in group.runs}
        record = records.pop() if len(records) == 1 else None
        if record is None or record.role != "reseed":
            continue
        mark = f" (tuned, trial {record.trial})"
        if not group.settings and record.study != SINGLE_STUDY:
            group.label = record.study + group.tag
        group.label += mark
        group.tag += mark
    return groups


@dataclass
class Family:
    """One study of a search: its finished trials' scores, the expected-best curve, the best trial and its
    re-runs, and the trials that failed. ``label`` is the study's name (``model=gru``), with its sweep folder when
    two searches share it."""

    study: str
    sweep: Path
    monitor: str
    higher_is_better: bool
    trials: dict[int, Run] = field(default_factory=dict)  # finished trials by number
    unscored: list[Run] = field(default_factory=list)  # trials' runs without a best validation score: failed, stopped
    reseeds: list[Run] = field(default_factory=list)  # every finished re-run, of whichever trial was best then
    label: str = ""

    @property
    def failed_trials(self) -> dict[int, Run]:
        """The trials that failed and never finished (a resumed trial may finish after a failed try), by number."""
        failed = (run for run in self.unscored if run.status == "failed")
        return {number: run for run in failed if (number := search_record(run).trial) not in self.trials}

    @property
    def failed(self) -> int:
        return len(self.failed_trials)

    @property
    def flops(self) -> float:
        """The training FLOPs its trials recorded, failed and stopped ones included: the search's compute."""
        return sum(_flops(run) for run in (*self.trials.values(), *self.unscored))

    @property
    def flops_per_trial(self) -> float | None:
        """The finished trials' mean training FLOPs (None when they recorded none)."""
        counted = [f for run in self.trials.values() if (f := _flops(run))]
        return sum(counted) / len(counted) if counted else None

    @property
    def scores(self) -> list[float]:
        """Each finished trial's best validation score of the monitored metric, in trial order."""
        return [run.summary["best_val"] for _, run in sorted(self.trials.items())]

    @property
    def curve(self) -> list[ExpectedBest]:
        """The expected best validation score after n = 1 .. N trials (N: the finished trials)."""
        return expected_best(self.scores, self.higher_is_better)

    @property
    def best_trial(self) -> int | None:
        """The trial with the best validation score (the lowest number among equals); None before any finished."""
        if not self.trials:
            return None
        sign = 1 if self.higher_is_better else -1
        return max(sorted(self.trials), key=lambda number: sign * self.trials[number].summary["best_val"])

    @property
    def best_params(self) -> dict[str, Any]:
        """The best trial's value of every key of its search space (a config group: the chosen name)."""
        from omegaconf import DictConfig, OmegaConf

        from zoo.config.files import load_yaml

        if self.best_trial is None:
            return {}
        config_file = self.trials[self.best_trial].path / "config.yaml"
        if not config_file.is_file():
            return {}
        config = load_yaml(config_file)
        params = {}
        for key in flat_space(OmegaConf.select(config, "search.space", default=None)):
            value = OmegaConf.select(config, key, default=None)
            params[key] = value.get("name") if isinstance(value, DictConfig) else value
        return params

    @property
    def test(self) -> Stat | None:
        """The monitored test score of the best trial's re-runs with other seeds: mean, std and n."""
        best = self.best_trial
        scores = [run.score(self.monitor) for run in self.reseeds if search_record(run).trial == best]
        return Stat.of([score for score in scores if score is not None])


def _flops(run: Run) -> float:
    flops = run.summary.get("compute", {}).get("flops")
    return float(flops) if isinstance(flops, (int, float)) else 0.0


def search_families(runs: list[Run]) -> list[Family]:
    """The families (studies) of every search among ``runs``, in the order their first job appears.

    A trial counts once it finished with a best validation score; one that failed (and never finished, as an
    interrupted and resumed trial may leave an unfinished directory behind) counts as failed.
    """
    families: dict[tuple[Path, str], Family] = {}
    for run in runs:
        record = search_record(run)
        if record is None:
            continue
        key = (run.path.parent, record.study)
        family = families.setdefault(
            key, Family(record.study, run.path.parent, run.summary.get("monitor", ""), record.higher_is_better)
        )
        finished = run.status == "finished"
        if record.role == "reseed":
            if finished:
                family.reseeds.append(run)
        elif finished and isinstance(run.summary.get("best_val"), (int, float)):
            family.trials[record.trial] = run
        else:
            family.unscored.append(run)
    names = [family.study for family in families.values()]
    for family in families.values():
        family.label = family.study if names.count(family.study) == 1 else f"{family.study} ({family.sweep})"
    return list(families.values())


def _columns(families: list[Family]) -> list[int]:
    """The numbers of trials shown: 1, 2, 4, ... and the largest N."""
    largest = max((len(family.trials) for family in families), default=0)
    shown = [n for n in (2**k for k in range(largest.bit_length())) if n <= largest]
    return shown + [largest] if largest and largest not in shown else shown


def format_search(families: list[Family], markdown: bool = False) -> str:
    """The families as text: the expected best validation score (mean ± std) at n = 1, 2, 4, ... N trials,
    then each family's best trial, its tuned values and its re-runs' test score."""
    if not families:
        return ""
    columns = _columns(families)
    header = ["family", "metric", "trials", "failed", "trial TFLOPs", *(f"n={n}" for n in columns)]
    rows = []
    for family in families:
        curve = {point.n: f"{point.mean:.2f} ± {point.std:.2f}" for point in family.curve}
        rows.append(
            [
                family.label,
                family.monitor,
                str(len(family.trials)),
                str(family.failed),
                f"{family.flops / 1e12:,.1f}",
                *(curve.get(n, "") for n in columns),
            ]
        )
    title = (
        "expected best validation score after n trials, mean ± std (Dodge et al., 2019); trial TFLOPs: the training "
        "compute every trial of the family recorded"
    )
    if markdown:
        table = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"] + [f"| {' | '.join(r)} |" for r in rows]
    else:
        widths = [max(len(line[k]) for line in [header, *rows]) for k in range(len(header))]
        table = [
            "  ".join(cell.ljust(widths[k]) if k < 2 else cell.rjust(widths[k]) for k, cell in enumerate(line))
            for line in [header, *rows]
        ]
    details = [("- " if markdown else "") + line for family in families for line in _family_lines(family)]
    return "\n".join([title, "", *table, "", *details]) + "\n"


#: How a resumed run's record reads what stopped it (``resumes[].from``, the status it was found in).
STOPPED = {"running": "killed", "interrupted": "interrupted (a signal: pre-emption, a time limit, Ctrl-C)"}


def _family_lines(family: Family) -> list[str]:
    """The family's best trial, then its failed trials by reason, each with its run directories, then the trials
    that were cut off and finished later (a worker or job killed, a job pre-empted), each counted once."""
    by_reason: dict[str, list[tuple[int, Run]]] = {}
    for number, run in sorted(family.failed_trials.items()):
        by_reason.setdefault(run.summary.get("reason") or "no reason recorded", []).append((number, run))
    failed = [
        f"{family.label}: trial{'s' * (len(trials) > 1)} {', '.join(str(number) for number, _ in trials)} failed "
        f"({reason}): {', '.join(str(run.path) for _, run in trials)}"
        for reason, trials in by_reason.items()
    ]
    return [
        _best_line(family),
        *failed,
        *(line for number, run in sorted(family.trials.items()) for line in _stopped_lines(family.label, number, run)),
    ]


def _stopped_lines(label: str, number: int, run: Run) -> list[str]:
    """How a finished trial got there when it was cut off: each resume, or a new start (a trial whose worker
    stopped before its first checkpoint)."""
    resumes = run.summary.get("resumes", [])
    lines = [
        f"{label}: trial {number} was {STOPPED.get(resume['from'], resume['from'])} at step {resume['step']} and "
        f"resumed from there: {run.path}"
        for resume in resumes
    ]
    attempt = search_record(run).attempt
    if attempt > 1 and not resumes:
        lines.append(
            f"{label}: trial {number} was cut off before its first checkpoint when its worker stopped, and ran again "
            f"from the start (attempt {attempt}): {run.path}"
        )
    return lines


def _best_line(family: Family) -> str:
    best = family.best_trial
    if best is None:
        return f"{family.label}: no trial finished"
    values = ", ".join(f"{key}={_short(value)}" for key, value in family.best_params.items())
    line = f"{family.label}: best trial {best} (val {family.monitor} {family.trials[best].summary['best_val']:.2f})"
    line += f": {values}" if values else ""
    test = family.test
    if test is None:
        return line + "; not re-run with seeds yet"
    return line + f"; test {family.monitor} over {test.n} seed(s): {test.mean:.2f} ± {test.std:.2f}"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def expected_best_figure(families: list[Family]) -> go.Figure:
    """One line per family: the expected best validation score (y) after n trials (x, left) and against the
    compute n trials take (n times the family's mean FLOPs per trial, log x, right: trials that tune widths or
    epochs differ in compute), with a ±1 std band clipped to the scores the family's trials reached."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["against trials", "against training compute"])
    for k, family in enumerate(family for family in families if family.trials):
        colour = qualitative.Plotly[k % len(qualitative.Plotly)]
        curve, reached = family.curve, (min(family.scores), max(family.scores))
        means, stds = [point.mean for point in curve], [point.std for point in curve]
        fig.add_traces(band_traces([point.n for point in curve], means, stds, reached, family.label, colour), 1, 1)
        if family.flops_per_trial:
            x = [point.n * family.flops_per_trial for point in curve]
            traces = band_traces(x, means, stds, reached, family.label, colour)
            traces[-1].showlegend = False
            fig.add_traces(traces, 1, 2)
    monitors = {family.monitor for family in families}
    metric = monitors.pop() if len(monitors) == 1 else "score"
    fig.update_layout(title="Expected best validation score after n trials (Dodge et al., 2019)")
    fig.update_xaxes(title_text="trials (n)", dtick=1, row=1, col=1)  # whole trials
    fig.update_xaxes(title_text="training FLOPs of n trials", type="log", row=1, col=2)
    fig.update_yaxes(title_text=f"expected best validation {metric}", row=1, col=1)
    return fig
