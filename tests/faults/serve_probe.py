"""The server's exact search, as the corrupter runs it: `python -m faults.serve_probe STORE
QUERY...` opens STORE as `molsift serve STORE` does (`cli.serve.catalog_from`), builds the same
app (`serve.create_app`) and sends each query through it as `GET /api/v1/search?type=exact`,
in this process (no port, no network). Prints one line per query: the HTTP status and the JSON
body without its timing. A store the server refuses at start-up, or a 5xx answer (a store that
fails its checks while answering), is one `molsift: error:` line with the server's message and
exit 2; anything else that escapes is a traceback."""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    import io

    from servers import asgi_get  # tests/servers.py: run from tests/

    from molsift._core import MolsiftError
    from molsift.cli.serve import catalog_from
    from molsift.serve import create_app
    from molsift.serve.limits import Limits

    store, queries = argv[0], argv[1:]
    try:
        catalog = catalog_from([store], [])
    except (MolsiftError, ValueError) as exc:
        print(f"molsift: error: {exc}", file=sys.stderr)
        return 2
    try:
        app = create_app(catalog, Limits(), io.StringIO())
        name = catalog.names()[0]
        for q in queries:
            status, body = asgi_get(app, "/api/v1/search", db=name, type="exact", query=q)
            try:
                doc = json.loads(body)
            except ValueError:
                doc = {"unparsable body": body[:200].decode("utf-8", "replace")}
            if isinstance(doc, dict):
                doc.pop("ms", None)
            if status >= 500:
                print(f"molsift: error: HTTP {status}: {doc.get('error', doc)}", file=sys.stderr)
                return 2
            print(status, json.dumps(doc, sort_keys=True))
    finally:
        catalog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
