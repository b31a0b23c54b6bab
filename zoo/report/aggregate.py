"""Runs grouped into configurations: mean, standard deviation and count over seeds.

By default a group is one configuration (the summaries' ``config_key``: runs that
differ only in seed, paths or logging), labelled by every setting in which the
groups differ; ``by`` groups by chosen settings instead (``encoder,attention``,
``optim.lr``, ``seed``), pooling whatever else differs.

A group's statistics are over repetitions, one per configuration and seed: runs of one
configuration that share a seed are one repetition (their values averaged). A ``by``
row may pool several configurations, whose repetitions are then not seeds alone
(:attr:`Group.configurations`); runs sharing a seed within a group, of one
configuration or several, are flagged in :attr:`Group.shared_seeds`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from zoo.report.runs import Run
from zoo.report.words import decoder_scores, recipe_words, show
from zoo.run.identity import NOT_IN_CONFIG_KEY

#: Cost columns: summary key path -> column name.
COSTS = {
    ("parameters", "trainable"): "params",
    ("parameters", "frozen"): "frozen",
    ("train_seconds",): "train s",
    ("compute", "flops"): "train TFLOPs",
    ("compute", "processor_seconds"): "proc s",
    ("tokens_per_second",): "target tok/s",  # a classifier's target is its label and </s>: 2 a sequence
    ("peak_memory_mb",): "memory MB",
    ("latency_ms", "greedy"): "ms/item greedy",
    ("latency_ms", "beam"): "ms/item beam",
}
#: Cost columns shown in other units than the summary's: column -> factor.
COST_UNITS = {"train TFLOPs": 1e-12}
#: The FLOPs a run was to spend (:func:`budget_flops`), beside those it recorded.
BUDGET = "budget TFLOPs"
#: Recorded FLOPs over the budget, in percent: how close a run came to ``trainer.budget_flops``.
BUDGET_SHARE = "% of budget"
#: Every cost column in the order the leaderboard shows them: the budget after the FLOPs recorded.
COST_COLUMNS = [
    name
    for column in COSTS.values()
    for name in ((column, BUDGET, BUDGET_SHARE) if column == "train TFLOPs" else (column,))
]


@dataclass
class Stat:
    """Mean, sample standard deviation (0 for one value) and count of one quantity over a group's seeds."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Stat | None:
        if not values:
            return None
        return cls(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values))


@dataclass
class Group:
    """The runs of one configuration (or of one value of the ``by`` settings)."""

    label: str
    runs: list[Run]
    #: The settings that name it (``{"encoder": "gru"}``), as its label writes them; empty for a label that is no
    #: setting (one configuration alone, named by its encoder).
    settings: dict[str, str] = field(default_factory=dict)
    #: What tells apart configurations that no setting does: `` [config key]`` after the label, else empty.
    tag: str = ""
    #: What its colour is derived from (:mod:`zoo.report.colours`): its configuration's key (a run's path without
    #: one), also for a ``by`` row of one configuration; a ``by`` row pooling several, its label (``encoder=gru``), as
    #: the page names a group it makes.
    key: str = ""
    metrics: dict[str, Stat] = field(default_factory=dict)
    costs: dict[str, Stat] = field(default_factory=dict)
    #: Every score of the task's breakdowns: (breakdown, bucket, score) -> its statistic over the seeds.
    breakdowns: dict[tuple[str, str, str], Stat] = field(default_factory=dict)
    #: Values left out of the statistics for not being finite numbers (a diverged run's NaN): (column, value shown)
    #: -> how many runs had it.
    non_finite: Counter = field(default_factory=Counter)

    def name(self, shared: Collection[str] = ()) -> str:
        """The label less the ``shared`` settings (those every row has alike, said once above the table)."""
        kept = [f"{key}={value}" for key, value in self.settings.items() if key not in shared]
        return " ".join(kept) + self.tag if kept else self.label

    @property
    def statuses(self) -> Counter:
        return Counter(run.status for run in self.runs)

    @property
    def finished(self) -> list[Run]:
        return [run for run in self.runs if run.status == "finished"]

    @property
    def repetitions(self) -> list[list[Run]]:
        """The finished runs as independent repetitions, one per (configuration, seed), ordered by seed then path:
        what the statistics and the test are over. Runs of one configuration that share a seed are one
        repetition, not several; in a row pooling configurations the repetitions are not seeds alone."""
        repetitions: dict[tuple, list[Run]] = {}
        for run in sorted(self.finished, key=run_order):
            repetitions.setdefault((_configuration(run), str(run.seed)), []).append(run)
        return list(repetitions.values())

    @property
    def clusters(self) -> list[list[Run]]:
        """The finished runs by seed, ordered by seed then path: the unit of the significance test. Runs sharing a
        seed, of one configuration or of several that a ``by`` row pools, are one cluster (their scores averaged):
        a configuration trained at the same seed adds no independent repetition, and a copied run adds nothing."""
        clusters: dict[str, list[Run]] = {}
        for run in sorted(self.finished, key=run_order):
            clusters.setdefault(str(run.seed), []).append(run)
        return list(clusters.values())

    @property
    def seeds(self) -> list[str]:
        """The distinct seeds of the finished runs, in order."""
        return list(dict.fromkeys(str(run.seed) for run in sorted(self.finished, key=run_order)))

    @property
    def configurations(self) -> list[str]:
        """The distinct configurations (config keys) of the finished runs: more than one in a ``by`` row that
        pools them, whose spread is then over configurations as well as seeds."""
        return list(dict.fromkeys(_configuration(run) for run in self.finished))

    @property
    def shared_seeds(self) -> list[str]:
        """What to flag under the table, for each seed used by several finished runs: runs of one configuration
        are one repetition (counted once); runs of several configurations are flagged too, being no seeds apart."""
        by_seed: dict[str, list[Run]] = {}
        for run in sorted(self.finished, key=run_order):
            by_seed.setdefault(str(run.seed), []).append(run)
        notes = []
        for seed, runs in by_seed.items():
            configurations = len({_configuration(run) for run in runs})
            if configurations == 1 and len(runs) > 1:
                notes.append(f"{len(runs)} runs share seed {seed} (counted once)")
            elif configurations > 1:
                once = "; a configuration's runs counted once" if len(runs) > configurations else ""
                notes.append(f"seed {seed} is used by {len(runs)} runs ({configurations} configurations{once})")
        return notes

    @property
    def left_out(self) -> list[str]:
        """What to say under the table of each value left out of the statistics: ``1 run's bleu is NaN, left out``."""
        return [
            f"{count} run{'s' * (count > 1)}'{'' if count > 1 else 's'} {name} is {shown}, left out"
            for (name, shown), count in self.non_finite.items()
        ]


def _configuration(run: Run) -> str:
    """The run's configuration: its config key, else (a summary without one) the run itself."""
    return run.summary.get("config_key") or str(run.path.resolve())


def run_order(run: Run) -> tuple:
    """Seed, then resolved path: a fixed order, so anything drawn at random from runs repeats exactly."""
    seed = run.seed
    return (not isinstance(seed, int), seed if isinstance(seed, int) else 0, str(seed), str(run.path.resolve()))


def _lookup(summary: dict, path: tuple[str, ...]) -> float | None:
    value = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, (int, float)) else None


def budget_flops(run: Run) -> float | None:
    """The FLOPs the run was to spend: its summary's budget as laid out, else its config's ``trainer.budget_flops``;
    None for a run trained for epochs or minutes."""
    laid_out = run.summary.get("budget")
    amount = laid_out.get("flops") if isinstance(laid_out, dict) else None
    amount = run.setting("trainer.budget_flops") if amount is None else amount
    return float(amount) if isinstance(amount, (int, float)) and amount > 0 else None


def budget_costs(run: Run) -> dict[str, float | None]:
    """The run's budget in TFLOPs and the share of it its recorded FLOPs are (None where it has no budget)."""
    budget, spent = budget_flops(run), _lookup(run.summary, ("compute", "flops"))
    return {
        BUDGET: None if budget is None else budget * COST_UNITS["train TFLOPs"],
        BUDGET_SHARE: None if budget is None or spent is None else 100 * spent / budget,
    }


def cost(run: Run, path: tuple[str, ...], column: str) -> float | None:
    value = _lookup(run.summary, path)
    return None if value is None else value * COST_UNITS.get(column, 1)


def _over_seeds(
    seeds: list[list[Run]], value: Callable[[Run], float | None], name: str, left_out: Counter
) -> Stat | None:
    """A quantity's statistics over repetitions, each the mean of its runs' values. A value that is no finite number
    (the score of a run that diverged: NaN, inf) would make them NaN, or crash them: it is left out, and counted in
    ``left_out`` under ``name``."""
    means = []
    for runs in seeds:
        values = [v for run in runs if (v := value(run)) is not None]
        left_out.update((name, "NaN" if math.isnan(v) else str(v)) for v in values if not math.isfinite(v))
        finite = [v for v in values if math.isfinite(v)]
        if finite:
            means.append(statistics.fmean(finite))
    return Stat.of(means)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _compared(key: str) -> bool:
    """False for the settings that do not change what a run computes (seed, paths, logging)."""
    return not any(key == other or key.startswith(f"{other}.") for other in NOT_IN_CONFIG_KEY)


def _differs(key: str, settings: list[dict[str, Any]]) -> bool:
    """Whether ``key`` tells the groups apart. A component's field (``encoder.hidden_size``) only counts between
    groups using the same component: that another plugin has other fields or defaults is said by its name."""
    parents = [key.rsplit(".", depth)[0] for depth in range(1, key.count(".") + 1)]
    named = next((parent for parent in parents if any(parent in s for s in settings)), None)
    values: dict[str, set[str]] = {}
    for s in settings:
        values.setdefault(_canonical(s.get(named)) if named else "", set()).add(_canonical(s.get(key)))
    return any(len(seen) > 1 for seen in values.values())


def _deciding(groups: list[str], presets: list[dict[str, Any]]) -> list[str]:
    """The groups whose choice is not implied by another's: a recipe that selects its search space
    (``model=gru`` brings ``search=gru``) is named alone. Groups are tried in Hydra's order of choices, which
    lists the later (higher-level) entries of the defaults list first."""
    kept: list[str] = []
    for group in groups:
        implied: dict[tuple, set[str]] = {}
        for p in presets:
            implied.setdefault(tuple(_canonical(p.get(k)) for k in kept), set()).add(_canonical(p.get(group)))
        if not kept or any(len(values) > 1 for values in implied.values()):
            kept.append(group)
    return [group for group in groups if group in kept]


def _names(members: list[list[Run]], by: list[str]) -> list[dict[str, str]]:
    """Each group's naming settings: its ``by`` values; by default the preset choices in which the groups differ
    (``model=gru``: a recipe names all it sets), then every compared setting that differs between groups of the
    same presets. A group is not named by a field its component lacks (``decoder.gate`` of an rnn decoder) or by a
    scorer its decoder ignores (:func:`_tells`)."""
    if by:
        return [{key: show(runs[0].setting(key)) for key in by} for runs in members]
    settings = [runs[0].settings for runs in members]
    presets = [
        {group: choice for group, choice in runs[0].choices.items() if group not in s}
        for runs, s in zip(members, settings)
    ]
    chosen = _deciding(
        [
            group
            for group in dict.fromkeys(g for p in presets for g in p)
            if len({_canonical(p.get(group)) for p in presets}) > 1
        ],
        presets,
    )
    alike: dict[tuple, list[dict[str, Any]]] = {}  # groups of the same presets
    for p, s in zip(presets, settings):
        alike.setdefault(tuple(_canonical(p.get(group)) for group in chosen), []).append(s)
    keys = [
        key
        for key in dict.fromkeys(k for s in settings for k in s)
        if _compared(key) and any(_differs(key, cell) for cell in alike.values())
    ]
    return [
        {
            **{group: show(p.get(group)) for group in chosen if _tells(group, runs[0])},
            **{key: show(s.get(key)) for key in keys if key in s and _tells(key, runs[0])},
        }
        for p, s, runs in zip(presets, settings, members)
    ]


def _tells(key: str, run: Run) -> bool:
    """Whether a setting or config group's choice says anything of the run: not the scorer of a decoder that scores
    with none (``decoder=mamba attention=additive`` names a setting the model never reads)."""
    return key.partition(".")[0] != "attention" or decoder_scores(run)


def _labels(members: list[list[Run]], names: list[dict[str, str]]) -> list[tuple[str, str]]:
    """Each group's label (its naming settings; one group alone: its recipe or components in words) and its
    tag: groups nothing tells apart (runs without a config) add their config key."""
    labels = [
        " ".join(f"{key}={value}" for key, value in settings.items()) or recipe_words(runs[0]) or runs[0].path.name
        for runs, settings in zip(members, names)
    ]
    repeated = Counter(labels)
    tags = [
        f" [{runs[0].summary.get('config_key') or runs[0].path.name}]" if repeated[label] > 1 else ""
        for label, runs in zip(labels, members)
    ]
    return [(label + tag, tag) for label, tag in zip(labels, tags)]


def breakdown_keys(runs: list[Run]) -> list[tuple[str, str, str]]:
    """Every (breakdown, bucket, score) the runs' tasks reported (``summary.json``'s ``breakdowns``), in the order
    the tasks wrote them; a bucket's ``count`` is its size, not a score."""
    return list(
        dict.fromkeys(
            (name, bucket, score)
            for run in runs
            for name, buckets in run.summary.get("breakdowns", {}).items()
            for bucket, scores in buckets.items()
            for score in scores
            if score != "count"
        )
    )


def group_runs(runs: list[Run], by: list[str] | None = None) -> list[Group]:
    """Groups of runs with the statistics of their finished seeds, in first-seen order."""
    by = by or []
    buckets: dict[tuple, list[Run]] = {}
    for run in runs:
        key = tuple(_canonical(run.setting(k)) for k in by) if by else (run.summary.get("config_key") or str(run.path),)
        buckets.setdefault(key, []).append(run)
    groups = []
    members = list(buckets.values())
    named = _names(members, by)
    for (label, tag), settings, its_runs in zip(_labels(members, named), named, members):
        pooled = len({_configuration(run) for run in its_runs}) > 1
        colour_key = label if pooled else its_runs[0].summary.get("config_key") or str(its_runs[0].path)
        group = Group(label, its_runs, settings, tag, colour_key)
        repetitions, done = group.repetitions, group.finished
        names = dict.fromkeys(name for run in done for name in run.summary.get("test", {}))
        left_out = group.non_finite
        group.metrics = {
            name: _over_seeds(repetitions, lambda run, name=name: run.score(name), name, left_out) for name in names
        }
        group.costs = {
            column: stat
            for path, column in COSTS.items()
            if (
                stat := _over_seeds(
                    repetitions, lambda run, path=path, column=column: cost(run, path, column), column, left_out
                )
            )
        }
        group.costs |= {
            column: stat
            for column in (BUDGET, BUDGET_SHARE)
            if (
                stat := _over_seeds(repetitions, lambda run, column=column: budget_costs(run)[column], column, left_out)
            )
        }
        group.breakdowns = {
            key: stat
            for key in breakdown_keys(done)
            if (
                stat := _over_seeds(
                    repetitions,
                    lambda run, key=key: _lookup(run.summary, ("breakdowns", *key)),
                    f"{key[2]} {key[1]}",
                    left_out,
                )
            )
        }
        groups.append(group)
    return groups
