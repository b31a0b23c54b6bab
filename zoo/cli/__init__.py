"""The ``zoo`` command: train (Hydra), list, predict, attention, average, features, compare, dashboard, and the
command each registered task declares for its runs (``translate``, ``caption``:
:class:`zoo.contracts.PredictCommand`)."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import sys
from pathlib import Path

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
    "check": ("check:run", "run the contract checks on components (a plugin of yours, installed or in a folder)"),
    "predict": (
        "predict:predict",
        "use a run on inputs (arguments, or stdin: one output line per input line) as its task reads them",
    ),
    "attention": (
        "predict:attention",
        "attention pictures (PNG) of one sentence or image; --html: an interactive explorer",
    ),
    "average": (
        "average:run",
        "average a run's kept weight snapshots (trainer.average_last=N) or .ckpt files into one checkpoint",
    ),
    "prepare": (
        "prepare:run",
        "tokenise a run's data once into memory-mapped files that every run of it reads (zoo train does it too)",
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


def all_commands(run_dir: str | None = None) -> dict[str, tuple[str, str]]:
    """zoo's own commands with the tasks' after ``predict``: those of the registry's cached index
    (:mod:`zoo.registry.index`), so no plugin is imported; with ``run_dir`` (a run directory) those of the plugins
    imported with the run's own plugin folder, which the run alone may record."""
    from zoo.registry import index

    if run_dir is not None and os.path.isfile(os.path.join(run_dir, "config.yaml")):
        from zoo.config.files import load_yaml
        from zoo.run.provenance import load_run_plugins

        load_run_plugins(Path(run_dir), load_yaml(Path(run_dir) / "config.yaml"))  # every plugin, and the run's
        declared = index.declared_commands()
    else:
        declared = index.task_commands()
    tasks = {name: ("predict:use", summary) for name, summary in declared.items() if name not in COMMANDS}
    names = list(COMMANDS)
    cut = names.index("predict") + 1
    return {name: COMMANDS[name] for name in names[:cut]} | tasks | {n: COMMANDS[n] for n in names[cut:]}


def usage() -> str:
    commands = all_commands()
    text = "usage: zoo [--verbose] {" + ",".join(commands) + "} ...  |  zoo --version\n\n"
    text += "\n".join(f"  {name:<10} {text}" for name, (_, text) in commands.items())
    return text + "\n\n  --verbose  print the traceback behind an error (also ZOO_VERBOSE=1 or HYDRA_FULL_ERROR=1)"


#: zoo's own flags, which stand before the command.
FLAGS = ("--help", "--verbose", "--version")


def unknown_command(name: str, commands: dict[str, tuple[str, str]]) -> str:
    """The line for a first argument that is neither a command nor one of zoo's flags, with the closest."""
    known = FLAGS if name.startswith("-") else commands
    return with_hint(
        f"unknown {'option' if name.startswith('-') else 'command'} '{name}'",
        did_you_mean(name, known),
        f"commands: {', '.join(commands)}; options: {', '.join(FLAGS)} (zoo --help describes them)",
    )


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-V", "--version"):
        print(f"zoo {version()}")
        raise SystemExit(0)
    if argv and argv[0] in ("-v", "--verbose"):
        os.environ[VERBOSE_VARIABLE] = "1"  # inherited by DDP ranks and sweep workers
        argv = argv[1:]
    try:  # the tasks' commands are known once the plugins are imported, and a broken plugin is one line
        if not argv or argv[0] in ("-h", "--help"):
            print(usage(), file=sys.stdout if argv else sys.stderr)
            raise SystemExit(0 if argv else 2)
        command, rest = argv[0], argv[1:]
        commands = COMMANDS if command in COMMANDS else all_commands(rest[0] if rest else None)
    except ZooError as error:
        report(error)
        raise SystemExit(1) from None
    if command not in commands:
        print(f"zoo: error: {unknown_command(command, commands)}", file=sys.stderr)
        raise SystemExit(2)
    target, description = commands[command]
    module_name, function_name = target.split(":")
    function = getattr(importlib.import_module(f"zoo.cli.{module_name}"), function_name)
    if command not in COMMANDS:  # a task's command: the same code for every task, told its name
        function = functools.partial(function, command)
    try:
        with stopped_by_signals(command):
            function(rest, description)
    except CommandInterrupted as stop:
        sys.stdout.flush()
        print(f"zoo: interrupted: {stop}", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None
    except ZooError as error:
        report(error)
        raise SystemExit(1) from None
    except BrokenPipeError:  # the reader went away (`zoo translate RUN < big.txt | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's last flush must not fail again
        raise SystemExit(1) from None
