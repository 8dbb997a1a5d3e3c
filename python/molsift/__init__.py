"""molsift: store, search and screen ultra-large compound libraries.

    >>> import molsift
    >>> report = molsift.ingest("data/nci_first_5k.smi", "/tmp/nci.store")   # doctest: +SKIP
    >>> store = molsift.open_store("/tmp/nci.store")                          # doctest: +SKIP
    >>> store.smiles[0], store.ids[0], store.fingerprints.shape               # doctest: +SKIP

Submodules (and numpy, RDKit) are imported on first use, so `molsift count` starts fast.
"""

from ._core import InputError, MolsiftError, StoreError, __version__
from ._lazy import lazy_getattr

for _exc in (MolsiftError, InputError, StoreError):
    _exc.__module__ = "molsift"  # so errors pickle across worker processes and MPI ranks
del _exc

_LAZY = {
    "FingerprintSpec": "spec",
    "ingest": "ingestion",
    "IngestReport": "ingestion",
    "count_records": "inputs",
    "read_records": "inputs",
    "read_molecules": "inputs",
    "open_store": "store",
    "Store": "store",
    "StoreV2": "store",
    "upgrade": "store",
    "QueryError": "substructure.query",
    "index_analogs": "analogs.search",
    "read_cube": "cube.io",
    "write_cube": "cube.io",
    "Cube": "cube.model",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = ["__version__", "MolsiftError", "InputError", "StoreError", *_LAZY]
