#!/usr/bin/env python3
"""Checks the dependency rules of ARCHITECTURE.md on the crates' manifests and sources.

Layers depend only downward; only weft-storage imports OpenDAL; only weft-catalog imports
sqlx; the client commands of the binary never reach past weft-client.
"""
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# What each crate may depend on among the weft crates (normal dependencies).
ALLOWED = {
    "weft-types": set(),
    # File durability (writeback, flushes behind the writer): std and libc only, shared by
    # the zone's storage and the client's downloads.
    "weft-fileio": set(),
    "weft-catalog": {"weft-types"},
    "weft-storage": {"weft-types", "weft-fileio"},
    "weft-policy": {"weft-types"},
    "weft-transfer": {"weft-types", "weft-catalog", "weft-storage", "weft-policy"},
    # Zones speak to their peers through the typed client (which depends on types only).
    "weft-zone": {"weft-types", "weft-catalog", "weft-storage", "weft-policy", "weft-transfer", "weft-client"},
    "weft-api": {"weft-types", "weft-zone", "weft-client"},
    "weft-client": {"weft-types", "weft-fileio"},
    # The benchmarks are a client like any other.
    "weft-bench": {"weft-types", "weft-client"},
    "weft": {"weft-types", "weft-api", "weft-zone", "weft-client", "weft-bench"},
    "weft-testkit": set(),
}
ONLY = {"opendal": "weft-storage", "sqlx": "weft-catalog"}

errors = []
for manifest in sorted(ROOT.glob("crates/*/Cargo.toml")):
    crate = manifest.parent.name
    deps = tomllib.loads(manifest.read_text()).get("dependencies", {})
    if crate not in ALLOWED:
        errors.append(f"{crate}: not in the layer table of scripts/check-layers.py and ARCHITECTURE.md")
        continue
    for dep in deps:
        if dep.startswith("weft") and dep not in ALLOWED[crate]:
            errors.append(f"{crate} depends on {dep}, which is not below it")
        if dep in ONLY and ONLY[dep] != crate:
            errors.append(f"{crate} depends on {dep}; only {ONLY[dep]} may")

# The client commands speak HTTP only: nothing under crates/weft/src/cli reaches the server side.
for src in sorted((ROOT / "crates/weft/src/cli").rglob("*.rs")):
    for n, line in enumerate(src.read_text().splitlines(), 1):
        if re.search(r"\bweft_(zone|api|catalog|storage)\b", line):
            errors.append(f"{src.relative_to(ROOT)}:{n}: client commands must go through weft-client: {line.strip()}")

if errors:
    print("layering violations:", *errors, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("layers ok")
