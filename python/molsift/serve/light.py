"""Light searches (similarity, exact, analogs of a few edits) in worker processes whose answers
the event loop reads itself: no thread of the server takes Python's interpreter lock for them.

Why: a light search in one of the server's threads parses its query with RDKit, fingerprints it
and lists its hits holding the interpreter lock, and after the Rust search it waits to take the
lock back from the event loop, which holds it while it serves other requests: under load the
answers waited for the loop and the loop for them. A worker process (`python -m
molsift.serve.heavy --light`: the heavy workers' program, at the server's priority) does all of
that with a lock of its own; the server writes the request to its pipe and reads the answer
when the loop sees it readable (`add_reader`), in whichever event loop asks.

At most `limits.max_concurrent` workers (the gate's light slots), started on first use (a start,
about a second, is not counted in a search's time limit); a search past the time limit is
answered 504 and its worker killed. While one client alone is asking, a small light search of
a store known to be fast runs on the event loop instead (queries.Searcher.inline, `--inline-ms`):
the round trip through a worker costs about as much as the search."""

from __future__ import annotations

from .heavy import SearchWorkers


class LightWorkers(SearchWorkers):
    """The light searches' worker processes of a server (heavy.SearchWorkers): at the server's
    priority, one per light slot, none started ahead as a spare."""

    light = True
    what = "search"
    spares = False
