"""Store sets searched by MPI ranks (`mpirun -n R molsift VERB SET`, real mpirun): every verb's
output equals the one store's without MPI, byte for byte, for 1 to 4 ranks over sets of 1, 2, 5
and 7 shards (more ranks than shards included); a damaged shard ends the job naming it; a rank
killed mid-search ends the job with a non-zero exit, no hang."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import time

import procs
import pytest
from conftest import BUNDLED_SMI, molsift_cmd, molsift_run, mpi_env, mpirun_cmd

import molsift

SHARDS = (1, 2, 5, 7)
# (ranks, shards): every rank count, every set, and ranks beyond the shards
CASES = [(1, 7), (2, 5), (3, 2), (4, 7), (2, 1), (4, 2)]
VERBS = {
    "search-k": ["search", "-k", "7"],
    "search-t": ["search", "-t", "0.42"],
    "search-kt": ["search", "-k", "3", "-t", "0.5"],
    "substructure": ["substructure", "--smarts", "--max-hits", "40"],
    "analogs": ["analogs", "--dist", "2", "-k", "15"],
    "analogs-all": ["analogs", "--dist", "1"],
    "lookup": ["lookup"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("mpisets")
    one = root / "one.store"
    molsift.ingest(BUNDLED_SMI, one, workers=1, progress=False)
    store = molsift.open_store(one)
    sets = {}
    for k in SHARDS:
        sets[k] = root / f"s{k}.set"
        molsift.ingest(BUNDLED_SMI, sets[k], workers=1, shards=k, progress=False)
    picks = [store.smiles[i] for i in range(3, len(store), 613)]
    (root / "q.smi").write_text("".join(f"{s} q{i}\n" for i, s in enumerate(picks)))
    smarts = ["c1ccccc1O", "[#7;R]", "C(=O)[OH]", "[Cl,Br,I]", "[#6]#[#7]"]
    (root / "q.sma").write_text("".join(f"{s} p{i}\n" for i, s in enumerate(smarts)))
    return {"one": one, "sets": sets, "smi": root / "q.smi", "sma": root / "q.sma"}


def _args(built, verb):
    words = VERBS[verb]
    queries = built["sma"] if verb == "substructure" else built["smi"]
    return words[:1], [*words[1:], "--queries", str(queries)]


@pytest.mark.parametrize("verb", list(VERBS))
@pytest.mark.parametrize(("ranks", "shards"), CASES)
def test_ranks_answer_as_the_one_store(built, verb, ranks, shards):
    head, tail = _args(built, verb)
    want = molsift_run(*head, built["one"], *tail)
    got = subprocess.run(
        mpirun_cmd(ranks) + molsift_cmd() + [*head, str(built["sets"][shards]), *tail],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode == want.returncode, got.stderr
    assert got.stdout == want.stdout
    assert got.stdout.count("\n") > 1  # hits were found


def test_damaged_shard_ends_the_job_naming_it(built, tmp_path):
    import shutil

    bad = tmp_path / "bad.set"
    shutil.copytree(built["sets"][5], bad)
    target = bad / "shard-0003" / "smiles.blocks"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    got = subprocess.run(
        mpirun_cmd(3) + molsift_cmd() + ["search", str(bad), "-t", "0.2", "--queries",
                                          str(built["smi"])],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode != 0
    assert "shard-0003/smiles.blocks" in got.stderr


def test_rank_killed_mid_search_ends_the_job(built, tmp_path):
    many = tmp_path / "many.smi"
    lines = built["smi"].read_text().splitlines()
    many.write_text("\n".join(lines * 400) + "\n")  # thousands of queries: seconds of work
    proc = subprocess.Popen(
        mpirun_cmd(3) + molsift_cmd() + ["analogs", str(built["sets"][7]), "--dist", "3",
                                          "-k", "50", "--queries", str(many)],
        env=mpi_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        pids: dict[int, int] = {}
        while time.monotonic() < deadline and 1 not in pids:
            time.sleep(0.5)
            pids = _rank_pids_of(proc.pid)
        assert 1 in pids, "rank 1 never started"
        time.sleep(4)  # into the queries
        assert proc.poll() is None, "the job ended before the kill"
        os.kill(pids[1], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)  # no hang: bounded
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "rank 1" in err or "rank: 1" in err or "process rank 1" in err, err[-2000:]


def _rank_pids_of(mpirun_pid: int) -> dict[int, int]:
    """Rank -> pid among the descendants of `mpirun_pid` (its Python processes that carry
    OMPI_COMM_WORLD_RANK)."""
    found = {}
    for pid in procs.descendants(mpirun_pid):
        rank = procs.environ(pid).get(b"OMPI_COMM_WORLD_RANK")
        if rank is not None and b"python" in procs.cmdline(pid):
            found[int(rank)] = pid
    return found


@contextlib.contextmanager
def _mpi_server(words: list[str]):
    """The command `words` (an `mpirun ... molsift serve ...`) with `--port` a free loopback
    port: (its URL, the process) once it answers; ended by SIGTERM (within 60 s, or the test
    fails)."""
    from servers import fetch, free_socket

    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen(
        [*words, "--port", str(port)],
        env=mpi_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                if fetch(f"{url}/api/v1/databases")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the MPI server never answered"
            time.sleep(0.5)
        yield url, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("mpirun did not end after SIGTERM") from None


def test_mpirun_serve_answers_as_the_served_store(built):
    """`mpirun -n 3 molsift serve SET`: rank 0 answers HTTP, every search fanned out to the
    ranks; answers (one at a time and from 8 concurrent clients) equal a served one store's."""
    from concurrent.futures import ThreadPoolExecutor

    from servers import asgi_get, fetch, without_timings

    from molsift.serve import Catalog, Limits, create_app

    catalog = Catalog()
    catalog.add("s5", str(built["one"]))
    local = create_app(catalog, Limits(), None)
    cmd = mpirun_cmd(3) + molsift_cmd() + ["serve", str(built["sets"][5])]
    with _mpi_server(cmd) as (url, _):
        smiles = molsift.open_store(built["one"]).smiles[777]
        requests = [
            ("/api/v1/search", {"type": "similarity", "query": "c1ccccc1O", "k": 12}),
            ("/api/v1/search", {"type": "similarity", "query": "c1ccccc1O", "threshold": 0.3}),
            ("/api/v1/search", {"type": "substructure", "query": "c1ccccc1O", "length": 40}),
            ("/api/v1/search", {"type": "smarts", "query": "[#7;R]", "start": 300}),
            ("/api/v1/search", {"type": "exact", "query": smiles}),
            ("/api/v1/search", {"type": "analogs", "query": "CCOc1ccccc1", "dist": 2}),
            ("/dt/s5/search", {"query": "c1ccccc1O", "type": "Similarity", "length": 20}),
            ("/dt/s5/search", {"query": "[#7;R]", "type": "SMARTS", "length": 20}),
        ]
        import urllib.parse

        def remote(item):
            path, params = item
            status, _, body = fetch(f"{url}{path}?{urllib.parse.urlencode(params)}")
            return status, body

        for (path, params), (status, body) in zip(requests, map(remote, requests)):
            want_status, want = asgi_get(local, path, **params)
            assert status == want_status == 200, (path, params, body[:300])
            assert without_timings(body) == without_timings(want), (path, params)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(remote, requests * 4))
        for (path, params), (status, body) in zip(requests * 4, answers):
            want = asgi_get(local, path, **params)[1]
            assert status == 200 and without_timings(body) == without_timings(want)


def test_mpirun_serve_runs_searches_of_a_set_at_once(built):
    """`mpirun -n 3 molsift serve SET` runs its searches of the set in lanes at once (one for
    light searches, one per heavy slot): while a heavy analog search walks 8 edits (until the
    time limit), similarity searches of the set are answered at once, equal to a served one
    store's; the heavy search still ends in its time."""
    import threading
    import urllib.parse

    from servers import asgi_get, fetch, without_timings

    from molsift.serve import Catalog, Limits, create_app

    catalog = Catalog()
    catalog.add("s5", str(built["one"]))
    local = create_app(catalog, Limits(), None)
    cmd = mpirun_cmd(3) + molsift_cmd() + [
        "serve", str(built["sets"][5]), "--timeout", "8", "--max-concurrent", "2",
        "--max-heavy", "1",
    ]  # fmt: skip
    with _mpi_server(cmd) as (url, _):
        heavy = {}

        def walk():
            start = time.monotonic()
            q = urllib.parse.urlencode({"type": "analogs", "query": "CC(=O)Nc1ccc(O)cc1",
                                        "dist": 8, "k": 100000})  # fmt: skip
            heavy["status"] = fetch(f"{url}/api/v1/search?{q}")[0]
            heavy["s"] = time.monotonic() - start

        runner = threading.Thread(target=walk)
        runner.start()
        time.sleep(1.5)  # the walk is under way
        answered = []
        for query in ("c1ccccc1O", "c1ccccc1N", "CCOC(=O)C", "c1ccncc1", "CC(=O)Nc1ccccc1"):
            light = {"type": "similarity", "query": query, "k": 12}  # each searched: not cached
            start = time.monotonic()
            status, _, body = fetch(f"{url}/api/v1/search?{urllib.parse.urlencode(light)}")
            answered.append(time.monotonic() - start)
            assert status == 200, body[:300]
            assert without_timings(body) == without_timings(asgi_get(local, "/api/v1/search",
                                                                     **light)[1])  # fmt: skip
        still_walking = runner.is_alive()
        runner.join(60)
        assert max(answered) < 3.0, ("light searches waited for the heavy one", answered, heavy)
        assert still_walking, f"the heavy search ended too soon to tell ({heavy})"
        assert heavy["s"] > sum(answered), (answered, heavy)
        assert heavy["status"] in (200, 504), heavy


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads CPU times from /proc")
def test_an_idle_mpirun_serve_keeps_no_core_busy(built):
    """`mpirun -n 3 molsift serve SET` between searches: its searcher ranks wait for the next
    search without spinning (before, each spun in MPI's wait: a core of every searcher rank at
    all times), and a search after the pause is answered as before."""
    import urllib.parse

    from servers import fetch

    cmd = mpirun_cmd(3) + molsift_cmd() + ["serve", str(built["sets"][5])]
    with _mpi_server(cmd) as (url, proc):
        light = urllib.parse.urlencode({"type": "similarity", "query": "c1ccccc1O", "k": 5})
        assert fetch(f"{url}/api/v1/search?{light}")[0] == 200
        pids = procs.children(proc.pid)  # mpirun's children: the ranks
        assert len(pids) == 3, pids
        time.sleep(0.5)  # the last search's spin is over
        before, start = procs.cpu_s(pids), time.monotonic()
        time.sleep(3)
        used = procs.cpu_s(pids) - before
        wall = time.monotonic() - start
        assert used < 0.4 * wall, f"3 idle ranks used {used:.2f} CPU s in {wall:.2f} s"
        light = urllib.parse.urlencode({"type": "similarity", "query": "c1ccccc1N", "k": 5})
        assert fetch(f"{url}/api/v1/search?{light}")[0] == 200


def test_mpirun_serve_searcher_death_gives_503(built):
    """A searcher rank killed under `mpirun --enable-recovery molsift serve`: searches of the
    set get 503 with a message (within the time limit and its grace, no hang), the front end
    stays up and still answers from the plain store it serves."""
    import json

    from servers import fetch

    stores = [str(built["sets"][5]), str(built["one"])]
    cmd = [*mpirun_cmd(3), "--enable-recovery", *molsift_cmd(), "serve", *stores]
    search = "/api/v1/search?db={}&type=similarity&query=c1ccccc1O&k={}"  # k: no cached answer
    with _mpi_server([*cmd, "--timeout", "2"]) as (url, proc):
        assert fetch(url + search.format("s5", 5))[0] == 200
        pids = _rank_pids_of(proc.pid)
        os.kill(pids[2], signal.SIGKILL)
        # the search under way when the rank died ends at the time limit (504) or past the
        # grace (503); from then on every search of the set is 503 with the reason
        t, k = time.monotonic(), 6
        while True:
            status, _, body = fetch(url + search.format("s5", k))
            assert status in (503, 504), body
            if status == 503:
                break
            assert time.monotonic() - t < 30, "never 503"
            k += 1
        assert "did not answer" in json.loads(body)["error"], body
        assert fetch(f"{url}/api/v1/databases")[0] == 200  # the front end is up
        assert fetch(url + search.format("one", 7))[0] == 200  # and its plain store answers
        t = time.monotonic()
        assert fetch(url + search.format("s5", 99))[0] == 503
        assert time.monotonic() - t < 2  # known lost: at once


def test_ranks_over_a_set_with_empty_shards(tmp_path):
    """Five molecules in 7 shards (equal SMILES never split: empty shards), 3 ranks: every verb
    answers as the one store."""
    src = tmp_path / "few.smi"
    src.write_text("CCO a\nCCO b\nCCO c\nc1ccccc1O d\nCCN e\n")
    molsift.ingest(src, tmp_path / "few.store", workers=1, progress=False)
    molsift.ingest(src, tmp_path / "few.set", workers=1, shards=7, progress=False)
    assert 0 in [len(s) for s in molsift.open_store(tmp_path / "few.set").shards]
    for args in (["search", "-q", "CCO", "-k", "4"], ["search", "-q", "OCC", "-t", "0.1"],
                 ["substructure", "-q", "CC"], ["analogs", "-q", "CCO", "--dist", "2"],
                 ["lookup", "-q", "OCC"]):  # fmt: skip
        want = molsift_run(args[0], tmp_path / "few.store", *args[1:])
        got = subprocess.run(
            mpirun_cmd(3) + molsift_cmd() + [args[0], str(tmp_path / "few.set"), *args[1:]],
            env=mpi_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert got.returncode == want.returncode == 0, got.stderr
        assert got.stdout == want.stdout, args


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_write_their_shards_the_same_bytes(built, tmp_path, ranks):
    """`mpirun -n R molsift ingest --shards 5`: each rank writes the shards it takes (shard s on
    rank s % R); the set is the one a single process writes, file for file."""
    out = tmp_path / f"r{ranks}.set"
    cmd = mpirun_cmd(ranks) + molsift_cmd() + ["ingest", str(BUNDLED_SMI), "-o", str(out)]
    got = subprocess.run(
        [*cmd, "--shards", "5", "-q"], capture_output=True, text=True, env=mpi_env(), timeout=600
    )
    assert got.returncode == 0, got.stderr
    want = built["sets"][5]
    files = sorted(x.relative_to(want) for x in want.rglob("*") if x.is_file())
    assert files == sorted(x.relative_to(out) for x in out.rglob("*") if x.is_file())
    for f in files:
        if f.name in ("manifest.json", "set.json"):
            continue  # provenance says how many workers or ranks
        assert (want / f).read_bytes() == (out / f).read_bytes(), f
    assert molsift.open_store(out).counts == molsift.open_store(want).counts


def test_ranks_merge_their_shards_with_dedupe(tmp_path):
    """`mpirun -n 2 molsift ingest --shards 5 --dedupe`: each rank merges the ranges of the
    shards it takes (equal SMILES in one shard, the duplicates left out there) and the root
    gathers the molecules left out: the set, its duplicates list and counts are those one
    process writes, file for file."""
    want = tmp_path / "one.set"
    molsift.ingest(BUNDLED_SMI, want, workers=1, shards=5, dedupe=True, progress=False)
    assert (want / "duplicates.tsv").exists()
    out = tmp_path / "r2.set"
    cmd = mpirun_cmd(2) + molsift_cmd() + ["ingest", str(BUNDLED_SMI), "-o", str(out)]
    got = subprocess.run(
        [*cmd, "--shards", "5", "--dedupe", "-q"],
        capture_output=True, text=True, env=mpi_env(), timeout=600,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    files = sorted(x.relative_to(want) for x in want.rglob("*") if x.is_file())
    assert files == sorted(x.relative_to(out) for x in out.rglob("*") if x.is_file())
    for f in files:
        if f.name not in ("manifest.json", "set.json"):  # provenance: workers or ranks
            assert (want / f).read_bytes() == (out / f).read_bytes(), f
    assert molsift.open_store(out).counts == molsift.open_store(want).counts


#: a run of `molsift ingest` under mpirun that logs, per rank, the parts it cut into slices
#: and the parts every shard's merge and writer read (`sets.exchange`), its files streamed in
#: chunks of 4 KiB (many messages a file)
_LOGGED_INGEST = """
import json, os, sys
import molsift._core as core
import molsift.sets.exchange as ex
from mpi4py import MPI
ex.CHUNK = 4096
rank = MPI.COMM_WORLD.Get_rank()
log = {"sliced": [], "read": [], "merged": [], "written": [], "received": 0}
def logged(name, key, arg):
    real = getattr(core, name)
    def call(*a, **k):
        log[key].append(a[arg] if key != "read" else [os.fspath(p) for p in a[arg]])
        if key in ("merged", "written"):
            log["read"].append([os.fspath(p) for p in a[0]])
        return real(*a, **k)
    setattr(core, name, call)
logged("write_part_slices", "sliced", 0)
if os.environ.get("FAIL_ON_RANK") == str(rank):
    def failing(*a, **k):
        raise OSError(28, "No space left on device (injected)")
    core.merge_set_shard = failing
if os.environ.get("KILL_ON_RANK") == str(rank):  # killed while it sends and receives slices
    import signal
    real_messages = ex._messages
    def dying(paths):
        for i, m in enumerate(real_messages(paths)):
            if i == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            yield m
    ex._messages = dying
logged("merge_set_shard", "merged", 3)
logged("write_set_shard_from_parts", "written", 5)
logged("pattern_shard_index_from_parts", "read", 2)
real_exchange = ex.exchange_files
def exchange(*a):
    got = real_exchange(*a)
    log["received"] = len(got)
    return got
ex.exchange_files = exchange
from molsift.cli import main
code = main(sys.argv[2:])
with open(f"{sys.argv[1]}.{rank}.json", "w") as fh:
    json.dump(log, fh)
sys.exit(code)
"""


def _logged_ingest(tmp_path, ranks, src, out, *extra, env=None, check=True):
    script = tmp_path / "logged.py"
    script.write_text(_LOGGED_INGEST)
    log = tmp_path / "log"
    cmd = [*mpirun_cmd(ranks), molsift_cmd()[0], str(script), str(log), "ingest", str(src)]
    got = subprocess.run(
        [*cmd, "-o", str(out), *extra, "-q"],
        capture_output=True, text=True, env={**mpi_env(), **(env or {})}, timeout=600,
    )  # fmt: skip
    if not check:
        return got
    assert got.returncode == 0, got.stderr
    return [json.loads((tmp_path / f"log.{r}.json").read_text()) for r in range(ranks)]


def test_ranks_send_each_other_their_records(tmp_path):
    """`mpirun -n 3 molsift ingest --shards 5 --dedupe`: each rank cuts only its own parts (task
    i on rank i % 3) into slices, the slices go to the ranks writing their shards (shard s on
    rank s % 3) in one exchange, and every shard's merge, store and substructure index read
    only the slices in the writing rank's own directory, never a part; the set is the one a
    single process writes, file for file, its duplicates list included."""
    want = tmp_path / "one.set"
    molsift.ingest(BUNDLED_SMI, want, workers=1, shards=5, dedupe=True, progress=False)
    out = tmp_path / "r3.set"
    logs = _logged_ingest(tmp_path, 3, BUNDLED_SMI, out, "--shards", "5", "--dedupe")
    sliced = sorted(p for log in logs for p in log["sliced"])
    assert len(sliced) >= 3 and len(set(sliced)) == len(sliced)
    for rank, log in enumerate(logs):
        assert log["sliced"], rank
        for part in log["sliced"]:
            assert int(os.path.basename(part).split("-")[1]) % 3 == rank, part
        assert (
            sorted(log["merged"])
            == sorted(log["written"])
            == [s for s in range(5) if s % 3 == rank]
        )
        assert log["received"] > 0, rank  # slices of other ranks' parts
        mine = os.path.join(".exchange", f"r{rank}") + os.sep
        for paths in log["read"]:
            assert paths and all(mine in p for p in paths), (rank, paths)
    files = sorted(x.relative_to(want) for x in want.rglob("*") if x.is_file())
    assert (want / "duplicates.tsv").exists()
    assert files == sorted(x.relative_to(out) for x in out.rglob("*") if x.is_file())
    for f in files:
        if f.name not in ("manifest.json", "set.json"):  # provenance: workers or ranks
            assert (want / f).read_bytes() == (out / f).read_bytes(), f
    assert molsift.open_store(out).counts == molsift.open_store(want).counts


def test_ranks_keep_their_slices_in_the_scratch_directory(tmp_path):
    """`--scratch DIR`: each rank's slices (cut, sent, received) lie in a directory of its own
    in DIR, which is empty again afterwards; the set is the one a single process writes."""
    scratch = tmp_path / "node-local"
    scratch.mkdir()
    out = tmp_path / "r2.set"
    logs = _logged_ingest(tmp_path, 2, BUNDLED_SMI, out, "--shards", "3", "--scratch", str(scratch))
    for rank, log in enumerate(logs):
        assert log["received"] > 0
        mine = os.path.join(str(scratch), f"molsift-exchange-r{rank}-")
        for paths in log["read"]:
            assert paths and all(p.startswith(mine) for p in paths), (rank, paths)
    assert list(scratch.iterdir()) == []
    want = tmp_path / "one.set"
    molsift.ingest(BUNDLED_SMI, want, workers=1, shards=3, progress=False)
    for f in sorted(x.relative_to(want) for x in want.rglob("*") if x.is_file()):
        if f.name not in ("manifest.json", "set.json"):
            assert (want / f).read_bytes() == (out / f).read_bytes(), f


def test_ranks_without_parts_take_part_in_the_exchange(tmp_path):
    """Five molecules, gzipped (one chunk of records: one task), 4 ranks, 7 shards: ranks that
    wrote no part and empty shards; the set equals one process's and answers as it does."""
    src = tmp_path / "few.smi.gz"
    src.write_bytes(gzip.compress(b"CCO a\nCCO b\nCCO c\nc1ccccc1O d\nCCN e\n"))
    want = tmp_path / "one.set"
    molsift.ingest(src, want, workers=1, shards=7, progress=False)
    out = tmp_path / "r4.set"
    logs = _logged_ingest(tmp_path, 4, src, out, "--shards", "7")
    assert [len(log["sliced"]) for log in logs] == [1, 0, 0, 0]
    files = sorted(x.relative_to(want) for x in want.rglob("*") if x.is_file())
    assert files == sorted(x.relative_to(out) for x in out.rglob("*") if x.is_file())
    for f in files:
        if f.name not in ("manifest.json", "set.json"):
            assert (want / f).read_bytes() == (out / f).read_bytes(), f
    a, b = molsift.open_store(want), molsift.open_store(out)
    assert [len(s) for s in a.shards] == [len(s) for s in b.shards]
    for x, y in [(a.search("CCO", k=5), b.search("CCO", k=5))]:
        assert x.indices.tolist() == y.indices.tolist() and x.scores.tolist() == y.scores.tolist()


def test_a_rank_failing_after_the_exchange_ends_the_job(tmp_path):
    """A rank whose shard merge fails (after the slices were sent) ends the whole job: a
    non-zero exit, a line naming the rank, no hang (the test's timeout) and no set."""
    out = tmp_path / "r3.set"
    t = time.monotonic()
    got = _logged_ingest(
        tmp_path, 3, BUNDLED_SMI, out, "--shards", "5", env={"FAIL_ON_RANK": "1"}, check=False
    )
    assert got.returncode != 0
    assert "rank 1 failed" in got.stderr and "No space left on device" in got.stderr
    assert time.monotonic() - t < 120
    assert not out.exists()


def test_a_rank_killed_during_the_exchange_ends_the_job(tmp_path):
    """A rank killed (SIGKILL) while the ranks stream their slices to each other: the job ends
    with a non-zero exit within the test's bound, no hang, and no set."""
    out = tmp_path / "r3.set"
    t = time.monotonic()
    got = _logged_ingest(
        tmp_path, 3, BUNDLED_SMI, out, "--shards", "5", env={"KILL_ON_RANK": "2"}, check=False
    )
    assert got.returncode != 0
    assert time.monotonic() - t < 120
    assert not out.exists()


def test_ranks_share_each_querys_preparation(built, tmp_path):
    """`sets.mpi.prepared` under `mpirun -n 3`: each rank prepares only its share of the
    queries (the items `dealt` it from each chunk by their `costs`: here their length), yet
    every rank gets every result and every error, in order, as one process preparing them all
    would."""
    from molsift.sets.mpi import costs, dealt

    each = costs(["C" * n for n in range(150)])

    script = tmp_path / "share.py"
    script.write_text(
        "import json, sys\n"
        "import molsift\n"
        "from molsift.sets.mpi import prepared, spread\n"
        "store = molsift.open_store(sys.argv[1])\n"
        "spread(store)\n"
        "calls = []\n"
        "def prepare(x):\n"
        "    x = len(x)\n"
        "    calls.append(x)\n"
        "    if x % 7 == 3:\n"
        "        raise ValueError(f'bad {x}')\n"
        "    return x * x\n"
        "got = [(len(i), r, None if e is None else str(e)) for i, r, e in\n"
        "       prepared(store, ['C' * n for n in range(150)], prepare, chunk=64)]\n"
        "rank = store._ranks.rank\n"
        "with open(sys.argv[2] + f'.{rank}', 'w') as fh:\n"
        "    json.dump({'got': got, 'calls': calls}, fh)\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [*mpirun_cmd(3), molsift_cmd()[0], str(script), str(built["sets"][5]), str(out)],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    want = [(x, None, f"bad {x}") if x % 7 == 3 else (x, x * x, None) for x in range(150)]
    calls = []
    for rank in range(3):
        seen = json.loads((tmp_path / f"out.{rank}").read_text())
        assert [tuple(g) for g in seen["got"]] == want
        # this rank's share of each chunk of 64, the longest items dealt first
        share = [c + j for c in range(0, 150, 64) for j in dealt(each[c : c + 64], 3)[rank]]
        assert seen["calls"] == share
        calls += seen["calls"]
    assert sorted(calls) == list(range(150))
    # dealt by cost: each rank's summed lengths within the longest item of the others'
    for c in range(0, 150, 64):
        chunk = each[c : c + 64]
        loads = [sum(chunk[j] for j in hand) for hand in dealt(chunk, 3)]
        assert max(loads) - min(loads) <= max(chunk)


def _on_three_ranks(tmp_path, body: str, set_path, queries: list[str]) -> list:
    """What each of 3 ranks (`mpirun -n 3`, one node) put in `out` running `body` (Python, with
    `store`: the set spread over the ranks, `ranks`: its `Ranks`, `queries`), as JSON."""
    script = tmp_path / "ranks.py"
    script.write_text(
        "import json, sys\n"
        "import molsift\n"
        "from molsift.sets.mpi import spread\n"
        "store = molsift.open_store(sys.argv[1])\n"
        "spread(store)\n"
        "ranks = store._ranks\n"
        "queries = sys.argv[3:]\n"
        "out = []\n" + body + "with open(sys.argv[2] + f'.{ranks.rank}', 'w') as fh:\n"
        "    json.dump(out, fh)\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [*mpirun_cmd(3), molsift_cmd()[0], str(script), str(set_path), str(out), *queries],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [json.loads((tmp_path / f"out.{r}").read_text()) for r in range(3)]


def test_ranks_of_a_node_share_each_top_k_querys_bar(built, tmp_path):
    """Under `mpirun -n 3` the ranks (one node) map one window of cells: after each top-k
    query every rank reads the same shared k-th best in that query's cell, one that is a real
    score of the set (at most its k-th best); the answers are the one store's."""
    body = (
        "for q in queries:\n"
        "    hits = store.search(q, k=10)\n"
        "    ranks.comm.Barrier()\n"
        "    out.append([ranks.tag(), ranks._bars.get(ranks.tag()), hits.indices.tolist()])\n"
        "    ranks.comm.Barrier()\n"
    )
    one = molsift.open_store(built["one"])
    queries = [one.smiles[i] for i in range(0, len(one), 997)]
    every = _on_three_ranks(tmp_path, body, built["sets"][5], queries)
    for j, q in enumerate(queries):
        want = one.search(q, k=10)
        tags = {seen[j][0] for seen in every}
        bars = {seen[j][1] for seen in every}
        assert len(tags) == 1 and len(bars) == 1, (tags, bars)
        (bar,) = bars
        assert bar is not None and bar <= want.scores[-1], (q, bar, want.scores.tolist())
        assert every[0][j][2] == want.indices.tolist()


def test_ranks_of_a_node_divide_each_analog_walk(built, tmp_path):
    """Under `mpirun -n 3` (one node) the ranks walk their node's shards as one library, each
    distance divided among them (`Ranks.walkers`): each rank makes part of the walk's edits
    and they add up to the walk of the set in one process (the same library: the union of
    every shard), and so do the graphs kept (the set's answer's stats are their sum); every
    rank sends records; the answers (every column) are the one store's, streamed by distance
    too, though each rank computes element changes only for its rows within the set's k."""
    body = (
        "import molsift.sets.store as ss\n"
        "own = []\n"
        "real = ss._InStep.parts\n"
        "def parts(self):\n"
        "    own.append(self.stats())\n"
        "    return real(self)\n"
        "ss._InStep.parts = parts\n"
        "dropped = [0]\n"
        "real_cut = ss._InStep._cut\n"
        "def cut(self, ranked, keep):\n"
        "    before = sum(len(r.order) for _, _, r, _ in ranked)\n"
        "    real_cut(self, ranked, keep)\n"
        "    dropped[0] += before - sum(len(r.order) for _, _, r, _ in ranked)\n"
        "ss._InStep._cut = cut\n"
        "for q in queries:\n"
        "    a = store.analogs(q, max_dist=3, k=30)\n"
        "    levels = [lv['position'].tolist() for lv in store.iter_analogs(q, max_dist=3, k=30)]\n"
        "    out.append([{c: a[c].tolist() for c in a.columns}, own[-1], levels,\n"
        "                a.stats.get('edges'), [a.stats.get('complete_to'),\n"
        "                a.stats.get('timed_out')]])\n"
        "out.append(dropped[0])\n"
        "out.append(ranks.walk_bytes)\n"
    )
    one = molsift.open_store(built["one"])
    whole = molsift.open_store(built["sets"][5])  # no MPI: one walk over the union
    queries = [one.smiles[i] for i in range(11, len(one), 1201)]
    every = _on_three_ranks(tmp_path, body, built["sets"][5], queries)
    assert all(got[-1] > 0 for got in every), "a rank sent no walk records"
    # a distance's hits past the set's k (each rank's share holds its own best k of them) are
    # dropped before their element changes are computed
    assert sum(got[-2] for got in every) > 0, [got[-2] for got in every]
    deep = 0
    for j, q in enumerate(queries):
        want = one.analogs(q, max_dist=3, k=30)
        assert every[0][j][0] == {c: want[c].tolist() for c in want.columns}, q
        union = whole.analogs(q, max_dist=3, k=30).stats
        edges = [got[j][1]["edges"] for got in every]
        assert sum(edges) == union["edges"], (q, edges)
        if want.complete_to >= 2:  # past distance 1 (whose frontier is the query alone)
            assert max(edges) < union["edges"], (q, edges)
            deep += 1
        assert sum(got[j][1]["nodes"] for got in every) == union["nodes"]
        assert every[0][j][3] == sum(edges)
        assert every[0][j][4] == [want.complete_to, 0], q  # not summed over the ranks
        levels = [lv for lv in every[0][j][2]]
        assert [p for lv in levels for p in lv] == want["position"].tolist()
    assert deep >= 2
    for r in range(3):  # every rank made edits
        assert sum(every[r][j][1]["edges"] for j in range(len(queries))) > 0


@pytest.mark.parametrize("verb", ["substructure", "search-k", "lookup"])
def test_ranks_sharing_queries_report_bad_ones_as_one_process(built, tmp_path, verb):
    """150 queries (three chunks of the shared preparation), some unreadable, on 3 ranks: the
    hits, every skipped query's message and the exit status are the one store's."""
    store = molsift.open_store(built["one"])
    lines = []
    for i in range(150):
        if i % 23 == 5:
            lines.append(f"C1CC(( bad{i}\n")
        elif verb == "substructure":
            lines.append(f"{['c1ccccc1O', '[#7;R]', 'C(=O)[OH]', 'C1CCNCC1'][i % 4]} s{i}\n")
        else:
            lines.append(f"{store.smiles[(i * 37) % len(store)]} m{i}\n")
    queries = tmp_path / "q.smi"
    queries.write_text("".join(lines))
    head, tail = VERBS[verb][:1], [*VERBS[verb][1:], "--queries", str(queries)]
    if verb == "substructure":
        tail = ["--smarts", "--max-hits", "3", "--queries", str(queries)]
    want = molsift_run(*head, built["one"], *tail)
    got = subprocess.run(
        mpirun_cmd(3) + molsift_cmd() + [*head, str(built["sets"][2]), *tail],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode == want.returncode, got.stderr
    assert got.stdout == want.stdout

    def messages(text: str) -> list[str]:  # molsift's lines, the timings apart
        return [ln.split(" in ")[0] for ln in text.splitlines() if ln.startswith("molsift:")]

    assert messages(got.stderr) == messages(want.stderr)
    bad = [f"q.smi:{i + 1}: " for i in range(150) if i % 23 == 5]  # each told by its line
    if verb == "lookup":
        assert any("7 unparsable" in ln for ln in messages(want.stderr))
    else:
        assert [b for b in bad if any(b in ln for ln in messages(want.stderr))] == bad


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    """A set of 2 shards of the bundled file's first 300 molecules."""
    root = tmp_path_factory.mktemp("smallset")
    src = root / "few.smi"
    src.write_text("".join(BUNDLED_SMI.read_text().splitlines(keepends=True)[:300]))
    molsift.ingest(src, root / "few.set", workers=1, shards=2, progress=False)
    return root / "few.set"


@pytest.mark.parametrize(
    ("verb", "queries"),
    [
        ("search", "empty"),
        ("lookup", "missing"),
        ("substructure", "directory"),
        ("analogs", "empty"),
    ],
)
def test_unreadable_queries_end_the_ranks_as_one_process(small_set, tmp_path, verb, queries):
    """--queries that rank 0 cannot read (empty, missing, a directory): every rank stops with
    the one process's error, said once, and its exit status; no rank is aborted (no MPI_ABORT
    banner, no `rank 0 failed`), no hang."""
    path = {"empty": tmp_path / "e.smi", "missing": tmp_path / "no.smi", "directory": tmp_path}
    path["empty"].write_text("")
    args = [verb, str(small_set), "--queries", str(path[queries])]
    want = molsift_run(*args)
    assert want.returncode == 2 and want.stderr.startswith("molsift: error: "), want.stderr
    for ranks in (2, 3):
        got = subprocess.run(
            mpirun_cmd(ranks) + molsift_cmd() + args,
            env=mpi_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert got.returncode == want.returncode, got.stderr
        assert got.stdout == ""
        ours = [ln for ln in got.stderr.splitlines() if ln.startswith("molsift")]
        assert ours == want.stderr.splitlines(), got.stderr
        assert "MPI_ABORT" not in got.stderr
