"""The argument parser of every ``zoo`` command except ``train`` (Hydra's)."""

from __future__ import annotations

import argparse
import re
import typing

from zoo.config.suggest import did_you_mean, with_hint


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other zoo error (argparse adds its usage);
    a mistyped option or choice is answered with the closest one."""

    def error(self, message: str) -> typing.NoReturn:
        message = with_hint(message, self.suggestion(message))
        self.exit(2, f"zoo: error: {message} (`{self.prog} --help` lists the options)\n")

    def suggestion(self, message: str) -> str:
        """``did you mean ...?`` for argparse's complaint about an unknown option or an invalid choice."""
        invalid = re.search(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)", message)
        if invalid is not None:
            return did_you_mean(invalid["given"], re.findall(r"'([^']*)'", invalid["choices"]))
        unrecognized = message.removeprefix("unrecognized arguments: ") if message.startswith("unrecognized") else ""
        flags = [word.split("=")[0] for word in unrecognized.split() if word.startswith("-")]
        return did_you_mean(flags[0], self._option_string_actions) if flags else ""


def integer(text: str, what: str = "int value") -> int:
    """``int(text)``, or argparse's one-line error naming ``what`` was expected."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {what}: {text!r}") from None


def positive_int(text: str) -> int:
    """An argument type: an integer of at least 1."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def port_number(text: str) -> int:
    """An argument type: a TCP port, 0 (any free one) to 65535."""
    value = integer(text, "port")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not in 0-65535 (0: any free port)")
    return value


def train_config(overrides: list[str]):
    """The config ``zoo train OVERRIDES`` would run, checked as it checks it (plugins discovered first, renamed
    options refused with their new names, values validated): for commands that work on a run's data."""
    import zoo.config.schema  # noqa: F401  (stores the schema)
    from zoo.config.compose import compose_config, plugin_dirs_from_overrides
    from zoo.config.presets import check_presets_not_repeated
    from zoo.config.renamed import check_renamed
    from zoo.registry.discovery import discover
    from zoo.training.preflight import validate

    check_renamed(overrides)
    check_presets_not_repeated(overrides)
    discover(plugin_dirs_from_overrides(overrides))
    cfg = compose_config(overrides)
    validate(cfg)
    return cfg
