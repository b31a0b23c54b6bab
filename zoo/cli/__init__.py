"""The ``zoo`` command: train (Hydra), list, translate, caption, attention, features, compare, dashboard."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys

from zoo.cli.signals import CommandInterrupted, stopped_by_signals
from zoo.config.suggest import did_you_mean, with_hint
from zoo.errors import VERBOSE_VARIABLE, ZooError, report

# command -> (module:function under zoo.cli, one-line description)
COMMANDS = {
    "train": (
        "train:run",
        "train a model; Hydra overrides follow, e.g. `zoo train encoder=lstm attention=cosine` (--help for groups)",
    ),
    "list": ("catalogue:run", "list registered components with their config fields"),
    "translate": (
        "predict:translate",
        "translate sentences (arguments, or stdin: one output line per input line) with a run's checkpoint",
    ),
    "caption": (
        "predict:caption",
        "caption image files (one FILE<TAB>CAPTION line each) with a captioning run's checkpoint",
    ),
    "attention": (
        "predict:attention",
        "attention pictures (PNG) of one sentence or image; --html: an interactive explorer",
    ),
    "features": (
        "features:run",
        "run an image backbone (frontend=pretrained) over a dataset once; train on it with frontend=features",
    ),
    "compare": ("compare:run", "leaderboard of runs (run or sweep directories): mean ± std over seeds, costs"),
    "dashboard": ("dashboard:run", "serve the comparison report on this machine, redrawn as runs progress"),
}


def version() -> str:
    """The installed package's version (its metadata), or the source tree's where zoo is not installed."""
    try:
        return importlib.metadata.version("zoo")
    except importlib.metadata.PackageNotFoundError:
        from zoo import __version__

        return __version__


def usage() -> str:
    text = "usage: zoo [--verbose] {" + ",".join(COMMANDS) + "} ...  |  zoo --version\n\n"
    text += "\n".join(f"  {name:<10} {text}" for name, (_, text) in COMMANDS.items())
    return text + "\n\n  --verbose  print the traceback behind an error (also ZOO_VERBOSE=1 or HYDRA_FULL_ERROR=1)"


#: zoo's own flags, which stand before the command.
FLAGS = ("--help", "--verbose", "--version")


def unknown_command(name: str) -> str:
    """The line for a first argument that is neither a command nor one of zoo's flags, with the closest."""
    known = FLAGS if name.startswith("-") else COMMANDS
    return with_hint(
        f"unknown {'option' if name.startswith('-') else 'command'} '{name}'",
        did_you_mean(name, known),
        f"commands: {', '.join(COMMANDS)}; options: {', '.join(FLAGS)} (zoo --help describes them)",
    )


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-V", "--version"):
        print(f"zoo {version()}")
        raise SystemExit(0)
    if argv and argv[0] in ("-v", "--verbose"):
        os.environ[VERBOSE_VARIABLE] = "1"  # inherited by DDP ranks and sweep workers
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        raise SystemExit(0 if argv else 2)
    if argv[0] not in COMMANDS:
        print(f"zoo: error: {unknown_command(argv[0])}", file=sys.stderr)
        raise SystemExit(2)
    command, rest = argv[0], argv[1:]
    target, description = COMMANDS[command]
    module_name, function_name = target.split(":")
    function = getattr(importlib.import_module(f"zoo.cli.{module_name}"), function_name)
    try:
        with stopped_by_signals(command):
            function(rest, description)
    except CommandInterrupted as stop:
        sys.stdout.flush()
        print(f"zoo: interrupted: {stop}", file=sys.stderr)
        raise SystemExit(128 + stop.signum)
    except ZooError as error:
        report(error)
        raise SystemExit(1)
    except BrokenPipeError:  # the reader went away (`zoo translate RUN < big.txt | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's last flush must not fail again
        raise SystemExit(1)
