#!/usr/bin/env python3
"""Zone-foundation benchmark (issue: put/get of a large file vs cp+sync; put -r of many
small files vs a plain program creating them). Not a test: it measures and prints.

    scripts/bench-foundation.py [--runs 5] [--size-mib 1024] [--files 10000] [--file-kib 64]

Starts a release `weft serve` on 127.0.0.1 with embedded defaults in a scratch dir on the
same file system as the comparison, runs each measurement --runs times after one warm-up,
and prints medians, spreads and ratios as Markdown (for docs/PERFORMANCE.md).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import ROOT, build_weft, peak_rss_mib, run_peak_rss_mib, settle, start_zone, timed


def summary(xs):
    med = statistics.median(xs)
    return med, (min(xs), max(xs))


def plain_create(dirpath, n, size):
    """The comparison for trees: create the same files with plain system calls, no fsync."""
    os.makedirs(dirpath)
    buf = os.urandom(size)
    t0 = time.perf_counter()
    for i in range(n):
        fd = os.open(os.path.join(dirpath, f"f{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, buf)
        os.close(fd)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=64)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-scratch"))
    args = ap.parse_args()

    weft = build_weft()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    scratch = args.scratch
    zone = start_zone(weft, "bench", scratch)
    server, token, env = zone.proc, zone.token, zone.client_env()
    try:
        w = lambda *a: [weft, *a]
        home = "/bench/home/admin"

        big = os.path.join(scratch, "big.bin")
        with open(big, "wb") as f:
            for _ in range(args.size_mib):
                f.write(os.urandom(1 << 20))
        size = args.size_mib << 20
        got_dir = os.path.join(scratch, "got")
        os.makedirs(got_dir)

        cp_t, put_t, get_t = [], [], []
        warm_object = ["curl", "-sf", "-o", "/dev/null", "-H", f"Authorization: Bearer {token}",
                       f"{zone.url}/api/v1/data{home}/big.bin"]
        for run in range(args.runs + 1):  # the first run warms up and is dropped
            dst = os.path.join(scratch, "cp.bin")
            settle(big)
            t = timed(["sh", "-c", f"cp {big} {dst} && sync"])
            os.remove(dst)
            settle(big)
            p = timed(w("put", "--quiet", big, f"{home}/big.bin"), env)
            settle()
            subprocess.run(warm_object, check=True)
            g = timed(w("get", "--quiet", f"{home}/big.bin", got_dir + "/"), env)
            os.remove(os.path.join(got_dir, "big.bin"))
            subprocess.run(w("rm", f"{home}/big.bin"), check=True, env=env)
            if run > 0:
                cp_t.append(t), put_t.append(p), get_t.append(g)
        put_rss = run_peak_rss_mib(w("put", "--quiet", big, f"{home}/big.bin"), env)
        get_rss = run_peak_rss_mib(w("get", "--quiet", f"{home}/big.bin", got_dir + "/"), env)
        os.remove(os.path.join(got_dir, "big.bin"))

        tree = os.path.join(scratch, "tree")
        plain_t, tree_t = [], []
        for run in range(args.runs + 1):
            d = os.path.join(scratch, f"plain{run}")
            settle(drop=False)
            pt = plain_create(d, args.files, args.file_kib << 10)
            if run == 0:
                os.rename(d, tree)
            else:
                shutil.rmtree(d)
            settle(*[os.path.join(tree, f) for f in os.listdir(tree)], drop=False)
            t = timed(w("put", "-r", "--quiet", tree, f"{home}/tree{run}"), env)
            subprocess.run(w("rm", "-r", f"{home}/tree{run}"), check=True, env=env)
            if run > 0:
                plain_t.append(pt), tree_t.append(t)
        server_rss = peak_rss_mib(server.pid)
    finally:
        zone.stop()

    gb = size / 1e9
    cp_m, cp_s = summary(cp_t)
    put_m, put_s = summary(put_t)
    get_m, get_s = summary(get_t)
    pl_m, pl_s = summary(plain_t)
    tr_m, tr_s = summary(tree_t)
    rate = lambda t: gb / t
    print(f"# weft foundation benchmark: {args.runs} runs after a warm-up, medians (min-max)\n")
    print(f"machine: {os.cpu_count()} cores; file {args.size_mib} MiB of random bytes; tree {args.files} x {args.file_kib} KiB\n")
    print("| measurement | median | range | vs comparison |")
    print("|---|---|---|---|")
    print(f"| cp + sync, {args.size_mib} MiB | {cp_m:.2f} s ({rate(cp_m):.2f} GB/s) | {cp_s[0]:.2f}-{cp_s[1]:.2f} s | 1.00 |")
    print(f"| weft put, {args.size_mib} MiB | {put_m:.2f} s ({rate(put_m):.2f} GB/s) | {put_s[0]:.2f}-{put_s[1]:.2f} s | {cp_m / put_m:.2f} of cp+sync |")
    print(f"| weft get, {args.size_mib} MiB | {get_m:.2f} s ({rate(get_m):.2f} GB/s) | {get_s[0]:.2f}-{get_s[1]:.2f} s | {cp_m / get_m:.2f} of cp+sync |")
    print(f"| plain program creating the tree | {args.files / pl_m:.0f} files/s | {args.files / pl_s[1]:.0f}-{args.files / pl_s[0]:.0f} | 1.00 |")
    print(f"| weft put -r of the tree | {args.files / tr_m:.0f} files/s | {args.files / tr_s[1]:.0f}-{args.files / tr_s[0]:.0f} | {pl_m / tr_m:.2f} of plain |")
    print(f"\nmax RSS: client put {put_rss:.0f} MiB, client get {get_rss:.0f} MiB, server {server_rss:.0f} MiB")
    print("\nraw:", json.dumps({"cp": cp_t, "put": put_t, "get": get_t, "plain_tree": plain_t, "put_tree": tree_t}))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
