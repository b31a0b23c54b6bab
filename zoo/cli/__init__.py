"""The ``zoo`` command: train (Hydra), list, translate, attention."""
from __future__ import annotations

import argparse
import os
import sys

from zoo.errors import ZooError

COMMANDS = {
    "train": "train a model; Hydra overrides follow, e.g. `zoo train encoder=lstm attention=cosine` (--help for groups)",
    "list": "list registered components with their config fields",
    "translate": "translate sentences (arguments or stdin lines) with a run's best checkpoint",
    "attention": "write attention heatmaps (PNG) for one sentence into the run directory",
    "compare": "leaderboard of finished runs (run or sweep directories) as a Markdown table",
}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        usage = "usage: zoo {" + ",".join(COMMANDS) + "} ...\n\n"
        usage += "\n".join(f"  {name:<10} {text}" for name, text in COMMANDS.items())
        print(usage, file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        if argv and argv[0] not in ("-h", "--help"):
            print(f"zoo: error: unknown command '{argv[0]}'", file=sys.stderr)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    command, rest = argv[0], argv[1:]
    try:
        COMMAND_FUNCTIONS[command](rest)
    except ZooError as error:
        print(f"zoo: error: {error}", file=sys.stderr)
        raise SystemExit(1)


def plugin_dirs_from_overrides(overrides: list[str]) -> list[str]:
    """The ``plugin_dirs=[...]`` override, read before Hydra composes anything (plugins must register first)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [o for o in overrides if o.lstrip("+~").startswith("plugin_dirs=")]
    dirs: list[str] = []
    for override in OverridesParser.create().parse_overrides(candidates):
        value = override.value()
        dirs.extend(value if isinstance(value, list) else [value])
    return [str(d) for d in dirs]


def cmd_train(overrides: list[str]) -> None:
    from zoo.registry.discovery import discover

    discover(plugin_dirs_from_overrides(overrides))
    import zoo.config.schema  # noqa: F401  (stores the schema)
    from zoo.training.run import hydra_entry

    sys.argv = ["zoo train", *overrides]
    hydra_entry()


def cmd_list(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="zoo list", description=COMMANDS["list"])
    parser.add_argument("kind", nargs="?", help="only this kind (encoder, decoder, attention, posenc, ...)")
    parser.add_argument("--filter", default="", help="only names containing this text")
    opts = parser.parse_args(args)
    from zoo import registry
    from zoo.registry.discovery import discover

    discover()
    if opts.kind and opts.kind not in registry.KINDS:
        raise registry.RegistryError(f"unknown kind '{opts.kind}'; kinds are: {', '.join(registry.KINDS)}")
    for kind in registry.KINDS:
        if opts.kind and kind != opts.kind:
            continue
        shown = [e for e in registry.entries(kind) if opts.filter in e.name]
        if not shown:
            continue
        print(f"{kind}:")
        for entry in shown:
            print(f"  {entry.name:<12} {entry.description}  [{entry.module}]")
            for field, type_name, default in entry.fields():
                print(f"      {field}: {type_name} = {default!r}")
        print()


def _read_sentences(sentences: list[str]) -> list[str]:
    if sentences:
        return sentences
    return [line.rstrip("\n") for line in sys.stdin if line.strip()]


def cmd_translate(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="zoo translate", description=COMMANDS["translate"])
    parser.add_argument("run_dir")
    parser.add_argument("sentences", nargs="*", help="sentences to translate; none: read lines from stdin")
    parser.add_argument("--decode", choices=("greedy", "beam", "sample"), help="decoding strategy (default: the run's)")
    parser.add_argument("--beam-size", type=int)
    opts = parser.parse_args(args)
    import zoo

    translator = zoo.load(opts.run_dir)
    overrides = {k: v for k, v in (("strategy", opts.decode), ("beam_size", opts.beam_size)) if v is not None}
    for line in translator.translate(_read_sentences(opts.sentences), **overrides):
        print(line)


def cmd_attention(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="zoo attention", description=COMMANDS["attention"])
    parser.add_argument("run_dir")
    parser.add_argument("sentence")
    opts = parser.parse_args(args)
    import zoo

    paths = zoo.load(opts.run_dir).attention_maps(opts.sentence)
    if not paths:
        print("this model has no attention to draw (e.g. attention=none with an RNN encoder)")
        return
    print(f"wrote {len(paths)} attention maps to {os.path.dirname(paths[0])}")


def cmd_compare(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="zoo compare", description=COMMANDS["compare"])
    parser.add_argument("paths", nargs="+", help="run directories or folders holding them (e.g. a multirun sweep)")
    opts = parser.parse_args(args)
    from zoo.report.compare import find_summaries, leaderboard

    print(leaderboard(find_summaries(opts.paths)))


COMMAND_FUNCTIONS = {
    "train": cmd_train,
    "list": cmd_list,
    "translate": cmd_translate,
    "attention": cmd_attention,
    "compare": cmd_compare,
}
