#!/usr/bin/env python3
"""Checks the dependency rules of ARCHITECTURE.md on the crates' manifests and sources.

The crate edges are exactly those of the table below (all downward: a new edge is a
decision, recorded here and in ARCHITECTURE.md; an edge no longer used is taken out);
only weft-storage imports OpenDAL; only weft-catalog imports sqlx; the client commands of
the binary never reach past weft-client; the modules of weft-zone import each other
without a cycle, and its area folders reach each other only as the area table says.
"""
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# What each crate depends on among the weft crates (normal dependencies), exactly.
ALLOWED = {
    "weft-types": set(),
    # File durability (writeback, flushes behind the writer): std and libc only, shared by
    # the zone's storage and the client's downloads.
    "weft-fileio": set(),
    "weft-catalog": {"weft-types"},
    "weft-storage": {"weft-types", "weft-fileio"},
    "weft-policy": {"weft-types"},
    # Header readers of instrument formats: bytes in, AVUs out, no I/O (the zone reads).
    "weft-extract": {"weft-types"},
    # The engine keeps its plan and progress in a Journal the zone implements over its
    # catalog: it can run wherever a journal can be kept.
    "weft-transfer": {"weft-types"},
    # Zones speak to their peers through the typed client (which depends on types only).
    "weft-zone": {"weft-types", "weft-catalog", "weft-storage", "weft-policy", "weft-extract", "weft-transfer", "weft-client"},
    "weft-api": {"weft-types", "weft-zone", "weft-client"},
    # Puts and gets run the transfer engine between local files and the zone; zones reach
    # their peers through the same HTTP side.
    "weft-client": {"weft-types", "weft-fileio", "weft-transfer"},
    # `weft mount`: a FUSE file system that is a client like the CLI.
    "weft-mount": {"weft-types", "weft-client"},
    # The benchmarks are a client like any other.
    "weft-bench": {"weft-types", "weft-client"},
    # The Python SDK: the client and its data path, behind a Python module.
    "weft-py": {"weft-types", "weft-client"},
    # weft-testkit: `weft bench` starts its embedded zones (`weft serve` of this binary)
    # with the tests' one launcher, ZoneProcess. The binary is the composition root, so
    # it alone may; no library depends on the test kit.
    "weft": {"weft-types", "weft-api", "weft-zone", "weft-client", "weft-bench", "weft-mount", "weft-testkit"},
    # Starts `weft serve` as a child process; names no weft crate.
    "weft-testkit": set(),
    # Dev-only: the fuzz targets' bodies, which call the parsers of these crates.
    "weft-fuzzing": {"weft-types", "weft-policy", "weft-extract", "weft-zone", "weft-api"},
}
ONLY = {"opendal": "weft-storage", "sqlx": "weft-catalog", "s3s": "weft-api"}

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
    for dep in sorted(ALLOWED[crate] - set(deps)):
        errors.append(f"{crate} no longer depends on {dep}: take the edge out of the table (and ARCHITECTURE.md)")
        if dep in ONLY and ONLY[dep] != crate:
            errors.append(f"{crate} depends on {dep}; only {ONLY[dep]} may")

# The client commands speak HTTP only: nothing under crates/weft/src/cli reaches the server side.
for src in sorted((ROOT / "crates/weft/src/cli").rglob("*.rs")):
    for n, line in enumerate(src.read_text().splitlines(), 1):
        if re.search(r"\bweft_(zone|api|catalog|storage)\b", line):
            errors.append(f"{src.relative_to(ROOT)}:{n}: client commands must go through weft-client: {line.strip()}")


def code_only(text):
    """`text` with comments, strings and char literals blanked (same length): what is
    left are the paths the code really names."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i) + 2
            blank(i, j)
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            blank(i + len(m.group(0)), end)
            i = end + 1 + len(m.group(1))
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif text[i] == "'" and (m := re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", text[i:])):
            blank(i + 1, i + len(m.group(0)) - 1)
            i += len(m.group(0))
        else:
            i += 1
    return "".join(out)


def module_cycles(src):
    """Cycles among the top-level modules of a crate's `src` (a directory is one module),
    from the `crate::module` paths their code names."""
    mods = {f.stem: [f] for f in src.glob("*.rs") if f.name not in ("lib.rs", "main.rs")}
    mods.update({d.name: sorted(d.rglob("*.rs")) for d in src.iterdir() if d.is_dir()})
    edges = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            code = code_only(f.read_text())
            named = re.findall(r"\bcrate::(\w+)", code)
            for group in re.findall(r"\bcrate::\{([^}]*)\}", code):
                named += re.findall(r"(?:^|,)\s*(\w+)", group)
            edges[m].update(x for x in named if x in mods and x != m)
    cycles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(mods):
        if m not in state:
            visit(m, [m])
    return cycles


for cycle in module_cycles(ROOT / "crates/weft-zone/src"):
    errors.append("weft-zone: modules import each other in a cycle: " + " -> ".join(cycle))

# The areas of weft-zone, as crates are above: which area may reach which, by a path
# (`crate::data::..`) or through the other's handle (`self.zone.data().put(..)`), exactly.
# Use cases call downward (s3 -> namespace -> access); the arrows back are named.
ZONE_AREAS = {
    "background": set(),
    # Who a peer's user is here: federation maps remote principals. ACL edits find their
    # node (with the owner's check) through the namespace.
    "access": {"federation", "namespace"},
    "resources": {
        # A resource added or removed may fulfil or break QoS: the engine is woken.
        "policy",
        # Staging areas' space is shown beside the resources'.
        "transfers",
    },
    # Removing an object deletes its replicas in peer zones through the transfer side.
    "namespace": {"access", "resources", "transfers"},
    "data": {"access", "resources", "namespace", "background", "s3",
             # Reads and verification of replicas kept in peer zones.
             "transfers"},
    "uploads": {"access", "resources", "data", "background", "s3",
                # A completed upload registers its replica as transfers do.
                "transfers"},
    "s3": {"access", "namespace"},
    # A peer added or removed changes the places QoS may use and the replica areas.
    "federation": {"access", "policy", "transfers"},
    "transfers": {"access", "resources", "namespace", "data", "uploads", "federation", "background",
                  # A transfer's end may fulfil a QoS requirement: the engine is woken.
                  "policy"},
    "policy": {"namespace", "transfers", "background",
               # QoS requirements need write permission; peers' places come from their zones.
               "access", "federation",
               # The action `extract`, and the collections that have it on.
               "extract"},
    # Reads a header through the data side's replica reads; permission by the namespace.
    "extract": {"namespace", "data"},
}


def area_edges(src):
    """For each area folder of `src`, the other areas its code names by path or handle."""
    found = {}
    for area in ZONE_AREAS:
        used = set()
        for f in sorted((src / area).rglob("*.rs")):
            code = code_only(f.read_text())
            used.update(re.findall(r"\bcrate::(\w+)", code))
            used.update(re.findall(r"\.(\w+)\(\)\.", code))
            # A handle of the zone taken on one line and used on the next (rustfmt).
            used.update(re.findall(r"\bzone\s*\.(\w+)\(\)\s*\.", code))
        found[area] = {u for u in used if u in ZONE_AREAS and u != area}
    return found


zone_src = ROOT / "crates/weft-zone/src"
folders = {d.name for d in zone_src.iterdir() if d.is_dir()}
for extra in sorted(folders - set(ZONE_AREAS)):
    errors.append(f"weft-zone/src/{extra}: a folder not in the area table of scripts/check-layers.py")
for area, used in area_edges(zone_src).items():
    for u in sorted(used - ZONE_AREAS[area]):
        errors.append(f"weft-zone: {area} reaches {u}, which is not in its row of the area table")
    for u in sorted(ZONE_AREAS[area] - used):
        errors.append(f"weft-zone: {area} no longer reaches {u}: take it out of the area table")

if errors:
    print("layering violations:", *errors, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("layers ok")
