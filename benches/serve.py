"""Benchmark (issue 42): `molsift serve` under closed-loop clients, against goals stated per core,
so that they can be met (or not) on any machine. cores = os.cpu_count(); the goals:

1. with `cores` clients, similarity p99 <= 3x the single-client p50;
2. 0 errors at 1, 8 and 64 clients;
3. the server's own cost <= 1 ms: the median latency through HTTP at one client minus the median
   of the same searches called directly on the store in this process (`store.search`, one
   thread, the same queries; this process restarts itself onto the allocator `molsift serve`
   and its workers run on, tcmalloc when installed: python/molsift/allocator.py).

One run measures 1, `cores`, 8 and 64 clients (`--seconds` each, after a warm-up) and the direct
call, then one client asking one query string over and over (the server's result cache answers it:
the HTTP path, the front end's Python and the client's, without a search or a worker; it shows what
of goal 3's cost is the HTTP path on this machine), and prints one table (clients, requests, errors,
p50, p90, p99 ms, requests/s, the clients' and the server's CPU seconds) and a verdict line per
goal, met or not met with its figures; under goal 3, where a request's CPU goes at one client
(the client, the server's front end, its search workers, against the direct call's: at one
client they run one after another, so their sum is about the p50).

The server is a real `molsift serve` subprocess on 127.0.0.1 with the CLI's default limits: light
searches at once = the cores (`--max-concurrent`), and a search that finds no free slot waits up
to 10 s (`--queue-wait`) before a 503. The bench changes none of them: at 64 clients the searches
beyond the cores queue in the server (their wait is part of the latency), and an error there means
a search waited over 10 s (or another fault), which goal 2 counts.

The clients are closed loop (a client sends its next request when its answer has come): threads
spread over min(clients, cores) worker processes (so that no two clients of a small level share a
GIL; in the mix, each kind's clients over processes of their own), each thread with its own
keep-alive HTTP/1.1 connection (`http.client`), sending `GET /api/v1/search?type=similarity&k=10`
(top-10, `--similarity t0.7` for threshold 0.7 instead) for queries drawn from held-out molecules:
benches/data/moses_test_scaffolds.100.smi (MOSES test-set molecules whose scaffolds the training set
lacks), each written as `--spellings` RDKit random SMILES (same molecule, same fingerprint, same
hits): about 1,000 distinct query strings, so that the server's result cache (64 results) never
answers (a client asks a string another asked about 1,000 requests before). The direct call runs
over the same strings.

`--mpirun R --store SET` serves a store set under `mpirun -n R` (rank 0 the HTTP front end,
the other ranks searching the shards). The server's CPU columns count the server and every
process under it (mpirun's ranks, the heavy-search workers).

The load generator's own cost: on a machine of few cores the clients compete with the server
for the CPU (on 2 cores, 64 client threads and the server share 2 cores), so the latencies
include the clients' own scheduling and `http.client`'s parsing (a few tenths of a ms of CPU a
request). The table gives the clients' CPU seconds (all worker processes) and the server's
(`/proc`, Linux) beside each level's wall seconds x cores.

A last row, the mix: `cores` similarity clients while `cores` more clients send substructure
searches (`type=substructure&length=10`, the 500 ZINC fragments of
benches/data/zinc.frags.500.q.smi), heavy searches with slots of their own in the server (half
the cores, at least 1): light searches are not starved if their p99 in the mix stays within the
bound of goal 1 (3x the single-client p50) with 0 errors. The similarity clients sit in processes
as at `cores` clients and the substructure clients in processes of their own: a light client
never waits for the interpreter lock a heavy client holds (until 2026-12-02 each process held one
client of each kind, which put the load generator's own lock into the light latencies).

The store is the one store as `molsift ingest` writes it, served as `moses`: `--store PATH`, or
by default all of MOSES (../shared/data/moses_train.csv.gz) ingested into `--workdir` (kept and
reused by later runs).

    .venv/bin/python benches/serve.py [--store STORE | --workdir DIR] [--seconds 30] \\
        [--clients 1,2,8,64] [--similarity top10|t0.7] [--no-mix] [--json out.json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import procs  # noqa: E402  (tests/procs.py: the server's processes under /proc, as the tests read them)

MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"
HELD_OUT = ROOT / "benches" / "data" / "moses_test_scaffolds.100.smi"
FRAGMENTS = ROOT / "benches" / "data" / "zinc.frags.500.q.smi"
DB = "moses"


def cores() -> int:
    return max(1, os.cpu_count() or 1)


# ---- queries ----------------------------------------------------------------------------------


def similarity_queries(spellings: int) -> list[str]:
    """The held-out molecules, each as `spellings` RDKit random SMILES, molecule after molecule
    (consecutive strings are different molecules); duplicates dropped."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mols = [Chem.MolFromSmiles(line.split()[0]) for line in HELD_OUT.read_text().splitlines()]
    mols = [m for m in mols if m is not None]
    out, seen = [], set()
    for r in range(spellings):
        for i, mol in enumerate(mols):
            Chem.rdBase.SeedRandomNumberGenerator(1000 * r + i)
            s = Chem.MolToSmiles(mol, doRandom=True) if r else Chem.MolToSmiles(mol)
            if s not in seen:
                seen.add(s)
                out.append(s)
    return out


def fragment_queries() -> list[str]:
    return [ln.split()[0] for ln in FRAGMENTS.read_text().splitlines() if ln.strip()]


def search_path(params: dict, query: str) -> str:
    return "/api/v1/search?" + urllib.parse.urlencode({"db": DB, **params, "query": query})


# ---- the load: closed-loop client threads in worker processes ---------------------------------


def _client(port: int, paths: list, offset: int, go: threading.Event, seconds: list, out: dict):
    """One closed-loop client: its own keep-alive connection, `paths` from `offset` on, until
    the level's end; latencies (s) of 200 answers and the causes of the others into `out`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    lat, errors = out["lat"], out["errors"]
    go.wait()
    end = time.perf_counter() + seconds[0]
    i = offset
    while time.perf_counter() < end:
        path = paths[i % len(paths)]
        i += 1
        t = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            status = resp.status
        except (OSError, http.client.HTTPException) as e:
            conn.close()  # reconnects on the next request
            errors[type(e).__name__] += 1
            continue
        if status == 200:
            lat.append(time.perf_counter() - t)
        else:
            errors[str(status)] += 1
    conn.close()


def _worker(port: int, jobs: list, seconds: float, ready, go, results) -> None:
    """A worker process: one thread per (kind, paths, offset) of `jobs`; says it is ready, waits
    for `go`, runs `seconds`, puts {kind: {lat, errors}} and its CPU seconds on `results`."""
    out = {kind: {"lat": [], "errors": Counter()} for kind, _, _ in jobs}
    start = threading.Event()
    span = [seconds]
    threads = [
        threading.Thread(target=_client, args=(port, paths, offset, start, span, out[kind]))
        for kind, paths, offset in jobs
    ]
    for t in threads:
        t.start()
    ready.put(os.getpid())
    go.wait()
    cpu, wall = time.process_time(), time.perf_counter()
    start.set()
    for t in threads:
        t.join()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    out = {k: {**v, "errors": dict(v["errors"])} for k, v in out.items()}
    results.put({"cpu_s": cpu, "wall_s": wall, "out": out})


def server_cpu_s(pid: int) -> tuple[float, float] | None:
    """The server's user + system CPU seconds (Linux /proc), else None: (the process itself,
    every process under it that is alive: the search workers, mpirun's ranks)."""
    table = procs.table()
    if pid not in table:
        return None
    return table[pid].cpu_s, sum(table[p].cpu_s for p in procs.descendants(pid, table))


def percentile(sorted_values: list, p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100) of ascending values, in ms."""
    if not sorted_values:
        return None
    k = max(1, math.ceil(p / 100 * len(sorted_values)))
    return 1e3 * sorted_values[k - 1]


def summary(lat: list, errors: dict, wall: float) -> dict:
    lat = sorted(lat)
    return {
        "requests": len(lat),
        "errors": sum(errors.values()),
        "error_causes": errors,
        "p50_ms": percentile(lat, 50),
        "p90_ms": percentile(lat, 90),
        "p99_ms": percentile(lat, 99),
        "rps": len(lat) / wall,
        "wall_s": wall,
    }


def load(port: int, server_pid: int, kinds: dict, seconds: float) -> dict:
    """Closed-loop load for `seconds`: `kinds` maps a kind to (clients, paths); each kind's
    clients spread over min(its clients, cores) worker processes of their own (no process holds
    two kinds), each client starting at its own offset in its paths. Returns {kind: summary}
    plus the clients' and server's CPU s."""
    shares = []
    for kind, (n, paths) in kinds.items():
        jobs = [(kind, paths, k * len(paths) // n) for k in range(n)]
        procs_n = min(n, cores())
        shares += [jobs[p::procs_n] for p in range(procs_n)]
    ctx = mp.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    clients = [
        ctx.Process(target=_worker, args=(port, share, seconds, ready, go, results), daemon=True)
        for share in shares
    ]
    for p in clients:
        p.start()
    for _ in clients:
        ready.get(timeout=120)
    server0 = server_cpu_s(server_pid)
    go.set()
    got = [results.get(timeout=seconds + 300) for _ in clients]
    server1 = server_cpu_s(server_pid)
    wall = max(g["wall_s"] for g in got)  # from `go` to the last answer
    for p in clients:
        p.join(30)
    out = {}
    for kind in kinds:
        lat, errors = [], Counter()
        for g in got:
            if kind in g["out"]:  # a process holds the clients of one kind
                lat += g["out"][kind]["lat"]
                errors.update(g["out"][kind]["errors"])
        out[kind] = summary(lat, dict(errors), wall)
    out["client_cpu_s"] = sum(g["cpu_s"] for g in got)
    if server0 is None or server1 is None:
        out["server_cpu_s"] = out["front_cpu_s"] = out["workers_cpu_s"] = None
    else:  # the workers' part counts only those alive at both reads (a search's worker may end)
        out["front_cpu_s"] = server1[0] - server0[0]
        out["workers_cpu_s"] = max(0.0, server1[1] - server0[1])
        out["server_cpu_s"] = out["front_cpu_s"] + out["workers_cpu_s"]
    out["processes"] = len(shares)
    return out


def cpu_of(r: dict) -> dict:
    """A level's CPU seconds: the clients', the server's, and the server's split into its front
    end (the HTTP process) and its search workers."""
    keys = ("client_cpu_s", "server_cpu_s", "front_cpu_s", "workers_cpu_s")
    return {k: r.get(k) for k in keys}


# ---- the direct call --------------------------------------------------------------------------


def direct(store, queries: list, params: dict, seconds: float) -> dict:
    """The same searches called on the store in this process, one thread, for `seconds`."""
    lat = []
    cpu = time.process_time()
    t0 = time.perf_counter()
    end = t0 + seconds
    i = 0
    while time.perf_counter() < end:
        q = queries[i % len(queries)]
        i += 1
        t = time.perf_counter()
        store.search(q, threshold=params.get("threshold"), k=params.get("k"))
        lat.append(time.perf_counter() - t)
    out = summary(lat, {}, time.perf_counter() - t0)
    out["client_cpu_s"] = time.process_time() - cpu
    out["server_cpu_s"] = None
    return out


# ---- the server -------------------------------------------------------------------------------


def the_store(args) -> str:
    """--store, else MOSES's one store in --workdir (ingested when missing or unreadable)."""
    import molsift

    if args.store:
        return args.store
    work = Path(args.workdir or Path(tempfile.gettempdir()) / "molsift-bench-serve")
    work.mkdir(parents=True, exist_ok=True)
    path = work / "moses.store"
    try:
        molsift.open_store(str(path)).close()
        print(f"reusing {path}", flush=True)
        return str(path)
    except Exception:  # missing, partial or unreadable: written again
        pass
    print(f"ingesting {MOSES} into {path} (all cores) ...", flush=True)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "molsift", "ingest", str(MOSES), "-o", str(path), "-q",
         "--overwrite"],
        check=True,
    )  # fmt: skip
    print(f"ingested in {time.perf_counter() - t:.0f} s", flush=True)
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    store: str, port: int, log_path: Path, ranks: int = 0, options: tuple = ()
) -> subprocess.Popen:
    """`molsift serve` (default limits, or `options` added to its command line: --serve-option)
    on 127.0.0.1:port, once it answers; under `mpirun -n ranks` (rank 0 the front end, the
    others searching a set's shards) when ranks > 0."""
    log = open(log_path, "w")  # noqa: SIM115 - the server's stderr: start-up lines, access log
    mpirun = ["mpirun", "-n", str(ranks), "--oversubscribe", "--bind-to", "none"] if ranks else []
    server = subprocess.Popen(
        [*mpirun, sys.executable, "-m", "molsift", "serve", "--name", f"{DB}={store}",
         "--host", "127.0.0.1", "--port", str(port), *options],
        stdout=log, stderr=log,
    )  # fmt: skip
    log.close()
    deadline = time.time() + 300
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/databases")
            if conn.getresponse().status == 200:
                conn.close()
                return server
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            server.kill()
            sys.exit(f"the server did not start; its log:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.3)


def same_answers(port: int, store, queries: list, params: dict) -> None:
    """The server's hits (positions) equal the direct call's, for a few queries."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for q in queries[:5]:
        conn.request("GET", search_path(params, q))
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert resp.status == 200, body
        served = [h["position"] for h in body["hits"]]
        want = store.search(q, threshold=params.get("threshold"), k=params.get("k"))
        assert served == want.indices.tolist()[: len(served)], (q, served)
    conn.close()


# ---- report -----------------------------------------------------------------------------------


def fmt(x, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def table(rows: list) -> None:
    print("| clients | requests | errors | p50 ms | p90 ms | p99 ms | requests/s | client CPU s "
          "| server CPU s | wall s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['label']} | {r['requests']:,} | {r['errors']} | {fmt(r['p50_ms'])} | "
            f"{fmt(r['p90_ms'])} | {fmt(r['p99_ms'])} | {r['rps']:.1f} | "
            f"{fmt(r['client_cpu_s'], '.1f')} | {fmt(r['server_cpu_s'], '.1f')} | "
            f"{r['wall_s']:.1f} |"
        )
    for r in rows:
        if r["errors"]:
            print(f"errors at {r['label']}: {r['error_causes']}")


def cpu_per_request(row: dict) -> tuple[float, float, float] | None:
    """(client, server front end, search workers) CPU ms per answered request of a level, or
    None without the server's split."""
    if row.get("front_cpu_s") is None or not row["requests"]:
        return None
    n = row["requests"] / 1000
    return row["client_cpu_s"] / n, row["front_cpu_s"] / n, row["workers_cpu_s"] / n


def verdicts(levels: dict, direct_row: dict, mix: dict | None, cached: dict | None = None
             ) -> list[str]:  # fmt: skip
    n = cores()
    out = []
    one, many = levels.get(1), levels.get(n)
    if one and many and one["p50_ms"] is not None and many["p99_ms"] is not None:
        bound = 3 * one["p50_ms"]
        ok = many["p99_ms"] <= bound
        out.append(
            f"goal 1, p99 at {n} clients (= cores) <= 3x the single-client p50: "
            f"{'met' if ok else 'NOT met'} ({many['p99_ms']:.2f} ms vs 3 x {one['p50_ms']:.2f} "
            f"= {bound:.2f} ms)"
        )
    else:
        out.append(f"goal 1: not measured (needs the 1- and {n}-client levels)")
    need = [c for c in (1, 8, 64) if c in levels]
    errs = {c: levels[c]["errors"] for c in need}
    ok = len(need) == 3 and not any(errs.values())
    what = ", ".join(f"{v} at {c}" for c, v in errs.items())
    missing = "" if len(need) == 3 else " (not every level of 1, 8, 64 was measured)"
    out.append(f"goal 2, 0 errors at 1, 8 and 64 clients: {'met' if ok else 'NOT met'} "
               f"({what}){missing}")  # fmt: skip
    if one and one["p50_ms"] is not None:
        cost = one["p50_ms"] - direct_row["p50_ms"]
        out.append(
            f"goal 3, the server's own cost <= 1 ms: {'met' if cost <= 1 else 'NOT met'} "
            f"({one['p50_ms']:.2f} ms through HTTP at 1 client - {direct_row['p50_ms']:.2f} ms "
            f"direct = {cost:.2f} ms)"
        )
        if cached and cached["p50_ms"] is not None:
            out.append(
                f"  of it, the HTTP path alone (a cached answer, no search): p50 "
                f"{cached['p50_ms']:.2f} ms through HTTP at 1 client"
            )
        per = cpu_per_request(one)
        if per is not None:
            d = direct_row["client_cpu_s"] / max(1, direct_row["requests"]) * 1000
            out.append(
                f"  CPU a request at 1 client (Linux /proc): the client {per[0]:.2f} ms, the "
                f"server's front end {per[1]:.2f}, its search workers {per[2]:.2f} (the direct "
                f"call {d:.2f}): at one client they run one after another"
            )
    else:
        out.append("goal 3: not measured (needs the 1-client level)")
    if mix is not None and one and one["p50_ms"] is not None:
        light, heavy = mix["similarity"], mix["substructure"]
        bound = 3 * one["p50_ms"]
        ok = light["errors"] == 0 and light["p99_ms"] is not None and light["p99_ms"] <= bound
        out.append(
            f"mix, light searches not starved while heavy ones run (similarity p99 <= 3x the "
            f"single-client p50, 0 errors): {'met' if ok else 'NOT met'} (similarity p99 "
            f"{fmt(light['p99_ms'])} ms vs {bound:.2f} ms, {light['errors']} errors; "
            f"substructure p50 {fmt(heavy['p50_ms'])} ms, {heavy['requests']} done, "
            f"{heavy['errors']} errors)"
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description="molsift serve under 1, cores, 8 and 64 closed-loop clients, against the "
        "per-core goals (see the module's doc)"
    )
    ap.add_argument("--store", help="the one store to serve (default: MOSES's, in --workdir)")
    ap.add_argument("--workdir", help="where MOSES's store is kept (default: TMPDIR/molsift-"
                    "bench-serve)")  # fmt: skip
    ap.add_argument("--clients", help="levels (default: 1, the cores, 8, 64)")
    ap.add_argument("--seconds", type=float, default=30, help="per level (default 30)")
    ap.add_argument("--warmup", type=float, default=3, help="seconds at 1 client first")
    ap.add_argument("--similarity", choices=("top10", "t0.7"), default="top10")
    ap.add_argument("--spellings", type=int, default=10, help="random SMILES per molecule")
    ap.add_argument("--no-mix", action="store_true", help="skip the substructure mix")
    ap.add_argument("--mpirun", type=int, default=0, metavar="R",
                    help="serve --store (a store set) with `mpirun -n R`: rank 0 answers HTTP, "
                    "the others search the shards")  # fmt: skip
    ap.add_argument(
        "--serve-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="options for `molsift serve` (repeatable; e.g. '--inline-ms 0' to keep "
        "every search in a worker process, as before 2026-12-03)",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    import molsift
    from molsift import allocator

    # the direct call on the allocator the server runs on (`molsift serve` restarts itself onto
    # it): goal 3 compares like with like; the clients, spawned after, start as a user's do
    allocator.reexec(sys.argv[1:], script=sys.argv[0])

    n = cores()
    levels_n = sorted({int(x) for x in args.clients.split(",")} if args.clients else {1, n, 8, 64})
    params = {"k": 10} if args.similarity == "top10" else {"threshold": 0.7}
    api_params = {"type": "similarity", **params}
    store_path = the_store(args)
    queries = similarity_queries(args.spellings)
    paths = [search_path(api_params, q) for q in queries]
    store = molsift.open_store(store_path)
    print(
        f"{len(store):,} molecules, {len(queries):,} query strings, {n} cores; the direct call "
        f"and the server on {allocator.loaded()}",
        flush=True,
    )

    # the direct call first (it warms the page cache the server shares too)
    direct(store, queries, params, min(args.warmup, 3))
    direct_row = direct(store, queries, params, args.seconds)
    direct_row["label"] = "direct call (in-process, 1 thread)"
    print(json.dumps(direct_row), flush=True)

    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"molsift-bench-serve.{port}.log"
    options = tuple(o for opt in args.serve_option for o in opt.split())
    server = start_server(store_path, port, log_path, args.mpirun, options)
    rows, levels, mix, cached = [direct_row], {}, None, None
    try:
        same_answers(port, store, queries, params)
        load(port, server.pid, {"similarity": (1, paths)}, args.warmup)
        for c in levels_n:
            r = load(port, server.pid, {"similarity": (c, paths)}, args.seconds)
            row = {**r["similarity"], **cpu_of(r), "label": str(c), "clients": c}
            levels[c] = row
            rows.append(row)
            print(json.dumps(row), flush=True)
        if 1 in levels:  # one query string repeated: the result cache answers, no search
            r = load(port, server.pid, {"similarity": (1, paths[:1])}, args.seconds)
            cached = {**r["similarity"], **cpu_of(r), "label": "1, cached"}
            rows.append(cached)
            print(json.dumps(cached), flush=True)
        if not args.no_mix and store.has_pattern_index:
            heavy = [search_path({"type": "substructure", "length": 10}, q)
                     for q in fragment_queries()]  # fmt: skip
            mix = load(
                port, server.pid, {"similarity": (n, paths), "substructure": (n, heavy)},
                args.seconds,
            )  # fmt: skip
            for kind in ("similarity", "substructure"):
                first = kind == "similarity"  # the CPU columns: both kinds, on the first row
                row = {**mix[kind], "label": f"mix: {n} {kind}",
                       "client_cpu_s": mix["client_cpu_s"] if first else None,
                       "server_cpu_s": mix["server_cpu_s"] if first else None}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    what = "top-10" if args.similarity == "top10" else "threshold 0.7"
    print(
        f"\nmolsift serve: {len(store):,} molecules ({store_path}), similarity {what}, "
        f"{args.seconds:g} s per level, {n} cores shared by the server and the clients "
        f"(a level's CPU is at most wall s x {n}); server log {log_path}"
        + (f"; serve options: {' '.join(options)}" if options else "")
        + "\n"
    )
    table(rows)
    if mix is not None:
        print("(the mix's CPU seconds, on its first row, are for both kinds together)")
    print()
    lines = verdicts(levels, direct_row, mix, cached)
    for line in lines:
        print(line)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"cores": n, "rows": rows, "verdicts": lines}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
