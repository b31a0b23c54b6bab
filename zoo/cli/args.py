"""The argument parser of every ``zoo`` command except ``train`` (Hydra's)."""
from __future__ import annotations

import argparse
import typing


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other zoo error (argparse adds its usage)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"zoo: error: {message} (`{self.prog} --help` lists the options)\n")


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
