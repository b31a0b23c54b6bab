// The dashboard's updates (zoo.report.serve), inlined into the report's page: every few seconds it asks the
// server what changed since its last answer (new points, new runs, every run's status) and hands it to the
// charts (Zoo.update), which change in place. When a run appears, finishes or fails, it fetches the sections
// drawn on the server (leaderboard, costs, samples, ...) and swaps them in (Zoo.swap). A written report has no
// #zoo-live-terms, and asks nothing.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const terms = document.getElementById("zoo-live-terms");
  if (!terms) return;
  const live = JSON.parse(terms.textContent), line = document.getElementById("zoo-live");
  let {cursor, server, sections} = Zoo.since;
  const say = text => { line.hidden = false; line.textContent = text; };
  const time = () => new Date().toLocaleTimeString();

  async function ask(url) {
    const response = await fetch(url, {cache: "no-store"});
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error ?? `${response.status} ${response.statusText}`);
    return answer;
  }

  async function poll() {
    try {
      const state = await ask(`${live.state}?since=${cursor}`);
      if (state.server !== server) {  // the dashboard restarted: its readings are not the ones this page holds
        location.reload();
        return;
      }
      Zoo.update(state);
      cursor = state.cursor;
      if (state.sections !== sections) {
        const drawn = await ask(live.sections);
        Zoo.swap(document.getElementById("zoo-top"), drawn.top);
        Zoo.swap(document.getElementById("zoo-bottom"), drawn.bottom);
        sections = drawn.mark;
      }
      say(`Live: updated at ${time()}, every ${live.interval} s.`);
    } catch (error) {
      say(`Live: no answer from the dashboard at ${time()} (${error.message}); asking again every ${live.interval} s.`);
    }
    setTimeout(poll, live.interval * 1000);
  }

  say(`Live: updates every ${live.interval} s.`);
  setTimeout(poll, live.interval * 1000);
});
