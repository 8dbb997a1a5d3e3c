"""Benchmark: docking with the `vina` scorer (AutoDock Vina 1.2 + Meeko) against Vina's own 1iep
example, straight through the scorer (no pipeline): seconds per ligand per stage, scores, rejects,
receptor maps built per worker, and the cost of the per-ligand fork that makes the timeout work.

Ligands: the crystal ligand (imatinib, data/vina_1iep/1iep_ligand.sdf), 19 drug-like
molecules drawn with a fixed seed from the first 200,000 of ../shared/data/moses_train.csv.gz,
and NCI record 2004 of data/nci_first_5k.smi (hexaamminechromium, which RDKit parses but cannot
embed): 21 records, 20 of them dockable. Workers are processes, each given the pickled scorer
and a round-robin share, like `molsift screen` workers.

With --screen it then docks the same records through `molsift screen --scorer vina` (the crystal
ligand as its SMILES) and compares the scores ligand by ligand.

    .venv/bin/python benches/vina_dock.py                        # exhaustiveness 1, 2 workers
    .venv/bin/python benches/vina_dock.py --workers 1 --exhaustiveness 8 --poses out.sdf
    .venv/bin/python benches/vina_dock.py --screen               # also through molsift screen
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import multiprocessing as mp
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "data" / "vina_1iep"
MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"
NCI = ROOT / "data" / "nci_first_5k.smi"
NOT_EMBEDDABLE = "2004"  # N[Cr](N)(N)(N)(N)N


def ligands(n_moses: int, seed: int):
    """(id, SMILES or molblock, is_molblock) for the benchmark set."""
    out = [("imatinib_1iep", (EXAMPLE / "1iep_ligand.sdf").read_text(), True)]
    with gzip.open(MOSES, "rt") as f:
        next(f)  # header
        pool = [line.strip() for _, line in zip(range(200_000), f)]
    picks = sorted(random.Random(seed).sample(range(len(pool)), n_moses))
    out += [(f"moses_{i + 1}", pool[i], False) for i in picks]  # 1-based data line number
    for line in NCI.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == NOT_EMBEDDABLE:
            out.append((f"nci_{NOT_EMBEDDABLE}", parts[0], False))
    return out


def to_mol(text: str, is_molblock: bool):
    from rdkit import Chem

    return Chem.MolFromMolBlock(text) if is_molblock else Chem.MolFromSmiles(text)


def worker(args):
    """One worker: setup (maps) once, then its share of ligands. Returns rows, stats, pose SDF."""
    scorer, share = args
    from molsift.scorers import Reject

    t0 = time.perf_counter()
    scorer.setup()
    setup_s = time.perf_counter() - t0
    rows, poses = [], []
    for rid, text, is_block in share:
        mol = to_mol(text, is_block)
        mol.SetProp("_Name", rid)
        t = time.perf_counter()
        try:
            values, pose = scorer.score(mol)
            rows.append(
                (rid, os.getpid(), dict(zip(scorer.columns, values)), None, time.perf_counter() - t)
            )
            poses.append(pose)
        except Reject as exc:
            rows.append((rid, os.getpid(), None, str(exc), time.perf_counter() - t))
    return rows, scorer.stats(), setup_s, "".join(poses)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--exhaustiveness", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="per ligand (0: no fork)")
    ap.add_argument("--moses", type=int, default=19, help="drug-like MOSES molecules to add")
    ap.add_argument("--seed", type=int, default=3, help="which MOSES molecules")
    ap.add_argument("--poses", help="write the best poses here (SDF)")
    ap.add_argument("--screen", action="store_true", help="also dock them through molsift screen")
    args = ap.parse_args()
    if not (EXAMPLE / "1iep_receptor.pdbqt").exists():
        print(f"Vina's 1iep example not found at {EXAMPLE}", file=sys.stderr)
        return 2

    from molsift.scorers.vina import VinaScorer, read_box

    scorer = VinaScorer(
        str(EXAMPLE / "1iep_receptor.pdbqt"),
        read_box(str(EXAMPLE / "1iep_receptor.box.txt")),
        exhaustiveness=args.exhaustiveness,
        timeout=args.timeout,
    )
    todo = ligands(args.moses, args.seed)
    shares = [(scorer, todo[w :: args.workers]) for w in range(args.workers)]
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(args.workers) as pool:
        results = pool.map(worker, shares)
    wall = time.perf_counter() - t0

    order = {rid: i for i, (rid, _, _) in enumerate(todo)}
    rows = sorted((r for res in results for r in res[0]), key=lambda r: order[r[0]])
    workers = {pid: w for w, pid in enumerate(sorted({r[1] for r in rows}))}
    print(
        f"vina {scorer.exhaustiveness=} timeout={args.timeout:g}s workers={args.workers} "
        f"machine={platform.machine()} cpus={os.cpu_count()} python={platform.python_version()}"
    )
    print(
        "| ligand | heavy atoms | worker | vina_score kcal/mol | poses | embed s | prepare s "
        "| dock s | total s | reject |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rid, pid, values, reject, total in rows:
        heavy = to_mol(*next((t, b) for r, t, b in todo if r == rid)).GetNumHeavyAtoms()
        if values:
            print(
                f"| {rid} | {heavy} | {workers[pid]} | {values['vina_score']:.2f} "
                f"| {values['n_poses']} | {values['embed_s']:.3f} | {values['prep_s']:.3f} "
                f"| {values['dock_s']:.2f} | {total:.2f} | |"
            )
        else:
            print(f"| {rid} | {heavy} | {workers[pid]} | | | | | | {total:.2f} | {reject} |")
    print(
        "\n| worker | maps built | setup s (receptor + maps) | docked | rejected | embed s "
        "| prepare s | dock s | fork+pipe s | fork+pipe per ligand ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w, (_, st, setup_s, _) in enumerate(results):
        rejected = st["vina_ligands"] - st["vina_docked"]
        per = 1000 * st["vina_fork_s"] / max(1, st["vina_docked"])
        print(
            f"| {w} | {st['vina_maps_built']} | {setup_s:.2f} | {st['vina_docked']} | {rejected} | "
            f"{st['vina_embed_s']:.2f} | {st['vina_prep_s']:.2f} | {st['vina_dock_s']:.2f} | "
            f"{st['vina_fork_s']:.3f} | {per:.1f} |"
        )
    docked = sum(1 for r in rows if r[2])
    print(
        f"\n{len(rows)} ligands, {docked} docked, {len(rows) - docked} rejected, "
        f"wall {wall:.1f} s ({wall / len(rows):.2f} s per ligand over {args.workers} workers)"
    )
    print(
        "crystal ligand redocked: heavy-atom RMSD to the crystal pose "
        f"{crystal_rmsd(results):.2f} A"
    )
    if args.poses:
        Path(args.poses).write_text("".join(res[3] for res in results))
        print(f"poses written to {args.poses}")
    if args.screen:
        direct = {r[0]: (r[2]["vina_score"] if r[2] else None) for r in rows}
        through_screen(todo, direct, args)
    return 0


def crystal_rmsd(results) -> float:
    """Symmetry-aware heavy-atom RMSD, in place (no alignment), of the docked crystal ligand."""
    from rdkit import Chem
    from rdkit.Chem import rdMolAlign

    supplier = Chem.SDMolSupplier()
    supplier.SetData("".join(res[3] for res in results))
    posed = next(m for m in supplier if m is not None and m.GetProp("_Name") == "imatinib_1iep")
    return rdMolAlign.CalcRMS(posed, Chem.MolFromMolFile(str(EXAMPLE / "1iep_ligand.sdf")))


def through_screen(todo, direct, args) -> None:
    """The same records through `molsift screen --scorer vina`; scores compared with `direct`."""
    from rdkit import Chem

    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "ligands.smi"
        lib.write_text(
            "".join(f"{Chem.MolToSmiles(to_mol(t, b)) if b else t} {rid}\n" for rid, t, b in todo)
        )
        out = Path(tmp) / "docked.csv"
        cmd = [
            sys.executable,
            "-m",
            "molsift",
            "screen",
            str(lib),
            "--scorer",
            "vina",
            "-o",
            str(out),
            "-j",
            str(args.workers),
            "--json",
            "-q",
            "--vina-receptor",
            str(EXAMPLE / "1iep_receptor.pdbqt"),
            "--vina-box",
            str(EXAMPLE / "1iep_receptor.box.txt"),
            "--vina-exhaustiveness",
            str(args.exhaustiveness),
            "--vina-timeout",
            str(args.timeout),
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(f"molsift screen failed ({proc.returncode}): {proc.stderr[-2000:]}")
            return
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        with out.open() as fh:
            rows = {r["id"]: r for r in csv.DictReader(fh)}
        with Path(report["rejects"]).open() as fh:
            rejects = {r["id"]: r["reason"] for r in csv.DictReader(fh, delimiter="\t")}
    print(
        f"\nmolsift screen -j {args.workers}: {report['records_in']} records, "
        f"{report['rows']} rows, {report['rejected']} rejected, wall {wall:.1f} s (incl. start-up)"
    )
    print(
        "maps built per worker: "
        + ", ".join(str(w["scorer"]["vina_maps_built"]) for w in report["per_worker"])
    )
    print("| ligand | direct score | molsift screen score | equal | screen dock s |")
    print("|---|---|---|---|---|")
    for rid, score in direct.items():
        row = rows.get(rid)
        got = float(row["vina_score"]) if row else None
        shown = f"{got:.2f}" if row else f"reject: {rejects.get(rid, '?')}"
        same = (got is None and score is None) or (
            got is not None and score is not None and abs(got - score) < 1e-3
        )
        print(
            f"| {rid} | {'' if score is None else f'{score:.2f}'} | {shown} | {same} | "
            f"{row['dock_s'] if row else ''} |"
        )


if __name__ == "__main__":
    sys.exit(main())
