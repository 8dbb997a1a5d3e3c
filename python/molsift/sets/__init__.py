"""Store sets: the one store cut into shards (`molsift ingest INPUT -o SET --shards K`).

A set is a directory of shard stores, `shard-0000`, `shard-0001`, ..., each a complete one store
(`docs/store-format.md`) holding consecutive positions of the store order (canonical SMILES in
byte order), and `set.json`, the set manifest written last (`manifest.py`). A set position is
the shard's offset plus the position inside the shard, and equals the position in the one store
built from the same input: every search of a set (`store.py`, `StoreSet`) answers exactly what
that one store answers (positions, scores, order, tie rule). `write.py` writes a set from
ingest's parts and their sorted runs, each shard merging its own range of them."""

from .manifest import SET_FILE, is_set
from .store import StoreSet, open_set

__all__ = ["SET_FILE", "StoreSet", "is_set", "open_set"]
