#!/usr/bin/env python3
"""An instrument's stream (Krios-like, scaled to this machine): a file of --mb MB every
--every seconds for --minutes, each followed by its marker `NAME.done`, ingested into zone
`a` while a rule copies every object to zone `b` (the HPC centre). Two arms, each into
fresh zones:

  watch     `weft watch DIR COLL --ready-marker '*.done' --then delete --json`
  loop      what a facility writes today: `inotifywait -m -e close_write DIR | while read
            f; do weft put "$f" COLL/ && rm "$f"; done`

For each file: the lag from its marker written (the file complete) to its object durable
in `a` (the watch's JSON event, the loop's line after `weft put` returned), and to its
good copy in `b` (polled every 0.1 s); the backlog (files complete and not yet in `a`) at
its largest.

    cargo build --release -p weft
    apt-get install inotify-tools        # for the loop arm
    scripts/bench-ingest-stream.py --minutes 5 --every 2 --mb 100

Prints a Markdown table. Not a test: nothing is asserted but that every file arrived.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, start_zone  # noqa: E402


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def writer(inst, n, every, size, complete):
    """Writes file i at t0 + i*every in 8 MiB pieces, then its marker; records when each
    was complete. A file that takes longer than `every` delays the next (an instrument
    never writes two at once)."""
    block = os.urandom(8 << 20)
    t0 = time.time()
    for i in range(n):
        time.sleep(max(0.0, t0 + i * every - time.time()))
        name = os.path.join(inst, f"movie_{i:05d}.mrc")
        with open(name, "wb") as f:
            f.write(i.to_bytes(8, "little"))  # each file's bytes differ
            left = size - 8
            while left > 0:
                n_bytes = min(left, len(block))
                f.write(block[:n_bytes])
                left -= n_bytes
        with open(name + ".done", "w"):
            pass
        complete[os.path.basename(name)] = time.time()


def consumer(arm, weft, env, inst, coll, scratch):
    if arm == "watch":
        cmd = [weft, "watch", inst, coll, "--ready-marker", "*.done", "--then", "delete", "--json",
               "--journal", os.path.join(scratch, "journal.jsonl")]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    script = (
        f'inotifywait -m -q -e close_write --format "%w%f" {inst} | while read f; do '
        f'case "$f" in *.done) rm -f "$f"; continue;; esac; '
        f'"{weft}" put --quiet "$f" {coll}/ && echo "$f" && rm -f "$f"; done'
    )
    return subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


def durable_name(arm, line):
    if arm == "watch":
        e = json.loads(line)
        return os.path.basename(e["local"]) if e.get("event") == "ingested" else None
    return os.path.basename(line.strip())


def one_arm(arm, weft, args, scratch):
    shutil.rmtree(scratch, ignore_errors=True)
    inst = os.path.join(scratch, "inst")
    os.makedirs(inst)
    a, b = start_zone(weft, "a", scratch), start_zone(weft, "b", scratch)
    n = int(args.minutes * 60 / args.every)
    complete, durable, copied = {}, {}, {}
    try:
        secret = os.urandom(32).hex()
        a.call("POST", "zones", {"name": "b", "url": b.url, "secret": secret})
        b.call("POST", "zones", {"name": "a", "url": a.url, "secret": secret})
        coll = f"/a/home/admin/{arm}"
        a.call("POST", "policies", {"source": f"""
[[rule]]
name = "to-hpc"
on = "created"
[rule.if]
path = "{coll}/**"
[rule.do]
replicate = "zone = b"
"""})
        a.weft("mkdir", coll)
        proc = consumer(arm, weft, a.client_env(), inst, coll, scratch)
        time.sleep(1)  # the consumer's watches in place before the first file

        def read_events():
            for line in proc.stdout:
                name = durable_name(arm, line)
                if name:
                    durable[name] = time.time()

        def poll_copies():
            while len(copied) < n:
                for name in [x for x in durable if x not in copied]:
                    st = a.call("GET", f"stat{coll}/{name}")
                    if any(r["zone"] == "b" and r["state"] == "good" for r in st.get("replicas", [])):
                        copied[name] = time.time()
                time.sleep(0.1)

        readers = [threading.Thread(target=read_events, daemon=True), threading.Thread(target=poll_copies, daemon=True)]
        for t in readers:
            t.start()
        writer(inst, n, args.every, args.mb * 1_000_000, complete)
        deadline = time.time() + 300
        while len(copied) < n and time.time() < deadline:
            time.sleep(0.2)
        missing = n - len(copied)
        if missing:
            raise SystemExit(f"{arm}: {missing} of {n} files never reached zone b")
        if arm == "watch":
            proc.terminate()
        else:
            os.killpg(proc.pid, 15)
        proc.wait()
    finally:
        a.stop()
        b.stop()
    lag = [durable[k] - complete[k] for k in complete]
    copy = [copied[k] - complete[k] for k in complete]
    # The backlog at each moment a file became complete: complete and not yet durable.
    backlog = max(sum(1 for k in complete if complete[k] <= t < durable[k]) for t in complete.values())
    shutil.rmtree(scratch, ignore_errors=True)
    return {"files": n, "lag": lag, "copy": copy, "backlog": backlog}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default=os.path.join(ROOT, "target", "release", "weft"))
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--every", type=float, default=2)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--arms", default="watch,loop")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "target", "bench-ingest-stream"))
    args = ap.parse_args()
    weft = os.path.abspath(args.weft)
    results = {}
    for arm in args.arms.split(","):
        r = one_arm(arm, weft, args, os.path.join(args.scratch, arm))
        results[arm] = r
        print(f"{arm}: {r['files']} files, lag median {statistics.median(r['lag']):.2f} s, "
              f"p99 {quantile(r['lag'], 0.99):.2f} s; copy in b median {statistics.median(r['copy']):.2f} s; "
              f"backlog at most {r['backlog']}", flush=True)
    print(f"\n{args.mb} MB every {args.every} s for {args.minutes} min; a rule copies each object to zone b\n")
    print("| arm | files | complete -> durable in a: median, p99, max | -> good copy in b: median, p99 | backlog at most |")
    print("|---|---|---|---|---|")
    for arm, r in results.items():
        lag, copy = r["lag"], r["copy"]
        print(f"| {arm} | {r['files']} | {statistics.median(lag):.2f} s, {quantile(lag, 0.99):.2f} s, {max(lag):.2f} s "
              f"| {statistics.median(copy):.2f} s, {quantile(copy, 0.99):.2f} s | {r['backlog']} |")


if __name__ == "__main__":
    main()
