"""The `molsift` command line: `molsift <verb> --help`. Library errors become one friendly line
on stderr and exit status 2 (the exit codes: EXIT_CODES); nothing here does real work itself."""

from __future__ import annotations

import argparse
import json
import re
import sys

EXIT_ERROR = 2  # bad arguments or input, a damaged store, a failed run: one line on stderr says why
EXIT_NOTHING_USABLE = 3  # ingest/screen ran, but no record was stored or scored
EXIT_PIPE_CLOSED = 141  # as a shell reports a process killed by SIGPIPE
EXIT_CODES = f"""exit status:
  0    success
  1    an unexpected error (a bug: the traceback is printed)
  {EXIT_ERROR}    an error: bad arguments, unreadable input, a damaged store, a failed run
  {EXIT_NOTHING_USABLE}    nothing usable: ingest stored no molecule or screen scored no record (empty
       input, or every record rejected); the store or results are still written, with the
       rejects in rejects.tsv
  130  interrupted (Ctrl-C)
  {EXIT_PIPE_CLOSED}  the output pipe was closed early (e.g. `molsift info STORE | head -3`)
  profile exits with the status of the program it ran"""

SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1000**3,
    "gib": 1 << 30,
}


def parse_size(text: str) -> int:
    """'4096', '64K', '64KiB', '1M', '1MB' -> bytes (K/M/G without B are binary)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4096, 64K, 1MiB)")
    value = int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be at least 1 byte: {text!r}")
    return value


def size_text(n: int) -> str:
    """65536 -> '64KiB', the way help texts show a default size."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def _reader_defaults() -> str:
    """The reader's default record size limits, from the Rust core (one place for the numbers)."""
    from ._core import DEFAULT_MAX_LINE_RECORD_BYTES, DEFAULT_MAX_SDF_RECORD_BYTES

    return (
        f"longer records are rejected (default {size_text(DEFAULT_MAX_LINE_RECORD_BYTES)} "
        f"for SMILES and CSV lines, {size_text(DEFAULT_MAX_SDF_RECORD_BYTES)} for SDF blocks)"
    )


def _read_buffer_help() -> str:
    from ._core import DEFAULT_READ_BUFFER

    return f"bytes per read call (default {size_text(DEFAULT_READ_BUFFER)})"


def k_nearest(text: str) -> int:
    """-k: a whole number of hits, at least 1."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    if k < 1:
        raise argparse.ArgumentTypeError(
            f"must be at least 1, got {k} (leave -k out to keep every hit above -t)"
        )
    return k


def tanimoto_threshold(text: str) -> float:
    """-t: a Tanimoto score, 0 to 1."""
    try:
        t = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not 0.0 <= t <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (a Tanimoto score), got {text}")
    return t


def _nothing_usable(verb: str, records_in: int, rejected: int, where: str) -> int:
    """Says loudly that a run produced nothing and returns EXIT_NOTHING_USABLE."""
    if records_in == 0:
        why = "the input holds no records (empty, or only blank and comment lines)"
    else:
        why = f"all {records_in:,} records were rejected (reasons in {where})"
    print(
        f"molsift {verb}: error: nothing usable: {why}; exit status {EXIT_NOTHING_USABLE}",
        file=sys.stderr,
    )
    return EXIT_NOTHING_USABLE


def _add_format_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input format (guessed from the file name when not given)")
    g.add_argument("--format", choices=["smiles", "csv", "sdf"], help="record format")
    g.add_argument(
        "--header",
        dest="header",
        action="store_true",
        default=None,
        help="the first line is a header (SMILES files; auto-detected)",
    )
    g.add_argument("--no-header", dest="header", action="store_false")
    g.add_argument(
        "--smiles-col", help="CSV: name of the SMILES column (default: 'smiles', any case)"
    )
    g.add_argument("--id-col", help="CSV: name of the id column (default: ids are line numbers)")
    g.add_argument("--delimiter", choices=[",", "tab"], help="CSV delimiter (default: guessed)")


def _cmd_count(args) -> int:
    from .inputs import count_records

    r = count_records(args.file, format=args.format, threads=args.threads, header=args.header)
    if args.json:
        print(json.dumps(r))
        return 0
    gbs = r["bytes"] / r["seconds"] / 1e9 if r["seconds"] else 0.0
    amp = r["bytes_read"] / r["bytes"] if r["bytes"] else 0.0
    print(f"{r['records']}\t{args.file}")
    print(
        f"{r['bytes']:,} bytes ({r['format']}, {r['compression']}) in {r['seconds']:.3f} s:"
        f" {gbs:.2f} GB/s, {r['read_calls']:,} read calls, read amplification {amp:.4f}x",
        file=sys.stderr,
    )
    return 0


def _cmd_ingest(args) -> int:
    from .ingestion import ingest
    from .spec import FingerprintSpec

    report = ingest(
        args.inputs,
        args.output,
        fingerprint=FingerprintSpec(radius=args.radius, bits=args.bits),
        workers=args.workers,
        slabs=args.slabs,
        chunk_records=args.chunk_records,
        buffer_size=args.read_buffer,
        max_record_bytes=args.max_record_bytes,
        format=args.format,
        header=args.header,
        smiles_col=args.smiles_col,
        id_col=args.id_col,
        delimiter="\t" if args.delimiter == "tab" else args.delimiter,
        overwrite=args.overwrite,
        verify_count=args.verify_count,
        index=not args.no_index,
        progress=False if args.quiet else None,
    )
    if report is None:  # a non-root MPI rank
        return 0
    if args.json:
        from dataclasses import asdict

        print(json.dumps({**asdict(report), "read_amplification": report.read_amplification}))
    elif not args.quiet:
        print(report.summary())
        if report.rejected:
            print(f"rejected records: {report.store}/rejects.tsv")
    if report.molecules == 0:
        return _nothing_usable(
            "ingest", report.records_in, report.rejected, f"{report.store}/rejects.tsv"
        )
    return 0


def _read_queries(args):
    """(id, query) pairs from -q SMILES and --queries FILE; bad records of the file are reported
    on stderr and skipped (counted), never fatal."""
    queries = [
        (f"q{i + 1}" if len(args.query) > 1 else "query", smi)
        for i, smi in enumerate(args.query or [])
    ]
    if args.queries:
        from .inputs import read_molecules

        found = read_molecules(args.queries, skip_bad=True)
        for bad in found.skipped:
            print(
                f"molsift: {bad.path}:{bad.line}: query {bad.id!r} skipped: {bad.reason}",
                file=sys.stderr,
            )
        queries += [(m.id, m.mol) for m in found.molecules]
        if found.skipped:
            print(
                f"molsift: {len(found.skipped)} of {len(found.skipped) + len(queries)} queries "
                "skipped",
                file=sys.stderr,
            )
    return queries


def _cmd_search(args) -> int:
    import time

    from .iostats import open_counted
    from .store import open_store

    if not args.query and not args.queries:
        raise SystemExit("molsift search: give -q SMILES or --queries FILE")
    k = args.k_nearest if args.k_nearest or args.threshold is not None else 10
    store = open_store(args.store, verify=False)
    queries = _read_queries(args)
    start = time.perf_counter()
    results = store.search_batch(
        [q for _, q in queries], threshold=args.threshold, k=k, threads=args.threads
    )
    seconds = time.perf_counter() - start
    rows = [
        (qid, store.ids[i], score, store.smiles[i])
        for (qid, _), hits in zip(queries, results)
        for i, score in hits
    ]
    if args.output and args.output.endswith(".parquet"):
        _write_parquet(args.output, rows)
    else:
        out = open_counted(args.output, "w") if args.output else sys.stdout
        out.write("query_id\ttarget_id\tscore\ttarget_smiles\n")
        for qid, tid, score, smi in rows:
            out.write(f"{qid}\t{tid}\t{score:.6f}\t{smi}\n")
        if args.output:
            out.close()
    touched = results[0].stats.get("bytes_touched", 0) if results else 0  # summed over the batch
    print(
        f"molsift: {len(queries)} queries, {len(rows)} hits in {seconds * 1000:.1f} ms"
        f" ({seconds * 1000 / max(1, len(queries)):.2f} ms/query, {args.threads} thread(s));"
        f" {touched / max(1, len(queries)):,.0f} bytes of fingerprints and columns read per query",
        file=sys.stderr,
    )
    return 0


def _write_parquet(path: str, rows) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SystemExit("molsift search: Parquet output needs pyarrow (pip install pyarrow)")
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    table = pa.table(
        {
            "query_id": list(cols[0]),
            "target_id": list(cols[1]),
            "score": pa.array(cols[2], pa.float64()),
            "target_smiles": list(cols[3]),
        }
    )
    pq.write_table(table, path)


def _cmd_index(args) -> int:
    from ._core import build_column_index

    size = build_column_index(args.store)
    print(f"column index written to {args.store}: {size:,} bytes")
    return 0


def _cmd_info(args) -> int:
    from .store import open_store

    store = open_store(args.store, verify=not args.no_verify)
    m = store.manifest
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    c, fp = m["counts"], m["fingerprint"]
    size = sum(e["bytes"] for e in m["files"].values())
    print(f"store       {store.path}")
    print(f"format      {m['format']} v{m['format_version']} ({m['created_by']})")
    print(
        f"molecules   {c['molecules']:,}  (records in {c['records_in']:,}, rejected {c['rejected']:,})"
    )
    print(f"fingerprint {fp['kind']} {fp['bits']} bits {json.dumps(fp['params'])}")
    print(f"size        {size:,} bytes, {size / max(1, c['molecules']):.1f} bytes/molecule")
    checked = f"all {len(m['files']) + 1} files verified (manifest included)"
    print(f"checksums   {'not checked (--no-verify)' if args.no_verify else checked}")
    print(
        f"search      {'column index present' if store.has_column_index else 'no column index (molsift index STORE)'}"
    )
    n = min(args.head, len(store))
    if n:
        print(f"\nfirst {n} molecules (position, id, on-bits, canonical SMILES):")
        for i in range(n):
            print(f"{i:>8}  {store.ids[i]:<12} {int(store.popcounts[i]):>4}  {store.smiles[i]}")
    if c["rejected"]:
        print(f"\nrejected records are listed in {store.rejects_path}")
    return 0


def _cmd_screen(args) -> int:
    from .scorers import scorer_class
    from .screen import screen, summary

    scorer = scorer_class(args.scorer).from_args(args)
    report = screen(
        args.library,
        args.output,
        scorer,
        workers=args.workers,
        writers=args.writers,
        write_buffer=args.write_buffer,
        read_buffer=args.read_buffer,
        max_record_bytes=args.max_record_bytes,
        slabs=args.slabs,
        chunk_records=args.chunk_records,
        standardize=args.standardize,
        resume=args.resume,
        overwrite=args.overwrite,
        run_dir=args.run_dir,
        fsync=args.fsync,
        progress=False if args.quiet else None,
        format=args.format,
        header=args.header,
        smiles_col=args.smiles_col,
        id_col=args.id_col,
        delimiter="\t" if args.delimiter == "tab" else args.delimiter,
    )
    if report is None:  # a non-root MPI rank
        return 0
    if args.json:
        print(json.dumps(report))
    elif not args.quiet:
        print(summary(report))
    if report["rows"] == 0:
        return _nothing_usable(
            "screen", report["records_in"], report["rejected"], report["rejects"]
        )
    return 0


def _cmd_report(args) -> int:
    from .screen.report import write_report

    png, text = write_report(args.run_dir, args.output)
    print(text)
    print(f"timeline written to {png}")
    return 0


def _cmd_profile(args) -> int:
    from .profiler.profile import CommandError, profile

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        result = profile(command, args.output, keep_process_logs=args.keep_process_logs)
    except CommandError as exc:
        print(f"molsift: error: {exc}", file=sys.stderr)
        return exc.status
    for problem in result.problems:
        print(f"molsift profile: skipped a process log: {problem}", file=sys.stderr)
    print(
        f"molsift profile: {result.processes} process(es) traced, log in {result.log} "
        f"(read it with: molsift insights {result.log})",
        file=sys.stderr,
    )
    return _exit_like(result.returncode)


def _exit_like(returncode: int) -> int:
    """The program's status; killed by a signal, molsift dies of the same signal."""
    if returncode >= 0:
        return returncode
    import os
    import signal

    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(-returncode, signal.SIG_DFL)
    os.kill(os.getpid(), -returncode)
    return 128 - returncode  # the signal did not end us (e.g. SIGCHLD-like): the shell's convention


def _cmd_insights(args) -> int:
    from .iolog import load_log
    from .profiler.insights import THRESHOLDS, find_insights

    changed = {}
    for item in args.threshold:
        name, _, value = item.partition("=")
        if name not in THRESHOLDS or not value:
            raise ValueError(
                f"unknown threshold {item!r}: use NAME=VALUE with NAME one of "
                f"{', '.join(THRESHOLDS)}"
            )
        changed[name] = float(value)
    log = load_log(args.log)
    findings = find_insights(log, changed)
    if args.format == "json":
        from .profiler.render import to_json

        text = to_json(log, findings, dict(THRESHOLDS, **changed))
    elif args.format == "html":
        from .profiler.html import to_html

        text = to_html(log, findings)
    else:
        from .profiler.render import to_text

        text = to_text(log, findings)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(
            f"molsift insights: {len(findings)} finding(s) written to {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0


IO_LOG_HELP = (
    "write molsift's own I/O counters (every file, every process: workers and MPI "
    "ranks too) to this log at the end; read it with molsift insights"
)


def _add_io_log(p: argparse.ArgumentParser) -> None:
    """--io-log is global (before the verb) and also taken after it."""
    p.add_argument("--io-log", metavar="FILE", default=argparse.SUPPRESS, help=IO_LOG_HELP)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="molsift",
        description="Store, search and screen ultra-large compound libraries.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"molsift {__version__}")
    parser.add_argument("--io-log", metavar="FILE", help=IO_LOG_HELP)
    verbs = parser.add_subparsers(dest="verb", metavar="<verb>", required=True)

    p = verbs.add_parser(
        "count",
        help="count records (not lines) of a SMILES, CSV or SDF file",
        description="Count records with all cores at memory speed. gzip/zstd "
        "input is counted by one streaming decoder.",
    )
    p.add_argument("file")
    p.add_argument("-j", "--threads", type=int, help="threads (default: all cores)")
    p.add_argument("--json", action="store_true", help="print the counters as JSON")
    _add_format_options(p)
    _add_io_log(p)
    p.set_defaults(func=_cmd_count)

    p = verbs.add_parser(
        "ingest",
        help="parse molecules with RDKit and write a store",
        description="Read every record in parallel (byte-range slabs per worker "
        "or MPI rank), compute canonical SMILES and fingerprints, write a store. "
        "Under mpirun each rank takes its share of the slabs.",
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="SMILES, CSV or SDF files (gzip/zstd ok)"
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="STORE", help="store directory to create"
    )
    p.add_argument(
        "-j", "--workers", type=int, help="worker processes (default: all cores; 1 per MPI rank)"
    )
    p.add_argument("--radius", type=int, default=2, help="Morgan radius (default 2)")
    p.add_argument("--bits", type=int, default=2048, help="fingerprint size in bits (default 2048)")
    p.add_argument(
        "--slabs",
        type=int,
        help="equal byte-range slabs per plain input (default: slabs that shrink towards "
        "the end so the workers finish together; 4 per rank under MPI)",
    )
    p.add_argument(
        "--chunk-records",
        type=int,
        default=10_000,
        help="records per task for gzip/zstd input (default 10000, fewer towards the end "
        "unless --slabs is given or under MPI)",
    )
    p.add_argument("--read-buffer", type=parse_size, help=_read_buffer_help())
    p.add_argument("--max-record-bytes", type=parse_size, help=_reader_defaults())
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing store (only a molsift store: anything else at the "
        "output is refused, never deleted)",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="do not build the column index for similarity search (search then "
        "builds it in memory at each start)",
    )
    p.add_argument(
        "--verify-count",
        action="store_true",
        help="count the inputs again independently (one more read) and fail if the "
        "ingest's count differs",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_format_options(p)
    _add_io_log(p)
    p.set_defaults(func=_cmd_ingest)

    p = verbs.add_parser(
        "search",
        help="exact Tanimoto similarity search (threshold and/or top-k)",
        description="Search a store with chemfp's conventions. Hits are exact "
        "(RDKit's scores), best first: score descending, then store position "
        "ascending. Output: TSV query_id, target_id, score, target_smiles.",
    )
    p.add_argument("store")
    p.add_argument(
        "-q", "--query", action="append", metavar="SMILES", help="a query SMILES (repeatable)"
    )
    p.add_argument("--queries", metavar="FILE", help="queries from a SMILES, CSV or SDF file")
    p.add_argument(
        "-t", "--threshold", type=tanimoto_threshold, help="minimum Tanimoto score (0..1)"
    )
    p.add_argument(
        "-k", "--k-nearest", type=k_nearest, help="the k best hits, k >= 1 (default 10 when no -t)"
    )
    p.add_argument("-j", "--threads", type=int, default=1, help="threads (default 1)")
    p.add_argument(
        "-o", "--output", help="write hits here (.parquet for Parquet) instead of stdout"
    )
    _add_io_log(p)
    p.set_defaults(func=_cmd_search)

    p = verbs.add_parser(
        "screen",
        help="screen a library: read, prepare, score, write one result CSV",
        description="Score every record of a SMILES, CSV or SDF library into one "
        "CSV (id, smiles, score columns), rejects in OUTPUT.rejects.tsv. Worker "
        "processes (or MPI ranks under mpirun) fill per-worker buffers that writer "
        "groups write to the shared file. A killed run is finished by --resume "
        "with every record exactly once.",
    )
    p.add_argument("library", help="SMILES, CSV or SDF file (gzip/zstd ok)")
    p.add_argument(
        "--scorer",
        required=True,
        metavar="NAME",
        help="filter, similarity, vina, or python:module:function",
    )
    p.add_argument("-o", "--output", required=True, metavar="CSV", help="result file")
    p.add_argument(
        "-j",
        "--workers",
        type=int,
        help="worker processes (default: all cores); under mpirun, worker processes per rank "
        "(default 1: the rank itself works)",
    )
    p.add_argument("--writers", type=int, default=1, metavar="P", help="writer groups (default 1)")
    p.add_argument(
        "--write-buffer",
        type=parse_size,
        default="1MiB",
        metavar="SIZE",
        help="accumulation buffer per worker or rank (default 1MiB)",
    )
    p.add_argument("--read-buffer", type=parse_size, metavar="SIZE", help=_read_buffer_help())
    p.add_argument("--max-record-bytes", type=parse_size, help=_reader_defaults())
    p.add_argument(
        "--slabs",
        type=int,
        help="equal byte-range tasks (default: tasks that shrink towards the end of the "
        "file so the workers finish together; 1 per worker under MPI)",
    )
    p.add_argument(
        "--chunk-records", type=int, default=2000, help="records per task for gzip/zstd input"
    )
    p.add_argument(
        "--standardize",
        action="store_true",
        help="standardize molecules (RDKit cleanup, largest fragment, neutralize) before scoring",
    )
    p.add_argument("--resume", action="store_true", help="finish a run that was killed or failed")
    p.add_argument("--overwrite", action="store_true", help="start again, replacing an earlier run")
    p.add_argument(
        "--run-dir", help="where the run keeps its journal and timeline (default OUTPUT.run)"
    )
    p.add_argument(
        "--fsync",
        action="store_true",
        help="sync each write before committing it (survives power loss, not only kills)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line, no summary")
    p.add_argument("--json", action="store_true", help="print the run report as JSON")
    _add_format_options(p)
    from .scorers import BUILTIN, scorer_class

    for name in BUILTIN:
        try:
            scorer_class(name).add_arguments(p)
        except ImportError:  # e.g. vina not installed: its options are not offered
            pass
    _add_io_log(p)
    p.set_defaults(func=_cmd_screen)

    p = verbs.add_parser(
        "report",
        help="draw a screening run's timeline (PNG) and totals",
        description="Per-rank throughput over time with write events marked, "
        "plus totals (records/s, time in read, score, write, wait).",
    )
    p.add_argument("run_dir", help="the run directory (OUTPUT.run)")
    p.add_argument("-o", "--output", help="PNG to write (default RUN_DIR/report.png)")
    _add_io_log(p)
    p.set_defaults(func=_cmd_report)

    p = verbs.add_parser("index", help="(re)build a store's column index for similarity search")
    p.add_argument("store")
    _add_io_log(p)
    p.set_defaults(func=_cmd_index)

    p = verbs.add_parser(
        "info",
        help="show what is in a store",
        description="Check a store (manifest, sizes, checksums) and show it.",
    )
    p.add_argument("store")
    p.add_argument("-n", "--head", type=int, default=5, help="molecules to show (default 5)")
    p.add_argument(
        "--no-verify", action="store_true", help="skip the checksums (sizes still checked)"
    )
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    _add_io_log(p)
    p.set_defaults(func=_cmd_info)

    p = verbs.add_parser(
        "profile",
        help="run any program under the I/O tracer, write its I/O log",
        usage="molsift profile [-o LOG] [--keep-process-logs] -- CMD [ARGS ...]",
        description="Run CMD with the LD_PRELOAD I/O tracer: it and every process it "
        "starts (fork, exec, MPI ranks) count their POSIX and STDIO calls per file. "
        "The per-process logs are merged into LOG (docs/io-log-format.md). Exits "
        "with CMD's exit status.",
    )
    p.add_argument("-o", "--output", metavar="LOG", help="log to write (default: CMD.iolog.json)")
    p.add_argument(
        "--keep-process-logs",
        action="store_true",
        help="also keep the per-process logs, in LOG.processes/",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="the program and its arguments, after --",
    )
    p.set_defaults(func=_cmd_profile)

    p = verbs.add_parser(
        "insights",
        help="findings in plain words from an I/O log (molsift or Darshan)",
        description="Read a molsift I/O log or a Darshan log and report what slows "
        "the I/O: severity, file, numbers, recommendation. Thresholds: docs/insights.md.",
    )
    p.add_argument("log", metavar="LOG", help="a log from molsift profile, or a *.darshan file")
    p.add_argument(
        "--format",
        choices=["text", "json", "html"],
        default="text",
        help="text (default), json, or html with timeline and size histograms",
    )
    p.add_argument("-o", "--output", help="write here instead of stdout")
    p.add_argument(
        "-t",
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a threshold, e.g. -t read_amplification=2 (repeatable)",
    )
    _add_io_log(p)
    p.set_defaults(func=_cmd_insights)
    return parser


def main(argv: list[str] | None = None) -> int:
    import time

    from ._core import MolsiftError

    args = build_parser().parse_args(argv)
    if argv is None and args.func in (_cmd_ingest, _cmd_screen):
        from . import allocator

        allocator.reexec(sys.argv[1:])  # returns only when no restart was needed
    start = time.time()
    if args.io_log:
        from .iostats import collect_from_workers

        collect_from_workers()
    try:
        status = args.func(args)
        if args.io_log:
            _write_io_log(args, start, status)
        return status
    except (MolsiftError, ValueError) as exc:
        print(f"molsift: error: {exc}", file=sys.stderr)
        if args.io_log and not _under_mpi():  # ranks may not all get here: no gather
            _write_io_log(args, start, 2)
        return 2
    except KeyboardInterrupt:
        print("molsift: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except Exception:
        _abort_other_ranks()
        raise


def _under_mpi() -> bool:
    from .parallel import launched_under_mpi

    return launched_under_mpi()


def _write_io_log(args, start: float, status: int) -> None:
    """The log of this run (docs/io-log-format.md): this process's counters and those of its
    workers; under mpirun, every rank's, written by rank 0."""
    from .iostats import all_records, job_log, write_log

    comm = None
    if _under_mpi():
        from mpi4py import MPI

        comm = MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None
    records = all_records(comm)
    if records is None:  # not rank 0
        return
    write_log(job_log(f"molsift {args.verb}", records, start, returncode=status), args.io_log)
    print(
        f"molsift: I/O log of {len(records)} process(es) written to {args.io_log} "
        f"(read it with: molsift insights {args.io_log})",
        file=sys.stderr,
    )


def _abort_other_ranks() -> None:
    """An unexpected error on one MPI rank must not leave the others waiting forever."""
    from .parallel import launched_under_mpi

    if not launched_under_mpi():
        return
    import traceback

    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_size() > 1:
        traceback.print_exc()
        sys.stderr.write(f"molsift: rank {MPI.COMM_WORLD.Get_rank()} failed; aborting the job\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
