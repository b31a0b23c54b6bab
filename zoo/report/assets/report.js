// The comparison report's script, inlined into its page by zoo.report.html: a click on a column's heading
// sorts the table by that column, numbers as numbers, the next click in the other direction.
function sortTable(th) {
  const table = th.closest("table"), column = [...th.parentNode.children].indexOf(th);
  const rows = [...table.tBodies[0].rows], up = th.dataset.order !== "up";
  const value = row => { const text = row.cells[column].innerText.split(" ")[0].replace(/,/g, "");
                         const number = parseFloat(text); return isNaN(number) ? text : number; };
  rows.sort((a, b) => (value(a) > value(b) ? 1 : value(a) < value(b) ? -1 : 0) * (up ? 1 : -1));
  rows.forEach(row => table.tBodies[0].appendChild(row)); th.dataset.order = up ? "up" : "down";
}
