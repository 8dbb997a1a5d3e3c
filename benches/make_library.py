"""Make a large, reproducible library of distinct, valid, drug-like molecules for ingest benchmarks.

What: `-n` molecules (10,000,000 and more), written as `SMILES ID` lines (ids `ML000000001`, ...),
gzip-compressed when the output name ends in `.gz`. Every molecule is a real combination of two
building blocks cut out of real molecules, sanitized by RDKit, written as RDKit canonical SMILES,
distinct from every other line (by canonical SMILES) and absent from the source set (no source
molecule comes back under a new id).

Source: the MOSES training set, `../shared/data/moses_train.csv.gz` (1,584,663 ZINC-derived
drug-like molecules; CSV, column `SMILES`), from the MOSES benchmark (https://github.com/
molecularsets/moses, as shipped in the PyPI wheel `molsets` 0.3.1); MIT licence, Copyright 2018
Insilico Medicine, Inc. `--input` takes another CSV (column `SMILES`) or SMILES file (first
whitespace-separated field of each line), optionally gzip-compressed.

How:

1. Building blocks (one pass over the source, in parallel). Retro-synthetic cuts of acyclic
   bonds, each side keeping a `*` where the bond was:
   - amide `[#6]C(=O)-N` -> acyl `*C(=O)R` + amine `*NR1R2`;
   - sulfonamide `[#6]S(=O)(=O)-N` -> sulfonyl `*S(=O)(=O)R` + amine `*NR1R2`;
   - biaryl `c-c` (Suzuki-like) -> two aryls `*c...` (aryl halide and boronic acid alike);
   - free carboxylic acids `[#6]C(=O)[OH]` -> acyl `*C(=O)R`;
   - free primary/secondary amines -> amine `*NR1R2`.
   The amine nitrogen must be non-aromatic with only carbon neighbours besides the cut partner,
   none of them acyl-like (C=O, C=S, C=N): no imides, hydrazides, ureas, sulfamides. Blocks hold
   only H, C, N, O, F, P, S, Cl, Br, I, no isotopes, radicals or net charge, and no stereo centre
   at the attachment atom. Blocks are deduplicated by canonical SMILES and sorted, so the pools
   do not depend on -j.
2. Products: three reactions, drawn with weights amide 70, sulfonamide 15, Suzuki-like biaryl 15
   (renormalised over the reactions whose pools are not empty), each draw choosing a block
   from each pool uniformly. Draw k is a pure function of (--seed, k) (splitmix64 of a counter),
   so the pairs come in a fixed pseudo-random order whatever the number of workers. A product
   is made by string joining: the attachment atom of each block gets ring-closure bond `%99`
   (`C-%99(=O)c1ccccc1` + `.` + `N%991CCCC1`), which RDKit parses into the bonded product; it is
   sanitized (MolFromSmiles) and canonicalised once (MolToSmiles). That is the same molecule
   RDKit's `Chem.molzip` makes from the `*` blocks (tests/test_make_library.py checks it) at a
   fraction of `RunReactants`' cost.
3. Drug-like filter on every product: 12 <= heavy atoms <= 50, molecular weight <= 500
   (--max-mw), Lipinski H-bond donors <= 5 and acceptors <= 10, TPSA <= 140 A^2: Lipinski's
   rule of five without cLogP, plus Veber's polar surface area (cLogP and rotatable bonds are
   left out for speed). Heavy atoms, weight, donors and acceptors are sums of the two blocks',
   so pairs that must fail are dropped before any SMILES is parsed; the full filter then runs
   on every sanitized product. (With MOSES' full pools, a 600 limit gave products of median
   weight 520: most of them past Lipinski's 500.)
4. Distinct: chunks of draws are made by the workers and joined in chunk order; the main process
   drops a product whose canonical SMILES' 8-byte BLAKE2b digest is one of the source's (a copy
   of a source molecule) or was already written (kept as sorted uint64 arrays, ~8 bytes per
   molecule), and stops at exactly n. The same arguments (and the same RDKit) give the same
   bytes for any -j; a `.gz` output has no name or time in its header.

    .venv/bin/python benches/make_library.py -n 10000000 -o /tmp/ml10m.smi.gz
    .venv/bin/python benches/make_library.py -n 2000 -o /tmp/small.smi --input small.smi -j 1

Progress goes to stderr, then a summary (building blocks, pairs, attempted, invalid, filtered,
source copies, duplicates, written, seconds). Exit status 1 when the building blocks cannot give
n distinct products (what could be made is still written).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import count, islice
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np
from rdkit import Chem, RDLogger
from rdkit.Chem import Descriptors, rdMolDescriptors

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"

# The drug-like filter on products (see the module docstring).
MIN_HEAVY, MAX_HEAVY = 12, 50
MAX_MW = 500.0  # --max-mw
MAX_HBD, MAX_HBA = 5, 10
MAX_TPSA = 140.0

# Pools of building blocks, and the reactions that join them: (name, electrophile pool,
# nucleophile pool, weight).
POOLS = ("acyl", "sulfonyl", "amine", "aryl")
REACTIONS: tuple[tuple[str, str, str, int], ...] = (
    ("amide", "acyl", "amine", 70),
    ("sulfonamide", "sulfonyl", "amine", 15),
    ("suzuki", "aryl", "aryl", 15),
)
ALLOWED_ELEMENTS = frozenset((0, 1, 6, 7, 8, 9, 15, 16, 17, 35, 53))

SOURCE_CHUNK = 2000  # source molecules per building-block task
DRAW_CHUNK = 2000  # pair draws per product task
PROGRESS_S = 10.0
GIVE_UP_FACTOR = 50  # stop after this many draws per possible pair (n is out of reach)
INVALID, FILTERED = -1, -2  # draw codes besides a product's reaction index

# Retro-synthetic cuts: SMARTS, the index of the electrophile-side and nucleophile-side atoms of
# the cut bond in the match, their pools (None: discarded), and whether the nucleophile is an
# amine nitrogen that must be plain (see plain_amine).
CUTS: tuple[tuple[str, int, int, str, str | None, bool], ...] = (
    ("[#6][CX3](=[OX1])!@[NX3;!a]", 1, 3, "acyl", "amine", True),
    ("[#6][SX4](=[OX1])(=[OX1])!@[NX3;!a]", 1, 4, "sulfonyl", "amine", True),
    ("c-!@c", 0, 1, "aryl", "aryl", False),
    ("[#6][CX3](=[OX1])!@[OX2H1]", 1, 3, "acyl", None, False),
)
FREE_AMINE = "[NX3;H1,H2;!a;+0]"

T = TypeVar("T")
R = TypeVar("R")


def digest(smiles: str) -> bytes:
    """The 8-byte BLAKE2b digest of a SMILES (read as little-endian uint64 in arrays)."""
    return hashlib.blake2b(smiles.encode(), digest_size=8).digest()


def as_u64(digests: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(digests), dtype="<u8").astype(np.uint64)


# --- building blocks ---------------------------------------------------------------------


def plain_amine(atom: Chem.Atom, partner: int) -> bool:
    """An amine N that couples cleanly: only carbon neighbours besides `partner`, none of them
    doubly bonded to O, S or N (no imide, hydrazide, urea, amidine, sulfamide)."""
    for nb in atom.GetNeighbors():
        if nb.GetIdx() == partner:
            continue
        if nb.GetAtomicNum() != 6:
            return False
        for bond in nb.GetBonds():
            other = bond.GetOtherAtom(nb)
            if (
                bond.GetBondType() == Chem.BondType.DOUBLE
                and other.GetAtomicNum() in (7, 8, 16)
                and other.GetIdx() != atom.GetIdx()
            ):
                return False
    return True


def block_ok(frag: Chem.Mol) -> bool:
    """Organic elements only, no isotope or radical, no net charge, exactly one `*`."""
    dummies = charge = 0
    for a in frag.GetAtoms():
        if a.GetAtomicNum() not in ALLOWED_ELEMENTS or a.GetIsotope() or a.GetNumRadicalElectrons():
            return False
        dummies += a.GetAtomicNum() == 0
        charge += a.GetFormalCharge()
    return dummies == 1 and charge == 0


def join_form(frag: Chem.Mol, bond: str) -> str | None:
    """The block's SMILES rooted at its attachment atom, the `*` replaced by ring-closure bond
    `%99` on that atom (`*C(=O)C` -> `C-%99(=O)C` with bond '-'); None if that cannot be done
    safely (a stereo centre or a written bond at the attachment)."""
    dummy = next(a.GetIdx() for a in frag.GetAtoms() if a.GetAtomicNum() == 0)
    smi = Chem.MolToSmiles(frag, rootedAtAtom=dummy)
    if not smi.startswith("*") or "%99" in smi or len(smi) < 2:
        return None
    rest = smi[1:]
    if rest[0] == "[":
        end = rest.find("]") + 1
        if end == 0:
            return None
    elif rest[:2] in ("Cl", "Br"):
        end = 2
    elif rest[0].isalpha():
        end = 1
    else:  # a bond symbol, branch or dot right after the `*`
        return None
    atom = rest[:end]
    if "@" in atom:
        return None
    return f"{atom}{bond}%99{rest[end:]}"


def block_props(frag: Chem.Mol) -> tuple[int, float, int, int]:
    """Heavy atoms, molecular weight, Lipinski acceptors and donors of a block, `*` excluded:
    a product's are the sums of its two blocks' (the `*` weighs nothing and stands where the
    partner's atom goes, so no atom's hydrogen count changes)."""
    return (
        frag.GetNumHeavyAtoms(),
        Descriptors.MolWt(frag),
        rdMolDescriptors.CalcNumLipinskiHBA(frag),
        rdMolDescriptors.CalcNumLipinskiHBD(frag),
    )


def component(mol: Chem.Mol, atom: int) -> list[int]:
    """The atoms of the connected component of `mol` that holds `atom`."""
    return next(list(c) for c in Chem.GetMolFrags(mol) if atom in c)


def cut_blocks(mol: Chem.Mol) -> Iterator[tuple[str, Chem.Mol, list[int]]]:
    """(pool, molecule with `*`, the block's atoms in it) for every retro-synthetic cut and free
    amine of `mol`."""
    for patt, ie, inu, pool_e, pool_n, amine in _CUT_PATTERNS:
        for match in mol.GetSubstructMatches(patt):
            e, nu = match[ie], match[inu]
            if amine and not plain_amine(mol.GetAtomWithIdx(nu), e):
                continue
            bond = mol.GetBondBetweenAtoms(e, nu)
            cut = Chem.FragmentOnBonds(mol, [bond.GetIdx()], addDummies=True, dummyLabels=[(0, 0)])
            comps = Chem.GetMolFrags(cut)
            for pool, atom in ((pool_e, e), (pool_n, nu)):
                if pool is not None:
                    yield pool, cut, next(list(c) for c in comps if atom in c)
    for match in mol.GetSubstructMatches(_FREE_AMINE):
        n = match[0]
        if not plain_amine(mol.GetAtomWithIdx(n), -1):
            continue
        rw = Chem.RWMol(mol)
        d = rw.AddAtom(Chem.Atom(0))
        rw.AddBond(n, d, Chem.BondType.SINGLE)
        na = rw.GetAtomWithIdx(n)
        if na.GetNumExplicitHs():
            na.SetNumExplicitHs(na.GetNumExplicitHs() - 1)
        try:
            Chem.SanitizeMol(rw)
        except Exception:  # RDKit raises its own types for sanitization failures
            continue
        yield "amine", rw, component(rw, n)


_CUT_PATTERNS = [(Chem.MolFromSmarts(c[0]), *c[1:]) for c in CUTS]
_FREE_AMINE = Chem.MolFromSmarts(FREE_AMINE)
_SEEN_BLOCKS: set[tuple[str, str]] = set()  # per process: blocks already looked at

Block = tuple[str, str, int, float, int, int]  # pool, join form, heavy atoms, MW, HBA, HBD
BlockChunk = tuple[np.ndarray, list[Block], int]


def make_block(pool: str, key: str) -> Block | None:
    """The block of canonical SMILES `key` (with one `*`) if it passes block_ok."""
    frag = Chem.MolFromSmiles(key)
    if frag is None or not block_ok(frag):
        return None
    join = join_form(frag, "-" if pool != "amine" else "")
    return None if join is None else (pool, join, *block_props(frag))


def extract_chunk(smiles: list[str]) -> BlockChunk:
    """Digests of the source molecules' canonical SMILES, the blocks this process has not seen
    before, and the number of source SMILES RDKit could not read."""
    RDLogger.DisableLog("rdApp.*")
    digests: list[bytes] = []
    blocks: list[Block] = []
    unreadable = 0
    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        if mol is None:
            unreadable += 1
            continue
        digests.append(digest(Chem.MolToSmiles(mol)))
        for pool, m, atoms in cut_blocks(mol):
            key = Chem.MolFragmentToSmiles(m, atomsToUse=atoms)
            if (pool, key) in _SEEN_BLOCKS:
                continue
            _SEEN_BLOCKS.add((pool, key))
            block = make_block(pool, key)
            if block is not None:
                blocks.append(block)
    return as_u64(digests), blocks, unreadable


def read_smiles(path: Path) -> Iterator[str]:
    """SMILES of a CSV (column `SMILES`) or SMILES file (first field), gzip or plain."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", newline="") as fh:
        if ".csv" in path.name:
            reader = csv.reader(fh)
            header = [h.strip().lower() for h in next(reader)]
            col = header.index("smiles")
            for row in reader:
                if len(row) > col and row[col]:
                    yield row[col]
            return
        for i, line in enumerate(fh):
            fields = line.split()
            if fields and not (i == 0 and fields[0].lower() == "smiles"):
                yield fields[0]


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def ordered_map(
    fn: Callable[[T], R], tasks: Iterable[T], pool: Pool | None, window: int
) -> Iterator[R]:
    """fn over tasks, results in task order, at most `window` tasks in flight (tasks may be
    endless: the consumer stops when it has enough)."""
    if pool is None:
        for t in tasks:
            yield fn(t)
        return
    pending: deque = deque()
    for t in tasks:
        pending.append(pool.apply_async(fn, (t,)))
        if len(pending) >= window:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


@dataclass
class BlockPool:
    """One pool's blocks, sorted by join form, with their additive properties."""

    joins: list[str]
    ha: np.ndarray
    mw: np.ndarray
    hba: np.ndarray
    hbd: np.ndarray

    @classmethod
    def of(cls, blocks: Iterable[Block]) -> BlockPool:
        rows = sorted(b[1:] for b in blocks)
        cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
        return cls(
            [str(j) for j in cols[0]],
            np.array(cols[1], np.int32),
            np.array(cols[2], np.float64),
            np.array(cols[3], np.int32),
            np.array(cols[4], np.int32),
        )

    def __len__(self) -> int:
        return len(self.joins)


Blocks = dict[str, BlockPool]


def build_blocks(source: Path, jobs: int, log: Callable[[str], None]) -> tuple[Blocks, np.ndarray]:
    """The pools of blocks, and the sorted unique digests of the source molecules."""
    found: dict[str, dict[str, Block]] = {p: {} for p in POOLS}
    digests: list[np.ndarray] = []
    read = unreadable = 0
    t0 = last = time.perf_counter()
    pool = Pool(jobs) if jobs > 1 else None
    try:
        for d, blocks, bad in ordered_map(
            extract_chunk, batches(read_smiles(source), SOURCE_CHUNK), pool, 4 * jobs
        ):
            digests.append(d)
            read += len(d) + bad
            unreadable += bad
            for block in blocks:
                found[block[0]][block[1]] = block
            now = time.perf_counter()
            if now - last >= PROGRESS_S:
                last = now
                log(f"building blocks: {read:,} source molecules read, {read / (now - t0):,.0f}/s")
    finally:
        if pool is not None:
            pool.terminate()
    _SEEN_BLOCKS.clear()
    src = np.unique(np.concatenate(digests)) if digests else np.empty(0, np.uint64)
    log(
        f"building blocks: {read:,} source molecules ({unreadable:,} unreadable, {len(src):,} "
        f"distinct) in {time.perf_counter() - t0:.1f} s"
    )
    return {p: BlockPool.of(found[p].values()) for p in POOLS}, src


# --- products ----------------------------------------------------------------------------

_POOLS: Blocks = {}
_ACTIVE: list[tuple[int, str, str, int]] = []  # (reaction index, pool e, pool n, cum. weight)


def active_reactions(pools: Blocks) -> list[tuple[int, str, str, int]]:
    out, cum = [], 0
    for i, (_, pe, pn, w) in enumerate(REACTIONS):
        if len(pools[pe]) and len(pools[pn]):
            cum += w
            out.append((i, pe, pn, cum))
    return out


def init_products(pools: Blocks) -> None:
    global _POOLS, _ACTIVE
    RDLogger.DisableLog("rdApp.*")
    _POOLS = pools
    _ACTIVE = active_reactions(pools)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output function on each uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> _S30)) * _M1
        z = (z ^ (z >> _S27)) * _M2
        return z ^ (z >> _S31)


def draws(seed: int, start: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three pseudo-random uint64 streams for draws start..start+size-1: a pure function of
    (seed, draw number), independent of chunking and workers."""
    base = splitmix64(np.array([seed & (2**64 - 1)], dtype=np.uint64))[0]
    k = np.arange(start, start + size, dtype=np.uint64) * np.uint64(3) + base
    with np.errstate(over="ignore"):
        return splitmix64(k), splitmix64(k + np.uint64(1)), splitmix64(k + np.uint64(2))


def drug_like(mol: Chem.Mol, max_mw: float = MAX_MW) -> bool:
    return (
        MIN_HEAVY <= mol.GetNumHeavyAtoms() <= MAX_HEAVY
        and Descriptors.MolWt(mol) <= max_mw
        and rdMolDescriptors.CalcNumLipinskiHBD(mol) <= MAX_HBD
        and rdMolDescriptors.CalcNumLipinskiHBA(mol) <= MAX_HBA
        and rdMolDescriptors.CalcTPSA(mol) <= MAX_TPSA
    )


ProductChunk = tuple[np.ndarray, list[str], np.ndarray]


def pick(seed: int, start: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For draws start..start+size-1: the index in _ACTIVE of the reaction, and the indices of
    the electrophile and nucleophile blocks in their pools."""
    r, a, b = draws(seed, start, size)
    cums = np.array([c for *_, c in _ACTIVE], np.uint64)
    t = np.searchsorted(cums, r % cums[-1], side="right")
    ia = np.empty(size, np.int64)
    ib = np.empty(size, np.int64)
    for i, (_, pe, pn, _) in enumerate(_ACTIVE):
        sel = t == i
        ia[sel] = a[sel] % np.uint64(len(_POOLS[pe]))
        ib[sel] = b[sel] % np.uint64(len(_POOLS[pn]))
    return t, ia, ib


def may_pass(t: np.ndarray, ia: np.ndarray, ib: np.ndarray, max_mw: float) -> np.ndarray:
    """False where the drug-like filter must reject the product, from the blocks' additive
    properties alone (heavy atoms, weight with a 0.01 margin for rounding, HBA, HBD)."""
    ok = np.zeros(len(t), bool)
    for i, (_, pe, pn, _) in enumerate(_ACTIVE):
        sel = t == i
        e, nu, x, y = _POOLS[pe], _POOLS[pn], ia[sel], ib[sel]
        ha = e.ha[x] + nu.ha[y]
        ok[sel] = (
            (ha >= MIN_HEAVY)
            & (ha <= MAX_HEAVY)
            & (e.mw[x] + nu.mw[y] <= max_mw + 0.01)
            & (e.hba[x] + nu.hba[y] <= MAX_HBA)
            & (e.hbd[x] + nu.hbd[y] <= MAX_HBD)
        )
    return ok


def product_chunk(task: tuple[int, int, int, float]) -> ProductChunk:
    """Draws start..start+size-1: a code per draw (the reaction's index for a product, INVALID,
    FILTERED), and the canonical SMILES of the products (valid, drug-like) and their digests."""
    seed, start, size, max_mw = task
    t, ia, ib = pick(seed, start, size)
    ok = may_pass(t, ia, ib, max_mw).tolist()
    active = [(idx, _POOLS[pe].joins, _POOLS[pn].joins) for idx, pe, pn, _ in _ACTIVE]
    codes = np.full(size, FILTERED, np.int8)
    out: list[str] = []
    digests: list[bytes] = []
    for k, (tk, i, j) in enumerate(zip(t.tolist(), ia.tolist(), ib.tolist())):
        if not ok[k]:
            continue
        idx, e, nu = active[tk]
        mol = Chem.MolFromSmiles(f"{e[i]}.{nu[j]}")
        if mol is None:
            codes[k] = INVALID
        elif drug_like(mol, max_mw):
            codes[k] = idx
            smi = Chem.MolToSmiles(mol)
            out.append(smi)
            digests.append(digest(smi))
    return codes, out, as_u64(digests)


class SeenSet:
    """A growing set of uint64 digests: one big sorted array plus a small sorted one, merged
    when the small one passes `merge_at` (about 8 bytes per digest, vectorised look-ups)."""

    def __init__(self, merge_at: int = 1 << 20):
        self.big = np.empty(0, np.uint64)
        self.small = np.empty(0, np.uint64)
        self.merge_at = merge_at

    @staticmethod
    def isin(sorted_arr: np.ndarray, h: np.ndarray) -> np.ndarray:
        if len(sorted_arr) == 0:
            return np.zeros(len(h), bool)
        i = np.minimum(np.searchsorted(sorted_arr, h), len(sorted_arr) - 1)
        return sorted_arr[i] == h

    def contains(self, h: np.ndarray) -> np.ndarray:
        return self.isin(self.big, h) | self.isin(self.small, h)

    def add(self, h: np.ndarray) -> None:
        self.small = np.sort(np.concatenate([self.small, h]), kind="stable")
        if len(self.small) >= self.merge_at:
            self.big = np.sort(np.concatenate([self.big, self.small]), kind="stable")
            self.small = np.empty(0, np.uint64)

    def __len__(self) -> int:
        return len(self.big) + len(self.small)


class Output:
    """SMILES file writer, written to a temporary name (NAME.part) and renamed at close; gzip
    (no name, no time in the header: reproducible bytes) when the name ends in .gz."""

    def __init__(self, path: Path):
        self.path = path
        self.tmp = path.with_name(path.name + ".part")
        self.raw = open(self.tmp, "wb")  # noqa: SIM115 (closed in close)
        self.fh: io.BufferedIOBase = self.raw
        if path.name.endswith(".gz"):
            self.fh = gzip.GzipFile(
                filename="", mode="wb", fileobj=self.raw, mtime=0, compresslevel=6
            )

    def write(self, text: str) -> None:
        self.fh.write(text.encode("ascii"))

    def close(self, keep: bool = True) -> None:
        """Finish the file under its name, or (keep=False) remove it."""
        if self.fh is not self.raw:
            self.fh.close()
        self.raw.close()
        if keep:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink()


def generate(
    pools: Blocks,
    src: np.ndarray,
    n: int,
    seed: int,
    jobs: int,
    out: Output,
    log: Callable[[str], None],
    max_mw: float = MAX_MW,
) -> dict[str, int]:
    """Write n distinct products (fewer if the pools cannot give n); returns the counts, which
    add up: attempted = invalid + filtered + source + duplicate + written."""
    names = ("attempted", "invalid", "filtered", "source", "duplicate", "written", "pairs")
    stats = dict.fromkeys(names, 0)
    per_reaction = np.zeros(len(REACTIONS), np.int64)
    active = active_reactions(pools)
    stats["pairs"] = sum(len(pools[pe]) * len(pools[pn]) for _, pe, pn, _ in active)
    if not active or n == 0:
        if not active:
            log("no reaction has building blocks on both sides")
        return stats
    seen = SeenSet()
    tasks = ((seed, k * DRAW_CHUNK, DRAW_CHUNK, max_mw) for k in count())
    t0 = last = time.perf_counter()
    pool = Pool(jobs, initializer=init_products, initargs=(pools,)) if jobs > 1 else None
    if pool is None:
        init_products(pools)
    try:
        for codes, smiles, h in ordered_map(product_chunk, tasks, pool, 3 * jobs):
            product_draw = np.flatnonzero(codes >= 0)  # the draw of each product
            first = np.zeros(len(h), bool)
            first[np.unique(h, return_index=True)[1]] = True
            in_src = SeenSet.isin(src, h)
            new = first & ~in_src & ~seen.contains(h)
            keep = np.flatnonzero(new)
            need = n - stats["written"]
            if len(keep) >= need:  # the last chunk: count only up to the n-th molecule's draw
                keep = keep[:need]
                m = int(keep[-1]) + 1
                d = int(product_draw[m - 1]) + 1
            else:
                m, d = len(h), len(codes)
            stats["attempted"] += d
            stats["invalid"] += int((codes[:d] == INVALID).sum())
            stats["filtered"] += int((codes[:d] == FILTERED).sum())
            stats["source"] += int(in_src[:m].sum())
            stats["duplicate"] += int((~in_src[:m] & ~new[:m]).sum())
            seen.add(h[keep])
            base = stats["written"]
            out.write("".join(f"{smiles[i]} ML{base + j + 1:09d}\n" for j, i in enumerate(keep)))
            per_reaction += np.bincount(codes[product_draw[keep]], minlength=len(REACTIONS))
            stats["written"] += len(keep)
            if stats["written"] >= n:
                break
            if stats["attempted"] >= GIVE_UP_FACTOR * stats["pairs"]:
                log(f"giving up after {stats['attempted']:,} draws: {stats['pairs']:,} pairs")
                break
            now = time.perf_counter()
            if now - last >= PROGRESS_S:
                last = now
                rate = stats["written"] / (now - t0)
                log(
                    f"products: {stats['written']:,}/{n:,} written, {rate:,.0f}/s, "
                    f"about {(n - stats['written']) / max(rate, 1e-9) / 60:.1f} min left"
                )
    finally:
        if pool is not None:
            pool.terminate()
    for (name, *_), c in zip(REACTIONS, per_reaction.tolist()):
        stats[f"written_{name}"] = c
    return stats


def default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, required=True, help="number of molecules to write")
    ap.add_argument("-o", "--output", type=Path, required=True, help="SMILES file (.gz: gzip)")
    ap.add_argument("--seed", type=int, default=7, help="pair order seed (default 7)")
    ap.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=default_jobs(),
        help="worker processes (default: all cores); the output does not depend on it",
    )
    ap.add_argument(
        "--max-mw",
        type=float,
        default=MAX_MW,
        help=f"drug-like filter's molecular weight limit (default {MAX_MW:g})",
    )
    ap.add_argument(
        "--input",
        type=Path,
        default=DEFAULT_INPUT,
        help="source molecules: CSV with a SMILES column or SMILES file, .gz or plain "
        f"(default {DEFAULT_INPUT})",
    )
    args = ap.parse_args(argv)
    if args.n < 0 or args.jobs < 1:
        ap.error("-n must be >= 0 and -j >= 1")
    if not args.input.exists():
        ap.error(f"no such input: {args.input}")
    RDLogger.DisableLog("rdApp.*")

    def log(msg: str) -> None:
        print(f"make_library: {msg}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    pools, src = build_blocks(args.input, args.jobs, log)
    t_blocks = time.perf_counter() - t0
    log("pools: " + ", ".join(f"{p} {len(pools[p]):,}" for p in POOLS))
    for name, pe, pn, _ in REACTIONS:
        log(
            f"  {name}: {len(pools[pe]):,} x {len(pools[pn]):,} = "
            f"{len(pools[pe]) * len(pools[pn]):,} pairs"
        )
    out = Output(args.output)
    try:
        stats = generate(pools, src, args.n, args.seed, args.jobs, out, log, args.max_mw)
    except BaseException:
        out.close(keep=False)
        raise
    out.close()
    secs = time.perf_counter() - t0
    t_products = secs - t_blocks
    log(
        f"summary: building blocks {sum(len(v) for v in pools.values()):,} ("
        + ", ".join(f"{p} {len(pools[p]):,}" for p in POOLS)
        + f") from {len(src):,} source molecules; pairs {stats.get('pairs', 0):,}"
    )
    log(
        f"summary: attempted {stats['attempted']:,}, invalid {stats['invalid']:,}, "
        f"filtered {stats['filtered']:,}, source copies {stats['source']:,}, duplicate "
        f"{stats['duplicate']:,}, written {stats['written']:,} ("
        + ", ".join(f"{name} {stats.get('written_' + name, 0):,}" for name, *_ in REACTIONS)
        + ")"
    )
    log(
        f"summary: {secs:.1f} s ({t_blocks:.1f} s building blocks, {t_products:.1f} s products: "
        f"{stats['written'] / max(t_products, 1e-9):,.0f} molecules/s) with -j {args.jobs}"
    )
    if stats["written"] < args.n:
        log(f"only {stats['written']:,} of {args.n:,} distinct products could be made")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
