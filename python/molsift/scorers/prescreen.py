"""Pattern-fingerprint prescreen for a fixed list of substructure queries (PAINS, QED's alerts).

A query can only match a molecule if every bit of the query's RDKit pattern fingerprint is set in
the molecule's pattern fingerprint (the screen RDKit's SubstructLibrary uses). `PatternScreen`
holds the query fingerprints in one `_core.FingerprintSet` and returns, for one molecule, the
indices of the queries that pass the screen (the subset test runs in Rust); callers still run
RDKit's own matcher on those, so the answers are RDKit's. A query whose fingerprint is unknown
(all-zero row) always passes.

`pains_queries(catalog)` recovers the query molecule of each FilterCatalog entry from the
entry's serialized form; an entry it cannot read, or one that matches on absence (minimum count
0), gets no query and is therefore always checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .. import _core

BITS = 2048
_PICKLE_MAGIC = b"\xef\xbe\xad\xde"  # RDKit's MolPickler header, little-endian 0xDEADBEEF


class PatternScreen:
    """Which of `queries` (RDKit query mols, or None for "always check") may match a molecule."""

    def __init__(self, queries: Sequence[object | None]):
        from rdkit import Chem

        from ..chem import bitvect_packer

        self._pattern = Chem.PatternFingerprint
        fps = [None if q is None else self._pattern(q, BITS) for q in queries]
        self._packed = bitvect_packer(BITS, [fp for fp in fps if fp is not None])
        empty = bytes(BITS // 8)
        rows = [empty if fp is None else self._packed(fp) for fp in fps]
        self._rows = _core.FingerprintSet(rows)
        self.screened = sum(r != empty for r in rows)

    def words(self, mol) -> bytes:
        """The molecule's pattern fingerprint, to pass to `candidates` (compute once per mol)."""
        return self._packed(self._pattern(mol, BITS))

    def candidates(self, words: bytes) -> list[int]:
        """Indices (ascending) of the queries whose fingerprint bits are all set in `words`."""
        return self._rows.subsets_of(words)


def _entry_query(entry):
    """The query mol of one FilterCatalog SMARTS entry, or None when it cannot be read safely."""
    from rdkit import Chem

    blob = entry.Serialize()
    at = blob.find(_PICKLE_MAGIC)
    size = re.search(rb"(\d+) $", blob[:at]) if at > 0 else None
    if size is None:
        return None
    end = at + int(size.group(1))
    counts = re.match(rb" (\d+) (\d+) ", blob[end:])
    if counts is None or int(counts.group(1)) < 1:  # matches on absence: cannot be screened
        return None
    try:
        query = Chem.Mol(blob[at:end])
    except Exception:
        return None
    return query if query.GetNumAtoms() else None


def pains_queries(catalog) -> list[object | None]:
    """Query mols of every entry of a FilterCatalog, in catalog order (None: always check)."""
    return [_entry_query(catalog.GetEntryWithIdx(i)) for i in range(catalog.GetNumEntries())]
