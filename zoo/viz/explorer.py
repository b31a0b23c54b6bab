"""The attention explorer: every layer and head of one source's attention in one offline HTML page.

PNG heatmaps (:mod:`zoo.viz.attention_maps`) show one head each; a 6-layer,
8-head Transformer makes 144 of them. The explorer puts them all in one page:
pick the kind (encoder self-attention, decoder self-attention, cross-attention),
the layer and the head, or the average of the layer's heads; hover a token (or
move to it with the arrow keys) to see where it attends (lines between the query
and key columns whose opacity is the weight, one colour per head), and click a
head in the overview grid of small heatmaps to select it. For an image source
(captioning) the keys are the cells of the frontend's grid: attention over them is
drawn on the image, one output word at a time, on the caption's colour scale
(0 to its highest weight, as :mod:`zoo.viz.image_attention` draws it).

The weights and labels come from :func:`zoo.viz.attention_maps.sentence_attention`,
so the explorer and the PNGs always show the same numbers. They are embedded in
the page as JSON (:func:`explorer_data`); the page's CSS and script (package data in
``zoo/viz/assets/``) are inlined by :mod:`zoo.viz.explorer_page`, so the file works offline and
requests nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zoo.config.sections import DecodeConfig
from zoo.contracts import ImageSource, Task
from zoo.data.thumbnails import data_uri
from zoo.run.layout import EXPLORER_FILE
from zoo.viz.attention_maps import AXES, KINDS, SentenceAttention, sentence_attention
from zoo.viz.explorer_page import render_page
from zoo.viz.grid import ImageGrid

#: How each kind is named in the page.
KIND_TITLES = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention",
    "cross": "Cross-attention",
}
#: How each axis of :data:`zoo.viz.attention_maps.AXES` is named in the page.
AXIS_TITLES = {
    "source": "source",
    "target_in": "<s> + output",
    "target_out": "output predicted",
}
#: How the source axis is named when the source is an image: its positions are the grid's cells.
IMAGE_AXIS_TITLE = "image cells"
#: An image is embedded at most this many pixels a side; PNG up to :data:`PNG_SIDE` (sharp edges), JPEG above.
IMAGE_SIDE, PNG_SIDE = 512, 128
#: Weights are embedded with this many decimals: enough for a line's opacity, and the page stays small.
WEIGHT_DECIMALS = 3


def absence_reason(kind: str, names: Mapping[str, str]) -> str:
    """Why a model has no ``kind`` of attention, naming its components when they are known."""
    encoder, decoder = (f"'{names[k]}' " if k in names else "" for k in ("encoder", "decoder"))
    if kind == "encoder_self":
        return f"the encoder {encoder}has no self-attention"
    if kind == "decoder_self":
        return f"the decoder {decoder}has no self-attention"
    if names.get("attention") == "none":
        return "attention=none: the decoder reads only the encoder's final state"
    scorer = f" (scorer '{names['attention']}')" if "attention" in names else ""
    return f"the decoder {decoder}reports no attention over the source{scorer}"


def _rounded(weights: Any) -> list:
    """(H, queries, keys) tensor -> nested lists of floats with :data:`WEIGHT_DECIMALS` decimals."""
    return np.round(weights.double().numpy(), WEIGHT_DECIMALS).tolist()


def image_data(image: ImageGrid) -> dict[str, Any]:
    """The grid's size and the image under it as a ``data:`` URI (None when it could not be read)."""
    src = None
    if image.pixels is not None:
        fmt = "PNG" if max(image.pixels.shape[:2]) <= PNG_SIDE else "JPEG"
        src = data_uri(image.pixels, IMAGE_SIDE, fmt)
    return {"rows": image.rows, "columns": image.columns, "src": src}


def _describe(source: Any) -> str:
    """The source as the page's header names it: a sentence or an image file as it is, an image by its key."""
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    if isinstance(source, ImageSource):
        return f"image {source}"
    return f"({type(source).__name__} source)"


def explorer_data(attention: SentenceAttention, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-ready values.

    ``kinds`` lists every kind of :data:`KINDS` (then any other kind the decoder
    reported) in order; a kind the model has carries its query and key labels and
    ``layers`` = per layer, per head, a (queries x keys) list of weights; a kind it
    lacks carries ``absent`` = the reason instead. For an image source, ``image``
    holds the grid's ``rows`` and ``columns`` and the picture (``src``), and a kind
    whose keys are the grid's cells says so with ``grid`` = true.
    """
    names = dict(names or {})
    kinds = []
    for kind in [*KINDS, *(k for k in attention.kinds if k not in KINDS)]:
        title = KIND_TITLES.get(kind, kind.replace("_", " ").capitalize())
        if kind not in attention.maps:
            kinds.append({"name": kind, "title": title, "absent": absence_reason(kind, names)})
            continue
        queries, keys = attention.axes(kind)
        query_axis, key_axis = AXES.get(kind, AXES["cross"])
        titles = {**AXIS_TITLES, **({"source": IMAGE_AXIS_TITLE} if attention.image else {})}
        kinds.append(
            {
                "name": kind,
                "title": title,
                "absent": None,
                "query_axis": titles[query_axis],
                "key_axis": titles[key_axis],
                "grid": attention.image is not None and key_axis == "source",
                "queries": queries,
                "keys": keys,
                "layers": [_rounded(weights) for weights in attention.maps[kind]],
            }
        )
    data = {"source": _describe(attention.source), "output": attention.output, "components": names, "kinds": kinds}
    if attention.image is not None:
        data["image"] = image_data(attention.image)
    return data


def render_explorer(data: Mapping[str, Any]) -> str:
    """The page for :func:`explorer_data`'s ``data``: one self-contained HTML document."""
    # "<" only occurs inside JSON strings, where \u003c means the same; so no label can close the script element.
    data_json = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return render_page(title=str(data["source"]), data_json=data_json)


def write_attention_explorer(
    model: Any,
    task: Task,
    source: Any,
    out_dir: str | Path,
    *,
    decode_cfg: DecodeConfig | None = None,
    wandb_run: Any = None,
) -> Path:
    """Decode one ``source`` and write its attention explorer as ``out_dir/explorer.html``.

    The arguments are those of :func:`zoo.viz.attention_maps.write_attention_maps`;
    ``wandb_run`` also gets the page as ``wandb.Html`` under ``attention/explorer``.
    A model without attention still gets a page, saying which kinds it lacks and why.
    """
    attention = sentence_attention(model, task, source, decode_cfg)
    page = render_explorer(explorer_data(attention, getattr(model, "names", None)))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / EXPLORER_FILE
    path.write_text(page, encoding="utf-8")
    if wandb_run is not None:
        import wandb

        wandb_run.log({"attention/explorer": wandb.Html(page, inject=False)})
    return path
