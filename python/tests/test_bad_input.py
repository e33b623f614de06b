"""Bad input and faults: each ends in a clear exception of the right class, and changes
nothing in the zone."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import fsspec
import pytest
from zonelib import Zone, free_port

import weft


def test_wrong_url_or_zone_down_is_unavailable_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    c = weft.Client(url, "t")
    with pytest.raises(weft.Unavailable) as e:
        c.stat("/t/x")
    assert url in str(e.value) and e.value.code == "unreachable"
    assert isinstance(e.value, ConnectionError)
    with pytest.raises(weft.InvalidArgument):
        weft.Client("not a url", "t")


def test_missing_wrong_and_expired_tokens(zone, client, home) -> None:
    with pytest.raises(weft.Unauthenticated):
        weft.Client(zone.url).stat(home)
    with pytest.raises(weft.Unauthenticated) as e:
        weft.Client(zone.url, "wrong-token").stat(home)
    assert e.value.status == 401
    token = client.admin.create_token(ttl_seconds=1)
    short = weft.Client(zone.url, token)
    assert short.whoami()["user"] == "admin"
    time.sleep(2.1)
    with pytest.raises(weft.TokenExpired):
        short.stat(home)


@pytest.mark.parametrize("bad", ["/t/home/../etc", "/t/home/a\x00b", "/t//x/../..", "relative/../../../.."])
def test_paths_with_dot_dot_or_nul_are_refused(client, home, bad: str) -> None:
    with pytest.raises(weft.InvalidArgument) as e:
        client.put(b"x", bad)
    assert e.value.code in ("invalid_path", "invalid_argument")
    with pytest.raises(ValueError):
        client.stat(bad)
    assert [n.name for n in client.ls(home)] == []


def test_opening_a_collection_or_with_an_unsupported_mode(client, home, zone) -> None:
    with pytest.raises(weft.IsACollection) as e:
        client.open(home, "rb")
    assert isinstance(e.value, IsADirectoryError) and home in str(e.value)
    client.put(b"abc", f"{home}/f")
    for mode in ("r+", "rb+", "ab", "a", "w+"):
        with pytest.raises(ValueError, match="not supported"):
            client.open(f"{home}/f", mode)
    with pytest.raises(weft.NotFound):
        client.open(f"{home}/missing", "rb")
    fs = fsspec.filesystem("weft", endpoint_url=zone.url, token=zone.token)
    with pytest.raises(ValueError, match="not supported"):
        fs.open(f"weft://t{home.removeprefix('/t')}/f", "r+b")
    assert client.read_bytes(f"{home}/f") == b"abc"


def test_a_local_destination_that_cannot_be_written(client, home, tmp_path) -> None:
    client.put(b"abc", f"{home}/f")
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(weft.Error) as e:
        client.get(f"{home}/f", blocker / "sub" / "f")
    assert str(blocker) in str(e.value)
    assert blocker.read_bytes() == b""
    with pytest.raises(weft.NotFound, match="no-such"):
        client.put(tmp_path / "no-such", f"{home}/g")
    assert not client.exists(f"{home}/g")


def run_child(zone, code: str, cwd: pathlib.Path) -> subprocess.Popen[str]:
    """``code`` in a Python process of its own, run from ``cwd`` (not the source tree,
    whose ``weft`` has no native module: the installed package is the one to import)."""
    env = dict(os.environ, WEFT_URL=zone.url, WEFT_TOKEN=zone.token, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def staged_uploads(zone) -> list[pathlib.Path]:
    tmp = zone.data_dir / "resources" / "default" / ".weft-tmp"
    return [p for p in tmp.glob("up-*")] if tmp.exists() else []


@pytest.fixture(scope="module")
def slow_zone(zone_root: pathlib.Path) -> Iterator[Zone]:
    """A zone that holds every piece it receives for 2 s (the test build's hold point
    ``piece-received``): an upload into it is still under way whenever a test looks, on
    however fast a machine."""
    z = Zone("slow", zone_root / "slow-data")
    z.env = {"FAILPOINTS": "piece-received=return(2000)"}
    z.run()
    yield z
    z.stop()


@pytest.mark.parametrize("streams", [1, None])
def test_ctrl_c_cancels_a_put_cleanly(slow_zone, tmp_path, streams) -> None:
    zone = slow_zone
    client = weft.Client(zone.url, zone.token, progress=False)
    home = f"/slow/home/admin/ctrl-c-{streams}"
    client.mkdir(home)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.write(os.urandom(1 << 20) * 256)
    staged = zone.data_dir / "resources" / "default" / ".weft-tmp"
    # Ctrl-C once the zone has begun to stage the upload: every piece is held 2 s, so the
    # put is under way then, and the client looks for Ctrl-C every 100 ms.
    child = run_child(
        zone,
        f"""
        import glob, os, signal, sys, threading, time, weft
        sent = []
        def interrupt():
            while not glob.glob({str(staged)!r} + "/up-*"):
                time.sleep(0.002)
            sent.append(time.monotonic())
            print("moving", flush=True)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        c = weft.Client(progress=False)
        try:
            c._native.put_files([({str(big)!r}, {home + "/big.bin"!r})], False, None, {streams}, 8, None)
        except KeyboardInterrupt:
            print("interrupted after", time.monotonic() - sent[0], flush=True)
            sys.exit(130)
        print("finished", flush=True)
        """,
        tmp_path,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line == "moving\n", (line, child.stderr.read() if child.stderr else "")
    rc = child.wait(30)
    out = child.stdout.read()
    assert rc == 130 and "interrupted after" in out, (rc, out)
    assert float(out.split()[-1]) < 10, out
    assert not client.exists(f"{home}/big.bin")
    # What the zone had staged for it was dropped at once (once the pieces it was holding
    # ended), not left for the idle sweep.
    deadline = time.monotonic() + 10
    while staged_uploads(zone) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert staged_uploads(zone) == []


def test_a_writer_killed_mid_way_leaves_nothing(zone, client, home, tmp_path) -> None:
    child = run_child(
        zone,
        f"""
        import fsspec, os, signal
        f = fsspec.open("weft://t{home.removeprefix("/t")}/half.bin", "wb").open()
        for _ in range(48):
            f.write(os.urandom(1 << 20))
        print("written", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        tmp_path,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "written\n"
    assert child.wait(30) == -signal.SIGKILL
    assert not client.exists(f"{home}/half.bin")
    assert [n.name for n in client.ls(home)] == []


def test_a_refused_upload_is_answered_with_its_error_not_a_broken_pipe(client, home) -> None:
    # The zone refuses before reading the body; it reads the rest anyway, so the client,
    # still sending, gets the answer (it used to see a reset about one time in a hundred).
    data = b"x" * (4 << 20)
    for i in range(200):
        with pytest.raises(weft.NotFound):
            client.put(data, f"{home}/missing/f{i}")
    client.put(b"x", f"{home}/exists")
    for _ in range(50):
        with pytest.raises(weft.AlreadyExists):
            client.put(data, f"{home}/exists")
    assert client.read_bytes(f"{home}/exists") == b"x"


def test_an_append_that_does_not_fit_its_object_is_refused_and_changes_nothing(zone, client, home) -> None:
    import json
    import urllib.error
    import urllib.request

    client.put(b"abc", f"{home}/log")
    some_sum = "blake3:" + "0" * 64

    def append(query: str, body: bytes, headers: dict[str, str], token: str | None = None) -> str | None:
        req = urllib.request.Request(
            f"{zone.url}/api/v1/append{home}/log{query}",
            method="POST",
            data=body,
            headers={"Authorization": f"Bearer {token or zone.token}", **headers},
        )
        try:
            urllib.request.urlopen(req).read()
            return None
        except urllib.error.HTTPError as e:
            code: str = json.loads(e.read())["code"]
            return code

    with_sum = {"x-weft-checksum": some_sum}
    assert append("", b"de", with_sum) == "invalid_argument"  # where it goes: not said
    assert append("?from=3", b"de", {}) == "invalid_argument"  # no checksum of the whole
    assert append("?from=3", b"de", {"x-weft-checksum": "md5:zz"}) == "invalid_argument"
    assert append("?from=2", b"de", with_sum) == "conflict"  # not the object's end
    assert append(f"?from={2**64 - 1}", b"de", with_sum) == "conflict"
    assert append("?from=-1", b"de", with_sum) == "invalid_argument"
    assert append("?from=3", b"de", with_sum) == "checksum_mismatch"  # not abc + de
    user = f"appender{os.getpid()}"
    assert zone.weft("user", "add", user).returncode == 0
    token = zone.weft("token", "create", "--user", user).stdout.strip().splitlines()[-1]
    assert append("?from=3", b"de", with_sum, token) == "forbidden"  # another user's object
    assert client.read_bytes(f"{home}/log") == b"abc"
    assert client.stat(f"{home}/log").size == 3
