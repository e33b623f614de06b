#!/usr/bin/env python3
"""Small-file ingest into one zone served by one `weft serve` against two, on one
PostgreSQL: how the "Several servers" figures of docs/PERFORMANCE.md are measured.

    scripts/bench-servers.py --files 10000 --clients 4 --rounds 3

Each server is pinned to a core of its own (`taskset`): one server on core 0, or two on
cores 0 and 1. PostgreSQL and the clients (`weft put -r` of a part of the tree each, spread
over the servers) are not pinned: on a small machine they share the cores with the servers, and the
CPU each used is reported, so that the limit shows. Per configuration and round: files/s,
CPU seconds of each server, of PostgreSQL and of the clients, and PostgreSQL's commits
and rows written per second. Not a test: nothing is asserted.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Zone, build_weft, cpu_seconds, free_port, make_tree, reap  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
PG_USER = "weft-pg"


def as_pg(cmd):
    return ["runuser", "-u", PG_USER, "--"] + cmd if os.geteuid() == 0 else cmd


class Postgres:
    def __init__(self, scratch):
        self.dir = os.path.join(scratch, "pg")
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            subprocess.run(["useradd", "--system", "--no-create-home", PG_USER],
                           stderr=subprocess.DEVNULL)
            shutil.chown(self.dir, PG_USER)
        data = os.path.join(self.dir, "data")
        subprocess.run(as_pg([f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                              "-E", "UTF8", "--locale=C", "--no-instructions"]),
                       check=True, stdout=subprocess.DEVNULL)
        self.port = free_port()
        with open(os.path.join(data, "postgresql.auto.conf"), "a") as f:
            f.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                    f"unix_socket_directories = '{self.dir}'\nmax_connections = 200\n")
        subprocess.run(as_pg([f"{PG_BIN}/pg_ctl", "-D", data, "-l", os.path.join(self.dir, "log"),
                              "-w", "start"]), check=True, stdout=subprocess.DEVNULL)
        self.data = data

    def url(self, db):
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def createdb(self, name):
        subprocess.run([f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        name], check=True)
        return self.url(name)

    def query(self, db, sql):
        out = subprocess.run([f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", db, "-Atc", sql], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def cpu_seconds(self):
        """CPU of every PostgreSQL process (the postmaster and its backends)."""
        total = 0.0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
                if not exe.startswith(PG_BIN):
                    continue
                total += cpu_seconds(int(pid))
            except OSError:
                continue
        return total

    def stop(self):
        subprocess.run(as_pg([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "fast", "stop"]),
                       stdout=subprocess.DEVNULL)


def serve(weft, catalog, data_dir, core):
    """Server `data_dir` of zone `z` on `catalog`, pinned to `core`; its log beside."""
    zone = Zone("z", data_dir, weft=weft, log=data_dir + ".log", args=["--catalog", catalog],
                wrapper=["taskset", "-c", str(core)], environ=os.environ)
    zone.run()
    return zone


def make_parts(root, files, size, clients):
    """`clients` directories of files/clients files each, of random bytes."""
    per = files // clients
    make_tree(root, per * clients, size, name=lambda i: f"part{i // per}/f{i % per:05d}.bin", fill="random")


def one_run(weft, pg, servers, tree, clients, scratch, run):
    catalog = pg.createdb(f"z{servers}r{run}")
    zone_dir = os.path.join(scratch, f"z{servers}r{run}")
    first = os.path.join(zone_dir, "server0")
    os.makedirs(first)
    zones = [serve(weft, catalog, first, 0)]
    for i in range(1, servers):
        d = os.path.join(zone_dir, f"server{i}")
        os.makedirs(d)
        for f in ("secret.key", "admin.token"):
            shutil.copy(os.path.join(first, f), d)
        zones.append(serve(weft, catalog, d, i))
    token = zones[0].token
    before_cpu = [cpu_seconds(z.proc.pid) for z in zones]
    before_pg = pg.cpu_seconds()
    commits0 = int(pg.query(catalog.rsplit("/", 1)[1],
                            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))
    t0 = time.perf_counter()
    puts = []
    for c in range(clients):
        env = dict(os.environ, WEFT_URL=zones[c % servers].url, WEFT_TOKEN=token,
                   XDG_CONFIG_HOME=os.path.join(scratch, "cfg"))
        puts.append(subprocess.Popen([weft, "put", "-r", "--quiet", os.path.join(tree, f"part{c}"),
                                      f"/z/home/admin/part{c}"], env=env, stdout=subprocess.DEVNULL))
    client_cpu = 0.0
    for p in puts:
        # The clients' CPU from their rusage as they are reaped.
        usage = reap(p)
        if p.returncode != 0:
            sys.exit(f"weft put failed ({p.returncode})")
        client_cpu += usage.ru_utime + usage.ru_stime
    seconds = time.perf_counter() - t0
    server_cpu = [cpu_seconds(z.proc.pid) - b for z, b in zip(zones, before_cpu)]
    pg_cpu = pg.cpu_seconds() - before_pg
    commits = int(pg.query(catalog.rsplit("/", 1)[1],
                           "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")) - commits0
    for z in zones:
        z.stop()
    shutil.rmtree(zone_dir, ignore_errors=True)
    return seconds, server_cpu, pg_cpu, client_cpu, commits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", help="the binary (default: build the release one)")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--size", type=int, default=64 << 10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    weft = args.weft or build_weft()
    scratch = tempfile.mkdtemp(prefix="weft-bench-servers-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    if os.geteuid() == 0:
        os.chmod(scratch, 0o755)
    pg = Postgres(scratch)
    try:
        tree = os.path.join(scratch, "tree")
        make_parts(tree, args.files, args.size, args.clients)
        results = {1: [], 2: []}
        for r in range(args.rounds):
            for servers in (1, 2):
                out = one_run(weft, pg, servers, tree, args.clients, scratch, r)
                results[servers].append(out)
                seconds, scpu, pgcpu, ccpu, commits = out
                print(f"round {r + 1}, {servers} server(s): {args.files / seconds:,.0f} files/s "
                      f"({seconds:.2f} s), servers CPU {', '.join(f'{c:.2f}' for c in scpu)} s, "
                      f"PostgreSQL {pgcpu:.2f} s, clients {ccpu:.2f} s, {commits / seconds:,.0f} commits/s",
                      flush=True)
        print()
        print("| servers | median files/s | servers CPU s | PostgreSQL CPU s | clients CPU s | commits/s |")
        print("|---|---|---|---|---|---|")
        med = {}
        for servers, runs in results.items():
            rate = statistics.median(args.files / r[0] for r in runs)
            med[servers] = rate
            scpu = statistics.median(sum(r[1]) for r in runs)
            pgcpu = statistics.median(r[2] for r in runs)
            ccpu = statistics.median(r[3] for r in runs)
            cps = statistics.median(r[4] / r[0] for r in runs)
            print(f"| {servers} | {rate:,.0f} | {scpu:.2f} | {pgcpu:.2f} | {ccpu:.2f} | {cps:,.0f} |")
        print(f"\n2 servers / 1 server: {med[2] / med[1]:.2f}")
    finally:
        pg.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
