"""``zoo translate``, ``zoo caption`` and ``zoo attention``: use a finished run."""
from __future__ import annotations

import argparse
import os
import sys


def _read_sentences(sentences: list[str]) -> list[str]:
    if sentences:
        return sentences
    return [line.rstrip("\n") for line in sys.stdin if line.strip()]


def translate(args: list[str], description: str) -> None:
    parser = argparse.ArgumentParser(prog="zoo translate", description=description)
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


def caption(args: list[str], description: str) -> None:
    parser = argparse.ArgumentParser(prog="zoo caption", description=description)
    parser.add_argument("run_dir")
    parser.add_argument("images", nargs="+", help="image files (any format Pillow reads)")
    parser.add_argument("--decode", choices=("greedy", "beam", "sample"), help="decoding strategy (default: the run's)")
    parser.add_argument("--beam-size", type=int)
    opts = parser.parse_args(args)
    import zoo

    captioner = zoo.load(opts.run_dir)
    overrides = {k: v for k, v in (("strategy", opts.decode), ("beam_size", opts.beam_size)) if v is not None}
    for image, line in zip(opts.images, captioner.caption(opts.images, **overrides)):
        print(f"{image}\t{line}")


def attention(args: list[str], description: str) -> None:
    parser = argparse.ArgumentParser(prog="zoo attention", description=description)
    parser.add_argument("run_dir")
    parser.add_argument("sentence", help="a sentence for a translation run, an image file for a captioning run")
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
