"""`molsift serve`'s web page in a real browser: headless Chromium from Debian's packages driven
by Selenium through Debian's chromedriver (scripts/setup.sh installs all three when
MOLSIFT_WITH_BROWSER=1, as scripts/test.sh asks). The browser loads the page from a live
server, types a SMILES, submits, waits for the table, and the rows, their depictions, paging and
an error message are checked against the library. `MOLSIFT_SCREENSHOT=PATH` also saves a
screenshot of the results there (docs/serve-page.png was made that way). The store is the one
store as ingest writes it, with every index, so the page offers every search type."""

from __future__ import annotations

import os
import shutil

import pytest
from rdkit import Chem
from servers import Live

import molsift
from molsift.serve import Catalog, create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
QUERY = "CC(=O)Nc1ccc(O)cc1"
TYPES = ["similarity", "substructure", "smarts", "exact"]

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(
        "chromium and chromedriver not installed (MOLSIFT_WITH_BROWSER=1 bash scripts/setup.sh "
        "installs Debian's packages; scripts/test.sh does)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver")
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


def rows(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#hits tbody tr")


def test_a_chemist_types_a_smiles_and_sees_structures(page):
    browser, live, store = page
    browser.get(live.url("/"))
    wait(browser).until(lambda b: len(Select(b.find_element(By.ID, "db")).options) == 1)
    assert "4,991" in Select(browser.find_element(By.ID, "db")).first_selected_option.text
    types = [o.text for o in Select(browser.find_element(By.ID, "type")).options]
    assert types == TYPES
    box = browser.find_element(By.ID, "query")
    box.send_keys(QUERY)
    browser.find_element(By.ID, "k").send_keys("40")
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(ec.visibility_of_element_located((By.ID, "hits")))
    wait(browser).until(lambda b: len(rows(b)) == 25)
    want = store.search(QUERY, k=40)
    first = rows(browser)[0].find_elements(By.TAG_NAME, "td")
    assert first[2].text == store.ids[int(want.indices[0])]
    assert first[3].text == store.smiles[int(want.indices[0])]
    assert first[4].text == f"{want.scores[0]:.3f}"
    ids = [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows(browser)]
    assert ids == [store.ids[int(i)] for i in want.indices[:25]]
    assert "40 hits" in browser.find_element(By.ID, "summary").text
    # every depiction drew (an SVG from /api/v1/depict)
    wait(browser).until(
        lambda b: all(
            b.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)
            for img in b.find_elements(By.CSS_SELECTOR, "#hits img")
        )
    )
    if os.environ.get("MOLSIFT_SCREENSHOT"):
        browser.save_screenshot(os.environ["MOLSIFT_SCREENSHOT"])
    # the next page holds the rest
    browser.find_element(By.ID, "next").click()
    wait(browser).until(lambda b: len(rows(b)) == 15)
    ids = [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows(browser)]
    assert ids == [store.ids[int(i)] for i in want.indices[25:40]]
    assert not browser.find_element(By.ID, "next").is_enabled()
    href = browser.find_element(By.ID, "download").get_attribute("href")
    assert "fmt=tsv" in href and "query=CC" in href


def test_substructure_search_and_errors_in_words(page):
    browser, live, store = page
    browser.get(live.url("/"))
    wait(browser).until(lambda b: len(Select(b.find_element(By.ID, "type")).options) == 4)
    Select(browser.find_element(By.ID, "type")).select_by_value("substructure")
    assert not browser.find_element(By.ID, "threshold").is_displayed()
    browser.find_element(By.ID, "query").send_keys("c1ccncc1")
    browser.find_element(By.ID, "submit").click()
    want = store.substructure("c1ccncc1").tolist()
    wait(browser).until(lambda b: f"{len(want):,} hits" in b.find_element(By.ID, "summary").text)
    ids = [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows(browser)]
    assert ids == [store.ids[p] for p in want[:25]]
    box = browser.find_element(By.ID, "query")
    box.clear()
    box.send_keys("C1CC(")
    browser.find_element(By.ID, "submit").click()
    error = browser.find_element(By.ID, "error")
    wait(browser).until(lambda b: error.is_displayed())
    assert "Search failed" in error.text and "invalid query" in error.text
    assert not browser.find_element(By.ID, "results").is_displayed()


def test_an_exact_search_finds_the_molecule_from_another_smiles(page):
    browser, live, store = page
    pos = 1234
    Chem.rdBase.SeedRandomNumberGenerator(pos)
    query = Chem.MolToSmiles(Chem.MolFromSmiles(store.smiles[pos]), doRandom=True)
    assert query != store.smiles[pos]
    browser.get(live.url("/"))
    wait(browser).until(lambda b: len(Select(b.find_element(By.ID, "type")).options) == 4)
    Select(browser.find_element(By.ID, "type")).select_by_value("exact")
    assert not browser.find_element(By.ID, "threshold").is_displayed()
    browser.find_element(By.ID, "query").send_keys(query)
    browser.find_element(By.ID, "submit").click()
    wait(browser).until(ec.visibility_of_element_located((By.ID, "hits")))
    wait(browser).until(lambda b: len(rows(b)) > 0)
    cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows(browser)]
    assert store.ids[pos] in [c[2] for c in cells]
    assert all(c[3] == store.smiles[pos] and c[4] == "" for c in cells)
