"""Benchmark: `molsift serve` under N concurrent clients (N = 1, 8, 64 by default) for a fixed time
per search type against all of MOSES: requests/s, p50 and p99 latency, errors; and the same
requests answered by calling the Python API directly in one thread (the peer for shape: what
the server adds per request is its p50 at one client minus the direct p50).

The server runs as its own process (`molsift serve`, default limits: searches at once = the
cores); the clients are threads of this process, each with its own keep-alive HTTP connection,
sending GET requests of one type in a loop. Every request asks a different query than the last
64 (the server's result cache holds 64): similarity and exact cycle through 1,000 distinct
molecules, substructure through the 500 ZINC fragments, so the cache never answers.

    .venv/bin/python benches/serve.py --store MOSES.store --v2-store MOSES.v2.store \\
        [--clients 1,8,64] [--seconds 60] [--json out.json]

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


def client(port: int, work: list, stop: float, out: list, errors: list, offset: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    i = offset
    while time.perf_counter() < stop:
        db, params, q = work[i % len(work)]
        i += 1
        t = time.perf_counter()
        try:
            conn.request("GET", path_of(db, params, q))
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
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


def direct(store_v1, store_v2, work: list, seconds: float) -> float:
    """Median ms of the same requests through the Python API, one thread."""
    from molsift.lookup import lookup_all

    times = []
    stop = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < stop:
        _db, params, q = work[i % len(work)]
        i += 1
        t = time.perf_counter()
        if params["type"] == "similarity":
            store_v1.search(q, k=params["k"])
        elif params["type"] == "substructure":
            store_v1.substructure(q)
        else:
            next(lookup_all(store_v2, [q], workers=1))
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--v2-store", required=True)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--json")
    args = ap.parse_args()
    import molsift

    work = queries()
    v1, v2 = molsift.open_store(args.store), molsift.open_store(args.v2_store)
    types = ["similarity", "exact"] + (["substructure"] if v1.has_pattern_index else [])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.devnull, "w")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "-m", "molsift", "serve", "--name", f"moses={args.store}",
         "--name", f"moses2={args.v2_store}", "--port", str(port)],
        stderr=log,
    )  # fmt: skip
    rows = []
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
            peer = direct(v1, v2, work[kind], min(args.seconds, 20))
            for n in [int(x) for x in args.clients.split(",")]:
                r = load(port, work[kind], n, args.seconds)
                r.update(type=kind, clients=n, direct_p50_ms=peer)
                rows.append(r)
                print(json.dumps(r), flush=True)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    print(f"\nmolsift serve, all of MOSES ({len(v1):,} molecules), {args.seconds:g} s per row, "
          f"{os.cpu_count()} cores shared by server and clients\n")  # fmt: skip
    print("| type | clients | requests/s | p50 ms | p99 ms | errors | direct API p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['type']} | {r['clients']} | {r['rps']:.1f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['errors']} | {r['direct_p50_ms']:.2f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
