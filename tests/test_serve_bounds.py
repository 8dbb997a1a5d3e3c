"""Every request to `molsift serve` is bounded (issue 42): probes of a live server (uvicorn on a
free loopback port, tests/servers.py) that once found a request running unbounded. Each asserts
the answer (4xx, 503 or 504 in the endpoint's own error shape, within a time bound, no
traceback) and that the server still answers afterwards: depictions bounded in size, time and
drawings at once, in worker processes that never stop searches; request bodies bounded when
chunked too; integers out of range refused in each API's shape; nothing from a request in a
response header unchecked; SmallWorld result-set ids random; a timed-out search stopped (the
gate's cancel flag, the substructure and analog searches' checks of it, and inside the Rust
kernels once the extension has them); light searches never waiting for heavy ones; idle, slow
and oversized connections cut."""

from __future__ import annotations

import asyncio
import io
import json
import os
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import procs
import pytest
from rdkit import Chem, RDLogger
from servers import Live, asgi_get, fetch

import molsift
from molsift.cancel import Cancelled, KernelFlag, new_flag
from molsift.serve import Catalog, Limits, create_app
from molsift.serve.app import AccessLog
from molsift.serve.limits import Gate, ServiceError, current_flag

RDLogger.DisableLog("rdApp.*")


def odd_ring(atoms: int, bond: str = "~", atom: str = "*") -> str:
    """A ring of `atoms` (odd) atoms: never in a bipartite molecule (the lattices below), and
    the graph matcher tries every path of that length first: 1.7 times the work for each two
    atoms more (29 atoms took 1.4 s on the lattices below, one thread)."""
    return f"{atom}1" + f"{bond}{atom}" * (atoms - 1) + "1"


#: about 35 s when nothing stops it
ODD_RING = odd_ring(41)
#: a SMARTS the graph matcher cannot express (`z`): matched by RDKit in growing batches
RDKIT_SMARTS = "[#6;z2]"


def lattice(rows: int, cols: int) -> str:
    """A saturated honeycomb patch (a bipartite graph: no odd cycle), as SMILES."""
    mol = Chem.RWMol()
    width = 2 * cols + 2
    at = {(r, c): mol.AddAtom(Chem.Atom(6)) for r in range(rows + 1) for c in range(width)}
    for r in range(rows + 1):
        for c in range(width - 1):
            mol.AddBond(at[r, c], at[r, c + 1], Chem.BondType.SINGLE)
    for r in range(rows):
        for c in range(width):
            if (r + c) % 2 == 0:
                mol.AddBond(at[r, c], at[r + 1, c], Chem.BondType.SINGLE)
    out = mol.GetMol()
    Chem.SanitizeMol(out)
    return Chem.MolToSmiles(out)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, bundled_smi):
    d = tmp_path_factory.mktemp("bounds")
    nci = d / "nci.store"
    molsift.ingest(bundled_smi, nci, workers=2, progress=False)
    smi = d / "lattices.smi"
    smi.write_text("".join(f"{lattice(r, c)} lat{r}x{c}\n" for r, c in ((3, 4), (4, 4), (4, 5))))
    lat = d / "lat.store"
    molsift.ingest(smi, lat, workers=1, progress=False, analogs=False)
    catalog = Catalog()
    catalog.add("nci", str(nci))
    catalog.add("lat", str(lat))
    yield catalog
    catalog.close()


def serve(catalog, **limits) -> Live:
    return Live(create_app(catalog, Limits(**limits), io.StringIO()))


@pytest.fixture(scope="module")
def live(stores):
    server = serve(stores, max_length=500)
    yield server
    server.stop()


def answer(live, path, data=None, headers=None, **params):
    """(status, content type, JSON or bytes, seconds) of one request."""
    began = time.monotonic()
    status, ctype, raw = fetch(live.url(path, **params), data, headers)
    took = time.monotonic() - began
    assert b"Traceback" not in raw and b'File "' not in raw, raw[:500]
    return status, ctype, (json.loads(raw) if "json" in ctype else raw), took


def alive(live) -> None:
    """The server still answers, at once."""
    status, _, body, took = answer(live, "/api/v1/databases")
    assert status == 200 and body["databases"] and took < 5


def depicter(live):
    inner = live.app
    while not hasattr(inner, "openapi"):  # the FastAPI app under our ASGI layers
        inner = inner.app
    return inner.state.depicter


# 1. depiction ------------------------------------------------------------------------------


def test_depiction_refuses_what_is_too_long_or_too_large(live):
    # the 3,300-character SMILES that once took 143 s
    huge = "C" * 3300
    status, _, body, took = answer(live, "/api/v1/depict", smiles=huge)
    assert status == 413 and "characters" in body["error"] and took < 5
    # short enough in characters, too many atoms: refused by the worker, before drawing
    status, _, body, took = answer(live, "/api/v1/depict", smiles="C" * 400)
    assert status == 413 and "heavy atoms" in body["error"] and took < 30
    for params in ({"smiles": "CCO", "width": 2**64}, {"smiles": " "}, {"smiles": "C1CC"}):
        status, _, body, _ = answer(live, "/api/v1/depict", **params)
        assert status == 400 and body["error"], params
    alive(live)


def test_depiction_is_drawn_once_then_cached(live):
    cache = depicter(live)._cache
    before = dict(cache._items)
    status, ctype, svg, _ = answer(live, "/api/v1/depict", smiles="c1ccccc1O", width=300)
    assert status == 200 and ctype.startswith("image/svg+xml") and b"<svg" in svg
    added = {k: v for k, v in cache._items.items() if k not in before}
    assert list(added.values()) == [(200, svg.decode())]
    used = cache.used
    status, _, again, _ = answer(live, "/api/v1/depict", smiles="c1ccccc1O", width=300)
    assert status == 200 and again == svg
    assert cache.used == used and len(cache._items) == len(before) + 1


def test_depiction_past_its_time_limit_is_ended_and_never_blocks_searches(stores):
    """Slow drawings (a 600-atom molecule takes about a second) on one worker with a 0.5 s
    limit: 504 or 503 for each, while searches and the database list answer at once; the
    worker killed on a timeout is replaced for the next drawing."""
    server = serve(
        stores, max_depict_concurrent=1, depict_timeout_s=0.5, queue_wait_s=0.5,
        max_depict_atoms=1000, max_depict_chars=5000,
    )  # fmt: skip
    try:
        status, _, _, _ = answer(server, "/api/v1/depict", smiles="CCO")  # worker started
        assert status == 200
        slow = ["C1CCCCC1" * 100 + "C" * i for i in range(8)]  # distinct: no cache hit
        with ThreadPoolExecutor(8) as pool:
            drawings = [pool.submit(answer, server, "/api/v1/depict", smiles=s) for s in slow]
            time.sleep(0.2)
            for _ in range(5):
                status, _, body, took = answer(
                    server, "/api/v1/search", db="nci", query="c1ccccc1O", k=5
                )
                assert status == 200 and len(body["hits"]) == 5 and took < 2, took
                status, _, _, took = answer(server, "/api/v1/databases")
                assert status == 200 and took < 2, took
            got = [f.result() for f in drawings]
        statuses = sorted(status for status, _, _, _ in got)
        assert set(statuses) <= {503, 504} and 504 in statuses and 503 in statuses, statuses
        for _, _, body, took in got:
            assert "time limit" in body["error"] or "busy" in body["error"]
            assert took < 5
        status, _, svg, _ = answer(server, "/api/v1/depict", smiles="c1ccncc1")
        assert status == 200 and b"<svg" in svg  # a new worker
        alive(server)
    finally:
        server.stop()


# 2. request bodies ---------------------------------------------------------------------------


def raw_request(live, head: bytes, timeout: float = 10) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", live.port), timeout=timeout)
    s.sendall(head)
    return s


def read_answer(s: socket.socket) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one response, read until the server closes the connection
    (or the body's length is read)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    headers = {k.lower(): v for k, v in headers.items()}
    length = int(headers.get("content-length", -1))
    while length < 0 or len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def closed(s: socket.socket, within: float) -> bool:
    """Whether the server closes `s` within `within` seconds (reading what it still sends)."""
    s.settimeout(within)
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_chunked_body_over_the_limit_is_refused_as_it_arrives(live):
    """A chunked body (no Content-Length) is counted as it is read: 413 once it passes the
    limit, the connection closed, the rest never read (the client cannot send megabytes)."""
    s = raw_request(
        live,
        b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
    )
    chunk = b"x" * 16384
    sent = 0
    s.setblocking(False)
    try:
        while sent < 64 << 20:
            readable, _, _ = select.select([s], [], [], 0)
            if readable:
                break
            try:
                s.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
            except BlockingIOError:
                time.sleep(0.01)
            except (BrokenPipeError, ConnectionResetError):
                break
    finally:
        s.setblocking(True)
        s.settimeout(10)
    assert sent < 8 << 20, f"{sent:,} bytes sent before the server answered"
    status, headers, body = read_answer(s)
    assert status == 413 and "body" in json.loads(body)["error"]
    assert headers.get("connection") == "close"
    assert closed(s, 5)
    s.close()
    # a small chunked body is read and answered
    payload = json.dumps({"db": "nci", "query": "c1ccccc1O", "k": 3}).encode()
    s = raw_request(
        live,
        b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n",
    )  # fmt: skip
    status, _, body = read_answer(s)
    assert status == 200 and len(json.loads(body)["hits"]) == 3
    s.close()
    alive(live)


def test_an_unread_body_closes_the_connection_after_the_answer(live):
    """A body an endpoint does not read (a GET's) is not read on after the answer: the
    connection is closed instead."""
    s = raw_request(
        live,
        b"GET /api/v1/databases HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4000\r\n" + b"y" * 0x4000 + b"\r\n",
    )
    status, headers, body = read_answer(s)
    assert status == 200 and json.loads(body)["databases"]
    assert headers.get("connection") == "close" and closed(s, 5)
    s.close()


# 3. integers out of range --------------------------------------------------------------------

BIG = str(2**64 + 5)


@pytest.mark.parametrize(
    "params",
    [{"start": BIG}, {"k": BIG}, {"length": BIG}, {"start": "-" + BIG}, {"k": "1" + "0" * 5000}],
)
def test_integers_out_of_range_are_400_in_api_v1(live, params):
    status, _, body, took = answer(live, "/api/v1/search", db="nci", query="CCO", **params)
    assert status == 400 and list(body) == ["error"] and took < 5, body
    assert next(iter(params)) in body["error"]


def test_integers_out_of_range_in_a_post_body_are_400(live):
    for field in ("start", "length", "k"):
        data = json.dumps({"db": "nci", "query": "CCO", field: 2**64}).encode()
        status, _, body, _ = answer(
            live, "/api/v1/search", data, {"Content-Type": "application/json"}
        )
        assert status == 400 and field in body["error"], (field, body)
    alive(live)


@pytest.mark.parametrize("name", ["draw", "start", "length"])
def test_integers_out_of_range_keep_arthors_shape(live, name):
    status, _, body, _ = answer(live, "/dt/nci/search", query="CCO", **{name: BIG})
    assert status == 400 and name in body["message"] and body["data"] == []
    assert body["recordsTotal"] == 0 and body["hasMore"] is False and "draw" in body
    alive(live)


def submit(live, smi: str, db: str) -> dict:
    """The last event of a SmallWorld submit."""
    status, _, raw, _ = answer(live, "/search/submit", smi=smi, db=db, dist=1)
    assert status == 200
    lines = [x for x in raw.decode().splitlines() if x.startswith("data:")]
    return json.loads(lines[-1][5:])


@pytest.mark.parametrize("name", ["draw", "start", "length"])
def test_integers_out_of_range_keep_smallworlds_shape(live, name):
    hlid = submit(live, "c1ccccc1O", "nci")["hlid"]
    status, _, body, _ = answer(live, "/search/view", hlid=hlid, **{name: BIG})
    assert status == 400 and list(body) == ["error"] and name in body["error"], body
    status, _, raw, _ = answer(live, "/search/submit", smi="CCO", db="nci", dist=BIG)
    assert status == 200 and "dist" in raw.decode()  # SmallWorld's MISS event says why
    alive(live)


# 4. nothing from a request in a response header unchecked ------------------------------------


def test_a_line_break_in_hlid_is_refused_not_put_in_a_header(live):
    hlid = submit(live, "c1ccccc1O", "nci")["hlid"]
    for bad in (" 1\n", f"{hlid}\n", f"{hlid}\r\nX-Injected: 1", f" {hlid}", "\uff11"):
        status, _, body, _ = answer(live, "/search/export", hlid=bad)
        assert status == 400 and "hlid" in body["error"], bad
    base = f"http://127.0.0.1:{live.port}"
    status, _, raw = fetch(base + "/search/export?hlid=%201%0a")
    assert status == 400 and json.loads(raw)["error"]
    status, _, raw, _ = answer(live, "/search/export", hlid=hlid)
    assert status == 200 and raw.startswith(b"SMILES ID\t")
    alive(live)


def test_a_header_that_cannot_be_sent_is_a_500_not_a_dropped_connection():
    """The safety net under every endpoint: a response header with a line break in it is
    answered 500 JSON, not sent (and the connection not dropped)."""

    async def bad_app(scope, receive, send):
        bad = [(b"content-disposition", b'attachment; filename="a\nb"')]
        await send({"type": "http.response.start", "status": 200, "headers": bad})
        await send({"type": "http.response.body", "body": b"x"})

    log = io.StringIO()
    status, body = asgi_get(AccessLog(bad_app, log, Limits(), Catalog()), "/search/export")
    assert status == 500 and "internal error" in json.loads(body)["error"]
    assert json.loads(log.getvalue())["status"] == 500


# 5. result-set ids --------------------------------------------------------------------------


def test_result_set_ids_are_random_63_bit_integers(live):
    ids = [submit(live, q, db)["hlid"] for q in ("CCO", "c1ccccc1O", "CCN") for db in ("nci",)]
    ids += [submit(live, "CCO", "lat")["hlid"]]  # the Tanimoto path (no analog index)
    assert all(isinstance(h, int) and 0 < h < 2**63 for h in ids), ids
    assert len(set(ids)) == len(ids)
    assert max(ids) > 2**40  # 4 draws all below 2**40: probability 2**-92
    assert sorted(ids) != list(range(min(ids), min(ids) + len(ids)))
    for guess in (1, 2, 3, min(ids) + 1):
        status, _, body, _ = answer(live, "/search/view", hlid=guess, start=0, length=5)
        assert status == 404 and "no such result set" in body["error"]


# 6. time limits, cancellation, heavy and light searches ------------------------------------


def test_the_gate_sets_the_cancel_flag_of_a_timed_out_search():
    """A search answered 504 has its flag set: one that reads it stops, and its slot is free
    long before it would have ended; a search that cannot stop keeps its slot (the bound
    holds)."""

    def cooperative(seconds: float) -> str:
        flag = current_flag()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if flag.is_set():
                return "stopped"
            time.sleep(0.005)
        return "ran to the end"

    async def scenario():
        gate = Gate(Limits(max_heavy=1, queue_wait_s=1.0, timeout_s=0.2))
        began = time.monotonic()
        with pytest.raises(ServiceError) as late:
            await gate.run(cooperative, 30.0, heavy=True)
        assert late.value.status == 504
        # the slot is free again (within the queue wait), not after 30 s
        assert await gate.run(lambda: current_flag().is_set(), heavy=True) is False
        assert time.monotonic() - began < 2
        # light slots are their own: a heavy search that cannot stop does not hold them
        stuck = asyncio.ensure_future(gate.run(time.sleep, 1.0, heavy=True))
        await asyncio.sleep(0.05)
        assert await gate.run(lambda: 7) == 7
        with pytest.raises(ServiceError):
            await stuck
        assert current_flag() is None  # outside a gate's thread

    asyncio.run(scenario())


class SetAfter:
    """A flag that reads unset `n` times, then set: where a search looks at its flag."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.reads = 0

    def is_set(self) -> bool:
        self.reads += 1
        return self.reads > self.n


def test_substructure_search_checks_its_flag_between_batches(stores):
    from molsift.substructure.search import last_stats, substructure

    store = stores.get("nci").store
    everything = substructure(store, RDKIT_SMARTS, smarts=True, workers=1)
    stats = last_stats()
    assert stats["form"] != "graph" and stats["candidates"] > 1000 and len(everything) > 0
    flag = SetAfter(3)
    with pytest.raises(Cancelled):
        substructure(store, RDKIT_SMARTS, smarts=True, workers=1, cancel=flag)
    assert 0 < last_stats()["matched"] < stats["candidates"]  # stopped part way
    assert flag.reads == 4
    preset = new_flag()
    preset.set()
    with pytest.raises(Cancelled):
        substructure(store, "c1ccccc1", workers=1, cancel=preset)
    assert substructure(store, "c1ccccc1", workers=1, cancel=new_flag()).tolist() == (
        substructure(store, "c1ccccc1", workers=1).tolist()
    )


def test_analog_search_checks_its_flag(stores):
    from molsift.analogs.search import analogs, iter_analogs

    store = stores.get("nci").store
    preset = new_flag()
    preset.set()
    with pytest.raises(Cancelled):
        analogs(store, "c1ccccc1O", max_dist=1, cancel=preset)
    with pytest.raises(Cancelled):
        list(iter_analogs(store, "c1ccccc1O", max_dist=2, cancel=preset))
    want = analogs(store, "c1ccccc1O", max_dist=1)
    got = analogs(store, "c1ccccc1O", max_dist=1, cancel=new_flag())
    assert got["position"].tolist() == want["position"].tolist()


needs_kernel_flag = pytest.mark.skipif(
    KernelFlag is None,
    reason="the built extension has no cancel flag yet (rebuild crates/py: maturin develop)",
)


@needs_kernel_flag
def test_the_graph_matcher_stops_inside_a_molecule_when_cancelled(stores):
    """One molecule whose match would take a minute (an odd ring in a honeycomb) stops within
    a fraction of a second of its flag being set."""
    from molsift.substructure.search import substructure

    store = stores.get("lat").store
    flag = new_flag()
    threading.Timer(0.3, flag.set).start()
    began = time.monotonic()
    with pytest.raises(Cancelled):
        substructure(store, ODD_RING, smarts=True, workers=2, cancel=flag)
    assert time.monotonic() - began < 2.5


@needs_kernel_flag
def test_the_analog_walk_stops_inside_when_cancelled(stores):
    from molsift.analogs.search import analogs

    store = stores.get("nci").store
    flag = new_flag()
    threading.Timer(0.2, flag.set).start()
    began = time.monotonic()
    with pytest.raises(Cancelled):
        analogs(store, "CC(=O)Nc1ccc(O)cc1CCCCN", max_dist=8, cancel=flag)
    assert time.monotonic() - began < 2


@needs_kernel_flag
def test_a_timed_out_search_stops_and_frees_its_slot(stores):
    """The SMARTS that would run a minute is answered 504 at the time limit, and stops: the one
    heavy slot is free again for the next substructure search within the queue wait."""
    server = serve(stores, max_heavy=1, timeout_s=0.5, queue_wait_s=3.0)
    try:
        status, _, body, took = answer(
            server, "/api/v1/search", db="lat", query=ODD_RING, type="smarts"
        )
        assert status == 504 and "time limit" in body["error"] and took < 3
        status, _, body, took = answer(
            server, "/api/v1/search", db="nci", query="c1ccncc1", type="substructure"
        )
        assert status == 200 and body["total"] > 0 and took < 3.5
        alive(server)
    finally:
        server.stop()


def heavy_workers(light: bool = False) -> dict[int, int]:
    """{pid: niceness} of this process's heavy search workers (serve/heavy.py), or of its light
    ones (serve/light.py: the same program with `--light`)."""
    found = {}
    for p in procs.table().values():
        if p.ppid != os.getpid() or p.state == "Z":
            continue
        cmd = procs.cmdline(p.pid)
        if b"molsift.serve.heavy" in cmd and (b"--light" in cmd) == light:
            found[p.pid] = p.nice
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_heavy_searches_run_in_worker_processes_of_lower_priority(stores):
    """Substructure, SMARTS and wide analog searches run in a worker process of the server
    (never holding the server's interpreter lock), niced below it, with the answers of the
    store itself; a search past the time limit is answered 504 and its worker killed, and a
    fresh worker answers the next."""
    from molsift.serve.heavy import HEAVY_NICE

    server = serve(stores, max_heavy=1, timeout_s=1.0, queue_wait_s=5.0)
    nci = stores.get("nci").store
    before = set(heavy_workers())
    try:
        status, _, body, _ = answer(
            server, "/api/v1/search", db="nci", query="c1ccncc1", type="substructure", length=500
        )
        assert status == 200
        assert [h["position"] for h in body["hits"]] == nci.substructure("c1ccncc1").tolist()
        status, _, body, _ = answer(
            server, "/api/v1/search", db="nci", query="c1ccccc1O", type="analogs", dist=3, k=20
        )
        assert status == 200
        want = nci.analogs("c1ccccc1O", max_dist=3, k=20)
        assert [h["position"] for h in body["hits"]] == want["position"].tolist()
        workers = {pid: ni for pid, ni in heavy_workers().items() if pid not in before}
        assert len(workers) == 1, workers  # one heavy slot: one worker, reused
        (first, nice), own = workers.popitem(), os.nice(0)
        assert nice == min(19, own + HEAVY_NICE)
        status, _, body, took = answer(
            server, "/api/v1/search", db="lat", query=ODD_RING, type="smarts"
        )
        assert status == 504 and "time limit" in body["error"] and took < 3
        deadline = time.monotonic() + 5
        while first in heavy_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first not in heavy_workers()  # killed: the search stopped with it
        status, _, body, _ = answer(
            server, "/api/v1/search", db="nci", query="c1ccncc1", type="substructure", length=5
        )
        assert status == 200 and body["total"] == len(nci.substructure("c1ccncc1"))
        now = set(heavy_workers()) - before
        assert now and first not in now
        alive(server)
    finally:
        server.stop()
    deadline = time.monotonic() + 5
    while set(heavy_workers()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(heavy_workers()) - before  # ended with the server


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_light_searches_run_in_worker_processes_of_the_servers_priority(stores):
    """Similarity and exact searches run in light worker processes (serve/light.py: no thread of
    the server holds the interpreter lock for them), at the server's own priority, at most one
    per light slot, with the store's own answers; one past the time limit is answered 504 and
    its worker killed, and a fresh worker answers the next."""
    limits = Limits(max_concurrent=2, timeout_s=30.0, queue_wait_s=10.0)
    server = serve(stores, **vars(limits))
    nci = stores.get("nci").store
    before = set(heavy_workers(light=True))
    try:
        for q in ("c1ccccc1O", "CCN(CC)CC", "O=C(O)c1ccccc1"):
            status, _, body, _ = answer(server, "/api/v1/search", db="nci", query=q, k=7)
            assert status == 200
            assert [h["position"] for h in body["hits"]] == nci.search(q, k=7).indices.tolist()
        status, _, body, _ = answer(
            server, "/api/v1/search", db="nci", query=nci.smiles[3], type="exact"
        )
        assert status == 200 and 3 in [h["position"] for h in body["hits"]]
        workers = {pid: ni for pid, ni in heavy_workers(light=True).items() if pid not in before}
        assert 1 <= len(workers) <= 2, workers
        assert set(workers.values()) == {os.nice(0)}  # not niced: light searches come first
        live = live_limits(server)
        live.timeout_s = 1e-4  # no search answers that fast
        status, _, body, _ = answer(server, "/api/v1/search", db="nci", query="CCOC(=O)C", k=3)
        assert status == 504 and "time limit" in body["error"]
        deadline = time.monotonic() + 5
        while set(workers) <= set(heavy_workers(light=True)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not set(workers) <= set(heavy_workers(light=True))  # the timed-out one killed
        live.timeout_s = 30.0
        status, _, body, _ = answer(server, "/api/v1/search", db="nci", query="CCOC(=O)C", k=3)
        assert status == 200
        assert [h["position"] for h in body["hits"]] == nci.search(
            "CCOC(=O)C", k=3
        ).indices.tolist()
        alive(server)
    finally:
        server.stop()
    deadline = time.monotonic() + 5
    while set(heavy_workers(light=True)) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(heavy_workers(light=True)) - before  # ended with the server


def test_one_clients_small_searches_run_on_the_event_loop_once_the_store_is_known_fast(stores):
    """One client asking one search after another on a kept-alive connection: the first
    RECENT_MIN light searches of a store run in a worker (their times make the store's record),
    then, the store's searches fast, the small ones run on the event loop (no worker asked),
    with the store's own answers; a large k, a low threshold without k, a long page or a
    substructure search still go where they went. `--inline-ms 0` keeps every one in a
    worker; so does a second connection asking at the same time (Activity)."""
    import http.client

    from molsift.serve import queries

    def run(limits: dict, connections: int = 1) -> list:
        server = serve(stores, **limits)
        asked = []
        light = server.app.light_workers
        real = light.search

        async def counted(req, span=(0, 0)):
            asked.append((req.query, req.k, req.threshold))
            return await real(req, span)

        light.search = counted
        nci = stores.get("nci").store
        conns = [http.client.HTTPConnection("127.0.0.1", server.port) for _ in range(connections)]
        try:
            for q in list(dict.fromkeys(nci.smiles[:40]))[: RECENT_MIN + 6]:
                for k, conn in enumerate(conns, 5):  # a second connection: in turn, its own k
                    conn.request("GET", f"/api/v1/search?db=nci&k={k}&query={quote(q)}")
                    reply = conn.getresponse()
                    body = json.loads(reply.read())
                    assert reply.status == 200
                    want = nci.search(q, k=k).indices.tolist()
                    assert [h["position"] for h in body["hits"]] == want
            asked_before = len(asked)
            big = [
                {"k": str(queries.INLINE_K + 1)},
                {"threshold": "0.3"},
                {"k": "5", "length": str(queries.INLINE_ROWS + 1)},
            ]
            for j, extra in enumerate(big):
                q = nci.smiles[100 + 7 * j]
                params = "&".join(f"{k}={v}" for k, v in extra.items())
                conns[0].request("GET", f"/api/v1/search?db=nci&{params}&query={quote(q)}")
                reply = conns[0].getresponse()
                reply.read()
                assert reply.status == 200
            assert len(asked) == asked_before + len(big)  # each in a worker
        finally:
            for conn in conns:
                conn.close()
            server.stop()
        return asked

    RECENT_MIN = queries.RECENT_MIN
    # one connection: the first RECENT_MIN in workers, then on the loop (a bound no search of
    # this small store reaches, however loaded the machine)
    assert len(run({"inline_ms": 1000.0})) == RECENT_MIN + 3
    # never on the loop: told so, or two connections asking
    assert len(run({"inline_ms": 0.0})) == RECENT_MIN + 6 + 3
    assert len(run({"inline_ms": 1000.0}, connections=2)) == 2 * (RECENT_MIN + 6) + 3
    # a store whose searches are not fast enough: in workers
    assert len(run({"inline_ms": 1e-6})) == RECENT_MIN + 6 + 3


def test_the_activity_tells_one_connection_asking_from_several():
    """Activity.alone: true for one connection's requests one after another; false while
    another request is under way, and for WINDOW_S after a second connection asked or a
    request began while another was under way."""
    from molsift.serve.limits import Activity

    a, w = Activity(), Activity.WINDOW_S
    a.begin(("127.0.0.1", 1), 10.0)
    assert a.alone(10.0)
    a.end()
    a.begin(("127.0.0.1", 1), 10.001)  # the same connection again
    assert a.alone(10.001)
    a.begin(("127.0.0.1", 2), 10.002)  # a second, while the first's is under way
    assert not a.alone(10.002)
    a.end()
    assert not a.alone(10.002)  # one under way, but two connections met just now
    a.end()
    a.begin(("127.0.0.1", 2), 10.002 + w / 2)
    assert not a.alone(10.002 + w / 2)
    a.end()
    a.begin(("127.0.0.1", 2), 10.01 + w)  # the window passed: one connection again
    assert a.alone(10.01 + w)
    a.end()
    assert a.under_way == 0


def test_a_workers_search_reads_the_texts_of_the_page_asked_for(stores):
    """A search in a worker process reads the SMILES and ids of the page's hits there
    (queries.Result.texts: hits `start .. stop`, none else), equal to the store's; the page is
    answered from them (no read of the store's columns in the server), rows beyond them read
    the columns."""
    from molsift.serve import queries
    from molsift.serve.light import LightWorkers

    db, limits = stores.get("nci"), Limits(max_concurrent=1, timeout_s=30.0)
    nci = db.store
    workers = LightWorkers(stores, limits)
    try:
        req = queries.check(db, "similarity", "c1ccccc1O", 0.2, None, limits)
        result = asyncio.run(workers.search(req, (2, 7)))
    finally:
        workers.close()
    positions = [int(p) for p in result.positions]
    assert (
        len(positions) > 8 and positions == nci.search("c1ccccc1O", threshold=0.2).indices.tolist()
    )
    page = positions[2:7]
    assert list(result.texts) == page
    assert list(result.texts.values()) == list(zip(nci.smiles.take(page), nci.ids.take(page)))

    class NoColumns:  # a database whose columns must not be read
        store = None

    smiles, ids = queries.texts(NoColumns, page, result)
    assert (smiles, ids) == (nci.smiles.take(page), nci.ids.take(page))
    smiles, ids = queries.texts(db, positions[:7], result)  # beyond the texts: read
    assert (smiles, ids) == (nci.smiles.take(positions[:7]), nci.ids.take(positions[:7]))


def live_limits(server) -> Limits:
    """The Limits object a live server's app reads (changed in place by a test)."""
    return server.app.limits


def test_light_searches_never_wait_for_heavy_ones(stores):
    """Heavy searches (SMARTS of about 4 s each on the lattices) fill their one slot and queue
    (then 503); similarity and exact searches of the same store, and of another, answer at
    once meanwhile (they once waited behind the store's lock, or for a slot heavy ones held)."""
    server = serve(stores, max_heavy=1, max_concurrent=2, timeout_s=20, queue_wait_s=0.5)
    lat, nci = stores.get("lat").store, stores.get("nci").store
    try:
        # distinct queries of the same cost: no cache hit
        heavy = [odd_ring(33, "~"), odd_ring(33, "-"), odd_ring(33, "~", "[#6]")]
        with ThreadPoolExecutor(len(heavy)) as pool:
            slow = [
                pool.submit(answer, server, "/api/v1/search", db="lat", query=q, type="smarts")
                for q in heavy
            ]
            time.sleep(0.2)
            began = time.monotonic()
            for db, store in (("lat", lat), ("nci", nci), ("lat", lat), ("nci", nci)):
                q = store.smiles[1]
                status, _, body, took = answer(server, "/api/v1/search", db=db, query=q, k=3)
                assert status == 200 and took < 1.5, took
                assert [h["position"] for h in body["hits"]] == store.search(
                    q, k=3
                ).indices.tolist()
                status, _, body, took = answer(
                    server, "/api/v1/search", db=db, query=q, type="exact"
                )
                assert status == 200 and 1 in [h["position"] for h in body["hits"]] and took < 1.5
            light_s = time.monotonic() - began
            got = [f.result() for f in slow]
        assert max(took for _, _, _, took in got) > light_s  # the light ones ran meanwhile
        statuses = [status for status, _, _, _ in got]
        assert set(statuses) <= {200, 503} and 200 in statuses, statuses
        for status, _, body, _ in got:
            if status == 503:
                assert "heavy searches" in body["error"]
        alive(server)
    finally:
        server.stop()


def test_wide_analog_searches_are_heavy_and_leave_light_ones_alone(stores):
    """Two SmallWorld submits at dist=8 (the walk runs until its own time limit) once held both
    search slots while light searches got 503: now the first holds the one heavy slot, the
    second is told the server is busy, and similarity searches answer meanwhile."""
    limits = Limits()
    assert limits.heavy("analogs", 8) and limits.heavy("substructure") and limits.heavy("smarts")
    assert not limits.heavy("analogs", 1) and not limits.heavy("similarity")
    assert not limits.heavy("exact")
    server = serve(stores, max_heavy=1, max_concurrent=2, timeout_s=3, queue_wait_s=0.3)
    nci = stores.get("nci").store
    try:
        with ThreadPoolExecutor(2) as pool:
            wide = [
                pool.submit(answer, server, "/search/submit", smi=q, db="nci", dist=8)
                for q in ("CC(=O)Nc1ccc(O)cc1", "CCN(CC)CCOC(=O)c1ccccc1")
            ]
            time.sleep(0.5)
            for q in ("c1ccccc1O", "CCN(CC)CC", "O=C(O)c1ccccc1", "Clc1ccccc1"):
                status, _, body, took = answer(server, "/api/v1/search", db="nci", query=q, k=5)
                assert status == 200 and took < 1.5, took
                assert [h["position"] for h in body["hits"]] == nci.search(q, k=5).indices.tolist()
            got = [f.result() for f in wide]
        last = []
        for status, _, raw, _ in got:
            assert status == 200
            events = [json.loads(x[5:]) for x in raw.decode().splitlines() if x.startswith("data:")]
            last.append(events[-1])
        kinds = sorted(e["status"] for e in last)
        assert kinds == ["END", "MISS"], last
        miss = next(e for e in last if e["status"] == "MISS")
        assert "heavy searches" in miss["message"]
        end = next(e for e in last if e["status"] == "END")
        assert end["partial"] is True and end["numHits"] > 0  # its walk's own time limit
        alive(server)
    finally:
        server.stop()


def macrocycle(atoms: int) -> str:
    """One ring of `atoms` carbons: RDKit's ring perception of it holds Python's interpreter
    lock for about 0.4 s at 4,000 atoms (quadratic in the ring's size)."""
    return "C1" + "C" * (atoms - 2) + "C1"


def test_long_queries_are_read_outside_the_server_process(stores):
    """A similarity, exact or SmallWorld analog query of 4,000 atoms (each RDKit read of it held
    the interpreter lock for about half a second, in the server's threads or, for SmallWorld's
    analog submit, on its event loop) is a heavy search, read in a worker process: the database
    list and short similarity searches answer at once meanwhile, and each long query's answer is
    the store's own."""
    limits = Limits()
    assert limits.heavy("similarity", None, limits.light_query_chars + 1)
    assert not limits.heavy("similarity", None, limits.light_query_chars)
    assert limits.heavy("exact", None, limits.light_query_chars + 1)
    assert limits.heavy("analogs", 1, limits.light_query_chars + 1)
    server = serve(stores, max_heavy=1, max_concurrent=2, timeout_s=60, queue_wait_s=60)
    nci = stores.get("nci").store
    long = [macrocycle(4000 + i) for i in range(4)]  # distinct: no cache hit
    try:
        status, _, _, _ = answer(server, "/api/v1/search", db="nci", query="CCO", type="smarts")
        assert status == 200  # the heavy worker started
        with ThreadPoolExecutor(len(long) + 1) as pool:
            slow = [
                pool.submit(answer, server, "/api/v1/search", db="nci", query=q, k=3)
                for q in long[:2]
            ]
            slow.append(
                pool.submit(answer, server, "/api/v1/search", db="nci", query=long[2], type="exact")
            )
            slow.append(
                pool.submit(answer, server, "/search/submit", smi=long[3], db="nci", dist=2)
            )
            time.sleep(0.3)
            for q in ("c1ccccc1O", "CCN(CC)CC", "O=C(O)c1ccccc1", "Clc1ccccc1"):
                status, _, _, took = answer(server, "/api/v1/databases")
                assert status == 200 and took < 1.0, took
                status, _, body, took = answer(server, "/api/v1/search", db="nci", query=q, k=5)
                assert status == 200 and took < 1.0, took
                assert [h["position"] for h in body["hits"]] == nci.search(q, k=5).indices.tolist()
            got = [f.result() for f in slow]
        for (status, _, body, _), q in zip(got[:2], long):
            assert status == 200
            assert [h["position"] for h in body["hits"]] == nci.search(q, k=3).indices.tolist()
        status, _, body, _ = got[2]
        assert status == 200 and body["hits"] == []  # no such ring in the store
        status, _, raw, _ = got[3]
        events = [json.loads(x[5:]) for x in raw.decode().splitlines() if x.startswith("data:")]
        assert status == 200 and events[-1]["status"] == "END", events
        assert events[-1]["numHits"] == len(nci.analogs(long[3], max_dist=2)) == 0
        status, _, raw, _ = answer(server, "/search/submit", smi="C1" + "C" * 300 + "X", db="nci")
        events = [json.loads(x[5:]) for x in raw.decode().splitlines() if x.startswith("data:")]
        assert status == 200 and events[-1]["status"] == "MISS", events
        assert "invalid" in events[-1]["message"], events
        alive(server)
    finally:
        server.stop()


# 7. connections ------------------------------------------------------------------------------


def test_idle_and_slowloris_connections_are_cut(stores):
    server = serve(stores, read_timeout_s=1.0, keep_alive_s=1.0)
    try:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
        slow = socket.create_connection(("127.0.0.1", server.port))
        began = time.monotonic()
        request = b"GET /api/v1/databases HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        sent = 0
        slow.settimeout(0.1)
        answer_bytes = b""
        while time.monotonic() - began < 5 and sent < len(request):
            try:
                slow.send(request[sent : sent + 1])
                sent += 1
                answer_bytes += slow.recv(4096)
                if answer_bytes:
                    break
            except TimeoutError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
        took = time.monotonic() - began
        assert took < 3, f"the slow client was not cut ({took:.1f} s)"
        assert answer_bytes.startswith(b"HTTP/1.1 408") and b'"error"' in answer_bytes
        for s in idle:
            assert closed(s, 3)
            s.close()
        slow.close()
        # a kept-alive connection is closed once idle past its limit
        s = raw_request(server, b"GET /api/v1/databases HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = read_answer(s)
        assert status == 200 and closed(s, 3)
        s.close()
        alive(server)
    finally:
        server.stop()


def test_oversized_heads_and_too_many_connections_are_refused(stores):
    server = serve(stores, max_header_bytes=8192, max_connections=4)
    try:
        s = raw_request(
            server,
            b"GET /api/v1/databases HTTP/1.1\r\nHost: x\r\n"
            + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000) for i in range(50)),
        )
        status, _, body = read_answer(s)
        assert status == 431 and "headers" in json.loads(body)["error"]
        s.close()
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
        extra = raw_request(server, b"GET /api/v1/databases HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_answer(extra)
        assert status == 503 and "connections" in json.loads(body)["error"]
        extra.close()
        for s in held:
            s.close()
        time.sleep(0.2)
        alive(server)
    finally:
        server.stop()


def test_a_store_replaced_on_disk_is_answered_from_the_servers_generation(tmp_path, bundled_smi):
    """The server opened a store; `ingest --overwrite` replaced it before any search worker
    started. A worker that opens the new files is not used (their positions with the server's
    rows would mix two generations): the search runs in the server, from what it opened."""
    lines = bundled_smi.read_text().splitlines()
    old, new = tmp_path / "old.smi", tmp_path / "new.smi"
    old.write_text("\n".join(lines[:400]) + "\n")
    new.write_text("\n".join(lines[2000:2600]) + "\n")
    target = tmp_path / "t.store"
    molsift.ingest(old, target, workers=1, progress=False)
    catalog = Catalog()
    catalog.add("t", str(target))
    try:
        first = catalog.get("t").store
        want = {q: first.search(q, k=5).indices.tolist() for q in ("c1ccccc1O", "CCN(CC)CC")}
        molsift.ingest(new, target, workers=1, progress=False, overwrite=True)
        app = create_app(catalog, Limits(), io.StringIO())
        try:
            for q, positions in want.items():
                status, body = asgi_get(app, "/api/v1/search", db="t", query=q, k=5)
                assert status == 200
                assert [h["position"] for h in json.loads(body)["hits"]] == positions
            status, body = asgi_get(app, "/api/v1/search", db="t", query="c1ccncc1",
                                    type="substructure", length=1000)  # fmt: skip
            assert status == 200
            got = [h["position"] for h in json.loads(body)["hits"]]
            assert got == first.substructure("c1ccncc1").tolist()
        finally:
            app.heavy_workers.close()
            app.light_workers.close()
    finally:
        catalog.close()


def test_a_batch_view_past_the_most_k_is_clamped_not_refused(stores):
    """SmallWorld's batch view searched each query with k = its `length`: with a --max-length
    over the most k (100,000 by default), a length between the two, clamped by the page cap
    the docs promise, was refused as `k=...: give a value from 1 to ...`."""
    server = serve(stores, max_length=300, max_k=50)
    try:
        for fmt in ("json", "tsv"):
            status, _ctype, body, _took = answer(
                server, "/search/view", smi="c1ccccc1O", db="nci", length=200, fmt=fmt
            )
            assert status == 200, body
            rows = body["data"] if fmt == "json" else body.decode().splitlines()[1:]
            assert len(rows) == 50  # the most k: what the server keeps of a similarity search
        alive(server)
    finally:
        server.stop()
