"""The metrics a run reports and the one it monitors, chosen by ``metrics`` and ``monitor``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from zoo.config.suggest import did_you_mean, with_hint
from zoo.contracts import Metric
from zoo.errors import ZooError
from zoo.registry import build, get, names

log = logging.getLogger(__name__)
_warned: set[str] = set()  # unavailable metrics already reported in this process (the suite is built several times)


class MetricChoiceError(ZooError, ValueError):
    """The config names a metric that is not registered, or monitors one that cannot run here."""


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def chosen_metrics(cfg: Any) -> list[dict]:
    """The metrics ``metrics`` names (the task's defaults when null), each as a mapping with its name and options."""
    listed = cfg.get("metrics") or get("task", cfg["task"]["name"]).cls.default_metrics
    return [{"name": m} if isinstance(m, str) else dict(m) for m in listed]


def monitored(cfg: Any) -> str:
    """The metric that picks checkpoints: ``monitor``, else the task's."""
    return cfg.get("monitor") or get("task", cfg["task"]["name"]).cls.default_monitor


def check_monitor_fits(cfg: Any, monitor: str) -> None:
    """A metric that needs outputs of several words (BLEU's 4-grams) says nothing of one-token outputs (a label): it
    would choose the checkpoint by noise."""
    task = get("task", cfg["task"]["name"]).cls
    needs = get("metric", monitor).cls.min_words
    if task.one_token_outputs and needs > 1:
        raise MetricChoiceError(
            f"monitor={monitor} needs outputs of {needs} words or more to score, and task={cfg['task']['name']} writes "
            f"one token (a label): choose a monitor that scores labels, e.g. monitor={task.default_monitor}"
        )


class MetricSuite:
    """Builds the run's metric plugins and scores hypotheses with all of them.

    ``metrics`` lists metric names, or mappings with a name and options
    (``metrics=[bleu,{name:chrf,word_order:2}]``); null means the task's defaults.
    ``monitor: null`` means the task's monitored metric; one missing from
    ``metrics`` is added, so ``monitor=ter`` alone is enough. The monitor picks the
    best checkpoint, stops training early, shows in the progress bar and is the
    value a sweep optimises.

    A metric that cannot run here (:meth:`Metric.unavailable`, e.g. METEOR without Java)
    is left out with a warning and listed in ``unavailable``; as the monitor it is an error.
    """

    def __init__(self, cfg: Any) -> None:
        chosen = chosen_metrics(cfg)
        self.monitor: str = monitored(cfg)
        if self.monitor not in [m.get("name") for m in chosen]:
            chosen.append({"name": self.monitor})
        unknown = [str(m.get("name")) for m in chosen if m.get("name") not in names("metric")]
        if unknown:
            raise MetricChoiceError(
                with_hint(
                    f"unknown metric(s) {', '.join(unknown)}",
                    did_you_mean(unknown[0], names("metric")),
                    f"registered metrics: {', '.join(names('metric'))} "
                    "(a metric plugin must be discovered: see plugin_dirs)",
                )
            )
        check_monitor_fits(cfg, self.monitor)
        reason = get("metric", self.monitor).cls.unavailable()
        if reason:
            raise MetricChoiceError(
                f"the monitored metric {self.monitor} cannot run here: {one_line(reason)}; choose another monitor"
            )
        self.metrics: dict[str, Metric] = {}
        self.unavailable: dict[str, str] = {}  # metrics left out: name -> why
        for options in chosen:
            name = options["name"]
            if name in self.metrics or name in self.unavailable:
                continue
            reason = get("metric", name).cls.unavailable()
            if reason:
                self.unavailable[name] = one_line(reason)
                if name not in _warned:
                    log.warning("metric %s left out: %s", name, self.unavailable[name])
                    _warned.add(name)
                continue
            self.metrics[name] = build("metric", options)

    @property
    def mode(self) -> str:
        """``max`` or ``min``: which way the monitored metric improves (Lightning's spelling)."""
        return "max" if self.metrics[self.monitor].higher_is_better else "min"

    def scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
        return {name: metric.corpus_score(hypotheses, references) for name, metric in self.metrics.items()}

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, list[float]]:
        """Per-item scores of every metric that has them."""
        per_item = {name: metric.item_scores(hypotheses, references) for name, metric in self.metrics.items()}
        return {name: scores for name, scores in per_item.items() if scores is not None}

    def describe(self) -> dict[str, dict]:
        """Direction and signature of every metric, as recorded in summary.json."""
        return {
            name: {"higher_is_better": metric.higher_is_better, "signature": metric.signature()}
            for name, metric in self.metrics.items()
        }
