"""The published Python clients of Arthor and SmallWorld, as installed from PyPI by
scripts/setup.sh (arthorian-quest 0.2.3, smallworld-api 1.1.4), run unchanged against
`molsift serve` on 127.0.0.1, and their results compared with the Python API: Arthor's
similarity, substructure and SMARTS searches (`QueryArthor.retrieve`), SmallWorld's construction
(which reads `/search/maps`) and its analog search at dist 2 and 3 with its own paging
(`SmallWorld.search_smiles`, then `get_results` page after page). Each runs against the
bundled data served as one store and as a store set (`molsift ingest --shards 3`).

Each client is pointed at the live server through its own base URL (`QueryArthor(base_url=)`,
`SmallWorld.base_url`). smallworld-api's constructor reads the literal URL
`https://sw.docking.org/search/maps`, which no attribute changes: the requests made here go
through a transport that sends that host to the live server and refuses any other than
127.0.0.1, so no test reaches the network, and every URL a client asked for is recorded (the
paths are checked against docs/serve.md's table). The clients' code is not touched."""

from __future__ import annotations

import importlib
import importlib.util
import urllib.parse
import warnings

import pytest
from servers import Live

import molsift
from molsift.serve import Catalog, Limits, create_app

#: the page cap of the server here (the clamping checks ask for more)
MAX_LENGTH = 2000
SMI = "CC(=O)Nc1ccc(O)cc1"


@pytest.fixture(scope="module", params=["store", "set"])
def server(request, tmp_path_factory, bundled_smi):
    """The bundled data served as one store, or as a store set of 3 shards; the answers are
    compared with the one store's either way (a served set answers as the one store)."""
    d = tmp_path_factory.mktemp("clients")
    molsift.ingest(bundled_smi, d / "nci.store", workers=2, progress=False)
    served = d / "nci.store"
    if request.param == "set":
        served = d / "nci.set"
        molsift.ingest(bundled_smi, served, workers=2, shards=3, progress=False)
    catalog = Catalog()
    catalog.add("nci", str(served))
    log = open(d / "access.log", "a", encoding="utf-8")  # noqa: SIM115
    live = Live(create_app(catalog, Limits(max_length=MAX_LENGTH), log))
    yield live, molsift.open_store(d / "nci.store")
    live.stop()
    log.close()
    catalog.close()


@pytest.fixture
def calls(server, monkeypatch):
    """The URLs the clients ask for (the paths, in order), each answered by the live server:
    `https://sw.docking.org` (a literal in smallworld-api) is sent there, any host but
    127.0.0.1 refused."""
    requests = installed("requests", "requests")
    live = server[0]
    seen = []
    send = requests.adapters.HTTPAdapter.send

    def loopback(self, request, *args, **kwargs):
        request.url = request.url.replace("https://sw.docking.org", f"http://127.0.0.1:{live.port}")
        url = urllib.parse.urlsplit(request.url)
        if url.hostname != "127.0.0.1":
            raise requests.ConnectionError(f"the tests reach no network: {request.url}")
        seen.append(url.path)
        return send(self, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", loopback)
    return seen


def installed(module: str, package: str):
    """The client's module; the test skipped only when the package is not installed (a broken
    install, e.g. a dependency missing, fails)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{package} is not installed (scripts/setup.sh installs it)")
    return importlib.import_module(module)


def ranked(store, positions) -> dict:
    """{rank: (id, SMILES, db)} of store positions in rank order (ranks from 1)."""
    return {i + 1: (store.ids[p], store.smiles[p], "nci") for i, p in enumerate(positions)}


def test_arthorian_quest_similarity_substructure_smarts(server, calls):
    """QueryArthor.retrieve (its own request and parsing) gives, for each search type, the
    molecules of the Python API, each at its rank (the client sorts its table by heavy atoms:
    the rank column keeps the server's order)."""
    aq = installed("arthorian_quest", "arthorian-quest")
    live, store = server
    arthor = aq.QueryArthor(base_url=live.url("/"))
    assert arthor.dbs.displayName.tolist() == ["nci"]
    for search_type, query, want in (
        ("Similarity", SMI, store.search(SMI, k=1000).indices.tolist()),
        ("Substructure", "c1ccncc1", store.substructure("c1ccncc1").tolist()),
        ("SMARTS", "[OX2H]c1ccccc1", store.substructure("[OX2H]c1ccccc1", smarts=True).tolist()),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # the client's: no matches, a clamp
            got = arthor.retrieve(query, ["nci"], search_type=search_type)  # length 1000
        assert 0 < len(want) <= 1000 and len(got) == len(want), search_type
        assert dict(zip(got.idx, zip(got.id, got.smiles, got.db))) == ranked(store, want)
        assert (got.N_HA.diff().dropna() >= 0).all()  # the client's own RDKit columns
    assert calls == ["/dt/data"] + ["//dt/nci/search"] * 3  # its base URL ends in "/"


def test_arthorian_quest_length_over_the_cap_is_clamped_with_a_warning(server, calls):
    """The client asks for 5000 rows; the server's cap is 2000: the first 2000, and the
    client shows the server's warning."""
    aq = installed("arthorian_quest", "arthorian-quest")
    live, store = server
    arthor = aq.QueryArthor(base_url=live.url("/"))
    with pytest.warns(UserWarning, match="length=5000 is over this server's limit"):
        got = arthor.retrieve(SMI, ["nci"], search_type="Similarity", length=5000)
    want = store.search(SMI, k=MAX_LENGTH).indices.tolist()
    assert dict(zip(got.idx, zip(got.id, got.smiles, got.db))) == ranked(store, want)


@pytest.mark.slow  # the client waits a second after each event of the stream
def test_smallworld_api_construction_and_analog_search_with_paging(server, calls, monkeypatch):
    """SmallWorld() reads the databases from /search/maps; search_smiles at dist 2 and 3
    (the client's default per-kind limits), then get_results page after page, gives the hits
    of store.analogs with the same limits, in rank order, with their distance, Tanimoto and
    edits by kind."""
    sw_api = installed("smallworld_api", "smallworld-api")
    live, store = server
    # the constructor fills class attributes once per process: restored after the test
    monkeypatch.setattr(sw_api.SmallWorld, "_db_updated", False)
    monkeypatch.setattr(sw_api.SmallWorld, "db_choices", sw_api.SmallWorld.db_choices)
    sw = sw_api.SmallWorld()
    assert sw.db_choices == ["nci"] and calls == ["/search/maps"]
    sw.base_url = f"http://127.0.0.1:{live.port}"
    sent = sw.default_submission  # what search_smiles sends beside dist
    caps = {kind: sent[kind] for kind in ("tdn", "tup", "rdn", "rup", "ldn", "lup")}
    page = 100
    for dist in (2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # e.g. "No completed return code"
            # but the client's own retry after a dropped kept-alive connection (seen once on a
            # loaded machine: the view request met the connection's close) is its normal path;
            # the pages it then reads are checked below like any others
            retry = "ConnectionError: .* Retrying in 2 seconds"
            warnings.filterwarnings("ignore", retry, UserWarning)
            first = sw.search_smiles(SMI, db="nci", dist=dist, length=page)
        summary = sw.query_summary
        assert summary["status"] == "END" and summary["partial"] is False
        pages = [first]
        for start in range(page, summary["numHits"], page):
            pages.append(sw.get_results(start=start, length=page))
        want = store.analogs(SMI, max_dist=dist, limits=caps)
        assert summary["numHits"] == len(want) > page
        got = [row for p in pages for row in p.to_dict("records")]
        assert [r["anonIdx"] for r in got] == want["position"].tolist()
        assert [(r["name"], r["smiles"]) for r in got] == [
            (store.ids[p], store.smiles[p]) for p in want["position"].tolist()
        ]
        assert [r["dist"] for r in got] == want["distance"].tolist()
        assert max(r["dist"] for r in got) == dist
        assert [r["ecfp4"] for r in got] == want["tanimoto"].tolist()
        for kind, limit in caps.items():
            assert [r[kind] for r in got] == want[kind].tolist()
            assert all(r[kind] <= limit for r in got)
        assert [r["mut"] for r in got] == want["mut"].tolist()
    views = [p for p in calls if p == "/search/view"]
    assert calls.count("/search/submit") == 2 and len(views) == len(calls) - 3
