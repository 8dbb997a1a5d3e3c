"""Darshan logs in: `load_darshan(PATH)` reads a *.darshan file with pydarshan (`pip install
darshan`) into the same `IoLog` as molsift's own logs, so every rule applies to it."""

from __future__ import annotations

from typing import Dict, List

from .log import IoLog, IoLogError, Process, Record

PREFIXES = {"POSIX": "POSIX_", "STDIO": "STDIO_", "MPI-IO": "MPIIO_"}


def load_darshan(path: str) -> IoLog:
    try:
        import darshan
    except ImportError:
        raise IoLogError(f"{path}: reading Darshan logs needs pydarshan (pip install darshan)") from None
    report = darshan.DarshanReport()
    try:
        report.open(path, read_all=True)
    except Exception as exc:  # pydarshan raises RuntimeError and friends from C
        if report.log is not None and not report.log.get("handle"):
            report.log = None  # else pydarshan's destructor closes a NULL handle and aborts
        raise IoLogError(f"{path}: corrupt or unreadable Darshan log ({exc})") from None
    try:
        return _to_iolog(report, path)
    finally:
        report._cleanup()


def _to_iolog(report, path: str) -> IoLog:
    job = report.metadata.get("job", {})
    start = float(job.get("start_time_sec", 0)) + float(job.get("start_time_nsec", 0)) * 1e-9
    processes: Dict[int, Process] = {}
    records: List[Record] = []
    names = report.name_records
    for module, prefix in PREFIXES.items():
        if module not in report.records:
            continue
        frames = report.records[module].to_df()
        counters, fcounters = frames["counters"], frames.get("fcounters")
        fcounter_rows = fcounters.to_dict("records") if fcounters is not None else [{}] * len(counters)
        for row, frow in zip(counters.to_dict("records"), fcounter_rows):
            rank = int(row.pop("rank"))
            file = names.get(int(row.pop("id")), "<unknown>")
            frow.pop("rank", None)
            frow.pop("id", None)
            proc = processes.setdefault(rank, Process(pid=None, rank=rank, exe=report.metadata.get("exe", ""),
                                                      start_time=start))
            c = {k[len(prefix):]: int(v) for k, v in row.items() if k.startswith(prefix)}
            f = {k[len(prefix):]: float(v) for k, v in frow.items() if k.startswith(prefix)}
            size = None
            if c.get("BYTES_READ") or c.get("BYTES_WRITTEN"):  # an estimate: the last byte touched
                size = max(c.get("MAX_BYTE_READ", 0), c.get("MAX_BYTE_WRITTEN", 0)) + 1
            records.append(Record(module=module, file=file, process=proc, counters=c, fcounters=f,
                                  file_size=size))
    info = {"tool": "darshan", "exe": report.metadata.get("exe", ""), "nprocs": job.get("nprocs"),
            "run_time": job.get("run_time"), "jobid": job.get("jobid"), "start_time": start,
            "darshan_version": job.get("metadata", {}).get("lib_ver")}
    return IoLog(source=path, kind="darshan", job=info, processes=list(processes.values()),
                 records=records)
