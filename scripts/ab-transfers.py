#!/usr/bin/env python3
"""A/B of two weft builds on one zone-to-zone tree transfer: how the per-change figures in
docs/PERFORMANCE.md are measured.

    cp target/release/weft /tmp/weft-old      # before the change
    cargo build --release -p weft             # after it
    scripts/ab-transfers.py --old /tmp/weft-old --new target/release/weft --rounds 3

Each round starts two fresh zones per build, puts the tree into zone a once and transfers
it to zone b `--runs` times after one warm-up; builds alternate round by round, so that the
machine's drift falls on both. Reports each build's median files/s and the median CPU time
of each zone per transfer (from /proc/PID/stat), which moves less than the rate on a noisy
machine. Not a test: nothing is asserted.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, cpu_seconds, make_tree, peak_rss_mib, reset_peak_rss, settle, start_zone  # noqa: E402

import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "bench_transfers", os.path.join(ROOT, "scripts", "bench-transfers.py"))
bench_transfers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_transfers)


def federated(weft, scratch):
    """Zones a and b, each knowing the other; a's admin may write below /b/in."""
    a, b = start_zone(weft, "a", scratch), start_zone(weft, "b", scratch)
    secret = os.urandom(32).hex()
    a.call("POST", "zones", {"name": "b", "url": b.url, "secret": secret})
    b.call("POST", "zones", {"name": "a", "url": a.url, "secret": secret})
    b.call("POST", "mkdir/b/in")
    b.call("POST", "acl/b/in", {"principal": "admin#a", "permission": "write", "recursive": True})
    return a, b


def one_round(weft, args, scratch):
    """[(seconds, cpu of a, cpu of b)] for each measured run, and each zone's peak RSS."""
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    a, b = federated(weft, scratch)
    try:
        local = make_tree(os.path.join(scratch, "tree"), args.files, args.size, seed=7)
        subprocess.run([weft, "put", "-r", "--quiet", local, "/a/home/admin/tree"], check=True, env=a.client_env())
        shutil.rmtree(local)
        for zone in (a, b):
            # The peak reported is the transfers', not the put's.
            reset_peak_rss(zone.proc.pid)
        out = []
        for run in range(args.runs + 1):
            settle(drop=False)
            dst = f"/b/in/r{run}"
            ca, cb = cpu_seconds(a.proc.pid), cpu_seconds(b.proc.pid)
            t = bench_transfers.transfer(a, "/a/home/admin/tree", dst)
            used = (t, cpu_seconds(a.proc.pid) - ca, cpu_seconds(b.proc.pid) - cb)
            a.call("DELETE", f"nodes{dst}?recursive=true")
            if run:
                out.append(used)
        return out, (peak_rss_mib(a.proc.pid), peak_rss_mib(b.proc.pid))
    finally:
        a.stop()
        b.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the weft binary before the change")
    ap.add_argument("--new", default=os.path.join(ROOT, "target", "release", "weft"))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--size", type=int, default=64 << 10, help="bytes per file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3, help="measured transfers per round")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "ab-transfers"))
    args = ap.parse_args()
    results = {"old": [], "new": []}
    peaks = {"old": [], "new": []}
    for rnd in range(args.rounds):
        for name in ("old", "new"):
            runs, peak = one_round(getattr(args, name), args, os.path.join(args.scratch, name))
            results[name].extend(runs)
            peaks[name].append(peak)
            rates = ", ".join(f"{args.files / t:.0f}" for t, _, _ in runs)
            print(f"round {rnd + 1} {name}: {rates} files/s", flush=True)
    print(f"\n{args.files} x {args.size} B, {args.rounds} rounds x {args.runs} runs per build")
    print("build  median files/s  cpu a (s)  cpu b (s)  peak RSS a, b (MiB)")
    for name, runs in results.items():
        rate = args.files / statistics.median(t for t, _, _ in runs)
        ca = statistics.median(c for _, c, _ in runs)
        cb = statistics.median(c for _, _, c in runs)
        ra = max(p for p, _ in peaks[name])
        rb = max(p for _, p in peaks[name])
        print(f"{name:5}  {rate:14.0f}  {ca:9.2f}  {cb:9.2f}  {ra:.0f}, {rb:.0f}")


if __name__ == "__main__":
    main()
