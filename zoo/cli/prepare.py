"""``zoo prepare [OVERRIDES...]``: tokenise a run's data once into memory-mapped files (:mod:`zoo.data.prepare`).

The overrides are those of ``zoo train``: the same dataset, task and tokenizer
settings give the same prepared folder, which every later run of them maps
instead of reading and tokenising the corpus again. ``zoo train`` prepares what
is missing by itself; this command does it ahead (before a sweep, on a login
node) and says where the files are.
"""

from __future__ import annotations

import time
from pathlib import Path

from zoo.cli.args import CommandParser, train_config
from zoo.errors import ZooError


class PrepareCommandError(ZooError, ValueError):
    """The command cannot prepare the data as asked."""


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo prepare", description=description)
    parser.add_argument("overrides", nargs="*", help="config overrides as for zoo train, e.g. experiment=multi30k")
    opts = parser.parse_args(args)
    _check_overrides(opts.overrides)
    cfg = train_config(opts.overrides)

    from zoo.contracts import SPLITS
    from zoo.data.datamodule import build_task
    from zoo.data.prepare import cache_root, preparable, prepared_data

    task = build_task(cfg)
    if not preparable(task):
        raise PrepareCommandError(
            f"task '{cfg.task.name}' does not read id sequences, so its data is read as it is; "
            "image features are prepared with zoo features"
        )
    started = time.perf_counter()
    prepared = prepared_data(cfg)
    splits = prepared.manifest["splits"]
    counts = ", ".join(f"{split} {splits[split]['items']:,} items" for split in SPLITS)
    size = sum(entry["bytes"] for entry in prepared.manifest["files"].values()) / 1e6
    how = f"prepared in {time.perf_counter() - started:.0f} s" if prepared.made_now else "already prepared"
    print(
        f"{cfg.dataset.name}: {counts}, {size:,.1f} MB, {how}:\n  {prepared.folder}\n"
        "runs with the same dataset, task and tokenizer settings read it; "
        f"remove it (or all of {cache_root(cfg)}) to free the space"
    )


def _check_overrides(overrides: list[str]) -> None:
    """A path given where overrides go (``zoo prepare RUN_DIR``) is one line saying what the command takes."""
    for given in overrides:
        if "=" in given or given.startswith("~"):
            continue
        takes = "zoo prepare takes the config overrides of zoo train, e.g. zoo prepare experiment=multi30k"
        if (Path(given) / ".hydra" / "overrides.yaml").is_file():
            raise PrepareCommandError(
                f"{given} is a run directory: {takes}; the run's own are in {Path(given) / '.hydra' / 'overrides.yaml'}"
            )
        raise PrepareCommandError(f"{given} is not an override (KEY=VALUE or GROUP=OPTION): {takes}")
