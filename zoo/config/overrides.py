"""Command-line overrides read, and Hydra's complaints about them said in one line with the fix.

Hydra's reports run over several lines, and some point the wrong way: for a mistyped key it
suggests ``+key=value``, which adds a key nothing reads. Here a report is folded into one line
(:func:`one_line`) and, where a name was mistyped, the closest valid spelling comes first: a
config key (``encoder.hiden_size``), a group's option (``encoder=gruu``) or a field's value
(``decode.strategy=beem``); a group's choice that replaces a recipe's (``encoder=gru model=transformer``)
is answered with the two ways out.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

from zoo.config.suggest import close_matches
from zoo.errors import ZooError
from zoo.registry.kinds import GROUP_KINDS, OPTIONAL_GROUPS

#: Hydra's grammar for overrides, for a line that cannot be read.
GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"
#: Where every component's fields and the run's options are shown.
SHOWN_BY_LIST = "zoo list shows the components and their fields"
#: Where a search's ranges live (zoo.search.space): a range for a setting it does not tune yet is added with ``+``.
SEARCH_SPACE = "search.space."
#: A component with at most this many fields has them listed in the message about a mistyped one.
FEW_FIELDS = 8


class CompositionError(ZooError, ValueError):
    """The overrides do not compose into a config (a mistyped key, a value of the wrong type or choice)."""


def parse_overrides(overrides: list[str]) -> list[Any]:
    """Hydra's parsed ``overrides``; one it cannot read is a :class:`CompositionError` saying how to write it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    parsed = []
    for override in overrides:
        try:
            parsed.extend(parser.parse_overrides([override]))
        except OverrideParseException as error:
            raise CompositionError(unreadable(override, error)) from None
    return parsed


def key_and_value(override: str) -> tuple[str, str]:
    """An override read as text, before Hydra parses it: the key or group it sets (``+``/``~`` dropped) and its value
    as written (a sweep's choices comma-separated): ``+model=a,b`` -> ``("model", "a,b")``."""
    key, _, value = override.lstrip("+~").partition("=")
    return key, value


def override_key(override: str) -> str:
    """The key or group an override sets (``+encoder.hidden_size=8`` -> ``encoder.hidden_size``)."""
    return parse_overrides([override])[0].key_or_group


def unreadable(override: str, error: Exception) -> str:
    """Why Hydra cannot read ``override``, and how to write it."""
    if "=" not in override and not override.startswith("~"):
        return (
            f"{override} is not an override: write KEY=VALUE (e.g. {override}=...), GROUP=OPTION, "
            "or ~KEY to remove a key"
        )
    reasons = [
        line.strip()
        for line in str(error).splitlines()
        if line.strip() and not line.startswith(("Error parsing override", "See https"))
    ]
    return (
        f"{override} cannot be read ({'; '.join(reasons)}); quote a value that holds brackets, commas or "
        f"spaces as text ('key=\"a, b\"'), see {GRAMMAR}"
    )


def one_line(error: BaseException) -> str:
    """Hydra's and OmegaConf's multi-line messages (and their causes) as one line, without the bookkeeping
    and without Hydra's advice to append a mistyped key with ``+``."""
    parts: list[str] = []
    while error is not None:
        for line in str(error).splitlines():
            line = line.strip().rstrip(".:")
            if line.startswith("Config search path"):
                break
            if line and not line.startswith(("full_key", "object_type", "reference_type", "provider=", "To append")):
                parts.append(line.removeprefix("In 'zoo_schema': ").removeprefix("In 'hydra/config': "))
        error = error.__cause__
    return "; ".join(dict.fromkeys(parts))


def explain(error: BaseException, overrides: list[str]) -> str:
    """``error`` (raised composing ``overrides``) as one line; a mistyped name comes with its closest valid one."""
    detail = one_line(error)
    return (
        unknown_option(error, detail)
        or replaced_choice(error, detail, overrides)
        or unknown_key(detail, overrides)
        or unknown_value(detail)
        or added_choice(detail, overrides)
        or f"{detail} ({SHOWN_BY_LIST})"
    )


def unknown_option(error: BaseException, detail: str) -> str | None:
    """``encoder=gruu``: Hydra lists the group's options; the closest comes first."""
    missing = re.search(r"Could not find '(?P<group>[\w/]+)/(?P<option>[^']*)'", detail)
    if missing is None:
        return None
    lines = str(error).splitlines()
    listed = next((k for k, line in enumerate(lines) if line.startswith("Available options in")), len(lines))
    options = [line.strip() for line in lines[listed + 1 :] if line.startswith(("\t", " "))]
    group, option = missing["group"], missing["option"]
    close = close_matches(option, options)
    hint = f"did you mean {group}={close[0]}? " if close else ""
    return f"{group}={option}: {hint}{detail} (zoo train --help lists every group's options)"


def replaced_choice(error: BaseException, detail: str, overrides: list[str]) -> str | None:
    """``encoder=gru model=transformer``: the recipe chooses its own encoder and sets that one's fields, and a choice
    of the group on the command line replaces the recipe's wherever it stands, leaving fields it lacks."""
    clash = re.search(r"In '(?P<preset>[\w/]+)': ConfigKeyError raised while composing config; Key '[^']+' not", detail)
    field = re.search(r"full_key: (?P<key>\S+)", str(error))
    if clash is None or field is None:
        return None
    group = field["key"].split(".")[0]
    given = next((o for o in overrides if key_and_value(o)[0] == group), None)
    if given is None:
        return None
    preset, own = clash["preset"].replace("/", "=", 1), preset_choice(clash["preset"], group)
    replaced = f"{group}={own}, which {preset} chooses" if own else f"the {group} {preset} chooses"
    return (
        f"{given} replaces {replaced}, and {key_and_value(given)[1]} has no {field['key']} for {preset} to set: "
        f"drop {given} to train {preset} as it is, or drop {preset} and choose each component yourself "
        f"({SHOWN_BY_LIST})"
    )


def preset_choice(preset: str, group: str) -> str | None:
    """The option a zoo preset (``model/transformer``) chooses for ``group`` in its defaults list, if it names one."""
    from importlib.resources import files

    import yaml

    path = files("zoo.conf").joinpath(f"{preset}.yaml")
    if not path.is_file():
        return None
    for entry in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("defaults") or []:
        if isinstance(entry, dict):
            for key, option in entry.items():
                if key.removeprefix("override").strip().strip("/") == group:
                    return str(option)
    return None


def unknown_key(detail: str, overrides: list[str]) -> str | None:
    """``encoder.hiden_size=3``: the keys beside it in the config, the closest first; Hydra's advice to append
    it with ``+`` is left out (the key would then be refused, as nothing reads it)."""
    failed = re.search(r"Could not override '(?P<key>[^']+)'", detail)
    if failed is None or not re.search(r"Key '[^']+' (not in '[^']+'|is not in struct)", detail):
        return None
    key = failed["key"]
    given = next((o for o in overrides if key_and_value(o)[0] == key), key)
    parent, _, name = key.rpartition(".")
    rest = composed([o for o in overrides if o is not given])
    if rest is None:
        return None
    node = OmegaConf.select(rest, parent, default=None) if parent else rest
    if node is None and any(parent in kind.groups for kind in GROUP_KINDS):  # a kind's group with no choice made
        return f"{given}: nothing is chosen for {parent} here, so it has no {name}; choose one first ({parent}=NAME)"
    if node is None and key.startswith(SEARCH_SPACE):  # a range for a setting the space does not tune yet
        return f"{given}: {parent} holds no ranges; add one to the space with +{given.lstrip('+')}"
    if node is None:
        close = close_matches(parent, [str(k) for k in rest.keys()]) if "." not in parent else []
        hint = f"did you mean {close[0]}.{name}={given.partition('=')[2]}? " if close else ""
        return f"{given}: {hint}the config has no {parent} (`zoo train --cfg job` shows its keys)"
    if not isinstance(node, DictConfig):
        return None
    fields = [str(k) for k in node.keys() if k != "name"]
    close = close_matches(name, fields)
    value = given.partition("=")[2]
    hint = f"did you mean {parent + '.' if parent else ''}{close[0]}={value}? " if close else ""
    if "name" in node:
        where = fields_shown(OPTIONAL_GROUPS.get(parent, parent), fields)
    else:
        where = f"`zoo train --cfg {'hydra' if key.startswith('hydra.') else 'job'}` shows the options"
    return f"{given}: {hint}{detail.split('; ', 1)[-1]} ({where})"


def fields_shown(kind: str, fields: list[str]) -> str:
    """Where a component's ``fields`` are shown: by ``zoo list KIND``, and named here when there are few."""
    listed = f"its fields: {', '.join(sorted(fields))}; " if len(fields) <= FEW_FIELDS else ""
    return f"{listed}`zoo list {kind}` shows them"


def composed(overrides: list[str]) -> DictConfig | None:
    """The config ``overrides`` compose to, Hydra's own settings included; None where they do not compose."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module("zoo.conf", version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException):
        return None


def unknown_value(detail: str) -> str | None:
    """``decode.strategy=beem``: OmegaConf names the allowed values; the closest comes first."""
    invalid = re.search(
        r"Error merging override (?P<key>[^=;\s]+)=(?P<value>[^;]*); Invalid value '[^']*', "
        r"expected one of \[(?P<choices>[^\]]*)\]",
        detail,
    )
    if invalid is None:
        return None
    key, value = invalid["key"], invalid["value"]
    close = close_matches(value, invalid["choices"].split(", "))
    hint = f"did you mean {key}={close[0]}? " if close else ""
    return f"{key}={value}: {hint}{detail.split('; ', 1)[-1]}"


def added_choice(detail: str, overrides: list[str]) -> str | None:
    """``+attention=cosine``: the group is in the config already, and ``attention=cosine`` chooses its option
    (Hydra's advice to write ``override attention: cosine`` is for a config file)."""
    twice = re.search(r"Multiple values for (?P<group>\S+?)\.? To override", detail)
    if twice is None:
        return None
    group = twice["group"]
    given = next((o for o in overrides if o.startswith(f"+{group}=")), f"+{group}=NAME")
    return f"{given}: {group} is a config group the config has already; choose its option with {given[1:]} (without +)"
