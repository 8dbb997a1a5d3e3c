"""The fuzzer: mutates real records (byte flips, truncation, NUL, CR/CRLF, 1-5 MB lines, BOM,
UTF-16, latin-1, missing `$$$$` / `M  END`, corrupt gzip), runs `count`, `ingest` (and `screen
--scorer filter` on some) on each mutated file, and checks: no traceback or panic, exit status
0/2/3 (3 only when nothing was usable, 2 only for a clear error about a whole file), records in
= stored + rejected, and every reject row naming its source, line and byte offset."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from pathlib import Path
from typing import Callable

from .common import (
    ABORT,
    BAD_STATUS,
    BUNDLED_SMI,
    COUNTS,
    FAIL,
    MOSES,
    OK,
    REFUSED,
    REJECT_ROW,
    Case,
    judge_exit,
    rdkit_data,
    run_cli,
    text,
)

KIND = "fuzzer"


# ---------------------------------------------------------------- the real inputs


def source_files(workdir: Path) -> dict[str, tuple[str, bytes]]:
    """name -> (suffix, bytes) of the real records mutated: 200 NCI SMILES lines, RDKit's 200-
    molecule SDF (its first 40 blocks), and a CSV of 200 rows built from RDKit's TPSA file."""
    smi = b"".join(BUNDLED_SMI.read_bytes().splitlines(keepends=True)[:200])
    sdf_all = rdkit_data("NCI", "first_200.props.sdf").read_bytes()
    sdf = b"".join(block + b"$$$$\n" for block in sdf_all.split(b"$$$$\n")[:40])
    rows = [
        ln.split(b",")
        for ln in rdkit_data("NCI", "first_5k.tpsa.csv").read_bytes().splitlines()
        if ln and not ln.startswith(b"#")
    ][:200]
    csv_bytes = b"id,smiles,tpsa\n" + b"".join(
        b"m%d,%s,%s\n" % (i, r[0], r[1]) for i, r in enumerate(rows)
    )
    files = {"smi": (".smi", smi), "sdf": (".sdf", sdf), "csv": (".csv", csv_bytes)}
    if MOSES.exists():  # the long run only: 300 rows of MOSES's training set
        with gzip.open(MOSES, "rb") as fh:
            files["moses"] = (".csv", b"".join(fh.readline() for _ in range(301)))
    return files


# ---------------------------------------------------------------- mutations


def _flip(rng, data, n):
    b = bytearray(data)
    for _ in range(n):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def _lines(data):
    """Lines ending in \n (a lone CR stays inside its line)."""
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


def _insert_line(rng, data, line):
    lines = _lines(data)
    i = rng.randrange(len(lines) + 1)
    return b"".join([*lines[:i], line, *lines[i:]])


def _drop_lines(rng, data, pattern, keep_last=False):
    lines = _lines(data)
    idx = [i for i, ln in enumerate(lines) if ln.strip() == pattern]
    if not idx:
        return data
    drop = set(rng.sample(idx, max(1, len(idx) // 8)))
    return b"".join(ln for i, ln in enumerate(lines) if i not in drop)


def _cr_in_ids(rng, data):
    """A lone CR inside the ids of a few records: SMILES lines' last word, CSV rows' first field
    (our CSV puts the id first), SDF title lines (issue 14 defect 6)."""
    lines = _lines(data)
    sdf = b"$$$$\n" in data
    titles = (
        [0] + [i + 1 for i, ln in enumerate(lines[:-1]) if ln.strip() == b"$$$$"]
        if sdf
        else list(range(1 if data.startswith(b"id,") else 0, len(lines)))
    )
    for i in rng.sample(titles, min(5, len(titles))):
        ln = lines[i].rstrip(b"\r\n") or b"title"
        at = 2 if not sdf and data.startswith(b"id,") else max(1, len(ln) - 1)
        lines[i] = ln[:at] + b"\r" + ln[at:] + b"\n"
    return b"".join(lines)


def _cut(rng, data):
    return data[: rng.randrange(len(data) // 2, len(data) - 8)]


def _gzip(data):
    return gzip.compress(data, mtime=0)


MUTATIONS: dict[str, Callable] = {
    "flip1": lambda rng, d: _flip(rng, d, 1),
    "flip16": lambda rng, d: _flip(rng, d, 16),
    "flip256": lambda rng, d: _flip(rng, d, 256),
    "truncate": lambda rng, d: d[: rng.randrange(len(d))],
    "truncate_mid_record": lambda rng, d: d[: len(d) // 2 + rng.randrange(7)],
    "nul": lambda rng, d: b"".join(_insert_at(rng, d, b"\x00", 3)),
    "nul_line": lambda rng, d: _insert_line(rng, d, b"\x00" * 40 + b"\n"),
    "cr_only": lambda rng, d: d.replace(b"\n", b"\r"),
    "crlf": lambda rng, d: d.replace(b"\n", b"\r\n"),
    "lone_cr": lambda rng, d: b"".join(_insert_at(rng, d, b"\r", 3)),
    "long_line": lambda rng, d: _insert_line(
        rng, d, b"C" * rng.randrange(1 << 20, 5 << 20) + b" long\n"
    ),
    "long_line_no_newline": lambda rng, d: d + b"c1ccccc1" * rng.randrange(1 << 17, 5 << 17),
    "cr_in_id": lambda rng, d: _cr_in_ids(rng, d),
    "bom": lambda rng, d: b"\xef\xbb\xbf" + d,
    "utf16": lambda rng, d: d.decode("latin-1").encode("utf-16"),
    "latin1": lambda rng, d: b"".join(_insert_at(rng, d, "\u00e9\u00df".encode("latin-1"), 5)),
    "invalid_utf8": lambda rng, d: b"".join(_insert_at(rng, d, b"\xff\xfe\xc3", 5)),
    "no_final_newline": lambda rng, d: d.rstrip(b"\n"),
    "blank_and_comment": lambda rng, d: _insert_line(
        rng, _insert_line(rng, d, b"\n"), b"# comment\n"
    ),
    "binary": lambda rng, d: bytes(rng.randrange(256) for _ in range(4096)),
    "empty": lambda rng, d: b"",
    "only_newlines": lambda rng, d: b"\n" * 50,
    "shuffled_bytes_tail": lambda rng, d: (
        d[: len(d) // 2] + bytes(rng.sample(list(d[len(d) // 2 :]), len(d) - len(d) // 2))
    ),
    "missing_dollars": lambda rng, d: _drop_lines(rng, d, b"$$$$"),
    "missing_m_end": lambda rng, d: _drop_lines(rng, d, b"M  END"),
    "gzip": lambda rng, d: _gzip(d),
    "gzip_flipped": lambda rng, d: _gzip(d)[:12] + _flip(rng, _gzip(d)[12:], 8),
    "gzip_truncated": lambda rng, d: _gzip(d)[: rng.randrange(20, max(21, len(_gzip(d)) - 8))],
    # the whole bundled library (5,000 records) gzipped and cut in its second half
    "gzip_truncated_big": lambda rng, d: _cut(rng, _gzip(BUNDLED_SMI.read_bytes())),
    "gzip_bad_trailer": lambda rng, d: _gzip(d)[:-8] + bytes(8),
    "gzip_of_garbage": lambda rng, d: _gzip(bytes(rng.randrange(256) for _ in range(4096))),
}
SDF_ONLY = {"missing_dollars", "missing_m_end"}
SMI_ONLY = {"gzip_truncated_big"}  # mutations that bring their own (SMILES) records
COMPRESSED = {m for m in MUTATIONS if m.startswith("gzip")}


def _insert_at(rng, data, piece, n):
    cuts = sorted(rng.randrange(len(data) + 1) for _ in range(n))
    out, last = [], 0
    for c in cuts:
        out += [data[last:c], piece]
        last = c
    return [*out, data[last:]]


def all_specs(long: bool) -> list[tuple[str, str, int]]:
    """(source, mutation, seed) of every case: each mutation on each source it applies to, with
    1 seed (short) or enough seeds for >= 300 mutated inputs (long)."""
    seeds = range(4) if long else range(1)
    sources = ("smi", "sdf", "csv") + (("moses",) if long and MOSES.exists() else ())
    specs = []
    for seed in seeds:
        for mutation in MUTATIONS:
            for source in sources:
                if (mutation in SDF_ONLY and source != "sdf") or (
                    mutation in SMI_ONLY and source != "smi"
                ):
                    continue
                specs.append((source, mutation, seed))
    return specs


def short_specs():
    """The short run: every mutation once, on one source in turn (SDF for the SDF-only ones),
    plus a few pairs that once failed."""
    sources = ("smi", "sdf", "csv")
    specs = [
        ("sdf" if m in SDF_ONLY else "smi" if m in SMI_ONLY else sources[i % 3], m, 0)
        for i, m in enumerate(MUTATIONS)
    ]
    return specs + [s for s in EXTRA_SHORT if s not in specs]


EXTRA_SHORT = [
    ("csv", "binary", 0),
    ("smi", "cr_in_id", 0),
    ("sdf", "cr_in_id", 0),
    ("smi", "empty", 0),
]


def case_name(source: str, mutation: str, seed: int) -> str:
    return f"{source}:{mutation}:{seed}"


def make_input(workdir: Path, source: str, mutation: str, seed: int) -> Path:
    if not hasattr(make_input, "cache"):
        make_input.cache = source_files(workdir)
    suffix, data = make_input.cache[source]
    rng = random.Random(f"{source}:{mutation}:{seed}")
    mutated = MUTATIONS[mutation](rng, data)
    name = f"{source}-{mutation}-{seed}{suffix}" + (".gz" if mutation in COMPRESSED else "")
    path = workdir / name
    path.write_bytes(mutated)
    return path


# ---------------------------------------------------------------- checks


def _check_rejects(path: Path) -> str:
    """'' when every row of a rejects.tsv names source, line (>= 1) and byte offset (>= 0)."""
    if not path.exists():
        return ""
    lines = path.read_bytes().split(b"\n")
    if lines[0] != b"source\tline\toffset\tid\treason":
        return f"{path.name}: header {lines[0][:60]!r}"
    for n, row in enumerate(lines[1:], 2):
        if not row:
            continue
        f = row.split(b"\t")
        if len(f) < 5 or not f[0] or not f[1].isdigit() or int(f[1]) < 1 or not f[2].isdigit():
            return f"{path.name} row {n}: {row[:80]!r}"
    return ""


def _rows(path: Path) -> int:
    if not path.exists():
        return -1
    return max(0, text(path.read_bytes()).count("\n") - 1)


WHOLE_FILE = re.compile(r"header|UTF-16|encoding|compress|gzip|zstd", re.IGNORECASE)


def _whole_file_error(proc) -> bool:
    """True when exit 2 is about the file as a whole (a CSV header without the SMILES column, a
    UTF-16 file, an undecodable stream), not about one record: such a file is refused, not
    aborted. Any other exit 2 on a readable plain file is a whole run stopped by records."""
    errors = [ln for ln in text(proc.stderr).splitlines() if ln.startswith("molsift: error:")]
    return bool(errors) and bool(WHOLE_FILE.search(errors[-1]))


def check_count(path: Path) -> Case:
    name = f"count {path.name}"
    proc = run_cli(["count", path, "--json"], timeout=60)
    return judge_exit(KIND, name, proc, [path.name], allowed=(0, 2, 3)) or Case(KIND, name, OK)


def _failed_run(name: str, proc, path: Path, compressed: bool):
    """The case of an ingest or screen that did not get to write its results (None if it did):
    a crash, a bad status, an unclear error, or exit 2 on a readable plain file (an abort)."""
    if proc.returncode == 3:
        return None
    judged = judge_exit(KIND, name, proc, [path.name], allowed=(0, 2, 3))
    if judged and judged.outcome == REFUSED and not compressed and not _whole_file_error(proc):
        return Case(KIND, name, FAIL, ABORT, f"exit 2: {text(proc.stderr).strip()[:160]}")
    return judged


def check_ingest(path: Path, workdir: Path, compressed: bool) -> Case:
    """ingest --json: status, counts (JSON report and manifest), reject rows."""
    name = f"ingest {path.name}"
    store = workdir / (path.name + ".store")
    proc = run_cli(
        ["ingest", path, "-o", store, "--json", "-q", "-j", "2"], cwd=workdir, timeout=60
    )
    failed = _failed_run(name, proc, path, compressed)
    if failed:
        return failed
    try:
        report = json.loads(text(proc.stdout).strip().splitlines()[-1])
        manifest = json.loads((store / "manifest.json").read_text())
    except (ValueError, IndexError, OSError) as exc:
        return Case(KIND, name, FAIL, COUNTS, f"no JSON report or manifest: {exc}")
    c = manifest["counts"]
    if report["records_in"] != report["molecules"] + report["rejected"] or (
        c["records_in"],
        c["molecules"],
        c["rejected"],
    ) != (report["records_in"], report["molecules"], report["rejected"]):
        return Case(
            KIND,
            name,
            FAIL,
            COUNTS,
            f"report {report['records_in']}/{report['molecules']}/"
            f"{report['rejected']}, manifest {c}",
        )
    rejects = [ln for ln in (store / "rejects.tsv").read_bytes().split(b"\n")[1:] if ln]
    if len(rejects) != report["rejected"]:
        return Case(
            KIND, name, FAIL, COUNTS, f"{report['rejected']} rejected, {len(rejects)} reject rows"
        )
    why = _check_rejects(store / "rejects.tsv")
    if why:
        return Case(KIND, name, FAIL, REJECT_ROW, why)
    nothing = report["molecules"] == 0
    if nothing and proc.returncode != 3:
        return Case(
            KIND,
            name,
            FAIL,
            BAD_STATUS,
            f"exit {proc.returncode} with nothing usable ({report['rejected']} rejected, 0 stored)",
        )
    if not nothing and proc.returncode == 3:
        return Case(KIND, name, FAIL, BAD_STATUS, f"exit 3 with {report['molecules']} stored")
    return Case(KIND, name, OK)


def check_screen(path: Path, workdir: Path, compressed: bool) -> Case:
    """screen --scorer filter --json: status, records in = rows + rejected, reject rows."""
    name = f"screen {path.name}"
    out = workdir / (path.name + ".csv")
    proc = run_cli(
        ["screen", path, "--scorer", "filter", "-o", out, "--json", "-q", "-j", "2"],
        cwd=workdir,
        timeout=60,
    )
    failed = _failed_run(name, proc, path, compressed)
    if failed:
        return failed
    try:
        report = json.loads(text(proc.stdout).strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        return Case(KIND, name, FAIL, COUNTS, f"no JSON report: {exc}")
    rows = _rows(out)
    rejects_file = Path(str(out) + ".rejects.tsv")
    rejects = _rows(rejects_file)
    if report["records_in"] != report["rows"] + report["rejected"] or (rows, rejects) != (
        report["rows"],
        report["rejected"],
    ):
        return Case(
            KIND,
            name,
            FAIL,
            COUNTS,
            f"report {report['records_in']}={report['rows']}+"
            f"{report['rejected']}, files hold {rows} rows and {rejects} rejects",
        )
    why = _check_rejects(rejects_file)
    if why:
        return Case(KIND, name, FAIL, REJECT_ROW, why)
    if report["rows"] == 0 and proc.returncode != 3:
        return Case(
            KIND,
            name,
            FAIL,
            BAD_STATUS,
            f"exit {proc.returncode} with nothing usable ({report['rejected']} rejected, 0 rows)",
        )
    if report["rows"] and proc.returncode == 3:
        return Case(KIND, name, FAIL, BAD_STATUS, f"exit 3 with {report['rows']} rows")
    return Case(KIND, name, OK)


SCREENED = {
    "flip16",
    "nul",
    "lone_cr",
    "cr_in_id",
    "gzip_truncated_big",
    "binary",
    "empty",
    "long_line",
    "gzip_truncated",
    "missing_dollars",
}


def run_spec(
    workdir: Path, source: str, mutation: str, seed: int, screen: bool | None = None
) -> list[Case]:
    """Every check of one mutated input; `screen` (default: for a few mutations, seed 0)."""
    path = make_input(workdir, source, mutation, seed)
    compressed = mutation in COMPRESSED
    cases = [check_count(path), check_ingest(path, workdir, compressed)]
    if screen if screen is not None else (mutation in SCREENED and seed == 0):
        cases.append(check_screen(path, workdir, compressed))
    for c in cases:
        c.case = f"{case_name(source, mutation, seed)} {c.case.split()[0]}"
    path.unlink()
    for p in workdir.iterdir():
        if p.name.startswith(path.name):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    return cases


def run(workdir: Path, long: bool, log=print) -> list[Case]:
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for spec in all_specs(True) if long else short_specs():
        for c in run_spec(workdir, *spec):
            log(c)
            cases.append(c)
    return cases
