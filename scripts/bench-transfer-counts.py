#!/usr/bin/env python3
"""How long reading a transfer's progress takes for a transfer of many files, on the
SQLite schema of crates/weft-catalog/migrations: summed over its files (as before
migration 10) against read from `transfer_states`. Not a test: it measures and prints.

    scripts/bench-transfer-counts.py [--files 1000000] [--runs 5]

Builds the schema from the migration files in a scratch database, fills one transfer's
files (two thirds done, a third pending), runs migration 10 on them (its backfill is what
an upgrade pays), and times both reads (medians).
"""
import argparse
import glob
import os
import sqlite3
import statistics
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MIGRATIONS = os.path.join(ROOT, "crates/weft-catalog/migrations/sqlite")
SUMMED = ("SELECT state, COUNT(*), CAST(COALESCE(SUM(bytes_done), 0) AS BIGINT), "
          "CAST(COALESCE(SUM(attempts), 0) AS BIGINT) FROM transfer_files "
          "WHERE transfer_id = ? GROUP BY state ORDER BY state")
STATES = ("SELECT state, files, bytes_done, attempts FROM transfer_states "
          "WHERE transfer_id = ? AND files > 0 ORDER BY state")


def timed(db, sql, tid, runs):
    ts, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = db.execute(sql, (tid,)).fetchall()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = sqlite3.connect(os.path.join(scratch, "catalog.db"))
        migrations = sorted(glob.glob(os.path.join(MIGRATIONS, "*.sql")))
        for path in [m for m in migrations if not os.path.basename(m).startswith("0010")]:
            db.executescript(open(path).read())
        db.execute("INSERT INTO principals (name, kind, is_admin, created) VALUES ('admin', 'user', 1, 0)")
        tid = "a" * 32
        db.execute("INSERT INTO transfers (id, owner_id, spec, state, created) VALUES (?, 1, '{}', 'active', 0)", (tid,))
        db.executemany(
            "INSERT INTO transfer_files (transfer_id, seq, source, destination, size, state, bytes_done, attempts) "
            "VALUES (?, ?, ?, ?, 65536, ?, ?, 1)",
            ((tid, i, f"/a/home/admin/tree/d{i // 1000}/f{i:07d}", f"/b/in/tree/d{i // 1000}/f{i:07d}",
              "done" if i % 3 else "pending", 65536 if i % 3 else 0) for i in range(args.files)))
        db.commit()
        summed, want = timed(db, SUMMED, tid, args.runs)
        t = time.perf_counter()
        db.executescript(open([m for m in migrations if os.path.basename(m).startswith("0010")][0]).read())
        backfill = time.perf_counter() - t
        states, got = timed(db, STATES, tid, args.runs)
        if got != want:
            raise SystemExit(f"transfer_states disagrees with the files: {got} != {want}")
        print(f"{args.files} transfer files, SQLite {sqlite3.sqlite_version}, medians of {args.runs}:")
        print(f"- summed over the files: {summed * 1e3:.1f} ms")
        print(f"- read from transfer_states: {states * 1e3:.2f} ms ({summed / states:.0f} x less)")
        print(f"- migration 10's backfill: {backfill:.2f} s")


if __name__ == "__main__":
    main()
