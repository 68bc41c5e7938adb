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
from transnli.review.log import LOG, JudgementLog, triple_digest
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


def wait(driver, predicate, timeout=60):
    # Generous: a wait ends as soon as the page is there; the limit only matters under load.
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


def idle(driver) -> bool:
    """No API call of the page is in flight."""
    return driver.execute_script("return document.body.dataset.inflight || '0'") == "0"


def open_page(driver, url):
    driver.get(url)
    wait(
        driver,
        lambda d: shown_index(d) is not None and "done" in text(d, "progress") and idle(d),
    )


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
    """A tab that comes back into view shows the next triple nobody judged; judging there never
    repeats the other tab's triple. (A key pressed on a triple judged elsewhere is refused: the
    next test.) Each step waits for the page to be idle, so no keypress races a fetch."""
    url, run = site
    open_page(browser, url)
    first_tab = browser.current_window_handle
    browser.switch_to.new_window("tab")
    open_page(browser, url)
    second_tab = browser.current_window_handle
    shared = shown_index(browser)
    browser.switch_to.window(first_tab)
    wait(browser, idle)  # its refetch on coming into view
    assert shown_index(browser) == shared
    press_and_wait(browser, "g")  # judged in the first tab
    wait(browser, idle)
    browser.switch_to.window(second_tab)
    wait(browser, lambda d: idle(d) and shown_index(d) != shared)  # refetched on view
    moved_to = shown_index(browser)
    assert moved_to is not None and "1 / 10 done" in text(browser, "progress")
    press_and_wait(browser, "g")
    wait(browser, idle)
    indices = [x["index"] for x in log_lines(run)]
    assert indices == [shared, moved_to]
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
    digest = triple_digest(LineIndex(run / "triples.jsonl").record(shown))
    body = json.dumps({"index": shown, "verdict": "good", "digest": digest}).encode()
    token = url.split("token=")[1]
    req = urllib.request.Request(
        url.split("?")[0] + "api/judge", data=body, method="POST", headers={"X-Review-Token": token}
    )
    urllib.request.urlopen(req, timeout=10).close()
    press(browser, "g")
    wait(browser, lambda d: shown_index(d) != shown and idle(d))
    assert "judged meanwhile (another tab?)" in text(browser, "status")
    assert [x["index"] for x in log_lines(run)] == [shown]


def test_a_triple_edited_under_the_page_is_shown_again_not_judged(browser, site):
    """Issue 38: triples.jsonl edited while the page shows a triple: the verdict carries the digest
    of what was shown, the server refuses it, and the page shows the triple as it is now."""
    url, run = site
    open_page(browser, url)
    shown = shown_index(browser)
    triples = run / "triples.jsonl"
    lines = triples.read_text().splitlines()
    lines[shown] = json.dumps({**json.loads(lines[shown]), "modified_hypothesis": "Edited now."})
    triples.write_text("\n".join(lines) + "\n")
    press(browser, "g")
    wait(browser, lambda d: "Edited now." in text(d, "modified") and idle(d))
    assert shown_index(browser) == shown
    assert "changed in triples.jsonl since the page showed it: not saved" in text(browser, "status")
    assert log_lines(run) == []
    press_and_wait(browser, "g")
    assert [(x["index"], x["modified_hypothesis"]) for x in log_lines(run)] == [
        (shown, "Edited now.")
    ]


ATTACK = """<!doctype html><html><body><script>
const target = TARGET;
const body = JSON.stringify({index: INDEX, verdict: "good", annotator: "mallory"});
Promise.allSettled([
  fetch(target + "api/judge", {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"}, body}),
  fetch(target + "api/judge", {method: "POST", mode: "cors",
    headers: {"Content-Type": "application/json", "X-Review-Token": "guess"}, body}),
  fetch(target + "api/state", {mode: "cors"}).then((r) => r.text()),
]).then((results) => {
  document.title = "sent";
  document.body.dataset.results = JSON.stringify(results.map((r) => r.status));
});
</script></body></html>"""


@pytest.fixture
def attacker():
    """A page of another origin (another port) that posts to the review server as a forger
    would; serves ATTACK with the target filled in by the test."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pages = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, pages
    server.shutdown()
    server.server_close()


def test_a_page_of_another_origin_cannot_judge(browser, site, attacker):
    """The forgery that worked before the token: another site's page in the same browser posts
    a no-cors judgement (and tries CORS and a read); nothing reaches review.jsonl."""
    url, run = site
    base = url.split("?")[0]
    server, pages = attacker
    for name, target in (("/a", base), ("/b", base.replace("127.0.0.1", "localhost"))):
        pages[name] = ATTACK.replace("TARGET", json.dumps(target)).replace("INDEX", "0")
        browser.get(f"http://127.0.0.1:{server.server_address[1]}{name}")
        wait(browser, lambda d: d.title == "sent")
    assert log_lines(run) == []


def test_the_page_runs_only_its_own_script_and_links_the_guideline(browser, site):
    url, _ = site
    open_page(browser, url)
    injected = browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.pwned = 1';"
        "document.body.append(s); return window.pwned === undefined;"
    )
    assert injected  # the Content-Security-Policy blocks an inline script it does not list
    link = browser.find_element("id", "guide-link")
    assert link.get_attribute("href").startswith(url.split("?")[0] + "judging.md?token=")
    browser.get(link.get_attribute("href"))
    assert "Judging a generated triple" in browser.find_element("tag name", "body").text
