"""molsift: store, search and screen ultra-large compound libraries.

    >>> import molsift
    >>> report = molsift.ingest("data/nci_first_5k.smi", "/tmp/nci.store")   # doctest: +SKIP
    >>> store = molsift.open_store("/tmp/nci.store")                          # doctest: +SKIP
    >>> store.smiles[0], store.ids[0], store.fingerprints.shape               # doctest: +SKIP
"""

from ._core import InputError, MolsiftError, StoreError, __version__

for _exc in (MolsiftError, InputError, StoreError):
    _exc.__module__ = "molsift"  # so errors pickle across worker processes and MPI ranks
del _exc
from .chem import FingerprintSpec
from .ingest import IngestReport, ingest
from .records import count_records, read_records
from .store import Store, open_store

__all__ = [
    "__version__",
    "MolsiftError",
    "InputError",
    "StoreError",
    "FingerprintSpec",
    "ingest",
    "IngestReport",
    "count_records",
    "read_records",
    "open_store",
    "Store",
]
