"""What a search tunes: ``search.space`` maps config keys to ranges, read into Optuna distributions.

A range is written in Hydra's override grammar, as hydra-optuna-sweeper reads its ``params``:
``interval(LOW, HIGH)`` (floats; ``int(interval(...))`` integers; ``tag(log, ...)`` a log scale),
``choice(A, B, ...)`` and ``range(START, STOP, STEP)``. A family's ranges ship as a preset of the
``search`` group (``conf/search/gru.yaml``), which its ``model`` recipe selects.

A search's command line is a grid of studies: each combination of its comma lists (``model=gru,lstm``)
is one study with its own budget, named by the combination (``model=gru``); the other overrides are
every job's. A key the command line sets is fixed, not tuned. Each range's ends (each of its choices) pass the
field checks of the setting it tunes before the first trial (:func:`check_range`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf

from zoo.errors import ZooError

#: The forms a range may take, for the messages.
FORMS = (
    "interval(LOW, HIGH) (int(interval(...)) for integers, tag(log, interval(...)) for a log scale), "
    "choice(A, B, ...) or range(START, STOP, STEP)"
)
#: A study's name when the command line has no comma list: the search has one study.
SINGLE_STUDY = "search"
#: How a command line changes a range of the space: ``search.space.KEY=RANGE``.
RANGE_PREFIX = "search.space."


class SearchError(ZooError, ValueError):
    """A search that cannot start: no space for a study, a range that is not one, a key the config lacks."""


def grid(arguments: list[str]) -> tuple[list[str], list[list[str]]]:
    """Every job's overrides, and the combinations of the comma lists: one study each (``[[]]``: one study)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    base: list[str] = []
    lists: list[list[str]] = []
    for override in OverridesParser.create().parse_overrides(arguments):
        if override.is_discrete_sweep():
            lists.append([f"{override.get_key_element()}={value}" for value in override.sweep_string_iterator()])
        elif override.is_sweep_override():
            raise SearchError(
                f"{override.input_line}: a search reads its ranges from search.space, and comma lists "
                "on its command line make one study per value; give a range there as quoted text, "
                "e.g. 'search.space.optim.lr=\"tag(log, interval(1e-4, 1e-2))\"'"
            )
        else:
            base.append(override.input_line)
    return base, [list(combination) for combination in itertools.product(*lists)]


def ranges_added(overrides: list[str]) -> list[str]:
    """A search's command line as Hydra composes its own config from it: each range (``search.space.KEY=RANGE``) as
    ``++search.space.KEY=RANGE``. Hydra composes that config without the comma lists, so a search of several families
    (``model=gru,transformer``) has no ``search=`` preset there to override; ``++`` adds the range there, and
    overrides it in each family's config as a plain override does (each was composed with it before)."""
    return [f"++{o}" if o.startswith(RANGE_PREFIX) else o for o in overrides]


def study_name(combination: list[str]) -> str:
    """The study of one combination of the comma lists: the combination as written (``model=gru``)."""
    return " ".join(combination) or SINGLE_STUDY


def override_keys(overrides: list[str]) -> list[str]:
    """Each override's config key, in order (``optim.lr=0.001`` -> ``optim.lr``, ``+search.x=1`` -> ``search.x``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return [o.key_or_group for o in OverridesParser.create().parse_overrides(overrides)]


def fixed_keys(overrides: list[str]) -> set[str]:
    """The config keys an override list sets: fixed, not tuned."""
    return set(override_keys(overrides))


def flat_space(space: Any, prefix: str = "") -> dict[str, str]:
    """``search.space`` as config keys and range texts: nested (``optim: {lr: ...}``, which the command line can
    override as ``search.space.optim.lr=...``) or dotted (``optim.lr: ...``)."""
    if not isinstance(space, DictConfig):
        return {prefix[:-1]: str(space)} if prefix else {}
    flat: dict[str, str] = {}
    for key, value in space.items_ex(resolve=False):
        flat.update(flat_space(value, f"{prefix}{key}."))
    return flat


def read_space(cfg: DictConfig, study: str, fixed: set[str] = frozenset()) -> dict[str, Any]:
    """The Optuna distributions of ``cfg.search.space`` without the ``fixed`` keys, each key checked to be a
    setting (or a config group) of ``cfg``; a study with nothing to tune is a :class:`SearchError`."""
    space = flat_space(OmegaConf.select(cfg, "search.space"))
    if not space:
        raise SearchError(
            f"study '{study}' has no search space: choose one with search=FAMILY (conf/search: "
            f"{', '.join(presets()) or 'none'}), or a model= recipe that selects one"
        )
    distributions = {}
    for key, text in space.items():
        if OmegaConf.select(cfg, key, default=_ABSENT) is _ABSENT:
            raise SearchError(
                f"search.space of study '{study}' names {key}, which is not a setting of the config "
                "(zoo train --cfg job shows them)"
            )
        if key not in fixed:
            distributions[key] = distribution(key, text)
            check_range(cfg, study, key, text, distributions[key])
    if not distributions:
        raise SearchError(f"study '{study}': the command line fixes every key of search.space; nothing is left to tune")
    return distributions


_ABSENT = object()


def distribution(key: str, text: str) -> Any:
    """One range as an Optuna distribution; anything else is a :class:`SearchError` naming the forms."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
    from hydra.errors import HydraException
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    wrong = SearchError(f"search.space.{key}={text} is not a range: write {FORMS}")
    try:
        value = OverridesParser.create().parse_override(f"{key}={text}").value()
    except HydraException:
        raise wrong from None
    if isinstance(value, IntervalSweep):
        log = "log" in value.tags
        if (log and value.start <= 0) or value.start >= value.end:
            raise SearchError(f"search.space.{key}={text}: LOW must be below HIGH" + (" and above 0" if log else ""))
        if isinstance(value.start, int) and isinstance(value.end, int):
            return IntDistribution(value.start, value.end, log=log)
        return FloatDistribution(float(value.start), float(value.end), log=log)
    if isinstance(value, RangeSweep):
        values = [value.start + k * value.step for k in range(max(0, int((value.stop - value.start) / value.step)))]
        if not values:
            raise SearchError(f"search.space.{key}={text} holds no value")
        if all(isinstance(v, int) for v in (value.start, value.step)):
            return IntDistribution(min(values), max(values), step=abs(value.step))
        return CategoricalDistribution(values)
    if isinstance(value, ChoiceSweep) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value.list):
        return CategoricalDistribution(list(value.list))
    raise wrong


def check_range(cfg: DictConfig, study: str, key: str, text: str, values: Any) -> None:
    """The values a range reaches at its ends (each of its choices) through the field checks of the setting it tunes
    (:func:`zoo.config.validate.check_setting`): a range the config refuses is one line before the first trial, not
    a trial that fails whenever one is drawn there."""
    from optuna.distributions import CategoricalDistribution

    from zoo.config.checks import ConfigError
    from zoo.config.validate import check_setting

    for value in values.choices if isinstance(values, CategoricalDistribution) else (values.low, values.high):
        try:
            check_setting(cfg, key, value)
        except ConfigError as error:
            raise SearchError(
                f"search.space.{key}={text} of study '{study}' reaches a value the setting refuses ({error}): "
                "give a range within what it takes"
            ) from None


def range_text(values: Any) -> str:
    """An Optuna distribution in the range grammar, one spelling for each: a study's space as its storage keeps it
    and the messages show it (``distribution(key, range_text(d)) == d``)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(values, CategoricalDistribution):
        return f"choice({', '.join(override_value(v) for v in values.choices)})"
    if isinstance(values, IntDistribution) and values.step != 1:
        return f"range({values.low}, {values.high + values.step}, {values.step})"
    text = f"interval({values.low!r}, {values.high!r})"
    text = f"int({text})" if isinstance(values, IntDistribution) else text
    return f"tag(log, {text})" if values.log else text


def as_overrides(params: Mapping[str, Any]) -> list[str]:
    """A trial's values as overrides (``optim.lr=0.0012``), in the space's order."""
    return [f"{key}={override_value(value)}" for key, value in params.items()]


def override_value(value: Any) -> str:
    """``value`` as Hydra's grammar reads it back: true/false/null, numbers, plain or quoted text."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    return value if re.fullmatch(r"[\w.\-/]+", value) else quoted(value)


def quoted(text: str) -> str:
    """``text`` as one quoted string of Hydra's grammar (a study name holds ``=`` and spaces)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def presets() -> list[str]:
    """The ``search`` presets zoo ships (conf/search)."""
    from importlib.resources import files

    return sorted(p.name[:-5] for p in files("zoo.conf").joinpath("search").iterdir() if p.name.endswith(".yaml"))
