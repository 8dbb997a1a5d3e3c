"""`molsift serve`'s web page and /docs in a real browser: headless Chromium from Debian's
packages driven by Selenium through Debian's chromedriver (scripts/setup.sh installs all three
when MOLSIFT_WITH_BROWSER=1, as scripts/test.sh asks). The browser loads the page from a live
server, draws or types a query, runs every search type, and the rows, their score columns,
depictions (at least 250 px; substructure and SMARTS matches highlighted on exactly the atoms
RDKit matches), paging and error messages are checked against the library; the structure
editor (JSME, vendored by scripts/vendor_js.sh) and the text box stay in step both ways; without
the editor the page says so and still searches; at 420 px wide nothing is wider than the window;
/docs (Swagger UI 5, vendored the same way) lists the operations of the OpenAPI 3.1 schema.
`MOLSIFT_SCREENSHOT=PATH` also saves a screenshot of highlighted substructure hits there
(docs/serve-page.png was made that way). The store is the one store as ingest writes it, with
every index, so the page offers every search type."""

from __future__ import annotations

import io
import os
import re
import shutil
import time
import urllib.parse

import pytest
from rdkit import Chem
from servers import Live, asgi_get, fetch

import molsift
from molsift.serve import Catalog, create_app
from molsift.serve import app as app_module

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
QUERY = "CC(=O)Nc1ccc(O)cc1"
TYPES = ["similarity", "substructure", "smarts", "exact", "analogs"]
#: the colour RDKit fills highlighted atoms and bonds with
HIGHLIGHT = "#FF7F7F"
VENDOR = app_module.PAGE / "vendor"

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(
        "chromium and chromedriver not installed (MOLSIFT_WITH_BROWSER=1 bash scripts/setup.sh "
        "installs Debian's packages; scripts/test.sh does)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def page(tmp_path_factory, bundled_smi):
    d = tmp_path_factory.mktemp("page")
    store = d / "nci.store"
    molsift.ingest(bundled_smi, store, workers=2, progress=False)
    catalog = Catalog()
    catalog.add("nci", str(store))
    log = open(os.devnull, "w")  # noqa: SIM115
    live = Live(create_app(catalog, access_log=log))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1400"):
        options.add_argument(arg)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    browser = webdriver.Chrome(options=options, service=service)
    try:
        yield browser, live, molsift.open_store(store)
    finally:
        browser.quit()
        live.stop()
        log.close()
        catalog.close()


def wait(browser, seconds=60):
    return WebDriverWait(browser, seconds)


def vendored(what: str) -> None:
    """Fails, naming the script, when scripts/vendor_js.sh has not vendored `what`."""
    assert (VENDOR / what).is_dir(), f"{VENDOR / what} missing: run bash scripts/vendor_js.sh"


def open_page(browser, live):
    browser.get(live.url("/"))
    wait(browser).until(lambda b: len(Select(b.find_element(By.ID, "type")).options) == len(TYPES))


def search(browser, type_: str, query: str, **options) -> None:
    """Chooses the type, types the query and the options (input ids), submits and waits for
    the summary of the answer."""
    Select(browser.find_element(By.ID, "type")).select_by_value(type_)
    box = browser.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    for name, value in options.items():
        field = browser.find_element(By.ID, name)
        field.clear()
        field.send_keys(str(value))
    browser.execute_script("document.getElementById('summary').textContent = ''")
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(
        lambda b: b.find_element(By.ID, "summary").text or b.find_element(By.ID, "error").text
    )


def rows(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#hits tbody tr")


def cells(row) -> dict:
    """A row's cells by column (their data-col)."""
    return {td.get_attribute("data-col"): td for td in row.find_elements(By.TAG_NAME, "td")}


def headers(browser) -> list[str]:
    found = browser.find_elements(By.CSS_SELECTOR, "#hits th")
    return [th.get_attribute("textContent") for th in found]


def depictions_drawn(browser) -> list:
    """The table's images, once every one has loaded an SVG."""
    imgs = browser.find_elements(By.CSS_SELECTOR, "#hits img")
    wait(browser).until(
        lambda b: all(
            b.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)
            for img in imgs
        )
    )
    return imgs


def width_of(browser, element) -> float:
    return browser.execute_script("return arguments[0].getBoundingClientRect().width", element)


def lit_atoms(svg: str) -> set[int]:
    """Atoms RDKit drew highlighted (a filled ellipse in the highlight colour)."""
    found = re.findall(r"<ellipse[^>]*class='atom-(\d+)'[^>]*fill:" + HIGHLIGHT, svg)
    return {int(i) for i in found}


def matched_atoms(smiles: str, query: str, smarts: bool) -> set[int]:
    mol = Chem.MolFromSmiles(smiles)
    q = Chem.MolFromSmarts(query) if smarts else Chem.MolFromSmiles(query)
    return {i for match in mol.GetSubstructMatches(q, maxMatches=64) for i in match}


def test_a_chemist_types_a_smiles_and_sees_structures(page):
    browser, live, store = page
    open_page(browser, live)
    assert "4,991" in Select(browser.find_element(By.ID, "db")).first_selected_option.text
    assert [o.text for o in Select(browser.find_element(By.ID, "type")).options] == TYPES
    search(browser, "similarity", QUERY, k=40)
    wait(browser).until(lambda b: len(rows(b)) == 25)
    assert headers(browser) == ["#", "Structure", "Id", "SMILES", "Tanimoto"]
    assert "Tanimoto" in browser.find_element(By.ID, "explain").text
    want = store.search(QUERY, k=40)
    first = cells(rows(browser)[0])
    assert first["id"].text == store.ids[int(want.indices[0])]
    assert first["smiles"].text == store.smiles[int(want.indices[0])]
    assert [cells(r)["score"].text for r in rows(browser)] == [f"{s:.3f}" for s in want.scores[:25]]
    ids = [cells(r)["id"].text for r in rows(browser)]
    assert ids == [store.ids[int(i)] for i in want.indices[:25]]
    assert "40 hits" in browser.find_element(By.ID, "summary").text
    # every depiction drew (an SVG from /api/v1/depict), large enough to read, not highlighted
    imgs = depictions_drawn(browser)
    assert all(width_of(browser, img) >= 250 for img in imgs)
    assert "highlight" not in imgs[0].get_attribute("src")
    # the next page holds the rest
    browser.find_element(By.ID, "next").click()
    wait(browser).until(lambda b: len(rows(b)) == 15)
    ids = [cells(r)["id"].text for r in rows(browser)]
    assert ids == [store.ids[int(i)] for i in want.indices[25:40]]
    assert not browser.find_element(By.ID, "next").is_enabled()
    href = browser.find_element(By.ID, "download").get_attribute("href")
    assert "fmt=tsv" in href and "query=CC" in href


def test_substructure_hits_show_the_match_highlighted(page):
    browser, live, store = page
    open_page(browser, live)
    search(browser, "substructure", "c1ccncc1")
    assert not browser.find_element(By.ID, "threshold").is_displayed()
    want = store.substructure("c1ccncc1").tolist()
    wait(browser).until(lambda b: f"{len(want):,} hits" in b.find_element(By.ID, "summary").text)
    assert [cells(r)["id"].text for r in rows(browser)] == [store.ids[p] for p in want[:25]]
    # no score column, and the page says why
    assert headers(browser) == ["#", "Structure", "Id", "SMILES"]
    assert "No score" in browser.find_element(By.ID, "explain").text
    imgs = depictions_drawn(browser)
    assert all(width_of(browser, img) >= 250 for img in imgs)
    if os.environ.get("MOLSIFT_SCREENSHOT"):  # the query drawn in the editor, too
        wait(browser).until(lambda b: b.execute_script("return jsmeApplet.smiles()"))
        browser.save_screenshot(os.environ["MOLSIFT_SCREENSHOT"])
    # each depiction asks for the query's match: RDKit's matched atoms, exactly, are lit
    for img, pos in list(zip(imgs, want))[:5]:
        url = img.get_attribute("src")
        params = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        assert params["highlight"] == ["c1ccncc1"] and "smarts" not in params
        status, ctype, svg = fetch(url)
        assert status == 200 and ctype.startswith("image/svg+xml")
        lit = lit_atoms(svg.decode())
        assert lit and lit == matched_atoms(store.smiles[pos], "c1ccncc1", smarts=False)
        plain = fetch(live.url("/api/v1/depict", smiles=store.smiles[pos], width=280, height=220))
        assert plain[0] == 200 and plain[2] != svg and HIGHLIGHT not in plain[2].decode()
    # a click enlarges a depiction (the match still highlighted)
    imgs[0].click()
    zoom = browser.find_element(By.ID, "zoom")
    wait(browser).until(lambda b: zoom.is_displayed())
    big = browser.find_element(By.ID, "zoom-img")
    wait(browser).until(lambda b: b.execute_script("return arguments[0].naturalWidth", big))
    assert width_of(browser, big) >= 500 and "highlight=c1ccncc1" in big.get_attribute("src")
    assert store.ids[want[0]] in browser.find_element(By.ID, "zoom-caption").text
    browser.find_element(By.ID, "zoom-close").click()
    wait(browser).until(lambda b: not zoom.is_displayed())


def test_smarts_hits_are_highlighted_as_smarts(page):
    browser, live, store = page
    query = "[NX3;H1][CX3](=O)c"
    open_page(browser, live)
    search(browser, "smarts", query)
    want = store.substructure(query, smarts=True).tolist()
    assert 25 < len(want) < 200
    wait(browser).until(lambda b: f"{len(want):,} hits" in b.find_element(By.ID, "summary").text)
    assert [cells(r)["id"].text for r in rows(browser)] == [store.ids[p] for p in want[:25]]
    assert headers(browser) == ["#", "Structure", "Id", "SMILES"]
    img = depictions_drawn(browser)[0]
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(img.get_attribute("src")).query)
    assert params["highlight"] == [query] and params["smarts"] == ["true"]
    _status, _ctype, svg = fetch(img.get_attribute("src"))
    lit = lit_atoms(svg.decode())
    assert lit and lit == matched_atoms(store.smiles[want[0]], query, smarts=True)


def test_analog_hits_show_their_edits_and_tanimoto(page):
    browser, live, store = page
    open_page(browser, live)
    Select(browser.find_element(By.ID, "type")).select_by_value("analogs")
    assert browser.find_element(By.ID, "dist").is_displayed()
    assert not browser.find_element(By.ID, "threshold").is_displayed()
    search(browser, "analogs", QUERY, dist=1)
    want = store.analogs(QUERY, max_dist=1)
    wait(browser).until(lambda b: f"{len(want):,} hits" in b.find_element(By.ID, "summary").text)
    assert headers(browser) == [
        "#", "Structure", "Id", "SMILES", "Edits", "Edits by kind", "Elements changed", "Tanimoto",
    ]  # fmt: skip
    kinds = ("tdn", "tup", "rdn", "rup", "ldn", "lup")
    for j, row in enumerate(rows(browser)):
        got = {k: td.text for k, td in cells(row).items()}
        assert got["id"] == store.ids[int(want["position"][j])]
        assert got["distance"] == str(want["distance"][j])
        assert got["score"] == f"{want['tanimoto'][j]:.3f}"
        mut = int(want["mut"][j])
        assert got["mut"] == ("?" if mut < 0 else str(mut))
        edits = [f"{k} {int(want[k][j])}" for k in kinds if want[k][j]]
        assert got["kinds"] == (", ".join(edits) or "none")
    assert {cells(r)["distance"].text for r in rows(browser)} == {"0", "1"}
    assert "edit distance" in browser.find_element(By.ID, "explain").text
    assert "highlight" not in depictions_drawn(browser)[0].get_attribute("src")


def test_an_exact_search_finds_the_molecule_from_another_smiles(page):
    browser, live, store = page
    pos = 1234
    Chem.rdBase.SeedRandomNumberGenerator(pos)
    query = Chem.MolToSmiles(Chem.MolFromSmiles(store.smiles[pos]), doRandom=True)
    assert query != store.smiles[pos]
    open_page(browser, live)
    search(browser, "exact", query)
    assert not browser.find_element(By.ID, "threshold").is_displayed()
    wait(browser).until(ec.visibility_of_element_located((By.ID, "hits")))
    wait(browser).until(lambda b: len(rows(b)) > 0)
    found = [{k: td.text for k, td in cells(r).items()} for r in rows(browser)]
    assert store.ids[pos] in [c["id"] for c in found]
    assert all(c["smiles"] == store.smiles[pos] and "score" not in c for c in found)
    assert "No score" in browser.find_element(By.ID, "explain").text


def test_errors_are_said_in_words(page):
    browser, live, _store = page
    open_page(browser, live)
    search(browser, "substructure", "C1CC(")
    error = browser.find_element(By.ID, "error")
    wait(browser).until(lambda b: error.is_displayed())
    assert "Search failed" in error.text and "invalid query" in error.text
    assert not browser.find_element(By.ID, "results").is_displayed()


def canonical(smiles: str) -> str:
    mol = Chem.MolFromSmiles(smiles)
    assert mol is not None, smiles
    return Chem.MolToSmiles(mol)


def test_the_editor_and_the_text_box_stay_in_step(page):
    vendored("jsme")
    browser, live, store = page
    open_page(browser, live)
    wait(browser).until(lambda b: b.execute_script("return !!window.jsmeApplet"))
    assert not browser.find_element(By.ID, "editor-note").is_displayed()
    box = browser.find_element(By.ID, "query")
    # typed SMILES is drawn in the editor; the box keeps the text as typed
    box.send_keys("C(C)Oc1ccncc1")
    wait(browser).until(lambda b: b.execute_script("return jsmeApplet.smiles()"))
    assert canonical(browser.execute_script("return jsmeApplet.smiles()")) == canonical(
        "CCOc1ccncc1"
    )
    time.sleep(0.5)
    assert box.get_attribute("value") == "C(C)Oc1ccncc1"
    # a molecule set in the editor (JSME's API) fills the box
    time.sleep(3)  # past the box's own pending read (app.js forgets it after 3 s)
    browser.execute_script("jsmeApplet.readGenericMolecularInput(arguments[0])", QUERY)
    wait(browser).until(lambda b: box.get_attribute("value") != "C(C)Oc1ccncc1")
    assert canonical(box.get_attribute("value")) == canonical(QUERY)
    # drawing fills the box: a click on the empty canvas draws a bond (ethane)
    browser.execute_script("jsmeApplet.reset()")
    wait(browser).until(lambda b: box.get_attribute("value") == "")
    ActionChains(browser).move_to_element_with_offset(
        browser.find_element(By.ID, "jsme"), 0, 40
    ).click().perform()
    wait(browser).until(lambda b: box.get_attribute("value") == "CC")
    # and the drawn query searches
    browser.find_element(By.ID, "submit").click()
    want = store.search("CC", threshold=0.7)
    wait(browser).until(lambda b: f"{len(want):,} hit" in b.find_element(By.ID, "summary").text)
    # JSME's licence ships beside it
    status, _ctype, text = fetch(live.url("/static/vendor/jsme/license.txt"))
    assert status == 200 and b"Redistribution and use in source and binary forms" in text


def test_without_the_editor_the_page_says_so_and_searches(page):
    browser, live, store = page
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/vendor/jsme/*"]})
    try:
        open_page(browser, live)
        note = browser.find_element(By.ID, "editor-note")
        wait(browser).until(lambda b: note.is_displayed())
        assert "not installed" in note.text and "type a SMILES" in note.text
        assert not browser.find_element(By.ID, "jsme").is_displayed()
        assert browser.execute_script("return window.jsmeApplet === undefined")
        search(browser, "substructure", "c1ccncc1")
        want = store.substructure("c1ccncc1").tolist()
        assert f"{len(want):,} hits" in browser.find_element(By.ID, "summary").text
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": False})


def test_the_page_fits_a_420_pixel_screen(page):
    browser, live, _store = page
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        open_page(browser, live)
        assert browser.execute_script("return window.innerWidth") == 420
        if (VENDOR / "jsme").is_dir():
            wait(browser).until(lambda b: b.execute_script("return !!window.jsmeApplet"))
        for type_, query, opts in (
            ("substructure", "c1ccncc1", {}),
            ("analogs", QUERY, {"dist": 1}),
        ):
            search(browser, type_, query, **opts)
            wait(browser).until(lambda b: len(rows(b)) > 0)
            imgs = depictions_drawn(browser)
            assert all(250 <= width_of(browser, img) <= 420 for img in imgs)
            widths = browser.execute_script(
                "return [document.body.scrollWidth, document.documentElement.scrollWidth, "
                "window.innerWidth]"
            )
            assert widths[0] <= widths[2] and widths[1] <= widths[2], (type_, widths)
            for el in browser.find_elements(By.CSS_SELECTOR, "#jsme, form, #hits, .bar"):
                assert (
                    browser.execute_script("return arguments[0].getBoundingClientRect().right", el)
                    <= 420
                )
        # every field of a hit is labelled in its card
        labels = [cells(rows(browser)[0])[k] for k in ("id", "distance", "score")]
        assert [
            browser.execute_script("return getComputedStyle(arguments[0], '::before').content", td)
            for td in labels
        ] == ['"Id: "', '"Edits: "', '"Tanimoto: "']
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_docs_render_the_operations(page):
    vendored("swagger-ui")
    browser, live, _store = page
    status, _ctype, body = fetch(live.url("/openapi.json"))
    assert status == 200 and b'"openapi":"3.1' in body.replace(b" ", b"")
    browser.get(live.url("/docs"))
    # (Swagger UI 4 and older say "Unable to render this definition" for OpenAPI 3.1)
    wait(browser).until(
        lambda b: (
            b.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
            or "Unable to render" in b.find_element(By.TAG_NAME, "body").text
        )
    )
    paths = {
        el.get_attribute("data-path")
        for el in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
    }
    assert {"/api/v1/search", "/api/v1/depict", "/api/v1/databases"} <= paths
    assert "Unable to render" not in browser.find_element(By.TAG_NAME, "body").text
    # the highlight parameters are documented
    status, _ctype, body = fetch(live.url("/openapi.json"))
    assert b'"highlight"' in body


def test_docs_without_swagger_ui_say_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(app_module, "SWAGGER", tmp_path / "absent")
    status, body = asgi_get(create_app(Catalog(), access_log=io.StringIO()), "/docs")
    assert status == 200 and b"Swagger UI is not installed" in body
    assert b"scripts/vendor_js.sh" in body and b"openapi.json" in body
