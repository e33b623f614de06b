"""Signing in to the web interface with the zone's OIDC issuer: a real Keycloak (the
distribution ``.ci/install-tools.sh`` prepares, realm ``crates/weft-testkit/fixtures/
weft-realm.json``), the authorization code flow with PKCE in headless Chromium, and the
refusals of a callback that this browser did not begin."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from test_web import browser, has, send, shot, wait  # noqa: F401 (browser is a fixture)
from zonelib import REPO, Zone, free_port, http_get, wait_ready

KEYCLOAK = (
    pathlib.Path(os.environ.get("WEFT_CACHE", pathlib.Path.home() / ".cache" / "weft")) / "tools" / "keycloak-26.0.7"
)
REALM = REPO / "crates" / "weft-testkit" / "fixtures" / "weft-realm.json"


class Keycloak:
    """``kc.sh start --optimized`` on the prepared distribution, with a home of its own
    (as the Rust tests' ``weft_testkit::keycloak`` does), on a free 127.0.0.1 port."""

    def __init__(self) -> None:
        assert (KEYCLOAK / "bin" / "kc.sh").exists(), "run .ci/install-tools.sh (keycloak)"
        self.home = pathlib.Path(tempfile.mkdtemp(prefix="weft-py-keycloak-"))
        for d in ("conf", "lib", "providers", "themes"):
            (self.home / d).symlink_to(KEYCLOAK / d)
        (self.home / "data" / "import").mkdir(parents=True)
        shutil.copy(REALM, self.home / "data" / "import" / "realm.json")
        self.log = self.home / "keycloak.log"
        self.proc: subprocess.Popen[bytes] | None = None
        for _ in range(3):
            self.port = free_port()
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    [
                        str(KEYCLOAK / "bin" / "kc.sh"),
                        "start",
                        "--optimized",
                        f"-Dkc.home.dir={self.home}",
                        "--cache=local",
                        "--http-enabled=true",
                        "--hostname-strict=false",
                        "--http-host=127.0.0.1",
                        f"--http-port={self.port}",
                        "--import-realm",
                    ],
                    cwd=self.home,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "KC_BOOTSTRAP_ADMIN_USERNAME": "admin", "KC_BOOTSTRAP_ADMIN_PASSWORD": "admin"},
                    start_new_session=True,
                )
            if self._ready():
                return
            self.stop()
            if "Address already in use" not in self.log.read_text():
                break
        raise RuntimeError(f"Keycloak did not start: {self.log.read_text()[-3000:]}")

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/realms/weft"

    def _ready(self) -> bool:
        assert self.proc is not None
        return wait_ready(self.proc, lambda: http_get(self.issuer + "/.well-known/openid-configuration"), 180, 0.5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def keycloak() -> Iterator[Keycloak]:
    kc = Keycloak()
    yield kc
    kc.stop()
    shutil.rmtree(kc.home, ignore_errors=True)


@pytest.fixture(scope="module")
def zone(keycloak: Keycloak, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zone]:
    """Zone ``sso`` trusting the realm, signing in to the web with its public client
    ``weft-web``; a second issuer that nothing answers for shows what a user sees when the
    sign-in service is down."""
    root = tmp_path_factory.mktemp("sso")
    dead = f"http://127.0.0.1:{free_port()}/realms/gone"
    config = root / "weft.toml"
    config.write_text(
        f"""
[[oidc]]
issuer = "{keycloak.issuer}"
audience = "weft"
admin_role = "weft-admin"
web_client_id = "weft-web"
label = "Keycloak"

[[oidc]]
issuer = "{dead}"
audience = "weft"
web_client_id = "weft-web"
label = "the old IdP"
"""
    )
    z = Zone("sso", root / "sso-data")
    z.env["WEFT_CONFIG"] = str(config)
    z.run()
    yield z
    z.stop()


@pytest.fixture
def b(browser: WebDriver, zone: Zone) -> WebDriver:  # noqa: F811
    """The browser with no cookie at all: neither the zone's session nor Keycloak's."""
    browser.get(zone.url + "/login")
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    return browser


def sign_in(d: WebDriver, zone: Zone, user: str, password: str, start: str = "/login") -> None:
    d.get(zone.url + start)
    d.find_element(By.LINK_TEXT, "Sign in with Keycloak").click()
    wait(d, lambda d: has(d, "#kc-login"))
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(password)
    d.find_element(By.ID, "kc-login").click()
    wait(d, lambda d: d.current_url.startswith(zone.url) and "/login" not in d.current_url)


def session_cookie(d: WebDriver) -> str:
    c = d.get_cookie("weft_session_sso")
    assert c is not None and c["httpOnly"] and c["sameSite"] == "Lax", c
    return f"{c['name']}={c['value']}"


def whoami(zone: Zone, cookie: str) -> dict[str, object]:
    status, _, body = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": cookie})
    assert status == 200, body
    return dict(json.loads(body))


def test_sign_in_with_keycloak_acts_as_the_tokens_user_with_its_groups_and_role(b: WebDriver, zone: Zone) -> None:
    # A collection the weft group `physics` may read: alice is in it at Keycloak only.
    for args in (
        ("group", "add", "physics"),
        ("mkdir", "-p", "/sso/projects/phys"),
        ("acl", "set", "/sso/projects/phys", "physics", "read"),
    ):
        r = zone.weft(*args)
        assert r.returncode == 0, (args, r.stderr)

    b.get(zone.url + "/")
    wait(b, lambda d: "/login" in d.current_url)
    buttons = [e.text for e in b.find_elements(By.CSS_SELECTOR, ".login .sso a.button")]
    assert buttons == ["Sign in with Keycloak", "Sign in with the old IdP"]
    assert has(b, "#token"), "the token form stays"
    shot(b, "login-sso.png")

    sign_in(b, zone, "alice", "alice-pw")
    assert b.current_url == zone.url + "/data/sso/home/alice"
    assert b.find_element(By.CSS_SELECTOR, ".who .user").text == "alice"
    cookie = session_cookie(b)
    assert b.get_cookie("weft_sso_sso") is None, "the pending sign-in is cleared"
    me = whoami(zone, cookie)
    assert me["user"] == "alice" and me["admin"] is False and me["groups"] == ["physics"], me
    # The group claim counts, as for a bearer token.
    b.get(zone.url + "/data/sso/projects/phys")
    assert b.find_element(By.CSS_SELECTOR, "h1").text.endswith("phys")
    assert not has(b, "a[href='/admin']")
    status, _, _ = send(zone, "GET", "/admin", headers={"Cookie": cookie})
    assert status == 403

    # Logging out ends the weft session (Keycloak's own stays, as with any relying party).
    b.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait(b, lambda d: "/login" in d.current_url)
    status, _, _ = send(zone, "GET", "/api/v1/whoami", headers={"Cookie": cookie})
    assert status == 401

    # carol holds the realm role weft-admin; a sign-in begun from a page goes back there.
    b.execute_cdp_cmd("Network.clearBrowserCookies", {})
    sign_in(b, zone, "carol", "carol-pw", start="/transfers")
    assert b.current_url == zone.url + "/transfers"
    me = whoami(zone, session_cookie(b))
    assert me["user"] == "carol" and me["admin"] is True, me
    b.get(zone.url + "/admin")
    assert b.find_element(By.CSS_SELECTOR, "h1").text.startswith("Admin")

    # bob is in chemistry, not physics: neither the collection nor its name shows.
    b.execute_cdp_cmd("Network.clearBrowserCookies", {})
    sign_in(b, zone, "bob", "bob-pw")
    b.get(zone.url + "/data/sso/projects/phys")
    assert b.find_element(By.CSS_SELECTOR, "h1").text == "You do not have permission"
    b.get(zone.url + "/data/sso/projects")
    assert "phys" not in b.find_element(By.CSS_SELECTOR, "main").text


def pending(zone: Zone, n: int = 0, next_page: str | None = None) -> tuple[str, dict[str, str]]:
    """Begins a sign-in without a browser: the pending sign-in's cookie and where it leads."""
    target = f"/login/oidc/{n}" + (f"?next={urllib.parse.quote(next_page, safe='')}" if next_page else "")
    status, headers, body = send(zone, "GET", target)
    assert status == 303, (status, body[:300])
    cookie = headers["set-cookie"].split(";")[0]
    assert cookie.startswith("weft_sso_sso="), cookie
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(headers["location"]).query))
    return cookie, q


def test_the_authorization_request_asks_for_a_code_with_pkce(zone: Zone, keycloak: Keycloak) -> None:
    cookie, q = pending(zone, next_page="//evil.example/x")
    assert q["response_type"] == "code" and q["client_id"] == "weft-web" and q["scope"] == "openid"
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43
    assert q["redirect_uri"] == zone.url + "/login/oidc/callback"
    assert len(q["state"]) == 43
    # Two sign-ins never share a state or a challenge.
    _, q2 = pending(zone)
    assert (q2["state"], q2["code_challenge"]) != (q["state"], q["code_challenge"])
    # The cookie holds the verifier of the challenge, and no page to go back to that is
    # not one of this zone's.
    held = json.loads(base64.urlsafe_b64decode(cookie.split("=", 1)[1] + "=="))
    assert held["state"] == q["state"] and held["next"] is None, held
    digest = hashlib.sha256(held["verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == q["code_challenge"]


def test_a_callback_this_browser_did_not_begin_opens_no_session(zone: Zone) -> None:
    def callback(query: dict[str, str], cookie: str | None) -> tuple[int, dict[str, str], str]:
        headers = {"Cookie": cookie} if cookie else {}
        status, h, body = send(zone, "GET", "/login/oidc/callback?" + urllib.parse.urlencode(query), headers=headers)
        return status, h, body.decode()

    def no_session(h: dict[str, str]) -> bool:
        return "weft_session_sso=" not in h.get("set-cookie", "").replace("weft_session_sso=;", "")

    # No pending sign-in: an attacker's code and state handed to the victim's browser.
    status, h, page = callback({"code": "stolen", "state": "x" * 43}, None)
    assert status == 403 and "not started in this browser" in page and no_session(h), (status, page[-600:])
    # A pending sign-in, but another state.
    cookie, q = pending(zone)
    status, h, page = callback({"code": "stolen", "state": "y" * 43}, cookie)
    assert status == 403 and "does not belong" in page and no_session(h)
    # The cookie is cleared whatever the outcome, so it cannot be used twice.
    assert re.search(r"weft_sso_sso=; [^,]*Max-Age=0", h["set-cookie"]), h
    # The issuer says no (the user cancelled): said, and nothing opened.
    status, h, page = callback(
        {"error": "access_denied", "error_description": "<b>cancelled</b>", "state": q["state"]}, cookie
    )
    assert status == 401 and "Keycloak did not sign you in" in page and no_session(h)
    assert "<b>cancelled</b>" not in page and "&lt;b&gt;cancelled&lt;/b&gt;" in page
    # The right state with a code Keycloak never gave: refused by Keycloak.
    status, h, page = callback({"code": "made-up", "state": q["state"]}, cookie)
    assert status == 401 and "refused the sign-in code" in page and no_session(h), page[-800:]
    # A forged pending cookie is no pending sign-in.
    status, h, page = callback({"code": "x", "state": "x"}, "weft_sso_sso=not-base64!")
    assert status == 403 and no_session(h)
    # No issuer of that number, or one without a web client.
    status, _, _ = send(zone, "GET", "/login/oidc/7")
    assert status == 404


def test_a_sign_in_service_that_is_down_is_named_on_the_login_page(b: WebDriver, zone: Zone) -> None:
    b.get(zone.url + "/login")
    b.find_element(By.LINK_TEXT, "Sign in with the old IdP").click()
    alert = wait(b, lambda d: d.find_element(By.CSS_SELECTOR, ".login .alert"))
    assert "cannot reach the sign-in service the old IdP" in alert.text, alert.text
    assert b.get_cookie("weft_session_sso") is None
