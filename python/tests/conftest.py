"""A real zone for the SDK's tests: ``weft serve`` on a free 127.0.0.1 port in a scratch
directory, started once per session (``zone``) or per test (``Zone.start``)."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def weft_bin() -> str:
    """The weft binary the tests drive: ``WEFT_BIN``, else the workspace's build."""
    env = os.environ.get("WEFT_BIN")
    if env:
        return env
    for profile in ("debug", "release"):
        p = REPO / "target" / profile / "weft"
        if p.exists():
            return str(p)
    raise RuntimeError("no weft binary: run `cargo build -p weft` or set WEFT_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Zone:
    """One ``weft serve`` child process."""

    def __init__(self, name: str, data_dir: pathlib.Path) -> None:
        self.name = name
        self.data_dir = data_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log = data_dir.parent / f"{name}.log"
        # Set for the next run() (e.g. FAILPOINTS).
        self.env: dict[str, str] = {}

    @classmethod
    def start(cls, name: str, root: pathlib.Path) -> Zone:
        z = cls(name, root / f"{name}-data")
        z.run()
        return z

    def run(self) -> None:
        for _ in range(5):
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    [
                        weft_bin(),
                        "serve",
                        "--zone",
                        self.name,
                        "--listen",
                        f"127.0.0.1:{port}",
                        *self.more_listeners(port),
                        "--data-dir",
                        str(self.data_dir),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**clean_env(), **self.env},
                )
            if self._ready() and self.more_ready():
                return
            self.stop()
            if "Address already in use" not in self.log.read_text():
                break
        raise RuntimeError(f"weft serve did not start: {self.log.read_text()[-2000:]}")

    def more_listeners(self, port: int) -> list[str]:
        """Arguments for listeners besides the API's on ``port`` (a subclass's)."""
        return []

    def more_ready(self) -> bool:
        """Whether those listeners answer."""
        return True

    def _ready(self) -> bool:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/api/v1/health", timeout=2):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    @property
    def token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def weft(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """Runs a ``weft`` command against this zone."""
        env = clean_env()
        env.update(WEFT_URL=self.url, WEFT_TOKEN=token or self.token)
        return subprocess.run([weft_bin(), *args], env=env, capture_output=True, text=True, timeout=300)


def clean_env() -> dict[str, str]:
    """The environment without any WEFT_* setting, and with a config directory of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_")}
    env["XDG_CONFIG_HOME"] = os.environ["XDG_CONFIG_HOME"]
    return env


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
