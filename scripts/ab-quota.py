#!/usr/bin/env python3
"""A/B of what quotas cost a tree of small files: `weft put -r` of 10,000 x 64 KiB into a
fresh zone without any quota, and into one whose administrator has a quota too large to
refuse anything (so every put is checked before its bytes and again in its group's catalog
transaction); with `--old`, a third arm: an older build without any quota. The arms
alternate round by round so that the machine's drift falls on all.

    cp target/release/weft /tmp/weft-old      # before the change
    cargo build --release -p weft             # after it
    scripts/ab-quota.py --weft target/release/weft --old /tmp/weft-old --rounds 5

Reports each arm's median files/s and the ratio. Not a test: nothing is asserted.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, make_tree, settle, start_zone, timed  # noqa: E402


def one_put(weft, scratch, tree, quota):
    """Seconds of `weft put -r` of `tree` into a fresh zone, with or without a quota."""
    work = os.path.join(scratch, "zone")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    zone = start_zone(weft, "ab", work)
    try:
        if quota:
            zone.call("PUT", "quotas", {"principal": "admin", "max_bytes": 1 << 40, "max_objects": 10**9})
        settle(*[os.path.join(tree, f) for f in os.listdir(tree)], drop=False)
        return timed([weft, "put", "-r", "--quiet", tree, "/ab/home/admin/tree"], zone.client_env())
    finally:
        zone.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--old", help="an older build, measured without a quota")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=64)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "ab-quota"))
    args = ap.parse_args()
    weft = os.path.abspath(args.weft)
    shutil.rmtree(args.scratch, ignore_errors=True)
    tree = make_tree(os.path.join(args.scratch, "tree"), args.files, args.file_kib << 10, fill="rotated")

    arms = {"no quota": (weft, False), "quota": (weft, True)}
    if args.old:
        arms["old build, no quota"] = (os.path.abspath(args.old), False)
    times = {a: [] for a in arms}
    one_put(weft, args.scratch, tree, False)  # warm-up
    for r in range(args.rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for a in order:
            build, quota = arms[a]
            t = one_put(build, args.scratch, tree, quota)
            times[a].append(t)
            print(f"round {r + 1} {a}: {args.files / t:.0f} files/s ({t:.2f} s)", flush=True)

    med = {a: statistics.median(ts) for a, ts in times.items()}
    print(f"\n{args.rounds} rounds, arms alternating; tree {args.files} x {args.file_kib} KiB\n")
    print("| arm | median | range | time vs no quota |")
    print("|---|---|---|---|")
    for a, ts in times.items():
        lo, hi = args.files / max(ts), args.files / min(ts)
        print(f"| {a} | {args.files / med[a]:.0f} files/s | {lo:.0f}-{hi:.0f} | {med[a] / med['no quota']:.2f} |")
    print("\nraw:", times)
    shutil.rmtree(args.scratch, ignore_errors=True)
    subprocess.run(["sync"], check=False)


if __name__ == "__main__":
    sys.exit(main())
