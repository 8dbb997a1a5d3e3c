"""Benchmark: `molsift serve` under N concurrent clients (N = 1, 8, 64 by default) for a fixed time
per search type against all of MOSES: requests/s, p50 and p99 latency, errors; and the server's
own cost per request against the peer, the same requests answered by calling the Python API
directly: each query through the API then through the server at one client, alternately, and
the median of the per-query differences.

The server runs as its own process (`molsift serve`, default limits: searches at once = the
cores); the clients are threads of this process, each with its own keep-alive HTTP/1.1
connection on a plain socket (as a load generator: no header parsing beyond Content-Length),
sending GET requests of one type in a loop. Every request asks a different query than the last
64 (the server's result cache holds 64): similarity and exact cycle through 1,000 distinct
molecules, substructure through the 500 ZINC fragments, so the cache never answers.

    .venv/bin/python benches/serve.py --store MOSES.store --v2-store MOSES.v2.store \\
        [--clients 1,8,64] [--seconds 60] [--types similarity,exact,substructure] [--json out.json]

MOSES.store needs its substructure index (`molsift index STORE --pattern`) for the substructure
rows; MOSES.v2.store (`molsift upgrade`) answers the exact rows.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def queries(n: int = 1000) -> dict:
    from rdkit import Chem

    with gzip.open(ROOT.parent / "shared/data/moses_train.csv.gz", "rt") as fh:
        lines = fh.read().splitlines()
    rng = random.Random(7)
    picked = [line.split(",")[0] for line in rng.sample(lines[1:], n)]
    exact = []
    for i, s in enumerate(picked):
        mol = Chem.MolFromSmiles(s)
        Chem.rdBase.SeedRandomNumberGenerator(i)
        exact.append(Chem.MolToSmiles(mol, doRandom=True))
    frags = [
        line.split()[0]
        for line in (ROOT / "benches/data/zinc.frags.500.q.smi").read_text().splitlines()
        if line.strip()
    ]
    return {
        "similarity": [("moses", {"type": "similarity", "k": 10}, s) for s in picked],
        "substructure": [("moses", {"type": "substructure", "length": 10}, s) for s in frags],
        "exact": [("moses2", {"type": "exact"}, s) for s in exact],
    }


def path_of(db: str, params: dict, query: str) -> str:
    return "/api/v1/search?" + urllib.parse.urlencode({"db": db, "query": query, **params})


class Client:
    """A keep-alive HTTP/1.1 GET client on one socket, as a load generator is: it sends the
    request line and reads the status, the headers up to Content-Length and the body, no more
    (http.client parses every header with the email package: about 0.3 ms of this process's
    CPU a request, on the cores the server shares)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = None

    def get(self, path: str) -> int:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=120)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise OSError("connection closed")
                buf += chunk
            head, body = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            length = next(
                int(x.split(b":", 1)[1]) for x in lines if x.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise OSError("connection closed")
                body += chunk
            return int(lines[0].split()[1])
        except (OSError, StopIteration, ValueError):
            self.close()
            return 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def client(port: int, work: list, stop: float, out: list, errors: list, offset: int) -> None:
    conn = Client(port)
    i = offset
    while time.perf_counter() < stop:
        db, params, q = work[i % len(work)]
        i += 1
        t = time.perf_counter()
        ok = conn.get(path_of(db, params, q)) == 200
        (out if ok else errors).append(time.perf_counter() - t)
    conn.close()


def load(port: int, work: list, clients: int, seconds: float) -> dict:
    out: list = []
    errors: list = []
    stop = time.perf_counter() + seconds
    threads = [
        threading.Thread(
            target=client, args=(port, work, stop, out, errors, k * len(work) // clients)
        )
        for k in range(clients)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    lat = sorted(out)
    return {
        "requests": len(out),
        "errors": len(errors),
        "rps": len(out) / wall,
        "p50_ms": 1e3 * lat[len(lat) // 2] if lat else None,
        "p99_ms": 1e3 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
    }


def direct_call(store_v1, store_v2, params: dict, q: str) -> None:
    """The request through the Python API."""
    from molsift.lookup import lookup_all

    if params["type"] == "similarity":
        store_v1.search(q, k=params["k"])
    elif params["type"] == "substructure":
        store_v1.substructure(q)
    else:
        next(lookup_all(store_v2, [q], workers=1))


def paired(port: int, store_v1, store_v2, work: list, seconds: float) -> dict:
    """Each query through the Python API (one thread of this process), then the same query
    through the server at one client, alternately (the machine's noise weighs on both): the
    medians of each and of the per-query difference, the server's own cost."""
    conn = Client(port)
    direct, served, extra = [], [], []
    stop = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < stop:
        db, params, q = work[i % len(work)]
        i += 1
        t = time.perf_counter()
        direct_call(store_v1, store_v2, params, q)
        t1 = time.perf_counter()
        assert conn.get(path_of(db, params, q)) == 200, q
        t2 = time.perf_counter()
        direct.append(t1 - t)
        served.append(t2 - t1)
        extra.append((t2 - t1) - (t1 - t))
    conn.close()
    return {
        "direct_p50_ms": 1e3 * statistics.median(direct),
        "served_p50_ms": 1e3 * statistics.median(served),
        "overhead_p50_ms": 1e3 * statistics.median(extra),
        "paired_requests": len(extra),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--v2-store", required=True)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--types", default="similarity,exact,substructure")
    ap.add_argument("--json")
    args = ap.parse_args()
    import molsift

    work = queries()
    v1, v2 = molsift.open_store(args.store), molsift.open_store(args.v2_store)
    types = [t for t in args.types.split(",") if t != "substructure" or v1.has_pattern_index]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.devnull, "w")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "-m", "molsift", "serve", "--name", f"moses={args.store}",
         "--name", f"moses2={args.v2_store}", "--port", str(port)],
        stderr=log,
    )  # fmt: skip
    rows, pairs = [], []
    try:
        deadline = time.time() + 120
        while True:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=5).request("GET", "/")
                break
            except OSError:
                assert server.poll() is None and time.time() < deadline, "server did not start"
                time.sleep(0.5)
        for kind in types:
            # warm both sides (first-use checks, match workers), then the direct peer
            load(port, work[kind], 1, 2)
            pair = paired(port, v1, v2, work[kind], min(args.seconds, 20))
            pair["type"] = kind
            pairs.append(pair)
            print(json.dumps(pair), flush=True)
            for n in [int(x) for x in args.clients.split(",")]:
                r = load(port, work[kind], n, args.seconds)
                r.update(type=kind, clients=n)
                rows.append(r)
                print(json.dumps(r), flush=True)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    print(f"\nmolsift serve, all of MOSES ({len(v1):,} molecules), {args.seconds:g} s per row, "
          f"{os.cpu_count()} cores shared by server and clients\n")  # fmt: skip
    print("| type | clients | requests/s | p50 ms | p99 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['type']} | {r['clients']} | {r['rps']:.1f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['errors']} |"
        )
    print("\nthe server's own cost: each query through the Python API, then through the server "
          "(one client), alternately\n")  # fmt: skip
    print("| type | requests | direct API p50 ms | served p50 ms | per-query difference p50 ms |")
    print("|---|---:|---:|---:|---:|")
    for p in pairs:
        print(
            f"| {p['type']} | {p['paired_requests']} | {p['direct_p50_ms']:.3f} | "
            f"{p['served_p50_ms']:.3f} | {p['overhead_p50_ms']:.3f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"load": rows, "overhead": pairs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
