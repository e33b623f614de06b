#!/usr/bin/env python3
"""A weft extractor plugin: the attributes of an HDF5 (or NetCDF-4) file and the type,
shape and units of its datasets, printed as the JSON object weft reads.

Name it in the zone's configuration file (docs/EXTRACT.md):

    [[extract.plugins]]
    name = "hdf5"
    formats = ["hdf5"]
    command = ["python3", "/etc/weft/h5meta.py"]

weft runs it with the path of a copy of the object as its last argument and turns
``{"attr.title": "run 7", "var.t": {"value": "float32[2, 3]", "unit": "K"}}`` into the
metadata ``hdf5.attr.title`` and ``hdf5.var.t``.
"""

import json
import sys

import h5py
import numpy as np

# Objects walked at most, and values shown of an array attribute.
MAX_OBJECTS = 512
SHOWN = 16


def text(v: object) -> object:
    """A value JSON can carry, on one line."""
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        items = [str(text(x)) for x in v.flat[:SHOWN]]
        more = f", … ({v.size} values)" if v.size > SHOWN else ""
        return ", ".join(items) + more
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, str):
        return "".join(" " if not c.isprintable() else c for c in v).strip()
    return v


def main(path: str) -> None:
    out: dict[str, object] = {}
    with h5py.File(path, "r") as f:
        for key, value in f.attrs.items():
            out[f"attr.{key}"] = text(value)
        seen = 0

        def visit(name: str, obj: object) -> bool | None:
            nonlocal seen
            seen += 1
            if seen > MAX_OBJECTS:
                return True
            if isinstance(obj, h5py.Dataset):
                shape = ", ".join(str(n) for n in obj.shape)
                unit = text(obj.attrs.get("units", ""))
                out[f"var.{name}"] = {"value": f"{obj.dtype}[{shape}]", "unit": str(unit)}
            return None

        f.visititems(visit)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
