"""Check a composed config's sections: every key one the schema has, every value in range.

Composition has already rejected unknown fields, wrong types and unknown choices.
What is left are ranges, which live in each section's ``__post_init__``: OmegaConf
never calls it, so this builds every section's dataclass once from the composed
values and reports the first bad one as ``section.field=value must be ...``.

A check that needs another section (a learned position table must be as long as the
sequences ``data`` lets through) is the section's own business too, without the core
naming any plugin: once every section has passed its own checks, a section's dataclass
that defines ``check_composed(self, cfg)`` is handed the whole composed config, and a
:class:`ConfigError` it raises is reported like a range, prefixed with its section.

What needs more than the config to check (building the metrics, the task, the model; reading ``init_from``) is the
job's: :func:`zoo.training.preflight.validate` runs these checks first.
"""

from __future__ import annotations

import copy
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from zoo.config.checks import ConfigError, at_least, between
from zoo.config.schema import PLAIN_SECTIONS, check_keys
from zoo.errors import first_line
from zoo.registry import GROUP_KINDS
from zoo.registry.index import config_class


def check_sections(cfg: DictConfig) -> None:
    """Raise a one-line :class:`ConfigError` naming the section and field when an option is out of range."""
    check_keys(cfg)  # a key added with +key=value: the schema would accept it and nothing would read it
    built = {
        section: _build(section, config_cls, _values(cfg[section])) for section, config_cls in PLAIN_SECTIONS.items()
    }
    for kind in GROUP_KINDS:
        for group in kind.groups:
            if cfg.get(group) is not None:  # an optional group left null means the kind's own choice
                values = _values(cfg[group])
                built[group] = _build(group, config_class(kind.name, values.pop("name")), values)
    for section, config in built.items():
        _check_composed(section, config, cfg)
    refuse_fp16_on_cpu(cfg.trainer)
    at_least(cfg, "samples", 0)
    at_least(cfg, "latency_items", 0, "0 does not time decoding")
    between(cfg, "seed", 0, 2**32 - 1)


def check_setting(cfg: DictConfig, key: str, value: Any) -> None:
    """The type and field checks of ``key``'s section with ``key`` at ``value``, the rest as composed: a search's
    range at its ends, before the first trial. A top-level setting and a group's choice are left to the trials, as
    is a section whose composed values fail already (every trial fails then, and the search records it)."""
    section, _, field = key.partition(".")
    kind = next((kind for kind in GROUP_KINDS if section in kind.groups), None)
    if not field or (section not in PLAIN_SECTIONS and (kind is None or cfg.get(section) is None)):
        return

    def build(values: dict[str, Any]) -> None:
        if section in PLAIN_SECTIONS:
            _build(section, PLAIN_SECTIONS[section], values)
        else:
            _build(section, config_class(kind.name, values.pop("name")), values)

    try:
        build(_values(cfg[section]))
    except ConfigError:
        return
    changed = copy.deepcopy(cfg[section])  # typed as the schema types it, so a value of another type is refused
    try:
        OmegaConf.update(changed, field, value)
    except OmegaConfBaseException as error:
        raise ConfigError(f"{key}={value!r}: {first_line(error)}") from None
    build(_values(changed))


def refuse_fp16_on_cpu(trainer: DictConfig) -> None:
    """Refuse fp16 (``16``, ``16-mixed``, ``16-true``) on the CPU, where it is not what would run: Lightning
    quietly swaps ``16-mixed`` for bf16-mixed there. bf16-mixed (fp32's range) trains on the CPU and on a GPU."""
    precision = str(trainer.precision)
    if trainer.accelerator == "cpu" and precision.startswith("16"):
        raise ConfigError(
            f"trainer.precision={precision} (fp16) needs a GPU; on the CPU (trainer.accelerator=cpu) "
            "use bf16-mixed or 32-true, or train on a GPU (trainer=gpu)"
        )


def _values(section: DictConfig) -> dict[str, Any]:
    return OmegaConf.to_container(section, resolve=True)


def _build(section: str, config_cls: type, values: dict[str, Any]) -> Any:
    """Construct ``config_cls`` (running its ``__post_init__`` checks); an error names the section."""
    try:
        return config_cls(**values)
    except ConfigError as error:
        raise ConfigError(in_section(section, error)) from None


def in_section(section: str, error: ConfigError) -> str:
    """The message of a section's check with the section before its key, once: a plugin's own message that already
    names it (``encoder.kernel_size=4 ...``) is left as it is."""
    message = str(error)
    return message if message.startswith(f"{section}.") else f"{section}.{message}"


def _check_composed(section: str, config: Any, cfg: DictConfig) -> None:
    """Run the section's checks against the rest of the config, if it has any; an error names the section."""
    check = getattr(config, "check_composed", None)
    if check is None:
        return
    try:
        check(cfg)
    except ConfigError as error:
        raise ConfigError(in_section(section, error)) from None
