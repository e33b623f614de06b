"""The Transfers, Zones, Policies and Admin pages in a real browser (headless Chromium at
1280×800, as ``test_web.py``), against two federated zones of their own: ``wa``, whose
pages are driven, and ``wb``, reached through a toxiproxy so that a transfer can be slowed
down enough to be cancelled from the page. The tests run in order (one zone pair for the
module) and take the screenshots in ``docs/ui/``."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from test_web import FORM, browser, form, has, send, shot, unique, wait  # noqa: F401 (browser: fixture)
from zonelib import Zone, free_port

MiB = 1 << 20
TOXIPROXY = (
    pathlib.Path(os.environ.get("WEFT_CACHE", pathlib.Path.home() / ".cache/weft")) / "tools/bin/toxiproxy-server"
)


class Toxiproxy:
    """``toxiproxy-server`` on a free port, with one proxy to the peer zone."""

    def __init__(self, root: pathlib.Path) -> None:
        assert TOXIPROXY.exists(), "run .ci/install-tools.sh (toxiproxy)"
        self.port = free_port()
        self.log = open(root / "toxiproxy.log", "wb")
        self.proc = subprocess.Popen(
            [str(TOXIPROXY), "-host", "127.0.0.1", "-port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.call("GET", "/version")
                break
            except OSError:
                assert time.monotonic() < deadline, "toxiproxy did not start"
                time.sleep(0.1)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read()
        return json.loads(text) if text.strip().startswith(b"{") else text

    def proxy(self, name: str, upstream: str) -> str:
        p = self.call(
            "POST", "/proxies", {"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": True}
        )
        return str(p["listen"])

    def slow(self, name: str, kib_per_s: int) -> None:
        """Limits what the zone behind sends on to the peer (an upload's direction)."""
        toxic = {"name": "slow", "type": "bandwidth", "stream": "upstream", "toxicity": 1.0}
        self.call("POST", f"/proxies/{name}/toxics", {**toxic, "attributes": {"rate": kib_per_s}})

    def fast(self, name: str) -> None:
        self.call("DELETE", f"/proxies/{name}/toxics/slow")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


class Pair:
    def __init__(self, a: Zone, b: Zone, proxy: Toxiproxy) -> None:
        self.a, self.b, self.proxy = a, b, proxy


def weft_ok(zone: Zone, *args: str) -> str:
    r = zone.weft(*args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def api(zone: Zone, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    data = json.dumps(body) if isinstance(body, dict) else body
    headers = {"Authorization": f"Bearer {token or zone.token}"}
    if isinstance(body, dict):
        headers["Content-Type"] = "application/json"
    status, _, out = send(zone, method, path, data, headers)
    assert 200 <= status < 300, (method, path, status, out[:400])
    return json.loads(out) if out.strip().startswith((b"{", b"[")) else out


def quoted(path: str) -> str:
    return "/".join(urllib.request.quote(s, safe="") for s in path.strip("/").split("/"))


def put(zone: Zone, path: str, data: bytes) -> None:
    api(zone, "PUT", f"/api/v1/data/{quoted(path)}", data)


def mkdir(zone: Zone, path: str) -> None:
    api(zone, "POST", f"/api/v1/mkdir/{quoted(path)}?parents=true")


@pytest.fixture(scope="module")
def pair(zone_root: pathlib.Path, isolated_config: pathlib.Path) -> Iterator[Pair]:
    root = pathlib.Path(tempfile.mkdtemp(prefix="weft-web-transfers-", dir=zone_root))
    proxy = Toxiproxy(root)
    a = Zone.start("wa", root)
    b = Zone.start("wb", root)
    secret = root / "shared.secret"
    secret.write_text("s" * 48)
    to_b = proxy.proxy("wb", b.url.removeprefix("http://"))
    weft_ok(a, "zone", "add", "wb", f"http://{to_b}", "--secret-file", str(secret))
    weft_ok(b, "zone", "add", "wa", a.url, "--secret-file", str(secret))
    # What wa's administrator sends to wb lands in wb's administrator's home.
    api(b, "POST", "/api/v1/acl/wb/home/admin", {"principal": "admin#wa", "permission": "write", "recursive": True})
    yield Pair(a, b, proxy)
    for z in (a, b):
        z.stop()
    proxy.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def b(browser: WebDriver) -> WebDriver:  # noqa: F811 (the browser of test_web)
    return browser


def login(d: WebDriver, zone: Zone, token: str) -> None:
    d.get(zone.url + "/login")
    d.delete_all_cookies()
    d.get(zone.url + "/login")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]").click()
    wait(d, lambda d: "/login" not in d.current_url)


def start_from_page(d: WebDriver, zone: Zone, source: str, destination: str) -> str:
    """Starts a transfer with the page's form; the id of the transfer shown after."""
    d.get(zone.url + "/transfers")
    d.find_element(By.ID, "source").send_keys(source)
    d.find_element(By.ID, "destination").send_keys(destination)
    d.find_element(By.CSS_SELECTOR, ".start-form button[type=submit]").click()
    wait(d, lambda d: re.search(r"/transfers/[0-9a-f]{32}$", d.current_url))
    return d.current_url.rsplit("/", 1)[1]


def state_of(d: WebDriver, zone: Zone, tid: str) -> str:
    d.get(f"{zone.url}/transfers/{tid}")
    return str(d.find_element(By.CSS_SELECTOR, "h1 .state").text)


def wait_state(d: WebDriver, zone: Zone, tid: str, want: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (s := state_of(d, zone, tid)) != want:
        assert time.monotonic() < deadline, f"transfer {tid} is {s}, not {want}"
        time.sleep(0.5)


def row(d: WebDriver, tid: str) -> dict[str, str]:
    r = d.find_element(By.CSS_SELECTOR, f"table.transfers tr[data-id='{tid}']")
    cells = r.find_elements(By.TAG_NAME, "td")
    keys = ["source", "user", "destination", "started", "bytes", "files", "type", "status"]
    return {k: c.text for k, c in zip(keys, cells, strict=True)}


def transfer_count(zone: Zone) -> int:
    return len(api(zone, "GET", "/api/v1/transfers?limit=1000"))


# --- Transfers ---


def test_a_collection_sent_from_the_page_shows_in_the_history_with_its_figures(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    ds = f"/wa/home/admin/{unique('ds')}"
    mkdir(a, ds)
    for i in range(3):
        put(a, f"{ds}/f{i}.bin", os.urandom(100_000 + i))
    login(b, a, a.token)
    dest = f"/wb/home/admin/{unique('copy')}"
    tid = start_from_page(b, a, ds, dest)
    wait_state(b, a, tid, "succeeded")
    assert "3 of 3" in b.find_element(By.CSS_SELECTOR, "dd.files").text
    b.get(a.url + "/transfers")
    r = row(b, tid)
    assert r["source"] == ds and r["user"] == "admin" and r["destination"] == dest, r
    assert r["bytes"] == "293 KiB of 293 KiB", r
    assert r["files"] == "3 of 3" and r["type"] == "user" and r["status"] == "succeeded", r
    assert r["started"] and "UTC" not in r["started"], "times in the browser's zone"
    assert api(pair.b, "GET", f"/api/v1/stat/{quoted(dest + '/f2.bin')}")["size"] == 100_002
    # And back again, so that this zone also receives from its peer.
    back = f"/wa/home/admin/{unique('back')}"
    tid = start_from_page(b, a, dest, back)
    wait_state(b, a, tid, "succeeded")
    # Filters: by status and by type.
    b.get(a.url + "/transfers?state=failed")
    assert not has(b, f"tr[data-id='{tid}']")
    b.get(a.url + "/transfers?state=succeeded&type=user")
    assert has(b, f"tr[data-id='{tid}']")
    b.get(a.url + "/transfers?type=scrubber")
    assert not has(b, "table.transfers")


def test_the_map_shows_a_running_transfer_and_the_page_cancels_it(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    big = f"/wa/home/admin/{unique('big')}.bin"
    put(a, big, os.urandom(24 * MiB))
    login(b, a, a.token)
    pair.proxy.slow("wb", 256)
    try:
        tid = start_from_page(b, a, big, f"/wb/home/admin/{unique('big-copy')}.bin")
        b.get(a.url + "/transfers")
        # The map draws the arc at once, and keeps it while the page polls.
        assert has(b, "#zone-map g.flow[data-from='wa'][data-to='wb']")
        assert has(b, "#zone-map g.node.peer[data-zone='wb']")
        time.sleep(6)
        assert has(b, "#zone-map g.flow[data-to='wb']")
        assert "live ·" in b.find_element(By.ID, "map-status").text
        # The charts have sampled the earlier transfers by now.
        wait_for_charts(b, a)
        shot(b, "transfers.png")
        b.get(f"{a.url}/transfers/{tid}")
        b.find_element(By.CSS_SELECTOR, "form[action$='/cancel'] button").click()
        wait_state(b, a, tid, "cancelled", timeout=30)
    finally:
        pair.proxy.fast("wb")
    b.get(a.url + "/transfers?state=cancelled")
    assert row(b, tid)["status"] == "cancelled"
    b.get(a.url + "/transfers")
    assert not has(b, "#zone-map g.flow")


def chart_max(d: WebDriver, which: str) -> str:
    return str(d.find_element(By.CSS_SELECTOR, f"#chart-{which} svg").get_attribute("aria-label"))


def wait_for_charts(d: WebDriver, zone: Zone) -> None:
    """Until both charts show bytes (the sampler looks every 10 s)."""
    deadline = time.monotonic() + 40
    while True:
        d.get(zone.url + "/transfers")
        if "at most" in chart_max(d, "in") and "at most" in chart_max(d, "out"):
            return
        assert time.monotonic() < deadline, (chart_max(d, "in"), chart_max(d, "out"))
        time.sleep(2)


def test_a_failed_transfer_names_the_cause_of_each_file(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    name = unique("clash")
    ds = f"/wa/home/admin/{name}"
    mkdir(a, ds)
    for f in ("x", "y"):
        put(a, f"{ds}/{f}", b"data")
    # The destination collection exists, so the source goes below it under its own name;
    # there, the files' names are taken by collections.
    dest = f"/wb/home/admin/{unique('taken')}"
    for f in ("x", "y"):
        mkdir(pair.b, f"{dest}/{name}/{f}")
    login(b, a, a.token)
    tid = start_from_page(b, a, ds, dest)
    wait_state(b, a, tid, "failed", timeout=120)
    causes = [c.text for c in b.find_elements(By.CSS_SELECTOR, "table.files td.cause")]
    assert len(causes) == 2 and all(c.strip() for c in causes), causes
    b.get(f"{a.url}/transfers/{tid}?files=failed")
    assert len(b.find_elements(By.CSS_SELECTOR, "table.files tbody tr")) == 2
    shot(b, "transfer-detail.png")


def test_throughput_survives_a_restart(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    login(b, a, a.token)
    wait_for_charts(b, a)
    a.stop()
    a.run()
    login(b, a, a.token)
    for period in ("hour", "day", "month"):
        b.get(f"{a.url}/transfers?range={period}")
        assert "at most" in chart_max(b, "in") and "at most" in chart_max(b, "out"), period


def test_a_zone_charts_what_it_served_for_transfers_its_peer_ran(b: WebDriver, pair: Pair) -> None:
    """Transfers wa runs, to wb and back: wb runs none, yet counts both ways at its door."""
    a = pair.a
    src = f"/wa/home/admin/{unique('served')}.bin"
    put(a, src, os.urandom(3 * MiB))
    there = f"/wb/home/admin/{unique('served-copy')}.bin"
    for s, d in ((src, there), (there, f"/wa/home/admin/{unique('served-back')}.bin")):
        r = a.weft("transfer", "start", "--wait", "-q", s, d)
        assert r.returncode == 0, r.stderr
    assert api(pair.b, "GET", "/api/v1/transfers?limit=1000") == [], "wb runs no transfer"
    login(b, pair.b, pair.b.token)
    wait_for_charts(b, pair.b)
    legend = [e.text for e in b.find_elements(By.CSS_SELECTOR, "ul.legend li")]
    assert legend == ["wa"], legend


# --- Refusals ---


def session_of(zone: Zone, token: str) -> tuple[str, str]:
    status, headers, _ = send(zone, "POST", "/login", form({"token": token}), FORM)
    assert status == 303, status
    cookie = headers["set-cookie"].split(";")[0]
    status, _, page = send(zone, "GET", "/transfers", headers={"Cookie": cookie})
    assert status == 200, status
    m = re.search(rb'<meta name="csrf-token" content="([^"]+)"', page)
    assert m, page[:300]
    return cookie, m.group(1).decode()


def test_posts_without_the_csrf_token_change_nothing(pair: Pair) -> None:
    a = pair.a
    cookie, csrf = session_of(a, a.token)
    src = f"/wa/home/admin/{unique('csrf')}"
    put(a, src, b"x")
    n = transfer_count(a)
    fields = {"source": src, "destination": f"/wb/home/admin/{unique('no')}"}
    for extra in ({}, {"csrf": "forged"}):
        status, _, body = send(a, "POST", "/transfers/start", form({**fields, **extra}), {**FORM, "Cookie": cookie})
        assert status == 403 and b"csrf_rejected" in body, (status, body[:300])
    status, _, _ = send(
        a,
        "POST",
        "/transfers/start",
        form({**fields, "csrf": csrf}),
        {**FORM, "Cookie": cookie, "Origin": "http://evil.example"},
    )
    assert status == 403
    assert transfer_count(a) == n
    tid = api(a, "GET", "/api/v1/transfers?limit=1")[0]["id"]
    state = api(a, "GET", f"/api/v1/transfers/{tid}")["state"]
    status, _, _ = send(a, "POST", f"/transfers/{tid}/cancel", "", {**FORM, "Cookie": cookie})
    assert status == 403
    assert api(a, "GET", f"/api/v1/transfers/{tid}")["state"] == state
    status, _, page = send(a, "GET", "/admin", headers={"Cookie": cookie})
    rows = page.count(b"data-token=")
    status, _, _ = send(a, "POST", "/admin/tokens", form({"user": "admin", "label": "x"}), {**FORM, "Cookie": cookie})
    assert status == 403
    _, _, page = send(a, "GET", "/admin", headers={"Cookie": cookie})
    assert page.count(b"data-token=") == rows
    # Bad input is refused with a page that says why, and starts nothing.
    bad = {"source": "/wa/home/../etc", "destination": "/wb/x", "csrf": csrf}
    status, _, body = send(a, "POST", "/transfers/start", form(bad), {**FORM, "Cookie": cookie})
    assert status == 400 and b"invalid_path" in body, (status, body[:300])
    status, _, _ = send(a, "GET", "/transfers?state=robot", headers={"Cookie": cookie})
    assert status == 400
    assert transfer_count(a) == n


# --- Policies, Admin, Zones ---


POLICY = """
[[rule]]
name = "tag-raw"
on = "created"
[rule.if]
path = "/wa/home/admin/raw/**"
[rule.do]
set_meta = ["stage=seen"]
"""


def test_the_policies_page_shows_each_rules_status_and_qos(b: WebDriver, pair: Pair, tmp_path: pathlib.Path) -> None:
    a = pair.a
    f = tmp_path / "rules.toml"
    f.write_text(POLICY)
    weft_ok(a, "policy", "apply", str(f))
    mkdir(a, "/wa/home/admin/raw")
    put(a, "/wa/home/admin/raw/one.dat", b"1")
    weft_ok(a, "qos", "add", "/wa/home/admin/raw", "replicas=5")
    login(b, a, a.token)
    deadline = time.monotonic() + 60
    while True:
        b.get(a.url + "/policies")
        tasks = b.find_element(By.CSS_SELECTOR, "tr[data-rule='tag-raw'] td.tasks").text
        qos = b.find_element(By.CSS_SELECTOR, "table.qos tbody tr").text
        if "done 1" in tasks and "impossible" in qos:
            break
        assert time.monotonic() < deadline, (tasks, qos)
        time.sleep(1)
    assert "created" in b.find_element(By.CSS_SELECTOR, "tr[data-rule='tag-raw']").text
    assert "replicas = 5" in qos and "2 match" in qos, qos
    shot(b, "policies.png")


def test_the_admin_page_is_for_administrators_only(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    weft_ok(a, "user", "add", "carol")
    weft_ok(a, "group", "add", "physics")
    weft_ok(a, "group", "member", "add", "physics", "carol")
    carol = weft_ok(a, "token", "create", "--user", "carol").strip().splitlines()[0]
    login(b, a, a.token)
    assert has(b, "nav.primary a[href='/admin']")
    b.get(a.url + "/admin")
    assert has(b, "tr[data-user='carol']")
    assert "carol" in b.find_element(By.CSS_SELECTOR, "tr[data-group='physics'] td.members").text
    shot(b, "admin.png")
    before = len(b.find_elements(By.CSS_SELECTOR, "table.tokens tbody tr"))
    b.find_element(By.ID, "token-label").send_keys("made on the page")
    b.find_element(By.CSS_SELECTOR, ".token-form button[type=submit]").click()
    secret = wait(b, lambda d: d.find_element(By.ID, "new-token")).text
    assert secret.startswith("weft_")
    assert len(b.find_elements(By.CSS_SELECTOR, "table.tokens tbody tr")) == before + 1
    # The token works, is listed by the REST API as on the page, and deleting it on the
    # page ends it.
    assert api(a, "GET", "/api/v1/whoami", token=secret)
    listed = api(a, "GET", "/api/v1/tokens")
    assert any(t["label"] == "made on the page" and "token" not in t for t in listed), listed
    assert [t["user"] for t in api(a, "GET", "/api/v1/tokens", token=carol)] == ["carol"]
    made = b.find_element(By.XPATH, "//table[contains(@class,'tokens')]//tr[td[contains(.,'made on the page')]]")
    made.find_element(By.CSS_SELECTOR, "button.danger").click()
    wait(b, lambda d: "made on the page" not in d.find_element(By.CSS_SELECTOR, "table.tokens").text)
    status, _, _ = send(a, "GET", "/api/v1/whoami", headers={"Authorization": f"Bearer {secret}"})
    assert status == 401
    # Over REST, a user deletes their own token only; another's looks like none.
    spare = weft_ok(a, "token", "create").strip().splitlines()[0]
    spare_id = max(t["id"] for t in api(a, "GET", "/api/v1/tokens") if t["user"] == "admin")
    status, _, body = send(a, "DELETE", f"/api/v1/tokens/{spare_id}", headers={"Authorization": f"Bearer {carol}"})
    assert status == 404, body
    api(a, "DELETE", f"/api/v1/tokens/{spare_id}")
    status, _, _ = send(a, "GET", "/api/v1/whoami", headers={"Authorization": f"Bearer {spare}"})
    assert status == 401
    b.get(a.url + "/admin")
    assert not has(b, "#new-token"), "the secret is shown once"
    # Someone who is not an administrator sees no entry and is refused the page.
    login(b, a, carol)
    assert not has(b, "nav.primary a[href='/admin']")
    assert has(b, "nav.primary a[href='/transfers']")
    b.get(a.url + "/admin")
    assert "permission" in b.find_element(By.TAG_NAME, "h1").text
    cookie, _ = session_of(a, carol)
    status, _, _ = send(a, "GET", "/admin", headers={"Cookie": cookie})
    assert status == 403
    # Nor does carol see the administrator's transfers, or resources.
    b.get(a.url + "/transfers")
    assert not has(b, "table.transfers")
    b.get(a.url + "/zones")
    assert not has(b, "table.resources")


def test_markup_in_paths_and_labels_stays_text(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    evil = "<img src=x onerror=window.hacked=1><script>window.hacked=2</script>"
    ds = f"/wa/home/admin/{unique('esc')}{evil}"
    mkdir(a, ds)
    put(a, f"{ds}/f", b"x")
    rec = api(
        a,
        "POST",
        "/api/v1/transfers",
        {"sources": [ds], "destination": f"/wb/home/admin/{unique('esc')}", "recursive": True},
    )
    login(b, a, a.token)
    for page in ("/transfers", f"/transfers/{rec['id']}"):
        b.get(a.url + page)
        time.sleep(0.5)
        assert b.execute_script("return window.hacked") is None
        assert evil in b.find_element(By.TAG_NAME, "main").text
    b.get(a.url + "/admin")
    b.find_element(By.ID, "token-label").send_keys(evil)
    b.find_element(By.CSS_SELECTOR, ".token-form button[type=submit]").click()
    wait(b, lambda d: has(d, "#new-token"))
    assert b.execute_script("return window.hacked") is None
    assert evil in b.find_element(By.CSS_SELECTOR, "table.tokens").text


def test_the_zones_page_shows_the_peer_reachable_then_unreachable(b: WebDriver, pair: Pair) -> None:
    a = pair.a
    login(b, a, a.token)
    b.get(a.url + "/zones")
    peer = b.find_element(By.CSS_SELECTOR, "tr[data-zone='wb']")
    assert "reachable" in peer.find_element(By.CSS_SELECTOR, "td.reach").text
    assert re.fullmatch(r"\d+\.\d ms", peer.find_element(By.CSS_SELECTOR, "td.rtt").text)
    assert has(b, "table.resources tr[data-resource] .usage meter")
    shot(b, "zones.png")
    pair.b.stop()
    started = time.monotonic()
    b.get(a.url + "/zones")
    assert time.monotonic() - started < 10, "a peer that is down does not hold the page"
    peer = b.find_element(By.CSS_SELECTOR, "tr[data-zone='wb']")
    assert "unreachable" in peer.find_element(By.CSS_SELECTOR, "td.reach").text
    assert peer.find_element(By.CSS_SELECTOR, "td.cause").text.strip()
