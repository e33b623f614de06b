#!/usr/bin/env python3
"""A/B of two weft builds on the CLI's data path: `weft put`/`get` of a large file (against
`cp` + `sync` in the same round) and `weft put -r`/`get -r` of a tree of small files.

    cp target/release/weft /tmp/weft-old      # before the change
    cargo build --release -p weft             # after it
    scripts/ab-cli.py --old /tmp/weft-old --new target/release/weft --rounds 3

Each round starts a fresh zone per build (embedded defaults, scratch on the same file
system) and measures every step once after a warm-up; builds alternate round by round so
that the machine's drift falls on both. Before each large-file step the page cache is
synced and dropped and the input read once, as in bench-foundation.py. Reports medians,
the ratio new/old, and the clients' peak RSS. Not a test: nothing is asserted.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, make_tree, run_peak_rss_mib, settle, start_zone, timed  # noqa: E402


def one_round(weft, args, scratch, big, tree):
    """{step: seconds} for one build, and the clients' peak RSS of put and get."""
    work = os.path.join(scratch, "zone")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    zone = start_zone(weft, "ab", work)
    env, home = zone.client_env(), "/ab/home/admin"
    w = lambda *a: [weft, *a]  # noqa: E731
    got = os.path.join(work, "got")
    os.makedirs(got)
    out = {}
    try:
        for run in range(2):  # the first warms up
            settle(big)
            out["put"] = timed(w("put", "--quiet", big, f"{home}/big.bin"), env)
            settle()
            out["get"] = timed(w("get", "--quiet", f"{home}/big.bin", got + "/"), env)
            os.remove(os.path.join(got, "big.bin"))
            if run == 0:
                subprocess.run(w("rm", f"{home}/big.bin"), check=True, env=env)
        rss_get = run_peak_rss_mib(w("get", "--quiet", f"{home}/big.bin", got + "/"), env)
        os.remove(os.path.join(got, "big.bin"))
        rss_put = run_peak_rss_mib(w("put", "--quiet", "--force", big, f"{home}/big.bin"), env)
        for run in range(2):
            settle(*[os.path.join(tree, f) for f in os.listdir(tree)], drop=False)
            out["put -r"] = timed(w("put", "-r", "--quiet", tree, f"{home}/tree{run}"), env)
            back = os.path.join(got, f"tree{run}")
            out["get -r"] = timed(w("get", "-r", "--quiet", f"{home}/tree{run}", back), env)
            shutil.rmtree(back)
    finally:
        zone.stop()
    return out, rss_put, rss_get


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=64)
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "ab-cli"))
    args = ap.parse_args()
    scratch = args.scratch
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    big = os.path.join(scratch, "big.bin")
    with open(big, "wb") as f:
        for _ in range(args.size_mib):
            f.write(os.urandom(1 << 20))
    tree = make_tree(os.path.join(scratch, "tree"), args.files, args.file_kib << 10, fill="rotated")

    builds = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    steps = ["cp + sync", "put", "get", "put -r", "get -r"]
    times = {b: {s: [] for s in steps} for b in builds}
    rss = {b: [] for b in builds}
    for r in range(args.rounds):
        order = list(builds) if r % 2 == 0 else list(reversed(builds))
        for b in order:
            settle(big)
            dst = os.path.join(scratch, "cp.bin")
            times[b]["cp + sync"].append(timed(["sh", "-c", f"cp {big} {dst} && sync"]))
            os.remove(dst)
            out, rp, rg = one_round(builds[b], args, scratch, big, tree)
            for s, t in out.items():
                times[b][s].append(t)
            rss[b].append((rp, rg))
            print(f"round {r + 1} {b}: " + ", ".join(f"{s} {t:.2f} s" for s, t in out.items()), flush=True)

    med = lambda xs: statistics.median(xs)  # noqa: E731
    print(f"\n{args.rounds} rounds, builds alternating; file {args.size_mib} MiB, tree {args.files} x {args.file_kib} KiB\n")
    print("| step | old median | new median | new/old time | new vs cp+sync (same rounds) |")
    print("|---|---|---|---|---|")
    for s in steps:
        o, n = med(times["old"][s]), med(times["new"][s])
        vs_cp = "" if s in ("cp + sync", "put -r", "get -r") else f"{med(times['new']['cp + sync']) / n:.2f}"
        unit = lambda t: f"{t:.2f} s" if s not in ("put -r", "get -r") else f"{args.files / t:.0f} files/s"  # noqa: E731
        print(f"| {s} | {unit(o)} | {unit(n)} | {n / o:.2f} | {vs_cp} |")
    for b in builds:
        print(f"\n{b}: client peak RSS put {max(p for p, _ in rss[b]):.0f} MiB, get {max(g for _, g in rss[b]):.0f} MiB")
    print("\nraw:", times)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
