#!/usr/bin/env python3
"""A burst from an instrument: `weft watch --once` of a tree of small files against `weft
put -r` of the same tree, each into a fresh zone with embedded defaults, the two arms
alternating round by round so that the machine's drift falls on both. The watch's own
report gives the lag from a file found complete to its object durable.

    cargo build --release -p weft
    scripts/bench-ingest.py --rounds 5

Reports each arm's median files/s, the ratio, and the watch's median and 99th percentile
lag. Not a test: nothing is asserted.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, make_tree, settle, start_zone, timed  # noqa: E402


def one_run(weft, scratch, tree, arm):
    """Seconds of one arm into a fresh zone; for the watch, its summary line too."""
    work = os.path.join(scratch, "zone")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    zone = start_zone(weft, "bench", work)
    try:
        settle(*[os.path.join(tree, f) for f in os.listdir(tree)], drop=False)
        if arm == "put -r":
            return timed([weft, "put", "-r", "--quiet", tree, "/bench/home/admin/tree"], zone.client_env()), None
        journal = os.path.join(work, "watch.jsonl")
        cmd = [weft, "watch", "--once", "--settle", "0", "--json", "--journal", journal, tree,
               "/bench/home/admin/tree"]
        start = time.perf_counter()
        out = subprocess.run(cmd, env=zone.client_env(), check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        return seconds, json.loads(out.stdout.splitlines()[-1])
    finally:
        zone.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default=os.path.join(ROOT, "target", "release", "weft"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=64)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-ingest"))
    args = ap.parse_args()
    weft = os.path.abspath(args.weft)
    shutil.rmtree(args.scratch, ignore_errors=True)
    tree = make_tree(os.path.join(args.scratch, "tree"), args.files, args.file_kib << 10, fill="rotated")

    arms = ["put -r", "watch --once"]
    times = {a: [] for a in arms}
    lags = []
    one_run(weft, args.scratch, tree, "put -r")  # warm-up
    for r in range(args.rounds):
        for a in arms if r % 2 == 0 else reversed(arms):
            t, summary = one_run(weft, args.scratch, tree, a)
            times[a].append(t)
            extra = ""
            if summary:
                assert summary["ingested"] == args.files and summary["failed"] == 0, summary
                lags.append((summary["lag_median_ms"], summary["lag_p99_ms"]))
                extra = f", lag median {summary['lag_median_ms']} ms, p99 {summary['lag_p99_ms']} ms"
            print(f"round {r + 1} {a}: {args.files / t:.0f} files/s ({t:.2f} s){extra}", flush=True)

    med = {a: statistics.median(ts) for a, ts in times.items()}
    print(f"\n{args.rounds} rounds, arms alternating; tree {args.files} x {args.file_kib} KiB\n")
    print("| arm | median | range | rate vs put -r |")
    print("|---|---|---|---|")
    for a, ts in times.items():
        lo, hi = args.files / max(ts), args.files / min(ts)
        print(f"| {a} | {args.files / med[a]:.0f} files/s | {lo:.0f}-{hi:.0f} | {med['put -r'] / med[a]:.2f} |")
    print(f"\nwatch lag (medians over rounds): median {statistics.median(m for m, _ in lags):.0f} ms, "
          f"p99 {statistics.median(p for _, p in lags):.0f} ms")
    print("\nraw:", times, lags)
    shutil.rmtree(args.scratch, ignore_errors=True)
    subprocess.run(["sync"], check=False)


if __name__ == "__main__":
    sys.exit(main())
