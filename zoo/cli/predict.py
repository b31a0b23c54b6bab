"""``zoo predict``, each task's own command (``zoo translate``, ``zoo caption``) and ``zoo attention``: use a
finished run.

A task declares its command (:class:`~zoo.contracts.PredictCommand`) and how it reads
one input from a line of text (:meth:`~zoo.contracts.Task.read_input`), so the
commands are the same code for every task. They are made to be scripted: one output
line per input, in order (a blank input line gives a blank output line), options
anywhere on the line, and every field of :class:`~zoo.config.sections.DecodeConfig`
as an option (``--beam-size``, ``--top-p``, ...), checked by the config's own checks.

An input that cannot be used does not cost the others: its output line is empty,
one ``zoo: error:`` line on stderr names it (``stdin line 3: the text is not valid
UTF-8 (byte 0xff at column 5); ...``), the other inputs are still used, and the
command exits 1 at the end. Refused this way: text that is not UTF-8 (stdin is read
as UTF-8 whatever the locale), a sentence longer than the run accepts (see
:data:`zoo.inference.inputs.LENGTH_FACTOR`), an image file given to ``translate``,
an image that is missing, a folder, too large, truncated or no image at all. An
empty stdin is an error of its own: a script whose input went missing learns it.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import sys
import types
import typing
from collections.abc import Iterable, Iterator
from enum import Enum
from itertools import islice
from typing import Any

from zoo.cli.args import CommandParser, positive_int
from zoo.errors import report

# The spellings of decoding fields whose option name is not simply the field's (strategy was --decode first).
DECODE_FLAGS = {"strategy": ("--decode", "--strategy")}
_DEST = "decode."  # namespace prefix of the decoding options, apart from the command's own


def _parser(command: str, description: str) -> CommandParser:
    parser = CommandParser(prog=f"zoo {command}", description=description)
    parser.add_argument("run_dir", help="a run directory (the folder `zoo train` printed)")
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """--checkpoint, --threads, --batch-size and one option per decoding field."""
    parser.add_argument(
        "--checkpoint",
        default="tested",
        metavar="tested|best|last|PATH",
        help="the weights to use: tested (default: those the run's test scored, checkpoints/average.ckpt where it "
        "averaged checkpoints and validation preferred the average, else best), best (checkpoints/best.ckpt), "
        "last (checkpoints/last.ckpt) or a .ckpt file",
    )
    parser.add_argument(
        "--threads", type=positive_int, metavar="N", help="torch CPU threads (default: torch's, one per core)"
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=64,
        metavar="N",
        help="inputs decoded together (default: 64); 1 answers each stdin line as soon as it arrives",
    )
    _add_decode_options(
        parser.add_argument_group("decoding", "each one overrides the run's own decode config (its decode.* fields)")
    )


def _add_decode_options(group: Any) -> None:
    """One option per field of DecodeConfig: its type, its choices, its comment as help."""
    from zoo.config.sections import DecodeConfig
    from zoo.registry.entries import _field_comment

    hints = typing.get_type_hints(DecodeConfig)
    for field in dataclasses.fields(DecodeConfig):
        flags = DECODE_FLAGS.get(field.name, ("--" + field.name.replace("_", "-"),))
        kind, optional = _unwrap_optional(hints[field.name])
        if field.default is not dataclasses.MISSING:
            default = field.default.value if isinstance(field.default, Enum) else field.default
        else:
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else "none"
        comment = _field_comment(DecodeConfig, field.name)
        helptext = (f"{comment}; " if comment else "") + f"config default: {default}"
        kwargs: dict[str, Any] = {
            "dest": _DEST + field.name,
            "default": argparse.SUPPRESS,
            "help": helptext.replace("%", "%%"),
        }
        if isinstance(kind, type) and issubclass(kind, Enum):
            words = [member.value for member in kind] + (["none"] if optional else [])
            kwargs.update(type=_choice_parser(words, optional), metavar="|".join(words))
        elif kind is bool:
            kwargs.update(action=argparse.BooleanOptionalAction)
        else:
            kwargs.update(
                type=_value_parser(kind, optional), metavar={int: "N", float: "X"}.get(kind, field.name.upper())
            )
        group.add_argument(*flags, **kwargs)


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    """(X, True) for ``Optional[X]``; (tp, False) otherwise."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        return (rest[0] if len(rest) == 1 else tp), True
    return tp, False


def _choice_parser(words: list[str], optional: bool):
    """A converter that accepts one of ``words`` (``none`` as None for an Optional field)."""

    def choice(text: str) -> str | None:
        if text not in words:
            raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(words)})")
        return None if optional and text == "none" else text

    return choice


def _value_parser(kind: Any, optional: bool):
    """A converter from the command line's text to ``kind`` (YAML for anything but int, float and str)."""

    def parse(text: str) -> Any:
        if optional and text.lower() in ("none", "null"):
            return None
        if kind in (int, float, str):
            return kind(text)
        import yaml

        return yaml.safe_load(text)

    parse.__name__ = getattr(kind, "__name__", "value")  # argparse names it in "invalid int value: 'x'"
    return parse


def _decode_overrides(opts: argparse.Namespace) -> dict[str, Any]:
    """The decoding fields given on the command line (the Enum ones still as plain words)."""
    return {dest[len(_DEST) :]: value for dest, value in vars(opts).items() if dest.startswith(_DEST)}


def _load(opts: argparse.Namespace):
    """The run's Predictor (threads set first) and its decode config with the command line's overrides, checked."""
    if opts.threads is not None:
        import torch

        torch.set_num_threads(opts.threads)
    from zoo.config.checks import ConfigError
    from zoo.inference import Predictor

    checkpoint = opts.checkpoint  # a file here wins over one of the same name under the run's checkpoints/
    if checkpoint not in ("tested", "best", "last") and os.path.isfile(checkpoint):
        checkpoint = os.path.abspath(checkpoint)
    predictor = Predictor.from_run(opts.run_dir, checkpoint)
    overrides = _decode_overrides(opts)
    try:
        decode = dataclasses.replace(predictor.decode_cfg, **overrides)
    except ConfigError as error:
        raise ConfigError(_as_option(str(error), overrides)) from None
    return predictor, dataclasses.asdict(decode)


def _as_option(message: str, overrides: dict[str, Any]) -> str:
    """A DecodeConfig check's ``beam_size=0 must be >= 1`` as ``--beam-size 0 must be >= 1``."""
    for name, value in overrides.items():
        if message.startswith(f"{name}=") and " must be " in message:
            flag = DECODE_FLAGS.get(name, ("--" + name.replace("_", "-"),))[0]
            return f"{flag} {value}" + message[message.index(" must be ") :]
    return message


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _one_line(text: str) -> str:
    """An output that cannot break the one-line-per-input alignment."""
    return " ".join(text.splitlines())


def _stdin_lines() -> Iterator[str]:
    """Each stdin line, read as UTF-8 whatever the locale (a leading BOM dropped); a byte that is not UTF-8 stays
    in its line (as Python's surrogateescape keeps it) for the predictor to refuse that line alone, naming it."""
    for line in io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", errors="surrogateescape"):
        yield line.rstrip("\n")


def _numbered(what: str, lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``("stdin line 3: ", text)``: each input with the words that name it in an error line."""
    return ((f"{what} {number}: ", line) for number, line in enumerate(lines, 1))


def _print_results(results: Iterable[tuple[str, str, Any]], empty: str) -> int:
    """Print ``head + output`` for each ``(head, where, result)``, in order; a refused input (an InputError result)
    gets an empty output, after its error on stderr (``where`` names it, ``empty`` says what was left empty).
    Returns how many were refused."""
    from zoo.inference import InputError

    refused = 0
    for head, where, result in results:
        if isinstance(result, InputError):
            sys.stdout.flush()  # a reader of both streams sees the error at its place
            report(InputError(f"{where}{result}; {empty}"))
            refused += 1
        print(head + ("" if isinstance(result, InputError) else _one_line(result)))
    sys.stdout.flush()
    return refused


def _exit_if_refused(refused: int) -> None:
    """Exit 1 once every input is answered, when some were refused (their error lines are out already)."""
    if refused:
        raise SystemExit(1)


def declared_command(name: str) -> Any:
    """The PredictCommand a registered task declares under ``name`` (``predict``: a generic one, for any run)."""
    from zoo.contracts import PredictCommand
    from zoo.inference.predictor import prediction_commands

    tasks = prediction_commands().get(name)
    return tasks[0].command if tasks else PredictCommand("predict", "", input="input")


def predict(args: list[str], description: str) -> None:
    """``zoo predict RUN INPUT...``: any run, its inputs read as its task reads them."""
    use("predict", args, description)


def use(name: str, args: list[str], description: str) -> None:
    """``zoo NAME RUN [INPUT...]`` for a command a task declares (``translate``, ``caption``) or ``predict``: one
    output line per input, from the arguments or else from every stdin line; a blank input gives a blank line."""
    declared = declared_command(name)
    parser = _parser(name, description)
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar=declared.input.upper(),
        help=f"{declared.input}s, one output line each; none: every stdin line (a blank line gives a blank line)",
    )
    _add_run_options(parser)
    opts = parser.parse_intermixed_args(args)
    predictor, decode = _load(opts)
    predictor.expect_command(name)
    command = predictor.task.command or declared
    if opts.inputs:
        inputs = _numbered(f"command-line {command.input}", opts.inputs)
    else:
        inputs = _numbered("stdin line", _stdin_lines())
    answered = refused = 0
    for batch in _batches(inputs, opts.batch_size):
        texts = [text for _, text in batch if text.strip()]  # the model never sees a blank input
        outputs = predictor.predictions(texts, opts.batch_size, **decode)
        results = []
        for where, text in batch:
            head = f"{text}\t" if command.echo and text.strip() else ""
            results.append((head, "" if command.echo else where, next(outputs) if text.strip() else ""))
        refused += _print_results(results, f"its {command.output} is empty")
        answered += len(batch)
    if not answered:
        from zoo.inference import InputError

        raise InputError(
            f"stdin is empty: nothing to {name}; give {command.input}s as arguments "
            f"(zoo {name} RUN {command.input.upper()}...) or one per line on stdin (zoo {name} RUN < FILE)"
        )
    _exit_if_refused(refused)


def attention(args: list[str], description: str) -> None:
    parser = _parser("attention", description)
    parser.add_argument("sentence", help="one input as the run's task reads it: a sentence, an image file, ...")
    parser.add_argument(
        "--html",
        action="store_true",
        help="write one interactive page (explorer.html: every layer, head and kind, works offline) instead of PNGs",
    )
    opts = parser.parse_args(args)
    import zoo

    predictor = zoo.load(opts.run_dir)
    if opts.html:
        print(predictor.attention_explorer(opts.sentence))
        return
    paths = predictor.attention_maps(opts.sentence)
    if not paths:
        print("this model has no attention to draw (e.g. attention=none: the decoder sees only a summary)")
        return
    print(f"wrote {len(paths)} attention maps to {os.path.dirname(paths[0])}")
