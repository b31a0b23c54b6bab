"""Which tuned settings mattered in a search: each setting's share of the variation of the trials' scores.

Computed the way Optuna computes it (``optuna.importance.get_param_importances``) from what the search's run
folders recorded alone: every finished trial's values of its ``search.space`` keys (its ``config.yaml``) and its
best validation score, put into an in-memory study. The evaluator is fANOVA (Hutter et al., 2014: a random
forest fitted to the scores, each setting's share of its functional-ANOVA variance) when scikit-learn is
installed, else PED-ANOVA (Watanabe et al., 2023: how much each setting's distribution among the best 10 % of
the trials departs from its distribution among all of them), which Optuna computes without it. The shares sum to
one. A setting every trial had alike is left out; a family with fewer than two finished trials has none. When every
trial scored the same there is no variation to share: the evaluators would still return equal shares (1/9 each of
nine settings, as if each explained a ninth), so the shares are *undefined* instead, and said to be.

Optuna is the ``search`` extra: without it, the report and ``zoo compare`` say so in one line.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zoo.report.runs import Run
from zoo.search.report import Family

if TYPE_CHECKING:
    import plotly.graph_objects as go

FANOVA = "fANOVA (Hutter et al., 2014)"
PED_ANOVA = "PED-ANOVA (Watanabe et al., 2023)"
#: What the report and zoo compare say without Optuna.
NO_OPTUNA = "hyperparameter importance needs Optuna: pip install 'zoo[search]'"
#: What they say when no family can be evaluated.
TOO_FEW = "hyperparameter importance needs two finished trials of a family that differ in a tuned setting"
#: The seed of fANOVA's random forest: the same trials give the same importances.
SEED = 0


@dataclass
class Importance:
    """A family's tuned settings by their share of its trials' score variation, largest first."""

    family: str
    trials: int
    method: str
    shares: dict[str, float]  # empty where undefined: every trial had the score ``tied``
    tied: float | None = None

    def summary(self) -> str:
        """One line: the settings by share, or why there are none."""
        if self.tied is not None:
            return f"{self.family} ({self.trials} trials): undefined, every trial scored {self.tied:.2f}"
        shares = ", ".join(f"{key} {share:.2f}" for key, share in self.shares.items())
        return f"{self.family} ({self.trials} trials): {shares}"


def tuned_values(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """A trial's value of each key of its search space (a config group: its chosen name) and each key's Optuna
    distribution, as its ``config.yaml`` records them; a key whose value lies outside its range is left out."""
    from omegaconf import DictConfig, OmegaConf

    from zoo.config.files import load_yaml
    from zoo.search.space import SearchError, distribution, flat_space

    if not (run.path / "config.yaml").is_file():
        return {}, {}
    config = load_yaml(run.path / "config.yaml")
    values, ranges = {}, {}
    for key, text in flat_space(OmegaConf.select(config, "search.space", default=None)).items():
        value = OmegaConf.select(config, key, default=None)
        value = value.get("name") if isinstance(value, DictConfig) else value
        try:
            tuned = distribution(key, text)
            tuned.to_internal_repr(value)  # a choice the range does not hold raises
        except (SearchError, ValueError, TypeError):
            continue
        values[key], ranges[key] = value, tuned
    return values, ranges


def evaluator() -> tuple[Any, str]:
    """fANOVA where scikit-learn is installed (its random forest), else PED-ANOVA; and the method's name."""
    from optuna.importance import FanovaImportanceEvaluator, PedAnovaImportanceEvaluator

    if importlib.util.find_spec("sklearn") is not None:
        return FanovaImportanceEvaluator(seed=SEED), FANOVA
    return PedAnovaImportanceEvaluator(), PED_ANOVA


def importance(family: Family) -> Importance | None:
    """The family's importances from its finished trials, or None with fewer than two or nothing that varied."""
    import optuna

    trials = [tuned_values(run) + (run.summary["best_val"],) for _, run in sorted(family.trials.items())]
    if len(trials) < 2:
        return None
    keys = [key for key in trials[0][0] if all(key in values for values, _, _ in trials)]
    keys = [key for key in keys if len({repr(values[key]) for values, _, _ in trials}) > 1]
    if not keys:
        return None
    method, name = evaluator()
    scores = {score for _, _, score in trials}
    if len(scores) == 1:
        return Importance(family.label, len(trials), name, {}, tied=scores.pop())
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize" if family.higher_is_better else "minimize")
    for values, ranges, score in trials:
        study.add_trial(
            optuna.trial.create_trial(
                params={key: values[key] for key in keys},
                distributions={key: ranges[key] for key in keys},
                value=score,
            )
        )
    with warnings.catch_warnings():  # Optuna marks its evaluators experimental
        warnings.simplefilter("ignore")
        shares = optuna.importance.get_param_importances(study, evaluator=method)
    return Importance(family.label, len(trials), name, dict(sorted(shares.items(), key=lambda kv: -kv[1])))


def importances(families: list[Family]) -> list[Importance] | None:
    """Each family's importances (families without any left out); None without Optuna."""
    if importlib.util.find_spec("optuna") is None:
        return None
    return [found for family in families if (found := importance(family)) is not None]


def format_importance(families: list[Family], markdown: bool = False) -> str:
    """``zoo compare``'s lines: per family, its settings by share, largest first; a note without Optuna."""
    if not families:
        return ""
    found = importances(families)
    if found is None:
        return NO_OPTUNA + "\n"
    if not found:
        return TOO_FEW + "\n"
    bullet = "- " if markdown else ""
    lines = [f"hyperparameter importance, the share of the trials' validation score variation: {found[0].method}"]
    lines += [f"{bullet}{item.summary()}" for item in found]
    return "\n".join(lines) + "\n"


def importance_note(found: list[Importance]) -> str:
    """How the report's bars were computed, and from how few trials."""
    counts = ", ".join(f"{item.family}: {item.trials}" for item in found)
    return (
        f"Each tuned setting's share of the variation of the trials' best validation score, by {found[0].method} "
        f"(Optuna's get_param_importances) from the values the trials recorded; trials ({counts}): a few give "
        "rough shares."
    )


def importance_figure(found: list[Importance], colours: dict[str, str]) -> go.Figure:
    """Horizontal bars: each setting's share (x) per family, the settings in order of their largest share; a family
    whose shares are undefined has none."""
    import plotly.graph_objects as go

    found = [item for item in found if item.tied is None]
    keys = list(dict.fromkeys(key for item in found for key in item.shares))
    keys.sort(key=lambda key: max(item.shares.get(key, 0.0) for item in found))
    fig = go.Figure()
    for item in found:
        fig.add_trace(
            go.Bar(
                x=[item.shares.get(key, 0.0) for key in keys],
                y=keys,
                orientation="h",
                name=item.family,
                marker_color=colours.get(item.family),
            )
        )
    fig.update_layout(barmode="group", xaxis_title="share of the trials' score variation", yaxis_title="setting")
    fig.update_layout(height=max(260, 40 + 28 * len(keys) * len(found)))
    return fig
