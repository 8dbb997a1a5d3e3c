"""`molsift serve`: a live server (uvicorn on a free loopback port, in this process) answering over
real HTTP, from the one store as ingest writes it (with every index, and without the
substructure and analog indexes). Similarity hits equal `store.search` and RDKit's brute force;
substructure and SMARTS equal `store.substructure` and RDKit's brute force; exact equals
`store.lookup`; bad requests get 4xx with a JSON message, never a traceback; the access log has
one JSON line per request; the concurrency gate answers 503 and 504 as documented; the CLI
serves (its banner naming the port bound, `--port 0` too, and the types /api/v1/databases
lists), and refuses a version-1 store and a port in use in one line."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from rdkit import Chem, DataStructs, RDLogger
from rdkit.Chem import rdFingerprintGenerator
from servers import Live, asgi_get, fetch, free_socket

import molsift
from molsift.serve import Catalog, Limits, create_app
from molsift.serve.app import PAGE
from molsift.serve.limits import Gate, ServiceError

RDLogger.DisableLog("rdApp.*")

QUERIES = ["c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "O=C(O)c1ccccc1", "Clc1ccccc1", "CCN(CC)CC"]


@pytest.fixture(scope="module")
def served(tmp_path_factory, bundled_smi):
    d = tmp_path_factory.mktemp("serve")
    # nci: the one store with every index (SmallWorld's submit on it runs the analog search)
    full = d / "nci.store"
    molsift.ingest(bundled_smi, full, workers=2, progress=False)
    # nci2: the same molecules without the substructure and analog indexes (what the tests
    # below check the service says of one)
    bare = d / "nci2.store"
    molsift.ingest(bundled_smi, bare, workers=2, progress=False, pattern=False, analogs=False)
    catalog = Catalog()
    catalog.add("nci", str(full))
    catalog.add("nci2", str(bare))
    log_path = d / "access.log"
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115
    live = Live(create_app(catalog, Limits(max_length=500), log))
    yield live, molsift.open_store(full), molsift.open_store(bare), log_path
    live.stop()
    log.close()
    catalog.close()


def api(live, path, **params):
    status, ctype, body = fetch(live.url(path, **params))
    return status, (json.loads(body) if "json" in ctype else body)


def test_databases_lists_the_stores_and_what_each_answers(served):
    live, nci, nci2, _ = served
    status, body = api(live, "/api/v1/databases")
    assert status == 200
    dbs = {d["name"]: d for d in body["databases"]}
    assert dbs["nci"]["molecules"] == len(nci) and dbs["nci2"]["molecules"] == len(nci2)
    assert dbs["nci"]["types"] == ["similarity", "substructure", "smarts", "exact", "analogs"]
    assert dbs["nci2"]["types"] == ["similarity", "exact"]
    assert dbs["nci"]["format_version"] == 2 and dbs["nci2"]["format_version"] == 2


def rdkit_scores(store, query: str) -> list[float]:
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in store.smiles]
    return DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(Chem.MolFromSmiles(query)), fps)


@pytest.mark.parametrize("db", ["nci", "nci2"])
def test_similarity_equals_store_search_and_rdkit(served, db):
    live, nci, nci2, _ = served
    store = nci if db == "nci" else nci2
    for q in QUERIES:
        for params in ({"threshold": 0.3}, {"k": 7}, {"threshold": 0.2, "k": 5}):
            status, body = api(live, "/api/v1/search", db=db, query=q, length=500, **params)
            assert status == 200, body
            want = store.search(q, **params)
            assert [h["position"] for h in body["hits"]] == want.indices.tolist()
            assert [h["score"] for h in body["hits"]] == want.scores.tolist()
            assert body["total"] == len(want)
            for h in body["hits"]:
                assert h["id"] == store.ids[h["position"]]
                assert h["smiles"] == store.smiles[h["position"]]
    # against RDKit's brute force, on every molecule
    scores = rdkit_scores(store, QUERIES[1])
    want = sorted(((s, i) for i, s in enumerate(scores) if s >= 0.25), key=lambda x: (-x[0], x[1]))
    status, body = api(live, "/api/v1/search", db=db, query=QUERIES[1], threshold=0.25, length=500)
    assert [(h["score"], h["position"]) for h in body["hits"]] == want


def test_paging_post_and_downloads_agree(served):
    live = served[0]
    _, full = api(live, "/api/v1/search", db="nci", query="c1ccccc1", threshold=0.1, length=500)
    assert full["total"] > 30
    pages = []
    for start in range(0, len(full["hits"]), 13):
        _, body = api(
            live,
            "/api/v1/search",
            db="nci",
            query="c1ccccc1",
            threshold=0.1,
            start=start,
            length=13,
        )
        assert body["start"] == start
        pages += body["hits"]
    assert pages[: len(full["hits"])] == full["hits"]
    post = json.dumps({"db": "nci", "query": "c1ccccc1", "threshold": 0.1, "length": 500})
    status, _, raw = fetch(
        live.url("/api/v1/search"), post.encode(), {"Content-Type": "application/json"}
    )
    assert status == 200 and json.loads(raw)["hits"] == full["hits"]
    for fmt, delim in (("tsv", "\t"), ("csv", ",")):
        status, ctype, raw = fetch(
            live.url(
                "/api/v1/search", db="nci", query="c1ccccc1", threshold=0.1, fmt=fmt, length=500
            )
        )
        assert status == 200 and ctype.startswith("text/")
        rows = list(csv.reader(io.StringIO(raw.decode()), delimiter=delim))
        assert rows[0] == ["rank", "position", "id", "smiles", "score"]
        assert [int(r[1]) for r in rows[1:]] == [h["position"] for h in full["hits"]]
    status, ctype, raw = fetch(
        live.url(
            "/api/v1/search", db="nci", query="c1ccccc1", threshold=0.1, fmt="ndjson", length=500
        )
    )
    lines = [json.loads(x) for x in raw.decode().splitlines()]
    assert status == 200 and "ndjson" in ctype
    assert lines == full["hits"]  # the same page as the other formats


def test_substructure_and_smarts_equal_the_library(served):
    live, nci, _, _ = served
    for q, kind in (
        ("c1ccncc1", "substructure"),
        ("[OX2H]c1ccccc1", "smarts"),
        ("C(=O)O", "substructure"),
    ):
        status, body = api(live, "/api/v1/search", db="nci", query=q, type=kind, length=500)
        assert status == 200, body
        want = nci.substructure(q, smarts=kind == "smarts").tolist()
        assert body["total"] == len(want) > 0
        assert [h["position"] for h in body["hits"]] == want[:500]
        assert all("score" not in h for h in body["hits"])
    status, body = api(live, "/api/v1/search", db="nci2", query="c1ccncc1", type="substructure")
    assert status == 400 and "substructure index" in body["error"]


def test_exact_finds_any_smiles_of_a_stored_molecule(served):
    live, _, nci2, _ = served
    for pos in (0, 17, 1234, len(nci2) - 1):
        smiles = nci2.smiles[pos]
        mol = Chem.MolFromSmiles(smiles)
        Chem.rdBase.SeedRandomNumberGenerator(pos)
        query = Chem.MolToSmiles(mol, doRandom=True)
        status, body = api(live, "/api/v1/search", db="nci2", query=query, type="exact")
        assert status == 200
        found = [h["position"] for h in body["hits"]]
        assert pos in found and all(nci2.smiles[p] == smiles for p in found)
        assert found[0] == int(nci2.lookup([query])[0])
        # the same molecules with every index: the same store positions, the same answer
        assert (
            api(live, "/api/v1/search", db="nci", query=query, type="exact")[1]["hits"]
            == (body["hits"])
        )
    status, body = api(live, "/api/v1/search", db="nci2", query="[2H]C(Cl)(Br)I", type="exact")
    assert status == 200 and body["total"] == 0


def test_depict_draws_svg(served):
    live = served[0]
    status, ctype, raw = fetch(live.url("/api/v1/depict", smiles="c1ccccc1O"))
    assert status == 200 and ctype.startswith("image/svg+xml") and b"<svg" in raw
    status, ctype, raw = fetch(live.url("/api/v1/depict", smiles="not a smiles"))
    assert status == 400 and "invalid SMILES" in json.loads(raw)["error"]


BAD = [
    ({"db": "nope", "query": "CCO"}, 404, "no database"),
    ({"db": "../../../etc/passwd", "query": "CCO"}, 404, "no database"),
    ({"query": "CCO"}, 400, "db is missing"),
    ({"db": "nci", "query": "CCO", "type": "telepathy"}, 400, "type="),
    ({"db": "nci", "query": "CCO", "threshold": "2"}, 400, "threshold"),
    ({"db": "nci", "query": "CCO", "k": "0"}, 400, "k=0"),
    ({"db": "nci", "query": "CCO", "k": "many"}, 400, "k"),
    ({"db": "nci", "query": "CCO", "start": "-1"}, 400, "start"),
    ({"db": "nci", "query": "CCO", "length": "100000"}, 400, "length"),
    ({"db": "nci", "query": "CCO", "length": "[[]]"}, 400, "length"),
    ({"db": "nci", "query": "C1CC"}, 400, "invalid query"),
    ({"db": "nci", "query": "C" * 5000}, 413, "limit"),
    ({"db": "nci", "query": ""}, 400, "empty"),
    ({"db": "nci", "query": "[C", "type": "smarts"}, 400, "invalid query"),
    ({"db": "nci", "query": "CCO", "fmt": "../x"}, 400, "fmt="),
]


@pytest.mark.parametrize("params,status,words", BAD)
def test_bad_requests_get_4xx_with_a_message(served, params, status, words):
    live = served[0]
    got, _ctype, raw = fetch(live.url("/api/v1/search", **params))
    assert got == status, raw
    body = json.loads(raw)
    assert words in body["error"] and "Traceback" not in raw.decode()


@pytest.mark.parametrize(
    "kind,query",
    [("similarity", "C1CC"), ("substructure", "C1CCX"), ("smarts", "[C;X"), ("analogs", "C1CC")],
)
def test_an_unreadable_query_is_named_once(served, kind, query):
    """The readers' messages name the query already; the answer says "invalid query" and
    names it once (it once read `invalid query 'C1CC': invalid query SMILES 'C1CC': ...`)."""
    got, _ctype, raw = fetch(served[0].url("/api/v1/search", db="nci", query=query, type=kind))
    message = json.loads(raw)["error"]
    assert got == 400 and message.startswith("invalid query"), message
    assert message.count(repr(query)) == 1 and "RDKit" in message, message


def test_odd_bytes_routes_and_bodies_get_4xx(served):
    live = served[0]
    base = f"http://127.0.0.1:{live.port}"
    for path in (
        "/api/v1/search?db=nci&query=%ff%fe%00",  # not UTF-8
        "/api/v1/search?db=%ff&query=CCO",
        "/api/v1/search?db=nci&query=CCO&threshold=nan",
    ):
        status, _, raw = fetch(base + path)
        assert 400 <= status < 500, (path, raw)
        assert "error" in json.loads(raw) and b"Traceback" not in raw
    status, _, raw = fetch(base + "/../../etc/passwd")
    assert status == 404 and b"root:" not in raw
    status, _, raw = fetch(base + "/api/v1/nothing")
    assert status == 404 and json.loads(raw)["error"]
    big = json.dumps({"db": "nci", "query": "C" * 100_000}).encode()
    status, _, raw = fetch(base + "/api/v1/search", big, {"Content-Type": "application/json"})
    assert status == 413 and "body" in json.loads(raw)["error"]
    status, _, raw = fetch(
        base + "/api/v1/search", b"{not json", {"Content-Type": "application/json"}
    )
    assert status == 400 and b"Traceback" not in raw
    # the server is still up
    assert api(live, "/api/v1/databases")[0] == 200


def test_many_concurrent_clients_get_the_same_answers(served):
    live, nci, _, _ = served
    want = nci.search(QUERIES[0], k=20).indices.tolist()

    def one(i):
        q = QUERIES[i % len(QUERIES)]
        status, body = api(live, "/api/v1/search", db="nci", query=q, k=20)
        return q, status, [h["position"] for h in body["hits"]]

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(64)))
    assert all(status == 200 for _, status, _ in results)
    assert all(hits == want for q, _, hits in results if q == QUERIES[0])


def settled_lines(path, at_least: int = 0, quiet_s: float = 0.3, wait_s: float = 10) -> list:
    """The log's lines once there are `at_least` and none has been added for `quiet_s`: the
    server writes a request's line after its answer is sent, so a client can read first."""
    deadline = time.monotonic() + wait_s
    lines = path.read_text().splitlines()
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = path.read_text().splitlines()
        if now == lines and len(now) >= at_least:
            break
        lines = now
    return lines


def test_access_log_has_one_json_line_per_request(served):
    live, _, _, log_path = served
    before = len(settled_lines(log_path))  # earlier tests' lines all written
    api(live, "/api/v1/search", db="nci", query="CCO", k=3)
    api(live, "/api/v1/search", db="nope", query="CCO")
    lines = [json.loads(x) for x in settled_lines(log_path, before + 2)[before:]]
    assert len(lines) == 2
    ok, bad = lines
    assert ok["endpoint"] == "/api/v1/search" and ok["status"] == 200
    assert ok["db"] == "nci" and ok["type"] == "similarity" and ok["hits"] == 3
    assert ok["ms"] >= 0 and bad["status"] == 404


def test_every_search_on_the_one_store(served):
    """The one store as ingest writes it (every index) is served for every search type:
    substructure and SMARTS hits, in store order, are the molecules RDKit's brute force finds
    among the stored ones; it has the analog index SmallWorld's submit runs on."""
    live, nci, _, _ = served
    status, body = api(live, "/api/v1/databases")
    assert status == 200 and {d["name"]: d["types"] for d in body["databases"]}["nci"] == [
        "similarity", "substructure", "smarts", "exact", "analogs"
    ]  # fmt: skip
    mols = [Chem.MolFromSmiles(s) for s in nci.smiles]
    for q, kind in (("c1ccncc1", "substructure"), ("[OX2H]c1ccccc1", "smarts")):
        status, body = api(live, "/api/v1/search", db="nci", query=q, type=kind, length=500)
        pattern = Chem.MolFromSmarts(q) if kind == "smarts" else Chem.MolFromSmiles(q)
        want = [i for i, m in enumerate(mols) if m.HasSubstructMatch(pattern)]
        assert status == 200 and body["total"] == len(want) > 0
        assert [h["position"] for h in body["hits"]] == want[:500]
    assert nci.has_analog_index


def asgi_json(app, path: str, **params) -> tuple[int, dict]:
    """One GET through an ASGI app in this process (no HTTP): status and JSON body."""
    status, body = asgi_get(app, path, **params)
    return status, json.loads(body)


@pytest.mark.parametrize(
    "path,params",
    [
        ("/api/v1/search", {"db": "nci", "query": "CC(=O)Nc1ccc(O)cc1", "k": 7}),
        ("/api/v1/search", {"db": "nci", "query": "c1ccccc1", "type": "substructure"}),
        ("/api/v1/search", {"db": "nci", "query": "CCO", "k": "x"}),
        ("/dt/nci/search", {"query": "CC(=O)Nc1ccc(O)cc1", "length": 5, "draw": 3}),
        ("/dt/{nci,nci2}/search", {"query": "c1ccccc1", "type": "Substructure"}),
        ("/dt/nope/search", {"query": "CCO"}),
    ],
)
def test_fast_gets_answer_as_the_documented_routes(served, path, params):
    """The hot GETs are answered below FastAPI (serve/fast.py); FastAPI's routes for the same
    paths (which document them) run the same handler: both doors give the same answer."""
    live = served[0]
    status, body = api(live, path, **params)
    inner = live.app
    while not hasattr(inner, "openapi"):  # the FastAPI app under our ASGI layers
        inner = inner.app
    inner_status, inner_body = asgi_json(inner, path, **params)
    for timing in ("ms", "time"):
        body.pop(timing, None), inner_body.pop(timing, None)
    assert (status, body) == (inner_status, inner_body)


def test_gate_answers_busy_and_timeout():
    async def scenario():
        gate = Gate(Limits(max_concurrent=1, queue_wait_s=0.05, timeout_s=0.2))
        slow = asyncio.ensure_future(gate.run(time.sleep, 0.6))
        await asyncio.sleep(0.05)
        with pytest.raises(ServiceError) as busy:
            await gate.run(time.sleep, 0)
        with pytest.raises(ServiceError) as late:
            await slow
        # the slot is freed when the slow search ends, not when its answer was given up
        with pytest.raises(ServiceError):
            await gate.run(time.sleep, 0)
        await asyncio.sleep(0.6)
        assert await gate.run(lambda: 42) == 42
        return busy.value.status, late.value.status

    assert asyncio.run(scenario()) == (503, 504)


def test_cli_serves_and_refuses_bad_configuration(served, tmp_path, bundled_smi):
    _, nci, _, _ = served
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    bad = subprocess.run(
        [sys.executable, "-m", "molsift", "serve"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "no store to serve" in bad.stderr
    # an error as every verb says one (it read "molsift serve: no store to serve: ...")
    assert bad.stderr.startswith("molsift: error: no store to serve"), bad.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "molsift", "serve", "--name", "x"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2 and "NAME=STORE" in bad.stderr
    # a version-1 store: refused in one line naming the one verb that reads it
    old = tmp_path / "old.store"
    molsift.ingest(
        bundled_smi, old, workers=2, progress=False, version=1, pattern=False, analogs=False
    )
    bad = subprocess.run(
        [sys.executable, "-m", "molsift", "serve", "--name", f"old={old}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "molsift upgrade" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "molsift",
            "serve",
            "--name",
            f"mine={nci.path}",
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                status, _, raw = fetch(f"http://127.0.0.1:{port}/api/v1/databases")
                break
            except urllib.error.URLError:
                assert proc.poll() is None and time.time() < deadline, "serve did not start"
                time.sleep(0.2)
        assert status == 200
        assert [d["name"] for d in json.loads(raw)["databases"]] == ["mine"]
    finally:
        proc.terminate()
        proc.wait(30)


def test_cli_port_0_banner_names_the_port_bound_and_every_type(served):
    """`serve --port 0` printed `:0`, not the port listened on; its banner left out analogs,
    which /api/v1/databases lists for a store with an analog index; a port in use was
    uvicorn's raw error, exit 3 (the status of "nothing usable")."""
    _, nci, _, _ = served
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "molsift", "serve", "--name", f"mine={nci.path}"]
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", "0"], stderr=subprocess.PIPE, text=True, env=env
    )
    watchdog = threading.Timer(120, proc.kill)  # a server that never prints: no hung test
    watchdog.start()
    try:
        lines = []
        while not any("/api/v1/databases" in line for line in lines):
            line = proc.stderr.readline()
            assert line, f"serve ended: {''.join(lines)}"
            lines.append(line)
        url = re.search(r"http://127\.0\.0\.1:(\d+)/api/v1/databases", lines[-1])
        assert url and int(url.group(1)) != 0, lines[-1]
        port = int(url.group(1))
        status, _, raw = fetch(f"http://127.0.0.1:{port}/api/v1/databases")
        assert status == 200
        [db] = json.loads(raw)["databases"]
        assert db["types"] == ["similarity", "substructure", "smarts", "exact", "analogs"]
        banner = f"molsift serve: mine: {nci.path} ({len(nci):,} molecules, "
        assert f"{banner}{', '.join(db['types'])})\n" in lines, lines
        # the port in use: one line, exit 2, before any worker starts
        busy = subprocess.run(
            [*command, "--port", str(port)], capture_output=True, text=True, env=env, timeout=120
        )
        assert busy.returncode == 2, busy.stderr
        assert busy.stderr.splitlines()[-1].startswith(
            f"molsift: error: cannot listen on 127.0.0.1 port {port}: "
        ), busy.stderr
        assert "Traceback" not in busy.stderr and "ERROR" not in busy.stderr
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    (root / "tiny.smi").write_text("CCO a\nCCN b\n")
    molsift.ingest(root / "tiny.smi", root / "tiny.store", workers=1, progress=False)
    return root / "tiny.store"


def test_cli_store_names_come_from_the_folder_or_say_to_give_one(tiny_store, monkeypatch):
    """`molsift serve .` in a store's folder was refused as `database name ''`; a folder whose
    name cannot name a database (a space) was refused without saying how to serve it."""
    from molsift.cli.serve import catalog_from

    monkeypatch.chdir(tiny_store)
    catalog = catalog_from(["."], [])
    try:
        assert [db.name for db in catalog] == ["tiny"]
    finally:
        catalog.close()
    odd = tiny_store.parent / "my lib.store"
    odd.symlink_to(tiny_store)
    with pytest.raises(ValueError, match=r"'my lib' cannot name a database .*--name NAME="):
        catalog_from([str(odd)], [])


def test_cli_warns_of_a_host_only_when_listening_on_it(tiny_store):
    """`--host` an address this machine cannot listen on printed `WARNING: listening on
    192.0.2.1, not loopback: anyone who can reach this machine can search these stores`, then
    that it cannot listen there."""
    command = [sys.executable, "-m", "molsift", "serve", tiny_store]
    proc = subprocess.run(
        [*command, "--host", "192.0.2.1", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("molsift: error: cannot listen on 192.0.2.1 port 0: ")
    assert "WARNING" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


# Arthor's clients (../shared/data/service-clients.md)


def test_arthor_databases_and_doubled_slash(served):
    live = served[0]
    for path in ("/dt/data", "//dt/data"):
        status, body = api(live, path)
        assert status == 200
        dbs = {d["displayName"]: d for d in body}
        assert dbs["nci"]["idxTypes"] == ["SIM", "SUB"] and dbs["nci2"]["idxTypes"] == ["SIM"]


def test_arthor_substructure_smarts_and_similarity(served):
    live, nci, nci2, _ = served
    for query, kind, smarts in (
        ("c1ccncc1", "Substructure", False),
        ("[OX2H]c1ccccc1", "SMARTS", True),
        ("[OX2H]c1ccccc1", "SMA", True),
    ):
        want = nci.substructure(query, smarts=smarts).tolist()
        got = []
        for start in (0, 10, 20):
            status, body = api(
                live, "//dt/nci/search", query=query, type=kind, start=start, length=10,
                draw=start + 1, fmt="json",
            )  # fmt: skip
            assert status == 200 and body["draw"] == start + 1 and body["hasMore"] is False
            assert body["recordsTotal"] == body["recordsFiltered"] == len(want)
            got += body["data"]
        # five fields: [rank, "SMILES ID", SMILES, ID, db] (docs/serve.md)
        assert [r[1:4] for r in got] == [arthor_texts(nci, p) for p in want[:30]]
        assert [r[0] for r in got] == list(range(1, len(got) + 1))
        assert all(len(r) == 5 and r[4] == "nci" for r in got) and "scores" not in body
    status, body = api(live, "/dt/nci/search", query="CC(=O)Nc1ccc(O)cc1", type="Similarity",
                       start=0, length=25)  # fmt: skip
    want = nci.search("CC(=O)Nc1ccc(O)cc1", k=25)
    assert status == 200 and body["recordsTotal"] == len(nci)
    assert [r[1:4] for r in body["data"]] == [arthor_texts(nci, p) for p in want.indices.tolist()]
    assert body["scores"] == want.scores.tolist()  # beside the rows, one per row
    # two databases at once: one ranking, each row naming its database
    status, body = api(live, "/dt/{nci,nci2}/search", query="CC(=O)Nc1ccc(O)cc1", length=20)
    assert status == 200 and body["recordsTotal"] == len(nci) + len(nci2)
    scores = body["scores"]
    assert scores == sorted(scores, reverse=True) and len(scores) == len(body["data"]) == 20
    a, b = nci.search("CC(=O)Nc1ccc(O)cc1", k=20), nci2.search("CC(=O)Nc1ccc(O)cc1", k=20)
    merged = sorted([*a.scores.tolist(), *b.scores.tolist()], reverse=True)[:20]
    assert scores == merged and {r[4] for r in body["data"]} == {"nci", "nci2"}


def arthor_texts(store, pos: int) -> list:
    """Fields 1 to 3 of an Arthor row of store position `pos`: "SMILES ID", SMILES, ID."""
    return [f"{store.smiles[pos]} {store.ids[pos]}", store.smiles[pos], store.ids[pos]]


@pytest.mark.parametrize(
    "path,params,status,words",
    [
        ("/dt/nope/search", {"query": "CCO"}, 404, "no database"),
        ("/dt/nci/search", {"query": "CCO", "type": "Psychic"}, 400, "type="),
        ("/dt/nci/search", {"query": "[C", "type": "SMARTS"}, 400, "invalid query"),
        ("/dt/nci2/search", {"query": "CCO", "type": "Substructure"}, 400, "substructure"),
        ("/dt/nci/search", {"query": "CCO", "length": "-5"}, 400, "length"),
        ("/dt/{}/search", {"query": "CCO"}, 400, "no database"),
        ("/dt/nci/search", {"query": "CCO", "draw": "x"}, 400, "draw="),
        ("/dt/nci/search", {"query": "CCO", "start": "1.5"}, 400, "start="),
    ],
)
def test_arthor_errors_keep_its_shape_with_a_message(served, path, params, status, words):
    got, body = api(served[0], path, **params)
    assert got == status and words in body["message"] and body["data"] == []


# SmallWorld's clients


def submit(live, smi, db="nci"):
    params = {
        "smi": smi, "db": db, "dist": 4, "tdn": 6, "tup": 6, "rdn": 6, "rup": 2, "ldn": 2,
        "lup": 2, "maj": 6, "min": 6, "sub": 6, "sdist": 12,
        "scores": "Atom%20Alignment,ECFP4,Daylight",  # double-encoded, as one client sends it
    }  # fmt: skip
    status, ctype, raw = fetch(live.url("/search/submit", **params))
    lines = [x for x in raw.decode().splitlines() if "data:" in x]
    return status, ctype, lines


def test_smallworld_submit_view_export(served):
    """On a database without an analog index (nci2): Tanimoto, and the answers say so."""
    live, _, nci2, _ = served
    status, ctype, lines = submit(live, "CC(=O)Nc1ccc(O)cc1", db="nci2")
    assert status == 200 and ctype.startswith("text/event-stream")
    last = lines[-1][lines[-1].index("data:") + 5 :]
    assert " " not in last.split('"note"')[0]  # compact JSON
    event = json.loads(last)
    assert event["status"] == "END" and list(event)[-1] not in ("status", "hlid")
    # the client that splits on commas instead of parsing JSON
    fields = dict(part.split(":", 1) for part in last.strip("{}").split(",") if ":" in part)
    hlid = int(fields['"hlid"'].strip('"'))
    assert hlid == event["hlid"]
    columns = {}
    for i, name in enumerate(["alignment", "dist", "ecfp4", "daylight", "topodist", "mces",
                              "tdn", "tup", "rdn", "rup", "ldn", "lup", "mut", "maj", "min",
                              "hyb", "sub"]):  # fmt: skip
        columns.update({
            f"columns[{i}][data]": i, f"columns[{i}][name]": name,
            f"columns[{i}][searchable]": "true", f"columns[{i}][orderable]": "true",
            f"columns[{i}][search][value]": "0-12" if name == "dist" else "",
            f"columns[{i}][search][regex]": "false",
        })  # fmt: skip
    params = {"hlid": hlid, "start": 0, "length": 5, "draw": 9, "order[0][column]": 0,
              "order[0][dir]": "asc", "search[value]": "", "search[regex]": "false",
              **columns}  # fmt: skip
    status, body = api(live, "/search/view", **params)
    want = nci2.search("CC(=O)Nc1ccc(O)cc1", k=5)
    assert status == 200 and body["draw"] == 9 and body["recordsTotal"] == event["numHits"]
    # row[i] is column i: row[0] the alignment object, row[1] dist, row[2] ecfp4, ...
    assert len(body["data"]) == 5 and all(len(row) == 17 for row in body["data"])
    for row, pos, score in zip(body["data"], want.indices.tolist(), want.scores.tolist()):
        assert row[0]["hitSmiles"] == f"{nci2.smiles[pos]} {nci2.ids[pos]}"
        assert row[2] == score and row[1] is None  # ecfp4 given, dist not invented
        assert "similarity" in row[0]["note"]
    status, ctype, raw = fetch(live.url("/search/export", hlid=hlid))
    rows = raw.decode().splitlines()
    assert status == 200 and rows[0].split("\t")[:3] == ["SMILES ID", "dist", "ecfp4"]
    assert len(rows) == 1 + event["numHits"]
    assert rows[1].split("\t")[0] == f"{nci2.smiles[want.indices[0]]} {nci2.ids[want.indices[0]]}"
    status, body = api(live, "/search/config")
    assert status == 200 and body["ScoreFuncs"][0]["name"] == "ECFP4"
    status, body = api(live, "/search/maps")  # an object keyed by name, as clients read it
    assert status == 200 and set(body) == {"nci", "nci2"}
    assert all(m["name"] == name for name, m in body.items())
    assert all(m["numEntries"] > 0 and m["status"] == "Available" for m in body.values())


def test_smallworld_submit_answers_dist_with_analog_search(served):
    """On a database with an analog index (nci): the hits of store.analogs (dist and the
    per-kind limits as sent, 10 for a kind not given), a MORE event per distance, rows and
    export carrying dist, ecfp4, the edits by kind and mut."""
    live, nci, _, _ = served
    smi = "CC(=O)Nc1ccc(O)cc1"
    params = {"smi": smi, "db": "nci", "dist": 2, "rup": 0, "tdn": 3}
    status, ctype, raw = fetch(live.url("/search/submit", **params))
    events = [
        json.loads(x[x.index("data:") + 5 :]) for x in raw.decode().splitlines() if "data:" in x
    ]
    assert status == 200 and ctype.startswith("text/event-stream")
    assert [e["status"] for e in events] == ["FIRST", "MORE", "MORE", "MORE", "END"]
    assert [e.get("dist") for e in events[1:4]] == [0, 1, 2]
    caps = {"tdn": 3, "tup": 10, "rdn": 10, "rup": 0, "ldn": 10, "lup": 10}
    want = nci.analogs(smi, max_dist=2, limits=caps)
    end = events[-1]
    assert end["numHits"] == len(want) > 10 and not end["partial"] and "analog" in end["note"]
    status, body = api(live, "/search/view", hlid=end["hlid"], start=0, length=len(want))
    assert status == 200 and body["recordsTotal"] == len(want)
    for row, i in zip(body["data"], range(len(want))):
        pos = int(want["position"][i])
        assert row[0]["hitSmiles"] == f"{nci.smiles[pos]} {nci.ids[pos]}"
        assert row[1] == want["distance"][i] and row[2] == want["tanimoto"][i]
        assert row[6:12] == [int(want[k][i]) for k in ("tdn", "tup", "rdn", "rup", "ldn", "lup")]
        assert row[9] == 0 and row[6] <= 3  # rup 0, tdn at most 3
        assert row[12] == int(want["mut"][i]) >= 0  # element changes (docs/analogs.md)
    status, _ctype, raw = fetch(live.url("/search/export", hlid=end["hlid"]))
    lines = raw.decode().splitlines()
    assert [int(x.split("\t")[1]) for x in lines[1:]] == want["distance"].tolist()
    status, _ctype, raw = fetch(live.url("/search/submit", smi=smi, db="nci", dist=99))
    assert status == 200 and json.loads(raw.decode().split("data:")[-1])["status"] == "MISS"


def test_smallworld_batch_view_searches_and_views_at_once(served):
    """`/search/view?smi=S1&smi=S2&db=DB&fmt=json|tsv` (the batch form clients send): each
    query's `length` best rows, query after query, equal to store.search."""
    live, nci, _, _ = served
    smis = ["CC(=O)Nc1ccc(O)cc1", "c1ccccc1O"]
    url = live.url("/search/view", db="nci", length=3, fmt="json")
    status, _ctype, raw = fetch(url + "&" + "&".join(f"smi={urllib.parse.quote(s)}" for s in smis))
    body = json.loads(raw)
    assert status == 200 and body["recordsTotal"] == 6 and len(body["data"]) == 6
    for i, smi in enumerate(smis):
        want = nci.search(smi, k=3)
        got = body["data"][3 * i : 3 * i + 3]
        assert [r[0]["qryMappedSmiles"] for r in got] == [smi] * 3
        assert [r[0]["hitSmiles"] for r in got] == [
            f"{nci.smiles[p]} {nci.ids[p]}" for p in want.indices.tolist()
        ]
        assert [r[2] for r in got] == want.scores.tolist()
    status, ctype, raw = fetch(live.url("/search/view", smi=smis[0], db="nci", fmt="tsv"))
    lines = raw.decode().splitlines()
    want = nci.search(smis[0], k=10)
    assert status == 200 and ctype.startswith("text/tab-separated-values")
    assert lines[0].split("\t")[0] == "SMILES ID" and len(lines) == 1 + len(want.indices)
    first = lines[1].split("\t")
    assert first[0] == f"{nci.smiles[want.indices[0]]} {nci.ids[want.indices[0]]}"
    assert float(first[2]) == want.scores[0] and first[-1] == smis[0]
    many = "&".join(["smi=CCO"] * 21)
    for url, words in (
        (live.url("/search/view", db="nci") + "&" + many, "limit is 20"),
        (live.url("/search/view", smi="CCO", db="nci", fmt="xml"), "fmt="),
        (live.url("/search/view", smi="CCO", db="nope"), "no such database"),
        (live.url("/search/view", smi="C1CC", db="nci"), "invalid"),
    ):
        status, _ctype, raw = fetch(url)
        assert status == 400 and words in json.loads(raw)["error"], raw


def test_smallworld_errors(served):
    live = served[0]
    status, _ctype, raw = fetch(live.url("/search/submit", smi="CCO", db="nope"))
    assert status == 400 and "no such database" in json.loads(raw)["error"]
    status, _ctype, lines = submit(live, "C1CC")
    assert status == 200 and json.loads(lines[-1][5:])["status"] == "MISS"
    for hlid, code in (("999999", 404), ("abc", 400), ("", 400)):
        got, body = api(live, "/search/view", hlid=hlid, start=0, length=5)
        assert got == code and body["error"]
        got, _, raw = fetch(live.url("/search/export", hlid=hlid))
        assert got == code and b"Traceback" not in raw


def test_docs_are_served_without_a_cdn(served):
    live = served[0]
    status, ctype, raw = fetch(live.url("/docs"))
    page = raw.decode()
    assert status == 200 and ctype.startswith("text/html")
    assert "docs-static/swagger-ui-bundle.js" in page and "openapi.json" in page
    assert "cdn" not in page.lower() and "https://" not in page.replace("https://fastapi", "")
    assert fetch(live.url("/docs-static/swagger-ui-bundle.js"))[0] == 200
    status, body = api(live, "/openapi.json")
    assert (
        status == 200 and "/api/v1/search" in body["paths"] and "/dt/{dbs}/search" in body["paths"]
    )


TRAVERSAL = "../../../../../../etc/passwd"
ENDPOINTS = {
    "/api/v1/search": [
        "db",
        "query",
        "type",
        "threshold",
        "k",
        "start",
        "length",
        "fmt",
        "dist",
        "tdn",
    ],
    "/api/v1/depict": ["smiles", "width", "height"],
    "/dt/nci/search": ["query", "type", "start", "length", "draw", "fmt"],
    "/search/submit": ["smi", "db", "dist", "scores"],
    "/search/view": ["hlid", "start", "length", "draw", "columns[0][search][value]"],
    "/search/export": ["hlid"],
}


@pytest.mark.parametrize("path", sorted(ENDPOINTS))
def test_traversal_and_malformed_values_in_every_parameter(served, path):
    """Every parameter of every endpoint given a path, a DataTables-style mess and odd bytes:
    a 2xx or 4xx answer, never a 5xx, a traceback or a file's content; the server stays up."""
    live = served[0]
    base = {"db": "nci", "query": "CCO", "smi": "CCO", "smiles": "CCO", "hlid": "1"}
    for name in ENDPOINTS[path]:
        for value in (TRAVERSAL, "[[", "1e999", "-1", "%00", "\u00e9\ud7ff", "x" * 5000):
            params = {k: v for k, v in base.items() if k in ENDPOINTS[path]}
            params[name] = value
            status, _ctype, raw = fetch(live.url(path, **params))
            assert status < 500, (path, name, value, raw[:200])
            assert b"Traceback" not in raw and b"root:x:0" not in raw
    assert api(live, "/api/v1/databases")[0] == 200


# One API for every search: analogs in /api/v1/search, every format paged


def analog_rows(store, query, dist, caps=None, k=None) -> list[dict]:
    """store.analogs as /api/v1/search's rows (rank, position, id, SMILES, score, distance,
    edits by kind, mut)."""
    want = store.analogs(query, max_dist=dist, limits=caps, k=k)
    kinds = ("tdn", "tup", "rdn", "rup", "ldn", "lup")
    rows = []
    for i, pos in enumerate(want["position"].tolist()):
        row = {"rank": i + 1, "position": pos, "id": store.ids[pos], "smiles": store.smiles[pos],
               "score": float(want["tanimoto"][i]),
               "distance": int(want["distance"][i])}  # fmt: skip
        row.update({kind: int(want[kind][i]) for kind in kinds})
        row["mut"] = int(want["mut"][i])
        rows.append(row)
    return rows


def test_api_v1_analogs_equal_store_analogs(served):
    """type=analogs takes dist, k and the per-kind limits as store.analogs does (dist 2 and no
    limits by default); its hits, paged, in every format, GET and POST, equal store.analogs."""
    live, nci, _, _ = served
    smi = "CC(=O)Nc1ccc(O)cc1"
    for dist, caps in ((2, None), (3, {"rup": 0, "tdn": 3}), (1, {"ldn": 0})):
        want = analog_rows(nci, smi, dist, caps)
        status, body = api(live, "/api/v1/search", db="nci", query=smi, type="analogs",
                           dist=dist, length=500, **(caps or {}))  # fmt: skip
        assert status == 200, body
        assert body["total"] == len(want) > 0 and body["hits"] == want[:500]
        assert body["dist"] == dist and body["limits"] == (caps or {})
        assert body["partial"] is False and body["type"] == "analogs"
        if caps:
            assert all(h["rup"] == 0 and h["tdn"] <= 3 for h in body["hits"]) or dist == 1
    # the defaults: dist 2, no per-kind limit (store.analogs')
    want = analog_rows(nci, smi, 2)
    status, body = api(live, "/api/v1/search", db="nci", query=smi, type="analogs", length=500)
    assert status == 200 and body["hits"] == want and body["dist"] == 2 and body["limits"] == {}
    # pages of 7, in json and ndjson, equal the whole
    pages, lines = [], []
    for start in range(0, len(want), 7):
        params = {"db": "nci", "query": smi, "type": "analogs", "start": start, "length": 7}
        pages += api(live, "/api/v1/search", **params)[1]["hits"]
        raw = fetch(live.url("/api/v1/search", fmt="ndjson", **params))[2]
        lines += [json.loads(x) for x in raw.decode().splitlines()]
    assert pages == want and lines == want
    # k: the k best, as store.analogs(k=)
    status, body = api(live, "/api/v1/search", db="nci", query=smi, type="analogs", dist=3, k=9)
    assert body["hits"] == analog_rows(nci, smi, 3, k=9) and body["k"] == 9
    # POST with the same fields
    post = {"db": "nci", "query": smi, "type": "analogs", "dist": 3, "rup": 0, "tdn": 3,
            "length": 500}  # fmt: skip
    status, _, raw = fetch(live.url("/api/v1/search"), json.dumps(post).encode(),
                           {"Content-Type": "application/json"})  # fmt: skip
    assert (
        status == 200
        and json.loads(raw)["hits"] == analog_rows(nci, smi, 3, {"rup": 0, "tdn": 3})[:500]
    )
    # tsv carries the analog columns
    status, _ctype, raw = fetch(live.url("/api/v1/search", db="nci", query=smi, type="analogs",
                                         fmt="tsv", length=500))  # fmt: skip
    rows = list(csv.reader(io.StringIO(raw.decode()), delimiter="\t"))
    assert rows[0] == ["rank", "position", "id", "smiles", "score", "distance", "tdn", "tup",
                       "rdn", "rup", "ldn", "lup", "mut"]  # fmt: skip
    assert [int(r[1]) for r in rows[1:]] == [h["position"] for h in want]
    assert [int(r[5]) for r in rows[1:]] == [h["distance"] for h in want]
    # the fast GET and the documented route answer alike
    params = {"db": "nci", "query": smi, "type": "analogs", "dist": 1, "length": 50}
    status, body = api(live, "/api/v1/search", **params)
    inner = live.app
    while not hasattr(inner, "openapi"):
        inner = inner.app
    inner_status, inner_body = asgi_json(inner, "/api/v1/search", **params)
    body.pop("ms"), inner_body.pop("ms")
    assert (status, body) == (inner_status, inner_body)


@pytest.mark.parametrize(
    "params,words",
    [
        ({"db": "nci2", "type": "analogs"}, "analog index"),
        ({"db": "nci", "type": "analogs", "dist": 9}, "dist=9"),
        ({"db": "nci", "type": "analogs", "dist": "two"}, "dist="),
        ({"db": "nci", "type": "analogs", "rup": 255}, "rup=255"),
        ({"db": "nci", "type": "analogs", "tdn": -1}, "tdn=-1"),
        ({"db": "nci", "type": "analogs", "k": 0}, "k=0"),
        ({"db": "nci", "type": "analogs", "query": "C1CC"}, "invalid"),
        ({"db": "nci", "type": "analogs", "query": "[H][H]"}, "heavy atom"),
    ],
)
def test_api_v1_analogs_bad_requests(served, params, words):
    status, body = api(served[0], "/api/v1/search", **{"query": "CCO", **params})
    assert status == 400 and words in body["error"], body


def test_ndjson_pages_like_the_other_formats(served):
    """fmt=ndjson answers the page start/length asks for (the same rows as JSON), not every
    hit."""
    live = served[0]
    for kind, query in (("similarity", "c1ccccc1"), ("substructure", "c1ccccc1")):
        params = {"db": "nci", "query": query, "type": kind, "threshold": 0.1}
        _, full = api(live, "/api/v1/search", length=500, **params)
        assert full["total"] > 20
        for start, length in ((0, 3), (5, 4), (full["total"] - 2, 10), (0, 0)):
            status, ctype, raw = fetch(live.url("/api/v1/search", fmt="ndjson", start=start,
                                                length=length, **params))  # fmt: skip
            lines = [json.loads(x) for x in raw.decode().splitlines()]
            assert status == 200 and "ndjson" in ctype
            page = api(live, "/api/v1/search", start=start, length=length, **params)[1]["hits"]
            assert lines == page
            if start + length <= len(full["hits"]):
                assert lines == full["hits"][start : start + length]
            assert len(lines) == max(0, min(length, full["total"] - start))
    status, body = api(live, "/api/v1/search", db="nci", query="CCO", fmt="ndjson", length=501)
    assert status == 400 and "length=501" in body["error"]


def test_openapi_documents_analogs_and_paged_ndjson(served):
    status, body = api(served[0], "/openapi.json")
    assert status == 200
    get = body["paths"]["/api/v1/search"]["get"]
    params = {p["name"]: p["description"] for p in get["parameters"]}
    assert "analogs" in params["type"] and "analogs" in params["dist"]
    assert all(kind in params for kind in ("tdn", "tup", "rdn", "rup", "ldn", "lup"))
    assert "the page" in params["fmt"]
    post = body["components"]["schemas"]["SearchBody"]["properties"]
    assert {"dist", "tdn", "lup"} <= set(post)


def test_smallworld_several_smi_refused_and_length_clamped(served):
    """Several smi on /search/submit: 400 in words (naming the batch form), not the last one
    searched silently; a length over the cap on /search/view (the fixture's 500): clamped, and
    the answer says so; a negative length is still a 400."""
    live, nci, _, _ = served
    url = live.url("/search/submit", db="nci") + "&smi=CCO&smi=c1ccccc1O"
    status, _ctype, raw = fetch(url)
    assert status == 400 and "2 smi parameters" in json.loads(raw)["error"]
    assert "/search/view" in json.loads(raw)["error"]
    status, _ctype, lines = submit(live, "c1ccccc1O")
    hlid = json.loads(lines[-1][5:])["hlid"]
    status, body = api(live, "/search/view", hlid=hlid, start=0, length=20000)
    assert status == 200 and body["length"] == 500 and "length=20000" in body["warning"]
    assert len(body["data"]) == min(500, body["recordsTotal"])
    status, body = api(live, "/search/view", hlid=hlid, start=0, length=5)
    assert status == 200 and "warning" not in body and "length" not in body
    status, body = api(live, "/search/view", smi="c1ccccc1O", db="nci", length=20000)
    want = nci.search("c1ccccc1O", k=500)
    assert status == 200 and "length=20000" in body["warning"]
    assert [r[0]["hitSmiles"] for r in body["data"]] == [
        f"{nci.smiles[p]} {nci.ids[p]}" for p in want.indices.tolist()
    ]
    status, _ctype, raw = fetch(
        live.url("/search/view", smi="c1ccccc1O", db="nci", length=20000, fmt="tsv")
    )
    assert status == 200 and len(raw.decode().splitlines()) == 1 + 500
    status, body = api(live, "/search/view", hlid=hlid, start=0, length=-1)
    assert status == 400 and "length=-1" in body["error"]


def test_arthor_length_over_the_cap_is_clamped_and_said(served):
    live, nci, _, _ = served
    status, body = api(live, "/dt/nci/search", query="c1ccccc1", type="Substructure", length=5000)
    want = nci.substructure("c1ccccc1").tolist()
    assert status == 200 and len(want) > 500 and len(body["data"]) == 500
    assert "length=5000" in body["warning"] and body["recordsTotal"] == len(want)
    assert [r[1:4] for r in body["data"]] == [arthor_texts(nci, p) for p in want[:500]]


# ---------------------------------------------------- --access-log checked before the port is bound


@pytest.mark.parametrize(
    "where, why",
    [("a-dir", "it is a directory"), ("missing/access.log", "no such directory")],
    ids=["directory", "missing-parent"],
)
def test_cli_refuses_an_access_log_it_cannot_write_before_listening(
    tiny_store, tmp_path, where, why
):
    """`--access-log DIR` (or a file in a directory that does not exist) was opened only once
    the port was bound: after the host warning, and on a port in use the port's error hid it.
    Now refused first, in one line naming the option, exit 2, on a port in use too (nothing was
    bound, so the port's error never comes)."""
    (tmp_path / "a-dir").mkdir()
    busy = free_socket()
    busy.listen()
    try:
        port = busy.getsockname()[1]
        command = [sys.executable, "-m", "molsift", "serve", tiny_store, "--port", str(port)]
        proc = subprocess.run(
            [*command, "--access-log", tmp_path / where],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        busy.close()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(
        f"molsift: error: --access-log {tmp_path / where}: cannot write the output: {why}"
    ), proc.stderr
    assert proc.stderr.count("\n") == 1 and "listen" not in proc.stderr, proc.stderr
    assert not (tmp_path / "missing").exists()


# ------------------------------------------------------------- what a new user's probes found


def test_head_is_answered_as_get_and_a_405_says_what_is_allowed(served):
    """HEAD (HTTP requires it wherever GET is answered) was 405 on every FastAPI route, `/`
    and the searches included; now the GET's status and headers without the body. A 405 gave
    no `Allow` header (RFC 9110 requires one); now every method of the path's routes."""
    live = served[0]
    for path, params, timed in (
        ("/", {}, False),
        ("/api/v1/databases", {}, False),
        ("/api/v1/search", {"db": "nci", "query": "CCO", "k": 3}, True),
        ("/dt/nci/search", {"query": "CCO", "length": 3}, True),
        ("/search/maps", {}, False),
        ("/api/v1/depict", {"smiles": "CCO"}, False),
    ):
        url = live.url(path, **params)
        with urllib.request.urlopen(url, timeout=60) as r:
            got = r.read()
            length, ctype = r.headers["content-length"], r.headers["content-type"]
        assert length == str(len(got)), path
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=60) as r:
            assert r.status == 200 and r.read() == b"", path
            assert r.headers["content-type"] == ctype, path
            head_length = int(r.headers["content-length"])
        if timed:  # a search's answer holds its time (`ms`, `time`): a digit more or less
            assert abs(head_length - len(got)) <= 3, path
        else:
            assert head_length == len(got), path
    for method, path, allow in (
        ("PUT", "/api/v1/search", "GET, HEAD, POST"),
        ("POST", "/api/v1/databases", "GET, HEAD"),
        ("DELETE", "/dt/nci/search", "GET, HEAD"),
        ("OPTIONS", "/", "GET, HEAD"),
    ):
        request = urllib.request.Request(live.url(path), method=method, data=b"")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=60)
        assert e.value.code == 405 and e.value.headers["allow"] == allow, (method, path)
        assert json.loads(e.value.read())["error"]


@pytest.mark.parametrize(
    "body, ctype, words",
    [
        (b'{"db": "nci", "query": 123}', "application/json", "query: Input should be"),
        (b"", "application/json", "JSON object"),
        (b'{"db": "nci", "query": "CCO"}', None, "Content-Type: application/json"),
        (b"query=CCO", "application/x-www-form-urlencoded", "Content-Type: application/json"),
        (b"[1, 2]", "application/json", "JSON object"),
        (b'{"db": "nci", "quer', "application/json", "not JSON"),
    ],
    ids=["query-not-text", "no-body", "no-content-type", "form", "array", "broken-json"],
)
def test_a_bad_post_body_is_said_in_words(served, body, ctype, words):
    """POST /api/v1/search: a bad `query` field was "Input should be a valid string" (the field
    `query` was dropped from the message as if it were the place), a body sent without
    `Content-Type: application/json` (curl -d's default) was "Input should be a valid
    dictionary or object to extract fields from"."""
    headers = {"Content-Type": ctype} if ctype else {}
    request = urllib.request.Request(served[0].url("/api/v1/search"), body, headers)
    if ctype is None:
        request.remove_header("Content-type")  # urllib adds a form type to a body otherwise
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    assert status == 400 and words in json.loads(raw)["error"], raw


@pytest.mark.parametrize("kind", ["similarity", "substructure", "smarts", "exact", "analogs"])
def test_a_long_unreadable_query_is_named_once(served, kind):
    """A query over 80 characters RDKit cannot read: the substructure reader names it shortened,
    and the answer named it twice (`invalid query '<all of it>': query '<its start>...': ...`)."""
    query = "C1" + "C" * 120
    got, _ctype, raw = fetch(served[0].url("/api/v1/search", db="nci", query=query, type=kind))
    message = json.loads(raw)["error"]
    assert got == 400 and message.startswith("invalid") and "RDKit" in message, message
    assert message.count("C1CCCCCCCCCC") == 1 and len(message) < 300, message


def test_arthor_a_database_named_twice_is_searched_once(served):
    """`/dt/{nci,nci}/search` gave every hit twice and counted it twice (recordsTotal)."""
    live = served[0]
    for kind in ("Substructure", "Similarity"):
        params = {"query": "c1ccncc1", "type": kind, "length": 20}
        status, once = api(live, "/dt/nci/search", **params)
        status2, twice = api(live, "/dt/{nci,nci}/search", **params)
        assert status == status2 == 200
        assert twice["recordsTotal"] == once["recordsTotal"] and twice["data"] == once["data"]


def test_smallworld_a_missing_db_is_said_so(served):
    """SmallWorld's submit and batch view without `db` said `db=None: no such database`."""
    live = served[0]
    for path, params in (("/search/submit", {"smi": "CCO"}), ("/search/view", {"smi": "CCO"})):
        status, _ctype, raw = fetch(live.url(path, **params))
        error = json.loads(raw)["error"]
        assert status == 400 and error.startswith("db is missing: one of nci, nci2"), error


def test_the_pages_download_asks_for_no_more_rows_than_the_server_gives(served):
    """The page's "Download TSV" asked for 10,000 rows whatever the server's --max-length: on
    a server of a lower cap (the fixture's 500) the download was a 400. /api/v1/databases now
    says the cap and the page asks for at most that many."""
    live, nci, _, _ = served
    status, body = api(live, "/api/v1/databases")
    assert status == 200 and body["max_length"] == 500
    script = (PAGE / "app.js").read_text()
    assert "Math.min(10000, state.maxLength)" in script and "body.max_length" in script
    length = min(10000, body["max_length"])
    status, ctype, raw = fetch(
        live.url("/api/v1/search", db="nci", query="c1ccccc1", type="substructure",
                 start=0, length=length, fmt="tsv")
    )  # fmt: skip
    lines = raw.decode().splitlines()
    assert status == 200 and ctype.startswith("text/tab-separated-values"), raw[:200]
    assert len(lines) == 1 + 500 and len(nci.substructure("c1ccccc1")) > 500
