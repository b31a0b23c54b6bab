// The comparison report's script, inlined into its page by zoo.report.html: a click on a column's heading
// sorts the table by that column, the next click in the other direction. A cell sorts by its data-value where
// it has one (the true number behind its rounded text), else by its text, as a number when it reads as one;
// numbers come before words, and empty cells stay last in either direction.
function sortKey(cell) {
  const raw = (cell.dataset.value ?? cell.innerText).trim();
  if (raw === "") return null;
  const number = Number(cell.dataset.value === undefined ? raw.replace(/,/g, "") : raw);
  return isNaN(number) ? raw : number;
}

function sortTable(th) {
  const body = th.closest("table").tBodies[0], column = [...th.parentNode.children].indexOf(th);
  const up = th.dataset.order !== "up";
  const order = (a, b) => {
    if (a === null || b === null) return (a === null) - (b === null);
    if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1;
    return (typeof a === "number" ? a - b : a.localeCompare(b)) * (up ? 1 : -1);
  };
  const keyed = [...body.rows].map(row => [sortKey(row.cells[column]), row]);
  keyed.sort((a, b) => order(a[0], b[0]));
  keyed.forEach(([, row]) => body.appendChild(row));
  [...th.parentNode.children].forEach(other => delete other.dataset.order);
  th.dataset.order = up ? "up" : "down";
}
