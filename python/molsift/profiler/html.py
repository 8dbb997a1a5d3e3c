"""Findings as one self-contained HTML page: the summary, the findings, and pictures (matplotlib
PNGs embedded as base64) of the I/O timeline per rank and of the request-size histograms."""

from __future__ import annotations

import base64
import html
import io
import os

from ..iolog import SIZE_BINS, IoLog
from .insights import Finding, _fmt_bytes
from .render import summary

COLORS = {"HIGH": "#c0392b", "WARN": "#d68910", "INFO": "#2471a3"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(
            "molsift insights --format html needs matplotlib (pip install matplotlib)"
        ) from None
    return plt


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    _pyplot().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _row_label(r) -> str:
    p = r.process
    if p.rank is not None and p.rank >= 0:
        return f"rank {p.rank}"
    if p.rank == -1:
        return "all ranks"
    return f"{os.path.basename(p.exe) or 'pid'} {p.pid}"


def timeline_png(log: IoLog, columns: int = 120) -> str:
    """Bytes moved per row (rank or process) over the run: molsift logs from their time
    histograms, Darshan logs from each record's first and last read/write time."""
    plt = _pyplot()
    import numpy as np

    recs = [r for r in log.records if r.module in ("POSIX", "STDIO")]
    rows = sorted(
        {_row_label(r) for r in recs},
        key=lambda s: (s.split(" ")[0], int(s.split(" ")[-1]) if s.split(" ")[-1].isdigit() else 0),
    )[:96]
    index = {label: i for i, label in enumerate(rows)}
    t0 = log.start_time
    end = max(
        [p.start_time + p.wall_seconds for p in log.processes]
        + [
            r.process.start_time + r.f(k)
            for r in recs
            for k in ("F_READ_END_TIMESTAMP", "F_WRITE_END_TIMESTAMP")
        ]
        + [t0 + 1e-3]
    )
    width = (end - t0) / columns
    grid = np.zeros((max(1, len(rows)), columns))
    for r in recs:
        row = index.get(_row_label(r))
        if row is None:
            continue
        w = r.process.heatmap_bin_seconds
        if w > 0:
            for bins in (r.heat_read, r.heat_write):
                for b, n in enumerate(bins):
                    mid = (b * w + min((b + 1) * w, max(r.process.wall_seconds, b * w))) / 2
                    col = int(
                        (r.process.start_time + mid - t0) / width
                    )  # bin middle, within the run
                    grid[row, min(max(col, 0), columns - 1)] += n
            continue
        for op in ("READ", "WRITE"):  # Darshan: spread the bytes over the first..last op interval
            n = r.c(f"BYTES_{'READ' if op == 'READ' else 'WRITTEN'}")
            a, b = r.f(f"F_{op}_START_TIMESTAMP"), r.f(f"F_{op}_END_TIMESTAMP")
            if n and b >= a:
                c0 = min(int((r.process.start_time + a - t0) / width), columns - 1)
                c1 = min(int((r.process.start_time + b - t0) / width), columns - 1)
                grid[row, c0 : c1 + 1] += n / (c1 - c0 + 1)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.22 * len(rows)))
    im = ax.imshow(
        grid / (1 << 20),
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        extent=(0, end - t0, len(rows) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.set_xlabel("seconds since the run started")
    ax.set_title("I/O timeline: MiB read + written")
    fig.colorbar(im, ax=ax, label="MiB")
    return _png(fig)


def sizes_png(log: IoLog) -> str:
    """Darshan's 10-bin request-size histograms of POSIX reads and writes."""
    plt = _pyplot()
    posix = [r for r in log.records if r.module == "POSIX"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, op in zip(axes, ("READ", "WRITE")):
        counts = [sum(r.sizes(op)[i] for r in posix) for i in range(len(SIZE_BINS))]
        ax.bar(range(len(SIZE_BINS)), counts, color="#2471a3" if op == "READ" else "#c0392b")
        ax.set_xticks(range(len(SIZE_BINS)))
        ax.set_xticklabels([b.replace("_", "-") for b in SIZE_BINS], rotation=45, fontsize=7)
        ax.set_title(f"POSIX {op.lower()} requests by size (bytes)")
        if any(counts):
            ax.set_yscale("log")
    axes[0].set_ylabel("requests")
    return _png(fig)


STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto}
th{text-align:left;padding-right:1em} img{max-width:100%}
.f{border-left:6px solid;padding:.2em 1em;margin:1em 0;background:#f8f8f8}"""


def _finding_html(f: Finding) -> str:
    esc, color = html.escape, COLORS[f.severity]
    where = f" &mdash; <code>{esc(f.file)}</code>" if f.file else ""
    return (
        f"<div class='f' style='border-color:{color}'><b style='color:{color}'>{f.severity}</b> "
        f"{esc(f.code)} <b>{esc(f.title)}</b>{where}<p>{esc(f.message)}</p>"
        f"<p><i>Recommendation:</i> {esc(f.recommendation)}</p></div>"
    )


def to_html(log: IoLog, findings: list[Finding]) -> str:
    s: dict = summary(log)
    esc = html.escape
    items = "".join(map(_finding_html, findings)) or "<p>No findings: no threshold was crossed.</p>"
    facts = "".join(f"<tr><th>{esc(k)}</th><td>{esc(_fact(k, v))}</td></tr>" for k, v in s.items())
    png = "<img alt='{}' src='data:image/png;base64,{}'>"
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>molsift insights: {esc(s["log"])}</title><style>{STYLE}</style></head>
<body><h1>molsift insights</h1><table>{facts}</table>
<h2>Findings ({len(findings)})</h2>{items}
<h2>Timeline</h2>{png.format("I/O timeline", timeline_png(log))}
<h2>Request sizes</h2>{png.format("request size histograms", sizes_png(log))}
</body></html>
"""


def _fact(key: str, value) -> str:
    if key.startswith("bytes") and isinstance(value, int):
        return _fmt_bytes(value)
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
