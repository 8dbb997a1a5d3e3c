"""The I/O profiler: `molsift profile -- CMD` and `molsift insights LOG`.

    >>> from molsift.profiler import profile, load_log, find_insights      # doctest: +SKIP
    >>> result = profile(["./app", "input.dat"], "app.iolog.json")          # doctest: +SKIP
    >>> for f in find_insights(load_log(result.log)):                       # doctest: +SKIP
    ...     print(f.severity, f.title, f.file)

Modules, one job each: `profile` runs a program under the LD_PRELOAD tracer
(crates/tracer/tracer.c, built into molsift's extension module), `merge` joins the per-process
logs, `darshan` reads Darshan logs, `insights` holds the rules and thresholds
(docs/insights.md), `render` and `html` present the findings. The log format itself (reading,
checking, writing) is `molsift.iolog`, shared with molsift's own counters (`molsift.iostats`).
"""

from ..iolog import IoLog, IoLogError, Record, load_log
from .insights import THRESHOLDS, Finding, find_insights
from .profile import ProfileResult, profile

__all__ = [
    "THRESHOLDS",
    "Finding",
    "IoLog",
    "IoLogError",
    "ProfileResult",
    "Record",
    "find_insights",
    "load_log",
    "profile",
]
