// The report's sample outputs (zoo.report.samples), inlined into its page by zoo.report.html: the radio buttons
// above the table show its items in one of two orders. A row carries its rank in each order it belongs to
// (data-first: the first test items; data-spread: where the systems disagree most); the others are hidden.
function orderSamples(input) {
  const body = input.form.querySelector("table.samples").tBodies[0], key = input.value;
  const rows = [...body.rows];
  rows.forEach((row) => { row.hidden = row.dataset[key] === undefined; });
  rows.filter((row) => !row.hidden)
    .sort((a, b) => Number(a.dataset[key]) - Number(b.dataset[key]))
    .forEach((row) => body.appendChild(row));
}
