"""The web interface in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium at 1280×800 against a real ``weft serve``. Each
refusal (a wrong token, a forged or expired cookie, a change without the CSRF token or
from another site, a path with ``..``, a user without rights) is checked for having
changed nothing. The tests take the screenshots in ``docs/ui/``."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import pathlib
import re
import sqlite3
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from zonelib import REPO, Zone

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = REPO / "docs" / "ui"
MiB = 1 << 20

_names = itertools.count()


def unique(stem: str) -> str:
    return f"{stem}-{next(_names)}-{os.getpid()}"


# --- HTTP without a browser: for what a browser would not send, and to set data up ---


def send(
    zone: Zone,
    method: str,
    target: str,
    body: bytes | str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request with ``target`` sent as is (no normalisation of ``..`` or ``//``)."""
    u = urllib.parse.urlsplit(zone.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        data = body.encode() if isinstance(body, str) else body
        conn.request(method, target, body=data, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def api(zone: Zone, method: str, path: str, body: bytes | str | None = None, token: str | None = None) -> Any:
    status, _, data = send(zone, method, path, body, {"Authorization": f"Bearer {token or zone.token}"})
    assert 200 <= status < 300, (method, path, status, data[:300])
    return data


def quoted(path: str) -> str:
    return "/".join(urllib.parse.quote(s, safe="") for s in path.strip("/").split("/"))


def put(zone: Zone, path: str, data: bytes, token: str | None = None) -> None:
    api(zone, "PUT", f"/api/v1/data/{quoted(path)}", data, token)


def mkdir(zone: Zone, path: str) -> None:
    api(zone, "POST", f"/api/v1/mkdir/{quoted(path)}?parents=true")


def exists(zone: Zone, path: str) -> bool:
    status, _, _ = send(zone, "GET", f"/api/v1/stat/{quoted(path)}", headers={"Authorization": f"Bearer {zone.token}"})
    assert status in (200, 404), status
    return status == 200


def new_user(zone: Zone, name: str) -> str:
    """A user and an API token of theirs."""
    r = zone.weft("user", "add", name)
    assert r.returncode == 0, r.stderr
    r = zone.weft("token", "create", "--user", name)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[0]


def session_of(zone: Zone, token: str) -> tuple[str, str]:
    """Logs in without a browser: the cookie (``name=value``) and the CSRF token of a page."""
    status, headers, _ = send(
        zone,
        "POST",
        "/login",
        urllib.parse.urlencode({"token": token}),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 303, status
    cookie = headers["set-cookie"].split(";")[0]
    status, _, page = send(zone, "GET", "/data/t/home/admin", headers={"Cookie": cookie})
    assert status == 200, status
    m = re.search(rb'<meta name="csrf-token" content="([^"]+)"', page)
    assert m, page[:500]
    return cookie, m.group(1).decode()


def form(fields: dict[str, str]) -> str:
    return urllib.parse.urlencode(fields)


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


# --- The browser ---


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), "run .ci/install-tools.sh (chromium)"
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800", "--lang=en-GB"):
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(60)
    # The page itself at 1280×800, whatever the window's own bars take.
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    yield d
    d.quit()


@pytest.fixture
def b(browser: WebDriver, zone: Zone) -> WebDriver:
    """The browser with no cookie of the zone: each test logs in itself."""
    browser.get(zone.url + "/login")
    browser.delete_all_cookies()
    return browser


def wait(d: WebDriver, until: Any, timeout: float = 30) -> Any:
    """Until `until(d)` is truthy. An element found on a page that is being replaced (a
    form's answer loading) goes stale under the check: that is "not yet", not a failure."""
    return WebDriverWait(d, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(until)


def login(d: WebDriver, zone: Zone, token: str) -> None:
    d.get(zone.url + "/login")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]").click()
    wait(d, lambda d: "/login" not in d.current_url)


def names(d: WebDriver) -> list[str]:
    return [e.text for e in d.find_elements(By.CSS_SELECTOR, "table.listing td.name .label")]


def shot(d: WebDriver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert d.execute_script("return [window.innerWidth, window.innerHeight]") == [1280, 800]
    d.save_screenshot(str(SHOTS / name))


def has(d: WebDriver, css: str) -> bool:
    try:
        d.find_element(By.CSS_SELECTOR, css)
        return True
    except NoSuchElementException:
        return False


def cookie_header(d: WebDriver) -> str:
    c = d.get_cookie("weft_session_t")
    assert c is not None
    assert c["httpOnly"] and c["sameSite"] == "Lax" and c["path"] == "/", c
    return f"{c['name']}={c['value']}"


# --- Logging in and out ---


def test_login_with_a_token_and_logout_ends_the_session(b: WebDriver, zone: Zone) -> None:
    b.get(zone.url + "/")
    wait(b, lambda d: "/login" in d.current_url)
    shot(b, "login.png")
    login(b, zone, zone.token)
    assert b.current_url.endswith("/data/t/home/admin")
    assert b.find_element(By.CSS_SELECTOR, ".who .user").text == "admin"
    assert b.find_element(By.CSS_SELECTOR, ".topbar .zone").text == "t"
    old = cookie_header(b)
    # The page's script may call the REST API with the cookie.
    status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": old})
    assert status == 200 and b"admin" in body, body

    b.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait(b, lambda d: "/login" in d.current_url)
    assert b.get_cookie("weft_session_t") is None
    # The old cookie opens nothing any more, in pages or the API.
    status, headers, _ = send(zone, "GET", "/data/t/home/admin", headers={"Cookie": old})
    assert status == 303 and headers["location"].startswith("/login"), (status, headers)
    status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": old})
    assert status == 401 and b"unauthenticated" in body, body


def test_a_wrong_token_is_refused_on_the_login_page(b: WebDriver, zone: Zone) -> None:
    login_page = zone.url + "/login"
    b.get(login_page)
    b.find_element(By.ID, "token").send_keys("weft_" + "x" * 43)
    b.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
    alert = wait(b, lambda d: d.find_element(By.CSS_SELECTOR, ".login .alert"))
    assert "not known" in alert.text
    assert b.get_cookie("weft_session_t") is None
    status, headers, _ = send(zone, "POST", "/login", form({"token": "nonsense"}), FORM)
    assert status == 401 and "set-cookie" not in headers


def test_a_forged_or_expired_cookie_leads_to_the_login_page(b: WebDriver, zone: Zone) -> None:
    b.get(zone.url + "/login")
    b.add_cookie({"name": "weft_session_t", "value": "A" * 43, "path": "/"})
    b.get(zone.url + "/data/t/home/admin")
    wait(b, lambda d: "/login" in d.current_url)
    assert "next=%2Fdata%2Ft%2Fhome%2Fadmin" in b.current_url
    assert b.get_cookie("weft_session_t") is None, "a cookie that names no session is cleared"

    login(b, zone, zone.token)
    cookie = cookie_header(b)
    # Twelve hours and a minute without a request, as the catalog records it.
    with sqlite3.connect(zone.data_dir / "catalog.db", timeout=30) as db:
        n = db.execute("UPDATE web_sessions SET last_seen = last_seen - 43260000").rowcount
    assert n >= 1
    b.get(zone.url + "/data/t/home/admin")
    wait(b, lambda d: "/login" in d.current_url)
    status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": cookie})
    assert status == 401, body

    # Busy, but opened more than seven days ago.
    login(b, zone, zone.token)
    with sqlite3.connect(zone.data_dir / "catalog.db", timeout=30) as db:
        db.execute("UPDATE web_sessions SET created = created - 604800001")
    b.get(zone.url + "/data/t/home/admin")
    wait(b, lambda d: "/login" in d.current_url)


# --- Cookies planted by another page of the host ---


def login_cookie(zone: Zone, token: str) -> str:
    """A session of ``token``'s user: its cookie, ``name=value``."""
    status, headers, _ = send(zone, "POST", "/login", form({"token": token}), FORM)
    assert status == 303, status
    return headers["set-cookie"].split(";")[0]


def curl(zone: Zone, target: str, *args: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """``curl -si`` of ``target``: the status, every header (name in lower case, in the
    order sent: ``Set-Cookie`` comes several times) and the body."""
    out = subprocess.run(
        ["curl", "-si", "--max-time", "30", *args, zone.url + target], capture_output=True, timeout=60, check=True
    ).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = [(n.strip().lower(), v.strip()) for n, _, v in (line.partition(":") for line in lines[1:])]
    return int(lines[0].split()[1]), headers, body


def test_two_session_cookies_act_as_neither(zone: Zone) -> None:
    """Cookies ignore ports: a page of another port of this host can plant a cookie of the
    session's name for a narrower path, which the browser sends first, next to the user's
    own. Taking either would be a guess, and the first is the attacker's."""
    mine = login_cookie(zone, zone.token)
    theirs = login_cookie(zone, new_user(zone, unique("planter")))
    junk = "weft_session_t=" + "A" * 43
    home = "/t/home/admin"
    for pair in [f"{theirs}; {mine}", f"{mine}; {theirs}", f"{mine}; {junk}", f"{mine}; {mine}"]:
        status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": pair})
        assert status == 401 and b'"code":"unauthenticated"' in body, (pair, body)
        assert b"two session cookies" in body, body
        status, headers, page = curl(zone, f"/data{home}", "-H", f"Cookie: {pair}")
        assert status == 401, (pair, status)
        assert b"two session cookies" in page and b'action="/login"' in page, page[:500]
        assert b'class="user"' not in page, "the page shows nobody's top bar"
        clears = [v for n, v in headers if n == "set-cookie" and v.startswith("weft_session_t=;")]
        cleared = {v.split(";")[1].strip() for v in clears}
        assert {"Path=/", "Path=/data", "Path=/data/t", "Path=/data/t/home/admin"} <= cleared, headers

    # A change with both cookies and the user's own CSRF token changes nothing.
    _, csrf = session_of(zone, zone.token)
    name = unique("twice")
    hdrs = {"Cookie": f"{theirs}; {mine}", "Origin": zone.url, "X-CSRF-Token": csrf}
    status, _, body = send(zone, "POST", f"/api/v1/mkdir{home}/{name}", headers=hdrs)
    assert status == 401, body
    assert not exists(zone, f"{home}/{name}")
    # The login page says why, and the logout is no way around it.
    status, _, page = send(zone, "GET", "/login", headers={"Cookie": f"{theirs}; {mine}"})
    assert status == 401 and b"two session cookies" in page, page[:500]
    status, _, page = send(zone, "POST", "/logout", form({}), {**FORM, "Cookie": f"{theirs}; {mine}"})
    assert status == 401 and b"two session cookies" in page, page[:500]
    # Each cookie alone is its session, as ever.
    status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": mine})
    assert status == 200 and b'"admin"' in body, body


def test_a_cookie_planted_for_a_path_is_refused_then_forgotten(b: WebDriver, zone: Zone) -> None:
    """In a browser: the user is logged in; another page of the host planted a session of
    the attacker's for /data (what a stored page's script on the S3 port could do without
    the sandbox). The Data page refuses both, the browser forgets them, and logging in
    again gives the user their own session."""
    theirs = login_cookie(zone, new_user(zone, unique("planter"))).split("=", 1)[1]
    login(b, zone, zone.token)
    b.add_cookie({"name": "weft_session_t", "value": theirs, "path": "/data"})
    b.get(zone.url + "/data/t/home/admin")
    alert = wait(b, lambda d: d.find_element(By.CSS_SELECTOR, ".login .alert"))
    assert "two session cookies" in alert.text
    assert not has(b, ".who .user")
    left = b.execute_cdp_cmd("Network.getCookies", {"urls": [zone.url + "/data/t/home/admin"]})["cookies"]
    assert [c for c in left if c["name"] == "weft_session_t"] == [], left
    b.find_element(By.ID, "token").send_keys(zone.token)
    b.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]").click()
    wait(b, lambda d: d.current_url.endswith("/data/t/home/admin"))
    assert b.find_element(By.CSS_SELECTOR, ".who .user").text == "admin"


def test_object_bytes_are_saved_never_shown_as_a_page_of_the_site(zone: Zone) -> None:
    """``GET /api/v1/data`` serves anyone's upload on the web interface's own origin, where
    the session cookie lives: a browser must save it, not run it."""
    mkdir(zone, "/t/home/admin/pages")
    put(zone, "/t/home/admin/pages/page.html", b"<script>document.title = 'ran'</script>")
    status, headers, body = curl(
        zone, "/api/v1/data/t/home/admin/pages/page.html", "-H", f"Authorization: Bearer {zone.token}"
    )
    assert status == 200 and body.startswith(b"<script>"), status
    got = dict(headers)
    assert got["x-content-type-options"] == "nosniff", headers
    assert got["content-security-policy"] == "sandbox", headers
    assert got["content-disposition"] == "attachment", headers


# --- CSRF ---


def test_changes_without_the_csrf_token_or_from_another_site_are_refused(zone: Zone) -> None:
    cookie, csrf = session_of(zone, zone.token)
    home = "/t/home/admin"
    origin = zone.url
    attempts = [
        ({}, {"Origin": origin}, "no token"),
        ({"csrf": "x" * 43}, {"Origin": origin}, "another token"),
        ({"csrf": csrf}, {"Origin": "http://evil.example"}, "another site"),
        ({"csrf": csrf}, {"Referer": "http://evil.example/page"}, "another site by Referer"),
        ({"csrf": csrf}, {"Origin": "null"}, "an opaque origin"),
    ]
    for extra, hdrs, why in attempts:
        name = unique("csrf")
        status, _, body = send(
            zone, "POST", f"/new-collection{home}", form({"name": name, **extra}), {**FORM, "Cookie": cookie, **hdrs}
        )
        assert status == 403 and b"csrf_rejected" in body, (why, status, body[:300])
        assert not exists(zone, f"{home}/{name}"), why

    # The REST API with the cookie: the token in the header.
    name = unique("csrf-api")
    status, _, body = send(zone, "POST", f"/api/v1/mkdir{home}/{name}", headers={"Cookie": cookie, "Origin": origin})
    assert status == 403 and b'"code":"csrf_rejected"' in body, body
    assert not exists(zone, f"{home}/{name}")
    hdrs = {"Cookie": cookie, "Origin": "http://evil.example", "X-CSRF-Token": csrf}
    status, _, body = send(zone, "DELETE", f"/api/v1/nodes{home}", headers=hdrs)
    assert status == 403 and b"csrf_rejected" in body, body

    # Logging in from another site is refused too.
    status, headers, _ = send(
        zone, "POST", "/login", form({"token": zone.token}), {**FORM, "Origin": "http://evil.example"}
    )
    assert status == 403 and "set-cookie" not in headers

    # The same requests, right.
    status, _, _ = send(
        zone, "POST", f"/api/v1/mkdir{home}/{name}", headers={"Cookie": cookie, "Origin": origin, "X-CSRF-Token": csrf}
    )
    assert status == 201 and exists(zone, f"{home}/{name}")
    other = unique("csrf-ok")
    status, headers, _ = send(
        zone,
        "POST",
        f"/new-collection{home}",
        form({"name": other, "csrf": csrf}),
        {**FORM, "Cookie": cookie, "Origin": origin},
    )
    assert status == 303 and exists(zone, f"{home}/{other}")


# --- Browsing ---


def test_browse_with_breadcrumbs_paging_and_sorting(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('many')}"
    mkdir(zone, d)
    # 250 objects; sizes that do not follow the names.
    for i in range(250):
        put(zone, f"{d}/f{i:03d}", b"x" * ((i * 37) % 250))
    login(b, zone, zone.token)
    b.get(zone.url + "/data" + d)
    first = names(b)
    assert first == [f"f{i:03d}" for i in range(100)]
    b.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    wait(b, lambda d: names(d)[:1] == ["f100"])
    assert names(b) == [f"f{i:03d}" for i in range(100, 200)]
    b.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    wait(b, lambda d: names(d)[:1] == ["f200"])
    assert len(names(b)) == 50 and not has(b, "a[rel=next]")

    # Sorted by size, both ways; pages keep the order.
    sizes = {f"f{i:03d}": (i * 37) % 250 for i in range(250)}
    by_size = sorted(sizes, key=lambda n: (sizes[n], n))
    b.find_element(By.LINK_TEXT, "« First page").click()
    b.find_element(By.CSS_SELECTOR, "th a[href*='sort=size']").click()
    wait(b, lambda d: "sort=size" in d.current_url)
    assert names(b) == by_size[:100]
    assert b.find_element(By.CSS_SELECTOR, "th[aria-sort=ascending]").text.upper().startswith("SIZE")
    b.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    wait(b, lambda d: "after=" in d.current_url)
    assert names(b) == by_size[100:200]
    b.get(zone.url + "/data" + d + "?sort=size&desc=1")
    assert names(b) == list(reversed(by_size))[:100]
    b.get(zone.url + "/data" + d + "?sort=modified&desc=1")
    assert names(b)[0] == "f249"

    # Breadcrumbs lead up the tree.
    crumbs = [a.text for a in b.find_elements(By.CSS_SELECTOR, ".crumbs a")]
    assert crumbs == ["t", "home", "admin", d.rsplit("/", 1)[1]]
    b.find_element(By.CSS_SELECTOR, ".crumbs li:nth-child(3) a").click()
    wait(b, lambda d: d.current_url.endswith("/data/t/home/admin"))
    assert d.rsplit("/", 1)[1] in names(b)

    # A sort the zone does not know is a clear 400 page.
    b.get(zone.url + "/data" + d + "?sort=owner")
    assert "sort by name, size or modified" in b.find_element(By.CSS_SELECTOR, ".alert").text


def test_paths_with_dot_segments_are_refused(zone: Zone) -> None:
    cookie, _ = session_of(zone, zone.token)
    for target in [
        "/data/t/home/../home/admin",
        "/data/t/home/%2e%2e/home",
        "/data/t/./home",
        "/data/t//home",
        "/data/t/home%2fadmin",
        "/data/t/a%00b",
        "/delete/t/home/admin/../admin",
    ]:
        status, _, body = send(zone, "GET", target, headers={"Cookie": cookie})
        assert status == 400 and b"invalid_path" in body, (target, status, body[:300])


# --- Uploading, new collections, deleting ---


def test_upload_new_collection_and_delete(b: WebDriver, zone: Zone, tmp_path: pathlib.Path) -> None:
    d = f"/t/home/admin/{unique('cryoem')}"
    mkdir(zone, f"{d}/raw")
    mkdir(zone, f"{d}/motion-corrected")
    for i, size in enumerate([180 * MiB // 64, 240 * MiB // 64, 3 * MiB]):
        put(zone, f"{d}/raw/movie-{i:04d}.tif", os.urandom(size))
    put(zone, f"{d}/README.md", b"# Session 42\nKrios G4, 300 kV.\n")
    login(b, zone, zone.token)
    b.get(zone.url + "/data" + d)

    # A new collection by its form.
    b.find_element(By.ID, "new-name").send_keys("picked-particles")
    b.find_element(By.CSS_SELECTOR, "form[action*='/new-collection/'] button").click()
    wait(b, lambda d: d.current_url.endswith("/picked-particles"))
    assert exists(zone, f"{d}/picked-particles")
    b.find_element(By.CSS_SELECTOR, ".crumbs li:nth-last-child(2) a").click()
    wait(b, lambda drv: drv.current_url.endswith(d))
    # A name is one name: "a/b" would make a collection inside another one.
    b.find_element(By.ID, "new-name").send_keys("picked/../../../x")
    b.find_element(By.CSS_SELECTOR, "form[action*='/new-collection/'] button").click()
    code = wait(b, lambda d: d.find_element(By.CSS_SELECTOR, ".problem .code code"))
    assert code.text == "invalid_name" and "holds no /" in b.find_element(By.CSS_SELECTOR, ".problem .alert").text
    assert not exists(zone, f"{d}/picked") and not exists(zone, "/t/home/x")
    b.get(zone.url + "/data" + d)

    # Upload by the file input: two pieces of 8 MiB, progress shown on the way.
    data = os.urandom(10 * MiB + 12345)
    local = tmp_path / "session-42.mrc"
    local.write_bytes(data)
    b.execute_script(
        """
        const bar = document.getElementById('upload-progress');
        sessionStorage.setItem('seen', '[]');
        new MutationObserver(() => {
            const seen = JSON.parse(sessionStorage.getItem('seen'));
            seen.push(Number(bar.value));
            sessionStorage.setItem('seen', JSON.stringify(seen));
        }).observe(bar, {attributes: true});
        """
    )
    b.find_element(By.ID, "upload-file").send_keys(str(local))
    b.find_element(By.CSS_SELECTOR, "#upload button[type=submit]").click()
    wait(b, lambda drv: "session-42.mrc" in names(drv), timeout=120)
    seen = b.execute_script("return JSON.parse(sessionStorage.getItem('seen'))")
    assert seen and max(seen) == len(data) and any(0 < v < len(data) for v in seen), seen
    row = b.find_element(By.XPATH, "//tr[td[@class='name']//span[text()='session-42.mrc']]")
    assert row.find_element(By.CSS_SELECTOR, "td.size").text == "10.0 MiB"
    assert row.find_element(By.CSS_SELECTOR, "td.size").get_attribute("data-bytes") == str(len(data))
    # Times are shown in the browser's zone, not the server's UTC.
    assert "UTC" not in row.find_element(By.CSS_SELECTOR, "td.modified").text
    shot(b, "data.png")

    # Its page: size, checksum, replicas; the bytes downloaded are the bytes uploaded.
    for attr, value, unit in [
        ("instrument", "Krios G4", ""),
        ("voltage", "300", "kV"),
        ("dataset", "EMPIAR-10042", ""),
    ]:
        r = zone.weft("meta", "add", f"{d}/session-42.mrc", attr, value, *([unit] if unit else []))
        assert r.returncode == 0, r.stderr
    row.find_element(By.CSS_SELECTOR, "td.name a").click()
    wait(b, lambda drv: drv.current_url.endswith("/session-42.mrc"))
    stat = api(zone, "GET", f"/api/v1/stat/{quoted(d)}/session-42.mrc")
    checksum = json.loads(stat)["checksum"]
    assert b.find_element(By.CSS_SELECTOR, "dd.checksum").text == checksum
    assert f"({len(data):,} bytes)" in b.find_element(By.CSS_SELECTOR, "dd.size").text
    replica = b.find_element(By.CSS_SELECTOR, "table.replicas tbody tr").text
    assert replica.startswith("t ") and "good" in replica, replica
    assert "Krios G4" in b.find_element(By.CSS_SELECTOR, "table.meta").text
    shot(b, "object.png")
    href = b.find_element(By.LINK_TEXT, "Download").get_attribute("href")
    status, headers, body = send(zone, "GET", urllib.parse.urlsplit(href).path, headers={"Cookie": cookie_header(b)})
    assert status == 200 and body == data and headers["x-weft-checksum"] == checksum

    # Delete, after a confirmation.
    b.find_element(By.LINK_TEXT, "Delete…").click()
    wait(b, lambda drv: "/delete/" in drv.current_url)
    assert "cannot be undone" in b.find_element(By.CSS_SELECTOR, ".confirm").text
    assert exists(zone, f"{d}/session-42.mrc"), "asking changes nothing"
    b.find_element(By.CSS_SELECTOR, ".confirm button.danger").click()
    wait(b, lambda drv: drv.current_url.endswith(d))
    assert "session-42.mrc" not in names(b)
    assert not exists(zone, f"{d}/session-42.mrc")


def test_an_upload_refused_by_the_zone_shows_why_and_leaves_nothing(
    b: WebDriver, zone: Zone, tmp_path: pathlib.Path
) -> None:
    d = f"/t/home/admin/{unique('dup')}"
    mkdir(zone, d)
    put(zone, f"{d}/taken.bin", b"first")
    login(b, zone, zone.token)
    b.get(zone.url + "/data" + d)
    local = tmp_path / "taken.bin"
    local.write_bytes(os.urandom(MiB))
    b.find_element(By.ID, "upload-file").send_keys(str(local))
    b.find_element(By.CSS_SELECTOR, "#upload button[type=submit]").click()
    status = wait(b, lambda drv: drv.find_element(By.CSS_SELECTOR, "#upload-status.failed"))
    assert "already_exists" in status.text, status.text
    body = api(zone, "GET", f"/api/v1/data/{quoted(d)}/taken.bin")
    assert body == b"first"


# --- Rights and hostile names ---


def test_a_user_without_rights_sees_neither_data_nor_buttons(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('private')}"
    mkdir(zone, d)
    put(zone, f"{d}/secret.txt", b"top secret")
    name = unique("carol").replace("-", "")[:30]
    token = new_user(zone, name)
    login(b, zone, token)
    assert b.current_url.endswith(f"/data/t/home/{name}")
    b.get(zone.url + "/data" + d)
    assert "You do not have permission" in b.find_element(By.TAG_NAME, "h1").text
    assert not has(b, "table.listing") and "secret.txt" not in b.page_source
    b.get(zone.url + "/data" + d + "/secret.txt")
    assert "You do not have permission" in b.find_element(By.TAG_NAME, "h1").text
    assert "top secret" not in b.page_source and not has(b, "dd.checksum")

    # Read only: the data, but no button that changes it.
    assert zone.weft("acl", "set", d, name, "read").returncode == 0
    b.get(zone.url + "/data" + d)
    assert names(b) == ["secret.txt"]
    for css in ["#upload", "#new-name", "a.button.danger"]:
        assert not has(b, css), css
    b.get(zone.url + "/data" + d + "/secret.txt")
    assert has(b, "dd.checksum") and not has(b, "a.button.danger")
    # Posting the form anyway changes nothing.
    cookie, csrf = cookie_header(b), b.find_element(By.CSS_SELECTOR, "meta[name=csrf-token]").get_attribute("content")
    hdrs = {**FORM, "Cookie": cookie, "Origin": zone.url}
    status, _, body = send(zone, "POST", f"/new-collection{d}", form({"name": "x", "csrf": csrf}), hdrs)
    assert status == 403 and b"forbidden" in body
    status, _, body = send(zone, "POST", f"/delete{d}/secret.txt", form({"csrf": csrf}), hdrs)
    assert status == 403 and exists(zone, f"{d}/secret.txt")


def test_script_in_names_and_metadata_is_shown_as_text(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('xss')}"
    mkdir(zone, d)
    name = "<img src=x onerror=\"window.pwned=1;document.title='pwned'\">.txt"
    value = "<script>window.pwned=2;document.title='pwned'</script>"
    put(zone, f"{d}/{name}", b"hello")
    assert zone.weft("meta", "add", f"{d}/{name}", "note", value).returncode == 0
    login(b, zone, zone.token)
    b.get(zone.url + "/data" + d)
    assert names(b) == [name]
    assert not b.find_elements(By.CSS_SELECTOR, "td.name img")
    b.find_element(By.CSS_SELECTOR, "td.name a").click()
    wait(b, lambda drv: "/data/" in drv.current_url and drv.find_elements(By.CSS_SELECTOR, "table.meta"))
    assert b.find_element(By.TAG_NAME, "h1").text == name
    assert value in b.find_element(By.CSS_SELECTOR, "table.meta").text
    time.sleep(0.5)
    assert b.execute_script("return window.pwned === undefined")
    assert b.title == f"{name} · weft t"
    # Escaped by the server, not merely stopped by the content security policy.
    status, _, page = send(zone, "GET", urllib.parse.urlsplit(b.current_url).path, headers={"Cookie": cookie_header(b)})
    assert status == 200 and b"<script>window" not in page and b"&lt;script&gt;window" in page
    assert b"<img src=x" not in page
