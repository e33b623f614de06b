#!/bin/bash
# Where the time of the S3 small-file step goes (docs/PERFORMANCE.md, issue 26): a release
# zone with the S3 gateway, `rclone copy` of 10,000 x 64 KiB in 100 directories (rclone's
# defaults, as scripts/bench-s3.py runs it) after a warm-up copy; then the CPU time of
# rclone and of the zone, and the zone's own metrics: mean PUT and HEAD latency, group
# commits and their mean. With `perf`, the zone is also recorded (`perf report -i
# target/profile-s3/perf.data`); with `strace`, its system calls are counted
# (target/profile-s3/strace.txt; strace slows the zone, so read the counts, not the times);
# with `stat`, its context switches are counted; with `switches`, where its threads give
# up their core is recorded (`perf report -i target/profile-s3/switches.data`; recording
# slows the zone too).
#
#   bash scripts/profile-s3-small.sh [perf|stat|switches|strace]
#
# RCLONE_FLAGS adds flags to the measured copy (e.g. "--transfers 8").
#
# WEFT_BIN=path runs that build instead of building this tree's (to compare two builds).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${WEFT_BIN:-$ROOT/target/release/weft}
RCLONE=${WEFT_CACHE:-$HOME/.cache/weft}/tools/bin/rclone
S=$ROOT/target/profile-s3
# The zone launcher, trees and probes the Python tests and benchmarks use.
ZONELIB=$ROOT/python/tests/zonelib.py
[ -n "${WEFT_BIN:-}" ] || (cd "$ROOT" && cargo build --release -q -p weft)
rm -rf "$S/zone" "$S/zone.log" "$S/home"
mkdir -p "$S/home"
if [ ! -d "$S/tree" ]; then
  python3 - "$ZONELIB" "$S/tree" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from zonelib import make_tree
make_tree(sys.argv[2], 10_000, 65536, name=lambda i: f"d{i // 100:03d}/f{i % 100:03d}.bin", fill="random")
PY
fi
# Started, healthy, and left running: PID and URLs.
LAUNCHED=$(python3 "$ZONELIB" serve --weft "$W" --zone p --data-dir "$S/zone" --log "$S/zone.log" --s3)
read -r ZONE URL S3_URL <<< "$LAUNCHED"
trap 'kill $ZONE 2>/dev/null || true' EXIT
export WEFT_URL=$URL WEFT_TOKEN=$(cat "$S/zone/admin.token")
KEY=$("$W" s3 key create --json)
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
export RCLONE_CONFIG=$S/home/rclone.conf RCLONE_CONFIG_S_TYPE=s3 RCLONE_CONFIG_S_PROVIDER=Other \
  RCLONE_CONFIG_S_ENDPOINT=$S3_URL \
  RCLONE_CONFIG_S_ACCESS_KEY_ID=$(echo "$KEY" | field access_key) \
  RCLONE_CONFIG_S_SECRET_ACCESS_KEY=$(echo "$KEY" | field secret_key)
"$RCLONE" copy -q "$S/tree" s:home-admin/warm-up
metric() { curl -s -H "Authorization: Bearer $WEFT_TOKEN" $URL/metrics | grep -F "$1" | awk '{print $2}'; }
cpu() { python3 "$ZONELIB" cpu-seconds $ZONE; }
put0=$(metric 'duration_seconds_sum{route="s3",method="PUT"}'); puts0=$(metric 'duration_seconds_count{route="s3",method="PUT"}')
head0=$(metric 'duration_seconds_sum{route="s3",method="HEAD"}'); heads0=$(metric 'duration_seconds_count{route="s3",method="HEAD"}')
commit0=$(metric 'group_commit_seconds_sum'); commits0=$(metric 'group_commit_seconds_count')
cpu0=$(cpu)
if [ "${1:-}" = perf ]; then
  perf record -F 999 -g -p $ZONE -o "$S/perf.data" 2> /dev/null &
  TRACER=$!
  sleep 0.5
elif [ "${1:-}" = switches ]; then
  perf record -e sched:sched_switch -g -p $ZONE -o "$S/switches.data" 2> /dev/null &
  TRACER=$!
  sleep 0.5
elif [ "${1:-}" = stat ]; then
  perf stat -e task-clock,context-switches,cpu-migrations -p $ZONE -o "$S/stat.txt" 2> /dev/null &
  TRACER=$!
  sleep 0.5
elif [ "${1:-}" = strace ]; then
  strace -f -c -o "$S/strace.txt" -p $ZONE 2> /dev/null &
  TRACER=$!
  sleep 0.5
fi
/usr/bin/time -f "rclone: %e s wall, %U s user + %S s system CPU" "$RCLONE" copy ${RCLONE_FLAGS:-} -q "$S/tree" s:home-admin/measured
[ -n "${TRACER:-}" ] && kill -INT $TRACER && wait $TRACER 2> /dev/null || true
if [ "${1:-}" = stat ]; then grep -E "task-clock|context-switches|migrations" "$S/stat.txt"; fi
python3 - "$(cpu)" "$cpu0" \
  "$(metric 'duration_seconds_sum{route="s3",method="PUT"}')" "$put0" "$(metric 'duration_seconds_count{route="s3",method="PUT"}')" "$puts0" \
  "$(metric 'duration_seconds_sum{route="s3",method="HEAD"}')" "$head0" "$(metric 'duration_seconds_count{route="s3",method="HEAD"}')" "$heads0" \
  "$(metric 'group_commit_seconds_sum')" "$commit0" "$(metric 'group_commit_seconds_count')" "$commits0" <<'PY'
import sys
a = [float(x) for x in sys.argv[1:]]
cpu, put, puts, head, heads, commit, commits = a[0] - a[1], a[2] - a[3], a[4] - a[5], a[6] - a[7], a[8] - a[9], a[10] - a[11], a[12] - a[13]
print(f"zone: {cpu:.2f} s CPU, {cpu / puts * 1000:.2f} ms per file")
print(f"PUT: {puts:.0f}, mean {put / puts * 1000:.2f} ms; HEAD: {heads:.0f}, mean {head / heads * 1000:.2f} ms")
print(f"group commits: {commits:.0f} ({puts / commits:.2f} PUTs each), catalog transaction mean {commit / commits * 1000:.2f} ms")
PY
