"""Every page on a phone held upright: Chromium's mobile emulation at 390×844 (pixel
ratio 3, a phone's user agent) against two federated zones of this module, with data,
a replica at the peer, transfers, rules, users and tokens to show. On each page nothing
scrolls sideways and the page is not zoomed out, every entry of the top bar lies within
the screen and is what a tap there hits, and on an object's page the metadata and grant
forms work by tapping. The tests take the ``phone-*.png`` screenshots in ``docs/ui/``."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from test_web import CHROMEDRIVER, CHROMIUM, SHOTS, MiB, api, login, mkdir, put, quoted, unique, wait
from test_web_data import follow, meta_ls, notice
from zonelib import Zone

WIDTH, HEIGHT = 390, 844
PHONE = {
    "deviceMetrics": {"width": WIDTH, "height": HEIGHT, "pixelRatio": 3.0},
    "userAgent": (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/126.0 Mobile Safari/537.36"
    ),
}
RULES = """
[[rule]]
name = "tag-raw"
on = "created"
[rule.if]
path = "/pa/home/admin/**/raw/**"
[rule.do]
set_meta = ["stage=seen"]
"""


def weft_ok(zone: Zone, *args: str) -> str:
    r = zone.weft(*args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


@dataclass
class Site:
    """Zone ``pa`` (federated with ``pb``) and what its pages show."""

    a: Zone
    b: Zone
    collection: str
    obj: str
    transfer: str


@pytest.fixture(scope="module")
def site(zone_root: pathlib.Path, isolated_config: pathlib.Path) -> Iterator[Site]:
    root = pathlib.Path(tempfile.mkdtemp(prefix="weft-web-phone-", dir=zone_root))
    a, b = Zone.start("pa", root), Zone.start("pb", root)
    try:
        secret = root / "shared.secret"
        secret.write_text("p" * 48)
        weft_ok(a, "zone", "add", "pb", b.url, "--secret-file", str(secret))
        weft_ok(b, "zone", "add", "pa", a.url, "--secret-file", str(secret))
        grant = {"principal": "admin#pa", "permission": "write", "recursive": True}
        api(b, "POST", "/api/v1/acl/pb/home/admin", json.dumps(grant))
        rules = root / "rules.toml"
        rules.write_text(RULES)
        weft_ok(a, "policy", "apply", str(rules))
        # Long names, as real data has: the tables and forms must still fit.
        d = "/pa/home/admin/cryo-em-2024-11-apoferritin-session-0042"
        mkdir(a, f"{d}/raw")
        obj = f"{d}/raw/FoilHole_31874529_Data_31869352_31869354_20241107_fractions.tiff"
        put(a, obj, os.urandom(2 * MiB))
        put(a, f"{d}/raw/FoilHole_31874529_Data_31869352_31869355_20241107_fractions.tiff", os.urandom(MiB))
        put(a, f"{d}/README.md", b"# Apoferritin\n")
        for attr, value, unit in [("instrument", "Krios G4", ""), ("voltage", "300", "kV")]:
            weft_ok(a, "meta", "add", obj, attr, value, *([unit] if unit else []))
        weft_ok(a, "qos", "add", f"{d}/raw", "replicas=5")
        weft_ok(a, "user", "add", "carol")
        weft_ok(a, "group", "add", "physics")
        weft_ok(a, "group", "member", "add", "physics", "carol")
        weft_ok(a, "token", "create", "--user", "carol", "--label", "carol's laptop")
        # A replica of the object at pb, and a collection copied there: the distribution
        # and the history have rows.
        weft_ok(a, "transfer", "start", "-q", obj, "replica://pb")
        copy = f"/pb/home/admin/{unique('copy')}"
        tid = weft_ok(a, "transfer", "start", "-q", "-r", d, copy).strip().splitlines()[-1]
        deadline = time.monotonic() + 120
        while json.loads(api(a, "GET", f"/api/v1/transfers/{tid}"))["state"] != "succeeded":
            assert time.monotonic() < deadline, "the copy to pb did not succeed"
            time.sleep(0.5)
        # The session is a closed dataset whose new objects have their headers read.
        weft_ok(a, "extract", "enable", d)
        weft_ok(a, "dataset", "close", d)
        yield Site(a, b, d, obj, tid)
    finally:
        for z in (a, b):
            z.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def phone() -> Iterator[WebDriver]:
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--lang=en-GB"):
        opts.add_argument(arg)
    opts.add_experimental_option("mobileEmulation", PHONE)
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(60)
    yield d
    d.quit()


@pytest.fixture
def p(phone: WebDriver, site: Site) -> WebDriver:
    """The phone, logged in to ``pa`` as its administrator (by tapping the login form)."""
    phone.get(site.a.url + "/login")
    phone.delete_all_cookies()
    login(phone, site.a, site.a.token)
    return phone


# What a page looks like on the phone, measured in the page.
MEASURE = """
const bar = document.querySelector('header.topbar');
const entries = bar ? [...bar.querySelectorAll('a, button')] : [];
const escapes = e => {
  const free = ['absolute', 'fixed'].includes(getComputedStyle(e).position);
  for (let p = e.parentElement; p && !free; p = p.parentElement) {
    if (getComputedStyle(p).overflowX !== 'visible') return false;
  }
  return e.getBoundingClientRect().right > arguments[0] + 0.5;
};
return {
  viewport: (document.querySelector('meta[name=viewport]') || {}).content,
  inner: window.innerWidth,
  client: document.documentElement.clientWidth,
  scale: window.visualViewport.scale,
  scroll: document.documentElement.scrollWidth,
  wide: [...document.querySelectorAll('main *, header *')].filter(escapes)
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')).slice(0, 8),
  bar: entries.map(e => {
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {text: e.textContent.trim(), left: r.left, right: r.right, width: r.width,
            height: r.height, hit: !!hit && (hit === e || e.contains(hit))};
  }),
};
"""


def fits(d: WebDriver, bar: set[str]) -> dict[str, Any]:
    """Asserts that the page fits the phone: no sideways scrolling, not zoomed out, and
    every entry of the top bar (whose texts include ``bar``) on the screen and on top."""
    d.execute_script("window.scrollTo(0, 0)")
    m = d.execute_script(MEASURE, WIDTH)
    where = d.current_url
    assert m["viewport"] == "width=device-width, initial-scale=1", (where, m["viewport"])
    wider = max(m["scroll"], m["inner"]) - WIDTH
    assert m["scroll"] <= m["inner"] and wider <= 0, f"{where} is {wider} px wider than the phone: {m['wide']}"
    assert (m["inner"], m["client"], m["scale"]) == (WIDTH, WIDTH, 1), (where, m)
    texts = {e["text"] for e in m["bar"]}
    assert bar <= texts, (where, texts)
    for e in m["bar"]:
        assert e["width"] > 0 and e["height"] > 0, (where, e)
        assert 0 <= e["left"] and e["right"] <= WIDTH, f"{where}: the top bar cuts {e} off"
        assert e["hit"], f"{where}: a tap on {e} hits something else"
    return m


def shot(d: WebDriver, name: str) -> None:
    """A screenshot of the whole page as the phone lays it out (at twice the size)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    full = d.execute_script("return document.documentElement.scrollHeight")
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": max(HEIGHT, min(full, 4000)), "deviceScaleFactor": 2, "mobile": True},
    )
    try:
        d.save_screenshot(str(SHOTS / name))
    finally:
        d.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 3, "mobile": True},
        )


BAR = {"weft", "Data", "Transfers", "Zones", "Policies", "Admin", "Log out"}

# Each page of the interface: (its screenshot's name, its address on pa).
PAGES: list[tuple[str, Callable[[Site], str]]] = [
    ("data", lambda s: f"/data/{quoted(s.collection)}"),
    ("object", lambda s: f"/data/{quoted(s.obj)}"),
    ("details", lambda s: f"/details/{quoted(s.collection)}"),
    ("search", lambda s: f"/search/{quoted(s.collection)}?name=FoilHole&meta=voltage%3E%3D200"),
    ("delete", lambda s: f"/delete/{quoted(s.obj)}"),
    ("transfers", lambda s: "/transfers"),
    ("transfer-detail", lambda s: f"/transfers/{s.transfer}"),
    ("zones", lambda s: "/zones"),
    ("policies", lambda s: "/policies"),
    ("admin", lambda s: "/admin"),
    ("error", lambda s: f"/data/{quoted(s.collection)}/nothing-is-here"),
]


def test_the_login_page_fits_a_phone(phone: WebDriver, site: Site) -> None:
    phone.get(site.a.url + "/login")
    phone.delete_all_cookies()
    phone.refresh()
    fits(phone, {"weft"})
    shot(phone, "phone-login.png")


@pytest.mark.parametrize("name,where", PAGES, ids=[n for n, _ in PAGES])
def test_each_page_fits_a_phone(p: WebDriver, site: Site, name: str, where: Callable[[Site], str]) -> None:
    p.get(site.a.url + where(site))
    if name == "error":
        assert "Nothing is here" in p.find_element(By.TAG_NAME, "h1").text
    else:
        assert "permission" not in p.find_element(By.TAG_NAME, "h1").text
    if name == "data":
        assert "Dataset closed" in p.find_element(By.CSS_SELECTOR, "p.dataset").text
    if name == "details":
        assert len(p.find_elements(By.CSS_SELECTOR, "table.distribution tbody tr")) == 2
    if name == "object":
        assert len(p.find_elements(By.CSS_SELECTOR, "table.replicas tbody tr")) == 2
    if name == "search":
        assert len(p.find_elements(By.CSS_SELECTOR, "table.results tbody tr")) == 1
    if name == "transfers":
        assert p.find_elements(By.CSS_SELECTOR, "table.transfers tbody tr")
    fits(p, BAR)
    shot(p, f"phone-{name}.png")


def test_the_top_bar_leads_to_each_section_by_tapping(p: WebDriver, site: Site) -> None:
    sections = [("Transfers", "/transfers"), ("Zones", "/zones"), ("Policies", "/policies"), ("Admin", "/admin")]
    for label, path in sections:
        fits(p, BAR)
        follow(p, p.find_element(By.LINK_TEXT, label))
        assert p.current_url == site.a.url + path, (label, p.current_url)
        assert p.find_element(By.CSS_SELECTOR, "nav.primary a[aria-current=page]").text == label
    follow(p, p.find_element(By.LINK_TEXT, "Data"))
    assert p.current_url.startswith(site.a.url + "/data/pa/home/admin"), p.current_url
    follow(p, p.find_element(By.CSS_SELECTOR, "header.topbar button[type=submit]"))
    wait(p, lambda d: "/login" in d.current_url)


def test_the_object_pages_forms_work_by_tapping_on_a_phone(p: WebDriver, site: Site) -> None:
    a, obj = site.a, site.obj
    p.get(a.url + f"/data/{quoted(obj)}")
    fits(p, BAR)
    # Metadata: typed and sent with the form's own button.
    p.find_element(By.ID, "meta-attr").send_keys("detector")
    p.find_element(By.ID, "meta-value").send_keys("Falcon 4i")
    follow(p, p.find_element(By.CSS_SELECTOR, "form.meta-add button[type=submit]"))
    assert notice(p) == "Metadata added."
    assert ("detector", "Falcon 4i", "") in meta_ls(a, obj)
    fits(p, BAR)
    # Access: carol may read.
    p.find_element(By.ID, "grant-principal").send_keys("carol")
    Select(p.find_element(By.ID, "grant-permission")).select_by_value("read")
    follow(p, p.find_element(By.CSS_SELECTOR, "form.grant button[type=submit]"))
    assert notice(p) == "Access granted."
    acl = json.loads(api(a, "GET", f"/api/v1/acl/{quoted(obj)}"))
    assert {"principal": "carol", "kind": "user", "permission": "read"} in acl, acl
    fits(p, BAR)
