// The attention explorer's script, inlined into its page by zoo.viz.explorer_page: it draws the page from
// the JSON of the page's "attention-data" element (zoo.viz.explorer.explorer_data) and fetches nothing.
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
  const headColour = (h, heads) => (heads === 1
    ? "hsl(215, 65%, 40%)"
    : `hsl(${(205 + Math.round((h * 360) / heads)) % 360}, 68%, 44%)`);
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
      ? "Not in this model: " +
        absent.map((kind) => `${kind.title.toLowerCase()} \u2014 ${kind.absent}`).join("; ") + "."
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
    for (const button of byId("kinds").children) {
      button.setAttribute("aria-selected", String(button.dataset.kind === currentKind().name));
    }
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
    byId("all-heads-label").title = heads === 1
      ? "this layer has one head"
      : "draw every head of the layer, one colour each";
  }

  // ------------------------------------------------------------------ head view: token columns and lines
  function buildHeadView() {
    const kind = currentKind(), heads = currentLayer().length;
    const boxes = state.allHeads ? heads * BOX : BOX + NUMBER;
    const queryAxis = `queries: ${kind.query_axis}`, keyAxis = `keys: ${kind.key_axis}`;
    // A column is as wide as its widest token, and together with its weight squares as wide as its heading.
    const queryWidth = Math.max(labelWidth(kind.queries), textWidth([queryAxis], "italic 12px") + 8 - boxes);
    const keyWidth = Math.max(labelWidth(kind.keys), textWidth([keyAxis], "italic 12px") + 8 - boxes);
    const queryRight = PAD + boxes + 4 + queryWidth, lineStart = queryRight + 6;
    const lineEnd = lineStart + GAP, keyLeft = lineEnd + 6;
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
      const textAttrs = { x: anchor === "end" ? x - 4 : x + 4, y: y(i), "text-anchor": anchor };
      const text = node("text", textAttrs, group, shorten(label));
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
      view[side].forEach((group, i) => {
        group.classList.toggle("focus", Boolean(focus && focus.side === side && focus.index === i));
      });
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
          const labelAttrs = { class: "weight-label" + faint, x: textX, y: view.y(m), "text-anchor": anchor };
          node("text", labelAttrs, view.weights, weight.toFixed(2));
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
