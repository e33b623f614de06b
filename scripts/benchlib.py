"""What the benchmark scripts share: release zones on loopback, timing, and a common
starting state for each measurement. Not a test: imported by scripts/bench-*.py."""
import json
import os
import socket
import subprocess
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_weft():
    """Builds the release binary; its path. ``WEFT_BIN=path`` takes that build instead (to
    compare two builds on the same machine)."""
    if os.environ.get("WEFT_BIN"):
        return os.environ["WEFT_BIN"]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "weft"], check=True, cwd=ROOT)
    return os.path.join(ROOT, "target", "release", "weft")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd, env=None):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def settle(*warm_files, drop=True):
    """Starts each measurement from the same state: nothing dirty, the page cache dropped
    (when we may, and `drop`), and the inputs read once so that both sides of a comparison
    read from memory. Without this, dirty pages and page-cache reclaim left by the previous
    step dominate the large-file runs. The tree runs keep the caches: dropping them makes
    the zone's directories and catalog cold, which a running zone's are not."""
    subprocess.run(["sync"], check=True)
    if drop:
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError:
            pass
    for path in warm_files:
        with open(path, "rb") as f:
            while f.read(8 << 20):
                pass


class Zone:
    """`weft serve` with embedded defaults on a free port, data under `scratch/name`."""

    def __init__(self, weft, name, scratch, s3=False):
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = os.path.join(scratch, name)
        # With `s3`, the S3 gateway too, at `s3_url`.
        self.s3_url = f"http://127.0.0.1:{free_port()}" if s3 else None
        s3_args = ["--s3-listen", self.s3_url[len("http://"):]] if s3 else []
        self.proc = subprocess.Popen(
            [weft, "serve", "--zone", name, "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.data, *s3_args],
            stderr=open(os.path.join(scratch, f"{name}.log"), "w"))
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{self.url}/api/v1/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        self.token = open(os.path.join(self.data, "admin.token")).read().strip()
        self.env = dict(os.environ, WEFT_URL=self.url, WEFT_TOKEN=self.token)

    def call(self, method, route, body=None):
        req = urllib.request.Request(f"{self.url}/api/v1/{route}", method=method,
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"},
                                     data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(req) as r:
            text = r.read()
            return json.loads(text) if text else None

    def warm(self, path):
        """Reads the object at `path` once through the zone, so that its replica is in the
        page cache as the input of the command it is compared with is (see `settle`)."""
        req = urllib.request.Request(f"{self.url}/api/v1/data{path}",
                                     headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req) as r:
            while r.read(8 << 20):
                pass

    def stored_files(self):
        """The files of the zone's resources (objects and packs), to warm with `settle`."""
        root = os.path.join(self.data, "resources")
        return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


MINIO_KEY, MINIO_SECRET = "benchadmin", "benchadmin-secret"


class Minio:
    """A MinIO server of the test tools, on loopback, its data on the same disk as the zone's."""

    def __init__(self, scratch):
        binary = os.path.join(os.environ.get("WEFT_CACHE", os.path.expanduser("~/.cache/weft")), "tools/bin/minio")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        data = os.path.join(scratch, "minio")
        os.makedirs(data, exist_ok=True)
        env = dict(os.environ, MINIO_ROOT_USER=MINIO_KEY, MINIO_ROOT_PASSWORD=MINIO_SECRET, MINIO_UPDATE="off")
        self.proc = subprocess.Popen(
            [binary, "server", data, "--address", f"127.0.0.1:{self.port}",
             "--console-address", f"127.0.0.1:{free_port()}"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(scratch, "minio.log"), "w"))
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{self.url}/minio/health/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("MinIO did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
