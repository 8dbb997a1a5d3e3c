"""Benchmark (issue 19, growth): the analog index and search at about 10 M molecules against all of
MOSES, in one run. The larger library is MOSES (less its last 100 lines, the held-out queries)
plus skeleton-perturbed copies of its molecules: each copy is a MOSES molecule after 1 to 3
random edits made with RDKit (a carbon added to an atom that has a hydrogen, a carbon put into
a non-ring single bond, a terminal heavy atom removed, or a single bond closed between two
atoms three or more bonds apart that both have a hydrogen), kept when RDKit sanitizes it. So
the copies are real-looking molecules whose skeletons lie near MOSES's, which is what makes an
analog index grow (new skeletons, denser neighbourhoods); they are not a second real library
(said so in the table).

Steps: write the perturbed SMILES (`--workers` processes), ingest MOSES + copies into a
version-1 store without the similarity and substructure indexes, build the analog index (timed),
then answer the 100 held-out queries (max_dist 3, k = 100) on both stores, alternating.

    .venv/bin/python benches/analogs_growth.py --base MOSES.store --workdir DIR
        [--target 10000000] [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOSES = ROOT.parent / "shared/data/moses_train.csv.gz"


def moses_lines() -> list[str]:
    with gzip.open(MOSES, "rt") as fh:
        lines = fh.read().splitlines()
    return [line.split(",")[0] for line in lines[1:]]


class Sites:
    """Where the edits of one molecule can go (computed once per molecule): atoms with a
    hydrogen, non-ring single bonds, terminal heavy atoms, and pairs of atoms with a hydrogen
    three to seven bonds apart."""

    def __init__(self, mol):
        from rdkit import Chem

        self.h = [a.GetIdx() for a in mol.GetAtoms() if a.GetTotalNumHs() > 0]
        self.single = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()
                       if b.GetBondType() == Chem.BondType.SINGLE and not b.IsInRing()]  # fmt: skip
        self.terminal = [a.GetIdx() for a in mol.GetAtoms() if a.GetDegree() == 1]
        d = Chem.GetDistanceMatrix(mol)
        self.pairs = [(i, j) for n, i in enumerate(self.h) for j in self.h[n + 1 :]
                      if 3 <= d[i][j] <= 7]  # fmt: skip


def perturb(mol, sites: Sites, rng: random.Random, last: bool) -> bool:
    """One random skeleton edit of `mol` (an RWMol) at `sites` of the original molecule; a
    terminal deletion (which renumbers atoms) only as the `last` edit. False when none fits."""
    from rdkit import Chem

    kinds = ["tup", "lup", "rup"] + (["tdn"] if last and mol.GetNumAtoms() > 3 else [])
    kind = rng.choice(kinds)
    if kind == "tup" and sites.h:
        a = rng.choice(sites.h)
        new = mol.AddAtom(Chem.Atom(6))
        mol.AddBond(a, new, Chem.BondType.SINGLE)
        mol.GetAtomWithIdx(a).SetNumExplicitHs(0)
    elif kind == "lup" and sites.single:
        i, j = rng.choice(sites.single)
        if mol.GetBondBetweenAtoms(i, j) is None:
            return False
        mol.RemoveBond(i, j)
        new = mol.AddAtom(Chem.Atom(6))
        mol.AddBond(i, new, Chem.BondType.SINGLE)
        mol.AddBond(new, j, Chem.BondType.SINGLE)
    elif kind == "rup" and sites.pairs:
        i, j = rng.choice(sites.pairs)
        if mol.GetBondBetweenAtoms(i, j) is not None:
            return False
        mol.AddBond(i, j, Chem.BondType.SINGLE)
        mol.GetAtomWithIdx(i).SetNumExplicitHs(0)
        mol.GetAtomWithIdx(j).SetNumExplicitHs(0)
    elif kind == "tdn" and sites.terminal:
        mol.RemoveAtom(rng.choice(sites.terminal))
    else:
        return False
    return True


def copies(task: tuple[int, list[str], int]) -> list[str]:
    """`per` perturbed copies of each SMILES of a chunk, as SMILES lines."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    seed, chunk, per = task
    rng = random.Random(seed)
    out = []
    for n, smi in enumerate(chunk):
        base = Chem.MolFromSmiles(smi)
        if base is None:
            continue
        sites = Sites(base)
        Chem.Kekulize(base, clearAromaticFlags=True)
        made = tries = 0
        while made < per and tries < 3 * per:
            tries += 1
            mol = Chem.RWMol(base)
            edits = rng.randint(1, 3)
            if not all(perturb(mol, sites, rng, k == edits - 1) for k in range(edits)):
                continue
            if Chem.SanitizeMol(mol, catchErrors=True) != Chem.SanitizeFlags.SANITIZE_NONE:
                continue  # an edit RDKit cannot sanitize: try another
            text = Chem.MolToSmiles(mol, canonical=False)  # ingest canonicalizes
            if "." in text:
                continue
            out.append(f"{text} p{seed}_{n}_{made}")
            made += 1
    return out


def timed_queries(store, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        began = time.perf_counter()
        store.analogs(q, max_dist=3, k=100)
        out.append((time.perf_counter() - began) * 1e3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the MOSES store (with its analog index)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--target", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reuse-index", action="store_true",
                    help="keep the grown store's analog index from an earlier run (build time "
                    "then reported from analogs.json's files only)")  # fmt: skip
    ap.add_argument("--json")
    args = ap.parse_args()
    import molsift

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    lines = moses_lines()
    library, queries = lines[:-100], lines[-100:]
    smi = work / "grown.smi"
    began = time.perf_counter()
    if not smi.exists():
        per = -(-(args.target - len(library)) // len(library))
        starts = range(0, len(library), 5000)
        chunks = [(k, library[i : i + 5000], per) for k, i in enumerate(starts)]
        tmp = smi.with_suffix(".tmp")
        with open(tmp, "w") as out, Pool(args.workers) as pool:
            for i, smiles in enumerate(library):
                out.write(f"{smiles} m{i}\n")
            left = args.target - len(library)
            for part in pool.imap(copies, chunks):
                part = part[: max(left, 0)]
                left -= len(part)
                out.write("".join(line + "\n" for line in part))
                if left <= 0:
                    pool.terminate()
                    break
        os.replace(tmp, smi)
    gen_s = time.perf_counter() - began
    store_path = work / "grown.store"
    began = time.perf_counter()
    if not store_path.exists():
        subprocess.run([sys.executable, "-m", "molsift", "ingest", str(smi), "-o", str(store_path),
                        "--no-index", "--no-pattern", "-q", "-j", str(args.workers)],
                       check=True)  # fmt: skip
    ingest_s = time.perf_counter() - began
    from molsift import _core

    began = time.perf_counter()
    if args.reuse_index and (store_path / "analogs.json").exists():
        header = json.loads((store_path / "analogs.json").read_text())
        size = sum(f["bytes"] for f in header["files"].values())
        build_s = float("nan")
    else:
        text, size = _core.build_analog_index(str(store_path), args.workers)
        header = json.loads(text)
        build_s = time.perf_counter() - began
    base = molsift.open_store(args.base)
    grown = molsift.open_store(store_path)
    base_header = json.loads(base._core.analog_index().header_json())
    files = base.manifest["files"]
    base_size = sum(v["bytes"] for k, v in files.items() if k.startswith("analogs."))
    for s in (base, grown):
        s.analogs(queries[0], max_dist=1)  # open the index and fingerprinter
    t_base, t_grown = [], []
    for half in (queries[:50], queries[50:]):  # alternate, to share the machine's noise
        t_base += timed_queries(base, half)
        t_grown += timed_queries(grown, half)

    def row(name, n, h, size, build, times):
        q = sorted(times)
        p50, p90 = statistics.median(q), q[int(0.9 * len(q))]
        return (f"| {name} | {n:,} | {h['skeletons']:,} | {size / n:.1f} | {build} | "
                f"{p50:.1f} | {p90:.1f} | {q[-1]:.1f} |")  # fmt: skip

    print(f"copies written in {gen_s:.0f} s, ingested in {ingest_s:.0f} s")
    print("\n| library | molecules | distinct skeletons | index B/molecule | index build s | "
          "top-100 D<=3 p50 ms | p90 ms | max ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(row("MOSES", len(base), base_header, base_size, "(benches/analogs.py)", t_base))
    print(row("MOSES + perturbed copies", len(grown), header, size, f"{build_s:.0f}", t_grown))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"base": {"molecules": len(base), "skeletons": base_header["skeletons"],
                      "bytes": base_size, "ms": t_base},
             "grown": {"molecules": len(grown), "skeletons": header["skeletons"], "bytes": size,
                       "build_s": build_s, "ms": t_grown, "generate_s": gen_s,
                       "ingest_s": ingest_s}}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
