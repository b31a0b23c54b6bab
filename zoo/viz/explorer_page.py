"""The attention explorer's page: HTML skeleton, inline CSS and script, nothing fetched from anywhere.

Kept as Python strings (not files beside the module) so the installed wheel
carries them without package-data. The script reads the JSON that
:func:`zoo.viz.explorer.explorer_data` made from ``<script id="attention-data">``
and draws everything: the kind tabs, the layer and head controls, the head
view (an SVG of two token columns joined by lines whose opacity is the
attention weight) and the overview grid (one small canvas heatmap per head).

Hooks the browser test relies on: ``body[data-ready]`` once drawn;
``.token.query`` / ``.token.key`` (``data-index``) in the head view;
``line.link`` (``data-head``, ``data-query``, ``data-key``, ``data-weight``);
``.weight-label`` texts next to the tokens a focused token attends to;
``#heads-grid .thumb`` (``data-layer``, ``data-head``, 0-based).
"""

from __future__ import annotations

import html

STYLE = r"""
:root {
  --ink: #1d2330; --muted: #5b6475; --rule: #d8dde6; --accent: #d9480f; --paper: #ffffff; --ground: #f5f6f9;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: var(--ground);
}
[hidden] { display: none !important; }
body { margin: 0 auto; padding: 16px 24px 32px; max-width: 1480px; }
h1 { font-size: 20px; margin: 0 0 10px; }
h2 { font-size: 15px; margin: 0 0 4px; }
dl.sentence { display: grid; grid-template-columns: max-content 1fr; gap: 3px 12px; margin: 0 0 14px; font-size: 14px; }
dl.sentence dt { color: var(--muted); }
dl.sentence dd { margin: 0; overflow-wrap: anywhere; }
nav#kinds { display: flex; flex-wrap: wrap; gap: 4px; border-bottom: 1px solid var(--rule); }
nav#kinds button {
  font: inherit; font-size: 14px; padding: 7px 14px; cursor: pointer; color: var(--ink);
  border: 1px solid var(--rule); border-bottom: none; border-radius: 6px 6px 0 0; background: #e9ecf2;
}
nav#kinds button[aria-selected="true"] { background: var(--paper); font-weight: 600; box-shadow: inset 0 3px 0 var(--accent); }
nav#kinds button.absent { color: #9aa2b1; background: transparent; text-decoration: line-through; cursor: not-allowed; }
p.note { color: var(--muted); font-size: 13px; margin: 8px 0 0; }
main { display: flex; flex-wrap: wrap; gap: 20px; align-items: flex-start; margin-top: 14px; }
#overview { position: sticky; top: 12px; }  /* the grid stays in view beside a long sentence */
main > section { background: var(--paper); border: 1px solid var(--rule); border-radius: 8px; padding: 12px 16px 16px; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; font-size: 14px; margin-bottom: 6px; }
.controls select { font: inherit; padding: 2px 4px; }
#head-chips { display: inline-flex; flex-wrap: wrap; gap: 4px; align-items: center; }
.chip {
  font: inherit; font-size: 12px; min-width: 26px; padding: 2px 6px; cursor: pointer; color: var(--ink);
  border: 2px solid var(--chip); border-radius: 12px; background: var(--paper);
}
.chip[aria-pressed="true"] { background: var(--chip); color: #fff; }
.hint { color: var(--muted); font-size: 12px; margin: 2px 0 8px; max-width: 36em; }
#view-title { font-weight: 600; font-size: 14px; margin: 4px 0 2px; }
#lines-view { display: block; user-select: none; }
#lines-view text { font-size: 13px; fill: var(--ink); dominant-baseline: central; }
#lines-view text.axis { font-size: 12px; fill: var(--muted); font-style: italic; }
#lines-view text.weight-label { font-size: 11px; fill: var(--muted); font-variant-numeric: tabular-nums; }
#lines-view text.weight-label.faint { fill: #c3c8d2; }
.token { cursor: pointer; }
.token rect { fill: transparent; rx: 3px; }
.token:hover rect { fill: #eef1f6; }
.token.focus rect { fill: #ffe3c2; }
.token.focus text { font-weight: 700; }
#heads-grid { display: grid; justify-content: start; gap: 4px 8px; align-items: center; justify-items: center; font-size: 12px; }
#heads-grid .col-label { color: var(--muted); display: flex; align-items: center; gap: 4px; }
#heads-grid .col-label i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; background: var(--chip); }
#heads-grid .row-label { color: var(--muted); justify-self: end; padding-right: 4px; white-space: nowrap; }
.thumb { padding: 2px; line-height: 0; cursor: pointer; background: none; border: 2px solid transparent; border-radius: 4px; }
.thumb:hover { border-color: #9aa2b1; }
.thumb.in-layer { border-color: #ffc9a3; }
.thumb.selected { border-color: var(--accent); }
.thumb canvas { image-rendering: pixelated; border: 1px solid var(--rule); }
#empty { font-size: 15px; }
"""

SCRIPT = r"""
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("attention-data").textContent);
  const byId = (id) => document.getElementById(id);
  const svg = byId("lines-view");
  const NS = svg.namespaceURI;  // the SVG namespace, taken from the page so the script names no address
  const ROW = 20, GAP = 140, HEADER = 30, PAD = 6, BOX = 9, NUMBER = 34, THUMB = 56, MAX_LABEL = 24, MIN_WEIGHT = 0.01;
  const kinds = data.kinds.filter((kind) => !kind.absent);
  const state = { kind: null, layer: 0, head: 0, allHeads: false, hover: null, pinned: null };
  let view = null;  // the head view's token groups and layers, rebuilt when the kind, layer or heads change

  // ------------------------------------------------------------------ small helpers
  const headColour = (h, heads) => (heads === 1 ? "hsl(215, 65%, 40%)" : `hsl(${(205 + Math.round((h * 360) / heads)) % 360}, 68%, 44%)`);
  const shorten = (label) => (label.length > MAX_LABEL ? label.slice(0, MAX_LABEL - 1) + "\u2026" : label);
  function node(tag, attrs, parent, text) {
    const element = document.createElementNS(NS, tag);
    for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
    if (text !== undefined) element.textContent = text;
    if (parent) parent.appendChild(element);
    return element;
  }
  function html(tag, attrs, parent, text) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
    if (text !== undefined) element.textContent = text;
    if (parent) parent.appendChild(element);
    return element;
  }
  let measure = null;
  function textWidth(texts, font) {  // pixels the widest of ``texts`` takes in ``font``
    measure = measure || document.createElement("canvas").getContext("2d");
    measure.font = font + " " + getComputedStyle(document.body).fontFamily;
    return Math.ceil(Math.max(0, ...texts.map((text) => measure.measureText(text).width)));
  }
  const labelWidth = (labels) => Math.max(24, textWidth(labels.map(shorten), "bold 13px")) + 8;
  function ramp(weight) {  // white -> mid blue -> navy, for the heatmaps
    const stops = [[255, 255, 255], [104, 154, 212], [14, 42, 104]];
    const x = Math.min(1, Math.max(0, weight)) * 2, i = Math.min(1, Math.floor(x)), f = x - i;
    return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
  }
  const currentKind = () => kinds[state.kind];
  const currentLayer = () => currentKind().layers[state.layer];
  const shownHeads = () => (state.allHeads ? currentLayer().map((_, h) => h) : [state.head]);

  // ------------------------------------------------------------------ page header and tabs
  function fillHeader() {
    byId("source-text").textContent = data.source;
    byId("output-text").textContent = data.output || "(empty)";
    const parts = Object.entries(data.components).map(([kind, name]) => `${kind} ${name}`);
    if (parts.length) byId("model-text").textContent = parts.join(" \u00b7 ");
    else byId("model-row").hidden = true;
    const absent = data.kinds.filter((kind) => kind.absent);
    byId("absent").hidden = absent.length === 0;
    byId("absent").textContent = absent.length
      ? "Not in this model: " + absent.map((kind) => `${kind.title.toLowerCase()} \u2014 ${kind.absent}`).join("; ") + "."
      : "";
  }
  function buildTabs() {
    const nav = byId("kinds");
    for (const kind of data.kinds) {
      const button = html("button", { type: "button", role: "tab", "data-kind": kind.name }, nav, kind.title);
      if (kind.absent) {
        button.disabled = true;
        button.className = "absent";
        button.title = `not in this model: ${kind.absent}`;
      } else {
        button.addEventListener("click", () => selectKind(kinds.indexOf(kind)));
      }
    }
  }

  // ------------------------------------------------------------------ selection
  function selectKind(index) {
    Object.assign(state, { kind: index, layer: 0, head: 0, allHeads: false, hover: null, pinned: null });
    for (const button of byId("kinds").children) button.setAttribute("aria-selected", String(button.dataset.kind === currentKind().name));
    buildLayerSelect();
    buildGrid();
    refresh();
  }
  function selectHead(layer, head, allHeads) {
    const layerChanged = layer !== state.layer;
    Object.assign(state, { layer, head, allHeads });
    if (layerChanged) state.hover = state.pinned = null;
    refresh();
  }
  function refresh() {  // after the layer or heads changed: controls, head view, grid marks
    buildHeadChips();
    byId("layer").value = String(state.layer);
    const kind = currentKind(), heads = currentLayer().length;
    byId("view-title").textContent = `${kind.title} \u00b7 layer ${state.layer + 1} of ${kind.layers.length} \u00b7 ` +
      (state.allHeads ? `all ${heads} heads` : `head ${state.head + 1} of ${heads}`);
    buildHeadView();
    markGrid();
  }

  // ------------------------------------------------------------------ controls
  function buildLayerSelect() {
    const select = byId("layer");
    select.replaceChildren();
    currentKind().layers.forEach((_, l) => html("option", { value: String(l) }, select, String(l + 1)));
    select.disabled = currentKind().layers.length === 1;
  }
  function buildHeadChips() {
    const chips = byId("head-chips"), heads = currentLayer().length;
    chips.replaceChildren();
    html("span", {}, chips, "head");
    for (let h = 0; h < heads; h++) {
      const attrs = { type: "button", class: "chip", "data-head": String(h), title: `show head ${h + 1} alone` };
      const chip = html("button", attrs, chips, String(h + 1));
      chip.style.setProperty("--chip", headColour(h, heads));
      chip.setAttribute("aria-pressed", String(state.allHeads || h === state.head));
      chip.addEventListener("click", () => selectHead(state.layer, h, false));
    }
    const all = byId("all-heads");
    all.checked = state.allHeads;
    all.disabled = heads === 1;
    byId("all-heads-label").title = heads === 1 ? "this layer has one head" : "draw every head of the layer, one colour each";
  }

  // ------------------------------------------------------------------ head view: token columns and lines
  function buildHeadView() {
    const kind = currentKind(), heads = currentLayer().length;
    const boxes = state.allHeads ? heads * BOX : BOX + NUMBER;
    const queryAxis = `queries: ${kind.query_axis}`, keyAxis = `keys: ${kind.key_axis}`;
    // A column is as wide as its widest token, and together with its weight squares as wide as its heading.
    const queryWidth = Math.max(labelWidth(kind.queries), textWidth([queryAxis], "italic 12px") + 8 - boxes);
    const keyWidth = Math.max(labelWidth(kind.keys), textWidth([keyAxis], "italic 12px") + 8 - boxes);
    const queryRight = PAD + boxes + 4 + queryWidth, lineStart = queryRight + 6, lineEnd = lineStart + GAP, keyLeft = lineEnd + 6;
    const width = keyLeft + keyWidth + 4 + boxes + PAD, rows = Math.max(kind.queries.length, kind.keys.length);
    svg.replaceChildren();
    svg.setAttribute("width", width);
    svg.setAttribute("height", HEADER + rows * ROW + PAD);
    svg.setAttribute("viewBox", `0 0 ${width} ${HEADER + rows * ROW + PAD}`);
    node("text", { class: "axis", x: queryRight - 4, y: HEADER / 2, "text-anchor": "end" }, svg, queryAxis);
    node("text", { class: "axis", x: keyLeft + 4, y: HEADER / 2 }, svg, keyAxis);
    const links = node("g", { class: "links" }, svg);
    const weights = node("g", { class: "weights" }, svg);
    const y = (i) => HEADER + i * ROW + ROW / 2;
    const column = (labels, side, x, anchor) => labels.map((label, i) => {
      const group = node("g", { class: `token ${side}`, "data-index": String(i) }, svg);
      const rect = node("rect", { y: y(i) - ROW / 2 + 1, height: ROW - 2 }, group);
      const text = node("text", { x: anchor === "end" ? x - 4 : x + 4, y: y(i), "text-anchor": anchor }, group, shorten(label));
      const width = text.getComputedTextLength() + 8;  // the highlight fits the token, not the column
      rect.setAttribute("x", anchor === "end" ? x - width : x);
      rect.setAttribute("width", width);
      if (label.length > MAX_LABEL) node("title", {}, group, label);
      group.addEventListener("mouseenter", () => setHover({ side, index: i }));
      group.addEventListener("mouseleave", () => setHover(null));
      group.addEventListener("click", () => togglePin({ side, index: i }));
      return group;
    });
    view = {
      links, weights, y, lineStart, lineEnd,
      queryBoxes: PAD, keyBoxes: keyLeft + keyWidth + 4,
      query: column(kind.queries, "query", queryRight, "end"),
      key: column(kind.keys, "key", keyLeft, "start"),
    };
    drawFocus();
  }
  const sameFocus = (a, b) => (a === b) || (a && b && a.side === b.side && a.index === b.index);
  function setHover(focus) {
    if (sameFocus(focus, state.hover)) return;
    state.hover = focus;
    drawFocus();
  }
  function togglePin(focus) {
    state.pinned = sameFocus(focus, state.pinned) ? null : focus;
    drawFocus();
  }
  function drawFocus() {  // lines of the focused token (all lines when none) and the weights it gives or gets
    const kind = currentKind(), layer = currentLayer(), heads = layer.length, focus = state.hover || state.pinned;
    view.links.replaceChildren();
    view.weights.replaceChildren();
    for (const side of ["query", "key"]) {
      view[side].forEach((group, i) => group.classList.toggle("focus", Boolean(focus && focus.side === side && focus.index === i)));
    }
    for (const h of shownHeads()) {
      const matrix = layer[h], colour = headColour(h, heads);
      matrix.forEach((row, i) => {
        if (focus && focus.side === "query" && focus.index !== i) return;
        row.forEach((weight, j) => {
          if (weight < MIN_WEIGHT || (focus && focus.side === "key" && focus.index !== j)) return;
          node("line", {
            class: "link", x1: view.lineStart, y1: view.y(i), x2: view.lineEnd, y2: view.y(j),
            stroke: colour, "stroke-opacity": weight, "stroke-width": 2,
            "data-head": h, "data-query": i, "data-key": j, "data-weight": weight,
          }, view.links);
        });
      });
    }
    if (!focus) return;
    // The other column: one square per shown head, its opacity the weight; with one head, the number too.
    const others = focus.side === "query" ? kind.keys.length : kind.queries.length;
    const left = focus.side === "key" ? view.queryBoxes : view.keyBoxes;
    for (let m = 0; m < others; m++) {
      shownHeads().forEach((h, slot) => {
        const weight = focus.side === "query" ? layer[h][focus.index][m] : layer[h][m][focus.index];
        const x = focus.side === "key" && !state.allHeads ? left + NUMBER : left + slot * BOX;
        const square = node("rect", {
          class: "weight-box", x, y: view.y(m) - BOX / 2 + 0.5, width: BOX - 1, height: BOX - 1, rx: 1.5,
          fill: headColour(h, heads), "fill-opacity": Math.max(weight, 0.03), "data-head": h, "data-weight": weight,
        }, view.weights);
        node("title", {}, square, `head ${h + 1}: ${weight.toFixed(3)}`);
        if (!state.allHeads) {
          const textX = focus.side === "key" ? left + NUMBER - 4 : left + BOX + 4;
          const anchor = focus.side === "key" ? "end" : "start";
          const faint = weight < 0.005 ? " faint" : "";  // ~0: greyed, so the weights that matter stand out
          node("text", { class: "weight-label" + faint, x: textX, y: view.y(m), "text-anchor": anchor }, view.weights, weight.toFixed(2));
        }
      });
    }
  }

  // ------------------------------------------------------------------ overview grid: every head as a small heatmap
  function heatmap(matrix, queries, keys) {
    const canvas = document.createElement("canvas");
    canvas.width = keys;
    canvas.height = queries;
    const context = canvas.getContext("2d"), image = context.createImageData(keys, queries);
    matrix.forEach((row, i) => row.forEach((weight, j) => {
      const [r, g, b] = ramp(Math.sqrt(weight)), at = 4 * (i * keys + j);  // sqrt: small weights stay visible
      image.data.set([r, g, b, 255], at);
    }));
    context.putImageData(image, 0, 0);
    const scale = THUMB / Math.max(queries, keys);  // the longer side THUMB pixels, the shorter at least a third of it
    canvas.style.width = `${Math.max(THUMB / 3, Math.round(keys * scale))}px`;
    canvas.style.height = `${Math.max(THUMB / 3, Math.round(queries * scale))}px`;
    return canvas;
  }
  function buildGrid() {
    const kind = currentKind(), grid = byId("heads-grid");
    const heads = Math.max(...kind.layers.map((layer) => layer.length));
    grid.replaceChildren();
    grid.style.gridTemplateColumns = `auto repeat(${heads}, auto)`;
    html("span", {}, grid);
    for (let h = 0; h < heads; h++) {
      const label = html("span", { class: "col-label" }, grid);
      html("i", {}, label).style.setProperty("--chip", headColour(h, heads));
      label.append(`head ${h + 1}`);
    }
    kind.layers.forEach((layer, l) => {
      html("span", { class: "row-label" }, grid, `layer ${l + 1}`);
      for (let h = 0; h < heads; h++) {
        if (h >= layer.length) { html("span", {}, grid); continue; }
        const thumb = html("button", { type: "button", class: "thumb", "data-layer": String(l), "data-head": String(h),
          title: `layer ${l + 1}, head ${h + 1}: click to show it` }, grid);
        thumb.appendChild(heatmap(layer[h], kind.queries.length, kind.keys.length));
        thumb.addEventListener("click", () => selectHead(l, h, false));
      }
    });
  }
  function markGrid() {
    for (const thumb of byId("heads-grid").querySelectorAll(".thumb")) {
      const inLayer = Number(thumb.dataset.layer) === state.layer;
      thumb.classList.toggle("in-layer", inLayer && state.allHeads);
      thumb.classList.toggle("selected", inLayer && !state.allHeads && Number(thumb.dataset.head) === state.head);
    }
  }

  // ------------------------------------------------------------------ start
  fillHeader();
  buildTabs();
  if (kinds.length === 0) {
    byId("explorer").hidden = true;
    byId("empty").hidden = false;
  } else {
    byId("layer").addEventListener("change", (event) => selectHead(Number(event.target.value), 0, state.allHeads));
    byId("all-heads").addEventListener("change", (event) => selectHead(state.layer, state.head, event.target.checked));
    selectKind(0);
  }
  document.body.dataset.ready = "true";
})();
"""

BODY = """
<header>
  <h1>Attention explorer</h1>
  <dl class="sentence">
    <dt>source</dt><dd id="source-text"></dd>
    <dt>output</dt><dd id="output-text"></dd>
    <dt id="model-row">model</dt><dd id="model-text"></dd>
  </dl>
</header>
<nav id="kinds" role="tablist" aria-label="attention kind"></nav>
<p id="absent" class="note"></p>
<main id="explorer">
  <section id="head-view">
    <div class="controls">
      <label>layer <select id="layer"></select></label>
      <span id="head-chips"></span>
      <label id="all-heads-label"><input type="checkbox" id="all-heads"> all heads</label>
    </div>
    <p id="view-title"></p>
    <p class="hint">Hover over a token to see where it attends (queries on the left, keys on the right);
      click it to keep it. Line opacity is the attention weight; each head has its colour.</p>
    <svg id="lines-view" role="img" aria-label="attention lines between query and key tokens"></svg>
  </section>
  <section id="overview">
    <h2>All heads</h2>
    <p class="hint">Rows are layers, columns heads; each square is a head's weights (queries down, keys across;
      darker is more, shaded by the square root so small weights show). Click one to show it.</p>
    <div id="heads-grid"></div>
  </section>
</main>
<p id="empty" class="note" hidden>This model has no attention weights to show.</p>
"""


def render_page(title: str, data_json: str) -> str:
    """The whole HTML document; ``data_json`` must already be safe inside a script element."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>Attention explorer: {html.escape(title)}</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>{BODY}"
        f'<script type="application/json" id="attention-data">{data_json}</script>\n'
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
