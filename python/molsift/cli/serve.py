"""`molsift serve STORE... [--name NAME=STORE] [--host 127.0.0.1] [--port 8080]`: the stores behind
an HTTP service (python/molsift/serve). Loopback unless told otherwise; stores are named here,
never by a request. The service's limits (searches and depictions at once, time limits, body
and header sizes, connection timeouts: docs/serve.md, "Limits") are options here, each defaulting
to `serve.limits.Limits`. The port (0 to 65535; 0: a free one) is bound here, before uvicorn
runs, so that the banner names the port listened on and a port in use is one line, exit 2; an
--access-log that cannot be written is refused before that, in one line, exit 2."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys

from ..wording import plural
from .common import add_verb, at_least_one, check_output, default_of, in_range, seconds

EXAMPLES = (
    "molsift serve nci.store   # http://127.0.0.1:8080/api/v1/databases",
    "molsift serve --name nci=nci.store --name nci2=nci.v2.store --port 9000",
    "molsift serve big.store --host 0.0.0.0 --max-concurrent 4 --timeout 60   # other machines too",
    "mpirun -n 4 molsift serve big.set   # rank 0 answers HTTP, the ranks search the set's shards",
)


def add_parser(subparsers):
    from ..serve.limits import Limits

    p = add_verb(
        subparsers,
        "serve",
        help="serve stores over HTTP (search API, OpenAPI docs at /docs)",
        description="Serve stores over HTTP: similarity, substructure, SMARTS, exact and analog "
        "search (GET or POST /api/v1/search), the database list (/api/v1/databases), SVG "
        "depictions (/api/v1/depict, the match highlighted) and the OpenAPI schema (/docs, "
        "/openapi.json); a search page with a structure editor at /; the request shapes of "
        "Arthor's and SmallWorld's clients (docs/serve.md). Each store is opened once and kept "
        "warm; every request is bounded (the options below). One JSON line per request goes to "
        "the access log (stderr unless --access-log).",
        examples=EXAMPLES,
    )
    p.add_argument("stores", nargs="*", metavar="STORE", help="stores, named after their folder")
    p.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME=STORE",
        help="a store under a name of your choice (repeatable)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument(
        "--port", type=port, default=8080, help="port, 0 for a free one (default %(default)s)"
    )
    p.add_argument(
        "--max-concurrent",
        type=at_least_one,
        default=None,
        help="light searches (similarity, exact) running at once; others wait, then get 503 "
        "(default: the cores)",
    )
    p.add_argument(
        "--max-heavy",
        type=at_least_one,
        default=None,
        help="heavy searches (substructure, SMARTS, analogs from --heavy-dist edits) running at "
        "once, in slots and niced worker processes of their own (default: half the cores, at "
        "least 1)",
    )
    p.add_argument(
        "--heavy-dist",
        type=at_least_one,
        default=default_of(Limits, "heavy_dist"),
        help="analog searches of this many edits or more are heavy (default %(default)s)",
    )
    p.add_argument(
        "--inline-ms",
        type=inline_ms,
        default=default_of(Limits, "inline_ms"),
        metavar="MS",
        help="while one client alone is asking, a small similarity or exact search of a store "
        "whose recent light searches took under MS ms runs on the server's event loop, without "
        "a worker process's round trip (about 0.5 ms less a request); such a search is not "
        "stopped at --timeout. 0: every search in a worker (default %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=default_of(Limits, "timeout_s"),
        help="seconds a search may take before the answer is 504 and the search is stopped "
        "(default %(default)s)",
    )
    p.add_argument(
        "--queue-wait",
        type=seconds,
        default=default_of(Limits, "queue_wait_s"),
        help="seconds a search or depiction waits for a free slot before the answer is 503 "
        "(default %(default)s)",
    )
    p.add_argument(
        "--max-depict",
        type=at_least_one,
        default=default_of(Limits, "max_depict_concurrent"),
        help="depictions drawn at once, each in a worker process (default %(default)s)",
    )
    p.add_argument(
        "--depict-timeout",
        type=seconds,
        default=default_of(Limits, "depict_timeout_s"),
        help="seconds a depiction may take before the answer is 504 and its worker is ended "
        "(default %(default)s)",
    )
    p.add_argument(
        "--max-depict-atoms",
        type=at_least_one,
        default=default_of(Limits, "max_depict_atoms"),
        help="heavy atoms of the largest molecule drawn; more is 413 (default %(default)s)",
    )
    p.add_argument(
        "--max-body",
        type=at_least_one,
        default=default_of(Limits, "max_body_bytes"),
        metavar="BYTES",
        help="bytes of a request body, chunked or not; more is 413 (default %(default)s)",
    )
    p.add_argument(
        "--read-timeout",
        type=seconds,
        default=default_of(Limits, "read_timeout_s"),
        help="seconds a request's headers and body may take to arrive; then 408 and the "
        "connection is closed (default %(default)s)",
    )
    p.add_argument(
        "--keep-alive",
        type=seconds,
        default=default_of(Limits, "keep_alive_s"),
        help="seconds an idle kept-alive connection stays open (default %(default)s)",
    )
    p.add_argument(
        "--max-connections",
        type=at_least_one,
        default=default_of(Limits, "max_connections"),
        help="open connections; more are answered 503 and closed (default %(default)s)",
    )
    p.add_argument(
        "--max-length",
        type=at_least_one,
        default=default_of(Limits, "max_length"),
        help="most rows in one page (default %(default)s)",
    )
    p.add_argument("--access-log", metavar="FILE", help="append the JSON access log here")
    return p


def check_access_log(path: str | None) -> None:
    """Refuses an --access-log that cannot be appended to (a directory, a directory that does
    not exist or may not be written to: `common.check_output`) before any store is opened or
    port bound: it was found only once the port listened, after the host warning. ValueError,
    one line naming the option."""
    try:
        check_output(path)
    except ValueError as exc:
        raise ValueError(f"--access-log {exc}") from None


def inline_ms(text: str) -> float:
    """--inline-ms: milliseconds from 0 (never on the loop) to 1000."""
    return in_range(text, 0.0, 1000.0, "milliseconds from 0 (never) to 1000")


def port(text: str) -> int:
    """A TCP port from the command line: 0 (a free one) to 65535."""
    return int(in_range(text, 0, 65535, "a port from 0 to 65535 (0: a free one)"))


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of `host` (as uvicorn's own would be: `localhost` is
    127.0.0.1 and ::1), all on `port`; port 0: the free port the first is given. OSError when
    one cannot be bound (nothing is left open)."""
    socks: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, addr in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:
                addr = (addr[0], socks[0].getsockname()[1], *addr[2:])
            sock.bind(addr)
            sock.listen(2048)  # uvicorn's backlog: a client of the banner's URL waits, not refused
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def catalog_from(stores: list[str], names: list[str]):
    """The Catalog of the command line's stores; ValueError for a bad --name."""
    from ..serve.catalog import NAME, Catalog, default_name

    catalog = Catalog()
    for item in names:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--name {item!r}: write NAME=STORE")
        catalog.add(name, path)
    for path in stores:
        name = default_name(os.path.abspath(path))  # `serve .`: the folder's name, not ''
        if not NAME.match(name):
            raise ValueError(
                f"{path}: its folder's name {name!r} cannot name a database (letters, digits, "
                f"'_', '.', '-'): name it with --name NAME={path}"
            )
        catalog.add(name, path)
    if not len(catalog):
        raise ValueError("no store to serve: give STORE or --name NAME=STORE")
    return catalog


def run(args) -> int:
    import uvicorn

    from ..serve import create_app
    from ..serve.limits import Limits
    from ..serve.queries import types
    from ..serve.server import config as server_config

    try:
        check_access_log(args.access_log)  # before the stores are opened and the port bound
        catalog = catalog_from(args.stores, args.name)
    except ValueError as e:
        print(f"molsift: error: {e}", file=sys.stderr)  # as every verb's error
        return 2
    from ..sets.mpi import start_fanout

    limits = Limits(
        timeout_s=args.timeout,
        max_length=args.max_length,
        heavy_dist=args.heavy_dist,
        inline_ms=args.inline_ms,
        queue_wait_s=args.queue_wait,
        max_depict_concurrent=args.max_depict,
        depict_timeout_s=args.depict_timeout,
        max_depict_atoms=args.max_depict_atoms,
        max_body_bytes=args.max_body,
        read_timeout_s=args.read_timeout,
        keep_alive_s=args.keep_alive,
        max_connections=args.max_connections,
    )
    if args.max_concurrent:
        limits.max_concurrent = args.max_concurrent
    if args.max_heavy:
        limits.max_heavy = args.max_heavy
    # under mpirun: rank 0 serves, the others search; each rank stops its part at the time
    # limit, and rank 0 waits for them at most the limit and a grace period in any step (a
    # searcher that died: 503, the front end stays up; `mpirun --enable-recovery` keeps it);
    # a lane for the light searches of the sets and one per heavy slot of the server
    fanout = start_fanout(
        catalog,
        time_limit_s=args.timeout,
        deadline_s=args.timeout + max(5.0, args.timeout),
        lanes=1 + limits.max_heavy,
    )
    if fanout is not None and not fanout.is_root:
        try:
            fanout.loop()
        finally:
            catalog.close()
        return 0
    sockets: list[socket.socket] = []
    log = None
    try:
        try:  # opened before the port is bound: nothing listens for a server that cannot log
            log = open(args.access_log, "a", encoding="utf-8") if args.access_log else None  # noqa: SIM115
        except OSError as exc:
            print(
                f"molsift: error: --access-log {args.access_log}: cannot write the output: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
        try:  # before the app starts its worker processes: a port in use is one line, exit 2
            sockets = listen(args.host, args.port)
        except OSError as exc:
            print(
                f"molsift: error: cannot listen on {args.host} port {args.port}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
        if not _is_loopback(args.host):  # said once listening: not for a host never listened on
            print(
                f"molsift serve: WARNING: listening on {args.host}, not loopback: anyone who can "
                "reach this machine can search these stores",
                file=sys.stderr,
            )
        bound = sockets[0].getsockname()[1]
        app = create_app(catalog, limits, log)
        for db in catalog:
            # the types /api/v1/databases lists (analogs too, where the store has their index)
            print(
                f"molsift serve: {db.name}: {db.path} ({db.molecules:,} molecules, "
                f"{', '.join(types(db))})",
                file=sys.stderr,
            )
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"molsift serve: http://{host}:{bound}/api/v1/databases (docs: /docs)",
            file=sys.stderr,
        )
        config = server_config(
            app, host=args.host, port=bound, log_level="warning", access_log=False
        )
        if fanout is not None:
            print(
                f"molsift serve: {plural(len(fanout.sets), 'set')} searched by "
                f"{plural(fanout.comm.Get_size(), 'MPI rank')} (this one answers HTTP), "
                f"{plural(fanout.lanes, 'search', 'searches')} at once",
                file=sys.stderr,
            )
        uvicorn.Server(config).run(sockets=sockets)
    finally:
        for sock in sockets:  # closed by uvicorn when it ran; here too when it did not
            sock.close()
        if fanout is not None:
            fanout.stop()
        catalog.close()
        if log is not None:
            log.close()
    return 0
