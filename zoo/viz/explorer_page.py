"""The attention explorer's page: HTML skeleton, CSS and script, nothing fetched from anywhere.

The three live as package data beside this module (``assets/explorer.html``,
``explorer.css``, ``explorer.js``; pyproject.toml ships them in the wheel) and are
read with :mod:`importlib.resources`. :func:`render_page` inlines the CSS and the
script into the skeleton, so every written page is one self-contained offline file.
The script reads the JSON that :func:`zoo.viz.explorer.explorer_data` made from
``<script id="attention-data">`` and draws everything: the kind tabs, the layer and
head controls (one chip per head, one for their average), the head view (an SVG of
two token columns joined by lines whose opacity is the attention weight), for keys
that are an image's grid the image view instead (the output tokens, and the image
with the focused token's weights laid over it in colour, with the colour scale),
and the overview grid (one small canvas heatmap per head, and per layer the average).
Every control is a button, select or checkbox reached with Tab; the arrow keys move
between the kind tabs and along the tokens.

Hooks the browser tests rely on: ``body[data-ready]`` once drawn;
``.token.query`` / ``.token.key`` (``data-index``) in the head view;
``line.link`` (``data-head``, ``data-query``, ``data-key``, ``data-weight``);
``.weight-label`` texts next to the tokens a focused token attends to;
``#head-chips .chip`` and ``#heads-grid .thumb`` (``data-layer``, ``data-head``:
0-based, or ``mean`` for the average of the heads); ``#words .word`` (``data-index``),
``#image-panels .panel`` (``data-head``) with its canvas, ``#scale-top`` (the top of
the colour scale) and ``#image-readout`` in the image view.
"""

from __future__ import annotations

import html
import re
from functools import cache
from importlib.resources import files
from string import Template

#: An end tag that would close the inline ``<style>`` or ``<script>`` early.
_CLOSES_INLINE = re.compile(r"</(style|script)", re.IGNORECASE)


@cache
def asset(name: str) -> str:
    """The text of ``assets/<name>``, checked to be safe to inline in a style or script element."""
    text = files(__package__).joinpath("assets", name).read_text(encoding="utf-8")
    if not name.endswith(".html") and _CLOSES_INLINE.search(text):
        raise ValueError(f"zoo/viz/assets/{name} holds an end tag that would cut the inlined element short")
    return text


def render_page(title: str, data_json: str) -> str:
    """The whole HTML document; ``data_json`` must already be safe inside a script element.

    The skeleton's placeholders (``string.Template``, filled in one pass, so nothing
    substituted is read again): ``${title}``, ``${style}``, ``${data}`` and ``${script}``.
    """
    return Template(asset("explorer.html")).substitute(
        title=html.escape(title),
        style=asset("explorer.css").rstrip("\n"),
        data=data_json,
        script=asset("explorer.js").rstrip("\n"),
    )
