#!/usr/bin/env python3
"""Zone-to-zone transfer benchmark (issue 3). Not a test: it measures and prints Markdown
for docs/PERFORMANCE.md.

    scripts/bench-transfers.py [--runs 3] [--size-mib 1024] [--quick] [--trees-only]

Starts two release `weft serve` zones (`a`, `b`) on loopback with embedded defaults and
separate data dirs on the same file system, federates them, and measures, each --runs
times after a warm-up (medians, min-max):

  1. one large file a -> b, against `cp + sync` of the same file and one loopback iperf3
     stream moving the same number of bytes; once with the input in memory on both sides
     (the zone's replica warmed through the zone), once with it on disk on both sides;
  2. trees of 1,000 x 1 MiB and 10,000 x 64 KiB a -> b, against `rclone copy` of the same
     trees between two directories of the same file system (+ sync), at its best
     --transfers of 4, 8, 16, 32;
  3. the per-file cost model of Liu et al. T = N*t0 + B/R + S0, fitted by least squares on trees of N in
     {50, 100, 200, 400, 800, 1000} files of two total sizes, with N = 600 held out and
     predicted.

A transfer's time runs from the POST that submits it to the end the zone records, so it
includes planning, queueing and the final catalog writes (polling every 50 ms adds nothing).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import ROOT, build_weft, free_port, make_tree, settle, start_zone, timed
RCLONE = os.path.expanduser("~/.cache/weft/tools/bin/rclone")


def transfer(zone, src, dst, **opts):
    """Seconds from submission to success, by the zone's own clock for the end (the same
    host clock), so that polling adds nothing."""
    t0 = time.time()
    t = zone.call("POST", "transfers", {"sources": [src], "destination": dst, "recursive": True, **opts})
    while t["state"] in ("queued", "active"):
        time.sleep(0.05)
        t = zone.call("GET", f"transfers/{t['id']}")
    if t["state"] != "succeeded":
        raise SystemExit(f"transfer {t['id']} {t['state']}: {t.get('error')}")
    return t["finished"] / 1000 - t0


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def lstsq3(rows, ys):
    """Least squares for y = c0*x0 + c1*x1 + c2*x2 via the normal equations."""
    a = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    b = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(3)]
    # Gaussian elimination with partial pivoting.
    m = [a[i] + [b[i]] for i in range(3)]
    for c in range(3):
        p = max(range(c, 3), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def pearson(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="small sizes, one run: checks the script")
    ap.add_argument("--trees-only", action="store_true", help="only the trees against rclone (~3 min)")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-transfers"))
    args = ap.parse_args()
    runs = 1 if args.quick else args.runs
    size_mib = 64 if args.quick else args.size_mib
    trees = [(100, 1 << 20), (1000, 64 << 10)] if args.quick else [(1000, 1 << 20), (10000, 64 << 10)]
    fit_n = [50, 100, 200, 400, 800, 1000]
    held_out = 600
    totals = [16 << 20, 32 << 20] if args.quick else [128 << 20, 256 << 20]

    weft = build_weft()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    s = args.scratch
    a, b = start_zone(weft, "a", s), start_zone(weft, "b", s)
    out = {}
    try:
        secret = os.urandom(32).hex()
        a.call("POST", "zones", {"name": "b", "url": b.url, "secret": secret})
        b.call("POST", "zones", {"name": "a", "url": a.url, "secret": secret})
        b.call("POST", "mkdir/b/in")
        b.call("POST", "acl/b/in", {"principal": "admin#a", "permission": "write", "recursive": True})
        home = "/a/home/admin"
        seq = iter(range(10 ** 6))

        def to_b(src, **opts):
            dst = f"/b/in/r{next(seq)}"
            t = transfer(a, src, dst, **opts)
            a.call("DELETE", f"nodes{dst}?recursive=true")
            return t

        # 1. One large file.
        if not args.trees_only:
            big = os.path.join(s, "big.bin")
            with open(big, "wb") as f:
                for _ in range(size_mib):
                    f.write(os.urandom(1 << 20))
            subprocess.run([weft, "put", "--quiet", big, f"{home}/big.bin"], check=True, env=a.client_env())
            # Warm: both read their input from memory (the zone's replica of it, warmed
            # through the zone). Cold: both read it from disk.
            cp_t, z_t, cp_cold, z_cold = [], [], [], []
            dst = os.path.join(s, "cp.bin")
            for run in range(runs + 1):
                settle(big)
                t = timed(["sh", "-c", f"cp {big} {dst} && sync"])
                os.remove(dst)
                settle(big)
                a.warm(f"{home}/big.bin")
                zt = to_b(f"{home}/big.bin")
                settle()
                tc = timed(["sh", "-c", f"cp {big} {dst} && sync"])
                os.remove(dst)
                settle()
                zc = to_b(f"{home}/big.bin")
                if run > 0:
                    cp_t.append(t), z_t.append(zt), cp_cold.append(tc), z_cold.append(zc)
            iperf_port = free_port()
            server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(iperf_port)], stdout=subprocess.DEVNULL)
            time.sleep(0.5)
            r = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(iperf_port), "-n", str(size_mib << 20), "-J"],
                               check=True, capture_output=True, text=True)
            server.wait()
            iperf_bps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 8
            out["large"] = {"cp_sync": cp_t, "zone_to_zone": z_t, "cp_sync_cold": cp_cold,
                            "zone_to_zone_cold": z_cold, "iperf3_bytes_per_s": iperf_bps}

        # 2. Trees against rclone.
        out["trees"] = []
        for n, size in trees:
            local = make_tree(os.path.join(s, f"tree-{n}"), n, size, seed=n)
            subprocess.run([weft, "put", "-r", "--quiet", local, f"{home}/tree-{n}"], check=True, env=a.client_env())
            files = [os.path.join(local, f) for f in os.listdir(local)]
            rc = {}
            for transfers in (4, 8, 16, 32):
                ts = []
                for run in range(runs + 1):
                    dst = os.path.join(s, "rclone-dst")
                    settle(*files, drop=False)
                    t = timed(["sh", "-c", f"{RCLONE} copy --transfers {transfers} {local} {dst} && sync"])
                    shutil.rmtree(dst)
                    if run > 0:
                        ts.append(t)
                rc[transfers] = ts
            zs = []
            # The zone's copy of the tree warmed as rclone's input is: packs are written
            # past the page cache.
            stored = a.stored_files()
            for run in range(runs + 1):
                settle(*stored, drop=False)
                t = to_b(f"{home}/tree-{n}")
                if run > 0:
                    zs.append(t)
            out["trees"].append({"files": n, "size": size, "rclone": rc, "zone_to_zone": zs})
            shutil.rmtree(local)

        # 3. The per-file cost model.
        points = []
        for total in [] if args.trees_only else totals:
            for n in fit_n + [held_out]:
                local = make_tree(os.path.join(s, f"fit-{total}-{n}"), n, total // n, seed=n + total)
                coll = f"{home}/fit-{total}-{n}"
                subprocess.run([weft, "put", "-r", "--quiet", local, coll], check=True, env=a.client_env())
                shutil.rmtree(local)
                ts = []
                stored = a.stored_files()
                for run in range(runs + 1):
                    settle(*stored, drop=False)
                    t = to_b(coll)
                    if run > 0:
                        ts.append(t)
                points.append({"n": n, "bytes": (total // n) * n, "times": ts})
        out["fit_points"] = points
    finally:
        a.stop()
        b.stop()
    report(out, runs, size_mib)
    shutil.rmtree(s, ignore_errors=True)


def report(out, runs, size_mib):
    gb = (size_mib << 20) / 1e9
    print(f"# weft zone-to-zone transfers: {runs} runs after a warm-up, medians (min-max)\n")
    print(f"machine: {os.cpu_count()} cores, loopback; zones a and b on one file system\n")
    if "large" not in out:
        report_trees(out)
        print("\nraw:", json.dumps(out))
        return
    L = out["large"]
    cp_m, cp_lo, cp_hi = med(L["cp_sync"])
    z_m, z_lo, z_hi = med(L["zone_to_zone"])
    ip = L["iperf3_bytes_per_s"] / 1e9
    print("| large file | median | range | ratio |")
    print("|---|---|---|---|")
    print(f"| cp + sync, {size_mib} MiB | {cp_m:.2f} s ({gb / cp_m:.2f} GB/s) | {cp_lo:.2f}-{cp_hi:.2f} s | 1.00 |")
    print(f"| iperf3, 1 stream, loopback | {gb / ip:.2f} s ({ip:.2f} GB/s) | | |")
    print(f"| weft a -> b, {size_mib} MiB | {z_m:.2f} s ({gb / z_m:.2f} GB/s) | {z_lo:.2f}-{z_hi:.2f} s "
          f"| {cp_m / z_m:.2f} of cp+sync, {gb / z_m / ip:.2f} of iperf3 |")
    cc_m, cc_lo, cc_hi = med(L["cp_sync_cold"])
    zc_m, zc_lo, zc_hi = med(L["zone_to_zone_cold"])
    print(f"| cp + sync, input on disk | {cc_m:.2f} s | {cc_lo:.2f}-{cc_hi:.2f} s | 1.00 |")
    print(f"| weft a -> b, input on disk | {zc_m:.2f} s | {zc_lo:.2f}-{zc_hi:.2f} s | {cc_m / zc_m:.2f} of cp+sync |")
    report_trees(out)
    report_fit(out)


def report_trees(out):
    print("\n| tree | rclone copy + sync, best --transfers | weft a -> b | weft / rclone |")
    print("|---|---|---|---|")
    for t in out["trees"]:
        n = t["files"]
        best = min(t["rclone"], key=lambda k: statistics.median(t["rclone"][k]))
        r_m, r_lo, r_hi = med(t["rclone"][best])
        z_m, z_lo, z_hi = med(t["zone_to_zone"])
        print(f"| {n} x {t['size'] >> 10} KiB | {n / r_m:.0f} files/s ({r_m:.2f} s, {r_lo:.2f}-{r_hi:.2f}; "
              f"--transfers {best}) | {n / z_m:.0f} files/s ({z_m:.2f} s, {z_lo:.2f}-{z_hi:.2f}) | {r_m / z_m:.2f} |")
        others = ", ".join(f"{k}: {statistics.median(v):.2f} s" for k, v in sorted(t["rclone"].items()))
        print(f"|  | rclone by --transfers: {others} | | |")


def report_fit(out):
    pts = [(p["n"], p["bytes"], statistics.median(p["times"])) for p in out["fit_points"]]
    train = [p for p in pts if p[0] != 600]
    held = [p for p in pts if p[0] == 600]
    t0, inv_r, s0 = lstsq3([(n, bts, 1.0) for n, bts, _ in train], [t for _, _, t in train])
    pred = [t0 * n + inv_r * bts + s0 for n, bts, _ in train]
    r = pearson(pred, [t for _, _, t in train])
    print("\nLiu et al.'s per-file cost model on the zone-to-zone route, T = N*t0 + B/R + S0 (least squares on "
          f"{len(train)} points; N = 600 held out):\n")
    print(f"- t0 = {t0 * 1e3:.2f} ms per file, R = {1 / inv_r / 1e6:.0f} MB/s, S0 = {s0:.3f} s, Pearson r = {r:.4f}")
    for n, bts, t in held:
        p = t0 * n + inv_r * bts + s0
        print(f"- held out N = {n}, B = {bts / 1e6:.0f} MB: predicted {p:.3f} s, measured {t:.3f} s "
              f"({(p - t) / t * 100:+.1f} %)")
    fitted = {"route": "zone_to_zone", "t0_s": t0, "rate_bytes_per_s": 1 / inv_r, "s0_s": s0, "pearson_r": r}
    print("\nraw:", json.dumps({**out, "fit": fitted}))


if __name__ == "__main__":
    sys.exit(main())
