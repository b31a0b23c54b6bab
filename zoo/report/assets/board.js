// The leaderboard as the reader regroups it, and any leaderboard as CSV; inlined into the report's page by
// zoo.report.html. When the reader groups the runs by a setting (as zoo compare --by does) or chooses some of
// them, a board's table is computed here from the runs' own numbers (zoo.report.live.results): per group, each
// test metric's and cost's mean ± std over its finished runs, the runs of one configuration and seed counted once
// (as zoo compare counts them), sorted by the board's metric in its direction, each column at the fewest decimals
// that tell its rows apart (zoo.report.columns). The table has the shape of the one drawn on the server (data-value,
// a span.spread's data-std, data-runs), so sorting it (report.js) and writing it as CSV read both alike.
"use strict";

const ZooBoard = (() => {
  const PREFIXES = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  const COMPACT_FROM = 1e4, MAX_DECIMALS = 4, SCORE_DECIMALS = 1;
  const escape = text => String(text ?? "").replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
  const isNumber = value => typeof value === "number" && isFinite(value);
  const mean = values => values.reduce((a, b) => a + b, 0) / values.length;

  function show(value) {  // a setting's value as the command line writes it (zoo.report.words.show)
    if (value === null || value === undefined) return "null";
    if (Array.isArray(value)) return `[${value.map(show).join(",")}]`;
    return typeof value === "object" ? JSON.stringify(value) : String(value);
  }

  function stat(values) {  // mean, sample std (0 for one value) and count; null for none
    if (!values.length) return null;
    const m = mean(values);
    const std = values.length > 1 ? Math.sqrt(values.reduce((a, v) => a + (v - m) ** 2, 0) / (values.length - 1)) : 0;
    return {mean: m, std, n: values.length};
  }

  const fixed = (value, digits) =>
    value.toLocaleString("en", {minimumFractionDigits: digits, maximumFractionDigits: digits});

  function decimals(means, natural = SCORE_DECIMALS) {  // the fewest at which the distinct means read differently
    const distinct = [...new Set(means)];
    for (let digits = natural; digits <= MAX_DECIMALS; digits++) {
      if (new Set(distinct.map(m => fixed(m, digits))).size === distinct.length) return digits;
    }
    return Math.max(natural, MAX_DECIMALS);
  }

  function siUnit(means) {  // a column of large numbers in one SI unit, from its largest mean (zoo.report.columns)
    const largest = Math.max(0, ...means.map(m => Number(Math.abs(m).toPrecision(3))));
    return PREFIXES.find(([scale]) => largest >= Math.max(scale, COMPACT_FROM)) || [1, ""];
  }

  function statText(s, digits, [scale, prefix] = [1, ""]) {  // 32.05 ± 2.83; in an SI unit, 1.27M ± 0.03M
    if (!s) return "";
    const compact = value => `${Number((value / scale).toPrecision(3))}${prefix}`;
    const m = prefix ? compact(s.mean) : fixed(s.mean, digits);
    const std = prefix ? (s.std ? compact(s.std) : "0") : fixed(s.std, digits);
    return s.n === 1 ? m : `${m} ± ${std}`;
  }

  function regroup(runs, groupOf, term) {  // rows of one board: [{id, label, runs, metrics, costs, ...}], ranked
    const groups = new Map();
    runs.forEach(run => {
      const [id, label] = groupOf(run);
      if (!groups.has(id)) groups.set(id, {id, label, runs: []});
      groups.get(id).runs.push(run);
    });
    const metrics = Object.keys(term.directions);
    const rows = [...groups.values()].map(group => {
      const finished = group.runs.filter(run => run.status === "finished");
      const repetitions = new Map();  // one per configuration and seed
      finished.forEach(run => {
        const key = JSON.stringify([run.group, String(run.seed)]);
        repetitions.set(key, [...(repetitions.get(key) ?? []), run]);
      });
      const over = pick => stat([...repetitions.values()].map(members => members.map(pick).filter(isNumber))
        .filter(values => values.length).map(mean));
      const statuses = new Map();
      group.runs.forEach(run => statuses.set(run.status, (statuses.get(run.status) ?? 0) + 1));
      return {
        ...group,
        repetitions: repetitions.size,
        configurations: new Set(finished.map(run => run.group)).size,
        metrics: Object.fromEntries(metrics.map(name => [name, over(run => run.results?.test?.[name])])),
        costs: Object.fromEntries(term.costs.map(name => [name, over(run => run.results?.costs?.[name])])),
        statuses: [...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${n} ${s}`).join(", "),
      };
    });
    const higher = term.directions[term.sort] ?? true;
    const rank = row => (row.metrics[term.sort] ? (higher ? -1 : 1) * row.metrics[term.sort].mean : Infinity);
    return rows.sort((a, b) => rank(a) - rank(b));
  }

  function numberCell(s, text, best) {  // as zoo.report.html writes one: the ± std a span with its true value
    const [mean, std] = text.split(" ± ");
    const spread = std === undefined ? "" : ` <span class="spread" data-std="${s.std}">± ${escape(std)}</span>`;
    return `<td${s ? ` data-value="${s.mean}"` : ""}${best ? ' class="best"' : ""}>${escape(mean)}${spread}</td>`;
  }

  function table(rows, term, colourOf, heading) {  // the board's table, the server's classes and attributes
    const metrics = Object.keys(term.directions).filter(name => rows.some(row => row.metrics[name]));
    const alike = name => {  // a cost every row has alike (frozen 0): said by the server's table, left out here
      const found = rows.map(row => row.costs[name]).filter(Boolean);
      return found.length > 1 && found.every(c => c.std === 0 && c.mean === found[0].mean);
    };
    const costs = term.costs.filter(name => rows.some(row => row.costs[name]) && !alike(name));
    const head = [heading, "n", ...metrics, ...costs, "runs"]
      .map(name => `<th onclick="sortTable(this)">${escape(name)}</th>`).join("");
    const digits = Object.fromEntries(metrics.map(name =>
      [name, decimals(rows.filter(row => row.metrics[name]).map(row => row.metrics[name].mean))]));
    const best = Object.fromEntries(metrics.map(name => {
      const means = rows.map(row => row.metrics[name]?.mean).filter(isNumber);
      const higher = term.directions[name] ?? true;
      return [name, new Set(means).size > 1 ? (higher ? Math.max(...means) : Math.min(...means)) : null];
    }));
    const units = Object.fromEntries(costs.map(name =>
      [name, siUnit(rows.filter(row => row.costs[name]).map(row => row.costs[name].mean))]));
    const body = rows.map(row => {
      const n = row.configurations > 1 ? `${row.repetitions} (${row.configurations} cfg)` : String(row.repetitions);
      const cells = [
        `<td>${escape(row.label)}</td>`,
        `<td data-value="${row.repetitions}">${escape(n)}</td>`,
        ...metrics.map(name => numberCell(row.metrics[name], statText(row.metrics[name], digits[name]),
                                          row.metrics[name] && row.metrics[name].mean === best[name])),
        ...costs.map(name => numberCell(row.costs[name], statText(row.costs[name], term.decimals[name], units[name]))),
        `<td>${escape(row.statuses)}</td>`,
      ];
      const runs = escape(JSON.stringify(row.runs.map(run => run.id)));
      return `<tr data-runs="${runs}" style="--swatch:${colourOf(row)}">${cells.join("")}</tr>`;
    });
    return `<table class="leaderboard"><thead><tr>${head}</tr></thead><tbody>${body.join("")}</tbody></table>`;
  }

  // ------------------------------------------------------------------ CSV
  const field = value => {
    const text = String(value ?? "");
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const csv = rows => rows.map(row => row.map(field).join(",")).join("\n") + "\n";

  function records(tableElement) {  // the rows shown, a column of means ± std as its mean and std at every digit
    const heads = [...tableElement.tHead.rows[0].cells].map(th => th.textContent.trim());
    const rows = [...tableElement.tBodies[0].rows].filter(row => !row.hidden);
    const std = cell => cell?.querySelector("[data-std]")?.dataset.std;
    const spread = heads.map((_, k) => rows.some(row => std(row.cells[k]) !== undefined));
    const columns = heads.flatMap((head, k) => (spread[k] ? [`${head} mean`, `${head} std`] : [head]));
    const values = rows.map(row => heads.flatMap((_, k) => {
      const cell = row.cells[k];
      return spread[k] ? [cell?.dataset.value ?? "", std(cell) ?? ""] : [cell?.textContent.trim() ?? ""];
    }));
    return {columns, values};
  }

  function leaderboardCsv(boards) {  // [{note, table}]: one CSV, a board column first when there are several
    const found = boards.map(({note, table: shown}) => ({note, ...records(shown)}));
    const columns = [...new Set(found.flatMap(board => board.columns))];
    const several = found.length > 1;
    const rows = found.flatMap(board => board.values.map(values => {
      const byName = new Map(board.columns.map((column, k) => [column, values[k]]));
      return [...(several ? [board.note] : []), ...columns.map(column => byName.get(column) ?? "")];
    }));
    return csv([[...(several ? ["board"] : []), ...columns], ...rows]);
  }

  return {show, stat, statText, decimals, regroup, table, csv, leaderboardCsv};
})();
