// molsift serve's search page: fills the database list, keeps the structure editor (JSME, when
// vendored) and the query text box in step both ways, sends searches to /api/v1/search, shows
// pages of hits with depictions (/api/v1/depict; substructure and SMARTS matches highlighted; a
// click enlarges one), with the score columns each search type has, and says what went wrong in
// words.
"use strict";

const $ = (id) => document.getElementById(id);
// maxLength: the most rows the server gives in a page (/api/v1/databases: --max-length)
const state = { dbs: {}, params: null, start: 0, total: 0, maxLength: 10000 };
// the depictions in the table and enlarged, in CSS pixels (the SVG is drawn at this size)
const DEPICT = { width: 280, height: 220 };
const ZOOM = { width: 640, height: 480 };
// the longest wait for the editor to start once its script has loaded
const EDITOR_START_MS = 20000;

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

// ---- the structure editor (JSME) and the text box, kept in step ----

// fromBox: the text box's last SMILES sent to the editor, until the editor's answering change
// (JSME reads asynchronously the first time: it loads its SMILES reader then)
const editor = { applet: null, fromBox: null, timer: null };

function editorNote(text) {
  $("jsme").hidden = true;
  const note = $("editor-note");
  note.textContent = text;
  note.hidden = false;
}

// JSME calls this once its code has loaded (GWT's loader, jsme.nocache.js)
window.jsmeOnLoad = function () {
  clearTimeout(editor.timer);
  const width = Math.min($("editor-box").clientWidth || 380, 560);
  const applet = new JSApplet.JSME("jsme", width + "px", "340px");
  editor.applet = applet;
  window.jsmeApplet = applet; // for scripts and tests: JSME's own API
  applet.setAfterStructureModifiedCallback((event) => {
    if (event.origin === "API" && editor.fromBox !== null) {
      editor.fromBox = null; // the text box's own SMILES, drawn: the box keeps the text as typed
      return;
    }
    $("query").value = applet.smiles();
  });
  if ($("query").value.trim()) loadIntoEditor();
  window.addEventListener("resize", () => {
    const w = Math.min($("editor-box").clientWidth || 380, 560);
    applet.setSize(w + "px", "340px");
  });
};

function loadEditorScript() {
  const script = document.createElement("script");
  script.src = "static/vendor/jsme/jsme.nocache.js";
  script.onerror = () =>
    editorNote("The structure editor is not installed with this server " +
      "(scripts/vendor_js.sh vendors it): type a SMILES below.");
  script.onload = () => {
    editor.timer = setTimeout(() => {
      if (!editor.applet) editorNote("The structure editor did not start: type a SMILES below.");
    }, EDITOR_START_MS);
  };
  document.head.appendChild(script);
}

// the text box's SMILES drawn in the editor (not SMARTS: JSME draws molecules)
function loadIntoEditor() {
  const applet = editor.applet;
  if (!applet || $("type").value === "smarts") return;
  const text = $("query").value.trim();
  try {
    if (!text) {
      applet.reset();
    } else {
      editor.fromBox = text;
      applet.readGenericMolecularInput(text);
      // text JSME cannot read changes nothing and calls back never: forget it after a while
      setTimeout(() => {
        if (editor.fromBox === text) editor.fromBox = null;
      }, 3000);
    }
  } catch (e) {
    editor.fromBox = null; // not something JSME reads: the text box stands as typed
  }
}

function debounce(f, ms) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(f, ms);
  };
}

// ---- search types and their columns ----

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
  toggleOptions();
}

// the inputs each search type reads (data-types on their labels)
function toggleOptions() {
  const type = $("type").value;
  for (const el of document.querySelectorAll("label.opt")) {
    el.hidden = !el.dataset.types.split(" ").includes(type);
  }
}

function fixed(digits) {
  return (value) => (value === undefined || value === null ? "" : Number(value).toFixed(digits));
}

function editsByKind(hit) {
  const parts = ["tdn", "tup", "rdn", "rup", "ldn", "lup"]
    .filter((kind) => hit[kind])
    .map((kind) => kind + " " + hit[kind]);
  return parts.length ? parts.join(", ") : "none";
}

// the columns after #, structure, id and SMILES; each: key, header, tooltip, cell text
function scoreColumns(type, db) {
  const fp = db && db.fingerprint ? db.fingerprint.kind + ", " + db.fingerprint.bits + " bits" : "";
  if (type === "similarity") {
    return [{ key: "score", label: "Tanimoto", title: "Tanimoto similarity of the fingerprints " +
      "(" + fp + "): 1 for identical fingerprints", text: (h) => fixed(3)(h.score) }];
  }
  if (type === "analogs") {
    return [
      { key: "distance", label: "Edits", title: "graph edit distance between the skeletons " +
        "(atoms and bonds, elements ignored)", text: (h) => String(h.distance) },
      { key: "kinds", label: "Edits by kind", title: "t: terminal atom, r: ring bond, l: " +
        "linker atom; up: added, dn: removed", text: editsByKind },
      { key: "mut", label: "Elements changed", title: "atoms whose element differs from the " +
        "query atom they come from (?: unknown)", text: (h) => (h.mut < 0 ? "?" : String(h.mut)) },
      { key: "score", label: "Tanimoto", title: "Tanimoto similarity, Morgan radius 2",
        text: (h) => fixed(3)(h.score) },
    ];
  }
  return [];
}

// what the rows' order and score mean, said above the table
function explain(type) {
  return {
    similarity: "Best first by Tanimoto similarity of the fingerprints (1 = identical).",
    analogs: "Analogs by graph edit distance of the skeletons (Edits), then Tanimoto " +
      "(Morgan radius 2). Edits by kind: tup/tdn terminal atom added/removed, rup/rdn ring " +
      "bond, lup/ldn linker atom.",
    substructure: "No score: every hit contains the query (highlighted); hits in library order.",
    smarts: "No score: every hit matches the SMARTS (highlighted); hits in library order.",
    exact: "No score: the query molecule itself (the same canonical SMILES).",
  }[type] || "";
}

function searchURL(params, start, length, fmt) {
  const q = new URLSearchParams(params);
  q.set("start", start);
  q.set("length", length);
  if (fmt) q.set("fmt", fmt);
  return "api/v1/search?" + q.toString();
}

// the depiction of a hit: the query's match highlighted for substructure and SMARTS searches
function depictURL(smiles, size, params) {
  const q = new URLSearchParams({ smiles: smiles, width: size.width, height: size.height });
  if (params.type === "substructure" || params.type === "smarts") {
    q.set("highlight", params.query);
    if (params.type === "smarts") q.set("smarts", "true");
  }
  return "api/v1/depict?" + q.toString();
}

function zoom(hit) {
  $("zoom-img").src = depictURL(hit.smiles, ZOOM, state.params);
  $("zoom-img").alt = hit.smiles;
  $("zoom-caption").textContent = hit.id + "  " + hit.smiles;
  $("zoom").showModal();
}

function render(body) {
  const type = state.params.type;
  const columns = [
    { key: "rank", label: "#" },
    { key: "structure", label: "Structure" },
    { key: "id", label: "Id" },
    { key: "smiles", label: "SMILES" },
    ...scoreColumns(type, state.dbs[state.params.db]),
  ];
  const head = document.createElement("tr");
  for (const col of columns) {
    const th = document.createElement("th");
    th.textContent = col.label;
    th.dataset.col = col.key;
    if (col.title) th.title = col.title;
    head.appendChild(th);
  }
  document.querySelector("#hits thead").replaceChildren(head);
  const tbody = document.querySelector("#hits tbody");
  tbody.innerHTML = "";
  for (const hit of body.hits) {
    const tr = document.createElement("tr");
    for (const col of columns) {
      const td = document.createElement("td");
      td.dataset.col = col.key;
      td.dataset.label = col.label;
      if (col.key === "structure") {
        const img = document.createElement("img");
        img.alt = hit.smiles;
        img.width = DEPICT.width;
        img.height = DEPICT.height;
        img.src = depictURL(hit.smiles, DEPICT, state.params);
        img.title = "click to enlarge";
        img.addEventListener("click", () => zoom(hit));
        td.appendChild(img);
      } else {
        td.textContent = col.text ? col.text(hit) : String(hit[col.key]);
      }
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  state.total = body.total;
  const length = Number($("length").value);
  const last = Math.min(state.start + body.hits.length, body.total);
  $("summary").textContent = body.total.toLocaleString() + " hit" + (body.total === 1 ? "" : "s") +
    (body.truncated ? " (more not kept)" : "") +
    (body.partial ? " (the time limit ended the walk)" : "") + " in " + body.ms.toFixed(1) + " ms";
  $("pageinfo").textContent = body.total ? (state.start + 1) + "-" + last : "no hits";
  $("explain").textContent = explain(type);
  $("prev").disabled = state.start === 0;
  $("next").disabled = state.start + length >= body.total;
  // the first 10,000 hits, or as many as the server gives in a page (a longer one is a 400)
  $("download").href = searchURL(state.params, 0, Math.min(10000, state.maxLength), "tsv");
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
  for (const label of document.querySelectorAll("label.opt")) {
    const input = label.querySelector("input");
    if (!label.hidden && input.value !== "") params[input.name] = input.value;
  }
  state.params = params;
  run(0);
});
$("prev").addEventListener("click", () => run(Math.max(0, state.start - Number($("length").value))));
$("next").addEventListener("click", () => run(state.start + Number($("length").value)));
$("db").addEventListener("change", fillTypes);
$("type").addEventListener("change", () => {
  toggleOptions();
  loadIntoEditor(); // SMILES typed for a SMARTS search is drawn once the type reads SMILES
});
$("query").addEventListener("input", debounce(loadIntoEditor, 400));
$("zoom-close").addEventListener("click", () => $("zoom").close());
$("zoom").addEventListener("click", (event) => {
  if (event.target === $("zoom")) $("zoom").close(); // a click outside the picture
});

loadEditorScript();
(async () => {
  try {
    const body = await getJSON("api/v1/databases");
    if (body.max_length) state.maxLength = body.max_length;
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
