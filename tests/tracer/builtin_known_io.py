"""Known I/O done through molsift's built-in counters (the Rust core, via molsift._core), for
tests/test_iostats.py: run under `molsift profile`, the LD_PRELOAD tracer counts the same system
calls, and both sets of counters must agree. Every file of DIR is touched through _core only.
Usage: builtin_known_io.py DIR OUT_JSON (OUT_JSON: this process's built-in record)."""

import gzip
import json
import os
import sys

from molsift import _core

d, out = sys.argv[1], sys.argv[2]

# 1. writes, a seek, syncs and a stat on one descriptor, then reads on another
a = os.path.join(d, "a.dat")
f = _core.CountedFile(a, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
f.write(b"x" * 50)  # 0
f.write(b"x" * 50)  # 50: sequential, consecutive
f.pwrite(b"y" * 2000, 4096)  # 4096: sequential
f.seek(0)
f.write(b"z" * 10)  # 0
f.fdatasync()
f.fsync()
f.size()
f.close()
f = _core.CountedFile(a)
f.read(100)
f.read(100)
f.pread(4000, 2048)
f.seek(0, 2)
f.read(10)  # end of file: 0 bytes
f.close()
_core.file_size(a)

# 2. appends
j = os.path.join(d, "journal.jsonl")
_core.write_file(j, b"{}\n", sync=True)
f = _core.CountedFile(j, os.O_WRONLY | os.O_APPEND)
for i in range(5):
    f.write(b'{"n":%d}\n' % i)
f.close()
_core.read_file(j)

# 3. a SMILES library read in 3 slabs with a 1 KiB buffer, then counted by mmap
lib = os.path.join(d, "lib.smi")
_core.write_file(lib, b"".join(b"C%s c%d\n" % (b"C" * (i % 7), i) for i in range(3000)))
size = _core.file_size(lib)
for start, end in _core.split_slabs(size, 3):
    src = _core.RecordSource(lib, "smiles", slab=(start, end), first_line=0, buffer_size=1024)
    while src.next_batch(500):
        pass
_core.count_records(lib, "smiles", threads=2)
_core.count_newlines(lib, 0, size // 2)

# 4. a gzip stream, decoded by one reader
gz = os.path.join(d, "lib.smi.gz")
_core.write_file(gz, gzip.compress(b"CCO\n" * 5000))
src = _core.RecordSource(gz, "smiles", buffer_size=4096)
while src.next_batch(1000):
    pass

# 5. a store: written, merged, opened with checksums
part, merged = os.path.join(d, "part.store"), os.path.join(d, "all.store")
w = _core.StoreWriter(part, "morgan", 64, json.dumps({"radius": 2}))
w.add_molecules_packed(
    ["a", "b"], ["C", "CC"], [1, 2], bytes([2, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0])
)
w.add_reject("x.smi", 3, 10, "c", "bad")
w.finish()
_core.write_part_run(part)
_core.PartRuns([part], "morgan", 64, json.dumps({"radius": 2})).write_version_1(merged)
_core.open_store_manifest(merged, full=True)

with open(out, "w") as fh:  # outside DIR
    fh.write(_core.iostats_process())
