#!/usr/bin/env python3
"""An import in place of many small files (`weft resource import`), each round into a
fresh zone with embedded defaults, against `find DIR -type f | wc -l` of the same tree: the
floor, a walk that neither stats each file nor writes a catalog. Then a rescan of the
imported tree (nothing new: every file compared with its object). The arms alternate
round by round so that the machine's drift falls on both.

    cargo build --release -p weft
    scripts/bench-import.py --files 1000000 --rounds 3

Reports each arm's median files/s and the ratio to the floor. Not a test: nothing is
asserted but that every file was imported.
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
from benchlib import ROOT, settle, start_zone  # noqa: E402


def make_tree(root, files, per_dir, size):
    """`files` files of `size` bytes, `per_dir` to a directory, two levels deep."""
    done = root + ".complete"  # beside the tree, not in it
    if os.path.exists(done):
        return
    shutil.rmtree(root, ignore_errors=True)
    body = b"x" * size
    for i in range(files):
        d = os.path.join(root, f"d{i // (per_dir * 100):03d}", f"e{(i // per_dir) % 100:03d}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:07d}.dat"), "wb") as f:
            f.write(body)
    open(done, "w").close()


def find_count(tree):
    t0 = time.perf_counter()
    out = subprocess.run(f"find {tree} -type f | wc -l", shell=True, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0, int(out.stdout)


def import_run(weft, scratch, resource_root, files):
    """Seconds of the import into a fresh zone, and of a rescan right after."""
    work = os.path.join(scratch, "zone")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    zone = start_zone(weft, "bench", work)
    try:
        env = zone.client_env()
        subprocess.run([weft, "resource", "add", "hpc", "--kind", "fs", "--root", resource_root],
                       env=env, check=True)
        cmd = [weft, "resource", "import", "hpc", "--path", "tree", "--into", "/bench/home/admin/tree", "--json"]
        times = []
        for expect in ("registered", "unchanged"):
            t0 = time.perf_counter()
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            report = json.loads(out.stdout)
            assert report[expect] == files and report["refused"] == 0, report
        return times
    finally:
        zone.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default=os.path.join(ROOT, "target", "release", "weft"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--per-dir", type=int, default=1000)
    ap.add_argument("--bytes", type=int, default=512)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-import"))
    args = ap.parse_args()
    weft = os.path.abspath(args.weft)
    resource_root = os.path.join(args.scratch, "resource")
    tree = os.path.join(resource_root, "tree")
    print(f"making {args.files} files of {args.bytes} B ...", flush=True)
    make_tree(tree, args.files, args.per_dir, args.bytes)
    settle(drop=False)

    times = {"find | wc -l": [], "import": [], "rescan": []}
    for r in range(args.rounds):
        order = ["find", "import"] if r % 2 == 0 else ["import", "find"]
        for arm in order:
            if arm == "find":
                t, n = find_count(tree)
                assert n == args.files, n
                times["find | wc -l"].append(t)
            else:
                first, again = import_run(weft, args.scratch, resource_root, args.files)
                times["import"].append(first)
                times["rescan"].append(again)
        print(f"round {r + 1}: " + ", ".join(f"{a} {args.files / ts[-1]:,.0f} files/s" for a, ts in times.items()),
              flush=True)

    med = {a: statistics.median(ts) for a, ts in times.items()}
    print(f"\n{args.rounds} rounds, arms alternating; {args.files} files of {args.bytes} B, "
          f"{args.per_dir} to a directory\n")
    print("| arm | median | range | time vs find |")
    print("|---|---|---|---|")
    for a, ts in times.items():
        lo, hi = args.files / max(ts), args.files / min(ts)
        print(f"| {a} | {args.files / med[a]:,.0f} files/s | {lo:,.0f}-{hi:,.0f} | {med[a] / med['find | wc -l']:.1f} x |")


if __name__ == "__main__":
    main()
