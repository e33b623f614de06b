"""A real zone for the SDK's tests: ``weft serve`` on a free 127.0.0.1 port in a scratch
directory, started once per session (``zone``) or per test (``zonelib.Zone.start``)."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from zonelib import Zone


@pytest.fixture(scope="session", autouse=True)
def isolated_config() -> Iterator[pathlib.Path]:
    """No test reads the user's own ``weft login``, or a WEFT_* of the caller's shell."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="weft-py-config-"))
    saved = {k: v for k, v in os.environ.items() if k.startswith("WEFT_") and k != "WEFT_BIN"}
    for k in saved:
        del os.environ[k]
    old = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(d)
    yield d
    if old is None:
        del os.environ["XDG_CONFIG_HOME"]
    else:
        os.environ["XDG_CONFIG_HOME"] = old
    os.environ.update(saved)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def zone_root() -> Iterator[pathlib.Path]:
    d = pathlib.Path(tempfile.mkdtemp(prefix="weft-py-zones-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def zone(zone_root: pathlib.Path, isolated_config: pathlib.Path) -> Iterator[Zone]:
    """A zone named ``t`` shared by the session's tests; each test works in its own
    collection (``home`` fixture)."""
    z = Zone.start("t", zone_root)
    yield z
    z.stop()


@pytest.fixture
def client(zone: Zone):  # type: ignore[no-untyped-def]
    import weft

    return weft.Client(zone.url, zone.token, progress=False)


_counter = iter(range(1_000_000))


@pytest.fixture
def home(client) -> str:  # type: ignore[no-untyped-def]
    """A fresh collection below the admin's home, for one test."""
    path = f"/t/home/admin/test-{next(_counter)}-{os.getpid()}"
    client.mkdir(path)
    return path
