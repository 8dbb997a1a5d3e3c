"""The I/O profiler: `molsift profile -- CMD` and `molsift insights LOG`.

    >>> from molsift.iotrace import profile, load_log, find_insights       # doctest: +SKIP
    >>> result = profile(["./app", "input.dat"], "app.iolog.json")          # doctest: +SKIP
    >>> for f in find_insights(load_log(result.log)):                       # doctest: +SKIP
    ...     print(f.severity, f.title, f.file)

Modules, one job each: `profile` runs a program under the LD_PRELOAD tracer
(crates/iotrace/iotrace.c), `merge` joins the per-process logs, `log` reads logs (the format is
docs/io-log-format.md), `darshan` reads Darshan logs, `insights` holds the rules and thresholds
(docs/insights.md), `render` and `html` present the findings.
"""

from .insights import THRESHOLDS, Finding, find_insights
from .log import IoLog, IoLogError, Record, load_log
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
