"""The Data and object pages' actions in a real browser (headless Chromium, as
``test_web.py``): metadata, access, PIDs, moving, search, uploads that survive a cut and a
reload, and the data distribution across two federated zones. Each refusal is checked
for having changed nothing; the tests take the screenshots in ``docs/ui/``."""

from __future__ import annotations

import json
import os
import pathlib
import re
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import test_web
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select
from test_web import (
    FORM,
    SHOTS,
    MiB,
    api,
    cookie_header,
    exists,
    form,
    has,
    login,
    mkdir,
    names,
    new_user,
    put,
    quoted,
    send,
    unique,
    wait,
)
from zonelib import Zone

# The browser of test_web.py, one per module, and a cookie-less page of it per test.
browser = test_web.browser
b = test_web.b

# --- helpers ---


def shot(d: WebDriver, name: str, width: int = 1280, height: int = 800) -> None:
    """A screenshot of the whole page at ``width`` (the window's height at least)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    full = d.execute_script("return document.documentElement.scrollHeight")
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": max(height, min(full, 2400)), "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        d.save_screenshot(str(SHOTS / name))
    finally:
        d.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
        )


def meta_ls(zone: Zone, path: str) -> list[tuple[str, str, str]]:
    r = zone.weft("meta", "ls", "--json", path)
    assert r.returncode == 0, r.stderr
    return sorted((a["attr"], a["value"], a["unit"]) for a in json.loads(r.stdout))


def stat(zone: Zone, path: str) -> dict:
    return json.loads(api(zone, "GET", f"/api/v1/stat/{quoted(path)}"))


def open_page(d: WebDriver, zone: Zone, path: str, prefix: str = "/data") -> None:
    d.get(zone.url + prefix + "/" + quoted(path))


def gone(old: WebElement) -> Any:
    """Whether ``old`` left the document. Chromium answers for an element of a page it
    navigated away from either "stale element" or, at times, an inspector error ("Node
    with given id does not belong to the document"): both mean gone."""

    def check(_d: WebDriver) -> bool:
        try:
            old.is_enabled()
            return False
        except WebDriverException:
            return True

    return check


def follow(d: WebDriver, element: WebElement) -> None:
    """Clicks a link or a form's button and waits for the page it leads to, so that
    nothing of the page before (its notice, its form) is taken for the answer."""
    old = d.find_element(By.TAG_NAME, "html")
    try:
        element.click()
    except WebDriverException:
        # The driver looks at the element again after the click; the page may be gone.
        if not gone(old)(d):
            raise
    wait(d, gone(old))


def notice(d: WebDriver) -> str:
    return wait(d, lambda drv: drv.find_element(By.CSS_SELECTOR, ".notice")).text


def csrf_of(d: WebDriver) -> str:
    return d.find_element(By.CSS_SELECTOR, "meta[name=csrf-token]").get_attribute("content")


def upload_piece_bytes(zone: Zone) -> int:
    """Bytes of upload pieces the zone stored, over all its resources (its metrics)."""
    text = api(zone, "GET", "/metrics").decode()
    return sum(int(float(v)) for v in re.findall(r"^weft_upload_piece_bytes_total\{[^}]*\} (\S+)$", text, re.M))


# --- Metadata ---


def test_metadata_is_added_edited_and_removed_as_weft_meta_sees_it(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('meta')}"
    mkdir(zone, d)
    obj = f"{d}/movie.tif"
    put(zone, obj, b"frames")
    login(b, zone, zone.token)
    open_page(b, zone, obj)

    def add(attr: str, value: str, unit: str = "") -> None:
        b.find_element(By.ID, "meta-attr").send_keys(attr)
        b.find_element(By.ID, "meta-value").send_keys(value)
        if unit:
            b.find_element(By.ID, "meta-unit").send_keys(unit)
        follow(b, b.find_element(By.CSS_SELECTOR, "form.meta-add button[type=submit]"))

    add("voltage", "300", "kV")
    assert notice(b) == "Metadata added."
    add("instrument", "Krios G4")
    notice(b)
    assert meta_ls(zone, obj) == [("instrument", "Krios G4", ""), ("voltage", "300", "kV")]

    # Edit the voltage's value and unit in its row.
    row = b.find_element(By.XPATH, "//table[contains(@class,'meta')]//tr[td[text()='voltage']]")
    follow(b, row.find_element(By.LINK_TEXT, "Edit"))
    value = wait(b, lambda drv: drv.find_element(By.ID, "edit-value"))
    assert value.get_attribute("value") == "300"
    value.clear()
    value.send_keys("200")
    unit = b.find_element(By.ID, "edit-unit")
    unit.clear()
    unit.send_keys("kV (nominal)")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.meta-edit button[type=submit]"))
    assert notice(b) == "Metadata changed."
    assert meta_ls(zone, obj) == [("instrument", "Krios G4", ""), ("voltage", "200", "kV (nominal)")]

    # A DataCite field the zone refuses: its error, in the section, the form kept, nothing stored.
    add("datacite.publicationYear", "next year")
    alert = wait(b, lambda drv: drv.find_element(By.CSS_SELECTOR, "#metadata .alert"))
    assert "four digits" in alert.text and "invalid_argument" in alert.text, alert.text
    assert b.find_element(By.ID, "meta-value").get_attribute("value") == "next year"
    assert meta_ls(zone, obj) == [("instrument", "Krios G4", ""), ("voltage", "200", "kV (nominal)")]
    # A second value for a field that takes one: the zone's reason.
    b.find_element(By.ID, "meta-attr").clear()
    b.find_element(By.ID, "meta-value").clear()
    add("datacite.publicationYear", "2026")
    notice(b)
    add("datacite.publicationYear", "2027")
    alert = wait(b, lambda drv: drv.find_element(By.CSS_SELECTOR, "#metadata .alert"))
    assert "takes one value" in alert.text, alert.text
    # Editing it replaces the one value.
    open_page(b, zone, obj)
    row = b.find_element(By.XPATH, "//tr[td[text()='datacite.publicationYear']]")
    follow(b, row.find_element(By.LINK_TEXT, "Edit"))
    value = wait(b, lambda drv: drv.find_element(By.ID, "edit-value"))
    value.clear()
    value.send_keys("2027")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.meta-edit button[type=submit]"))
    notice(b)
    assert ("datacite.publicationYear", "2027", "") in meta_ls(zone, obj)

    # Remove the instrument.
    row = b.find_element(By.XPATH, "//tr[td[text()='instrument']]")
    follow(b, row.find_element(By.CSS_SELECTOR, "button.danger"))
    assert notice(b) == "Metadata removed."
    assert [a for a, _, _ in meta_ls(zone, obj)] == ["datacite.publicationYear", "voltage"]

    # The same on a collection's details.
    open_page(b, zone, d, "/details")
    add("project", "cryo-42")
    notice(b)
    assert meta_ls(zone, d) == [("project", "cryo-42", "")]

    # Without the CSRF token nothing changes.
    status, _, body = send(
        zone,
        "POST",
        f"/meta/{quoted(obj)}",
        form({"op": "add", "attr": "x", "value": "y"}),
        {**FORM, "Cookie": cookie_header(b), "Origin": zone.url},
    )
    assert status == 403 and b"csrf_rejected" in body
    assert "x" not in [a for a, _, _ in meta_ls(zone, obj)]


# --- Access ---


def test_an_owner_grants_read_and_the_reader_may_read_but_not_change(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('shared')}"
    mkdir(zone, d)
    obj = f"{d}/results.csv"
    put(zone, obj, b"a,b\n1,2\n")
    reader = unique("dora").replace("-", "")[:30]
    token = new_user(zone, reader)

    login(b, zone, zone.token)
    open_page(b, zone, obj)
    b.find_element(By.ID, "grant-principal").send_keys(reader)
    Select(b.find_element(By.ID, "grant-permission")).select_by_value("read")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.grant button[type=submit]"))
    assert notice(b) == "Access granted."
    rows = [r.text for r in b.find_elements(By.CSS_SELECTOR, "table.acl tbody tr")]
    assert any(r.startswith(reader) and "read" in r for r in rows), rows
    # Entries on the collections above show as inherited.
    group = "team-" + reader[:20]
    r = zone.weft("group", "add", group)
    assert r.returncode == 0, r.stderr
    assert zone.weft("acl", "set", d, group, "write").returncode == 0
    open_page(b, zone, obj)
    inherited = [r.text for r in b.find_elements(By.CSS_SELECTOR, "table.acl tr.inherited")]
    assert any(group in r and "inherited from" in r and d in r for r in inherited), inherited

    # The reader: the object, and no button that changes it.
    b.delete_all_cookies()
    login(b, zone, token)
    open_page(b, zone, obj)
    assert b.find_element(By.CSS_SELECTOR, "dd.checksum").text.startswith("blake3:")
    for css in ["a.button.danger", "form.meta-add", "form.grant", "form.move", "form.replicate", "#access"]:
        assert not has(b, css), css
    assert "Mint PID" not in b.page_source
    # Forged posts are refused and change nothing.
    hdrs = {**FORM, "Cookie": cookie_header(b), "Origin": zone.url}
    csrf = csrf_of(b)
    status, _, body = send(zone, "POST", f"/delete/{quoted(obj)}", form({"csrf": csrf}), hdrs)
    assert status == 403 and exists(zone, obj), body[:300]
    status, _, body = send(
        zone, "POST", f"/meta/{quoted(obj)}", form({"csrf": csrf, "op": "add", "attr": "x", "value": "1"}), hdrs
    )
    assert status == 403 and b"forbidden" in body and meta_ls(zone, obj) == []
    status, _, body = send(
        zone, "POST", f"/acl/{quoted(obj)}", form({"csrf": csrf, "principal": reader, "permission": "own"}), hdrs
    )
    assert status == 403 and b"forbidden" in body
    target = f"{d}/renamed.csv"
    status, _, _ = send(
        zone, "POST", f"/move/{quoted(obj)}", form({"csrf": csrf, "name": "renamed.csv", "into": d}), hdrs
    )
    assert status == 403 and exists(zone, obj) and not exists(zone, target)
    status, _, _ = send(zone, "POST", f"/mint-pid/{quoted(obj)}", form({"csrf": csrf}), hdrs)
    assert status == 403 and stat(zone, obj).get("pid") is None

    # Revoked, the reader sees nothing of it.
    b.delete_all_cookies()
    login(b, zone, zone.token)
    open_page(b, zone, obj)
    row = b.find_element(By.XPATH, f"//table[contains(@class,'acl')]//tr[td[text()='{reader}']]")
    follow(b, row.find_element(By.CSS_SELECTOR, "button.danger"))
    assert notice(b) == "Access revoked."
    b.delete_all_cookies()
    login(b, zone, token)
    open_page(b, zone, obj)
    assert "You do not have permission" in b.find_element(By.TAG_NAME, "h1").text
    assert not has(b, "dd.checksum")


# --- PIDs ---


def test_mint_a_pid_and_follow_its_landing_link(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('pid')}"
    mkdir(zone, d)
    obj = f"{d}/paper-data.h5"
    put(zone, obj, b"hdf5")
    login(b, zone, zone.token)
    open_page(b, zone, obj)
    follow(b, b.find_element(By.XPATH, "//button[text()='Mint PID']"))
    assert notice(b).startswith("PID minted.")
    pid = stat(zone, obj)["pid"]
    link = b.find_element(By.CSS_SELECTOR, "dd.pid a")
    assert link.text == pid and link.get_attribute("href").endswith(f"/pid/{pid}")
    assert not has(b, "dd.pid button"), "one PID a node"
    follow(b, link)
    wait(b, lambda drv: f"/pid/{pid}" in drv.current_url)
    assert "paper-data.h5" in b.page_source


def test_a_collection_shows_its_dataset_state(b: WebDriver, zone: Zone) -> None:
    """An instrument's session: open while it is written, closed once complete, with its
    PID and whether headers are read; the link leads to the copies per zone."""
    d = f"/t/home/admin/{unique('session')}"
    mkdir(zone, d)
    put(zone, f"{d}/FoilHole_1_fractions.tiff", b"frames")
    login(b, zone, zone.token)
    open_page(b, zone, d)
    assert not has(b, "p.dataset"), "a plain collection has no dataset line"
    for args in (("extract", "enable", d), ("dataset", "open", d)):
        r = zone.weft(*args)
        assert r.returncode == 0, r.stderr
    open_page(b, zone, d)
    line = b.find_element(By.CSS_SELECTOR, "p.dataset").text
    assert "Dataset open" in line and "being written" in line and "headers read" in line, line
    for args in (("dataset", "close", d), ("pid", "mint", d)):
        r = zone.weft(*args)
        assert r.returncode == 0, r.stderr
    open_page(b, zone, d)
    line = b.find_element(By.CSS_SELECTOR, "p.dataset").text
    assert "Dataset closed" in line and f"PID {stat(zone, d)['pid']}" in line, line
    shot(b, "data-dataset.png")
    follow(b, b.find_element(By.LINK_TEXT, "copies per zone"))
    assert "/details/" in b.current_url


# --- Renaming and moving ---


def test_rename_and_move(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('mv')}"
    mkdir(zone, f"{d}/inbox")
    mkdir(zone, f"{d}/archive")
    put(zone, f"{d}/inbox/scan.tif", b"scan")
    login(b, zone, zone.token)
    open_page(b, zone, f"{d}/inbox/scan.tif")
    name = b.find_element(By.ID, "move-name")
    assert name.get_attribute("value") == "scan.tif"
    assert b.find_element(By.ID, "move-into").get_attribute("value") == f"{d}/inbox"
    name.clear()
    name.send_keys("scan-0001.tif")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.move button"))
    wait(b, lambda drv: "/scan-0001.tif" in drv.current_url)
    assert notice(b) == "Moved here."
    assert exists(zone, f"{d}/inbox/scan-0001.tif") and not exists(zone, f"{d}/inbox/scan.tif")

    into = b.find_element(By.ID, "move-into")
    into.clear()
    into.send_keys(f"{d}/archive")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.move button"))
    wait(b, lambda drv: "/archive/scan-0001.tif" in drv.current_url)
    assert exists(zone, f"{d}/archive/scan-0001.tif")

    # A collection moves with its contents; a name that is taken is refused, nothing moves.
    put(zone, f"{d}/archive/other.tif", b"x")
    open_page(b, zone, f"{d}/inbox", "/details")
    name = b.find_element(By.ID, "move-name")
    name.clear()
    name.send_keys("archive")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.move button"))
    alert = wait(b, lambda drv: drv.find_element(By.CSS_SELECTOR, "#move .alert"))
    assert "already_exists" in alert.text, alert.text
    assert exists(zone, f"{d}/inbox")
    name = b.find_element(By.ID, "move-name")
    assert name.get_attribute("value") == "archive", "the form keeps what was typed"
    name.clear()
    name.send_keys("inbox-2025")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.move button"))
    wait(b, lambda drv: drv.current_url.split("?")[0].endswith("/details" + d + "/inbox-2025"))
    assert exists(zone, f"{d}/inbox-2025") and not exists(zone, f"{d}/inbox")


# --- Search ---


def test_search_by_name_and_by_metadata_in_pages(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('find')}"
    mkdir(zone, f"{d}/day1")
    for i in range(105):
        put(zone, f"{d}/day1/movie-{i:03d}.tif", b"m")
    put(zone, f"{d}/notes.txt", b"n")
    for i, v in [(3, "300"), (7, "200"), (9, "120")]:
        assert zone.weft("meta", "add", f"{d}/day1/movie-{i:03d}.tif", "voltage", v, "kV").returncode == 0
    assert zone.weft("meta", "add", f"{d}/day1/movie-007.tif", "instrument", "Krios").returncode == 0
    login(b, zone, zone.token)
    open_page(b, zone, d)
    b.find_element(By.ID, "search-name").send_keys("movie-")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.search button"))
    wait(b, lambda drv: "/search/" in drv.current_url)
    first = names(b)
    assert len(first) == 100 and all(n.startswith("day1/movie-") for n in first)
    follow(b, b.find_element(By.CSS_SELECTOR, "a[rel=next]"))
    wait(b, lambda drv: "after=" in drv.current_url)
    assert len(names(b)) == 5 and not set(names(b)) & set(first)

    # Metadata conditions, as `weft find --meta`; the form keeps them.
    b.get(zone.url + f"/search/{quoted(d)}?" + urllib.parse.urlencode([("meta", "voltage>=150")]))
    assert sorted(names(b)) == ["day1/movie-003.tif", "day1/movie-007.tif"]
    b.find_element(By.ID, "search-meta-1").send_keys("instrument=Krios")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.search button"))
    wait(b, lambda drv: "instrument" in drv.current_url)
    assert names(b) == ["day1/movie-007.tif"]
    assert b.find_element(By.ID, "search-meta-0").get_attribute("value") == "voltage>=150"
    shot(b, "search.png")
    # A glob; a condition the zone cannot read is its error, shown.
    b.get(zone.url + f"/search/{quoted(d)}?name=*.txt")
    assert names(b) == ["notes.txt"]
    b.get(zone.url + f"/search/{quoted(d)}?" + urllib.parse.urlencode([("meta", "voltage>high")]))
    assert "not a number" in b.find_element(By.CSS_SELECTOR, ".alert").text
    assert not has(b, "table.results")

    # Someone who may not read the collection cannot search it.
    stranger = unique("erin").replace("-", "")[:30]
    token = new_user(zone, stranger)
    b.delete_all_cookies()
    login(b, zone, token)
    b.get(zone.url + f"/search/{quoted(d)}?name=movie")
    assert "You do not have permission" in b.find_element(By.TAG_NAME, "h1").text
    assert "movie-" not in b.page_source


# --- Uploads ---


def pick(d: WebDriver, local: pathlib.Path) -> None:
    d.find_element(By.ID, "upload-file").send_keys(str(local))
    d.find_element(By.CSS_SELECTOR, "#upload button[type=submit]").click()


def test_upload_50_mib_by_the_file_input_with_the_right_checksum(
    b: WebDriver, zone: Zone, tmp_path: pathlib.Path
) -> None:
    d = f"/t/home/admin/{unique('big')}"
    mkdir(zone, d)
    data = os.urandom(50 * MiB + 4321)
    local = tmp_path / "tomogram-50.mrc"
    local.write_bytes(data)
    login(b, zone, zone.token)
    open_page(b, zone, d)
    # Slow enough to see the bar move and take its picture.
    b.set_network_conditions(offline=False, latency=5, download_throughput=500 * MiB, upload_throughput=20 * MiB)
    try:
        pick(b, local)
        wait(b, lambda drv: 0 < float(drv.find_element(By.ID, "upload-progress").get_attribute("value")) < len(data))
        assert "Uploading tomogram-50.mrc" in b.find_element(By.ID, "upload-text").text
        shot(b, "upload.png")
    finally:
        b.delete_network_conditions()
    wait(b, lambda drv: "tomogram-50.mrc" in names(drv), timeout=240)
    row = b.find_element(By.XPATH, "//tr[td[@class='name']//span[text()='tomogram-50.mrc']]")
    assert row.find_element(By.CSS_SELECTOR, "td.size").get_attribute("data-bytes") == str(len(data))
    # The same bytes put in one request hash alike; the zone re-reads its copy to agree.
    put(zone, f"{d}/reference.mrc", data)
    uploaded = stat(zone, f"{d}/tomogram-50.mrc")["checksum"]
    assert uploaded == stat(zone, f"{d}/reference.mrc")["checksum"]
    r = zone.weft("checksum", "--verify", f"{d}/tomogram-50.mrc")
    assert r.returncode == 0 and uploaded in r.stdout and "ok" in r.stdout, r.stdout + r.stderr
    follow(b, row.find_element(By.CSS_SELECTOR, "td.name a"))
    assert wait(b, lambda drv: drv.find_element(By.CSS_SELECTOR, "dd.checksum")).text == uploaded


def test_an_upload_cut_by_a_reload_resumes_without_sending_pieces_twice(
    b: WebDriver, zone: Zone, tmp_path: pathlib.Path
) -> None:
    d = f"/t/home/admin/{unique('resume')}"
    mkdir(zone, d)
    data = os.urandom(50 * MiB)
    local = tmp_path / "stack.tif"
    local.write_bytes(data)
    before = upload_piece_bytes(zone)
    login(b, zone, zone.token)
    open_page(b, zone, d)
    b.set_network_conditions(offline=False, latency=5, download_throughput=500 * MiB, upload_throughput=12 * MiB)
    try:
        pick(b, local)
        # Three pieces of 8 MiB held by the zone, then the page goes away mid-upload.
        wait(b, lambda drv: upload_piece_bytes(zone) - before >= 3 * 8 * MiB, timeout=120)
        b.get(zone.url + "/data/t/home/admin")
    finally:
        b.delete_network_conditions()
    held = upload_piece_bytes(zone) - before
    assert 3 * 8 * MiB <= held < len(data), held
    assert not exists(zone, f"{d}/stack.tif"), "nothing visible of a cut upload"

    open_page(b, zone, d)
    b.execute_script(
        """
        const text = document.getElementById('upload-text');
        sessionStorage.setItem('said', '');
        new MutationObserver(() => {
            sessionStorage.setItem('said', sessionStorage.getItem('said') + '\\n' + text.textContent);
        }).observe(text, {childList: true, characterData: true, subtree: true});
        """
    )
    pick(b, local)
    wait(b, lambda drv: "stack.tif" in names(drv), timeout=180)
    said = b.execute_script("return sessionStorage.getItem('said')")
    assert "resumed" in said, said
    assert stat(zone, f"{d}/stack.tif")["size"] == len(data)
    put(zone, f"{d}/reference.tif", data)
    assert stat(zone, f"{d}/stack.tif")["checksum"] == stat(zone, f"{d}/reference.tif")["checksum"]
    # Each piece reached the zone once: the pieces it stored add up to the file.
    assert upload_piece_bytes(zone) - before == len(data)
    assert not [k for k in b.execute_script("return Object.keys(sessionStorage)") if k.startswith("weft-upload:")]


def test_an_upload_goes_on_after_the_network_drops_for_a_while(
    b: WebDriver, zone: Zone, tmp_path: pathlib.Path
) -> None:
    d = f"/t/home/admin/{unique('flaky')}"
    mkdir(zone, d)
    data = os.urandom(30 * MiB)
    local = tmp_path / "flaky.bin"
    local.write_bytes(data)
    before = upload_piece_bytes(zone)
    login(b, zone, zone.token)
    open_page(b, zone, d)
    slow = {"latency": 5, "download_throughput": 500 * MiB, "upload_throughput": 10 * MiB}
    b.set_network_conditions(offline=False, **slow)
    try:
        pick(b, local)
        wait(b, lambda drv: upload_piece_bytes(zone) - before >= 8 * MiB, timeout=120)
        b.set_network_conditions(offline=True, **slow)
        text = wait(
            b, lambda drv: "trying again" in (t := drv.find_element(By.ID, "upload-text").text) and t, timeout=60
        )
        assert "flaky.bin" in text, text
        time.sleep(2)
        b.set_network_conditions(offline=False, **slow)
        wait(b, lambda drv: "flaky.bin" in names(drv), timeout=180)
    finally:
        b.delete_network_conditions()
    assert stat(zone, f"{d}/flaky.bin")["size"] == len(data)
    put(zone, f"{d}/reference.bin", data)
    assert stat(zone, f"{d}/flaky.bin")["checksum"] == stat(zone, f"{d}/reference.bin")["checksum"]


def test_files_dropped_on_the_listing_are_uploaded(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('drop')}"
    mkdir(zone, d)
    login(b, zone, zone.token)
    open_page(b, zone, d)
    b.execute_script(
        """
        const dt = new DataTransfer();
        dt.items.add(new File(['first file'], 'a.txt', {type: 'text/plain'}));
        dt.items.add(new File([new Uint8Array(9 * 1024 * 1024)], 'b.bin'));
        const zone = document.getElementById('dropzone');
        for (const type of ['dragenter', 'dragover', 'drop']) {
            zone.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
        }
        """
    )
    wait(b, lambda drv: names(drv) == ["a.txt", "b.bin"], timeout=120)
    assert api(zone, "GET", f"/api/v1/data/{quoted(d)}/a.txt") == b"first file"
    assert stat(zone, f"{d}/b.bin")["size"] == 9 * MiB


# --- Two federated zones: replicas and the distribution ---


@pytest.fixture(scope="module")
def far(zone: Zone, zone_root: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zone]:
    """Zone ``u``, federated with ``t`` both ways for this module."""
    u = Zone.start("u", zone_root)
    secret = tmp_path_factory.mktemp("fed") / "shared.secret"
    secret.write_text(secrets.token_hex(32))
    for here, there in [(zone, u), (u, zone)]:
        r = here.weft("zone", "add", there.name, there.url, "--secret-file", str(secret))
        assert r.returncode == 0, r.stderr
    yield u
    zone.weft("zone", "rm", "u")
    u.stop()


def test_replicate_to_a_second_zone_and_see_the_distribution(b: WebDriver, zone: Zone, far: Zone) -> None:
    d = f"/t/home/admin/{unique('spread')}"
    mkdir(zone, f"{d}/raw")
    put(zone, f"{d}/raw/movie-0001.tif", os.urandom(6 * MiB))
    put(zone, f"{d}/raw/movie-0002.tif", os.urandom(2 * MiB))
    put(zone, f"{d}/README.md", b"# Spread\n")
    for attr, value, unit in [("instrument", "Krios G4", ""), ("voltage", "300", "kV"), ("dose", "40", "e/A2")]:
        assert (
            zone.weft("meta", "add", f"{d}/raw/movie-0001.tif", attr, value, *([unit] if unit else [])).returncode == 0
        )
    obj = f"{d}/raw/movie-0001.tif"
    login(b, zone, zone.token)
    open_page(b, zone, obj)
    select = Select(b.find_element(By.ID, "replicate-to"))
    assert "u" in [o.get_attribute("value") for o in select.options]
    assert "t:default" not in [o.get_attribute("value") for o in select.options], "it is there already"
    select.select_by_value("u")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.replicate button"))
    assert notice(b).startswith("Replication started")

    def zones_good(drv: WebDriver) -> list[str]:
        drv.refresh()
        return [
            r.find_element(By.CSS_SELECTOR, "td.at-zone").text
            for r in drv.find_elements(By.CSS_SELECTOR, "table.replicas tbody tr")
            if "good" in r.text
        ]

    wait(b, lambda drv: sorted(zones_good(drv)) == ["t", "u"], timeout=120)
    offered = [o.get_attribute("value") for o in b.find_elements(By.CSS_SELECTOR, "#replicate-to option")]
    assert "u" not in offered, offered
    assert zone.weft("pid", "mint", obj).returncode == 0
    # Who may use it, for the picture: a group through the collection, a user on the object.
    for cmd in [("group", "add", "cryo-team"), ("user", "add", "reviewer")]:
        zone.weft(*cmd)  # already there from an earlier run of the session: fine
    assert zone.weft("acl", "set", d, "cryo-team", "write").returncode == 0
    assert zone.weft("acl", "set", obj, "reviewer", "read").returncode == 0
    open_page(b, zone, obj)
    shot(b, "object.png")

    # The collection: bytes per zone, drawn and tabled.
    open_page(b, zone, d, "/details")
    bars = {
        g.find_element(By.CSS_SELECTOR, ".zone-label").text: g.find_element(By.CSS_SELECTOR, ".value").text
        for g in b.find_elements(By.CSS_SELECTOR, "svg.zone-bars g.bar-row")
    }
    assert set(bars) == {"t", "u"}, bars
    assert bars["t"].startswith("8.00 MiB") and bars["t"].endswith("100 %"), bars
    assert bars["u"].startswith("6.00 MiB") and bars["u"].endswith("75 %"), bars
    assert "Bytes per zone" in b.find_element(By.CSS_SELECTOR, "svg.zone-bars title").get_attribute("textContent")
    rows = [r.text for r in b.find_elements(By.CSS_SELECTOR, "table.distribution tbody tr")]
    assert len(rows) == 2 and rows[1].startswith("u"), rows
    for attr, value in [("project", "EMPIAR-10042"), ("datacite.title", "Apoferritin at 1.2 Å")]:
        assert zone.weft("meta", "add", d, attr, value).returncode == 0
    b.refresh()
    shot(b, "collection.png")
    offered = [o.get_attribute("value") for o in b.find_elements(By.CSS_SELECTOR, "#replicate-to option")]
    # t:default holds every object already; u does not. Other resources of t (tests
    # sharing this zone add some) hold none, so they are offered too.
    assert "t:default" not in offered and "u" in offered, offered

    # The whole collection to u: the rest follows, and the chart says so.
    Select(b.find_element(By.ID, "replicate-to")).select_by_value("u")
    follow(b, b.find_element(By.CSS_SELECTOR, "form.replicate button"))
    notice(b)

    def u_share(drv: WebDriver) -> str:
        drv.refresh()
        for g in drv.find_elements(By.CSS_SELECTOR, "svg.zone-bars g.bar-row"):
            if g.find_element(By.CSS_SELECTOR, ".zone-label").text == "u":
                return g.find_element(By.CSS_SELECTOR, ".value").text
        return ""

    wait(b, lambda drv: u_share(drv).endswith("100 %"), timeout=120)
    offered = [o.get_attribute("value") for o in b.find_elements(By.CSS_SELECTOR, "#replicate-to option")]
    assert "u" not in offered and "t:default" not in offered, "u and t:default hold every object now"

    # Trim the copy at u: the distribution changes back.
    open_page(b, zone, obj)
    row = b.find_element(By.XPATH, "//table[contains(@class,'replicas')]//tr[td[text()='u']]")
    follow(b, row.find_element(By.CSS_SELECTOR, "button.danger"))
    assert notice(b) == "Replica removed."
    assert [
        r.find_element(By.CSS_SELECTOR, "td.at-zone").text
        for r in b.find_elements(By.CSS_SELECTOR, "table.replicas tbody tr")
    ] == ["t"]
    assert not has(b, "table.replicas button.danger"), "the last good copy is not offered for trimming"


# --- Hostile names and values, rights, tablets ---


def test_script_in_a_collection_name_and_metadata_stays_text_everywhere(b: WebDriver, zone: Zone) -> None:
    # A name holds no `/`: an unclosed tag, which would swallow the page if it were markup.
    name = "<script>window.pwned=1"
    evil = "<script>window.pwned=1</script>"
    top = f"/t/home/admin/{unique('xss')}"
    d = f"{top}/{name}"
    mkdir(zone, d)
    put(zone, f"{d}/{name}.txt", b"x")
    assert zone.weft("meta", "add", d, evil, evil, evil).returncode == 0
    assert zone.weft("meta", "add", f"{d}/{name}.txt", "note", evil).returncode == 0
    login(b, zone, zone.token)
    cookie = cookie_header(b)
    search = urllib.parse.urlencode([("name", "script"), ("meta", f"note={evil}")])
    pages = [
        "/data/" + quoted(d),
        "/details/" + quoted(d),
        "/details/" + quoted(d) + "?edit=0",
        "/data/" + quoted(f"{d}/{name}.txt"),
        f"/search/{quoted(top)}?{search}",
    ]
    for page in pages:
        b.get(zone.url + page)
        time.sleep(0.2)
        assert b.execute_script("return window.pwned === undefined"), page
        status, _, body = send(zone, "GET", page, headers={"Cookie": cookie})
        assert status == 200 and b"<script>window.pwned" not in body, (page, status)
        assert b"&lt;script&gt;window.pwned" in body, page
    assert names(b) == [f"{name}/{name}.txt"]
    assert b.find_element(By.ID, "search-meta-0").get_attribute("value") == f"note={evil}"


def test_a_user_without_rights_sees_no_details_and_no_buttons(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('closed')}"
    mkdir(zone, d)
    put(zone, f"{d}/secret.bin", b"s")
    assert zone.weft("meta", "add", d, "secret-attr", "secret-value").returncode == 0
    name = unique("fred").replace("-", "")[:30]
    token = new_user(zone, name)
    login(b, zone, token)
    for page in ["/details/" + quoted(d), "/data/" + quoted(f"{d}/secret.bin")]:
        b.get(zone.url + page)
        assert "You do not have permission" in b.find_element(By.TAG_NAME, "h1").text
        assert "secret-value" not in b.page_source and not has(b, "form.meta-add") and not has(b, "svg.zone-bars")
    hdrs = {**FORM, "Cookie": cookie_header(b), "Origin": zone.url}
    csrf = csrf_of(b)
    for action, fields in [
        ("meta", {"op": "remove", "attr": "secret-attr", "value": "secret-value"}),
        ("replicate", {"to": "t"}),
        ("trim", {"from": "t:default"}),
        ("move", {"name": "mine", "into": f"/t/home/{name}"}),
        ("acl", {"principal": name, "permission": "own"}),
    ]:
        status, _, body = send(zone, "POST", f"/{action}/{quoted(d)}", form({"csrf": csrf, **fields}), hdrs)
        assert status == 403 and b"secret-value" not in body, (action, status)
    assert meta_ls(zone, d) == [("secret-attr", "secret-value", "")] and exists(zone, d)


def test_pages_read_well_on_a_tablet(b: WebDriver, zone: Zone) -> None:
    d = f"/t/home/admin/{unique('tablet')}"
    mkdir(zone, f"{d}/session-1")
    put(zone, f"{d}/session-1/movie.tif", os.urandom(MiB))
    obj = f"{d}/session-1/movie.tif"
    assert zone.weft("meta", "add", obj, "instrument", "Krios G4").returncode == 0
    login(b, zone, zone.token)
    open_page(b, zone, obj)
    b.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 768, "height": 1024, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        b.refresh()
        overflow = b.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        # Every control has a name a screen reader says, and the keyboard reaches the forms.
        unnamed = b.execute_script(
            """
            return [...document.querySelectorAll('input:not([type=hidden]), select, button, a[href]')]
                .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                             && !e.textContent.trim())
                .map(e => e.outerHTML.slice(0, 80));
            """
        )
        assert unnamed == [], unnamed
        reached = []
        for _ in range(60):
            ActionChains(b).send_keys(Keys.TAB).perform()
            reached.append(b.switch_to.active_element.get_attribute("id"))
        assert {"meta-attr", "meta-value", "grant-principal", "move-name"} <= set(reached), reached
        shot(b, "object-tablet.png", 768, 1024)
    finally:
        b.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
        )
