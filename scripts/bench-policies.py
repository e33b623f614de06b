#!/usr/bin/env python3
"""Policy benchmark (issue 4). Not a test: it measures and prints Markdown for
docs/PERFORMANCE.md.

    scripts/bench-policies.py [--runs 3] [--files 1000] [--size-kib 64] [--quick]

Starts two release `weft serve` zones (`a`, `b`) on loopback, federated, and measures, each
--runs times after a warm-up (medians, min-max):

  1. replicate-on-ingest: with a rule `on = "created"` replicating everything put below
     /a/home/admin/ingest to zone b, `weft put -r` of --files files, and the time from the
     end of the put until every file has its good copy in b (the rule's tasks all done);
     against the same copy started by hand (`POST /replicas` of the whole tree, from
     submission to the transfer's end);
  2. the engine's cost per event with 100 rules loaded (one of which sets metadata on every
     object), as the lag after the last put and the ingest rate with and without the rules;
  3. the pure evaluation cost per event with 100 rules (`weft-policy`'s eval_cost example).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import time

from benchlib import ROOT, build_weft, make_tree, settle, start_zone


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def rule_status(zone, rule):
    for s in zone.call("GET", "policies/status"):
        if s["rule"] == rule:
            return s
    raise SystemExit(f"no status for rule {rule}")


def wait_done(zone, rule, n, timeout=600):
    """Seconds until `rule` has `n` tasks done and none open; fails on a failed task."""
    t0 = time.time()
    while True:
        s = rule_status(zone, rule)
        if s["failed"]:
            raise SystemExit(f"rule {rule}: {s['failures']}")
        if s["done"] >= n and s["pending"] == 0 and s["waiting"] == 0:
            return time.time()
        if time.time() - t0 > timeout:
            raise SystemExit(f"rule {rule} did not finish: {s}")
        time.sleep(0.02)


def put_tree(weft, env, local, dest):
    t0 = time.time()
    subprocess.run([weft, "put", "-r", "--quiet", local, dest], check=True, env=env)
    return t0, time.time()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--size-kib", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="few files, one run: checks the script")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-policies"))
    args = ap.parse_args()
    runs = 1 if args.quick else args.runs
    files = 100 if args.quick else args.files
    size = args.size_kib << 10

    weft = build_weft()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "weft-policy", "--example", "eval_cost"],
                   check=True, cwd=ROOT)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    s = args.scratch
    a, b = start_zone(weft, "a", s), start_zone(weft, "b", s)
    out = {"ingest": [], "by_hand": [], "lag_rules": [], "put_rules": [], "put_plain": []}
    try:
        secret = os.urandom(32).hex()
        a.call("POST", "zones", {"name": "b", "url": b.url, "secret": secret})
        b.call("POST", "zones", {"name": "a", "url": a.url, "secret": secret})
        home = "/a/home/admin"
        local = make_tree(os.path.join(s, "tree"), files, size, seed=1)
        a.call("POST", "policies", {"source": f"""
[[rule]]
name = "ingest-to-b"
on = "created"
[rule.if]
path = "{home}/ingest/**"
[rule.do]
replicate = "zone = b"
"""})
        # 1. Replicate-on-ingest against the same copy by hand.
        for run in range(runs + 1):
            settle(drop=False)
            _, put_end = put_tree(weft, a.client_env(), local, f"{home}/ingest/r{run}")
            done = wait_done(a, "ingest-to-b", files * (run + 1))
            settle(drop=False)
            put_tree(weft, a.client_env(), local, f"{home}/hand/r{run}")
            t0 = time.time()
            t = a.call("POST", "replicas", {"path": f"{home}/hand/r{run}", "target": "b", "recursive": True})
            while t["state"] in ("queued", "active"):
                time.sleep(0.02)
                t = a.call("GET", f"transfers/{t['id']}")
            if t["state"] != "succeeded":
                raise SystemExit(f"transfer {t['id']}: {t['state']} {t.get('error')}")
            if run > 0:
                out["ingest"].append(done - put_end)
                out["by_hand"].append(t["finished"] / 1000 - t0)
        a.call("DELETE", "policies/ingest-to-b")

        # 2. The engine with 100 rules loaded: 99 that match nothing here, one that sets
        # metadata on every object below /lrz-free paths of this zone.
        rules = [f"""
[[rule]]
name = "r{i}"
on = "created"
[rule.if]
path = "{home}/project{i}/**"
min_size = "{i} KiB"
[rule.do]
replicate = "zone = b"
""" for i in range(99)]
        rules.append(f"""
[[rule]]
name = "tag"
on = "created"
[rule.if]
path = "{home}/tagged/**"
[rule.do]
set_meta = ["ingested=yes"]
""")
        for run in range(runs + 1):
            settle(drop=False)
            t0, t1 = put_tree(weft, a.client_env(), local, f"{home}/plain/r{run}")
            plain = t1 - t0
            a.call("POST", "policies", {"source": "".join(rules)})
            settle(drop=False)
            t0, t1 = put_tree(weft, a.client_env(), local, f"{home}/tagged/r{run}")
            done = wait_done(a, "tag", files)
            for name in [f"r{i}" for i in range(99)] + ["tag"]:
                a.call("DELETE", f"policies/{name}")
            if run > 0:
                out["put_plain"].append(plain)
                out["put_rules"].append(t1 - t0)
                out["lag_rules"].append(done - t1)
    finally:
        a.stop()
        b.stop()

    ex = os.path.join(ROOT, "target", "release", "examples", "eval_cost")
    pure = subprocess.run([ex, "100", "200000"], check=True, capture_output=True, text=True).stdout.strip()
    report(out, runs, files, size, pure)
    shutil.rmtree(s, ignore_errors=True)


def report(out, runs, files, size, pure):
    print(f"# weft policies: {runs} runs after a warm-up, medians (min-max)\n")
    print(f"machine: {os.cpu_count()} cores, loopback; zones a and b on one file system; "
          f"{files} files of {size >> 10} KiB\n")
    ing, hand = med(out["ingest"]), med(out["by_hand"])
    print("| measurement | time | files/s | ratio |")
    print("|---|---|---|---|")
    print(f"| replicate-on-ingest: last put → all copies good in b | {ing[0]:.2f} s ({ing[1]:.2f}-{ing[2]:.2f}) "
          f"| - | {ing[0] / hand[0]:.2f} × by hand |")
    print(f"| the same copy by hand (`replicate -r`, submit → end) | {hand[0]:.2f} s ({hand[1]:.2f}-{hand[2]:.2f}) "
          f"| {files / hand[0]:.0f} | 1.00 |")
    plain, ruled, lag = med(out["put_plain"]), med(out["put_rules"]), med(out["lag_rules"])
    print(f"| `put -r`, no rules | {plain[0]:.2f} s | {files / plain[0]:.0f} | 1.00 |")
    print(f"| `put -r`, 100 rules loaded (one sets metadata on each) | {ruled[0]:.2f} s | {files / ruled[0]:.0f} "
          f"| {plain[0] / ruled[0]:.2f} of no rules |")
    print(f"| engine lag after the last put, 100 rules | {lag[0]:.2f} s ({lag[1]:.2f}-{lag[2]:.2f}) | - | - |")
    print(f"\npure evaluation (`cargo run --release -p weft-policy --example eval_cost 100 200000`): {pure}")


if __name__ == "__main__":
    main()
