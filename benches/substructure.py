"""Benchmark: substructure search, molsift vs RDKit's SubstructLibrary, in ONE run, on MOSES.

Database: the molecules of a molsift store of --input (default ../shared/data/moses_train.csv.gz,
its first --limit-molecules), i.e. the store's canonical SMILES in store order. Peer: RDKit's
`rdSubstructLibrary.SubstructLibrary` over a `CachedTrustedSmilesMolHolder` of those same SMILES
(`AddSmiles`, in store order, so its indices are store positions) with a `PatternHolder` filled
by `rdSubstructLibrary.AddPatterns(..., numThreads=1)` (RDKit's bulk path; the same pattern
fingerprints as `PatternHolder.MakeFingerprint` of each parsed molecule). Its build is slow
(~200-400 µs/molecule): `--rdkit-cache FILE` keeps it (`Serialize()` / `SubstructLibrary(bytes)`).

Query sets: benches/data/zinc.frags.500.q.smi (500 ZINC fragments, SMILES; queries RDKit cannot
parse are skipped and counted) and tests/data/substructure/queries.tsv (SMILES and SMARTS);
--queries-limit N takes N of each, evenly spread (every k-th query).
For each set and each worker count w of --workers, every query runs through both, alternating
which goes first from query to query: `lib.GetMatches(q, useChirality=False, numThreads=w,
maxResults=len(lib))` (its defaults are useChirality=True and maxResults=1000) and
`store.substructure(text, smarts=..., workers=w)`; the hit sets must be identical (sorted store
positions). Per query: wall ms of both, molsift's time to its first 100 hits
(`iter_substructure`, until the 100th position or the end), hits, and screen survivors when
molsift exposes `molsift.substructure.last_stats()`. Then RDKit's raw `HasSubstructMatch` rate
on parsed molecules (a 20,000 sample) for the slowest molsift query, all molecules and those
passing RDKit's pattern screen: how close molsift's exact matcher runs to it.

    .venv/bin/python benches/substructure.py --limit-molecules 20000 --queries-limit 30
    .venv/bin/python benches/substructure.py --rdkit-only --limit-molecules 20000   # no molsift
    .venv/bin/python benches/substructure.py --store /tmp/moses.store --rdkit-cache /tmp/lib.bin \
        --workers 1,2 --json subs.json

`--compare-store OTHER` (a store of the same molecules, e.g. the version-1 store a version-2
store was upgraded from) also runs every query on OTHER, in turn with the other two, its hits
mapped to --store's positions (through each store's input ranks) and checked equal; the table
gets OTHER's median and the ratio of --store's median to it (issue 41: the one store against
today's version-1 substructure search, in the same run).

--rdkit-only runs the RDKit side alone (molsift only ingests the store) and checks
SubstructLibrary against a plain HasSubstructMatch loop on the first --check-loop molecules.
Exit status 1 when any hit set differs.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: --compare-store: (the other store, its positions mapped to --store's), when given
OTHER: list = []
ZINC_FRAGS = ROOT / "benches" / "data" / "zinc.frags.500.q.smi"
TEST_QUERIES = ROOT / "tests" / "data" / "substructure" / "queries.tsv"
MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"
WORK = Path(os.environ.get("MOLSIFT_BENCH_DIR", "/tmp/molsift-substructure-bench"))


def limited_input(path: Path, limit: int, work: Path) -> Path:
    """`path` itself, or its first `limit` records (header kept for CSV) as a plain file."""
    if not limit:
        return path
    name = path.name.removesuffix(".gz")
    out = work / f"{Path(name).stem}_first{limit}{Path(name).suffix}"
    if not out.exists():
        opener = gzip.open if path.name.endswith(".gz") else open
        tmp = out.with_name(out.name + ".tmp")
        with opener(path, "rt") as src, open(tmp, "w") as dst:
            if ".csv" in path.name:
                dst.write(src.readline())
            for i, line in enumerate(src):
                if i >= limit:
                    break
                dst.write(line)
        tmp.rename(out)
    return out


def build_store(data: Path, store_dir: Path, reuse: bool):
    """(store, ingest seconds or None when reused)."""
    import molsift

    seconds = None
    if not (reuse and (store_dir / "manifest.json").exists()):
        t = time.perf_counter()
        molsift.ingest(data, store_dir, overwrite=True, progress=False)
        seconds = time.perf_counter() - t
    return molsift.open_store(store_dir, verify=False), seconds


def smiles_key(smiles: list) -> str:
    h = hashlib.sha1()
    for s in smiles:
        h.update(s.encode())
        h.update(b"\n")
    return h.hexdigest()


def build_library(smiles: list, cache: Path | None) -> tuple:
    """(SubstructLibrary, {how: seconds}) for `smiles` in order; from `cache` when it holds a
    library of exactly these SMILES, written there otherwise."""
    from rdkit.Chem import rdSubstructLibrary as rsl

    key = smiles_key(smiles)
    meta = cache.with_name(cache.name + ".json") if cache else None
    fresh = cache and cache.exists() and meta.exists()
    if fresh and json.loads(meta.read_text()).get("smiles_sha1") == key:
        t = time.perf_counter()
        lib = rsl.SubstructLibrary(cache.read_bytes())
        return lib, {"loaded_s": time.perf_counter() - t}
    t = time.perf_counter()
    holder = rsl.CachedTrustedSmilesMolHolder()
    for s in smiles:
        holder.AddSmiles(s)
    lib = rsl.SubstructLibrary(holder)
    t_smiles = time.perf_counter() - t
    rsl.AddPatterns(lib, rsl.PatternHolder(), 1)
    timing = {"smiles_s": t_smiles, "build_s": time.perf_counter() - t}
    if cache:
        cache.write_bytes(lib.Serialize())
        meta.write_text(json.dumps({"smiles_sha1": key, "molecules": len(smiles)}))
    return lib, timing


def parse_limits(text: str) -> dict:
    """--queries-limit: `N` for every set, or `SET=N,SET=N` (0: all of that set)."""
    if "=" not in text:
        return {"zinc_frags": int(text), "test_queries": int(text)}
    return {k: int(v) for k, v in (part.split("=") for part in text.split(","))}


def load_queries(limits: dict) -> tuple:
    """{set name: [(name, text, smarts, query Mol)]} and {set name: unparsable count}."""
    from rdkit import Chem

    sets, skipped = {"zinc_frags": [], "test_queries": []}, {}
    bad = 0
    for line in ZINC_FRAGS.read_text().splitlines():
        text, name = line.split()[:2]
        mol = Chem.MolFromSmiles(text)
        if mol is None:
            bad += 1
        else:
            sets["zinc_frags"].append((name, text, False, mol))
    skipped["zinc_frags"] = bad
    bad = 0
    with open(TEST_QUERIES, newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            smarts = row["kind"] == "smarts"
            text = row["query"]
            mol = Chem.MolFromSmarts(text) if smarts else Chem.MolFromSmiles(text)
            if mol is None:
                bad += 1
            else:
                sets["test_queries"].append((row["name"], text, smarts, mol))
    skipped["test_queries"] = bad
    for k, v in sets.items():  # spread over the set (every k-th), not its first rows
        limit = limits.get(k, 0)
        if limit:
            sets[k] = [v[i * len(v) // limit] for i in range(min(limit, len(v)))]
    return sets, skipped


def last_stats():
    """molsift's screen statistics of the last query, when the API exposes them."""
    try:
        module = importlib.import_module("molsift.substructure")
    except ImportError:
        return None
    fn = getattr(module, "last_stats", None)
    return fn() if fn else None


def index_sizes(store_dir: Path, n: int) -> dict:
    """Bytes per molecule of the store's files that substructure search adds or reads."""
    files = json.loads((store_dir / "manifest.json").read_text())["files"]

    def per(name: str) -> float:
        return files.get(name, {}).get("bytes", 0) / max(n, 1)

    return {
        "planes": per("pattern.planes.u64") + per("pattern.screen.u8"),
        "graphs": per("pattern.graphs.bin") + per("pattern.graphs.zst"),
        "smiles": per("smiles.txt") + per("smiles.offsets.u64") + per("smiles.blocks"),
    }


def rdkit_query(lib, mol, w: int) -> tuple:
    t = time.perf_counter()
    hits = lib.GetMatches(
        mol,
        recursionPossible=True,
        useChirality=False,
        useQueryQueryMatches=False,
        numThreads=w,
        maxResults=max(len(lib), 1),
    )
    return (time.perf_counter() - t) * 1000, sorted(hits)


def molsift_query(store, text: str, smarts: bool, w: int) -> tuple:
    t = time.perf_counter()
    hits = store.substructure(text, smarts=smarts, workers=w)
    ms = (time.perf_counter() - t) * 1000
    stats = last_stats()
    return ms, hits.tolist(), stats


def first_hundred_ms(store, text: str, smarts: bool, w: int) -> float:
    t = time.perf_counter()
    it = store.iter_substructure(text, smarts=smarts, workers=w)
    for n, _ in enumerate(it, 1):
        if n == 100:
            break
    ms = (time.perf_counter() - t) * 1000
    close = getattr(it, "close", None)
    if close:
        close()
    return ms


class Molecules:
    """The store's molecules parsed by RDKit, on demand (the plain loop's reference)."""

    def __init__(self, smiles):
        self.smiles, self.mols = smiles, []

    def first(self, n: int) -> list:
        from rdkit import Chem

        while len(self.mols) < min(n, len(self.smiles)):
            self.mols.append(Chem.MolFromSmiles(self.smiles[len(self.mols)]))
        return self.mols[:n]

    def loop_hits(self, query, n: int | None = None) -> list:
        """Hits among the first `n` molecules (all by default). Past the cached first ones,
        each molecule is parsed, tested and dropped (the whole library never sits in memory)."""
        from rdkit import Chem

        n = len(self.smiles) if n is None else min(n, len(self.smiles))
        cached = self.mols[:n]
        hits = [i for i, m in enumerate(cached) if m is not None and m.HasSubstructMatch(query)]
        for i in range(len(cached), n):
            m = Chem.MolFromSmiles(self.smiles[i])
            if m is not None and m.HasSubstructMatch(query):
                hits.append(i)
        return hits

    def true_hits(self, query, positions) -> set:
        """Which of `positions` RDKit's plain loop calls hits (full sanitization)."""
        from rdkit import Chem

        out = set()
        for i in positions:
            m = Chem.MolFromSmiles(self.smiles[i])
            if m is not None and m.HasSubstructMatch(query):
                out.add(i)
        return out


def run_set(set_name, queries, w, lib, store, molecules, check_loop, failures) -> list:
    """One row per query: the figures of both (molsift's None with --rdkit-only)."""
    rows = []
    for qi, (name, text, smarts, mol) in enumerate(queries):
        row = {"set": set_name, "workers": w, "name": name, "query": text, "smarts": smarts}
        runs = ["rdkit", "molsift"] if qi % 2 == 0 else ["molsift", "rdkit"]
        if OTHER:
            runs = ["other", *runs] if qi % 3 == 0 else [*runs, "other"]
        rd_hits = ms_hits = other_hits = None
        for side in runs:
            if side == "other" and store is not None:
                other, to_primary = OTHER
                row["other_ms"], got, _ = molsift_query(other, text, smarts, w)
                other_hits = sorted(to_primary[got].tolist())
                continue
            if side == "rdkit":
                try:
                    row["rdkit_ms"], rd_hits = rdkit_query(lib, mol, w)
                except RuntimeError as exc:  # e.g. 'RingInfo not initialized'
                    row["rdkit_ms"], row["rdkit_error"] = None, str(exc).split("\n")[1].strip()
            elif store is not None:
                row["molsift_ms"], ms_hits, stats = molsift_query(store, text, smarts, w)
                if stats:
                    row["candidates"] = stats.get("candidates")
                    row["form"] = stats.get("form")
        if store is not None:
            row["first100_ms"] = first_hundred_ms(store, text, smarts, w)
        if rd_hits is None and ms_hits is not None:  # RDKit failed: the plain loop decides
            rd_hits = molecules.loop_hits(mol)
            row["reference"] = "HasSubstructMatch loop"
        row["hits"] = len(ms_hits if ms_hits is not None else rd_hits or [])
        if other_hits is not None and other_hits != ms_hits:
            failures.append(f"{set_name} -j{w} {name} {text}: the other store's hits differ")
        if ms_hits is not None and ms_hits != rd_hits:
            # who is right: RDKit's plain loop (full sanitization) on the molecules they differ on
            differ = set(ms_hits) ^ set(rd_hits)
            true = molecules.true_hits(mol, sorted(differ))
            ms_wrong = {i for i in differ if (i in true) != (i in set(ms_hits))}
            rd_wrong = differ - ms_wrong
            if ms_wrong:
                failures.append(
                    f"{set_name} -j{w} {name} {text}: molsift {len(ms_hits)} hits, RDKit "
                    f"{len(rd_hits)}; molsift wrong on {len(ms_wrong)} molecules"
                )
                row["mismatch"] = True
            if rd_wrong:  # SubstructLibrary's own screen or molecule form got these wrong
                row["rdkit_wrong"] = len(rd_wrong)
        if store is None and check_loop and "rdkit_error" not in row:
            n = min(check_loop, len(lib))
            sub = [h for h in rd_hits if h < n]
            if sub != molecules.loop_hits(mol, n):
                failures.append(f"{set_name} -j{w} {name} {text}: SubstructLibrary != loop")
        rows.append(row)
    return rows


def pct(values, p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def summarize(rows: list) -> dict:
    rd = [r["rdkit_ms"] for r in rows if r.get("rdkit_ms") is not None]
    out = {
        "queries": len(rows),
        "rdkit_errors": sum(1 for r in rows if "rdkit_error" in r),
        "rdkit_median_ms": statistics.median(rd) if rd else None,
        "rdkit_p90_ms": pct(rd, 90) if rd else None,
        "hits": sum(r["hits"] for r in rows),
    }
    both = [r for r in rows if r.get("molsift_ms") is not None and r.get("rdkit_ms")]
    if both:
        ms = [r["molsift_ms"] for r in rows if r.get("molsift_ms") is not None]
        ratios = [r["molsift_ms"] / r["rdkit_ms"] for r in both]
        worst = max(both, key=lambda r: r["molsift_ms"] / r["rdkit_ms"])
        out.update(
            molsift_median_ms=statistics.median(ms),
            molsift_p90_ms=pct(ms, 90),
            median_of_ratios=statistics.median(ratios),
            ratio_of_medians=statistics.median(ms) / statistics.median(rd),
            max_ratio=max(ratios),
            max_ratio_query=f"{worst['name']} {worst['query']}",
            other_median_ms=statistics.median(r["other_ms"] for r in rows)
            if rows and "other_ms" in rows[0]
            else None,
            first100_median_ms=statistics.median(r["first100_ms"] for r in rows),
        )
        cand = [r for r in rows if r.get("candidates") is not None]
        if cand:
            survivors = sum(r["candidates"] for r in cand)
            out["survivors"] = survivors
            out["survivor_hits"] = sum(r["hits"] for r in cand)
            out["screen_precision"] = out["survivor_hits"] / survivors if survivors else 1.0
    return out


def fmt(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def raw_match_rate(query, molecules: Molecules, lib, sample: int) -> dict:
    """RDKit's HasSubstructMatch on already parsed molecules, one core: µs per molecule over
    a sample of the store, and over the sample's molecules passing RDKit's pattern screen."""
    mols = molecules.first(sample)
    t = time.perf_counter()
    hits = sum(m.HasSubstructMatch(query) for m in mols)
    all_us = (time.perf_counter() - t) * 1e6 / len(mols)
    fps = lib.GetFpHolder()
    qfp = fps.MakeFingerprint(query) if fps is not None else None
    passing = [m for i, m in enumerate(mols) if qfp is None or fps.PassesFilter(i, qfp)]
    t = time.perf_counter()
    for m in passing:
        m.HasSubstructMatch(query)
    passing_us = (time.perf_counter() - t) * 1e6 / max(len(passing), 1)
    return {
        "sample": len(mols),
        "sample_hits": hits,
        "us_per_molecule": all_us,
        "screen_passing": len(passing),
        "us_per_screened_molecule": passing_us,
    }


def machine() -> dict:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    from rdkit import rdBase

    return {
        "commit": commit + ("-dirty" if dirty else ""),
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "rdkit": rdBase.rdkitVersion,
        "python": sys.version.split()[0],
        "allocator": __import__("molsift.allocator").allocator.loaded(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--input", type=Path, default=MOSES)
    ap.add_argument("--limit-molecules", type=int, default=0, help="first N records (0: all)")
    ap.add_argument(
        "--queries-limit",
        type=parse_limits,
        default="0",
        help="N of each set, spread over it (0: all), or per set: zinc_frags=0,test_queries=60",
    )
    ap.add_argument("--store", type=Path, help="the store to use; built there when missing")
    ap.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2")
    ap.add_argument("--rdkit-cache", type=Path, help="SubstructLibrary file, reused when valid")
    ap.add_argument("--rdkit-only", action="store_true", help="no molsift search (RDKit side)")
    ap.add_argument(
        "--check-loop",
        type=int,
        default=2000,
        help="--rdkit-only: check SubstructLibrary on the first N molecules against a loop",
    )
    ap.add_argument("--raw-sample", type=int, default=20_000)
    ap.add_argument(
        "--compare-store",
        type=Path,
        help="also search this store of the same molecules (e.g. the version-1 store)",
    )
    ap.add_argument("--json", type=Path, help="write every per-query figure here")
    args = ap.parse_args()
    from molsift import allocator

    # like with like: RDKit's threads, molsift's process and its workers on one allocator
    allocator.reexec(sys.argv[1:], script=__file__)

    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    WORK.mkdir(parents=True, exist_ok=True)
    meta = machine()
    data = limited_input(args.input, args.limit_molecules, WORK)
    store_dir = args.store or WORK / f"{data.name.split('.')[0]}.store"
    store, ingest_s = build_store(data, store_dir, reuse=True)
    smiles = list(store.smiles)
    n = len(smiles)
    ingest = f"ingest {ingest_s:.1f} s" if ingest_s is not None else "reused"
    print(f"store {store_dir}: {n:,} molecules ({ingest}); {meta}", flush=True)

    sizes = index_sizes(store_dir, n)
    print(
        "store additions, bytes/molecule: pattern planes {planes:.1f}, graphs (the exact-match "
        "form) {graphs:.1f}; canonical SMILES {smiles:.1f}".format(**sizes),
        flush=True,
    )
    lib, lib_t = build_library(smiles, args.rdkit_cache)
    if "build_s" in lib_t:
        print(
            f"SubstructLibrary built: {lib_t['build_s'] * 1e6 / n:.0f} µs/molecule "
            f"({lib_t['smiles_s'] * 1e6 / n:.1f} of them AddSmiles, the rest AddPatterns on "
            "1 thread)",
            flush=True,
        )
    else:
        print(f"SubstructLibrary loaded from {args.rdkit_cache} in {lib_t['loaded_s']:.2f} s")
    assert len(lib) == n

    if args.compare_store:
        import numpy as np

        import molsift

        def ranks(s) -> np.ndarray:
            return s.input_ranks if hasattr(s, "input_ranks") else np.arange(len(s))

        other = molsift.open_store(args.compare_store, verify=False)
        inv = np.empty(n, dtype=np.int64)
        inv[ranks(store)] = np.arange(n)
        OTHER.extend([other, inv[ranks(other)]])
        oi = other._pattern_index()
        oi.screen([b for b, c in enumerate(oi.bit_counts()) if c], 0, 0)
        for w in [int(w) for w in args.workers.split(",")]:
            other.substructure("*", smarts=True, workers=w, max_hits=1)
        print(f"compared with {args.compare_store} ({other!r})", flush=True)
    sets, skipped = load_queries(args.queries_limit)
    for name, count in skipped.items():
        print(f"{name}: {len(sets[name])} queries run, {count} skipped (RDKit cannot parse them)")
    search_store = None if args.rdkit_only else store
    molecules = Molecules(smiles)
    workers = [int(w) for w in args.workers.split(",")]
    rows, summaries, failures = [], [], []
    if search_store is not None:  # first-use work out of the timings: plane checksums, workers
        index = search_store._pattern_index()
        # every plane some molecule has (a bit no molecule has ends a screen before any check)
        index.screen([b for b, c in enumerate(index.bit_counts()) if c], 0, 0)
        for w in workers:
            search_store.substructure("*", smarts=True, workers=w, max_hits=1)
    for set_name, queries in sets.items():
        for w in workers:
            part = run_set(
                set_name, queries, w, lib, search_store, molecules, args.check_loop, failures
            )
            rows += part
            s = summarize(part)
            s.update(set=set_name, workers=w)
            summaries.append(s)
            ms = f", molsift {fmt(s.get('molsift_median_ms'))}" if search_store else ""
            if s.get("other_median_ms") is not None:
                ms += f", the other store {fmt(s['other_median_ms'])}"
            print(
                f"{set_name} -j{w}: {s['queries']} queries, median ms RDKit "
                f"{fmt(s['rdkit_median_ms'])}{ms}; hit sets differing so far: {len(failures)}",
                flush=True,
            )

    print(
        f"\n{n:,} molecules; ms per query (wall); ratio = molsift time / RDKit time (< 1: molsift "
        f"faster); load average {meta['load_avg_1m']:.1f} at start, {os.getloadavg()[0]:.1f} now"
    )
    print(
        "| query set | -j | queries | RDKit median | RDKit p90 | molsift median | molsift p90 "
        "| median of ratios | ratio of medians | max ratio | molsift first 100 hits (median) "
        "| hits | screen survivors | screen precision |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in summaries:
        print(
            f"| {s['set']} | {s['workers']} | {s['queries']} | {fmt(s['rdkit_median_ms'])} | "
            f"{fmt(s['rdkit_p90_ms'])} | {fmt(s.get('molsift_median_ms'))} | "
            f"{fmt(s.get('molsift_p90_ms'))} | {fmt(s.get('median_of_ratios'))} | "
            f"{fmt(s.get('ratio_of_medians'))} | {fmt(s.get('max_ratio'))} | "
            f"{fmt(s.get('first100_median_ms'))} | {s['hits']:,} | "
            f"{fmt(s.get('survivors'), ',')} | {fmt(s.get('screen_precision'), '.3f')} |"
        )
    if OTHER:
        print(f"\n| query set | -j | --store median | {args.compare_store.name} median | ratio |")
        print("|---|---:|---:|---:|---:|")
        for s in summaries:
            a, b = s.get("molsift_median_ms"), s.get("other_median_ms")
            print(f"| {s['set']} | {s['workers']} | {fmt(a)} | {fmt(b)} | **{fmt(a / b)}** |")
    forms: dict = {}
    for r in rows:
        if r.get("form"):
            key = (r["set"], r["form"])
            forms[key] = forms.get(key, 0) + 1
    for (set_name, form), count in sorted(forms.items()):
        print(f"{set_name}: {count} query runs matched on the {form!r} form")
    for s in summaries:
        if s.get("max_ratio") is not None:
            print(f"slowest relative query, {s['set']} -j{s['workers']}: {s['max_ratio_query']}")
    errors = [r for r in rows if "rdkit_error" in r]
    for r in {(r["name"], r["query"], r["rdkit_error"]) for r in errors}:
        print(f"SubstructLibrary failed on {r[0]} {r[1]}: {r[2]} (compared with the plain loop)")

    key = "molsift_ms" if not args.rdkit_only else "rdkit_ms"
    timed = [r for r in rows if r.get(key) is not None]
    slowest = sorted(timed, key=lambda r: -r[key])[:5]
    print(f"\n5 slowest queries ({'molsift' if key == 'molsift_ms' else 'RDKit'}):")
    print("| set | -j | query | molsift ms | RDKit ms | hits | screen survivors |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for r in slowest:
        print(
            f"| {r['set']} | {r['workers']} | {r['name']} `{r['query']}` | "
            f"{fmt(r.get('molsift_ms'))} | {fmt(r.get('rdkit_ms'))} | {r['hits']:,} | "
            f"{fmt(r.get('candidates'), ',')} |"
        )
    raw = None
    if slowest:
        top = slowest[0]
        mol = next(m for nm, t, sm, m in sets[top["set"]] if nm == top["name"])
        raw = raw_match_rate(mol, molecules, lib, args.raw_sample)
        raw["query"] = f"{top['name']} {top['query']}"
        print(
            f"\nRDKit HasSubstructMatch on parsed molecules, 1 core, slowest query "
            f"{raw['query']}: {raw['us_per_molecule']:.2f} µs/molecule over {raw['sample']:,} "
            f"({raw['sample_hits']:,} hits; {n * raw['us_per_molecule'] / 1000:.0f} ms for the "
            "store), "
            + (
                f"{raw['us_per_screened_molecule']:.2f} µs/molecule over the "
                f"{raw['screen_passing']:,} passing RDKit's pattern screen"
                if raw["screen_passing"]
                else "none of them passes RDKit's pattern screen"
            )
        )
        if top.get("molsift_ms") is not None:
            per_mol = top["molsift_ms"] * 1000 * top["workers"] / n
            line = f"molsift on it: {per_mol:.2f} core-µs per store molecule"
            if top.get("candidates"):
                per_cand = top["molsift_ms"] * 1000 * top["workers"] / top["candidates"]
                line += f", {per_cand:.2f} core-µs per screen survivor ({top['candidates']:,})"
            print(line)

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": meta,
                    "molecules": n,
                    "ingest_s": ingest_s,
                    "bytes_per_molecule": sizes,
                    "substructlibrary": lib_t,
                    "skipped_queries": skipped,
                    "summaries": summaries,
                    "raw_match_rate": raw,
                    "queries": rows,
                },
                indent=1,
            )
        )
        print(f"per-query figures written to {args.json}")
    if failures:
        print(f"{len(failures)} MISMATCHES, first: {failures[:5]}", file=sys.stderr)
        return 1
    checked = (
        f"SubstructLibrary == HasSubstructMatch loop on the first {args.check_loop:,}"
        if args.rdkit_only
        else "molsift == SubstructLibrary (or the loop where it failed), every query"
    )
    print(f"all hits checked: {checked}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
