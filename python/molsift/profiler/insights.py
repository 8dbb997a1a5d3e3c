"""Findings: the rules that turn an `IoLog` into plain-word `Finding`s (severity, file, numbers,
recommendation). Drishti's triggers with Drishti's thresholds, plus the ones Drishti lacks
(redundant opens, stat storms, read amplification, tiny writes, writer-group imbalance).
Every threshold is in THRESHOLDS and documented in docs/insights.md."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from ..iolog import SIZE_BIN_EDGES, SIZE_BINS, IoLog, Record
from ..wording import plural

MIB = 1 << 20
THRESHOLDS: dict[str, float] = {
    # Drishti's (drishti/includes/config.py), same names
    "small_bytes": MIB,  # requests up to this size are small (size bins up to it: 0..100K_1M)
    "small_requests": 0.1,  # share of reads (writes) that are small ...
    "small_requests_absolute": 1000,  # ... and at least this many
    "misaligned_requests": 0.1,  # share of POSIX requests not aligned (memory or file)
    "random_operations": 0.2,  # share of reads (writes) neither sequential nor consecutive ...
    "random_operations_absolute": 1000,  # ... and at least this many
    "imbalance_operations": 0.1,  # |reads - writes| / all (INFO: read or write intensive)
    "imbalance_size": 0.3,  # (max - min) / max bytes over ranks
    "imbalance_stragglers": 0.15,  # (slowest - fastest) / slowest I/O time on a shared file
    "metadata_time_rank": 30.0,  # seconds of metadata time on one rank
    "interface_stdio": 0.1,  # share of bytes moved through STDIO
    "collective_operations": 0.5,  # share of MPI-IO requests that are independent ...
    "collective_operations_absolute": 1000,  # ... and at least this many
    # ours: floors that keep tiny runs quiet, and the rules Drishti lacks
    "misaligned_requests_absolute": 1000,  # at least this many POSIX requests before "misaligned"
    "min_bytes": MIB,  # byte-ratio rules need at least this many bytes
    "stragglers_min_seconds": 1.0,  # the slowest rank spent at least this long on the file
    "redundant_opens": 0.5,  # share of a file's opens that read or wrote nothing ...
    "redundant_opens_absolute": 10,  # ... and at least this many
    "stat_storm_file": 100,  # stats of one file ...
    "stat_storm_ratio": 2.0,  # ... and more than this many per open, read or write
    "stat_storm_job": 10000,  # stat calls (including failed ones) in the whole run
    "read_amplification": 1.5,  # bytes read / file size
    "read_amplification_high": 4.0,  # ... HIGH from here
    "tiny_write_bytes": 1024,  # POSIX writes up to this size are tiny (bins up to it: 0..100_1K)
    "tiny_writes": 1000,  # tiny writes to one file ...
    "tiny_writes_share": 0.5,  # ... and this share of its writes
    "writer_group_imbalance": 0.3,  # (max - min) / max seconds over a molsift run's writer groups
    "high_count": 1000,  # redundant opens / tiny writes from here are HIGH
}
SEVERITY_ORDER = {"HIGH": 0, "WARN": 1, "INFO": 2}


def bins_up_to(limit: float) -> tuple[int, int]:
    """(how many request-size bins hold only requests of at most `limit` bytes, the largest
    size they hold): what `small_bytes` and `tiny_write_bytes` count. The logs keep sizes in
    fixed bins (SIZE_BIN_EDGES: 100, 1K, 10K, ...), so a limit between two edges counts up to
    the lower one (`-t small_bytes=65536`: requests up to 10 KiB), and one under 100 bytes
    counts none (`-t small_bytes=0` counted the default bins and said "at most 0 bytes")."""
    n = sum(1 for edge in SIZE_BIN_EDGES if edge <= limit)
    return n, SIZE_BIN_EDGES[n - 1] if n else 0


def _at_most(name: str, limit: float, bound: int) -> str:
    """'at most 1.0 MiB', with the threshold given when the bins end below it."""
    if bound == limit:
        return f"at most {_fmt_bytes(bound)}"
    return (
        f"at most {_fmt_bytes(bound)} (the largest request-size bin edge within "
        f"{name} = {limit:,.0f} bytes)"
    )


@dataclass
class Finding:
    """One diagnosis: what, where, how bad, the numbers behind it and what to do."""

    code: str
    severity: str
    title: str
    message: str
    recommendation: str
    file: str | None = None
    numbers: dict[str, Any] = field(default_factory=dict)


def find_insights(log: IoLog, thresholds: dict[str, float] | None = None) -> list[Finding]:
    """Every finding of every rule, most severe first. Any threshold may be 0 (`-t NAME=0`):
    no rule divides by a count or a time that is 0 (`-t tiny_writes=0` on a file only read,
    `-t min_bytes=0` on a run that moved no byte were ZeroDivisionError's traceback), nor
    reports none of what it counts ("0 stat/access calls", "0 of those opens")."""
    th = dict(THRESHOLDS, **(thresholds or {}))
    view = _View(log)
    found = [f for rule in RULES for f in rule(view, th)]
    return sorted(found, key=lambda f: (SEVERITY_ORDER[f.severity], f.code, f.file or ""))


# ---- the log seen per file and per rank ----
class _View:
    def __init__(self, log: IoLog):
        self.log = log
        self.posix = [r for r in log.records if r.module == "POSIX"]
        self.stdio = [r for r in log.records if r.module == "STDIO"]
        self.mpiio = [r for r in log.records if r.module == "MPI-IO"]
        self.by_file: dict[str, list[Record]] = defaultdict(list)
        for r in log.records:  # files, not the standard streams (<STDIN>, <STDOUT>, <STDERR>)
            if r.module in ("POSIX", "STDIO") and not r.file.startswith("<"):
                self.by_file[r.file].append(r)

    def total(self, records: list[Record], name: str) -> int:
        return sum(r.c(name) for r in records)


def _per_who(records: list[Record], value: Callable[[Record], float]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for r in records:
        out[r.process.label] += value(r)
    return dict(out)


def _fmt_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n}"


def _list(counts: dict[str, float], limit: int = 8) -> str:
    items = sorted(counts.items(), key=lambda kv: _who_key(kv[0]))
    text = ", ".join(f"{k}: {v:,.0f}" for k, v in items[:limit])
    return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def _who_key(label: str):
    kind, _, num = label.partition(" ")
    return (kind, int(num)) if num.isdigit() else (kind, 0)


def _data_ops(r: Record) -> int:
    return r.c("READS") + r.c("WRITES") + r.c("MMAPS")


def _name(path: str) -> str:
    return os.path.basename(path) or path


# ---- Drishti's triggers ----
def rule_stdio(v: _View, th) -> list[Finding]:
    posix = v.total(v.posix, "BYTES_READ") + v.total(v.posix, "BYTES_WRITTEN")
    stdio = v.total(v.stdio, "BYTES_READ") + v.total(v.stdio, "BYTES_WRITTEN")
    total = posix + stdio
    if not total or total < th["min_bytes"] or stdio / total <= th["interface_stdio"]:
        return []
    return [
        Finding(
            "S01",
            "HIGH",
            "STDIO heavy",
            f"{stdio / total:.0%} of the bytes ({_fmt_bytes(stdio)} of {_fmt_bytes(total)}) "
            "went through STDIO (fread/fwrite/fprintf), a buffered, single-stream interface.",
            "Move bulk data to POSIX reads/writes with large requests, or to MPI-IO "
            "(collective) when many ranks share the file.",
            numbers={"stdio_bytes": stdio, "total_bytes": total},
        )
    ]


def rule_small_requests(v: _View, th) -> list[Finding]:
    out = []
    bins, bound = bins_up_to(th["small_bytes"])
    for op, verb in (("READ", "read"), ("WRITE", "write")):
        total = v.total(v.posix, op + "S")
        small = sum(sum(r.sizes(op)[:bins]) for r in v.posix)
        if (
            not total
            or small / total <= th["small_requests"]
            or small <= th["small_requests_absolute"]
            or not small
        ):
            continue
        per_file = defaultdict(int)
        for r in v.posix:
            per_file[r.file] += sum(r.sizes(op)[:bins])
        top = sorted(per_file.items(), key=lambda kv: -kv[1])[:3]
        where = "; ".join(f"{n:,} to {p}" for p, n in top if n)
        out.append(
            Finding(
                f"P0{5 if op == 'READ' else 6}",
                "HIGH",
                f"small {verb} requests",
                f"{small:,} {verb} requests ({small / total:.0%} of {total:,}) were "
                f"{_at_most('small_bytes', th['small_bytes'], bound)}. Most of them: {where}.",
                f"Buffer {verb}s into larger, contiguous requests (MiBs, not KiBs); with "
                "many ranks, MPI-IO collective calls aggregate small requests.",
                file=top[0][0] if len(top) == 1 else None,
                numbers={"small": small, "total": total, "by_file": dict(top), "at_most": bound},
            )
        )
    return out


def rule_misaligned(v: _View, th) -> list[Finding]:
    ops = v.total(v.posix, "READS") + v.total(v.posix, "WRITES")
    out = []
    if not ops or ops < th["misaligned_requests_absolute"]:
        return out
    for counter, what, code in (
        ("MEM_NOT_ALIGNED", "memory buffers", "P07"),
        ("FILE_NOT_ALIGNED", "file offsets", "P08"),
    ):
        n = v.total(v.posix, counter)
        if n / ops > th["misaligned_requests"]:
            align = max(
                (r.c(counter.replace("NOT_ALIGNED", "ALIGNMENT")) for r in v.posix), default=0
            )
            out.append(
                Finding(
                    code,
                    "HIGH" if code == "P08" else "WARN",
                    f"misaligned {what}",
                    f"{n:,} of {ops:,} POSIX requests ({n / ops:.0%}) had {what} not "
                    f"aligned to {align:,} bytes.",
                    "Align requests to the file system block (or stripe) size and "
                    "buffers to at least 8 bytes (posix_memalign).",
                    numbers={"misaligned": n, "requests": ops, "alignment": align},
                )
            )
    return out


def rule_random(v: _View, th) -> list[Finding]:
    out = []
    for op, verb, code in (("READ", "read", "P11"), ("WRITE", "write", "P13")):
        total = v.total(v.posix, op + "S")
        random = total - v.total(v.posix, f"SEQ_{op}S")
        if (
            not total
            or random / total <= th["random_operations"]
            or random <= th["random_operations_absolute"]
        ):
            continue
        out.append(
            Finding(
                code,
                "HIGH",
                f"random {verb}s",
                f"{random:,} of {total:,} POSIX {verb}s ({random / total:.0%}) went "
                "backwards in the file (neither sequential nor consecutive).",
                f"Sort or batch the {verb}s by offset, or read the region once into "
                "memory; on parallel file systems random access defeats read-ahead.",
                numbers={"random": random, "total": total},
            )
        )
    return out


def rule_read_write_intensive(v: _View, th) -> list[Finding]:
    out = []
    for what, rd, wr in (
        ("operations", "READS", "WRITES"),
        ("bytes", "BYTES_READ", "BYTES_WRITTEN"),
    ):
        r, w = v.total(v.posix, rd), v.total(v.posix, wr)
        if not r + w or abs(r - w) / (r + w) <= th["imbalance_operations"]:
            continue
        if what == "bytes" and r + w < th["min_bytes"]:
            continue
        kind = "read" if r > w else "write"
        fmt = _fmt_bytes if what == "bytes" else (lambda n: f"{n:,}")
        out.append(
            Finding(
                "P01" if what == "operations" else "P03",
                "INFO",
                f"{kind} intensive ({what})",
                f"POSIX {what}: {fmt(r)} read vs {fmt(w)} written "
                f"({max(r, w) / (r + w):.0%} {kind}s).",
                f"Tune for {kind}s: "
                + (
                    "read-ahead, caching, larger read buffers."
                    if kind == "read"
                    else "write buffering, fewer fsyncs, aggregation."
                ),
                numbers={"read": r, "written": w},
            )
        )
    return out


def _rank_records(v: _View) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = defaultdict(list)
    for r in v.posix + v.stdio:
        if r.rank is not None and r.rank >= 0:
            out[r.rank].append(r)
    return out


def rule_metadata_time(v: _View, th) -> list[Finding]:
    per_rank = {
        rank: sum(r.f("F_META_TIME") for r in recs) for rank, recs in _rank_records(v).items()
    }
    who: tuple[str, str | None] = ("rank", None)
    if not per_rank:  # no ranks: the run's processes count one by one
        per_rank = _per_who(v.posix + v.stdio, lambda r: r.f("F_META_TIME"))
        who = ("process", "processes")
    slow = {k: t for k, t in per_rank.items() if t > th["metadata_time_rank"]}
    if not slow:
        return []
    worst = max(slow.values())
    return [
        Finding(
            "P17",
            "HIGH",
            "metadata time",
            f"{plural(len(slow), *who)} spent more than {th['metadata_time_rank']:.0f} s "
            f"in metadata calls (open, stat, seek, close); the worst {worst:.1f} s.",
            "Open files once and keep them open, cache stat results, and avoid "
            "per-step open/close of shared files.",
            numbers={"seconds": {str(k): t for k, t in slow.items()}},
        )
    ]


def rule_rank_imbalance(v: _View, th) -> list[Finding]:
    ranks = _rank_records(v)
    if len(ranks) < 2:
        return []
    out = []
    for op, name in (("BYTES_WRITTEN", "written"), ("BYTES_READ", "read")):
        per = {k: sum(r.c(op) for r in recs) for k, recs in ranks.items()}
        hi, lo = max(per.values()), min(per.values())
        if not hi or hi < th["min_bytes"] or (hi - lo) / hi <= th["imbalance_size"]:
            continue
        out.append(
            Finding(
                "P21" if op == "BYTES_WRITTEN" else "P22",
                "WARN",
                f"rank imbalance (bytes {name})",
                f"Bytes {name} per rank range from {_fmt_bytes(lo)} (rank "
                f"{min(per, key=per.get)}) to {_fmt_bytes(hi)} (rank {max(per, key=per.get)}): "
                f"{(hi - lo) / hi:.0%} apart over {len(per)} ranks.",
                "Balance the data between ranks (equal slabs or dynamic work "
                "distribution) so no rank waits for the busiest one.",
                numbers={"bytes_per_rank": per},
            )
        )
    return out


def _shared_files(v: _View) -> dict[str, dict[int, list[Record]]]:
    """Files whose data was touched by two or more ranks: path -> rank -> records."""
    out: dict[str, dict[int, list[Record]]] = {}
    for path, recs in v.by_file.items():
        per: dict[int, list[Record]] = defaultdict(list)
        for r in recs:
            if r.rank is not None and r.rank >= 0 and _data_ops(r):
                per[r.rank].append(r)
        if len(per) >= 2:
            out[path] = per
    return out


def _io_time(r: Record) -> float:
    return r.f("F_READ_TIME") + r.f("F_WRITE_TIME") + r.f("F_META_TIME")


def rule_stragglers(v: _View, th) -> list[Finding]:
    out = []
    times = {
        path: {k: sum(_io_time(r) for r in rs) for k, rs in per.items()}
        for path, per in _shared_files(v).items()
    }
    for r in v.posix:  # Darshan's shared records carry the fastest and slowest rank themselves
        if r.rank == -1 and r.f("F_SLOWEST_RANK_TIME"):
            times[r.file] = {
                r.c("FASTEST_RANK"): r.f("F_FASTEST_RANK_TIME"),
                r.c("SLOWEST_RANK"): r.f("F_SLOWEST_RANK_TIME"),
            }
    for path, per in times.items():
        slow, fast = max(per.values()), min(per.values())
        if (
            slow <= 0
            or slow < th["stragglers_min_seconds"]
            or (slow - fast) / slow <= th["imbalance_stragglers"]
        ):
            continue
        out.append(
            Finding(
                "P19",
                "HIGH",
                "stragglers on a shared file",
                f"{_name(path)}: the slowest rank ({max(per, key=per.get)}) spent {slow:.2f} s "
                f"in I/O on it, the fastest ({min(per, key=per.get)}) {fast:.2f} s: "
                f"{(slow - fast) / slow:.0%} apart.",
                "Give every rank the same amount of the file, check for a slow node or "
                "storage target, and consider collective I/O.",
                file=path,
                numbers={"seconds_per_rank": per},
            )
        )
    return out


def rule_mpiio(v: _View, th) -> list[Finding]:
    if v.mpiio:
        out = []
        for op in ("READS", "WRITES"):
            indep = v.total(v.mpiio, f"INDEP_{op}")
            total = indep + v.total(v.mpiio, f"COLL_{op}")
            if (
                total
                and indep / total > th["collective_operations"]
                and indep > th["collective_operations_absolute"]
            ):
                verb = op[:-1].lower()
                out.append(
                    Finding(
                        "M02" if op == "READS" else "M03",
                        "HIGH",
                        f"no collective MPI-IO {verb}s",
                        f"{indep:,} of {total:,} MPI-IO {verb}s ({indep / total:.0%}) were "
                        "independent, not collective.",
                        f"Use collective calls (MPI_File_{verb}_all / _at_all) so MPI-IO "
                        "can aggregate requests across ranks.",
                        numbers={"independent": indep, "total": total},
                    )
                )
        return out
    shared = {
        path: per
        for path, per in _shared_files(v).items()  # data files, not config files
        if sum(r.c("BYTES_READ") + r.c("BYTES_WRITTEN") for rs in per.values() for r in rs)
        >= th["min_bytes"]
    }
    if not shared or (v.log.kind == "darshan" and v.log.nprocs < 2):
        return []
    path, per = max(shared.items(), key=lambda kv: len(kv[1]))
    seen = (
        "molsift profile traces POSIX and STDIO calls, not MPI-IO, so MPI-IO use cannot be "
        "ruled out; "
        if v.log.kind == "molsift"
        else "the log has no MPI-IO records; "
    )
    return [
        Finding(
            "M01",
            "INFO",
            "no collective MPI-IO",
            f"{plural(len(shared), 'file')} {'is' if len(shared) == 1 else 'are'} read or "
            "written by several ranks through POSIX "
            f"calls (e.g. {_name(path)} by {len(per)} ranks); {seen}independent POSIX "
            "requests from many ranks are not aggregated.",
            "For shared files, MPI-IO collective calls (MPI_File_read_at_all / "
            "write_at_all) let the library merge the ranks' requests into large ones.",
            file=path,
            numbers={"shared_files": len(shared), "ranks": len(per)},
        )
    ]


def _used_ops(r: Record) -> int:
    """Requests that make an open useful: data requests, and syncs (a file or a directory opened
    to fsync it, e.g. molsift's own work directories after a rename, is not opened in vain)."""
    return _data_ops(r) + r.c("FSYNCS") + r.c("FDSYNCS")


# ---- the findings Drishti lacks ----
def rule_redundant_opens(v: _View, th) -> list[Finding]:
    out = []
    for path, recs in v.by_file.items():
        opens = _per_who(recs, lambda r: r.c("OPENS"))
        data = _per_who(recs, _used_ops)
        total = sum(opens.values())
        idle = {k: n for k, n in opens.items() if n and not data.get(k)}
        redundant = sum(idle.values()) + sum(
            max(0.0, n - data[k]) for k, n in opens.items() if data.get(k)
        )
        if (
            not total
            or not redundant
            or redundant < th["redundant_opens_absolute"]
            or redundant / total < th["redundant_opens"]
        ):
            continue
        meta = sum(r.f("F_META_TIME") for r in recs)
        stats = sum(r.c("STATS") for r in recs)
        why = (
            f" {len(idle)} of the {len(opens)} ranks/processes that opened it "
            f"({_list(idle)}) never read or wrote it."
            if idle
            else f" It was opened more often than it was read or written "
            f"({sum(data.values()):,.0f} data requests)."
        )
        out.append(
            Finding(
                "R01",
                "HIGH" if redundant >= th["high_count"] else "WARN",
                "redundant opens",
                f"{_name(path)} was opened {total:,.0f} times (opens per rank: {_list(opens)}); "
                f"{redundant:,.0f} of those opens ({redundant / total:.0%}) read or wrote "
                f"nothing.{why} Open, stat and close calls on it took {meta:.3f} s "
                f"({stats:,} stats).",
                "Open the file once and keep it open; let only the rank(s) that write "
                "or read it open it (DL_POLY's HISTORY fix: 40,032 opens per node down "
                "to 1,251).",
                file=path,
                numbers={
                    "opens": total,
                    "redundant_opens": redundant,
                    "opens_per_rank": opens,
                    "data_ops_per_rank": data,
                    "idle_openers": sorted(idle, key=_who_key),
                    "meta_seconds": meta,
                },
            )
        )
    return out


def rule_stat_storm(v: _View, th) -> list[Finding]:
    out = []
    for path, recs in v.by_file.items():
        stats = sum(r.c("STATS") for r in recs)
        other = sum(r.c("OPENS") + r.c("READS") + r.c("WRITES") for r in recs)
        if stats < th["stat_storm_file"] or stats <= th["stat_storm_ratio"] * other:
            continue
        out.append(
            Finding(
                "R02",
                "WARN",
                "stat storm",
                f"{_name(path)} was stat'ed {stats:,} times (per rank: "
                f"{_list(_per_who(recs, lambda r: r.c('STATS')))}) against {other:,} opens, "
                f"reads and writes; metadata time {sum(r.f('F_META_TIME') for r in recs):.3f} s.",
                "Stat once and keep the result (or keep the file open and fstat it); "
                "on parallel file systems every stat is a metadata-server round trip.",
                file=path,
                numbers={"stats": stats, "opens_reads_writes": other},
            )
        )
    failed = sum(p.failed_stats for p in v.log.processes)
    total = v.total(v.posix, "STATS") + failed
    if total and total >= th["stat_storm_job"]:
        top = sorted(v.by_file.items(), key=lambda kv: -sum(r.c("STATS") for r in kv[1]))[:3]
        where = ", ".join(f"{_name(p)} ({sum(r.c('STATS') for r in rs):,})" for p, rs in top)
        out.append(
            Finding(
                "R02",
                "WARN",
                "stat storm (whole run)",
                f"The run made {total:,} stat/access calls, {failed:,} of them on paths "
                f"that did not exist. Most stat'ed: {where}.",
                "Cache metadata, check for existence once, and avoid polling with stat.",
                numbers={"stats": total, "failed": failed},
            )
        )
    return out


def rule_read_amplification(v: _View, th) -> list[Finding]:
    out = []
    for path, recs in v.by_file.items():
        size = max((r.file_size or 0 for r in recs), default=0)
        read = sum(r.c("BYTES_READ") for r in recs)
        if size <= 0 or read - size < th["min_bytes"] or read / size <= th["read_amplification"]:
            continue
        per = {k: b for k, b in _per_who(recs, lambda r: r.c("BYTES_READ")).items() if b}
        hist = [sum(r.sizes("READ")[i] for r in recs) for i in range(10)]
        common = SIZE_BINS[max(range(10), key=lambda i: hist[i])].replace("_", "-")
        largest = max(r.c("MAX_READ_TIME_SIZE") for r in recs)
        share = size / max(1, len(per))
        amp = read / size
        out.append(
            Finding(
                "R03",
                "HIGH" if amp >= th["read_amplification_high"] else "WARN",
                "read amplification",
                f"{_name(path)} ({_fmt_bytes(size)}) was read {amp:.1f}x over: "
                f"{_fmt_bytes(read)} in all, by {plural(len(per), 'reader')}, "
                f"{_fmt_bytes(read / max(1, len(per)))} each on average where an equal share "
                f"is {_fmt_bytes(share)}. Most reads were {common} bytes.",
                "Each reader should read only its share plus the end of its last record: "
                "keep the read buffer well below the share (e.g. 1 MiB, not 20 MiB) and stop "
                "at the slab end (Docker-HT read 15x its input with a 20 MiB buffer).",
                file=path,
                numbers={
                    "file_size": size,
                    "bytes_read": read,
                    "amplification": amp,
                    "readers": len(per),
                    "bytes_read_per_reader": per,
                    "read_size_histogram": hist,
                    "slowest_read_size": largest,
                },
            )
        )
    return out


def rule_tiny_writes(v: _View, th) -> list[Finding]:
    out = []
    by_file: dict[str, list[Record]] = defaultdict(list)
    for r in v.posix:
        by_file[r.file].append(r)
    bins, bound = bins_up_to(th["tiny_write_bytes"])
    for path, recs in by_file.items():
        writes = sum(r.c("WRITES") for r in recs)
        tiny = sum(sum(r.sizes("WRITE")[:bins]) for r in recs)
        if (
            not writes
            or not tiny
            or tiny < th["tiny_writes"]
            or tiny / writes < th["tiny_writes_share"]
        ):
            continue
        written = sum(r.c("BYTES_WRITTEN") for r in recs)
        secs = sum(r.f("F_WRITE_TIME") for r in recs)
        out.append(
            Finding(
                "R04",
                "HIGH" if tiny >= 100 * th["high_count"] else "WARN",
                "many tiny writes",
                f"{_name(path)} got {tiny:,} write calls of "
                f"{_at_most('tiny_write_bytes', th['tiny_write_bytes'], bound)} "
                f"({tiny / writes:.0%} of its {writes:,} "
                f"writes; {_fmt_bytes(written)} in all, {secs:.3f} s in write calls).",
                "Buffer the output (e.g. 1 MiB) and write it in large blocks, or hand the "
                "records to one writer thread that batches them.",
                file=path,
                numbers={
                    "tiny_writes": tiny,
                    "writes": writes,
                    "bytes_written": written,
                    "at_most": bound,
                },
            )
        )
    return out


def rule_writer_groups(v: _View, th) -> list[Finding]:
    """A molsift run (issue 4, item 2) records its writer groups in job.molsift.writer_groups:
    [{"group": name, "ranks": [..], "bytes": n, "seconds": s}]. Other logs have none."""
    groups = (v.log.job.get("molsift") or {}).get("writer_groups") or []
    secs = {str(g.get("group")): float(g.get("seconds", 0.0)) for g in groups}
    if len(secs) < 2 or max(secs.values()) <= 0:
        return []
    hi, lo = max(secs.values()), min(secs.values())
    if (hi - lo) / hi <= th["writer_group_imbalance"]:
        return []
    return [
        Finding(
            "R05",
            "WARN",
            "writer-group imbalance",
            f"Writer groups took from {lo:.2f} s (group {min(secs, key=secs.get)}) to "
            f"{hi:.2f} s (group {max(secs, key=secs.get)}): {(hi - lo) / hi:.0%} apart, so "
            "ranks of the faster groups sat idle.",
            "Make the groups equal in ranks and in bytes to write, or let writers take "
            "work from a shared queue.",
            numbers={"seconds_per_group": secs},
        )
    ]


RULES: list[Callable[[_View, dict[str, float]], list[Finding]]] = [
    rule_stdio,
    rule_small_requests,
    rule_misaligned,
    rule_random,
    rule_read_write_intensive,
    rule_metadata_time,
    rule_rank_imbalance,
    rule_stragglers,
    rule_mpiio,
    rule_redundant_opens,
    rule_stat_storm,
    rule_read_amplification,
    rule_tiny_writes,
    rule_writer_groups,
]
