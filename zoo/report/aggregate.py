"""Runs grouped into configurations: mean, standard deviation and count over seeds.

By default a group is one configuration (the summaries' ``config_key``: runs that
differ only in seed, paths or logging); ``by`` groups by chosen settings instead
(``encoder,attention``), pooling whatever else differs.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from zoo.registry import GROUP_KINDS
from zoo.report.runs import Run

#: Cost columns: summary key path -> column name.
COSTS = {
    ("parameters", "trainable"): "params",
    ("parameters", "frozen"): "frozen",
    ("train_seconds",): "train s",
    ("tokens_per_second",): "tokens/s",
    ("peak_memory_mb",): "memory MB",
    ("latency_ms", "greedy"): "ms/item greedy",
    ("latency_ms", "beam"): "ms/item beam",
}


@dataclass
class Stat:
    """Mean, sample standard deviation (0 for one value) and count of one quantity over a group's runs."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> "Stat | None":
        if not values:
            return None
        return cls(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values))


@dataclass
class Group:
    """The runs of one configuration (or of one value of the ``by`` settings)."""

    label: str
    runs: list[Run]
    metrics: dict[str, Stat] = field(default_factory=dict)
    costs: dict[str, Stat] = field(default_factory=dict)
    buckets: dict[str, Stat] = field(default_factory=dict)

    @property
    def statuses(self) -> Counter:
        return Counter(run.status for run in self.runs)

    @property
    def finished(self) -> list[Run]:
        return [run for run in self.runs if run.status == "finished"]


def _lookup(summary: dict, path: tuple[str, ...]) -> float | None:
    value = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, (int, float)) else None


def _key(run: Run, by: list[str]) -> tuple:
    if by:
        return tuple(run.setting(key) for key in by)
    return (run.summary.get("config_key") or str(run.path),)


def _override(run: Run, key: str) -> str | None:
    return next((o.partition("=")[2] for o in run.label_overrides if o.partition("=")[0] == key), None)


def _varying(runs: list[Run]) -> list[str]:
    """Component kinds and override keys whose value differs between runs (seeds excluded): what is compared."""
    kinds = [kind.name for kind in GROUP_KINDS]
    keys = dict.fromkeys([*kinds, *(o.partition("=")[0] for run in runs for o in run.label_overrides)])
    value = lambda run, key: run.component(key) if key in kinds else _override(run, key)  # noqa: E731
    return [key for key in keys if len({value(run, key) for run in runs}) > 1]


def _label(runs: list[Run], by: list[str], varying: list[str]) -> str:
    """``by`` values, else the varying overrides, else the varying component names, else the encoder."""
    first = runs[0]
    if by:
        return ", ".join(f"{key}={first.setting(key)}" for key in by)
    shown = [o for o in first.label_overrides if o.partition("=")[0] in varying]
    if shown:
        return " ".join(shown)
    names = ", ".join(f"{kind}={first.component(kind)}" for kind in varying if first.component(kind))
    return names or first.component("encoder") or first.path.name


def group_runs(runs: list[Run], by: list[str] | None = None) -> list[Group]:
    """Groups of runs with the statistics of their finished runs, in first-seen order."""
    by = by or []
    buckets: dict[tuple, list[Run]] = {}
    for run in runs:
        buckets.setdefault(_key(run, by), []).append(run)
    varying = _varying(runs)
    groups = []
    for members in buckets.values():
        group = Group(_label(members, by, varying), members)
        done = group.finished
        names = dict.fromkeys(name for run in done for name in run.summary.get("test", {}))
        group.metrics = {name: Stat.of([s for run in done if (s := run.score(name)) is not None]) for name in names}
        group.costs = {column: stat for path, column in COSTS.items()
                       if (stat := Stat.of([v for run in done if (v := _lookup(run.summary, path)) is not None]))}
        labels = dict.fromkeys(b for run in done for b in run.summary.get("breakdowns", {}).get("bleu_by_length", {}))
        group.buckets = {b: Stat.of([run.summary["breakdowns"]["bleu_by_length"][b]["bleu"] for run in done
                                     if b in run.summary["breakdowns"]["bleu_by_length"]]) for b in labels}
        groups.append(group)
    return groups
