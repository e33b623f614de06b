#!/usr/bin/env python3
"""The web interface's Data page on a collection of 100,000 objects (issue 27's target:
under 300 ms for each of the first page and the next, and the zone's CPU per page view).
Run with the venv the tests use (it has Selenium; Chromium is a test tool):

    ~/.cache/weft/tools/pysdk/bin/python scripts/bench-web.py

Measured, after one warm-up view each, on a release zone with embedded defaults:
  - the server's answer: a whole page of 100 entries fetched with the session cookie, for
    the first page and the next one, in each of the three sort orders (name, size,
    modified), medians of 20 views, and the zone's CPU time per view (from /proc);
  - the browser's first render: headless Chromium's first contentful paint of the first
    page and of the next one (reached through the page's own "Next" link), medians of 5;
  - for comparison in the same run, the REST listing of the same first 100 entries
    (`GET /api/v1/list`), which the CLI's `weft ls` makes.
Not a test: nothing is asserted.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, Zone, build_weft, cpu_seconds, make_tree, start_zone  # noqa: E402

COUNT = 100_000
VIEWS = 20
RENDERS = 5
COLLECTION = "/bench/big"


class Browser:
    """A cookie jar holding the web session, and plain GETs with it."""

    def __init__(self, zone: Zone) -> None:
        self.base = zone.url
        form = urllib.parse.urlencode({"token": zone.token}).encode()
        opener = urllib.request.build_opener(NoRedirect())
        try:
            opener.open(urllib.request.Request(f"{self.base}/login", data=form, method="POST"))
        except urllib.error.HTTPError as e:
            if e.code != 303:
                raise
            self.cookie = e.headers["Set-Cookie"].split(";", 1)[0]

    def get(self, url: str) -> bytes:
        req = urllib.request.Request(
            url if url.startswith("http") else self.base + url, headers={"Cookie": self.cookie}
        )
        with urllib.request.urlopen(req) as r:
            return r.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def next_link(page: bytes) -> str:
    m = re.search(rb'<a[^>]*href="([^"]+)"[^>]*rel="next"', page) or re.search(rb'rel="next"[^>]*href="([^"]+)"', page)
    if not m:
        raise SystemExit("the page has no Next link")
    return html.unescape(m.group(1).decode())


def timed_views(zone: Zone, view) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median wall time of `view()` over VIEWS calls after a warm-up, and CPU per view."""
    view()
    times = []
    cpu0 = cpu_seconds(zone.proc.pid)
    for _ in range(VIEWS):
        t0 = time.perf_counter()
        view()
        times.append(time.perf_counter() - t0)
    cpu = (cpu_seconds(zone.proc.pid) - cpu0) / VIEWS
    return statistics.median(times), cpu


def first_paints(zone: Zone, browser: Browser) -> tuple[float, float]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    # The entry is buffered: read it once the browser has painted (it may not have when
    # the load event, which get() waits for, fired).
    paint = """
        const done = arguments[arguments.length - 1];
        new PerformanceObserver((list, obs) => {
            const e = list.getEntriesByName('first-contentful-paint')[0];
            if (e) { obs.disconnect(); done(e.startTime); }
        }).observe({type: 'paint', buffered: true});
    """
    driver.set_script_timeout(30)
    try:
        driver.get(zone.url + "/login")
        name, value = browser.cookie.split("=", 1)
        driver.add_cookie({"name": name, "value": value, "path": "/"})
        first, following = [], []
        for i in range(RENDERS + 1):
            driver.get(f"{zone.url}/data{COLLECTION}")
            fcp = driver.execute_async_script(paint)
            # The page's own Next link, followed as a navigation that waits for the load.
            driver.get(driver.find_element(By.CSS_SELECTOR, 'a[rel="next"]').get_attribute("href"))
            fcp_next = driver.execute_async_script(paint)
            if i:
                first.append(fcp)
                following.append(fcp_next)
        return statistics.median(first), statistics.median(following)
    finally:
        driver.quit()


def main() -> None:
    binary = build_weft()
    data = os.path.join(ROOT, "target", "bench-web")
    tree = os.path.join(data, "tree")
    # 100,000 small files with sizes and names that differ, in one directory (kept for the next run).
    make_tree(tree, COUNT, name="frame-{i:06d}.dat", fill=lambda i: b"x" * (16 + i % 977), reuse=True)
    scratch = os.path.join(data, "run")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    zone = start_zone(binary, "bench", scratch)
    try:
        subprocess.run([binary, "put", "-r", "-q", tree, COLLECTION], env=zone.client_env(), check=True)
        browser = Browser(zone)
        rows = []
        for by in ("name", "size", "modified"):
            first = f"/data{COLLECTION}?sort={by}"
            page = browser.get(first)
            following = next_link(page)
            t1, c1 = timed_views(zone, lambda u=first: browser.get(u))
            t2, c2 = timed_views(zone, lambda u=following: browser.get(u))
            rows.append((by, t1, c1, t2, c2))
        rest = f"/api/v1/list{COLLECTION}?limit=100"
        t_rest, c_rest = timed_views(zone, lambda: zone.call("GET", rest[len("/api/v1/") :]))
        print(f"{COUNT:,} objects in one collection; medians of {VIEWS} views after a warm-up\n")
        print("| view | answer | zone CPU per view |")
        print("|---|---|---|")
        for by, t1, c1, t2, c2 in rows:
            print(f"| Data page, first 100 by {by} | {t1 * 1000:.1f} ms | {c1 * 1000:.1f} ms |")
            print(f"| Data page, next 100 by {by} | {t2 * 1000:.1f} ms | {c2 * 1000:.1f} ms |")
        print(f"| REST listing, first 100 (comparison) | {t_rest * 1000:.1f} ms | {c_rest * 1000:.1f} ms |", flush=True)
        fcp, fcp_next = first_paints(zone, browser)
        print(
            f"\nChromium first contentful paint (median of {RENDERS}): first page {fcp:.0f} ms, "
            f"next page {fcp_next:.0f} ms"
        )
    finally:
        zone.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
