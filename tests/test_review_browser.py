"""The review page in a real browser: Debian's headless Chromium driven by Selenium
(scripts/setup.sh installs chromium, chromium-driver and selenium). Load the page, judge by
keyboard only, reload and find the judgements resumed, judge in two tabs, and read review.jsonl.
The tests skip, saying why, only where the browser or its driver is not installed."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from test_export import make_run, record
from transnli.review.index import LineIndex
from transnli.review.log import LOG, JudgementLog
from transnli.review.server import ReviewServer
from transnli.review.session import ReviewSession, SessionSettings

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip(
        "Debian's chromium and chromium-driver are not installed (apt-get install chromium "
        "chromium-driver; scripts/setup.sh does it where apt-get is available)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def site(tmp_path):
    """A run of 12 triples served on a free port; yields (url, run folder)."""
    run = make_run(tmp_path / "run", [record(i) for i in range(12)], [])
    session = ReviewSession(
        LineIndex(run / "triples.jsonl"),
        JudgementLog(run / LOG),
        SessionSettings(sample=10, seed=2, annotator="tester"),
    )
    server = ReviewServer(session, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url, run
    server.shutdown()
    server.server_close()


def wait(driver, predicate, timeout=10):
    return WebDriverWait(driver, timeout).until(lambda d: predicate(d))


def shown_index(driver) -> int | None:
    value = driver.execute_script(
        "const t = document.getElementById('triple');"
        "return t.hidden ? null : (t.dataset.index === undefined ? null : t.dataset.index);"
    )
    return None if value is None else int(value)


def text(driver, element_id) -> str:
    return driver.find_element("id", element_id).text


def press(driver, keys: str) -> None:
    ActionChains(driver).send_keys(keys).perform()


def press_and_wait(driver, key: str) -> int | None:
    """Press one key and wait until the page shows another triple (or none)."""
    before = shown_index(driver)
    press(driver, key)
    wait(driver, lambda d: shown_index(d) != before)
    return shown_index(driver)


def log_lines(run) -> list[dict]:
    path = run / LOG
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def open_page(driver, url):
    driver.get(url)
    wait(driver, lambda d: shown_index(d) is not None and "done" in text(d, "progress"))


def test_judging_by_keyboard_alone_then_reload_resumes(browser, site, tmp_path):
    url, run = site
    open_page(browser, url)
    first = shown_index(browser)
    assert text(browser, "premise").startswith("A woman opens door")
    highlighted = browser.find_elements("css selector", "#modified .hl")
    assert [e.text for e in highlighted] == ["man"]
    assert "POS NOUN" in text(browser, "swap") and "grammar" in text(browser, "checks")
    assert "polysemy" in text(browser, "guideline")  # the guideline is on the page

    presses = 0
    for _ in range(3):  # good: one key each
        press_and_wait(browser, "g")
        presses += 1
    press_and_wait(browser, "3")  # bad, polysemy: the error type's number alone
    press(browser, "b")  # bad, then the type: grammar
    press_and_wait(browser, "2")
    press(browser, "r")  # a reason, typed into the box, Enter back to the keys, then good
    press(browser, "odd but fine\n")
    press_and_wait(browser, "g")
    press_and_wait(browser, "s")  # skip
    press_and_wait(browser, "u")  # undo the skip: that triple is shown again
    assert "took back" in text(browser, "status")
    lines = log_lines(run)
    assert [(x["good"], x["error_type"], x.get("skipped"), x.get("undone")) for x in lines] == [
        (True, None, None, None),
        (True, None, None, None),
        (True, None, None, None),
        (False, "polysemy", None, None),
        (False, "grammar", None, None),
        (True, None, None, None),
        (None, None, True, None),
        (None, None, True, True),
    ]
    assert lines[0]["index"] == first and lines[5]["reason"] == "odd but fine"
    assert {x["annotator"] for x in lines} == {"tester"}
    assert presses == 3  # one keypress per good judgement

    browser.refresh()  # a reload resumes where the log stands
    open_page(browser, url)
    assert shown_index(browser) == lines[6]["index"]
    assert text(browser, "progress").startswith("6 / 10 done (good 4, bad 2, skipped 0)")
    browser.save_screenshot(str(tmp_path / "review.png"))
    assert (tmp_path / "review.png").stat().st_size > 10_000


def test_ten_good_judgements_take_ten_keypresses(browser, site):
    url, run = site
    open_page(browser, url)
    for _ in range(10):
        press_and_wait(browser, "g")
    assert shown_index(browser) is None and not browser.find_element("id", "done").get_attribute(
        "hidden"
    )
    assert len(log_lines(run)) == 10 and all(x["good"] for x in log_lines(run))
    assert len({x["index"] for x in log_lines(run)}) == 10


def test_two_tabs_never_judge_one_triple_twice(browser, site):
    url, run = site
    open_page(browser, url)
    first_tab = browser.current_window_handle
    browser.switch_to.new_window("tab")
    open_page(browser, url)
    second_tab = browser.current_window_handle
    shared = shown_index(browser)
    browser.switch_to.window(first_tab)
    assert shown_index(browser) == shared
    press_and_wait(browser, "g")  # judged in the first tab
    browser.switch_to.window(second_tab)
    # The second tab refetches when it comes into view; where it still shows the triple the
    # first one judged, its key is refused by the server (409) and the page moves on, saying so.
    press(browser, "g")
    wait(browser, lambda d: shown_index(d) != shared)
    if len(log_lines(run)) == 1:
        status = text(browser, "status")
        assert status == "" or "judged meanwhile (another tab?)" in status
        press_and_wait(browser, "g")
    indices = [x["index"] for x in log_lines(run)]
    assert len(indices) == len(set(indices)) == 2 and indices[0] == shared
    browser.switch_to.window(first_tab)
    browser.refresh()
    open_page(browser, url)
    assert text(browser, "progress").startswith("2 / 10 done")
    browser.switch_to.window(second_tab)
    browser.close()
    browser.switch_to.window(first_tab)


def test_the_page_loads_no_external_asset(browser, site):
    url, _ = site
    open_page(browser, url)
    external = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => !n.startsWith(location.origin))"
    )
    assert external == []
    html = browser.page_source
    assert "http://" not in html.replace(url, "") and "https://" not in html


def test_the_url_annotator_overrides_the_default(browser, site):
    url, run = site
    open_page(browser, url + "&annotator=second")
    press_and_wait(browser, "g")
    assert log_lines(run)[0]["annotator"] == "second"
    assert "annotator: second" in text(browser, "who")


def test_a_triple_judged_elsewhere_meanwhile_is_refused_and_the_page_moves_on(browser, site):
    """Another tab (here a direct API call) judges the triple this page shows: the key is refused
    by the server, the page says so and shows the next triple; the log holds one line."""
    import urllib.request

    url, run = site
    open_page(browser, url)
    shown = shown_index(browser)
    body = json.dumps({"index": shown, "verdict": "good"}).encode()
    token = url.split("token=")[1]
    req = urllib.request.Request(
        url.split("?")[0] + "api/judge", data=body, method="POST", headers={"X-Review-Token": token}
    )
    urllib.request.urlopen(req, timeout=10).close()
    press(browser, "g")
    wait(browser, lambda d: shown_index(d) != shown)
    assert "judged meanwhile (another tab?)" in text(browser, "status")
    assert [x["index"] for x in log_lines(run)] == [shown]
