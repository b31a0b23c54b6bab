// The attention explorer's script, inlined into its page by zoo.viz.explorer_page: it draws the page from
// the JSON of the page's "attention-data" element (zoo.viz.explorer.explorer_data) and fetches nothing.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("attention-data").textContent);
  const byId = (id) => document.getElementById(id);
  const svg = byId("lines-view");
  const NS = svg.namespaceURI;  // the SVG namespace, taken from the page so the script names no address
  const ROW = 20, GAP = 140, HEADER = 30, PAD = 6, BOX = 9, NUMBER = 34, THUMB = 56, MAX_LABEL = 24, MIN_WEIGHT = 0.01;
  const IMAGE_SIDE = 320, SMALL_SIDE = 150, OPACITY = 0.6;  // the image view: one picture large, several small
  const MEAN = "mean", MEAN_COLOUR = "hsl(220, 10%, 22%)";  // the average of a layer's heads, as a "head"
  // matplotlib's inferno at nine stops: dark is little attention, bright much (as zoo.viz.image_attention draws)
  const INFERNO = [[0, 0, 4], [33, 12, 74], [87, 16, 110], [138, 34, 106], [188, 55, 84], [228, 90, 49],
    [249, 142, 9], [249, 203, 53], [252, 255, 164]];
  const kinds = data.kinds.filter((kind) => !kind.absent);
  // show: "head" (state.head alone), "mean" (the average of the layer's heads) or "all" (every head, one colour each)
  const state = { kind: null, layer: 0, head: 0, show: "head", hover: null, pinned: null };
  const averages = new Map();  // layer (its array of heads) -> the mean of its heads, computed once
  let view = null;  // the head view's token groups and layers, rebuilt when the kind, layer or heads change
  let picture = null;  // the image under the grid, once decoded

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
  function between(stops, x) {  // the colour a fraction x of the way along ``stops``
    const at = Math.min(1, Math.max(0, x)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(at));
    return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * (at - i)));
  }
  const ramp = (weight) => between([[255, 255, 255], [104, 154, 212], [14, 42, 104]], weight);  // the heatmaps
  const inferno = (fraction) => between(INFERNO, fraction);  // attention on the image
  function highest(matrices) {  // the largest weight of some (queries x keys) matrices
    let top = 0;
    for (const matrix of matrices) for (const row of matrix) for (const weight of row) top = Math.max(top, weight);
    return top;
  }
  function averageOf(layer) {
    if (!averages.has(layer)) {
      averages.set(layer, layer[0].map((row, i) => row.map((_, j) => {
        let sum = 0;
        for (const head of layer) sum += head[i][j];
        return sum / layer.length;
      })));
    }
    return averages.get(layer);
  }
  function keepFocus(container, build) {  // rebuild ``container`` and give focus back to what had it
    const focused = container.contains(document.activeElement) ? document.activeElement.dataset.key : undefined;
    build();
    if (focused !== undefined) container.querySelector(`[data-key="${focused}"]`)?.focus();
  }
  const currentKind = () => kinds[state.kind];
  const currentLayer = () => currentKind().layers[state.layer];
  function shown() {  // the matrices on show: [{head, matrix, colour, name}]
    const layer = currentLayer(), heads = layer.length;
    if (state.show === MEAN) {
      return [{ head: MEAN, matrix: averageOf(layer), colour: MEAN_COLOUR, name: `average of ${heads} heads` }];
    }
    const picked = state.show === "all" ? layer.map((_, h) => h) : [state.head];
    return picked.map((h) => ({ head: h, matrix: layer[h], colour: headColour(h, heads), name: `head ${h + 1}` }));
  }

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
  function buildTabs() {  // one tab per kind; the arrow keys move between those the model has
    const nav = byId("kinds");
    for (const kind of data.kinds) {
      const button = html("button", { type: "button", role: "tab", "data-kind": kind.name, tabindex: "-1" },
        nav, kind.title);
      if (kind.absent) {
        button.disabled = true;
        button.className = "absent";
        button.title = `not in this model: ${kind.absent}`;
      } else {
        button.addEventListener("click", () => selectKind(kinds.indexOf(kind)));
      }
    }
    nav.addEventListener("keydown", (event) => {
      const steps = { ArrowRight: 1, ArrowLeft: -1, Home: -state.kind, End: kinds.length - 1 - state.kind };
      if (!(event.key in steps)) return;
      event.preventDefault();
      const next = (state.kind + steps[event.key] + kinds.length) % kinds.length;
      selectKind(next);
      nav.querySelector(`[data-kind="${kinds[next].name}"]`).focus();
    });
  }

  // ------------------------------------------------------------------ selection
  function selectKind(index) {
    Object.assign(state, { kind: index, layer: 0, head: 0, show: "head", hover: null, pinned: null });
    if (currentKind().grid) {  // opens as the PNG pictures draw it: the last layer, heads averaged, the first token
      state.layer = currentKind().layers.length - 1;
      if (currentLayer().length > 1) state.show = MEAN;
      state.pinned = { side: "query", index: 0 };
    }
    for (const button of byId("kinds").children) {
      const selected = button.dataset.kind === currentKind().name;
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
    }
    buildLayerSelect();
    buildGrid();
    refresh();
  }
  function selectHead(layer, head, show) {
    Object.assign(state, { layer, head, show });
    refresh();
  }
  function refresh() {  // after the layer or heads changed: controls, head view, grid marks
    keepFocus(byId("head-chips"), buildHeadChips);
    byId("layer").value = String(state.layer);
    const kind = currentKind(), heads = currentLayer().length;
    const which = { all: `all ${heads} heads`, mean: `average of ${heads} heads` }[state.show];
    byId("view-title").textContent = `${kind.title} \u00b7 layer ${state.layer + 1} of ${kind.layers.length} \u00b7 ` +
      (which || `head ${state.head + 1} of ${heads}`);
    for (const id of ["lines-view", "lines-hint"]) byId(id).toggleAttribute("hidden", Boolean(kind.grid));
    byId("image-view").toggleAttribute("hidden", !kind.grid);
    if (kind.grid) buildImageView();
    else buildHeadView();
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
      const attrs = { type: "button", class: "chip", "data-head": String(h), "data-key": String(h),
        title: `show head ${h + 1} alone` };
      const chip = html("button", attrs, chips, String(h + 1));
      chip.style.setProperty("--chip", headColour(h, heads));
      chip.setAttribute("aria-pressed", String(state.show === "all" || (state.show === "head" && h === state.head)));
      chip.addEventListener("click", () => selectHead(state.layer, h, "head"));
    }
    if (heads > 1) {
      const attrs = { type: "button", class: "chip mean", "data-head": MEAN, "data-key": MEAN,
        title: "show the average of the layer's heads" };
      const chip = html("button", attrs, chips, "average");
      chip.style.setProperty("--chip", MEAN_COLOUR);
      chip.setAttribute("aria-pressed", String(state.show === MEAN));
      chip.addEventListener("click", () => selectHead(state.layer, state.head, MEAN));
    }
    const all = byId("all-heads");
    all.checked = state.show === "all";
    all.disabled = heads === 1;
    byId("all-heads-label").title = heads === 1
      ? "this layer has one head"
      : "draw every head of the layer, one colour each";
  }

  // ------------------------------------------------------------------ focus: the token whose attention is shown
  const sameFocus = (a, b) => (a === b) || (a && b && a.side === b.side && a.index === b.index);
  const drawFocus = () => (currentKind().grid ? drawImage() : drawLines());
  function setHover(focus) {
    if (sameFocus(focus, state.hover)) return;
    state.hover = focus;
    drawFocus();
  }
  function pin(focus) {
    if (sameFocus(focus, state.pinned)) return;
    state.pinned = focus;
    drawFocus();
  }
  function togglePin(focus) {
    state.pinned = sameFocus(focus, state.pinned) ? null : focus;
    drawFocus();
  }
  function arrowMove(event, index, count) {  // the index the key moves to in a list of ``count``, or null
    const moves = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1, Home: -index, End: count - 1 - index };
    if (!(event.key in moves)) return null;
    event.preventDefault();
    return Math.min(count - 1, Math.max(0, index + moves[event.key]));
  }

  // ------------------------------------------------------------------ head view: token columns and lines
  function buildHeadView() {
    const kind = currentKind(), heads = currentLayer().length;
    const boxes = state.show === "all" ? heads * BOX : BOX + NUMBER;
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
      const group = node("g", { class: `token ${side}`, "data-index": String(i), tabindex: i ? "-1" : "0",
        role: "button", "aria-label": `${side} ${i + 1}: ${label}` }, svg);
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
      group.addEventListener("focus", () => {  // reached by the keyboard: show it (a click toggles it instead)
        if (group.matches(":focus-visible")) pin({ side, index: i });
      });
      group.addEventListener("keydown", (event) => tokenKey(event, side, i));
      return group;
    });
    view = {
      links, weights, y, lineStart, lineEnd,
      queryBoxes: PAD, keyBoxes: keyLeft + keyWidth + 4,
      query: column(kind.queries, "query", queryRight, "end"),
      key: column(kind.keys, "key", keyLeft, "start"),
    };
    drawLines();
  }
  function tokenKey(event, side, index) {  // up and down a column, left and right across, Enter keeps, Escape lets go
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      togglePin({ side, index });
      return;
    }
    if (event.key === "Escape") {
      state.pinned = null;
      drawLines();
      return;
    }
    const across = { ArrowLeft: "query", ArrowRight: "key" }[event.key];
    let target = side, next = index;
    if (across) {
      event.preventDefault();
      target = across;
      next = Math.min(index, view[across].length - 1);
    } else {
      next = arrowMove(event, index, view[side].length);
      if (next === null) return;
    }
    for (const group of view[target]) group.setAttribute("tabindex", "-1");
    view[target][next].setAttribute("tabindex", "0");
    view[target][next].focus();  // its focus handler pins it
  }
  function drawLines() {  // lines of the focused token (all lines when none) and the weights it gives or gets
    const kind = currentKind(), focus = state.hover || state.pinned, entries = shown();
    view.links.replaceChildren();
    view.weights.replaceChildren();
    for (const side of ["query", "key"]) {
      view[side].forEach((group, i) => {
        group.classList.toggle("focus", Boolean(focus && focus.side === side && focus.index === i));
      });
    }
    for (const { head, matrix, colour } of entries) {
      matrix.forEach((row, i) => {
        if (focus && focus.side === "query" && focus.index !== i) return;
        row.forEach((weight, j) => {
          if (weight < MIN_WEIGHT || (focus && focus.side === "key" && focus.index !== j)) return;
          node("line", {
            class: "link", x1: view.lineStart, y1: view.y(i), x2: view.lineEnd, y2: view.y(j),
            stroke: colour, "stroke-opacity": weight, "stroke-width": 2,
            "data-head": head, "data-query": i, "data-key": j, "data-weight": weight,
          }, view.links);
        });
      });
    }
    if (!focus) return;
    // The other column: one square per shown head, its opacity the weight; with one head, the number too.
    const others = focus.side === "query" ? kind.keys.length : kind.queries.length;
    const left = focus.side === "key" ? view.queryBoxes : view.keyBoxes, one = entries.length === 1;
    for (let m = 0; m < others; m++) {
      entries.forEach(({ head, matrix, colour, name }, slot) => {
        const weight = focus.side === "query" ? matrix[focus.index][m] : matrix[m][focus.index];
        const x = focus.side === "key" && one ? left + NUMBER : left + slot * BOX;
        const square = node("rect", {
          class: "weight-box", x, y: view.y(m) - BOX / 2 + 0.5, width: BOX - 1, height: BOX - 1, rx: 1.5,
          fill: colour, "fill-opacity": Math.max(weight, 0.03), "data-head": head, "data-weight": weight,
        }, view.weights);
        node("title", {}, square, `${name}: ${weight.toFixed(3)}`);
        if (one) {
          const textX = focus.side === "key" ? left + NUMBER - 4 : left + BOX + 4;
          const anchor = focus.side === "key" ? "end" : "start";
          const faint = weight < 0.005 ? " faint" : "";  // ~0: greyed, so the weights that matter stand out
          const labelAttrs = { class: "weight-label" + faint, x: textX, y: view.y(m), "text-anchor": anchor };
          node("text", labelAttrs, view.weights, weight.toFixed(2));
        }
      });
    }
  }

  // ------------------------------------------------------------------ image view: attention drawn on the image
  function buildImageView() {
    const kind = currentKind(), words = byId("words");
    if (words.dataset.kind !== kind.name) {  // the same tokens in every layer and head of a kind
      words.dataset.kind = kind.name;
      words.replaceChildren();
      kind.queries.forEach((label, i) => {
        const button = html("button", { type: "button", class: "word", "data-index": String(i), tabindex: "-1" },
          words, label);
        button.addEventListener("mouseenter", () => setHover({ side: "query", index: i }));
        button.addEventListener("mouseleave", () => setHover(null));
        button.addEventListener("click", () => pin({ side: "query", index: i }));
        button.addEventListener("focus", () => pin({ side: "query", index: i }));
      });
    }
    drawImage();
  }
  function wordKey(event) {  // the arrow keys (and Home, End) move along the output tokens
    const index = Number(event.target.dataset.index), buttons = byId("words").children;
    if (event.target.parentNode !== byId("words")) return;
    const next = arrowMove(event, index, buttons.length);
    if (next !== null) buttons[next].focus();  // its focus handler shows it
  }
  function paint(canvas, weights, top) {  // the image, and over it the grid's weights in colour, 0..top
    const { rows, columns } = data.image, context = canvas.getContext("2d");
    if (picture) {
      context.imageSmoothingEnabled = picture.naturalWidth * 2 > canvas.width;  // a small image: crisp pixels
      context.drawImage(picture, 0, 0, canvas.width, canvas.height);
    } else {
      context.fillStyle = "#808080";
      context.fillRect(0, 0, canvas.width, canvas.height);
    }
    const cells = document.createElement("canvas");
    cells.width = columns;
    cells.height = rows;
    const small = cells.getContext("2d"), image = small.createImageData(columns, rows);
    weights.forEach((weight, k) => image.data.set([...inferno(weight / top), 255], 4 * k));
    small.putImageData(image, 0, 0);
    context.globalAlpha = OPACITY;
    context.imageSmoothingEnabled = true;  // stretched smoothly over the image, as the PNG pictures are
    context.drawImage(cells, 0, 0, canvas.width, canvas.height);
    context.globalAlpha = 1;
  }
  function drawImage() {
    const kind = currentKind(), focus = state.hover || state.pinned, entries = shown();
    const query = focus && focus.side === "query" ? focus.index : 0;
    const pinned = state.pinned ? state.pinned.index : 0;
    for (const button of byId("words").children) {
      const index = Number(button.dataset.index);
      button.classList.toggle("focus", index === query);
      button.setAttribute("aria-pressed", String(index === pinned));
      button.tabIndex = index === pinned ? 0 : -1;
    }
    const top = Math.max(highest(entries.map((entry) => entry.matrix)), 1e-9);  // the whole output's highest
    const side = entries.length > 1 ? SMALL_SIDE : IMAGE_SIDE, { rows, columns } = data.image;
    const height = Math.round(side * (picture ? picture.naturalHeight / picture.naturalWidth : rows / columns));
    const panels = byId("image-panels");
    panels.replaceChildren();
    for (const { head, matrix, name } of entries) {
      const figure = html("figure", { class: "panel", "data-head": String(head) }, panels);
      const canvas = html("canvas", { width: side, height, "aria-label": `${name}: attention of token ` +
        `${query + 1} (${kind.queries[query]}) on the image` }, figure);
      paint(canvas, matrix[query], top);
      html("figcaption", {}, figure, entries.length > 1 ? name : "");
      canvas.addEventListener("mousemove", (event) => {
        const r = Math.min(rows - 1, Math.floor((event.offsetY / canvas.clientHeight) * rows));
        const c = Math.min(columns - 1, Math.floor((event.offsetX / canvas.clientWidth) * columns));
        byId("image-readout").textContent =
          `${name}, cell ${kind.keys[r * columns + c]}: ${matrix[query][r * columns + c].toFixed(3)}`;
      });
    }
    byId("scale-top").textContent = top.toFixed(3);
    const weights = entries[0].matrix[query], best = weights.indexOf(Math.max(...weights));
    byId("image-readout").textContent = entries.length > 1 ? "" :
      `\u201c${kind.queries[query]}\u201d looks most at cell ${kind.keys[best]} (${weights[best].toFixed(3)}); ` +
      `the scale's top is ${top.toFixed(3)}.`;
  }
  function drawRamp() {
    const canvas = byId("colour-ramp"), context = canvas.getContext("2d");
    for (let x = 0; x < canvas.width; x++) {
      context.fillStyle = `rgb(${inferno(x / (canvas.width - 1)).join(",")})`;
      context.fillRect(x, 0, 1, canvas.height);
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
    const heads = Math.max(...kind.layers.map((layer) => layer.length)), columns = heads > 1 ? heads + 1 : heads;
    grid.replaceChildren();
    grid.style.gridTemplateColumns = `auto repeat(${columns}, auto)`;
    html("span", {}, grid);
    for (let h = 0; h < columns; h++) {
      const label = html("span", { class: "col-label" }, grid);
      html("i", {}, label).style.setProperty("--chip", h < heads ? headColour(h, heads) : MEAN_COLOUR);
      label.append(h < heads ? `head ${h + 1}` : "average");
    }
    kind.layers.forEach((layer, l) => {
      html("span", { class: "row-label" }, grid, `layer ${l + 1}`);
      for (let h = 0; h < columns; h++) {
        const mean = h === heads;
        if (!mean && h >= layer.length) { html("span", {}, grid); continue; }
        const title = mean ? `layer ${l + 1}, average of its heads` : `layer ${l + 1}, head ${h + 1}`;
        const thumb = html("button", { type: "button", class: "thumb", "data-layer": String(l),
          "data-head": mean ? MEAN : String(h), title: `${title}: click to show it` }, grid);
        thumb.appendChild(heatmap(mean ? averageOf(layer) : layer[h], kind.queries.length, kind.keys.length));
        thumb.addEventListener("click", () => selectHead(l, mean ? state.head : h, mean ? MEAN : "head"));
      }
    });
  }
  function markGrid() {
    const selected = state.show === MEAN ? MEAN : String(state.head);
    for (const thumb of byId("heads-grid").querySelectorAll(".thumb")) {
      const inLayer = Number(thumb.dataset.layer) === state.layer;
      thumb.classList.toggle("in-layer", inLayer && state.show === "all");
      thumb.classList.toggle("selected", inLayer && state.show !== "all" && thumb.dataset.head === selected);
    }
  }

  // ------------------------------------------------------------------ start
  function start() {
    fillHeader();
    buildTabs();
    if (kinds.length === 0) {
      byId("explorer").hidden = true;
      byId("empty").hidden = false;
    } else {
      byId("layer").addEventListener("change", (event) => selectHead(Number(event.target.value), 0, state.show));
      byId("all-heads").addEventListener("change", (event) => {
        selectHead(state.layer, state.head, event.target.checked ? "all" : "head");
      });
      byId("words").addEventListener("keydown", wordKey);
      if (data.image) drawRamp();
      selectKind(Math.max(0, kinds.findIndex((kind) => kind.grid)));  // an image's grid first: the point of captioning
    }
    document.body.dataset.ready = "true";
  }
  if (data.image && data.image.src) {  // the image is embedded: decode it before drawing on it
    picture = new Image();
    picture.addEventListener("load", start);
    picture.addEventListener("error", () => { picture = null; start(); });
    picture.src = data.image.src;
  } else {
    start();
  }
})();
