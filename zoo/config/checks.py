"""Checks of config values, called from a config dataclass's ``__post_init__``.

OmegaConf rejects unknown fields, wrong types and (through :class:`Choice` fields)
unknown options while it composes the config; ranges are the dataclasses' own
business. Each helper reads one field and raises :class:`ConfigError` whose
message starts with the field, so :func:`zoo.config.validate.check_sections` can prefix
the section (``decode.beam_size=0 must be >= 1``). The same checks run when a
component is built from Python, since ``registry.build`` constructs its Config.
A field left at None (an Optional not set) passes every range check.

:func:`within_memory` bounds what settings cost: a width whose weights could never
be allocated on this machine is refused before any data loads, not after minutes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from typing import Any

from zoo.errors import ZooError


class ConfigError(ZooError, ValueError):
    """A config value outside its allowed range or set; the message names the field and what is allowed."""


class Choice(str, Enum):
    """Base of every fixed set of string options.

    Subclasses spell each member's value as its name (``rmsnorm = "rmsnorm"``), so a
    config or command line writes the same word as a plain string would; being a str,
    a member also equals that word (``cfg.norm == "rmsnorm"``) and prints as it.
    """

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Any, field: str) -> Choice:
        """``value`` (a member or its plain-string spelling) as a member; anything else names the choices."""
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"{field}={value!r} must be one of: {', '.join(m.value for m in cls)}") from None


def one_of(cfg: Any, field: str, choices: type[Choice]) -> None:
    """Store ``cfg.field`` as a member of ``choices`` (a plain string from Python code is converted)."""
    value = getattr(cfg, field)
    if value is not None:
        setattr(cfg, field, choices.parse(value, field))


def must_be(cfg: Any, field: str, ok: Callable[[Any], bool], allowed: str, hint: str = "") -> None:
    """``ok(cfg.field)``, the rule no other helper states: ``must_be(self, "kernel_size", lambda k: k % 2, "odd")``
    refuses 4 as ``kernel_size=4 must be odd``. The message names the field alone, as every helper's does; the
    section is added where the config is checked (``encoder.kernel_size=4 must be odd``)."""
    value = getattr(cfg, field)
    if value is not None and not ok(value):
        raise ConfigError(f"{field}={value!r} must be {allowed}" + (f"; {hint}" if hint else ""))


def at_least(cfg: Any, field: str, low: float, hint: str = "") -> None:
    """``cfg.field >= low``."""
    must_be(cfg, field, lambda v: v >= low, f">= {low}", hint)


def above(cfg: Any, field: str, low: float, hint: str = "") -> None:
    """``cfg.field > low``."""
    must_be(cfg, field, lambda v: v > low, f"> {low}", hint)


def positive(cfg: Any, field: str, hint: str = "") -> None:
    """``cfg.field > 0``."""
    above(cfg, field, 0, hint)


def between(cfg: Any, field: str, low: float, high: float, hint: str = "") -> None:
    """``low <= cfg.field <= high``."""
    must_be(cfg, field, lambda v: low <= v <= high, f"in [{low}, {high}]", hint)


def in_unit_interval(cfg: Any, field: str, hint: str = "") -> None:
    """``0 <= cfg.field < 1``: a dropout rate, a smoothing mass, a momentum."""
    must_be(cfg, field, lambda v: 0 <= v < 1, "in [0, 1)", hint)


def fraction(cfg: Any, field: str, hint: str = "") -> None:
    """``0 < cfg.field <= 1``: a density, a probability mass that must keep something."""
    must_be(cfg, field, lambda v: 0 < v <= 1, "in (0, 1]", hint)


def multiple_of(cfg: Any, field: str, divisor_field: str, hint: str = "") -> None:
    """``cfg.field`` is a multiple of ``cfg.divisor_field`` (check the divisor is >= 1 first)."""
    divisor = getattr(cfg, divisor_field)
    if divisor is not None:
        must_be(cfg, field, lambda v: v % divisor == 0, f"a multiple of {divisor_field}={divisor}", hint)


def no_wider_than(cfg: Any, field: str, width_field: str, hint: str = "") -> None:
    """``cfg.field <= cfg.width_field`` (e.g. a compression of vectors no wider than they are)."""
    width = getattr(cfg, width_field)
    if width is not None:
        must_be(cfg, field, lambda v: v <= width, f"<= {width_field}={width}", hint)


#: Bytes one trained float32 parameter takes: the weight, its gradient and AdamW's two moments.
TRAINED_BYTES = 16
#: Bytes one frozen float32 weight (a buffer: no gradient, no optimiser state) takes.
FROZEN_BYTES = 4


def physical_memory() -> int:
    """This machine's memory in bytes: no allocation of one process can exceed it."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def within_memory(cfg: Any, fields: tuple[str, ...], nbytes: float, what: str) -> None:
    """Refuse ``fields`` of ``cfg`` when ``what`` they make needs more than this machine's memory.

    Such a run could never allocate it: it would fail (or thrash, or be killed) after the data
    has loaded. ``nbytes`` is a lower bound the caller computes from ``fields``, which the message
    names, the first one first (so :func:`zoo.config.validate.check_sections` can prefix the section).
    Only the impossible is refused: a GPU has less memory than its machine, so a run may still
    not fit there.
    """
    limit = physical_memory()
    if nbytes > limit:
        settings = ", ".join(f"{field}={getattr(cfg, field)!r}" for field in fields)
        raise ConfigError(
            f"{settings} need at least {_gib(nbytes)} for {what}, more than this machine's memory "
            f"({_gib(limit)}); lower {'it' if len(fields) == 1 else 'them'}"
        )


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"
