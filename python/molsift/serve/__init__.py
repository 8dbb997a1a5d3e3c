"""`molsift serve`: the stores behind an HTTP service. One module per job: `catalog.py` opens the
stores once and says what each can answer; `limits.py` bounds what one request may ask and how many
light and heavy searches run at once (and stops a timed-out one); `queries.py` runs a search and
pages its hits; `heavy.py` runs the heavy ones in worker processes; `depict.py` draws SVGs within
their limits, in `drawer.py` worker processes; `api_v1.py` is our own versioned API, `arthor.py` and
`smallworld.py` the shapes those services' clients send and read; `fast.py` answers the hot GET
searches below the framework; `app.py` assembles the ASGI app (errors as 4xx JSON, one JSON
access-log line per request, bodies bounded); `server.py` is the HTTP layer under it (uvicorn,
connections bounded). FastAPI and uvicorn are imported only here, so `import molsift` never
needs them."""

from __future__ import annotations

from .catalog import Catalog, Database
from .limits import Limits

__all__ = ["Catalog", "Database", "Limits", "create_app"]


def create_app(catalog: Catalog, limits: Limits | None = None, access_log=None):
    """The ASGI app serving `catalog` (see app.py)."""
    from .app import create_app as _create

    return _create(catalog, limits or Limits(), access_log)
