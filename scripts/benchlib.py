"""What the benchmark scripts share: release zones on loopback, timing, and a common
starting state for each measurement. Not a test: imported by scripts/bench-*.py.

Zones, MinIO, trees of files and the measures of a process come from
python/tests/zonelib.py, which the Python tests use too; they are imported from here."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from zonelib import Minio, Zone  # noqa: E402
from zonelib import (  # noqa: E402,F401 (for the scripts)
    cpu_seconds, free_port, make_tree, peak_rss_mib, reap, reset_peak_rss, run_peak_rss_mib,
)


def build_weft():
    """Builds the release binary; its path. ``WEFT_BIN=path`` takes that build instead (to
    compare two builds on the same machine)."""
    if os.environ.get("WEFT_BIN"):
        return os.environ["WEFT_BIN"]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "weft"], check=True, cwd=ROOT)
    return os.path.join(ROOT, "target", "release", "weft")


def start_zone(weft, name, scratch, s3=False):
    """`weft serve` of the build `weft` with embedded defaults on a free port (with `s3`, the
    S3 gateway too, at `s3_url`), its data in `scratch/NAME-data`, started; it and the
    commands of `client_env()` get this process's whole environment."""
    return Zone.start(name, scratch, weft=weft, s3=s3, environ=os.environ)


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


MINIO_KEY, MINIO_SECRET = "benchadmin", "benchadmin-secret"


def start_minio(scratch):
    """A MinIO server of the test tools on loopback, its data on the same disk as the zone's."""
    return Minio(scratch, MINIO_KEY, MINIO_SECRET)
