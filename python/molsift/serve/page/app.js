// molsift serve's search page: fills the database list, sends searches to /api/v1/search, shows
// pages of hits with depictions (/api/v1/depict), and says what went wrong in words.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { dbs: {}, params: null, start: 0, total: 0 };

function showError(message) {
  const el = $("error");
  el.textContent = message;
  el.hidden = !message;
}

async function getJSON(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new Error("the server cannot be reached (" + e.message + ")");
  }
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    body = null;
  }
  if (!response.ok) {
    const why = body && body.error ? body.error : response.status + " " + response.statusText;
    throw new Error(why);
  }
  return body;
}

function fillTypes() {
  const db = state.dbs[$("db").value];
  const select = $("type");
  const previous = select.value;
  select.innerHTML = "";
  for (const t of db ? db.types : []) {
    const option = document.createElement("option");
    option.value = t;
    option.textContent = t;
    select.appendChild(option);
  }
  if ([...select.options].some((o) => o.value === previous)) select.value = previous;
  toggleSimilarity();
}

function toggleSimilarity() {
  const sim = $("type").value === "similarity";
  for (const el of document.querySelectorAll(".sim")) el.hidden = !sim;
}

function searchURL(params, start, length, fmt) {
  const q = new URLSearchParams(params);
  q.set("start", start);
  q.set("length", length);
  if (fmt) q.set("fmt", fmt);
  return "api/v1/search?" + q.toString();
}

function render(body) {
  const tbody = document.querySelector("#hits tbody");
  tbody.innerHTML = "";
  for (const hit of body.hits) {
    const tr = document.createElement("tr");
    const img = document.createElement("img");
    img.alt = hit.smiles;
    img.src = "api/v1/depict?" + new URLSearchParams({ smiles: hit.smiles, width: 300, height: 240 });
    const cells = [String(hit.rank), img, hit.id, hit.smiles,
      hit.score === undefined ? "" : hit.score.toFixed(3)];
    cells.forEach((value, i) => {
      const td = document.createElement("td");
      if (value instanceof Node) td.appendChild(value); else td.textContent = value;
      if (i === 3) td.className = "smiles";
      if (i === 4) td.className = "score";
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
  }
  state.total = body.total;
  const length = Number($("length").value);
  const last = Math.min(state.start + body.hits.length, body.total);
  $("summary").textContent = body.total.toLocaleString() + " hit" + (body.total === 1 ? "" : "s") +
    (body.truncated ? " (more not kept)" : "") + " in " + body.ms.toFixed(1) + " ms";
  $("pageinfo").textContent = body.total ? (state.start + 1) + "-" + last : "no hits";
  $("prev").disabled = state.start === 0;
  $("next").disabled = state.start + length >= body.total;
  $("download").href = searchURL(state.params, 0, 10000, "tsv");
  $("results").hidden = false;
}

async function run(start) {
  const button = $("submit");
  button.disabled = true;
  showError("");
  try {
    state.start = start;
    const body = await getJSON(searchURL(state.params, start, $("length").value));
    render(body);
  } catch (e) {
    $("results").hidden = true;
    showError("Search failed: " + e.message);
  } finally {
    button.disabled = false;
  }
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const params = { db: $("db").value, query: $("query").value.trim(), type: $("type").value };
  if (params.type === "similarity") {
    if ($("threshold").value !== "") params.threshold = $("threshold").value;
    if ($("k").value !== "") params.k = $("k").value;
  }
  state.params = params;
  run(0);
});
$("prev").addEventListener("click", () => run(Math.max(0, state.start - Number($("length").value))));
$("next").addEventListener("click", () => run(state.start + Number($("length").value)));
$("db").addEventListener("change", fillTypes);
$("type").addEventListener("change", toggleSimilarity);

(async () => {
  try {
    const body = await getJSON("api/v1/databases");
    for (const db of body.databases) {
      state.dbs[db.name] = db;
      const option = document.createElement("option");
      option.value = db.name;
      option.textContent = db.name + " (" + db.molecules.toLocaleString() + " molecules)";
      $("db").appendChild(option);
    }
    fillTypes();
  } catch (e) {
    showError("Cannot list the databases: " + e.message);
  }
})();
