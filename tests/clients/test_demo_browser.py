"""The demo page of ``dprec serve demo`` in a real browser (issue 34 §2, §3): Debian's headless
Chromium driven by Playwright, against real services (:class:`~dprec.services.demo.Demo`:
the page server, the dp-pop server and proxy as processes, Python device clients).

Skipped only when Chromium (or Playwright) is missing and DPREC_REQUIRE_BROWSER is unset, as
tests/report/test_report_browser.py; CI sets it, so there a missing browser fails.
"""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from randomgen import ChaCha

sys.path.insert(0, str(Path(__file__).parent))
from demo_fixture import fixture_catalogue  # noqa: E402

from dprec.client import RandomSource  # noqa: E402
from dprec.client.http import ServerAPI  # noqa: E402
from dprec.protocol.secure_sum.vdaf.field import Field64  # noqa: E402
from dprec.services.demo import (  # noqa: E402
    Demo,
    DemoSettings,
    catalogue_of,
    round_calibration,
)

AXE = Path(__file__).parents[2] / "clients" / "js" / "node_modules" / "axe-core" / "axe.min.js"
NEEDS = {AXE: "axe-core: make test installs it, npm ci"}


def _wait(page, condition: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` (a JS expression) until true: Playwright's wait_for_function
    evaluates a string, which the page's policy (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(condition):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {condition}")
        page.wait_for_timeout(50)


class Watched:
    """A page with its console errors, page errors and every request's URL recorded."""

    def __init__(self, context) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str) -> Watched:
        self.page.goto(url, wait_until="load")
        self.page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        return self

    def pick(self, query: str, n: int) -> list[int]:
        """Search ``query`` and tick the first ``n`` matches; their item ids."""
        self.page.fill("#search", query)
        boxes = self.page.locator("#matches input[type=checkbox]")
        ids = []
        for i in range(n):
            box = boxes.nth(i)
            box.check()
            ids.append(int(box.get_attribute("id").removeprefix("film-")))
        return ids

    def join(self) -> str:
        """Press the join button; the status it ends with."""
        self.page.click("#join")
        _wait(self.page, "document.querySelector('#status').textContent.length > 0 && "
              "!document.querySelector('#status').textContent.startsWith('Building')")
        return self.page.text_content("#status") or ""


def _axe(page) -> list[dict]:
    """axe-core's violations (injected through the debugger protocol, which the page's
    content-security policy does not govern)."""
    page.evaluate(AXE.read_text())
    return page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length}));
    }""")


def _tab_to(page, selector: str, most: int = 80) -> None:
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement === document.querySelector({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_the_page_loads_clean_works_by_keyboard_and_axe_finds_nothing_serious(tmp_path, chromium):
    sync_playwright = chromium.require(NEEDS)
    settings = DemoSettings(crowd=10, seats=2)
    with Demo(settings, tmp_path / "demo", fixture_catalogue()).start(crowd=False) as demo, \
            sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            w = Watched(browser.new_context()).open(demo.page.url)
            page = w.page
            csp = page.evaluate("fetch('/').then(r => r.headers.get("
                                "'content-security-policy'))")
            # the round's terms came from the server, across origins, under the policy
            assert "ε = 1" in (page.text_content("#terms") or "")
            assert page.text_content("#trust-min-honest") == "10"
            images = page.evaluate("Array.from(document.images, i => [i.alt, i.complete, "
                                   "i.naturalWidth])")
            violations = _axe(page)
            # the check can fail: an input without a label is a critical violation
            page.evaluate("document.querySelector('main').append(document.createElement('input'))")
            control = _axe(page)
            # keyboard alone: the search field, a film's checkbox, then the join button
            page.goto(demo.page.url, wait_until="load")
            page.wait_for_selector("body[data-ready='1']")
            _tab_to(page, "#search")
            page.keyboard.type("friends")
            page.keyboard.press("Tab")
            focused = page.evaluate("[document.activeElement.type, "
                                    "getComputedStyle(document.activeElement).outlineStyle]")
            page.keyboard.press("Space")
            picked = page.text_content("#picked-count")
            _tab_to(page, "#join")
            join_tag = page.evaluate("[document.activeElement.tagName, "
                                     "document.activeElement.disabled]")
        finally:
            browser.close()
    assert w.errors == [], w.requests
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert images and [alt for alt, done, width in images if not done or width == 0] == []
    assert [v for v in violations if v["impact"] in ("serious", "critical")] == []
    assert any(v["id"] == "label" and v["impact"] == "critical" for v in control), control
    assert focused == ["checkbox", "solid"]  # a visible focus ring
    assert picked == "1"
    assert join_tag == ["BUTTON", False]
    assert all(u.startswith("http://127.0.0.1:") for u in w.requests), w.requests


class _Replayable(RandomSource):
    """A crowd device's randomness that this test can replay (the demo's ``crowd_source``
    test hook): ChaCha20 under a fresh 256-bit key per client step, the keys kept here."""

    secure = True

    def __init__(self) -> None:
        self.keys: list[np.ndarray] = []

    def generator(self) -> np.random.Generator:
        from randomgen import ChaCha

        self.keys.append(np.frombuffer(secrets.token_bytes(32), np.uint64).copy())
        return np.random.Generator(ChaCha(key=self.keys[-1].copy(), counter=0, rounds=20))


def _crowd_plaintexts(demo: Demo, sources: list[_Replayable], info) -> tuple[list, list]:
    """Each crowd device's v (its k-hot row: k covers every fixture history, so all its
    films) and y = v + z, replayed from its one generator key as its client step drew them
    (dp-pop's device_vector: the share first, again until it meets the Prio3 truncation)."""
    from dprec.systems.dp_pop.deploy import check_of, own_items, round_of
    from dprec.systems.dp_pop.draws import device_vector

    k, sampling, d = int(info.config.k), info.config.sampling, int(info.n_items)
    share, check = round_of(info).share, check_of(info)
    vs, ys = [], []
    for user, source in enumerate(sources):
        assert len(source.keys) == 1, (user, len(source.keys))  # one report, one step
        history = demo.crowd_history(user)
        items = own_items(sp.csr_matrix(history), k, sampling)
        assert items.size <= k  # v is the whole history: no draw picks the films
        rng = np.random.Generator(ChaCha(key=source.keys[0].copy(), counter=0, rounds=20))
        ys.append(device_vector(items, d, k, sampling, share, rng, check))
        vs.append(history.astype(np.int64))
    return vs, ys


def _field_sum(rows: list) -> np.ndarray:
    """sum(rows) as the server sums proved uploads: in Field64 (p = 2^64 - 2^32 + 1),
    lifted to (-p/2, p/2] (Field64.centred)."""
    p = Field64.MODULUS
    total = [sum(int(r[j]) for r in rows) % p for j in range(len(rows[0]))]
    return np.array([t - p if t > p // 2 else t for t in total], dtype=np.int64)


@pytest.mark.browser
@pytest.mark.slow  # 200 Python devices with Prio3 proofs and 20 browser contexts
@pytest.mark.timeout(900)
def test_twenty_browsers_and_two_hundred_devices_complete_one_round(tmp_path, chromium):
    """The released counts are exactly the sum (in the proof's field, as the server sums) of
    every device's plaintext y = v + z, what it secret-shares: the browsers' from the SDK's
    plaintext hook (the page's test flag), the crowd's replayed from their recorded
    generator keys; and the v alone sum to the plain count of every device's films (k = 10
    covers each fixture history, so nothing is sampled away). Each share lies in [-T, T] per
    film (the Prio3 proof's bound), every upload was summed (the proxy's and the server's
    joint check refused none), and the ranking shown is the counts' order."""
    sync_playwright = chromium.require(NEEDS)
    ds = fixture_catalogue(n_users=230, n_items=40, per_user=4)
    settings = DemoSettings(crowd=200, seats=20, k=10, close_at=220)
    sources = [_Replayable() for _ in range(settings.crowd)]
    with Demo(settings, tmp_path / "demo", ds, crowd_source=sources.__getitem__).start(
            crowd=False) as demo, sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            pages = [Watched(browser.new_context()).open(demo.page.url + "?test-hook=plaintext")
                     for _ in range(20)]
            films = [w.pick("film", 1 + i % 4) for i, w in enumerate(pages)]
            statuses = [w.join() for w in pages]
            assert all("accepted" in s for s in statuses), statuses
            plaintexts = [w.page.evaluate("window.dprecTestPlaintext") for w in pages]
            demo.start_crowd()
            closed = demo.wait_closed(timeout=600)
            pages[0].page.click("#recommend")
            pages[0].page.wait_for_selector("#recs li")
            shown = [int(x) for x in pages[0].page.eval_on_selector_all(
                "#recs li", "els => els.map(e => e.dataset.item)")]
            errors = [e for w in pages for e in w.errors]
        finally:
            browser.close()
        counts, contributors, bound = demo.released()
        server = ServerAPI(demo.server.url)
        try:
            info = server.protocol()
        finally:
            server.close()
        crowd_v, crowd_y = _crowd_plaintexts(demo, sources, info)
    assert closed["outcomes"] == {"summed": 220, "refused": 0, "below_threshold": 0,
                                  "lost": 0}, closed
    assert contributors == 220 and errors == [] and demo.crowd_errors == []
    browser_v = [np.asarray(t["v"], np.int64) for t in plaintexts]
    browser_y = [np.asarray(t["y"], np.int64) for t in plaintexts]
    for v, picked in zip(browser_v, films, strict=True):  # v: the films the person ticked
        assert np.flatnonzero(v).tolist() == sorted(picked) and v.max() == 1
    ys, vs = crowd_y + browser_y, crowd_v + browser_v
    assert all(np.abs(y - v).max() <= bound for y, v in zip(ys, vs, strict=True))  # [-T, T]
    # the exact check: the published counts are the sum of what the 220 devices shared
    np.testing.assert_array_equal(counts, _field_sum(ys))
    plain = np.zeros(ds.n_items, np.int64)
    for user in range(200):
        plain += demo.crowd_history(user).astype(np.int64)
    for picked in films:
        plain[picked] += 1
    np.testing.assert_array_equal(_field_sum(vs), plain)
    assert not np.array_equal(counts, plain)  # the shares are in the sum
    # and they are as large as calibrated: the 220 shares of Sk(mu_share) per film sum to
    # Sk(220 mu_share); 8 sd bounds all 40 films but with probability < 1e-10
    sd = np.sqrt(220 * 2 * round_calibration(demo.params, ds.n_items)["muShare"])
    assert np.abs(counts - plain).max() <= 8 * sd, (counts - plain, sd)
    order = sorted((i for i in range(ds.n_items) if i not in set(films[0])),
                   key=lambda i: (-counts[i], i))
    assert shown == order[:10]


def _spent(page) -> str:
    _wait(page, "!document.querySelector('#left-budget').textContent.startsWith('unknown')", 30)
    return page.text_content("#left-budget") or ""


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_the_ledger_survives_a_reload_and_a_second_tab_charges_nothing_more(tmp_path,
                                                                          chromium):
    """One seat, two tabs of one browser (one IndexedDB ledger, Web Locks): both press
    join at once; one report is charged (epsilon 1 of 3) and the other tab re-sends the
    stored message; a reload shows the same ledger."""
    sync_playwright = chromium.require(NEEDS)
    settings = DemoSettings(crowd=10, seats=2)
    with Demo(settings, tmp_path / "demo", fixture_catalogue()).start(crowd=False) as demo, \
            sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            context = browser.new_context()
            first = Watched(context).open(demo.page.url)
            first.pick("film", 3)
            first.page.reload()
            first.page.wait_for_selector("body[data-ready='1']")
            second = Watched(context).open(demo.page.url)  # the same seat (localStorage)
            for w in (first, second):
                _wait(w.page, "!document.querySelector('#join').disabled")
            first.page.click("#join")
            second.page.click("#join")
            statuses = [_status(w) for w in (first, second)]
            left = [_spent(w.page) for w in (first, second)]
            first.page.reload()
            first.page.wait_for_selector("body[data-ready='1']")
            after_reload = _spent(first.page)
            errors = first.errors + second.errors
        finally:
            browser.close()
    assert sorted("sent again" in s for s in statuses) == [False, True], statuses
    assert left == ["ε = 2 of 3 left"] * 2, left
    assert after_reload == "ε = 2 of 3 left"
    # the browser logs the proxy's 409 to the re-sent stored message (the protocol's "it had
    # arrived", read as accepted by the SDK), and nothing else
    assert [e for e in errors if "status of 409 (Conflict)" not in e] == [] and len(errors) <= 1


def _status(w: Watched) -> str:
    _wait(w.page, "document.querySelector('#status').textContent.length > 0 && "
          "!document.querySelector('#status').textContent.startsWith('Building')")
    return w.page.text_content("#status") or ""


def _liar_process(root: Path):
    """tests/client's lying server (liar.py through its conftest's LiarProcess)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "client_liar_conftest", Path(__file__).parents[1] / "client" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root.mkdir(parents=True, exist_ok=True)
    return module.LiarProcess(root)


@pytest.mark.browser
@pytest.mark.timeout(180)
@pytest.mark.parametrize(("lie", "reason"), [
    ({"epsilon": 20.0}, "config.epsilon = 20"),      # more than the round's (1)
    ({"aggregation": "trusted"}, "aggregation"),     # the report in the clear to a curator
    # an inflated min_honest: each device's noise share Sk(mu / min_honest) shrinks
    ({"n_clients": 200_000, "min_honest": 150_000}, "config.min_honest = 150000")])
def test_a_hostile_server_gets_no_report_beyond_the_policy(tmp_path, lie, reason, chromium):
    """The page talks to tests/client's lying server (server and proxy) describing a dp-pop
    round the device's policy does not accept: the page says why, nothing is POSTed to the
    liar, no artefact is fetched and nothing is charged."""
    from dprec.services.demo_page import PageServer
    from dprec.systems.deployable import ProtocolInfo
    from dprec.systems.dp_pop.system import DpPopConfig

    sync_playwright = chromium.require(NEEDS)
    ds = fixture_catalogue(n_users=5, n_items=40)
    liar = _liar_process(tmp_path / "liar")
    page_server = PageServer()
    try:
        origin = {"Access-Control-Allow-Origin": page_server.origin}
        doc = ProtocolInfo("dp-pop", 40, DpPopConfig(k=10, n_clients=30, min_honest=20)
                           ).to_json()
        config = {**doc["config"], **lie}
        if config["aggregation"] == "trusted":
            config["min_honest"] = None
        liar.serve({"GET /v1/protocol": {"json": {**doc, "config": config}, "headers": origin},
                    "GET /v1/round": {"json": {"started": True, "finished": False, "round": 0},
                                      "headers": origin},
                    "POST /v1/rounds/0/reports": {"status": 202, "json": {"accepted": True},
                                                  "headers": origin}})
        seat = iter([{"client_id": 3, "token": "t"}])
        honest = {"epsilon": "1.0", "k": "10", "n_clients": "30", "min_honest": "20"}
        page_server.serve({"server": liar.url, "proxy": liar.url, "crowd": 20, "seats": 1,
                           "round": round_calibration(honest, 40), "items": catalogue_of(ds)},
                          lambda: next(seat, None), lambda c: None)
        with sync_playwright() as p:
            browser = chromium.launch(p)
            try:
                w = Watched(browser.new_context()).open(page_server.url)
                w.pick("film", 2)
                _wait(w.page, "!document.querySelector('#join').disabled")
                status = w.join()
                terms = w.page.text_content("#terms")
                budget = _spent(w.page)
            finally:
                browser.close()
        posts = liar.requests("POST")
        fetched = liar.requests(prefix="/v1/artefacts")
    finally:
        page_server.stop()
        liar.stop()
    assert status.startswith("Not sent") and reason in status, (status, terms)
    assert posts == [] and fetched == []
    assert budget == "ε = 3 of 3 left"
