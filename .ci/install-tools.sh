#!/usr/bin/env bash
# Installs the real components the tests start (never mocks) into a cache dir outside
# the repo: ${WEFT_CACHE:-$HOME/.cache/weft}/tools. Idempotent: a tool already present is
# left alone, so CI pays the (long) Go builds only once per machine.
# One line per step; any failure stops the script with a message naming the step.
set -euo pipefail

# Pinned versions. MinIO and rclone are pinned to what `@latest` resolved to when this was
# written, so a new upstream release cannot break CI behind our back.
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
TOXIPROXY_VERSION="v2.5.0"
RCLONE_VERSION="v1.76.0"
KEYCLOAK_VERSION="26.0.7"
CARGO_DENY_VERSION="0.20.2"
PG_BIN="/usr/lib/postgresql/15/bin"

TOOLS="${WEFT_CACHE:-$HOME/.cache/weft}/tools"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

# One installer at a time per cache (two test runs may call it at once); then clear the
# scratch dirs an interrupted run left behind.
exec 9>"$TOOLS/.lock"
flock 9
rm -rf "$TOOLS"/.go-* "$TOOLS"/.kc-* "$TOOLS"/.nginx-* "$TOOLS"/.cargo-* "$TOOLS"/py.new

# Go's official tarball lives outside the default PATH of non-login shells (CI).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then PATH="$PATH:/usr/local/go/bin"; fi

STEP=""
trap 'rc=$?; [ $rc -ne 0 ] && echo "install-tools: FAILED at step \"$STEP\" (exit $rc)" >&2' EXIT

# quiet CMD...: keeps the tools' chatter (go downloads, apt, maven) out of the output, and
# shows its tail only when the command fails.
LOG="$TOOLS/.install.log"
quiet() {
  if ! "$@" >"$LOG" 2>&1; then
    echo "install-tools: $STEP: command failed: $*" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

# step NAME: remembers the step name for the failure message and its start time.
step() { STEP="$1"; T0=$SECONDS; }
done_msg() { echo "install-tools: $STEP: $1 ($((SECONDS - T0)) s)"; }

APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" = 0 ]; then quiet apt-get update; APT_UPDATED=1; fi
  # noninteractive: iperf3's package asks whether to start a daemon.
  quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

# go_install PKG@VER NAME: builds into a scratch GOBIN, then moves the binary into place
# under NAME, so an interrupted build never leaves a half-written binary that the next
# run would take as installed.
go_install() {
  local pkg="$1" name="$2" scratch
  command -v go >/dev/null || { echo "install-tools: $STEP: 'go' not found on PATH" >&2; exit 1; }
  scratch="$(mktemp -d "$TOOLS/.go-XXXXXX")"
  quiet env GOBIN="$scratch" CGO_ENABLED=0 go install "$pkg"
  local built
  built="$(find "$scratch" -maxdepth 1 -type f | head -n1)"
  [ -n "$built" ] || { echo "install-tools: $STEP: go install $pkg produced no binary" >&2; exit 1; }
  mv "$built" "$BIN/$name"
  rm -rf "$scratch"
}

# (a) PostgreSQL 15 from Debian.
step postgresql
if [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] && [ -x "$PG_BIN/postgres" ] && command -v psql >/dev/null; then
  done_msg "present in $PG_BIN"
else
  apt_install postgresql
  [ -x "$PG_BIN/initdb" ] || { echo "install-tools: postgresql installed but $PG_BIN/initdb missing (not PostgreSQL 15?)" >&2; exit 1; }
  done_msg "installed via apt"
fi

# (b) MinIO.
step minio
if [ -x "$BIN/minio" ]; then
  done_msg "present"
else
  go_install "github.com/minio/minio@$MINIO_VERSION" minio
  done_msg "built $MINIO_VERSION"
fi

# (c) toxiproxy: the module's command is called `server`, renamed to something findable.
step toxiproxy
if [ -x "$BIN/toxiproxy-server" ]; then
  done_msg "present"
else
  go_install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" toxiproxy-server
  done_msg "built $TOXIPROXY_VERSION"
fi

# (d) rclone (benchmarks compare against it).
step rclone
if [ -x "$BIN/rclone" ]; then
  done_msg "present"
else
  go_install "github.com/rclone/rclone@$RCLONE_VERSION" rclone
  done_msg "built $RCLONE_VERSION"
fi

# (e) Keycloak from Maven Central, unzipped into the cache (same move-into-place trick) and
# pre-built once for an in-memory database (`kc.sh build --db=dev-mem`). weft-testkit then
# runs `kc.sh start --optimized` with a per-run home dir: no re-augmentation per test
# (start-dev re-augments every time, ~30 s, writing into the shared lib/) and no shared
# state between runs. The marker file records that the build is ours.
step keycloak
KC_DIR="$TOOLS/keycloak-$KEYCLOAK_VERSION"
KC_MARKER=".weft-build-dev-mem"
command -v java >/dev/null || { echo "install-tools: keycloak: 'java' not found (Keycloak $KEYCLOAK_VERSION runs on Java 17+)" >&2; exit 1; }
if [ -x "$KC_DIR/bin/kc.sh" ] && [ -f "$KC_DIR/$KC_MARKER" ]; then
  done_msg "present"
else
  command -v mvn >/dev/null || { echo "install-tools: keycloak: 'mvn' not found on PATH" >&2; exit 1; }
  command -v unzip >/dev/null || apt_install unzip
  quiet mvn -q -B -Dstyle.color=never dependency:get -Dtransitive=false \
    -Dartifact="org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip"
  M2="${MAVEN_REPO:-$HOME/.m2/repository}"
  ZIP="$M2/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip"
  [ -f "$ZIP" ] || { echo "install-tools: keycloak: $ZIP not found after mvn dependency:get" >&2; exit 1; }
  scratch="$(mktemp -d "$TOOLS/.kc-XXXXXX")"
  quiet unzip -q "$ZIP" -d "$scratch"
  quiet "$scratch/keycloak-$KEYCLOAK_VERSION/bin/kc.sh" build --db=dev-mem
  touch "$scratch/keycloak-$KEYCLOAK_VERSION/$KC_MARKER"
  rm -rf "$KC_DIR"
  mv "$scratch/keycloak-$KEYCLOAK_VERSION" "$KC_DIR"
  rm -rf "$scratch"
  done_msg "unzipped and built $KEYCLOAK_VERSION"
fi

# (f) iperf3 (benchmarks: raw network baseline).
step iperf3
if command -v iperf3 >/dev/null; then
  done_msg "present"
else
  apt_install iperf3
  done_msg "installed via apt"
fi

# (f2) rsync (the `weft mount` tests copy trees into a mount with it, as users do), and
# the peers of `weft bench mount`: fuse3 (fusermount3, which `rclone mount` needs) and
# s3fs.
step mount-tools
if command -v rsync >/dev/null && command -v fusermount3 >/dev/null && command -v s3fs >/dev/null; then
  done_msg "present"
else
  apt_install rsync fuse3 s3fs
  done_msg "installed via apt"
fi

# (g) The DataCite metadata schema's own validator (inveniosoftware's `datacite` package,
# which ships the official kernel-4.3 JSON schema), in a venv of its own: the tests check
# `weft export datacite` against it.
DATACITE_VERSION="1.1.4"
step datacite
PY="$TOOLS/py"
if [ -x "$PY/bin/python" ] && [ -f "$PY/.datacite-$DATACITE_VERSION" ]; then
  done_msg "present"
else
  rm -rf "$PY.new"
  quiet python3 -m venv "$PY.new"
  quiet "$PY.new/bin/pip" install --no-input "datacite==$DATACITE_VERSION" "setuptools<81"
  touch "$PY.new/.datacite-$DATACITE_VERSION"
  rm -rf "$PY"
  mv "$PY.new" "$PY"
  done_msg "installed datacite $DATACITE_VERSION"
fi

# (h) nginx, the load balancer of the README's layout for a zone of several servers (its
# config is tested): Debian's binary unpacked into the cache, since installing the package
# would start a daemon on port 80.
step nginx
if [ -x "$BIN/nginx" ]; then
  done_msg "present"
else
  if [ "$APT_UPDATED" = 0 ]; then quiet apt-get update; APT_UPDATED=1; fi
  scratch="$(mktemp -d "$TOOLS/.nginx-XXXXXX")"
  (cd "$scratch" && quiet apt-get download nginx)
  quiet dpkg -x "$(ls "$scratch"/nginx_*.deb)" "$scratch/root"
  "$scratch/root/usr/sbin/nginx" -v >"$LOG" 2>&1 || { echo "install-tools: nginx: the unpacked binary does not run" >&2; cat "$LOG" >&2; exit 1; }
  mv "$scratch/root/usr/sbin/nginx" "$BIN/nginx"
  rm -rf "$scratch"
  done_msg "unpacked $("$BIN/nginx" -v 2>&1)"
fi

# (i) Headless Chromium and its WebDriver from Debian, for the web interface's tests in a
# real browser (python/tests/test_web.py, driven by Selenium).
step chromium
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  done_msg "present"
else
  apt_install chromium chromium-driver
  done_msg "installed via apt"
fi

# (j) The Python SDK's test stack (maturin, pytest, ruff, mypy, fsspec, pandas, pyarrow,
# xarray, h5netcdf, zarr, dask, s3fs, selenium, mrcfile, tifffile, astropy), pinned in python/requirements-test.txt, in a venv
# rebuilt when that file changes. The SDK itself is built into it by scripts/test.
step python-sdk
REQS="$(cd "$(dirname "$0")/.." && pwd)/python/requirements-test.txt"
PYSDK="$TOOLS/pysdk"
REQS_SUM="$(sha256sum "$REQS" | cut -c1-16)"
if [ -x "$PYSDK/bin/python" ] && [ -f "$PYSDK/.reqs-$REQS_SUM" ]; then
  done_msg "present"
else
  # Built in place, as a venv's scripts name its path; the marker, written last, tells a
  # complete one from what an interrupted run left.
  rm -rf "$PYSDK"
  quiet python3 -m venv "$PYSDK"
  quiet "$PYSDK/bin/pip" install --no-input -r "$REQS"
  touch "$PYSDK/.reqs-$REQS_SUM"
  done_msg "installed $(wc -l <"$REQS") lines of requirements"
fi

# (k) cargo-deny, for the licenses/bans/sources gate of scripts/test (deny.toml). No release
# binary can be downloaded here, so it is built from crates.io with its own Cargo.lock.
# Its release profile asks for fat LTO and one codegen unit, the slowest build there is on
# 2 cores, for a tool that reads a lock file in seconds: overridden back to cargo's defaults
# (~10 min here, built while other builds ran).
# Root and target dir are a scratch dir under $TOOLS, removed afterwards so the build
# leaves nothing on the disk; the binary is moved into place last, rebuilt when the pin moves.
step cargo-deny
if [ -x "$BIN/cargo-deny" ] && [ "$("$BIN/cargo-deny" --version 2>/dev/null)" = "cargo-deny $CARGO_DENY_VERSION" ]; then
  done_msg "present"
else
  scratch="$(mktemp -d "$TOOLS/.cargo-XXXXXX")"
  quiet env CARGO_TARGET_DIR="$scratch/target" CARGO_PROFILE_RELEASE_LTO=false \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install --locked --version "$CARGO_DENY_VERSION" cargo-deny --root "$scratch/root"
  mv "$scratch/root/bin/cargo-deny" "$BIN/cargo-deny"
  rm -rf "$scratch"
  done_msg "built $("$BIN/cargo-deny" --version)"
fi

STEP=""
echo "install-tools: all tools ready in $TOOLS"
