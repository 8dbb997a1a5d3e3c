"""Findings as text (for people) and JSON (for programs); `summary` is the run in a few numbers,
read from the same records the rules read."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from typing import Any

from ..iolog import IoLog
from ..wording import plural
from .insights import Finding, _fmt_bytes


def summary(log: IoLog) -> dict[str, Any]:
    data = [r for r in log.records if r.module in ("POSIX", "STDIO")]
    return {
        "log": log.source,
        "kind": log.kind,
        "command": log.job.get("command") or log.job.get("exe"),
        "processes": log.nprocs,
        "ranks": len(log.ranks),
        "files": len({r.file for r in data}),
        "bytes_read": sum(r.c("BYTES_READ") for r in data),
        "bytes_written": sum(r.c("BYTES_WRITTEN") for r in data),
        "opens": sum(r.c("OPENS") for r in data),
        "stats": sum(r.c("STATS") for r in data),
        "io_seconds": sum(
            r.f("F_READ_TIME") + r.f("F_WRITE_TIME") + r.f("F_META_TIME") for r in data
        ),
        "wall_seconds": log.job.get("wall_seconds") or log.job.get("run_time"),
    }


def to_json(log: IoLog, findings: list[Finding], thresholds: dict[str, float]) -> str:
    return json.dumps(
        {
            "summary": summary(log),
            "thresholds": thresholds,
            "findings": [asdict(f) for f in findings],
        },
        indent=2,
        default=str,
    )


def to_text(log: IoLog, findings: list[Finding]) -> str:
    s = summary(log)
    cmd = s["command"]
    lines = [
        f"{s['log']}: {s['kind']} I/O log"
        + (f" of `{' '.join(cmd)}`" if isinstance(cmd, list) else f" of {cmd}" if cmd else ""),
        f"  {plural(s['processes'], 'process', 'processes')}, {plural(s['ranks'], 'rank')}, "
        f"{plural(s['files'], 'file')}; "
        f"{_fmt_bytes(s['bytes_read'])} read, {_fmt_bytes(s['bytes_written'])} written, "
        f"{plural(s['opens'], 'open')}, {plural(s['stats'], 'stat')}, "
        f"{s['io_seconds']:.3f} s in I/O calls",
        "",
    ]
    if not findings:
        lines.append("No findings: no threshold was crossed (see docs/insights.md).")
    for f in findings:
        head = f"{f.severity:<4}  {f.code} {f.title}" + (f": {f.file}" if f.file else "")
        lines.append(head)
        lines += textwrap.wrap(f.message, 96, initial_indent="      ", subsequent_indent="      ")
        lines += textwrap.wrap(
            "Recommendation: " + f.recommendation,
            96,
            initial_indent="      ",
            subsequent_indent="      ",
        )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
