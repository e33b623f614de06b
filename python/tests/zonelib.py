"""Real zones and the measures of a process, for the Python tests and the benchmark scripts:
``weft serve`` on free 127.0.0.1 ports in a scratch directory (``Zone``), a MinIO of the
test tools (``Minio``), trees of files to move (``make_tree``), and a process's CPU time and
peak memory (``cpu_seconds``, ``peak_rss_mib``, ``run_peak_rss_mib``).

The tests import it as they import ``conftest`` (pytest puts this folder on ``sys.path``);
``scripts/benchlib.py`` puts this folder on ``sys.path`` for the scripts. It is not in the
``weft`` package, which maturin ships alone (``python-packages``), and ``python/`` itself
stays off ``sys.path``: there, the source tree's ``weft`` (without its native module) would
hide the installed one.

Run as a program, it serves shell scripts (``scripts/profile-s3-small.sh``)::

    python3 python/tests/zonelib.py serve --zone NAME --data-dir DIR [--log FILE] [--s3] [--weft BIN]
        # starts a zone, prints "PID URL S3_URL" and leaves it running
    python3 python/tests/zonelib.py cpu-seconds PID
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import pathlib
import resource
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOLS_BIN = pathlib.Path(os.environ.get("WEFT_CACHE", pathlib.Path.home() / ".cache" / "weft")) / "tools" / "bin"


def weft_bin() -> str:
    """The weft binary to drive: ``WEFT_BIN``, else the workspace's build (debug first)."""
    env = os.environ.get("WEFT_BIN")
    if env:
        return env
    for profile in ("debug", "release"):
        p = REPO / "target" / profile / "weft"
        if p.exists():
            return str(p)
    raise RuntimeError("no weft binary: run `cargo build -p weft` or set WEFT_BIN")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now (another process may take it
    before the caller does: ``Zone.run`` tries again then)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env() -> dict[str, str]:
    """The environment without any WEFT_* setting (the tests also point XDG_CONFIG_HOME at
    a directory of their own, so no ``weft login`` of the user's is read)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("WEFT_")}


def wait_ready(proc: subprocess.Popen[bytes], probe: Callable[[], object], timeout: float, every: float) -> bool:
    """Calls ``probe`` every ``every`` seconds until it returns without an OSError (True);
    False once ``proc`` has ended or ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            probe()
            return True
        except OSError:
            time.sleep(every)
    return False


def http_get(url: str, timeout: float = 2) -> None:
    """GET ``url``; an OSError unless it answers 2xx or 3xx."""
    with urllib.request.urlopen(url, timeout=timeout):
        pass


def tcp_connect(port: int) -> None:
    """Connects to ``port`` of 127.0.0.1 and hangs up; an OSError if nothing listens."""
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Sends ``sig`` to ``proc`` unless it has ended, and waits; kills it after ``timeout`` s."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# What is still running when the interpreter exits is stopped then (a test or a benchmark
# that failed before its own stop), unless detached.
_running: set[Zone | Minio] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop()


Z = TypeVar("Z", bound="Zone")


class Zone:
    """One ``weft serve`` child process named ``name``, with its data in ``data_dir`` and its
    output (standard output and error) appended to ``log`` (by default ``NAME.log`` beside
    ``data_dir``). ``run`` starts it on a free port, the S3 gateway on a second one with
    ``s3``; ``args`` are more arguments of ``weft serve`` (``--catalog URL``), ``wrapper`` a
    command it runs under (``taskset -c 0``). ``environ`` is the environment it and
    ``weft``'s commands start from: by default the caller's without any WEFT_*
    (``clean_env``)."""

    def __init__(
        self,
        name: str,
        data_dir: str | os.PathLike[str],
        *,
        weft: str | None = None,
        log: str | os.PathLike[str] | None = None,
        s3: bool = False,
        args: Sequence[str] = (),
        wrapper: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.data_dir = pathlib.Path(data_dir)
        self.binary = weft
        self.log = pathlib.Path(log) if log is not None else self.data_dir.parent / f"{name}.log"
        self.s3 = s3
        self.args = list(args)
        self.wrapper = list(wrapper)
        self.environ = environ
        # Added to the server's environment at the next run() (e.g. FAILPOINTS).
        self.env: dict[str, str] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.url = ""
        self.s3_url = ""

    @classmethod
    def start(cls: type[Z], name: str, root: str | os.PathLike[str], **kwargs: Any) -> Z:
        """A zone with its data in ``root/NAME-data``, started."""
        z = cls(name, pathlib.Path(root) / f"{name}-data", **kwargs)
        z.run()
        return z

    def base_env(self) -> dict[str, str]:
        return clean_env() if self.environ is None else dict(self.environ)

    def run(self, timeout: float = 60) -> None:
        """Starts the server and waits until it answers (``/api/v1/health``, and the S3
        gateway's port); on a port another process took meanwhile, again on new ports."""
        for _ in range(5):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            listeners = ["--listen", f"127.0.0.1:{self.port}"]
            if self.s3:
                s3_port = free_port()
                while s3_port == self.port:
                    s3_port = free_port()
                self.s3_url = f"http://127.0.0.1:{s3_port}"
                listeners += ["--s3-listen", f"127.0.0.1:{s3_port}"]
            argv = [self.binary or weft_bin(), "serve", "--zone", self.name, *listeners]
            argv += ["--data-dir", str(self.data_dir), *self.args]
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    [*self.wrapper, *argv],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**self.base_env(), **self.env},
                )
            _running.add(self)
            if self._ready(timeout):
                return
            self.stop()
            if "Address already in use" not in self.log.read_text():
                break
        raise RuntimeError(f"weft serve did not start: {self.log.read_text()[-2000:]}")

    def _ready(self, timeout: float) -> bool:
        assert self.proc is not None
        if not wait_ready(self.proc, lambda: http_get(self.url + "/api/v1/health"), timeout, 0.05):
            return False
        if not self.s3:
            return True
        s3_port = int(self.s3_url.rsplit(":", 1)[1])
        return wait_ready(self.proc, lambda: tcp_connect(s3_port), 30, 0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stops the server with ``sig`` (SIGKILL after 30 s); its data stays for ``run``."""
        if self.proc is not None:
            stop_process(self.proc, sig)
        self.proc = None
        _running.discard(self)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        """Stops the server with ``sig`` and starts it again on the same data."""
        self.stop(sig)
        self.run()

    def detach(self) -> None:
        """Leaves the server running when this interpreter exits."""
        _running.discard(self)

    @property
    def token(self) -> str:
        """The administrator's API token that the first start wrote."""
        return (self.data_dir / "admin.token").read_text().strip()

    def client_env(self, token: str | None = None) -> dict[str, str]:
        """The environment of a ``weft`` command against this zone, as the administrator
        or with ``token``."""
        return {**self.base_env(), "WEFT_URL": self.url, "WEFT_TOKEN": token or self.token}

    def weft(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """Runs ``weft ARGS`` against this zone; its exit code and output."""
        return subprocess.run(
            [self.binary or weft_bin(), *args],
            env=self.client_env(token),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def call(self, method: str, route: str, body: Any = None) -> Any:
        """``METHOD /api/v1/ROUTE`` as the administrator, ``body`` sent as JSON; the JSON
        answer (None when empty). An HTTPError unless it succeeds."""
        req = urllib.request.Request(
            f"{self.url}/api/v1/{route}",
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            data=None if body is None else json.dumps(body).encode(),
        )
        with urllib.request.urlopen(req) as r:
            text = r.read()
            return json.loads(text) if text else None

    def warm(self, path: str) -> None:
        """Reads the object at ``path`` once through the zone, so that its replica is in the
        page cache."""
        req = urllib.request.Request(f"{self.url}/api/v1/data{path}", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req) as r:
            while r.read(8 << 20):
                pass

    def stored_files(self) -> list[str]:
        """The files of the zone's resources below its data directory (objects and packs)."""
        root = self.data_dir / "resources"
        return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


class Minio:
    """A MinIO server of the test tools on a free loopback port, its data in ``root/minio``
    and its output in ``root/minio.log``, its root user ``key`` with ``secret``."""

    def __init__(self, root: str | os.PathLike[str], key: str, secret: str) -> None:
        root = pathlib.Path(root)
        (root / "minio").mkdir(parents=True, exist_ok=True)
        self.key, self.secret = key, secret
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = root / "minio.log"
        env = {**os.environ, "MINIO_ROOT_USER": key, "MINIO_ROOT_PASSWORD": secret, "MINIO_UPDATE": "off"}
        argv = [str(TOOLS_BIN / "minio"), "server", str(root / "minio"), "--address", f"127.0.0.1:{self.port}"]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [*argv, "--console-address", f"127.0.0.1:{free_port()}"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        _running.add(self)
        if not wait_ready(self.proc, lambda: http_get(self.url + "/minio/health/ready", 1), 60, 0.1):
            self.stop()
            raise RuntimeError(f"MinIO did not start: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        stop_process(self.proc)
        _running.discard(self)

    def resource_toml(self, bucket: str, name: str = "objects") -> str:
        """The ``[[resources]]`` table of a zone's configuration file that stores in
        ``bucket`` of this server, as the zone's default resource."""
        return f"""
[[resources]]
name = "{name}"
kind = "s3"
default = true
[resources.settings]
endpoint = "{self.url}"
bucket = "{bucket}"
access_key = "{self.key}"
secret_key = "{self.secret}"
"""


def make_tree(
    root: str | os.PathLike[str],
    count: int,
    size: int = 0,
    *,
    name: str | Callable[[int], str] = "f{i:05d}",
    fill: Literal["numbered", "random", "rotated"] | Callable[[int], bytes] = "numbered",
    seed: int = 0,
    reuse: bool = False,
) -> str:
    """Writes ``count`` files below ``root`` (a new directory), file ``i`` at the relative
    path ``name.format(i=i)`` or ``name(i)``, in the order of ``i``; returns ``root``.

    Their bytes (``size`` of them) by ``fill``:

    - ``"numbered"``: one random block for the tree, each file's first 8 bytes its ``seed``
      and ``i`` (4 bytes little-endian each): distinct files without paying ``os.urandom``
      per file (the transfer benchmarks' trees);
    - ``"random"``: ``os.urandom`` for each file;
    - ``"rotated"``: one random block, file ``i``'s rotated by ``i % 251`` bytes;
    - a function: file ``i``'s bytes.

    With ``reuse``, a tree already at ``root`` with ``count`` files is kept as it is (made
    once for several runs), another one replaced."""
    root = os.fspath(root)
    if reuse:
        if os.path.isdir(root) and sum(len(fs) for _, _, fs in os.walk(root)) == count:
            return root
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    path_of: Callable[[int], str]
    if callable(name):
        path_of = name
    else:
        pattern = name
        path_of = lambda i: pattern.format(i=i)  # noqa: E731
    content: Callable[[int], bytes]
    if callable(fill):
        content = fill
    elif fill == "random":
        content = lambda i: os.urandom(size)  # noqa: E731
    elif fill == "rotated":
        blob = os.urandom(size)
        content = lambda i: blob[i % 251 :] + blob[: i % 251]  # noqa: E731
    elif fill == "numbered":
        block = os.urandom(size)
        content = lambda i: seed.to_bytes(4, "little") + i.to_bytes(4, "little") + block[8:]  # noqa: E731
    else:
        raise ValueError(f"fill {fill!r}")
    for i in range(count):
        path = os.path.join(root, path_of(i))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content(i))
    return root


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far, user and system (not its children's),
    from ``/proc/PID/stat``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` (``VmHWM``) in MiB, since it started or
    since ``reset_peak_rss``; NaN where the kernel does not say."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss(pid: int) -> None:
    """Starts ``peak_rss_mib`` of ``pid`` again from its present memory."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5\n")


def reap(proc: subprocess.Popen[Any]) -> resource.struct_rusage:
    """Waits for ``proc`` to end (setting its ``returncode``); what it used, with what its
    own children that it waited for used: CPU (``ru_utime + ru_stime``, seconds) and peak
    resident memory (``ru_maxrss``, KiB)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage


def run_peak_rss_mib(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> float:
    """Runs ``cmd`` to its end (its standard output discarded); its peak resident memory in
    MiB. A CalledProcessError unless it succeeds."""
    proc = subprocess.Popen(list(cmd), env=env, stdout=subprocess.DEVNULL)
    usage = reap(proc)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, list(cmd))
    return usage.ru_maxrss / 1024


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Zones and process measures for shell scripts.")
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help='start a zone; print "PID URL S3_URL" and leave it running')
    serve.add_argument("--zone", required=True)
    serve.add_argument("--data-dir", required=True)
    serve.add_argument("--log", help="default: ZONE.log beside the data directory")
    serve.add_argument("--s3", action="store_true", help="the S3 gateway too")
    serve.add_argument("--weft", help="the binary (default: WEFT_BIN, else the workspace's build)")
    cpu = sub.add_parser("cpu-seconds", help="the CPU time a process has used")
    cpu.add_argument("pid", type=int)
    args = ap.parse_args(argv)
    if args.command == "serve":
        z = Zone(args.zone, args.data_dir, weft=args.weft, log=args.log, s3=args.s3, environ=os.environ)
        z.run()
        z.detach()
        assert z.proc is not None
        print(z.proc.pid, z.url, z.s3_url or "-")
    else:
        print(cpu_seconds(args.pid))


if __name__ == "__main__":
    main()
