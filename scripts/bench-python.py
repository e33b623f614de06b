#!/usr/bin/env python3
"""The Python SDK against the CLI, and weft:// against s3:// (s3fs on a MinIO on the same
disk), in one run on one machine. Run with the venv the tests use, after scripts/test (or
`pip install ./python` into it):

    ~/.cache/weft/tools/pysdk/bin/python scripts/bench-python.py --rounds 3

Steps, each measured once per round after a warm-up round, the two sides of a comparison
alternating which goes first:
  - `Client.put`/`get` of a 1 GiB file against `weft put`/`get` of the same file;
  - `fs.cat(paths)` of 1,000 objects of 64 KiB against `weft get -r` of their collection
    (the CLI's time includes listing it; `cat` is given the paths);
  - pandas `read_csv` (pyarrow engine) of a ~500 MB CSV, `to_parquet` and `read_parquet` of
    a ~500 MB table, and xarray `to_zarr` / `open_zarr(...).mean()` of a 256 MiB array in
    64 chunks, through weft:// and through s3://.
Reports medians and ratios. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (  # noqa: E402
    MINIO_KEY, MINIO_SECRET, ROOT, build_weft, make_tree, settle, start_minio, start_zone, timed,
)



def clock(f):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--file-kib", type=int, default=64)
    ap.add_argument("--table-mb", type=int, default=500)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-python"))
    args = ap.parse_args()

    # botocore's default checksums on every part are not what this MinIO build expects
    # of multipart uploads ("the specified multipart upload does not exist").
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    scratch = args.scratch
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    binary = build_weft()
    zone = start_zone(binary, "py", scratch)
    minio = start_minio(scratch)
    try:
        run(args, binary, zone, minio)
    finally:
        zone.stop()
        minio.stop()


def run(args, binary, zone, minio) -> None:  # type: ignore[no-untyped-def]
    import fsspec
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv
    import s3fs
    import xarray as xr

    import weft
    from weft.fs import WeftFileSystem

    scratch = args.scratch
    env, home = zone.client_env(), "/py/home/admin"
    cli = lambda *a: [binary, *a]  # noqa: E731
    c = weft.Client(zone.url, zone.token, progress=False)
    s3_opts = {"key": MINIO_KEY, "secret": MINIO_SECRET, "client_kwargs": {"endpoint_url": minio.url}}
    weft_opts = {"endpoint_url": zone.url, "token": zone.token}
    s3 = s3fs.S3FileSystem(**s3_opts)
    s3.mkdir("bench")
    got = os.path.join(scratch, "got")

    print("== inputs", flush=True)
    big = os.path.join(scratch, "big.bin")
    with open(big, "wb") as f:
        for _ in range(args.size_mib):
            f.write(os.urandom(1 << 20))
    tree = make_tree(os.path.join(scratch, "small"), args.files, args.file_kib << 10, fill="random")
    subprocess.run(cli("put", "-r", "--quiet", tree, f"{home}/small"), check=True, env=env)
    paths = [f"{home}/small/f{i:05}" for i in range(args.files)]

    rng = np.random.default_rng(1)
    # ~113 bytes a row as CSV (6 floats of ~18 characters), 48 as Parquet (float64, which
    # random values do not compress).
    csv_rows = args.table_mb * 1_000_000 // 113
    csv_table = pa.table({f"c{k}": rng.random(csv_rows) for k in range(6)})
    csv_local = os.path.join(scratch, "table.csv")
    pa.csv.write_csv(csv_table, csv_local)
    del csv_table
    fsspec.filesystem("weft", **weft_opts).put(csv_local, f"{home}/table.csv")
    s3.put(csv_local, "bench/table.csv")
    csv_mb = os.path.getsize(csv_local) / 1e6
    frame = pd.DataFrame({f"c{k}": rng.random(args.table_mb * 1_000_000 // 48) for k in range(6)})
    cube = xr.Dataset(
        {"v": (("t", "y", "x"), rng.random((128, 512, 1024), dtype=np.float32))}
    ).chunk({"t": 2})
    table_urls = {"weft": "weft://py/home/admin", "s3": "s3://bench"}
    options = {"weft": weft_opts, "s3": s3_opts}

    results: dict[str, list[float]] = {}

    def note(name: str, seconds: float) -> None:
        results.setdefault(name, []).append(seconds)

    for rnd in range(args.rounds + 1):
        warm = rnd == 0
        print(f"== round {rnd}{' (warm-up)' if warm else ''}", flush=True)
        step: dict[str, float] = {}
        order = ["cli", "sdk"] if rnd % 2 else ["sdk", "cli"]
        for who in order:
            settle(big)
            if who == "cli":
                step["put 1 GiB: weft put"] = timed(cli("put", "--quiet", "--force", big, f"{home}/big-cli.bin"), env)
            else:
                step["put 1 GiB: Client.put"] = clock(lambda: c.put(big, f"{home}/big-sdk.bin", overwrite=True))
        for who in order:
            shutil.rmtree(got, ignore_errors=True)
            os.makedirs(got)
            settle()
            zone.warm(f"{home}/big-{who}.bin")
            if who == "cli":
                step["get 1 GiB: weft get"] = timed(cli("get", "--quiet", f"{home}/big-cli.bin", got + "/"), env)
            else:
                step["get 1 GiB: Client.get"] = clock(lambda: c.get(f"{home}/big-sdk.bin", got + "/"))
        for who in order:
            shutil.rmtree(got, ignore_errors=True)
            if who == "cli":
                step["1,000 x 64 KiB: weft get -r"] = timed(cli("get", "-r", "--quiet", f"{home}/small", got), env)
            else:
                fs = WeftFileSystem(skip_instance_cache=True, **weft_opts)
                step["1,000 x 64 KiB: fs.cat"] = clock(lambda: fs.cat(paths))
        sides = ["weft", "s3"] if rnd % 2 else ["s3", "weft"]
        for side in sides:
            url, so = table_urls[side], options[side]
            step[f"read_csv {csv_mb:.0f} MB: {side}"] = clock(
                lambda: pd.read_csv(f"{url}/table.csv", engine="pyarrow", storage_options=so)
            )
            step[f"to_parquet: {side}"] = clock(lambda: frame.to_parquet(f"{url}/table.parquet", storage_options=so))
            step[f"read_parquet: {side}"] = clock(lambda: pd.read_parquet(f"{url}/table.parquet", storage_options=so))
            step[f"to_zarr 256 MiB: {side}"] = clock(
                lambda: cube.to_zarr(f"{url}/cube.zarr", mode="w", consolidated=False, storage_options=so)
            )
            step[f"open_zarr mean: {side}"] = clock(
                lambda: float(
                    xr.open_zarr(f"{url}/cube.zarr", consolidated=False, storage_options=so).v.mean().compute()
                )
            )
        for name, seconds in step.items():
            print(f"   {name:32} {seconds:7.3f} s", flush=True)
            if not warm:
                note(name, seconds)

    parquet_mb = c.stat(f"{home}/table.parquet").size / 1e6
    med = {k: statistics.median(v) for k, v in results.items()}
    mib = args.size_mib
    print(f"\n== medians of {args.rounds} rounds (Parquet file {parquet_mb:.0f} MB)")
    rows = [
        ("put 1 GiB", "put 1 GiB: Client.put", "put 1 GiB: weft put", mib * 1.048576, "MB/s"),
        ("get 1 GiB", "get 1 GiB: Client.get", "get 1 GiB: weft get", mib * 1.048576, "MB/s"),
        ("1,000 x 64 KiB", "1,000 x 64 KiB: fs.cat", "1,000 x 64 KiB: weft get -r", args.files, "files/s"),
    ]
    print("| step | SDK | CLI | SDK / CLI (rate) |\n|---|---|---|---|")
    for label, sdk, ref, amount, unit in rows:
        print(f"| {label} | {amount / med[sdk]:,.0f} {unit} ({med[sdk]:.2f} s) | "
              f"{amount / med[ref]:,.0f} {unit} ({med[ref]:.2f} s) | {med[ref] / med[sdk]:.2f} |")
    print("\n| workload | weft:// | s3:// (s3fs, MinIO) | weft speed-up |\n|---|---|---|---|")
    for name in [f"read_csv {csv_mb:.0f} MB", "to_parquet", "read_parquet", "to_zarr 256 MiB", "open_zarr mean"]:
        w, s = med[f"{name}: weft"], med[f"{name}: s3"]
        print(f"| {name} | {w:.2f} s | {s:.2f} s | {s / w:.2f} x |")


if __name__ == "__main__":
    main()
