// The report's charts, inlined into its page by zoo.report.html and drawn here from the runs' data the page
// embeds (#zoo-data, zoo.report.live): every run with its status; curves of anything the runs logged (a select
// per chart, smoothing, log scale, wall time, each run or each group's mean ± std); the settings that vary against
// the monitored metric (parallel coordinates) and a config diff of two runs. The figures drawn on the server
// (.zoo-figure, their Plotly JSON inside) are plotted here too.
//
// The bar above the page chooses what is shown: runs by a text filter and their checkboxes (and by brushing the
// parallel coordinates' axes), a setting to group them by (the leaderboard regrouped in the page, board.js, as
// zoo compare --by groups it; the curves' means too), and CSV files of the leaderboard and of the curves.
// On the dashboard, live.js hands each update to Zoo.update and Zoo.swap: the charts change in place (same
// elements, the reader's zoom and choices), and the part of the page the reader looks at keeps its place.
"use strict";

const Zoo = (() => {
  // No Plotly logo, and nothing that sends a chart to Chart Studio (its cloud and "edit" buttons, its server).
  const CONFIG = {responsive: true, displaylogo: false, showSendToCloud: false, showEditInChartStudio: false,
                  plotlyServerURL: ""};
  const PANELS = 4;  // charts a page opens with at most
  const data = {runs: new Map(), order: [], settings: new Map(), curves: new Map(), clock: new Map(),
                bounds: {}, suggested: [], ignored: [], palette: [], boards: []};
  const view = {x: "step", lines: "runs", smoothing: 0};
  // What is shown: runs unticked, the filter's words, the runs the parallel coordinates' brushes keep (null: no
  // brush), and the setting the runs are grouped by ("": as zoo compare grouped them).
  const choice = {off: new Set(), words: [], brushed: null, by: ""};
  let groupColours = new Map();  // the colours of the groups the reader made (ZooPalette)
  const panels = [];
  const offered = new Set();  // suggested curves given a chart once (one the reader removed stays removed)
  const parallel = {seen: false, drawn: "", ids: []};  // WebGL, slow without a GPU: drawn once in view, again on change

  // ------------------------------------------------------------------ helpers
  const escape = text => String(text ?? "").replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
  const canonical = value => JSON.stringify(value ?? null);
  const uid = text => text.replace(/[^A-Za-z0-9_-]/g, c => `_${c.charCodeAt(0).toString(16)}`);  // Plotly selects by it
  const isNumber = value => typeof value === "number" && isFinite(value);
  const element = (tag, attributes = {}, html = "") => {
    const node = document.createElement(tag);
    Object.entries(attributes).forEach(([key, value]) => node.setAttribute(key, value));
    node.innerHTML = html;
    return node;
  };
  function number(value) {
    if (!isNumber(value)) return value ?? "";
    if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en");
    return Number(value.toPrecision(4)).toString();
  }
  function shortName(id) {  // a run's folder below the folder all runs share
    const parts = data.order.map(other => other.split("/"));
    let shared = 0;
    while (parts.length > 1 && parts.every(p => p.length > shared + 1 && p[shared] === parts[0][shared])) shared++;
    const mine = id.split("/");
    return mine.slice(parts.length > 1 ? shared : mine.length - 1).join("/");
  }

  // ------------------------------------------------------------------ what is shown, and how it is grouped
  function haystack(id) {  // what the filter's words are looked for in: names, status and every key=value setting
    const run = data.runs.get(id), settings = data.settings.get(id) ?? {};
    return [run.label, shortName(id), run.status, ...Object.entries(settings)
      .map(([key, value]) => `${key}=${ZooBoard.show(value)}`)].join(" ").toLowerCase();
  }
  const listed = id => !choice.off.has(id) && choice.words.every(word => haystack(id).includes(word));
  const shown = id => listed(id) && (choice.brushed === null || choice.brushed.has(id));
  const shownIds = () => data.order.filter(shown);

  function groupOf(run) {  // [id, label] of the run's group: its configuration, or its value of the chosen setting
    if (!choice.by) return [run.group, run.label];
    const name = `${choice.by}=${ZooBoard.show(data.settings.get(run.id)?.[choice.by])}`;
    return [name, name];
  }
  const colourOf = run => (choice.by ? groupColours.get(groupOf(run)[0]) : run.colour);
  const groupSize = run => shownIds().filter(id => groupOf(data.runs.get(id))[0] === groupOf(run)[0]).length;
  function recolour() {  // a group of one configuration keeps its colour; a group of several takes its name's
    const members = new Map();
    data.order.map(id => data.runs.get(id)).forEach(run => {
      const [id] = groupOf(run);
      members.set(id, [...(members.get(id) ?? []), run]);
    });
    const pooled = [...members].filter(([, runs]) => new Set(runs.map(run => run.group)).size > 1);
    groupColours = ZooPalette.palette(pooled.map(([id]) => id), data.palette);
    members.forEach((runs, id) => groupColours.has(id) || groupColours.set(id, runs[0].colour));
  }

  // What the reader looks at keeps its place: the first section (of the page's .zoo-section parts) that starts in
  // view below the bar, else the one the view is inside, is found again after ``change`` and the page scrolled by
  // what it moved. The browser's own anchoring is off (report.css): it cannot follow a section that is replaced.
  function keepInPlace(change) {
    const top = document.getElementById("zoo-bar")?.getBoundingClientRect().bottom ?? 0;
    const sections = [...document.querySelectorAll(".zoo-section")];
    const starts = sections.map(section => section.getBoundingClientRect().top);
    const anchor = sections.find((_, k) => starts[k] >= top && starts[k] < window.innerHeight) ??
      sections.filter((_, k) => starts[k] < top).pop();
    const key = anchor?.dataset.key, before = anchor?.getBoundingClientRect().top;
    change();
    const again = key && document.querySelector(`.zoo-section[data-key="${CSS.escape(key)}"]`);
    if (again) window.scrollBy(0, again.getBoundingClientRect().top - before);
  }

  // ------------------------------------------------------------------ the data
  function merge(state) {
    const before = JSON.stringify(data.order.map(id => [id, data.runs.get(id).label, data.runs.get(id).status]));
    state.whole.forEach(id => { data.curves.set(id, {}); data.clock.set(id, []); });
    Object.entries(state.new).forEach(([id, extra]) => data.settings.set(id, extra.settings));
    Object.entries(state.points).forEach(([id, curves]) => {
      const held = data.curves.get(id) ?? {};
      data.curves.set(id, held);
      Object.entries(curves).forEach(([name, points]) => (held[name] = held[name] ?? []).push(...points));
    });
    Object.entries(state.clock).forEach(([id, ticks]) => data.clock.set(id, [...(data.clock.get(id) ?? []), ...ticks]));
    data.runs = new Map(state.runs.map(run => [run.id, run]));
    data.order = state.runs.map(run => run.id);
    for (const held of [data.curves, data.clock, data.settings]) {
      [...held.keys()].filter(id => !data.runs.has(id)).forEach(id => held.delete(id));
    }
    Object.assign(data, {bounds: state.bounds, suggested: state.suggested, ignored: state.ignored,
                         palette: state.palette, boards: state.boards ?? data.boards});
    recolour();
    const after = JSON.stringify(data.order.map(id => [id, data.runs.get(id).label, data.runs.get(id).status]));
    return {curves: before !== after || state.whole.length > 0 || Object.keys(state.points).length > 0,
            settings: Object.keys(state.new).length > 0 || before !== after};
  }

  function names() {  // every logged quantity: training first, then validation, others, test last
    const rank = name => name.startsWith("train/") ? 0 : name.startsWith("val/") ? 1 : name.startsWith("test/") ? 3 : 2;
    const all = new Set();
    data.curves.forEach(curves => Object.keys(curves).forEach(name => all.add(name)));
    return [...all].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }

  function seconds(id, step) {  // wall time at a step, from the validations' clock (straight between them)
    const ticks = [[0, 0], ...(data.clock.get(id) ?? [])];
    if (ticks.length < 2) return null;
    let k = ticks.findIndex(([s]) => s >= step);
    if (k === 0) return 0;
    if (k < 0) k = ticks.length - 1;  // past the last validation: at the pace of the last stretch
    const [s0, t0] = ticks[k - 1], [s1, t1] = ticks[k];
    return s1 === s0 ? t1 : t0 + (t1 - t0) * (step - s0) / (s1 - s0);
  }

  function smooth(values) {  // TensorBoard's exponential moving average, its start debiased
    const weight = view.smoothing;
    if (!weight) return values;
    let last = 0;
    return values.map((value, k) => (last = last * weight + (1 - weight) * value) / (1 - weight ** (k + 1)));
  }

  function curve(id, name) {  // [{x, y}] of one run, smoothed, against the chosen x axis
    const points = data.curves.get(id)?.[name] ?? [];
    const perStep = data.runs.get(id)?.flops_per_step ?? null;
    const at = {step: step => step, seconds: step => seconds(id, step),
                flops: step => (perStep === null ? null : step * perStep)};
    const x = points.map(([step]) => at[view.x](step));
    const raw = points.map(([, value]) => value);
    return {steps: points.map(([step]) => step), x, raw, y: smooth(raw)};
  }

  // ------------------------------------------------------------------ curves
  function runTraces(name) {
    const traces = [];
    shownIds().forEach(id => {
      const run = data.runs.get(id), line = curve(id, name);
      if (!line.x.length) return;
      const label = groupOf(run)[1] + (groupSize(run) > 1 ? ` · seed ${run.seed}` : "") +
                    (run.status === "running" ? " (running)" : "");
      const mode = line.x.length > 60 ? "lines" : "lines+markers";
      if (view.smoothing) {
        traces.push({x: line.x, y: line.raw, mode: "lines", line: {color: colourOf(run), width: 1}, opacity: 0.25,
                     hoverinfo: "skip", showlegend: false, legendgroup: id, uid: uid(`${id}:raw`)});
      }
      traces.push({x: line.x, y: line.y, name: label, mode, line: {color: colourOf(run)}, marker: {size: 5},
                   legendgroup: id, uid: uid(id)});
    });
    return traces;
  }

  function groupTraces(name, log) {  // each group: the mean over its runs, ± one std clipped to the metric's range
    const [low, high] = data.bounds[name] ?? [null, null];
    const clip = v => Math.min(high ?? Infinity, Math.max(low ?? -Infinity, v));
    const groups = new Map();
    shownIds().forEach(id => {
      const run = data.runs.get(id), line = curve(id, name), [group] = groupOf(run);
      if (line.x.length) groups.set(group, [...(groups.get(group) ?? []), {run, line}]);
    });
    const traces = [];
    groups.forEach((members, group) => {
      const maps = members.map(({line}) => new Map(line.steps.map((s, k) => [s, [line.x[k], line.y[k]]])));
      const steps = members[0].line.steps.filter(s => maps.every(m => m.has(s)));
      const x = steps.map(s => maps.reduce((sum, m) => sum + m.get(s)[0], 0) / maps.length);
      const stats = steps.map(s => {
        const values = maps.map(m => m.get(s)[1]), mean = values.reduce((a, b) => a + b, 0) / values.length;
        const spread = values.length > 1
          ? Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1)) : 0;
        return [mean, spread];
      });
      const {run} = members[0], colour = colourOf(run);
      if (members.length > 1) {  // on a log axis, a band reaching 0 goes a decade below the lowest mean instead
        const bottom = Math.min(...stats.map(([m]) => m).filter(m => m > 0)) / 10;
        const floor = v => (log && !(v > 0) ? bottom : v);
        const upper = stats.map(([m, s]) => floor(clip(m + s))), lower = stats.map(([m, s]) => floor(clip(m - s)));
        traces.push({x: [...x, ...x.slice().reverse()], y: [...upper, ...lower.reverse()], fill: "toself",
                     fillcolor: colour, opacity: 0.2, mode: "lines", line: {width: 0}, hoverinfo: "skip",
                     showlegend: false, legendgroup: group, uid: uid(`${group}:band`)});
      }
      const count = `${members.length} run${members.length > 1 ? "s" : ""}`;
      traces.push({x, y: stats.map(([m]) => m), name: `${groupOf(run)[1]} (${count})`,
                   mode: x.length > 60 ? "lines" : "lines+markers", line: {color: colour}, marker: {size: 5},
                   legendgroup: group, uid: uid(group)});
    });
    return traces;
  }

  function drawPanel(panel) {
    const name = panel.select.value, log = panel.log.checked, chart = panel.chart;
    const traces = name ? (view.lines === "groups" ? groupTraces(name, log) : runTraces(name)) : [];
    const revision = `${name}|${view.x}|${log}`;
    const layout = {
      title: {text: name || "nothing logged yet", font: {size: 14}},
      xaxis: {title: {text: {step: "step", seconds: "wall time (s)", flops: "training FLOPs"}[view.x]}, zeroline: false},
      yaxis: {title: {text: name + (view.smoothing ? ` (smoothed ${view.smoothing})` : "")},
              type: log ? "log" : "linear", zeroline: false},
      margin: {t: 40, r: 10, b: 50, l: 65}, height: 360, hovermode: "closest", legend: {font: {size: 10}},
      paper_bgcolor: "white", plot_bgcolor: "white", uirevision: revision,
      annotations: traces.length ? [] : [{text: `no run shown has logged ${name || "anything"} yet`, showarrow: false,
                                          xref: "paper", yref: "paper", x: 0.5, y: 0.5}],
    };
    const held = chart.layout;  // the view the reader chose (zoomed in the chart or set by Plotly.relayout) stays
    if (held && held.uirevision === revision) {
      for (const axis of ["xaxis", "yaxis"]) {
        if (held[axis] && held[axis].autorange === false && held[axis].range) {
          Object.assign(layout[axis], {range: [...held[axis].range], autorange: false});
        }
      }
    }
    Plotly.react(chart, traces, layout, CONFIG);
  }

  function addPanel(name) {
    const panel = {root: element("div", {class: "zoo-panel"})};
    panel.root.innerHTML = '<div class="zoo-panel-bar"><select class="zoo-metric" title="what to plot"></select>' +
      '<label><input type="checkbox" class="zoo-log"> log scale</label>' +
      '<button type="button" class="zoo-remove" title="remove this chart">×</button></div>' +
      '<div class="zoo-chart plotly-graph-div"></div>';
    panel.select = panel.root.querySelector("select");
    panel.log = panel.root.querySelector("input");
    panel.chart = panel.root.querySelector(".zoo-chart");
    fillSelect(panel.select, names(), name);
    panel.select.addEventListener("change", () => drawPanel(panel));
    panel.log.addEventListener("change", () => drawPanel(panel));
    panel.root.querySelector("button").addEventListener("click", () => {
      Plotly.purge(panel.chart);
      panel.root.remove();
      panels.splice(panels.indexOf(panel), 1);
    });
    document.querySelector("#zoo-curves .zoo-panels").append(panel.root);
    panels.push(panel);
    drawPanel(panel);
  }

  function fillSelect(select, options, chosen = select.value) {
    const labels = options.map(option => (Array.isArray(option) ? option : [option, option]));
    if (JSON.stringify(labels) === select.dataset.options) return;
    select.dataset.options = JSON.stringify(labels);
    select.innerHTML = labels.map(([value, text]) => `<option value="${escape(value)}">${escape(text)}</option>`)
      .join("");
    if (labels.some(([value]) => value === chosen)) select.value = chosen;
  }

  function offerPanels() {  // a chart for each suggested curve the runs have, then others, up to PANELS at first
    const logged = names(), drawn = new Set(panels.map(panel => panel.select.value));
    data.suggested.filter(name => logged.includes(name) && !offered.has(name)).forEach(name => {
      offered.add(name);
      if (!drawn.has(name)) addPanel(name);
    });
    logged.filter(name => !name.startsWith("test/") && !offered.has(name)).forEach(name => {
      if (panels.length >= PANELS) return;
      offered.add(name);
      if (!drawn.has(name)) addPanel(name);
    });
  }

  function drawCurves() {
    panels.forEach(panel => fillSelect(panel.select, names()));
    offerPanels();
    panels.forEach(drawPanel);
  }

  function buildCurves() {
    const root = document.getElementById("zoo-curves");
    root.innerHTML = '<div class="zoo-controls">' +
      '<label>x axis <select id="zoo-x"><option value="step">step</option>' +
      '<option value="seconds">wall time (s)</option><option value="flops">training FLOPs</option></select></label>' +
      '<label>lines <select id="zoo-lines"><option value="runs">each run</option>' +
      '<option value="groups">mean ± std over each group</option></select></label>' +
      '<label>smoothing <input type="range" id="zoo-smoothing" min="0" max="0.99" step="0.01" value="0">' +
      '<output id="zoo-smoothing-value">0</output></label>' +
      '<button type="button" id="zoo-add">add a chart</button></div>' +
      '<div class="zoo-panels"></div>' +
      '<p class="note">Anything the runs logged (metrics.csv) can be chosen per chart. Smoothing is an ' +
      "exponential moving average (as TensorBoard's, faint lines: the values logged); wall time is read from the " +
      "validations' clock, training FLOPs from the FLOPs per step each run recorded; bands: ± one standard deviation " +
      "over a group's runs (a configuration's seeds, or the runs of the setting's value grouped by), within the " +
      "range the metric can take.</p>";
    const several = data.order.some(id => groupSize(data.runs.get(id)) > 1);
    view.lines = several ? "groups" : "runs";
    root.querySelector("#zoo-lines").value = view.lines;
    root.querySelector("#zoo-x").addEventListener("change", event => { view.x = event.target.value; drawCurves(); });
    root.querySelector("#zoo-lines").addEventListener("change", event => {
      view.lines = event.target.value;
      drawCurves();
    });
    root.querySelector("#zoo-smoothing").addEventListener("input", event => {
      view.smoothing = Number(event.target.value);
      root.querySelector("#zoo-smoothing-value").textContent = event.target.value;
      drawCurves();
    });
    root.querySelector("#zoo-add").addEventListener("click", () => addPanel(names()[0]));
  }

  // ------------------------------------------------------------------ runs
  function progress(run) {  // from the first logged step: metrics.csv's last row until the summary's is later
    const parts = [];
    if (run.status === "running" && run.phase === "test") {
      parts.push("testing");
    } else if (run.status === "running" && isNumber(run.epoch)) {
      parts.push(`epoch ${run.epoch + 1}` + (run.max_epochs > 0 ? ` of ${run.max_epochs}` : ""));
    }
    if (isNumber(run.step)) parts.push(`step ${number(run.step)}`);
    return parts.join(" · ") || (run.status === "running" ? "starting" : "");
  }

  function written(run) {
    if (!run.updated) return "";
    const ago = Math.max(0, Date.now() / 1000 - run.updated);
    if (ago < 120) return `${Math.round(ago)} s ago`;
    if (ago < 7200) return `${Math.round(ago / 60)} min ago`;
    return new Date(run.updated * 1000).toLocaleString();
  }

  function drawRuns() {
    const root = document.getElementById("zoo-runs");
    if (!data.order.length) {
      root.innerHTML = '<p class="note">No run yet.</p>';
      return;
    }
    const rows = data.order.map(id => {
      const run = data.runs.get(id);
      const latest = Object.entries(run.latest ?? {}).map(([k, v]) => `${escape(k)} ${number(v)}`).join(", ");
      const ticked = choice.off.has(id) ? "" : " checked";
      return `<tr data-run="${escape(id)}" data-status="${escape(run.status)}"${shown(id) ? "" : ' class="zoo-off"'}>` +
        `<td><input type="checkbox" class="zoo-pick" aria-label="show ${escape(shortName(id))}"${ticked}></td>` +
        `<td><span class="zoo-swatch" style="background:${colourOf(run)}"></span>${escape(run.label)}</td>` +
        `<td>${escape(shortName(id))}</td><td class="zoo-status zoo-${escape(run.status)}">${escape(run.status)}</td>` +
        `<td>${escape(progress(run))}</td><td>${latest}</td>` +
        `<td>${isNumber(run.best) ? `${escape(run.monitor)} ${number(run.best)}` : ""}</td>` +
        `<td>${escape(written(run))}</td></tr>`;
    });
    root.innerHTML = '<table class="zoo-runs"><thead><tr><th></th><th>configuration</th><th>run</th>' +
      "<th>status</th><th>progress</th><th>latest validation</th><th>best validation</th><th>last written</th>" +
      `</tr></thead><tbody>${rows.join("")}</tbody></table>`;
  }

  // ------------------------------------------------------------------ the bar: choose, group, download
  function buildBar() {
    const bar = document.getElementById("zoo-choose");
    bar.innerHTML = '<label>runs <input type="search" id="zoo-filter" size="24" ' +
      'placeholder="filter: gru attention=dot" title="words each shown run has in its name, status or settings">' +
      '</label><button type="button" id="zoo-all">all</button><button type="button" id="zoo-none">none</button>' +
      '<span id="zoo-count"></span><span id="zoo-brushed"></span>' +
      '<label>group by <select id="zoo-by"></select></label>' +
      '<span>download <button type="button" id="zoo-board-csv">leaderboard CSV</button>' +
      '<button type="button" id="zoo-curves-csv">curves CSV</button></span>';
    bar.querySelector("#zoo-filter").addEventListener("input", event => {
      choice.words = event.target.value.toLowerCase().split(/\s+/).filter(Boolean);
      redraw();
    });
    bar.querySelector("#zoo-all").addEventListener("click", () => { choice.off.clear(); redraw(); });
    bar.querySelector("#zoo-none").addEventListener("click", () => {
      data.order.forEach(id => choice.off.add(id));
      redraw();
    });
    bar.querySelector("#zoo-by").addEventListener("change", event => { choice.by = event.target.value; redraw(); });
    bar.querySelector("#zoo-board-csv").addEventListener("click", () => download("leaderboard.csv", leaderboardCsv()));
    bar.querySelector("#zoo-curves-csv").addEventListener("click", () => download("curves.csv", curvesCsv()));
    bar.addEventListener("click", event => {
      if (event.target.id === "zoo-unbrush") unbrush();
    });
    document.getElementById("zoo-runs").addEventListener("change", event => {
      if (!event.target.classList.contains("zoo-pick")) return;
      const id = event.target.closest("tr").dataset.run;
      if (event.target.checked) choice.off.delete(id);
      else choice.off.add(id);
      redraw();
    });
  }

  function settingKeys() {  // the settings the runs differ in (and seed), which the runs can be grouped by
    const keys = telling(data.order, key => key === "seed" || !ignored(key));
    return keys.sort((a, b) => a.includes(".") - b.includes(".") || a.localeCompare(b));
  }

  function drawBar() {
    const by = data.boards[0]?.by ?? [];
    const asCompared = by.length ? `as zoo compare grouped them (--by ${by.join(",")})` : "configuration";
    fillSelect(document.getElementById("zoo-by"), [["", asCompared], ...settingKeys().map(key => [key, key])],
               choice.by);
    const count = shownIds().length;
    document.getElementById("zoo-count").textContent = `${count} of ${data.order.length} shown`;
    document.getElementById("zoo-brushed").innerHTML = choice.brushed === null ? ""
      : `parallel coordinates keep ${choice.brushed.size} <button type="button" id="zoo-unbrush">clear</button>`;
  }

  function download(name, text) {
    const link = element("a", {href: URL.createObjectURL(new Blob([text], {type: "text/csv"})), download: name});
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  }

  function leaderboardCsv() {  // every board's table as shown (regrouped, rows of runs left out hidden)
    return ZooBoard.leaderboardCsv([...document.querySelectorAll(".zoo-board")].map(board => ({
      note: data.boards[Number(board.dataset.board)]?.note || "",
      table: [...board.querySelectorAll("table.leaderboard")].find(t => !t.closest("[hidden]")),
    })).filter(board => board.table && [...board.table.tBodies[0].rows].some(row => !row.hidden)));
  }

  function curvesCsv() {  // every logged point of the runs shown, one a line
    const rows = [["run", "configuration", "group", "seed", "status", "curve", "step", "value"]];
    shownIds().forEach(id => {
      const run = data.runs.get(id), [, group] = groupOf(run);
      Object.entries(data.curves.get(id) ?? {}).forEach(([name, points]) => points.forEach(([step, value]) =>
        rows.push([shortName(id), run.label, group, run.seed, run.status, name, step, value])));
    });
    return ZooBoard.csv(rows);
  }

  // ------------------------------------------------------------------ the leaderboards, regrouped
  function drawBoards() {  // the server's table while it shows the choice; else the one regrouped here
    document.querySelectorAll(".zoo-board").forEach(board => {
      const term = data.boards[Number(board.dataset.board)];
      const server = board.querySelector(".zoo-board-server");
      const rows = [...server.querySelectorAll("table.leaderboard tbody tr")];
      const runsOf = row => JSON.parse(row.dataset.runs || "[]");
      const whole = rows.every(row => new Set(runsOf(row).map(shown)).size < 2);  // a row all in or all out
      let page = board.querySelector(".zoo-board-page");
      if (!page) board.append(page = element("div", {class: "zoo-board-page", hidden: ""}));
      if (!term || (!choice.by && whole)) {
        rows.forEach(row => { row.hidden = !runsOf(row).some(shown); });
        server.hidden = false;
        page.hidden = true;
        return;
      }
      const runs = data.order.filter(id => shown(id) && data.runs.get(id).board === Number(board.dataset.board))
        .map(id => data.runs.get(id));
      if (!runs.length) {
        page.innerHTML = '<p class="note">No run of this board is shown.</p>';
        server.hidden = true;
        page.hidden = false;
        return;
      }
      const heading = choice.by || "configuration";
      const table = ZooBoard.table(ZooBoard.regroup(runs, groupOf, term), term, row => colourOf(row.runs[0]), heading);
      const grouped = choice.by ? `grouped by ${choice.by}` : "by configuration";
      page.innerHTML = table + `<p class="note">Regrouped in the page: ${escape(grouped)}, over the ` +
        `${runs.length} run${runs.length === 1 ? "" : "s"} shown; mean ± std over each row's finished runs, a ` +
        "configuration's runs of one seed counted once; bold: the best mean of each metric. zoo compare --by " +
        `${escape(choice.by || "KEY")} --baseline ROW tests the differences.</p>`;
      server.hidden = true;
      page.hidden = false;
    });
  }

  function chooseFigures() {  // a figure drawn on the server hides the traces of runs none of which is shown
    document.querySelectorAll(".zoo-figure.js-plotly-plot").forEach(figure => {
      const visible = figure.data.map(trace => !trace.meta?.runs || trace.meta.runs.some(shown));
      if (visible.some((v, k) => v !== (figure.data[k].visible !== false))) Plotly.restyle(figure, {visible});
    });
  }

  // ------------------------------------------------------------------ settings
  const ignored = key => data.ignored.some(prefix => key === prefix || key.startsWith(`${prefix}.`));

  function varying(ids, keep = () => true) {  // the settings whose values differ between the runs ``ids``
    const keys = new Set();
    ids.forEach(id => Object.keys(data.settings.get(id) ?? {}).forEach(key => keys.add(key)));
    return [...keys].filter(key => keep(key) &&
      new Set(ids.map(id => canonical((data.settings.get(id) ?? {})[key]))).size > 1);
  }

  // The settings that tell the runs ``ids`` apart as zoo compare names its rows (zoo.report.aggregate._differs): a
  // component's field (encoder.ff_dim) only between runs of the same component, whose name says the rest.
  function telling(ids, keep = () => true) {
    const settingsOf = id => data.settings.get(id) ?? {};
    return varying(ids, keep).filter(key => {
      const parts = key.split(".");
      const parents = parts.slice(0, -1).map((_, k) => parts.slice(0, parts.length - 1 - k).join("."));
      const named = parents.find(parent => ids.some(id => parent in settingsOf(id)));
      const values = new Map();
      ids.forEach(id => {
        const within = named ? canonical(settingsOf(id)[named]) : "";
        values.set(within, (values.get(within) ?? new Set()).add(canonical(settingsOf(id)[key])));
      });
      return [...values.values()].some(seen => seen.size > 1);
    });
  }

  function drawParallel() {  // the runs listed (filter, ticks); a brush on an axis keeps some of them (brushed)
    const chart = document.querySelector("#zoo-settings .zoo-parallel");
    const counts = new Map();
    data.order.forEach(id => counts.set(data.runs.get(id).monitor, (counts.get(data.runs.get(id).monitor) ?? 0) + 1));
    const monitor = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
    const score = run => (isNumber(run.best) ? run.best : run.latest?.[monitor]);
    const ids = data.order.filter(id => listed(id) && data.runs.get(id).monitor === monitor &&
                                        isNumber(score(data.runs.get(id))));
    const keys = telling(ids, key => !ignored(key));
    const note = document.querySelector("#zoo-settings .zoo-parallel-note");
    const title = document.querySelector("#zoo-settings .zoo-parallel-title");
    note.hidden = ids.length > 1 && keys.length > 0;
    chart.hidden = title.hidden = !note.hidden;
    title.textContent = `The settings that vary across the runs listed, against validation ${monitor} (the best so ` +
      "far); drag along an axis to keep the runs in a range (in every chart and table), click the axis to let go";
    if (!note.hidden || !parallel.seen) return;
    const previous = new Map((chart.data?.[0]?.dimensions ?? []).map(d => [d.label, d.constraintrange]));
    const dimensions = keys.map(key => {
      const values = ids.map(id => data.settings.get(id)?.[key]);
      if (values.every(isNumber)) return {label: key, values};
      const categories = [...new Set(values.map(canonical))].sort();
      return {label: key, values: values.map(v => categories.indexOf(canonical(v))),
              tickvals: categories.map((_, k) => k),
              ticktext: categories.map(c => c.replace(/^"|"$/g, "").slice(0, 24))};
    });
    const scores = ids.map(id => score(data.runs.get(id)));
    dimensions.push({label: `validation ${monitor}`, values: scores});
    const drawn = JSON.stringify(dimensions);
    if (drawn === parallel.drawn) return;
    parallel.drawn = drawn;
    parallel.ids = ids;
    dimensions.forEach(d => previous.get(d.label) && (d.constraintrange = previous.get(d.label)));
    const trace = {type: "parcoords", dimensions,
                   line: {color: scores, colorscale: "Viridis", showscale: true, colorbar: {title: {text: monitor}}}};
    Plotly.react(chart, [trace], {height: 420, margin: {t: 50, r: 80, b: 30, l: 80}, uirevision: "kept"}, CONFIG);
    if (!chart.zooBrushes) {
      chart.zooBrushes = true;
      chart.on("plotly_restyle", () => {
        if (brush()) keepInPlace(drawChoice);
      });
    }
    brush();
  }

  function brush() {  // the runs within every brushed range of the parallel coordinates (null: no brush); changed?
    const chart = document.querySelector("#zoo-settings .zoo-parallel");
    const dimensions = chart.data?.[0]?.dimensions ?? [];
    const ranges = dimensions.map(({constraintrange: r}) => (r && r.length ? (Array.isArray(r[0]) ? r : [r]) : null));
    let kept = null;
    if (ranges.some(Boolean)) {
      kept = new Set(parallel.ids.filter((_, k) => dimensions.every((d, j) => !ranges[j] ||
        ranges[j].some(([low, high]) => d.values[k] >= low && d.values[k] <= high))));
    }
    const changed = JSON.stringify(kept && [...kept]) !== JSON.stringify(choice.brushed && [...choice.brushed]);
    choice.brushed = kept;
    return changed;
  }

  function unbrush() {
    const chart = document.querySelector("#zoo-settings .zoo-parallel");
    const dimensions = chart.data?.[0]?.dimensions ?? [];
    const cleared = Object.fromEntries(dimensions.map((_, k) => [`dimensions[${k}].constraintrange`, null]));
    Plotly.restyle(chart, cleared);  // plotly_restyle: brush() finds none, and the page is drawn again
  }

  function drawDiff() {
    const root = document.getElementById("zoo-settings");
    const [first, second] = root.querySelectorAll(".zoo-diff select");
    const ids = shownIds().length ? shownIds() : data.order;
    const options = ids.map(id => [id, `${data.runs.get(id).label} — ${shortName(id)}`]);
    // Runs still shown stay chosen; one a brush or filter hid gives way to a shown one, the second never the first
    // while another is shown: a run of another configuration if there is one.
    const firstId = ids.includes(first.value) ? first.value : ids[0];
    const others = ids.filter(id => id !== firstId);
    const other = others.find(id => data.runs.get(id).group !== data.runs.get(firstId).group) ?? others[0];
    const secondId = others.includes(second.value) ? second.value : other ?? firstId;
    fillSelect(first, options);
    fillSelect(second, options);
    [first.value, second.value] = [firstId, secondId];
    const table = root.querySelector(".zoo-diff-table");
    const keys = varying([first.value, second.value]).sort();
    const value = v => (v === undefined ? "—" : typeof v === "string" ? v : canonical(v));
    table.innerHTML = keys.length
      ? `<table class="zoo-diff"><thead><tr><th>setting</th><th>${escape(shortName(first.value))}</th>` +
        `<th>${escape(shortName(second.value))}</th></tr></thead><tbody>` +
        keys.map(key => `<tr><td>${escape(key)}</td><td>${escape(value(data.settings.get(first.value)?.[key]))}</td>` +
                        `<td>${escape(value(data.settings.get(second.value)?.[key]))}</td></tr>`).join("") +
        "</tbody></table>"
      : '<p class="note">These two runs have every setting alike.</p>';
  }

  function buildSettings() {
    const root = document.getElementById("zoo-settings");
    root.innerHTML = '<p class="zoo-parallel-title"></p><div class="zoo-parallel plotly-graph-div"></div>' +
      '<p class="note zoo-parallel-note">Parallel coordinates need two runs with a validation score that differ ' +
      "in a setting.</p><h3>Config diff</h3>" +
      '<div class="zoo-diff"><label>run <select></select></label> <label>against <select></select></label></div>' +
      '<div class="zoo-diff-table"></div>';
    root.querySelectorAll(".zoo-diff select").forEach(select => select.addEventListener("change", drawDiff));
    new IntersectionObserver((seen, observer) => {
      if (!seen.some(entry => entry.isIntersecting)) return;
      observer.disconnect();
      parallel.seen = true;
      keepInPlace(() => {
        drawParallel();
        drawChoice();
      });
    }).observe(root.querySelector(".zoo-parallel"));
  }

  // ------------------------------------------------------------------ figures drawn on the server
  function drawFigures(root) {  // plot each placeholder's JSON; a figure kept from before takes its new JSON
    root.querySelectorAll(".zoo-figure").forEach(figure => {
      const source = figure.querySelector(":scope > script[type='application/json']");
      if (!source) return;
      const spec = JSON.parse(source.textContent);
      source.remove();
      (figure.classList.contains("js-plotly-plot") ? Plotly.react : Plotly.newPlot)(figure, spec.data, spec.layout,
                                                                                   CONFIG);
    });
  }

  // New sections in where they changed; a section alike is kept as it is (its charts, the reader's sorting), and
  // a changed one keeps its figures (the same elements, zoom and all) and the sorting of its tables.
  function swap(container, html) {
    keepInPlace(() => {
      const held = new Map([...container.querySelectorAll(":scope > .zoo-section")].map(s => [s.dataset.key, s]));
      const fresh = [...element("div", {}, html).children];
      const next = fresh.map(section => {
        const old = held.get(section.dataset.key);
        if (old && old.zooSource === section.outerHTML) return old;
        const source = section.outerHTML;
        if (old) keepFigures(old, section);
        section.zooSource = source;
        return section;
      });
      container.replaceChildren(...next);
      drawFigures(container);
      drawBoards();
      chooseFigures();
    });
  }

  function keepFigures(old, section) {
    const kept = [...old.querySelectorAll(".zoo-figure")];
    section.querySelectorAll(".zoo-figure").forEach((placeholder, k) => {
      if (!kept[k]) return;
      kept[k].querySelectorAll(":scope > script").forEach(script => script.remove());
      kept[k].prepend(placeholder.querySelector("script"));
      placeholder.replaceWith(kept[k]);
    });
    const sorted = [...old.querySelectorAll("table")].map(t => t.querySelector("th[data-order]"));
    section.querySelectorAll("table").forEach((table, k) => {  // the reader's sorting of each table stays
      const th = sorted[k] && table.querySelectorAll("th")[[...sorted[k].parentNode.children].indexOf(sorted[k])];
      if (th && typeof sortTable === "function") {
        for (let turn = 0; turn < (sorted[k].dataset.order === "down" ? 2 : 1); turn++) sortTable(th);
      }
    });
  }

  // ------------------------------------------------------------------ the page
  function drawChoice() {  // everything the choice of runs and grouping changes
    recolour();
    drawBar();
    drawRuns();
    drawCurves();
    drawBoards();
    chooseFigures();
    drawDiff();
  }

  function redraw() {  // the reader changed the choice: the parallel coordinates too (their runs), in place
    keepInPlace(() => {
      drawParallel();
      drawChoice();
    });
  }

  function update(state) {
    keepInPlace(() => {
      const changed = merge(state);
      drawBar();
      drawRuns();
      drawBoards();
      if (changed.curves) drawCurves();
      if (changed.settings || changed.curves) {
        drawParallel();
        drawDiff();
      }
    });
  }

  function start() {
    const state = JSON.parse(document.getElementById("zoo-data").textContent);
    merge(state);
    document.querySelectorAll("#zoo-top > .zoo-section, #zoo-bottom > .zoo-section")
      .forEach(section => { section.zooSource = section.outerHTML; });
    drawFigures(document.body);
    buildBar();
    buildCurves();
    buildSettings();
    drawParallel();
    drawChoice();
    api.since = {cursor: state.cursor, server: state.server, sections: state.sections};
  }

  const api = {update, swap, data, choice, since: null, palette: keys => ZooPalette.palette(keys, data.palette)};
  document.addEventListener("DOMContentLoaded", start);
  return api;
})();
