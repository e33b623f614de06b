#!/usr/bin/env python3
"""weft's S3 gateway against a MinIO on the same disk, with the same clients, in one run on
one machine. Run with the venv the tests use (it has aws-cli; rclone is a test tool):

    ~/.cache/weft/tools/pysdk/bin/python scripts/bench-s3.py --rounds 5

Steps, each measured once per round after a warm-up round, the two servers alternating
which goes first:
  - `aws s3 cp` of a 1 GiB file up (multipart, aws-cli's defaults: 8 MiB parts, 10 at once)
    and down;
  - `rclone copy` of 10,000 files of 64 KiB (100 directories) up, rclone's defaults
    (4 transfers, 8 checkers), each round into a new prefix.
The server not measured is paused (SIGSTOP) meanwhile, so that neither's background work
takes from the other's step. Both servers get the same client settings
(`AWS_REQUEST_CHECKSUM_CALCULATION=when_required`, which MinIO's multipart needs with
botocore 1.36 and later). Reports medians and ratios.
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (  # noqa: E402
    MINIO_KEY, MINIO_SECRET, ROOT, build_weft, cpu_seconds, make_tree, settle, start_minio, start_zone, timed,
)

TOOLS = os.path.join(os.environ.get("WEFT_CACHE", os.path.expanduser("~/.cache/weft")), "tools")
AWS = os.path.join(os.path.dirname(sys.executable), "aws")
RCLONE = os.path.join(TOOLS, "bin", "rclone")
BIG = 1 << 30
SMALL, SMALL_COUNT, DIRS = 64 << 10, 10_000, 100


class Server:
    """One side of the comparison: an S3 endpoint, its keys and a bucket `bench`."""

    def __init__(self, name: str, url: str, key: str, secret: str, scratch: str, pid: int) -> None:
        self.name = name
        self.url = url
        self.pid = pid
        home = os.path.join(scratch, f"home-{name}")
        os.makedirs(home, exist_ok=True)
        # Empty: the remote is set by the variables below (rclone notes a missing file).
        open(os.path.join(home, "rclone.conf"), "a").close()
        self.env = dict(
            os.environ,
            HOME=home,
            AWS_ACCESS_KEY_ID=key,
            AWS_SECRET_ACCESS_KEY=secret,
            AWS_DEFAULT_REGION="us-east-1",
            AWS_REQUEST_CHECKSUM_CALCULATION="when_required",
            AWS_CONFIG_FILE=os.path.join(home, "aws-config"),
            RCLONE_CONFIG=os.path.join(home, "rclone.conf"),
            RCLONE_CONFIG_S_TYPE="s3",
            RCLONE_CONFIG_S_PROVIDER="Other" if name == "weft" else "Minio",
            RCLONE_CONFIG_S_ENDPOINT=url,
            RCLONE_CONFIG_S_ACCESS_KEY_ID=key,
            RCLONE_CONFIG_S_SECRET_ACCESS_KEY=secret,
        )

    def aws(self, *args: str) -> list[str]:
        quiet = ["--only-show-errors"] if args[1] in ("cp", "rm") else []
        return [AWS, "--endpoint-url", self.url, *args, *quiet]


def make_inputs(data: str) -> tuple[str, str]:
    big = os.path.join(data, "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != BIG:
        with open(big, "wb") as f:
            for _ in range(BIG >> 20):
                f.write(os.urandom(1 << 20))
    tree = make_tree(os.path.join(data, "small"), SMALL_COUNT, SMALL, name=lambda i: f"d{i % DIRS:03}/f{i:05}.bin",
                     fill="random", reuse=True)
    return big, tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    binary = build_weft()
    data = os.path.join(ROOT, "target", "bench-s3")
    os.makedirs(data, exist_ok=True)
    big, tree = make_inputs(data)
    scratch = os.path.join(data, "run")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    zone = start_zone(binary, "bench", scratch, s3=True)
    minio = start_minio(scratch)
    try:
        subprocess.run([binary, "mkdir", "-p", "/bench/bench"], env=zone.client_env(), check=True)
        subprocess.run([binary, "s3", "bucket", "add", "bench", "/bench/bench"], env=zone.client_env(), check=True,
                       stdout=subprocess.DEVNULL)
        key = json.loads(subprocess.run([binary, "s3", "key", "create", "--json"], env=zone.client_env(), check=True,
                                        capture_output=True, text=True).stdout)
        sides = [
            Server("weft", zone.s3_url, key["access_key"], key["secret_key"], scratch, zone.proc.pid),
            Server("minio", minio.url, MINIO_KEY, MINIO_SECRET, scratch, minio.proc.pid),
        ]
        subprocess.run(sides[1].aws("s3", "mb", "s3://bench"), env=sides[1].env, check=True)
        run(args.rounds, sides, big, tree, scratch)
    finally:
        resume(sides)
        zone.stop()
        minio.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def pause(sides: list[Server]) -> None:
    for side in sides:
        os.kill(side.pid, signal.SIGSTOP)


def resume(sides: list[Server]) -> None:
    for side in sides:
        os.kill(side.pid, signal.SIGCONT)


def run(rounds: int, sides: list[Server], big: str, tree: str, scratch: str) -> None:
    times: dict[tuple[str, str], list[float]] = {}
    got = os.path.join(scratch, "got.bin")
    for r in range(rounds + 1):
        order = sides if r % 2 == 0 else sides[::-1]
        for s in order:
            # The other server is paused while this one is measured, so that its background
            # work (MinIO's scanner) takes nothing from this one's steps.
            others = [o for o in sides if o is not s]
            pause(others)
            settle(big)
            up = timed(s.aws("s3", "cp", big, "s3://bench/big.bin"), env=s.env)
            settle()
            down = timed(s.aws("s3", "cp", "s3://bench/big.bin", got), env=s.env)
            os.remove(got)
            settle(drop=False)
            cpu0 = [cpu_seconds(side.pid) for side in sides]
            small = timed([RCLONE, "copy", tree, f"s:bench/small-{r}"], env=s.env)
            # Both servers' CPU in the step (the paused one's: none).
            cpus = ", ".join(f"{side.name} {cpu_seconds(side.pid) - c:.1f}" for side, c in zip(sides, cpu0))
            subprocess.run(s.aws("s3", "rm", "--recursive", f"s3://bench/small-{r}"), env=s.env, check=True)
            resume(others)
            if r == 0:
                continue  # warm-up
            for step, t in (("1 GiB up", up), ("1 GiB down", down), ("10,000 x 64 KiB up", small)):
                times.setdefault((step, s.name), []).append(t)
            print(f"round {r} {s.name}: up {up:.2f} s, down {down:.2f} s, small {small:.2f} s "
                  f"(CPU s: {cpus})", flush=True)
    print()
    print("| step | weft | MinIO | weft / MinIO rate |")
    print("|---|---|---|---|")
    for step in ("1 GiB up", "1 GiB down", "10,000 x 64 KiB up"):
        w = statistics.median(times[(step, "weft")])
        m = statistics.median(times[(step, "minio")])
        print(f"| {step} | {w:.2f} s | {m:.2f} s | {m / w:.2f} |")


if __name__ == "__main__":
    main()
