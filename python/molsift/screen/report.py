"""`molsift report RUN_DIR`: reads a screening run's timeline (per-worker samples and per-writer
write events) and report, and draws one PNG in the manner of the Docker-HT paper's figures 6
and 7: throughput of every rank or worker over time with the writes marked, the writers' write
events as bars, queue depths, and the run's totals as text."""

from __future__ import annotations

import glob
import json
import math
import os
from collections import defaultdict

from ..iostats import open_counted, read_file
from ..wording import plural

WINDOW_S = 2.0  # moving-average window for records/s


def _is_number(value, whole: bool = False) -> bool:
    """A JSON number (not a bool, not NaN or infinite); `whole`: an integer."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or (not whole and math.isfinite(value))


def _json_text(value) -> str:
    """A JSON value as a one-line error shows it (null, "x", {...}), at most 40 characters."""
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    text = {"dict": "an object", "list": "a list"}.get(text, text)
    return text if len(text) <= 40 else text[:37] + "..."


def load_timeline(run_dir: str) -> tuple[dict[str, list[dict]], list[dict]]:
    """(samples by worker, write events) of the run's latest attempt; a ValueError naming the
    file and line of one that is not JSON, lacks a field the picture needs or holds a field
    that is not a number (`"t": "x"` was a TypeError's traceback), or naming the timeline when
    it holds neither a sample nor a write (empty files: was max()'s "arg is an empty
    sequence")."""
    paths = glob.glob(os.path.join(run_dir, "timeline", "g*-*.jsonl"))
    # an attempt's files: g<attempt>-worker<n>.jsonl ... (g1x-y.jsonl was int()'s ValueError)
    paths = [p for p in paths if os.path.basename(p)[1:].split("-")[0].isdigit()]
    if not paths:
        raise ValueError(f"{run_dir}: no timeline found (is this a molsift screen run directory?)")
    latest = max(int(os.path.basename(p)[1:].split("-")[0]) for p in paths)
    samples: dict[str, list[dict]] = defaultdict(list)
    writes: list[dict] = []
    for path in paths:
        name = os.path.basename(path)  # not the whole path: a run in /home/frank/ has no ranks
        if int(name[1:].split("-")[0]) != latest:
            continue
        with open_counted(path) as f:
            for n, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    continue  # torn by a kill
                try:
                    e = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{path}:{n}: not a timeline line ({exc})") from None
                kind = e.get("kind") if isinstance(e, dict) else None
                by = "rank" if "rank" in name else "worker"
                need = {"sample": ("t", "records", by), "write": ("start", "end", "writer")}
                missing = [k for k in need.get(kind, ()) if k not in e]  # was a KeyError
                if missing:
                    raise ValueError(f"{path}:{n}: not a timeline line (no {missing[0]!r})")
                whole = (by, "writer")  # ids: labels, colours and rows of the picture
                for key in (*need.get(kind, ()), "write_queue"):
                    if key in e and not _is_number(e[key], whole=key in whole):
                        what = "a whole number" if key in whole else "a number"
                        raise ValueError(
                            f"{path}:{n}: not a timeline line ({key!r} is {_json_text(e[key])}, "
                            f"not {what})"
                        )
                if kind == "sample":
                    samples[f"{by} {e[by]}"].append(e)
                elif kind == "write":
                    writes.append(e)
    if not samples and not writes:
        where = os.path.join(run_dir, "timeline")
        raise ValueError(
            f"{where}: the timeline holds no sample and no write event (its files are empty): "
            "nothing to draw"
        )
    return samples, writes


def moving_rate(samples: list[dict], window: float = WINDOW_S) -> tuple[list[float], list[float]]:
    """(times, records/s) with the rate averaged over the last `window` seconds."""
    samples = sorted(samples, key=lambda s: s["t"])
    ts, rates = [], []
    j = 0
    for i, s in enumerate(samples):
        while samples[j]["t"] < s["t"] - window and j < i:
            j += 1
        dt = s["t"] - samples[j]["t"]
        if i and dt > 0:
            ts.append(s["t"])
            rates.append((s["records"] - samples[j]["records"]) / dt)
    return ts, rates


def amplification_text(amplification: float | None) -> str:
    """A report's read amplification as printed ("1.0002x")."""
    if amplification is None:
        return "not counted (MOLSIFT_IOSTATS=0)"
    return f"{amplification:.4f}x"


def io_text(io: dict) -> str:
    """Two lines of a run's own I/O counters (report["io"], from RUN_DIR/io.json)."""
    return (
        f"I/O of {plural(io['processes'], 'process', 'processes')}: read {io['bytes_read']:,} B in "
        f"{io['reads']:,} requests, wrote {io['bytes_written']:,} B in {io['writes']:,}, "
        f"{io['opens']:,} opens\nI/O time: read {io['read_s']:.2f} s, write "
        f"{io['write_s']:.2f} s, metadata {io['meta_s']:.2f} s"
    )


def totals_text(report: dict) -> str:
    t = report["time"]
    attempt = report["records_this_attempt"]
    rate = attempt / report["seconds"] if report["seconds"] else 0.0
    return (
        f"{report['records_in']:,} records = {report['rows']:,} rows"
        f" + {report['rejected']:,} rejected | "
        f"{rate:,.0f} records/s on {plural(report['workers'], 'worker')} ({report['executor']}), "
        f"{plural(report['writers'], 'writer group')} {report['groups']}\n"
        f"worker time: prepare {t['prepare_s']:.1f} s, score {t['score_s']:.1f} s, read wait "
        f"{t['read_wait_s']:.1f} s, write wait {t['write_wait_s']:.2f} s "
        f"({100 * report['write_wait_share']:.2f}%) | writers busy {report['write_s']:.2f} s | "
        f"read amplification {amplification_text(report['read_amplification'])}"
        + (f"\n{io_text(report['io'])}" if report.get("io") else "")
    )


def finished_report(run_dir: str) -> str:
    """The path of a finished run's report.json; a ValueError saying what `run_dir` is
    otherwise: missing, not a screening run directory, or a run that has not finished."""
    if not os.path.isdir(run_dir):
        what = "not a directory" if os.path.exists(run_dir) else "no such directory"
        raise ValueError(f"{run_dir}: {what}; give a screening run's directory (OUTPUT.run)")
    if not os.path.exists(os.path.join(run_dir, "plan.json")):  # every run writes it first
        raise ValueError(
            f"{run_dir}: not a screening run directory (no plan.json): `molsift screen LIB "
            "-o OUTPUT` keeps its run in OUTPUT.run, or in --run-dir"
        )
    report_path = os.path.join(run_dir, "report.json")
    if not os.path.exists(report_path):
        raise ValueError(
            f"{run_dir}: no report.json (the run has not finished; finish it with --resume)"
        )
    return report_path


#: what the picture and its totals read from report.json
REPORT_KEYS = ("time", "records_this_attempt", "seconds", "records_in", "rows", "rejected",
               "workers", "executor", "writers", "groups", "write_s", "write_wait_share",
               "read_amplification")  # fmt: skip


def read_report(run_dir: str) -> dict:
    """A finished run's report.json; a ValueError naming it when it is not JSON or lacks what
    `molsift report` shows (was Python's JSON message naming no file, or a KeyError)."""
    path = finished_report(run_dir)
    try:
        report = json.loads(read_file(path))
    except ValueError as exc:
        raise ValueError(f"{path}: not a run report (not JSON: {exc})") from None
    missing = [k for k in REPORT_KEYS if not isinstance(report, dict) or k not in report]
    if missing:
        raise ValueError(f"{path}: not a run report of this molsift (no {missing[0]!r})")
    wrong = _wrong_field(report)
    if wrong:
        raise ValueError(f"{path}: not a run report of this molsift ({wrong})")
    return report


#: the numbers of report.json the totals print ("time" and "io" are objects of REPORT_TIME's
#: and REPORT_IO's)
REPORT_NUMBERS = ("records_this_attempt", "records_in", "rows", "rejected", "workers", "writers",
                  "seconds", "write_s", "write_wait_share")  # fmt: skip
REPORT_TIME = ("prepare_s", "score_s", "read_wait_s", "write_wait_s")
REPORT_IO = ("processes", "bytes_read", "reads", "bytes_written", "writes", "opens", "read_s",
             "write_s", "meta_s")  # fmt: skip


def _wrong_field(report: dict) -> str | None:
    """What is wrong with a report.json that has every key (`"time": null` was a TypeError's
    traceback): 'KEY is VALUE, not WHAT', or None."""
    if not isinstance(report["time"], dict):
        return f"'time' is {_json_text(report['time'])}, not an object of times"
    if not isinstance(report["executor"], str):
        return f"'executor' is {_json_text(report['executor'])}, not a name"
    numbers = [(k, report[k]) for k in REPORT_NUMBERS]
    numbers += [(f"time.{k}", report["time"].get(k)) for k in REPORT_TIME]
    if report["read_amplification"] is not None:  # None: not counted (MOLSIFT_IOSTATS=0)
        numbers.append(("read_amplification", report["read_amplification"]))
    io = report.get("io")
    if io:  # none: not counted
        if not isinstance(io, dict):
            return f"'io' is {_json_text(io)}, not an object of I/O counters"
        numbers += [(f"io.{k}", io.get(k)) for k in REPORT_IO]
    for key, value in numbers:
        if not _is_number(value):
            return f"{key!r} is {_json_text(value)}, not a number"
    return None


def write_report(run_dir: str, output: str | None = None) -> tuple[str, str]:
    """Draws the PNG into `output` (default RUN_DIR/report.png; "-": standard output);
    returns (its path, the totals as text)."""
    import sys

    png = output or os.path.join(run_dir, "report.png")
    picture, text = draw_report(run_dir)
    if png == "-":
        sys.stdout.buffer.write(picture)
        sys.stdout.flush()
        return png, text
    tmp = f"{png}.tmp-{os.getpid()}"  # a kill or a full disk never leaves half a picture
    try:
        with open_counted(tmp, "wb") as f:
            f.write(picture)
        os.replace(tmp, png)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return png, text


def draw_report(run_dir: str) -> tuple[bytes, str]:
    """(the PNG's bytes, the totals as text). Damaged run files are a ValueError naming the
    file (`read_report`, `load_timeline`), before anything is drawn; matplotlib's warnings
    about the picture (an empty legend) are not the user's business and stay quiet."""
    import io
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report = read_report(run_dir)
    samples, writes = load_timeline(run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        text = totals_text(report)
        fig = _draw(plt, report, samples, writes, text)
        try:
            buffer = io.BytesIO()
            fig.savefig(buffer, dpi=110, format="png")
        finally:
            plt.close(fig)
    return buffer.getvalue(), text


def _draw(plt, report: dict, samples: dict[str, list[dict]], writes: list[dict], text: str):
    """The figure of a checked report and timeline, its totals (`text`) at the foot."""
    t0 = min([s["t"] for ss in samples.values() for s in ss] + [w["start"] for w in writes] or [0])
    fig, (ax1, ax2, ax3) = plt.subplots(
        3, 1, figsize=(11, 8.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3, 1.3]}
    )
    for name in sorted(samples, key=lambda n: int(n.split()[-1])):
        ts, rates = moving_rate(samples[name])
        ax1.plot([t - t0 for t in ts], rates, lw=1.2, label=name)
    for w in writes:
        ax1.axvline(w["start"] - t0, color="0.6", lw=0.4, alpha=0.5, zorder=0)
    ax1.set_ylabel(f"records/s ({WINDOW_S:.0f} s avg)")
    ax1.set_title(
        f"molsift screen: throughput per {'rank' if report['executor'] == 'mpi' else 'worker'}"
        f" (grey lines: writes)"
    )
    if 0 < len(samples) <= 16:  # none: matplotlib warned of an empty legend
        ax1.legend(fontsize=7, ncol=4, loc="lower right")
    span = max([w["end"] for w in writes] + [s["t"] for ss in samples.values() for s in ss]) - t0
    for w in writes:  # writes are short: draw each at least 0.3% of the run wide to see it
        ax2.barh(
            w["writer"],
            max(w["end"] - w["start"], 0.003 * span),
            left=w["start"] - t0,
            height=0.6,
            color=f"C{w['writer'] % 10}",
        )
    ax2.set_ylabel("writer")
    ax2.set_yticks(sorted({w["writer"] for w in writes}) or [0])
    for name in sorted(samples, key=lambda n: int(n.split()[-1])):
        ss = sorted(samples[name], key=lambda s: s["t"])
        ax3.step(
            [s["t"] - t0 for s in ss], [s.get("write_queue", 0) for s in ss], where="post", lw=0.8
        )
    ax3.set_ylabel("buffers waiting\nfor the writer")
    ax3.set_xlabel("seconds since start")
    fig.text(0.01, 0.005, text, fontsize=7.5, family="monospace", va="bottom")
    fig.tight_layout(rect=(0, 0.095 if report.get("io") else 0.06, 1, 1))
    return fig
