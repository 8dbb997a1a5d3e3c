"""Golden stores: the exact bytes `molsift ingest` writes for the bundled data: the one store
(format version 2) with every index (substructure and analog), recorded by `record` below, which
refuses to record unless the store is the same byte for byte at 1, 2 and 4 workers and under
`mpirun -n 1..3`; `test_golden_stores.py` checks every configuration against the recording.
First recorded for version 1 before issue 15's reshaping (commit d055058); re-recorded for the one
store (issue 41), and for the analog index's fuse filter of deletions (index format 4).

Inputs: the bundled NCI file as it is, gzipped, as a CSV, as a rough SMILES file (ids missing,
blank and comment lines, CRLF, unparsable SMILES: what the line shift and id fill of the merge
used to handle), and RDKit's 200-molecule SDF. Each store is reduced to the SHA-256 of every file
but the manifest, and the manifest without its provenance (timings, worker counts).

    .venv/bin/python tests/golden.py record   # rewrites tests/data/golden_stores.json
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden_stores.json"
NCI = ROOT / "data" / "nci_first_5k.smi"


def _nci_lines() -> list[tuple[str, str]]:
    rows = []
    for line in NCI.read_text().splitlines():
        smi, _, rid = line.partition("\t")
        rows.append((smi, rid))
    return rows


def _plain(d: Path) -> str:
    (d / "nci.smi").write_bytes(NCI.read_bytes())
    return "nci.smi"


def _gzip(d: Path) -> str:
    with gzip.GzipFile(d / "nci.smi.gz", "wb", mtime=0) as f:
        f.write(NCI.read_bytes())
    return "nci.smi.gz"


def _csv(d: Path) -> str:
    out = ["name,smiles,weight"]
    for i, (smi, rid) in enumerate(_nci_lines()):
        out.append(f"{'' if i % 9 == 0 else 'NSC' + rid},{smi},{i % 97}")
    (d / "nci.csv").write_text("\n".join(out) + "\n")
    return "nci.csv"


def _rough(d: Path) -> str:
    """Ids missing (every 7th), blank lines, comments, CRLF endings, bad SMILES."""
    out = []
    for i, (smi, rid) in enumerate(_nci_lines()):
        if i % 11 == 0:
            out.append("\n")
        if i % 13 == 0:
            out.append("# a comment line\n")
        if i % 19 == 0:
            smi = smi + "(("  # unparsable
        line = smi if i % 7 == 0 else f"{smi}\t{rid}"
        out.append(line + ("\r\n" if i % 17 == 0 else "\n"))
    (d / "rough.smi").write_text("".join(out), newline="")
    return "rough.smi"


def _sdf(d: Path) -> str:
    import rdkit

    src = Path(rdkit.__file__).parent / "Data" / "NCI" / "first_200.props.sdf"
    (d / "nci200.sdf").write_bytes(src.read_bytes())
    return "nci200.sdf"


INPUTS: dict[str, tuple[Callable[[Path], str], list[str]]] = {
    "plain": (_plain, []),
    "gzip": (_gzip, ["--chunk-records", "700"]),
    "csv": (_csv, ["--id-col", "name"]),
    "rough": (_rough, []),
    "sdf": (_sdf, []),
}

# (name, ranks under mpirun or None, -j workers)
CONFIGS = [
    ("j1", None, 1),
    ("j2", None, 2),
    ("j4", None, 4),
    ("mpi1", 1, None),
    ("mpi2", 2, None),
    ("mpi3", 3, None),
]


def ingest_command(config: str, source: str, extra: list[str]) -> tuple[list[str], dict]:
    """The command line (and environment) that ingests `source` (relative to the cwd) into
    `store` under `config`."""
    _, ranks, workers = next(c for c in CONFIGS if c[0] == config)
    molsift = [sys.executable, "-m", "molsift", "ingest", source, "-o", "store", "-q", *extra]
    env = dict(os.environ)
    if ranks is None:
        return [*molsift, "-j", str(workers)], env
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    return ["mpirun", "-n", str(ranks), "--oversubscribe", "--bind-to", "none", *molsift], env


def digest(store: Path) -> dict[str, str]:
    """SHA-256 of every file of the store; the manifest's without its provenance."""
    out = {}
    for p in sorted(store.iterdir()):
        if p.name == "manifest.json":
            m = json.loads(p.read_text())
            m.pop("provenance")
            m.pop("checksum")  # covers the provenance too
            data = json.dumps(m, sort_keys=True).encode()
        else:
            data = p.read_bytes()
        out[p.name] = hashlib.sha256(data).hexdigest()
    return out


def build(workdir: Path, name: str, config: str) -> dict[str, str]:
    """Ingests input `name` under `config` in `workdir` (made fresh) and digests the store."""
    workdir.mkdir(parents=True)
    make, extra = INPUTS[name]
    source = make(workdir)
    cmd, env = ingest_command(config, source, extra)
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return digest(workdir / "store")


def rdkit_version() -> str:
    from rdkit import rdBase

    return rdBase.rdkitVersion


def record() -> None:
    import tempfile

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    stores = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in INPUTS:
            seen = {c: build(Path(tmp) / f"{name}-{c}", name, c) for c, _, _ in CONFIGS}
            first = seen["j1"]
            for c, d in seen.items():
                if d != first:
                    raise SystemExit(f"{name}: the store under {c} differs from -j 1; not recorded")
            stores[name] = first
            print(f"{name}: {len(first)} files, the same under {', '.join(seen)}")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(
        json.dumps(
            {"recorded_at": commit, "rdkit": rdkit_version(), "stores": stores},
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"written {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        raise SystemExit(__doc__)
    record()
